// Reductions on dav-2201 (half and float):
// - ReduceRepeat<ReduceType> (old names WholeReduceMax/Min/Sum, RepeatReduceSum): one result per repeat. SUM is a binary tree of
//   adjacent pairs over the repeat (rounded to T at every level). MAX/MIN give the value and the index inside the
//   repeat (ties -> smallest index), laid out by ReduceOrder; the index is stored as raw integer bits of T
//   (ORDER_ONLY_INDEX: as uint32_t). dstRepStride counts result slots (table 3 of the ReduceRepeat page).
// - ReduceDataBlock<ReduceType> (old names BlockReduceMax/Min/Sum, repeatTime before mask): one result per 32 B
//   block, 8 per repeat; dstRepStride counts 8 results; blocks without active elements are not written.
// - ReducePairElem<SUM> (old name PairReduceSum): sums of adjacent pairs; dstRepStride counts 128 B.
// - ReduceMax / ReduceMin / ReduceSum with sharedTmpBuffer: level 0 (mask, int32 repeatTime, srcRepStride) and
//   count forms; result in dst[0], with calIndex the index bits in dst[1]. The temporary buffer must hold the
//   documented size and must not overlap src (dst may share its bytes); the twin writes the first-round partial
//   results into it, as the NPU does.
//   ReduceSum count form (A2): repeat sums are tree sums, accumulated in order; the per-repeat sums land in
//   dst[0..repeats) before dst[0] receives the total.
// Level-0 repeatTime of ReduceRepeat / ReduceDataBlock / ReducePairElem is an int32 limited to [0, 255].
// The max/min reductions write MAX_MIN_CNT and the ReduceSum count form ACC_VAL (reduce_spr.h has the getters).
#pragma once
#include "twin/vector/more_common.h"
#include "twin/vector/reduce_spr.h"

