// The steps a core has started and not finished: a kernel whose second half of a step trails its first by `lag`
// steps (the cube's products behind its scores, the vector cores' output fold behind their softmax) keeps them
// here, oldest first, and finishes the oldest before the next step takes its place.
#ifndef NPU_FA_COMMON_STEP_RING_H
#define NPU_FA_COMMON_STEP_RING_H

#include "kernel_operator.h"

namespace npu_fa {

template <typename Step, uint32_t kMaxLag>
class FaStepRing {
public:
    __aicore__ inline void Init(uint32_t lag) {
        lag_ = lag;
        pushed_ = 0;
    }
    // True when the ring is full: Oldest() must be finished before the next Push.
    __aicore__ inline bool Full() const { return pushed_ >= lag_; }
    __aicore__ inline Step& Oldest() { return ring_[pushed_ % lag_]; }
    __aicore__ inline Step& Newest() { return ring_[(pushed_ - 1) % lag_]; }
    // Takes the oldest step's place.
    __aicore__ inline void Push(const Step& s) {
        ring_[pushed_ % lag_] = s;
        ++pushed_;
    }
    // Steps still in the ring, and the i-th of them, oldest first (to finish them at the end).
    __aicore__ inline uint32_t Count() const { return pushed_ < lag_ ? pushed_ : lag_; }
    __aicore__ inline Step& FromOldest(uint32_t i) { return ring_[(pushed_ - Count() + i) % lag_]; }

private:
    Step ring_[kMaxLag];
    uint32_t lag_ = 1;
    uint32_t pushed_ = 0;
};

}  // namespace npu_fa

#endif  // NPU_FA_COMMON_STEP_RING_H
