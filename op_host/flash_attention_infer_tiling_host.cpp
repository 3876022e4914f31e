#include "flash_attention_infer_tiling_host.h"

#include <algorithm>

#include "flash_attention_tiling_host.h"

namespace npu_fa {
namespace {

// L1 of the cube: the task's packed query rows, K and V ping-pong, P ping-pong; an int8 cache (parts != 0): parts
// int8 rows per packed row, int8 K and V.
uint32_t InferL1Bytes(uint32_t mBlock, uint32_t w, uint32_t dPad, uint32_t dvPad, uint32_t parts) {
    const uint32_t m16 = AlignUp(parts == 0 ? mBlock : parts * mBlock, 16), bytes = parts == 0 ? 2 : 1;
    return (m16 * dPad + 2 * w * dPad + 2 * w * dvPad + 2 * m16 * w) * bytes;
}

uint64_t Align512(uint64_t v) { return (v + 511) / 512 * 512; }

}  // namespace

std::string ComputeInferTiling(const FaInferProblem& p, const ChipSpec& chip, FaInferTilingOut& out) {
    out = FaInferTilingOut{};
    FaInferTilingData& t = out.data;
    FaProblemTiling& pt = t.problem;
    pt.layout = kBSND;  // unused: the inference kernels address q/out/k/v by the strides
    pt.dtype = p.dtype;
    pt.batch = p.batch;
    pt.n1 = p.n1;
    pt.n2 = p.n2;
    pt.group = p.n1 / p.n2;
    int64_t s1max = 0, s2max = 0;
    for (uint32_t b = 0; b < p.batch; ++b) s1max = std::max(s1max, p.qLen[b]), s2max = std::max(s2max, p.kvLen[b]);
    pt.s1 = (uint32_t)s1max;
    pt.s2 = (uint32_t)s2max;
    pt.d = p.d;
    pt.dv = p.dv;
    pt.dPad = AlignUp(p.d, 16);
    pt.dvPad = AlignUp(p.dv, 16);
    pt.varlen = 1;
    pt.sparseMode = p.sparseMode;
    pt.preTokens = p.preTokens;
    pt.nextTokens = p.nextTokens;
    pt.maskMode = p.denseMask ? 1 : 0;
    pt.maskHeads = p.maskStrideN != 0 ? 1 : 0;
    pt.maskStrideN = p.maskStrideN;
    pt.maskStrideS = p.maskStrideS;
    pt.maskColStep = p.maskColStep;
    pt.scale = p.scale;
    pt.softcap = p.softcap;
    pt.alibiMode = p.alibi ? kAlibiLinear : kAlibiNone;
    pt.alibiPerBatch = p.alibiPerBatch ? 1 : 0;
    pt.pseMode = p.pse ? kPseAdd : kPseNone;
    pt.pseStrideB = p.pseStride.b, pt.pseStrideN = p.pseStride.n, pt.pseStrideS = p.pseStride.s;
    pt.qStride = p.q, pt.kStride = p.k, pt.vStride = p.v, pt.oStride = p.out;
    t.lseStrideB = p.lseB, t.lseStrideN = p.lseN, t.lseStrideS = p.lseS;
    t.lseFlag = p.lse ? 1 : 0;
    t.pageSize = p.pageSize;
    t.maxPages = p.maxPages;

    // An int8 cache runs int8 x int8 on the cube (kernel/infer_int8.h): its tiles hold kInferInt8Parts int8 rows per
    // packed row, so at most 128 / kInferInt8Parts packed rows (D and Dv are multiples of 32, the problem module's
    // rule: int8 fractals are 32 wide, V's transposing load takes 32 x 32 squares).
    const uint32_t parts = p.kvQuant ? kInferInt8Parts : 0;
    const bool tokens = p.kvQuant && (p.keyQuantMode != 0 || p.valueQuantMode != 0);
    // Blocks: the widest key step, then the most packed rows (up to 128, the cube's best M) whose L1 tiles and
    // AIV half fit (decode figures below). On 910B2 with 128 rows wanted: D 64 and 128 take 128 keys x 128 rows, D 256 128 x 112 (UB: the
    // running and partial fp32 outputs of an AIV's 56 rows), D 512 64 x 64 (L1: K and V ping-pong 2 x 64 KB each;
    // UB: 2 x 64 KB of outputs for 32 rows).
    const uint32_t rowsWanted =
        (uint32_t)std::max<int64_t>(1, std::min<int64_t>(parts == 0 ? 128 : 128 / parts, s1max * pt.group));
    const uint32_t ub = UsableUb(chip), l1 = UsableL1(chip);
    // Prefill (more than one query token) first tries 256 keys per step: each step's fp32 P*V partial goes through
    // the workspace and back, so wider steps halve that traffic, which binds L2 at 128 on long prefills. Decode over
    // a 16-bit cache keeps at most 128 (its steps are few; the split-KV balance is tuned on them); over an int8 cache
    // it takes 256 too (each AIV's per-step loads of scores and partial output, latency-bound, halve: modeled 84.5
    // against 81.4 us at B 8, N 32:8, KV 4K, fp16). A dense mask keeps at most 128 (kernel/infer_mask.h widens a
    // mask row in one repeat of at most 128 halves).
    bool found = false;
    for (uint32_t w : {512u, 256u, 128u, 64u}) {
        if (w > 256 && parts == 0) continue;
        if (w > 128 && ((s1max <= 1 && !p.kvQuant) || p.denseMask)) continue;
        for (uint32_t m = AlignUp(rowsWanted, 16); m >= 16 && !found; m -= 16) {
            const uint32_t mBlock = std::min(m, rowsWanted);
            if (InferL1Bytes(mBlock, w, pt.dPad, pt.dvPad, parts) > l1) continue;
            const uint32_t half = CeilDiv(mBlock, 2);
            for (uint32_t c = AlignUp(half, 8); c >= 8; c -= 8) {
                const uint32_t quant = parts != 0 ? Int8UbSizes(half, c, w, p.d, pt.dvPad, parts, tokens).total : 0;
                if (InferUbSizes(half, c, w, pt.dvPad, TilingVecFeatures(pt, false)).total + quant <= ub) {
                    t.s2Block = w, t.mBlock = mBlock, t.vecRows = c;
                    found = true;
                    break;
                }
            }
        }
        if (found) break;
    }
    if (!found) return "no (rows, keys) block of the inference kernel fits L1 and UB at D=" + std::to_string(p.d);
    const uint32_t cubeRows = parts == 0 ? t.mBlock : parts * t.mBlock;  // the cube's rows of a task
    FaMatmulChunks(AlignUp(cubeRows, 16), pt.dPad, t.s2Block, t.kChunkQK, t.nChunkQK, kL0cHalfBytes, kL0HalfBytes,
                   parts != 0);
    const uint32_t probRows = parts == 0 ? t.mBlock : kInferInt8ProbParts * t.mBlock;  // P*V's
    FaMatmulChunks(AlignUp(probRows, 16), t.s2Block, pt.dvPad, t.kChunkPV, t.nChunkPV, kL0cHalfBytes, kL0HalfBytes,
                   parts != 0);

    // Split-KV (flash-decoding): when the (batch, KV head, query tile) units leave most cores idle (fewer than 0.4
    // per core, the built-in's rule on B * N2), each unit's keys split over about cores / units cores.
    uint64_t units = 0;
    int64_t maxSteps = 1;
    for (uint32_t b = 0; b < p.batch; ++b) {
        units += (uint64_t)p.n2 * InferTilesOf(p.qLen[b], pt.group, t.mBlock);
        maxSteps = std::max<int64_t>(maxSteps, (p.kvLen[b] + t.s2Block - 1) / t.s2Block);
    }
    const uint32_t cores = std::min<uint32_t>(chip.aicNum, kMaxCores);
    uint32_t splits = 1;
    if (units > 0 && units * 10 < (uint64_t)cores * 4) splits = (uint32_t)std::min<int64_t>(cores / units, maxSteps);
    if (p.forceSplits != 0) splits = p.forceSplits;
    t.splits = std::max<uint32_t>(1, splits);

    // Seq table and tasks: per batch, (KV head, query tile, split) in that order; a task costs its key steps.
    out.seqInfo.assign((size_t)std::max<uint32_t>(1, p.batch) * kSeqInfoFields, 0);
    std::vector<uint64_t> cost;
    int64_t kvStart = 0;  // a global TND mask's first column of each batch (its keys, whatever the cache)
    for (uint32_t b = 0; b < p.batch; ++b) {
        int64_t* si = &out.seqInfo[(size_t)b * kSeqInfoFields];
        si[kSeqQTok] = p.qTok[b];
        si[kSeqKvTok] = p.kvTok[b];
        si[kSeqS1] = p.qLen[b];
        si[kSeqS2] = p.kvLen[b];
        si[kSeqFirstTask] = (int64_t)cost.size();
        const FaBand band = BandOfMode(p.sparseMode, p.denseMask, p.preTokens, p.nextTokens, p.qLen[b], p.kvLen[b]);
        si[kSeqBandLo] = band.lo;
        si[kSeqBandHi] = band.hi;
        si[kSeqMaskBase] = !p.denseMask       ? 0
                           : p.maskTndGlobal ? (int64_t)(p.qTok[b] * p.maskStrideS) + kvStart
                                             : (int64_t)(b * p.maskStrideB);
        kvStart += p.kvLen[b];
        const uint32_t tiles = InferTilesOf(p.qLen[b], pt.group, t.mBlock);
        for (uint32_t unit = 0; unit < p.n2 * tiles; ++unit) {
            const int64_t row0 = (int64_t)(unit % tiles) * t.mBlock;
            const uint32_t rows = (uint32_t)std::min<int64_t>(p.qLen[b] * pt.group - row0, t.mBlock);
            for (uint32_t split = 0; split < t.splits; ++split) {
                const FaKeyRange keys =
                    InferTaskKeys(p.kvLen[b], split, t.splits, t.s2Block, band, row0, rows, pt.group);
                const uint64_t steps =
                    keys.last > keys.first ? (uint64_t)((keys.last - keys.first + t.s2Block - 1) / t.s2Block) : 0;
                out.steps += steps;
                cost.push_back(FaTaskCost(steps));
            }
        }
    }
    t.taskTotal = (uint32_t)cost.size();
    t.blockDim = SplitTasksByCost(cost, chip.aicNum, t.coreTaskStart);

    // Workspace: per core the step slots, then the split partials.
    const uint64_t sBytes = Align512((uint64_t)cubeRows * t.s2Block * 4);
    const uint64_t pBytes = Align512((uint64_t)cubeRows * t.s2Block * (parts == 0 ? 2 : 1));
    const uint64_t oBytes = Align512((uint64_t)cubeRows * pt.dvPad * 4);
    t.wsOffsetS = 0;
    t.wsOffsetP = kInferStepSlots * sBytes;
    t.wsOffsetO = t.wsOffsetP + kInferStepSlots * pBytes;
    t.wsPerCore = t.wsOffsetO + kInferStepSlots * oBytes;
    if (p.kvQuant) {  // the int8 split query rows (FaInferWorkspace::QuantQuery)
        t.wsOffsetQuery = t.wsPerCore;
        t.wsPerCore += kInferStepSlots * Align512((uint64_t)cubeRows * p.d);
        t.kvQuant = 1;
        t.quantParts = parts;
        t.probParts = kInferInt8ProbParts;
        t.keyQuantMode = p.keyQuantMode;
        t.valueQuantMode = p.valueQuantMode;
        t.quantTokens = p.quantTokens;
        t.quantOffset = p.quantOffset ? 1 : 0;
    }
    t.partRows = p.batch * p.n2 * pt.group * pt.s1;
    t.wsPartO = t.wsPerCore * t.blockDim;
    const uint64_t partRows = t.splits > 1 ? (uint64_t)t.splits * t.partRows : 0;
    t.wsPartLse = t.wsPartO + Align512(partRows * pt.dvPad * 4);
    const uint64_t user = t.wsPartLse + Align512(partRows * 32);
    out.workspaceBytes = kLibApiWorkspaceBytes + user;

    // The combine pass: rows per chunk that fit UB, every vector core.
    if (t.splits > 1) {
        for (uint32_t r = 64; r >= 8; r -= 8) {
            if (CombineUbSizes(r, t.splits, pt.dvPad).total <= ub) {
                t.combineRows = r;
                break;
            }
        }
        if (t.combineRows == 0) return "the combine pass of " + std::to_string(t.splits) + " splits does not fit UB";
        t.combineCores = std::max<uint32_t>(1, std::min<uint32_t>(chip.aivNum, t.taskTotal / t.splits));
    }
    const uint32_t aivRows = CeilDiv(t.mBlock, 2);
    out.ubBytes = InferUbSizes(aivRows, t.vecRows, t.s2Block, pt.dvPad, TilingVecFeatures(pt, false)).total +
                  (parts != 0 ? Int8UbSizes(aivRows, t.vecRows, t.s2Block, p.d, pt.dvPad, parts, tokens).total : 0);
    out.l1Bytes = InferL1Bytes(t.mBlock, t.s2Block, pt.dPad, pt.dvPad, parts);
    return "";
}

}  // namespace npu_fa
