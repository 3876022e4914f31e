// Pieces shared by the cube (AIC) and vector (AIV) halves of the forward kernel: the per-core step stream both
// sides walk in the same order, the cross-core flags that pace it, and the GM workspace each step exchanges.
#ifndef NPU_FA_FA_COMMON_H
#define NPU_FA_FA_COMMON_H

#include "kernel_operator.h"
#include "flash_attention_tiling.h"

namespace npu_fa {

// Cross-core flags (mode 2: AIC <-> its two AIVs). Each signal rotates over kFlagRing IDs by step, as the
// built-in does, so one direction never sets the same ID twice in a row. IDs 11-14 stay free for SyncAll.
constexpr uint16_t kFlagRing = 3;
constexpr uint16_t kFlagScoresReady = 0;   // AIC -> AIV, IDs 0-2: S of a step is in the workspace
constexpr uint16_t kFlagOutputReady = 3;   // AIC -> AIV, IDs 3-5: P*V of a step is in the workspace
constexpr uint16_t kFlagProbsReady = 6;    // AIV -> AIC, IDs 6-8: both halves of P are in the workspace

// The flag ID of `signal` (one of the bases above) for the core's step number `step`.
__aicore__ inline uint16_t FlagOf(uint16_t signal, uint32_t step) { return (uint16_t)(signal + step % kFlagRing); }

constexpr float kMaskValue = -3.4028234663852886e38f;  // -FLT_MAX: masked scores (exp gives 0, no NaN)
constexpr float kFltMax = 3.4028234663852886e38f;

// One query block of one head of one sequence, and the s2 blocks it sees.
struct FaTask {
    uint32_t batch;
    uint32_t head;
    int64_t row0;        // first query row inside the sequence
    int64_t rows;        // query rows of this task (<= s1Block)
    FaSeq seq;
    FaBand band;
    int64_t stepFirst;   // s2 block range [stepFirst, stepLast)
    int64_t stepLast;
};

// Walks the tasks of one core in order: (sequence, head, query block), sequence-major.
class FaTaskIterator {
public:
    __aicore__ inline void Init(const FlashAttentionTilingData* t, __gm__ int64_t* seqInfo, uint32_t core) {
        t_ = t;
        seqInfo_ = seqInfo;
        next_ = t->coreTaskStart[core];
        end_ = t->coreTaskStart[core + 1];
        batch_ = 0;
        if (t->varlen != 0) {
            while (batch_ + 1 < t->batch && SeqField(batch_ + 1, 4) <= (int64_t)next_) ++batch_;
        }
    }

