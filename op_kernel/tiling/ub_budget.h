// UB budgets of the vector cores: the buffers each kernel allocates, exactly; the host tiling sizes blocks so that
// their total fits the usable UB.
#ifndef NPU_FA_TILING_UB_BUDGET_H
#define NPU_FA_TILING_UB_BUDGET_H

#include "fwd_tiling.h"
#include "bwd_tiling.h"
#include "infer_tiling.h"

namespace npu_fa {

// What the vector cores compute besides scale, online softmax and output (it decides their extra UB buffers).
struct FaVecFeatures {
    bool denseMask = false;  // a dense atten_mask
    bool band = false;       // some tile is cut by a band
    bool alibi = false;      // in-kernel ALiBi
    bool pse = false;        // an outer pse tensor
    bool dropout = false;    // keep_prob < 1 or a dropout mask
    bool residual = false;   // the forward's output residual waits in the probability buffers (residualInProbs)
    bool lazy = false;       // the forward's lazy rescale (lazyRescale)
};

// The features a tiling's problem asks of the vector cores (`band`: the kernel keeps a band pattern).
FA_INLINE FaVecFeatures TilingVecFeatures(const FaProblemTiling& p, bool band) {
    FaVecFeatures f;
    f.denseMask = p.maskMode != 0;
    f.band = band;
    f.alibi = p.alibiMode != kAlibiNone;
    f.pse = p.pseMode != kPseNone;
    f.dropout = p.drop.mode != kDropNone;
    return f;
}

// Forward: UB buffers of one AIV (bytes), for `rows` query rows, s2 block `w` and padded value dim `dvPad`.
struct FaFwdUbSizes {
    uint32_t s;      // scores / probabilities in fp32, two [chunk, w] buffers (load of one overlaps work on the other);
                     // with 16-bit scores (lowScores) one fp32 work buffer and two 16-bit staging buffers, same bytes
    uint32_t dmat;   // (column - row) pattern for band masks and ALiBi [chunk, w] (only with either)
    uint32_t bias;   // ALiBi scratch, or an outer pse tile in fp32, [chunk, w] (only with either)
    uint32_t pse;    // an outer pse tile as read, [chunk, w] of the input dtype (only with one)
    uint32_t bits;   // compare bit mask over [chunk, w] (only with bands or a dense mask)
    uint32_t fold;   // row-reduction scratch [chunk, 64] fp32, also the masks' [chunk, w] half scratch
    uint32_t p;      // probabilities in half precision, two [chunk, w] buffers; the output [rows, dvPad] at the end
                     // (with the residual: the output, then the residual)
    uint32_t opart;  // partial output P*V of one step, fp32 [rows, dvPad]
    uint32_t acc;    // running output, fp32 [rows, dvPad]
    uint32_t stat;   // one row statistic broadcast to a 32 B block per row [rows8, 8] fp32
    uint32_t row;    // one fp32 value per row [rows8]
    uint32_t mask;   // dense-mask bytes of a chunk [chunk, w] when `opart` cannot hold them (else they use opart,
                     // free between its uses); their half copy uses `fold`
    uint32_t drop;   // dropout: hash scratch, column pattern and keep bits (DropoutUbBytes; only with dropout)
    uint32_t lazy;   // lazy rescale: the reference max per task slot, the rows' rise of the step, the flush word
    uint32_t total;
};
constexpr uint32_t kFwdStatBuffers = 3 * kFwdStepSlots + 4;  // max, sum, alpha per slot; broadcast, reduce, max/sum out

// Forward: UB of one AIV for `rows` query rows (its half of a task) walked in chunks of `chunk` rows.
FA_INLINE FaFwdUbSizes FwdUbSizes(uint32_t rows, uint32_t chunk, uint32_t w, uint32_t dvPad, const FaVecFeatures& f) {
    const bool denseMask = f.denseMask, band = f.band, alibi = f.alibi, pse = f.pse;
    FaFwdUbSizes u;
    const uint32_t r = rows == 0 ? 1 : rows;
    const uint32_t c = chunk == 0 ? 1 : chunk;
    const uint32_t r8 = AlignUp(r, 8);
    u.s = 2 * c * w * 4;
    const bool masks = band || denseMask;
    u.dmat = band || alibi ? c * w * 4 : 0;
    u.bias = alibi || pse ? c * w * 4 : 0;
    u.pse = pse ? c * w * 2 : 0;
    u.bits = masks ? AlignUp(c * w / 8, 32) : 0;
    u.fold = c * (masks && w * 2 > 256 ? w * 2 : 256);
    const uint32_t outputs = (f.residual ? 2 : 1) * r * dvPad * 2;
    u.p = 2 * c * w * 2 > outputs ? 2 * c * w * 2 : outputs;
    u.opart = r * dvPad * 4;
    u.acc = r * dvPad * 4;
    u.stat = r8 * 8 * 4;
    u.row = AlignUp(r8 * 4, 32);
    u.mask = denseMask && u.opart < AlignUp(c, 8) * w ? AlignUp(c, 8) * w : 0;
    u.drop = f.dropout ? DropoutUbBytes(c, w) : 0;
    u.lazy = f.lazy ? (kFwdStepSlots + 1) * u.stat + 32 : 0;
    u.total = u.s + u.dmat + u.bias + u.pse + u.bits + u.fold + u.p + u.opart + u.acc + kFwdStatBuffers * u.stat +
              2 * u.row + u.mask + u.drop + u.lazy + 32;
    return u;
}

// Backward: UB buffers of one AIV (bytes) for query tile rows `rows` (this AIV's half), walked in two chunks of
// `chunk` rows (BwdChunkRows) so that one chunk's loads and stores overlap the other's vector work; key tile width
// `w`, key rows per AIV `kvRows` and padded head dims.
struct FaBwdUbSizes {
    uint32_t score;  // S, later P, fp32 [chunk, w] per chunk (16-bit S: one fp32 work chunk + a 16-bit one per chunk)
    uint32_t dp;     // dP, later dS, fp32 [chunk, w] per chunk (16-bit dP: the same split)
    uint32_t dmat;   // (column - row) pattern for band masks [chunk, w]
    uint32_t bits;   // compare bit mask over [chunk, w]
    uint32_t half;   // P and dS in the input dtype [chunk, w] each, per chunk
    uint32_t maskHalf;  // the masks' half-precision scratch [chunk, w]
    uint32_t stat;   // one statistic per row broadcast to a 32 B block [rows8, 8] fp32 (max, sum, D)
    uint32_t part;   // O in fp32 [rows, dvPad] for D at a dQ task's start, then its row fold [rows, 64]
    uint32_t acc;    // a task's sums as the cube leaves them, fp32: dQ [rows, dPad] or dK and/or dV [kvRows, dPad (+)
                     // dvPad]; at a dQ task's start dO * O in fp32 [rows, dvPad]
    uint32_t out;    // an output tile in the input dtype [accRows, dMax]; also dO and O [rows, dvPad] each
    uint32_t row;    // one fp32 per row [rows8], at least 64 (the column index pattern)
    uint32_t mask;   // dense-mask bytes of a chunk [chunk8, w] (0 without a dense mask)
    uint32_t bias;   // ALiBi scratch, or an outer pse tile in fp32, [chunk, w] (0 without either)
    uint32_t pse;    // an outer pse tile as read, [chunk, w] of the input dtype (0 without one)
    uint32_t drop;   // dropout: hash scratch, column pattern and keep bits of a chunk (0 without dropout)
    uint32_t total;
};
constexpr uint32_t kBwdStatBuffers = 3;  // max, sum, D; two sets (step parity) in the dK/dV pass

FA_INLINE uint32_t BwdChunkRows(uint32_t rows) { return AlignUp(CeilDiv(rows == 0 ? 1 : rows, 2), 8); }

FA_INLINE FaBwdUbSizes BwdUbSizes(uint32_t rows, uint32_t w, uint32_t kvRows, uint32_t dPad, uint32_t dvPad,
                                  uint32_t kvParts, const FaVecFeatures& f) {
    FaBwdUbSizes u;
    const uint32_t r = rows == 0 ? 1 : rows;
    const uint32_t r8 = AlignUp(r, 8);
    const uint32_t c = BwdChunkRows(r);
    const uint32_t dMax = dPad > dvPad ? dPad : dvPad;
    const uint32_t accRows = r > kvRows ? r : kvRows;
    const uint32_t accQ = r * dPad * 4;
    const uint32_t accKv = kvRows * (((kvParts & kBwdPartDk) ? dPad : 0) + ((kvParts & kBwdPartDv) ? dvPad : 0)) * 4;
    u.score = 2 * c * w * 4;
    u.dp = 2 * c * w * 4;
    u.dmat = c * w * 4;
    u.bits = AlignUp(c * w / 8, 32);
    u.half = 2 * 2 * c * w * 2;
    u.maskHalf = c * w * 2;
    u.stat = r8 * 8 * 4;
    u.part = r * (dvPad > 64 ? dvPad : 64) * 4;
    u.acc = (uint32_t)FaMax(FaMax(accQ, accKv), r * dvPad * 4);
    u.out = accRows * dMax * 2 > 2 * r * dvPad * 2 ? accRows * dMax * 2 : 2 * r * dvPad * 2;
    u.row = (r8 > 64 ? r8 : 64) * 4;
    u.mask = f.denseMask ? AlignUp(c, 8) * w : 0;
    u.bias = f.alibi || f.pse ? c * w * 4 : 0;
    u.pse = f.pse ? c * w * 2 : 0;
    u.drop = f.dropout ? DropoutUbBytes(c, w) : 0;
    u.total = u.score + u.dp + u.dmat + u.bits + u.half + u.maskHalf + 2 * kBwdStatBuffers * u.stat + u.part + u.acc +
              u.out + u.row + u.mask + u.bias + u.pse + u.drop;
    return u;
}

// Inference: UB buffers of one AIV (bytes) for `rows` packed rows (its half of a task) walked in chunks of `chunk`.
struct FaInferUbSizes {
    uint32_t s;      // scores / probabilities in fp32, two [chunk, w] buffers
    uint32_t fold;   // row-reduction scratch [chunk, 64] fp32
    uint32_t p;      // probabilities in the input dtype, two [chunk, w] buffers; the output [rows, dvPad] at the end
    uint32_t opart;  // a step's P*V, fp32 [rows, dvPad] (also the zero rows of a task without keys)
    uint32_t acc;    // running output, fp32 [rows, dvPad]
    uint32_t stat;   // one statistic buffer, a 32 B block per row [rows8, 8] fp32 (FaOnlineSoftmax::kBuffers of them)
    uint32_t row;    // one fp32 per row [rows8] (the block-reduce result; also the rows' valid bits)
    uint32_t maskBytes, maskHalf, maskBits;  // a dense mask: a chunk's mask rows [chunk, w] as bytes, half, bits
    uint32_t dmat;   // ALiBi: the column pattern [w] fp32 (0 without)
    uint32_t bias;   // pse_shift: a chunk's bias in fp32 [chunk, w]; ALiBi alone: one distance row [w] (0 without)
    uint32_t pse;    // pse_shift: a chunk's bias as read, [chunk, w] of the input dtype (0 without)
    uint32_t total;
};
constexpr uint32_t kInferStatBuffers = 3 * kInferStepSlots + 4;  // FaOnlineSoftmax<kInferStepSlots>::kBuffers

// `f`: denseMask, alibi and pse are read (bands need no buffer here).
FA_INLINE FaInferUbSizes InferUbSizes(uint32_t rows, uint32_t chunk, uint32_t w, uint32_t dvPad, const FaVecFeatures& f) {
    FaInferUbSizes u;
    const bool mask = f.denseMask;
    const uint32_t r = rows == 0 ? 1 : rows, c = chunk == 0 ? 1 : chunk, r8 = AlignUp(r, 8);
    u.s = 2 * c * w * 4;
    u.fold = c * 256;
    u.p = 2 * c * w * 2 > r * dvPad * 2 ? 2 * c * w * 2 : r * dvPad * 2;
    u.opart = r * dvPad * 4;
    u.acc = r * dvPad * 4;
    u.stat = r8 * 8 * 4;
    u.row = AlignUp(r8 * 4, 32);
    const uint32_t c2 = AlignUp(c, 2);
    u.maskBytes = mask ? c2 * w : 0;
    u.maskHalf = mask ? c2 * w * 2 : 0;
    u.maskBits = mask ? AlignUp(c2 * w / 8, 32) : 0;
    u.dmat = f.alibi ? w * 4 : 0;
    u.bias = f.pse ? c * w * 4 : (f.alibi ? w * 4 : 0);
    u.pse = f.pse ? c * w * 2 : 0;
    u.total = u.s + u.fold + u.p + u.opart + u.acc + kInferStatBuffers * u.stat + 2 * u.row + u.maskBytes +
              u.maskHalf + u.maskBits + u.dmat + u.bias + u.pse + 32;
    return u;
}

// Inference over an int8 cache (kernel/infer_int8.h): UB of one AIV (bytes) beside InferUbSizes, for `rows` packed rows of
// the AIV, score chunks of `chunk` rows and w keys, `parts` int8 rows per row; `tokens`: K or V per token.
struct FaInt8UbSizes {
    uint32_t in;       // loads: the int32 parts of a score chunk or of a step's P*V, the query rows in the input dtype
    uint32_t x;        // fp32: the parts widened and combined (the chunk's scores), then P x 127 and its rounding
    uint32_t h;        // a rounded part in half, on its way to int8
    uint32_t out;      // the int8 parts of the query rows or of a probability chunk
    uint32_t channel;  // K per channel: [scale d | offset d] fp32
    uint32_t red;      // per row: the offset term and the largest |value| (a 32 B block each), then ReduceMax's work
    uint32_t valueChannel;  // V per channel: FaValueChannelFold
    uint32_t pairs;    // per token: a step's (scale, offset) pairs of K and V, fp32 [2][2 w]
    uint32_t columns;  // per token: K's scales and offsets, V's scales and scale x offset, fp32 [4][w]
    uint32_t total;
};

FA_INLINE FaInt8UbSizes Int8UbSizes(uint32_t rows, uint32_t chunk, uint32_t w, uint32_t d, uint32_t dvPad,
                                    uint32_t parts, bool tokens) {
    FaInt8UbSizes u;
    const uint32_t r = rows == 0 ? 1 : rows, c = chunk == 0 ? 1 : chunk;
    const uint32_t scores = c * w, query = r * d, out = r * dvPad;
    const uint32_t wide = (uint32_t)FaMax(scores, query);
    u.in = (uint32_t)FaMax(FaMax(parts * scores, parts * out), query) * 4;
    u.x = (uint32_t)FaMax(FaMax((parts > 3 ? parts : 3) * scores, parts * out), 2 * query) * 4;
    u.h = AlignUp(wide * 2, 32);
    u.out = AlignUp(wide * parts, 32);
    u.channel = 2 * d * 4;
    u.red = (r > c ? r : c) * 64 + AlignUp((d > w ? d : w) * 4, 32);
    u.valueChannel = 2 * d * 4;
    u.pairs = tokens ? 2 * AlignUp(2 * w, 8) * 4 : 0;
    u.columns = tokens ? 4 * w * 4 : 0;
    u.total = u.in + u.x + u.h + u.out + u.channel + u.red + u.valueChannel + u.pairs + u.columns;
    return u;
}

// The split-KV combine pass: UB of one AIV (bytes) for chunks of `rows` packed rows.
struct FaCombineUbSizes {
    uint32_t lse;    // every split's lse rows, fp32 [splits, rows8, 8]
    uint32_t stat;   // one statistic (max, weight, sum) [rows8, 8] fp32
    uint32_t part;   // one split's output rows, fp32 [rows, dvPad]
    uint32_t acc;    // their weighted sum, fp32 [rows, dvPad]
    uint32_t out;    // the output rows in the input dtype [rows, dvPad]
    uint32_t valid;  // the rows' valid bits
    uint32_t total;
};

FA_INLINE FaCombineUbSizes CombineUbSizes(uint32_t rows, uint32_t splits, uint32_t dvPad) {
    FaCombineUbSizes u;
    const uint32_t r8 = AlignUp(rows == 0 ? 1 : rows, 8);
    u.lse = splits * r8 * 8 * 4;
    u.stat = r8 * 8 * 4;
    u.part = r8 * dvPad * 4;
    u.acc = r8 * dvPad * 4;
    u.out = r8 * dvPad * 2;
    u.valid = AlignUp(r8 * 8 / 8, 32);
    u.total = u.lse + 3 * u.stat + u.part + u.acc + u.out + u.valid;
    return u;
}

// UB of one AIV in the block-map pre-pass (kernel/block_map.h), bytes, for s1Block x s2Block mask tiles. The tiling
// refuses forced blocks whose total exceeds the usable UB.
struct FaMapUbSizes {
    uint32_t bytes;   // one mask tile as loaded [s1Block, s2Block] u8
    uint32_t halfs;   // the same as half
    uint32_t floats;  // the same as fp32, ReduceSum's source
    uint32_t work;    // ReduceSum's work buffer: one partial per 64-float repeat
    uint32_t sum;     // ReduceSum's destination (the partials land before the total)
    uint32_t states;  // tile states staged for one DMA (kFaMapChunk entries)
    uint32_t counts;  // per-row computed-tile counts staged for one DMA (kFaMapChunk int32)
    uint32_t total;
};
constexpr uint32_t kFaMapChunk = 4096;

FA_INLINE FaMapUbSizes MapUbSizes(uint32_t s1Block, uint32_t s2Block) {
    FaMapUbSizes u;
    const uint32_t tile = s1Block * s2Block;
    u.bytes = tile;
    u.halfs = tile * 2;
    u.floats = tile * 4;
    u.work = AlignUp(CeilDiv(tile, 64), 8) * 4;
    u.sum = u.work;
    u.states = kFaMapChunk;
    u.counts = kFaMapChunk * 4;
    u.total = u.bytes + u.halfs + u.floats + u.work + u.sum + u.states + u.counts;
    return u;
}

}  // namespace npu_fa

#endif  // NPU_FA_TILING_UB_BUDGET_H
