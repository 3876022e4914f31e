// Tiling data of the backward FlashAttention kernel, shared by op_host (tiling) and op_kernel (device code).
// The backward runs as two launches of one mix kernel (three when the head dims need dK and dV in separate passes),
// each with its own copy of this struct:
//   pass kGradPassDq:  tasks (sequence, query head, s1 block); D = rowsum(dO * O) into the workspace, then
//                      dQ = scale * sum_j dS_ij K_j over the visible s2 blocks, summed in L0C;
//   pass kGradPassDkv: tasks (sequence, kv head, s2 block); dV = sum P^T dO and dK = scale * sum dS^T Q over the
//                      query heads of the group and the s1 blocks that see the kv block, summed in L0C.
// Every output row is owned by exactly one task, whose sum runs in a fixed order, so the result does not depend on
// the core count or on timing (no atomics): both the deterministic and the default mode run this schedule. Each
// pass recomputes S and dP; keeping the sums in L0C is what that buys (a fused single pass would move every tile's
// dQ, or dK and dV, through Fixpipe: docs/performance.md, "Backward").
#ifndef NPU_FA_FLASH_ATTENTION_GRAD_TILING_H
#define NPU_FA_FLASH_ATTENTION_GRAD_TILING_H

#include "flash_attention_tiling.h"

