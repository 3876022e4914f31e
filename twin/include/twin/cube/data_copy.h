// Cube-core data movement: GM -> L1 (count form, DataCopyParams, and the ND -> NZ conversion with Nd2NzParams) on
// PIPE_MTE2, L1 -> GM (count form, DataCopyParams) on PIPE_MTE3, L1 -> BiasTable on PIPE_MTE1 and L1 -> Fixpipe
// Buffer (quantisation words for SetFixPipeConfig) on PIPE_FIX. Paths that dav-2201 lacks or that need the Matmul
// API's KFC server (UB -> L1, L1 -> UB, DataCopyPad into L1) raise with the reason.
#pragma once
#include "twin/cube/fractal.h"
#include "twin/memory/data_copy.h"

namespace AscendC {

// dav-2201 layout: all fields uint16_t, constructor in field order.
struct Nd2NzParams {
    Nd2NzParams() {}
    Nd2NzParams(const uint16_t ndNumIn, const uint16_t nValueIn, const uint16_t dValueIn,
                const uint16_t srcNdMatrixStrideIn, const uint16_t srcDValueIn, const uint16_t dstNzC0StrideIn,
                const uint16_t dstNzNStrideIn, const uint16_t dstNzMatrixStrideIn)
        : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
          srcDValue(srcDValueIn), dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn),
          dstNzMatrixStride(dstNzMatrixStrideIn) {}
    uint16_t ndNum = 0;
    uint16_t nValue = 0;
    uint16_t dValue = 0;
    uint16_t srcNdMatrixStride = 0;
    uint16_t srcDValue = 0;
    uint16_t dstNzC0Stride = 0;
    uint16_t dstNzNStride = 0;
    uint16_t dstNzMatrixStride = 0;
};

}  // namespace AscendC

