// Pieces shared by the cube (AIC) and vector (AIV) halves of the forward kernel: the per-core step stream both
// sides walk in the same order, the cross-core flags that pace it, and the GM workspace each step exchanges.
#ifndef NPU_FA_FA_COMMON_H
#define NPU_FA_FA_COMMON_H

#include "kernel_operator.h"
#include "flash_attention_tiling.h"

namespace npu_fa {

// Cross-core flags (mode 2: AIC <-> its two AIVs). Each signal rotates over kFlagRing IDs by step, as the
// built-in does. IDs 11-15 stay free: 11-14 belong to SyncAll, 15 to CANN's kernel wrapper (its workspace clearing
// signals the AIVs with NotifyEvent<PIPE_MTE3>(15)).
constexpr uint16_t kFlagRing = 3;
constexpr uint16_t kFlagScoresReady = 0;   // AIC -> AIV, IDs 0-2: S of a step is in the workspace
constexpr uint16_t kFlagOutputReady = 3;   // AIC -> AIV, IDs 3-5: P*V of a step is in the workspace
constexpr uint16_t kFlagProbsReady = 6;    // AIV -> AIC, IDs 6-8: both halves of P are in the workspace

// The cube's P*V and the vector cores' output fold trail the scores by kStepLag steps (the cube computes S(j + 2)
// while the vector cores work on step j), so each core keeps kWsSlots = kStepLag + 1 workspace slots in flight; a
// signal has at most kFlagRing steps outstanding.
constexpr uint32_t kWsSlots = kFaStepSlots;  // flash_attention_tiling.h: the host sizes the workspace by it
constexpr uint32_t kStepLag = kWsSlots - 1;
static_assert(kFlagRing >= kWsSlots, "each in-flight step needs its own flag ID");
__aicore__ inline uint32_t WsSlot(uint32_t step) { return step % kWsSlots; }

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
    int64_t stepFirst;   // s2 block range [stepFirst, stepLast) of the band
    int64_t stepLast;
    int64_t mapEntry;    // dense masks: block-map entry of (this task, s2 block 0)
    int64_t maskBase;    // dense masks: byte offset of the sequence's mask (head 0, row 0, column 0)
};

// Walks the tasks of one core in order: (sequence, head, query block), sequence-major. With a dense mask it also
// answers which s2 blocks the block map lets through, and takes the core's task range from the map's counts.
class FaTaskIterator {
public:
    __aicore__ inline void Init(const FlashAttentionTilingData* t, __gm__ int64_t* seqInfo, __gm__ uint8_t* blockMap,
                                uint32_t core) {
        t_ = t;
        seqInfo_ = seqInfo;
        map_ = blockMap;
        if (t->maskMode != 0) {
            CoreRangeFromMap(core);
        } else {
            next_ = t->coreTaskStart[core];
            end_ = t->coreTaskStart[core + 1];
        }
        batch_ = 0;
        if (t->varlen != 0) {
            while (batch_ + 1 < t->batch && SeqField(batch_ + 1, kSeqFirstTask) <= (int64_t)next_) ++batch_;
        }
    }

