// What both directions do to a tile of raw scores S = Q K^T before the softmax, in this order: scale (or soft-cap
// the scaled scores), add the positional bias (in-kernel ALiBi, or an outer pse tensor), mask. The backward puts
// its own work between the steps (the cap's slope after Scale, the max subtraction before Mask), so each is a call.
#ifndef NPU_FA_TILE_SCORE_PROLOGUE_H
#define NPU_FA_TILE_SCORE_PROLOGUE_H

#include "kernel_operator.h"
#include "../tiling/problem_tiling.h"
#include "score_tile.h"
#include "softcap.h"
#include "alibi.h"
#include "pse.h"
#include "mask.h"

namespace npu_fa {

template <typename T>
class FaScorePrologue {
public:
    // `w`: the tile width (s2Block); `capScratch`: one 32 B block (SoftCap's numerator); `dmat` the (column - row)
    // pattern and `bias` [chunk, w] fp32 scratch (only with ALiBi or an outer pse). The pse tile and the masks take
    // their buffers through OuterPse().Init and TileMask().Init.
    __aicore__ inline void Init(const FaProblemTiling* p, uint32_t w, GM_ADDR alibiSlopes,
                                const AscendC::LocalTensor<float>& capScratch, const AscendC::LocalTensor<float>& dmat,
                                const AscendC::LocalTensor<float>& bias) {
        p_ = p;
        w_ = w;
        capScratch_ = capScratch;
        dmat_ = dmat;
        bias_ = bias;
        if (p->alibiMode != kAlibiNone) slopeGm_.SetGlobalBuffer((__gm__ float*)alibiSlopes);
    }
    __aicore__ inline FaOuterPse<T>& OuterPse() { return pse_; }
    __aicore__ inline FaTileMask& TileMask() { return mask_; }

    // The ALiBi slope of a query head (0 without ALiBi): read once per tile, before its chunks.
    __aicore__ inline float AlibiSlope(uint32_t batch, uint32_t head) {
        if (p_->alibiMode == kAlibiNone) return 0.0f;
        return slopeGm_.GetValue((p_->alibiPerBatch != 0 ? (uint64_t)batch * p_->n1 : 0) + head);
    }

    // s <- scale * s, or softcap * tanh(scale * s / softcap), over n fp32 elements.
    __aicore__ inline void Scale(const AscendC::LocalTensor<float>& s, uint32_t n) {
        if (p_->softcap > 0.0f) {
            SoftCap(s, capScratch_, p_->scale, p_->softcap, n);
        } else {
            AscendC::Muls(s, s, p_->scale, (int32_t)n);
        }
    }

    // s += the tile's positional bias: ALiBi with the head's `slope`, or the outer pse.
    __aicore__ inline void AddBias(const AscendC::LocalTensor<float>& s, const FaScoreTile& tile, float slope) {
        if (p_->alibiMode != kAlibiNone) {
            AddAlibi(s, dmat_, bias_, p_->alibiMode, tile.c0 - tile.r0 + p_->alibiDelta, slope, tile.rows * w_);
        }
        if (p_->pseMode != kPseNone) pse_.Add(s, tile);
    }

    // Scores the tile's band, dense mask and sequence end hide -> -FLT_MAX.
    __aicore__ inline void ApplyMask(const AscendC::LocalTensor<float>& s, const FaScoreTile& tile) {
        mask_.Apply(s, tile);
    }

private:
    const FaProblemTiling* p_ = nullptr;
    uint32_t w_ = 0;
    AscendC::GlobalTensor<float> slopeGm_;
    AscendC::LocalTensor<float> capScratch_, dmat_, bias_;
    FaOuterPse<T> pse_;
    FaTileMask mask_;
};

}  // namespace npu_fa

#endif  // NPU_FA_TILE_SCORE_PROLOGUE_H
