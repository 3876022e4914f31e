// The reduction special registers of an AIV (dav-2201) and their getters.
// MAX_MIN_CNT (GetReduceRepeatMaxMinSpr): written by ReduceRepeat<MAX/MIN> (WholeReduceMax/Min) with the extreme
//   over all repeats and its element index r * E + e (the first one on ties), and by ReduceMax / ReduceMin with their
//   result value; the page says the index is not accurate after ReduceMax / ReduceMin, so the twin stores all-ones
//   index bits there. Low 32 bits: the value's bits (16 for half); high 32 bits: the index. Defined only for
//   contiguous calls (srcBlkStride 1, srcRepStride 8) outside counter mode and read with the reduction's T; the twin
//   raises otherwise.
// ACC_VAL (GetReduceRepeatSumSpr): the total of the ReduceSum count form (equal to its dst[0]). Other reductions
//   that use the same vcadd instruction leave it undefined, so reading it after them raises.
#pragma once
#include "twin/launch/core_local.h"
#include "twin/vector/engine.h"

namespace twin {
namespace vec {

struct ReduceSpr {
    const char* maxMinInvalid = "no ReduceRepeat<MAX/MIN>, WholeReduceMax/Min, ReduceMax or ReduceMin ran on this core";
    uint32_t maxMinSize = 0;  // sizeof(T) of the reduction
    uint64_t maxMin = 0;
    const char* accInvalid = "no ReduceSum count form ran on this core";
    const char* accBy = nullptr;  // the other vcadd reduction that ran last
    uint32_t accSize = 0;
    uint64_t acc = 0;
};

template <typename T>
inline uint64_t ValueBits(float v) {
    if constexpr (std::is_same_v<T, half>) return vnum::FloatToHalf1(v);
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return b;
}

// found: the reduction had an active element; contiguous: srcBlkStride 1 and srcRepStride 8; counter: counter mode.
template <typename T>
inline void RecordMaxMin(bool found, bool contiguous, bool counter, float value, uint64_t index) {
    ReduceSpr& s = CoreLocal<ReduceSpr>();
    s.maxMinInvalid = !found ? "the last max/min reduction had no active element"
                      : counter ? "the last max/min reduction ran in counter mode (not supported by the register)"
                      : !contiguous ? "the last max/min reduction was not contiguous (srcBlkStride 1, srcRepStride 8)"
                                    : nullptr;
    s.maxMinSize = sizeof(T);
    s.maxMin = ValueBits<T>(value) | ((index & 0xFFFFFFFFull) << 32);
}

template <typename T>
inline void RecordAcc(float value) {
    ReduceSpr& s = CoreLocal<ReduceSpr>();
    s.accInvalid = s.accBy = nullptr;
    s.accSize = sizeof(T);
    s.acc = ValueBits<T>(value);
}

// A vcadd-based reduction other than the ReduceSum count form (`by` names it, a string literal).
inline void InvalidateAcc(const char* by) {
    ReduceSpr& s = CoreLocal<ReduceSpr>();
    s.accInvalid = "the last sum reduction was not the ReduceSum count form";
    s.accBy = by;
}

template <typename T>
inline void RequireSprRead(const char* api, const char* invalid, uint32_t size) {
    static_assert(OneOf<T, half, float>, "the reduction registers hold half or float results");
    if (invalid != nullptr) Fail(api, "the register is undefined: %s", invalid);
    if (size != sizeof(T)) {
        Fail(api, "T has %zu bytes but the reduction that wrote the register used a %u-byte type", sizeof(T), size);
    }
}

template <typename T>
inline T FromBits(uint64_t bits) {
    T v;
    if constexpr (sizeof(T) == 2) {
        const uint16_t b = (uint16_t)bits;
        std::memcpy(&v, &b, 2);
    } else {
        const uint32_t b = (uint32_t)bits;
        std::memcpy(&v, &b, 4);
    }
    return v;
}

}  // namespace vec
}  // namespace twin

namespace AscendC {

template <typename T>
inline void GetReduceRepeatMaxMinSpr(T& maxMinValue, T& maxMinIndex) {
    if (twin::Cur().coreType == AIC) return;
    const twin::vec::ReduceSpr& s = twin::CoreLocal<twin::vec::ReduceSpr>();
    twin::vec::RequireSprRead<T>("GetReduceRepeatMaxMinSpr", s.maxMinInvalid, s.maxMinSize);
    maxMinValue = twin::vec::FromBits<T>(s.maxMin);
    maxMinIndex = twin::vec::FromBits<T>(s.maxMin >> 32);
    twin::Trace("GetReduceRepeatMaxMinSpr", PIPE_S, 1, 8, 1, nullptr, nullptr);
}

// The value-only form exists for Atlas inference AI Core; dav-2201 reports it as unsupported.
template <typename T>
inline void GetReduceRepeatMaxMinSpr(T& maxMinValue) {
    (void)maxMinValue;
    twin::Fail("GetReduceRepeatMaxMinSpr", "the value-only form is not supported on dav-2201; use "
                                           "GetReduceRepeatMaxMinSpr(maxMinValue, maxMinIndex)");
}

template <typename T>
inline T GetReduceRepeatSumSpr() {
    if (twin::Cur().coreType == AIC) return twin::vec::FromBits<T>(0);
    const twin::vec::ReduceSpr& s = twin::CoreLocal<twin::vec::ReduceSpr>();
    if (s.accBy != nullptr) {
        twin::Fail("GetReduceRepeatSumSpr", "the register is undefined: the last sum reduction was %s; only the "
                                            "ReduceSum count form defines it", s.accBy);
    }
    twin::vec::RequireSprRead<T>("GetReduceRepeatSumSpr", s.accInvalid, s.accSize);
    twin::Trace("GetReduceRepeatSumSpr", PIPE_S, 1, 8, 1, nullptr, nullptr);
    return twin::vec::FromBits<T>(s.acc);
}

// Deprecated names of the official header.
template <typename T>
inline void GetReduceMaxMinCount(T& maxMinValue, T& maxMinIndex) {
    GetReduceRepeatMaxMinSpr<T>(maxMinValue, maxMinIndex);
}

template <typename T>
inline T GetAccVal() {
    return GetReduceRepeatSumSpr<T>();
}

}  // namespace AscendC
