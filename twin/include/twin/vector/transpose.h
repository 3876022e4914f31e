// Layout changes in UB (dav-2201): Transpose and TransDataTo5HD.
// Transpose(dst, src): one 16 x 16 matrix of 2-byte elements (int16_t, uint16_t, half), dst[i][j] = src[j][i];
//   dst may be src itself. Transpose(dst, src, sharedTmpBuffer, TransposeParamsExt): TRANSPOSE_ND2ND_B16 (hSize =
//   wSize = 16, uint16_t only on A2) is the same 16 x 16 transpose; TRANSPOSE_NCHW2NHWC / TRANSPOSE_NHWC2NCHW permute
//   [N, C, H, W] <-> [N, H, W, C] (8-, 16- and 32-bit types but bfloat16_t, which does not compile; cSize <= 4095,
//   hSize * wSize <= 4095 and hSize * wSize * sizeof(T) a multiple of 32 B; dst, src and sharedTmpBuffer must not
//   overlap; a zero size is a no-op). The temporary buffer must hold the documented (cSize + 2) resp. (2 * cSize + 1)
//   fractals of 16 x 32 B (32 x 32 B for 8-bit types); TRANSPOSE_TYPE_NONE does nothing; the other TransposeType values are unsupported.
// TransDataTo5HD: 16 source and 16 destination 32 B blocks per repeat. 16-bit: dst block i = element i of every
//   source block (source j at position j). 32-bit: dst blocks 2i and 2i + 1 take element i of sources 0..7 and
//   8..15. 8-bit: the low or high half (dstHighHalf) of dst block i takes byte (srcHighHalf ? 16 : 0) + i of every
//   source; its other half is kept. Repeat r adds r * RepStride blocks to every address, except that with
//   repeatTimes = 1 the (only) repeat already adds RepStride, as the page documents.
//   The LocalTensor<uint64_t> form reads 16 addresses from each tensor and, as the NPU implementation does, then
//   packs entries 0..3 of each into the VA register format ((addr >> 5) & 0x1fff, four per uint64_t), so the address
//   tensors must be refilled before a second call.
#pragma once
#include "twin/vector/more_common.h"

namespace AscendC {

constexpr int32_t NCHW_CONV_ADDR_LIST_SIZE = 16;
constexpr int32_t VA_REG_ARRAY_LEN = 8;

enum class TransposeType : uint8_t {
    TRANSPOSE_TYPE_NONE,
    TRANSPOSE_NZ2ND_0213,
    TRANSPOSE_NZ2NZ_0213,
    TRANSPOSE_NZ2NZ_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITHOUT_N,
    TRANSPOSE_NZ2NZ_012_WITHOUT_N,
    TRANSPOSE_ND2ND_ONLY,
    TRANSPOSE_ND_UB_GM,
    TRANSPOSE_GRAD_ND_UB_GM,
    TRANSPOSE_ND2ND_B16,
    TRANSPOSE_NCHW2NHWC,
    TRANSPOSE_NHWC2NCHW,
};

struct TransDataTo5HDParams {
    constexpr TransDataTo5HDParams() = default;
    constexpr TransDataTo5HDParams(const bool dstHighHalfIn, const bool srcHighHalfIn, const uint8_t repeatTimesIn,
                                   const uint16_t dstRepStrideIn, const uint16_t srcRepStrideIn)
        : dstHighHalf(dstHighHalfIn), srcHighHalf(srcHighHalfIn), repeatTimes(repeatTimesIn),
          dstRepStride(dstRepStrideIn), srcRepStride(srcRepStrideIn) {}
    bool dstHighHalf = false;
    bool srcHighHalf = false;
    uint8_t repeatTimes = 1;
    uint16_t dstRepStride = 0;
    uint16_t srcRepStride = 0;
};

struct TransposeParamsExt {
    constexpr TransposeParamsExt() = default;
    constexpr TransposeParamsExt(const uint16_t nSizeIn, const uint16_t cSizeIn, const uint16_t hSizeIn,
                                 const uint16_t wSizeIn, const TransposeType transposeTypeIn)
        : nSize(nSizeIn), cSize(cSizeIn), hSize(hSizeIn), wSize(wSizeIn), transposeType(transposeTypeIn) {}
    uint16_t nSize = 0;
    uint16_t cSize = 0;
    uint16_t hSize = 0;
    uint16_t wSize = 0;
    TransposeType transposeType = TransposeType::TRANSPOSE_ND2ND_B16;
};

}  // namespace AscendC

