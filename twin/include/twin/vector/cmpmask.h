// The CMPMASK register of an AIV (128 bits, CoreState::spr) and the APIs around it (dav-2201):
// - Compare(src0, src1, cmpMode, mask, repeatParams): one repeat (256 B) of half or float compared under the mask;
//   bit e of CMPMASK = result of element e (bits of masked-off elements and above the repeat's E elements are 0 in
//   the twin; the NPU leaves them unspecified).
// - SetCmpMask(src) loads 16 bytes from UB, GetCmpMask(dst) stores them (both 16-byte aligned, on the vector pipe;
//   no-ops on the cube core like the real implementation). GetCmpMask's dst must have the documented 128 bytes.
// - Select<T, selMode>(dst, src0, src1, repeatTime, repeatParams): VSEL_CMPMASK_SPR takes the first E bits of CMPMASK
//   for every repeat; VSEL_TENSOR_TENSOR_MODE reads CMPMASK as the UB address of a selMask (a host pointer into
//   UB as the CPU debug build stores it, else the low 32 bits as the UB byte address as the NPU build stores it)
//   whose bits [r*E, (r+1)*E) serve repeat r.
// - Select<T, U>(dst, selMask, src0, repeatTime, repeatParams): VSEL_TENSOR_SCALAR_MODE with src1 = the first T of
//   CMPMASK.
// The register Select forms take the mask register as it stands (no mask argument). Reading CMPMASK before any
// Compare / SetCmpMask / Select on the core is refused (the NPU would use stale data).
#pragma once
#include "twin/vector/cmpsel.h"
#include "twin/vector/more_common.h"

namespace twin {
namespace vec {

inline const uint8_t* CmpMaskRead(const char* api) {
    SprState& s = Cur().spr;
    if (!s.cmpMaskSet) {
        Fail(api, "reads the CMPMASK register, which no Compare (register form), SetCmpMask or Select has written on "
                  "this core");
    }
    return s.cmpMask;
}

template <typename T>
inline void CompareRegRun(const char* api, const AscendC::LocalTensor<T>& s0, const AscendC::LocalTensor<T>& s1,
                          AscendC::CMPMODE cmpMode, const MaskArg& m, const AscendC::BinaryRepeatParams& p) {
    RequireAiv(api);
    CheckCmpMode<T>(api, cmpMode);
    const Exec x = MakeL0Exec(api, m, 256 / sizeof(T), 1);
    if (x.counter) {
        Fail(api, "the CMPMASK form of Compare runs one repeat; counter mode is not supported (call SetMaskNorm())");
    }
    const Opd oa = {s0.Ptr(), (uint32_t)sizeof(T), p.src0BlkStride, p.src0RepStride};
    const Opd ob = {s1.Ptr(), (uint32_t)sizeof(T), p.src1BlkStride, p.src1RepStride};
    CheckOperand(api, "src0", s0, oa, x);
    CheckOperand(api, "src1", s1, ob, x);
    uint8_t out[16] = {};
    const Opd o[2] = {oa, ob};
    ForEachRun(o, x, sizeof(T), [&out, cmpMode](uint8_t* const* q, uint64_t n, uint64_t logical) {
        using L = Lane<T>;
        alignas(64) typename L::C xa[128], xb[128];
        L::Load(xa, reinterpret_cast<const T*>(q[0]), (uint32_t)n);
        L::Load(xb, reinterpret_cast<const T*>(q[1]), (uint32_t)n);
        for (uint64_t i = 0; i < n; ++i) {
            if (CmpOne(cmpMode, xa[i], xb[i])) out[(logical + i) >> 3] |= (uint8_t)(1u << ((logical + i) & 7));
        }
    }, false);
    SprState& s = Cur().spr;
    std::memcpy(s.cmpMask, out, 16);
    s.cmpMaskSet = true;
    TraceV(api, x.Active(), x.Active() * 2 * sizeof(T), 1, nullptr, s0.Ptr());
}

// UB byte offset of the selMask that a VSEL_TENSOR_TENSOR_MODE CMPMASK names.
inline uint64_t CmpMaskAddress(const char* api) {
    const uint8_t* r = CmpMaskRead(api);
    CoreState& c = Cur();
    const uint64_t ub = c.mem[(int)Mem::UB].size();
    uint64_t host;
    std::memcpy(&host, r, 8);
    const uint8_t* base = c.Base(Mem::UB);
    if (base != nullptr && host >= (uint64_t)(uintptr_t)base && host < (uint64_t)(uintptr_t)base + ub) {
        return host - (uint64_t)(uintptr_t)base;
    }
    uint32_t low;
    std::memcpy(&low, r, 4);
    if (low >= ub) {
        Fail(api, "VSEL_TENSOR_TENSOR_MODE: CMPMASK holds 0x%016llx, neither a UB pointer nor a UB byte address "
                  "(UB has %llu bytes)", (unsigned long long)host, (unsigned long long)ub);
    }
    return low;
}

template <typename T>
inline void SelectRegRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                         const AscendC::LocalTensor<T>* s1, const uint8_t* selBytes, bool perRepeatBits,
                         const typename Lane<T>::C* scalar, const Exec& x, const AscendC::BinaryRepeatParams& p) {
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
    SelectApply(api, dst, s0, s1, od, oa, ob, selBytes, perRepeatBits, scalar ? *scalar : typename Lane<T>::C(0), x);
}

// Bytes of per-repeat selection bits the instruction consumes (bits [0, last active logical index]).
inline uint64_t SelBytesNeeded(const Exec& x) {
    if (x.counter) return x.count == 0 ? 0 : (x.count - 1) / 8 + 1;
    const int32_t hi = HighestSet(x.bits, x.perRep);
    if (hi < 0 || x.repeats == 0) return 0;
    return ((x.repeats - 1) * x.perRep + (uint64_t)hi) / 8 + 1;
}

}  // namespace vec
}  // namespace twin

