// Tiling data of the forward FlashAttention kernel and the block geometry both sides derive from it.
// Shared by op_host (tiling) and op_kernel (device code): a plain struct of fixed-width fields, no pointers.
#ifndef NPU_FA_FLASH_ATTENTION_TILING_H
#define NPU_FA_FLASH_ATTENTION_TILING_H

// Device builds get the fixed-width types from kernel_operator.h; host builds from <cstdint>.
#if !defined(ASCEND_TWIN) && !defined(__CCE__)
#include <cstddef>
#include <cstdint>
#endif

#if defined(__aicore__) || defined(__CCE_KT_TEST__) || defined(__CCE__)
#define FA_INLINE __aicore__ inline
#else
#define FA_INLINE inline
#endif

namespace npu_fa {

constexpr uint32_t kMaxCores = 64;           // per-core task ranges kept in the tiling
constexpr int64_t kUnbounded = 1LL << 40;    // "no limit" for band offsets

// Per-sequence table (int64 fields, one row per sequence/batch), written by the host tiling, read by the kernels.
enum FaSeqField : uint32_t {
    kSeqQTok = 0,      // first query token (TND), else 0
    kSeqKvTok = 1,     // first key token (TND), else 0
    kSeqS1 = 2,
    kSeqS2 = 3,
    kSeqFirstTask = 4,
    kSeqBandLo = 5,    // visible keys of row i: [i + lo, i + hi] ∪ [0, prefix), within [0, s2)
    kSeqBandHi = 6,
    kSeqPrefix = 7,
    kSeqMapRow0 = 8,   // dense masks: first block-map row of this sequence's mask group
    kSeqMapEntry0 = 9, // dense masks: first block-map entry of that group
    kSeqMaskBase = 10, // dense masks: byte offset of this sequence's (head 0, row 0, column 0) mask element
    kSeqInfoFields = 11
};

// Block-map entry states (one byte per (mask group, head, s1 block, s2 block) tile of a dense mask).
enum FaTileState : uint8_t { kTileMasked = 0, kTileMixed = 1, kTileVisible = 2 };

enum FaLayout : uint32_t { kBSH = 0, kSBH = 1, kBSND = 2, kBNSD = 3, kTND = 4 };
enum FaDtype : uint32_t { kFp16 = 0, kBf16 = 1 };
// In-kernel ALiBi (fa_alibi.h), by the built-in's pse_type values.
enum FaAlibiMode : uint32_t { kAlibiNone = 0, kAlibiLinear = 2, kAlibiSqrt = 3 };
// An outer bias tensor (fa_pse.h): added as it is (the built-in's pse_type 0) or times the scale (pse_type 1).
enum FaPseMode : uint32_t { kPseNone = 0, kPseAdd = 1, kPseScaled = 2 };
// Dropout on the probabilities (fa_dropout.h): keep bits generated from (seed, offset) or read from a user mask.
enum FaDropMode : uint32_t { kDropNone = 0, kDropGenerated = 1, kDropMask = 2 };

// Dropout parameters; both tiling structs carry one (fa_dropout.h has the generator).
struct FaDropoutParams {
    uint64_t seedKey;    // mix64(mix64(seed) ^ offset)
    uint32_t mode;       // FaDropMode
    int32_t threshold;   // kDropGenerated: keep iff the column's signed 16-bit hash half is below this
                         // (round(keep_prob * 2^16) - 2^15)
    float keepInv;       // 1 / keep_prob: kept probabilities are scaled by it
    uint32_t maskPitch;  // kDropMask: bytes per mask row (rows in the statistics' order, bit c = key column c)
};

// SplitMix64's finaliser: the dropout generator's 64-bit mixing (host tiling and kernels).
FA_INLINE uint64_t FaMix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

struct FlashAttentionTilingData {
    // Problem.
    uint32_t layout;
    uint32_t dtype;
    uint32_t batch;       // B (TND: number of sequences)
    uint32_t n1;          // query heads
    uint32_t n2;          // key/value heads
    uint32_t group;       // n1 / n2
    uint32_t s1;          // query length (TND: max)
    uint32_t s2;          // key length (TND: max)
    uint32_t d;           // q/k head dim
    uint32_t dv;          // v head dim
    uint32_t varlen;      // 1: per-sequence geometry comes from the seq-info GM buffer
    uint32_t sparseMode;  // the op's sparse_mode (0-8); the kernels read each sequence's band from the seq table
    int64_t preTokens;
    int64_t nextTokens;
    float scale;
    uint32_t vecRows;     // query rows per vector pass (multiple of 8): each AIV walks its half in chunks of these
    // Element strides of q/k/v/out: per batch (unused for TND), per head, per token.
    uint64_t qStrideB, qStrideN, qStrideS;
    uint64_t kStrideB, kStrideN, kStrideS;
    uint64_t vStrideB, vStrideN, vStrideS;
    uint64_t oStrideB, oStrideN, oStrideS;
    // Blocks.
    uint32_t s1Block;     // query rows per task (the two AIVs take half each)
    uint32_t s2Block;     // key columns per step (multiple of 64): one softmax pass and one P*V output per step
    uint32_t dPad;        // d rounded up to 16
    uint32_t dvPad;       // dv rounded up to 16
    uint32_t kChunkQK;    // K-dim chunk of Q*K^T in L0A/L0B
    uint32_t nChunkQK;    // N-dim chunk of Q*K^T in L0C
    uint32_t kChunkPV;    // K-dim chunk of P*V
    uint32_t nChunkPV;    // N-dim chunk of P*V
    // Work split: core c runs tasks [coreTaskStart[c], coreTaskStart[c + 1]).
    uint32_t blockDim;
    uint32_t taskTotal;
    uint32_t s1Blocks;    // tasks per (batch, head) when not varlen
    uint32_t kvSub;       // keys per L1 sub-block of a step (divides s2Block; the cube streams K, V and P by these)
    uint32_t coreTaskStart[kMaxCores + 1];
    uint32_t reserved2;   // keeps the 64-bit fields below 8-byte aligned without implicit padding
    // Workspace (bytes, per core; AIC -> AIV scores S, AIV -> AIC probabilities P, AIC -> AIV partial output O).
    uint64_t wsPerCore;
    uint64_t wsOffsetS;
    uint64_t wsOffsetP;
    uint64_t wsOffsetO;
    // Dense atten_mask (bytes, nonzero = masked), read in place: element (n, r, c) of a sequence at its seq-table
    // kSeqMaskBase + n * maskStrideN + r * maskStrideS + (maskColStep ? c : c - c0) for the tile at column c0
    // (maskColStep 0: a column-broadcast mask stored as rows of at least s2Block equal bytes).
    uint32_t maskMode;        // 0 none, 1 dense
    uint32_t maskHeads;       // 1: the mask (and its block map) differs per query head
    uint64_t maskStrideN, maskStrideS;
    uint32_t maskColStep;
    uint32_t mapGroups;       // mask groups with their own block-map rows (the seq table's first mapGroups rows)
    uint32_t mapRows;         // block-map rows in all: one per (group, head if maskHeads, s1 block)
    uint32_t mapCores;        // AIV cores of the block-map pre-pass
    uint64_t mapEntries;      // block-map bytes; an int32 visible-tile count per row follows at mapCountsOffset
    uint64_t mapCountsOffset;
    uint32_t kvGroup;         // K/V/P sub-blocks per GM -> L1 load (one DMA moves kvGroup consecutive Nz tiles)
    uint32_t bandTiles;       // 1: some tile is cut by a band (the vector cores keep the band pattern in UB)
    // L0C plan of the cube (bytes): S tiles alternate between two slots l0cSlotBytes apart from l0cSlot0 (0: one
    // slot); a step's P*V accumulates in the next of those slots (l0cOut == kFaL0cRing) or, when its [s1Block, dv]
    // fp32 tile is larger than half of L0C, in a tile of its own at l0cOut (80 rows at dv = 256: O 80 KB at 0, one
    // 40 KB S slot after it).
    uint32_t l0cSlot0;
    uint32_t l0cSlotBytes;
    uint32_t l0cOut;
    uint32_t sinkMode;        // 1: the sink input holds one fp32 logit per query head that joins every softmax row
    float softcap;            // > 0: scaled scores x become softcap * tanh(x / softcap) before bias, masks, softmax
    uint32_t alibiMode;       // FaAlibiMode: in-kernel ALiBi from the alibi_slopes input (fa_alibi.h)
    uint32_t alibiPerBatch;   // 1: the slopes are [B, N1], else [N1]
    uint32_t reserved3;       // keeps the 64-bit field below 8-byte aligned
    int64_t alibiDelta;       // kv_start_idx - q_start_idx
    uint64_t pseStrideB, pseStrideN, pseStrideS;  // outer pse [B or 1, N1, S1 or 1, S2]: element strides, 0 = broadcast
    uint32_t pseMode;         // FaPseMode
    uint32_t reserved4;       // keeps the 64-bit field below 8-byte aligned
    FaDropoutParams drop;
};

// No implicit padding anywhere (host and device copy the struct as raw bytes; padding bytes would be undefined):
// every field starts where the previous one ends, and the size is a multiple of the widest field.
#define NPU_FA_FOLLOWS(a, b) (offsetof(FlashAttentionTilingData, b) == offsetof(FlashAttentionTilingData, a) + \
                              sizeof(FlashAttentionTilingData::a))
