// Where a token row and a statistic row live in GM, for every kernel: q/k/v/out (and dy, attention_in, the
// gradients) by their layout strides, softmax_max/softmax_sum (and the backward's D and dsink rows) by query row.
#ifndef NPU_FA_COMMON_GM_LAYOUT_H
#define NPU_FA_COMMON_GM_LAYOUT_H

#include "kernel_operator.h"
#include "../tiling/problem_tiling.h"
#include "../tiling/seq_table.h"

namespace npu_fa {

// Element offset of token `row` (inside its sequence) of head `head` in a tensor with strides `st`; TND counts rows
// from the sequence's first token `tok0`.
__aicore__ inline uint64_t TokenOffset(const FaProblemTiling& p, const FaStrides& st, uint32_t batch, int64_t tok0,
                                       uint32_t head, int64_t row) {
    return (p.varlen ? (uint64_t)(tok0 + row) * st.s : batch * st.b + (uint64_t)row * st.s) + head * st.n;
}
__aicore__ inline uint64_t QueryOffset(const FaProblemTiling& p, uint32_t batch, const FaSeq& seq, uint32_t head,
                                       int64_t row) {
    return TokenOffset(p, p.qStride, batch, seq.qTok, head, row);
}
__aicore__ inline uint64_t KeyOffset(const FaProblemTiling& p, uint32_t batch, const FaSeq& seq, uint32_t kvHead,
                                     int64_t row) {
    return TokenOffset(p, p.kStride, batch, seq.kvTok, kvHead, row);
}
__aicore__ inline uint64_t ValueOffset(const FaProblemTiling& p, uint32_t batch, const FaSeq& seq, uint32_t kvHead,
                                       int64_t row) {
    return TokenOffset(p, p.vStride, batch, seq.kvTok, kvHead, row);
}
// The output's layout: attention_out, and in the backward dy and attention_in.
__aicore__ inline uint64_t OutOffset(const FaProblemTiling& p, uint32_t batch, const FaSeq& seq, uint32_t head,
                                     int64_t row) {
    return TokenOffset(p, p.oStride, batch, seq.qTok, head, row);
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