namespace AscendC {

// ---- Compare writing CMPMASK (one repeat) ----
template <typename T, bool isSetMask = true>
inline void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask[],
                    const BinaryRepeatParams& repeatParams) {
    static_assert(twin::vec::OneOf<T, half, float>, "Compare (CMPMASK form): T must be half or float on dav-2201");
    twin::vec::CompareRegRun<T>("Compare", src0, src1, cmpMode, twin::vec::MaskArg::Bits(mask, isSetMask),
                                repeatParams);
}

template <typename T, bool isSetMask = true>
inline void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask,
                    const BinaryRepeatParams& repeatParams) {
    static_assert(twin::vec::OneOf<T, half, float>, "Compare (CMPMASK form): T must be half or float on dav-2201");
    twin::vec::CompareRegRun<T>("Compare", src0, src1, cmpMode, twin::vec::MaskArg::Len(mask, isSetMask),
                                repeatParams);
}

// ---- CMPMASK <-> UB ----
template <typename T>
inline void GetCmpMask(const LocalTensor<T>& dst) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "GetCmpMask: b8/b16/b32/b64");
    const char* api = "GetCmpMask";
    if (twin::Cur().coreType != AIV) return;  // the real implementation returns on the cube core
    if (dst.Valid() && dst.GetLength() < 128) {
        twin::Fail(api, "dst has %u bytes; the documented minimum is 128 bytes", dst.GetLength());
    }
    twin::vec::CheckSpanUB(api, "dst", dst, 16, true, 16);
    std::memcpy(dst.Ptr(), twin::vec::CmpMaskRead(api), 16);
    twin::vec::TraceV(api, 16 / sizeof(T), 16, 1, dst.Ptr(), nullptr);
}

template <typename T>
inline void SetCmpMask(const LocalTensor<T>& src) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "SetCmpMask: b8/b16/b32/b64");
    const char* api = "SetCmpMask";
    if (twin::Cur().coreType != AIV) return;
    twin::vec::CheckSpanUB(api, "src", src, 16, false, 16);
    twin::SprState& s = twin::Cur().spr;
    std::memcpy(s.cmpMask, src.Ptr(), 16);
    s.cmpMaskSet = true;
    twin::vec::TraceV(api, 16 / sizeof(T), 16, 1, nullptr, src.Ptr());
}

// ---- Select with the selection in CMPMASK (modes 0 and 2) ----
template <typename T, SELMODE selMode>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                   uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {
    static_assert(twin::vec::OneOf<T, half, float>, "Select: T must be half or float on dav-2201");
    const char* api = "Select";
    twin::RequireAiv(api);
    const twin::vec::Exec x = twin::vec::FromRegister(256 / sizeof(T), repeatTime);
    if constexpr (selMode == SELMODE::VSEL_CMPMASK_SPR) {
        uint8_t bits[16];
        std::memcpy(bits, twin::vec::CmpMaskRead(api), 16);
        twin::vec::SelectRegRun<T>(api, dst, src0, &src1, bits, false, nullptr, x, repeatParams);
    } else if constexpr (selMode == SELMODE::VSEL_TENSOR_TENSOR_MODE) {
        const uint64_t off = twin::vec::CmpMaskAddress(api);
        const uint64_t need = twin::vec::SelBytesNeeded(x);
        twin::CoreState& c = twin::Cur();
        if (off + need > c.mem[(int)twin::Mem::UB].size()) {
            twin::Fail(api, "the selMask named by CMPMASK (UB byte %llu) needs %llu bytes, past the end of UB",
                       (unsigned long long)off, (unsigned long long)need);
        }
        twin::NoteAccess(api, twin::Mem::UB, off, need, false);
        twin::vec::SelectRegRun<T>(api, dst, src0, &src1, c.Base(twin::Mem::UB) + off, true, nullptr, x,
                                   repeatParams);
    } else {
        twin::Fail(api, "Select<T, SELMODE::VSEL_TENSOR_SCALAR_MODE>(dst, src0, src1, ...) does nothing on the NPU; "
                        "mode 1 takes the Select(dst, selMask, src0, repeatTime, repeatParams) form");
    }
}

// ---- Select with the scalar src1 in CMPMASK (mode 1) ----
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {
    static_assert(twin::vec::OneOf<T, half, float>, "Select: T must be half or float on dav-2201");
    static_assert(twin::vec::OneOf<U, uint8_t, uint16_t, uint32_t, uint64_t>, "Select: U must be an unsigned integer");
    const char* api = "Select";
    twin::RequireAiv(api);
    const twin::vec::Exec x = twin::vec::FromRegister(256 / sizeof(T), repeatTime);
    T s;
    std::memcpy(&s, twin::vec::CmpMaskRead(api), sizeof(T));
    const typename twin::vec::Lane<T>::C sv = twin::vec::Lane<T>::Of(s);
    twin::vec::CheckSpanUB(api, "selMask", selMask, twin::vec::SelBytesNeeded(x), false);
    twin::vec::SelectRegRun<T>(api, dst, src0, nullptr, selMask.Ptr(), true, &sv, x, repeatParams);
}

}  // namespace AscendC
