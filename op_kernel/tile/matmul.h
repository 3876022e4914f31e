// The cube's matmul over L1 Nz tiles, shared by the forward, backward and inference cube halves: C[m, n] = A[m, k] *
// B[k, n] through L0A/L0B (ping-pong halves) into L0C (two ping-pong slots), written by Fixpipe as rows to GM (fp32 or
// 16-bit; int8 operands: int32); or L0C tiles the caller keeps resident across calls. A operands read by many matmuls
// can stay in L0A instead (ResidentA: loaded once into a resident region at the end of L0A, whose rest the streamed A
// operands share as two halves; 16-bit operands). A fractal is 512 B: 16 x 16 of a 16-bit type, 16 x 32 of int8
// (K0 = 32 along K; an L1 Nz tile of int8 holds 32 columns per block).
#ifndef NPU_FA_TILE_MATMUL_H
#define NPU_FA_TILE_MATMUL_H

#include "kernel_operator.h"
#include "../tiling/matmul_chunks.h"

namespace npu_fa {

// Fixpipe's quantPre for an fp32 L0C result written to GM as O: none for fp32, the rounding conversion for a 16-bit O
// (the Fixpipe page's type table: f32 -> f16 needs F322F16, f32 -> bf16 F322BF16; never inferred).
template <typename O>
struct FaFixpipeQuant {
    static constexpr QuantMode_t kMode = QuantMode_t::NoQuant;
};
template <>
struct FaFixpipeQuant<half> {
    static constexpr QuantMode_t kMode = QuantMode_t::F322F16;
};
template <>
struct FaFixpipeQuant<bfloat16_t> {
    static constexpr QuantMode_t kMode = QuantMode_t::F322BF16;
};

// GM (row-major, pitch `srcPitch` elements) -> L1 Nz with `c0Stride` rows per 16-column block; a row pitch beyond
// Nd2Nz's 16-bit srcDValue (e.g. SBH with large B*H) goes one row at a time.
template <typename T>
__aicore__ inline void FaLoadNz(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src, uint32_t rows,
                                uint32_t cols, uint64_t srcPitch, uint32_t c0Stride) {
    if (srcPitch <= 65535) {
        AscendC::Nd2NzParams p(1, (uint16_t)rows, (uint16_t)cols, 0, (uint16_t)srcPitch, (uint16_t)c0Stride, 1, 0);
        AscendC::DataCopy(dst, src, p);
        return;
    }
    for (uint32_t r = 0; r < rows; ++r) {
        if (r > 0) AscendC::PipeBarrier<PIPE_MTE2>();  // the rows' pieces interleave in L1 (see FaLoadZz)
        AscendC::Nd2NzParams p(1, 1, (uint16_t)cols, 0, (uint16_t)cols, (uint16_t)c0Stride, 1, 0);
        AscendC::DataCopy(dst[r * 16], src[r * srcPitch], p);
    }
}

// GM (row-major, pitch `srcPitch` elements) -> L1 in bands of 16 rows, each band `bandCols` columns (a multiple of
// 16, at least `cols`) of consecutive 16 x 16 fractals: fractal (r1, c1) at (r1 * bandCols / 16 + c1) * 256 elements
// (the fractal order of L0A and of L0B's B^T), so an L1 -> L0 load of whole bands is one contiguous LoadData. One
// Nd2Nz with an ND matrix per band when the strides fit its 16-bit fields, else one per band (one per row when even
// the row pitch does not fit); rows of a partial last band past `rows` are not written.
template <typename T>
__aicore__ inline void FaLoadZz(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src, uint32_t rows,
                                uint32_t cols, uint64_t srcPitch, uint32_t bandCols) {
    const uint32_t full = rows / 16, bands = (rows + 15) / 16, bandElems = 16 * bandCols;
    if (srcPitch > 65535) {
        for (uint32_t r = 0; r < rows; ++r) {
            // The rows' 32 B pieces interleave inside one span of L1: a barrier between them (PipeBarrier page).
            if (r > 0) AscendC::PipeBarrier<PIPE_MTE2>();
            AscendC::Nd2NzParams p(1, 1, (uint16_t)cols, 0, (uint16_t)cols, 16, 1, 0);
            AscendC::DataCopy(dst[(r / 16) * bandElems + (r % 16) * 16], src[r * srcPitch], p);
        }
        return;
    }
    uint32_t done = 0;
    if (full > 1 && 16 * srcPitch <= 65535 && bandElems <= 16384) {
        AscendC::Nd2NzParams p((uint16_t)full, 16, (uint16_t)cols, (uint16_t)(16 * srcPitch), (uint16_t)srcPitch, 16, 1,
                               (uint16_t)bandElems);
        AscendC::DataCopy(dst, src, p);
        done = full;
    }
    for (uint32_t b = done; b < bands; ++b) {
        const uint32_t n = b < full ? 16 : rows - full * 16;
        AscendC::Nd2NzParams p(1, (uint16_t)n, (uint16_t)cols, 0, (uint16_t)srcPitch, 16, 1, 0);
        AscendC::DataCopy(dst[b * bandElems], src[(uint64_t)b * 16 * srcPitch], p);
    }
}

// L0C's element for operands T: fp32, or int32 for int8 x int8.
template <typename T>
struct FaCubeAcc {
    using Type = float;
};
template <>
struct FaCubeAcc<int8_t> {
    using Type = int32_t;
};

template <typename T>
class FaCubeMatmul {
public:
    using Acc = typename FaCubeAcc<T>::Type;
    static constexpr uint32_t kL0Half = kL0HalfBytes;
    static constexpr uint32_t kL0cHalf = kL0cHalfBytes;
    static constexpr uint32_t kK0 = 32 / sizeof(T);  // a fractal's extent along K (its columns in an Nz tile)