namespace twin {
namespace vec {

template <typename T>
inline float RoundT(float f) {
    if constexpr (std::is_same_v<T, half>) return vnum::HalfToFloat1(vnum::FloatToHalf1(f));
    else return f;
}

template <typename T>
inline float LoadF(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return Lane<T>::Of(v);
}

template <typename T>
inline void StoreValue(uint8_t* p, float f) {
    T v;
    if constexpr (std::is_same_v<T, half>) v.bits = vnum::FloatToHalf1(f);
    else v = f;
    std::memcpy(p, &v, sizeof(T));
}

template <typename T>
inline void StoreIndex(uint8_t* p, uint64_t idx) {
    if constexpr (sizeof(T) == 2) {
        const uint16_t v = (uint16_t)idx;
        std::memcpy(p, &v, 2);
    } else {
        const uint32_t v = (uint32_t)idx;
        std::memcpy(p, &v, 4);
    }
}

template <typename T>
inline void TreeSum(float* v, uint32_t n) {  // n is a power of two; result in v[0]
    for (uint32_t w = n; w > 1; w /= 2) {
        for (uint32_t i = 0; i < w / 2; ++i) v[i] = RoundT<T>(v[2 * i] + v[2 * i + 1]);
    }
}

// Active values of repeat r (inactive -> `fill`); returns the number of active elements.
template <typename T>
inline uint32_t GatherRepeat(const Opd& o, const Exec& x, uint64_t r, float* v, bool* act, float fill) {
    uint64_t b[2];
    x.RepBits(r, b);
    uint32_t n = 0;
    for (uint32_t e = 0; e < x.perRep; ++e) {
        act[e] = (b[e >> 6] >> (e & 63)) & 1u;
        v[e] = act[e] ? LoadF<T>(o.p + ElemOffset(o, r, e)) : fill;
        n += act[e];
    }
    return n;
}

struct ArgBest {
    bool have = false;
    float v = 0;
    uint64_t idx = 0;
    void Offer(bool isMax, float x, uint64_t i) {
        const bool xn = x != x, bn = v != v;
        bool better;
        if (!have) better = true;
        else if (xn || bn) better = xn && !bn;  // the first NaN wins
        else better = isMax ? x > v : x < v;
        if (better) {
            have = true;
            v = x;
            idx = i;
        }
    }
};

inline void CheckStride(const char* api, const char* name, int32_t v) {
    if (v < 0 || v > 65535) Fail(api, "%s %d is outside [0, 65535]", name, v);
}

template <typename T>
inline void CheckReduceSrc(const char* api, const AscendC::LocalTensor<T>& src, const Opd& o, const Exec& x) {
    CheckOperand(api, "src", src, o, x);
}

template <typename T>
inline void CheckReduceDst(const char* api, const AscendC::LocalTensor<T>& dst, uint32_t align, uint64_t endBytes) {
    if (!dst.Valid()) Fail(api, "dst tensor is not allocated");
    if (dst.Phys() != Mem::UB) Fail(api, "dst must be in UB (VECIN/VECOUT/VECCALC), got position %s", PositionName(dst.Pos()));
    CheckAlign(api, "dst", dst, align);
    if (endBytes > dst.GetLength()) {
        Fail(api, "dst: the results reach byte %llu but the tensor has %u bytes", (unsigned long long)endBytes,
             dst.GetLength());
    }
}

inline uint64_t LastActiveRepeat(const Exec& x, bool& any) {
    const uint64_t R = x.Repeats();
    any = R > 0 && (x.counter ? x.count > 0 : HighestSet(x.bits, x.perRep) >= 0);
    return any ? R - 1 : 0;
}

// ---- ReduceRepeat ----
// The level-0 reductions' common start: AIV only, repeat and stride ranges, the selection and the source check.
struct ReduceSrc {
    Exec x;
    Opd o;
};
template <typename T>
inline ReduceSrc ReduceL0Source(const char* api, const AscendC::LocalTensor<T>& src, const MaskArg& m, int32_t repeatTime,
                                int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride) {
    RequireAiv(api);
    CheckRepeatRange(api, repeatTime);
    CheckStride(api, "dstRepStride", dstRepStride);
    CheckStride(api, "srcBlkStride", srcBlkStride);
    CheckStride(api, "srcRepStride", srcRepStride);
    ReduceSrc r{MakeL0Exec(api, m, 256 / sizeof(T), (uint64_t)repeatTime),
                {src.Ptr(), (uint32_t)sizeof(T), (uint32_t)srcBlkStride, (uint32_t)srcRepStride}};
    CheckReduceSrc(api, src, r.o, r.x);
    return r;
}

template <AscendC::ReduceType RT, typename T>
inline void ReduceRepeatRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                            const MaskArg& m, int32_t repeatTime, int32_t dstRepStride, int32_t srcBlkStride,
                            int32_t srcRepStride, AscendC::ReduceOrder order) {
    if ((int)order > 3) Fail(api, "order %d is not a ReduceOrder", (int)order);
    const ReduceSrc rs = ReduceL0Source(api, src, m, repeatTime, dstRepStride, srcBlkStride, srcRepStride);
    const Exec& x = rs.x;
    const Opd& o = rs.o;
    uint32_t unit, resBytes, align;
    if (RT == AscendC::ReduceType::SUM) {
        unit = resBytes = align = sizeof(T);
    } else if (order == AscendC::ReduceOrder::ORDER_ONLY_VALUE) {
        unit = resBytes = align = sizeof(T);
    } else if (order == AscendC::ReduceOrder::ORDER_ONLY_INDEX) {
        unit = resBytes = align = 4;
    } else {
        unit = resBytes = align = 2 * sizeof(T);
    }
    bool any;
    const uint64_t last = LastActiveRepeat(x, any);
    CheckReduceDst(api, dst, align, any ? last * (uint64_t)dstRepStride * unit + resBytes : 0);
    const uint64_t R = x.Repeats();
    float v[128];
    bool act[128];
    ArgBest all;  // MAX_MIN_CNT: the extreme over all repeats
    for (uint64_t r = 0; r < R && twin::Computing(); ++r) {
        if (GatherRepeat<T>(o, x, r, v, act, 0.0f) == 0) continue;
        uint8_t* d = dst.Ptr() + r * (uint64_t)dstRepStride * unit;
        if constexpr (RT == AscendC::ReduceType::SUM) {
            TreeSum<T>(v, x.perRep);
            StoreValue<T>(d, v[0]);
        } else {
            ArgBest best;
            for (uint32_t e = 0; e < x.perRep; ++e) {
                if (act[e]) best.Offer(RT == AscendC::ReduceType::MAX, v[e], e);
            }
            all.Offer(RT == AscendC::ReduceType::MAX, best.v, r * x.perRep + best.idx);
            switch (order) {
                case AscendC::ReduceOrder::ORDER_VALUE_INDEX:
                    StoreValue<T>(d, best.v);
                    StoreIndex<T>(d + sizeof(T), best.idx);
                    break;
                case AscendC::ReduceOrder::ORDER_INDEX_VALUE:
                    StoreIndex<T>(d, best.idx);
                    StoreValue<T>(d + sizeof(T), best.v);
                    break;
                case AscendC::ReduceOrder::ORDER_ONLY_VALUE:
                    StoreValue<T>(d, best.v);
                    break;
                default: {
                    const uint32_t i32 = (uint32_t)best.idx;
                    std::memcpy(d, &i32, 4);
                    break;
                }
            }
        }
    }
    if (R > 0) {  // repeatTime 0 is a NOP and leaves the registers as they are
        if constexpr (RT == AscendC::ReduceType::SUM) InvalidateAcc(api);
        else RecordMaxMin<T>(all.have, srcBlkStride == 1 && srcRepStride == 8, x.counter, all.v, all.idx);
    }
    TraceV(api, x.Active(), x.Active() * sizeof(T) + R * resBytes, R, dst.Ptr(), src.Ptr());
}

// ---- ReduceDataBlock ----
template <AscendC::ReduceType RT, typename T>
inline void ReduceDataBlockRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                               const MaskArg& m, int32_t repeatTime, int32_t dstRepStride, int32_t srcBlkStride,
                               int32_t srcRepStride) {
    const ReduceSrc rs = ReduceL0Source(api, src, m, repeatTime, dstRepStride, srcBlkStride, srcRepStride);
    const Exec& x = rs.x;
    const Opd& o = rs.o;
    constexpr uint32_t epb = 32 / sizeof(T);
    const uint64_t R = x.Repeats();
    // footprint: the last written block of the last repeat
    uint64_t end = 0;
    for (uint64_t r = (R > 2 ? R - 2 : 0); r < R; ++r) {
        uint64_t b[2];
        x.RepBits(r, b);
        const int32_t hi = HighestSet(b, x.perRep);
        if (hi >= 0) end = std::max<uint64_t>(end, (r * (uint64_t)dstRepStride * 8 + (uint32_t)hi / epb + 1) * sizeof(T));
    }
    CheckReduceDst(api, dst, 8 * sizeof(T), end);
    float v[128];
    bool act[128];
    for (uint64_t r = 0; r < R && twin::Computing(); ++r) {
        if (GatherRepeat<T>(o, x, r, v, act, 0.0f) == 0) continue;
        for (uint32_t blk = 0; blk < 8; ++blk) {
            float* bv = v + blk * epb;
            bool* ba = act + blk * epb;
            bool anyAct = false;
            for (uint32_t i = 0; i < epb; ++i) anyAct = anyAct || ba[i];
            if (!anyAct) continue;
            uint8_t* d = dst.Ptr() + (r * (uint64_t)dstRepStride * 8 + blk) * sizeof(T);
            if constexpr (RT == AscendC::ReduceType::SUM) {
                TreeSum<T>(bv, epb);
                StoreValue<T>(d, bv[0]);
            } else {
                ArgBest best;
                for (uint32_t i = 0; i < epb; ++i) {
                    if (ba[i]) best.Offer(RT == AscendC::ReduceType::MAX, bv[i], i);
                }
                StoreValue<T>(d, best.v);
            }
        }
    }
    TraceV(api, x.Active(), x.Active() * sizeof(T) + R * 8 * sizeof(T), R, dst.Ptr(), src.Ptr());
}

