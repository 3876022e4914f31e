// Harness shared by the vector test kernels (vector_api.cpp, vector_more.cpp; the host side is
// tests/vector_harness.py). A GM block of int64 parameters (struct Prm) picks the API (op), the call form, mask,
// repeats, strides, offsets and tensor sizes; UB holds three 60 KB regions (A: src0, B: src1, D: dst) loaded from GM.
// D is preloaded so that the tests can check that masked-off elements keep their values; D goes back to GM.
#ifndef NPU_FA_TESTS_REGION_HARNESS_H
#define NPU_FA_TESTS_REGION_HARNESS_H

#include "kernel_operator.h"
using namespace AscendC;

struct Prm {
    int64_t op, form, count, repeat;
    uint64_t mask0, mask1;
    int64_t dstBlk, s0Blk, s1Blk, dstRep, s0Rep, s1Rep;
    int64_t offD, offA, offB;  // element offsets of the operands inside their regions
    int64_t lenD, lenA, lenB;  // tensor sizes (elements) the API sees
    int64_t gD, gA, gB;        // bytes moved GM <-> UB (multiples of 32 B)
    int64_t extra, extra2, scalarBits, extra3;
};
constexpr int kPrm = 25;

__aicore__ inline Prm LoadPrm(GM_ADDR params) {
    GlobalTensor<int64_t> g;
    g.SetGlobalBuffer((__gm__ int64_t*)params, kPrm);
    int64_t v[kPrm];
    for (int i = 0; i < kPrm; ++i) v[i] = g.GetValue(i);
    Prm p;
    p.op = v[0]; p.form = v[1]; p.count = v[2]; p.repeat = v[3];
    p.mask0 = (uint64_t)v[4]; p.mask1 = (uint64_t)v[5];
    p.dstBlk = v[6]; p.s0Blk = v[7]; p.s1Blk = v[8]; p.dstRep = v[9]; p.s0Rep = v[10]; p.s1Rep = v[11];
    p.offD = v[12]; p.offA = v[13]; p.offB = v[14];
    p.lenD = v[15]; p.lenA = v[16]; p.lenB = v[17];
    p.gD = v[18]; p.gA = v[19]; p.gB = v[20];
    p.extra = v[21]; p.extra2 = v[22]; p.scalarBits = v[23]; p.extra3 = v[24];
    return p;
}

// bf16 arithmetic compiles on the twin (which reports it at run time); the official headers reject it at compile
// time, so the conformance check (official headers) sees only the legal calls.
#if defined(ASCEND_TWIN)
constexpr bool kTwin = true;
#else
constexpr bool kTwin = false;
#endif

template <typename A, typename B>
constexpr bool kSame = false;
template <typename A>
constexpr bool kSame<A, A> = true;

// The types with float vector arithmetic: float, half, and bfloat16_t on the twin only.
template <typename T>
constexpr bool kFloatArith = kSame<T, float> || kSame<T, half> || (kSame<T, bfloat16_t> && kTwin);

constexpr uint32_t kRegion = 60 * 1024;  // bytes per UB region: src0 at 0, src1 at 60 KB, dst at 120 KB

// The scalar operand: the low sizeof(T) bytes of scalarBits.
template <typename T>
__aicore__ inline T ScalarOf(const Prm& p) {
    T v;
    uint64_t bits = (uint64_t)p.scalarBits;
    __builtin_memcpy(&v, &bits, sizeof(T));
    return v;
}

// The block's dst / src0 / src1 block and repeat strides as the level-0 APIs take them.
__aicore__ inline BinaryRepeatParams BinaryParamsOf(const Prm& p) {
    return BinaryRepeatParams((uint8_t)p.dstBlk, (uint8_t)p.s0Blk, (uint8_t)p.s1Blk, (uint8_t)p.dstRep,
                              (uint8_t)p.s0Rep, (uint8_t)p.s1Rep);
}

__aicore__ inline UnaryRepeatParams UnaryParamsOf(const Prm& p) {
    return UnaryRepeatParams((uint16_t)p.dstBlk, (uint16_t)p.s0Blk, (uint8_t)p.dstRep, (uint8_t)p.s0Rep);
}

