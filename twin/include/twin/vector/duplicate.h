// Duplicate: fill a UB tensor with a scalar (half, bfloat16_t, int16_t, uint16_t, int32_t, uint32_t, float).
#pragma once
#include "twin/vector/engine.h"

namespace twin {
namespace vec {

template <typename T>
inline void DuplicateRun(const char* api, const AscendC::LocalTensor<T>& dst, const T& v, const Exec& x,
                         uint32_t blk, uint32_t rep) {
    const Opd o[1] = {{dst.Ptr(), (uint32_t)sizeof(T), blk, rep}};
    CheckOperand(api, "dst", dst, o[0], x);
    CheckDstBlkStride(api, "dstBlockStride", o[0], x);
    const T val = v;
    ForEachRun(o, x, sizeof(T), [val](uint8_t* const* q, uint64_t n, uint64_t) {
        T* d = reinterpret_cast<T*>(q[0]);
        for (uint64_t i = 0; i < n; ++i) d[i] = val;
    });
    TraceV(api, x.Active(), x.Active() * sizeof(T), x.Repeats(), dst.Ptr(), nullptr);
}

}  // namespace vec
}  // namespace twin

namespace AscendC {

#define TWIN_DUP_TYPES half, bfloat16_t, int16_t, uint16_t, int32_t, uint32_t, float

template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask, const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride) {
    static_assert(twin::vec::OneOf<T, TWIN_DUP_TYPES>, "Duplicate: data type not supported on dav-2201");
    const char* api = "Duplicate";
    twin::RequireAiv(api);
    const twin::vec::Exec x =
        twin::vec::MakeL0Exec(api, twin::vec::MaskArg::Len(mask, isSetMask), 256 / sizeof(T), repeatTime);
    twin::vec::DuplicateRun(api, dst, scalarValue, x, dstBlockStride, dstRepeatStride);
}

template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask[], const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride) {
    static_assert(twin::vec::OneOf<T, TWIN_DUP_TYPES>, "Duplicate: data type not supported on dav-2201");
    const char* api = "Duplicate";
    twin::RequireAiv(api);
    const twin::vec::Exec x =
        twin::vec::MakeL0Exec(api, twin::vec::MaskArg::Bits(mask, isSetMask), 256 / sizeof(T), repeatTime);
    twin::vec::DuplicateRun(api, dst, scalarValue, x, dstBlockStride, dstRepeatStride);
}

template <typename T>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& count) {
    static_assert(twin::vec::OneOf<T, TWIN_DUP_TYPES>, "Duplicate: data type not supported on dav-2201");
    const char* api = "Duplicate";
    twin::RequireAiv(api);
    const twin::vec::Exec x = twin::vec::CountExec(api, count, 256 / sizeof(T));
    twin::vec::DuplicateRun(api, dst, scalarValue, x, DEFAULT_BLK_STRIDE, DEFAULT_REPEAT_STRIDE);
    twin::vec::RestoreNormalFullMask();
}

#undef TWIN_DUP_TYPES

}  // namespace AscendC
