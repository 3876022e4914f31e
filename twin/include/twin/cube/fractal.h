// Fractal geometry of the dav-2201 cube unit and helpers shared by the cube APIs (GM->L1, L1->L0, Mmad, Fixpipe).
//
// Every fractal is 512 B: 16 rows x C0 elements with C0 = 32 B / sizeof(T) (16 for b16, 8 for b32, 32 for b8).
// Index maps (research note §3 / §10.5), for a logical (rows x cols) matrix with R1 = ceil(rows/16):
//   L1  Nz : ((c1 * R1 + r1) * 16 + r0) * C0 + c0        fractals column-major, each fractal row-major
//   L0A Zz : ((m1 * K1 + k1) * 16 + m0) * K0 + k0        A (M x K), fractals row-major
//   L0B Zn : ((k1 * N1 + n1) * 16 + n0) * K0 + k0        B (K x N); each 32 B row of a fractal is one column n
//   L0C Nz : ((n1 * M1 + m1) * 16 + m0) * 16 + n0        C (M x N) in fp32/int32, 16 x 16 fractals of 1 KB
#pragma once
#include <cmath>
#include <type_traits>

#include "twin/memory/tensor.h"

namespace AscendC {
// Cube constants of the real kernel_utils_constants.h (same include guards, so a second definition is skipped).
#ifndef ASCC_PARAM_BLOCK_CUBE
#define ASCC_PARAM_BLOCK_CUBE
constexpr int32_t BLOCK_CUBE = 16;
#endif
#ifndef ASCC_PARAM_CUBE_MAX_SIZE
#define ASCC_PARAM_CUBE_MAX_SIZE
constexpr int32_t CUBE_MAX_SIZE = 256;
#endif
}  // namespace AscendC

namespace twin {

constexpr uint32_t kFractalBytes = 512;
constexpr uint32_t kCubeBlock = 16;            // rows of a fractal, and the M/N granularity of the cube
constexpr uint32_t kL0cFractalElems = 256;     // 16 x 16 fp32/int32 elements of an L0C fractal
constexpr uint32_t kPoisonWord = 0xFFFFFFFFu;  // what memory/core_mem.h fills local memories with (kPoisonByte x 4)
// Written by Mmad into the padding part (rows >= m or columns >= n) of the L0C fractals it touches: a quiet NaN
// distinct from the never-written poison, so Fixpipe can tell "garbage padding" from "never computed". It is not
// poison (memory/poison.h): an NZ output in GM carries the padding columns of its last fractal by design.
constexpr uint32_t kPadGarbageWord = 0x7FC0DEADu;

inline uint32_t CeilDivU(uint64_t a, uint64_t b) { return (uint32_t)((a + b - 1) / b); }

template <typename T>
constexpr uint32_t C0Of() {
    return 32u / (uint32_t)sizeof(T);
}

template <typename T>
constexpr bool IsB8() {
    return sizeof(T) == 1;
}
template <typename T>
constexpr bool IsB16() {
    return sizeof(T) == 2;
}
template <typename T>
constexpr bool IsB32() {
    return sizeof(T) == 4;
}

template <typename T>
constexpr const char* TypeName() {
    if (std::is_same<T, half>::value) return "half";
    if (std::is_same<T, bfloat16_t>::value) return "bfloat16_t";
    if (std::is_same<T, float>::value) return "float";
    if (std::is_same<T, int8_t>::value) return "int8_t";
    if (std::is_same<T, uint8_t>::value) return "uint8_t";
    if (std::is_same<T, int16_t>::value) return "int16_t";
    if (std::is_same<T, uint16_t>::value) return "uint16_t";
    if (std::is_same<T, int32_t>::value) return "int32_t";
    if (std::is_same<T, uint32_t>::value) return "uint32_t";
    if (std::is_same<T, uint64_t>::value) return "uint64_t";
    if (std::is_same<T, int64_t>::value) return "int64_t";
    return "?";
}

// Element -> float for the cube's input types (half/bf16 widen exactly, float is copied).
template <typename T>
inline float CubeToFloat(const uint8_t* p) {
    if constexpr (std::is_same<T, half>::value) {
        uint16_t b;
        std::memcpy(&b, p, 2);
        return HalfBitsToFloat(b);
    } else if constexpr (std::is_same<T, bfloat16_t>::value) {
        uint16_t b;
        std::memcpy(&b, p, 2);
        return Bf16BitsToFloat(b);
    } else {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    }
}

// True when the 4 bytes at p are the never-written poison pattern.
inline bool IsPoisonWord(const uint8_t* p) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    return w == kPoisonWord;
}

// Byte offset of a LocalTensor inside its physical buffer, checking the position and the alignment.
template <typename T>
inline uint64_t CubeOperand(const char* api, const char* operand, const AscendC::LocalTensor<T>& t, Mem want,
                            uint32_t align, const char* wantText) {
    if (!t.Valid()) Fail(api, "%s tensor is not allocated", operand);
    if (t.Phys() != want) {
        Fail(api, "%s must be in %s, got position %s (%s)", operand, wantText, PositionName(t.Pos()), MemName(t.Phys()));
    }
    uint64_t a = t.Addr(api);
    if (a % align != 0) {
        Fail(api, "%s address %llu in %s is not %u-byte aligned", operand, (unsigned long long)a, MemName(t.Phys()), align);
    }
    return a;
}

inline bool IsL1(const Mem m) { return m == Mem::L1; }

}  // namespace twin
