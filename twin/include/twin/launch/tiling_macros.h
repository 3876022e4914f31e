// Kernel-side tiling macros. CANN's op build generates GET_TILING_DATA & co. for the registered tiling struct;
// the twin copies the tiling bytes from the GM tiling buffer into a kernel-local struct (the dynamic-shape form),
// checking that the launch's tiling buffer holds the whole struct.
//   REGISTER_TILING_DEFAULT(Struct)                       names the struct GET_TILING_DATA fills (block or namespace scope)
//   REGISTER_TILING_FOR_TILINGKEY("expr", Struct)         accepted; the twin relies on GET_TILING_DATA_WITH_STRUCT
//   GET_TILING_DATA(var, tiling)                          Struct var = bytes at tiling
//   GET_TILING_DATA_WITH_STRUCT(Struct, var, tiling)
//   GET_TILING_DATA_MEMBER(Struct, member, var, tiling)   one member only
//   GET_TILING_DATA_PTR_WITH_STRUCT(Struct, ptr, tiling)  pointer to a kernel-local copy
//   TILING_KEY_IS(k), TILING_KEY_LIST(k1, k2, ...)        compare with g_tilingKey (LaunchOptions::tilingKey)
#pragma once
#include <cstddef>
#include <type_traits>

#include "twin/launch/launch_state.h"

namespace twin {

// Copies `bytes` tiling bytes at `offset` of the GM tiling buffer into `dst`.
inline void CopyTiling(const char* api, void* dst, uint64_t bytes, const void* tiling, uint64_t offset) {
    if (tiling == nullptr) Fail(api, "the tiling argument is a null GM address");
    const uint8_t* src = (const uint8_t*)tiling + offset;
    CheckGm(api, src, bytes);
    std::memcpy(dst, src, bytes);
    Trace(api, PIPE_S, bytes, bytes, 1, dst, src);
}

template <class S>
constexpr bool TilingStructOk() {
    return std::is_trivially_copyable<S>::value && std::is_standard_layout<S>::value;
}

}  // namespace twin

#define TWIN_TILING_STRUCT_CHECK_(S)                                                                     \
    static_assert(::twin::TilingStructOk<S>(), "tiling struct " #S " must be trivially copyable with " \
                                               "standard layout (plain fixed-size fields, no pointers, no virtuals)")

// The alias's name reads as an instruction when GET_TILING_DATA is used without a registered struct.
#define REGISTER_TILING_DEFAULT(tiling_struct) using TwinTilingStruct_set_by_REGISTER_TILING_DEFAULT = tiling_struct
#define REGISTER_TILING_FOR_TILINGKEY(expression, tiling_struct) \
    static_assert(sizeof(expression) > 0 && sizeof(tiling_struct) > 0, "REGISTER_TILING_FOR_TILINGKEY")

#define GET_TILING_DATA_WITH_STRUCT(tiling_struct, tiling_data, tiling_arg)                                    \
    TWIN_TILING_STRUCT_CHECK_(tiling_struct);                                                                  \
    tiling_struct tiling_data;                                                                                 \
    ::twin::CopyTiling("GET_TILING_DATA(" #tiling_struct ")", &tiling_data, sizeof(tiling_struct), (tiling_arg), 0)

#define GET_TILING_DATA(tiling_data, tiling_arg) \
    GET_TILING_DATA_WITH_STRUCT(TwinTilingStruct_set_by_REGISTER_TILING_DEFAULT, tiling_data, tiling_arg)

#define GET_TILING_DATA_MEMBER(tiling_struct, member, var, tiling_arg)                                           \
    TWIN_TILING_STRUCT_CHECK_(tiling_struct);                                                                    \
    std::remove_cv_t<decltype(tiling_struct::member)> var;                                                      \
    ::twin::CopyTiling("GET_TILING_DATA_MEMBER(" #tiling_struct "." #member ")", &var, sizeof(var), (tiling_arg), \
                       offsetof(tiling_struct, member))

#define __tiling_data_ptr__
#define GET_TILING_DATA_PTR_WITH_STRUCT(tiling_struct, dst_ptr, tiling_ptr)                                        \
    GET_TILING_DATA_WITH_STRUCT(tiling_struct, dst_ptr##_twin_local_copy, tiling_ptr);                             \
    const tiling_struct* dst_ptr = &dst_ptr##_twin_local_copy

#ifndef TILING_KEY_VAR
#define TILING_KEY_VAR g_tilingKey
#endif
#define TILING_KEY_IS(k) (TILING_KEY_VAR == (uint64_t)(k))

#define TWIN_TK_N_(_1, _2, _3, _4, _5, _6, _7, _8, N, ...) N
#define TWIN_TK_CAT_(a, b) TWIN_TK_CAT2_(a, b)
#define TWIN_TK_CAT2_(a, b) a##b
#define TWIN_TK_1_(a) TILING_KEY_IS(a)
#define TWIN_TK_2_(a, ...) TILING_KEY_IS(a) || TWIN_TK_1_(__VA_ARGS__)
#define TWIN_TK_3_(a, ...) TILING_KEY_IS(a) || TWIN_TK_2_(__VA_ARGS__)
#define TWIN_TK_4_(a, ...) TILING_KEY_IS(a) || TWIN_TK_3_(__VA_ARGS__)
#define TWIN_TK_5_(a, ...) TILING_KEY_IS(a) || TWIN_TK_4_(__VA_ARGS__)
#define TWIN_TK_6_(a, ...) TILING_KEY_IS(a) || TWIN_TK_5_(__VA_ARGS__)
#define TWIN_TK_7_(a, ...) TILING_KEY_IS(a) || TWIN_TK_6_(__VA_ARGS__)
#define TWIN_TK_8_(a, ...) TILING_KEY_IS(a) || TWIN_TK_7_(__VA_ARGS__)
#define TILING_KEY_LIST(...) \
    (TWIN_TK_CAT_(TWIN_TK_, TWIN_TK_CAT_(TWIN_TK_N_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0), _))(__VA_ARGS__))
