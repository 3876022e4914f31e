// CreateVecIndex: dst = firstValue, firstValue + 1, ... (dav-2201: int16_t, half, int32_t, float).
// The dav-2201 implementation writes the first 32 B block (count / continuous form) or the first repeat (mask[]
// form) with scalar stores and builds the rest with single-repeat Adds instructions: block b = block b-1 + one block's
// element count, repeat r = repeat r-1 + one repeat's element count. The twin replays that recurrence on UB, so
// half results round exactly as the hardware's chain of Adds does, and it leaves the mask register as the last
// internal Adds set it. Misuses the NPU would get wrong are refused: counter mode (the internal Adds are
// normal-mode calls), a continuous mask above one repeat (the first repeat would grow past 8 blocks) or below one
// block (the implementation then reads the block before dst).
#pragma once
#include "twin/vector/more_common.h"

namespace twin {
namespace vec {

template <typename T>
inline T IndexValue(const T& first, int64_t offset) {
    if constexpr (std::is_integral_v<T>) {
        return (T)(uint64_t)((int64_t)first + offset);  // wraps like the implementation's cast
    } else {
        using L = Lane<T>;
        const float v = (float)L::Of(first) + (float)offset;
        T out;
        L::Store(&out, &v, 1);
        return out;
    }
}

template <typename T>
inline T IndexAdd(const T& a, int64_t add) {
    if constexpr (std::is_integral_v<T>) {
        return (T)(uint64_t)((uint64_t)(int64_t)a + (uint64_t)add);
    } else {
        using L = Lane<T>;
        const float v = L::Of(a) + (float)add;
        T out;
        L::Store(&out, &v, 1);
        return out;
    }
}

// One internal single-repeat Adds on raw UB: dst element e = src element e + add for the active elements e of
// `bits`, operands with block stride `blk` (elements of a block contiguous); sources are read before any write.
template <typename T>
inline void AddsOneRepeat(uint8_t* dst, const uint8_t* src, int64_t add, const uint64_t bits[2], uint32_t perRep,
                          uint32_t blk) {
    constexpr uint32_t epb = 32 / sizeof(T);
    T tmp[128];
    for (uint32_t e = NextSet(bits, 0, perRep); e < perRep; e = NextSet(bits, e + 1, perRep)) {
        std::memcpy(&tmp[e], src + ((uint64_t)(e / epb) * blk * 32 + (e % epb) * sizeof(T)), sizeof(T));
    }
    for (uint32_t e = NextSet(bits, 0, perRep); e < perRep; e = NextSet(bits, e + 1, perRep)) {
        const T v = IndexAdd<T>(tmp[e], add);
        std::memcpy(dst + ((uint64_t)(e / epb) * blk * 32 + (e % epb) * sizeof(T)), &v, sizeof(T));
    }
}

inline void LenBits(uint32_t len, uint64_t b[2]) {
    b[0] = len >= 64 ? kFullMask : ((1ull << len) - 1);
    b[1] = len >= 128 ? kFullMask : (len > 64 ? ((1ull << (len - 64)) - 1) : 0);
}

template <typename T>
inline void CheckIndexMode(const char* api) {
    RequireAiv(api);
    if (Cur().counterMode) {
        Fail(api, "called in counter mode: the implementation builds the index with normal-mode Adds (continuous "
                  "masks), which counter mode would read as element counts; call SetMaskNorm() first");
    }
}

// Form 0: count; form 1: mask[]; form 2: continuous mask. blk/rep: dst strides (32 B units).
template <typename T>
inline void IndexRun(const char* api, const AscendC::LocalTensor<T>& dst, const T& first, int form, uint64_t count,
                     const uint64_t* maskBits, uint64_t maskLen, uint32_t repeat, uint32_t blk, uint32_t rep) {
    CheckIndexMode<T>(api);
    constexpr uint32_t E = 256 / sizeof(T), epb = 32 / sizeof(T);
    Exec x;
    x.perRep = E;
    if (form == 0) {
        x.counter = true;
        x.count = count;
    } else if (form == 1) {
        x.repeats = repeat;
        x.bits[0] = maskBits[0];
        x.bits[1] = maskBits[1];
        ClipBits(x.bits, E);
    } else {
        if (maskLen > E) {
            Fail(api, "continuous mask %llu exceeds the %u elements of one repeat (the implementation would extend "
                      "the first repeat past its 8 blocks)", (unsigned long long)maskLen, E);
        }
        if (maskLen > 0 && maskLen < epb && repeat > 0) {
            Fail(api, "continuous mask %llu is below one 32 B block (%u elements): the dav-2201 implementation then "
                      "adds the block before dst into the result; use the mask[] form", (unsigned long long)maskLen, epb);
        }
        x.repeats = repeat;
        LenBits((uint32_t)maskLen, x.bits);
    }
    const Opd o = {dst.Ptr(), (uint32_t)sizeof(T), blk, rep};
    CheckOperand(api, "dst", dst, o, x);
    CheckDstBlkStride(api, "dstBlkStride", o, x);
    uint8_t* d = dst.Ptr();
    bool setReg = false;
    uint64_t reg[2] = {0, 0};
    auto adds = [&](uint64_t dOff, uint64_t sOff, int64_t add, const uint64_t b[2], uint32_t bstride) {
        AddsOneRepeat<T>(d + dOff, d + sOff, add, b, E, bstride);
        setReg = true;
        reg[0] = b[0];
        reg[1] = b[1];
    };
    auto put = [&](uint64_t byteOff, int64_t i) {
        const T v = IndexValue<T>(first, i);
        std::memcpy(d + byteOff, &v, sizeof(T));
    };
    uint64_t blkBits[2];
    LenBits(epb, blkBits);
    if (form == 1) {
        if (repeat > 0) {
            for (uint32_t e = NextSet(x.bits, 0, E); e < E; e = NextSet(x.bits, e + 1, E)) {
                put((uint64_t)(e / epb) * blk * 32 + (e % epb) * sizeof(T), e);
            }
            // The register gets mask[] as given (both words) when the internal Adds run.
            const uint64_t given[2] = {maskBits[0], maskBits[1]};
            for (uint32_t r = 1; r < repeat; ++r) {
                adds((uint64_t)r * rep * 32, (uint64_t)(r - 1) * rep * 32, E, x.bits, blk);
                reg[0] = given[0];
                reg[1] = given[1];
            }
        }
    } else if (form == 2) {
        const uint32_t m = (uint32_t)maskLen;
        if (repeat > 0 && m > 0) {
            for (uint32_t i = 0; i < std::min(m, epb); ++i) put((uint64_t)i * sizeof(T), i);
            for (uint32_t b = 1; b < m / epb; ++b) {
                adds((uint64_t)b * blk * 32, (uint64_t)(b - 1) * blk * 32, epb, blkBits, 1);
            }
            if (m % epb != 0) {
                uint64_t tb[2];
                LenBits(m % epb, tb);
                adds((uint64_t)(m / epb) * blk * 32, (uint64_t)(m / epb - 1) * blk * 32, epb, tb, blk);
            }
        }
        for (uint32_t r = 1; r < repeat; ++r) {
            adds((uint64_t)r * rep * 32, (uint64_t)(r - 1) * rep * 32, E, x.bits, blk);
        }
    } else if (count > 0) {
        for (uint32_t i = 0; i < std::min<uint64_t>(count, epb); ++i) put((uint64_t)i * sizeof(T), i);
        if (count > epb) {
            const uint32_t inRep = (uint32_t)std::min<uint64_t>(count, E);
            for (uint32_t b = 1; b < inRep / epb; ++b) adds((uint64_t)b * 32, (uint64_t)(b - 1) * 32, epb, blkBits, 1);
            if (inRep % epb != 0) {
                uint64_t tb[2];
                LenBits(inRep % epb, tb);
                adds((uint64_t)(inRep / epb) * 32, (uint64_t)(inRep / epb - 1) * 32, epb, tb, 1);
            }
            uint64_t full[2];
            LenBits(E, full);
            for (uint64_t r = 1; r < count / E; ++r) adds(r * 256, (r - 1) * 256, E, full, 1);
            if (count > E && count % E != 0) {
                uint64_t tb[2];
                LenBits((uint32_t)(count % E), tb);
                adds(count / E * 256, (count / E - 1) * 256, E, tb, 1);
            }
        }
    }
    if (setReg) RegSet(reg[1], reg[0]);
    TraceV(api, x.Active(), x.Active() * sizeof(T), x.Repeats(), dst.Ptr(), nullptr);
}

}  // namespace vec
}  // namespace twin