static_assert(NPU_FA_FOLLOWS(sparseMode, preTokens) && NPU_FA_FOLLOWS(vecRows, qStrideB) &&
                  NPU_FA_FOLLOWS(oStrideS, s1Block) && NPU_FA_FOLLOWS(kvSub, coreTaskStart) &&
                  NPU_FA_FOLLOWS(coreTaskStart, reserved2) && NPU_FA_FOLLOWS(reserved2, wsPerCore) &&
                  NPU_FA_FOLLOWS(wsOffsetO, maskMode) && NPU_FA_FOLLOWS(maskHeads, maskStrideN) &&
                  NPU_FA_FOLLOWS(mapCores, mapEntries) &&
                  NPU_FA_FOLLOWS(mapCountsOffset, kvGroup) && NPU_FA_FOLLOWS(kvGroup, bandTiles) &&
                  NPU_FA_FOLLOWS(bandTiles, l0cSlot0) && NPU_FA_FOLLOWS(l0cOut, sinkMode) &&
                  NPU_FA_FOLLOWS(sinkMode, softcap) && NPU_FA_FOLLOWS(softcap, alibiMode) &&
                  NPU_FA_FOLLOWS(alibiMode, alibiPerBatch) && NPU_FA_FOLLOWS(alibiPerBatch, reserved3) &&
                  NPU_FA_FOLLOWS(reserved3, alibiDelta) && NPU_FA_FOLLOWS(alibiDelta, pseStrideB) &&
                  NPU_FA_FOLLOWS(pseStrideS, pseMode) && NPU_FA_FOLLOWS(pseMode, reserved4) &&
                  NPU_FA_FOLLOWS(reserved4, drop) && sizeof(FaDropoutParams) == 24 &&
                  sizeof(FlashAttentionTilingData) == offsetof(FlashAttentionTilingData, drop) + sizeof(FaDropoutParams),
              "FlashAttentionTilingData must have no implicit padding");
