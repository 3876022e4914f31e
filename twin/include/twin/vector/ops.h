// Per-element functions of the vector ALU, on the compute type (float for half; the type itself otherwise).
// Integer arithmetic wraps (two's complement); Max/Min/Relu propagate NaN so that poisoned (unwritten) UB shows up.
#pragma once
#include <cmath>
#include <type_traits>

#include "twin/vector/numeric.h"

namespace twin {
namespace vop {

template <typename C>
using Wide = std::conditional_t<(sizeof(C) <= 4), uint32_t, uint64_t>;

struct Add {
    template <typename C>
    static C F(C a, C b) {
        if constexpr (std::is_integral_v<C>) return (C)(Wide<C>)((Wide<C>)(std::make_unsigned_t<C>)a + (Wide<C>)(std::make_unsigned_t<C>)b);
        else return a + b;
    }
};
struct Sub {
    template <typename C>
    static C F(C a, C b) {
        if constexpr (std::is_integral_v<C>) return (C)(Wide<C>)((Wide<C>)(std::make_unsigned_t<C>)a - (Wide<C>)(std::make_unsigned_t<C>)b);
        else return a - b;
    }
};
struct Mul {
    template <typename C>
    static C F(C a, C b) {
        if constexpr (std::is_integral_v<C>) return (C)(Wide<C>)((Wide<C>)(std::make_unsigned_t<C>)a * (Wide<C>)(std::make_unsigned_t<C>)b);
        else return a * b;
    }
};
struct Div {
    template <typename C>
    static C F(C a, C b) { return a / b; }
};
// Float Max/Min: a NaN operand gives NaN (a + b); written with bit masks so that the loops vectorise.
template <typename C>
inline C PickF(bool c, C a, C b) {
    return vnum::FromBits(vnum::Pick(vnum::MaskOf(c), vnum::Bits(a), vnum::Bits(b)));
}
struct Max {
    template <typename C>
    static C F(C a, C b) {
        if constexpr (std::is_integral_v<C>) return a > b ? a : b;
        else return PickF((a != a) | (b != b), a + b, PickF(a > b, a, b));
    }
};
struct Min {
    template <typename C>
    static C F(C a, C b) {
        if constexpr (std::is_integral_v<C>) return a < b ? a : b;
        else return PickF((a != a) | (b != b), a + b, PickF(a < b, a, b));
    }
};

struct Exp {
    static float F(float a) { return vnum::ExpF(a); }
};
struct Ln {
    static float F(float a) { return std::log(a); }
};
struct Abs {
    static float F(float a) { return vnum::FromBits(vnum::Bits(a) & 0x7FFFFFFFu); }
};
struct Sqrt {
    static float F(float a) { return std::sqrt(a); }
};
struct Rsqrt {
    static float F(float a) { return 1.0f / std::sqrt(a); }
};
struct Reciprocal {
    static float F(float a) { return 1.0f / a; }
};
struct Relu {
    template <typename C>
    static C F(C a) {
        if constexpr (std::is_integral_v<C>) return a > 0 ? a : 0;
        else return PickF(a > 0, a, PickF(a != a, a, C(0)));
    }
};

}  // namespace vop
}  // namespace twin
