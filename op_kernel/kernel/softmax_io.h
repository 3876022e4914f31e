// The AIV's transfers per step of the kernels built on the online softmax (forward, inference): score chunks in from
// the workspace (two buffers: the next chunk loads while this one computes), probability chunks out in the input
// dtype, a step's P*V in, and the output rows' use of both probability buffers; with the events that order them.
// The owner allocates the buffers (its UB budget counts them).
#ifndef NPU_FA_KERNEL_SOFTMAX_IO_H
#define NPU_FA_KERNEL_SOFTMAX_IO_H

#include "kernel_operator.h"

namespace npu_fa {

template <typename T>
class FaSoftmaxIo {
public:
    // V_MTE2 / MTE3_V event IDs: the two score chunk buffers and the partial output in (MTE2), the two probability
    // chunk buffers (the output rows use both) and the statistics out (MTE3). V_MTE2 IDs from 3 are the owner's.
    static constexpr int32_t kIdScores[2] = {0, 2}, kIdOutput = 1, kIdProbs[2] = {0, 2}, kIdStats = 1;
    static constexpr int32_t kIdFree = 3;

    // `scores` fp32 and `probs` two [chunk, w] buffers each, `opart` fp32 [rows, dvPad]. Every buffer starts free.
    __aicore__ inline void Init(const AscendC::LocalTensor<float>& scores, const AscendC::LocalTensor<T>& probs,
                                const AscendC::LocalTensor<float>& opart, uint32_t chunk, uint32_t w) {
        scores_ = scores;
        probs_ = probs;
        opart_ = opart;
        chunkElems_ = chunk * w;
        w_ = w;
        for (int32_t b = 0; b < 2; ++b) {
            AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdScores[b]);
            AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIdProbs[b]);
        }
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdOutput);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIdStats);
    }

    // At the end: every transfer done.
    __aicore__ inline void End() {
        for (int32_t b = 0; b < 2; ++b) {
            AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIdScores[b]);
            AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdProbs[b]);
        }
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIdOutput);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdStats);
    }

    // Rows [row, row + rows) of a step's scores (fp32 rows of w at `slot`) -> the next score buffer.
    __aicore__ inline void LoadScores(__gm__ float* slot, uint32_t row, uint32_t rows) {
        const uint32_t b = loads_++ & 1;
        AscendC::GlobalTensor<float> scores;
        scores.SetGlobalBuffer(slot + (uint64_t)row * w_);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIdScores[b]);
        AscendC::DataCopy(scores_[b * chunkElems_], scores, rows * w_);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(kIdScores[b]);
    }

    // The score buffer of the next chunk, once its load is done; its probability buffer goes with it.
    __aicore__ inline AscendC::LocalTensor<float> NextScores() {
        b_ = uses_++ & 1;
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(kIdScores[b_]);
        return scores_[b_ * chunkElems_];
    }

    // P = s (n elements) in the input dtype -> the rows from `row` of a step's P (rows of w at `slot`).
    __aicore__ inline void StoreProbs(const AscendC::LocalTensor<float>& s, __gm__ T* slot, uint32_t row, uint32_t n) {
        AscendC::LocalTensor<T> p = probs_[b_ * chunkElems_];
        AscendC::GlobalTensor<T> probs;
        probs.SetGlobalBuffer(slot + (uint64_t)row * w_);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdProbs[b_]);
        AscendC::Cast(p, s, AscendC::RoundMode::CAST_RINT, n);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(kIdProbs[b_]);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(kIdProbs[b_]);
        AscendC::DataCopy(probs, p, n);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIdProbs[b_]);
    }

    // The chunk's score buffer is free for the next load.
    __aicore__ inline void ReleaseScores() { AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdScores[b_]); }

    // n floats of a step's P*V (at `slot` + `offset`) -> opart, once loaded; ReleaseOutput after its last use.
    __aicore__ inline AscendC::LocalTensor<float> LoadOutput(__gm__ float* slot, uint64_t offset, uint32_t n) {
        AscendC::GlobalTensor<float> part;
        part.SetGlobalBuffer(slot + offset);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIdOutput);
        AscendC::DataCopy(opart_, part, n);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(kIdOutput);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(kIdOutput);
        return opart_;
    }
    __aicore__ inline void ReleaseOutput() { AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdOutput); }

    // The output rows take the space of both probability buffers: wait until both are written out, and hand them
    // back after the rows' copy out (MTE3).
    __aicore__ inline void WaitProbBuffers() {
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdProbs[0]);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdProbs[1]);
    }
    __aicore__ inline void ReleaseProbBuffers() {
        AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIdProbs[0]);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIdProbs[1]);
    }

private:
    AscendC::LocalTensor<float> scores_, opart_;
    AscendC::LocalTensor<T> probs_;
    uint32_t chunkElems_ = 0, w_ = 0, loads_ = 0, uses_ = 0, b_ = 0;
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_SOFTMAX_IO_H