#undef NPU_FA_FOLLOWS

// One sequence: where its tokens start and how long it is.
struct FaSeq {
    int64_t qTok;   // first query token (TND) — 0 otherwise
    int64_t kvTok;  // first key token (TND) — 0 otherwise
    int64_t s1;
    int64_t s2;
};

// Visible keys of query row i are ([i + lo, i + hi] ∪ [0, prefix)) ∩ [0, s2): each sparse mode's band (the host
// tiling derives it per sequence, see FaBandOfMode) with the prefix columns of modes 5/6.
struct FaBand {
    int64_t lo;
    int64_t hi;
    int64_t prefix;
};

FA_INLINE int64_t FaMin(int64_t a, int64_t b) { return a < b ? a : b; }
FA_INLINE int64_t FaMax(int64_t a, int64_t b) { return a > b ? a : b; }
FA_INLINE int64_t FaClamp(int64_t v, int64_t lo, int64_t hi) { return FaMin(FaMax(v, lo), hi); }


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

// Range of s2 blocks [first, last) that rows [r0, r1) of a sequence see; empty when first >= last.
struct FaStepRange {
    int64_t first;
    int64_t last;
};

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

// True when every row of [r0, r1) sees every column of block [c0, c1) (so no band mask is needed there).
FA_INLINE bool BlockFullyVisible(const FaBand& band, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    if (c1 <= band.prefix) return true;
    return (r1 - 1 + band.lo <= FaMax(c0, band.prefix)) && (c1 - 1 <= r0 + band.hi);
}

