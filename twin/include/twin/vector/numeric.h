// Numerics of the twin's vector unit: array conversions half/bfloat16 <-> float written so that g++ vectorises
// them (F16C when the build targets it), a vectorisable float exp, and the rounding-mode conversions of Cast.
#pragma once
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "twin/launch/core_types.h"

namespace twin {
namespace vnum {

inline uint32_t Bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float FromBits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// ---- element-wise, branch-free conversions (selects are bit masks so that the loops vectorise at -O2 too) ----
inline uint32_t MaskOf(bool c) { return 0u - (uint32_t)c; }
inline uint32_t Pick(uint32_t m, uint32_t a, uint32_t b) { return b ^ ((a ^ b) & m); }  // m ? a : b

inline float HalfToFloat1(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t em = h & 0x7FFFu;
    // Exponent and mantissa shifted into float position read as a float are the value times 2^-112 (also for
    // subnormal halves); the multiply rescales. Inf/NaN get the all-ones exponent instead.
    const uint32_t scaled = Bits(FromBits(em << 13) * 0x1p112f);
    // Inf/NaN: the all-ones exponent, a NaN quieted with its payload kept (as F16C's vcvtph2ps).
    const uint32_t special = 0x7F800000u | (em << 13) | Pick(MaskOf(em > 0x7C00u), 0x400000u, 0u);
    return FromBits(Pick(MaskOf(em >= 0x7C00u), special, scaled) | sign);
}

inline uint16_t FloatToHalf1(float f) {  // round to nearest even; overflow -> inf; NaN -> quiet NaN
    const uint32_t x = Bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7FFFFFFFu;
    const uint32_t lsb = (ax >> 13) & 1u;
    const uint32_t normal = (ax - 0x38000000u + 0xFFFu + lsb) >> 13;  // rebias 127 -> 15, round on bit 13
    // |f| < 2^-14: adding 0.5 aligns the half subnormal grid to the float's last mantissa bits; the FPU rounds.
    const uint32_t sub = Bits(FromBits(ax) + 0.5f) - 0x3F000000u;
    uint32_t r = Pick(MaskOf(ax < 0x38800000u), sub, normal);
    r = Pick(MaskOf(ax >= 0x477FF000u), 0x7C00u, r);  // >= 65520 rounds to inf
    r = Pick(MaskOf(ax > 0x7F800000u), 0x7E00u | ((ax >> 13) & 0x3FFu), r);  // NaN payload kept, as F16C
    return (uint16_t)(r | sign);
}

inline float Bf16ToFloat1(uint16_t b) { return FromBits((uint32_t)b << 16); }

inline uint16_t FloatToBf16Rne1(float f) {
    const uint32_t x = Bits(f);
    const uint32_t r = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
    return (uint16_t)Pick(MaskOf((x & 0x7FFFFFFFu) > 0x7F800000u), (x >> 16) | 0x40u, r);
}

// Array conversions. Blocks of 8 with a fixed trip count vectorise under -O2's cost model as well.
inline void HalfToFloat(float* out, const uint16_t* in, size_t n) {
    size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
    }
#else
    for (; i + 8 <= n; i += 8) {
        for (size_t j = 0; j < 8; ++j) out[i + j] = HalfToFloat1(in[i + j]);
    }
#endif
    for (; i < n; ++i) out[i] = HalfToFloat1(in[i]);
}

inline void FloatToHalf(uint16_t* out, const float* in, size_t n) {
    size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
    }
#else
    for (; i + 8 <= n; i += 8) {
        for (size_t j = 0; j < 8; ++j) out[i + j] = FloatToHalf1(in[i + j]);
    }
#endif
    for (; i < n; ++i) out[i] = FloatToHalf1(in[i]);
}

// ---- exp in float: Cody-Waite reduction by ln 2, degree-7 polynomial, scaling by 2^k in two steps ----
inline float ExpF(float x) {
    const uint32_t xb = Bits(x);
    uint32_t cb = Pick(MaskOf(x < -104.0f), Bits(-104.0f), xb);  // NaN compares false and passes through
    cb = Pick(MaskOf(x > 89.0f), Bits(89.0f), cb);
    const float xc = FromBits(cb);
    const float kf = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round(x / ln2)
    const float r = (xc - kf * 0.693145751953125f) - kf * 1.428606765330187e-06f;
    float p = 1.98412698e-4f;
    p = p * r + 1.38888889e-3f;
    p = p * r + 8.33333333e-3f;
    p = p * r + 4.16666667e-2f;
    p = p * r + 1.66666667e-1f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const int32_t k = (int32_t)kf;  // in [-150, 128]
    const int32_t k1 = k >> 1, k2 = k - k1;
    const float s1 = FromBits((uint32_t)(k1 + 127) << 23), s2 = FromBits((uint32_t)(k2 + 127) << 23);
    const float v = (p * s1) * s2;
    return FromBits(Pick(MaskOf(x != x), xb, Bits(v)));
}

