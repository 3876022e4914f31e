// The twin's vector-instruction engine (AIV, operands in UB): the repeat-parameter structs, how a call's mask,
// repeats and strides select elements, the strict checks (core kind, UB position, alignment, footprint inside
// each LocalTensor), and the iteration that hands contiguous runs of active elements to an element kernel.
//
// Addressing (dav-2201): one repeat covers 256 B of the widest operand, i.e. E = 256 / sizeof(wide) elements.
// Element e of repeat r of an operand with element size s lives at
//     base + r * repStride * 32 + (e / (32 / s)) * blkStride * 32 + (e % (32 / s)) * s.
// Normal mode: the same per-repeat mask (E bits) applies to every repeat. Counter mode: `count` elements in
// total, ceil(count / E) repeats, the last one partial; repeatTime is ignored.
#pragma once
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "twin/memory/tensor.h"
#include "twin/vector/mask.h"
#include "twin/vector/numeric.h"

namespace AscendC {

struct BinaryRepeatParams {
    BinaryRepeatParams() {}
    BinaryRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t src0BlkStrideIn, const uint8_t src1BlkStrideIn,
                       const uint8_t dstRepStrideIn, const uint8_t src0RepStrideIn, const uint8_t src1RepStrideIn)
        : dstBlkStride(dstBlkStrideIn), src0BlkStride(src0BlkStrideIn), src1BlkStride(src1BlkStrideIn),
          dstRepStride(dstRepStrideIn), src0RepStride(src0RepStrideIn), src1RepStride(src1RepStrideIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint8_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

struct UnaryRepeatParams {
    UnaryRepeatParams() {}
    UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn, const uint8_t dstRepStrideIn,
                      const uint8_t srcRepStrideIn)
        : dstBlkStride(dstBlkStrideIn), srcBlkStride(srcBlkStrideIn), dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn) {}
    UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn, const uint8_t dstRepStrideIn,
                      const uint8_t srcRepStrideIn, const bool halfBlockIn)
        : dstBlkStride(dstBlkStrideIn), srcBlkStride(srcBlkStrideIn), dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn), halfBlock(halfBlockIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint16_t srcBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t srcRepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
    bool halfBlock = false;
};

}  // namespace AscendC

