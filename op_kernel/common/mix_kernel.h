// Runs a mix kernel (AIC:AIV = 1:2) for the tiling's element type: the cube class on the AIC, the vector class on
// each AIV, each with its own TPipe. The classes take (tiling, GM arguments, pipe) in Init, then Process.
#ifndef NPU_FA_COMMON_MIX_KERNEL_H
#define NPU_FA_COMMON_MIX_KERNEL_H

#include "kernel_operator.h"
#include "../tiling/base.h"

namespace npu_fa {

template <typename T, template <typename> class Cube, template <typename> class Vector, typename Tiling,
          typename GmArgs>
__aicore__ inline void RunMixKernelOf(const Tiling* t, const GmArgs& gm) {
    AscendC::TPipe pipe;
    if ASCEND_IS_AIC {
        Cube<T> cube;
        cube.Init(t, gm, &pipe);
        cube.Process();
    }
    if ASCEND_IS_AIV {
        Vector<T> vec;
        vec.Init(t, gm, &pipe);
        vec.Process();
    }
}

template <template <typename> class Cube, template <typename> class Vector, typename Tiling, typename GmArgs>
__aicore__ inline void RunMixKernel(const Tiling* t, const GmArgs& gm) {
    if (t->problem.dtype == kBf16) {
        RunMixKernelOf<bfloat16_t, Cube, Vector>(t, gm);
    } else {
        RunMixKernelOf<half, Cube, Vector>(t, gm);
    }
}

}  // namespace npu_fa

#endif  // NPU_FA_COMMON_MIX_KERNEL_H
