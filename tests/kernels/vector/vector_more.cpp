// Test kernels for the vector APIs of tests/test_twin_vector_more.py: Copy, CreateVecIndex, the compound arithmetic
// (Axpy, FusedMulAdd, MulAddDst, MulAddRelu, FusedMulAddRelu, AddRelu, SubRelu, LeakyRelu), the bitwise APIs (And,
// Or, Not, ShiftLeft, ShiftRight), the CMPMASK register (Compare without dst, GetCmpMask, SetCmpMask, Select without
// a selMask tensor) and SetPadValue with DataCopyPad.
// The parameter block (struct Prm) and the three UB regions come from region_harness.h.
#include <type_traits>

#include "region_harness.h"

// Copies the mask register (low, high, counter mode) to the start of region D as uint64 when extra3 = 1, so tests
// can see what an API left in it.
// (twin only: the register is not readable through the API.)
template <typename T>
__aicore__ inline void DumpMaskRegister(const Prm& p, LocalTensor<T>& whole) {
#if defined(ASCEND_TWIN)
    if (p.extra3 == 1) {
        LocalTensor<uint64_t> w = whole.template ReinterpretCast<uint64_t>();
        w.SetValue(0, twin::Cur().maskReg[0]);
        w.SetValue(1, twin::Cur().maskReg[1]);
        w.SetValue(2, twin::Cur().counterMode ? 1 : 0);
    }
#else
    (void)p;
    (void)whole;
#endif
}

