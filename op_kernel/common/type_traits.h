// Compile-time facts about the kernels' element types (device code has no <type_traits>).
#ifndef NPU_FA_COMMON_TYPE_TRAITS_H
#define NPU_FA_COMMON_TYPE_TRAITS_H

#include "kernel_operator.h"

namespace npu_fa {

// half has vector arithmetic on dav-2201; bfloat16_t only casts.
template <typename T>
struct FaIsHalf {
    static constexpr bool kValue = false;
};
template <>
struct FaIsHalf<half> {
    static constexpr bool kValue = true;
};

}  // namespace npu_fa

#endif  // NPU_FA_COMMON_TYPE_TRAITS_H
