// Gather and GatherMask (dav-2201; T: half, bfloat16_t, int16_t, uint16_t, float, int32_t, uint32_t).
// Gather: dst element e of repeat r (dst blocks contiguous, repeats dstRepStride blocks apart) = the T at byte
//   srcBaseOffset + srcOffset[r * E + e] of src (srcOffset: uint32_t byte offsets, E per repeat, consumed
//   contiguously). The twin requires every gathered element to lie inside src, type-aligned, and refuses a dst that
//   overlaps the gathered bytes. The count form runs full repeats and then a tail call with continuous masks (at most
//   255 full repeats: the implementation keeps the repeat count in a uint8_t) and leaves the last mask in the register.
// GatherMask: packs the elements of src0 whose pattern bit is 1 into dst and returns their number in rsvdCnt.
//   Pattern: built-in 1..7 (even, odd, and index % 4 == 0..3 of each repeat, all) or a uint16_t / uint32_t tensor whose
//   bits are consumed contiguously inside a repeat, repeats src1RepeatStride blocks apart. reduceMode = false: each of
//   repeatTimes repeats covers 256 B of src0 (src0BlockStride / src0RepeatStride). reduceMode = true (counter mode,
//   A2 "configuration 1"): each repeat covers `mask` elements (blocks continue with src0BlockStride past the 8th).
//   Like the NPU implementation it leaves normal mode and the mask register = {high 0, low mask}.
#pragma once
#include "twin/vector/more_common.h"

namespace AscendC {

enum class GatherMaskMode : uint8_t { VERSION_V1 = 0, VERSION_V2 = 1 };
constexpr GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V2;
constexpr GatherMaskMode defaultGahterMaskMode = GatherMaskMode::VERSION_V2;  // sic, as in the official header

struct GatherMaskParams {
    GatherMaskParams() {}
    GatherMaskParams(const uint8_t src0BlockStrideIn, const uint16_t repeatTimesIn, const uint16_t src0RepeatStrideIn,
                     const uint8_t src1RepeatStrideIn)
        : src0BlockStride(src0BlockStrideIn), repeatTimes(repeatTimesIn), src0RepeatStride(src0RepeatStrideIn),
          src1RepeatStride(src1RepeatStrideIn) {}
    uint8_t src0BlockStride = DEFAULT_BLK_STRIDE;
    uint16_t repeatTimes = 0;
    uint16_t src0RepeatStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepeatStride = DEFAULT_REPEAT_STRIDE;
};

}  // namespace AscendC

