// Pieces shared by the cube (AIC) and vector (AIV) halves of the backward kernel: the task/step stream both sides
// walk in the same order, the cross-core flags that pace it, GM offsets and the workspace.
//
// One step = one (query head, s1 block, s2 block) tile. The cube computes S = Q K^T and dP = dO V^T; the AIVs turn
// them into P = exp(scale * S - max) / sum (saved forward statistics) and dS = P * (dP - D); the cube multiplies
// them into the pass's sums (dQ: dS K; dKV: P^T dO and dS^T Q), kept in L0C over the task's steps; at the task's
// end the sums leave once and the AIVs scale, convert and write them.
#ifndef NPU_FA_FA_BWD_COMMON_H
#define NPU_FA_FA_BWD_COMMON_H

#include "kernel_operator.h"
#include "flash_attention_grad_tiling.h"

namespace npu_fa {

// Cross-core flags (mode 2), each rotating over kGradFlagRing IDs by step. IDs 11-15 stay free: 11-14 belong to
// SyncAll, 15 to CANN's kernel wrapper (its workspace clearing signals the AIVs with NotifyEvent<PIPE_MTE3>(15)).
constexpr uint16_t kGradFlagRing = 3;
constexpr uint16_t kGradFlagScores = 0;  // AIC -> AIV: S and dP of a step are in the workspace
constexpr uint16_t kGradFlagProbs = 3;   // AIV -> AIC: both halves of P and dS are in the workspace
constexpr uint16_t kGradFlagSums = 6;    // AIC -> AIV: a task's sums are in the workspace (rotates by task)

__aicore__ inline uint16_t GradFlag(uint16_t signal, uint32_t step) {
    return (uint16_t)(signal + step % kGradFlagRing);
}

constexpr float kGradMaskValue = -3.4028234663852886e38f;  // -FLT_MAX: exp() of a masked score is 0

// One task of the current pass and where its steps run.
struct FaGradTask {
    uint32_t batch;
    uint32_t head;     // dQ pass: query head; dKV pass: kv head
    int64_t first;     // first owned row (dQ: query row, dKV: key row) inside the sequence
    int64_t rows;      // owned rows
    FaSeq seq;
    FaBand band;
    int64_t outer;     // dKV: query heads of the group to walk (dQ: 1)
    int64_t blkFirst;  // the other side's block range [blkFirst, blkLast)
    int64_t blkLast;
    int64_t maskBase;  // dense masks: byte offset of the sequence's mask (head 0, row 0, column 0)
    int64_t mapEntry0; // dense masks: block-map entry of the sequence's (mask head 0, s1 block 0, s2 block 0)
    int64_t qBlocks;   // s1 and s2 blocks of the sequence (the block map's rows per head and columns)
    int64_t kBlocks;
};

// One tile: query rows [q0, q0 + qRows) of query head qHead against key rows [k0, k0 + kRows).
struct FaGradStep {
    uint32_t qHead;
    int64_t q0, qRows;
    int64_t k0, kRows;
};

class FaGradTaskIterator {
public:
    __aicore__ inline void Init(const FlashAttentionGradTilingData* t, __gm__ int64_t* seqInfo,
                                __gm__ uint8_t* blockMap, uint32_t core) {
        t_ = t;
        seqInfo_ = seqInfo;
        map_ = blockMap;
        next_ = t->coreTaskStart[core];
        end_ = t->coreTaskStart[core + 1];
        batch_ = 0;
    }

