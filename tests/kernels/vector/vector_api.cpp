// Test kernels for the twin's vector unit (tests/test_twin_vector.py). A GM parameter block (int64 values, see
// struct Prm) selects the API, the call form (count / mask[] / continuous mask / mask register / counter mode),
// the mask, repeats, strides and tensor offsets; three UB regions hold src0, src1 and dst. dst is preloaded from
// GM so that the test can check that masked-off elements keep their values.
#include <type_traits>

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

constexpr uint32_t kRegion = 60 * 1024;  // bytes per UB region: src0 at 0, src1 at 60 KB, dst at 120 KB

template <typename T>
__aicore__ inline T ScalarOf(const Prm& p) {
    T v;
    uint64_t bits = (uint64_t)p.scalarBits;
    __builtin_memcpy(&v, &bits, sizeof(T));
    return v;
}

// Loads the three regions, runs body(dst, src0, src1), stores dst back.
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
    body(d, a, b, A);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    if (nD > 0) DataCopy(gd, D, nD);
}

// Runs a level-0 call `l0(isSetMask, mask)` or the count form `cnt()` in the form the parameters ask for.
template <typename T, class L0, class Cnt>
__aicore__ inline void Forms(const Prm& p, L0 l0, Cnt cnt) {
    uint64_t m[2] = {p.mask0, p.mask1};
    switch (p.form) {
        case 0: cnt(); break;
        case 1: l0(std::true_type{}, m); break;
        case 2: l0(std::true_type{}, (uint64_t)p.mask0); break;
        case 3:  // register, normal mode, bitwise
            SetVectorMask<T>(p.mask1, p.mask0);
            l0(std::false_type{}, MASK_PLACEHOLDER);
            ResetMask();
            break;
        case 4:  // register, counter mode
            SetMaskCount();
            SetVectorMask<T, MaskMode::COUNTER>((int32_t)p.count);
            l0(std::false_type{}, MASK_PLACEHOLDER);
            SetMaskNorm();
            ResetMask();
            break;
        case 5: {  // counter mode, mask[] = {count, 0} set by the API
            SetMaskCount();
            uint64_t mc[2] = {(uint64_t)p.count, 0};
            l0(std::true_type{}, mc);
            SetMaskNorm();
            ResetMask();
            break;
        }
        case 6:  // register, normal mode, continuous
            SetVectorMask<T>((int32_t)p.mask0);
            l0(std::false_type{}, MASK_PLACEHOLDER);
            ResetMask();
            break;
        case 7:  // counter mode with the continuous form (a misuse the twin reports)
            SetMaskCount();
            l0(std::true_type{}, (uint64_t)p.mask0);
            SetMaskNorm();
            break;
        default: break;
    }
}