namespace twin {
namespace vec {

// ---- 16 x 16 transpose of 2-byte elements ----
template <typename T>
inline void Transpose16(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src) {
    RequireAiv(api);
    if (dst.Valid() && src.Valid() && dst.Ptr() != src.Ptr() && Overlaps(dst.Ptr(), 512, src.Ptr(), 512)) {
        Fail(api, "dst partially overlaps src (only dst == src is supported)");
    }
    CheckSpanUB(api, "src", src, 512, false);
    CheckSpanUB(api, "dst", dst, 512, true);
    uint16_t m[256];
    std::memcpy(m, src.Ptr(), 512);
    uint16_t* d = reinterpret_cast<uint16_t*>(dst.Ptr());
    for (int i = 0; i < 16; ++i) {
        for (int j = 0; j < 16; ++j) d[i * 16 + j] = m[j * 16 + i];
    }
    TraceV(api, 256, 1024, 1, dst.Ptr(), src.Ptr());
}

// ---- [N, C, H, W] <-> [N, H, W, C] ----
template <typename T>
inline void Transpose4D(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                        const AscendC::LocalTensor<uint8_t>& tmp, const AscendC::TransposeParamsExt& p) {
    const bool toNhwc = p.transposeType == AscendC::TransposeType::TRANSPOSE_NCHW2NHWC;
    const uint64_t n = p.nSize, c = p.cSize, hw = (uint64_t)p.hSize * p.wSize;
    if (c > 4095) Fail(api, "cSize %llu is outside [0, 4095]", (unsigned long long)c);
    if (hw > 4095) Fail(api, "hSize * wSize = %llu is outside [0, 4095]", (unsigned long long)hw);
    if (hw * sizeof(T) % 32 != 0) {
        Fail(api, "hSize * wSize * sizeof(T) = %llu bytes is not a multiple of 32",
             (unsigned long long)(hw * sizeof(T)));
    }
    const uint64_t fractal = sizeof(T) == 1 ? 32 * 32 : 16 * 32;
    const uint64_t needTmp = (toNhwc ? c + 2 : 2 * c + 1) * fractal;
    const uint64_t bytes = n * c * hw * sizeof(T);
    if (Overlaps(dst.Ptr(), bytes, src.Ptr(), bytes)) {
        Fail(api, "dst overlaps src (not supported by this transposeType)");
    }
    CheckSpanUB(api, "src", src, bytes, false);
    CheckSpanUB(api, "dst", dst, bytes, true);
    if (!tmp.Valid() || tmp.GetLength() < needTmp) {
        Fail(api, "sharedTmpBuffer needs %llu bytes for cSize %llu but has %u bytes", (unsigned long long)needTmp,
             (unsigned long long)c, tmp.Valid() ? tmp.GetLength() : 0u);
    }
    CheckSpanUB(api, "sharedTmpBuffer", tmp, c > 1 && bytes > 0 ? needTmp : 0, true);
    // The page names no overlap of sharedTmpBuffer with an operand, so none is supported (通用说明和约束.md, last note).
    if (bytes > 0 && (Overlaps(tmp.Ptr(), needTmp, src.Ptr(), bytes) || Overlaps(tmp.Ptr(), needTmp, dst.Ptr(), bytes))) {
        Fail(api, "sharedTmpBuffer overlaps src or dst (not supported)");
    }
    if (bytes == 0) {
        TraceV(api, 0, 0, 0, dst.Ptr(), src.Ptr());
        return;
    }
    const T* s = reinterpret_cast<const T*>(src.Ptr());
    T* d = reinterpret_cast<T*>(dst.Ptr());
    for (uint64_t b = 0; b < n; ++b) {
        const uint64_t base = b * c * hw;
        for (uint64_t ci = 0; ci < c; ++ci) {
            for (uint64_t k = 0; k < hw; ++k) {
                if (toNhwc) d[base + k * c + ci] = s[base + ci * hw + k];
                else d[base + ci * hw + k] = s[base + k * c + ci];
            }
        }
    }
    TraceV(api, n * c * hw, 2 * bytes, n, dst.Ptr(), src.Ptr());
}

// ---- TransDataTo5HD ----
// UB byte offsets of the 16 dst / src blocks, and the bytes [0, limit) each list entry may reach (its tensor, or
// the usable UB for the address forms).
struct Nchw5hdLists {
    uint64_t dst[16], src[16];
    uint64_t dstLimit[16], srcLimit[16];
};

inline uint64_t RepeatOffset(uint32_t R, uint32_t r, uint32_t stride) {
    return (uint64_t)(R == 1 ? 1 : r) * stride * 32;
}

template <typename T>
inline void CheckTransDataParams(const char* api, const AscendC::TransDataTo5HDParams& p) {
    if (!OneOf<T, int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t, float>) {
        Fail(api, "data type of %zu bytes is not supported on dav-2201 (int8_t, uint8_t, int16_t, uint16_t, half, "
                  "int32_t, uint32_t, float)", sizeof(T));
    }
    if (sizeof(T) != 1 && (p.dstHighHalf || p.srcHighHalf)) {
        Fail(api, "dstHighHalf / srcHighHalf = %d / %d: the high-half selection exists only for int8_t / uint8_t",
             (int)p.dstHighHalf, (int)p.srcHighHalf);
    }
}

template <typename T>
inline void TransData5HDRun(const char* api, const Nchw5hdLists& L, const AscendC::TransDataTo5HDParams& p) {
    const uint32_t R = p.repeatTimes;
    uint8_t* ub = Cur().Base(Mem::UB);
    if (R == 0) {
        TraceV(api, 0, 0, 0, nullptr, nullptr);
        return;
    }
    const uint64_t dLast = RepeatOffset(R, R - 1, p.dstRepStride), sLast = RepeatOffset(R, R - 1, p.srcRepStride);
    for (int j = 0; j < 16; ++j) {
        const char* side[2] = {"dst", "src"};
        const uint64_t at[2] = {L.dst[j], L.src[j]}, last[2] = {dLast, sLast}, lim[2] = {L.dstLimit[j], L.srcLimit[j]};
        for (int k = 0; k < 2; ++k) {
            if (last[k] + 32 > lim[k]) {
                Fail(api, "%sList[%d]: repeat %u reaches byte %llu past its start but only %llu bytes are available",
                     side[k], j, R - 1, (unsigned long long)(last[k] + 32), (unsigned long long)lim[k]);
            }
        }
    }
    const uint32_t hs = p.srcHighHalf ? 16 : 0, hd = p.dstHighHalf ? 16 : 0;
    for (uint32_t r = 0; r < R; ++r) {
        const uint64_t so = RepeatOffset(R, r, p.srcRepStride), dof = RepeatOffset(R, r, p.dstRepStride);
        uint8_t S[16][32], D[16][32];
        for (int j = 0; j < 16; ++j) {
            std::memcpy(S[j], ub + L.src[j] + so, 32);
            std::memcpy(D[j], ub + L.dst[j] + dof, 32);
            NoteAccess(api, Mem::UB, L.src[j] + so, 32, false);
            NoteAccess(api, Mem::UB, L.dst[j] + dof, 32, true);
        }
        for (int i = 0; i < 16; ++i) {
            for (int j = 0; j < 16; ++j) {
                if (sizeof(T) == 1) D[i][hd + j] = S[j][hs + i];
                else if (sizeof(T) == 2) std::memcpy(&D[i][2 * j], &S[j][2 * i], 2);
                else if (j < 8) std::memcpy(&D[i][4 * j], &S[(i % 2) * 8 + j][4 * (i / 2)], 4);
            }
        }
        for (int j = 0; j < 16; ++j) std::memcpy(ub + L.dst[j] + dof, D[j], 32);
    }
    TraceV(api, (uint64_t)R * (sizeof(T) == 4 ? 128 : 256), (uint64_t)R * 1024, R, ub + L.dst[0], ub + L.src[0]);
}

// A UB address from an address list: 32 B aligned and inside this core's usable UB.
inline uint64_t ListAddress(const char* api, const char* name, int j, uint64_t a) {
    const uint64_t off = OffsetIn(api, Mem::UB, reinterpret_cast<const void*>((uintptr_t)a));
    if (off % 32 != 0) Fail(api, "%s[%d] = UB address %llu is not 32-byte aligned", name, j, (unsigned long long)off);
    return off;
}

template <typename T>
inline void AddressForm(const char* api, const uint64_t* dstList, const uint64_t* srcList,
                        const AscendC::TransDataTo5HDParams& p) {
    RequireAiv(api);
    CheckTransDataParams<T>(api, p);
    Nchw5hdLists L;
    const uint64_t ub = Cur().usable[(int)Mem::UB];
    for (int j = 0; j < 16; ++j) {
        L.dst[j] = ListAddress(api, "dstList", j, dstList[j]);
        L.src[j] = ListAddress(api, "srcList", j, srcList[j]);
        L.dstLimit[j] = ub > L.dst[j] ? ub - L.dst[j] : 0;
        L.srcLimit[j] = ub > L.src[j] ? ub - L.src[j] : 0;
    }
    TransData5HDRun<T>(api, L, p);
}

}  // namespace vec
}  // namespace twin

