// In-tile masking of the vector cores (forward and backward): the sparse mode's band (with the prefix columns of
// modes 5/6), the dense atten_mask read in place from GM, and the key columns past the sequence end, each as
// Compares + Select (or Duplicate) over the AIV's [rows, w] fp32 score tile. Tiles the block map calls fully
// visible skip the dense part; tiles inside the band skip the band part.
#ifndef NPU_FA_TILE_MASK_H
#define NPU_FA_TILE_MASK_H

#include "kernel_operator.h"
#include "../tiling/problem_tiling.h"
#include "../tiling/seq_table.h"
#include "score_tile.h"

namespace npu_fa {

constexpr float kFltMax = 3.4028234663852886e38f;
constexpr float kMaskValue = -kFltMax;  // masked scores (exp gives 0, no NaN)
constexpr float kMaskValueHalf = -65504.0f;  // masked half scores (the fp16 chain's): the lowest finite half

// Columns [from, w) of the rows of an fp32 [rows, w] tile (row pitch w, a multiple of 64) -> kMaskValue.
__aicore__ inline void FaMaskColumnsFrom(const AscendC::LocalTensor<float>& s, uint32_t from, uint32_t rows,
                                         uint32_t w) {
    for (uint32_t c = (from / 64) * 64; c < w; c += 64) {
        const uint32_t keep = from > c ? from - c : 0;
        uint64_t mask[2] = {keep == 0 ? ~0ULL : (~0ULL << keep), 0};
        AscendC::Duplicate(s[c], kMaskValue, mask, (uint8_t)rows, 1, (uint8_t)(w / 8));
    }
}

// Columns [0, to) of the rows of an fp32 [rows, w] tile (row pitch w, a multiple of 64) -> kMaskValue.
__aicore__ inline void FaMaskColumnsBelow(const AscendC::LocalTensor<float>& s, uint32_t to, uint32_t rows,
                                          uint32_t w) {
    for (uint32_t c = 0; c < to; c += 64) {
        const uint32_t n = to - c;
        uint64_t mask[2] = {n >= 64 ? ~0ULL : ((1ULL << n) - 1), 0};
        AscendC::Duplicate(s[c], kMaskValue, mask, (uint8_t)rows, 1, (uint8_t)(w / 8));
    }
}

// s[rows, w] -> kMaskValue where the widened mask `maskHalf` [AlignUp(rows, 2), w] is nonzero (>= 0.5); `bits`
// receives the keep bits.
__aicore__ inline void FaSelectUnmasked(const AscendC::LocalTensor<float>& s, const AscendC::LocalTensor<half>& maskHalf,
                                        const AscendC::LocalTensor<uint8_t>& bits, uint32_t rows, uint32_t w) {
    AscendC::Compares(bits, maskHalf, (half)0.5f, AscendC::CMPMODE::LT, AlignUp(rows, 2) * w);
    AscendC::Select(s, bits, s, kMaskValue, AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, rows * w);
}

class FaTileMask {
public:
    // `w`: the tile width (s2Block). `dmat` holds c - r for [rowsMax, w], in fp32 or, with `halfPattern`, in half
    // (exact: |c - r| < 2048; the compares then take 128 lanes per repeat); `half` is a [rowsMax, w] half-precision
    // scratch (free while masking); `maskBytes` [rowsMax, w] receives dense-mask rows (only with a dense mask). The
    // caller owns V_MTE2 event `maskFree` (set while maskBytes may be overwritten by MTE2); it may share the
    // buffer with another MTE2-filled one that waits and sets the same event.
    __aicore__ inline void Init(const FaProblemTiling* p, uint32_t w, GM_ADDR attenMask, uint32_t rowsMax,
                                const AscendC::LocalTensor<float>& dmat, bool halfPattern,
                                const AscendC::LocalTensor<uint8_t>& bits, const AscendC::LocalTensor<half>& half16,
                                const AscendC::LocalTensor<uint8_t>& maskBytes, int32_t maskFree) {
        p_ = p;
        w_ = w;
        rowsMax_ = rowsMax;
        dmat_ = dmat;
        halfPattern_ = halfPattern;
        bits_ = bits;
        half_ = half16;
        maskBytes_ = maskBytes;
        maskFree_ = maskFree;
        if (p->maskMode != 0) maskGm_.SetGlobalBuffer((__gm__ uint8_t*)attenMask);
    }

