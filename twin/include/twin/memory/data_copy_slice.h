// DataCopy with SliceInfo: GM <-> UB copies of a strided sub-block of a multi-dimensional tensor (dimension 0
// innermost). Per dimension i a SliceInfo picks the elements [startIndex, endIndex] of a dimension of shapeValue
// elements as N pieces separated by `stride` elements: pieces are burstLen x 32 B long in dimension 0 and one index
// long (burstLen = 1) above it, so endIndex - startIndex + 1 = (N - 1) * stride + N * piece. Source piece k goes to
// destination piece k (higher dimensions enumerated with dimension 1 fastest). GM -> UB on PIPE_MTE2, UB -> GM on
// PIPE_MTE3.
#pragma once
#include "twin/memory/data_copy.h"

namespace AscendC {

constexpr int32_t K_MAX_DIM = 8;  // most dimensions a SliceInfo list may describe

struct SliceInfo {
    SliceInfo() {}
    SliceInfo(const uint32_t startIndexIn, const uint32_t endIndexIn, const uint32_t strideIn, const uint32_t burstLenIn,
              const uint32_t shapeValueIn = 0)
        : startIndex(startIndexIn), endIndex(endIndexIn), stride(strideIn), burstLen(burstLenIn), shapeValue(shapeValueIn) {}
    uint32_t startIndex = 0;
    uint32_t endIndex = 32 - 1;  // ONE_BLK_SIZE - 1
    uint32_t stride = 0;
    uint32_t burstLen = 32;      // ONE_BLK_SIZE
    uint32_t shapeValue = 0;
};

}  // namespace AscendC

