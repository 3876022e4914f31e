// L0 sizes of the cube and the chunks a matmul takes through them (tile/matmul.h): L0B and L0C are used as two
// ping-pong halves each, L0A too unless part of it holds resident A operands (the rest then splits in two).
#ifndef NPU_FA_TILING_MATMUL_CHUNKS_H
#define NPU_FA_TILING_MATMUL_CHUNKS_H

#include "base.h"

namespace npu_fa {

constexpr uint32_t kL0Bytes = 64 * 1024;  // L0A and L0B each
constexpr uint32_t kL0HalfBytes = kL0Bytes / 2;
constexpr uint32_t kL0cHalfBytes = 64 * 1024;
constexpr uint32_t kFaL0cRing = 0xFFFFFFFFu;  // FlashAttentionTilingData::l0cOut: P*V uses the S slots

// Chunk of a dimension of `total` elements: the largest multiple of `unit` not above `limit` (at least unit),
// capped at `total` rounded up to unit.
FA_INLINE uint32_t FaChunk(uint32_t total, uint32_t limit, uint32_t unit = 16) {
    const uint32_t c = limit / unit * unit < unit ? unit : limit / unit * unit;
    const uint32_t t = AlignUp(total, unit);
    return c < t ? c : t;
}

// The N and K chunks of C[m, n] = A[m, k] * B[k, n] that fit an L0C tile of l0cTileBytes and the L0A / L0B halves,
// for an A operand of `mPad` rows (its row count rounded up to 16), streamed through L0A pieces of l0aPieceBytes.
// int8 operands (`int8`): one byte an element, K in multiples of 32 (a fractal's K0), N too (B stored as itself
// loads 32 x 32 squares).
FA_INLINE void FaMatmulChunks(uint32_t mPad, uint32_t k, uint32_t n, uint32_t& kChunk, uint32_t& nChunk,
                              uint32_t l0cTileBytes = kL0cHalfBytes, uint32_t l0aPieceBytes = kL0HalfBytes,
                              bool int8 = false) {
    const uint32_t bytes = int8 ? 1 : 2, unit = int8 ? 32 : 16;
    nChunk = FaChunk(n, l0cTileBytes / (mPad * 4), unit);
    const uint32_t limA = l0aPieceBytes / (mPad * bytes), limB = kL0HalfBytes / (nChunk * bytes);
    kChunk = FaChunk(k, limA < limB ? limA : limB, unit);
}

}  // namespace npu_fa

#endif  // NPU_FA_TILING_MATMUL_CHUNKS_H
