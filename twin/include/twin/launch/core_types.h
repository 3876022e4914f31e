// Scalar types, qualifiers and enums of the Ascend C API (dav-2201), as the twin defines them.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#if defined(__F16C__)
#include <immintrin.h>
#endif

#ifndef __NPU_ARCH__
#define __NPU_ARCH__ 2201
#endif
#ifndef ASCENDC_CPU_DEBUG
#define ASCENDC_CPU_DEBUG 1
#endif
#define ASCEND_TWIN 1

// Device qualifiers are no-ops on the CPU, as in CANN's CPU debug build.
#define __global__
#define __aicore__
#define __gm__
#define __ubuf__
#define __cbuf__
#define __ca__
#define __cb__
#define __cc__
#define __fbuf__
#define __vector__
#define __cube__
#define __mix__(...)
#define __schedmode__(...)
// Branch hints, as impl/basic_api/utils/kernel_utils_macros.h defines them for every kernel.
#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif
#define GM_ADDR __gm__ uint8_t*
// Predefined by CANN's compiler, not by the asc-devkit headers (catlass's CATLASS_DEVICE is `__forceinline__
// __aicore__`): an inline function the compiler must inline, the form asc-devkit's own generated kernel code spells
// out (tools/build/asc_op_compile_base/asc_op_compiler/compile_op.py: `inline __attribute__((always_inline))`).
#define __forceinline__ inline __attribute__((always_inline))

namespace twin {

inline float HalfBitsToFloat(uint16_t h) {
#if defined(__F16C__)
    return _cvtsh_ss(h);
#else
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu, bits;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (man << 13) | (man != 0 ? 0x400000u : 0u);  // a NaN is quieted, as by F16C
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {  // subnormal half -> normal float
        int e = -1;
        do { man <<= 1; ++e; } while ((man & 0x400u) == 0);
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3FFu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
#endif
}

// float -> binary16 with round-to-nearest-even (overflow gives inf, NaN stays NaN).
inline uint16_t FloatToHalfBits(float f) {
#if defined(__F16C__)
    return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#else
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7FFFFFFFu;
    // NaN keeps its top payload bits, quieted, as F16C's vcvtps2ph does (memory/poison.h relies on it).
    if (ax > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
    if (ax == 0x7F800000u) return (uint16_t)(sign | 0x7C00u);
    if (ax >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);  // rounds to >= 65520 -> inf
    if (ax < 0x38800000u) {                                      // result is subnormal or zero
        if (ax < 0x33000000u) return (uint16_t)sign;             // < 2^-25 rounds to 0
        uint32_t e = ax >> 23, m = (ax & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 126u - e;                               // 14..24
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) ++r;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ax - 0x38000000u;  // rebias exponent
    uint32_t lsb = (r >> 13) & 1u;
    r += 0xFFFu + lsb;
    return (uint16_t)(sign | (r >> 13));
#endif
}

inline float Bf16BitsToFloat(uint16_t b) {
    uint32_t x = (uint32_t)b << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

inline uint16_t FloatToBf16Bits(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7FFFu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

}  // namespace twin

// IEEE binary16 storage type; arithmetic goes through float and rounds back to nearest-even.
struct half {
    uint16_t bits;
    half() = default;
    half(float f) : bits(twin::FloatToHalfBits(f)) {}
    half(double d) : bits(twin::FloatToHalfBits((float)d)) {}
    half(int v) : bits(twin::FloatToHalfBits((float)v)) {}
    operator float() const { return twin::HalfBitsToFloat(bits); }
    float ToFloat() const { return twin::HalfBitsToFloat(bits); }
    static half FromBits(uint16_t b) { half h; h.bits = b; return h; }
};

struct bfloat16_t {
    uint16_t bits;
    bfloat16_t() = default;
    bfloat16_t(float f) : bits(twin::FloatToBf16Bits(f)) {}
    bfloat16_t(double d) : bits(twin::FloatToBf16Bits((float)d)) {}
    bfloat16_t(int v) : bits(twin::FloatToBf16Bits((float)v)) {}
    operator float() const { return twin::Bf16BitsToFloat(bits); }
    float ToFloat() const { return twin::Bf16BitsToFloat(bits); }
    static bfloat16_t FromBits(uint16_t b) { bfloat16_t h; h.bits = b; return h; }
};

// Pipes and quantisation modes are global enums in the real headers (hardware intrinsic layer).
enum pipe_t : int { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_FIX = 10 };
enum QuantMode_t : int { NoQuant = 0, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, VQF322B8_PRE, REQ8, VREQ8 };
using event_t = int32_t;
enum : int32_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

enum KernelMetaType : uint8_t {
    KERNEL_TYPE_AIV_ONLY, KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_MIX_AIV_1_0, KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1, KERNEL_TYPE_MIX_AIC_1_2, KERNEL_TYPE_AICORE, KERNEL_TYPE_VECTORCORE,
    KERNEL_TYPE_MIX_AICORE, KERNEL_TYPE_MIX_VECTOR_CORE, KERNEL_TYPE_MAX,
};

namespace AscendC {

enum class TPosition : uint8_t {
    GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM = SPM, TSCM,
    C2PIPE2GM, C2PIPE2LOCAL, MAX,
};
using QuePosition = TPosition;

enum class HardEvent : uint8_t {
    MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V, MTE3_MTE1, MTE1_MTE3,
    MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3, S_V, V_S, S_MTE2, MTE2_S, S_MTE3, MTE3_S,
    MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3, MTE1_FIX, FIX_MTE1, FIX_FIX, MAX,
};

enum class RoundMode : uint8_t {
    CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD, UNKNOWN = 0xFF,
};
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };
enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };
enum class ReduceType { NONE = -1, SUM = 0, MAX, MIN };  // values as in the official headers
enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };

// KernelMetaType is global in the real headers; the twin also reaches it as AscendC::.
using ::KernelMetaType;
using ::KERNEL_TYPE_AIV_ONLY;
using ::KERNEL_TYPE_AIC_ONLY;
using ::KERNEL_TYPE_MIX_AIV_1_0;
using ::KERNEL_TYPE_MIX_AIC_1_0;
using ::KERNEL_TYPE_MIX_AIC_1_1;
using ::KERNEL_TYPE_MIX_AIC_1_2;

constexpr int32_t AIC = 1;
constexpr int32_t AIV = 2;
constexpr int32_t MIX = 3;

constexpr int32_t ONE_BLK_SIZE = 32;
constexpr int32_t ONE_REPEAT_BYTE_SIZE = 256;
constexpr int32_t DEFAULT_BLK_NUM = 8;
constexpr int32_t DEFAULT_BLK_STRIDE = 1;
constexpr int32_t DEFAULT_REPEAT_STRIDE = 8;
constexpr int32_t MAX_REPEAT_TIMES = 255;
constexpr int32_t QUE_MAX_EVENT = 8;
constexpr uint64_t MASK_PLACEHOLDER = 0;

}  // namespace AscendC
