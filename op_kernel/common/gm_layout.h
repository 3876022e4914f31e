// Where a token row and a statistic row live in GM, for every kernel: q/k/v/out (and dy, attention_in, the
// gradients) by their layout strides, softmax_max/softmax_sum (and the backward's D and dsink rows) by query row.
#ifndef NPU_FA_COMMON_GM_LAYOUT_H
#define NPU_FA_COMMON_GM_LAYOUT_H

#include "kernel_operator.h"
#include "../tiling/problem_tiling.h"
#include "../tiling/seq_table.h"

namespace npu_fa {

// The token-row tensors: q, k, v, and the output's layout (attention_out; in the backward also dy and
// attention_in). The gradients dq, dk, dv have the layouts of q, k, v.
enum FaGmTensor : uint32_t { kGmQuery = 0, kGmKey = 1, kGmValue = 2, kGmOut = 3 };

// Element offset of token `row` (inside its sequence) of head `head` in tensor `x`; TND counts rows from the
// sequence's first query (q, out) or key (k, v) token.
__aicore__ inline uint64_t TokenOffset(const FaProblemTiling& p, FaGmTensor x, uint32_t batch, const FaSeq& seq,
                                       uint32_t head, int64_t row) {
    const FaStrides& st = x == kGmQuery ? p.qStride : x == kGmKey ? p.kStride : x == kGmValue ? p.vStride : p.oStride;
    const int64_t tok0 = x == kGmKey || x == kGmValue ? seq.kvTok : seq.qTok;
    return (p.varlen ? (uint64_t)(tok0 + row) * st.s : batch * st.b + (uint64_t)row * st.s) + head * st.n;
}

// Statistic row (8 floats each) of a query row in softmax_max/softmax_sum: [B, N1, S1, 8], or for TND sequence-major
// then head-major (the built-in's default TND statistics order).
__aicore__ inline uint64_t StatRow(const FaProblemTiling& p, uint32_t batch, const FaSeq& seq, uint32_t head,
                                   int64_t row) {
    if (p.varlen) return (uint64_t)seq.qTok * p.n1 + (uint64_t)head * seq.s1 + row;
    return ((uint64_t)batch * p.n1 + head) * p.s1 + row;
}

}  // namespace npu_fa

#endif  // NPU_FA_COMMON_GM_LAYOUT_H