    // An L1 tile: Nz with `nzRows` rows per block of kK0 columns, or (bandCols != 0) in bands of 16 rows of bandCols
    // columns (FaLoadZz). As A: `transposed` = the tile holds A^T ([K, M]); as B: `transposed` = the tile holds B
    // itself ([K, N], rows along K) rather than B^T ([N, K]). int8: A as stored, B either way; no bands.
    struct Operand {
        AscendC::LocalTensor<T> tile;
        uint32_t nzRows;
        bool transposed;
        uint32_t bandCols;
        // Fractal offset of the stored matrix's fractal (r1, c1).
        __aicore__ inline uint32_t Frac(uint32_t r1, uint32_t c1) const {
            return bandCols != 0 ? r1 * (bandCols / kK0) + c1 : c1 * (nzRows / 16) + r1;
        }
    };

    // An A operand LoadResident put in L0A: `offset` elements into the resident region, in K pieces of kChunk
    // columns (piece i at offset + i * pieceElems, [m1][k1] fractals: the A of that piece's Mmad).
    struct ResidentA {
        uint32_t offset;
        uint32_t kChunk;
        uint32_t pieceElems;
    };

    // Every L0 half (and the resident region) starts free: its "free" event is set once here and waited once in
    // End(). Run's L0C tiles alternate between two slots, `slotBytes` apart from byte `slot0` (default: the two
    // halves; 0: one slot). `residentBytes` of L0A (a multiple of 512) are kept for ResidentA operands; the streamed
    // A halves share the rest (AHalfBytes()).
    __aicore__ inline void Init(AscendC::TPipe* pipe, uint32_t slot0 = 0, uint32_t slotBytes = kL0cHalf,
                                uint32_t residentBytes = 0) {
        slot0_ = slot0;
        slotBytes_ = slotBytes;
        residentBytes_ = residentBytes;
        aHalf_ = (kL0Bytes - residentBytes) / 2 / 512 * 512;  // L0A addresses stay 512 B aligned
        pipe->InitBuffer(l0a_, kL0Bytes);
        pipe->InitBuffer(l0b_, kL0Half * 2);
        pipe->InitBuffer(l0c_, kL0cHalf * 2);
        AscendC::SetFlag<AscendC::HardEvent::M_MTE1>(kL0FreeId0);
        AscendC::SetFlag<AscendC::HardEvent::M_MTE1>(kL0FreeId0 + 1);
        if (residentBytes_ != 0) AscendC::SetFlag<AscendC::HardEvent::M_MTE1>(kResidentFreeId);
        AscendC::SetFlag<AscendC::HardEvent::FIX_M>(0);
        AscendC::SetFlag<AscendC::HardEvent::FIX_M>(1);
    }

