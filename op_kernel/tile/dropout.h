// Dropout on the attention probabilities (keep_prob < 1), shared by the forward and the backward vector cores.
// The softmax is computed as without dropout (softmax_max / softmax_sum describe it); then each probability is kept
// or zeroed by a keep bit, and the kept ones count 1 / keep_prob (folded into the output's final scale).
//
// Keep bits come from a counter-based generator, so the backward regenerates exactly the forward's mask and nothing
// is stored. One 32-bit hash serves two key columns: for (b, n, i) -- sequence, query head, query row -- and the
// column pair k = j / 2,
//   key = mix64(seedKey ^ ((b * N1 + n) << 32 | i)),  m = (key >> 32) | 1,  x = k * m + (key mod 2^32)  (mod 2^32)
//   x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16
// and column j reads the signed 16-bit half j % 2 of x (little-endian: the even column the low half): kept iff that
// half is below `threshold` = round(keep_prob * 2^16) - 2^15. Pairs halve the hash work (the vector unit bounds
// dropout), and viewing the hashes as int16 puts each column's half in place with no extraction. The row key
// (scalar unit) gives every query row its own odd multiplier and offset, so rows do not repeat shifted copies of one
// another; the hash runs on the vector unit with the dav-2201 integer ops: int32 Muls / Adds wrap modulo 2^32 (the
// boundary-value tables' non-saturating mode), ShiftRight on uint32 is logical, and xor is (a | b) - (a & b) with
// the 16-bit Or / And over the same bytes; int16 -> float Cast is exact, and Compares on A2 takes float.
// npu_flash_attn/dropout.py is the host copy. A call given a dropout_origin (FaDropoutParams row0, col0, headBase,
// heads) draws the bits of its place in a larger problem: i, j and b * N1 + n above become row0 + i, col0 + j and
// b * heads + headBase + n (context parallelism: each rank's calls drop what one device would).
//
// A user mask (kDropMask, the built-in's dropout_mask) is read instead: rows of maskPitch bytes in the statistics'
// row order, bit c of a row = key column c (the host repacks masks that are not in this form).
#ifndef NPU_FA_TILE_DROPOUT_H
#define NPU_FA_TILE_DROPOUT_H

#include "kernel_operator.h"
#include "../tiling/problem_tiling.h"
#include "score_tile.h"

namespace npu_fa {

class FaDropout {
public:
    // `w`: the tile width (s2Block); `buf`: DropoutUbBytes(chunk, w) bytes of UB; `event`: a V_MTE2 / MTE2_V event
    // ID this class sets and waits in pairs (user masks only).
    __aicore__ inline void Init(const FaProblemTiling* p, uint32_t w, GM_ADDR mask,
                                const AscendC::LocalTensor<uint8_t>& buf, int32_t event) {
        p_ = p;
        w_ = w;
        pieceRows_ = DropPieceRows(w_);
        pitch_ = DropBitsPitch(w_);
        event_ = event;
        const uint32_t half = pieceRows_ * w_ / 2;  // hashes of a piece: one per column pair
        x_ = buf.template ReinterpretCast<int32_t>();
        y_ = x_[half];
        z_ = x_[2 * half];
        col_ = x_[3 * half];
        bits_ = buf[(3 * half + w_ / 2) * 4];
        if (p->drop.mode == kDropMask) {
            maskGm_.SetGlobalBuffer((__gm__ uint8_t*)mask);
        } else {
            const uint32_t pairs = w_ / 2, first = pairs < 64 ? pairs : 64;
            for (uint32_t c = 0; c < first; ++c) col_.SetValue(c, (int32_t)c);
            for (uint32_t c = 64; c < pairs; c += 64) AscendC::Adds(col_[c], col_, (int32_t)c, 64);
        }
    }

    // The keep bits of a tile's rows -> UB (one DropBitsPitch row per score row).
    __aicore__ inline void Bits(const FaScoreTile& tile) {
        if (p_->drop.mode == kDropMask) {
            LoadMask(tile);
        } else {
            Generate(tile);
        }
    }

