// An outer positional bias tensor (the built-in's pse with pse_type 0 or 1): [B or 1, N1, S1 or 1, S2] in the input
// dtype, read from GM tile by tile and added to the scores after the scale and the soft-cap, before the masks:
// pse_type 0 adds it as it is, pse_type 1 times the scale (softmax(scale * (q.k + pse)) when there is no cap). A
// [.., 1, S2] bias is one row, read once per tile and added to every row. Shared by the forward and the backward.
#ifndef NPU_FA_TILE_PSE_H
#define NPU_FA_TILE_PSE_H

#include "kernel_operator.h"
#include "../tiling/problem_tiling.h"
#include "score_tile.h"

namespace npu_fa {

template <typename T>
class FaOuterPse {
public:
    // `w`: the tile width (s2Block). `half` receives a tile of the bias ([rows, w] of T), `bias` its fp32 copy;
    // `event` is a V_MTE2 / MTE2_V event ID this class sets and waits in pairs.
    __aicore__ inline void Init(const FaProblemTiling* p, uint32_t w, GM_ADDR pse, const AscendC::LocalTensor<T>& half,
                                const AscendC::LocalTensor<float>& bias, int32_t event) {
        p_ = p;
        w_ = w;
        gm_.SetGlobalBuffer((__gm__ T*)pse);
        half_ = half;
        bias_ = bias;
        event_ = event;
    }

    // s[rows, w] += f * pse[batch, head, r0 + r, c0 + c] of the tile for c < cols (f = 1, or scale for pse_type 1);
    // columns past `cols` get whatever the buffer held (the masks overwrite them).
    __aicore__ inline void Add(const AscendC::LocalTensor<float>& s, const FaScoreTile& tile) {
        const FaProblemTiling* p = p_;
        const uint64_t off =
            tile.batch * p->pseStrideB + tile.head * p->pseStrideN + (uint64_t)tile.r0 * p->pseStrideS + tile.c0;
        const bool sameRows = p->pseStrideS == 0;
        BeginLoad();
        Load(off, sameRows ? 1 : tile.rows, sameRows ? tile.cols : p->pseStrideS, tile.cols, 0);
        EndLoad();
        AddLoaded(s, tile.rows, sameRows);
    }

    // The pieces of Add for rows that sit at several strides in GM (the inference kernel's packed rows): BeginLoad,
    // one Load per run of rows, EndLoad, AddLoaded.
    __aicore__ inline void BeginLoad() {
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(event_);  // the previous tile's reads of half_ are done
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(event_);
    }
    // Bias rows [at, at + rows) of the tile <- `rows` rows of `cols` elements from GM element `off`, `rowStride`
    // (>= cols) elements apart.
    __aicore__ inline void Load(uint64_t off, uint32_t rows, uint64_t rowStride, uint32_t cols, uint32_t at) {
        const uint32_t rowBytes = cols * (uint32_t)sizeof(T);
        const uint32_t gap = (w_ * (uint32_t)sizeof(T) - AlignUp(rowBytes, 32)) / 32;
        AscendC::DataCopyExtParams cp((uint16_t)rows, rowBytes, (uint32_t)((rowStride - cols) * sizeof(T)), gap, 0);
        AscendC::DataCopyPad(half_[at * w_], gm_[off], cp, AscendC::DataCopyPadExtParams<T>(false, 0, 0, (T)0.0f));
    }
    __aicore__ inline void EndLoad() {
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(event_);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(event_);
    }
    // s[rows, w] += f * the loaded bias rows (`sameRows`: its row 0 for every row).
    __aicore__ inline void AddLoaded(const AscendC::LocalTensor<float>& s, uint32_t rows, bool sameRows) {
        const float f = p_->pseMode == kPseScaled ? p_->scale : 1.0f;
        if (sameRows) {  // one row of bias for every score row (source repeat stride 0)
            AscendC::Cast(bias_, half_, AscendC::RoundMode::CAST_NONE, w_);
            const AscendC::UnaryRepeatParams p(1, 1, (uint8_t)(w_ / 8), 0);
            for (uint32_t c = 0; c < w_; c += 64) AscendC::Axpy(s[c], bias_[c], f, (uint64_t)64, (uint8_t)rows, p);
        } else {
            AscendC::Cast(bias_, half_, AscendC::RoundMode::CAST_NONE, rows * w_);
            AscendC::Axpy(s, bias_, f, (int32_t)(rows * w_));
        }
    }

private:
    const FaProblemTiling* p_ = nullptr;
    uint32_t w_ = 0;
    int32_t event_ = 0;
    AscendC::GlobalTensor<T> gm_;
    AscendC::LocalTensor<T> half_;
    AscendC::LocalTensor<float> bias_;
};

}  // namespace npu_fa

#endif  // NPU_FA_TILE_PSE_H
