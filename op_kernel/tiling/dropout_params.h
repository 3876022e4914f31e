// Dropout's tiling part (both directions carry one), its generator's 64-bit mixing and its UB sizes (tile/dropout.h
// has the generator).
#ifndef NPU_FA_TILING_DROPOUT_PARAMS_H
#define NPU_FA_TILING_DROPOUT_PARAMS_H

#include "base.h"

namespace npu_fa {

struct FaDropoutParams {
    uint64_t seedKey;    // mix64(mix64(seed) ^ offset)
    uint32_t mode;       // FaDropMode
    int32_t threshold;   // kDropGenerated: keep iff the column's signed 16-bit hash half is below this
                         // (round(keep_prob * 2^16) - 2^15)
    float keepInv;       // 1 / keep_prob: kept probabilities are scaled by it
    uint32_t maskPitch;  // kDropMask: bytes per mask row (rows in the statistics' order, bit c = key column c)
    // kDropGenerated: where the call sits in a larger score matrix whose bits it draws (the op's dropout_origin):
    // row i, column j of (sequence b, head n) draw the bits of row row0 + i, column col0 + j (col0 even) and head
    // index b * heads + headBase + n. A call on its own: 0, 0, 0 and heads = N1.
    uint32_t row0;
    uint32_t col0;
    uint32_t headBase;
    uint32_t heads;
};
static_assert(sizeof(FaDropoutParams) == 40, "FaDropoutParams must have no implicit padding");

// SplitMix64's finaliser: the dropout generator's 64-bit mixing (host tiling and kernels).
FA_INLINE uint64_t FaMix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// Dropout's UB: three int32 hash scratch pieces of DropPieceRows(w) rows (one hash per column pair; the last two
// hold the piece's scores as floats after hashing), the column-pair pattern [w / 2] int32 and the keep bits of a
// chunk, one 32 B-aligned row of DropBitsPitch(w) bytes per score row.
constexpr uint32_t kDropPieceElems = 1024;
FA_INLINE uint32_t DropPieceRows(uint32_t w) { return w >= kDropPieceElems ? 1 : kDropPieceElems / w; }
FA_INLINE uint32_t DropBitsPitch(uint32_t w) { return AlignUp(w / 8, 32); }
FA_INLINE uint32_t DropoutUbBytes(uint32_t chunk, uint32_t w) {
    return 3 * DropPieceRows(w) * w * 2 + w * 2 + chunk * DropBitsPitch(w);
}

}  // namespace npu_fa

#endif  // NPU_FA_TILING_DROPOUT_PARAMS_H
