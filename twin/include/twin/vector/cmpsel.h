// Compare / Compares (bit-mask output, 1 bit per element, little-endian bit order in uint8_t bytes) and Select
// (a 1 bit selects src0, a 0 bit src1), dav-2201 semantics:
// - Compare/Compares: the mask argument is reserved on A2 (no effect); every repeat compares all 256 B of the
//   sources and writes its E bits right after the previous repeat's (dst strides do not apply). The count forms
//   need count * sizeof(T) to be a multiple of 256 B (the NPU silently drops the rest; the twin refuses).
//   T: half and float (all CMPMODEs), int32_t (EQ only).
// - Select: modes VSEL_CMPMASK_SPR (0: the first E bits of selMask are reused by every repeat),
//   VSEL_TENSOR_SCALAR_MODE (1: src1 is a scalar) and VSEL_TENSOR_TENSOR_MODE (2); in modes 1 and 2 repeat r
//   consumes bits [r*E, (r+1)*E) of selMask. The level-0 mask filters which dst elements are written. Modes 1 and
//   2 stage a 32-element vector in the reserved top 8 KB of UB (TMP_UB_OFFSET), as the real implementation does.
#pragma once
#include "twin/vector/engine.h"

namespace twin {
namespace vec {

template <typename C>
inline bool CmpOne(AscendC::CMPMODE m, C a, C b) {
    switch (m) {
        case AscendC::CMPMODE::LT: return a < b;
        case AscendC::CMPMODE::GT: return a > b;
        case AscendC::CMPMODE::EQ: return a == b;
        case AscendC::CMPMODE::LE: return a <= b;
        case AscendC::CMPMODE::GE: return a >= b;
        default: return a != b;
    }
}

inline const char* CmpModeName(AscendC::CMPMODE m) {
    static const char* n[] = {"LT", "GT", "EQ", "LE", "GE", "NE"};
    return (int)m < 6 ? n[(int)m] : "?";
}

template <typename T>
inline void CheckCmpMode(const char* api, AscendC::CMPMODE m) {
    if ((int)m > 5) Fail(api, "cmpMode %d is not a CMPMODE", (int)m);
    if constexpr (std::is_same_v<T, int32_t>) {
        if (m != AscendC::CMPMODE::EQ) {
            Fail(api, "int32_t supports only CMPMODE::EQ on dav-2201, got CMPMODE::%s", CmpModeName(m));
        }
    }
}

// Packs comparison bits of n elements (n and logicalIndex multiples of 8) into dst bytes.
template <typename T, class GetB>
inline void CmpPack(uint8_t* dstBase, const T* a, GetB getB, uint64_t n, uint64_t logical, AscendC::CMPMODE m) {
    using L = Lane<T>;
    using C = typename L::C;
    alignas(64) C xa[kChunk], xb[kChunk];
    for (uint64_t i = 0; i < n; i += kChunk) {
        const uint32_t k = (uint32_t)std::min<uint64_t>(kChunk, n - i);
        L::Load(xa, a + i, k);
        getB(xb, i, k);
        for (uint32_t j = 0; j < k; j += 8) {
            uint8_t byte = 0;
            for (uint32_t t = 0; t < 8; ++t) byte |= (uint8_t)(CmpOne<C>(m, xa[j + t], xb[j + t]) ? 1u : 0u) << t;
            dstBase[(logical + i + j) / 8] = byte;
        }
    }
}

template <typename T, typename U>
inline void CompareRun(const char* api, const AscendC::LocalTensor<U>& dst, const AscendC::LocalTensor<T>& s0,
                       const AscendC::LocalTensor<T>* s1, const T* scalar, AscendC::CMPMODE cmpMode, uint64_t repeat,
                       uint32_t blk0, uint32_t rep0, uint32_t blk1, uint32_t rep1) {
    CheckCmpMode<T>(api, cmpMode);
    Exec x;  // the mask has no effect on A2: full repeats
    x.perRep = 256 / sizeof(T);
    x.repeats = repeat;
    x.bits[0] = x.bits[1] = kFullMask;
    ClipBits(x.bits, x.perRep);
    const Opd a = {s0.Ptr(), (uint32_t)sizeof(T), blk0, rep0};
    CheckOperand(api, "src0", s0, a, x);
    if (s1 != nullptr) CheckOperand(api, "src1", *s1, Opd{s1->Ptr(), (uint32_t)sizeof(T), blk1, rep1}, x);
    if (!dst.Valid()) Fail(api, "dst tensor is not allocated");
    if (dst.Phys() != Mem::UB) Fail(api, "dst must be in UB (VECIN/VECOUT/VECCALC), got position %s", PositionName(dst.Pos()));
    CheckAlign(api, "dst", dst, 32);
    const uint64_t outBytes = repeat * x.perRep / 8;
    if (outBytes > dst.GetLength()) {
        Fail(api, "dst: %llu repeats write %llu bytes of result bits but the tensor has %u bytes",
             (unsigned long long)repeat, (unsigned long long)outBytes, dst.GetLength());
    }
    uint8_t* out = dst.Ptr();
    if (s1 != nullptr) {
        const Opd o[2] = {a, {s1->Ptr(), (uint32_t)sizeof(T), blk1, rep1}};
        ForEachRun(o, x, sizeof(T), [out, cmpMode](uint8_t* const* q, uint64_t n, uint64_t logical) {
            const T* pb = reinterpret_cast<const T*>(q[1]);
            CmpPack<T>(out, reinterpret_cast<const T*>(q[0]),
                       [pb](typename Lane<T>::C* xb, uint64_t i, uint32_t k) { Lane<T>::Load(xb, pb + i, k); }, n,
                       logical, cmpMode);
        }, false);
    } else {
        const Opd o[1] = {a};
        const typename Lane<T>::C sv = Lane<T>::Of(*scalar);
        ForEachRun(o, x, sizeof(T), [out, cmpMode, sv](uint8_t* const* q, uint64_t n, uint64_t logical) {
            CmpPack<T>(out, reinterpret_cast<const T*>(q[0]),
                       [sv](typename Lane<T>::C* xb, uint64_t, uint32_t k) {
                           for (uint32_t j = 0; j < k; ++j) xb[j] = sv;
                       },
                       n, logical, cmpMode);
        }, false);
    }
    TraceV(api, x.Active(), x.Active() * sizeof(T) * (s1 ? 2 : 1) + outBytes, x.Repeats(), out, s0.Ptr());
}

template <typename T>
inline uint64_t CompareCountRepeats(const char* api, uint32_t count) {
    if (((uint64_t)count * sizeof(T)) % 256 != 0) {
        Fail(api, "count %u x %zu B = %llu B is not a multiple of 256 B (the NPU would silently skip the tail)",
             count, sizeof(T), (unsigned long long)count * sizeof(T));
    }
    return (uint64_t)count * sizeof(T) / 256;
}

// Compares / CompareScalar (tensor vs scalar): the types of the Compares page's A2 list, level 0 and count forms.
template <typename T, typename U>
inline void ComparesTypes() {
    static_assert(OneOf<T, half, float, int32_t>, "Compares/CompareScalar: T must be half, float or int32_t on dav-2201");
    static_assert(std::is_same_v<U, uint8_t>, "Compares/CompareScalar: U must be uint8_t on dav-2201");
}

template <typename T, typename U>
inline void ComparesL0(const char* api, const AscendC::LocalTensor<U>& dst, const AscendC::LocalTensor<T>& src0,
                       const T& scalar, AscendC::CMPMODE cmpMode, uint8_t repeatTime,
                       const AscendC::UnaryRepeatParams& rp) {
    ComparesTypes<T, U>();
    RequireAiv(api);
    CompareRun<T, U>(api, dst, src0, nullptr, &scalar, cmpMode, repeatTime, rp.srcBlkStride, rp.srcRepStride, 0, 0);
}

template <typename T, typename U>
inline void ComparesCount(const char* api, const AscendC::LocalTensor<U>& dst, const AscendC::LocalTensor<T>& src0,
                          const T& scalar, AscendC::CMPMODE cmpMode, uint32_t count) {
    ComparesTypes<T, U>();
    RequireAiv(api);
    CompareRun<T, U>(api, dst, src0, nullptr, &scalar, cmpMode, CompareCountRepeats<T>(api, count), 1, 8, 0, 0);
}

// ---- Select ----
inline bool SelBit(const uint8_t* sel, uint64_t i) { return (sel[i >> 3] >> (i & 7)) & 1u; }

// The real implementation stages through UB at TMP_UB_OFFSET (184 KB on dav-2201), a region TPipe does not keep
// out of the kernel's reach: if the kernel's own buffers extend there, the two silently overwrite each other.
inline void StageTmp(const char* api, const void* src32, uint32_t bytes) {
    CoreState& c = Cur();
    const uint32_t off = npu_fa::UsableUb(*c.chip);
    if (off + bytes > c.mem[(int)Mem::UB].size()) Fail(api, "internal: no room for the Select scratch in UB");
    if (c.ubTop > off) {
        Fail(api, "this form stages its selector/scalar in UB at TMP_UB_OFFSET = %u (the top %u bytes), but the kernel's "
                  "buffers reach byte %u there: on the NPU they overwrite each other; keep TPipe/TBufPool buffers below "
                  "%u bytes when using it", off, (unsigned)(c.mem[(int)Mem::UB].size() - off), c.ubTop, off);
    }
    std::memcpy(c.Base(Mem::UB) + off, src32, bytes);
}

// The selection itself, shared by the tensor-mask and register (CMPMASK) forms: element i of the run takes src0
// where bit i of `selBits` is set (bit i mod elements-per-repeat when the bits are one repeat's worth), else src1 or
// the scalar `sv`. Operands are already checked.
template <typename T>
inline void SelectApply(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                        const AscendC::LocalTensor<T>* s1, const Opd& od, const Opd& oa, const Opd& ob,
                        const uint8_t* selBits, bool bitsPerElement, typename Lane<T>::C sv, const Exec& x) {
    const uint32_t E = x.perRep;
    auto body = [&](uint8_t* const* q, uint64_t n, uint64_t logical) {
        using L = Lane<T>;
        alignas(64) typename L::C xa[kChunk], xb[kChunk], xr[kChunk];
        T* d = reinterpret_cast<T*>(q[0]);
        const T* a = reinterpret_cast<const T*>(q[1]);
        const T* b = s1 ? reinterpret_cast<const T*>(q[2]) : nullptr;
        for (uint64_t i = 0; i < n; i += kChunk) {
            const uint32_t k = (uint32_t)std::min<uint64_t>(kChunk, n - i);
            L::Load(xa, a + i, k);
            if (b) {
                L::Load(xb, b + i, k);
            } else {
                for (uint32_t j = 0; j < k; ++j) xb[j] = sv;
            }
            for (uint32_t j = 0; j < k; ++j) {
                const uint64_t li = logical + i + j;
                xr[j] = SelBit(selBits, bitsPerElement ? li : li % E) ? xa[j] : xb[j];
            }
            L::Store(d + i, xr, k);
        }
    };
    if (s1 != nullptr) {
        const Opd o[3] = {od, oa, ob};
        ForEachRun(o, x, sizeof(T), body);
    } else {
        const Opd o[2] = {od, oa};
        ForEachRun(o, x, sizeof(T), body);
    }
    TraceV(api, x.Active(), x.Active() * sizeof(T) * (s1 ? 3 : 2), x.Repeats(), dst.Ptr(), s0.Ptr());
}

template <typename T, typename U>
inline void SelectRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& selMask,
                      const AscendC::LocalTensor<T>& s0, const AscendC::LocalTensor<T>* s1, const T* scalar,
                      AscendC::SELMODE mode, const Exec& x, const AscendC::BinaryRepeatParams& p) {
    const Opd od = {dst.Ptr(), (uint32_t)sizeof(T), p.dstBlkStride, p.dstRepStride};
    const Opd oa = {s0.Ptr(), (uint32_t)sizeof(T), p.src0BlkStride, p.src0RepStride};
    CheckOperand(api, "dst", dst, od, x);
    CheckOperand(api, "src0", s0, oa, x);
    CheckDstBlkStride(api, "dstBlkStride", od, x);
    Opd ob = {nullptr, (uint32_t)sizeof(T), p.src1BlkStride, p.src1RepStride};
    if (s1 != nullptr) {
        ob.p = s1->Ptr();
        CheckOperand(api, "src1", *s1, ob, x);
    }
    // selMask footprint in bytes
    if (!selMask.Valid()) Fail(api, "selMask tensor is not allocated");
    if (selMask.Phys() != Mem::UB) Fail(api, "selMask must be in UB, got position %s", PositionName(selMask.Pos()));
    CheckAlign(api, "selMask", selMask, 32);
    const uint64_t R = x.Repeats();
    uint64_t lastLogical = 0;
    bool any = false;
    if (x.counter) {
        any = x.count > 0;
        lastLogical = x.count - 1;
    } else {
        const int32_t hi = HighestSet(x.bits, x.perRep);
        any = hi >= 0 && R > 0;
        if (any) lastLogical = (R - 1) * x.perRep + (uint64_t)hi;
    }
    const bool mode0 = mode == AscendC::SELMODE::VSEL_CMPMASK_SPR;
    const uint64_t selBytes = !any ? 0 : (mode0 ? x.perRep / 8 : lastLogical / 8 + 1);
    if (selBytes > selMask.GetLength()) {
        Fail(api, "selMask: the instruction reads %llu bytes of selection bits but the tensor has %u bytes",
             (unsigned long long)selBytes, selMask.GetLength());
    }
    // Scratch staging of the real implementation (top 8 KB of UB).
    if (mode == AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE) {
        T v[32];
        for (auto& e : v) e = *scalar;
        StageTmp(api, v, sizeof v);
    } else if (mode == AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE) {
        uint32_t v[32];
        for (auto& e : v) e = (uint32_t)selMask.Addr(api);
        StageTmp(api, v, sizeof v);
    }
    // Mode 0 snapshots the first E bits (the CMPMASK register).
    uint8_t cmpmask[16] = {};
    const uint8_t* sel = selMask.Ptr();
    if (mode0) std::memcpy(cmpmask, sel, x.perRep / 8);
    // The implementation loads CMPMASK first (mode 0: the selMask's first 16 bytes; mode 1: the scalar repeated;
    // mode 2: the selMask's UB address repeated), which later register-form Selects and GetCmpMask see.
    SprState& spr = Cur().spr;
    std::memset(spr.cmpMask, 0, 16);
    if (mode0) {
        std::memcpy(spr.cmpMask, sel, std::min<uint32_t>(16, selMask.GetLength()));
    } else if (mode == AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE) {
        for (uint32_t i = 0; i + sizeof(T) <= 16; i += sizeof(T)) std::memcpy(spr.cmpMask + i, scalar, sizeof(T));
    } else {
        const uint32_t a = (uint32_t)selMask.Addr(api);
        for (uint32_t i = 0; i < 16; i += 4) std::memcpy(spr.cmpMask + i, &a, 4);
    }
    spr.cmpMaskSet = true;
    SelectApply(api, dst, s0, s1, od, oa, ob, mode0 ? cmpmask : sel, !mode0,
                scalar ? Lane<T>::Of(*scalar) : typename Lane<T>::C(0), x);
}

inline void CheckSelMode(const char* api, AscendC::SELMODE mode, bool scalarForm) {
    if (scalarForm) {
        if (mode != AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE) {
            Fail(api, "the scalar-src1 form needs SELMODE::VSEL_TENSOR_SCALAR_MODE, got mode %d", (int)mode);
        }
    } else if (mode != AscendC::SELMODE::VSEL_CMPMASK_SPR && mode != AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE) {
        Fail(api, "the tensor-src1 form takes SELMODE::VSEL_CMPMASK_SPR or VSEL_TENSOR_TENSOR_MODE, got mode %d "
                  "(VSEL_TENSOR_SCALAR_MODE needs a scalar src1)", (int)mode);
    }
}

}  // namespace vec
}  // namespace twin

