// Row-wise vector ops on an fp32 score or output tile: x[r][c] op= b[r] for the rows of a [rows, cols] tile (row
// pitch cols, a multiple of 8), b a [rows, 8] block-broadcast statistic (one 32 B block per row).
#ifndef NPU_FA_TILE_ROW_OPS_H
#define NPU_FA_TILE_ROW_OPS_H

#include "kernel_operator.h"

namespace npu_fa {

enum class FaRowOp { kSub, kMul, kDiv, kAdd };

// x = x op b over `repeats` repeats of `mask` lanes, strides as `p` gives them.
template <FaRowOp kOp, typename E>
__aicore__ inline void FaRowApply(const AscendC::LocalTensor<E>& x, const AscendC::LocalTensor<E>& b, uint64_t mask,
                                  uint8_t repeats, const AscendC::BinaryRepeatParams& p) {
    if (kOp == FaRowOp::kSub) AscendC::Sub(x, x, b, mask, repeats, p);
    if (kOp == FaRowOp::kMul) AscendC::Mul(x, x, b, mask, repeats, p);
    if (kOp == FaRowOp::kDiv) AscendC::Div(x, x, b, mask, repeats, p);
    if (kOp == FaRowOp::kAdd) AscendC::Add(x, x, b, mask, repeats, p);
}

// One repeat per row (src1 block stride 0: the row's statistic block), 64 columns per call.
template <FaRowOp kOp>
__aicore__ inline void RowBroadcastOp(const AscendC::LocalTensor<float>& x, const AscendC::LocalTensor<float>& b,
                                      uint32_t rows, uint32_t cols) {
    const uint8_t rep = (uint8_t)(cols / 8);
    AscendC::BinaryRepeatParams p(1, 1, 0, rep, rep, 1);
    for (uint32_t c = 0; c < cols; c += 64) {
        const uint64_t mask = cols - c < 64 ? cols - c : 64;
        FaRowApply<kOp>(x[c], b, mask, (uint8_t)rows, p);
    }
}

// x[r][c] -= b[r] (subtract the row max).
__aicore__ inline void RowSub(const AscendC::LocalTensor<float>& x, const AscendC::LocalTensor<float>& b, uint32_t rows,
                              uint32_t cols) {
    RowBroadcastOp<FaRowOp::kSub>(x, b, rows, cols);
}
// x[r][c] -= b[r], one instruction per row (cols a multiple of 64, at most 255 repeats): the rows' instructions
// touch disjoint bytes and pipeline, where per-64-column calls over all rows overlap in their byte spans and each
// waits for the previous one's result (docs/cost_model.md, dependent vector instructions).
__aicore__ inline void RowSubPerRow(const AscendC::LocalTensor<float>& x, const AscendC::LocalTensor<float>& b,
                                    uint32_t rows, uint32_t cols) {
    const AscendC::BinaryRepeatParams p(1, 1, 0, 8, 8, 0);
    for (uint32_t r = 0; r < rows; ++r) {
        AscendC::Sub(x[r * cols], x[r * cols], b[r * 8], (uint64_t)64, (uint8_t)(cols / 64), p);
    }
}
// x[r][c] *= b[r] (rescale a running output).
__aicore__ inline void RowMul(const AscendC::LocalTensor<float>& x, const AscendC::LocalTensor<float>& b, uint32_t rows,
                              uint32_t cols) {
    RowBroadcastOp<FaRowOp::kMul>(x, b, rows, cols);
}
// y[r][c] += x[r][c] * b[r] (one rounding: MulAddDst).
__aicore__ inline void RowMulAdd(const AscendC::LocalTensor<float>& y, const AscendC::LocalTensor<float>& x,
                                 const AscendC::LocalTensor<float>& b, uint32_t rows, uint32_t cols) {
    const uint8_t rep = (uint8_t)(cols / 8);
    const AscendC::BinaryRepeatParams p(1, 1, 0, rep, rep, 1);
    for (uint32_t c = 0; c < cols; c += 64) {
        const uint64_t mask = cols - c < 64 ? cols - c : 64;
        AscendC::MulAddDst(y[c], x[c], b, mask, (uint8_t)rows, p);
    }
}
// x[r][c] /= b[r] (normalise by the row sum).
__aicore__ inline void RowDiv(const AscendC::LocalTensor<float>& x, const AscendC::LocalTensor<float>& b, uint32_t rows,
                              uint32_t cols) {
    RowBroadcastOp<FaRowOp::kDiv>(x, b, rows, cols);
}

// dst[r] = sum over c of x[r][c] for the rows of a [rows, cols] tile (cols a multiple of 64, rows <= 255), compact
// (one float per row); each further 64-column block is reduced into `part` (>= rows floats) and added.
__aicore__ inline void RowSum(const AscendC::LocalTensor<float>& dst, const AscendC::LocalTensor<float>& x,
                              const AscendC::LocalTensor<float>& part, uint32_t rows, uint32_t cols) {
    const int32_t repStride = (int32_t)(cols / 8);
    AscendC::WholeReduceSum(dst, x, 64, (int32_t)rows, 1, 1, repStride);
    for (uint32_t c = 64; c < cols; c += 64) {
        AscendC::WholeReduceSum(part, x[c], 64, (int32_t)rows, 1, 1, repStride);
        AscendC::Add(dst, dst, part, (int32_t)rows);
    }
}

}  // namespace npu_fa

#endif  // NPU_FA_TILE_ROW_OPS_H
