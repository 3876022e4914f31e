// Host tiling of the forward FlashAttention kernel: from (shapes, dtype, layout, mask mode, chip) to the tiling
// struct, the per-sequence table and the workspace size. Pure C++: used by the twin bindings and, later, by the
// CANN TilingFunc.
#pragma once
#include <string>
#include <vector>

#include "chip_spec.h"
#include "tiling/fwd_tiling.h"
#include "tiling/seq_table.h"
#include "tiling/ub_budget.h"
#include "tiling/work_split.h"

namespace npu_fa {

struct FaProblem {
    FaDtype dtype = kFp16;
    FaLayout layout = kBSND;
    uint32_t batch = 1, n1 = 1, n2 = 1;
    uint32_t s1 = 1, s2 = 1;           // TND: ignored (derived from the cumulative lengths)
    uint32_t d = 64, dv = 64;
    float scale = 1.0f;
    uint32_t sparseMode = 0;            // the op's sparse_mode, 0-8 (validated by the caller)
    int64_t preTokens = 2147483647, nextTokens = 2147483647;
    std::vector<int64_t> cuSeqQ, cuSeqKv;  // TND: cumulative lengths (size batch)
    uint64_t t1 = 0, t2 = 0;            // TND: token dims of q and k/v
    std::vector<int64_t> prefix;        // sparse_mode 5/6: prefix columns per batch
    // Dense atten_mask, read in place: byte strides per (batch, query head, row) as the kernel reads them (0 =
    // broadcast); maskColStep 0 for a column-broadcast mask stored as rows of >= 128 equal bytes. maskPerBatch/
    // maskPerHead: whether the mask differs along that dimension (this decides the block-map groups). TND masks
    // are 2-D, read at positions inside each sequence, or at global token positions when maskTndGlobal.
    bool denseMask = false;
    bool maskPerBatch = false, maskPerHead = false, maskTndGlobal = false;
    // Block sizes to use instead of the budget's choice (0 = choose): the backward reuses this tiling for its
    // block map with its own blocks.
    uint32_t forceS1Block = 0, forceS2Block = 0;
    uint64_t maskStrideB = 0, maskStrideN = 0, maskStrideS = 0;
    uint32_t maskColStep = 1;
    bool sink = false;                  // per-query-head sink logits (the op's `sink`, fp32 [N1])
    float softcap = 0.0f;               // > 0: logit soft-capping (the op's `softcap`)
    // In-kernel ALiBi (the op's pse_type 2/3 with slopes in `pse`): FaAlibiMode, slopes [B, N1] or [N1], and
    // kv_start_idx - q_start_idx.
    uint32_t alibiMode = 0;
    bool alibiPerBatch = false;
    int64_t alibiDelta = 0;
    // An outer bias tensor (pse_type 0/1): FaPseMode and its element strides (0 = broadcast).
    uint32_t pseMode = 0;
    uint64_t pseStrideB = 0, pseStrideN = 0, pseStrideS = 0;
    // Dropout (op_kernel/tile/dropout.h): FaDropMode, keep_prob (< 1 when on), the generator's (seed, offset), and a user
    // mask's row pitch in bytes (kDropMask).
    uint32_t dropMode = 0;
    double keepProb = 1.0;
    uint64_t seed = 0, offset = 0;
    uint32_t dropMaskPitch = 0;
    // Generated dropout's place in a larger problem (FaDropoutParams row0, col0, headBase, heads; 0 heads = n1).
    uint32_t dropRow0 = 0, dropCol0 = 0, dropHeadBase = 0, dropHeads = 0;
    // Backward only: the call holds part of each row's keys, with the whole rows' statistics and output (the grad
    // op's partial_keys).
    bool partialKeys = false;
    // The forward writes, the backward reads attention_out's rounding error (FaProblemTiling::outResidual).
    bool outResidual = false;
    // inner_precise bit 0 (high-performance mode): the forward may take its scores out of Fixpipe in the input dtype
    // (the tiling decides: LowScoresPay), and the backward does where the forward does; forceLowScores >= 0 (twin
    // tuning) decides instead, for both.
    bool highPerformance = false;
    int32_t forceLowScores = -1;
    // The forward's lazy rescale and its threshold (FaCall::forceLazy / lazyThreshold; -1 / -inf: the tiling's).
    int32_t forceLazy = -1;
    float lazyThreshold = -__builtin_huge_valf();
    // Backward: stored tiles per chunk of heads at most (bytes; 0 = kBwdStoreLimitBytes), FaCall::bwdStoreLimit.
    uint64_t bwdStoreLimit = 0;
};

// The vector features of a problem (`band`: some tile is cut by a band), as the kernels derive them from the tiling.
inline FaVecFeatures VecFeaturesOf(const FaProblem& p, bool band) {
    FaVecFeatures f;
    f.denseMask = p.denseMask;
    f.band = band;
    f.alibi = p.alibiMode != kAlibiNone;
    f.pse = p.pseMode != kPseNone;
    f.dropout = p.dropMode != kDropNone;
    return f;
}

// The kernels' dropout parameters of a problem. keep_prob is taken at float precision, as the CANN op's Float
// attribute carries it, so that the twin and the NPU draw the same threshold.
inline FaDropoutParams DropoutParamsOf(const FaProblem& p) {
    FaDropoutParams d{};
    d.mode = p.dropMode;
    if (p.dropMode == kDropNone) return d;
    const double keep = (double)(float)p.keepProb;
    d.seedKey = FaMix64(FaMix64(p.seed) ^ p.offset);
    d.threshold = (int32_t)(keep * 65536.0 + 0.5) - 32768;
    d.keepInv = (float)(1.0 / keep);
    d.maskPitch = p.dropMaskPitch;
    d.row0 = p.dropRow0;
    d.col0 = p.dropCol0;
    d.headBase = p.dropHeadBase;
    d.heads = p.dropHeads != 0 ? p.dropHeads : p.n1;
    return d;
}

struct FaTilingOut {
    FlashAttentionTilingData data{};
    std::vector<int64_t> seqInfo;      // kSeqInfoFields per sequence (always filled; the kernel reads it for TND)
    uint64_t workspaceBytes = 0;       // GM workspace to allocate: kLibApiWorkspaceBytes (system) + the user part
    uint32_t ubBytes = 0;              // per AIV
    uint32_t l1Bytes = 0;              // per AIC
    uint64_t visibleSteps = 0;         // (task, s2 block) pairs inside the bands (before dense-mask skipping)
    uint64_t mapBytes = 0;             // dense masks: size of the block-map buffer (0 without one)
};

// Splits tasks of the given costs into contiguous ranges for at most min(aicNum, kMaxCores, tasks) cores: core c
// runs [coreTaskStart[c], coreTaskStart[c + 1]), cut where the running cost reaches its share (FaCutAfter, the
// rule the kernels apply to the block map's counts). Returns the number of cores (at least 1).
uint32_t SplitTasksByCost(const std::vector<uint64_t>& cost, uint32_t aicNum, uint32_t* coreTaskStart);

// The query-block tasks of one sequence, head-major (heads x ceil(s1 / s1Block)): appends each task's cost
// (FaTaskCost of the s2 blocks its rows see) to `cost`; returns the sum of those step counts. The forward's tasks
// and the backward's dQ tasks.
uint64_t AddQueryBlockTasks(const FaSeq& s, const FaBand& band, uint32_t heads, uint32_t s1Block, uint32_t s2Block,
                            std::vector<uint64_t>& cost);

// The band of sparse modes 0-4 for a sequence of s1 queries and s2 keys: origins as the built-in's (0 and 2
// top-left, 3 and 4 bottom-right); mode 0's pre/next only with a dense mask. The training and inference tilings.
FaBand BandOfMode(uint32_t mode, bool denseMask, int64_t preTokens, int64_t nextTokens, int64_t s1, int64_t s2);

// The band of `sparseMode` for sequence `seq` of a problem (see FaBand): origins as the built-in's (0 and 2
// top-left, 3-8 bottom-right), the prefix columns of modes 5/6, the first/last-sequence bands of modes 8/7.
FaBand BandOfSequence(const FaProblem& p, uint32_t seq, int64_t s1, int64_t s2, bool firstNonEmpty, bool lastNonEmpty);

// Fills `out`; returns an empty string on success, else what is wrong.
std::string ComputeFlashAttentionTiling(const FaProblem& p, const ChipSpec& chip, FaTilingOut& out);

}  // namespace npu_fa
