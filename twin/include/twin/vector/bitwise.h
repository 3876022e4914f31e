// Bitwise APIs of dav-2201:
//   And / Or (BinaryRepeatParams) and Not (UnaryRepeatParams): int16_t, uint16_t. The count forms of And / Or also
//   take int32_t / uint32_t, but (as on the NPU) they run on the data reinterpreted as int16_t, so `count` counts
//   16-bit halves: count = 2 * n processes n 32-bit elements (the documented workaround).
//   ShiftLeft / ShiftRight by a scalar: int16_t, uint16_t, int32_t, uint32_t; the shift must lie in [0, bit width].
//   Unsigned types shift logically. Signed ShiftRight is arithmetic (roundEn adds bit (n - 1) of the source, i.e.
//   rounds half up; no effect for unsigned types); signed ShiftLeft keeps the sign bit and shifts the other bits.
#pragma once
#include "twin/vector/binary.h"
#include "twin/vector/more_common.h"

namespace twin {
namespace vec {

namespace bop {
struct And {
    template <typename C>
    static C F(C a, C b) { return (C)(a & b); }
};
struct Or {
    template <typename C>
    static C F(C a, C b) { return (C)(a | b); }
};
struct Not {
    template <typename C>
    static C F(C a) { return (C)~a; }
};

template <typename C>
inline C ShiftLeft1(C a, uint32_t n) {
    using UC = std::make_unsigned_t<C>;
    constexpr uint32_t bits = sizeof(C) * 8;
    if constexpr (std::is_signed_v<C>) {
        const UC sign = (UC)((UC)a & ((UC)1 << (bits - 1)));
        const UC body = n >= bits ? (UC)0 : (UC)((UC)a << n);
        return (C)(UC)(sign | (body & (UC)~((UC)1 << (bits - 1))));
    } else {
        return n >= bits ? (C)0 : (C)(UC)((UC)a << n);
    }
}

template <typename C>
inline C ShiftRight1(C a, uint32_t n, bool round) {
    constexpr uint32_t bits = sizeof(C) * 8;
    if constexpr (std::is_signed_v<C>) {
        const int64_t v = (int64_t)a;
        int64_t r = n >= bits ? (v < 0 ? -1 : 0) : (v >> n);
        if (round && n > 0) r += (v >> (n - 1)) & 1;
        return (C)(std::make_unsigned_t<C>)(uint64_t)r;
    } else {
        using UC = std::make_unsigned_t<C>;
        return n >= bits ? (C)0 : (C)(UC)((UC)a >> n);
    }
}
}  // namespace bop

template <class Op, typename T>
inline void BitBinaryRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                         const AscendC::LocalTensor<T>& s1, const Exec& x, const AscendC::BinaryRepeatParams& p) {
    TwoSourceRun(api, dst, s0, s1, x, p, [](T* d, const T* a, const T* b, uint64_t n) {
        for (uint64_t i = 0; i < n; ++i) d[i] = Op::F(a[i], b[i]);
    });
}

template <class Op, typename T>
inline void BitBinaryL0(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                        const AscendC::LocalTensor<T>& s1, const MaskArg& m, uint8_t repeat,
                        const AscendC::BinaryRepeatParams& p) {
    RequireAiv(api);
    BitBinaryRun<Op, T>(api, dst, s0, s1, MakeL0Exec(api, m, 256 / sizeof(T), repeat), p);
}

// Count form: runs on int16_t whatever T is (count = 16-bit elements).
template <class Op, typename T>
inline void BitBinaryCount(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                           const AscendC::LocalTensor<T>& s1, int32_t count) {
    RequireAiv(api);
    const Exec x = CountExec(api, count, 128);
    BitBinaryRun<Op, int16_t>(api, dst.template ReinterpretCast<int16_t>(), s0.template ReinterpretCast<int16_t>(),
                              s1.template ReinterpretCast<int16_t>(), x, AscendC::BinaryRepeatParams());
    RestoreNormalFullMask();
}

template <typename T>
inline void NotRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                   const Exec& x, const AscendC::UnaryRepeatParams& p) {
    const Opd o[2] = {{dst.Ptr(), (uint32_t)sizeof(T), p.dstBlkStride, p.dstRepStride},
                      {src.Ptr(), (uint32_t)sizeof(T), p.srcBlkStride, p.srcRepStride}};
    CheckOperand(api, "dst", dst, o[0], x);
    CheckOperand(api, "src", src, o[1], x);
    CheckDstBlkStride(api, "dstBlkStride", o[0], x);
    CheckOverlap(api, "src", o[0], o[1], x, false);
    ForEachRun(o, x, sizeof(T), [](uint8_t* const* q, uint64_t n, uint64_t) {
        T* d = reinterpret_cast<T*>(q[0]);
        const T* a = reinterpret_cast<const T*>(q[1]);
        for (uint64_t i = 0; i < n; ++i) d[i] = bop::Not::F(a[i]);
    });
    TraceV(api, x.Active(), x.Active() * 2 * sizeof(T), x.Repeats(), dst.Ptr(), src.Ptr());
}

