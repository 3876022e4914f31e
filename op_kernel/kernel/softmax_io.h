// The AIV's transfers per step of the kernels built on the online softmax (forward, inference): score chunks in from
// the workspace (two buffers: the next chunk loads while this one computes), probability chunks out in the input
// dtype, a step's P*V in, and the output rows' use of both probability buffers; with the events that order them.
// With 16-bit scores (the forward's high-performance mode) the same bytes hold one fp32 work buffer and two 16-bit
// staging buffers: chunks load into the staging buffers and are widened into the work buffer, or used as they are.
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

    // `scores` fp32 and `probs` two [chunk, w] buffers each, `opart` fp32 [rows, dvPad]; `lowScores`: the scores
    // arrive in T. Every buffer starts free.
    __aicore__ inline void Init(const AscendC::LocalTensor<float>& scores, const AscendC::LocalTensor<T>& probs,
                                const AscendC::LocalTensor<float>& opart, uint32_t chunk, uint32_t w,
                                bool lowScores = false) {
        scores_ = scores;
        low_ = lowScores;
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

    // Rows [row, row + rows) of a step's scores (rows of w at `slot`: fp32, or T with lowScores) -> the next score
    // buffer.
    template <typename S>
    __aicore__ inline void LoadScores(__gm__ S* slot, uint32_t row, uint32_t rows) {
        const uint32_t b = loads_++ & 1;
        AscendC::GlobalTensor<S> scores;
        scores.SetGlobalBuffer(slot + (uint64_t)row * w_);
        const AscendC::LocalTensor<S> dst = low_ ? Staged(b).template ReinterpretCast<S>()
                                                 : scores_[b * chunkElems_].template ReinterpretCast<S>();
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIdScores[b]);
        AscendC::DataCopy(dst, scores, rows * w_);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(kIdScores[b]);
        loaded_[b] = rows * w_;
    }

    // The fp32 scores of the next chunk, once loaded; its probability buffer goes with it. 16-bit scores are widened
    // into the work buffer, and their staging buffer is released at once.
    __aicore__ inline AscendC::LocalTensor<float> NextScores() {
        b_ = uses_++ & 1;
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(kIdScores[b_]);
        if (!low_) return scores_[b_ * chunkElems_];
        AscendC::Cast(scores_, Staged(b_), AscendC::RoundMode::CAST_NONE, loaded_[b_]);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdScores[b_]);
        return scores_;
    }

    // lowScores: the next chunk's scores as they arrived (T), once loaded; ReleaseScores when they are used up.
    __aicore__ inline AscendC::LocalTensor<T> NextStaged() {
        b_ = uses_++ & 1;
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(kIdScores[b_]);
        return Staged(b_);
    }

    // lowScores: the fp32 work buffer (free between chunks: only the vector pipe uses it).
    __aicore__ inline AscendC::LocalTensor<float> Work() const { return scores_; }

    // P = s (n elements) in the input dtype -> the rows from `row` of a step's P (rows of w at `slot`).
    __aicore__ inline void StoreProbs(const AscendC::LocalTensor<float>& s, __gm__ T* slot, uint32_t row, uint32_t n) {
        AscendC::Cast(ProbsBuffer(), s, AscendC::RoundMode::CAST_RINT, n);
        SendProbs(slot, row, n);
    }

    // The chunk's probability buffer, once free, for P computed in place; SendProbs writes it out.
    __aicore__ inline AscendC::LocalTensor<T> ProbsBuffer() {
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdProbs[b_]);
        return probs_[b_ * chunkElems_];
    }
    __aicore__ inline void SendProbs(__gm__ T* slot, uint32_t row, uint32_t n) {
        AscendC::GlobalTensor<T> probs;
        probs.SetGlobalBuffer(slot + (uint64_t)row * w_);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(kIdProbs[b_]);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(kIdProbs[b_]);
        AscendC::DataCopy(probs, probs_[b_ * chunkElems_], n);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIdProbs[b_]);
    }

    // The chunk's score buffer is free for the next load (widened 16-bit scores were released by NextScores).
    __aicore__ inline void ReleaseScores() {
        if (!low_) AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdScores[b_]);
    }
    // lowScores, after NextStaged: the staging buffer is free.
    __aicore__ inline void ReleaseStaged() { AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdScores[b_]); }

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
    // opart, once free, for an owner that fills it itself; ReleaseOutput after its last use.
    __aicore__ inline AscendC::LocalTensor<float> AcquireOutput() {
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIdOutput);
        return opart_;
    }
    __aicore__ inline void ReleaseOutput() { AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdOutput); }
    // opart itself, for an owner that holds it (after its load, before ReleaseOutput) and uses it as scratch.
    __aicore__ inline AscendC::LocalTensor<float> OutputBuffer() const { return opart_; }

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
    // lowScores: staging buffer b, after the fp32 work buffer.
    __aicore__ inline AscendC::LocalTensor<T> Staged(uint32_t b) const {
        return scores_.template ReinterpretCast<T>()[(2 + b) * chunkElems_];
    }

    AscendC::LocalTensor<float> scores_, opart_;
    AscendC::LocalTensor<T> probs_;
    uint32_t chunkElems_ = 0, w_ = 0, loads_ = 0, uses_ = 0, b_ = 0;
    uint32_t loaded_[2] = {0, 0};  // elements of each buffer's last load
    bool low_ = false;
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_SOFTMAX_IO_H
