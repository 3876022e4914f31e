// Sorting of (score, index) region proposals on dav-2201 (T: half, float).
// Layout: one proposal is 8 bytes; the score (T) sits in the low bytes, the uint32_t index in bytes 4..7; for half,
// bytes 2..3 are reserved (the twin writes 0 there).
// Sort32: repeat r sorts the 32 scores src0[32 r ..] with their indices src1[32 r ..] in descending score order into
//   the 32 proposals of dst + 256 r bytes; equal scores keep their input order. Per repeat src0 needs 128 B (float) /
//   64 B (half) alignment, src1 128 B and dst 256 B, so the tensors must start at those alignments.
// MrgSort: merges up to 4 sorted proposal lists (validBit 3 / 7 / 15: the first 2 / 3 / 4) into dst in descending
//   score order; equal scores come from the lower-numbered list first, each list keeps its order. With
//   ifExhaustedSuspension the merge stops right after the first list runs out; VMS4_SR then holds the number of
//   proposals taken from each list (16 bits each), read by GetMrgSortResult. repeatTimes > 1 is only defined for 4
//   contiguous lists of equal length without suspension (repeat r merges the 4 lists that follow repeat r - 1).
#pragma once
#include <algorithm>

#include "twin/launch/core_local.h"
#include "twin/vector/more_common.h"

namespace AscendC {

constexpr uint8_t MRG_SORT_ELEMENT_LEN = 4;

struct MrgSort4Info {
    MrgSort4Info() {}
    MrgSort4Info(const uint16_t elementLengthsIn[MRG_SORT_ELEMENT_LEN], const bool ifExhaustedSuspensionIn,
                 const uint16_t validBitIn, const uint16_t repeatTimesIn)
        : ifExhaustedSuspension(ifExhaustedSuspensionIn), validBit(validBitIn), repeatTimes((uint8_t)repeatTimesIn) {
        for (int32_t i = 0; i < MRG_SORT_ELEMENT_LEN; ++i) elementLengths[i] = elementLengthsIn[i];
    }
    uint16_t elementLengths[MRG_SORT_ELEMENT_LEN] = {0};
    bool ifExhaustedSuspension = false;
    uint16_t validBit = 0;
    uint8_t repeatTimes = 1;
};

template <typename T>
struct MrgSortSrcList {
    MrgSortSrcList() {}
    MrgSortSrcList(const LocalTensor<T>& src1In, const LocalTensor<T>& src2In, const LocalTensor<T>& src3In,
                   const LocalTensor<T>& src4In) {
        src1 = src1In[0];
        src2 = src2In[0];
        src3 = src3In[0];
        src4 = src4In[0];
    }
    LocalTensor<T> src1;
    LocalTensor<T> src2;
    LocalTensor<T> src3;
    LocalTensor<T> src4;
};

}  // namespace AscendC