    // Masks the tile's scores s[rows, w] with -FLT_MAX.
    __aicore__ inline void Apply(const AscendC::LocalTensor<float>& s, const FaScoreTile& tile) {
        const uint32_t rows = tile.rows, cols = tile.cols;
        if (!BlockFullyVisible(tile.band, tile.r0, tile.r0 + rows, tile.c0, tile.c0 + cols)) {
            Band(s, tile.band, tile.r0, rows, tile.c0);
        }
        if (p_->maskMode != 0 && tile.state == kTileMixed) Dense(s, tile);
        FaMaskColumnsFrom(s, cols, rows, w_);  // key columns past the sequence end
    }

    // The fp16 chain's half scores s[rows, w] of a block where only the band's right edge cuts (OnlyRightEdgeCuts;
    // needs the half pattern) -> kMaskValueHalf past it. A masked score minus the row max stays at or below -65504
    // or becomes -inf: exp gives 0 either way.
    __aicore__ inline void RightEdgeHalf(const AscendC::LocalTensor<half>& s, const FaBand& band, int64_t r0,
                                         uint32_t rows, int64_t c0) {
        ComparePattern(HiThreshold(band, r0, c0), AscendC::CMPMODE::LE, rows);
        AscendC::Select(s, bits_, s, (half)kMaskValueHalf, AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, rows * w_);
    }

private:
    // The pattern threshold of the band's right edge: keep where c - r <= band.hi + r0 - c0 (clamped to the tile).
    __aicore__ inline float HiThreshold(const FaBand& band, int64_t r0, int64_t c0) const {
        return (float)FaClamp(band.hi + r0 - c0, -(int64_t)rowsMax_ - 1, (int64_t)w_ + 1);
    }

    // bits_ <- (pattern `mode` threshold) over the chunk's rows (the half pattern: whole 256 B blocks of rows pairs).
    __aicore__ inline void ComparePattern(float threshold, AscendC::CMPMODE mode, uint32_t rows) {
        if (halfPattern_) {
            AscendC::Compares(bits_, dmat_.ReinterpretCast<half>(), (half)threshold, mode, AlignUp(rows, 2) * w_);
        } else {
            AscendC::Compares(bits_, dmat_, threshold, mode, rows * w_);
        }
    }