// ---- Cast rounding modes ----
// RoundMode values as small ints (core_types.h defines the enum): NONE=0 RINT=1 FLOOR=2 CEIL=3 ROUND=4 TRUNC=5 ODD=6.
enum : int { kNone = 0, kRint, kFloor, kCeil, kRound, kTrunc, kOdd };

// Rounds the exact non-negative magnitude `a` to a floating format, given the format's round-to-nearest-even
// magnitude bits and the value of magnitude bits. `neg` selects the direction of FLOOR/CEIL.
template <class RneBits, class ValOf>
inline uint32_t RoundMagnitude(long double a, bool neg, int mode, RneBits rne, ValOf val) {
    const uint32_t c = rne(a);
    const long double cv = val(c);
    if (cv == a) return c;
    uint32_t lo, hi;
    if (cv > a) {
        hi = c;
        lo = c - 1;  // c > 0 since a >= 0 and cv > a
    } else {
        lo = c;
        hi = c + 1;
    }
    switch (mode) {
        case kNone: case kRint: return c;
        case kTrunc: return lo;
        case kFloor: return neg ? hi : lo;
        case kCeil: return neg ? lo : hi;
        case kRound: {  // to nearest, ties away from zero
            const long double dl = a - val(lo), dh = val(hi) - a;
            return dh <= dl ? hi : lo;
        }
        case kOdd: return (lo & 1u) ? lo : hi;
        default: return c;
    }
}

// float/int value -> half bits with a rounding mode (IEEE semantics: directed modes may give 65504 or inf).
inline uint16_t ToHalfMode(long double v, int mode) {
    if (v != v) return 0x7E00u;
    const bool neg = v < 0 || (v == 0 && std::signbit((double)v));
    const long double a = neg ? -v : v;
    uint32_t m;
    if (a == (long double)INFINITY) {
        m = 0x7C00u;
    } else {
        m = RoundMagnitude(
            a, neg, mode, [](long double x) { return (uint32_t)(twin::FloatToHalfBits((float)x) & 0x7FFFu); },
            [](uint32_t b) { return (long double)twin::HalfBitsToFloat((uint16_t)b); });
    }
    return (uint16_t)(m | (neg ? 0x8000u : 0u));
}

inline uint16_t ToBf16Mode(long double v, int mode) {
    if (v != v) return 0x7FC0u;
    const bool neg = v < 0 || (v == 0 && std::signbit((double)v));
    const long double a = neg ? -v : v;
    uint32_t m;
    if (a == (long double)INFINITY) {
        m = 0x7F80u;
    } else {
        m = RoundMagnitude(
            a, neg, mode, [](long double x) { return (uint32_t)(twin::FloatToBf16Bits((float)x) & 0x7FFFu); },
            [](uint32_t b) { return (long double)twin::Bf16BitsToFloat((uint16_t)b); });
    }
    return (uint16_t)(m | (neg ? 0x8000u : 0u));
}

inline float ToFloatMode(long double v, int mode) {
    if (v != v) return NAN;
    const bool neg = v < 0;
    const long double a = neg ? -v : v;
    if (a == (long double)INFINITY) return neg ? -INFINITY : INFINITY;
    const uint32_t m = RoundMagnitude(
        a, neg, mode, [](long double x) { return Bits((float)x); }, [](uint32_t b) { return (long double)FromBits(b); });
    return FromBits(m | (neg ? 0x80000000u : 0u));
}

// Float value -> integer with a rounding mode, saturating; NaN -> 0.
template <typename I>
inline I ToIntMode(double v, int mode) {
    if (v != v) return 0;
    double r;
    switch (mode) {
        case kFloor: r = std::floor(v); break;
        case kCeil: r = std::ceil(v); break;
        case kRound: r = std::round(v); break;
        case kTrunc: r = std::trunc(v); break;
        default: r = std::nearbyint(v); break;
    }
    const double lo = (double)std::numeric_limits<I>::min(), hi = (double)std::numeric_limits<I>::max();
    if (r <= lo) return std::numeric_limits<I>::min();
    if (r >= hi) return std::numeric_limits<I>::max();
    return (I)r;
}

// Float value -> float rounded to an integral value (float -> float Cast).
inline float RoundIntegral(float v, int mode) {
    switch (mode) {
        case kFloor: return std::floor(v);
        case kCeil: return std::ceil(v);
        case kRound: return std::round(v);
        case kTrunc: return std::trunc(v);
        default: return std::nearbyint(v);
    }
}

}  // namespace vnum
}  // namespace twin
