// Test kernels for the twin's vector unit (tests/test_twin_vector.py). The GM parameter block (struct Prm) selects
// the API, the call form (count / mask[] / continuous mask / mask register / counter mode), the mask, repeats,
// strides and tensor offsets; the parameter block and the three UB regions (src0, src1, dst) come from
// region_harness.h.
#include <type_traits>

#include "region_harness.h"

// Forms plus form 7: counter mode with the continuous form (a misuse the twin reports).
template <typename T, class L0, class Cnt>
__aicore__ inline void ApiForms(const Prm& p, L0 l0, Cnt cnt) {
    if (p.form == 7) {
        SetMaskCount();
        l0(IsSetMask<true>{}, (uint64_t)p.mask0);
        SetMaskNorm();
        return;
    }
    Forms<T>(p, l0, cnt);
}

template <typename T>
__aicore__ inline void ArithCase(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d) {
    const Prm p = LoadPrm(params);
    WithRegions<T, T, T>(p, a, b, d, [&](LocalTensor<T>& dst, LocalTensor<T>& s0, LocalTensor<T>& s1, auto&...) {
        const BinaryRepeatParams bp = BinaryParamsOf(p);
        const UnaryRepeatParams up = UnaryParamsOf(p);
        const uint8_t rep = (uint8_t)p.repeat;
        const int32_t cnt = (int32_t)p.count;
        const T sc = ScalarOf<T>(p);
        constexpr bool isBf16 = std::is_same_v<T, bfloat16_t>;
        constexpr bool isFloat = kFloatArith<T>;
        constexpr bool isArith = !std::is_same_v<T, uint16_t> && !std::is_same_v<T, uint32_t> && (!isBf16 || kTwin);
#define BIN(NAME)                                                                                                 \
    ApiForms<T>(p, [&](auto s, auto m) { NAME<T, decltype(s)::value>(dst, s0, s1, m, rep, bp); },                 \
                [&]() { NAME<T>(dst, s0, s1, cnt); })
#define SCL(NAME)                                                                                                 \
    if (p.form == 8) {                                                                                            \
        SetMaskCount();                                                                                           \
        SetVectorMask<T, MaskMode::COUNTER>(cnt);                                                                 \
        NAME<T, false>(dst, s0, sc, 1);                                                                           \
        SetMaskNorm();                                                                                            \
        ResetMask();                                                                                              \
    } else {                                                                                                      \
        ApiForms<T>(p, [&](auto s, auto m) { NAME<T, decltype(s)::value>(dst, s0, sc, m, rep, up); },             \
                    [&]() { NAME<T>(dst, s0, sc, cnt); });                                                        \
    }
#define UN(NAME)                                                                                                  \
    ApiForms<T>(p, [&](auto s, auto m) { NAME<T, decltype(s)::value>(dst, s0, m, rep, up); },                     \
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
            ApiForms<T>(p, [&](auto s, auto m) { Duplicate<T, decltype(s)::value>(dst, sc, m, rep, (uint16_t)p.dstBlk, (uint8_t)p.dstRep); },
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
    WithRegions<TD, TS, TS>(p, a, b, d, [&](LocalTensor<TD>& dst, LocalTensor<TS>& src, LocalTensor<TS>&, auto&...) {
        const UnaryRepeatParams up = UnaryParamsOf(p);
        const RoundMode mode = (RoundMode)p.extra;
        if constexpr (std::is_same_v<TD, half> && std::is_same_v<TS, int32_t>) {
            SetDeqScale(ScalarOf<half>(p));
        }
        ApiForms<TD>(p, [&](auto s, auto m) { Cast<TD, TS, decltype(s)::value>(dst, src, mode, m, (uint8_t)p.repeat, up); },
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
        WithRegions<uint8_t, T, T>(p, a, b, d, [&](LocalTensor<uint8_t>& dst, LocalTensor<T>& s0, LocalTensor<T>& s1, auto&...) {
            const CMPMODE cm = (CMPMODE)p.extra;
            if (p.op == 0) {
                const BinaryRepeatParams bp = BinaryParamsOf(p);
                uint64_t m[2] = {p.mask0, p.mask1};
                if (p.form == 0) Compare(dst, s0, s1, cm, (uint32_t)p.count);
                else if (p.form == 1) Compare(dst, s0, s1, cm, m, (uint8_t)p.repeat, bp);
                else Compare(dst, s0, s1, cm, p.mask0, (uint8_t)p.repeat, bp);
            } else {
                const UnaryRepeatParams up = UnaryParamsOf(p);
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
        WithRegions<T, T, uint8_t>(p, a, b, d, [&](LocalTensor<T>& dst, LocalTensor<T>& s0, LocalTensor<uint8_t>& sel,
                                                   LocalTensor<T>& full, auto&...) {
            const BinaryRepeatParams bp = BinaryParamsOf(p);
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
    WithRegions<T, T, T>(p, a, b, d, [&](LocalTensor<T>& dst, LocalTensor<T>& src, LocalTensor<T>& tmp, auto&...) {
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
    if (p.op == 0) {
        OnTheCubeCore([](LocalTensor<float>& t) { Add(t, t, t, 64); });
        return;
    }
    WithRegions<float, float, float>(p, a, b, d, [&](LocalTensor<float>& dst, LocalTensor<float>& s0, LocalTensor<float>& s1, auto&...) {
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