    __aicore__ inline bool Next(FaTask& task) {
        if (next_ >= end_) return false;
        const FlashAttentionTilingData* t = t_;
        int64_t local;
        if (t->varlen != 0) {
            while (batch_ + 1 < t->batch && SeqField(batch_ + 1, 4) <= (int64_t)next_) ++batch_;
            task.seq.qTok = SeqField(batch_, 0);
            task.seq.kvTok = SeqField(batch_, 1);
            task.seq.s1 = SeqField(batch_, 2);
            task.seq.s2 = SeqField(batch_, 3);
            local = (int64_t)next_ - SeqField(batch_, 4);
        } else {
            batch_ = next_ / (t->n1 * t->s1Blocks);
            task.seq.qTok = 0;
            task.seq.kvTok = 0;
            task.seq.s1 = t->s1;
            task.seq.s2 = t->s2;
            local = (int64_t)(next_ % (t->n1 * t->s1Blocks));
        }
        const int64_t blocks = (task.seq.s1 + t->s1Block - 1) / t->s1Block;
        task.batch = batch_;
        task.head = (uint32_t)(local / blocks);
        task.row0 = (local % blocks) * t->s1Block;
        task.rows = FaMin(task.seq.s1 - task.row0, (int64_t)t->s1Block);
        task.band = BandOf(t->sparseMode, t->preTokens, t->nextTokens, task.seq.s1, task.seq.s2);
        FaStepRange r = StepsOf(task.band, task.row0, task.row0 + task.rows, task.seq.s2, t->s2Block);
        task.stepFirst = r.first;
        task.stepLast = r.last;
        ++next_;
        return true;
    }

private:
    __aicore__ inline int64_t SeqField(uint32_t b, uint32_t f) const {
        return seqInfo_[(uint64_t)b * kSeqInfoFields + f];
    }
    const FlashAttentionTilingData* t_ = nullptr;
    __gm__ int64_t* seqInfo_ = nullptr;
    uint32_t next_ = 0;
    uint32_t end_ = 0;
    uint32_t batch_ = 0;
};

// Element offsets of a token row in q/k/v/out.
__aicore__ inline uint64_t QOffset(const FlashAttentionTilingData* t, const FaTask& k, int64_t row) {
    return (t->varlen ? (uint64_t)(k.seq.qTok + row) * t->qStrideS : k.batch * t->qStrideB + (uint64_t)row * t->qStrideS) +
           k.head * t->qStrideN;
}
__aicore__ inline uint64_t KOffset(const FlashAttentionTilingData* t, const FaTask& k, int64_t col) {
    return (t->varlen ? (uint64_t)(k.seq.kvTok + col) * t->kStrideS : k.batch * t->kStrideB + (uint64_t)col * t->kStrideS) +
           (k.head / t->group) * t->kStrideN;
}
__aicore__ inline uint64_t VOffset(const FlashAttentionTilingData* t, const FaTask& k, int64_t col) {
    return (t->varlen ? (uint64_t)(k.seq.kvTok + col) * t->vStrideS : k.batch * t->vStrideB + (uint64_t)col * t->vStrideS) +
           (k.head / t->group) * t->vStrideN;
}
__aicore__ inline uint64_t OOffset(const FlashAttentionTilingData* t, const FaTask& k, int64_t row) {
    return (t->varlen ? (uint64_t)(k.seq.qTok + row) * t->oStrideS : k.batch * t->oStrideB + (uint64_t)row * t->oStrideS) +
           k.head * t->oStrideN;
}
// Offset (in statistic rows of 8 floats) of a query row in softmax_max/softmax_sum: [B, N1, S1, 8], or per sequence
// head-major for TND (the built-in's default TND statistics order).
__aicore__ inline uint64_t StatRow(const FlashAttentionTilingData* t, const FaTask& k, int64_t row) {
    if (t->varlen) return (uint64_t)k.seq.qTok * t->n1 + (uint64_t)k.head * k.seq.s1 + row;
    return ((uint64_t)k.batch * t->n1 + k.head) * t->s1 + row;
}

// The workspace slots of one core (layout chosen by the host tiling); step parity picks the slot.
class FaWorkspace {
public:
    __aicore__ inline void Init(GM_ADDR workspace, const FlashAttentionTilingData* t, uint32_t core) {
        base_ = workspace + (uint64_t)core * t->wsPerCore;
        t_ = t;
    }
    __aicore__ inline __gm__ float* Scores(uint32_t slot) const {
        return (__gm__ float*)(base_ + t_->wsOffsetS + slot * Align512((uint64_t)t_->s1Block * t_->s2Block * 4));
    }
    template <typename T>
    __aicore__ inline __gm__ T* Probs(uint32_t slot) const {
        return (__gm__ T*)(base_ + t_->wsOffsetP + slot * Align512((uint64_t)t_->s1Block * t_->s2Block * 2));
    }
    __aicore__ inline __gm__ float* Output(uint32_t slot) const {
        return (__gm__ float*)(base_ + t_->wsOffsetO + slot * Align512((uint64_t)t_->s1Block * t_->dvPad * 4));
    }

private:
    __aicore__ inline static uint64_t Align512(uint64_t v) { return (v + 511) / 512 * 512; }
    __gm__ uint8_t* base_ = nullptr;
    const FlashAttentionTilingData* t_ = nullptr;
};

}  // namespace npu_fa

#endif  // NPU_FA_FA_COMMON_H