namespace AscendC {

// ---- Compare ----
template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    const uint64_t mask[], uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {
    static_assert(twin::vec::OneOf<T, half, float, int32_t>, "Compare: T must be half, float or int32_t on dav-2201");
    static_assert(twin::vec::OneOf<U, int8_t, uint8_t>, "Compare: U must be int8_t or uint8_t");
    (void)mask;
    twin::RequireAiv("Compare");
    twin::vec::CompareRun<T, U>("Compare", dst, src0, &src1, nullptr, cmpMode, repeatTime, repeatParams.src0BlkStride,
                                repeatParams.src0RepStride, repeatParams.src1BlkStride, repeatParams.src1RepStride);
}

template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    const uint64_t mask, uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {
    static_assert(twin::vec::OneOf<T, half, float, int32_t>, "Compare: T must be half, float or int32_t on dav-2201");
    static_assert(twin::vec::OneOf<U, int8_t, uint8_t>, "Compare: U must be int8_t or uint8_t");
    (void)mask;
    twin::RequireAiv("Compare");
    twin::vec::CompareRun<T, U>("Compare", dst, src0, &src1, nullptr, cmpMode, repeatTime, repeatParams.src0BlkStride,
                                repeatParams.src0RepStride, repeatParams.src1BlkStride, repeatParams.src1RepStride);
}

template <typename T, typename U>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    uint32_t count) {
    static_assert(twin::vec::OneOf<T, half, float, int32_t>, "Compare: T must be half, float or int32_t on dav-2201");
    static_assert(twin::vec::OneOf<U, int8_t, uint8_t>, "Compare: U must be int8_t or uint8_t");
    twin::RequireAiv("Compare");
    const uint64_t rep = twin::vec::CompareCountRepeats<T>("Compare", count);
    twin::vec::CompareRun<T, U>("Compare", dst, src0, &src1, nullptr, cmpMode, rep, 1, 8, 1, 8);
}