    __aicore__ inline void End() {
        AscendC::WaitFlag<AscendC::HardEvent::M_MTE1>(kL0FreeId0);
        AscendC::WaitFlag<AscendC::HardEvent::M_MTE1>(kL0FreeId0 + 1);
        if (residentBytes_ != 0) AscendC::WaitFlag<AscendC::HardEvent::M_MTE1>(kResidentFreeId);
        AscendC::WaitFlag<AscendC::HardEvent::FIX_M>(0);
        AscendC::WaitFlag<AscendC::HardEvent::FIX_M>(1);
    }

    __aicore__ inline uint32_t AHalfBytes() const { return aHalf_; }

    // The resident region: AcquireResident before LoadResident overwrites it (MTE1 waits until the Mmads issued
    // before ReleaseResident are done), ReleaseResident after the last Mmad that reads it.
    __aicore__ inline void AcquireResident() { AscendC::WaitFlag<AscendC::HardEvent::M_MTE1>(kResidentFreeId); }
    __aicore__ inline void ReleaseResident() { AscendC::SetFlag<AscendC::HardEvent::M_MTE1>(kResidentFreeId); }

    // A[m, k] (an L1 tile) -> the resident region at element `offset`, in the K pieces of kChunk columns that the
    // matmuls reading it take (their kChunk). The Mmads' MTE1_M hand-over of their B operand covers it (MTE1 runs
    // in order).
    __aicore__ inline ResidentA LoadResident(const Operand& a, uint32_t m, uint32_t k, uint32_t kChunk,
                                             uint32_t offset) {
        static_assert(sizeof(T) == 2, "ResidentA holds 16-bit operands: its pieces are sized in 16 x 16 fractals");
        const uint32_t mBlocks = CeilDiv(m, 16);
        const ResidentA r{offset, kChunk, mBlocks * 16 * kChunk};
        for (uint32_t k0 = 0; k0 < k; k0 += kChunk) {
            const uint32_t kLen = k - k0 < kChunk ? k - k0 : kChunk;
            LoadA(Resident(r, k0), a, mBlocks, k0 / kK0, CeilDiv(kLen, kK0));
        }
        return r;
    }

    // C[m, n] = A[m, k] * B[k, n] in (kChunk, nChunk) pieces, written as rows of pitch `ldc` to GM in O (fp32, or
    // rounded to a 16-bit type by Fixpipe). Accumulation over several calls (a K dimension split across L1 tiles): the
    // first call has `init`, the last `flush` (it writes C); all of them have n <= nChunk, so C is one L0C tile, and
    // no other Run comes between.
    template <typename O = float>
    __aicore__ inline void Run(const Operand& a, const Operand& b, uint32_t m, uint32_t k, uint32_t n, uint32_t kChunk,
                               uint32_t nChunk, __gm__ O* dst, uint32_t ldc, bool init = true, bool flush = true) {
        for (uint32_t n0 = 0; n0 < n; n0 += nChunk) {
            const uint32_t nLen = n - n0 < nChunk ? n - n0 : nChunk;
            if (init) {
                accHalf_ = l0cIdx_;
                l0cIdx_ = slotBytes_ == 0 ? 0 : l0cIdx_ ^ 1;  // slotBytes 0: one slot
                AscendC::WaitFlag<AscendC::HardEvent::FIX_M>(accHalf_);
            }
            const AscendC::LocalTensor<Acc> c = L0c(slot0_ + accHalf_ * slotBytes_);
            MmaColumns(a, b, m, k, n0, nLen, kChunk, c, init);
            if (!flush) continue;
            Store(c, m, nLen, dst + n0, ldc, (int32_t)accHalf_);
            AscendC::SetFlag<AscendC::HardEvent::FIX_M>(accHalf_);
        }
    }