// ---- ReducePairElem ----
template <typename T>
inline void ReducePairRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                          const MaskArg& m, int32_t repeatTime, int32_t dstRepStride, int32_t srcBlkStride,
                          int32_t srcRepStride) {
    const ReduceSrc rs = ReduceL0Source(api, src, m, repeatTime, dstRepStride, srcBlkStride, srcRepStride);
    const Exec& x = rs.x;
    const Opd& o = rs.o;
    const uint64_t R = x.Repeats();
    constexpr uint32_t perOut = 128 / sizeof(T);  // outputs per repeat slot (128 B)
    uint64_t end = 0;
    for (uint64_t r = (R > 2 ? R - 2 : 0); r < R; ++r) {
        uint64_t b[2];
        x.RepBits(r, b);
        const int32_t hi = HighestSet(b, x.perRep);
        if (hi >= 0) end = std::max<uint64_t>(end, (r * (uint64_t)dstRepStride * perOut + (uint32_t)hi / 2 + 1) * sizeof(T));
    }
    CheckReduceDst(api, dst, 32, end);
    float v[128];
    bool act[128];
    for (uint64_t r = 0; r < R && twin::Computing(); ++r) {
        if (GatherRepeat<T>(o, x, r, v, act, 0.0f) == 0) continue;
        for (uint32_t k = 0; k < x.perRep / 2; ++k) {
            if (!act[2 * k] && !act[2 * k + 1]) continue;
            StoreValue<T>(dst.Ptr() + (r * (uint64_t)dstRepStride * perOut + k) * sizeof(T), RoundT<T>(v[2 * k] + v[2 * k + 1]));
        }
    }
    TraceV(api, x.Active(), x.Active() * sizeof(T) * 3 / 2, R, dst.Ptr(), src.Ptr());
}

