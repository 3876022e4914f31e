// Compound arithmetic (dav-2201 type lists):
//   Axpy<T, U>        dst = scalar * src + dst            (half,half) (float,float) (float dst, half src)
//   FusedMulAdd<T>    dst = src0 * dst + src1             half, float
//   MulAddDst<T, U>   dst = src0 * src1 + dst             (half,half) (float,float) (float dst, half src)
//   MulAddRelu<T> / FusedMulAddRelu<T>  dst = max(src0 * dst + src1, 0)   half, float
//   AddRelu<T> / SubRelu<T>  dst = max(src0 +/- src1, 0)  int16_t, half, float (int16_t wraps before the Relu)
//   LeakyRelu<T>      dst = src >= 0 ? src : scalar * src half, float
// Multiply-add is computed in double from the (exact) float values and rounded once to dst's type (half: via float).
// A mixed-precision call (half sources, float dst) sizes its mask and repeats by float (64 elements per repeat; the
// sources advance 4 blocks per repeat in the count form) and refuses overlapping src/dst, as documented.
#pragma once
#include "twin/vector/more_common.h"

namespace twin {
namespace vec {

namespace fop {
template <typename C>
inline C ReluOf(C v) {
    if constexpr (std::is_integral_v<C>) return v > 0 ? v : C(0);
    else return vop::Relu::F(v);
}
struct Axpy {  // (d, src, scalar)
    template <typename C, typename A, typename B>
    static C F(C d, A a, B s) { return (C)MulAddOnce((float)s, (float)a, (float)d); }
};
struct FusedMulAdd {  // (d, src0, src1)
    template <typename C, typename A, typename B>
    static C F(C d, A a, B b) { return (C)MulAddOnce((float)a, (float)d, (float)b); }
};
struct MulAddRelu {
    template <typename C, typename A, typename B>
    static C F(C d, A a, B b) { return ReluOf<C>((C)MulAddOnce((float)a, (float)d, (float)b)); }
};
struct MulAddDst {
    template <typename C, typename A, typename B>
    static C F(C d, A a, B b) { return (C)MulAddOnce((float)a, (float)b, (float)d); }
};
struct AddRelu {
    template <typename C, typename A, typename B>
    static C F(C, A a, B b) { return ReluOf<C>(vop::Add::F<C>(a, b)); }
};
struct SubRelu {
    template <typename C, typename A, typename B>
    static C F(C, A a, B b) { return ReluOf<C>(vop::Sub::F<C>(a, b)); }
};
struct LeakyRelu {  // (d, src, scalar); NaN passes through (a >= 0 is false, NaN * s is NaN)
    template <typename C, typename A, typename B>
    static C F(C, A a, B s) { return vop::PickF(a >= 0, a, a * s); }
};
}  // namespace fop

// dst (TD) = Op(dst, src0 (TA), src1 (TB)) under BinaryRepeatParams.
template <class Op, typename TD, typename TA, typename TB>
inline void TernaryRun(const char* api, const AscendC::LocalTensor<TD>& dst, const AscendC::LocalTensor<TA>& s0,
                       const AscendC::LocalTensor<TB>& s1, const Exec& x, const AscendC::BinaryRepeatParams& p,
                       bool readsDst) {
    const Opd o[3] = {{dst.Ptr(), (uint32_t)sizeof(TD), p.dstBlkStride, p.dstRepStride},
                      {s0.Ptr(), (uint32_t)sizeof(TA), p.src0BlkStride, p.src0RepStride},
                      {s1.Ptr(), (uint32_t)sizeof(TB), p.src1BlkStride, p.src1RepStride}};
    CheckOperand(api, "dst", dst, o[0], x);
    CheckOperand(api, "src0", s0, o[1], x);
    CheckOperand(api, "src1", s1, o[2], x);
    CheckDstBlkStride(api, "dstBlkStride", o[0], x);
    CheckOverlap(api, "src0", o[0], o[1], x, false);
    CheckOverlap(api, "src1", o[0], o[2], x, OneOf<TD, half, int32_t, float> && std::is_same_v<TD, TB> && ChainsDstIntoSrc1(api));
    constexpr uint32_t wide = sizeof(TD) > sizeof(TA) ? sizeof(TD) : sizeof(TA);
    ForEachRun(o, x, wide, [](uint8_t* const* q, uint64_t n, uint64_t) {
        RunMixed<TD, TA, TB>(reinterpret_cast<TD*>(q[0]), reinterpret_cast<const TA*>(q[1]),
                             reinterpret_cast<const TB*>(q[2]), n,
                             [](auto d, auto a, auto b) { return Op::template F<decltype(d)>(d, a, b); });
    });
    TraceV(api, x.Active(), x.Active() * (sizeof(TD) * (readsDst ? 2 : 1) + sizeof(TA) + sizeof(TB)), x.Repeats(),
           dst.Ptr(), s0.Ptr());
}

template <class Op, typename TD, typename TA, typename TB>
inline void TernaryL0(const char* api, const AscendC::LocalTensor<TD>& dst, const AscendC::LocalTensor<TA>& s0,
                      const AscendC::LocalTensor<TB>& s1, const MaskArg& m, uint8_t repeat,
                      const AscendC::BinaryRepeatParams& p, bool readsDst) {
    RequireAiv(api);
    RejectBf16<TD>(api);
    RejectBf16<TA>(api);
    constexpr uint32_t wide = sizeof(TD) > sizeof(TA) ? sizeof(TD) : sizeof(TA);
    const Exec x = MakeL0Exec(api, m, 256 / wide, repeat);
    TernaryRun<Op>(api, dst, s0, s1, x, p, readsDst);
}

template <class Op, typename TD, typename TA, typename TB>
inline void TernaryCount(const char* api, const AscendC::LocalTensor<TD>& dst, const AscendC::LocalTensor<TA>& s0,
                         const AscendC::LocalTensor<TB>& s1, int32_t count, bool readsDst) {
    RequireAiv(api);
    RejectBf16<TD>(api);
    RejectBf16<TA>(api);
    constexpr uint32_t wide = sizeof(TD) > sizeof(TA) ? sizeof(TD) : sizeof(TA);
    const Exec x = CountExec(api, count, 256 / wide);
    AscendC::BinaryRepeatParams p;
    p.dstRepStride = (uint8_t)(8 * sizeof(TD) / wide);
    p.src0RepStride = p.src1RepStride = (uint8_t)(8 * sizeof(TA) / wide);
    TernaryRun<Op>(api, dst, s0, s1, x, p, readsDst);
    RestoreNormalFullMask();
}

// dst (TD) = Op(dst, src (TA), scalar) under UnaryRepeatParams.
template <class Op, typename TD, typename TA, typename TS>
inline void ScalarOpRun(const char* api, const AscendC::LocalTensor<TD>& dst, const AscendC::LocalTensor<TA>& src,
                        const TS& scalar, const Exec& x, const AscendC::UnaryRepeatParams& p, bool readsDst) {
    const Opd o[2] = {{dst.Ptr(), (uint32_t)sizeof(TD), p.dstBlkStride, p.dstRepStride},
                      {src.Ptr(), (uint32_t)sizeof(TA), p.srcBlkStride, p.srcRepStride}};
    CheckOperand(api, "dst", dst, o[0], x);
    CheckOperand(api, "src", src, o[1], x);
    CheckDstBlkStride(api, "dstBlkStride", o[0], x);
    CheckOverlap(api, "src", o[0], o[1], x, false);
    const typename Lane<TS>::C s = Lane<TS>::Of(scalar);
    constexpr uint32_t wide = sizeof(TD) > sizeof(TA) ? sizeof(TD) : sizeof(TA);
    ForEachRun(o, x, wide, [s](uint8_t* const* q, uint64_t n, uint64_t) {
        RunMixed<TD, TA, TA>(reinterpret_cast<TD*>(q[0]), reinterpret_cast<const TA*>(q[1]), nullptr, n,
                             [s](auto d, auto a, auto) { return Op::template F<decltype(d)>(d, a, s); });
    });
    TraceV(api, x.Active(), x.Active() * (sizeof(TD) * (readsDst ? 2 : 1) + sizeof(TA)), x.Repeats(), dst.Ptr(),
           src.Ptr());
}

template <class Op, typename TD, typename TA, typename TS>
inline void ScalarOpL0(const char* api, const AscendC::LocalTensor<TD>& dst, const AscendC::LocalTensor<TA>& src,
                       const TS& scalar, const MaskArg& m, uint8_t repeat, const AscendC::UnaryRepeatParams& p,
                       bool readsDst) {
    RequireAiv(api);
    RejectBf16<TD>(api);
    RejectBf16<TA>(api);
    constexpr uint32_t wide = sizeof(TD) > sizeof(TA) ? sizeof(TD) : sizeof(TA);
    const Exec x = MakeL0Exec(api, m, 256 / wide, repeat);
    ScalarOpRun<Op>(api, dst, src, scalar, x, p, readsDst);
}

// Count form; isSetMask = false: one repeat with default strides under the mask register as it stands.
template <class Op, bool isSetMask, typename TD, typename TA, typename TS>
inline void ScalarOpCount(const char* api, const AscendC::LocalTensor<TD>& dst, const AscendC::LocalTensor<TA>& src,
                          const TS& scalar, int32_t count, bool readsDst) {
    RequireAiv(api);
    RejectBf16<TD>(api);
    RejectBf16<TA>(api);
    constexpr uint32_t wide = sizeof(TD) > sizeof(TA) ? sizeof(TD) : sizeof(TA);
    AscendC::UnaryRepeatParams p;
    p.dstRepStride = (uint8_t)(8 * sizeof(TD) / wide);
    p.srcRepStride = (uint8_t)(8 * sizeof(TA) / wide);
    if constexpr (isSetMask) {
        const Exec x = CountExec(api, count, 256 / wide);
        ScalarOpRun<Op>(api, dst, src, scalar, x, p, readsDst);
        RestoreNormalFullMask();
    } else {
        ScalarOpRun<Op>(api, dst, src, scalar, FromRegister(256 / wide, 1), p, readsDst);
    }
}

template <typename T, typename U>
constexpr bool kMixedPair = (std::is_same_v<T, half> && std::is_same_v<U, half>) ||
                            (std::is_same_v<T, float> && std::is_same_v<U, float>) ||
                            (std::is_same_v<T, float> && std::is_same_v<U, half>) ||
                            (std::is_same_v<T, bfloat16_t> && std::is_same_v<U, bfloat16_t>);

}  // namespace vec
}  // namespace twin