// Work split: a task's cost is its computed steps plus a fixed overhead; core `core` of `cores` starts after the
// first task where the running cost reaches its share. Host tiling and kernels (dense masks) use the same rule.
FA_INLINE uint64_t FaTaskCost(uint64_t steps) { return 4 * steps + 1; }
FA_INLINE bool FaCutAfter(uint64_t acc, uint64_t total, uint32_t core, uint32_t cores) {
    return acc * cores >= total * core;
}

FA_INLINE uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
FA_INLINE uint32_t AlignUp(uint32_t a, uint32_t b) { return CeilDiv(a, b) * b; }

// Cube matmul pieces (fa_matmul.h): L0A/L0B and L0C are used as two ping-pong halves each.
constexpr uint32_t kL0HalfBytes = 32 * 1024;
constexpr uint32_t kL0cHalfBytes = 64 * 1024;
constexpr uint32_t kFaL0cRing = 0xFFFFFFFFu;  // FlashAttentionTilingData::l0cOut: P*V uses the S slots

// Chunk of a dimension of `total` elements: the largest multiple of 16 not above `limit` (at least 16), capped at
// `total` rounded up to 16.
FA_INLINE uint32_t FaChunk(uint32_t total, uint32_t limit) {
    const uint32_t c = limit / 16 * 16 < 16 ? 16 : limit / 16 * 16;
    const uint32_t t = AlignUp(total, 16);
    return c < t ? c : t;
}

// The N and K chunks of C[m, n] = A[m, k] * B[k, n] that fit an L0C tile of l0cTileBytes and the L0A / L0B halves,
// for an A operand of `mPad` rows (its row count rounded up to 16).
FA_INLINE void FaMatmulChunks(uint32_t mPad, uint32_t k, uint32_t n, uint32_t& kChunk, uint32_t& nChunk,
                              uint32_t l0cTileBytes = kL0cHalfBytes) {
    nChunk = FaChunk(n, l0cTileBytes / (mPad * 4));
    const uint32_t limA = kL0HalfBytes / (mPad * 2), limB = kL0HalfBytes / (nChunk * 2);
    kChunk = FaChunk(k, limA < limB ? limA : limB);
}

// What the vector cores compute besides scale, online softmax and output (it decides their extra UB buffers).
struct FaVecFeatures {
    bool denseMask = false;  // a dense atten_mask
    bool band = false;       // some tile is cut by a band
    bool alibi = false;      // in-kernel ALiBi
    bool pse = false;        // an outer pse tensor
    bool dropout = false;    // keep_prob < 1 or a dropout mask
};

// The features a forward tiling asks of the vector cores.
FA_INLINE FaVecFeatures VecFeatures(const FlashAttentionTilingData* t) {
    FaVecFeatures f;
    f.denseMask = t->maskMode != 0;
    f.band = t->bandTiles != 0;
    f.alibi = t->alibiMode != kAlibiNone;
    f.pse = t->pseMode != kPseNone;
    f.dropout = t->drop.mode != kDropNone;
    return f;
}