namespace twin {
namespace vec {

template <typename T>
inline void GatherRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                      const AscendC::LocalTensor<uint32_t>& srcOffset, uint32_t base, const Exec& x,
                      uint32_t dstRepStride) {
    constexpr uint32_t E = 256 / sizeof(T);
    const Opd od = {dst.Ptr(), (uint32_t)sizeof(T), 1, dstRepStride};
    const Opd oo = {srcOffset.Ptr(), 4, 1, E * 4 / 32};
    CheckOperand(api, "dst", dst, od, x);
    CheckOperand(api, "srcOffset", srcOffset, oo, x);
    if (!src.Valid()) Fail(api, "src tensor is not allocated");
    if (src.Phys() != Mem::UB) Fail(api, "src must be in UB (VECIN/VECOUT/VECCALC), got position %s", PositionName(src.Pos()));
    CheckAlign(api, "src", src, 32);
    if (base % sizeof(T) != 0) {
        Fail(api, "srcBaseOffset %u is not a multiple of sizeof(T) = %zu (the NPU would gather misplaced data)", base,
             sizeof(T));
    }
    // Gather the values first (sources are read before any write).
    std::vector<T> vals;
    std::vector<uint64_t> at;  // dst byte offsets
    vals.reserve(x.Active());
    at.reserve(x.Active());
    uint64_t lo = UINT64_MAX, hi = 0;
    const uint32_t* offs = reinterpret_cast<const uint32_t*>(srcOffset.Ptr());
    uint64_t b[2];
    for (uint64_t r = 0; r < x.Repeats(); ++r) {
        x.RepBits(r, b);
        for (uint32_t e = NextSet(b, 0, E); e < E; e = NextSet(b, e + 1, E)) {
            const uint64_t i = r * E + e;
            const uint64_t o = (uint64_t)base + offs[i];
            if (offs[i] % sizeof(T) != 0) {
                Fail(api, "srcOffset[%llu] = %u bytes is not a multiple of sizeof(T) = %zu", (unsigned long long)i,
                     offs[i], sizeof(T));
            }
            if (o + sizeof(T) > src.GetLength()) {
                Fail(api, "srcOffset[%llu] = %u bytes (+ srcBaseOffset %u) reads past the src tensor's %u bytes",
                     (unsigned long long)i, offs[i], base, src.GetLength());
            }
            T v;
            std::memcpy(&v, src.Ptr() + o, sizeof(T));
            vals.push_back(v);
            at.push_back(ElemOffset(od, r, e));
            lo = std::min(lo, o);
            hi = std::max<uint64_t>(hi, o + sizeof(T));
        }
    }
    if (!vals.empty()) {
        if (Overlaps(dst.Ptr(), SpanEnd(od, x), src.Ptr() + lo, hi - lo)) {
            Fail(api, "dst overlaps the gathered src bytes (not supported)");
        }
        NoteAccess(api, Mem::UB, src.Addr(api) + lo, hi - lo, false);
    }
    for (size_t k = 0; k < vals.size(); ++k) std::memcpy(dst.Ptr() + at[k], &vals[k], sizeof(T));
    TraceV(api, x.Active(), x.Active() * (2 * sizeof(T) + 4), x.Repeats(), dst.Ptr(), src.Ptr());
}

// Bit e of a built-in GatherMask pattern.
inline bool PatternBit(uint8_t pattern, uint64_t e) {
    switch (pattern) {
        case 1: return e % 2 == 0;
        case 2: return e % 2 == 1;
        case 3: case 4: case 5: case 6: return e % 4 == (uint64_t)(pattern - 3);
        default: return true;
    }
}

// pattern 0: bits from src1 (bytes at p1, repeats rep1 blocks apart).
template <typename T>
inline void GatherMaskRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src0,
                          const uint8_t* p1, uint8_t pattern, bool reduceMode, uint32_t mask,
                          const AscendC::GatherMaskParams& gp, uint64_t& rsvdCnt) {
    constexpr uint32_t E = 256 / sizeof(T), epb = 32 / sizeof(T);
    if (reduceMode && mask == 0) Fail(api, "mask 0 with reduceMode = true (counter mode needs mask in [1, 2^32 - 1])");
    const uint64_t R = gp.repeatTimes;
    const uint64_t per = reduceMode ? mask : E;  // elements per repeat
    const uint32_t blk = gp.src0BlockStride, rep = gp.src0RepeatStride;
    // src0 footprint
    uint64_t end0 = 0;
    if (R > 0) {
        const uint64_t nb = (per + epb - 1) / epb, last = per - (nb - 1) * epb;
        end0 = (R - 1) * rep * 32ull + (blk == 0 ? std::min<uint64_t>(per, epb) * sizeof(T) : (nb - 1) * blk * 32ull + last * sizeof(T));
    }
    CheckSpanUB(api, "src0", src0, end0, false);
    std::vector<T> out;
    for (uint64_t r = 0; r < R; ++r) {
        const uint8_t* bits = p1 ? p1 + r * gp.src1RepeatStride * 32ull : nullptr;
        for (uint64_t e = 0; e < per; ++e) {
            const bool take = bits ? ((bits[e >> 3] >> (e & 7)) & 1u) != 0 : PatternBit(pattern, e);
            if (!take) continue;
            T v;
            std::memcpy(&v, src0.Ptr() + r * rep * 32ull + (e / epb) * blk * 32ull + (e % epb) * sizeof(T), sizeof(T));
            out.push_back(v);
        }
    }
    CheckSpanUB(api, "dst", dst, out.size() * sizeof(T), true);
    if (!out.empty()) std::memcpy(dst.Ptr(), out.data(), out.size() * sizeof(T));
    rsvdCnt = out.size();
    CoreState& c = Cur();
    c.counterMode = false;
    RegSet(0, mask);
    TraceV(api, R * per, R * per * sizeof(T) + out.size() * sizeof(T), R, dst.Ptr(), src0.Ptr());
}

}  // namespace vec
}  // namespace twin

