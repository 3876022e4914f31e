// One score tile as the vector cores' tile ops (masks, bias, dropout) see it, in both directions.
#ifndef NPU_FA_TILE_SCORE_TILE_H
#define NPU_FA_TILE_SCORE_TILE_H

#include "kernel_operator.h"
#include "../tiling/band.h"

namespace npu_fa {

// Query rows [r0, r0 + rows) (positions inside the sequence) of query head `head` of sequence `batch` against key
// columns [c0, c0 + w), the first `cols` of which exist; with the sequence's band, the byte offset of its dense mask,
// the block map's state of the tile and the statistics row of row r0 (the dropout mask's row order).
struct FaScoreTile {
    uint32_t batch;
    uint32_t head;
    int64_t r0;
    uint32_t rows;
    int64_t c0;
    uint32_t cols;
    FaBand band;
    int64_t maskBase;
    uint8_t state;
    uint64_t statRow0;
};

}  // namespace npu_fa

#endif  // NPU_FA_TILE_SCORE_TILE_H
