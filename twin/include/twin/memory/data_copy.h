// DataCopy between GM and UB (count form with its silent round-down to 32 B, DataCopyParams in 32 B blocks),
// UB->UB on PIPE_V, and DataCopyPad (bytes on the GM side, 32 B blocks on the UB side, rows padded to 32 B).
// GM <-> L1 copies (plain, and Nd2Nz into L1) live in cube/data_copy.h.
#pragma once
#include "twin/sync/atomic_gm.h"
#include "twin/memory/tensor.h"
#include "twin/memory/poison_store.h"

namespace AscendC {

struct DataCopyParams {
    DataCopyParams() {}
    DataCopyParams(const uint16_t count, const uint16_t len, const uint16_t srcStrideIn, const uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    union {
        uint16_t srcGap = 0;
        uint16_t srcStride;
    };
    union {
        uint16_t dstGap = 0;
        uint16_t dstStride;
    };
};

struct DataCopyExtParams {
    DataCopyExtParams() {}
    DataCopyExtParams(const uint16_t count, const uint32_t len, const uint32_t srcStrideIn, const uint32_t dstStrideIn,
                      const uint32_t rsvIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
};

template <typename T>
struct DataCopyPadExtParams {
    DataCopyPadExtParams() {}
    DataCopyPadExtParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue, T padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = T(0);
};

struct DataCopyPadParams {
    DataCopyPadParams() {}
    DataCopyPadParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue, const uint64_t padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
};

}  // namespace AscendC

namespace twin {

// Local-memory paths of the cube core (GM->L1, L1/UB copies), defined in cube/data_copy.h.
template <typename T>
void CopyGmToL1(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src, uint32_t count);
template <typename T>
void CopyGmToL1(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src, const AscendC::DataCopyParams& p);
template <typename T>
void CopyLocalToLocal(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, const AscendC::DataCopyParams& p);
template <typename T>
void CopyL1ToGm(const AscendC::GlobalTensor<T>& dst, const AscendC::LocalTensor<T>& src, uint32_t blockCount,
                uint64_t blockBytes, uint64_t srcGapBytes, uint64_t dstGapBytes);
template <typename T>
void CopyPadGmToL1(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src,
                   const AscendC::DataCopyExtParams& p, const AscendC::DataCopyPadExtParams<T>& pad);

// int4b_t is in none of the Atlas A2 dtype lists of the DataCopy / DataCopyPad pages for GM, UB and L1 (the real
// count form would even read count as bytes); kernels move the packed bytes as int8_t and ReinterpretCast.
template <typename T>
inline void RejectInt4(const char* api) {
    if constexpr (ElemBits<T>::value == 4) {
        Fail(api, "int4b_t is not a supported dtype on dav-2201 (Atlas A2: int8_t to double); move the packed bytes "
             "through ReinterpretCast<int8_t>()");
    }
}

// Moves blockCount blocks of blockBytes between GM and an on-core buffer (UB, or L1 from GM); gaps in bytes. Checks
// both spans, copies (GM writes honour atomics) and traces. Position and core-kind checks are the caller's.
template <typename T>
inline void GmLocalCopy(const char* api, const AscendC::LocalTensor<T>& local, const AscendC::GlobalTensor<T>& gm,
                        bool toGm, uint32_t blockCount, uint64_t blockBytes, uint64_t gmGapBytes, uint64_t localGapBytes) {
    RejectInt4<T>(api);
    const uint64_t gmSpan = (blockCount - 1) * (blockBytes + gmGapBytes) + blockBytes;
    CheckLocalBlocks(api, toGm ? "src" : "dst", local, 0, blockCount, blockBytes, blockBytes + localGapBytes);
    if (gmSpan % sizeof(T) != 0) Fail(api, "GM span of %llu bytes is not a whole number of elements", (unsigned long long)gmSpan);
    gm.CheckElems(api, 0, gmSpan / sizeof(T));
    uint8_t* g = (uint8_t*)gm.GetPhyAddr();
    uint8_t* u = local.Ptr();
    for (uint32_t b = 0; b < blockCount; ++b) {
        uint8_t* gb = g + b * (blockBytes + gmGapBytes);
        uint8_t* lb = u + b * (blockBytes + localGapBytes);
        if (toGm) {
            GmWrite<T>(gb, lb, blockBytes);
            NotePoisonStore<T>(api, gb, blockBytes, local.Phys(), OnCoreOffset(local.Phys(), lb));
        } else {
            NoteGm(api, gb, blockBytes, false);
            NotePoisonLoad<T>(gb, blockBytes);
            std::memcpy(lb, gb, blockBytes);
        }
    }
    Trace(api, toGm ? PIPE_MTE3 : PIPE_MTE2, blockCount * blockBytes / sizeof(T), blockCount * blockBytes, blockCount,
          toGm ? (const void*)g : (const void*)u, toGm ? (const void*)u : (const void*)g);
}

// GM <-> UB on the vector core.
template <typename T>
inline void GmUbBlocks(const char* api, const AscendC::LocalTensor<T>& ub, const AscendC::GlobalTensor<T>& gm, bool toGm,
                       uint32_t blockCount, uint64_t blockBytes, uint64_t gmGapBytes, uint64_t ubGapBytes) {
    RejectInt4<T>(api);
    if (blockCount == 0 || blockBytes == 0) return;
    RequirePhys(api, toGm ? "src" : "dst", ub, Mem::UB);
    RequireAiv(api);
    CheckAlign(api, toGm ? "src" : "dst", ub, 32);
    GmLocalCopy(api, ub, gm, toGm, blockCount, blockBytes, gmGapBytes, ubGapBytes);
}

}  // namespace twin

namespace AscendC {

// ---- GM <-> UB, contiguous: count*sizeof(T) is silently rounded down to a multiple of 32 B. ----
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count) {
    if (dst.Phys() != twin::Mem::UB) {
        twin::CopyGmToL1(dst, src, count);
        return;
    }
    uint64_t bytes = (uint64_t)count * sizeof(T) / 32 * 32;
    twin::GmUbBlocks("DataCopy", dst, src, false, 1, bytes, 0, 0);
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count) {
    uint64_t bytes = (uint64_t)count * sizeof(T) / 32 * 32;
    if (src.Valid() && src.Phys() == twin::Mem::L1) {
        twin::CopyL1ToGm(dst, src, 1, bytes, 0, 0);
        return;
    }
    twin::GmUbBlocks("DataCopy", src, dst, true, 1, bytes, 0, 0);
}

// ---- GM <-> UB, strided: blockLen and gaps in 32 B blocks on both sides. ----
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p) {
    if (dst.Phys() != twin::Mem::UB) {
        twin::CopyGmToL1(dst, src, p);
        return;
    }
    if (p.blockCount > 4095) twin::Fail("DataCopy", "blockCount %u is outside [0, 4095]", p.blockCount);
    twin::GmUbBlocks("DataCopy", dst, src, false, p.blockCount, p.blockLen * 32ull, p.srcGap * 32ull, p.dstGap * 32ull);
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
    if (src.Valid() && src.Phys() == twin::Mem::L1) {
        twin::CopyL1ToGm(dst, src, p.blockCount, p.blockLen * 32ull, p.srcGap * 32ull, p.dstGap * 32ull);
        return;
    }
    if (p.blockCount > 4095) twin::Fail("DataCopy", "blockCount %u is outside [0, 4095]", p.blockCount);
    twin::GmUbBlocks("DataCopy", src, dst, true, p.blockCount, p.blockLen * 32ull, p.dstGap * 32ull, p.srcGap * 32ull);
}

// ---- UB -> UB on PIPE_V ----
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
    const char* api = "DataCopy(UB->UB)";
    twin::RejectInt4<T>(api);
    if (dst.Phys() != twin::Mem::UB || src.Phys() != twin::Mem::UB) {
        twin::CopyLocalToLocal(dst, src, p);
        return;
    }
    twin::RequireAiv(api);
    twin::CheckAlign(api, "dst", dst, 32);
    twin::CheckAlign(api, "src", src, 32);
    if (p.blockCount == 0 || p.blockLen == 0) return;
    uint64_t len = p.blockLen * 32ull;
    twin::CheckLocalBlocks(api, "src", src, 0, p.blockCount, len, len + p.srcGap * 32ull);
    twin::CheckLocalBlocks(api, "dst", dst, 0, p.blockCount, len, len + p.dstGap * 32ull);
    for (uint32_t b = 0; b < p.blockCount; ++b) {
        std::memmove(dst.Ptr() + b * (len + p.dstGap * 32ull), src.Ptr() + b * (len + p.srcGap * 32ull), len);
    }
    twin::Trace(api, PIPE_V, p.blockCount * len / sizeof(T), p.blockCount * len, p.blockCount, dst.Ptr(), src.Ptr());
}

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count) {
    uint32_t blocks = (uint32_t)((uint64_t)count * sizeof(T) / 32);
    DataCopy(dst, src, DataCopyParams(1, (uint16_t)blocks, 0, 0));
}

