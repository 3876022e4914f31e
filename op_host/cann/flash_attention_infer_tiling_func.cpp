// TilingFuncs of the inference op and its combine pass: read the call into the problem module's FaInferCall
// (fa_infer_op_context.h), plan it with the same PlanInfer as the twin (op_host/plan, the tiling of
// op_host/flash_attention_infer_tiling_host.cpp) on the chip the platform reports, and hand the plan's tiling to the
// kernel. Both passes get the same tiling struct and ask for the same whole workspace: the caller passes one buffer
// to both, the main pass leaving the splits' partials there for the combine pass. seq_info is an op input the
// caller builds with the same plan; the TilingFunc checks its size. The kernels branch on the tiling's dtype field,
// so the tiling key is 0.
#include <string>

#include "cann/fa_infer_op_context.h"
#include "cann/fa_op_funcs.h"
#include "cann/fa_tiling_steps.h"
#include "plan/fa_launch_plan.h"

namespace optiling {
namespace {

namespace fa = npu_fa::op;

// One call of either pass: the problem module's verdict, the chip, and the plan for it.
struct InferOpCall {
    npu_fa::FaInferCall call;
    npu_fa::FaInferProblemInfo info;
    npu_fa::ChipSpec chip{};
    uint64_t sysWorkspace = 0;
    npu_fa::FaInferPlan plan;
};

// Problems without work (no query row sees a key) are answered by the caller without a launch.
ge::graphStatus Prepare(gert::TilingContext* ctx, bool combine, InferOpCall& c) {
    std::string err = fa::ReadInferProblem(ctx, combine, c.call, c.info);
    if (!err.empty()) return fa::Refuse(ctx, err);
    if (!npu_fa::InferHasWork(c.info.p)) {
        return fa::Refuse(ctx, "no query row sees a key: the caller answers without a launch");
    }
    if (fa::Chip(ctx, c.chip, c.sysWorkspace) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    err = npu_fa::PlanInfer(c.info.p, c.chip, c.plan);
    if (!err.empty()) return fa::Refuse(ctx, err);
    return ge::GRAPH_SUCCESS;
}

// seq_info and the outputs must have the plan's sizes (attention_out and softmax_lse are the same tensors in both
// passes).
ge::graphStatus CheckSizes(gert::TilingContext* ctx, const InferOpCall& c, uint32_t seqInfo, uint32_t out,
                           uint32_t lse) {
    if (fa::CheckSize(ctx, ctx->GetRequiredInputShape(seqInfo), "seq_info", c.plan.launch.seqInfo.size()) !=
            ge::GRAPH_SUCCESS ||
        fa::CheckSize(ctx, ctx->GetOutputShape(out), "attention_out", fa::Elements(c.info.outShape)) !=
            ge::GRAPH_SUCCESS ||
        fa::CheckSize(ctx, ctx->GetOutputShape(lse), "softmax_lse", fa::Elements(c.info.lseShape)) !=
            ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    return ge::GRAPH_SUCCESS;
}

uint64_t UserWorkspace(const InferOpCall& c) { return c.plan.launch.workspaceBytes - npu_fa::kLibApiWorkspaceBytes; }

}  // namespace

// The main pass: mix kernel on the plan's AI cores. Over an int8 cache, the antiquant input must hold the fp32 form
// of the scales and offsets its attributes describe.
ge::graphStatus TilingFlashAttentionNpuFaInfer(gert::TilingContext* context) {
    InferOpCall c;
    if (Prepare(context, false, c) != ge::GRAPH_SUCCESS ||
        CheckSizes(context, c, fa::kInferSeqInfo, fa::kInferAttentionOut, fa::kInferSoftmaxLse) != ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    if (c.info.p.kvQuant && fa::CheckSize(context, context->GetOptionalInputShape(fa::kInferAntiquant), "antiquant",
                                          c.info.p.antiquantElems) != ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    const npu_fa::FaInferTilingData& t = c.plan.launch.data;
    return fa::Emit(context, t, t.blockDim, UserWorkspace(c), c.sysWorkspace);
}

// The combine pass: only when the plan splits the keys, on its combine cores (vector only).
ge::graphStatus TilingFlashAttentionNpuFaInferCombine(gert::TilingContext* context) {
    InferOpCall c;
    if (Prepare(context, true, c) != ge::GRAPH_SUCCESS ||
        CheckSizes(context, c, fa::kCombineSeqInfo, fa::kCombineAttentionOut, fa::kCombineSoftmaxLse) !=
            ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    if (!c.plan.combine) return fa::Refuse(context, "this chip's plan does not split the keys: no combine pass");
    const npu_fa::FaInferTilingData& t = c.plan.launch.data;
    return fa::Emit(context, t, t.combineCores, UserWorkspace(c), c.sysWorkspace);
}

}  // namespace optiling