    // x[r][c] = 0 where the keep bit of (r, c) is 0, for the tile's `rows` rows of w fp32 scores.
    __aicore__ inline void Apply(const AscendC::LocalTensor<float>& x, uint32_t rows) {
        if (pitch_ * 8 == w_) {
            AscendC::Select(x, bits_, x, 0.0f, AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, rows * w_);
        } else {  // bit rows are padded to 32 B: one Select per row
            for (uint32_t r = 0; r < rows; ++r) {
                AscendC::Select(x[r * w_], bits_[r * pitch_], x[r * w_], 0.0f, AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE,
                                w_);
            }
        }
    }

private:
    __aicore__ inline void Generate(const FaScoreTile& tile) {
        const FaDropoutParams& d = p_->drop;
        const uint64_t rowBase = ((uint64_t)tile.batch * d.heads + d.headBase + tile.head) << 32;
        for (uint32_t r0 = 0; r0 < tile.rows; r0 += pieceRows_) {
            const uint32_t rows = tile.rows - r0 < pieceRows_ ? tile.rows - r0 : pieceRows_;
            const uint32_t pairs = w_ / 2;
            for (uint32_t r = 0; r < rows; ++r) {  // x = k * m + a per row, from the row's key
                const uint64_t key = FaMix64(d.seedKey ^ (rowBase | (uint64_t)(d.row0 + tile.r0 + r0 + r)));
                const uint32_t m = (uint32_t)(key >> 32) | 1u;
                const uint32_t a = (uint32_t)key + (uint32_t)((d.col0 + tile.c0) / 2) * m;
                AscendC::Muls(x_[r * pairs], col_, (int32_t)m, (int32_t)pairs);
                AscendC::Adds(x_[r * pairs], x_[r * pairs], (int32_t)a, (int32_t)pairs);
            }
            const uint32_t n = rows * w_;
            XorShiftRight(16, n / 2);
            AscendC::Muls(x_, x_, (int32_t)0x7feb352d, (int32_t)(n / 2));
            XorShiftRight(15, n / 2);
            AscendC::Muls(x_, x_, (int32_t)0x846ca68bu, (int32_t)(n / 2));
            XorShiftRight(16, n / 2);
            AscendC::LocalTensor<float> h = y_.template ReinterpretCast<float>();  // y_ and z_: n floats
            AscendC::Cast(h, x_.template ReinterpretCast<int16_t>(), AscendC::RoundMode::CAST_NONE, n);
            const float threshold = (float)p_->drop.threshold;
            if (pitch_ * 8 == w_) {
                AscendC::Compares(bits_[r0 * pitch_], h, threshold, AscendC::CMPMODE::LT, n);
            } else {
                for (uint32_t r = 0; r < rows; ++r) {
                    AscendC::Compares(bits_[(r0 + r) * pitch_], h[r * w_], threshold, AscendC::CMPMODE::LT, w_);
                }
            }
        }
    }

    // x ^= x >> s over n int32 of x_ (y_, z_ scratch): xor = (a | b) - (a & b).
    __aicore__ inline void XorShiftRight(uint32_t s, uint32_t n) {
        AscendC::ShiftRight(y_.template ReinterpretCast<uint32_t>(), x_.template ReinterpretCast<uint32_t>(), s,
                            (int32_t)n);
        const AscendC::LocalTensor<uint16_t> x16 = x_.template ReinterpretCast<uint16_t>();
        const AscendC::LocalTensor<uint16_t> y16 = y_.template ReinterpretCast<uint16_t>();
        const AscendC::LocalTensor<uint16_t> z16 = z_.template ReinterpretCast<uint16_t>();
        AscendC::Or(z16, x16, y16, (int32_t)(2 * n));
        AscendC::And(y16, x16, y16, (int32_t)(2 * n));
        AscendC::Sub(x_, z_, y_, (int32_t)n);
    }

    // The user mask's bytes of the tile's rows. A row's bytes stop at its last key column; the rest of its 32 B
    // block is padded with zeros, and bit rows longer than that are zeroed first.
    __aicore__ inline void LoadMask(const FaScoreTile& tile) {
        const uint32_t bytes = (tile.cols + 7) / 8, blocks = AlignUp(bytes, 32);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(event_);  // earlier Selects are done with the bits
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(event_);
        if (blocks < pitch_) {
            AscendC::Duplicate(bits_.template ReinterpretCast<uint16_t>(), (uint16_t)0, (int32_t)(tile.rows * pitch_ / 2));
            AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(event_);
            AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(event_);
        }
        AscendC::DataCopyExtParams cp((uint16_t)tile.rows, bytes, p_->drop.maskPitch - bytes, (pitch_ - blocks) / 32, 0);
        AscendC::DataCopyPad(bits_, maskGm_[tile.statRow0 * p_->drop.maskPitch + (uint64_t)tile.c0 / 8], cp,
                             AscendC::DataCopyPadExtParams<uint8_t>(blocks != bytes, 0, (uint8_t)(blocks - bytes), 0));
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(event_);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(event_);
    }

    const FaProblemTiling* p_ = nullptr;
    uint32_t w_ = 0, pieceRows_ = 0, pitch_ = 0;
    int32_t event_ = 0;
    AscendC::GlobalTensor<uint8_t> maskGm_;
    AscendC::LocalTensor<int32_t> x_, y_, z_, col_;
    AscendC::LocalTensor<uint8_t> bits_;
};

}  // namespace npu_fa

#endif  // NPU_FA_TILE_DROPOUT_H