// ---- Compares (tensor vs scalar); CompareScalar is its old name (docs/zh/api/附录/接口变更说明.md) ----
#define TWIN_COMPARES(NAME)                                                                                          \
    template <typename T, typename U, bool isSetMask = true>                                                          \
    inline void NAME(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,      \
                     const uint64_t mask[], uint8_t repeatTime, const UnaryRepeatParams& repeatParams) {              \
        (void)mask;                                                                                                   \
        twin::vec::ComparesL0<T, U>(#NAME, dst, src0, src1Scalar, cmpMode, repeatTime, repeatParams);                 \
    }                                                                                                                 \
    template <typename T, typename U, bool isSetMask = true>                                                          \
    inline void NAME(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,      \
                     const uint64_t mask, uint8_t repeatTime, const UnaryRepeatParams& repeatParams) {                \
        (void)mask;                                                                                                   \
        twin::vec::ComparesL0<T, U>(#NAME, dst, src0, src1Scalar, cmpMode, repeatTime, repeatParams);                 \
    }                                                                                                                 \
    template <typename T, typename U>                                                                                 \
    inline void NAME(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,      \
                     uint32_t count) {                                                                                \
        twin::vec::ComparesCount<T, U>(#NAME, dst, src0, src1Scalar, cmpMode, count);                                 \
    }

TWIN_COMPARES(Compares)
TWIN_COMPARES(CompareScalar)
#undef TWIN_COMPARES

// ---- Select ----
#define TWIN_SEL_CHECK_TYPES                                                                                         \
    static_assert(twin::vec::OneOf<T, half, float>, "Select: T must be half or float on dav-2201");                   \
    static_assert(twin::vec::OneOf<U, uint8_t, uint16_t, uint32_t, uint64_t>, "Select: U must be uint8/16/32/64_t")

// Modes 0 and 2, level 0 (isSetMask is reserved: the mask is always applied).
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, uint64_t mask[], uint8_t repeatTime,
                   const BinaryRepeatParams& repeatParams) {
    TWIN_SEL_CHECK_TYPES;
    const char* api = "Select";
    twin::RequireAiv(api);
    twin::vec::CheckSelMode(api, selMode, false);
    const twin::vec::Exec x = twin::vec::MakeL0Exec(api, twin::vec::MaskArg::Bits(mask, true), 256 / sizeof(T), repeatTime);
    twin::vec::SelectRun<T, U>(api, dst, selMask, src0, &src1, nullptr, selMode, x, repeatParams);
}

template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, uint64_t mask, uint8_t repeatTime,
                   const BinaryRepeatParams& repeatParams) {
    TWIN_SEL_CHECK_TYPES;
    const char* api = "Select";
    twin::RequireAiv(api);
    twin::vec::CheckSelMode(api, selMode, false);
    const twin::vec::Exec x = twin::vec::MakeL0Exec(api, twin::vec::MaskArg::Len(mask, true), 256 / sizeof(T), repeatTime);
    twin::vec::SelectRun<T, U>(api, dst, selMask, src0, &src1, nullptr, selMode, x, repeatParams);
}

template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, uint32_t count) {
    TWIN_SEL_CHECK_TYPES;
    const char* api = "Select";
    twin::RequireAiv(api);
    twin::vec::CheckSelMode(api, selMode, false);
    const twin::vec::Exec x = twin::vec::CountExec(api, (int64_t)count, 256 / sizeof(T));
    twin::vec::SelectRun<T, U>(api, dst, selMask, src0, &src1, nullptr, selMode, x, BinaryRepeatParams());
    twin::vec::RestoreNormalFullMask();
}