namespace twin {
namespace vec {

struct Vms4Sr {
    bool written = false;     // a MrgSort ran on this core
    bool suspension = false;  // ... with ifExhaustedSuspension
    uint64_t value = 0;
};

template <typename T>
inline float ScoreAt(const uint8_t* proposal) {
    T v;
    std::memcpy(&v, proposal, sizeof(T));
    return Lane<T>::Of(v);
}

// Writes one proposal: the score's sizeof(T) bytes, zeros up to byte 4, the index in bytes 4..7.
template <typename T>
inline void PutProposal(uint8_t* at, const uint8_t* score, uint32_t index) {
    std::memset(at, 0, 4);
    std::memcpy(at, score, sizeof(T));
    std::memcpy(at + 4, &index, 4);
}

inline void CheckAlignTo(const char* api, const char* name, uint64_t addr, uint32_t align, const char* why) {
    if (addr % align != 0) {
        Fail(api, "%s address %llu in UB is not %u-byte aligned (%s)", name, (unsigned long long)addr, align, why);
    }
}

template <typename T>
inline void Sort32Run(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src0,
                      const AscendC::LocalTensor<uint32_t>& src1, int32_t repeatTime) {
    const char* api = "Sort32";
    RequireAiv(api);
    if (repeatTime < 0 || repeatTime > 255) Fail(api, "repeatTime %d is outside [0, 255]", repeatTime);
    const uint64_t R = (uint64_t)repeatTime;
    CheckSpanUB(api, "src0", src0, R * 32 * sizeof(T), false);
    CheckSpanUB(api, "src1", src1, R * 128, false);
    CheckSpanUB(api, "dst", dst, R * 256, true);
    const char* why = "every repeat's operands must be aligned to their per-repeat size";
    CheckAlignTo(api, "src0", src0.Addr(api), 32 * sizeof(T), why);
    CheckAlignTo(api, "src1", src1.Addr(api), 128, why);
    CheckAlignTo(api, "dst", dst.Addr(api), 256, why);
    // The page states no overlap rule, so none is supported (通用说明和约束.md, 通用地址重叠约束, last note).
    if (Overlaps(dst.Ptr(), R * 256, src0.Ptr(), R * 32 * sizeof(T)) || Overlaps(dst.Ptr(), R * 256, src1.Ptr(), R * 128)) {
        Fail(api, "dst overlaps src0 or src1 (the Sort32 page allows no overlap)");
    }
    std::vector<uint8_t> out(R * 256);
    for (uint64_t r = 0; r < R; ++r) {
        const uint8_t* s = src0.Ptr() + r * 32 * sizeof(T);
        const uint32_t* idx = reinterpret_cast<const uint32_t*>(src1.Ptr()) + r * 32;
        int order[32];
        for (int i = 0; i < 32; ++i) order[i] = i;
        std::stable_sort(order, order + 32, [&](int a, int b) {
            return ScoreAt<T>(s + a * sizeof(T)) > ScoreAt<T>(s + b * sizeof(T));
        });
        for (int k = 0; k < 32; ++k) PutProposal<T>(&out[r * 256 + k * 8], s + order[k] * sizeof(T), idx[order[k]]);
    }
    if (R > 0) std::memcpy(dst.Ptr(), out.data(), out.size());
    TraceV(api, R * 32, R * (32 * sizeof(T) + 128 + 256), R, dst.Ptr(), src0.Ptr());
}

template <typename T>
inline void MrgSortRun(const AscendC::LocalTensor<T>& dst, const AscendC::MrgSortSrcList<T>& src,
                       const AscendC::MrgSort4Info& p) {
    const char* api = "MrgSort";
    RequireAiv(api);
    for (int i = 0; i < 4; ++i) {
        if (p.elementLengths[i] > 4095) {
            Fail(api, "elementLengths[%d] = %u is outside [0, 4095]", i, p.elementLengths[i]);
        }
    }
    if (p.validBit != 3 && p.validBit != 7 && p.validBit != 15) {
        Fail(api, "validBit %u is not one of 3, 7, 15 (the first 2, 3 or 4 lists)", p.validBit);
    }
    const int nl = p.validBit == 3 ? 2 : p.validBit == 7 ? 3 : 4;
    const AscendC::LocalTensor<T>* L[4] = {&src.src1, &src.src2, &src.src3, &src.src4};
    const uint64_t R = p.repeatTimes;
    if (R > 1) {
        bool ok = nl == 4 && !p.ifExhaustedSuspension;
        for (int i = 1; i < 4 && ok; ++i) {
            ok = p.elementLengths[i] == p.elementLengths[0] &&
                 L[i]->Ptr() == L[0]->Ptr() + (uint64_t)i * p.elementLengths[0] * 8;
        }
        if (!ok) {
            Fail(api, "repeatTimes %llu needs 4 lists (validBit 15) of equal length stored one after another and "
                      "ifExhaustedSuspension = false", (unsigned long long)R);
        }
    }
    uint64_t total = 0;
    for (int i = 0; i < nl; ++i) {
        static const char* names[4] = {"src.src1", "src.src2", "src.src3", "src.src4"};
        const uint64_t len = p.elementLengths[i] * 8ull;
        CheckSpanUB(api, names[i], *L[i], R == 0 ? 0 : (R - 1) * 4 * len + len, false, 8);
        total += p.elementLengths[i];
    }
    CheckSpanUB(api, "dst", dst, R * total * 8, true);
    for (int i = 0; i < nl; ++i) {
        const uint64_t span = R == 0 ? 0 : ((R - 1) * 4 + 1) * p.elementLengths[i] * 8ull;
        if (Overlaps(dst.Ptr(), R * total * 8, L[i]->Ptr(), span)) {
            Fail(api, "dst overlaps source list %d (not supported)", i + 1);
        }
    }
    Vms4Sr& sr = CoreLocal<Vms4Sr>();
    uint64_t written = 0;
    for (uint64_t r = 0; r < R; ++r) {
        const uint8_t* head[4];
        uint32_t taken[4] = {0, 0, 0, 0};
        for (int i = 0; i < nl; ++i) head[i] = L[i]->Ptr() + r * 4 * p.elementLengths[i] * 8ull;
        uint8_t* out = dst.Ptr() + written * 8;
        uint64_t n = 0;
        for (;;) {
            int best = -1;
            bool exhausted = false;
            for (int i = 0; i < nl; ++i) {
                if (taken[i] == p.elementLengths[i]) {
                    exhausted = true;
                    continue;
                }
                if (best < 0 || ScoreAt<T>(head[i] + taken[i] * 8) > ScoreAt<T>(head[best] + taken[best] * 8)) best = i;
            }
            if (best < 0 || (exhausted && p.ifExhaustedSuspension)) break;
            std::memcpy(out + n * 8, head[best] + taken[best] * 8, 8);
            ++taken[best];
            ++n;
        }
        written += n;
        sr.value = 0;
        for (int i = 0; i < nl; ++i) sr.value |= (uint64_t)(taken[i] & 0xFFFF) << (16 * i);
    }
    if (R > 0) {
        sr.written = true;
        sr.suspension = p.ifExhaustedSuspension;
    }
    TraceV(api, written, written * 16, R, dst.Ptr(), L[0]->Ptr());
}

}  // namespace vec
}  // namespace twin

