// Tiling data of the forward kernel (and of its block-map pre-pass): the problem part, the blocks, the cube's L0
// plan, the work split, the workspace and the dense mask's block-map geometry.
#ifndef NPU_FA_TILING_FWD_TILING_H
#define NPU_FA_TILING_FWD_TILING_H

#include "problem_tiling.h"
#include "matmul_chunks.h"

namespace npu_fa {

// Forward steps in flight per core: workspace slots and UB statistic sets (kernel/fwd_common.h).
constexpr uint32_t kFwdStepSlots = 3;
// Lazy rescale: flush words in flight per core. An AIV writes step k's word once the cube has waited for the other
// AIV's probabilities of step k - 3, which that AIV sent after reading the words of step k - 6 (kernel/fwd_vector.h).
constexpr uint32_t kFwdFlushRing = 2 * kFwdStepSlots;
constexpr uint32_t kFwdFlushLine = 64;                             // bytes per step: the AIVs' words 32 B apart
constexpr uint32_t kFwdFlushCount = kFwdFlushRing * kFwdFlushLine;  // byte offset of the cube's flush count line
constexpr uint32_t kFwdFlushBytes = kFwdFlushCount + kFwdFlushLine;

// FlashAttentionTilingData::halfSoftmax: off, the fp16 chain with P widened for fp32 row sums, or with the row sums
// begun in half (sums of 16 in half, then fp32: FaOnlineSoftmax::AddRowSumsHalf).
constexpr uint32_t kHalfChainOff = 0, kHalfChainFp32Sums = 1, kHalfChainHalfSums = 2;

// The operator's registered tiling struct (the entry's GET_TILING_DATA names it).
struct FlashAttentionTilingData {
    FaProblemTiling problem;
    // Workspace (bytes, per core; AIC -> AIV scores S, AIV -> AIC probabilities P, AIC -> AIV partial output O).
    uint64_t wsPerCore;
    uint64_t wsOffsetS;
    uint64_t wsOffsetP;
    uint64_t wsOffsetO;
    // Dense masks: block-map bytes; an int32 visible-tile count per row follows at mapCountsOffset.
    uint64_t mapEntries;
    uint64_t mapCountsOffset;
    // Lazy rescale: the flush words (kFwdFlushRing lines of 64 B: one 32 B word per AIV) and the cube's flush count.
    uint64_t wsOffsetFlush;
    // Blocks.
    uint32_t s1Block;     // query rows per task (the two AIVs take half each)
    uint32_t s2Block;     // key columns per step (multiple of 64): one softmax pass and one P*V output per step
    uint32_t vecRows;     // query rows per vector pass (multiple of 8): each AIV walks its half in chunks of these
    uint32_t kvSub;       // keys per L1 sub-block of a step (divides s2Block; the cube streams K, V and P by these)
    uint32_t kvGroup;     // K/V/P sub-blocks per GM -> L1 load (one DMA moves kvGroup consecutive Nz tiles)
    uint32_t kChunkQK;    // K-dim chunk of Q*K^T in L0A/L0B
    uint32_t nChunkQK;    // N-dim chunk of Q*K^T in L0C
    uint32_t kChunkPV;    // K-dim chunk of P*V
    uint32_t nChunkPV;    // N-dim chunk of P*V
    // L0C plan of the cube (bytes): S tiles alternate between two slots l0cSlotBytes apart from l0cSlot0 (0: one
    // slot); a step's P*V accumulates in the next of those slots (l0cOut == kFaL0cRing) or, when its [s1Block, dv]
    // fp32 tile is larger than half of L0C, in a tile of its own at l0cOut (80 rows at dv = 256: O 80 KB at 0, one
    // 40 KB S slot after it).
    uint32_t l0cSlot0;
    uint32_t l0cSlotBytes;
    uint32_t l0cOut;
    uint32_t bandTiles;   // 1: some tile is cut by a band (the vector cores keep the band pattern in UB)
    uint32_t mapGroups;   // dense masks: mask groups with their own block-map rows (the seq table's first mapGroups)
    uint32_t mapRows;     // block-map rows in all: one per (group, head if maskHeads, s1 block)
    uint32_t mapCores;    // AIV cores of the block-map pre-pass
    // Work split: core c runs tasks [coreTaskStart[c], coreTaskStart[c + 1]).
    uint32_t blockDim;
    uint32_t taskTotal;
    uint32_t coreTaskStart[kMaxCores + 1];
    uint32_t lowScores;   // 1: S leaves Fixpipe in the input dtype, not fp32 (inner_precise bit 0: high performance)
    uint32_t halfSoftmax; // fp16 lowScores: chunks with nothing but the softmax to do run it in half (kHalfChain*)
    // With problem.outResidual: 1 = the output residual waits in the probability buffers after the output rows (UB
    // allows it at the chosen blocks), 0 = in the partial-output buffer, whose reuse then waits for its copy out.
    uint32_t residualInProbs;
    // Lazy rescale (kernel/fwd_cube.h, fwd_vector.h): 1 = P*V stays in its own L0C tile (l0cOut) across a task's
    // steps, the probabilities taken against a per-row reference max; a step whose running max of some row passes
    // that row's reference by more than lazyThreshold moves its reference to its running max and flushes O first.
    // The partial-output region then holds 2 * kFwdStepSlots slots: a step's flushed O, then a task's final O.
    uint32_t lazyRescale;
    float lazyThreshold;
};
static_assert(sizeof(FlashAttentionTilingData) ==
                  sizeof(FaProblemTiling) + 7 * sizeof(uint64_t) + (18 + kMaxCores + 1 + 2 + 1 + 2) * sizeof(uint32_t) &&
              sizeof(FlashAttentionTilingData) == 712,
              "FlashAttentionTilingData must have no implicit padding");

}  // namespace npu_fa

#endif  // NPU_FA_TILING_FWD_TILING_H
