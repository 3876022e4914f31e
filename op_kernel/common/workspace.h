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

// The step slots of one core of a kernel built on the online softmax (forward, inference): per step in flight the
// scores S (fp32 [rows, w], or 16-bit in a slot of the fp32 size), the probabilities P (input dtype, same shape) and
// the partial output P*V (fp32 [rows, dvPad]), in regions at the byte offsets the host tiling chose.
class FaStepSlots {
public:
    __aicore__ inline void Init(GM_ADDR workspace, uint64_t perCore, uint32_t core, uint64_t offsetS, uint64_t offsetP,
                                uint64_t offsetO, uint32_t rows, uint32_t w, uint32_t dvPad) {
        ws_.Init(workspace, 0, perCore, core);
        offsetS_ = offsetS, offsetP_ = offsetP, offsetO_ = offsetO;
        scoreElems_ = (uint64_t)rows * w;
        outElems_ = (uint64_t)rows * dvPad;
    }
    template <typename S = float>
    __aicore__ inline __gm__ S* Scores(uint32_t slot) const {
        return ws_.Slot<S>(offsetS_, slot, scoreElems_ * sizeof(float) / sizeof(S));
    }
    template <typename T>
    __aicore__ inline __gm__ T* Probs(uint32_t slot) const {
        return ws_.Slot<T>(offsetP_, slot, scoreElems_);
    }
    __aicore__ inline __gm__ float* Output(uint32_t slot) const { return ws_.Slot<float>(offsetO_, slot, outElems_); }
    // The core's region at byte `offset` (one the owner's tiling placed beside the slots).
    template <typename E>
    __aicore__ inline __gm__ E* At(uint64_t offset) const { return ws_.At<E>(offset); }
    // A region every core shares, at byte `offset` of the user workspace.
    template <typename E>
    __aicore__ inline __gm__ E* Shared(uint64_t offset) const { return ws_.Shared<E>(offset); }

private:
    FaCoreWorkspace ws_;
    uint64_t offsetS_ = 0, offsetP_ = 0, offsetO_ = 0, scoreElems_ = 0, outElems_ = 0;
};

}  // namespace npu_fa

#endif  // NPU_FA_COMMON_WORKSPACE_H
