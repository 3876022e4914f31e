// One core's part of the GM workspace: regions at byte offsets the host tiling chose, each a run of slots (one per
// step in flight) 512 B aligned. The kernels name their regions (kernel/fwd_common.h, kernel/bwd_common.h).
#ifndef NPU_FA_COMMON_WORKSPACE_H
#define NPU_FA_COMMON_WORKSPACE_H

#include "kernel_operator.h"

namespace npu_fa {

class FaCoreWorkspace {
public:
    // The core's part: `perCore` bytes at coreOffset + core * perCore of the user workspace.
    __aicore__ inline void Init(GM_ADDR workspace, uint64_t coreOffset, uint64_t perCore, uint32_t core) {
        workspace_ = workspace;
        base_ = workspace + coreOffset + (uint64_t)core * perCore;
    }
    // Slot `slot` of the region at byte `offset` of the core's part whose slots hold `elems` elements of E.
    template <typename E>
    __aicore__ inline __gm__ E* Slot(uint64_t offset, uint32_t slot, uint64_t elems) const {
        return (__gm__ E*)(base_ + offset + slot * Align512(elems * sizeof(E)));
    }
    // The region at byte `offset` of the core's part.
    template <typename E>
    __aicore__ inline __gm__ E* At(uint64_t offset) const { return (__gm__ E*)(base_ + offset); }
    // A region every core shares, at byte `offset` of the user workspace.
    template <typename E>
    __aicore__ inline __gm__ E* Shared(uint64_t offset) const { return (__gm__ E*)(workspace_ + offset); }

private:
    __aicore__ inline static uint64_t Align512(uint64_t v) { return (v + 511) / 512 * 512; }
    __gm__ uint8_t* workspace_ = nullptr;
    __gm__ uint8_t* base_ = nullptr;
};

}  // namespace npu_fa

#endif  // NPU_FA_COMMON_WORKSPACE_H