// Same-type three-operand APIs with BinaryRepeatParams. bfloat16_t compiles so that the twin can report it.
#define TWIN_VEC_TERNARY_API(NAME, OP, READS_DST, ...)                                                                \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,               \
                     uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {             \
        static_assert(twin::vec::OneOf<T, __VA_ARGS__>, #NAME ": data type not supported on dav-2201");               \
        twin::vec::TernaryL0<OP>(#NAME, dst, src0, src1, twin::vec::MaskArg::Bits(mask, isSetMask), repeatTime,       \
                                 repeatParams, READS_DST);                                                            \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,               \
                     uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {                \
        static_assert(twin::vec::OneOf<T, __VA_ARGS__>, #NAME ": data type not supported on dav-2201");               \
        twin::vec::TernaryL0<OP>(#NAME, dst, src0, src1, twin::vec::MaskArg::Len(mask, isSetMask), repeatTime,        \
                                 repeatParams, READS_DST);                                                            \
    }                                                                                                                 \
    template <typename T>                                                                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,               \
                     const int32_t& count) {                                                                          \
        static_assert(twin::vec::OneOf<T, __VA_ARGS__>, #NAME ": data type not supported on dav-2201");               \
        twin::vec::TernaryCount<OP>(#NAME, dst, src0, src1, count, READS_DST);                                        \
    }

namespace AscendC {

TWIN_VEC_TERNARY_API(FusedMulAdd, twin::vec::fop::FusedMulAdd, true, half, float, bfloat16_t)
TWIN_VEC_TERNARY_API(MulAddRelu, twin::vec::fop::MulAddRelu, true, half, float, bfloat16_t)
TWIN_VEC_TERNARY_API(FusedMulAddRelu, twin::vec::fop::MulAddRelu, true, half, float, bfloat16_t)
TWIN_VEC_TERNARY_API(AddRelu, twin::vec::fop::AddRelu, false, int16_t, half, float, bfloat16_t)
TWIN_VEC_TERNARY_API(SubRelu, twin::vec::fop::SubRelu, false, int16_t, half, float, bfloat16_t)

// ---- MulAddDst<T, U>: dst (T) = src0 * src1 (U) + dst ----
template <typename T, typename U, bool isSetMask = true>
inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,
                      const uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {
    static_assert(twin::vec::kMixedPair<T, U>, "MulAddDst: dst/src type pair not supported on dav-2201");
    twin::vec::TernaryL0<twin::vec::fop::MulAddDst>("MulAddDst", dst, src0, src1,
                                                    twin::vec::MaskArg::Bits(mask, isSetMask), repeatTime,
                                                    repeatParams, true);
}

template <typename T, typename U, bool isSetMask = true>
inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,
                      uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {
    static_assert(twin::vec::kMixedPair<T, U>, "MulAddDst: dst/src type pair not supported on dav-2201");
    twin::vec::TernaryL0<twin::vec::fop::MulAddDst>("MulAddDst", dst, src0, src1,
                                                    twin::vec::MaskArg::Len(mask, isSetMask), repeatTime,
                                                    repeatParams, true);
}

template <typename T, typename U>
inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,
                      const int32_t& count) {
    static_assert(twin::vec::kMixedPair<T, U>, "MulAddDst: dst/src type pair not supported on dav-2201");
    twin::vec::TernaryCount<twin::vec::fop::MulAddDst>("MulAddDst", dst, src0, src1, count, true);
}

// ---- Axpy<T, U>: dst (T) = scalar * src (U) + dst ----
template <typename T, typename U, bool isSetMask = true>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, uint64_t mask,
                 const uint8_t repeatTime, const UnaryRepeatParams& repeatParams) {
    static_assert(twin::vec::kMixedPair<T, U>, "Axpy: dst/src type pair not supported on dav-2201");
    twin::vec::ScalarOpL0<twin::vec::fop::Axpy>("Axpy", dst, src, scalarValue,
                                                twin::vec::MaskArg::Len(mask, isSetMask), repeatTime, repeatParams,
                                                true);
}

template <typename T, typename U, bool isSetMask = true>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, uint64_t mask[],
                 const uint8_t repeatTime, const UnaryRepeatParams& repeatParams) {
    static_assert(twin::vec::kMixedPair<T, U>, "Axpy: dst/src type pair not supported on dav-2201");
    twin::vec::ScalarOpL0<twin::vec::fop::Axpy>("Axpy", dst, src, scalarValue,
                                                twin::vec::MaskArg::Bits(mask, isSetMask), repeatTime, repeatParams,
                                                true);
}

template <typename T, typename U>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, const int32_t& count) {
    static_assert(twin::vec::kMixedPair<T, U>, "Axpy: dst/src type pair not supported on dav-2201");
    twin::vec::ScalarOpCount<twin::vec::fop::Axpy, true>("Axpy", dst, src, scalarValue, count, true);
}

// ---- LeakyRelu<T>: tensor-scalar, count form with isSetMask ----
template <typename T, bool isSetMask = true>
inline void LeakyRelu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask[],
                      const uint8_t repeatTime, const UnaryRepeatParams& repeatParams) {
    static_assert(twin::vec::OneOf<T, half, float, bfloat16_t>, "LeakyRelu: data type not supported on dav-2201");
    twin::vec::ScalarOpL0<twin::vec::fop::LeakyRelu>("LeakyRelu", dst, src, scalarValue,
                                                     twin::vec::MaskArg::Bits(mask, isSetMask), repeatTime,
                                                     repeatParams, false);
}

template <typename T, bool isSetMask = true>
inline void LeakyRelu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask,
                      const uint8_t repeatTime, const UnaryRepeatParams& repeatParams) {
    static_assert(twin::vec::OneOf<T, half, float, bfloat16_t>, "LeakyRelu: data type not supported on dav-2201");
    twin::vec::ScalarOpL0<twin::vec::fop::LeakyRelu>("LeakyRelu", dst, src, scalarValue,
                                                     twin::vec::MaskArg::Len(mask, isSetMask), repeatTime,
                                                     repeatParams, false);
}

template <typename T, bool isSetMask = true>
inline void LeakyRelu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                      const int32_t& count) {
    static_assert(twin::vec::OneOf<T, half, float, bfloat16_t>, "LeakyRelu: data type not supported on dav-2201");
    twin::vec::ScalarOpCount<twin::vec::fop::LeakyRelu, isSetMask>("LeakyRelu", dst, src, scalarValue, count, false);
}

}  // namespace AscendC

#undef TWIN_VEC_TERNARY_API
