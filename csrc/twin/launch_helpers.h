// What the op bindings need around a twin launch: the poisoned workspace, the launch options of the op's kernels,
// the block-map pre-pass, and no tolerated warnings.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cost_model_hook.h"
#include "plan/fa_launch_plan.h"
#include "kernel_entries.h"
#include "twin/launch/runtime.h"

namespace twin_bindings {

// GM the binding allocates itself (the workspace), 512-byte aligned like aclrtMalloc's device memory.
inline std::unique_ptr<uint8_t, void (*)(void*)> DeviceAlloc(uint64_t bytes) {
    const uint64_t n = (bytes + 511) / 512 * 512;
    return {static_cast<uint8_t*>(std::aligned_alloc(512, n != 0 ? n : 512)), &std::free};
}

// The op's workspace: the library's system part (untouched), then the user part, poisoned so that unwritten reads
// are NaN.
inline std::unique_ptr<uint8_t, void (*)(void*)> PoisonedWorkspace(uint64_t bytes) {
    auto ws = DeviceAlloc(bytes);
    std::memset(ws.get() + npu_fa::kLibApiWorkspaceBytes, 0xFF, bytes - npu_fa::kLibApiWorkspaceBytes);
    return ws;
}

// A launch of the forward or backward kernel (1 AIC + 2 AIV per block), traced when asked or when the cycle model
// is on.
inline twin::LaunchOptions MixLaunch(uint32_t blockDim, const npu_fa::ChipSpec* chip, bool trace) {
    twin::LaunchOptions o;
    o.kernelType = AscendC::KERNEL_TYPE_MIX_AIC_1_2;
    o.numBlocks = blockDim;
    o.chip = chip;
    o.trace = trace || CostModelOn();
    o.modelOnly = CostModelOnly();
    o.sampleBlocks = SampledBlocks(o.numBlocks);
    return o;
}

// The plan's block-map pre-pass over a dense mask, writing `map`.
inline void LaunchBlockMap(const npu_fa::FaBlockMapPass& pass, const npu_fa::ChipSpec* chip, uintptr_t mask,
                           uint64_t maskBytes, uint8_t* map, uint64_t mapBytes) {
    if (pass.tiling.mapRows == 0) return;
    npu_fa::FlashAttentionTilingData tiling = pass.tiling;
    std::vector<int64_t> seqInfo = pass.seqInfo;
    uint8_t workspace[32] = {};
    twin::LaunchOptions o;
    o.kernelType = AscendC::KERNEL_TYPE_AIV_ONLY;
    o.numBlocks = std::max<uint32_t>(1, tiling.mapCores);
    o.chip = chip;
    o.trace = false;
    o.gm = {{(const uint8_t*)mask, maskBytes, "atten_mask"},
            {(const uint8_t*)seqInfo.data(), seqInfo.size() * 8, "seq_info"},
            {map, mapBytes, "block_map"},
            {workspace, sizeof(workspace), "workspace"},
            {(const uint8_t*)&tiling, sizeof(tiling), "tiling"}};
    twin::LaunchKernel(&flash_attention_block_map, o, (uint8_t*)mask, (uint8_t*)seqInfo.data(), map, workspace,
                       (uint8_t*)&tiling);
}

// The op's own kernels must not do what the twin only warns about (twin::Warn): it would be a kernel bug.
inline void RequireNoWarnings(const std::vector<std::string>& warnings) {
    if (!warnings.empty()) throw twin::TwinError("twin warning in the op's kernel: " + warnings.front());
}

}  // namespace twin_bindings