    // For callers that keep C resident in L0C over several calls (the backward's gradient sums) and own the L0C
    // events: the L0C tile at byte `offset`, C[m, n] (+)= A[m, k] * B[k, n0 : n0 + n] into it (fractal (n1, m1) at
    // n1 * CeilDiv(m, 16) + m1; `init` starts the sum; n0 a multiple of 16), and its Fixpipe to GM as rows of pitch
    // `ldc` in O once M is done with it (M_FIX event `id`).
    __aicore__ inline AscendC::LocalTensor<Acc> L0c(uint32_t offset) {
        return l0c_.Get<Acc>()[offset / sizeof(Acc)];
    }
    // A is an Operand (streamed through the L0A halves) or a ResidentA (then kChunk is its kChunk).
    template <typename A>
    __aicore__ inline void Accumulate(const A& a, const Operand& b, uint32_t m, uint32_t k, uint32_t n0,
                                      uint32_t n, uint32_t kChunk, uint32_t nChunk, const AscendC::LocalTensor<Acc>& c,
                                      bool init) {
        for (uint32_t j = 0; j < n; j += nChunk) {
            MmaColumns(a, b, m, k, n0 + j, n - j < nChunk ? n - j : nChunk, kChunk, c[j * CeilDiv(m, 16) * 16], init);
        }
    }
    template <typename O = float>
    __aicore__ inline void Store(const AscendC::LocalTensor<Acc>& c, uint32_t m, uint32_t n, __gm__ O* dst,
                                 uint32_t ldc, int32_t id) {
        AscendC::SetFlag<AscendC::HardEvent::M_FIX>(id);
        AscendC::WaitFlag<AscendC::HardEvent::M_FIX>(id);
        AscendC::GlobalTensor<O> out;
        out.SetGlobalBuffer(dst);
        // nSize = n, also when n is not a multiple of 16 (key tails, dv = 72): with NZ2ND (CFG_ROW_MAJOR) the docs
        // allow it. The FixpipeParamsV220 table (矩阵计算的搬出/Fixpipe（L0C到GM数据搬运）.md) states "multiple of 16",
        // but the NZ2ND page (矩阵搬出关键特性说明/NZ2ND.md) walks ceil(nSize / 16) blocks per row, and the example
        // of DataCopy（L0C到GM数据搬运）.md (same L0C->GM instruction) says with NZ2ND nSize may be any value, kept
        // equal to the Mmad's n, and must be a multiple of 16 only for NZ output; catlass passes unaligned N the
        // same way. The twin refuses unaligned nSize for NZ output only.
        AscendC::FixpipeParamsV220 fp(n, m, CeilDiv(m, 16) * 16, ldc, false);
        fp.quantPre = FaFixpipeQuant<O>::kMode;
        AscendC::Fixpipe<O, Acc, AscendC::CFG_ROW_MAJOR>(out, c, fp);
    }

private:
    static constexpr uint32_t kFrac = 512 / sizeof(T);  // elements of one fractal
    static constexpr int32_t kL0FreeId0 = 3;   // M_MTE1 IDs 0-2 belong to TPipe on the AIC
    static constexpr int32_t kResidentFreeId = kL0FreeId0 + 2;

