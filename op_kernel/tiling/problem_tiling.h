// The problem as every kernel sees it: shapes, layout strides, attention options. The forward and the backward
// tiling structs (and the kernels that follow) embed one as their first member, so the host fills it once.
#ifndef NPU_FA_TILING_PROBLEM_TILING_H
#define NPU_FA_TILING_PROBLEM_TILING_H

#include "dropout_params.h"

namespace npu_fa {

// Element strides of a q/k/v/out-shaped tensor: per batch (unused for TND), per head, per token.
struct FaStrides {
    uint64_t b, n, s;
};

// 64-bit fields first, then an even number of 32-bit ones: no implicit padding (host and device copy the tiling
// as raw bytes; padding bytes would be undefined).
struct FaProblemTiling {
    FaStrides qStride, kStride, vStride;
    FaStrides oStride;        // the output's, also dy and attention_in in the backward
    int64_t preTokens;
    int64_t nextTokens;
    // Dense atten_mask (bytes, nonzero = masked), read in place: element (n, r, c) of a sequence at its seq-table
    // kSeqMaskBase + n * maskStrideN + r * maskStrideS + (maskColStep ? c : c - c0) for the tile at column c0
    // (maskColStep 0: a column-broadcast mask stored as rows of at least s2Block equal bytes).
    uint64_t maskStrideN, maskStrideS;
    int64_t alibiDelta;       // kv_start_idx - q_start_idx
    uint64_t pseStrideB, pseStrideN, pseStrideS;  // outer pse [B or 1, N1, S1 or 1, S2]: element strides, 0 = broadcast
    FaDropoutParams drop;
    uint32_t layout;          // FaLayout
    uint32_t dtype;           // FaDtype
    uint32_t batch;           // B (TND: number of sequences)
    uint32_t n1;              // query heads
    uint32_t n2;              // key/value heads
    uint32_t group;           // n1 / n2
    uint32_t s1;              // query length (TND: max)
    uint32_t s2;              // key length (TND: max)
    uint32_t d;               // q/k head dim
    uint32_t dv;              // v head dim
    uint32_t dPad;            // d rounded up to 16
    uint32_t dvPad;           // dv rounded up to 16
    uint32_t varlen;          // 1: per-sequence geometry comes from the seq table
    uint32_t sparseMode;      // the op's sparse_mode (0-8); the kernels read each sequence's band from the seq table
    float scale;
    float softcap;            // > 0: scaled scores x become softcap * tanh(x / softcap) before bias, masks, softmax
    uint32_t sinkMode;        // 1: the sink input holds one fp32 logit per query head that joins every softmax row
    uint32_t maskMode;        // 0 none, 1 dense
    uint32_t maskHeads;       // 1: the mask (and its block map) differs per query head
    uint32_t maskColStep;
    uint32_t alibiMode;       // FaAlibiMode: in-kernel ALiBi from the alibi_slopes input (tile/alibi.h)
    uint32_t alibiPerBatch;   // 1: the slopes are [B, N1], else [N1]
    uint32_t pseMode;         // FaPseMode
    uint32_t partialKeys;     // backward only, 1: the call holds part of each row's keys (context parallelism);
                              // the statistics and attention_in are the whole rows'
    uint32_t outResidual;     // 1: the forward also writes attention_out_residual (attention_out's rounding error,
                              // in the input dtype), the backward reads it: D = rowsum(dO * (O + residual))
    uint32_t bwdLowScores;    // backward only, 0: S and dP leave Fixpipe in fp32; else the high-performance mode
                              // where the forward took 16-bit scores: S and dP in the input dtype, Q*K^T in K-dim
                              // chunks of this many (the forward's kChunkQK; bwd_tiling.h BwdLowScoreChunks)
};
static_assert(sizeof(FaProblemTiling) == 4 * sizeof(FaStrides) + 8 * sizeof(uint64_t) + sizeof(FaDropoutParams) +
                                             26 * sizeof(uint32_t),
              "FaProblemTiling must have no implicit padding");

}  // namespace npu_fa

#endif  // NPU_FA_TILING_PROBLEM_TILING_H