namespace AscendC {

#define TWIN_GATHER_TYPES half, bfloat16_t, int16_t, uint16_t, float, int32_t, uint32_t

template <typename T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                   const uint32_t srcBaseOffset, const uint64_t mask, const uint8_t repeatTime,
                   const uint16_t dstRepStride) {
    static_assert(twin::vec::OneOf<T, TWIN_GATHER_TYPES>, "Gather: data type not supported on dav-2201");
    const char* api = "Gather";
    twin::RequireAiv(api);
    const twin::vec::Exec x = twin::vec::MakeL0Exec(api, twin::vec::MaskArg::Len(mask, true), 256 / sizeof(T), repeatTime);
    twin::vec::GatherRun<T>(api, dst, src, srcOffset, srcBaseOffset, x, dstRepStride);
}

template <typename T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                   const uint32_t srcBaseOffset, const uint64_t mask[], const uint8_t repeatTime,
                   const uint16_t dstRepStride) {
    static_assert(twin::vec::OneOf<T, TWIN_GATHER_TYPES>, "Gather: data type not supported on dav-2201");
    const char* api = "Gather";
    twin::RequireAiv(api);
    const twin::vec::Exec x = twin::vec::MakeL0Exec(api, twin::vec::MaskArg::Bits(mask, true), 256 / sizeof(T), repeatTime);
    twin::vec::GatherRun<T>(api, dst, src, srcOffset, srcBaseOffset, x, dstRepStride);
}

template <typename T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                   const uint32_t srcBaseOffset, const uint32_t count) {
    static_assert(twin::vec::OneOf<T, TWIN_GATHER_TYPES>, "Gather: data type not supported on dav-2201");
    const char* api = "Gather";
    twin::RequireAiv(api);
    constexpr uint32_t E = 256 / sizeof(T);
    if (twin::Cur().counterMode) {
        twin::Fail(api, "count form called in counter mode: the implementation issues normal-mode level-0 Gathers "
                        "with continuous masks; call SetMaskNorm() first");
    }
    if (count / E > 255) {
        twin::Fail(api, "count %u needs %u full repeats, but the implementation keeps the repeat count in a uint8_t "
                        "(at most 255 x %u elements per call)", count, count / E, E);
    }
    twin::vec::GatherRun<T>(api, dst, src, srcOffset, srcBaseOffset, twin::vec::CountExec(api, count, E), 8);
    uint64_t hi, lo;
    if (count % E != 0) {
        twin::vec::LenToBits(api, (int32_t)(count % E), hi, lo);
        twin::vec::RegSet(hi, lo);
    } else if (count > 0) {
        twin::vec::LenToBits(api, (int32_t)E, hi, lo);
        twin::vec::RegSet(hi, lo);
    }
}

#undef TWIN_GATHER_TYPES

template <typename T, typename U, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>& src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                       uint64_t& rsvdCnt) {
    static_assert(twin::vec::OneOf<T, half, bfloat16_t, int16_t, uint16_t, float, int32_t, uint32_t>,
                  "GatherMask: data type not supported on dav-2201");
    static_assert((sizeof(T) == 2 && std::is_same_v<U, uint16_t>) || (sizeof(T) == 4 && std::is_same_v<U, uint32_t>),
                  "GatherMask: src1Pattern must be uint16_t for 16-bit T and uint32_t for 32-bit T");
    const char* api = "GatherMask";
    twin::RequireAiv(api);
    constexpr uint32_t E = 256 / sizeof(T);
    const uint64_t per = reduceMode ? mask : E;
    const uint64_t R = gatherMaskParams.repeatTimes;
    const uint64_t need = R == 0 ? 0 : (R - 1) * gatherMaskParams.src1RepeatStride * 32ull + (per + 7) / 8;
    twin::vec::CheckSpanUB(api, "src1Pattern", src1Pattern, need, false);
    twin::vec::GatherMaskRun<T>(api, dst, src0, src1Pattern.Ptr(), 0, reduceMode, mask, gatherMaskParams, rsvdCnt);
}

template <typename T, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const uint8_t src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                       uint64_t& rsvdCnt) {
    static_assert(twin::vec::OneOf<T, half, bfloat16_t, int16_t, uint16_t, float, int32_t, uint32_t>,
                  "GatherMask: data type not supported on dav-2201");
    const char* api = "GatherMask";
    twin::RequireAiv(api);
    if (src1Pattern < 1 || src1Pattern > 7) twin::Fail(api, "src1Pattern %u is outside [1, 7]", src1Pattern);
    twin::vec::GatherMaskRun<T>(api, dst, src0, nullptr, src1Pattern, reduceMode, mask, gatherMaskParams, rsvdCnt);
}

}  // namespace AscendC