namespace twin {

// GM -> L1 block copy: blockCount blocks of blockBytes, gaps in bytes on each side.
template <typename T>
inline void GmToL1Blocks(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src,
                         uint32_t blockCount, uint64_t blockBytes, uint64_t srcGapBytes, uint64_t dstGapBytes) {
    RequireAic(api);
    CubeOperand(api, "dst", dst, Mem::L1, 32, "L1 (A1/B1/C1/TSCM)");
    if (blockCount > 4095) Fail(api, "blockCount %u is outside [0, 4095]", blockCount);
    if (blockCount == 0 || blockBytes == 0) return;
    GmLocalCopy(api, dst, src, false, blockCount, blockBytes, srcGapBytes, dstGapBytes);
}

// Count form: count * sizeof(T) is rounded down to whole 32 B blocks, as on the NPU (and as the GM->UB path does).
template <typename T>
void CopyGmToL1(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src, uint32_t count) {
    const char* api = "DataCopy(GM->L1)";
    RequireAic(api);
    if (dst.Phys() != Mem::L1) {
        Fail(api, "destination position %s (%s) is not reachable from GM on dav-2201 (use L1: A1/B1/C1, or UB)",
             PositionName(dst.Pos()), MemName(dst.Phys()));
    }
    uint64_t bytes = (uint64_t)count * sizeof(T) / 32 * 32;
    GmToL1Blocks(api, dst, src, 1, bytes, 0, 0);
}

// DataCopyParams: blockLen, srcGap and dstGap all count 32 B blocks.
template <typename T>
void CopyGmToL1(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src, const AscendC::DataCopyParams& p) {
    const char* api = "DataCopy(GM->L1)";
    RequireAic(api);
    if (dst.Phys() != Mem::L1) {
        Fail(api, "destination position %s (%s) is not reachable from GM on dav-2201 (use L1: A1/B1/C1, or UB)",
             PositionName(dst.Pos()), MemName(dst.Phys()));
    }
    GmToL1Blocks(api, dst, src, p.blockCount, p.blockLen * 32ull, p.srcGap * 32ull, p.dstGap * 32ull);
}

// L1 -> GM: blockLen and both gaps in 32 B blocks; the count form rounds count * sizeof(T) down to 32 B.
template <typename T>
void CopyL1ToGm(const AscendC::GlobalTensor<T>& dst, const AscendC::LocalTensor<T>& src, uint32_t blockCount,
                uint64_t blockBytes, uint64_t srcGapBytes, uint64_t dstGapBytes) {
    const char* api = "DataCopy(L1->GM)";
    RequireAic(api);
    CubeOperand(api, "src", src, Mem::L1, 32, "L1 (A1/B1/C1)");
    if (blockCount > 4095) Fail(api, "blockCount %u is outside [0, 4095]", blockCount);
    if (blockCount == 0 || blockBytes == 0) return;
    GmLocalCopy(api, src, dst, true, blockCount, blockBytes, dstGapBytes, srcGapBytes);
}

// L1 -> Fixpipe Buffer: blockLen in 128 B; srcGap (32 B) and dstGap (128 B) count head to head, not end to start.
template <typename T>
inline void CopyL1ToFb(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, const AscendC::DataCopyParams& p) {
    const char* api = "DataCopy(L1->FB)";
    RequireAic(api);
    if (!std::is_same<T, uint64_t>::value) Fail(api, "the Fixpipe Buffer takes uint64_t words, got %s", TypeName<T>());
    CubeOperand(api, "src", src, Mem::L1, 32, "L1 (A1/B1/C1)");
    CubeOperand(api, "dst", dst, Mem::FB, 128, "the Fixpipe Buffer (C2PIPE2GM)");
    if (p.blockCount > 4095) Fail(api, "blockCount %u is outside [0, 4095]", p.blockCount);
    if (p.blockCount == 0 || p.blockLen == 0) return;  // documented NOP
    if (p.blockCount > 1 && p.dstGap < p.blockLen) {
        Fail(api, "dstGap %u (128 B, head to head) is smaller than blockLen %u: destination blocks overlap", p.dstGap,
             p.blockLen);
    }
    const uint64_t len = p.blockLen * 128ull, sStep = p.srcGap * 32ull, dStep = p.dstGap * 128ull;
    CheckLocalSpan(api, "src", src, 0, (p.blockCount - 1) * sStep + len);
    CheckLocalSpan(api, "dst", dst, 0, (p.blockCount - 1) * dStep + len);
    for (uint32_t b = 0; b < p.blockCount; ++b) std::memcpy(dst.Ptr() + b * dStep, src.Ptr() + b * sStep, len);
    Trace(api, PIPE_FIX, p.blockCount * len / sizeof(T), p.blockCount * len, p.blockCount, dst.Ptr(), src.Ptr());
}

// Local -> local copies that do not start and end in UB.
template <typename T>
void CopyLocalToLocal(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, const AscendC::DataCopyParams& p) {
    const char* api = "DataCopy(local->local)";
    if (!dst.Valid() || !src.Valid()) Fail(api, "tensor is not allocated");
    const Mem sm = src.Phys(), dm = dst.Phys();
    if (sm == Mem::UB && dm == Mem::L1) {
        Fail(api, "UB -> L1 on dav-2201 is emulated by the Matmul API's KFC server (AIV -> GM -> AIC), which the twin "
                  "does not model: copy UB -> GM, sync cross-core, then GM -> L1 on the AIC");
    }
    if (sm == Mem::L1 && dm == Mem::UB) {
        Fail(api, "L1 -> UB does not exist on dav-2201 (Atlas A2/A3): AIC -> AIV data must go through GM");
    }
    if (sm == Mem::L1 && dm == Mem::BT) {
        const char* bapi = "DataCopy(L1->BT)";
        RequireAic(bapi);
        CubeOperand(bapi, "src", src, Mem::L1, 32, "L1 (C1)");
        CubeOperand(bapi, "dst", dst, Mem::BT, 64, "BiasTable (C2)");
        if (!std::is_same<T, float>::value && !std::is_same<T, int32_t>::value) {
            Fail(bapi, "BiasTable holds float or int32_t, got %s", TypeName<T>());
        }
        if (p.blockCount > 4095) Fail(bapi, "blockCount %u is outside [0, 4095]", p.blockCount);
        if (p.blockCount == 0 || p.blockLen == 0) return;
        // dav-2201: blockLen and dstGap in 64 B units, srcGap in 32 B units.
        const uint64_t len = p.blockLen * 64ull, sg = p.srcGap * 32ull, dg = p.dstGap * 64ull;
        CheckLocalSpan(bapi, "src", src, 0, (p.blockCount - 1) * (len + sg) + len);
        CheckLocalSpan(bapi, "dst", dst, 0, (p.blockCount - 1) * (len + dg) + len);
        for (uint32_t b = 0; b < p.blockCount; ++b) std::memcpy(dst.Ptr() + b * (len + dg), src.Ptr() + b * (len + sg), len);
        Trace(bapi, PIPE_MTE1, p.blockCount * len / sizeof(T), p.blockCount * len, p.blockCount, dst.Ptr(), src.Ptr());
        return;
    }
    if (sm == Mem::L1 && dm == Mem::FB) {
        CopyL1ToFb(dst, src, p);
        return;
    }
    Fail(api, "%s (%s) -> %s (%s) is not a DataCopy path on dav-2201", PositionName(src.Pos()), MemName(sm),
         PositionName(dst.Pos()), MemName(dm));
}

template <typename T>
void CopyPadGmToL1(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>&, const AscendC::DataCopyExtParams&,
                   const AscendC::DataCopyPadExtParams<T>&) {
    Fail("DataCopyPad(GM->L1)", "not supported on Atlas A2/A3 (dav-2201; only Ascend 950 has it); destination was %s. "
         "Use DataCopy with Nd2NzParams, which zero-pads each row to 32 B", PositionName(dst.Pos()));
}

using ByteRun = std::pair<uint64_t, uint64_t>;  // (byte offset, bytes)

// The bytes an ND -> NZ copy writes, as ascending disjoint runs relative to dst: 32 B per (matrix, column block, row),
// so copies that interleave (rows i, i + T, ... of one NZ tile per copy, as catlass's GQA Q load does) touch
// disjoint bytes and are judged by those. Two rows of one copy on the same bytes are refused: the page's constraints
// say writes to L1 must not overlap (their order is not guaranteed) — except dstNzMatrixStride = 0, which it
// defines as every matrix overwriting the first.
inline std::vector<ByteRun> Nd2NzRuns(const char* api, const AscendC::Nd2NzParams& p, uint32_t blocks, uint32_t elemBytes) {
    const uint32_t mats = p.dstNzMatrixStride == 0 ? 1 : p.ndNum;
    const uint32_t rowsPerRun = p.dstNzNStride == 1 ? p.nValue : 1;  // rows of a block are contiguous at stride 1
    std::vector<ByteRun> runs;
    runs.reserve((size_t)mats * blocks * (p.nValue / rowsPerRun));
    for (uint32_t i = 0; i < mats; ++i) {
        for (uint32_t c = 0; c < blocks; ++c) {
            const uint64_t base = (uint64_t)i * p.dstNzMatrixStride * elemBytes + (uint64_t)c * p.dstNzC0Stride * 32;
            for (uint32_t r = 0; r < p.nValue; r += rowsPerRun) {
                runs.push_back({base + (uint64_t)r * p.dstNzNStride * 32, (uint64_t)rowsPerRun * 32});
            }
        }
    }
    std::sort(runs.begin(), runs.end());
    size_t n = 0;
    for (size_t k = 0; k < runs.size(); ++k) {
        if (n > 0 && runs[k].first < runs[n - 1].first + runs[n - 1].second) {
            Fail(api, "two destination rows overlap at dst byte %llu (ndNum %u, nValue %u, dValue %u, dstNzC0Stride %u, "
                      "dstNzNStride %u, dstNzMatrixStride %u): writes to L1 must not overlap, their order is not "
                      "guaranteed; normally dstNzC0Stride >= nValue * dstNzNStride",
                 (unsigned long long)runs[k].first, p.ndNum, p.nValue, p.dValue, p.dstNzC0Stride, p.dstNzNStride,
                 p.dstNzMatrixStride);
        }
        if (n > 0 && runs[k].first == runs[n - 1].first + runs[n - 1].second) {
            runs[n - 1].second += runs[k].second;  // contiguous: one run
        } else {
            runs[n++] = runs[k];
        }
    }
    runs.resize(n);
    return runs;
}

// ND -> NZ conversion GM -> L1. Row r, 32 B column block c of ND matrix i land at
//   dst + i*dstNzMatrixStride (elements) + c*dstNzC0Stride*32 B + r*dstNzNStride*32 B.
// Columns past dValue inside the last block are zero-filled; rows are never padded (whatever was there stays).
template <typename T>
inline void Nd2NzGmToL1(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src, const AscendC::Nd2NzParams& p) {
    const char* api = "DataCopy(GM->L1, Nd2NzParams)";
    RequireAic(api);
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "Nd2Nz supports b8, b16 and b32 data");
    CubeOperand(api, "dst", dst, Mem::L1, 32, "L1 (A1/B1/C1/TSCM)");
    if (p.ndNum > 4095) Fail(api, "ndNum %u is outside [0, 4095]", p.ndNum);
    if (p.nValue > 16384) Fail(api, "nValue %u is outside [0, 16384]", p.nValue);
    if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) return;  // documented NOP
    if (p.srcDValue < 1) Fail(api, "srcDValue %u is outside [1, 65535]", p.srcDValue);
    if (p.dstNzC0Stride < 1 || p.dstNzC0Stride > 16384) Fail(api, "dstNzC0Stride %u is outside [1, 16384]", p.dstNzC0Stride);
    if (p.dstNzNStride < 1 || p.dstNzNStride > 16384) Fail(api, "dstNzNStride %u is outside [1, 16384]", p.dstNzNStride);
    if (p.dstNzMatrixStride > 16384) Fail(api, "dstNzMatrixStride %u is outside [0, 16384]", p.dstNzMatrixStride);
    if (p.srcDValue < p.dValue) {
        Fail(api, "srcDValue %u (source row pitch) is smaller than dValue %u: source rows would overlap", p.srcDValue, p.dValue);
    }
    constexpr uint32_t c0 = C0Of<T>();
    const uint32_t blocks = CeilDivU(p.dValue, c0);
    const std::vector<ByteRun> runs = Nd2NzRuns(api, p, blocks, sizeof(T));
    CheckLocalBounds(api, "dst", dst, 0, runs.back().first + runs.back().second);
    for (const ByteRun& r : runs) NoteAccess(api, Mem::L1, dst.Addr(api) + r.first, r.second, true);
    const uint64_t srcElems = (uint64_t)(p.ndNum - 1) * p.srcNdMatrixStride + (uint64_t)(p.nValue - 1) * p.srcDValue + p.dValue;
    src.CheckElems(api, 0, srcElems);

    const uint8_t* g = (const uint8_t*)src.GetPhyAddr();
    uint8_t* l1 = dst.Ptr();
    for (uint32_t i = 0; i < p.ndNum && Computing(); ++i) {
        const uint8_t* gm = g + (uint64_t)i * p.srcNdMatrixStride * sizeof(T);
        uint8_t* dm = l1 + (uint64_t)i * p.dstNzMatrixStride * sizeof(T);
        for (uint32_t r = 0; r < p.nValue; ++r) {
            const uint8_t* row = gm + (uint64_t)r * p.srcDValue * sizeof(T);
            NoteGm(api, row, (uint64_t)p.dValue * sizeof(T), false);
            for (uint32_t c = 0; c < blocks; ++c) {
                uint8_t* out = dm + (uint64_t)c * p.dstNzC0Stride * 32 + (uint64_t)r * p.dstNzNStride * 32;
                const uint32_t valid = (c + 1) * c0 <= p.dValue ? c0 : p.dValue - c * c0;
                std::memcpy(out, row + (uint64_t)c * c0 * sizeof(T), valid * sizeof(T));
                if (valid < c0) std::memset(out + valid * sizeof(T), 0, (c0 - valid) * sizeof(T));
            }
        }
    }
    const uint64_t elems = (uint64_t)p.ndNum * p.nValue * p.dValue;
    Trace(api, PIPE_MTE2, elems, elems * sizeof(T), (uint32_t)p.ndNum * p.nValue, l1, g);
}

}  // namespace twin

namespace AscendC {

// GM -> L1 (A1/B1/C1) with the ND -> NZ conversion.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& intriParams) {
    if (dst.Valid() && dst.Phys() == twin::Mem::UB) {
        twin::Fail("DataCopy(GM->UB, Nd2NzParams)", "ND -> NZ into UB exists only on Atlas inference parts (310P), not on dav-2201");
    }
    if constexpr (twin::ElemBits<T>::value == 4) {  // b4 moves as b8, its parameters count bytes (ND2NZ page, 约束说明)
        twin::Nd2NzGmToL1(dst.template ReinterpretCast<int8_t>(), src.template ReinterpretCast<int8_t>(), intriParams);
    } else {
        twin::Nd2NzGmToL1(dst, src, intriParams);
    }
}

// UB -> L1 with ND -> NZ: software-emulated through the Matmul API's KFC server on dav-2201.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const Nd2NzParams&) {
    twin::Fail("DataCopy(UB->L1, Nd2NzParams)", "%s -> %s: UB -> L1 on dav-2201 goes through the Matmul API's KFC server, "
               "which the twin does not model; copy through GM instead", twin::PositionName(src.Pos()), twin::PositionName(dst.Pos()));
}

}  // namespace AscendC
