#include "flash_attention_grad_tiling_host.h"

#include <algorithm>

namespace npu_fa {
namespace {

// Q, dO, K, V x `slots`, P, dS x 2; 16-bit.
uint32_t GradL1Bytes(uint32_t s1Block, uint32_t w, uint32_t dPad, uint32_t dvPad, uint32_t slots) {
    const uint32_t m16 = AlignUp(s1Block, 16);
    return 2 * (slots * (m16 + w) * (dPad + dvPad) + 2 * 2 * m16 * w);
}
// The stored-tile dK/dV pass: Q, dO, P, dS x `slots`; 16-bit.
uint32_t StoredKvL1Bytes(uint32_t s1Block, uint32_t w, uint32_t dPad, uint32_t dvPad, uint32_t slots) {
    const uint32_t m16 = AlignUp(s1Block, 16);
    return 2 * slots * m16 * (dPad + dvPad + 2 * w);
}

// The high-performance mode (FaProblemTiling::bwdLowScores) for query blocks of m16 rows: 16-bit S exactly where the
// forward's own tiling of the problem takes it (its rule, at its blocks), in its K-dim chunks; 0 elsewhere.
std::string PlanLowScores(const FaProblem& p, const ChipSpec& chip, uint32_t m16, uint32_t& lowScores) {
    lowScores = 0;
    if (!p.highPerformance && p.forceLowScores < 0) return "";
    FaTilingOut fwd;
    const std::string err = ComputeFlashAttentionTiling(p, chip, fwd);
    if (!err.empty()) return err;
    if (fwd.data.lowScores == 0) return "";
    // The forward's K chunk fits the backward's L0A half when its query block is at least as tall (always at
    // dPad <= 128, where both take D whole); else the largest that fits (the twin's sums do not depend on it).
    const uint32_t kChunk = fwd.data.kChunkQK;
    lowScores = m16 * kChunk * 2 <= kL0HalfBytes ? kChunk : FaChunk(AlignUp(p.d, 16), kL0HalfBytes / (m16 * 2));
    return "";
}

// The tiling with 64 x 128 tiles whose dK/dV sums ([128, dPad + dvPad] fp32) fill all of L0C, which only the
// stored-tile dK/dV pass (no S or dP in L0C) can hold: it loads Q and dO once per 128 keys instead of per 64. Empty
// when the tiles are stored; else what is wrong, and the caller takes the standard tiling.
std::string GradTiling(const FaProblem& p, const ChipSpec& chip, FaGradTilingOut& out, bool wideStored);

// Query chunks (one kv head each): s1 blocks per chunk, 0 where fewer than kBwdMinChunkSteps fit the limit
// (bytesOf(blocks): one kv head's stored tiles). Among the sizes from half the largest up (and at least those
// steps), the one whose dQ passes take the fewest rounds of kBwdChunkCores cores (a chunk's heads x blocks tasks;
// heads: the group's query heads of every sequence), the largest of those.
template <typename BytesOf>
uint32_t QueryChunkBlocks(const BytesOf& bytesOf, uint64_t limit, uint32_t qBlkMax, uint32_t group, uint32_t heads) {
    uint32_t most = 0;
    while (most < qBlkMax && bytesOf(most + 1) <= limit) ++most;
    if (most == 0 || most * group < kBwdMinChunkSteps) return 0;
    uint32_t best = most;
    uint64_t bestRounds = ~0ull;
    const uint32_t least = std::max((most + 1) / 2, CeilDiv(kBwdMinChunkSteps, group));
    for (uint32_t c = most; c >= least; --c) {
        uint64_t rounds = 0;
        for (uint32_t b0 = 0; b0 < qBlkMax; b0 += c) {
            rounds += CeilDiv(heads * std::min(c, qBlkMax - b0), kBwdChunkCores);
        }
        if (rounds < bestRounds) best = c, bestRounds = rounds;
    }
    return best;
}

}  // namespace

std::string ComputeFlashAttentionGradTiling(const FaProblem& p, const ChipSpec& chip, FaGradTilingOut& out) {
    if (GradTiling(p, chip, out, true).empty()) return "";
    return GradTiling(p, chip, out, false);
}

namespace {

std::string GradTiling(const FaProblem& p, const ChipSpec& chip, FaGradTilingOut& out, bool wideStored) {
    FlashAttentionGradTilingData t{};
    const uint32_t dPad = AlignUp(p.d, 16), dvPad = AlignUp(p.dv, 16);

    // Blocks: the largest tile whose S and dP fit a quarter of L0C each, whose sums fit half of L0C (the
    // stored-tile dK/dV pass's: all of it), whose AIV buffers fit UB and whose L1 tiles fit L1. Both dK and dV
    // summed in one dK/dV pass when they fit, else (large head dims) one pass for each, and for each as many passes
    // as its columns need.
    const uint32_t ub = UsableUb(chip), l1 = UsableL1(chip);
    const FaVecFeatures features = VecFeaturesOf(p, true);
    struct Shape {
        uint32_t s1b, w;
    };
    static const Shape kShapes[] = {{128, 64}, {64, 128}, {64, 64}, {32, 64}, {16, 64}};
    static const Shape kWide[] = {{64, 128}};
    const Shape* shapes = wideStored ? kWide : kShapes;
    const uint32_t shapeCount = wideStored ? 1 : sizeof(kShapes) / sizeof(kShapes[0]);
    const uint32_t sumsL0c = wideStored ? 2 * kL0cHalfBytes : kL0cHalfBytes;
    bool found = false;
    uint32_t kvParts = kBwdPartsBoth;
    // Tiers: both sums in one pass; one pass per gradient; one gradient's columns over several passes.
    const uint32_t tierCols[] = {dPad + dvPad, std::max(dPad, dvPad), 16};
    for (uint32_t tier = 0; tier < (wideStored ? 1u : 3u) && !found; ++tier) {
        const uint32_t parts = tier == 0 ? (uint32_t)kBwdPartsBoth : (uint32_t)kBwdPartDk;
        for (uint32_t i = 0; i < shapeCount; ++i) {
            const Shape& sh = shapes[i];
            const uint32_t m16 = AlignUp(sh.s1b, 16);
            const bool l0c = m16 * sh.w * 4 <= kL0cHalfBytes / 2 && m16 * dPad * 4 <= kL0cHalfBytes &&
                             sh.w * tierCols[tier] * 4 <= sumsL0c;
            if (l0c &&
                BwdUbSizes(CeilDiv(sh.s1b, 2), sh.w, CeilDiv(sh.w, 2), dPad, dvPad, parts, features).total <= ub &&
                GradL1Bytes(sh.s1b, sh.w, dPad, dvPad, 3) <= l1) {
                t.l1Slots = GradL1Bytes(sh.s1b, sh.w, dPad, dvPad, 4) <= l1 ? 4 : 3;
                t.s1Block = sh.s1b;
                t.s2Block = sh.w;
                kvParts = parts;
                found = true;
                break;
            }
        }
    }
    if (!found) return "no block size fits the chip's UB/L1/L0C";
    out.ubBytes = BwdUbSizes(CeilDiv(t.s1Block, 2), t.s2Block, CeilDiv(t.s2Block, 2), dPad, dvPad, kvParts,
                              features).total;

    // The forward's tiling for these blocks gives the per-sequence bands (every sparse mode), the mask bases and
    // the block map's geometry; the backward's seq table extends its rows.
    FaProblem fp = p;
    fp.forceS1Block = t.s1Block;
    fp.forceS2Block = t.s2Block;
    FaTilingOut ft;
    const std::string err = ComputeFlashAttentionTiling(fp, chip, ft);  // also validates the problem
    if (!err.empty()) return err;
    t.problem = ft.data.problem;  // the problem part is the forward's
    t.problem.partialKeys = p.partialKeys ? 1 : 0;
    const std::string lowErr = PlanLowScores(p, chip, AlignUp(t.s1Block, 16), t.problem.bwdLowScores);
    if (!lowErr.empty()) return lowErr;
    const bool varlen = t.problem.varlen != 0;
    out.mapTiling = ft.data;
    out.mapBytes = ft.mapBytes;
    out.mapSeqInfo = ft.seqInfo;
    out.l1Bytes = GradL1Bytes(t.s1Block, t.s2Block, dPad, dvPad, t.l1Slots);

    // Stored tiles (bwd_tiling.h): every s1 x s2 block of every sequence, P and dS, per query head; chunks of
    // headCount kv heads, the largest divisor of N2 whose tiles fit the limit; where one kv head's do not, chunks of
    // one kv head and qBlkCount s1 blocks (QueryChunkBlocks); neither: recompute, one chunk.
    auto align512 = [](uint64_t v) { return (v + 511) / 512 * 512; };
    const uint64_t tileBytes = align512((uint64_t)t.s1Block * t.s2Block * 2);
    std::vector<uint32_t> qBlocks(p.batch), kBlocks(p.batch);
    uint32_t qBlkMax = 1;
    for (uint32_t b = 0; b < p.batch; ++b) {
        FaSeq s;
        FaBand band;
        ReadSeqRow(&ft.seqInfo[(size_t)b * kSeqInfoFields], s, band);
        qBlocks[b] = CeilDiv((uint32_t)s.s1, t.s1Block);
        kBlocks[b] = CeilDiv((uint32_t)s.s2, t.s2Block);
        qBlkMax = std::max(qBlkMax, qBlocks[b]);
    }
    // Stored bytes of one kv head with chunks of `chunk` s1 blocks.
    auto perKvHeadOf = [&](uint32_t chunk) {
        uint64_t tiles = 0;
        for (uint32_t b = 0; b < p.batch; ++b) tiles += (uint64_t)std::min(chunk, qBlocks[b]) * kBlocks[b];
        return tiles * t.problem.group * 2 * tileBytes;
    };
    const uint64_t limit = p.bwdStoreLimit != 0 ? p.bwdStoreLimit : kBwdStoreLimitBytes;
    t.headCount = 0;
    t.qBlkCount = qBlkMax;
    if (StoredKvL1Bytes(t.s1Block, t.s2Block, dPad, dvPad, t.l1Slots) <= l1) {
        for (uint32_t hc = p.n2; hc >= 1 && t.headCount == 0; --hc) {
            if (p.n2 % hc == 0 && hc * perKvHeadOf(qBlkMax) <= limit) t.headCount = hc;
        }
        if (t.headCount == 0 && kvParts == kBwdPartsBoth) {
            t.qBlkCount = QueryChunkBlocks(perKvHeadOf, limit, qBlkMax, t.problem.group, t.problem.group * p.batch);
            t.headCount = t.qBlkCount != 0 ? 1 : 0;
        }
    }
    t.storeTiles = t.headCount != 0 ? 1 : 0;
    if (wideStored && t.storeTiles == 0) return "the tiles are not stored";  // the caller takes the standard tiling
    if (t.headCount == 0) t.headCount = p.n2, t.qBlkCount = qBlkMax;
    t.tileBytes = (uint32_t)tileBytes;
    const uint64_t perKvHead = perKvHeadOf(t.qBlkCount);
    const uint32_t chunks = p.n2 / t.headCount, qChunks = CeilDiv(qBlkMax, t.qBlkCount);

    // Tasks of both passes of one chunk of heads and query blocks, sequence-major; a task costs its tiles plus a
    // fixed overhead. dQ task slots per sequence: heads x min(qBlkCount, its s1 blocks), the same for every query
    // chunk (a slot past the sequence's blocks costs nothing and the kernel passes over it).
    std::vector<std::vector<uint64_t>> costQ(qChunks), costKv(qChunks);
    out.seqInfo.assign((size_t)p.batch * kBwdSeqFields, 0);
    out.tiles = 0;
    int64_t tileBase = 0;
    const uint32_t qHeads = t.headCount * t.problem.group;
    for (uint32_t b = 0; b < p.batch; ++b) {
        int64_t* si = &out.seqInfo[(size_t)b * kBwdSeqFields];
        const int64_t* fwd = &ft.seqInfo[(size_t)b * kSeqInfoFields];
        FaSeq s;
        FaBand band;
        ReadSeqRow(fwd, s, band);
        for (uint32_t f = 0; f < kSeqInfoFields; ++f) si[f] = fwd[f];
        si[kBwdSeqFirstKvTask] = (int64_t)costKv[0].size();
        si[kBwdSeqFirstDqTask] = (int64_t)costQ[0].size();
        si[kBwdSeqTileBase] = tileBase;
        const uint32_t slots = std::min(t.qBlkCount, qBlocks[b]);
        tileBase += (int64_t)slots * kBlocks[b];
        for (uint32_t c = 0; c < qChunks; ++c) {
            const uint32_t blk0 = c * t.qBlkCount;
            for (uint32_t n = 0; n < qHeads; ++n) {
                for (uint32_t i = 0; i < slots; ++i) {
                    const uint32_t blk = blk0 + i;
                    if (blk >= qBlocks[b]) {
                        costQ[c].push_back(0);
                        continue;
                    }
                    const int64_t r0 = (int64_t)blk * t.s1Block, r1 = std::min<int64_t>(s.s1, r0 + t.s1Block);
                    const FaStepRange st = StepsOf(band, r0, r1, s.s2, t.s2Block);
                    const uint64_t steps = st.last > st.first ? (uint64_t)(st.last - st.first) : 0;
                    out.tiles += chunks * steps;
                    costQ[c].push_back(FaTaskCost(steps));
                }
            }
            for (uint32_t n = 0; n < t.headCount; ++n) {
                for (uint32_t blk = 0; blk < kBlocks[b]; ++blk) {
                    const int64_t c0 = (int64_t)blk * t.s2Block, c1 = std::min<int64_t>(s.s2, c0 + t.s2Block);
                    const FaStepRange r = QueryBlocksOf(band, c0, c1, s.s1, t.s1Block);
                    const int64_t first = std::max<int64_t>(r.first, blk0);
                    const int64_t last = std::min<int64_t>(r.last, blk0 + t.qBlkCount);
                    const uint64_t tiles = last > first ? (uint64_t)(last - first) * t.problem.group : 0;
                    costKv[c].push_back(blk0 != 0 && blk0 >= qBlocks[b] ? 0 : FaTaskCost(tiles));
                }
            }
        }
    }
    if (costQ[0].size() > 0xFFFFFFFFull || costKv[0].size() > 0xFFFFFFFFull) return "too many tasks for one launch";

    // Workspace: D for every query row ([rows, 8] fp32), the stored tiles of a chunk, then per core S, dP (fp32, or
    // 16-bit in the high-performance mode), P, dS (16-bit) tiles, kBwdSlots slots each, and a task's sums (dS K or
    // dS^T Q: [max(s1Block, s2Block), dPad]; P^T dO: [s2Block, dvPad]), 512 B aligned.
    const uint64_t qRows = varlen ? p.t1 : (uint64_t)p.batch * p.s1;
    const uint64_t tile32 = align512((uint64_t)t.s1Block * t.s2Block * 4);
    const uint64_t tile16 = align512((uint64_t)t.s1Block * t.s2Block * 2);
    const uint64_t tileS = t.problem.bwdLowScores != 0 ? tile16 : tile32;  // S and dP
    const uint64_t partA = align512((uint64_t)std::max(t.s1Block, t.s2Block) * dPad * 4);
    const uint64_t partB = align512((uint64_t)t.s2Block * dvPad * 4);
    t.wsOffsetD = 0;
    t.wsOffsetTiles = align512(qRows * p.n1 * 8 * 4);
    t.wsOffsetChunkSums = t.wsOffsetTiles + (t.storeTiles != 0 ? t.headCount * perKvHead : 0);
    t.chunkKeys = qChunks > 1 ? (varlen ? p.t2 : (uint64_t)p.batch * p.s2) : 0;
    t.wsOffsetCore = t.wsOffsetChunkSums + align512(t.headCount * t.chunkKeys * (dPad + dvPad) * 4);
    const uint64_t n = kBwdSlots;
    t.wsOffsetS = 0;
    t.wsOffsetDp = n * tileS;
    t.wsOffsetP = 2 * n * tileS;
    t.wsOffsetDs = 2 * n * tileS + n * tile16;
    t.wsOffsetSumA = 2 * n * (tileS + tile16);
    t.wsOffsetSumB = t.wsOffsetSumA + partA;
    t.wsPerCore = t.wsOffsetSumB + partB;

    auto launch = [&](uint32_t chunk, uint32_t qChunk, FaBwdPass pass, const std::vector<uint64_t>& cost,
                      uint32_t parts, uint32_t col0 = 0, uint32_t cols = 0) {
        FlashAttentionGradTilingData l = t;
        l.headFirst = chunk * t.headCount;
        l.qBlkFirst = qChunk * t.qBlkCount;
        l.pass = pass;
        l.kvParts = parts;
        l.sumCol0 = col0;
        l.sumCols = cols;
        if (pass == kBwdPassDq) BwdDqResident(t.problem, t.s1Block, t.s2Block, l.dqChunkQ, l.dqChunkDo);
        if (l.dqChunkQ != 0) {  // one Q and dO in L1: K and V take the most slots that fit, up to kBwdMaxLag + 2
            // (t.l1Slots fit with l1Slots Q and dO: they fit with one)
            l.l1Slots = kBwdMaxLag + 2;
            while (l.l1Slots > t.l1Slots && BwdDqResidentL1Bytes(t.s1Block, t.s2Block, dPad, dvPad, l.l1Slots) > l1) {
                --l.l1Slots;
            }
        }
        l.blockDim = SplitTasksByCost(cost, chip.aicNum, l.coreTaskStart);
        l.taskTotal = (uint32_t)cost.size();
        out.launches.push_back(l);
    };
    // Per chunk of heads and of query blocks: the dQ pass (kvParts only sizes its UB alike), then one dK/dV pass
    // for both gradients, or (kvParts = dK only; never in query chunks) dV passes and dK passes of at most colsMax
    // columns each (the sums of s2Block rows in half of L0C).
    out.launches.clear();
    for (uint32_t chunk = 0; chunk < chunks; ++chunk) {
        for (uint32_t qc = 0; qc < qChunks; ++qc) {
            launch(chunk, qc, kBwdPassDq, costQ[qc], kvParts);
            if (kvParts == kBwdPartsBoth) {
                launch(chunk, qc, kBwdPassDkv, costKv[qc], kBwdPartsBoth);
            } else {
                const uint32_t colsMax = kL0cHalfBytes / (t.s2Block * 4) / 16 * 16;
                for (uint32_t part : {(uint32_t)kBwdPartDv, (uint32_t)kBwdPartDk}) {
                    const uint32_t width = part == kBwdPartDv ? p.dv : p.d;
                    for (uint32_t c0 = 0; c0 < width; c0 += colsMax) {
                        launch(chunk, qc, kBwdPassDkv, costKv[qc], part, c0, std::min(colsMax, width - c0));
                    }
                }
            }
        }
    }
    uint32_t cores = 1;
    for (const FlashAttentionGradTilingData& l : out.launches) cores = std::max(cores, l.blockDim);
    out.workspaceBytes = kLibApiWorkspaceBytes + t.wsOffsetCore + t.wsPerCore * cores;
    return "";
}

}  // namespace
}  // namespace npu_fa
