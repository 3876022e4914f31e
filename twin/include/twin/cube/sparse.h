// 4:2 structured-sparse matmul (LoadDataWithSparse.md, MmadWithSparse.md; Atlas A2/A3 only).
// LoadDataWithSparse copies repeatTimes consecutive 512 B fractals of the dense int8 B (Zn in L1) from fractal
// startIndex into L0B, and the matching 128 B index fractals (one 2-bit index per dense element, four per byte, the
// first in the low bits) into the cube's index buffer, a quarter of L0B laid out like it: the index of the dense
// element at L0B byte o is at index byte o / 4, bits 2 * (o % 4).
// MmadWithSparse: C (int32, m x n) = A (L0A Zz int8, m x k) x B, where B's dense rows kd (k / 2 of them, Zn) take
// A's column 4 * (kd / 2) + kd % 2 + index(kd, n): the first index of each pair picks among the group's elements
// 0..2, the second among 1..3.
#pragma once
#include <vector>

#include "twin/cube/load_data.h"
#include "twin/cube/mmad.h"

namespace twin {

struct SparseIndexBuffer {
    std::vector<uint8_t> bytes;  // 0xFF (four invalid indices 3) until loaded
    std::vector<uint8_t>& Get() {
        const size_t n = Cur().mem[(int)Mem::L0B].size() / 4;
        if (bytes.size() != n) bytes.assign(n, 0xFF);
        return bytes;
    }
};

inline std::vector<uint8_t>& SparseIndex() { return CoreLocal<SparseIndexBuffer>().Get(); }

}  // namespace twin

