// InferShape / InferDataType of the FlashAttention operators (graph mode; aclnn callers allocate the outputs
// themselves). Shapes follow the torch ops: attention_out is the query's shape with D -> Dv, the statistics
// [B, N1, S1, 8] (TND [T1, N1, 8]) float32, dq/dk/dv the shapes of q/k/v, the block map one byte buffer.
#include "cann/fa_op_context.h"
#include "cann/fa_op_funcs.h"
#include "plan/fa_launch_plan.h"
#include "problem/fa_problem_build.h"

namespace ops {
namespace {

namespace fa = npu_fa::op;
using fa::SetShape;

// The problem of this call (the problem module's rules; its message names what is wrong).
ge::graphStatus Problem(const gert::InferShapeContext* ctx, fa::FaOpKind kind, npu_fa::FaProblemInfo& info,
                        npu_fa::FaCall& call) {
    fa::FaOpBlocks blocks;
    const std::string err = fa::ReadProblem(ctx, kind, call, blocks, info);
    return err.empty() ? ge::GRAPH_SUCCESS : fa::Refuse(ctx, err);
}

}  // namespace

ge::graphStatus InferShapeFlashAttentionNpuFa(gert::InferShapeContext* context) {
    npu_fa::FaCall call;
    npu_fa::FaProblemInfo info;
    if (Problem(context, fa::FaOpKind::kForward, info, call) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    gert::Shape* o = context->GetOutputShape(fa::kFwdAttentionOut);
    gert::Shape* mx = context->GetOutputShape(fa::kFwdSoftmaxMax);
    gert::Shape* sm = context->GetOutputShape(fa::kFwdSoftmaxSum);
    if (o == nullptr || mx == nullptr || sm == nullptr) return fa::Refuse(context, "missing output shapes");
    SetShape(o, info.outShape);
    SetShape(mx, info.statsShape);
    SetShape(sm, info.statsShape);
    gert::Shape* res = context->GetOutputShape(fa::kFwdAttentionOutResidual);  // optional: absent without it
    if (res != nullptr) SetShape(res, info.p.outResidual ? info.outShape : std::vector<int64_t>{0});
    return ge::GRAPH_SUCCESS;
}

// The map's size depends on the blocks only (not on the core counts): the planned blocks (attributes, required
// here) with any chip's tiling give it.
ge::graphStatus InferShapeFlashAttentionNpuFaBlockMap(gert::InferShapeContext* context) {
    npu_fa::FaCall call;
    npu_fa::FaProblemInfo info;
    if (Problem(context, fa::FaOpKind::kBlockMap, info, call) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    npu_fa::FaForwardPlan plan;
    const std::string err = npu_fa::PlanForward(info.p, *npu_fa::FindChip(npu_fa::kDefaultChip), plan);
    if (!err.empty()) return fa::Refuse(context, err);
    gert::Shape* map = context->GetOutputShape(0);
    if (map == nullptr) return fa::Refuse(context, "missing output shape");
    SetShape(map, {(int64_t)plan.map.bytes});
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus InferShapeFlashAttentionNpuFaGrad(gert::InferShapeContext* context) {
    const uint32_t ins[] = {fa::kGradQuery, fa::kGradKey, fa::kGradValue};
    const uint32_t outs[] = {fa::kGradDq, fa::kGradDk, fa::kGradDv};
    for (int i = 0; i < 3; ++i) {
        const gert::Shape* in = context->GetRequiredInputShape(ins[i]);
        gert::Shape* out = context->GetOutputShape(outs[i]);
        if (in == nullptr || out == nullptr) return fa::Refuse(context, "missing query/key/value or dq/dk/dv shapes");
        *out = *in;
    }
    // dsink_rows: the statistics' shape with a sink, else one 8-float block
    const gert::Shape* stats = context->GetRequiredInputShape(fa::kGradSoftmaxMax);
    gert::Shape* rows = context->GetOutputShape(fa::kGradDsinkRows);
    if (stats == nullptr || rows == nullptr) return fa::Refuse(context, "missing softmax_max or dsink_rows shapes");
    if (context->GetOptionalInputShape(fa::kGradSink) != nullptr) {
        *rows = *stats;
    } else {
        SetShape(rows, {8});
    }
    // dpse_rows: with an outer pse, the kernel's dS rows (the problem's dpse reduction input), else one 8-float block
    gert::Shape* dpse = context->GetOutputShape(fa::kGradDpseRows);
    if (dpse == nullptr) return fa::Refuse(context, "missing dpse_rows shape");
    npu_fa::FaCall call;
    npu_fa::FaProblemInfo info;
    if (Problem(context, fa::FaOpKind::kBackward, info, call) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    int64_t elements = 1;
    for (int64_t d : info.post.dpseRowsShape) elements *= d;
    SetShape(dpse, {info.post.dpseRowsShape.empty() ? 8 : elements});
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus InferDataTypeFlashAttentionNpuFa(gert::InferDataTypeContext* context) {
    context->SetOutputDataType(fa::kFwdAttentionOut, context->GetInputDataType(fa::kFwdQuery));
    context->SetOutputDataType(fa::kFwdSoftmaxMax, ge::DT_FLOAT);
    context->SetOutputDataType(fa::kFwdSoftmaxSum, ge::DT_FLOAT);
    context->SetOutputDataType(fa::kFwdAttentionOutResidual, context->GetInputDataType(fa::kFwdQuery));
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus InferDataTypeFlashAttentionNpuFaBlockMap(gert::InferDataTypeContext* context) {
    context->SetOutputDataType(0, ge::DT_UINT8);
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus InferDataTypeFlashAttentionNpuFaGrad(gert::InferDataTypeContext* context) {
    const ge::DataType dt = context->GetInputDataType(fa::kGradQuery);
    for (uint32_t out : {fa::kGradDq, fa::kGradDk, fa::kGradDv}) context->SetOutputDataType(out, dt);
    context->SetOutputDataType(fa::kGradDsinkRows, ge::DT_FLOAT);
    context->SetOutputDataType(fa::kGradDpseRows, ge::DT_FLOAT);
    return ge::GRAPH_SUCCESS;
}

}  // namespace ops
