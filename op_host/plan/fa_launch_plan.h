// One call's launches as the host plans them for a chip: [the block-map pre-pass over a dense mask], then the
// forward, or the backward's passes in order (sharing one workspace). The twin bindings and the torch_npu adapter
// execute a plan; the CANN TilingFuncs plan the same way and hand one launch's tiling to the kernel.
#pragma once
#include <string>
#include <vector>

#include "flash_attention_grad_tiling_host.h"
#include "flash_attention_infer_tiling_host.h"
#include "flash_attention_tiling_host.h"

namespace npu_fa {

// The block-map pre-pass (dense masks): the forward tiling of the blocks the map is for, its per-sequence table and
// the map buffer's size. Vector cores only: max(1, tiling.mapCores) blocks; nothing to run when tiling.mapRows is 0.
struct FaBlockMapPass {
    FlashAttentionTilingData tiling{};
    std::vector<int64_t> seqInfo;
    uint64_t bytes = 0;
};

struct FaForwardPlan {
    FaTilingOut launch;  // seqInfo holds at least one row (the kernels read it whatever the layout)
    FaBlockMapPass map;  // p.denseMask only
};

struct FaBackwardPlan {
    FaGradTilingOut launches;  // launches.launches in order; seqInfo holds at least one row
    FaBlockMapPass map;        // p.denseMask only: built for the backward's blocks
};

// The inference op: its kernel, then (when the tiling splits the keys) the vector-only combine pass on
// launch.data.combineCores blocks, with the same tiling, seq table and workspace.
struct FaInferPlan {
    FaInferTilingOut launch;
    bool combine = false;
};

// "" or why the problem cannot be tiled on this chip.
std::string PlanForward(const FaProblem& p, const ChipSpec& chip, FaForwardPlan& plan);
std::string PlanBackward(const FaProblem& p, const ChipSpec& chip, FaBackwardPlan& plan);
std::string PlanInfer(const FaInferProblem& p, const ChipSpec& chip, FaInferPlan& plan);

// Whether some query row of an inference problem sees a key: callers answer other calls without a launch (every
// output row 0, every lse +inf).
bool InferHasWork(const FaInferProblem& p);

}  // namespace npu_fa
