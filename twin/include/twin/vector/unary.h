// One-tensor math: Exp, Ln, Abs, Sqrt, Rsqrt, Reciprocal (half, float) and Relu (half, float, int32_t).
// half is computed in float and rounded back to nearest-even.
#pragma once
#include "twin/vector/engine.h"
#include "twin/vector/ops.h"

namespace twin {
namespace vec {

template <class Op, typename T>
inline void UnaryRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                     const Exec& x, const AscendC::UnaryRepeatParams& p) {
    const Opd o[2] = {{dst.Ptr(), (uint32_t)sizeof(T), p.dstBlkStride, p.dstRepStride},
                      {src.Ptr(), (uint32_t)sizeof(T), p.srcBlkStride, p.srcRepStride}};
    CheckOperand(api, "dst", dst, o[0], x);
    CheckOperand(api, "src", src, o[1], x);
    CheckDstBlkStride(api, "dstBlkStride", o[0], x);
    CheckOverlap(api, "src", o[0], o[1], x, false);
    ForEachRun(o, x, sizeof(T), [](uint8_t* const* q, uint64_t n, uint64_t) {
        RunUnary<Op, T>(reinterpret_cast<T*>(q[0]), reinterpret_cast<const T*>(q[1]), n);
    });
    TraceV(api, x.Active(), x.Active() * 2 * sizeof(T), x.Repeats(), dst.Ptr(), src.Ptr());
}

template <class Op, typename T>
inline void UnaryL0(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                    const MaskArg& m, uint8_t repeat, const AscendC::UnaryRepeatParams& p) {
    RequireAiv(api);
    RejectBf16<T>(api);
    const Exec x = MakeL0Exec(api, m, 256 / sizeof(T), repeat);
    UnaryRun<Op, T>(api, dst, src, x, p);
}

template <class Op, typename T>
inline void UnaryCount(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                       int32_t count) {
    RequireAiv(api);
    RejectBf16<T>(api);
    const Exec x = CountExec(api, count, 256 / sizeof(T));
    UnaryRun<Op, T>(api, dst, src, x, AscendC::UnaryRepeatParams());
    RestoreNormalFullMask();
}

}  // namespace vec
}  // namespace twin

#define TWIN_VEC_UNARY_API(NAME, OP, ...)                                                                             \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask[], const uint8_t repeatTime,  \
                     const UnaryRepeatParams& repeatParams) {                                                         \
        static_assert(twin::vec::OneOf<T, __VA_ARGS__>, #NAME ": data type not supported on dav-2201");               \
        twin::vec::UnaryL0<OP, T>(#NAME, dst, src, twin::vec::MaskArg::Bits(mask, isSetMask), repeatTime,             \
                                  repeatParams);                                                                      \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask, const uint8_t repeatTime,    \
                     const UnaryRepeatParams& repeatParams) {                                                         \
        static_assert(twin::vec::OneOf<T, __VA_ARGS__>, #NAME ": data type not supported on dav-2201");               \
        twin::vec::UnaryL0<OP, T>(#NAME, dst, src, twin::vec::MaskArg::Len(mask, isSetMask), repeatTime,              \
                                  repeatParams);                                                                      \
    }                                                                                                                 \
    template <typename T>                                                                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count) {                    \
        static_assert(twin::vec::OneOf<T, __VA_ARGS__>, #NAME ": data type not supported on dav-2201");               \
        twin::vec::UnaryCount<OP, T>(#NAME, dst, src, count);                                                         \
    }

namespace AscendC {

TWIN_VEC_UNARY_API(Exp, twin::vop::Exp, half, float, bfloat16_t)
TWIN_VEC_UNARY_API(Ln, twin::vop::Ln, half, float, bfloat16_t)
TWIN_VEC_UNARY_API(Abs, twin::vop::Abs, half, float, bfloat16_t)
TWIN_VEC_UNARY_API(Sqrt, twin::vop::Sqrt, half, float, bfloat16_t)
TWIN_VEC_UNARY_API(Rsqrt, twin::vop::Rsqrt, half, float, bfloat16_t)
TWIN_VEC_UNARY_API(Reciprocal, twin::vop::Reciprocal, half, float, bfloat16_t)
TWIN_VEC_UNARY_API(Relu, twin::vop::Relu, half, float, int32_t, bfloat16_t)

}  // namespace AscendC

#undef TWIN_VEC_UNARY_API