namespace twin {

constexpr uint32_t kMaxSliceDims = AscendC::K_MAX_DIM;
constexpr uint32_t kMaxSlices = 6 * 256;  // pieces above dimension 0 the real implementation can enumerate

// Validates one side's SliceInfo list; returns the piece count per dimension in n[] and the element pitch in pitch[].
template <typename T>
inline void SliceGeometry(const char* api, const char* side, const AscendC::SliceInfo* s, uint32_t dims, uint64_t* n,
                          uint64_t* pitch) {
    uint64_t p = 1;
    for (uint32_t i = 0; i < dims; ++i) {
        const AscendC::SliceInfo& d = s[i];
        if (!(d.startIndex < d.endIndex && d.endIndex <= d.shapeValue)) {
            Fail(api, "%sSliceInfo[%u]: startIndex %u, endIndex %u, shapeValue %u break startIndex < endIndex <= shapeValue",
                 side, i, d.startIndex, d.endIndex, d.shapeValue);
        }
        if (i > 0 && d.burstLen != 1) Fail(api, "%sSliceInfo[%u].burstLen is %u: above dimension 0 it must be 1", side, i, d.burstLen);
        const uint64_t piece = i == 0 ? (uint64_t)d.burstLen * 32 / sizeof(T) : 1;
        const uint64_t span = (uint64_t)d.endIndex - d.startIndex + 1 + d.stride;
        if (piece == 0 || span % (piece + d.stride) != 0) {
            Fail(api, "%sSliceInfo[%u]: endIndex - startIndex + 1 = %u is not (N - 1) x stride %u + N x %llu elements "
                 "(burstLen %u) for a whole N", side, i, d.endIndex - d.startIndex + 1, d.stride,
                 (unsigned long long)piece, d.burstLen);
        }
        n[i] = span / (piece + d.stride);
        pitch[i] = p;
        p *= d.shapeValue;
    }
}

template <typename T>
inline void SliceCopy(const char* api, const AscendC::LocalTensor<T>& ub, const AscendC::GlobalTensor<T>& gm, bool toGm,
                      const AscendC::SliceInfo* dstInfo, const AscendC::SliceInfo* srcInfo, uint32_t dims) {
    static_assert(sizeof(T) <= 4, "DataCopy with SliceInfo supports 1, 2 and 4 byte types on dav-2201");
    RequireAiv(api);
    RequirePhys(api, toGm ? "src" : "dst", ub, Mem::UB);
    CheckAlign(api, toGm ? "src" : "dst", ub, 32);
    if (dims < 1 || dims > kMaxSliceDims) Fail(api, "dimValue %u is outside [1, %u]", dims, kMaxSliceDims);
    uint64_t sn[kMaxSliceDims], sp[kMaxSliceDims], dn[kMaxSliceDims], dp[kMaxSliceDims];
    SliceGeometry<T>(api, "src", srcInfo, dims, sn, sp);
    SliceGeometry<T>(api, "dst", dstInfo, dims, dn, dp);
    uint64_t slices = 1;
    for (uint32_t i = 0; i < dims; ++i) {
        if (srcInfo[i].burstLen != dstInfo[i].burstLen) {
            Fail(api, "dimension %u: srcSliceInfo burstLen %u differs from dstSliceInfo burstLen %u", i, srcInfo[i].burstLen,
                 dstInfo[i].burstLen);
        }
        if (sn[i] != dn[i]) {
            Fail(api, "dimension %u: the source has %llu pieces but the destination %llu; each source piece needs a "
                 "destination piece", i, (unsigned long long)sn[i], (unsigned long long)dn[i]);
        }
        if (i > 0) slices *= sn[i];
    }
    if (sn[0] > 4095) Fail(api, "%llu pieces in dimension 0 exceed the 4095 blocks of one DataCopy", (unsigned long long)sn[0]);
    if (slices > kMaxSlices) Fail(api, "%llu pieces above dimension 0 exceed the %u the implementation can hold",
                                  (unsigned long long)slices, kMaxSlices);
    const AscendC::SliceInfo* ubInfo = toGm ? srcInfo : dstInfo;
    const uint64_t burst = (uint64_t)srcInfo[0].burstLen * 32;
    // Every UB piece must start on a 32 B boundary (the UB side of a DMA counts whole blocks).
    if ((uint64_t)ubInfo[0].stride * sizeof(T) % 32 != 0) {
        Fail(api, "UB-side stride %u elements (%llu bytes) is not a multiple of 32 bytes", ubInfo[0].stride,
             (unsigned long long)ubInfo[0].stride * sizeof(T));
    }
    uint64_t pieceCount = 0;
    uint64_t idx[kMaxSliceDims] = {};
    for (uint64_t k = 0; k < slices; ++k) {
        uint64_t so = srcInfo[0].startIndex, doff = dstInfo[0].startIndex;
        for (uint32_t i = 1; i < dims; ++i) {
            so += (srcInfo[i].startIndex + idx[i] * (1 + srcInfo[i].stride)) * sp[i];
            doff += (dstInfo[i].startIndex + idx[i] * (1 + dstInfo[i].stride)) * dp[i];
        }
        const uint64_t ubOff = toGm ? so : doff, gmOff = toGm ? doff : so;
        const uint64_t ubStep = burst + (uint64_t)ubInfo[0].stride * sizeof(T);
        const uint64_t gmStep = burst + (uint64_t)(toGm ? dstInfo : srcInfo)[0].stride * sizeof(T);
        if (ubOff * sizeof(T) % 32 != 0) {
            Fail(api, "UB piece at element %llu (byte %llu) is not 32-byte aligned", (unsigned long long)ubOff,
                 (unsigned long long)(ubOff * sizeof(T)));
        }
        const uint64_t ubSpan = (sn[0] - 1) * ubStep + burst, gmSpan = (sn[0] - 1) * gmStep + burst;
        CheckLocalSpan(api, toGm ? "src" : "dst", ub, ubOff * sizeof(T), ubSpan);
        gm.CheckElems(api, gmOff, gmSpan / sizeof(T));
        uint8_t* g = (uint8_t*)gm.GetPhyAddr() + gmOff * sizeof(T);
        uint8_t* u = ub.Ptr() + ubOff * sizeof(T);
        for (uint64_t b = 0; b < sn[0]; ++b) {
            if (toGm) {
                GmWrite<T>(g + b * gmStep, u + b * ubStep, burst);
                NotePoisonStore<T>(api, g + b * gmStep, burst, Mem::UB, OnCoreOffset(Mem::UB, u + b * ubStep));
            } else {
                NoteGm(api, g + b * gmStep, burst, false);
                NotePoisonLoad<T>(g + b * gmStep, burst);
                std::memcpy(u + b * ubStep, g + b * gmStep, burst);
            }
        }
        pieceCount += sn[0];
        for (uint32_t i = 1; i < dims && ++idx[i] == sn[i]; ++i) idx[i] = 0;
    }
    Trace(api, toGm ? PIPE_MTE3 : PIPE_MTE2, pieceCount * burst / sizeof(T), pieceCount * burst, (uint32_t)pieceCount,
          toGm ? (const void*)gm.GetPhyAddr() : (const void*)ub.Ptr(), toGm ? (const void*)ub.Ptr() : (const void*)gm.GetPhyAddr());
}

}  // namespace twin

namespace AscendC {

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const SliceInfo dstSliceInfo[],
                     const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1) {
    twin::SliceCopy("DataCopy(GM->UB, SliceInfo)", dst, src, false, dstSliceInfo, srcSliceInfo, dimValue);
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const SliceInfo dstSliceInfo[],
                     const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1) {
    twin::SliceCopy("DataCopy(UB->GM, SliceInfo)", src, dst, true, dstSliceInfo, srcSliceInfo, dimValue);
}

}  // namespace AscendC
