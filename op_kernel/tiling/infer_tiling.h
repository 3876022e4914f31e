// Tiling data of the inference kernel (flash_attention_infer.cpp) and of its split-KV combine pass
// (flash_attention_infer_combine.cpp): the problem part, the KV cache's addressing, the packed query tiles, the
// split-KV decision, the cube's L0 chunks, the work split and the workspace.
#ifndef NPU_FA_TILING_INFER_TILING_H
#define NPU_FA_TILING_INFER_TILING_H

#include "problem_tiling.h"
#include "band.h"
#include "matmul_chunks.h"

namespace npu_fa {

// Inference steps in flight per core: the cube's P*V trails its scores by kInferStepSlots - 1 steps.
constexpr uint32_t kInferStepSlots = 3;
// An int8 cache: int8 rows per query row and per probability row (x ~ sum_p h_p / kInferInt8Radix^p, |h_p| <= 127),
// and the radix: each part carries the previous one's rounding residue (within +-0.5) times 254, so three parts keep
// about 23 bits of a row's largest value, two about 15. P in [0, 1] takes two: its error (within 1.6e-5 absolute)
// stays under the query dtype's own rounding of P in the FlashAttention criterion (docs/performance.md, "The int8
// cache": the same worst err / bound over the int8 tests as with three), and it saves a third of the vector cores'
// split of P, of the cube's P*V rows and of their int32 output.
constexpr uint32_t kInferInt8Parts = 3;
constexpr uint32_t kInferInt8ProbParts = 2;
constexpr float kInferInt8Radix = 254.0f;
static_assert(kInferInt8ProbParts <= kInferInt8Parts, "the step slots and tiles are sized by the query's parts");

// The problem part as the inference kernels read it: qStride/oStride address the query and the output
// (per batch, head, token; TND: per token), kStride/vStride the caches (per page (a non-paged cache: per batch),
// head, token), batch/n1/n2/group/d/dv/dPad/dvPad/scale/dtype as the forward's; s1 is the longest query, s2 the
// longest key length; varlen is 1 (every batch's lengths come from the seq table); sparseMode/preTokens/nextTokens
// are the call's (0 with one query token); each sequence's band (BandOfMode) is in its seq-table row.
struct FaInferTilingData {
    FaProblemTiling problem;
    // softmax_lse: element strides per batch (TND: 0), head and query token (TND: per token of the whole query).
    uint64_t lseStrideB, lseStrideN, lseStrideS;
    // Workspace (bytes): per core, kInferStepSlots slots each of S (fp32), P (input dtype) and P*V (fp32); then,
    // shared by all cores, the split-KV partials: O fp32 [splits, partRows, dvPad] and lse fp32 [splits, partRows, 8].
    uint64_t wsPerCore;
    uint64_t wsOffsetS;
    uint64_t wsOffsetP;
    uint64_t wsOffsetO;
    uint64_t wsPartO;
    uint64_t wsPartLse;
    // An int8 cache (kvQuant): per core, kInferStepSlots slots of the int8 split query rows ([quantParts * mBlock, d]).
    uint64_t wsOffsetQuery;
    uint32_t pageSize;   // block_size of a paged cache (keys per page); 0: no block table
    uint32_t maxPages;   // block_table columns
    uint32_t mBlock;     // packed query rows per task: rows (s, g) = (query token, head of the KV group), s-major
    uint32_t s2Block;    // keys per step (one L1 sub-block, a multiple of 64)
    uint32_t vecRows;    // rows per vector pass (a multiple of 8)
    uint32_t splits;     // KV splits per (batch, KV head, query tile); 1: no combine pass
    uint32_t kChunkQK, nChunkQK, kChunkPV, nChunkPV;
    uint32_t lseFlag;    // 1: write softmax_lse
    uint32_t partRows;   // rows of one split's partials: B * N2 * group * s1
    uint32_t combineRows;  // rows per combine chunk (a multiple of 8)
    uint32_t combineCores; // vector cores of the combine pass
    // An int8 K/V cache (kernel/infer_int8.h): value = scale * (x + offset), the antiquant GM argument fp32 [K's |
    // V's], each per channel [n2, 2, d] (scales, offsets) (mode 0) or per token [batch, quantTokens, 2] (a key's
    // (scale, offset) by its position in its sequence) (mode 1); quantOffset 0: offsets all zero. Both products run
    // int8 x int8 on the cube, each query row split into quantParts int8 rows and each probability row into probParts
    // (<= quantParts) (packed row r of a task of `rows` rows: part p at p * rows + r); the step slots of S, P and P*V
    // hold quantParts * mBlock rows (int32, int8, int32).
    uint32_t kvQuant;
    uint32_t keyQuantMode, valueQuantMode;
    uint32_t quantTokens;
    uint32_t quantOffset;
    uint32_t quantParts;
    uint32_t probParts;
    // Work split of the main pass: core c runs tasks [coreTaskStart[c], coreTaskStart[c + 1]).
    uint32_t blockDim;
    uint32_t taskTotal;
    uint32_t coreTaskStart[kMaxCores + 1];
};
static_assert(sizeof(FaInferTilingData) ==
                  sizeof(FaProblemTiling) + 10 * sizeof(uint64_t) + (23 + kMaxCores + 1) * sizeof(uint32_t),
              "FaInferTilingData must have no implicit padding");

// The task's rows per (batch, KV head): group * q length; tasks per (batch, KV head): query tiles times splits.
FA_INLINE uint32_t InferTilesOf(int64_t qLen, uint32_t group, uint32_t mBlock) {
    return CeilDiv((uint32_t)qLen * group, mBlock);
}

// The keys [first, last) of split `split` of a kv length: equal runs of whole steps.
struct FaKeyRange {
    int64_t first;
    int64_t last;
};
FA_INLINE FaKeyRange InferSplitKeys(int64_t kvLen, uint32_t split, uint32_t splits, uint32_t s2Block) {
    const int64_t steps = (kvLen + s2Block - 1) / s2Block;
    const int64_t per = (steps + splits - 1) / splits;
    FaKeyRange r;
    r.first = FaMin(kvLen, (int64_t)split * per * s2Block);
    r.last = FaMin(kvLen, (int64_t)(split + 1) * per * s2Block);
    return r;
}

// The keys that packed rows [row0, row0 + rows) see in their split: the split's keys cut to the band of the first
// and the last row's query token (the start kept on the split's step grid).
FA_INLINE FaKeyRange InferTaskKeys(int64_t kvLen, uint32_t split, uint32_t splits, uint32_t s2Block,
                                   const FaBand& band, int64_t row0, uint32_t rows, uint32_t group) {
    FaKeyRange r = InferSplitKeys(kvLen, split, splits, s2Block);
    const int64_t firstKey = row0 / group + band.lo, lastKey = (row0 + rows - 1) / group + band.hi;
    if (firstKey > r.first) r.first += (firstKey - r.first) / s2Block * s2Block;
    r.last = FaMin(r.last, lastKey + 1);
    return r;
}

}  // namespace npu_fa

#endif  // NPU_FA_TILING_INFER_TILING_H