namespace AscendC {

template <typename T>
inline void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src) {
    if (!twin::vec::OneOf<T, int16_t, uint16_t, half>) {
        twin::Fail("Transpose", "data type of %zu bytes is not supported (int16_t, uint16_t, half)", sizeof(T));
    }
    twin::vec::Transpose16("Transpose", dst, src);
}

template <typename T>
inline void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                      const TransposeParamsExt& transposeParams) {
    // The official implementation instantiates its NCHW <-> NHWC path for every T; it has no other type forms.
    static_assert(twin::vec::OneOf<T, int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t, float>,
                  "Transpose (TransposeParamsExt): data type not supported on dav-2201");
    const char* api = "Transpose";
    twin::RequireAiv(api);
    switch (transposeParams.transposeType) {
        case TransposeType::TRANSPOSE_TYPE_NONE: return;
        case TransposeType::TRANSPOSE_ND2ND_B16:
            if (transposeParams.hSize != 16 || transposeParams.wSize != 16) {
                twin::Fail(api, "TRANSPOSE_ND2ND_B16 needs hSize = wSize = 16, got %u x %u", transposeParams.hSize,
                           transposeParams.wSize);
            }
            if (!std::is_same_v<T, uint16_t>) {
                twin::Fail(api, "TRANSPOSE_ND2ND_B16 supports only uint16_t on dav-2201 (got a %zu-byte type)",
                           sizeof(T));
            }
            twin::vec::Transpose16(api, dst, src);
            return;
        case TransposeType::TRANSPOSE_NCHW2NHWC:
        case TransposeType::TRANSPOSE_NHWC2NCHW:
            twin::vec::Transpose4D<T>(api, dst, src, sharedTmpBuffer, transposeParams);
            return;
        default:
            twin::Fail(api, "transposeType %u is not supported on dav-2201 (TRANSPOSE_TYPE_NONE, TRANSPOSE_ND2ND_B16, "
                            "TRANSPOSE_NCHW2NHWC, TRANSPOSE_NHWC2NCHW)", (unsigned)transposeParams.transposeType);
    }
}

