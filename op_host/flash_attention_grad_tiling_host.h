// Host tiling of the backward FlashAttention kernel: from the problem (the forward's FaProblem) and the chip to the
// tilings of its launches (see op_kernel/tiling/bwd_tiling.h), the per-sequence table and the workspace size.
// Pure C++, shared by the twin bindings and, later, the CANN TilingFunc.
#pragma once
#include <string>
#include <vector>

#include "chip_spec.h"
#include "tiling/bwd_tiling.h"
#include "flash_attention_tiling_host.h"

namespace npu_fa {

struct FaGradTilingOut {
    // The kernel launches in order: dQ, then dK/dV (or dV, then dK, for large head dims).
    std::vector<FlashAttentionGradTilingData> launches;
    std::vector<int64_t> seqInfo;        // kBwdSeqFields per sequence (always filled)
    uint64_t workspaceBytes = 0;         // kLibApiWorkspaceBytes (system) + the user part
    uint32_t ubBytes = 0;                // per AIV
    uint32_t l1Bytes = 0;                // per AIC
    uint64_t tiles = 0;                  // (query head, s1 block, s2 block) tiles inside the bands, per pass
    // Dense masks: the forward tiling for this kernel's blocks; the block-map pre-pass runs with it and the
    // backward reads its map (mapBytes bytes).
    FlashAttentionTilingData mapTiling{};
    uint64_t mapBytes = 0;
    std::vector<int64_t> mapSeqInfo;     // the forward's per-sequence table for those blocks (the pre-pass reads it)
};

// Fills `out`; returns an empty string on success, else what is wrong. The schedule has no atomics, so the result
// is bitwise reproducible for any core count: the op's `deterministic` flag needs no tiling of its own.
std::string ComputeFlashAttentionGradTiling(const FaProblem& p, const ChipSpec& chip, FaGradTilingOut& out);

}  // namespace npu_fa
