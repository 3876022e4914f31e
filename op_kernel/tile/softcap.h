// Logit soft-capping (flash_attn's `softcap`, Gemma 2): the scaled scores x = scale * q.k become cap * tanh(x / cap)
// before the positional bias, the masks and the softmax. Shared by the forward and the backward vector cores.
//
// tanh is built from Exp and one Div as 1 - 2 / (exp(2y) + 1), which saturates without overflow: exp -> +inf gives
// +1, exp -> 0 gives -1. The backward needs d(cap tanh(x / cap)) / dx = 1 - (y / cap)^2 of the capped value y.
#ifndef NPU_FA_TILE_SOFTCAP_H
#define NPU_FA_TILE_SOFTCAP_H

#include "kernel_operator.h"

namespace npu_fa {

// x <- cap * tanh(x * scale / cap) for the n fp32 elements of x (n a multiple of 64). `cst` is one 32-byte block of
// scratch: the numerator -2 cap, read by every Div repeat with a zero stride.
__aicore__ inline void SoftCap(const AscendC::LocalTensor<float>& x, const AscendC::LocalTensor<float>& cst,
                               float scale, float cap, uint32_t n) {
    AscendC::Muls(x, x, 2.0f * scale / cap, (int32_t)n);
    AscendC::Exp(x, x, (int32_t)n);
    AscendC::Adds(x, x, 1.0f, (int32_t)n);
    AscendC::Duplicate(cst, -2.0f * cap, 8);
    // x = -2 cap / x: the numerator block repeats (src0 block and repeat strides 0), x is divided in place.
    const AscendC::BinaryRepeatParams p(1, 0, 1, 8, 0, 8);
    constexpr uint32_t kMaxRepeats = 255;
    for (uint32_t done = 0; done < n; done += kMaxRepeats * 64) {
        const uint32_t reps = (n - done) / 64 < kMaxRepeats ? (n - done) / 64 : kMaxRepeats;
        AscendC::Div(x[done], cst, x[done], (uint64_t)64, (uint8_t)reps, p);
    }
    AscendC::Adds(x, x, cap, (int32_t)n);
}

// g <- 1 - (y / cap)^2 for the n fp32 capped scores y (the derivative of the cap at y).
__aicore__ inline void SoftCapSlope(const AscendC::LocalTensor<float>& g, const AscendC::LocalTensor<float>& y,
                                    float cap, uint32_t n) {
    AscendC::Muls(g, y, 1.0f / cap, (int32_t)n);
    AscendC::Mul(g, g, g, (int32_t)n);
    AscendC::Muls(g, g, -1.0f, (int32_t)n);
    AscendC::Adds(g, g, 1.0f, (int32_t)n);
}

}  // namespace npu_fa

#endif  // NPU_FA_TILE_SOFTCAP_H