// Dropout's UB (fa_dropout.h): three int32 hash scratch pieces of DropPieceRows(w) rows (one hash per column pair;
// the last two hold the piece's scores as floats after hashing), the column-pair pattern [w / 2] int32 and the keep
// bits of a chunk, one 32 B-aligned row of DropBitsPitch(w) bytes per score row.
constexpr uint32_t kDropPieceElems = 1024;
FA_INLINE uint32_t DropPieceRows(uint32_t w) { return w >= kDropPieceElems ? 1 : kDropPieceElems / w; }
FA_INLINE uint32_t DropBitsPitch(uint32_t w) { return AlignUp(w / 8, 32); }
FA_INLINE uint32_t DropoutUbBytes(uint32_t chunk, uint32_t w) {
    return 3 * DropPieceRows(w) * w * 2 + w * 2 + chunk * DropBitsPitch(w);
}

// UB buffers of one AIV (bytes), for `rows` query rows, s2 block `w` and padded value dim `dvPad`. The kernel
// allocates exactly these; the tiling sizes blocks so that their sum fits the usable UB.
struct FaUbSizes {
    uint32_t s;      // scores / probabilities in fp32, two [chunk, w] buffers (load of one overlaps work on the other)
    uint32_t dmat;   // (column - row) pattern for band masks and ALiBi [chunk, w] (only with either)
    uint32_t bias;   // ALiBi scratch, or an outer pse tile in fp32, [chunk, w] (only with either)
    uint32_t pse;    // an outer pse tile as read, [chunk, w] of the input dtype (only with one)
    uint32_t bits;   // compare bit mask over [chunk, w] (only with bands or a dense mask)
    uint32_t fold;   // row-reduction scratch [chunk, 64] fp32, also the masks' [chunk, w] half scratch
    uint32_t p;      // probabilities in half precision, two [chunk, w] buffers; the output [rows, dvPad] at the end
    uint32_t opart;  // partial output P*V of one step, fp32 [rows, dvPad]
    uint32_t acc;    // running output, fp32 [rows, dvPad]
    uint32_t stat;   // one row statistic broadcast to a 32 B block per row [rows8, 8] fp32
    uint32_t row;    // one fp32 value per row [rows8]
    uint32_t mask;   // dense-mask bytes of a chunk [chunk, w] when `opart` cannot hold them (else they use opart,
                     // free between its uses); their half copy uses `fold`
    uint32_t drop;   // dropout: hash scratch, column pattern and keep bits (DropoutUbBytes; only with dropout)
    uint32_t total;
};
constexpr uint32_t kFaStepSlots = 3;      // forward steps in flight per core: workspace slots, UB statistic sets
constexpr uint32_t kFaStatBuffers = 3 * kFaStepSlots + 4;  // max, sum, alpha per slot; broadcast, reduce, max/sum out

// UB of one AIV for `rows` query rows (its half of a task) walked in chunks of `chunk` rows.
FA_INLINE FaUbSizes UbSizes(uint32_t rows, uint32_t chunk, uint32_t w, uint32_t dvPad, const FaVecFeatures& f) {
    const bool denseMask = f.denseMask, band = f.band, alibi = f.alibi, pse = f.pse;
    FaUbSizes u;
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
    u.p = 2 * c * w * 2 > r * dvPad * 2 ? 2 * c * w * 2 : r * dvPad * 2;
    u.opart = r * dvPad * 4;
    u.acc = r * dvPad * 4;
    u.stat = r8 * 8 * 4;
    u.row = AlignUp(r8 * 4, 32);
    u.mask = denseMask && u.opart < AlignUp(c, 8) * w ? AlignUp(c, 8) * w : 0;
    u.drop = f.dropout ? DropoutUbBytes(c, w) : 0;
    u.total = u.s + u.dmat + u.bias + u.pse + u.bits + u.fold + u.p + u.opart + u.acc + kFaStatBuffers * u.stat +
              2 * u.row + u.mask + u.drop + 32;
    return u;
}

// UB of one AIV in the block-map pre-pass (flash_attention_block_map.cpp), bytes, for s1Block x s2Block mask tiles.
// The kernel allocates exactly these; the tiling refuses forced blocks whose total exceeds the usable UB.
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

#endif  // NPU_FA_FLASH_ATTENTION_TILING_H
