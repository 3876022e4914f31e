// Force-included by scripts/check_conformance.sh before each op_kernel/ file when type-checking against the
// official Ascend C headers. It supplies what CANN's operator build generates per operator and asc-devkit lacks:
// the GET_TILING_DATA family (the dynamic-shape form: the tiling struct is copied out of the GM tiling buffer) and
// a REGISTER_TILING_DEFAULT that also names the struct for GET_TILING_DATA. Never used by the twin or the NPU build.
#pragma once

// Works around the conformance tool's universal intrinsic stubs, which all return a value: the official dav-2201
// Fixpipe implementation `return`s these void intrinsics from void functions. More specialised than the stubs, so
// overload resolution picks these; they only exist for the type check.
template <class D, class S, class... A>
inline void copy_matrix_cc_to_gm(D*, S*, A...) {}
template <class D, class S, class... A>
inline void copy_matrix_cc_to_cbuf(D*, S*, A...) {}

#include "kernel_operator.h"

namespace npu_fa_conformance {

// Word-wise copy of a tiling struct out of GM, as the generated code does.
template <class T, class G>
__aicore__ inline void CopyTiling(T* dst, G* tiling, uint32_t offset = 0) {
    static_assert(sizeof(T) % sizeof(uint32_t) == 0, "tiling structs are multiples of 4 bytes");
    const __gm__ uint32_t* src = reinterpret_cast<const __gm__ uint32_t*>(reinterpret_cast<const __gm__ uint8_t*>(tiling) + offset);
    uint32_t* out = reinterpret_cast<uint32_t*>(dst);
    for (uint32_t i = 0; i < sizeof(T) / sizeof(uint32_t); ++i) {
        out[i] = src[i];
    }
}

}  // namespace npu_fa_conformance

// asc-devkit's REGISTER_TILING_DEFAULT only records the struct in an object-file section; keep that and add the alias.
#undef REGISTER_TILING_DEFAULT
#define REGISTER_TILING_DEFAULT(tiling_struct)                                \
    ENABLE_FEATURE_FOR_TILING(default, tiling_struct);                        \
    using NpuFaConformanceDefaultTiling = tiling_struct

#define GET_TILING_DATA_WITH_STRUCT(tiling_struct, tiling_data, tiling_arg) \
    tiling_struct tiling_data;                                              \
    npu_fa_conformance::CopyTiling(&tiling_data, tiling_arg)

#define GET_TILING_DATA(tiling_data, tiling_arg) \
    GET_TILING_DATA_WITH_STRUCT(NpuFaConformanceDefaultTiling, tiling_data, tiling_arg)

#define GET_TILING_DATA_MEMBER(tiling_struct, member, var, tiling_arg)  \
    decltype(tiling_struct::member) var;                                \
    npu_fa_conformance::CopyTiling(&var, tiling_arg, (uint32_t)offsetof(tiling_struct, member))

#define __tiling_data_ptr__
#define GET_TILING_DATA_PTR_WITH_STRUCT(tiling_struct, dst_ptr, tiling_ptr)         \
    GET_TILING_DATA_WITH_STRUCT(tiling_struct, dst_ptr##_local_copy, tiling_ptr);   \
    const tiling_struct* dst_ptr = &dst_ptr##_local_copy
