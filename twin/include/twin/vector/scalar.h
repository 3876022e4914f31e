// Tensor-scalar arithmetic: Adds, Muls, Maxs, Mins (UnaryRepeatParams; the count forms take isSetMask too: with
// isSetMask = false they issue one repeat with default strides under the mask register as it stands).
#pragma once
#include "twin/vector/engine.h"
#include "twin/vector/ops.h"

namespace twin {
namespace vec {

template <class Op, typename T>
inline void ScalarRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                      const T& scalar, const Exec& x, const AscendC::UnaryRepeatParams& p) {
    const Opd o[2] = {{dst.Ptr(), (uint32_t)sizeof(T), p.dstBlkStride, p.dstRepStride},
                      {src.Ptr(), (uint32_t)sizeof(T), p.srcBlkStride, p.srcRepStride}};
    CheckOperand(api, "dst", dst, o[0], x);
    CheckOperand(api, "src", src, o[1], x);
    CheckDstBlkStride(api, "dstBlkStride", o[0], x);
    CheckOverlap(api, "src", o[0], o[1], x, false);
    const typename Lane<T>::C s = Lane<T>::Of(scalar);
    ForEachRun(o, x, sizeof(T), [s](uint8_t* const* q, uint64_t n, uint64_t) {
        RunScalar<Op, T>(reinterpret_cast<T*>(q[0]), reinterpret_cast<const T*>(q[1]), s, n);
    });
    TraceV(api, x.Active(), x.Active() * 2 * sizeof(T), x.Repeats(), dst.Ptr(), src.Ptr());
}

template <class Op, typename T>
inline void ScalarL0(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                     const T& scalar, const MaskArg& m, uint8_t repeat, const AscendC::UnaryRepeatParams& p) {
    RequireAiv(api);
    RejectBf16<T>(api);
    const Exec x = MakeL0Exec(api, m, 256 / sizeof(T), repeat);
    ScalarRun<Op, T>(api, dst, src, scalar, x, p);
}

template <class Op, typename T, bool isSetMask>
inline void ScalarCount(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                        const T& scalar, int32_t count) {
    RequireAiv(api);
    RejectBf16<T>(api);
    if constexpr (isSetMask) {
        const Exec x = CountExec(api, count, 256 / sizeof(T));
        ScalarRun<Op, T>(api, dst, src, scalar, x, AscendC::UnaryRepeatParams());
        RestoreNormalFullMask();
    } else {
        ScalarRun<Op, T>(api, dst, src, scalar, FromRegister(256 / sizeof(T), 1), AscendC::UnaryRepeatParams());
    }
}

}  // namespace vec
}  // namespace twin

#define TWIN_VEC_SCALAR_API(NAME, OP, ...)                                                                            \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask[],      \
                     const uint8_t repeatTime, const UnaryRepeatParams& repeatParams) {                               \
        static_assert(twin::vec::OneOf<T, __VA_ARGS__>, #NAME ": data type not supported on dav-2201");               \
        twin::vec::ScalarL0<OP, T>(#NAME, dst, src, scalarValue, twin::vec::MaskArg::Bits(mask, isSetMask),           \
                                   repeatTime, repeatParams);                                                         \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask,        \
                     const uint8_t repeatTime, const UnaryRepeatParams& repeatParams) {                               \
        static_assert(twin::vec::OneOf<T, __VA_ARGS__>, #NAME ": data type not supported on dav-2201");               \
        twin::vec::ScalarL0<OP, T>(#NAME, dst, src, scalarValue, twin::vec::MaskArg::Len(mask, isSetMask),            \
                                   repeatTime, repeatParams);                                                         \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,                      \
                     const int32_t& count) {                                                                          \
        static_assert(twin::vec::OneOf<T, __VA_ARGS__>, #NAME ": data type not supported on dav-2201");               \
        twin::vec::ScalarCount<OP, T, isSetMask>(#NAME, dst, src, scalarValue, count);                                \
    }

namespace AscendC {

TWIN_VEC_SCALAR_API(Adds, twin::vop::Add, half, float, int16_t, int32_t, bfloat16_t)
TWIN_VEC_SCALAR_API(Muls, twin::vop::Mul, half, float, int16_t, int32_t, bfloat16_t)
TWIN_VEC_SCALAR_API(Maxs, twin::vop::Max, half, float, int16_t, int32_t, bfloat16_t)
TWIN_VEC_SCALAR_API(Mins, twin::vop::Min, half, float, int16_t, int32_t, bfloat16_t)

}  // namespace AscendC

#undef TWIN_VEC_SCALAR_API