    __aicore__ inline bool Next(FaGradTask& task) {
        if (next_ >= end_) return false;
        const FlashAttentionGradTilingData* t = t_;
        const bool dq = t->pass == kGradPassDq;
        const uint32_t heads = dq ? t->n1 : t->n2;
        const int64_t ownBlock = dq ? t->s1Block : t->s2Block;
        int64_t local;
        if (t->varlen != 0) {
            const uint32_t f = dq ? (uint32_t)kSeqFirstTask : kGradSeqFirstKvTask;
            while (batch_ + 1 < t->batch && SeqField(batch_ + 1, f) <= (int64_t)next_) ++batch_;
            local = (int64_t)next_ - SeqField(batch_, f);
        } else {
            batch_ = next_ / (heads * t->blocksPerHead);
            local = (int64_t)(next_ % (heads * t->blocksPerHead));
        }
        ReadSeqRow(seqInfo_ + (uint64_t)batch_ * kGradSeqFields, task.seq, task.band);
        task.maskBase = SeqField(batch_, kSeqMaskBase);
        task.mapEntry0 = SeqField(batch_, kSeqMapEntry0);
        task.qBlocks = (task.seq.s1 + t->s1Block - 1) / t->s1Block;
        task.kBlocks = (task.seq.s2 + t->s2Block - 1) / t->s2Block;
        const int64_t ownLen = dq ? task.seq.s1 : task.seq.s2;
        const int64_t blocks = (ownLen + ownBlock - 1) / ownBlock;
        task.batch = batch_;
        task.head = (uint32_t)(local / blocks);
        task.first = (local % blocks) * ownBlock;
        task.rows = FaMin(ownLen - task.first, ownBlock);
        const FaStepRange r = dq ? StepsOf(task.band, task.first, task.first + task.rows, task.seq.s2, t->s2Block)
                                 : QueryBlocksOf(task.band, task.first, task.first + task.rows, task.seq.s1, t->s1Block);
        task.blkFirst = r.first;
        task.blkLast = r.last;
        task.outer = dq ? 1 : t->group;
        ++next_;
        return true;
    }

    // The block map's verdict on a step's tile (kTileMixed without a dense mask: the band logic decides). Both core
    // kinds skip the steps it calls masked.
    __aicore__ inline uint8_t TileState(const FaGradTask& task, const FaGradStep& s) const {
        if (t_->maskMode == 0) return kTileMixed;
        const int64_t head = t_->maskHeads != 0 ? (int64_t)s.qHead : 0;
        const int64_t row = head * task.qBlocks + s.q0 / t_->s1Block;
        return map_[task.mapEntry0 + row * task.kBlocks + s.k0 / t_->s2Block];
    }

