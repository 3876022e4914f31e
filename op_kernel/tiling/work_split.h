// The work split rule: a task's cost is its computed steps plus a fixed overhead; core `core` of `cores` starts
// after the first task where the running cost reaches its share. Host tiling and kernels (dense masks: from the
// block map's counts) apply the same rule.
#ifndef NPU_FA_TILING_WORK_SPLIT_H
#define NPU_FA_TILING_WORK_SPLIT_H

#include "base.h"

namespace npu_fa {

FA_INLINE uint64_t FaTaskCost(uint64_t steps) { return 4 * steps + 1; }
FA_INLINE bool FaCutAfter(uint64_t acc, uint64_t total, uint32_t core, uint32_t cores) {
    return acc * cores >= total * core;
}

}  // namespace npu_fa

#endif  // NPU_FA_TILING_WORK_SPLIT_H
