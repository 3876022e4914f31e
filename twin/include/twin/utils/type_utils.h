// Compile-time helpers of the AscendC namespace that kernels use directly: DivCeil, IsSameType (with the BoolInst /
// TrueType / FalseType it derives from) and Conditional, with the real headers' signatures. DivCeil by 0 would be a
// garbage quotient on the NPU (and a crash on the host): the twin fails, or refuses to compile in a constant.
#pragma once
#include "twin/launch/runtime.h"

namespace AscendC {

__aicore__ constexpr inline uint32_t DivCeil(uint32_t a, uint32_t b) {
    return b == 0 ? (twin::Fail("DivCeil", "divisor is 0 (a = %u)", a), 0u) : (a + b - 1) / b;
}

template <bool b>
struct BoolInst {
    using Type = BoolInst<b>;
    static constexpr bool value = b;
};
using TrueType = BoolInst<true>;
using FalseType = BoolInst<false>;

template <typename T, typename U>
struct IsSameType : public FalseType {};
template <typename T>
struct IsSameType<T, T> : public TrueType {};

template <bool condition, class T1, class T2>
struct Conditional {
    using type = T1;
};
template <class T1, class T2>
struct Conditional<false, T1, T2> {
    using type = T2;
};

}  // namespace AscendC