// ---- DataCopyPad GM -> UB: blockLen and srcStride in bytes; dstStride in 32 B blocks; each row padded to 32 B. ----
template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                        const DataCopyPadExtParams<T>& pad) {
    const char* api = "DataCopyPad(GM->UB)";
    twin::RejectInt4<T>(api);
    if (dst.Phys() != twin::Mem::UB) {
        twin::CopyPadGmToL1(dst, src, p, pad);
        return;
    }
    twin::RequireAiv(api);
    twin::CheckAlign(api, "dst", dst, 32);
    if (p.blockCount > 4095) twin::Fail(api, "blockCount %u is outside [0, 4095]", p.blockCount);
    if (p.blockLen > 2097151) twin::Fail(api, "blockLen %u bytes is outside [0, 2097151]", p.blockLen);
    if (p.blockLen % sizeof(T) != 0) twin::Fail(api, "blockLen %u bytes is not a multiple of sizeof(T) = %zu", p.blockLen, sizeof(T));
    if (pad.leftPadding * sizeof(T) > 32 || pad.rightPadding * sizeof(T) > 32) {
        twin::Fail(api, "leftPadding %u / rightPadding %u elements exceed 32 bytes", pad.leftPadding, pad.rightPadding);
    }
    if constexpr (sizeof(T) == 8) {  // documented: a 64-bit paddingValue can only be 0
        uint64_t bits;
        std::memcpy(&bits, &pad.paddingValue, 8);
        if (pad.isPad && bits != 0) {
            twin::Fail(api, "paddingValue bits 0x%llx: for 64-bit types paddingValue can only be 0 on dav-2201",
                       (unsigned long long)bits);
        }
    }
    // isPad = true loads the pad-value register (it stays set for later calls); isPad = false uses the register
    // as SetPadValue or an earlier isPad call left it.
    twin::SprState& spr = twin::Cur().spr;
    if (pad.isPad) {
        spr.padValue = 0;
        std::memcpy(&spr.padValue, &pad.paddingValue, sizeof(T));
        spr.padSet = true;
    }
    if (p.blockCount == 0 || p.blockLen == 0) return;
    const uint64_t lp = pad.leftPadding * sizeof(T), rp = pad.rightPadding * sizeof(T);
    T padFill;  // a 64-bit element is moved as two 32-bit halves, each filled with the register's low word
    if (sizeof(T) == 8) {
        std::memcpy(reinterpret_cast<uint8_t*>(&padFill), &spr.padValue, 4);
        std::memcpy(reinterpret_cast<uint8_t*>(&padFill) + 4, &spr.padValue, 4);
    } else {
        std::memcpy(&padFill, &spr.padValue, sizeof(T));
    }
    const uint64_t row = (lp + p.blockLen + rp + 31) / 32 * 32;
    const uint64_t ubStep = row + p.dstStride * 32ull, gmStep = p.blockLen + (uint64_t)p.srcStride;
    twin::CheckLocalBlocks(api, "dst", dst, 0, p.blockCount, row, ubStep);
    src.CheckElems(api, 0, ((p.blockCount - 1) * gmStep + p.blockLen) / sizeof(T));
    const uint8_t* g = (const uint8_t*)src.GetPhyAddr();
    for (uint32_t b = 0; b < p.blockCount; ++b) {
        uint8_t* r = dst.Ptr() + b * ubStep;
        const uint8_t* s = g + b * gmStep;
        twin::NoteGm(api, s, p.blockLen, false);
        twin::NotePoisonLoad<T>(s, p.blockLen);
        std::memcpy(r + lp, s, p.blockLen);
        const uint64_t nElem = row / sizeof(T);
        T* re = reinterpret_cast<T*>(r);
        for (uint64_t e = 0; e < nElem; ++e) {
            uint64_t off = e * sizeof(T);
            if (off >= lp && off < lp + p.blockLen) continue;
            if (lp == 0 && rp == 0) {
                std::memcpy(&re[e], s, sizeof(T));  // dummy fill repeats the row's first element (even with isPad)
            } else if (spr.padSet) {
                re[e] = padFill;
            } else {
                std::memset(&re[e], 0xFF, sizeof(T));  // documented as random: poison
            }
        }
    }
    twin::Trace(api, PIPE_MTE2, p.blockCount * (uint64_t)p.blockLen / sizeof(T), p.blockCount * (uint64_t)p.blockLen,
                p.blockCount, dst.Ptr(), g);
}