namespace AscendC {

#define TWIN_INDEX_TYPES int16_t, half, int32_t, float

template <typename T>
inline void CreateVecIndex(LocalTensor<T>& dst, const T& firstValue, uint64_t mask, uint8_t repeatTime,
                           uint16_t dstBlkStride, uint8_t dstRepStride) {
    static_assert(twin::vec::OneOf<T, TWIN_INDEX_TYPES>, "CreateVecIndex: data type not supported on dav-2201");
    twin::vec::IndexRun<T>("CreateVecIndex", dst, firstValue, 2, 0, nullptr, mask, repeatTime, dstBlkStride,
                           dstRepStride);
}

template <typename T>
inline void CreateVecIndex(LocalTensor<T>& dst, const T& firstValue, uint64_t mask[], uint8_t repeatTime,
                           uint16_t dstBlkStride, uint8_t dstRepStride) {
    static_assert(twin::vec::OneOf<T, TWIN_INDEX_TYPES>, "CreateVecIndex: data type not supported on dav-2201");
    twin::vec::IndexRun<T>("CreateVecIndex", dst, firstValue, 1, 0, mask, 0, repeatTime, dstBlkStride, dstRepStride);
}

template <typename T>
inline void CreateVecIndex(LocalTensor<T> dst, const T& firstValue, uint32_t count) {
    static_assert(twin::vec::OneOf<T, TWIN_INDEX_TYPES>, "CreateVecIndex: data type not supported on dav-2201");
    twin::vec::IndexRun<T>("CreateVecIndex", dst, firstValue, 0, count, nullptr, 0, 0, 1, 8);
}

#undef TWIN_INDEX_TYPES

}  // namespace AscendC
