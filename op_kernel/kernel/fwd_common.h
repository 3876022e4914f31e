// Pieces shared by the cube (AIC) and vector (AIV) halves of the forward kernel: the per-core task stream both sides
// walk in the same order (with the dense mask's block map) and the workspace regions each step exchanges.
#ifndef NPU_FA_KERNEL_FWD_COMMON_H
#define NPU_FA_KERNEL_FWD_COMMON_H

#include "kernel_operator.h"
#include "../tiling/fwd_tiling.h"
#include "../tiling/work_split.h"
#include "../common/flags.h"
#include "../common/gm_layout.h"
#include "../common/tasks.h"
#include "../common/workspace.h"

namespace npu_fa {

// The cube's P*V and the vector cores' output fold trail the scores by kFwdStepLag steps (the cube computes S(j + 2)
// while the vector cores work on step j), so each core keeps kFwdStepSlots = kFwdStepLag + 1 workspace slots in
// flight.
constexpr uint32_t kFwdStepLag = kFwdStepSlots - 1;
static_assert(kFlagRing >= kFwdStepSlots, "each in-flight step needs its own flag ID");
__aicore__ inline uint32_t FwdSlot(uint32_t step) { return step % kFwdStepSlots; }

// Lazy rescale: the float offset of AIV `sub`'s flush word of step `step` in the core's flush region.
__aicore__ inline uint32_t FlushWordOffset(uint32_t step, uint32_t sub) {
    return ((step % kFwdFlushRing) * kFwdFlushLine + sub * 32) / (uint32_t)sizeof(float);
}

// Lazy rescale: whether the cube ships O before a step's P*V: some row of either AIV moved its reference (its
// word below -threshold; the second AIV's only counts when it has rows, else it wrote none). The AIVs wrote the
// words by DMA, which the scalar DCache does not see: the line is invalidated before the reads.
__aicore__ inline bool FlushRequested(const AscendC::GlobalTensor<float>& words, uint32_t step, float threshold,
                                      bool second) {
    const AscendC::GlobalTensor<float> line = words[FlushWordOffset(step, 0)];
    AscendC::DataCacheCleanAndInvalid<float, AscendC::CacheLine::SINGLE_CACHE_LINE, AscendC::DcciDst::CACHELINE_OUT>(
        line);
    const float first = line.GetValue(0), other = second ? line.GetValue(8) : 0.0f;
    return first < -threshold || other < -threshold;
}

// One query block of one head of one sequence, and the s2 blocks it sees.
struct FaFwdTask {
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

// Key columns of a task's step from c0 on: the s2 block, cut at the sequence end and after the last key any row of
// the task sees (its band's right edge, or the prefix). Cube and vector cores take the same value.
__aicore__ inline uint32_t StepCols(const FaFwdTask& task, int64_t c0, uint32_t s2Block) {
    const int64_t edge = FaMax(task.row0 + task.rows + task.band.hi, task.band.prefix);
    return (uint32_t)FaMin(FaMin(task.seq.s2, edge) - c0, (int64_t)s2Block);
}

// Walks the tasks of one core in order: (sequence, head, query block), sequence-major. With a dense mask it also
// answers which s2 blocks the block map lets through, and takes the core's task range from the map's counts.
class FaFwdTaskIterator {
public:
    __aicore__ inline void Init(const FlashAttentionTilingData* t, GM_ADDR seqInfo, GM_ADDR blockMap, uint32_t core) {
        t_ = t;
        cursor_.Init(&t->problem, seqInfo, blockMap, kSeqInfoFields, kSeqFirstTask);
        uint32_t next = t->coreTaskStart[core], end = t->coreTaskStart[core + 1];
        if (t->problem.maskMode != 0) CoreRangeFromMap(core, next, end);
        cursor_.SetRange(next, end);
    }