namespace twin {
namespace vec {

template <typename T, typename... Ts>
constexpr bool OneOf = (std::is_same_v<T, Ts> || ...);

template <typename T>
constexpr bool kIsBf16 = std::is_same_v<T, bfloat16_t>;

// bf16 storage is accepted by the copy-like APIs only; the NPU's vector ALUs have no bf16 arithmetic on A2.
template <typename T>
inline void RejectBf16(const char* api) {
    if constexpr (kIsBf16<T>) {
        Fail(api, "bfloat16_t arithmetic is not supported by the dav-2201 vector unit (A2 computes in half, float, "
                  "int16_t or int32_t); Cast the data to float first");
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Element selection of one instruction.
struct Exec {
    uint32_t perRep = 64;   // elements per repeat (256 B of the widest operand)
    bool counter = false;   // counter mode
    uint64_t count = 0;     // counter mode: elements in total
    uint64_t repeats = 0;   // normal mode: repeats
    uint64_t bits[2] = {0, 0};  // normal mode: per-repeat mask (only the first perRep bits count)

    uint64_t Repeats() const { return counter ? (count + perRep - 1) / perRep : repeats; }
    void RepBits(uint64_t r, uint64_t out[2]) const {
        if (!counter) {
            out[0] = bits[0];
            out[1] = bits[1];
            return;
        }
        const uint64_t left = count - r * perRep;
        const uint32_t n = (uint32_t)std::min<uint64_t>(left, perRep);
        out[0] = n >= 64 ? kFullMask : ((1ull << n) - 1);
        out[1] = n >= 128 ? kFullMask : (n > 64 ? ((1ull << (n - 64)) - 1) : 0);
    }
    uint32_t BitsPerRepeat() const {
        return (uint32_t)__builtin_popcountll(bits[0]) + (perRep > 64 ? (uint32_t)__builtin_popcountll(bits[1]) : 0);
    }
    uint64_t Active() const { return counter ? count : repeats * BitsPerRepeat(); }
};

inline void ClipBits(uint64_t b[2], uint32_t perRep) {
    if (perRep <= 64) {
        b[1] = 0;
        if (perRep < 64) b[0] &= (1ull << perRep) - 1;
    }
}

// What the instruction sees given the register state: counter mode -> low word is the element count.
inline Exec FromRegister(uint32_t perRep, uint64_t repeat) {
    CoreState& c = Cur();
    Exec x;
    x.perRep = perRep;
    if (c.counterMode) {
        x.counter = true;
        x.count = c.maskReg[0];
    } else {
        x.repeats = repeat;
        x.bits[0] = c.maskReg[0];
        x.bits[1] = c.maskReg[1];
        ClipBits(x.bits, perRep);
    }
    return x;
}

// The mask argument of a level-0 call: mask[] (bitwise) or a continuous length; `set` = isSetMask.
struct MaskArg {
    const uint64_t* bits = nullptr;
    uint64_t len = 0;
    bool set = true;
    static MaskArg Bits(const uint64_t* m, bool set) {
        MaskArg a;
        a.bits = m;
        a.set = set;
        return a;
    }
    static MaskArg Len(uint64_t m, bool set) {
        MaskArg a;
        a.len = m;
        a.set = set;
        return a;
    }
};

// Applies a level-0 mask argument to the register (when isSetMask) and returns the resulting selection.
inline Exec MakeL0Exec(const char* api, const MaskArg& m, uint32_t perRep, uint64_t repeat) {
    if (m.set) {
        if (m.bits != nullptr) {
            RegSet(m.bits[1], m.bits[0]);
        } else {
            uint64_t hi, lo;
            LenToBits(api, (int32_t)m.len, hi, lo);
            RegSet(hi, lo);
            if (Cur().counterMode && lo != m.len) {
                Fail(api,
                     "continuous mask %llu in counter mode: the API writes the bit pattern of %d leading ones "
                     "(low word 0x%016llx), which counter mode reads as an element count of %llu; use the mask[] "
                     "form {count, 0}, or SetVectorMask<T, MaskMode::COUNTER>(count) with isSetMask = false",
                     (unsigned long long)m.len, (int32_t)m.len, (unsigned long long)lo, (unsigned long long)lo);
            }
        }
    }
    return FromRegister(perRep, repeat);
}

// Count form (level 2): counter mode with `count` elements, default strides.
inline Exec CountExec(const char* api, int64_t count, uint32_t perRep) {
    if (count < 0) Fail(api, "count %lld is negative", (long long)count);
    Exec x;
    x.perRep = perRep;
    x.counter = true;
    x.count = (uint64_t)count;
    return x;
}

// ---------------------------------------------------------------------------------------------------------------
// Operands and footprints.
struct Opd {
    uint8_t* p;
    uint32_t size;  // element bytes
    uint32_t blk;   // block stride, 32 B units
    uint32_t rep;   // repeat stride, 32 B units
};

inline uint32_t NextSet(const uint64_t b[2], uint32_t from, uint32_t end) {
    while (from < end) {
        const uint32_t w = from >> 6, off = from & 63u;
        const uint64_t v = b[w] >> off;
        if (v != 0) return std::min(end, from + (uint32_t)__builtin_ctzll(v));
        from = (w + 1) << 6;
    }
    return end;
}

inline uint32_t NextClear(const uint64_t b[2], uint32_t from, uint32_t end) {
    while (from < end) {
        const uint32_t w = from >> 6, off = from & 63u;
        const uint64_t v = (~b[w]) >> off;
        if (v != 0) return std::min(end, from + (uint32_t)__builtin_ctzll(v));
        from = (w + 1) << 6;
    }
    return end;
}

inline int32_t HighestSet(const uint64_t b[2], uint32_t perRep) {
    if (perRep > 64 && b[1] != 0) return 127 - __builtin_clzll(b[1]);
    if (b[0] != 0) return 63 - __builtin_clzll(b[0]);
    return -1;
}

inline uint64_t ElemOffset(const Opd& o, uint64_t r, uint32_t e) {
    const uint32_t epb = 32 / o.size;
    return r * o.rep * 32ull + (uint64_t)(e / epb) * o.blk * 32ull + (uint64_t)(e % epb) * o.size;
}

// One past the last byte the active elements of one repeat touch, relative to the repeat's start.
inline uint64_t RepeatSpan(const Opd& o, const uint64_t b[2], uint32_t perRep) {
    const int32_t hi = HighestSet(b, perRep);
    if (hi < 0) return 0;
    if (o.blk != 0) return ElemOffset(o, 0, (uint32_t)hi) + o.size;
    uint64_t best = 0;  // block stride 0: every block re-reads the first one
    const uint32_t epb = 32 / o.size;
    for (uint32_t e = NextSet(b, 0, perRep); e < perRep; e = NextSet(b, e + 1, perRep)) {
        best = std::max<uint64_t>(best, (uint64_t)(e % epb + 1) * o.size);
    }
    return best;
}

constexpr uint64_t kMaxCounterCount = 1ull << 32;

inline uint64_t SpanEnd(const Opd& o, const Exec& x) {
    const uint64_t R = x.Repeats();
    if (R == 0) return 0;
    uint64_t b[2];
    if (!x.counter) {
        const uint64_t s = RepeatSpan(o, x.bits, x.perRep);
        return s == 0 ? 0 : (R - 1) * o.rep * 32ull + s;
    }
    const uint64_t full = x.count / x.perRep, tail = x.count % x.perRep;
    uint64_t end = 0;
    if (full > 0) {
        x.RepBits(0, b);
        end = (full - 1) * o.rep * 32ull + RepeatSpan(o, b, x.perRep);
    }
    if (tail > 0) {
        x.RepBits(full, b);
        end = std::max<uint64_t>(end, full * o.rep * 32ull + RepeatSpan(o, b, x.perRep));
    }
    return end;
}

inline void DescribeExec(const Exec& x, char* buf, size_t n) {
    if (x.counter) {
        std::snprintf(buf, n, "counter mode, %llu elements", (unsigned long long)x.count);
    } else {
        std::snprintf(buf, n, "%llu repeats, mask 0x%016llx%016llx", (unsigned long long)x.repeats,
                      (unsigned long long)x.bits[1], (unsigned long long)x.bits[0]);
    }
}

// UB position, alignment and footprint of one operand.
template <typename T>
inline void CheckOperand(const char* api, const char* name, const AscendC::LocalTensor<T>& t, const Opd& o,
                         const Exec& x, uint32_t align = 32) {
    if (!t.Valid()) Fail(api, "%s tensor is not allocated", name);
    if (t.Phys() != Mem::UB) {
        Fail(api, "%s must be in UB (VECIN/VECOUT/VECCALC), got position %s", name, PositionName(t.Pos()));
    }
    const uint64_t a = t.Addr(api);
    if (a % align != 0) Fail(api, "%s address %llu in UB is not %u-byte aligned", name, (unsigned long long)a, align);
    if (x.counter && x.count > kMaxCounterCount) {
        Fail(api, "counter mode with an element count of %llu (mask register low word); set the count with "
                  "SetVectorMask<T, MaskMode::COUNTER>(count) or use SetMaskNorm()", (unsigned long long)x.count);
    }
    const uint64_t end = SpanEnd(o, x);
    if (end > t.GetLength()) {
        char d[96];
        DescribeExec(x, d, sizeof d);
        Fail(api, "%s: the instruction reaches byte %llu (%s, blkStride %u, repStride %u) but the tensor has %u bytes",
             name, (unsigned long long)end, d, o.blk, o.rep, t.GetLength());
    }
    NoteAccess(api, Mem::UB, a, end, std::strncmp(name, "dst", 3) == 0);
}

// ---------------------------------------------------------------------------------------------------------------
// Source/destination address overlap (docs/zh/api/SIMD-API/通用说明和约束.md, 通用地址重叠约束; the count forms run
// as repeats of 256 B too). Within one repeat a source sharing bytes with the destination must cover exactly the
// destination's bytes (100% overlap); the destination of a repeat must not overlap a source of a later repeat.
// Operands of different widths (Cast narrow -> wide, Cast.md) can never overlap 100%. narrowInPlace: a narrowing
// Cast with dst and src at one address is legal (Cast.md 约束说明 warns only of narrow -> wide overlap, and the
// general page lets an API's own page decide); each repeat then writes bytes its own or an earlier repeat has
// read, which the later-repeat check below confirms for the strides given.

// Byte intervals [lo, hi) relative to the operand's base that repeat r touches: one per block with active elements.
inline uint32_t RepeatIntervals(const Opd& o, const Exec& x, uint64_t r, uint64_t (*iv)[2]) {
    uint64_t b[2];
    x.RepBits(r, b);
    const uint32_t epb = 32 / o.size, nb = x.perRep / epb;
    uint32_t n = 0;
    for (uint32_t blk = 0; blk < nb; ++blk) {
        const uint32_t lo = NextSet(b, blk * epb, (blk + 1) * epb);
        if (lo >= (blk + 1) * epb) continue;
        uint32_t hi = lo;
        for (uint32_t e = lo; e < (blk + 1) * epb; e = NextSet(b, e + 1, (blk + 1) * epb)) hi = e;
        const uint64_t at = r * o.rep * 32ull + (uint64_t)blk * o.blk * 32ull;
        iv[n][0] = at + (lo % epb) * o.size;
        iv[n][1] = at + (hi % epb + 1) * o.size;
        ++n;
    }
    return n;
}

// The binary APIs whose dst may feed src1 of later repeats when src1RepStride or dstRepStride is 0 (same page).
inline bool ChainsDstIntoSrc1(const char* api) {
    static const char* const k[] = {"Add", "Sub", "Mul", "Max", "Min", "AddRelu", "SubRelu"};
    for (const char* n : k) {
        if (std::strcmp(api, n) == 0) return true;
    }
    return false;
}

// Checks destination `d` against source `s` of one instruction. chainOk: the dst -> later-src1 exemption applies.
inline void CheckOverlap(const char* api, const char* sname, const Opd& d, const Opd& s, const Exec& x, bool chainOk,
                         bool narrowInPlace = false) {
    const uint64_t R = x.Repeats(), de = SpanEnd(d, x), se = SpanEnd(s, x);
    if (R == 0 || de == 0 || se == 0 || d.p >= s.p + se || s.p >= d.p + de) return;
    const bool same = d.p == s.p && d.size == s.size && d.blk == s.blk && d.rep == s.rep;
    uint64_t b0[2];
    x.RepBits(0, b0);
    if (same && (R == 1 || (d.blk != 0 && (uint64_t)d.rep * 32 >= RepeatSpan(d, b0, x.perRep)))) return;  // in place
    const int64_t shift = s.p - d.p;  // source offsets in destination coordinates
    uint8_t* ub = Cur().Base(Mem::UB);
    const uint64_t dOff = (uint64_t)(d.p - ub), sOff = (uint64_t)(s.p - ub);
    uint64_t di[8][2], si[8][2];
    const bool withinRepeatOk = narrowInPlace && d.size < s.size && d.p == s.p;
    for (uint64_t r = 0; r < R && !withinRepeatOk; ++r) {
        const uint32_t nd = RepeatIntervals(d, x, r, di), ns = RepeatIntervals(s, x, r, si);
        bool meet = false;
        for (uint32_t i = 0; i < nd; ++i) {
            for (uint32_t j = 0; j < ns; ++j) {
                meet = meet || ((int64_t)di[i][0] < (int64_t)si[j][1] + shift && (int64_t)si[j][0] + shift < (int64_t)di[i][1]);
            }
        }
        if (!meet) continue;
        bool exact = nd == ns && d.size == s.size;
        for (uint32_t i = 0; exact && i < nd; ++i) {
            exact = (int64_t)di[i][0] == (int64_t)si[i][0] + shift && (int64_t)di[i][1] == (int64_t)si[i][1] + shift;
        }
        if (!exact) {
            Fail(api, "dst (UB byte %llu, %u-byte elements) and %s (UB byte %llu, %u-byte elements) partially overlap in "
                      "repeat %llu (dst bytes [%llu, %llu), %s bytes [%llu, %llu)): only 100%% overlap of same-width "
                      "operands is supported",
                 (unsigned long long)dOff, d.size, sname, (unsigned long long)sOff, s.size, (unsigned long long)r,
                 (unsigned long long)(dOff + di[0][0]), (unsigned long long)(dOff + di[nd - 1][1]), sname,
                 (unsigned long long)(sOff + si[0][0]), (unsigned long long)(sOff + si[ns - 1][1]));
        }
    }
    if (chainOk && (s.rep == 0 || d.rep == 0)) return;
    // Repeat that last reads each destination byte as a source, over the bytes both operands reach.
    const uint64_t lo = std::max(dOff, sOff), hi = std::min(dOff + de, sOff + se);
    std::vector<int32_t> lastRead(hi - lo, -1);
    for (uint64_t r = 0; r < R; ++r) {
        const uint32_t ns = RepeatIntervals(s, x, r, si);
        for (uint32_t j = 0; j < ns; ++j) {
            for (uint64_t a = std::max(lo, sOff + si[j][0]); a < std::min(hi, sOff + si[j][1]); ++a) lastRead[a - lo] = (int32_t)r;
        }
    }
    for (uint64_t r = 0; r < R; ++r) {
        const uint32_t nd = RepeatIntervals(d, x, r, di);
        for (uint32_t i = 0; i < nd; ++i) {
            for (uint64_t a = std::max(lo, dOff + di[i][0]); a < std::min(hi, dOff + di[i][1]); ++a) {
                if (lastRead[a - lo] > (int32_t)r) {
                    Fail(api, "dst of repeat %llu writes UB byte %llu, which %s (UB byte %llu) reads in the later repeat "
                              "%d: a repeat's destination must not overlap the source of a later repeat",
                         (unsigned long long)r, (unsigned long long)a, sname, (unsigned long long)sOff, lastRead[a - lo]);
                }
            }
        }
    }
}

// dstBlkStride 0 makes several blocks of one repeat write the same place: undefined on the NPU.
inline void CheckDstBlkStride(const char* api, const char* field, const Opd& o, const Exec& x) {
    if (o.blk != 0 || x.Repeats() == 0) return;
    uint64_t b[2];
    x.RepBits(0, b);
    const int32_t hi = HighestSet(b, x.perRep);
    const uint32_t lo = NextSet(b, 0, x.perRep);
    const uint32_t epb = 32 / o.size;
    if (hi >= 0 && (uint32_t)hi / epb != lo / epb) {
        Fail(api, "%s = 0 with active elements in more than one block (undefined on the NPU)", field);
    }
}

inline void CheckRepeatRange(const char* api, int64_t repeat) {
    if (repeat < 0 || repeat > AscendC::MAX_REPEAT_TIMES) {
        Fail(api, "repeatTime %lld is outside [0, 255]", (long long)repeat);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Iteration: calls f(ptrs, n, logicalIndex) for each run of n active elements that is contiguous in every operand
// (logicalIndex = r * perRep + e of the run's first element). Repeats run in order.
inline bool IsFull(const uint64_t b[2], uint32_t perRep) {
    if (perRep >= 128) return b[0] == kFullMask && b[1] == kFullMask;
    if (perRep == 64) return b[0] == kFullMask;
    return (b[0] & ((1ull << perRep) - 1)) == ((1ull << perRep) - 1);
}

inline bool AnyInRange(const uint64_t b[2], uint32_t lo, uint32_t hi) { return NextSet(b, lo, hi) < hi; }

// Operands with block stride 1 are used in place. The others are gathered block by block into a local contiguous
// copy of the repeat (only blocks holding active elements; whole 32 B blocks stay inside UB because operands are
// 32 B aligned), so every run of active elements is one call; a gathered destination (operand 0 when dstFirst) is
// scattered back afterwards, its inactive elements unchanged.
template <size_t N, class F>
inline void ForEachRun(const Opd (&o)[N], const Exec& x, uint32_t wideSize, F&& f, bool dstFirst = true) {
    (void)wideSize;
    const uint32_t E = x.perRep;
    const uint64_t R = x.Repeats();
    if (R == 0 || !Computing()) return;
    bool contig = true;
    for (size_t k = 0; k < N; ++k) {
        contig = contig && o[k].blk == 1 && (uint64_t)o[k].rep * 32u == (uint64_t)E * o[k].size;
    }
    uint8_t* p[N];
    if (contig && (x.counter || IsFull(x.bits, E))) {
        for (size_t k = 0; k < N; ++k) p[k] = o[k].p;
        f(p, x.counter ? x.count : R * E, (uint64_t)0);
        return;
    }
    alignas(64) uint8_t loc[N][256];
    uint8_t* base[N];
    uint64_t b[2];
    for (uint64_t r = 0; r < R; ++r) {
        x.RepBits(r, b);
        for (size_t k = 0; k < N; ++k) {
            uint8_t* at = o[k].p + r * o[k].rep * 32ull;
            if (o[k].blk == 1) {
                base[k] = at;
                continue;
            }
            base[k] = loc[k];
            const uint32_t epb = 32 / o[k].size, nb = E / epb;
            for (uint32_t blk = 0; blk < nb; ++blk) {
                if (AnyInRange(b, blk * epb, (blk + 1) * epb)) std::memcpy(loc[k] + blk * 32, at + (uint64_t)blk * o[k].blk * 32, 32);
            }
        }
        for (uint32_t s = NextSet(b, 0, E); s < E;) {
            const uint32_t t = NextClear(b, s, E);
            for (size_t k = 0; k < N; ++k) p[k] = base[k] + (uint64_t)s * o[k].size;
            f(p, (uint64_t)(t - s), r * E + s);
            s = NextSet(b, t, E);
        }
        if (dstFirst && o[0].blk != 1) {
            uint8_t* at = o[0].p + r * o[0].rep * 32ull;
            const uint32_t epb = 32 / o[0].size, nb = E / epb;
            for (uint32_t blk = 0; blk < nb; ++blk) {
                if (AnyInRange(b, blk * epb, (blk + 1) * epb)) std::memcpy(at + (uint64_t)blk * o[0].blk * 32, loc[0] + blk * 32, 32);
            }
        }
    }
}

inline void TraceV(const char* api, uint64_t elems, uint64_t bytes, uint64_t repeats, const void* dst, const void* src) {
    Trace(api, PIPE_V, elems, bytes, (uint32_t)std::min<uint64_t>(repeats, 0xFFFFFFFFull), dst, src);
}

// ---------------------------------------------------------------------------------------------------------------
// Element storage vs. compute type, with chunked array load/store (locals keep the compute loops vectorisable).
constexpr uint32_t kChunk = 64;

template <typename T>
struct Lane {
    using C = T;
    static void Load(C* o, const T* i, uint32_t n) { std::memcpy(o, i, (size_t)n * sizeof(T)); }
    static void Store(T* o, const C* i, uint32_t n) { std::memcpy(o, i, (size_t)n * sizeof(T)); }
    static C Of(const T& v) { return v; }
};

template <>
struct Lane<half> {
    using C = float;
    static void Load(C* o, const half* i, uint32_t n) { vnum::HalfToFloat(o, reinterpret_cast<const uint16_t*>(i), n); }
    static void Store(half* o, const C* i, uint32_t n) { vnum::FloatToHalf(reinterpret_cast<uint16_t*>(o), i, n); }
    static C Of(const half& v) { return vnum::HalfToFloat1(v.bits); }
};

template <>
struct Lane<bfloat16_t> {
    using C = float;
    static void Load(C* o, const bfloat16_t* i, uint32_t n) {
        const uint16_t* s = reinterpret_cast<const uint16_t*>(i);
        for (uint32_t j = 0; j < n; ++j) o[j] = vnum::Bf16ToFloat1(s[j]);
    }
    static void Store(bfloat16_t* o, const C* i, uint32_t n) {
        uint16_t* d = reinterpret_cast<uint16_t*>(o);
        for (uint32_t j = 0; j < n; ++j) d[j] = vnum::FloatToBf16Rne1(i[j]);
    }
    static C Of(const bfloat16_t& v) { return vnum::Bf16ToFloat1(v.bits); }
};

// Element kernels over n contiguous elements. Op::F is the per-element function on the compute type. Every chunk,
// the last one too, is computed at the full fixed width (stale lanes are computed and dropped), so the compute
// loops are vectorised whatever n is.
template <class Op, typename T>
inline void RunBinary(T* d, const T* a, const T* b, uint64_t n) {
    using L = Lane<T>;
    using C = typename L::C;
    alignas(64) C xa[kChunk] = {}, xb[kChunk] = {}, xr[kChunk];
    for (uint64_t i = 0; i < n; i += kChunk) {
        const uint32_t m = (uint32_t)std::min<uint64_t>(kChunk, n - i);
        L::Load(xa, a + i, m);
        L::Load(xb, b + i, m);
        for (uint32_t j = 0; j < kChunk; ++j) xr[j] = Op::F(xa[j], xb[j]);
        L::Store(d + i, xr, m);
    }
}

template <class Op, typename T>
inline void RunScalar(T* d, const T* a, typename Lane<T>::C s, uint64_t n) {
    using L = Lane<T>;
    using C = typename L::C;
    alignas(64) C xa[kChunk] = {}, xr[kChunk];
    for (uint64_t i = 0; i < n; i += kChunk) {
        const uint32_t m = (uint32_t)std::min<uint64_t>(kChunk, n - i);
        L::Load(xa, a + i, m);
        for (uint32_t j = 0; j < kChunk; ++j) xr[j] = Op::F(xa[j], s);
        L::Store(d + i, xr, m);
    }
}

template <class Op, typename T>
inline void RunUnary(T* d, const T* a, uint64_t n) {
    using L = Lane<T>;
    using C = typename L::C;
    alignas(64) C xa[kChunk] = {}, xr[kChunk];
    for (uint64_t i = 0; i < n; i += kChunk) {
        const uint32_t m = (uint32_t)std::min<uint64_t>(kChunk, n - i);
        L::Load(xa, a + i, m);
        for (uint32_t j = 0; j < kChunk; ++j) xr[j] = Op::F(xa[j]);
        L::Store(d + i, xr, m);
    }
}

}  // namespace vec
}  // namespace twin
