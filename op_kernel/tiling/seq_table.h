// The per-sequence table (int64 fields, one row per sequence/batch): written by the host tiling, read by the kernels.
#ifndef NPU_FA_TILING_SEQ_TABLE_H
#define NPU_FA_TILING_SEQ_TABLE_H

#include "band.h"

namespace npu_fa {

enum FaSeqField : uint32_t {
    kSeqQTok = 0,      // first query token (TND), else 0
    kSeqKvTok = 1,     // first key token (TND), else 0
    kSeqS1 = 2,
    kSeqS2 = 3,
    kSeqFirstTask = 4, // the forward's (and the backward dQ pass's) first task of the sequence
    kSeqBandLo = 5,    // the sequence's FaBand
    kSeqBandHi = 6,
    kSeqPrefix = 7,
    kSeqMapRow0 = 8,   // dense masks: first block-map row of this sequence's mask group
    kSeqMapEntry0 = 9, // dense masks: first block-map entry of that group
    kSeqMaskBase = 10, // dense masks: byte offset of this sequence's (head 0, row 0, column 0) mask element
    kSeqInfoFields = 11
};
// The backward's rows extend the forward's (for the backward's blocks) by the first dK/dV task and the first dQ task
// of the sequence among one launch's heads (bwd_tiling.h: a launch walks kv heads [headFirst, headFirst +
// headCount)), and the sequence's first stored tile per query head (the s1 x s2 blocks of the sequences before it).
constexpr uint32_t kBwdSeqFirstKvTask = kSeqInfoFields;
constexpr uint32_t kBwdSeqFirstDqTask = kSeqInfoFields + 1;
constexpr uint32_t kBwdSeqTileBase = kSeqInfoFields + 2;
constexpr uint32_t kBwdSeqFields = kSeqInfoFields + 3;

// Block-map entry states (one byte per (mask group, head, s1 block, s2 block) tile of a dense mask).
enum FaTileState : uint8_t { kTileMasked = 0, kTileMixed = 1, kTileVisible = 2 };

// One sequence: where its tokens start and how long it is.
struct FaSeq {
    int64_t qTok;   // first query token (TND) — 0 otherwise
    int64_t kvTok;  // first key token (TND) — 0 otherwise
    int64_t s1;
    int64_t s2;
};

// A sequence's geometry and band from its seq-table row (host or GM pointer to kSeqInfoFields int64 values).
template <typename RowPtr>
FA_INLINE void ReadSeqRow(RowPtr row, FaSeq& seq, FaBand& band) {
    seq.qTok = row[kSeqQTok];
    seq.kvTok = row[kSeqKvTok];
    seq.s1 = row[kSeqS1];
    seq.s2 = row[kSeqS2];
    band.lo = row[kSeqBandLo];
    band.hi = row[kSeqBandHi];
    band.prefix = row[kSeqPrefix];
}

}  // namespace npu_fa

#endif  // NPU_FA_TILING_SEQ_TABLE_H