namespace AscendC {

template <typename T>
inline void Sort32(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<uint32_t>& src1,
                   const int32_t repeatTime) {
    static_assert(twin::vec::OneOf<T, half, float>, "Sort32: T must be half or float on dav-2201");
    twin::vec::Sort32Run<T>(dst, src0, src1, repeatTime);
}

template <typename T>
inline void MrgSort(const LocalTensor<T>& dst, const MrgSortSrcList<T>& src, const MrgSort4Info& params) {
    static_assert(twin::vec::OneOf<T, half, float>, "MrgSort: T must be half or float on dav-2201");
    twin::vec::MrgSortRun<T>(dst, src, params);
}

// Numbers of proposals MrgSort took from each list before it stopped (VMS4_SR); the cube core returns at once.
inline void GetMrgSortResult(uint16_t& mrgSortList1, uint16_t& mrgSortList2, uint16_t& mrgSortList3,
                             uint16_t& mrgSortList4) {
    if (twin::Cur().coreType == AIC) return;
    const twin::vec::Vms4Sr& sr = twin::CoreLocal<twin::vec::Vms4Sr>();
    if (!sr.written || !sr.suspension) {
        twin::Fail("GetMrgSortResult", "%s; the counts are defined only after MrgSort with ifExhaustedSuspension = "
                   "true", sr.written ? "the last MrgSort ran with ifExhaustedSuspension = false"
                                      : "no MrgSort ran on this core");
    }
    mrgSortList1 = (uint16_t)(sr.value & 0xFFFF);
    mrgSortList2 = (uint16_t)((sr.value >> 16) & 0xFFFF);
    mrgSortList3 = (uint16_t)((sr.value >> 32) & 0xFFFF);
    mrgSortList4 = (uint16_t)((sr.value >> 48) & 0xFFFF);
    twin::Trace("GetMrgSortResult", PIPE_S, 4, 8, 1, nullptr, nullptr);
}

}  // namespace AscendC