template <typename T>
inline void CheckShift(const char* api, const T& s) {
    const int64_t v = (int64_t)s;
    if (v < 0 || v > (int64_t)(sizeof(T) * 8)) {
        Fail(api, "scalarValue %lld is outside [0, %zu] (the shift range of a %zu-bit type on dav-2201)", (long long)v,
             sizeof(T) * 8, sizeof(T) * 8);
    }
}

template <typename T>
inline void ShiftRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                     const T& shift, bool left, bool round, const Exec& x, const AscendC::UnaryRepeatParams& p) {
    CheckShift(api, shift);
    const Opd o[2] = {{dst.Ptr(), (uint32_t)sizeof(T), p.dstBlkStride, p.dstRepStride},
                      {src.Ptr(), (uint32_t)sizeof(T), p.srcBlkStride, p.srcRepStride}};
    CheckOperand(api, "dst", dst, o[0], x);
    CheckOperand(api, "src", src, o[1], x);
    CheckDstBlkStride(api, "dstBlkStride", o[0], x);
    CheckOverlap(api, "src", o[0], o[1], x, false);
    const uint32_t n = (uint32_t)(int64_t)shift;
    ForEachRun(o, x, sizeof(T), [n, left, round](uint8_t* const* q, uint64_t cnt, uint64_t) {
        T* d = reinterpret_cast<T*>(q[0]);
        const T* a = reinterpret_cast<const T*>(q[1]);
        if (left) {
            for (uint64_t i = 0; i < cnt; ++i) d[i] = bop::ShiftLeft1<T>(a[i], n);
        } else {
            for (uint64_t i = 0; i < cnt; ++i) d[i] = bop::ShiftRight1<T>(a[i], n, round);
        }
    });
    TraceV(api, x.Active(), x.Active() * 2 * sizeof(T), x.Repeats(), dst.Ptr(), src.Ptr());
}

template <typename T, bool isSetMask>
inline void ShiftCount(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                       const T& shift, bool left, int32_t count) {
    RequireAiv(api);
    if constexpr (isSetMask) {
        ShiftRun<T>(api, dst, src, shift, left, false, CountExec(api, count, 256 / sizeof(T)),
                    AscendC::UnaryRepeatParams());
        RestoreNormalFullMask();
    } else {
        ShiftRun<T>(api, dst, src, shift, left, false, FromRegister(256 / sizeof(T), 1), AscendC::UnaryRepeatParams());
    }
}

}  // namespace vec
}  // namespace twin

