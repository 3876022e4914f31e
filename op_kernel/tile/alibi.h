// ALiBi generated in the kernel (the built-in's pse_type 2 and 3): score (i, j) of a query head gets
// -slope * |(j + kv_start_idx) - (i + q_start_idx)| (type 2) or -slope * sqrt(|...|) (type 3), i and j positions
// inside the sequence, after the scale and the soft-cap, before the masks. No [S1, S2] bias exists anywhere: a tile
// derives it from the (column - row) pattern the band masks use. Shared by the forward, the backward and the
// inference kernel (one query token per run of packed rows: one distance row, one slope per row).
#ifndef NPU_FA_TILE_ALIBI_H
#define NPU_FA_TILE_ALIBI_H

#include "kernel_operator.h"
#include "../tiling/base.h"

namespace npu_fa {

// tmp <- dist(delta + dmat[r][c]) over n fp32 elements: the ALiBi distance of each score of a tile whose
// dmat[r][c] = c - r and whose (first column - first row) position offset, start indices included, is `delta`.
__aicore__ inline void AlibiDistance(const AscendC::LocalTensor<float>& tmp, const AscendC::LocalTensor<float>& dmat,
                                     uint32_t mode, int64_t delta, uint32_t n) {
    AscendC::Adds(tmp, dmat, (float)delta, (int32_t)n);
    AscendC::Abs(tmp, tmp, (int32_t)n);
    if (mode == kAlibiSqrt) AscendC::Sqrt(tmp, tmp, (int32_t)n);
}

// s[r][c] += -slope * dist(delta + dmat[r][c]) over the n fp32 elements of a tile (AlibiDistance). `tmp`: n fp32 of
// scratch.
__aicore__ inline void AddAlibi(const AscendC::LocalTensor<float>& s, const AscendC::LocalTensor<float>& dmat,
                                const AscendC::LocalTensor<float>& tmp, uint32_t mode, int64_t delta, float slope,
                                uint32_t n) {
    AlibiDistance(tmp, dmat, mode, delta, n);
    AscendC::Axpy(s, tmp, -slope, (int32_t)n);
}

}  // namespace npu_fa

#endif  // NPU_FA_TILE_ALIBI_H
