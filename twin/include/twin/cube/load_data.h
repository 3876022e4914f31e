// L1 -> L0A/L0B loads (LoadData with LoadData2DParams, LoadDataWithTranspose with LoadData2dTransposeParams), the
// GM-source LoadData, and Fill/InitConstValue for L1/L0A/L0B. All work in whole 512 B fractals; data is moved as
// bytes, the fractal formats are interpreted by Mmad (cube/mmad.h).
#pragma once
#include <vector>

#include "twin/cube/fractal.h"

namespace AscendC {

using LoadData2dParams = struct LoadData2DParams;
// Member order differs from constructor order: (startIndex, repeatTimes, srcStride, sid, dstGap, ifTranspose, addrMode).
struct LoadData2DParams {
    LoadData2DParams() {}
    LoadData2DParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn, const uint8_t sidIn,
                     const uint16_t dstGapIn, const bool ifTransposeIn, const uint8_t addrModeIn)
        : startIndex(startIndexIn), dstGap(dstGapIn), srcStride(srcStrideIn), ifTranspose(ifTransposeIn),
          repeatTimes(repeatTimesIn), sid(sidIn), addrMode(addrModeIn) {}
    uint16_t startIndex = 0;
    uint16_t dstGap = 0;
    uint16_t srcStride = 0;
    bool ifTranspose = 0;
    uint8_t repeatTimes = 0;
    uint8_t sid = 0;
    uint8_t addrMode = 0;
};

struct LoadData2dTransposeParams {
    LoadData2dTransposeParams() {}
    LoadData2dTransposeParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn,
                              const uint16_t dstGapIn, const uint16_t dstfracGapIn, const uint8_t addrModeIn)
        : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), dstGap(dstGapIn),
          dstFracGap(dstfracGapIn), addrMode(addrModeIn) {}
    LoadData2dTransposeParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn,
                              const uint16_t dstGapIn, const uint16_t dstfracGapIn)
        : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), dstGap(dstGapIn),
          dstFracGap(dstfracGapIn) {}
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint16_t dstGap = 0;
    uint16_t dstFracGap = 0;
    uint8_t addrMode = 0;
};

// Declared by the common headers; the loads taking it exist on Ascend 950 only (LoadData_2D_V2.md and
// LoadData（GMToL1-2D矩阵搬运V2）.md: Atlas A2/A3 不支持; the dav-2201 implementation reports it unsupported).
struct LoadData2DParamsV2 {
    LoadData2DParamsV2() {}
    LoadData2DParamsV2(const uint32_t mStartPositionIn, const uint32_t kStartPositionIn, const uint16_t mStepIn,
                       const uint16_t kStepIn, const int32_t srcStrideIn, const uint16_t dstStrideIn,
                       const bool ifTransposeIn, const uint8_t sidIn)
        : mStartPosition(mStartPositionIn), kStartPosition(kStartPositionIn), mStep(mStepIn), kStep(kStepIn),
          srcStride(srcStrideIn), dstStride(dstStrideIn), ifTranspose(ifTransposeIn), sid(sidIn) {}
    uint32_t mStartPosition = 0;
    uint32_t kStartPosition = 0;
    uint16_t mStep = 0;
    uint16_t kStep = 0;
    int32_t srcStride = 0;
    uint16_t dstStride = 0;
    bool ifTranspose = false;
    uint8_t sid = 0;
};

template <typename T>
struct InitConstValueParams {
    InitConstValueParams() {}
    InitConstValueParams(const uint16_t repeatTimesIn, const uint16_t blockNumIn, const uint16_t dstGapIn, const T initValueIn)
        : repeatTimes(repeatTimesIn), blockNum(blockNumIn), dstGap(dstGapIn), initValue(initValueIn) {}
    InitConstValueParams(const uint16_t repeatTimesIn, const T initValueIn) : repeatTimes(repeatTimesIn), initValue(initValueIn) {}
    uint16_t repeatTimes = 0;
    uint16_t blockNum = 0;
    uint16_t dstGap = 0;
    T initValue = T(0);
};

}  // namespace AscendC