namespace AscendC {

template <typename T = int8_t, typename U = uint8_t,
          typename std::enable_if<std::is_same<PrimT<T>, int8_t>::value, bool>::type = true,
          typename std::enable_if<std::is_same<PrimT<U>, uint8_t>::value, bool>::type = true>
inline void LoadDataWithSparse(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<U>& idx,
                               const LoadData2dParams& loadDataParam) {
    const char* api = "LoadDataWithSparse";
    twin::RequireAic(api);
    const uint64_t d = twin::CubeOperand(api, "dst", dst, twin::Mem::L0B, 512, "L0B (B2)");
    twin::CubeOperand(api, "src", src, twin::Mem::L1, 32, "L1 (B1)");
    twin::CubeOperand(api, "idx", idx, twin::Mem::L1, 32, "L1 (B1)");
    const LoadData2dParams& p = loadDataParam;
    if (p.ifTranspose) twin::Fail(api, "ifTranspose: the sparse load has no transpose (LoadDataWithSparse.md)");
    if (p.repeatTimes == 0) return;  // documented NOP
    const uint64_t n = p.repeatTimes, first = p.startIndex;
    twin::CheckLocalSpan(api, "src", src, first * twin::kFractalBytes, n * twin::kFractalBytes);
    twin::CheckLocalSpan(api, "idx", idx, first * 128, n * 128);
    twin::CheckLocalSpan(api, "dst", dst, 0, n * twin::kFractalBytes);
    std::vector<uint8_t>& ib = twin::SparseIndex();
    if (twin::Computing()) {
        std::memmove(dst.Ptr(), src.Ptr() + first * twin::kFractalBytes, n * twin::kFractalBytes);
        std::memcpy(ib.data() + d / 4, idx.Ptr() + first * 128, n * 128);
    }
    twin::Trace(api, PIPE_MTE1, n * twin::kFractalBytes, n * (twin::kFractalBytes + 128), (uint32_t)n, dst.Ptr(), src.Ptr());
}

template <typename T = int32_t, typename U = int8_t,
          typename std::enable_if<std::is_same<PrimT<T>, int32_t>::value, bool>::type = true,
          typename std::enable_if<std::is_same<PrimT<U>, int8_t>::value, bool>::type = true>
inline void MmadWithSparse(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<U>& filter,
                           const MmadParams& mmadParams) {
    const char* api = "MmadWithSparse";
    twin::RequireAic(api);
    const MmadParams& p = mmadParams;
    twin::CheckUnitFlagValue(api, p.unitFlag);
    twin::CubeOperand(api, "dst", dst, twin::Mem::L0C, 1024, "L0C (CO1)");
    twin::CubeOperand(api, "fm", fm, twin::Mem::L0A, 512, "L0A (A2)");
    const uint64_t fOff = twin::CubeOperand(api, "filter", filter, twin::Mem::L0B, 512, "L0B (B2)");
    if (p.m == 0 || p.n == 0 || p.k == 0) return;
    if (p.k % 4 != 0) twin::Fail(api, "k %u must be a multiple of 4 (groups of four A columns per two dense B rows)", p.k);
    const uint32_t M1 = twin::CeilDivU(p.m, 16), N1 = twin::CeilDivU(p.n, 16), K1a = twin::CeilDivU(p.k, 32);
    const uint32_t kd = p.k / 2, K1b = twin::CeilDivU(kd, 32);
    twin::CheckLocalSpan(api, "fm", fm, 0, (uint64_t)M1 * K1a * twin::kFractalBytes);
    twin::CheckLocalSpan(api, "filter", filter, 0, (uint64_t)K1b * N1 * twin::kFractalBytes);
    const bool accumulate = !(p.cmatrixInitVal && !p.isBias);
    const uint64_t needC = (uint64_t)M1 * N1 * 1024, cLo = dst.Addr(api);
    if (needC > dst.GetLength()) {
        twin::Fail(api, "dst: m = %u, n = %u write %llu bytes of L0C, past the tensor's %u bytes", p.m, p.n,
                   (unsigned long long)needC, dst.GetLength());
    }
    if (p.unitFlag == 0) {
        twin::NoteAccess(api, twin::Mem::L0C, cLo, needC, true);
    } else {
        twin::MmadUnitsWrite(api, cLo, cLo + needC, p.unitFlag);
    }
    const uint32_t clk = twin::NextClock(PIPE_M);
    const std::vector<uint8_t>& ib = twin::SparseIndex();
    if (twin::Computing()) {
        const int8_t* a = reinterpret_cast<const int8_t*>(fm.Ptr());
        const int8_t* b = reinterpret_cast<const int8_t*>(filter.Ptr());
        const twin::MmadGeom g{p.m, p.n, p.k, M1, N1, 32, K1a, K1b, false};
        std::vector<uint64_t> bOff(kd);
        std::vector<uint32_t> aCol(kd);
        for (uint32_t j = 0; j < p.n; ++j) {
            for (uint32_t r = 0; r < kd; ++r) {  // dense row r of column j: its L0B byte and the A column it takes
                bOff[r] = (((uint64_t)(r / 32) * N1 + j / 16) * 16 + j % 16) * 32 + r % 32;
                const uint64_t at = fOff + bOff[r];
                const uint32_t sel = (ib[at / 4] >> (2 * (at % 4))) & 3;
                if (sel == 3) {
                    twin::Fail(api, "index of dense B element (row %u, column %u) is 3 (invalid) or was never loaded: "
                                    "LoadDataWithSparse must bring the index matrix with the filter", r, j);
                }
                aCol[r] = 4 * (r / 2) + r % 2 + sel;
            }
            for (uint32_t i = 0; i < p.m; ++i) {
                uint8_t* c = dst.Ptr() + twin::L0cIndex(g, i, j) * 4;
                int32_t acc = 0;
                if (accumulate) std::memcpy(&acc, c, 4);
                for (uint32_t r = 0; r < kd; ++r) {
                    const uint32_t col = aCol[r];
                    acc += (int32_t)a[(((uint64_t)(i / 16) * K1a + col / 32) * 16 + i % 16) * 32 + col % 32] * (int32_t)b[bOff[r]];
                }
                std::memcpy(c, &acc, 4);
            }
        }
        twin::MarkL0cPadding(dst.Ptr(), g);
    }
    twin::Trace(api, PIPE_M, (uint64_t)p.m * p.n * kd, 0, M1 * N1 * K1b, dst.Ptr(), fm.Ptr(), twin::TraceKind::Instr,
                p.unitFlag);
    twin::MmadUnitsDone(api, cLo, cLo + needC, p.unitFlag, clk);
}

}  // namespace AscendC
