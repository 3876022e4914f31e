// Tiling data of the backward kernel. The backward runs as launches of one mix kernel, each with its own copy of
// this struct:
//   pass kBwdPassDq:  tasks (sequence, query head, s1 block); D = rowsum(dO * O) into the workspace, then
//                     dQ = scale * sum_j dS_ij K_j over the visible s2 blocks, summed in L0C;
//   pass kBwdPassDkv: tasks (sequence, kv head, s2 block); dV = sum P^T dO and dK = scale * sum dS^T Q over the
//                     query heads of the group and the s1 blocks that see the kv block, summed in L0C.
// Every output row is owned by exactly one task, whose sum runs in a fixed order, so the result does not depend on
// the core count or on timing (no atomics): the op's `deterministic` flag changes nothing. Keeping the sums in L0C
// is what two passes buy (a fused single pass would move every tile's dQ, or dK and dV, through Fixpipe:
// docs/performance.md, "Backward").
// Stored tiles (storeTiles = 1): the dQ pass writes each tile's P and dS (input dtype) to the workspace once and the
// dK/dV pass multiplies them as they are: no second S, dP, Fixpipe or vector work. Their workspace grows with
// S1 x S2 per head, so the launches go in chunks of kv heads, [headFirst, headFirst + headCount) (all batches): dQ
// then dK/dV per chunk, headCount the largest divisor of N2 whose tiles (every s1 x s2 block of each sequence,
// 2 x s1Block x s2Block x 2 B each, per query head of the chunk) fit kBwdStoreLimitBytes. Where one kv head's tiles
// do not fit, the launches also go in chunks of query blocks, [qBlkFirst, qBlkFirst + qBlkCount) of every sequence
// (one kv head each): dQ then dK/dV per chunk, each dK/dV task adding its chunk's sums to the earlier chunks' fp32
// sums in the workspace in chunk order (fixed: still bitwise for any core count), the sequence's last chunk
// writing dk and dv. Where not even kBwdMinChunkSteps query blocks of one head fit, the dK/dV pass recomputes S and
// dP as before (storeTiles = 0, one chunk of every head).
#ifndef NPU_FA_TILING_BWD_TILING_H
#define NPU_FA_TILING_BWD_TILING_H

#include "problem_tiling.h"
#include "matmul_chunks.h"

