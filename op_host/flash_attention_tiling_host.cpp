#include "flash_attention_tiling_host.h"

#include <algorithm>
#include <cmath>

namespace npu_fa {
namespace {

// L1 of the cube for a query block of s1Block rows and key sub-blocks of `sub` keys.
uint32_t L1Bytes(uint32_t s1Block, uint32_t sub, uint32_t dPad, uint32_t dvPad) {
    const uint32_t m16 = AlignUp(s1Block, 16);
    return m16 * dPad * 2          // Q
           + 2 * sub * dPad * 2    // K ping-pong
           + 2 * sub * dvPad * 2   // V ping-pong
           + 2 * m16 * sub * 2;    // P ping-pong
}

void StridesOf(const FaProblem& p, uint32_t heads, uint32_t dim, uint32_t s, uint64_t& sb, uint64_t& sn, uint64_t& ss) {
    switch (p.layout) {
        case kBSH: case kBSND: sb = (uint64_t)s * heads * dim; sn = dim; ss = (uint64_t)heads * dim; break;
        case kSBH: sb = (uint64_t)heads * dim; sn = dim; ss = (uint64_t)p.batch * heads * dim; break;
        case kBNSD: sb = (uint64_t)heads * s * dim; sn = (uint64_t)s * dim; ss = dim; break;
        case kTND: sb = 0; sn = dim; ss = (uint64_t)heads * dim; break;
    }
}

int64_t Clamp(int64_t v) { return FaClamp(v, -kUnbounded, kUnbounded); }

// Where a (s1Block, step) shape keeps its L0C tiles (FlashAttentionTilingData::l0cSlot0 / l0cSlotBytes / l0cOut) and
// the S tile width that fits; false when the shape does not fit L0C. Steps of one sub-block write P*V like an S
// tile; longer ones accumulate it over the step, in the next S slot when its [m16, dv] fp32 tile fits half of L0C,
// else in its own tile with one S slot of a whole sub-block in the rest (1024-B aligned: the Mmad page's L0C
// rule). Measured at 80 rows, dv = 256: one 40 KB slot of 128-column S tiles 50.8 %, two 24 KB slots of 64
// columns 41.7 % (twice the L1 -> L0 loads bind MTE1); 96-column tiles at dv = 160 were slower than 64 rows.
// True when v is a normal fp16 value exactly (at most 11 significant bits).
bool ExactInHalf(float v) {
    const float a = std::fabs(v);
    if (!(a >= 6.103515625e-05f && a <= 65504.0f)) return false;
    int e = 0;
    const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    return std::ldexp(m, 11) == std::floor(std::ldexp(m, 11));
}

// The high-performance mode's fp16 softmax chain (FlashAttentionTilingData::halfSoftmax, kernel/fwd_vector.h): only
// without per-score features, with tiles a multiple of 128 wide, and with a scale fp16 holds exactly: a rounded
// scale tilts every probability by exp((s - max) * its rounding error), the same sign along a row, and in a float64
// model of the chain that took the error to 3.2x plain torch's (fp16, D = 128, q 3x larger than k, 4K keys; 1.3x
// with an exact scale, e.g. D = 64 or 256).
bool HalfSoftmaxChain(const FaProblem& p, uint32_t s2Block) {
    return p.highPerformance && p.dtype == kFp16 && p.softcap <= 0.0f && p.alibiMode == kAlibiNone &&
           p.pseMode == kPseNone && p.dropMode == kDropNone && s2Block % 128 == 0 && ExactInHalf(p.scale);
}

// How the fp16 chain sums its rows. Beginning them in half (sums of 16 by ReduceDataBlock's tree, then fp32) halves
// the row-sum work, which in the chain is a quarter of the vector time per chunk; its error stays plain torch's
// (300 random fp16 problems, D 64-256, 1.1K-9K keys, sharp and sorted rows: worst ratio to torch's error 1.897
// both ways, mean 1.006 -> 1.009). It pays where the vector cores bind: modeled (910B2, fp16, scale 2^-3, S = 8K,
// all cores) N = 8 61.8 -> 65.3 %, N = 24 63.5 -> 66.9 %. At dv <= 64 Fixpipe binds instead and the sooner AIV
// transfers take L2 share from it (D = 64, N = 24: 40.3 -> 38.0 %), so the row sums stay fp32 there.
uint32_t HalfChainSums(uint32_t dvPad) { return dvPad > 64 ? kHalfChainHalfSums : kHalfChainFp32Sums; }

// The high-performance mode's scores in the input dtype halve the bytes S moves through Fixpipe, L2 and the AIVs'
// MTE2. With the fp16 chain the vector work per score drops too; without it each chunk adds a Cast to the fp32
// softmax, which pays only where the vector cores have slack. Modeled (910B2, fp16, B=1 N=24 S=8K, 4 sampled
// cores), fp32 scores -> fp16 scores with the Cast: D=64 33.3 -> 28.8 %, 128 54.2 -> 49.7 %, 160 48.3 -> 48.4 %,
// 192 54.3 -> 57.2 %, 256 58.1 -> 61.7 %. bf16 keeps fp32 scores (no bf16 vector arithmetic: always the Cast; the
// built-in does not distinguish precision modes for bf16 either).
bool LowScoresPay(const FaProblem& p, uint32_t dPad, uint32_t s2Block) {
    if (!p.highPerformance || p.dtype != kFp16) return false;
    return HalfSoftmaxChain(p, s2Block) || dPad >= 192;
}

struct L0cPlan {
    uint32_t slot0, slotBytes, out;
    uint32_t kChunkQK, nChunkQK, kChunkPV, nChunkPV;  // the matmul chunks that fit those tiles
};
bool PlanL0c(uint32_t m16, uint32_t w, uint32_t sub, uint32_t dPad, uint32_t dvPad, L0cPlan& plan) {
    const uint32_t oBytes = m16 * dvPad * 4;
    uint32_t sBytes = kL0cHalfBytes;
    if (w <= sub || oBytes <= kL0cHalfBytes) {
        plan = L0cPlan{0, kL0cHalfBytes, kFaL0cRing, 0, 0, 0, 0};
    } else {
        const uint32_t o = AlignUp(oBytes, 1024);
        if (o + m16 * sub * 4 > 2 * kL0cHalfBytes) return false;  // S tiles as wide as a sub-block (see above)
        sBytes = (2 * kL0cHalfBytes - o) / 1024 * 1024;
        plan = L0cPlan{o, 0, 0, 0, 0, 0, 0};
    }
    FaMatmulChunks(m16, dPad, sub, plan.kChunkQK, plan.nChunkQK, sBytes);
    FaMatmulChunks(m16, sub, dvPad, plan.kChunkPV, plan.nChunkPV,
                   plan.out == kFaL0cRing ? kL0cHalfBytes : 2 * kL0cHalfBytes);
    return true;
}

// Lazy rescale (FlashAttentionTilingData::lazyRescale): the [m16, dvPad] fp32 O tile at the start of L0C for the
// whole task, the S tiles in `sSlots` (1 or 2) slots in the rest; false when O and one S tile of `sub` keys (of
// 64 keys with two slots) do not fit.
bool PlanL0cLazy(uint32_t m16, uint32_t sub, uint32_t dPad, uint32_t dvPad, uint32_t sSlots, L0cPlan& plan) {
    const uint32_t o = AlignUp(m16 * dvPad * 4, 1024), rest = 2 * kL0cHalfBytes - o;
    if (o > 2 * kL0cHalfBytes || (sSlots == 1 ? rest < m16 * sub * 4 : rest / 2 < m16 * 64 * 4)) return false;
    const uint32_t sBytes = (sSlots == 1 ? rest : rest / 2) / 1024 * 1024;
    plan = L0cPlan{o, sSlots == 1 ? 0 : sBytes, 0, 0, 0, 0, 0};
    FaMatmulChunks(m16, dPad, sub, plan.kChunkQK, plan.nChunkQK, sBytes);
    FaMatmulChunks(m16, sub, dvPad, plan.kChunkPV, plan.nChunkPV, o);
    return plan.nChunkPV >= dvPad;
}

// A threshold of 8 keeps P <= e^8 (about 2981) well in range of fp16 and bf16, and the fp16 chain's half sums of
// 16 of them (kHalfChainHalfSums) below 47 700 (a test override past ln(65504 / 16) = 8.3 may overflow them).
constexpr float kLazyThreshold = 8.0f;

// S slots beside the resident O where the lazy rescale pays (0: off), modeled (910B2, B = 1, N = 8, bf16, 2 sampled
// cores, no flush past a task's first step; docs/performance.md "What is left"): where P*V has its own tile anyway
// (dv = 256: 80-row tasks) the plan stays, one S slot (S = 8K 56.1 -> 59.5 %, causal 55.8 -> 57.4, 2K 44.3 -> 46.6);
// at 64 < dv <= 128 O takes half of L0C and the S tiles shrink to 64 columns in two slots (Q reloaded per tile:
// MTE1 45 -> 68 % busy), which pays on tasks of 8 or more steps that no band cuts (S = 4K 48.2 -> 49.6 %, 8K
// 51.6 -> 54.8, 32K 54.3 -> 59.1; S = 2K 35.8 -> 35.4, causal 8K 50.3 -> 49.1, D = 64 31.8 -> 30.4). With the fp16
// softmax chain (fp16, inner_precise 1, scale 2^-3) the vector cores have less to hide, and the 64-column tiles pay
// from 16 steps (S = 4K 54.7 -> 54.1 %, 8K 59.7 -> 60.2, 32K N = 1 62.2 -> 64.0; D = 256 8K 59.1 -> 61.4).
uint32_t LazySlotsThatPay(const FaProblem& p, const FlashAttentionTilingData& t, const L0cPlan& plan) {
    if (p.forceLazy >= 0) return (uint32_t)p.forceLazy;
    if (plan.out != kFaL0cRing) return 1;
    const uint32_t dvPad = t.problem.dvPad;
    if (dvPad <= 64 || dvPad > 128 || t.bandTiles != 0 || p.denseMask) return 0;
    return CeilDiv(t.problem.s2, t.s2Block) >= (t.halfSoftmax != 0 ? 16u : 8u) ? 2 : 0;
}

// Modeled cube-side cycles per score of a (s1Block, step) shape: Fixpipe moves the fp32 score and, once per step,
// the fp32 partial output (4 + 4 dv / w bytes at 40.6 B/cycle, plus about 200 cycles per Fixpipe: one per S tile of
// m16 x nChunkQK scores, and per step one per P*V column chunk of nChunkPV); GM -> L1 moves K and V once per query
// block and P (2 (d + dv) / s1Block + 2 bytes at 78.4 B/cycle). Rates and latency: the cost model's
// (docs/cost_model.md).
double StepCostPerScore(uint32_t s1Block, uint32_t w, uint32_t nChunkQK, uint32_t nChunkPV, uint32_t dPad,
                        uint32_t dvPad) {
    const double m16 = AlignUp(s1Block, 16);
    const double outFixpipes = CeilDiv(dvPad, nChunkPV);
    const double fix = (4.0 + 4.0 * dvPad / w) / 40.6 + 200.0 / (m16 * nChunkQK) + 200.0 * outFixpipes / (m16 * w);
    const double mte2 = (2.0 * (dPad + dvPad) / s1Block + 2.0) / 78.4;
    return fix > mte2 ? fix : mte2;
}

// The largest vector chunk (rows per pass, a multiple of 8 up to the AIV's half of the query block) whose buffers fit
// UB; false when not even 8 rows fit.
bool VecRowsThatFit(uint32_t s1Block, uint32_t w, uint32_t dvPad, const FaVecFeatures& f, uint32_t ub,
                    uint32_t& vecRows) {
    const uint32_t rows = CeilDiv(s1Block, 2);
    for (uint32_t c = AlignUp(rows, 8); c >= 8; c -= 8) {
        if (FwdUbSizes(rows, c, w, dvPad, f).total <= ub) {
            vecRows = c;
            return true;
        }
    }
    return false;
}

// The largest s1Block * s2Block whose block-map pre-pass fits `ub` bytes (a multiple of 1024: s1 16, s2 64).
uint32_t MaxMapTile(uint32_t ub) {
    uint32_t tile = 1024;
    while (MapUbSizes(1, tile + 1024).total <= ub) tile += 1024;
    return tile;
}

}  // namespace

uint32_t SplitTasksByCost(const std::vector<uint64_t>& cost, uint32_t aicNum, uint32_t* coreTaskStart) {
    const uint64_t tasks = cost.size();
    const uint32_t cores =
        (uint32_t)std::max<uint64_t>(1, std::min<uint64_t>({(uint64_t)aicNum, (uint64_t)kMaxCores, tasks}));
    uint64_t total = 0;
    for (uint64_t c : cost) total += c;
    uint64_t acc = 0;
    uint32_t core = 1;
    coreTaskStart[0] = 0;
    for (uint64_t i = 0; i < tasks && core < cores; ++i) {
        acc += cost[i];
        while (core < cores && FaCutAfter(acc, total, core, cores)) coreTaskStart[core++] = (uint32_t)(i + 1);
    }
    while (core <= cores) coreTaskStart[core++] = (uint32_t)tasks;
    return cores;
}

FaBand BandOfMode(uint32_t mode, bool denseMask, int64_t preTokens, int64_t nextTokens, int64_t s1, int64_t s2) {
    FaBand b{-kUnbounded, kUnbounded, 0};
    const int64_t delta = s2 - s1, pre = Clamp(preTokens), next = Clamp(nextTokens);
    switch (mode) {
        case 0:  // pre/next only apply together with a dense mask; top-left origin
            if (denseMask) {
                b.lo = -pre;
                b.hi = next;
            }
            break;
        case 2: b.hi = 0; break;
        case 3: b.hi = delta; break;
        case 4: b.lo = delta - pre; b.hi = delta + next; break;
        default: break;  // 1: the dense mask alone
    }
    return b;
}

FaBand BandOfSequence(const FaProblem& p, uint32_t seq, int64_t s1, int64_t s2, bool firstNonEmpty, bool lastNonEmpty) {
    FaBand b{-kUnbounded, kUnbounded, 0};
    const int64_t delta = s2 - s1, pre = Clamp(p.preTokens), next = Clamp(p.nextTokens);
    switch (p.sparseMode) {
        case 5: case 6:
            b.hi = delta;
            b.prefix = seq < p.prefix.size() ? p.prefix[seq] : 0;
            break;
        case 7:  // right-down causal per sequence; the last one is a right-down band
            if (lastNonEmpty) {
                b.lo = delta - pre;
                b.hi = delta + next;
            } else {
                b.hi = delta;
            }
            break;
        case 8:  // left-up causal per sequence; the first one is a right-down band
            if (firstNonEmpty) {
                b.lo = delta - pre;
                b.hi = delta + next;
            } else {
                b.hi = 0;
            }
            break;
        default: return BandOfMode(p.sparseMode, p.denseMask, p.preTokens, p.nextTokens, s1, s2);
    }
    return b;
}

uint64_t AddQueryBlockTasks(const FaSeq& s, const FaBand& band, uint32_t heads, uint32_t s1Block, uint32_t s2Block,
                            std::vector<uint64_t>& cost) {
    const uint32_t blocks = CeilDiv((uint32_t)s.s1, s1Block);
    uint64_t total = 0;
    for (uint32_t n = 0; n < heads; ++n) {
        for (uint32_t blk = 0; blk < blocks; ++blk) {
            const int64_t r0 = (int64_t)blk * s1Block, r1 = std::min<int64_t>(s.s1, r0 + s1Block);
            const FaStepRange st = StepsOf(band, r0, r1, s.s2, s2Block);
            const uint64_t steps = st.last > st.first ? (uint64_t)(st.last - st.first) : 0;
            total += steps;
            cost.push_back(FaTaskCost(steps));
        }
    }
    return total;
}

std::string ComputeFlashAttentionTiling(const FaProblem& p, const ChipSpec& chip, FaTilingOut& out) {
    FlashAttentionTilingData& t = out.data;
    t = FlashAttentionTilingData{};
    FaProblemTiling& pt = t.problem;  // the part every kernel's tiling shares
    if (p.batch == 0 || p.n1 == 0 || p.n2 == 0 || p.n1 % p.n2 != 0) return "n1 must be a positive multiple of n2";
    if (p.d < 1 || p.d > 512 || p.dv < 1 || p.dv > p.d) return "need 1 <= dv <= d <= 512";
    if (p.sparseMode > 8) return "sparse mode must be in [0, 8]";
    if (!(p.softcap >= 0.0f && p.softcap <= 3.4028234663852886e38f)) return "softcap must be finite and >= 0 (0: off)";
    if (p.alibiMode != kAlibiNone && p.alibiMode != kAlibiLinear && p.alibiMode != kAlibiSqrt) return "alibi mode must be 0, 2 or 3";
    if (p.pseMode > kPseScaled) return "pse mode must be 0, 1 or 2";
    if (p.pseMode != kPseNone && (p.alibiMode != kAlibiNone || p.layout == kTND)) return "an outer pse needs no ALiBi and a non-TND layout";
    if ((p.sparseMode == 5 || p.sparseMode == 6) && p.prefix.size() != p.batch) return "prefix needs one entry per batch";
    if (p.dropMode > kDropMask) return "dropout mode must be 0, 1 or 2";
    if (p.dropMode != kDropNone && !(p.keepProb > 0.0 && p.keepProb < 1.0)) return "dropout needs 0 < keep_prob < 1";
    if (p.dropMode == kDropMask && p.dropMaskPitch == 0) return "a dropout mask needs its row pitch";
    const bool varlen = p.layout == kTND;

    // Per-sequence geometry.
    std::vector<FaSeq> seqs(p.batch);
    uint32_t s1max = 0, s2max = 0;
    for (uint32_t b = 0; b < p.batch; ++b) {
        FaSeq& s = seqs[b];
        if (varlen) {
            if (p.cuSeqQ.size() != p.batch || p.cuSeqKv.size() != p.batch) return "cumulative lengths must have batch entries";
            int64_t q0 = b ? p.cuSeqQ[b - 1] : 0, k0 = b ? p.cuSeqKv[b - 1] : 0;
            s.qTok = q0;
            s.kvTok = k0;
            s.s1 = std::max<int64_t>(0, p.cuSeqQ[b] - q0);
            s.s2 = std::max<int64_t>(0, p.cuSeqKv[b] - k0);
            if (s.s1 > 0 && (p.cuSeqQ[b] > (int64_t)p.t1 || p.cuSeqKv[b] > (int64_t)p.t2)) return "cumulative lengths exceed the token dims";
        } else {
            s = FaSeq{0, 0, p.s1, p.s2};
        }
        s1max = std::max<uint32_t>(s1max, (uint32_t)s.s1);
        s2max = std::max<uint32_t>(s2max, (uint32_t)s.s2);
    }

    pt.layout = p.layout;
    pt.dtype = p.dtype;
    pt.batch = p.batch;
    pt.n1 = p.n1;
    pt.n2 = p.n2;
    pt.group = p.n1 / p.n2;
    pt.s1 = varlen ? s1max : p.s1;
    pt.s2 = varlen ? s2max : p.s2;
    pt.d = p.d;
    pt.dv = p.dv;
    pt.varlen = varlen ? 1 : 0;
    pt.sparseMode = p.sparseMode;
    pt.preTokens = p.preTokens;
    pt.nextTokens = p.nextTokens;
    pt.scale = p.scale;
    pt.sinkMode = p.sink ? 1 : 0;
    pt.softcap = p.softcap;
    pt.alibiMode = p.alibiMode;
    pt.alibiPerBatch = p.alibiPerBatch ? 1 : 0;
    pt.alibiDelta = p.alibiDelta;
    pt.pseMode = p.pseMode;
    pt.outResidual = p.outResidual ? 1 : 0;
    pt.pseStrideB = p.pseStrideB, pt.pseStrideN = p.pseStrideN, pt.pseStrideS = p.pseStrideS;
    pt.drop = DropoutParamsOf(p);
    StridesOf(p, p.n1, p.d, p.s1, pt.qStride.b, pt.qStride.n, pt.qStride.s);
    StridesOf(p, p.n2, p.d, p.s2, pt.kStride.b, pt.kStride.n, pt.kStride.s);
    StridesOf(p, p.n2, p.dv, p.s2, pt.vStride.b, pt.vStride.n, pt.vStride.s);
    StridesOf(p, p.n1, p.dv, p.s1, pt.oStride.b, pt.oStride.n, pt.oStride.s);

    // Block sizes: the largest query block (cube efficiency) whose AIV half fits UB and whose tiles fit L1.
    pt.dPad = AlignUp(p.d, 16);
    pt.dvPad = AlignUp(p.dv, 16);
    const uint32_t ub = UsableUb(chip), l1 = UsableL1(chip);
    // Modes 7/8 give the last / first sequence with queries its own band (the built-in looks at Sq only).
    int64_t firstNonEmpty = -1, lastNonEmpty = -1;
    for (uint32_t b = 0; b < p.batch; ++b) {
        if (seqs[b].s1 > 0) {
            if (firstNonEmpty < 0) firstNonEmpty = b;
            lastNonEmpty = b;
        }
    }
    // Each sequence's band, and whether any tile is cut by one (else the vector cores need no band pattern).
    std::vector<FaBand> bands(p.batch);
    for (uint32_t b = 0; b < p.batch; ++b) {
        bands[b] = BandOfSequence(p, b, seqs[b].s1, seqs[b].s2, (int64_t)b == firstNonEmpty, (int64_t)b == lastNonEmpty);
        if (seqs[b].s1 > 0 && seqs[b].s2 > 0 && !BlockFullyVisible(bands[b], 0, seqs[b].s1, 0, seqs[b].s2)) t.bandTiles = 1;
    }
    const FaVecFeatures features = VecFeaturesOf(p, t.bandTiles != 0);

    // Block shape: among the (query rows, step keys) that fit, the one with the least Fixpipe / GM->L1 time per
    // score (StepCostPerScore). 80 rows is for dv = 256, whose [128, 256] fp32 P*V tile does not fit beside S
    // tiles but an [80, 256] one does (PlanL0c). Dense masks keep 128-key tiles so the block map skips at that grain.
    bool found = false;
    double best = 0;
    L0cPlan plan{};
    for (uint32_t s1b : {128u, 80u, 64u, 32u, 16u}) {
        for (uint32_t w : {512u, 256u, 128u, 64u}) {  // 1024-key steps model slower (fewer steps to overlap)
            if (w > 128 && p.denseMask) continue;
            const uint32_t sub = w < 128 ? w : 128;
            L0cPlan l0c{};
            if (!PlanL0c(AlignUp(s1b, 16), w, sub, pt.dPad, pt.dvPad, l0c)) continue;
            uint32_t rows = 0;
            if (!VecRowsThatFit(s1b, w, pt.dvPad, features, ub, rows)) continue;
            const double cost = StepCostPerScore(s1b, w, l0c.nChunkQK, l0c.nChunkPV, pt.dPad, pt.dvPad);
            if (found && cost >= best) continue;
            for (uint32_t g : {2u, 1u}) {  // two sub-blocks per DMA halve the loads' fixed latency
                if ((g == 1 || w >= 2 * sub) && L1Bytes(s1b, g * sub, pt.dPad, pt.dvPad) <= l1) {
                    t.s1Block = s1b;
                    t.s2Block = w;
                    t.kvSub = sub;
                    t.kvGroup = g;
                    t.vecRows = rows;
                    plan = l0c;
                    best = cost;
                    found = true;
                    break;
                }
            }
        }
    }
    if (!found) return "no block size fits the chip's UB/L1";
    if (p.forceS1Block != 0 || p.forceS2Block != 0) {
        if (p.forceS1Block % 16 != 0 || p.forceS2Block % 64 != 0 || p.forceS1Block == 0 || p.forceS2Block == 0) {
            return "forced block sizes must be positive multiples of 16 (s1) and 64 (s2)";
        }
        t.s1Block = p.forceS1Block;
        t.s2Block = p.forceS2Block;
        t.kvSub = t.s2Block % 128 == 0 ? 128 : t.s2Block;
        t.kvGroup = 1;
        if (!VecRowsThatFit(t.s1Block, t.s2Block, pt.dvPad, features, ub, t.vecRows)) {
            t.vecRows = 8;  // the twin refuses
        }
        if (!PlanL0c(AlignUp(t.s1Block, 16), t.s2Block, t.kvSub, pt.dPad, pt.dvPad, plan)) return "forced blocks do not fit L0C";
        // The block-map pre-pass holds a whole s1Block x s2Block mask tile in UB three times (u8, half, fp32).
        const uint32_t mapUb = p.denseMask ? MapUbSizes(t.s1Block, t.s2Block).total : 0;
        if (mapUb > ub) {
            return "s1_block " + std::to_string(t.s1Block) + " x s2_block " + std::to_string(t.s2Block) +
                   " needs " + std::to_string(mapUb) + " bytes of UB per vector core in the block-map pre-pass of a "
                   "dense atten_mask (about 7 * s1_block * s2_block + 20 KB), more than the " + std::to_string(ub) +
                   " bytes usable on " + chip.name + "; s1_block * s2_block may be at most " +
                   std::to_string(MaxMapTile(ub));
        }
    }
    t.lowScores = p.forceLowScores >= 0 ? (uint32_t)p.forceLowScores : LowScoresPay(p, pt.dPad, t.s2Block) ? 1 : 0;
    t.halfSoftmax = t.lowScores != 0 && HalfSoftmaxChain(p, t.s2Block) ? HalfChainSums(pt.dvPad) : kHalfChainOff;
    L0cPlan lazyPlan{};
    const uint32_t lazySlots = LazySlotsThatPay(p, t, plan);
    if (lazySlots != 0 && PlanL0cLazy(AlignUp(t.s1Block, 16), t.kvSub, pt.dPad, pt.dvPad, lazySlots, lazyPlan)) {
        plan = lazyPlan;
        t.lazyRescale = 1;
        t.lazyThreshold = p.lazyThreshold > -__builtin_huge_valf() ? p.lazyThreshold : kLazyThreshold;
    }
    t.l0cSlot0 = plan.slot0;
    t.l0cSlotBytes = plan.slotBytes;
    t.l0cOut = plan.out;
    t.kChunkQK = plan.kChunkQK;
    t.nChunkQK = plan.nChunkQK;
    t.kChunkPV = plan.kChunkPV;
    t.nChunkPV = plan.nChunkPV;
    if (t.kvSub < t.s2Block && t.nChunkPV < pt.dvPad) return "P*V of a query block does not fit its L0C tile";
    // The output residual takes no part in the block choice: it waits beside the output rows where UB allows that
    // at these blocks, else in the partial-output buffer (a short wait at each task's end, cheaper than smaller
    // blocks: D = 512 would halve its query block).
    FaVecFeatures used = features;
    used.lazy = t.lazyRescale != 0;
    if (FwdUbSizes(CeilDiv(t.s1Block, 2), t.vecRows, t.s2Block, pt.dvPad, used).total > ub) {
        t.lazyRescale = 0;  // its buffers do not fit beside the chosen chunk: the plain path and its L0C plan
        used.lazy = false;
        PlanL0c(AlignUp(t.s1Block, 16), t.s2Block, t.kvSub, pt.dPad, pt.dvPad, plan);
        t.l0cSlot0 = plan.slot0, t.l0cSlotBytes = plan.slotBytes, t.l0cOut = plan.out;
        t.kChunkQK = plan.kChunkQK, t.nChunkQK = plan.nChunkQK, t.kChunkPV = plan.kChunkPV, t.nChunkPV = plan.nChunkPV;
    }
    FaVecFeatures withResidual = used;
    withResidual.residual = true;
    t.residualInProbs = p.outResidual &&
                        FwdUbSizes(CeilDiv(t.s1Block, 2), t.vecRows, t.s2Block, pt.dvPad, withResidual).total <= ub;
    out.ubBytes = FwdUbSizes(CeilDiv(t.s1Block, 2), t.vecRows, t.s2Block, pt.dvPad,
                             t.residualInProbs != 0 ? withResidual : used).total;
    out.l1Bytes = L1Bytes(t.s1Block, t.kvGroup * t.kvSub, pt.dPad, pt.dvPad);

    // Dense-mask block map: one group per batch when the mask (or the prefix) differs per batch, one per sequence
    // for TND (their lengths differ), else one; per group and head (when the mask differs per head) a row of
    // s2-block tiles for each s1 block.
    const bool perBatchGroups = varlen || p.maskPerBatch || p.sparseMode == 5;
    const uint32_t mapGroups = p.denseMask ? (perBatchGroups ? p.batch : 1) : 0;
    const uint32_t mapHeads = p.maskPerHead ? p.n1 : 1;
    std::vector<int64_t> mapRow0(p.batch, 0), mapEntry0(p.batch, 0);
    uint64_t mapRows = 0, mapEntries = 0;
    for (uint32_t g = 0; g < mapGroups; ++g) {
        mapRow0[g] = (int64_t)mapRows;
        mapEntry0[g] = (int64_t)mapEntries;
        const uint64_t rows = CeilDiv((uint32_t)seqs[g].s1, t.s1Block), cols = CeilDiv((uint32_t)seqs[g].s2, t.s2Block);
        mapRows += mapHeads * rows;
        mapEntries += mapHeads * rows * cols;
    }
    if (mapRows > 0xFFFFFFFFull) return "too many block-map rows";
    pt.maskMode = p.denseMask ? 1 : 0;
    pt.maskHeads = p.maskPerHead ? 1 : 0;
    pt.maskStrideN = p.maskStrideN;
    pt.maskStrideS = p.maskStrideS;
    pt.maskColStep = p.maskColStep;
    t.mapGroups = mapGroups;
    t.mapRows = (uint32_t)mapRows;
    t.mapCores = (uint32_t)std::min<uint64_t>(chip.aivNum, mapRows);
    t.mapEntries = mapEntries;
    t.mapCountsOffset = (mapEntries + 31) / 32 * 32;
    out.mapBytes = p.denseMask ? t.mapCountsOffset + 4 * mapRows : 0;

    // Tasks = (sequence, head, query block), sequence-major; each costs its visible steps plus a fixed overhead.
    // With a dense mask the kernels balance by the block map's visible-tile counts instead (known on the device).
    std::vector<uint64_t> cost;
    out.seqInfo.assign((size_t)p.batch * kSeqInfoFields, 0);
    uint64_t task = 0;
    out.visibleSteps = 0;
    for (uint32_t b = 0; b < p.batch; ++b) {
        const FaSeq& s = seqs[b];
        const FaBand& band = bands[b];
        const uint32_t group = perBatchGroups ? b : 0;
        int64_t* si = &out.seqInfo[(size_t)b * kSeqInfoFields];
        si[kSeqQTok] = s.qTok;
        si[kSeqKvTok] = s.kvTok;
        si[kSeqS1] = s.s1;
        si[kSeqS2] = s.s2;
        si[kSeqFirstTask] = (int64_t)task;
        si[kSeqBandLo] = band.lo;
        si[kSeqBandHi] = band.hi;
        si[kSeqPrefix] = band.prefix;
        si[kSeqMapRow0] = p.denseMask ? mapRow0[group] : 0;
        si[kSeqMapEntry0] = p.denseMask ? mapEntry0[group] : 0;
        si[kSeqMaskBase] = !p.denseMask ? 0
                           : varlen ? (p.maskTndGlobal ? (int64_t)(s.qTok * p.maskStrideS + s.kvTok) : 0)
                                    : (int64_t)(b * p.maskStrideB);
        out.visibleSteps += AddQueryBlockTasks(s, band, p.n1, t.s1Block, t.s2Block, cost);
        task = cost.size();
    }
    if (task > 0xFFFFFFFFull) return "too many tasks for one launch";
    t.taskTotal = (uint32_t)task;

    t.blockDim = SplitTasksByCost(cost, chip.aicNum, t.coreTaskStart);
    const uint32_t cores = t.blockDim;

    // Workspace: per core, kFwdStepSlots slots of S (fp32), P (half) and O (fp32; twice as many with lazy rescale:
    // the flushed and the final O), 512 B aligned; with lazy rescale the flush words after them.
    auto align512 = [](uint64_t v) { return (v + 511) / 512 * 512; };
    const uint64_t sBytes = align512((uint64_t)t.s1Block * t.s2Block * 4);
    const uint64_t pBytes = align512((uint64_t)t.s1Block * t.s2Block * 2);
    const uint64_t oBytes = align512((uint64_t)t.s1Block * pt.dvPad * 4);
    const uint64_t oSlots = (t.lazyRescale != 0 ? 2 : 1) * kFwdStepSlots;
    t.wsOffsetS = 0;
    t.wsOffsetP = kFwdStepSlots * sBytes;
    t.wsOffsetO = kFwdStepSlots * (sBytes + pBytes);
    t.wsOffsetFlush = t.wsOffsetO + oSlots * oBytes;
    t.wsPerCore = t.wsOffsetFlush + (t.lazyRescale != 0 ? align512(kFwdFlushBytes) : 0);
    out.workspaceBytes = kLibApiWorkspaceBytes + t.wsPerCore * cores;  // system part first, then the user part
    return "";
}

}  // namespace npu_fa