template <typename T>
__aicore__ inline void ArithCase(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d) {
    const Prm p = LoadPrm(params);
    WithRegions<T, T, T>(p, a, b, d, [&](LocalTensor<T>& dst, LocalTensor<T>& s0, LocalTensor<T>& s1, auto&) {
        const BinaryRepeatParams bp((uint8_t)p.dstBlk, (uint8_t)p.s0Blk, (uint8_t)p.s1Blk, (uint8_t)p.dstRep,
                                    (uint8_t)p.s0Rep, (uint8_t)p.s1Rep);
        const UnaryRepeatParams up((uint16_t)p.dstBlk, (uint16_t)p.s0Blk, (uint8_t)p.dstRep, (uint8_t)p.s0Rep);
        const uint8_t rep = (uint8_t)p.repeat;
        const int32_t cnt = (int32_t)p.count;
        const T sc = ScalarOf<T>(p);
        constexpr bool isBf16 = std::is_same_v<T, bfloat16_t>;
        constexpr bool isFloat = std::is_same_v<T, float> || std::is_same_v<T, half> || (isBf16 && kTwin);
        constexpr bool isArith = !std::is_same_v<T, uint16_t> && !std::is_same_v<T, uint32_t> && (!isBf16 || kTwin);
#define BIN(NAME)                                                                                                 \
    Forms<T>(p, [&](auto s, auto m) { NAME<T, decltype(s)::value>(dst, s0, s1, m, rep, bp); },                     \
             [&]() { NAME<T>(dst, s0, s1, cnt); })
#define SCL(NAME)                                                                                                 \
    if (p.form == 8) {                                                                                            \
        SetMaskCount();                                                                                           \
        SetVectorMask<T, MaskMode::COUNTER>(cnt);                                                                 \
        NAME<T, false>(dst, s0, sc, 1);                                                                           \
        SetMaskNorm();                                                                                            \
        ResetMask();                                                                                              \
    } else {                                                                                                      \
        Forms<T>(p, [&](auto s, auto m) { NAME<T, decltype(s)::value>(dst, s0, sc, m, rep, up); },                 \
                 [&]() { NAME<T>(dst, s0, sc, cnt); });                                                           \
    }
#define UN(NAME)                                                                                                  \
    Forms<T>(p, [&](auto s, auto m) { NAME<T, decltype(s)::value>(dst, s0, m, rep, up); },                         \
             [&]() { NAME<T>(dst, s0, cnt); })
        if constexpr (isArith) {
            switch (p.op) {
                case 0: BIN(Add); break;
                case 1: BIN(Sub); break;
                case 2: BIN(Mul); break;
                case 4: BIN(Max); break;
                case 5: BIN(Min); break;
                case 10: SCL(Adds); break;
                case 11: SCL(Muls); break;
                case 12: SCL(Maxs); break;
                case 13: SCL(Mins); break;
                default: break;
            }
        }
        if constexpr (isFloat) {
            switch (p.op) {
                case 3: BIN(Div); break;
                case 20: UN(Exp); break;
                case 21: UN(Ln); break;
                case 22: UN(Abs); break;
                case 23: UN(Sqrt); break;
                case 24: UN(Rsqrt); break;
                case 25: UN(Reciprocal); break;
                default: break;
            }
        }
        if constexpr (isFloat || std::is_same_v<T, int32_t>) {
            if (p.op == 26) UN(Relu);
        }
        if (p.op == 30) {
            Forms<T>(p, [&](auto s, auto m) { Duplicate<T, decltype(s)::value>(dst, sc, m, rep, (uint16_t)p.dstBlk, (uint8_t)p.dstRep); },
                     [&]() { Duplicate<T>(dst, sc, cnt); });
        }
#undef BIN
#undef SCL
#undef UN
    });
}