    // C[m, n0 : n0 + nLen] (+)= A[m, k] * B[k, n0 : n0 + nLen] into the L0C tile `c`, through L0A/L0B halves in kChunk
    // pieces (A's half unused when A is resident).
    template <typename A>
    __aicore__ inline void MmaColumns(const A& a, const Operand& b, uint32_t m, uint32_t k, uint32_t n0,
                                      uint32_t nLen, uint32_t kChunk, const AscendC::LocalTensor<Acc>& c, bool init) {
        const uint32_t mBlocks = CeilDiv(m, 16);
        for (uint32_t k0 = 0; k0 < k; k0 += kChunk) {
            const uint32_t kLen = k - k0 < kChunk ? k - k0 : kChunk;
            const uint32_t h = l0Idx_;
            l0Idx_ ^= 1;
            AscendC::LocalTensor<T> l0b = l0b_.Get<T>()[h * (kL0Half / sizeof(T))];
            AscendC::WaitFlag<AscendC::HardEvent::M_MTE1>(kL0FreeId0 + h);
            const AscendC::LocalTensor<T> l0a = PieceOfA(a, h, mBlocks, k0, kLen);
            LoadB(l0b, b, k0 / kK0, CeilDiv(kLen, kK0), n0 / 16, CeilDiv(nLen, 16));
            AscendC::SetFlag<AscendC::HardEvent::MTE1_M>(h);
            AscendC::WaitFlag<AscendC::HardEvent::MTE1_M>(h);
            // m = 1 would switch the cube to GEMV mode (L0A read as a plain row): 16 rows, the rest zero in L1. k and n
            // stay exact: the padding of a partial fractal (K/V tail rows the callers never load) takes no part in
            // the computation (Mmad page), whatever it holds.
            AscendC::MmadParams mp(m == 1 ? 16 : m, nLen, kLen, 0, false, init && k0 == 0);
            AscendC::Mmad(c, l0a, l0b, mp);
            // The next Mmad accumulates into this L0C tile: the Mmad page's threshold, on the Mmad's m and n.
            if ((mp.m / 16) * (mp.n / 16) < 10) AscendC::PipeBarrier<PIPE_M>();
            AscendC::SetFlag<AscendC::HardEvent::M_MTE1>(kL0FreeId0 + h);
        }
    }

    // The L0A piece of A for columns [k0, k0 + kLen): a streamed A loaded into half h, a resident one where it is.
    __aicore__ inline AscendC::LocalTensor<T> PieceOfA(const Operand& a, uint32_t h, uint32_t mBlocks, uint32_t k0,
                                                       uint32_t kLen) {
        const AscendC::LocalTensor<T> dst = l0a_.Get<T>()[h * (aHalf_ / sizeof(T))];
        LoadA(dst, a, mBlocks, k0 / kK0, CeilDiv(kLen, kK0));
        return dst;
    }
    __aicore__ inline AscendC::LocalTensor<T> PieceOfA(const ResidentA& a, uint32_t, uint32_t, uint32_t k0, uint32_t) {
        return Resident(a, k0);
    }
    __aicore__ inline AscendC::LocalTensor<T> Resident(const ResidentA& a, uint32_t k0) {
        return l0a_.Get<T>()[2 * aHalf_ / sizeof(T) + a.offset + k0 / a.kChunk * a.pieceElems];
    }

    // L1 -> L0A Zz [m1][k1] for fractal columns [k1s, k1s + k1n): A stored as [M, K] (fractal (m1, k1) at
    // Frac(m1, k1)) or, transposed, as [K, M] (at Frac(k1, m1), each fractal transposed).
    __aicore__ inline void LoadA(const AscendC::LocalTensor<T>& dst, const Operand& a, uint32_t mBlocks, uint32_t k1s,
                                 uint32_t k1n) {
        const uint32_t o = a.Frac(0, 0), r = a.Frac(1, 0) - o, c = a.Frac(0, 1) - o;
        if (a.transposed) {
            LoadFractals(dst, a.tile[a.Frac(k1s, 0) * kFrac], mBlocks, k1n, c, r, true);
        } else {
            LoadFractals(dst, a.tile[a.Frac(0, k1s) * kFrac], mBlocks, k1n, r, c, false);
        }
    }