// ---- same-type APIs, T = region type ----
template <typename T>
__aicore__ inline void MoreCase(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d) {
    const Prm p = LoadPrm(params);
    WithRegions<T, T, T>(p, a, b, d, [&](LocalTensor<T>& dst, LocalTensor<T>& s0, LocalTensor<T>& s1,
                                         LocalTensor<T>&, LocalTensor<T>&, LocalTensor<T>& wholeD) {
        const BinaryRepeatParams bp = BinaryParamsOf(p);
        const UnaryRepeatParams up = UnaryParamsOf(p);
        const uint8_t rep = (uint8_t)p.repeat;
        const int32_t cnt = (int32_t)p.count;
        const T sc = ScalarOf<T>(p);
        constexpr bool isFloat = kFloatArith<T>;
        constexpr bool is16 = std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t>;
        constexpr bool isInt = std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t> ||
                               std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>;
#define TER(NAME)                                                                                                 \
    Forms<T>(p, [&](auto s, auto m) { NAME<T, decltype(s)::value>(dst, s0, s1, m, rep, bp); },                     \
             [&]() { NAME<T>(dst, s0, s1, cnt); })
        switch (p.op) {
            case 0:  // Copy (level 0 only)
                if constexpr (!std::is_same_v<T, int8_t>) {
                    const CopyRepeatParams cp((uint16_t)p.dstBlk, (uint16_t)p.s0Blk, (uint16_t)p.dstRep,
                                              (uint16_t)p.s0Rep);
                    Forms<T>(p, [&](auto s, auto m) { Copy<T, decltype(s)::value>(dst, s0, m, rep, cp); }, [&]() {});
                }
                break;
            case 1:  // CreateVecIndex: form 0 count, 1 mask[], 2 continuous
                if constexpr (std::is_same_v<T, int16_t> || std::is_same_v<T, int32_t> || std::is_same_v<T, half> ||
                              std::is_same_v<T, float>) {
                    uint64_t m[2] = {p.mask0, p.mask1};
                    if (p.extra2 == 1) SetMaskCount();  // misuse case
                    if (p.form == 0) CreateVecIndex(dst, sc, (uint32_t)p.count);
                    else if (p.form == 1) CreateVecIndex(dst, sc, m, rep, (uint16_t)p.dstBlk, (uint8_t)p.dstRep);
                    else CreateVecIndex(dst, sc, p.mask0, rep, (uint16_t)p.dstBlk, (uint8_t)p.dstRep);
                    DumpMaskRegister(p, wholeD);
                    if (p.extra2 == 1) SetMaskNorm();
                }
                break;
            case 2:  // Axpy, same type
                if constexpr (isFloat) {
                    Forms<T>(p, [&](auto s, auto m) { Axpy<T, T, decltype(s)::value>(dst, s0, sc, m, rep, up); },
                             [&]() { Axpy<T, T>(dst, s0, sc, cnt); });
                }
                break;
            case 3:
                if constexpr (isFloat) TER(FusedMulAdd);
                break;
            case 4:
                if constexpr (isFloat) {
                    Forms<T>(p, [&](auto s, auto m) { MulAddDst<T, T, decltype(s)::value>(dst, s0, s1, m, rep, bp); },
                             [&]() { MulAddDst<T, T>(dst, s0, s1, cnt); });
                }
                break;
            case 5:
                if constexpr (isFloat || std::is_same_v<T, int16_t>) TER(AddRelu);
                break;
            case 6:
                if constexpr (isFloat || std::is_same_v<T, int16_t>) TER(SubRelu);
                break;
            case 7:
                if constexpr (isFloat) TER(MulAddRelu);
                break;
            case 8:
                if constexpr (isFloat) TER(FusedMulAddRelu);
                break;
            case 9:  // LeakyRelu; form 8: count form with isSetMask = false under counter mode
                if constexpr (isFloat) {
                    if (p.form == 8) {
                        SetMaskCount();
                        SetVectorMask<T, MaskMode::COUNTER>(cnt);
                        LeakyRelu<T, false>(dst, s0, sc, 1);
                        SetMaskNorm();
                        ResetMask();
                    } else {
                        Forms<T>(p, [&](auto s, auto m) { LeakyRelu<T, decltype(s)::value>(dst, s0, sc, m, rep, up); },
                                 [&]() { LeakyRelu<T>(dst, s0, sc, cnt); });
                    }
                }
                break;
            case 10:
                if constexpr (is16) TER(And);
                else if constexpr (isInt) And(dst, s0, s1, cnt);  // 32-bit count form: count = 16-bit halves
                break;
            case 11:
                if constexpr (is16) TER(Or);
                else if constexpr (isInt) Or(dst, s0, s1, cnt);
                break;
            case 12:
                if constexpr (is16) {
                    Forms<T>(p, [&](auto s, auto m) { Not<T, decltype(s)::value>(dst, s0, m, rep, up); },
                             [&]() { Not<T>(dst, s0, cnt); });
                }
                break;
            case 13:  // ShiftLeft; form 8 as for LeakyRelu
                if constexpr (isInt) {
                    if (p.form == 8) {
                        SetMaskCount();
                        SetVectorMask<T, MaskMode::COUNTER>(cnt);
                        ShiftLeft<T, false>(dst, s0, sc, 1);
                        SetMaskNorm();
                        ResetMask();
                    } else {
                        Forms<T>(p, [&](auto s, auto m) { ShiftLeft<T, decltype(s)::value>(dst, s0, sc, m, rep, up); },
                                 [&]() { ShiftLeft<T>(dst, s0, sc, cnt); });
                    }
                }
                break;
            case 14:  // ShiftRight; extra = roundEn (level 0 only)
                if constexpr (isInt) {
                    const bool rnd = p.extra != 0;
                    Forms<T>(p, [&](auto s, auto m) { ShiftRight<T, decltype(s)::value>(dst, s0, sc, m, rep, up, rnd); },
                             [&]() { ShiftRight<T>(dst, s0, sc, cnt); });
                }
                break;
            default: break;
        }
#undef TER
    });
}