namespace npu_fa {

enum FaBwdPass : uint32_t { kBwdPassDq = 0, kBwdPassDkv = 1 };
enum FaBwdPart : uint32_t { kBwdPartDk = 1, kBwdPartDv = 2, kBwdPartsBoth = 3 };
// Steps in flight per core: the cube computes S/dP of step j+lag before the products of step j (lag = l1Slots - 2:
// 3 in the dQ pass with Q and dO resident in L0A, whose L1 then holds one Q and dO; else 2 where four L1 slots of
// Q, dO, K, V fit, else 1), so the vector cores' P/dS of step j overlap `lag` steps of cube work. Workspace slots of
// S, dP, P, dS: step % kBwdSlots (one per step in flight).
constexpr uint32_t kBwdMaxLag = 3;
constexpr uint32_t kBwdSlots = kBwdMaxLag + 1;
// Stored tiles of one chunk at most (bytes of workspace; FaProblem::bwdStoreLimit replaces it in tests and tuning).
constexpr uint64_t kBwdStoreLimitBytes = 1ull << 30;
// Query chunks: a dK/dV task's steps per chunk at least (its sums' trip through the workspace against its steps).
constexpr uint32_t kBwdMinChunkSteps = 8;
// The core count the query chunks' size is balanced for (910B2's AI cores). A constant, not the chip's: the chunks
// set the order of the dK/dV sums, which must not depend on the core count.
constexpr uint32_t kBwdChunkCores = 24;

// The operator's registered tiling struct (the entry's GET_TILING_DATA names it).
struct FlashAttentionGradTilingData {
    FaProblemTiling problem;
    // Workspace (bytes): D = rowsum(dO * O) per query row ([rows, 8] fp32, statistic layout) at wsOffsetD, the stored
    // tiles at wsOffsetTiles (P then dS, tileBytes each, per tile), then per core at wsOffsetCore + core *
    // wsPerCore: S and dP (fp32, or the input dtype: problem.bwdLowScores), P and dS (input dtype),
    // kBwdSlots slots each, and a task's sums as Fixpipe leaves them (fp32).
    uint64_t wsOffsetD;
    uint64_t wsOffsetTiles;
    uint64_t wsOffsetCore;
    uint64_t wsPerCore;
    uint64_t wsOffsetS, wsOffsetDp, wsOffsetP, wsOffsetDs, wsOffsetSumA, wsOffsetSumB;
    // Query chunks: the earlier chunks' dK sums [headCount, chunkKeys, dPad] then dV sums [headCount, chunkKeys,
    // dvPad] (fp32, shared) at wsOffsetChunkSums; chunkKeys the key rows of a head (B * S2, TND: T2).
    uint64_t wsOffsetChunkSums;
    uint64_t chunkKeys;
    uint32_t tileBytes;      // one stored P or dS tile, [s1Block, s2Block] of the input dtype, 512 B aligned
    uint32_t storeTiles;     // 1: the dQ pass stores P and dS, the dK/dV pass reads them (no recompute)
    uint32_t headFirst;      // the launch's kv heads [headFirst, headFirst + headCount) (query heads: times group)
    uint32_t headCount;
    uint32_t qBlkFirst;      // the launch's s1 blocks [qBlkFirst, qBlkFirst + qBlkCount) of each sequence (dQ tasks
    uint32_t qBlkCount;      // and the dK/dV steps; stored tiles: qBlkCount rows of blocks per head); unchunked: 0
                             // and the most s1 blocks of a sequence
    uint32_t pass;           // FaBwdPass
    uint32_t s1Block;        // query rows of a tile (the two AIVs take half each)
    uint32_t s2Block;        // key rows of a tile (multiple of 64)
    uint32_t kvParts;        // dK/dV pass: which gradients it sums, kBwdPartDk | kBwdPartDv (large head dims run
                             // one dK/dV pass per gradient so that the sum fits half of L0C)
    uint32_t sumCol0;        // a single-gradient pass sums its columns [sumCol0, sumCol0 + sumCols) (head dims
    uint32_t sumCols;        // above 256 take several passes); both-gradient passes sum every column
    uint32_t l1Slots;        // L1 slots of Q, dO, K, V (the stored-tile dK/dV pass: Q, dO, P, dS; the resident dQ
                             // pass: K, V) (5, 4 or 3): a step loads while the 4, 3 or 2 before it compute
    uint32_t dqChunkQ;       // dQ pass, nonzero: the task's Q and dO stay in L0A over its steps (BwdDqResident), in
    uint32_t dqChunkDo;      // K pieces of these many columns (the K chunks of S = Q K^T and dP = dO V^T); 0: per step
    // Work split: core c runs tasks [coreTaskStart[c], coreTaskStart[c + 1]).
    uint32_t blockDim;
    uint32_t taskTotal;
    uint32_t coreTaskStart[kMaxCores + 1];
};
static_assert(sizeof(FlashAttentionGradTilingData) ==
                  sizeof(FaProblemTiling) + 12 * sizeof(uint64_t) + (17 + kMaxCores + 1) * sizeof(uint32_t) &&
              sizeof(FlashAttentionGradTilingData) == 728,  // the size the recorded trace digests saw
              "FlashAttentionGradTilingData must have no implicit padding");

// The high-performance mode (problem.bwdLowScores != 0) takes S out of Fixpipe in the input dtype as the forward did,
// so that P is consistent with the forward's statistics (and dP too: half the bytes again; the gradients keep the
// FlashAttention criterion for fp16 and bf16). Its Q*K^T chunks for query blocks of m16 rows and key tiles of w: K
// as the forward's (so that the rounded S is the forward's bit for bit), N what fits L0B beside it and S's quarter
// of L0C.
FA_INLINE uint32_t BwdScoreNChunk(uint32_t m16, uint32_t w, uint32_t kChunk) {
    const uint32_t limC = kL0cHalfBytes / 2 / (m16 * 4), limB = kL0HalfBytes / (kChunk * 2);
    return FaChunk(w, limC < limB ? limC : limB);
}
FA_INLINE void BwdLowScoreChunks(const FaProblemTiling& p, uint32_t m16, uint32_t w, uint32_t& kChunk,
                                 uint32_t& nChunk) {
    kChunk = p.bwdLowScores;
    nChunk = BwdScoreNChunk(m16, w, kChunk);
}

// The dQ pass's L0A (kL0Bytes): Q [m16, dPad] and dO [m16, dvPad] of its task stay resident over the task's steps
// (loaded once, read by every step's S and dP Mmads) where the two halves left beside them still take a whole dS
// tile [m16, w] each (the A of dQ += dS K, streamed per step as before); else both are reloaded per step. The K
// pieces: the high-performance mode's Q K^T chunk (the forward's), else the largest K^T [w, kChunk] in an L0B half.
// 64 x 128 tiles, D = Dv = 128: Q, dO 16 KB each + dS 2 x 16 KB; D = 64: 8 + 8 + 2 x 24 KB; D = 256 does not fit.
FA_INLINE void BwdDqResident(const FaProblemTiling& p, uint32_t s1Block, uint32_t w, uint32_t& chunkQ,
                             uint32_t& chunkDo) {
    const uint32_t m16 = AlignUp(s1Block, 16), resident = m16 * (p.dPad + p.dvPad) * 2;
    chunkQ = chunkDo = 0;
    if (resident > kL0Bytes || (kL0Bytes - resident) / 2 / 512 * 512 < m16 * w * 2) return;
    const uint32_t limB = kL0HalfBytes / (AlignUp(w, 16) * 2);
    chunkQ = p.bwdLowScores != 0 ? p.bwdLowScores : FaChunk(p.dPad, limB);
    chunkDo = FaChunk(p.dvPad, limB);
}

// L1 bytes of the dQ pass with Q and dO resident in L0A: one Q [m16, dPad] and dO [m16, dvPad] (read once per task,
// by the L0A load), K [w, dPad] and V [w, dvPad] x `slots`, dS [m16, w] x 2 (step parity); 16-bit.
FA_INLINE uint32_t BwdDqResidentL1Bytes(uint32_t s1Block, uint32_t w, uint32_t dPad, uint32_t dvPad, uint32_t slots) {
    const uint32_t m16 = AlignUp(s1Block, 16);
    return 2 * ((m16 + slots * w) * (dPad + dvPad) + 2 * m16 * w);
}

// The output columns a pass sums for gradient `part` (kBwdPartDk: of dK, width d; kBwdPartDv: of dV, width dv), as
// [first, first + count).
FA_INLINE void BwdSumColumns(const FlashAttentionGradTilingData* t, uint32_t part, uint32_t& first, uint32_t& count) {
    first = t->kvParts == kBwdPartsBoth ? 0 : t->sumCol0;
    count = t->kvParts == kBwdPartsBoth ? (part == kBwdPartDk ? t->problem.d : t->problem.dv) : t->sumCols;
}

}  // namespace npu_fa

#endif  // NPU_FA_TILING_BWD_TILING_H
