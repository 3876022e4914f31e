// Two-tensor arithmetic: Add, Sub, Mul, Div, Max, Min (dav-2201 signatures: level 0 with mask[] or a continuous
// mask, uint8_t repeatTime and BinaryRepeatParams; level 2 with an element count).
#pragma once
#include "twin/vector/engine.h"
#include "twin/vector/ops.h"

namespace twin {
namespace vec {

// Checks dst/src0/src1 of a two-source instruction and applies body(d, a, b, n) to each contiguous run.
template <typename T, class Body>
inline void TwoSourceRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                         const AscendC::LocalTensor<T>& s1, const Exec& x, const AscendC::BinaryRepeatParams& p,
                         Body body) {
    const Opd o[3] = {{dst.Ptr(), (uint32_t)sizeof(T), p.dstBlkStride, p.dstRepStride},
                      {s0.Ptr(), (uint32_t)sizeof(T), p.src0BlkStride, p.src0RepStride},
                      {s1.Ptr(), (uint32_t)sizeof(T), p.src1BlkStride, p.src1RepStride}};
    CheckOperand(api, "dst", dst, o[0], x);
    CheckOperand(api, "src0", s0, o[1], x);
    CheckOperand(api, "src1", s1, o[2], x);
    CheckDstBlkStride(api, "dstBlkStride", o[0], x);
    CheckOverlap(api, "src0", o[0], o[1], x, false);
    CheckOverlap(api, "src1", o[0], o[2], x, OneOf<T, half, int32_t, float> && ChainsDstIntoSrc1(api));
    ForEachRun(o, x, sizeof(T), [&](uint8_t* const* q, uint64_t n, uint64_t) {
        body(reinterpret_cast<T*>(q[0]), reinterpret_cast<const T*>(q[1]), reinterpret_cast<const T*>(q[2]), n);
    });
    TraceV(api, x.Active(), x.Active() * 3 * sizeof(T), x.Repeats(), dst.Ptr(), s0.Ptr());
}

template <class Op, typename T>
inline void BinaryRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                      const AscendC::LocalTensor<T>& s1, const Exec& x, const AscendC::BinaryRepeatParams& p) {
    TwoSourceRun(api, dst, s0, s1, x, p, [](T* d, const T* a, const T* b, uint64_t n) { RunBinary<Op, T>(d, a, b, n); });
}

template <class Op, typename T>
inline void BinaryL0(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                     const AscendC::LocalTensor<T>& s1, const MaskArg& m, uint8_t repeat,
                     const AscendC::BinaryRepeatParams& p) {
    RequireAiv(api);
    RejectBf16<T>(api);
    const Exec x = MakeL0Exec(api, m, 256 / sizeof(T), repeat);
    BinaryRun<Op, T>(api, dst, s0, s1, x, p);
}

template <class Op, typename T>
inline void BinaryCount(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                        const AscendC::LocalTensor<T>& s1, int32_t count) {
    RequireAiv(api);
    RejectBf16<T>(api);
    const Exec x = CountExec(api, count, 256 / sizeof(T));
    BinaryRun<Op, T>(api, dst, s0, s1, x, AscendC::BinaryRepeatParams());
    RestoreNormalFullMask();
}

}  // namespace vec
}  // namespace twin

#define TWIN_VEC_BINARY_API(NAME, OP, ...)                                                                            \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,               \
                     uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {              \
        static_assert(twin::vec::OneOf<T, __VA_ARGS__>, #NAME ": data type not supported on dav-2201");               \
        twin::vec::BinaryL0<OP, T>(#NAME, dst, src0, src1, twin::vec::MaskArg::Bits(mask, isSetMask), repeatTime,     \
                                   repeatParams);                                                                     \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,               \
                     uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {                \
        static_assert(twin::vec::OneOf<T, __VA_ARGS__>, #NAME ": data type not supported on dav-2201");               \
        twin::vec::BinaryL0<OP, T>(#NAME, dst, src0, src1, twin::vec::MaskArg::Len(mask, isSetMask), repeatTime,      \
                                   repeatParams);                                                                     \
    }                                                                                                                 \
    template <typename T>                                                                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,               \
                     const int32_t& count) {                                                                          \
        static_assert(twin::vec::OneOf<T, __VA_ARGS__>, #NAME ": data type not supported on dav-2201");               \
        twin::vec::BinaryCount<OP, T>(#NAME, dst, src0, src1, count);                                                 \
    }

namespace AscendC {

// bfloat16_t is accepted at compile time so that the twin can report it at run time (the NPU rejects bf16 math).
TWIN_VEC_BINARY_API(Add, twin::vop::Add, half, float, int16_t, int32_t, bfloat16_t)
TWIN_VEC_BINARY_API(Sub, twin::vop::Sub, half, float, int16_t, int32_t, bfloat16_t)
TWIN_VEC_BINARY_API(Mul, twin::vop::Mul, half, float, int16_t, int32_t, bfloat16_t)
TWIN_VEC_BINARY_API(Div, twin::vop::Div, half, float, bfloat16_t)
TWIN_VEC_BINARY_API(Max, twin::vop::Max, half, float, int16_t, int32_t, bfloat16_t)
TWIN_VEC_BINARY_API(Min, twin::vop::Min, half, float, int16_t, int32_t, bfloat16_t)

}  // namespace AscendC

#undef TWIN_VEC_BINARY_API