template <typename T>
inline void TransDataTo5HD(const LocalTensor<T> (&dstList)[NCHW_CONV_ADDR_LIST_SIZE],
                           const LocalTensor<T> (&srcList)[NCHW_CONV_ADDR_LIST_SIZE],
                           const TransDataTo5HDParams& nchwconvParams) {
    static_assert(twin::vec::OneOf<T, int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t, float>,
                  "TransDataTo5HD: data type not supported on dav-2201");
    const char* api = "TransDataTo5HD";
    twin::RequireAiv(api);
    twin::vec::CheckTransDataParams<T>(api, nchwconvParams);
    twin::vec::Nchw5hdLists L;
    for (int j = 0; j < 16; ++j) {
        twin::vec::CheckSpanUB(api, "dstList", dstList[j], 0, true);
        twin::vec::CheckSpanUB(api, "srcList", srcList[j], 0, false);
        L.dst[j] = dstList[j].Addr(api);
        L.src[j] = srcList[j].Addr(api);
        L.dstLimit[j] = dstList[j].GetLength();
        L.srcLimit[j] = srcList[j].GetLength();
    }
    twin::vec::TransData5HDRun<T>(api, L, nchwconvParams);
}

template <typename T>
inline void TransDataTo5HD(uint64_t dstList[NCHW_CONV_ADDR_LIST_SIZE], uint64_t srcList[NCHW_CONV_ADDR_LIST_SIZE],
                           const TransDataTo5HDParams& nchwconvParams) {
    twin::vec::AddressForm<T>("TransDataTo5HD", dstList, srcList, nchwconvParams);
}

template <typename T>
inline void TransDataTo5HD(const LocalTensor<uint64_t>& dst, const LocalTensor<uint64_t>& src,
                           const TransDataTo5HDParams& nchwconvParams) {
    const char* api = "TransDataTo5HD";
    twin::RequireAiv(api);
    twin::vec::CheckSpanUB(api, "dst", dst, 16 * 8, false);
    twin::vec::CheckSpanUB(api, "src", src, 16 * 8, false);
    uint64_t d[16], s[16];
    std::memcpy(d, dst.Ptr(), sizeof d);
    std::memcpy(s, src.Ptr(), sizeof s);
    twin::vec::AddressForm<T>(api, d, s, nchwconvParams);
    // The NPU implementation leaves entries 0..3 of both tensors in the packed VA register format.
    uint64_t* lists[2] = {reinterpret_cast<uint64_t*>(dst.Ptr()), reinterpret_cast<uint64_t*>(src.Ptr())};
    const uint64_t* raw[2] = {d, s};
    for (int k = 0; k < 2; ++k) {
        for (int i = 0; i < 4; ++i) {
            uint64_t packed = 0;
            for (int f = 0; f < 4; ++f) {
                const void* at = reinterpret_cast<const void*>((uintptr_t)raw[k][4 * i + f]);
                const uint64_t off = twin::OffsetIn(api, twin::Mem::UB, at);
                packed |= ((off >> 5) & 0x1fff) << (16 * f);
            }
            lists[k][i] = packed;
        }
    }
}

}  // namespace AscendC