// Mode 1 (src1 is a scalar).
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, T src1,
                   SELMODE selMode, uint64_t mask[], uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {
    TWIN_SEL_CHECK_TYPES;
    const char* api = "Select";
    twin::RequireAiv(api);
    twin::vec::CheckSelMode(api, selMode, true);
    const twin::vec::Exec x = twin::vec::MakeL0Exec(api, twin::vec::MaskArg::Bits(mask, true), 256 / sizeof(T), repeatTime);
    twin::vec::SelectRun<T, U>(api, dst, selMask, src0, nullptr, &src1, selMode, x, repeatParams);
}

template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, T src1,
                   SELMODE selMode, uint64_t mask, uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {
    TWIN_SEL_CHECK_TYPES;
    const char* api = "Select";
    twin::RequireAiv(api);
    twin::vec::CheckSelMode(api, selMode, true);
    const twin::vec::Exec x = twin::vec::MakeL0Exec(api, twin::vec::MaskArg::Len(mask, true), 256 / sizeof(T), repeatTime);
    twin::vec::SelectRun<T, U>(api, dst, selMask, src0, nullptr, &src1, selMode, x, repeatParams);
}

template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, T src1,
                   SELMODE selMode, uint32_t count) {
    TWIN_SEL_CHECK_TYPES;
    const char* api = "Select";
    twin::RequireAiv(api);
    twin::vec::CheckSelMode(api, selMode, true);
    const twin::vec::Exec x = twin::vec::CountExec(api, (int64_t)count, 256 / sizeof(T));
    twin::vec::SelectRun<T, U>(api, dst, selMask, src0, nullptr, &src1, selMode, x, BinaryRepeatParams());
    twin::vec::RestoreNormalFullMask();
}

#undef TWIN_SEL_CHECK_TYPES

}  // namespace AscendC