namespace npu_fa {

enum FaGradPass : uint32_t { kGradPassDq = 0, kGradPassDkv = 1 };
enum FaGradPart : uint32_t { kGradPartDk = 1, kGradPartDv = 2, kGradPartsBoth = 3 };
// Per sequence: the forward's seq-table fields (FaSeqField: tokens, lengths, kSeqFirstTask = first dQ task, band,
// block-map rows and mask base, for the backward's blocks), then the first dK/dV task.
// Steps in flight per core: the cube computes S/dP of step j+lag before the products of step j (lag = l1Slots - 2,
// 2 where four L1 slots of Q, dO, K, V fit, else 1), so the vector cores' P/dS of step j overlap `lag` steps of cube
// work. Workspace slots of S, dP, P, dS: step % kGradSlots.
constexpr uint32_t kGradSlots = 3;
constexpr uint32_t kGradMaxLag = 2;

constexpr uint32_t kGradSeqFirstKvTask = kSeqInfoFields;
constexpr uint32_t kGradSeqFields = kSeqInfoFields + 1;

struct FlashAttentionGradTilingData {
    // 64-bit fields first, then 32-bit ones (an even number of them): no implicit padding.
    int64_t preTokens;
    int64_t nextTokens;
    // Element strides of q/k/v and of dy/attention_in (the output layout): per batch (unused for TND), head, token.
    uint64_t qStrideB, qStrideN, qStrideS;
    uint64_t kStrideB, kStrideN, kStrideS;
    uint64_t vStrideB, vStrideN, vStrideS;
    uint64_t oStrideB, oStrideN, oStrideS;
    // Workspace (bytes): D = rowsum(dO * O) per query row ([rows, 8] fp32, statistic layout) at wsOffsetD, then per
    // core at wsOffsetCore + core * wsPerCore: S and dP (fp32), P and dS (input dtype), two slots each, and a
    // task's sums as Fixpipe leaves them (fp32).
    uint64_t wsOffsetD;
    uint64_t wsOffsetCore;
    uint64_t wsPerCore;
    uint64_t wsOffsetS, wsOffsetDp, wsOffsetP, wsOffsetDs, wsOffsetSumA, wsOffsetSumB;
    // Dense atten_mask as the forward reads it (FlashAttentionTilingData has the same fields), with its block map
    // for this kernel's blocks.
    uint64_t maskStrideN, maskStrideS;
    int64_t alibiDelta;      // in-kernel ALiBi and the outer pse as the forward's (FlashAttentionTilingData)
    uint64_t pseStrideB, pseStrideN, pseStrideS;
    uint32_t pass;        // FaGradPass
    uint32_t layout;
    uint32_t dtype;
    uint32_t batch;
    uint32_t n1, n2, group;
    uint32_t s1, s2;      // TND: max
    uint32_t d, dv;
    uint32_t varlen;
    uint32_t sparseMode;  // 0, 2, 3, 4 (as the forward)
    float scale;
    uint32_t s1Block;     // query rows of a tile (the two AIVs take half each)
    uint32_t s2Block;     // key rows of a tile (multiple of 64)
    uint32_t dPad, dvPad; // rounded up to 16
    uint32_t blockDim;
    uint32_t taskTotal;
    uint32_t blocksPerHead;  // non-varlen: tasks per (batch, head) of this pass
    uint32_t maskMode;       // 0 none, 1 dense
    uint32_t maskHeads;      // 1: the mask (and its block map) differs per query head
    uint32_t maskColStep;
    uint32_t kvParts;        // dK/dV pass: which gradients it sums, kGradPartDk | kGradPartDv (large head dims run
                             // one dK/dV pass per gradient so that the sum fits half of L0C)
    uint32_t sumCol0;        // a single-gradient pass sums its columns [sumCol0, sumCol0 + sumCols) (head dims
    uint32_t sumCols;        // above 256 take several passes); both-gradient passes sum every column
    uint32_t l1Slots;        // L1 slots of Q, dO, K, V (4 or 3): a step loads while the 3 (or 2) before it compute
    float softcap;           // > 0: the forward soft-capped its scaled scores (fa_softcap.h)
    uint32_t sinkMode;       // 1: the forward had sink logits; the dQ pass writes each row's share of dsink
    uint32_t alibiMode;
    uint32_t alibiPerBatch;
    uint32_t pseMode;        // with an outer pse the dQ pass also writes dS for dpse (FaBwdVector::StorePseGrad)
    uint32_t coreTaskStart[kMaxCores + 1];
    FaDropoutParams drop;    // the forward's dropout, regenerated (or re-read) here
};
static_assert(sizeof(FlashAttentionGradTilingData) ==
                  3 * sizeof(int64_t) + 26 * sizeof(uint64_t) + 33 * sizeof(uint32_t) + (kMaxCores + 1) * sizeof(uint32_t) +
                      sizeof(FaDropoutParams),
              "FlashAttentionGradTilingData must have no implicit padding");

// The output columns a pass sums for gradient `part` (kGradPartDk: of dK, width d; kGradPartDv: of dV, width dv), as
// [first, first + count).
FA_INLINE void GradSumColumns(const FlashAttentionGradTilingData* t, uint32_t part, uint32_t& first, uint32_t& count) {
    first = t->kvParts == kGradPartsBoth ? 0 : t->sumCol0;
    count = t->kvParts == kGradPartsBoth ? (part == kGradPartDk ? t->d : t->dv) : t->sumCols;
}

// Query rows i of a sequence that see some key column of [c0, c1): i + lo <= c1 - 1 and i + hi >= c0 (the band of
// BandOf, read the other way round), as the range of s1 blocks [first, last).
FA_INLINE FaStepRange QueryBlocksOf(const FaBand& band, int64_t c0, int64_t c1, int64_t s1, int64_t s1Block) {
    FaStepRange r{0, 0};
    if (c1 <= c0 || s1 <= 0) return r;
    const bool prefixCols = c0 < band.prefix;  // every row sees the prefix columns
    const int64_t lo = prefixCols ? 0 : FaMax(0, c0 - band.hi);
    const int64_t hi = prefixCols ? s1 - 1 : FaMin(s1 - 1, c1 - 1 - band.lo);
    if (lo > hi) return r;
    r.first = lo / s1Block;
    r.last = hi / s1Block + 1;
    return r;
}

// UB buffers of one AIV (bytes) for query tile rows `rows` (this AIV's half), walked in two chunks of `chunk` rows
// (GradChunkRows) so that one chunk's loads and stores overlap the other's vector work; key tile width `w`, key
// rows per AIV `kvRows` and padded head dims. The kernel allocates exactly these; the tiling picks blocks whose
// total fits.
struct FaGradUbSizes {
    uint32_t score;  // S, later P, fp32 [chunk, w] per chunk
    uint32_t dp;     // dP, later dS, fp32 [chunk, w] per chunk
    uint32_t dmat;   // (column - row) pattern for band masks [chunk, w]
    uint32_t bits;   // compare bit mask over [chunk, w]
    uint32_t half;   // P and dS in the input dtype [chunk, w] each, per chunk
    uint32_t maskHalf;  // the masks' half-precision scratch [chunk, w]
    uint32_t stat;   // one statistic per row broadcast to a 32 B block [rows8, 8] fp32 (max, sum, D)
    uint32_t part;   // O in fp32 [rows, dvPad] for D at a dQ task's start, then its row fold [rows, 64]
    uint32_t acc;    // a task's sums as the cube leaves them, fp32: dQ [rows, dPad] or dK and/or dV [kvRows, dPad (+)
                     // dvPad]; at a dQ task's start dO * O in fp32 [rows, dvPad]
    uint32_t out;    // an output tile in the input dtype [accRows, dMax]; also dO and O [rows, dvPad] each
    uint32_t row;    // one fp32 per row [rows8], at least 64 (the column index pattern)
    uint32_t mask;   // dense-mask bytes of a chunk [chunk8, w] (0 without a dense mask)
    uint32_t bias;   // ALiBi scratch, or an outer pse tile in fp32, [chunk, w] (0 without either)
    uint32_t pse;    // an outer pse tile as read, [chunk, w] of the input dtype (0 without one)
    uint32_t drop;   // dropout: hash scratch, column pattern and keep bits of a chunk (0 without dropout)
    uint32_t total;
};
constexpr uint32_t kGradStatBuffers = 3;  // max, sum, D; two sets (step parity) in the dK/dV pass

// The features a backward tiling asks of the vector cores (the band pattern is always built there).
FA_INLINE FaVecFeatures GradVecFeatures(const FlashAttentionGradTilingData* t) {
    FaVecFeatures f;
    f.denseMask = t->maskMode != 0;
    f.alibi = t->alibiMode != kAlibiNone;
    f.pse = t->pseMode != kPseNone;
    f.dropout = t->drop.mode != kDropNone;
    return f;
}

FA_INLINE uint32_t GradChunkRows(uint32_t rows) { return AlignUp(CeilDiv(rows == 0 ? 1 : rows, 2), 8); }

FA_INLINE FaGradUbSizes GradUbSizes(uint32_t rows, uint32_t w, uint32_t kvRows, uint32_t dPad, uint32_t dvPad,
                                    uint32_t kvParts, const FaVecFeatures& f) {
    FaGradUbSizes u;
    const uint32_t r = rows == 0 ? 1 : rows;
    const uint32_t r8 = AlignUp(r, 8);
    const uint32_t c = GradChunkRows(r);
    const uint32_t dMax = dPad > dvPad ? dPad : dvPad;
    const uint32_t accRows = r > kvRows ? r : kvRows;
    const uint32_t accQ = r * dPad * 4;
    const uint32_t accKv = kvRows * (((kvParts & kGradPartDk) ? dPad : 0) + ((kvParts & kGradPartDv) ? dvPad : 0)) * 4;
    u.score = 2 * c * w * 4;
    u.dp = 2 * c * w * 4;
    u.dmat = c * w * 4;
    u.bits = AlignUp(c * w / 8, 32);
    u.half = 2 * 2 * c * w * 2;
    u.maskHalf = c * w * 2;
    u.stat = r8 * 8 * 4;
    u.part = r * (dvPad > 64 ? dvPad : 64) * 4;
    u.acc = (uint32_t)FaMax(FaMax(accQ, accKv), r * dvPad * 4);
    u.out = accRows * dMax * 2 > 2 * r * dvPad * 2 ? accRows * dMax * 2 : 2 * r * dvPad * 2;
    u.row = (r8 > 64 ? r8 : 64) * 4;
    u.mask = f.denseMask ? AlignUp(c, 8) * w : 0;
    u.bias = f.alibi || f.pse ? c * w * 4 : 0;
    u.pse = f.pse ? c * w * 2 : 0;
    u.drop = f.dropout ? DropoutUbBytes(c, w) : 0;
    u.total = u.score + u.dp + u.dmat + u.bits + u.half + u.maskHalf + 2 * kGradStatBuffers * u.stat + u.part + u.acc +
              u.out + u.row + u.mask + u.bias + u.pse + u.drop;
    return u;
}

}  // namespace npu_fa

#endif  // NPU_FA_FLASH_ATTENTION_GRAD_TILING_H