#define TWIN_VEC_BITWISE_API(NAME, OP)                                                                                \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,               \
                     uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {             \
        static_assert(twin::vec::OneOf<T, int16_t, uint16_t>, #NAME ": data type not supported on dav-2201 (int16_t, " \
                                                              "uint16_t; reinterpret 32-bit data as 16-bit)");        \
        twin::vec::BitBinaryL0<OP, T>(#NAME, dst, src0, src1, twin::vec::MaskArg::Bits(mask, isSetMask), repeatTime,  \
                                      repeatParams);                                                                  \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,               \
                     uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {                \
        static_assert(twin::vec::OneOf<T, int16_t, uint16_t>, #NAME ": data type not supported on dav-2201 (int16_t, " \
                                                              "uint16_t; reinterpret 32-bit data as 16-bit)");        \
        twin::vec::BitBinaryL0<OP, T>(#NAME, dst, src0, src1, twin::vec::MaskArg::Len(mask, isSetMask), repeatTime,   \
                                      repeatParams);                                                                  \
    }                                                                                                                 \
    template <typename T>                                                                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,               \
                     const int32_t& count) {                                                                          \
        static_assert(twin::vec::OneOf<T, int16_t, uint16_t, int32_t, uint32_t>,                                      \
                      #NAME ": data type not supported on dav-2201");                                                 \
        twin::vec::BitBinaryCount<OP, T>(#NAME, dst, src0, src1, count);                                              \
    }

namespace AscendC {

TWIN_VEC_BITWISE_API(And, twin::vec::bop::And)
TWIN_VEC_BITWISE_API(Or, twin::vec::bop::Or)

#define TWIN_NOT_CHECK static_assert(twin::vec::OneOf<T, int16_t, uint16_t>, "Not: data type not supported on dav-2201")

template <typename T, bool isSetMask = true>
inline void Not(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask[], const uint8_t repeatTime,
                const UnaryRepeatParams& repeatParams) {
    TWIN_NOT_CHECK;
    twin::RequireAiv("Not");
    twin::vec::NotRun<T>("Not", dst, src,
                         twin::vec::MakeL0Exec("Not", twin::vec::MaskArg::Bits(mask, isSetMask), 256 / sizeof(T),
                                               repeatTime),
                         repeatParams);
}

template <typename T, bool isSetMask = true>
inline void Not(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask, const uint8_t repeatTime,
                const UnaryRepeatParams& repeatParams) {
    TWIN_NOT_CHECK;
    twin::RequireAiv("Not");
    twin::vec::NotRun<T>("Not", dst, src,
                         twin::vec::MakeL0Exec("Not", twin::vec::MaskArg::Len(mask, isSetMask), 256 / sizeof(T),
                                               repeatTime),
                         repeatParams);
}

template <typename T>
inline void Not(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count) {
    TWIN_NOT_CHECK;
    twin::RequireAiv("Not");
    twin::vec::NotRun<T>("Not", dst, src, twin::vec::CountExec("Not", count, 256 / sizeof(T)), UnaryRepeatParams());
    twin::vec::RestoreNormalFullMask();
}

#undef TWIN_NOT_CHECK

#define TWIN_SHIFT_CHECK(NAME)                                                                                       \
    static_assert(twin::vec::OneOf<T, int16_t, uint16_t, int32_t, uint32_t>, NAME ": data type not supported on dav-2201")

template <typename T, bool isSetMask = true>
inline void ShiftLeft(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask[],
                      const uint8_t repeatTime, const UnaryRepeatParams& repeatParams) {
    TWIN_SHIFT_CHECK("ShiftLeft");
    twin::RequireAiv("ShiftLeft");
    twin::vec::ShiftRun<T>("ShiftLeft", dst, src, scalarValue, true, false,
                           twin::vec::MakeL0Exec("ShiftLeft", twin::vec::MaskArg::Bits(mask, isSetMask),
                                                 256 / sizeof(T), repeatTime),
                           repeatParams);
}

template <typename T, bool isSetMask = true>
inline void ShiftLeft(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask,
                      const uint8_t repeatTime, const UnaryRepeatParams& repeatParams) {
    TWIN_SHIFT_CHECK("ShiftLeft");
    twin::RequireAiv("ShiftLeft");
    twin::vec::ShiftRun<T>("ShiftLeft", dst, src, scalarValue, true, false,
                           twin::vec::MakeL0Exec("ShiftLeft", twin::vec::MaskArg::Len(mask, isSetMask),
                                                 256 / sizeof(T), repeatTime),
                           repeatParams);
}

template <typename T, bool isSetMask = true>
inline void ShiftLeft(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                      const int32_t& count) {
    TWIN_SHIFT_CHECK("ShiftLeft");
    twin::vec::ShiftCount<T, isSetMask>("ShiftLeft", dst, src, scalarValue, true, count);
}

template <typename T, bool isSetMask = true>
inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask[],
                       const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, bool roundEn = false) {
    TWIN_SHIFT_CHECK("ShiftRight");
    twin::RequireAiv("ShiftRight");
    twin::vec::ShiftRun<T>("ShiftRight", dst, src, scalarValue, false, roundEn,
                           twin::vec::MakeL0Exec("ShiftRight", twin::vec::MaskArg::Bits(mask, isSetMask),
                                                 256 / sizeof(T), repeatTime),
                           repeatParams);
}

template <typename T, bool isSetMask = true>
inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask,
                       const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, bool roundEn = false) {
    TWIN_SHIFT_CHECK("ShiftRight");
    twin::RequireAiv("ShiftRight");
    twin::vec::ShiftRun<T>("ShiftRight", dst, src, scalarValue, false, roundEn,
                           twin::vec::MakeL0Exec("ShiftRight", twin::vec::MaskArg::Len(mask, isSetMask),
                                                 256 / sizeof(T), repeatTime),
                           repeatParams);
}

template <typename T, bool isSetMask = true>
inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                       const int32_t& count) {
    TWIN_SHIFT_CHECK("ShiftRight");
    twin::vec::ShiftCount<T, isSetMask>("ShiftRight", dst, src, scalarValue, false, count);
}

#undef TWIN_SHIFT_CHECK

}  // namespace AscendC

#undef TWIN_VEC_BITWISE_API