// ---- ReduceMax / ReduceMin / ReduceSum with sharedTmpBuffer ----
inline uint64_t AlignUpU(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Documented sharedTmpBuffer size in elements for MAX/MIN (first round = firstRepeats repeats).
inline uint64_t MaxMinTmpElems(uint64_t firstRepeats, uint32_t perRep, uint32_t perBlk, bool calIndex) {
    const uint64_t it1 = firstRepeats * 2;
    if (!calIndex) return AlignUpU(it1, perBlk);
    const uint64_t it2Start = AlignUpU(it1, perBlk);
    const uint64_t it2Out = AlignUpU(it1, perRep) / perRep * 2;
    const uint64_t it2End = AlignUpU(it2Out, perBlk);
    uint64_t need = it2Start + it2End;
    if (it2Out > 2) {
        const uint64_t it3Out = AlignUpU(it2Out, perRep) / perRep * 2;
        need = it2Start + it2End + AlignUpU(it3Out, perBlk);
    }
    return need;
}

template <typename T>
inline void CheckTmp(const char* api, const AscendC::LocalTensor<T>& tmp, uint64_t elems) {
    if (!tmp.Valid()) Fail(api, "sharedTmpBuffer tensor is not allocated");
    if (tmp.Phys() != Mem::UB) Fail(api, "sharedTmpBuffer must be in UB, got position %s", PositionName(tmp.Pos()));
    CheckAlign(api, "sharedTmpBuffer", tmp, 32);
    if (elems * sizeof(T) > tmp.GetLength()) {
        Fail(api, "sharedTmpBuffer needs %llu elements (%llu bytes) but has %u bytes", (unsigned long long)elems,
             (unsigned long long)(elems * sizeof(T)), tmp.GetLength());
    }
}

// sharedTmpBuffer takes the first round's results while src is still being read. The pages let it share bytes with
// dst only (ReduceSum.md / ReduceMax.md / ReduceMin.md 约束说明); for src the general rule holds (通用说明和约束.md,
// 通用地址重叠约束: no partial overlap, no earlier result over a later repeat's source).
template <typename T>
inline void CheckTmpApartFromSrc(const char* api, const AscendC::LocalTensor<T>& tmp, uint64_t tmpElems, const Opd& o,
                                 const Exec& x) {
    if (Overlaps(tmp.Ptr(), tmpElems * sizeof(T), o.p, SpanEnd(o, x))) {
        uint8_t* ub = Cur().Base(Mem::UB);
        Fail(api, "sharedTmpBuffer (UB bytes [%lld, %lld)) overlaps src (UB bytes [%lld, %lld)); only dst may share "
                  "bytes with sharedTmpBuffer", (long long)(tmp.Ptr() - ub), (long long)(tmp.Ptr() - ub + tmpElems * sizeof(T)),
             (long long)(o.p - ub), (long long)(o.p - ub + SpanEnd(o, x)));
    }
}

// Max/Min over the selected elements (logical index r*E + e); partials [value, index] go to tmp.
template <bool isMax, typename T>
inline void ReduceMaxMinRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                            const AscendC::LocalTensor<T>& tmp, const Exec& x, uint32_t srcRepStride, bool calIndex,
                            uint64_t firstRepeats, bool countForm = false) {
    const Opd o = {src.Ptr(), (uint32_t)sizeof(T), 1, srcRepStride};
    CheckReduceSrc(api, src, o, x);
    constexpr uint32_t perBlk = 32 / sizeof(T);
    const uint64_t need = MaxMinTmpElems(firstRepeats, x.perRep, perBlk, calIndex);
    CheckTmp(api, tmp, need);
    CheckTmpApartFromSrc(api, tmp, need, o, x);
    CheckReduceDst(api, dst, calIndex ? 2 * sizeof(T) : sizeof(T), (calIndex ? 2 : 1) * sizeof(T));
    const uint64_t R = x.Repeats();
    float v[128];
    bool act[128];
    ArgBest total;
    for (uint64_t r = 0; r < R && twin::Computing(); ++r) {
        if (GatherRepeat<T>(o, x, r, v, act, 0.0f) == 0) continue;
        ArgBest best;
        for (uint32_t e = 0; e < x.perRep; ++e) {
            if (act[e]) best.Offer(isMax, v[e], e);
        }
        if (2 * r + 1 < need) {
            StoreValue<T>(tmp.Ptr() + 2 * r * sizeof(T), best.v);
            StoreIndex<T>(tmp.Ptr() + (2 * r + 1) * sizeof(T), best.idx);
        }
        total.Offer(isMax, best.v, r * x.perRep + best.idx);
    }
    // MAX_MIN_CNT keeps the value; the page documents its index as inaccurate here (the twin: all ones).
    if (R > 0) RecordMaxMin<T>(total.have, srcRepStride == 8, x.counter && !countForm, total.v, ~0ull);
    if (!total.have) {
        TraceV(api, 0, 0, R, dst.Ptr(), src.Ptr());
        return;
    }
    if (calIndex && sizeof(T) == 2 && total.idx > 65535) {
        Fail(api, "the result index %llu does not fit the half index field (at most 65535)", (unsigned long long)total.idx);
    }
    StoreValue<T>(dst.Ptr(), total.v);
    if (calIndex) StoreIndex<T>(dst.Ptr() + sizeof(T), total.idx);
    TraceV(api, x.Active(), x.Active() * sizeof(T), R, dst.Ptr(), src.Ptr());
}

