// TilingFuncs of the FlashAttention operators: read the call (shapes, attributes) and the platform (cores, UB/L1
// sizes), run the same pure-C++ tiling as the twin (op_host/flash_attention_tiling_host.cpp and
// _grad_tiling_host.cpp), and hand its struct to the kernel. The per-sequence table seq_info is an op input the
// caller builds with that same tiling (docs/npu.md); the TilingFunc checks it has the size and the blocks the
// tiling gives here. The kernels branch on the tiling's dtype field, so the tiling key is 0.
#include <string>
#include <vector>

#include "cann/fa_op_context.h"
#include "cann/fa_op_funcs.h"
#include "cann/fa_tiling_steps.h"
#include "plan/fa_launch_plan.h"
#include "problem/fa_problem_build.h"

namespace optiling {
namespace {

namespace fa = npu_fa::op;
using fa::CheckSize;
using fa::Elements;
using fa::Emit;

// One operator call: what it asks (the problem module's verdict on it) and the chip it runs on.
struct OpCall {
    npu_fa::FaCall call;
    fa::FaOpBlocks blocks;
    npu_fa::FaProblemInfo info;
    npu_fa::ChipSpec chip{};
    uint64_t sysWorkspace = 0;
};

ge::graphStatus Prepare(gert::TilingContext* ctx, fa::FaOpKind kind, OpCall& c) {
    const std::string err = fa::ReadProblem(ctx, kind, c.call, c.blocks, c.info);
    if (!err.empty()) return fa::Refuse(ctx, err);
    return fa::Chip(ctx, c.chip, c.sysWorkspace);
}

// The forward's outputs must hold exactly the problem's output and statistics shapes' elements.
ge::graphStatus CheckOutputs(gert::TilingContext* ctx, const npu_fa::FaProblemInfo& info) {
    const struct {
        uint32_t index;
        const char* name;
        const std::vector<int64_t>& shape;
    } outs[] = {{fa::kFwdAttentionOut, "attention_out", info.outShape},
                {fa::kFwdSoftmaxMax, "softmax_max", info.statsShape},
                {fa::kFwdSoftmaxSum, "softmax_sum", info.statsShape}};
    for (const auto& o : outs) {
        if (CheckSize(ctx, ctx->GetOutputShape(o.index), o.name, Elements(o.shape)) != ge::GRAPH_SUCCESS) {
            return ge::GRAPH_FAILED;
        }
    }
    return ge::GRAPH_SUCCESS;
}

}  // namespace

ge::graphStatus TilingFlashAttentionNpuFa(gert::TilingContext* context) {
    OpCall c;
    if (Prepare(context, fa::FaOpKind::kForward, c) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    const npu_fa::FaProblemInfo& info = c.info;
    const npu_fa::FaProblem& p = info.p;
    if (!info.post.hasWork) return fa::Refuse(context, "no query row sees a key: the caller answers without a launch");
    npu_fa::FaForwardPlan plan;
    std::string err = npu_fa::PlanForward(p, c.chip, plan);
    const npu_fa::FaTilingOut& t = plan.launch;
    if (err.empty()) err = fa::CheckPlannedBlocks(c.blocks, t.data.s1Block, t.data.s2Block);
    if (!err.empty()) return fa::Refuse(context, err);
    if (CheckSize(context, context->GetRequiredInputShape(fa::kFwdSeqInfo), "seq_info", t.seqInfo.size()) !=
            ge::GRAPH_SUCCESS ||
        (p.denseMask && CheckSize(context, context->GetOptionalInputShape(fa::kFwdBlockMap), "block_map",
                                  t.mapBytes) != ge::GRAPH_SUCCESS) ||
        CheckOutputs(context, info) != ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    return Emit(context, t.data, t.data.blockDim, t.workspaceBytes - npu_fa::kLibApiWorkspaceBytes, c.sysWorkspace);
}

// The forward's tiling for the planned blocks (the forward's own, or the backward's), on the vector cores only.
ge::graphStatus TilingFlashAttentionNpuFaBlockMap(gert::TilingContext* context) {
    OpCall c;
    if (Prepare(context, fa::FaOpKind::kBlockMap, c) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    const npu_fa::FaProblem& p = c.info.p;
    if (!p.denseMask) return fa::Refuse(context, "the block map is only built for a dense mask (sparse_mode 0, 1, 5)");
    npu_fa::FaForwardPlan plan;  // at the planned blocks
    const std::string err = npu_fa::PlanForward(p, c.chip, plan);
    if (!err.empty()) return fa::Refuse(context, err);
    const npu_fa::FaBlockMapPass& pass = plan.map;
    if (pass.tiling.mapRows == 0) return fa::Refuse(context, "the block map is empty: the caller skips the launch");
    if (CheckSize(context, context->GetRequiredInputShape(fa::kMapSeqInfo), "seq_info", pass.seqInfo.size()) !=
        ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    return Emit(context, pass.tiling, pass.tiling.mapCores, 0, c.sysWorkspace);
}

// One launch (attribute `launch`) of the backward's schedule; every launch asks for the whole workspace, and the
// caller passes the same buffer to all of them (D lives there between launches).
ge::graphStatus TilingFlashAttentionNpuFaGrad(gert::TilingContext* context) {
    OpCall c;  // the saved tensors must have the forward's shapes
    if (Prepare(context, fa::FaOpKind::kBackward, c) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    const npu_fa::FaProblemInfo& info = c.info;
    const npu_fa::FaProblem& p = info.p;
    // (the `deterministic` attribute needs no tiling of its own: the schedule has no atomics)
    const int64_t* launch = context->GetAttrs()->GetInt(fa::kGradAttrLaunch);
    if (launch == nullptr) return fa::Refuse(context, "missing launch");
    if (!info.post.hasWork) return fa::Refuse(context, "no query row sees a key: the caller answers without a launch");
    // dsink wanted: the dQ pass writes dsink_rows in the statistics' shape
    if (p.sink && CheckSize(context, context->GetOutputShape(fa::kGradDsinkRows), "dsink_rows",
                            Elements(info.statsShape)) != ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    if (!info.post.dpseRowsShape.empty() &&
        CheckSize(context, context->GetOutputShape(fa::kGradDpseRows), "dpse_rows",
                  Elements(info.post.dpseRowsShape)) != ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    npu_fa::FaBackwardPlan plan;
    std::string err = npu_fa::PlanBackward(p, c.chip, plan);
    const npu_fa::FaGradTilingOut& t = plan.launches;
    if (err.empty() && (*launch < 0 || (size_t)*launch >= t.launches.size())) {
        err = "launch " + std::to_string(*launch) + " is outside the schedule's " + std::to_string(t.launches.size());
    }
    if (err.empty()) err = fa::CheckPlannedBlocks(c.blocks, t.launches[0].s1Block, t.launches[0].s2Block);
    if (!err.empty()) return fa::Refuse(context, err);
    if (CheckSize(context, context->GetRequiredInputShape(fa::kGradSeqInfo), "seq_info", t.seqInfo.size()) !=
            ge::GRAPH_SUCCESS ||
        (p.denseMask && CheckSize(context, context->GetOptionalInputShape(fa::kGradBlockMap), "block_map",
                                  t.mapBytes) != ge::GRAPH_SUCCESS) ||
        CheckSize(context, context->GetOutputShape(fa::kGradDq), "dq", Elements(c.call.query.shape)) != ge::GRAPH_SUCCESS ||
        CheckSize(context, context->GetOutputShape(fa::kGradDk), "dk", Elements(c.call.key.shape)) != ge::GRAPH_SUCCESS ||
        CheckSize(context, context->GetOutputShape(fa::kGradDv), "dv", Elements(c.call.value.shape)) !=
            ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    const npu_fa::FlashAttentionGradTilingData& l = t.launches[(size_t)*launch];
    return Emit(context, l, l.blockDim, t.workspaceBytes - npu_fa::kLibApiWorkspaceBytes, c.sysWorkspace);
}

}  // namespace optiling