// Loads the three regions, runs body(dst, src0, src1, wholeA, wholeB, wholeD), stores region D back. dst / src0 /
// src1 start at offD / offA / offB of their regions and have lenD / lenA / lenB elements; the whole-region tensors
// span 60 KB each.
template <typename TD, typename TA, typename TB, class Body>
__aicore__ inline void WithRegions(const Prm& p, GM_ADDR gmA, GM_ADDR gmB, GM_ADDR gmD, Body body) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 3 * kRegion);
    LocalTensor<uint8_t> base = buf.Get<uint8_t>();
    LocalTensor<TA> A = base[0].ReinterpretCast<TA>();
    LocalTensor<TB> B = base[kRegion].ReinterpretCast<TB>();
    LocalTensor<TD> D = base[2 * kRegion].ReinterpretCast<TD>();
    A.SetSize(kRegion / sizeof(TA));
    B.SetSize(kRegion / sizeof(TB));
    D.SetSize(kRegion / sizeof(TD));
    GlobalTensor<TA> ga;
    GlobalTensor<TB> gb;
    GlobalTensor<TD> gd;
    const uint32_t nA = (uint32_t)(p.gA / sizeof(TA)), nB = (uint32_t)(p.gB / sizeof(TB)), nD = (uint32_t)(p.gD / sizeof(TD));
    ga.SetGlobalBuffer((__gm__ TA*)gmA, nA);
    gb.SetGlobalBuffer((__gm__ TB*)gmB, nB);
    gd.SetGlobalBuffer((__gm__ TD*)gmD, nD);
    if (nA > 0) DataCopy(A, ga, nA);
    if (nB > 0) DataCopy(B, gb, nB);
    if (nD > 0) DataCopy(D, gd, nD);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    LocalTensor<TA> a = A[(uint32_t)p.offA];
    LocalTensor<TB> b = B[(uint32_t)p.offB];
    LocalTensor<TD> d = D[(uint32_t)p.offD];
    a.SetSize((uint32_t)p.lenA);
    b.SetSize((uint32_t)p.lenB);
    d.SetSize((uint32_t)p.lenD);
    body(d, a, b, A, B, D);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    if (nD > 0) DataCopy(gd, D, nD);
}

// Misuse case 0 of the misuse kernels: call(t) runs a vector API on a float tensor on the cube core of a mix
// launch, which the twin must report.
template <class Call>
__aicore__ inline void OnTheCubeCore(Call call) {
    if ASCEND_IS_AIC {
        LocalTensor<float> t;
        call(t);
    }
}

// isSetMask as a type, so that the generic lambdas given to Forms can use it as a template argument
// (decltype(s)::value).
template <bool B>
struct IsSetMask {
    static constexpr bool value = B;
};

// Runs a level-0 call `l0(isSetMask, mask)` or the count form `cnt()` in the form the parameters ask for:
// 0 count, 1 mask[], 2 continuous mask, 3 register (bits), 4 register in counter mode, 5 counter mode with
// mask[] = {count, 0} set by the API, 6 register (continuous); any other form does nothing.
template <typename T, class L0, class Cnt>
__aicore__ inline void Forms(const Prm& p, L0 l0, Cnt cnt) {
    uint64_t m[2] = {p.mask0, p.mask1};
    switch (p.form) {
        case 0: cnt(); break;
        case 1: l0(IsSetMask<true>{}, m); break;
        case 2: l0(IsSetMask<true>{}, (uint64_t)p.mask0); break;
        case 3:  // register, normal mode, bitwise
            SetVectorMask<T>(p.mask1, p.mask0);
            l0(IsSetMask<false>{}, MASK_PLACEHOLDER);
            ResetMask();
            break;
        case 4:  // register, counter mode
            SetMaskCount();
            SetVectorMask<T, MaskMode::COUNTER>((int32_t)p.count);
            l0(IsSetMask<false>{}, MASK_PLACEHOLDER);
            SetMaskNorm();
            ResetMask();
            break;
        case 5: {  // counter mode, mask[] = {count, 0} set by the API
            SetMaskCount();
            uint64_t mc[2] = {(uint64_t)p.count, 0};
            l0(IsSetMask<true>{}, mc);
            SetMaskNorm();
            ResetMask();
            break;
        }
        case 6:  // register, normal mode, continuous
            SetVectorMask<T>((int32_t)p.mask0);
            l0(IsSetMask<false>{}, MASK_PLACEHOLDER);
            ResetMask();
            break;
        default: break;
    }
}

#endif  // NPU_FA_TESTS_REGION_HARNESS_H