// Level-0 ReduceSum: tree per repeat, then trees over the partials (E at a time) until one value remains.
template <typename T>
inline void ReduceSumL0Run(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                           const AscendC::LocalTensor<T>& tmp, const Exec& x, uint32_t srcRepStride) {
    const Opd o = {src.Ptr(), (uint32_t)sizeof(T), 1, srcRepStride};
    CheckReduceSrc(api, src, o, x);
    constexpr uint32_t perBlk = 32 / sizeof(T);
    const uint64_t R = x.Repeats();
    CheckTmp(api, tmp, AlignUpU(R, perBlk));
    CheckTmpApartFromSrc(api, tmp, AlignUpU(R, perBlk), o, x);
    CheckReduceDst(api, dst, sizeof(T), sizeof(T));
    if (R > 0) InvalidateAcc("ReduceSum (mask form)");
    if (R == 0 || x.Active() == 0) {
        TraceV(api, 0, 0, R, dst.Ptr(), src.Ptr());
        return;
    }
    float v[128];
    bool act[128];
    for (uint64_t r = 0; r < R && twin::Computing(); ++r) {
        GatherRepeat<T>(o, x, r, v, act, 0.0f);
        TreeSum<T>(v, x.perRep);
        StoreValue<T>(tmp.Ptr() + r * sizeof(T), v[0]);
    }
    uint64_t n = R;
    while (n > 1) {
        const uint64_t groups = (n + x.perRep - 1) / x.perRep;
        for (uint64_t g = 0; g < groups; ++g) {
            for (uint32_t e = 0; e < x.perRep; ++e) {
                const uint64_t i = g * x.perRep + e;
                v[e] = i < n ? LoadF<T>(tmp.Ptr() + i * sizeof(T)) : 0.0f;
            }
            TreeSum<T>(v, x.perRep);
            StoreValue<T>(tmp.Ptr() + g * sizeof(T), v[0]);
        }
        n = groups;
    }
    std::memmove(dst.Ptr(), tmp.Ptr(), sizeof(T));
    TraceV(api, x.Active(), x.Active() * sizeof(T), R, dst.Ptr(), src.Ptr());
}

template <typename T>
inline void ReduceTypeCheck() {
    static_assert(OneOf<T, half, float, bfloat16_t>, "reductions support half and float on dav-2201");
}

template <typename T>
inline Exec ReduceL0Exec(const char* api, const MaskArg& m, int32_t repeatTime) {
    if (repeatTime < 0) Fail(api, "repeatTime %d is negative", repeatTime);
    return MakeL0Exec(api, m, 256 / sizeof(T), (uint64_t)repeatTime);
}

}  // namespace vec
}  // namespace twin