namespace twin {

// Source fractal (or square) index of iteration i: startIndex + i*srcStride, or minus with addrMode 1.
inline int64_t LoadSrcIndex(const char* api, uint32_t startIndex, uint32_t srcStride, uint8_t addrMode, uint32_t i) {
    if (addrMode > 1) Fail(api, "addrMode %u is not 0 (increment) or 1 (decrement)", addrMode);
    int64_t idx = addrMode == 0 ? (int64_t)startIndex + (int64_t)i * srcStride : (int64_t)startIndex - (int64_t)i * srcStride;
    if (idx < 0) {
        Fail(api, "addrMode 1 (decrement) walks below the source start: startIndex %u - %u x srcStride %u < 0", startIndex, i, srcStride);
    }
    return idx;
}

// Hazard-tracking footprint of an L1 -> L0 load: source units of `fracs` fractals, destination fractals at
// i*(dstGap+1) (and the second fractal of a square after dstFracGap more).
template <typename T>
inline void NoteLoadSpans(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                          uint32_t startIndex, uint32_t srcStride, uint8_t addrMode, uint32_t repeat, uint32_t dstGap,
                          uint32_t fracs, uint32_t dstFracGap) {
    int64_t lo = -1, hi = -1;
    for (uint32_t i = 0; i < repeat; ++i) {
        const int64_t s = LoadSrcIndex(api, startIndex, srcStride, addrMode, i);
        lo = lo < 0 || s < lo ? s : lo;
        hi = s > hi ? s : hi;
    }
    const uint64_t unit = (uint64_t)fracs * kFractalBytes;
    NoteAccess(api, Mem::L1, src.Addr(api) + (uint64_t)lo * unit, (uint64_t)(hi - lo + 1) * unit, false);
    const uint64_t lastDst = (uint64_t)(repeat - 1) * (dstGap + 1ull) + (uint64_t)(fracs - 1) * (1ull + dstFracGap);
    NoteAccess(api, dst.Phys(), dst.Addr(api), (lastDst + 1) * kFractalBytes, true);
}

// Transposes one 16 x 16 b16 fractal (row-major, 32 B rows).
inline void TransposeB16Fractal(uint8_t* dst, const uint8_t* src) {
    uint16_t s[256], d[256];
    std::memcpy(s, src, 512);
    for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 16; ++c) d[c * 16 + r] = s[r * 16 + c];
    std::memcpy(dst, d, 512);
}

// Shared body of the 2D loads: repeatTimes fractals from src (L1 or GM bytes) to dst fractals i*(dstGap+1).
template <typename T>
inline void Load2DFractals(const char* api, uint8_t* dst, uint64_t dstLen, const uint8_t* src, uint64_t srcLen,
                           const AscendC::LoadData2DParams& p, bool srcIsGm) {
    int64_t maxSrc = 0;
    for (uint32_t i = 0; i < p.repeatTimes; ++i) {
        int64_t s = LoadSrcIndex(api, p.startIndex, p.srcStride, p.addrMode, i);
        if (s > maxSrc) maxSrc = s;
    }
    const uint64_t needSrc = (uint64_t)(maxSrc + 1) * kFractalBytes;
    const uint64_t needDst = (uint64_t)(p.repeatTimes - 1) * (p.dstGap + 1ull) * kFractalBytes + kFractalBytes;
    if (!srcIsGm && needSrc > srcLen) {
        Fail(api, "src: fractal %lld (startIndex %u, srcStride %u, repeatTimes %u) ends at byte %llu, past the tensor's %llu bytes",
             (long long)maxSrc, p.startIndex, p.srcStride, p.repeatTimes, (unsigned long long)needSrc, (unsigned long long)srcLen);
    }
    if (needDst > dstLen) {
        Fail(api, "dst: %u fractals with dstGap %u end at byte %llu, past the tensor's %llu bytes", p.repeatTimes, p.dstGap,
             (unsigned long long)needDst, (unsigned long long)dstLen);
    }
    for (uint32_t i = 0; i < p.repeatTimes && Computing(); ++i) {
        const uint8_t* s = src + (uint64_t)LoadSrcIndex(api, p.startIndex, p.srcStride, p.addrMode, i) * kFractalBytes;
        uint8_t* d = dst + (uint64_t)i * (p.dstGap + 1ull) * kFractalBytes;
        if (p.ifTranspose) {
            TransposeB16Fractal(d, s);
        } else {
            std::memmove(d, s, kFractalBytes);
        }
    }
}