    __aicore__ inline bool Next(FaFwdTask& task) {
        const FlashAttentionTilingData* t = t_;
        const uint32_t perSeq = t->problem.n1 * CeilDiv(t->problem.s1, t->s1Block);
        uint32_t batch;
        int64_t local;
        if (!cursor_.Next(perSeq, batch, local)) return false;
        ReadSeqRow(cursor_.Row(batch), task.seq, task.band);
        const int64_t blocks = (task.seq.s1 + t->s1Block - 1) / t->s1Block;
        task.batch = batch;
        task.head = (uint32_t)(local / blocks);
        task.row0 = (local % blocks) * t->s1Block;
        task.rows = FaMin(task.seq.s1 - task.row0, (int64_t)t->s1Block);
        FaStepRange r = StepsOf(task.band, task.row0, task.row0 + task.rows, task.seq.s2, t->s2Block);
        task.stepFirst = r.first;
        task.stepLast = r.last;
        task.mapEntry = 0;
        task.maskBase = cursor_.Field(batch, kSeqMaskBase);
        if (t->problem.maskMode != 0) {
            const int64_t mapRow = BlockMapRow(t->problem, task.head, blocks, local % blocks);
            task.mapEntry = cursor_.Field(batch, kSeqMapEntry0) + mapRow * ColBlocks(task.seq.s2);
        }
        return true;
    }

    // The block map's verdict on s2 block j of a task (kTileMixed without a dense mask: the band logic decides).
    __aicore__ inline uint8_t TileState(const FaFwdTask& task, int64_t j) const {
        return cursor_.TileState(task.mapEntry + j);
    }

    // The first s2 block >= j of the task that is computed (stepLast when none is left).
    __aicore__ inline int64_t NextStep(const FaFwdTask& task, int64_t j) const {
        while (j < task.stepLast && TileState(task, j) == kTileMasked) ++j;
        return j;
    }

private:
    __aicore__ inline int64_t ColBlocks(int64_t s2) const { return (s2 + t_->s2Block - 1) / t_->s2Block; }

    // Dense masks: task costs come from the block map's per-row visible-tile counts (written by the pre-pass), so
    // the split is computed here with the host's rule (FaCutAfter); every core derives the same ranges.
    __aicore__ inline void CoreRangeFromMap(uint32_t core, uint32_t& next, uint32_t& end) const {
        const FaProblemTiling& p = t_->problem;
        const uint32_t cores = t_->blockDim;
        __gm__ int32_t* counts = cursor_.MapCounts(t_->mapCountsOffset);
        uint64_t total = 0;
        for (int pass = 0; pass < 2; ++pass) {
            uint64_t acc = 0, idx = 0;
            next = core == 0 ? 0 : t_->taskTotal;
            end = t_->taskTotal;
            for (uint32_t b = 0; b < p.batch; ++b) {
                const int64_t blocks = (cursor_.Field(b, kSeqS1) + t_->s1Block - 1) / t_->s1Block;
                const int64_t row0 = cursor_.Field(b, kSeqMapRow0);
                for (uint32_t n = 0; n < p.n1; ++n) {
                    for (int64_t blk = 0; blk < blocks; ++blk, ++idx) {
                        acc += FaTaskCost((uint64_t)counts[row0 + BlockMapRow(p, n, blocks, blk)]);
                        if (pass == 0) continue;
                        if (core > 0 && next == t_->taskTotal && FaCutAfter(acc, total, core, cores)) next = idx + 1;
                        if (core + 1 < cores && FaCutAfter(acc, total, core + 1, cores)) {
                            end = idx + 1;
                            return;
                        }
                    }
                }
            }
            total = acc;
        }
    }

    const FlashAttentionTilingData* t_ = nullptr;
    FaTaskCursor cursor_;
};

// The forward's workspace regions of one core: per step slot S, P and the partial output O (FaStepSlots);
// FwdSlot(step) picks the slot.
class FaFwdWorkspace : public FaStepSlots {
public:
    __aicore__ inline void Init(GM_ADDR workspace, const FlashAttentionTilingData* t, uint32_t core) {
        FaStepSlots::Init(workspace, t->wsPerCore, core, t->wsOffsetS, t->wsOffsetP, t->wsOffsetO, t->s1Block,
                          t->s2Block, t->problem.dvPad);
    }
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_FWD_COMMON_H