    // Band: keep c - r in [lo, hi] relative to the tile, or c < prefix.
    __aicore__ inline void Band(const AscendC::LocalTensor<float>& s, const FaBand& band, int64_t r0, uint32_t rows,
                                int64_t c0) {
        const uint32_t n = rows * w_;
        const int64_t hi = band.hi + r0 - c0;  // keep where c - r <= hi
        const int64_t lo = band.lo + r0 - c0;  // keep where c - r >= lo
        const float hiC = HiThreshold(band, r0, c0);
        const int64_t prefixCols = FaClamp(band.prefix - c0, 0, (int64_t)w_);
        if (prefixCols > 0) {
            // Prefix modes (lo unbounded): columns < prefix are visible whatever the row. A half copy of the
            // pattern gets those columns pushed below any threshold, then one compare keeps c - r <= hi.
            const uint32_t n2 = AlignUp(rows, 2) * w_;  // half count: whole 256 B blocks
            if (halfPattern_) {
                AscendC::DataCopy(half_, dmat_.ReinterpretCast<half>(), n2);
            } else {
                AscendC::Cast(half_, dmat_, AscendC::RoundMode::CAST_NONE, n2);
            }
            for (uint32_t c = 0; c < prefixCols; c += 128) {  // one 128-half repeat per row and column group
                uint64_t mask[2] = {ColumnsBelow(prefixCols - c, 0), ColumnsBelow(prefixCols - c, 64)};
                AscendC::Duplicate(half_[c], (half)-60000.0f, mask, (uint8_t)rows, 1, (uint8_t)(w_ / 16));
            }
            AscendC::Compares(bits_, half_, (half)hiC, AscendC::CMPMODE::LE, n2);
            AscendC::Select(s, bits_, s, kMaskValue, AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
            return;
        }
        if (hi < (int64_t)w_ - 1) {
            ComparePattern(hiC, AscendC::CMPMODE::LE, rows);
            AscendC::Select(s, bits_, s, kMaskValue, AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
        }
        if (lo > -(int64_t)rows + 1) {
            ComparePattern((float)FaMin(lo, (int64_t)w_ + 1), AscendC::CMPMODE::GE, rows);
            AscendC::Select(s, bits_, s, kMaskValue, AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
        }
    }

    // Dense mask: the tile's mask bytes GM -> UB (row pitch w; one row when the mask is the same for every query
    // row), widened to half, compared with 0.5 (nonzero = masked), selected.
    __aicore__ inline void Dense(const AscendC::LocalTensor<float>& s, const FaScoreTile& tile) {
        const FaProblemTiling* p = p_;
        const uint32_t rows = tile.rows, cols = tile.cols;
        const uint64_t off = (uint64_t)tile.maskBase + tile.head * p->maskStrideN + (uint64_t)tile.r0 * p->maskStrideS +
                             (p->maskColStep != 0 ? (uint64_t)tile.c0 : 0);
        const bool sameRows = p->maskStrideS == 0;
        const uint32_t gap = (w_ - AlignUp(cols, 32)) / 32;
        AscendC::DataCopyExtParams cp((uint16_t)(sameRows ? 1 : rows), cols, sameRows ? 0 : (uint32_t)(p->maskStrideS - cols),
                                      gap, 0);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(maskFree_);
        AscendC::DataCopyPad(maskBytes_, maskGm_[off], cp, AscendC::DataCopyPadExtParams<uint8_t>(false, 0, 0, 0));
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(maskFree_);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(maskFree_);
        const uint32_t n2 = AlignUp(rows, 2) * w_;
        if (sameRows) {  // every row reads the one loaded row (source repeat stride 0)
            AscendC::UnaryRepeatParams rp(1, 1, (uint8_t)(w_ / 16), 0);
            AscendC::Cast(half_, maskBytes_, AscendC::RoundMode::CAST_NONE, (uint64_t)w_, (uint8_t)AlignUp(rows, 2), rp);
        } else {
            AscendC::Cast(half_, maskBytes_, AscendC::RoundMode::CAST_NONE, n2);
        }
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(maskFree_);
        FaSelectUnmasked(s, half_, bits_, rows, w_);
    }

    // Bits [0, n) of the 64-element mask word starting at element `base`.
    __aicore__ inline static uint64_t ColumnsBelow(int64_t n, int64_t base) {
        const int64_t k = FaClamp(n - base, 0, 64);
        return k == 64 ? ~0ULL : ((1ULL << k) - 1);
    }

    const FaProblemTiling* p_ = nullptr;
    uint32_t w_ = 0, rowsMax_ = 0;
    bool halfPattern_ = false;  // dmat_'s bytes hold the pattern in half
    int32_t maskFree_ = 0;
    AscendC::GlobalTensor<uint8_t> maskGm_;
    AscendC::LocalTensor<float> dmat_;
    AscendC::LocalTensor<uint8_t> bits_;
    AscendC::LocalTensor<half> half_;
    AscendC::LocalTensor<uint8_t> maskBytes_;
};

}  // namespace npu_fa

#endif  // NPU_FA_TILE_MASK_H