namespace AscendC {

// ---- current names ----
template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask, const int32_t repeatTime,
                         const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,
                         ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX) {
    static_assert(std::is_same_v<T, U>, "ReduceRepeat: dst and src types must match on dav-2201");
    twin::vec::ReduceTypeCheck<T>();
    twin::vec::RejectBf16<T>("ReduceRepeat");
    twin::vec::ReduceRepeatRun<reduceType, T>("ReduceRepeat", dst, src, twin::vec::MaskArg::Len((uint64_t)(int64_t)mask, isSetMask),
                                              repeatTime, dstRepStride, srcBlkStride, srcRepStride, order);
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[],
                         const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                         const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX) {
    static_assert(std::is_same_v<T, U>, "ReduceRepeat: dst and src types must match on dav-2201");
    twin::vec::ReduceTypeCheck<T>();
    twin::vec::RejectBf16<T>("ReduceRepeat");
    twin::vec::ReduceRepeatRun<reduceType, T>("ReduceRepeat", dst, src, twin::vec::MaskArg::Bits(mask, isSetMask),
                                              repeatTime, dstRepStride, srcBlkStride, srcRepStride, order);
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceDataBlock(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask,
                            const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                            const int32_t srcRepStride) {
    static_assert(std::is_same_v<T, U>, "ReduceDataBlock: dst and src types must match on dav-2201");
    twin::vec::ReduceTypeCheck<T>();
    twin::vec::RejectBf16<T>("ReduceDataBlock");
    twin::vec::ReduceDataBlockRun<reduceType, T>("ReduceDataBlock", dst, src,
                                                 twin::vec::MaskArg::Len((uint64_t)(int64_t)mask, isSetMask), repeatTime,
                                                 dstRepStride, srcBlkStride, srcRepStride);
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReduceDataBlock(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[],
                            const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                            const int32_t srcRepStride) {
    static_assert(std::is_same_v<T, U>, "ReduceDataBlock: dst and src types must match on dav-2201");
    twin::vec::ReduceTypeCheck<T>();
    twin::vec::RejectBf16<T>("ReduceDataBlock");
    twin::vec::ReduceDataBlockRun<reduceType, T>("ReduceDataBlock", dst, src, twin::vec::MaskArg::Bits(mask, isSetMask),
                                                 repeatTime, dstRepStride, srcBlkStride, srcRepStride);
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReducePairElem(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask,
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride) {
    static_assert(reduceType == ReduceType::SUM, "ReducePairElem supports only ReduceType::SUM");
    static_assert(std::is_same_v<T, U>, "ReducePairElem: dst and src types must match on dav-2201");
    twin::vec::ReduceTypeCheck<T>();
    twin::vec::RejectBf16<T>("ReducePairElem");
    twin::vec::ReducePairRun<T>("ReducePairElem", dst, src, twin::vec::MaskArg::Len((uint64_t)(int64_t)mask, isSetMask),
                                repeatTime, dstRepStride, srcBlkStride, srcRepStride);
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
inline void ReducePairElem(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[],
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride) {
    static_assert(reduceType == ReduceType::SUM, "ReducePairElem supports only ReduceType::SUM");
    static_assert(std::is_same_v<T, U>, "ReducePairElem: dst and src types must match on dav-2201");
    twin::vec::ReduceTypeCheck<T>();
    twin::vec::RejectBf16<T>("ReducePairElem");
    twin::vec::ReducePairRun<T>("ReducePairElem", dst, src, twin::vec::MaskArg::Bits(mask, isSetMask), repeatTime,
                                dstRepStride, srcBlkStride, srcRepStride);
}

// ---- deprecated names ----
#define TWIN_WHOLE_REDUCE_MAXMIN(NAME, RT)                                                                            \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],                     \
                     const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,                \
                     const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX) {                \
        twin::vec::ReduceTypeCheck<T>();                                                                              \
        twin::vec::RejectBf16<T>(#NAME);                                                                              \
        twin::vec::ReduceRepeatRun<RT, T>(#NAME, dst, src, twin::vec::MaskArg::Bits(mask, isSetMask), repeatTime,     \
                                          dstRepStride, srcBlkStride, srcRepStride, order);                          \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,                        \
                     const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,                \
                     const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX) {                \
        twin::vec::ReduceTypeCheck<T>();                                                                              \
        twin::vec::RejectBf16<T>(#NAME);                                                                              \
        twin::vec::ReduceRepeatRun<RT, T>(#NAME, dst, src, twin::vec::MaskArg::Len((uint64_t)(int64_t)mask, isSetMask), \
                                          repeatTime, dstRepStride, srcBlkStride, srcRepStride, order);              \
    }

TWIN_WHOLE_REDUCE_MAXMIN(WholeReduceMax, ReduceType::MAX)
TWIN_WHOLE_REDUCE_MAXMIN(WholeReduceMin, ReduceType::MIN)
#undef TWIN_WHOLE_REDUCE_MAXMIN

template <typename T, bool isSetMask = true>
inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride) {
    twin::vec::ReduceTypeCheck<T>();
    twin::vec::RejectBf16<T>("WholeReduceSum");
    twin::vec::ReduceRepeatRun<ReduceType::SUM, T>("WholeReduceSum", dst, src, twin::vec::MaskArg::Bits(mask, isSetMask),
                                                   repeatTime, dstRepStride, srcBlkStride, srcRepStride,
                                                   ReduceOrder::ORDER_ONLY_VALUE);
}

template <typename T, bool isSetMask = true>
inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride) {
    twin::vec::ReduceTypeCheck<T>();
    twin::vec::RejectBf16<T>("WholeReduceSum");
    twin::vec::ReduceRepeatRun<ReduceType::SUM, T>("WholeReduceSum", dst, src,
                                                   twin::vec::MaskArg::Len((uint64_t)(int64_t)mask, isSetMask),
                                                   repeatTime, dstRepStride, srcBlkStride, srcRepStride,
                                                   ReduceOrder::ORDER_ONLY_VALUE);
}

// RepeatReduceSum: the old name of ReduceRepeat<SUM> with repeatTime before mask; dstBlkStride is a dead argument
// (docs/zh/api/附录/接口变更说明.md: "删除无效参数dstBlkStride").
template <typename T, bool isSetMask = true>
inline void RepeatReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                            const int32_t mask, const int32_t dstBlkStride, const int32_t srcBlkStride,
                            const int32_t dstRepStride, const int32_t srcRepStride) {
    (void)dstBlkStride;
    twin::vec::ReduceTypeCheck<T>();
    twin::vec::RejectBf16<T>("RepeatReduceSum");
    twin::vec::ReduceRepeatRun<ReduceType::SUM, T>("RepeatReduceSum", dst, src,
                                                   twin::vec::MaskArg::Len((uint64_t)(int64_t)mask, isSetMask),
                                                   repeatTime, dstRepStride, srcBlkStride, srcRepStride,
                                                   ReduceOrder::ORDER_ONLY_VALUE);
}

#define TWIN_BLOCK_REDUCE(NAME, RT)                                                                                   \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,                  \
                     const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,                      \
                     const int32_t srcRepStride) {                                                                    \
        twin::vec::ReduceTypeCheck<T>();                                                                              \
        twin::vec::RejectBf16<T>(#NAME);                                                                              \
        twin::vec::ReduceDataBlockRun<RT, T>(#NAME, dst, src, twin::vec::MaskArg::Len((uint64_t)(int64_t)mask, isSetMask), \
                                             repeatTime, dstRepStride, srcBlkStride, srcRepStride);                   \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,                  \
                     const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,                   \
                     const int32_t srcRepStride) {                                                                    \
        twin::vec::ReduceTypeCheck<T>();                                                                              \
        twin::vec::RejectBf16<T>(#NAME);                                                                              \
        twin::vec::ReduceDataBlockRun<RT, T>(#NAME, dst, src, twin::vec::MaskArg::Bits(mask, isSetMask), repeatTime, \
                                             dstRepStride, srcBlkStride, srcRepStride);                               \
    }

TWIN_BLOCK_REDUCE(BlockReduceSum, ReduceType::SUM)
TWIN_BLOCK_REDUCE(BlockReduceMax, ReduceType::MAX)
TWIN_BLOCK_REDUCE(BlockReduceMin, ReduceType::MIN)
#undef TWIN_BLOCK_REDUCE

template <typename T, bool isSetMask = true>
inline void PairReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                          const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,
                          const int32_t srcRepStride) {
    twin::vec::ReduceTypeCheck<T>();
    twin::vec::RejectBf16<T>("PairReduceSum");
    twin::vec::ReducePairRun<T>("PairReduceSum", dst, src, twin::vec::MaskArg::Len((uint64_t)(int64_t)mask, isSetMask),
                                repeatTime, dstRepStride, srcBlkStride, srcRepStride);
}

template <typename T, bool isSetMask = true>
inline void PairReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                          const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,
                          const int32_t srcRepStride) {
    twin::vec::ReduceTypeCheck<T>();
    twin::vec::RejectBf16<T>("PairReduceSum");
    twin::vec::ReducePairRun<T>("PairReduceSum", dst, src, twin::vec::MaskArg::Bits(mask, isSetMask), repeatTime,
                                dstRepStride, srcBlkStride, srcRepStride);
}

// ---- ReduceMax / ReduceMin / ReduceSum with sharedTmpBuffer ----
#define TWIN_REDUCE_MAXMIN(NAME, ISMAX)                                                                               \
    template <typename T>                                                                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,     \
                     const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride, bool calIndex = 0) {   \
        twin::vec::ReduceTypeCheck<T>();                                                                              \
        twin::RequireAiv(#NAME);                                                                                      \
        twin::vec::RejectBf16<T>(#NAME);                                                                              \
        twin::vec::CheckStride(#NAME, "srcRepStride", srcRepStride);                                                  \
        const twin::vec::Exec x =                                                                                     \
            twin::vec::ReduceL0Exec<T>(#NAME, twin::vec::MaskArg::Len((uint64_t)(int64_t)mask, true), repeatTime);    \
        twin::vec::ReduceMaxMinRun<ISMAX, T>(#NAME, dst, src, sharedTmpBuffer, x, (uint32_t)srcRepStride, calIndex,   \
                                             (uint64_t)repeatTime);                                                   \
    }                                                                                                                 \
    template <typename T>                                                                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,     \
                     const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride,                     \
                     bool calIndex = 0) {                                                                             \
        twin::vec::ReduceTypeCheck<T>();                                                                              \
        twin::RequireAiv(#NAME);                                                                                      \
        twin::vec::RejectBf16<T>(#NAME);                                                                              \
        twin::vec::CheckStride(#NAME, "srcRepStride", srcRepStride);                                                  \
        const twin::vec::Exec x = twin::vec::ReduceL0Exec<T>(#NAME, twin::vec::MaskArg::Bits(mask, true), repeatTime); \
        twin::vec::ReduceMaxMinRun<ISMAX, T>(#NAME, dst, src, sharedTmpBuffer, x, (uint32_t)srcRepStride, calIndex,   \
                                             (uint64_t)repeatTime);                                                   \
    }                                                                                                                 \
    template <typename T>                                                                                             \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,     \
                     const int32_t count, bool calIndex = 0) {                                                        \
        twin::vec::ReduceTypeCheck<T>();                                                                              \
        twin::RequireAiv(#NAME);                                                                                      \
        twin::vec::RejectBf16<T>(#NAME);                                                                              \
        const twin::vec::Exec x = twin::vec::CountExec(#NAME, count, 256 / sizeof(T));                                \
        const uint64_t first = std::max<uint64_t>(1, (uint64_t)x.count / x.perRep);                                  \
        twin::vec::ReduceMaxMinRun<ISMAX, T>(#NAME, dst, src, sharedTmpBuffer, x, 8, calIndex, first, true);          \
        twin::vec::RestoreNormalFullMask();                                                                           \
    }

TWIN_REDUCE_MAXMIN(ReduceMax, true)
TWIN_REDUCE_MAXMIN(ReduceMin, false)
#undef TWIN_REDUCE_MAXMIN

template <typename T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride) {
    twin::vec::ReduceTypeCheck<T>();
    twin::RequireAiv("ReduceSum");
    twin::vec::RejectBf16<T>("ReduceSum");
    twin::vec::CheckStride("ReduceSum", "srcRepStride", srcRepStride);
    const twin::vec::Exec x =
        twin::vec::ReduceL0Exec<T>("ReduceSum", twin::vec::MaskArg::Len((uint64_t)(int64_t)mask, true), repeatTime);
    twin::vec::ReduceSumL0Run<T>("ReduceSum", dst, src, sharedTmpBuffer, x, (uint32_t)srcRepStride);
}

template <typename T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride) {
    twin::vec::ReduceTypeCheck<T>();
    twin::RequireAiv("ReduceSum");
    twin::vec::RejectBf16<T>("ReduceSum");
    twin::vec::CheckStride("ReduceSum", "srcRepStride", srcRepStride);
    const twin::vec::Exec x = twin::vec::ReduceL0Exec<T>("ReduceSum", twin::vec::MaskArg::Bits(mask, true), repeatTime);
    twin::vec::ReduceSumL0Run<T>("ReduceSum", dst, src, sharedTmpBuffer, x, (uint32_t)srcRepStride);
}

// Count form (A2, "method one"): tree sum per repeat, repeats accumulated in order; sharedTmpBuffer is not used.
template <typename T, bool isSetMask = true>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t count) {
    twin::vec::ReduceTypeCheck<T>();
    const char* api = "ReduceSum";
    twin::RequireAiv(api);
    twin::vec::RejectBf16<T>(api);
    (void)sharedTmpBuffer;
    const twin::vec::Exec x = isSetMask ? twin::vec::CountExec(api, count, 256 / sizeof(T))
                                        : twin::vec::FromRegister(256 / sizeof(T), 1);
    const twin::vec::Opd o = {src.Ptr(), (uint32_t)sizeof(T), 1, 8};
    twin::vec::CheckReduceSrc(api, src, o, x);
    const uint64_t R = x.Repeats();
    twin::vec::CheckReduceDst(api, dst, sizeof(T), R * sizeof(T));
    float v[128];
    bool act[128];
    float acc = 0.0f;
    bool any = false;
    for (uint64_t r = 0; r < R && twin::Computing(); ++r) {
        if (twin::vec::GatherRepeat<T>(o, x, r, v, act, 0.0f) == 0) continue;
        twin::vec::TreeSum<T>(v, x.perRep);
        twin::vec::StoreValue<T>(dst.Ptr() + r * sizeof(T), v[0]);
        acc = any ? twin::vec::RoundT<T>(acc + v[0]) : v[0];
        any = true;
    }
    if (any) {
        twin::vec::StoreValue<T>(dst.Ptr(), acc);
        twin::vec::RecordAcc<T>(acc);
    }
    if (isSetMask) twin::vec::RestoreNormalFullMask();
    twin::vec::TraceV(api, x.Active(), x.Active() * sizeof(T), R, dst.Ptr(), src.Ptr());
}

}  // namespace AscendC