template <typename T>
inline void CheckLoadType(const char* api) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "LoadData moves b8, b16 or b32 data");
    if constexpr (ElemBits<T>::value == 4) {  // LoadData_2D.md: int4b_t only L1 -> L0A/L0B (LoadData2DParams)
        Fail(api, "int4b_t (b4) data is not supported or not modelled on this path (plain L1 -> L0A/L0B LoadData is)");
    }
}

}  // namespace twin

namespace AscendC {

// L1 (A1/B1) -> L0A (A2) / L0B (B2), PIPE_MTE1.
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& loadDataParams) {
    const char* api = "LoadData(L1->L0)";
    twin::RequireAic(api);
    if constexpr (twin::ElemBits<T>::value == 4) {  // int4b_t: whole 512 B fractals (16 x 64) moved as bytes
        if (loadDataParams.ifTranspose) twin::Fail(api, "ifTranspose works only for b16 data, got int4b_t");
        LoadData(dst.template ReinterpretCast<int8_t>(), src.template ReinterpretCast<int8_t>(), loadDataParams);
        return;
    }
    twin::CheckLoadType<T>(api);
    const LoadData2DParams& p = loadDataParams;
    if (!dst.Valid()) twin::Fail(api, "dst tensor is not allocated");
    if (dst.Phys() != twin::Mem::L0A && dst.Phys() != twin::Mem::L0B) {
        twin::Fail(api, "dst must be in L0A (A2) or L0B (B2), got position %s (%s)", twin::PositionName(dst.Pos()), twin::MemName(dst.Phys()));
    }
    twin::CubeOperand(api, "dst", dst, dst.Phys(), 512, "L0A (A2) or L0B (B2)");
    twin::CubeOperand(api, "src", src, twin::Mem::L1, 32, "L1 (A1/B1)");
    if (p.ifTranspose && sizeof(T) != 2) {
        twin::Fail(api, "ifTranspose works only for b16 data (half/bfloat16_t), got %s; use LoadDataWithTranspose for b8/b32",
                   twin::TypeName<T>());
    }
    if (p.repeatTimes == 0) return;  // documented NOP
    twin::NoteLoadSpans(api, dst, src, p.startIndex, p.srcStride, p.addrMode, p.repeatTimes, p.dstGap, 1, 0);
    twin::Load2DFractals<T>(api, dst.Ptr(), dst.GetLength(), src.Ptr(), src.GetLength(), p, false);
    twin::Trace(api, PIPE_MTE1, p.repeatTimes * twin::kFractalBytes / sizeof(T), p.repeatTimes * (uint64_t)twin::kFractalBytes,
                p.repeatTimes, dst.Ptr(), src.Ptr());
}

// GM -> L0A/L0B (and GM -> L1), PIPE_MTE2; no transpose on this path.
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const LoadData2DParams& loadDataParams) {
    const char* api = "LoadData(GM->L0/L1)";
    twin::RequireAic(api);
    twin::CheckLoadType<T>(api);
    const LoadData2DParams& p = loadDataParams;
    if (!dst.Valid()) twin::Fail(api, "dst tensor is not allocated");
    const twin::Mem dm = dst.Phys();
    if (dm != twin::Mem::L0A && dm != twin::Mem::L0B && dm != twin::Mem::L1) {
        twin::Fail(api, "dst must be in L0A, L0B or L1, got position %s", twin::PositionName(dst.Pos()));
    }
    twin::CubeOperand(api, "dst", dst, dm, dm == twin::Mem::L1 ? 32 : 512, "L0A/L0B/L1");
    if (p.ifTranspose) twin::Fail(api, "ifTranspose is only available on the L1 -> L0A/L0B path");
    if (p.repeatTimes == 0) return;
    int64_t maxSrc = 0;
    for (uint32_t i = 0; i < p.repeatTimes; ++i) {
        const int64_t s = twin::LoadSrcIndex(api, p.startIndex, p.srcStride, p.addrMode, i);
        if (s > maxSrc) maxSrc = s;
        twin::NoteGm(api, (const uint8_t*)src.GetPhyAddr() + (uint64_t)s * twin::kFractalBytes, twin::kFractalBytes, false);
    }
    src.CheckElems(api, 0, (uint64_t)(maxSrc + 1) * twin::kFractalBytes / sizeof(T));
    twin::NoteAccess(api, dm, dst.Addr(api), ((uint64_t)(p.repeatTimes - 1) * (p.dstGap + 1ull) + 1) * twin::kFractalBytes, true);
    twin::Load2DFractals<T>(api, dst.Ptr(), dst.GetLength(), (const uint8_t*)src.GetPhyAddr(), 0, p, true);
    twin::Trace(api, PIPE_MTE2, p.repeatTimes * twin::kFractalBytes / sizeof(T), p.repeatTimes * (uint64_t)twin::kFractalBytes,
                p.repeatTimes, dst.Ptr(), src.GetPhyAddr());
}

