// Band maths: which key columns a query row sees (each sparse mode's band plus the prefix columns of modes 5/6), and
// the s2 blocks of query rows / s1 blocks of key columns it lets through. Host tiling and kernels share it.
#ifndef NPU_FA_TILING_BAND_H
#define NPU_FA_TILING_BAND_H

#include "base.h"

namespace npu_fa {

// Visible keys of query row i are ([i + lo, i + hi] ∪ [0, prefix)) ∩ [0, s2): each sparse mode's band (the host
// tiling derives it per sequence, BandOfSequence) with the prefix columns of modes 5/6.
struct FaBand {
    int64_t lo;
    int64_t hi;
    int64_t prefix;
};

// A range of blocks [first, last); empty when first >= last.
struct FaStepRange {
    int64_t first;
    int64_t last;
};

// The s2 blocks that rows [r0, r1) of a sequence see.
FA_INLINE FaStepRange StepsOf(const FaBand& band, int64_t r0, int64_t r1, int64_t s2, int64_t s2Block) {
    FaStepRange r{0, 0};
    if (r1 <= r0 || s2 <= 0) return r;
    const int64_t bandLo = FaMax(0, r0 + band.lo);
    const int64_t bandHi = FaMin(s2 - 1, r1 - 1 + band.hi);
    const int64_t pre = FaMin(band.prefix, s2);
    const int64_t lo = pre > 0 ? 0 : bandLo;
    const int64_t hi = FaMax(bandHi, pre - 1);
    if (lo > hi) return r;
    r.first = lo / s2Block;
    r.last = hi / s2Block + 1;
    return r;
}

// Query rows i of a sequence that see some key column of [c0, c1): i + lo <= c1 - 1 and i + hi >= c0 (the band
// read the other way round), as the range of s1 blocks.
FA_INLINE FaStepRange QueryBlocksOf(const FaBand& band, int64_t c0, int64_t c1, int64_t s1, int64_t s1Block) {
    FaStepRange r{0, 0};
    if (c1 <= c0 || s1 <= 0) return r;
    const bool prefixCols = c0 < band.prefix;  // every row sees the prefix columns
    const int64_t lo = prefixCols ? 0 : FaMax(0, c0 - band.hi);
    const int64_t hi = prefixCols ? s1 - 1 : FaMin(s1 - 1, c1 - 1 - band.lo);
    if (lo > hi) return r;
    r.first = lo / s1Block;
    r.last = hi / s1Block + 1;
    return r;
}

// True when every row of [r0, r1) sees every column of block [c0, c1) (so no band mask is needed there).
FA_INLINE bool BlockFullyVisible(const FaBand& band, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    if (c1 <= band.prefix) return true;
    return (r1 - 1 + band.lo <= FaMax(c0, band.prefix)) && (c1 - 1 <= r0 + band.hi);
}

// True when, in block [c0, ...) seen by rows [r0, r1), only the band's right edge (c - r <= hi) hides columns: every
// row sees column c0, and neither the left edge nor prefix columns cut the block (a causal task's diagonal tiles).
// Masking such a block cannot leave a row without keys.
FA_INLINE bool OnlyRightEdgeCuts(const FaBand& band, int64_t r0, int64_t r1, int64_t c0) {
    return band.prefix <= c0 && c0 - (r1 - 1) >= band.lo && c0 - r0 <= band.hi;
}

// Keys row r sees in its band, clipped to [0, s2) (prefix columns left of the band not counted: a lower bound).
FA_INLINE int64_t BandKeysOfRow(const FaBand& band, int64_t r, int64_t s2) {
    return FaMin(s2, r + band.hi + 1) - FaMax((int64_t)0, r + band.lo);
}

// True when some row of [r0, r1) may see keys only inside block [c0, c1) (its band and prefix columns, clipped to
// [0, s2), lie there): rows i >= c0 - lo (unless c0 = 0) and i <= c1 - 1 - hi (unless c1 >= s2); prefix columns
// outside the block rule every row out. A dense mask can only shrink a row's keys, so the answer stays an upper bound.
FA_INLINE bool SomeRowInsideBlock(const FaBand& band, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t s2) {
    const int64_t pre = FaMin(band.prefix, s2);
    if (pre > 0 && (c0 > 0 || pre > c1)) return false;
    const int64_t first = c0 > 0 ? FaMax(r0, c0 - band.lo) : r0;
    const int64_t last = c1 < s2 ? FaMin(r1 - 1, c1 - 1 - band.hi) : r1 - 1;
    return first <= last;
}

}  // namespace npu_fa

#endif  // NPU_FA_TILING_BAND_H