    // Number of steps of a task and its `i`-th step, in the order both core kinds walk them.
    __aicore__ inline static int64_t StepCount(const FaGradTask& task) {
        return task.blkLast > task.blkFirst ? task.outer * (task.blkLast - task.blkFirst) : 0;
    }
    __aicore__ inline static FaGradStep StepOf(const FlashAttentionGradTilingData* t, const FaGradTask& task, int64_t i) {
        FaGradStep s;
        const int64_t per = task.blkLast - task.blkFirst;
        const int64_t blk = task.blkFirst + i % per;
        if (t->pass == kGradPassDq) {
            s.qHead = task.head;
            s.q0 = task.first;
            s.qRows = task.rows;
            s.k0 = blk * t->s2Block;
            s.kRows = FaMin(task.seq.s2 - s.k0, (int64_t)t->s2Block);
        } else {
            s.qHead = task.head * t->group + (uint32_t)(i / per);
            s.q0 = blk * t->s1Block;
            s.qRows = FaMin(task.seq.s1 - s.q0, (int64_t)t->s1Block);
            s.k0 = task.first;
            s.kRows = task.rows;
        }
        return s;
    }

private:
    __aicore__ inline int64_t SeqField(uint32_t b, uint32_t f) const {
        return seqInfo_[(uint64_t)b * kGradSeqFields + f];
    }
    const FlashAttentionGradTilingData* t_ = nullptr;
    __gm__ int64_t* seqInfo_ = nullptr;
    __gm__ uint8_t* map_ = nullptr;
    uint32_t next_ = 0;
    uint32_t end_ = 0;
    uint32_t batch_ = 0;
};

// Element offset of token `row` of head `head` in a tensor with strides (sb, sn, ss); TND counts rows from the
// sequence's first token `tok0`.
__aicore__ inline uint64_t GradOffset(const FlashAttentionGradTilingData* t, const FaGradTask& k, int64_t tok0,
                                      uint64_t sb, uint64_t sn, uint64_t ss, uint32_t head, int64_t row) {
    return (t->varlen ? (uint64_t)(tok0 + row) * ss : k.batch * sb + (uint64_t)row * ss) + head * sn;
}
__aicore__ inline uint64_t GradQOffset(const FlashAttentionGradTilingData* t, const FaGradTask& k, uint32_t qHead,
                                       int64_t row) {
    return GradOffset(t, k, k.seq.qTok, t->qStrideB, t->qStrideN, t->qStrideS, qHead, row);
}
// dy and attention_in (the forward output's layout).
__aicore__ inline uint64_t GradOOffset(const FlashAttentionGradTilingData* t, const FaGradTask& k, uint32_t qHead,
                                       int64_t row) {
    return GradOffset(t, k, k.seq.qTok, t->oStrideB, t->oStrideN, t->oStrideS, qHead, row);
}
__aicore__ inline uint64_t GradKOffset(const FlashAttentionGradTilingData* t, const FaGradTask& k, uint32_t kvHead,
                                       int64_t row) {
    return GradOffset(t, k, k.seq.kvTok, t->kStrideB, t->kStrideN, t->kStrideS, kvHead, row);
}
__aicore__ inline uint64_t GradVOffset(const FlashAttentionGradTilingData* t, const FaGradTask& k, uint32_t kvHead,
                                       int64_t row) {
    return GradOffset(t, k, k.seq.kvTok, t->vStrideB, t->vStrideN, t->vStrideS, kvHead, row);
}
// Statistic row (8 floats each) of a query row in softmax_max/softmax_sum and the D workspace: [B, N1, S1, 8], or
// for TND sequence-major then head-major (the forward's order).
__aicore__ inline uint64_t GradStatRow(const FlashAttentionGradTilingData* t, const FaGradTask& k, uint32_t qHead,
                                       int64_t row) {
    if (t->varlen) return (uint64_t)k.seq.qTok * t->n1 + (uint64_t)qHead * k.seq.s1 + row;
    return ((uint64_t)k.batch * t->n1 + qHead) * t->s1 + row;
}

// The workspace regions of one core.
class FaGradWorkspace {
public:
    __aicore__ inline void Init(GM_ADDR workspace, const FlashAttentionGradTilingData* t, uint32_t core) {
        d_ = (__gm__ float*)(workspace + t->wsOffsetD);
        base_ = workspace + t->wsOffsetCore + (uint64_t)core * t->wsPerCore;
        t_ = t;
    }
    __aicore__ inline __gm__ float* D() const { return d_; }
    // A step's S and dP (fp32), P and dS (input dtype) in slot `slot` (step % kGradSlots): the cube writes later
    // steps' S and dP while the AIVs read these, and loads a step's P and dS while the AIVs write later steps'.
    __aicore__ inline __gm__ float* Scores(uint32_t slot) const {
        return (__gm__ float*)(base_ + t_->wsOffsetS + slot * Tile32());
    }
    __aicore__ inline __gm__ float* DScoresIn(uint32_t slot) const {
        return (__gm__ float*)(base_ + t_->wsOffsetDp + slot * Tile32());
    }
    template <typename T>
    __aicore__ inline __gm__ T* Probs(uint32_t slot) const { return (__gm__ T*)(base_ + t_->wsOffsetP + slot * Tile16()); }
    template <typename T>
    __aicore__ inline __gm__ T* DScores(uint32_t slot) const {
        return (__gm__ T*)(base_ + t_->wsOffsetDs + slot * Tile16());
    }
    // A task's sums: dQ pass sum dS K [qRows, dPad]; dKV pass sum dS^T Q [kRows, dPad].
    __aicore__ inline __gm__ float* SumA() const { return (__gm__ float*)(base_ + t_->wsOffsetSumA); }
    // dKV pass: sum P^T dO [kRows, dvPad].
    __aicore__ inline __gm__ float* SumB() const { return (__gm__ float*)(base_ + t_->wsOffsetSumB); }

private:
    __aicore__ inline uint64_t Tile32() const { return ((uint64_t)t_->s1Block * t_->s2Block * 4 + 511) / 512 * 512; }
    __aicore__ inline uint64_t Tile16() const { return ((uint64_t)t_->s1Block * t_->s2Block * 2 + 511) / 512 * 512; }
    __gm__ float* d_ = nullptr;
    __gm__ uint8_t* base_ = nullptr;
    const FlashAttentionGradTilingData* t_ = nullptr;
};

}  // namespace npu_fa

#endif  // NPU_FA_FA_BWD_COMMON_H