template <typename T>
inline void LoadData(const LocalTensor<T>&, const LocalTensor<T>&, const LoadData2DParamsV2&) {
    twin::Fail("LoadData(LoadData2DParamsV2)", "not supported on Atlas A2/A3 (dav-2201): LoadData_2D_V2.md lists Ascend "
               "950 only; load L1 -> L0A/L0B with LoadData2DParams (Nz -> Zz per row of fractals, or ifTranspose for Zn)");
}

template <typename T>
inline void LoadData(const LocalTensor<T>&, const GlobalTensor<T>&, const LoadData2DParamsV2&) {
    twin::Fail("LoadData(GM, LoadData2DParamsV2)", "not supported on Atlas A2/A3 (dav-2201): LoadData（GMToL1-2D矩阵搬运V2）.md "
               "lists Ascend 950 only; use LoadData2DParams or DataCopy with Nd2NzParams");
}

// L1 -> L0A/L0B with a transpose of square blocks: b16 one 16x16 fractal; b32 two 16x8 fractals side by side
// (so L1 must hold them adjacent: Zz/Zn layout) forming 16x16; b8 two 16x32 fractals stacked forming 32x32; b4
// (L0B only) four 16x64 fractals stacked forming 64x64. The transposed square is split back into fractals written at
// i*(dstGap+1) + f*(1 + dstFracGap).
template <typename T>
inline void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                  const LoadData2dTransposeParams& loadDataParams) {
    const char* api = "LoadDataWithTranspose";
    twin::RequireAic(api);
    constexpr bool b4 = twin::ElemBits<T>::value == 4;
    if constexpr (!b4) twin::CheckLoadType<T>(api);
    const LoadData2dTransposeParams& p = loadDataParams;
    if (!dst.Valid()) twin::Fail(api, "dst tensor is not allocated");
    if (dst.Phys() != twin::Mem::L0A && dst.Phys() != twin::Mem::L0B) {
        twin::Fail(api, "dst must be in L0A (A2) or L0B (B2), got position %s", twin::PositionName(dst.Pos()));
    }
    twin::CubeOperand(api, "dst", dst, dst.Phys(), 512, "L0A (A2) or L0B (B2)");
    twin::CubeOperand(api, "src", src, twin::Mem::L1, 32, "L1 (A1/B1)");
    if (b4 && dst.Phys() != twin::Mem::L0B) twin::Fail(api, "int4b_t goes only to L0B (LoadDataWithTranspose.md)");
    if (p.repeatTimes == 0) return;
    constexpr uint32_t fracs = b4 ? 4 : sizeof(T) == 2 ? 1 : 2;  // fractals per square
    twin::NoteLoadSpans(api, dst, src, p.startIndex, p.srcStride, p.addrMode, p.repeatTimes, p.dstGap, fracs, p.dstFracGap);
    const uint64_t sq = (uint64_t)fracs * twin::kFractalBytes;
    // Destination fractals of every iteration; overlapping outputs are undefined on the NPU.
    const uint64_t dstFracs = dst.GetLength() / twin::kFractalBytes;
    std::vector<uint8_t> used(dstFracs, 0);
    for (uint32_t i = 0; i < p.repeatTimes; ++i) {
        int64_t s = twin::LoadSrcIndex(api, p.startIndex, p.srcStride, p.addrMode, i);
        if ((uint64_t)(s + 1) * sq > src.GetLength()) {
            twin::Fail(api, "src: square block %lld (%llu bytes each) ends past the tensor's %u bytes", (long long)s,
                       (unsigned long long)sq, src.GetLength());
        }
        for (uint32_t f = 0; f < fracs; ++f) {
            uint64_t d = (uint64_t)i * (p.dstGap + 1ull) + f * (1ull + p.dstFracGap);
            if (d >= dstFracs) {
                twin::Fail(api, "dst: iteration %u writes fractal %llu, past the tensor's %llu fractals (dstGap %u, dstFracGap %u)",
                           i, (unsigned long long)d, (unsigned long long)dstFracs, p.dstGap, p.dstFracGap);
            }
            if (used[d]) {
                twin::Fail(api, "dst fractal %llu is written twice (dstGap %u, dstFracGap %u): transposed fractals overlap, "
                                "which is undefined on the NPU", (unsigned long long)d, p.dstGap, p.dstFracGap);
            }
            used[d] = 1;
        }
    }
    for (uint32_t i = 0; i < p.repeatTimes; ++i) {
        const uint8_t* s = src.Ptr() + (uint64_t)twin::LoadSrcIndex(api, p.startIndex, p.srcStride, p.addrMode, i) * sq;
        uint8_t* d0 = dst.Ptr() + (uint64_t)i * (p.dstGap + 1ull) * twin::kFractalBytes;
        uint8_t* d1 = d0 + (1ull + p.dstFracGap) * twin::kFractalBytes;
        if constexpr (b4) {
            // X (64 x 64 nibbles) = [F0; F1; F2; F3], Fi = 16 rows x 64 columns; Df = X^T rows 16f..16f+15.
            uint8_t x[64][64];
            for (int r = 0; r < 64; ++r)
                for (int c = 0; c < 64; ++c) x[r][c] = (s[(r * 64 + c) / 2] >> (4 * (c % 2))) & 0xF;
            for (int f = 0; f < 4; ++f) {
                uint8_t* d = d0 + f * (1ull + p.dstFracGap) * twin::kFractalBytes;
                for (int r = 0; r < 16; ++r)
                    for (int c = 0; c < 64; c += 2) d[(r * 64 + c) / 2] = (uint8_t)(x[c][16 * f + r] | (x[c + 1][16 * f + r] << 4));
            }
        } else if constexpr (sizeof(T) == 2) {
            twin::TransposeB16Fractal(d0, s);
        } else if constexpr (sizeof(T) == 4) {
            // X (16 x 16) = [F0 | F1], Fi = 16 rows x 8 columns; D0 = X^T[:, 0:8], D1 = X^T[:, 8:16].
            uint32_t x[16][16], out[2][128];
            for (int r = 0; r < 16; ++r)
                for (int c = 0; c < 8; ++c) {
                    std::memcpy(&x[r][c], s + (r * 8 + c) * 4, 4);
                    std::memcpy(&x[r][8 + c], s + 512 + (r * 8 + c) * 4, 4);
                }
            for (int j = 0; j < 16; ++j)      // row of X^T
                for (int c = 0; c < 16; ++c)  // column of X^T
                    out[c / 8][j * 8 + (c % 8)] = x[c][j];
            std::memcpy(d0, out[0], 512);
            std::memcpy(d1, out[1], 512);
        } else {
            // X (32 x 32) = [F0; F1], Fi = 16 rows x 32 columns; D0 = X^T rows 0..15, D1 = rows 16..31.
            uint8_t x[32][32], y[32][32];
            std::memcpy(x, s, 1024);
            for (int r = 0; r < 32; ++r)
                for (int c = 0; c < 32; ++c) y[c][r] = x[r][c];
            std::memcpy(d0, &y[0][0], 512);
            std::memcpy(d1, &y[16][0], 512);
        }
    }
    twin::Trace(api, PIPE_MTE1, p.repeatTimes * sq / sizeof(T), p.repeatTimes * sq, p.repeatTimes, dst.Ptr(), src.Ptr());
}

