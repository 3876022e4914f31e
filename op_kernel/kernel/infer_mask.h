// The dense atten_mask of the inference kernel over packed GQA rows: a row's mask row is its query token's (and, for
// a mask with a head dimension, its head's), read in place from GM by the strides of the mask's view. Per chunk of
// rows: the mask rows GM -> UB as bytes, widened to half, then the compare and select of tile/mask.h. Without a head
// dimension each query token's row is loaded once (the chunk's tokens sit at one stride: one DMA) and widened to
// every row of its run of heads with a source repeat stride of 0; with one, each run's heads load in one DMA.
#ifndef NPU_FA_KERNEL_INFER_MASK_H
#define NPU_FA_KERNEL_INFER_MASK_H

#include "infer_common.h"
#include "../tile/mask.h"

namespace npu_fa {

class FaInferMask {
public:
    // `bytes`, `widened` and `bits` hold a chunk's [AlignUp(rows, 2), w] mask as bytes, half and keep bits; `event`
    // is a V_MTE2 / MTE2_V event ID this class sets and waits in pairs.
    __aicore__ inline void Init(const FaInferTilingData* t, GM_ADDR attenMask, const AscendC::LocalTensor<uint8_t>& bytes,
                                const AscendC::LocalTensor<half>& widened, const AscendC::LocalTensor<uint8_t>& bits,
                                int32_t event) {
        t_ = t;
        gm_.SetGlobalBuffer((__gm__ uint8_t*)attenMask);
        bytes_ = bytes;
        half_ = widened;
        bits_ = bits;
        event_ = event;
    }

    // Masks s[rows, w]: packed rows [row, row + rows) of the task against keys [c0, c0 + cols).
    __aicore__ inline void Apply(const AscendC::LocalTensor<float>& s, const FaInferTask& task, int64_t row,
                                 uint32_t rows, int64_t c0, uint32_t cols) {
        const FaProblemTiling& p = t_->problem;
        const uint32_t w = t_->s2Block;
        const uint64_t base = (uint64_t)task.maskBase + (p.maskColStep != 0 ? (uint64_t)c0 : 0);
        const uint32_t gap = (w - AlignUp(cols, 32)) / 32;
        const int64_t token0 = row / p.group;
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(event_);  // the previous chunk's reads of bytes_ are done
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(event_);
        FaInferRuns runs(row, rows, p.group, task.kvHead);
        FaInferRun run;
        if (p.maskStrideN == 0) {
            const uint32_t tokens = p.maskStrideS == 0 ? 1 : (uint32_t)((row + rows - 1) / p.group - token0 + 1);
            AscendC::DataCopyExtParams cp((uint16_t)tokens, cols, tokens == 1 ? 0 : (uint32_t)(p.maskStrideS - cols),
                                          gap, 0);
            AscendC::DataCopyPad(bytes_, gm_[base + (uint64_t)token0 * p.maskStrideS], cp,
                                 AscendC::DataCopyPadExtParams<uint8_t>(false, 0, 0, 0));
        } else {
            while (runs.Next(run)) {
                AscendC::DataCopyExtParams cp((uint16_t)run.count, cols, (uint32_t)(p.maskStrideN - cols), gap, 0);
                AscendC::DataCopyPad(bytes_[run.tileRow * w],
                                     gm_[base + run.head * p.maskStrideN + (uint64_t)run.token * p.maskStrideS], cp,
                                     AscendC::DataCopyPadExtParams<uint8_t>(false, 0, 0, 0));
            }
        }
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(event_);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(event_);
        if (p.maskStrideN == 0) {  // each run of heads reads its token's row (source repeat stride 0)
            const AscendC::UnaryRepeatParams rp(1, 1, (uint8_t)(w / 16), 0);
            FaInferRuns tokenRuns(row, rows, p.group, task.kvHead);
            while (tokenRuns.Next(run)) {
                const uint32_t src = p.maskStrideS == 0 ? 0 : (uint32_t)(run.token - token0) * w;
                const uint32_t pad = run.tileRow + run.count == rows ? rows % 2 : 0;  // the compare's even rows
                AscendC::Cast(half_[run.tileRow * w], bytes_[src], AscendC::RoundMode::CAST_NONE, (uint64_t)w,
                              (uint8_t)(run.count + pad), rp);
            }
        } else {
            AscendC::Cast(half_, bytes_, AscendC::RoundMode::CAST_NONE, AlignUp(rows, 2) * w);
        }
        FaSelectUnmasked(s, half_, bits_, rows, w);
    }

private:
    const FaInferTilingData* t_ = nullptr;
    int32_t event_ = 0;
    AscendC::GlobalTensor<uint8_t> gm_;
    AscendC::LocalTensor<uint8_t> bytes_;
    AscendC::LocalTensor<half> half_;
    AscendC::LocalTensor<uint8_t> bits_;
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_INFER_MASK_H