// Sets the value DataCopyPad GM->UB fills padding with when isPad = false (a no-op on the cube core, as in the real
// implementation).
template <typename T, TPosition pos = TPosition::MAX>
inline void SetPadValue(T paddingValue) {
    static_assert(pos == TPosition::MAX || pos == TPosition::VECIN || pos == TPosition::VECOUT,
                  "SetPadValue: pos must be TPosition::VECIN, VECOUT or MAX");
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                  "SetPadValue: data type not supported on dav-2201");
    twin::CoreState& c = twin::Cur();
    if (c.coreType != AIV) return;
    c.spr.padValue = 0;
    std::memcpy(&c.spr.padValue, &paddingValue, sizeof(T));
    c.spr.padSet = true;
}

template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                        const DataCopyPadParams& pad) {
    T v;
    std::memcpy(&v, &pad.paddingValue, sizeof(T));
    DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0),
                DataCopyPadExtParams<T>(pad.isPad, pad.leftPadding, pad.rightPadding, v));
}

// ---- DataCopyPad UB -> GM: srcStride in 32 B blocks (UB side), dstStride in bytes (GM side). ----
template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p) {
    const char* api = "DataCopyPad(UB->GM)";
    twin::RejectInt4<T>(api);
    twin::RequirePhys(api, "src", src, twin::Mem::UB);
    twin::RequireAiv(api);
    twin::CheckAlign(api, "src", src, 32);
    if (p.blockCount > 4095) twin::Fail(api, "blockCount %u is outside [0, 4095]", p.blockCount);
    if (p.blockLen % sizeof(T) != 0) twin::Fail(api, "blockLen %u bytes is not a multiple of sizeof(T) = %zu", p.blockLen, sizeof(T));
    if (p.blockCount == 0 || p.blockLen == 0) return;
    const uint64_t row = (p.blockLen + 31ull) / 32 * 32;
    const uint64_t ubStep = row + p.srcStride * 32ull, gmStep = p.blockLen + (uint64_t)p.dstStride;
    twin::CheckLocalBlocks(api, "src", src, 0, p.blockCount, p.blockLen, ubStep);
    dst.CheckElems(api, 0, ((p.blockCount - 1) * gmStep + p.blockLen) / sizeof(T));
    uint8_t* g = (uint8_t*)dst.GetPhyAddr();
    for (uint32_t b = 0; b < p.blockCount; ++b) {
        twin::GmWrite<T>(g + b * gmStep, src.Ptr() + b * ubStep, p.blockLen);
        twin::NotePoisonStore<T>(api, g + b * gmStep, p.blockLen, twin::Mem::UB,
                                 twin::OnCoreOffset(twin::Mem::UB, src.Ptr() + b * ubStep));
    }
    twin::Trace(api, PIPE_MTE3, p.blockCount * (uint64_t)p.blockLen / sizeof(T), p.blockCount * (uint64_t)p.blockLen,
                p.blockCount, g, src.Ptr());
}

template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
    DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0));
}

}  // namespace AscendC