    __aicore__ inline bool Next(FaTask& task) {
        if (next_ >= end_) return false;
        const FlashAttentionTilingData* t = t_;
        int64_t local;
        if (t->varlen != 0) {
            while (batch_ + 1 < t->batch && SeqField(batch_ + 1, kSeqFirstTask) <= (int64_t)next_) ++batch_;
            local = (int64_t)next_ - SeqField(batch_, kSeqFirstTask);
        } else {
            batch_ = next_ / (t->n1 * t->s1Blocks);
            local = (int64_t)(next_ % (t->n1 * t->s1Blocks));
        }
        ReadSeqRow(seqInfo_ + (uint64_t)batch_ * kSeqInfoFields, task.seq, task.band);
        const int64_t blocks = (task.seq.s1 + t->s1Block - 1) / t->s1Block;
        task.batch = batch_;
        task.head = (uint32_t)(local / blocks);
        task.row0 = (local % blocks) * t->s1Block;
        task.rows = FaMin(task.seq.s1 - task.row0, (int64_t)t->s1Block);
        FaStepRange r = StepsOf(task.band, task.row0, task.row0 + task.rows, task.seq.s2, t->s2Block);
        task.stepFirst = r.first;
        task.stepLast = r.last;
        task.mapEntry = 0;
        task.maskBase = SeqField(batch_, kSeqMaskBase);
        if (t->maskMode != 0) {
            const int64_t mapRow = MapRowLocal(task.head, local % blocks, blocks);
            task.mapEntry = SeqField(batch_, kSeqMapEntry0) + mapRow * ColBlocks(task.seq.s2);
        }
        ++next_;
        return true;
    }

    // The block map's verdict on s2 block j of a task (kTileMixed without a dense mask: the band logic decides).
    __aicore__ inline uint8_t TileState(const FaTask& task, int64_t j) const {
        if (t_->maskMode == 0) return kTileMixed;
        return map_[task.mapEntry + j];
    }

    // The first s2 block >= j of the task that is computed (stepLast when none is left).
    __aicore__ inline int64_t NextStep(const FaTask& task, int64_t j) const {
        while (j < task.stepLast && TileState(task, j) == kTileMasked) ++j;
        return j;
    }

private:
    __aicore__ inline int64_t SeqField(uint32_t b, uint32_t f) const {
        return seqInfo_[(uint64_t)b * kSeqInfoFields + f];
    }
    __aicore__ inline int64_t ColBlocks(int64_t s2) const { return (s2 + t_->s2Block - 1) / t_->s2Block; }
    // Row of (head, s1 block) inside the sequence's mask group.
    __aicore__ inline int64_t MapRowLocal(uint32_t head, int64_t blk, int64_t blocks) const {
        return (t_->maskHeads != 0 ? (int64_t)head * blocks : 0) + blk;
    }

    // Dense masks: task costs come from the block map's per-row visible-tile counts (written by the pre-pass), so
    // the split is computed here with the host's rule (FaCutAfter); every core derives the same ranges.
    __aicore__ inline void CoreRangeFromMap(uint32_t core) {
        const uint32_t cores = t_->blockDim;
        __gm__ int32_t* counts = (__gm__ int32_t*)(map_ + t_->mapCountsOffset);
        uint64_t total = 0;
        for (int pass = 0; pass < 2; ++pass) {
            uint64_t acc = 0, idx = 0;
            next_ = core == 0 ? 0 : t_->taskTotal;
            end_ = t_->taskTotal;
            for (uint32_t b = 0; b < t_->batch; ++b) {
                const int64_t blocks = (SeqField(b, kSeqS1) + t_->s1Block - 1) / t_->s1Block;
                const int64_t row0 = SeqField(b, kSeqMapRow0);
                for (uint32_t n = 0; n < t_->n1; ++n) {
                    for (int64_t blk = 0; blk < blocks; ++blk, ++idx) {
                        acc += FaTaskCost((uint64_t)counts[row0 + MapRowLocal(n, blk, blocks)]);
                        if (pass == 0) continue;
                        if (core > 0 && next_ == t_->taskTotal && FaCutAfter(acc, total, core, cores)) next_ = idx + 1;
                        if (core + 1 < cores && FaCutAfter(acc, total, core + 1, cores)) {
                            end_ = idx + 1;
                            return;
                        }
                    }
                }
            }
            total = acc;
        }
    }

    const FlashAttentionTilingData* t_ = nullptr;
    __gm__ int64_t* seqInfo_ = nullptr;
    __gm__ uint8_t* map_ = nullptr;
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

// The workspace slots of one core (layout chosen by the host tiling); WsSlot(step) picks the slot.
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
