#include "flash_attention_grad_tiling_host.h"

#include <algorithm>

namespace npu_fa {
namespace {

uint32_t GradL1Bytes(uint32_t s1Block, uint32_t w, uint32_t dPad, uint32_t dvPad) {
    const uint32_t m16 = AlignUp(s1Block, 16);
    return 2 * (2 * (m16 * (dPad + dvPad) + w * (dPad + dvPad)) + 2 * m16 * w);  // Q, dO, K, V x2, P, dS; 16-bit
}

}  // namespace

std::string ComputeFlashAttentionGradTiling(const FaProblem& p, const ChipSpec& chip, bool deterministic,
                                            FaGradTilingOut& out) {
    FlashAttentionGradTilingData t{};
    t.dPad = AlignUp(p.d, 16);
    t.dvPad = AlignUp(p.dv, 16);

    // Blocks: the largest tile whose AIV buffers fit UB and whose six L1 tiles fit L1.
    const uint32_t ub = UsableUb(chip), l1 = UsableL1(chip);
    // Both dK and dV accumulators in one dK/dV pass when they fit, else (large head dims) one pass for each.
    bool found = false;
    uint32_t kvParts = kGradPartsBoth;
    for (uint32_t parts : {(uint32_t)kGradPartsBoth, (uint32_t)kGradPartDk}) {
        for (uint32_t w : {128u, 64u}) {
            for (uint32_t s1b : {128u, 64u, 32u, 16u}) {
                // (a single-gradient pass is sized by dK's accumulator: dvPad <= dPad)
                if (GradUbSizes(CeilDiv(s1b, 2), w, CeilDiv(w, 2), t.dPad, t.dvPad, p.denseMask, parts).total <= ub &&
                    GradL1Bytes(s1b, w, t.dPad, t.dvPad) <= l1) {
                    t.s1Block = s1b;
                    t.s2Block = w;
                    kvParts = parts;
                    found = true;
                    break;
                }
            }
            if (found) break;
        }
        if (found) break;
    }
    if (!found) return "no block size fits the chip's UB/L1";
    out.ubBytes = GradUbSizes(CeilDiv(t.s1Block, 2), t.s2Block, CeilDiv(t.s2Block, 2), t.dPad, t.dvPad, p.denseMask,
                              kvParts).total;

    // The forward's tiling for these blocks gives the per-sequence bands (every sparse mode), the mask bases and
    // the block map's geometry; the backward's seq table extends its rows.
    FaProblem fp = p;
    fp.forceS1Block = t.s1Block;
    fp.forceS2Block = t.s2Block;
    FaTilingOut ft;
    const std::string err = ComputeFlashAttentionTiling(fp, chip, ft);  // also validates the problem
    if (!err.empty()) return err;
    const FlashAttentionTilingData& f = ft.data;
    t.layout = f.layout;
    t.dtype = f.dtype;
    t.batch = f.batch;
    t.n1 = f.n1;
    t.n2 = f.n2;
    t.group = f.group;
    t.s1 = f.s1;  // TND: the longest sequences
    t.s2 = f.s2;
    t.d = f.d;
    t.dv = f.dv;
    t.varlen = f.varlen;
    t.sparseMode = f.sparseMode;
    t.preTokens = f.preTokens;
    t.nextTokens = f.nextTokens;
    t.scale = f.scale;
    t.qStrideB = f.qStrideB, t.qStrideN = f.qStrideN, t.qStrideS = f.qStrideS;
    t.kStrideB = f.kStrideB, t.kStrideN = f.kStrideN, t.kStrideS = f.kStrideS;
    t.vStrideB = f.vStrideB, t.vStrideN = f.vStrideN, t.vStrideS = f.vStrideS;
    t.oStrideB = f.oStrideB, t.oStrideN = f.oStrideN, t.oStrideS = f.oStrideS;
    const bool varlen = f.varlen != 0;
    out.mapTiling = ft.data;
    out.mapBytes = ft.mapBytes;
    t.maskMode = ft.data.maskMode;
    t.maskHeads = ft.data.maskHeads;
    t.maskStrideN = ft.data.maskStrideN;
    t.maskStrideS = ft.data.maskStrideS;
    t.maskColStep = ft.data.maskColStep;
    out.l1Bytes = GradL1Bytes(t.s1Block, t.s2Block, t.dPad, t.dvPad);

    // Tasks of both passes, sequence-major; a task costs its tiles plus a fixed overhead.
    std::vector<uint64_t> costQ, costKv;
    out.seqInfo.assign((size_t)p.batch * kGradSeqFields, 0);
    out.tiles = 0;
    for (uint32_t b = 0; b < p.batch; ++b) {
        int64_t* si = &out.seqInfo[(size_t)b * kGradSeqFields];
        const int64_t* fwd = &ft.seqInfo[(size_t)b * kSeqInfoFields];
        FaSeq s;
        FaBand band;
        ReadSeqRow(fwd, s, band);
        for (uint32_t f = 0; f < kSeqInfoFields; ++f) si[f] = fwd[f];  // kSeqFirstTask: the dQ tasks are the forward's
        si[kGradSeqFirstKvTask] = (int64_t)costKv.size();
        const uint32_t qBlocks = CeilDiv((uint32_t)s.s1, t.s1Block), kBlocks = CeilDiv((uint32_t)s.s2, t.s2Block);
        for (uint32_t n = 0; n < p.n1; ++n) {
            for (uint32_t blk = 0; blk < qBlocks; ++blk) {
                const int64_t r0 = (int64_t)blk * t.s1Block, r1 = std::min<int64_t>(s.s1, r0 + t.s1Block);
                const FaStepRange r = StepsOf(band, r0, r1, s.s2, t.s2Block);
                const uint64_t tiles = r.last > r.first ? (uint64_t)(r.last - r.first) : 0;
                out.tiles += tiles;
                costQ.push_back(FaTaskCost(tiles));
            }
        }
        for (uint32_t n = 0; n < p.n2; ++n) {
            for (uint32_t blk = 0; blk < kBlocks; ++blk) {
                const int64_t c0 = (int64_t)blk * t.s2Block, c1 = std::min<int64_t>(s.s2, c0 + t.s2Block);
                const FaStepRange r = QueryBlocksOf(band, c0, c1, s.s1, t.s1Block);
                const uint64_t tiles = r.last > r.first ? (uint64_t)(r.last - r.first) * t.group : 0;
                costKv.push_back(FaTaskCost(tiles));
            }
        }
    }
    if (costQ.size() > 0xFFFFFFFFull || costKv.size() > 0xFFFFFFFFull) return "too many tasks for one launch";

    // Workspace: D for every query row ([rows, 8] fp32), the fast mode's dQ accumulator ([rows, dPad] fp32), then
    // per core S, dP (fp32, two slots), P, dS (16-bit) tiles and the
    // partial products (dS K or dS^T Q: [max(s1Block, s2Block), dPad]; P^T dO: [s2Block, dvPad]), 512 B aligned.
    auto align512 = [](uint64_t v) { return (v + 511) / 512 * 512; };
    const uint64_t qRows = varlen ? p.t1 : (uint64_t)p.batch * p.s1;
    const uint64_t tile32 = align512((uint64_t)t.s1Block * t.s2Block * 4);
    const uint64_t tile16 = align512((uint64_t)t.s1Block * t.s2Block * 2);
    const uint64_t partA = align512((uint64_t)std::max(t.s1Block, t.s2Block) * t.dPad * 4);
    const uint64_t partB = align512((uint64_t)t.s2Block * t.dvPad * 4);
    t.wsOffsetD = 0;
    t.wsOffsetDqAcc = align512(qRows * p.n1 * 8 * 4);
    t.wsOffsetCore = t.wsOffsetDqAcc + (deterministic ? 0 : align512(qRows * p.n1 * t.dPad * 4));
    t.wsOffsetS = 0;                // two slots each of S and dP
    t.wsOffsetDp = 2 * tile32;
    t.wsOffsetP = 4 * tile32;
    t.wsOffsetDs = 4 * tile32 + tile16;
    t.wsOffsetPartA = 4 * tile32 + 2 * tile16;
    t.wsOffsetPartB = t.wsOffsetPartA + partA;
    t.wsPerCore = t.wsOffsetPartB + partB;

    auto launch = [&](FaGradPass pass, FaGradStage stage, uint32_t fused, const std::vector<uint64_t>& cost,
                      uint32_t parts) {
        FlashAttentionGradTilingData l = t;
        l.pass = pass;
        l.stage = stage;
        l.fusedDq = fused;
        l.kvParts = parts;
        const bool dq = pass == kGradPassDq;
        l.blocksPerHead = varlen ? 0 : CeilDiv(dq ? p.s1 : p.s2, dq ? t.s1Block : t.s2Block);
        const std::vector<uint64_t>& c = stage == kGradStageFull ? cost : std::vector<uint64_t>(cost.size(), 1);
        l.blockDim = SplitTasksByCost(c, chip.aicNum, l.coreTaskStart);
        l.taskTotal = (uint32_t)c.size();
        out.launches.push_back(l);
    };
    out.launches.clear();
    // The dK/dV pass: once for both gradients, or (kvParts = dK only) a dV pass then a dK pass; the fast schedule's
    // atomic dQ rides on the pass that computes dK.
    auto kvPasses = [&](uint32_t fused) {
        if (kvParts == kGradPartsBoth) {
            launch(kGradPassDkv, kGradStageFull, fused, costKv, kGradPartsBoth);
        } else {
            launch(kGradPassDkv, kGradStageFull, 0, costKv, kGradPartDv);
            launch(kGradPassDkv, kGradStageFull, fused, costKv, kGradPartDk);
        }
    };
    if (deterministic) {
        launch(kGradPassDq, kGradStageFull, 0, costQ, kvParts);  // (dQ passes: kvParts only sizes the UB alike)
        kvPasses(0);
    } else {
        launch(kGradPassDq, kGradStagePre, 0, costQ, kvParts);
        kvPasses(1);
        launch(kGradPassDq, kGradStagePost, 0, costQ, kvParts);
    }
    uint32_t cores = 1;
    for (const FlashAttentionGradTilingData& l : out.launches) cores = std::max(cores, l.blockDim);
    out.workspaceBytes = kLibApiWorkspaceBytes + t.wsOffsetCore + t.wsPerCore * cores;
    return "";
}

}  // namespace npu_fa