// Fills L1 (32 B blocks, PIPE_MTE2) or L0A/L0B (512 B blocks, PIPE_MTE1): repeatTimes x (blockNum blocks, then a
// gap of dstGap blocks).
template <typename T, typename U = PrimT<T>, typename std::enable_if<std::is_same<PrimT<T>, U>::value, bool>::type = true>
inline void Fill(const LocalTensor<T>& dst, const InitConstValueParams<U>& initConstValueParams) {
    const char* api = "Fill";
    twin::RequireAic(api);
    static_assert(std::is_same<T, half>::value || std::is_same<T, bfloat16_t>::value || std::is_same<T, int16_t>::value ||
                      std::is_same<T, uint16_t>::value || std::is_same<T, float>::value || std::is_same<T, int32_t>::value ||
                      std::is_same<T, uint32_t>::value,
                  "Fill/InitConstValue supports half, bfloat16_t, int16_t, uint16_t, float, int32_t and uint32_t");
    const InitConstValueParams<U>& p = initConstValueParams;
    if (!dst.Valid()) twin::Fail(api, "dst tensor is not allocated");
    const twin::Mem m = dst.Phys();
    if (m != twin::Mem::L1 && m != twin::Mem::L0A && m != twin::Mem::L0B) {
        twin::Fail(api, "dst must be in L1 (A1/B1), L0A (A2) or L0B (B2), got position %s", twin::PositionName(dst.Pos()));
    }
    const uint32_t blk = m == twin::Mem::L1 ? 32 : 512;
    twin::CubeOperand(api, "dst", dst, m, blk, "L1/L0A/L0B");
    if (p.repeatTimes > 32767 || p.blockNum > 32767 || p.dstGap > 32767) {
        twin::Fail(api, "repeatTimes %u, blockNum %u and dstGap %u must each lie in [0, 32767]", p.repeatTimes, p.blockNum, p.dstGap);
    }
    if (p.repeatTimes == 0) return;
    if (p.blockNum == 0) {
        twin::Fail(api, "blockNum is 0, so this fills nothing on dav-2201 (the two-argument InitConstValueParams "
                        "constructor leaves blockNum = 0; it only means '512 B per repeat' on older parts)");
    }
    // Fill.md: repeatTimes runs of blockNum blocks (32 B in L1, 512 B in L0A/L0B), dstGap blocks apart. It
    // initialises the tensor it is given, so a footprint past it is refused (not judged like an Mmad overrun), and
    // only the runs are written: the gap blocks keep their bytes.
    const uint64_t step = (uint64_t)(p.blockNum + p.dstGap) * blk, run = (uint64_t)p.blockNum * blk;
    const uint64_t span = (p.repeatTimes - 1) * step + run;
    if (span > dst.GetLength()) {
        twin::Fail(api, "repeatTimes %u x (blockNum %u + dstGap %u) blocks of %u B write bytes [0, %llu), past the %s "
                        "tensor's %u bytes", p.repeatTimes, p.blockNum, p.dstGap, blk, (unsigned long long)span,
                   twin::MemName(m), dst.GetLength());
    }
    for (uint32_t r = 0; r < p.repeatTimes; ++r) {
        if (p.dstGap == 0) {  // one contiguous run
            twin::NoteAccess(api, m, dst.Addr(api), span, true);
            break;
        }
        twin::NoteAccess(api, m, dst.Addr(api) + r * step, run, true);
    }
    T v = p.initValue;
    for (uint32_t r = 0; r < p.repeatTimes; ++r) {
        uint8_t* q = dst.Ptr() + r * step;
        for (uint64_t e = 0; e < run / sizeof(T); ++e) std::memcpy(q + e * sizeof(T), &v, sizeof(T));
    }
    twin::Trace(api, m == twin::Mem::L1 ? PIPE_MTE2 : PIPE_MTE1, p.repeatTimes * run / sizeof(T), p.repeatTimes * run,
                p.repeatTimes, dst.Ptr(), nullptr);
}

// Former name of Fill.
template <typename T, typename U = PrimT<T>, typename std::enable_if<std::is_same<PrimT<T>, U>::value, bool>::type = true>
inline void InitConstValue(const LocalTensor<T>& dst, const InitConstValueParams<U>& initConstValueParams) {
    Fill(dst, initConstValueParams);
}

}  // namespace AscendC
