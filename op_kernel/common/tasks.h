// Task iteration shared by the kernels: a core walks its task range in order; tasks are (sequence, head, own block),
// sequence-major, and a pass's seq table says where each sequence's tasks start. Also the block map's row of a
// task and the split of a task's rows between the two AIVs.
#ifndef NPU_FA_COMMON_TASKS_H
#define NPU_FA_COMMON_TASKS_H

#include "kernel_operator.h"
#include "../tiling/problem_tiling.h"
#include "../tiling/seq_table.h"

namespace npu_fa {

// One core's walk over tasks [next, end) of a pass, with the pass's seq table and (dense masks) block map.
class FaTaskCursor {
public:
    // `seqFields`: int64 values per seq-table row; `firstTask`: the field holding a sequence's first task.
    __aicore__ inline void Init(const FaProblemTiling* p, GM_ADDR seqInfo, GM_ADDR blockMap, uint32_t seqFields,
                                uint32_t firstTask) {
        p_ = p;
        seqInfo_ = (__gm__ int64_t*)seqInfo;
        map_ = (__gm__ uint8_t*)blockMap;
        seqFields_ = seqFields;
        firstTask_ = firstTask;
    }
    __aicore__ inline void SetRange(uint32_t next, uint32_t end) {
        next_ = next;
        end_ = end;
        batch_ = 0;
    }

    // The next task's sequence and its index inside the sequence; `perSeq` is the tasks of a sequence when all
    // have the same length (not varlen). False past the range.
    __aicore__ inline bool Next(uint32_t perSeq, uint32_t& batch, int64_t& local) {
        if (next_ >= end_) return false;
        if (p_->varlen != 0) {
            while (batch_ + 1 < p_->batch && Field(batch_ + 1, firstTask_) <= (int64_t)next_) ++batch_;
            local = (int64_t)next_ - Field(batch_, firstTask_);
        } else {
            batch_ = next_ / perSeq;
            local = (int64_t)(next_ % perSeq);
        }
        batch = batch_;
        ++next_;
        return true;
    }

    __aicore__ inline int64_t Field(uint32_t b, uint32_t f) const { return seqInfo_[(uint64_t)b * seqFields_ + f]; }
    __aicore__ inline __gm__ int64_t* Row(uint32_t b) const { return seqInfo_ + (uint64_t)b * seqFields_; }

    // The block map's verdict on entry `entry` (kTileMixed without a dense mask: the band logic decides).
    __aicore__ inline uint8_t TileState(int64_t entry) const {
        if (p_->maskMode == 0) return kTileMixed;
        return map_[entry];
    }
    // The block map's per-row visible-tile counts (the pre-pass writes them at `offset`).
    __aicore__ inline __gm__ int32_t* MapCounts(uint64_t offset) const { return (__gm__ int32_t*)(map_ + offset); }

private:
    const FaProblemTiling* p_ = nullptr;
    __gm__ int64_t* seqInfo_ = nullptr;
    __gm__ uint8_t* map_ = nullptr;
    uint32_t seqFields_ = 0, firstTask_ = 0;
    uint32_t next_ = 0;
    uint32_t end_ = 0;
    uint32_t batch_ = 0;
};

// Dense masks: the row of (query head, s1 block) inside its sequence's mask group, of qBlocks s1 blocks per head.
__aicore__ inline int64_t BlockMapRow(const FaProblemTiling& p, uint32_t head, int64_t qBlocks, int64_t qBlock) {
    return (p.maskHeads != 0 ? (int64_t)head * qBlocks : 0) + qBlock;
}

// An AIV's rows of a task or tile of `rows` rows: AIV 0 takes the first half (rounded up), AIV 1 the rest.
struct FaAivRows {
    uint32_t first;  // first row of this AIV inside the task / tile
    uint32_t count;
};
__aicore__ inline FaAivRows AivRowsOf(int64_t rows, uint32_t subBlock) {
    const uint32_t half = (uint32_t)(rows + 1) / 2;
    FaAivRows r;
    r.first = subBlock == 0 ? 0 : half;
    r.count = subBlock == 0 ? half : (uint32_t)rows - half;
    return r;
}

}  // namespace npu_fa

#endif  // NPU_FA_COMMON_TASKS_H