#define MORE_KERNEL(NAME, T) \
    extern "C" __global__ __aicore__ void NAME(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { MoreCase<T>(p, a, b, d); }
MORE_KERNEL(more_f32, float)
MORE_KERNEL(more_f16, half)
MORE_KERNEL(more_bf16, bfloat16_t)
MORE_KERNEL(more_s16, int16_t)
MORE_KERNEL(more_u16, uint16_t)
MORE_KERNEL(more_s32, int32_t)
MORE_KERNEL(more_u32, uint32_t)
#undef MORE_KERNEL

// ---- float dst, half sources: Axpy (op 2) and MulAddDst (op 4) ----
extern "C" __global__ __aicore__ void mixed_f32_f16(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d) {
    const Prm p = LoadPrm(params);
    WithRegions<float, half, half>(p, a, b, d, [&](LocalTensor<float>& dst, LocalTensor<half>& s0,
                                                   LocalTensor<half>& s1, LocalTensor<half>&, LocalTensor<half>&,
                                                   LocalTensor<float>&) {
        const BinaryRepeatParams bp = BinaryParamsOf(p);
        const UnaryRepeatParams up = UnaryParamsOf(p);
        const uint8_t rep = (uint8_t)p.repeat;
        const int32_t cnt = (int32_t)p.count;
        const half sc = ScalarOf<half>(p);
        if (p.op == 2) {
            Forms<float>(p, [&](auto s, auto m) { Axpy<float, half, decltype(s)::value>(dst, s0, sc, m, rep, up); },
                         [&]() { Axpy<float, half>(dst, s0, sc, cnt); });
        } else if (p.op == 4) {
            Forms<float>(p, [&](auto s, auto m) { MulAddDst<float, half, decltype(s)::value>(dst, s0, s1, m, rep, bp); },
                         [&]() { MulAddDst<float, half>(dst, s0, s1, cnt); });
        } else if (p.op == 5) {  // overlap misuse: dst aliases src0's bytes
            LocalTensor<float> alias = s0.ReinterpretCast<float>();
            Axpy<float, half>(alias, s0, sc, cnt);
        }
    });
}

// ---- CMPMASK register: T = half / float. Region D is read as uint8_t for GetCmpMask (ops 0, 4). ----
// op 0: Compare(src0, src1) -> GetCmpMask(dst)
// op 1: SetCmpMask(B) then Select<T, VSEL_CMPMASK_SPR>(dst, src0, src1 = A[extra2]) under the form's mask register
// op 2: SetCmpMask(B: pointer / address of the selMask at B[64 B]) then Select<T, VSEL_TENSOR_TENSOR_MODE>
// op 3: SetCmpMask(A[extra2]: the scalar) then Select<T, U>(dst, selMask = B, src0) (mode 1)
// op 4: tensor Select (extra = SELMODE) then GetCmpMask(dst)
// op 5: Compare(src0, src1) with a full mask, then Select<T, VSEL_CMPMASK_SPR> with the result
// op 6..9: misuse cases
template <typename T>
__aicore__ inline void CmpMaskCase(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d) {
    const Prm p = LoadPrm(params);
    if (p.op == 0 || p.op == 4 || p.op == 6 || p.op == 9) {
        WithRegions<uint8_t, T, uint8_t>(p, a, b, d, [&](LocalTensor<uint8_t>& dst, LocalTensor<T>& s0,
                                                         LocalTensor<uint8_t>& sel, LocalTensor<T>& wholeA,
                                                         LocalTensor<uint8_t>&, LocalTensor<uint8_t>&) {
            const BinaryRepeatParams bp = BinaryParamsOf(p);
            LocalTensor<T> s1 = wholeA[(uint32_t)p.extra2];
            s1.SetSize((uint32_t)p.extra3);
            uint64_t m[2] = {p.mask0, p.mask1};
            if (p.op == 0) {
                if (p.form == 1) Compare(s0, s1, (CMPMODE)p.extra, m, bp);
                else if (p.form == 2) Compare(s0, s1, (CMPMODE)p.extra, p.mask0, bp);
                else {
                    SetVectorMask<T>(p.mask1, p.mask0);
                    Compare<T, false>(s0, s1, (CMPMODE)p.extra, MASK_PLACEHOLDER, bp);
                    ResetMask();
                }
                PipeBarrier<PIPE_V>();
                GetCmpMask(dst);
            } else if (p.op == 4) {
                LocalTensor<T> out = wholeA[(uint32_t)p.count];
                const SELMODE sm = (SELMODE)p.extra;
                if (sm == SELMODE::VSEL_TENSOR_SCALAR_MODE) Select(out, sel, s0, ScalarOf<T>(p), sm, m, 1, bp);
                else Select(out, sel, s0, s1, sm, m, 1, bp);
                PipeBarrier<PIPE_V>();
                GetCmpMask(dst);
            } else if (p.op == 6) {  // GetCmpMask before anything wrote CMPMASK
                GetCmpMask(dst);
            } else {  // op 9: SetCmpMask from a misaligned address
                SetCmpMask(dst[8]);
            }
        });
        return;
    }
    WithRegions<T, T, uint8_t>(p, a, b, d, [&](LocalTensor<T>& dst, LocalTensor<T>& s0, LocalTensor<uint8_t>& sel,
                                               LocalTensor<T>& wholeA, LocalTensor<uint8_t>& wholeB, LocalTensor<T>&) {
        const BinaryRepeatParams bp = BinaryParamsOf(p);
        LocalTensor<T> s1 = wholeA[(uint32_t)p.extra2];
        s1.SetSize((uint32_t)p.extra3);
        const uint8_t rep = (uint8_t)p.repeat;
        // the mask register for the register-form Selects: 3 = bits, 4 = counter mode, 6 = continuous
        auto withMask = [&](auto call) {
            if (p.form == 4) {
                SetMaskCount();
                SetVectorMask<T, MaskMode::COUNTER>((int32_t)p.count);
                call();
                SetMaskNorm();
                ResetMask();
            } else if (p.form == 6) {
                SetVectorMask<T>((int32_t)p.mask0);
                call();
                ResetMask();
            } else {
                SetVectorMask<T>(p.mask1, p.mask0);
                call();
                ResetMask();
            }
        };
        switch (p.op) {
            case 1:
                SetCmpMask(sel);
                PipeBarrier<PIPE_V>();
                withMask([&]() { Select<T, SELMODE::VSEL_CMPMASK_SPR>(dst, s0, s1, rep, bp); });
                break;
            case 2: {
                // CMPMASK = address of the selMask at wholeB[64] (the NPU stores the UB address as uint32_t, the CPU
                // debug build a pointer); extra: 0 = pointer form (twin), 1 = UB byte address form (twin)
                LocalTensor<uint8_t> selAt = wholeB[64];
#if defined(ASCEND_TWIN)
                LocalTensor<uint64_t> cell = wholeB.ReinterpretCast<uint64_t>();
                if (p.extra == 0) {
                    cell.SetValue(0, (uint64_t)(uintptr_t)selAt.GetPhyAddr());
                } else {
                    const uint64_t ub = (uint64_t)selAt.Addr("test");
                    cell.SetValue(0, ub | (ub << 32));
                }
                cell.SetValue(1, 0);
                SetFlag<HardEvent::S_V>(EVENT_ID1);
                WaitFlag<HardEvent::S_V>(EVENT_ID1);
#else
                const uint32_t selAddr = (uint32_t)reinterpret_cast<uint64_t>(selAt.GetPhyAddr());
                SetVectorMask<uint32_t>(32);
                Duplicate<uint32_t, false>(wholeB.ReinterpretCast<uint32_t>(), selAddr, MASK_PLACEHOLDER, 1, 1, 8);
                ResetMask();
                PipeBarrier<PIPE_V>();
#endif
                SetCmpMask(wholeB);
                PipeBarrier<PIPE_V>();
                withMask([&]() { Select<T, SELMODE::VSEL_TENSOR_TENSOR_MODE>(dst, s0, s1, rep, bp); });
                break;
            }
            case 3:
                SetCmpMask(s1);
                PipeBarrier<PIPE_V>();
                withMask([&]() { Select(dst, sel, s0, rep, bp); });
                break;
            case 5: {  // Compare with a full mask (src strides from the parameters), then Select with its result
                uint64_t m[2] = {~0ull, ~0ull};
                Compare(s0, s1, (CMPMODE)p.extra, m, bp);
                PipeBarrier<PIPE_V>();
                withMask([&]() { Select<T, SELMODE::VSEL_CMPMASK_SPR>(dst, s0, s1, rep, bp); });
                break;
            }
            case 7:  // Select reading CMPMASK before anything wrote it
                withMask([&]() { Select<T, SELMODE::VSEL_CMPMASK_SPR>(dst, s0, s1, rep, bp); });
                break;
            case 8:  // the register form does nothing for mode 1 on the NPU
                SetCmpMask(sel);
                Select<T, SELMODE::VSEL_TENSOR_SCALAR_MODE>(dst, s0, s1, rep, bp);
                break;
            default: break;
        }
    });
}

extern "C" __global__ __aicore__ void cmpmask_f32(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { CmpMaskCase<float>(p, a, b, d); }
extern "C" __global__ __aicore__ void cmpmask_f16(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { CmpMaskCase<half>(p, a, b, d); }

// ---- SetPadValue + DataCopyPad GM -> UB (isPad = false). params: count = blockCount, repeat = blockLen (bytes),
// dstRep = dstStride (blocks), s0Rep = srcStride (bytes), mask0 = leftPadding, mask1 = rightPadding,
// extra: 0 no SetPadValue, 1 SetPadValue(scalar), 2 an isPad = true call with the scalar first, then isPad = false;
// extra2: 1 = SetPadValue on the cube core of a mix launch (a no-op there). ----
template <typename T>
__aicore__ inline void PadCase(GM_ADDR params, GM_ADDR src, GM_ADDR out) {
    const Prm p = LoadPrm(params);
    if (p.extra2 == 1) {
        if ASCEND_IS_AIC {
            SetPadValue(ScalarOf<T>(p));
        }
        return;
    }
    TPipe pipe;
    TBuf<TPosition::VECIN> buf;
    pipe.InitBuffer(buf, kRegion);
    LocalTensor<T> ub = buf.Get<T>();
    GlobalTensor<T> gs, go;
    gs.SetGlobalBuffer((__gm__ T*)src, (uint32_t)(p.gA / sizeof(T)));
    go.SetGlobalBuffer((__gm__ T*)out, (uint32_t)(p.gD / sizeof(T)));
    const DataCopyExtParams cp((uint16_t)p.count, (uint32_t)p.repeat, (uint32_t)p.s0Rep, (uint32_t)p.dstRep, 0);
    const T v = ScalarOf<T>(p);
    if (p.extra == 1) SetPadValue(v);
    if (p.extra == 2) {
        const DataCopyPadExtParams<T> first(true, (uint8_t)p.mask0, (uint8_t)p.mask1, v);
        DataCopyPad(ub, gs, cp, first);
        PipeBarrier<PIPE_MTE2>();  // the second copy writes the same UB bytes on the same pipe
    }
    const DataCopyPadExtParams<T> pad(false, (uint8_t)p.mask0, (uint8_t)p.mask1, T(0));
    DataCopyPad(ub, gs, cp, pad);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(go, ub, (uint32_t)(p.gD / sizeof(T)));
}

extern "C" __global__ __aicore__ void pad_f16(GM_ADDR p, GM_ADDR s, GM_ADDR o) { PadCase<half>(p, s, o); }
extern "C" __global__ __aicore__ void pad_f32(GM_ADDR p, GM_ADDR s, GM_ADDR o) { PadCase<float>(p, s, o); }
extern "C" __global__ __aicore__ void pad_s8(GM_ADDR p, GM_ADDR s, GM_ADDR o) { PadCase<int8_t>(p, s, o); }

// ---- misuse cases of the added APIs: each op triggers one error the twin must report ----
extern "C" __global__ __aicore__ void more_misuse(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d) {
    const Prm p = LoadPrm(params);
    if (p.op == 0) {
        OnTheCubeCore([](LocalTensor<float>& t) { FusedMulAdd(t, t, t, 64); });
        return;
    }
    WithRegions<float, float, float>(p, a, b, d, [&](LocalTensor<float>& dst, LocalTensor<float>& s0,
                                                     LocalTensor<float>& s1, LocalTensor<float>&, LocalTensor<float>&,
                                                     LocalTensor<float>&) {
        LocalTensor<int16_t> i0 = s0.ReinterpretCast<int16_t>();
        LocalTensor<int16_t> id = dst.ReinterpretCast<int16_t>();
        switch (p.op) {
            case 1: Copy(dst, s0[3], (uint64_t)64, 1, {1, 1, 8, 8}); break;                 // misaligned src
            case 2: Copy(dst, s0, (uint64_t)64, 2, {1, 1, 8, 4096}); break;                // srcRepeatSize > 4095
            case 3: Copy(dst, s0, (uint64_t)64, 4, {1, 1, 8, 8}); break;                   // footprint (lenA)
            case 4: Copy(dst, s0, (uint64_t)64, 2, {0, 1, 8, 8}); break;                   // dstStride 0
            case 5: CreateVecIndex(dst, 0.0f, (uint64_t)5, 2, 1, 8); break;                 // mask < one block
            case 6: CreateVecIndex(dst, 0.0f, (uint64_t)100, 1, 1, 8); break;               // mask > one repeat
            case 7: ShiftLeft(id, i0, (int16_t)17, 128); break;                            // shift > 16
            case 8: ShiftRight(id, i0, (int16_t)-1, 128); break;                           // shift < 0
            case 9: FusedMulAdd(dst, s0, s1, (uint64_t)64, 2, {1, 1, 1, 8, 8, 8}); break;   // footprint (lenB)
            case 10: {  // Copy counter mode: 100 elements per repeat, 2 repeats, dstStride 0
                SetMaskCount();
                SetVectorMask<float, MaskMode::COUNTER>(100);
                Copy<float, false>(dst, s0, MASK_PLACEHOLDER, 2, {0, 1, 8, 8});
                SetMaskNorm();
                break;
            }
            case 11: Compare(s0, s1, CMPMODE::LT, (uint64_t)64, {1, 1, 1, 8, 8, 8}); break;  // footprint (lenB)
            default: break;
        }
    });
}

// ---- hazard detector: each op uses the block DataCopy just filled, without the MTE2 -> V flag ----
extern "C" __global__ __aicore__ void no_sync(GM_ADDR params, GM_ADDR a) {
    const Prm p = LoadPrm(params);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * 4096);
    LocalTensor<float> A = buf.Get<float>();
    LocalTensor<float> D = A[1024];
    A.SetSize(1024);
    GlobalTensor<float> ga;
    ga.SetGlobalBuffer((__gm__ float*)a, 1024);
    DataCopy(A, ga, 1024);
    LocalTensor<int16_t> a16 = A.ReinterpretCast<int16_t>();
    switch (p.op) {
        case 0: Copy(D, A, (uint64_t)64, 1, {1, 1, 8, 8}); break;
        case 1: CreateVecIndex(A, 0.0f, (uint32_t)64); break;
        case 2: FusedMulAdd(D, A, A, 64); break;
        case 3: Compare(A, A[64], CMPMODE::LT, (uint64_t)64, {1, 1, 1, 8, 8, 8}); break;
        case 4: SetCmpMask(A); break;
        case 5: And(a16, a16, a16, 128); break;
        default: break;
    }
}

// ---- Gather (op 0; region B = uint32_t byte offsets, extra = srcBaseOffset, dstRep = dstRepStride; forms 0 count,
// 1 mask[], 2 continuous) and GatherMask (op 1: pattern tensor = region B, op 2: built-in pattern = extra;
// extra2 = reduceMode, mask0 = mask, repeat = repeatTimes, s0Blk / s0Rep / s1Rep = GatherMaskParams).
// Region D's last 32 bytes receive rsvdCnt and (twin) the mask register: low, high, counter mode. ----
template <typename T>
__aicore__ inline void GatherCase(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d) {
    const Prm p = LoadPrm(params);
    WithRegions<T, T, uint8_t>(p, a, b, d, [&](LocalTensor<T>& dst, LocalTensor<T>& src, LocalTensor<uint8_t>& bb,
                                               LocalTensor<T>&, LocalTensor<uint8_t>&, LocalTensor<T>& wholeD) {
        LocalTensor<uint64_t> tail = wholeD[kRegion / sizeof(T) - 32 / sizeof(T)].template ReinterpretCast<uint64_t>();
        if (p.op == 0) {
            LocalTensor<uint32_t> offs = bb.ReinterpretCast<uint32_t>();
            uint64_t m[2] = {p.mask0, p.mask1};
            const uint32_t base = (uint32_t)p.extra;
            if (p.form == 0) Gather(dst, src, offs, base, (uint32_t)p.count);
            else if (p.form == 1) Gather(dst, src, offs, base, m, (uint8_t)p.repeat, (uint16_t)p.dstRep);
            else Gather(dst, src, offs, base, p.mask0, (uint8_t)p.repeat, (uint16_t)p.dstRep);
        } else {
            const GatherMaskParams gp((uint8_t)p.s0Blk, (uint16_t)p.repeat, (uint16_t)p.s0Rep, (uint8_t)p.s1Rep);
            uint64_t cnt = 0;
            if (p.op == 1) {
                if constexpr (sizeof(T) == 2) {
                    GatherMask(dst, src, bb.ReinterpretCast<uint16_t>(), p.extra2 != 0, (uint32_t)p.mask0, gp, cnt);
                } else {
                    GatherMask(dst, src, bb.ReinterpretCast<uint32_t>(), p.extra2 != 0, (uint32_t)p.mask0, gp, cnt);
                }
            } else {
                GatherMask(dst, src, (uint8_t)p.extra, p.extra2 != 0, (uint32_t)p.mask0, gp, cnt);
            }
            tail.SetValue(0, cnt);
        }
#if defined(ASCEND_TWIN)
        tail.SetValue(1, twin::Cur().maskReg[0]);
        tail.SetValue(2, twin::Cur().maskReg[1]);
        tail.SetValue(3, twin::Cur().counterMode ? 1 : 0);
#endif
    });
}

extern "C" __global__ __aicore__ void gather_f16(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { GatherCase<half>(p, a, b, d); }
extern "C" __global__ __aicore__ void gather_f32(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { GatherCase<float>(p, a, b, d); }
extern "C" __global__ __aicore__ void gather_bf16(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { GatherCase<bfloat16_t>(p, a, b, d); }

// ---- composition: indices of the elements above a threshold (CreateVecIndex + Compares + GatherMask in counter
// mode over the whole row). params: count = n (a multiple of 64, <= 4096), scalarBits = threshold (float); out =
// [number of indices (int32), pad to 8 elements, indices...] ----
extern "C" __global__ __aicore__ void indices_above(GM_ADDR params, GM_ADDR x, GM_ADDR out) {
    const Prm p = LoadPrm(params);
    const uint32_t n = (uint32_t)p.count;
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bi, bm, bo;
    pipe.InitBuffer(bx, 4096 * sizeof(float));
    pipe.InitBuffer(bi, 4096 * sizeof(int32_t));
    pipe.InitBuffer(bm, 4096 / 8);
    pipe.InitBuffer(bo, (4096 + 8) * sizeof(int32_t));
    LocalTensor<float> xs = bx.Get<float>();
    LocalTensor<int32_t> idx = bi.Get<int32_t>();
    LocalTensor<uint8_t> m = bm.Get<uint8_t>();
    LocalTensor<int32_t> o = bo.Get<int32_t>();
    GlobalTensor<float> gx;
    GlobalTensor<int32_t> go;
    gx.SetGlobalBuffer((__gm__ float*)x, n);
    go.SetGlobalBuffer((__gm__ int32_t*)out, n + 8);
    DataCopy(xs, gx, n);
    CreateVecIndex(idx, (int32_t)0, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Compares(m, xs, ScalarOf<float>(p), CMPMODE::GT, n);
    PipeBarrier<PIPE_V>();
    uint64_t kept = 0;
    LocalTensor<int32_t> dst = o[8];
    GatherMask(dst, idx, m.ReinterpretCast<uint32_t>(), true, n, {1, 1, 8, 0}, kept);
    SetFlag<HardEvent::V_S>(EVENT_ID0);
    WaitFlag<HardEvent::V_S>(EVENT_ID0);
    o.SetValue(0, (int32_t)kept);
    SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(go, o, n + 8);
}