    // L1 -> L0B Zn [k1][n1] for fractal rows [k1s, k1s + k1n) and columns [n1s, n1s + n1n): B^T stored as [N, K]
    // (fractal (n1, k1) at Frac(n1, k1): Zn already) or, transposed, B itself as [K, N] (at Frac(k1, n1), each fractal
    // transposed).
    __aicore__ inline void LoadB(const AscendC::LocalTensor<T>& dst, const Operand& b, uint32_t k1s, uint32_t k1n,
                                 uint32_t n1s, uint32_t n1n) {
        const uint32_t o = b.Frac(0, 0), r = b.Frac(1, 0) - o, c = b.Frac(0, 1) - o;
        if (sizeof(T) == 1 && b.transposed) {
            LoadTransposedB8(dst, b, k1s, k1n, n1s, n1n);
        } else if (b.transposed) {
            LoadFractals(dst, b.tile[b.Frac(k1s, n1s) * kFrac], k1n, n1n, r, c, true);
        } else {
            LoadFractals(dst, b.tile[b.Frac(n1s, k1s) * kFrac], k1n, n1n, c, r, false);
        }
    }

    // int8 B stored as itself, [K, N] Nz (fractal (k 16-row block, n 32-column block)): LoadData's transpose is b16
    // only, so LoadDataWithTranspose takes squares of 32 x 32 (two fractals adjacent along K in the Nz tile) and
    // writes each as the two Zn fractals (k1, n1) and (k1, n1 + 1) of L0B (k1 in 32-row units). One call per
    // 32-row block of K, a repeat per 32-column block of N (N chunks and their starts are multiples of 32, and the
    // tile's nzRows a multiple of 32: the host's int8 tiling).
    __aicore__ inline void LoadTransposedB8(const AscendC::LocalTensor<T>& dst, const Operand& b, uint32_t k1s,
                                            uint32_t k1n, uint32_t n1s, uint32_t n1n) {
        const uint32_t squareStride = b.nzRows / 32;  // squares (32 x 32) along K in one 32-column block
        const AscendC::LoadData2dTransposeParams p(0, (uint8_t)(n1n / 2), (uint16_t)squareStride, 1, 0, 0);
        for (uint32_t k = 0; k < k1n; ++k) {
            AscendC::LoadDataWithTranspose(dst[k * n1n * kFrac], b.tile[b.Frac(2 * (k1s + k), n1s / 2) * kFrac], p);
        }
    }

    // rows x cols fractals -> dst in row-major fractal order (dst fractal r * cols + c), fractal (r, c) read at
    // src + r * rowStride + c * colStride fractals, in the fewest LoadData calls: one when the source is contiguous
    // in that order, else one per row or one per column (srcStride along it, dstGap over the others), whichever
    // is fewer (each call costs its issue latency on MTE1).
    __aicore__ inline void LoadFractals(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                        uint32_t rows, uint32_t cols, uint32_t rowStride, uint32_t colStride,
                                        bool transpose) {
        static_assert(sizeof(T) == 2 || sizeof(T) == 1, "16-bit or int8 operands");
        if (colStride == 1 && rowStride == cols && rows * cols <= 255) {
            AscendC::LoadData2DParams p(0, (uint8_t)(rows * cols), 1, 0, 0, transpose, 0);
            AscendC::LoadData(dst, src, p);
        } else if (rows <= cols) {
            AscendC::LoadData2DParams p(0, (uint8_t)cols, (uint16_t)colStride, 0, 0, transpose, 0);
            for (uint32_t r = 0; r < rows; ++r) AscendC::LoadData(dst[r * cols * kFrac], src[r * rowStride * kFrac], p);
        } else {
            AscendC::LoadData2DParams p(0, (uint8_t)rows, (uint16_t)rowStride, 0, (uint16_t)(cols - 1), transpose, 0);
            for (uint32_t c = 0; c < cols; ++c) AscendC::LoadData(dst[c * kFrac], src[c * colStride * kFrac], p);
        }
    }

    uint32_t l0Idx_ = 0, l0cIdx_ = 0, accHalf_ = 0, slot0_ = 0, slotBytes_ = kL0cHalf;
    uint32_t residentBytes_ = 0, aHalf_ = kL0Half;
    AscendC::TBuf<AscendC::TPosition::A2> l0a_;
    AscendC::TBuf<AscendC::TPosition::B2> l0b_;
    AscendC::TBuf<AscendC::TPosition::CO1> l0c_;
};

}  // namespace npu_fa

#endif  // NPU_FA_TILE_MATMUL_H
