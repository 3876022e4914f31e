// Host tiling of the forward FlashAttention kernel: from (shapes, dtype, layout, mask mode, chip) to the tiling
// struct, the per-sequence table and the workspace size. Pure C++: used by the twin bindings and, later, by the
// CANN TilingFunc.
#pragma once
#include <string>
#include <vector>

#include "chip_spec.h"
#include "flash_attention_tiling.h"

namespace npu_fa {

struct FaProblem {
    FaDtype dtype = kFp16;
    FaLayout layout = kBSND;
    uint32_t batch = 1, n1 = 1, n2 = 1;
    uint32_t s1 = 1, s2 = 1;           // TND: ignored (derived from the cumulative lengths)
    uint32_t d = 64, dv = 64;
    float scale = 1.0f;
    uint32_t sparseMode = 0;            // 0 none, 2, 3, 4
    int64_t preTokens = 2147483647, nextTokens = 2147483647;
    std::vector<int64_t> cuSeqQ, cuSeqKv;  // TND: cumulative lengths (size batch)
    uint64_t t1 = 0, t2 = 0;            // TND: token dims of q and k/v
};

struct FaTilingOut {
    FlashAttentionTilingData data{};
    std::vector<int64_t> seqInfo;      // kSeqInfoFields per sequence (always filled; the kernel reads it for TND)
    uint64_t workspaceBytes = 0;       // GM workspace to allocate: kLibApiWorkspaceBytes (system) + the user part
    uint32_t ubBytes = 0;              // per AIV
    uint32_t l1Bytes = 0;              // per AIC
    uint64_t visibleSteps = 0;         // (task, s2 block) pairs computed over the whole problem
};

// Fills `out`; returns an empty string on success, else what is wrong.
std::string ComputeFlashAttentionTiling(const FaProblem& p, const ChipSpec& chip, FaTilingOut& out);

}  // namespace npu_fa