extern "C" __global__ __aicore__ void arith_f32(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { ArithCase<float>(p, a, b, d); }
extern "C" __global__ __aicore__ void arith_f16(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { ArithCase<half>(p, a, b, d); }
extern "C" __global__ __aicore__ void arith_s16(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { ArithCase<int16_t>(p, a, b, d); }
extern "C" __global__ __aicore__ void arith_s32(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { ArithCase<int32_t>(p, a, b, d); }
extern "C" __global__ __aicore__ void arith_bf16(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { ArithCase<bfloat16_t>(p, a, b, d); }
extern "C" __global__ __aicore__ void arith_u16(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { ArithCase<uint16_t>(p, a, b, d); }
extern "C" __global__ __aicore__ void arith_u32(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { ArithCase<uint32_t>(p, a, b, d); }

// ---- Cast<TD, TS>: extra = RoundMode ----
template <typename TD, typename TS>
__aicore__ inline void CastCase(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d) {
    const Prm p = LoadPrm(params);
    WithRegions<TD, TS, TS>(p, a, b, d, [&](LocalTensor<TD>& dst, LocalTensor<TS>& src, LocalTensor<TS>&, auto&) {
        const UnaryRepeatParams up((uint16_t)p.dstBlk, (uint16_t)p.s0Blk, (uint8_t)p.dstRep, (uint8_t)p.s0Rep);
        const RoundMode mode = (RoundMode)p.extra;
        if constexpr (std::is_same_v<TD, half> && std::is_same_v<TS, int32_t>) {
            SetDeqScale(ScalarOf<half>(p));
        }
        Forms<TD>(p, [&](auto s, auto m) { Cast<TD, TS, decltype(s)::value>(dst, src, mode, m, (uint8_t)p.repeat, up); },
                  [&]() { Cast<TD, TS>(dst, src, mode, (uint32_t)p.count); });
    });
}

#define CAST_KERNEL(NAME, TD, TS) \
    extern "C" __global__ __aicore__ void NAME(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { CastCase<TD, TS>(p, a, b, d); }
CAST_KERNEL(cast_f16_f32, half, float)
CAST_KERNEL(cast_f32_f16, float, half)
CAST_KERNEL(cast_bf16_f32, bfloat16_t, float)
CAST_KERNEL(cast_f32_bf16, float, bfloat16_t)
CAST_KERNEL(cast_s32_f32, int32_t, float)
CAST_KERNEL(cast_f32_s32, float, int32_t)
CAST_KERNEL(cast_f32_f32, float, float)
CAST_KERNEL(cast_s16_f32, int16_t, float)
CAST_KERNEL(cast_s64_f32, int64_t, float)
CAST_KERNEL(cast_f32_s64, float, int64_t)
CAST_KERNEL(cast_s32_s64, int32_t, int64_t)
CAST_KERNEL(cast_s64_s32, int64_t, int32_t)
CAST_KERNEL(cast_s16_s32, int16_t, int32_t)
CAST_KERNEL(cast_f16_s32, half, int32_t)
CAST_KERNEL(cast_s32_f16, int32_t, half)
CAST_KERNEL(cast_s16_f16, int16_t, half)
CAST_KERNEL(cast_s8_f16, int8_t, half)
CAST_KERNEL(cast_u8_f16, uint8_t, half)
CAST_KERNEL(cast_f16_s16, half, int16_t)
CAST_KERNEL(cast_f32_s16, float, int16_t)
CAST_KERNEL(cast_f16_s8, half, int8_t)
CAST_KERNEL(cast_f16_u8, half, uint8_t)
CAST_KERNEL(cast_s32_bf16, int32_t, bfloat16_t)
#undef CAST_KERNEL

// ---- Compare (op 0) / Compares (op 1) / Select (op 2: tensor-tensor, op 3: tensor-scalar): extra = CMPMODE or
// SELMODE; Select's selMask is region B (uint8_t), src1 is region D's second half ----
template <typename T>
__aicore__ inline void CmpSelCase(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d) {
    const Prm p = LoadPrm(params);
    if (p.op <= 1) {
        WithRegions<uint8_t, T, T>(p, a, b, d, [&](LocalTensor<uint8_t>& dst, LocalTensor<T>& s0, LocalTensor<T>& s1, auto&) {
            const CMPMODE cm = (CMPMODE)p.extra;
            if (p.op == 0) {
                const BinaryRepeatParams bp((uint8_t)p.dstBlk, (uint8_t)p.s0Blk, (uint8_t)p.s1Blk, (uint8_t)p.dstRep,
                                            (uint8_t)p.s0Rep, (uint8_t)p.s1Rep);
                uint64_t m[2] = {p.mask0, p.mask1};
                if (p.form == 0) Compare(dst, s0, s1, cm, (uint32_t)p.count);
                else if (p.form == 1) Compare(dst, s0, s1, cm, m, (uint8_t)p.repeat, bp);
                else Compare(dst, s0, s1, cm, p.mask0, (uint8_t)p.repeat, bp);
            } else {
                const UnaryRepeatParams up((uint16_t)p.dstBlk, (uint16_t)p.s0Blk, (uint8_t)p.dstRep, (uint8_t)p.s0Rep);
                const T sc = ScalarOf<T>(p);
                uint64_t m[2] = {p.mask0, p.mask1};
                if (p.form == 0) Compares(dst, s0, sc, cm, (uint32_t)p.count);
                else if (p.form == 1) Compares(dst, s0, sc, cm, m, (uint8_t)p.repeat, up);
                else Compares(dst, s0, sc, cm, p.mask0, (uint8_t)p.repeat, up);
            }
        });
        return;
    }
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, float>) {
        WithRegions<T, T, uint8_t>(p, a, b, d, [&](LocalTensor<T>& dst, LocalTensor<T>& s0, LocalTensor<uint8_t>& sel, LocalTensor<T>& full) {
            const BinaryRepeatParams bp((uint8_t)p.dstBlk, (uint8_t)p.s0Blk, (uint8_t)p.s1Blk, (uint8_t)p.dstRep,
                                        (uint8_t)p.s0Rep, (uint8_t)p.s1Rep);
            const SELMODE sm = (SELMODE)p.extra;
            LocalTensor<T> s1 = full[(uint32_t)p.extra2];  // src1 lives in region A after src0
            s1.SetSize((uint32_t)p.extra3);
            uint64_t m[2] = {p.mask0, p.mask1};
            const T sc = ScalarOf<T>(p);
            if (p.op == 2) {
                if (p.form == 0) Select(dst, sel, s0, s1, sm, (uint32_t)p.count);
                else if (p.form == 1) Select(dst, sel, s0, s1, sm, m, (uint8_t)p.repeat, bp);
                else Select(dst, sel, s0, s1, sm, p.mask0, (uint8_t)p.repeat, bp);
            } else {
                if (p.form == 0) Select(dst, sel, s0, sc, sm, (uint32_t)p.count);
                else if (p.form == 1) Select(dst, sel, s0, sc, sm, m, (uint8_t)p.repeat, bp);
                else Select(dst, sel, s0, sc, sm, p.mask0, (uint8_t)p.repeat, bp);
            }
        });
    }
}

extern "C" __global__ __aicore__ void cmpsel_f32(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { CmpSelCase<float>(p, a, b, d); }
extern "C" __global__ __aicore__ void cmpsel_f16(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { CmpSelCase<half>(p, a, b, d); }
extern "C" __global__ __aicore__ void cmpsel_s32(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { CmpSelCase<int32_t>(p, a, b, d); }

// ---- Reductions: op selects the API; region B is the sharedTmpBuffer. mask form: form 1 = mask[], 2 = continuous,
// 3 = isSetMask=false with the register ----
template <typename T>
__aicore__ inline void ReduceCase(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d) {
    const Prm p = LoadPrm(params);
    WithRegions<T, T, T>(p, a, b, d, [&](LocalTensor<T>& dst, LocalTensor<T>& src, LocalTensor<T>& tmp, auto&) {
        uint64_t m[2] = {p.mask0, p.mask1};
        const int32_t mc = (int32_t)p.mask0;
        const int32_t rep = (int32_t)p.repeat, dR = (int32_t)p.dstRep, sB = (int32_t)p.s0Blk, sR = (int32_t)p.s0Rep;
        const ReduceOrder ord = (ReduceOrder)p.extra;
        const bool form1 = p.form == 1, form3 = p.form == 3;
        if (form3) SetVectorMask<T>(p.mask1, p.mask0);
        switch (p.op) {
            case 0:  // ReduceRepeat / WholeReduce*: extra2 = 0 new name, 1 old name; extra3 = ReduceType
                if (p.extra2 == 0) {
                    if (p.extra3 == 0) {
                        if (form1) ReduceRepeat<ReduceType::MAX>(dst, src, m, rep, dR, sB, sR, ord);
                        else if (form3) ReduceRepeat<ReduceType::MAX, T, T, false>(dst, src, m, rep, dR, sB, sR, ord);
                        else ReduceRepeat<ReduceType::MAX>(dst, src, mc, rep, dR, sB, sR, ord);
                    } else if (p.extra3 == 1) {
                        if (form1) ReduceRepeat<ReduceType::MIN>(dst, src, m, rep, dR, sB, sR, ord);
                        else ReduceRepeat<ReduceType::MIN>(dst, src, mc, rep, dR, sB, sR, ord);
                    } else {
                        if (form1) ReduceRepeat<ReduceType::SUM>(dst, src, m, rep, dR, sB, sR);
                        else ReduceRepeat<ReduceType::SUM>(dst, src, mc, rep, dR, sB, sR);
                    }
                } else {
                    if (p.extra3 == 0) {
                        if (form1) WholeReduceMax(dst, src, m, rep, dR, sB, sR, ord);
                        else WholeReduceMax(dst, src, mc, rep, dR, sB, sR, ord);
                    } else if (p.extra3 == 1) {
                        if (form1) WholeReduceMin(dst, src, m, rep, dR, sB, sR, ord);
                        else WholeReduceMin(dst, src, mc, rep, dR, sB, sR, ord);
                    } else {
                        if (form1) WholeReduceSum(dst, src, m, rep, dR, sB, sR);
                        else WholeReduceSum(dst, src, mc, rep, dR, sB, sR);
                    }
                }
                break;
            case 1:  // ReduceDataBlock / BlockReduce* (repeat before mask)
                if (p.extra2 == 0) {
                    if (p.extra3 == 0) {
                        if (form1) ReduceDataBlock<ReduceType::MAX>(dst, src, m, rep, dR, sB, sR);
                        else ReduceDataBlock<ReduceType::MAX>(dst, src, mc, rep, dR, sB, sR);
                    } else if (p.extra3 == 1) {
                        if (form1) ReduceDataBlock<ReduceType::MIN>(dst, src, m, rep, dR, sB, sR);
                        else ReduceDataBlock<ReduceType::MIN>(dst, src, mc, rep, dR, sB, sR);
                    } else {
                        if (form1) ReduceDataBlock<ReduceType::SUM>(dst, src, m, rep, dR, sB, sR);
                        else ReduceDataBlock<ReduceType::SUM>(dst, src, mc, rep, dR, sB, sR);
                    }
                } else {
                    if (p.extra3 == 0) {
                        if (form1) BlockReduceMax(dst, src, rep, m, dR, sB, sR);
                        else BlockReduceMax(dst, src, rep, mc, dR, sB, sR);
                    } else if (p.extra3 == 1) {
                        if (form1) BlockReduceMin(dst, src, rep, m, dR, sB, sR);
                        else BlockReduceMin(dst, src, rep, mc, dR, sB, sR);
                    } else {
                        if (form1) BlockReduceSum(dst, src, rep, m, dR, sB, sR);
                        else BlockReduceSum(dst, src, rep, mc, dR, sB, sR);
                    }
                }
                break;
            case 2:  // ReducePairElem / PairReduceSum
                if (p.extra2 == 0) {
                    if (form1) ReducePairElem<ReduceType::SUM>(dst, src, m, rep, dR, sB, sR);
                    else ReducePairElem<ReduceType::SUM>(dst, src, mc, rep, dR, sB, sR);
                } else {
                    if (form1) PairReduceSum(dst, src, rep, m, dR, sB, sR);
                    else PairReduceSum(dst, src, rep, mc, dR, sB, sR);
                }
                break;
            case 3:  // ReduceMax / ReduceMin / ReduceSum: extra3 = 0 max, 1 min, 2 sum; form 0 = count; extra = calIndex
                if (p.form == 0) {
                    if (p.extra3 == 0) ReduceMax(dst, src, tmp, (int32_t)p.count, p.extra != 0);
                    else if (p.extra3 == 1) ReduceMin(dst, src, tmp, (int32_t)p.count, p.extra != 0);
                    else ReduceSum(dst, src, tmp, (int32_t)p.count);
                } else if (form1) {
                    if (p.extra3 == 0) ReduceMax(dst, src, tmp, m, rep, sR, p.extra != 0);
                    else if (p.extra3 == 1) ReduceMin(dst, src, tmp, m, rep, sR, p.extra != 0);
                    else ReduceSum(dst, src, tmp, m, rep, sR);
                } else {
                    if (p.extra3 == 0) ReduceMax(dst, src, tmp, mc, rep, sR, p.extra != 0);
                    else if (p.extra3 == 1) ReduceMin(dst, src, tmp, mc, rep, sR, p.extra != 0);
                    else ReduceSum(dst, src, tmp, mc, rep, sR);
                }
                break;
            case 4: {  // Brcb: dstBlkStride, dstRepStride
                Brcb(dst, src, (uint8_t)p.repeat, BrcbRepeatParams((uint16_t)p.dstBlk, (uint16_t)p.dstRep));
                break;
            }
            default: break;
        }
        if (form3) ResetMask();
    });
}

extern "C" __global__ __aicore__ void reduce_f32(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { ReduceCase<float>(p, a, b, d); }
extern "C" __global__ __aicore__ void reduce_f16(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { ReduceCase<half>(p, a, b, d); }

// ---- misuse cases: each op triggers one error the twin must report ----
extern "C" __global__ __aicore__ void misuse(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d) {
    const Prm p = LoadPrm(params);
    if (p.op == 0) {  // vector API on the cube core of a mix launch
        if ASCEND_IS_AIC {
            LocalTensor<float> t;
            Add(t, t, t, 64);
        }
        return;
    }
    WithRegions<float, float, float>(p, a, b, d, [&](LocalTensor<float>& dst, LocalTensor<float>& s0, LocalTensor<float>& s1, auto&) {
        switch (p.op) {
            case 1: Add(dst, s0[3], s1, 64); break;                              // misaligned src0
            case 2: Add(dst, s0, s1, 64); break;                                 // footprint: lenA too small
            case 3: Add(dst, s0, s1, (uint64_t)64, (uint8_t)p.repeat, {1, 1, 1, 8, 8, 8}); break;  // footprint via repeats
            case 4: Exp(dst, s0, (uint64_t)64, 2, {1, 2, 8, 16}); break;         // footprint via block stride
            case 5: WholeReduceSum(dst, s0, 64, 256, 1, 1, 8); break;            // repeatTime > 255
#if defined(ASCEND_TWIN)
            case 6: {  // operand not in UB (a twin-internal way to make an L1-position tensor on the AIV)
                LocalTensor<float> l1;
                l1.Init(TPosition::A1, s0.Ptr(), 256);
                Add(dst, l1, s1, 64);
                break;
            }
#endif
            case 7: Add(dst, s0, s1, (uint64_t)64, 2, {0, 1, 1, 8, 8, 8}); break;  // dstBlkStride 0
            case 8: {  // int32 Compare supports only EQ
                LocalTensor<int32_t> i = s0.ReinterpretCast<int32_t>();
                Compare(dst.ReinterpretCast<uint8_t>(), i, i, CMPMODE::LT, 64);
                break;
            }
            case 9: Compare(dst.ReinterpretCast<uint8_t>(), s0, s1, CMPMODE::LT, 100); break;  // not 256 B
            case 10: Cast(dst.ReinterpretCast<bfloat16_t>(), s0, RoundMode::CAST_NONE, 64); break;
            case 11: Brcb(dst, s0, 2, BrcbRepeatParams(0, 8)); break;             // dstBlkStride 0
            case 12: ReduceMax(dst, s0, s1, 64, 4, 8, true); break;               // sharedTmpBuffer too small (lenB)
            case 13: Add(dst, s0, s1, -5); break;                                 // negative count
            default: break;
        }
    });
}
