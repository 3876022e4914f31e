// InferShape / InferDataType of the FlashAttention operators (graph mode; aclnn callers allocate the outputs
// themselves). Shapes follow the torch ops: attention_out is the query's shape with D -> Dv, the statistics
// [B, N1, S1, 8] (TND [T1, N1, 8]) float32, dq/dk/dv the shapes of q/k/v, the block map one byte buffer.
#include "cann/fa_op_context.h"
#include "cann/fa_op_funcs.h"

namespace ops {
namespace {

namespace fa = npu_fa::op;

void SetShape(gert::Shape* out, const std::vector<int64_t>& dims) {
    out->SetDimNum(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) out->SetDim(i, dims[i]);
}

template <typename Context>
ge::graphStatus Problem(const Context* ctx, const fa::FaOpShapes& s, npu_fa::FaProblem& p, fa::FaOpAttrs& a) {
    if (!fa::ReadAttrs(ctx->GetAttrs(), a)) return fa::Refuse(ctx, "missing attributes");
    const std::string err = fa::BuildFaProblem(s, a, p);
    return err.empty() ? ge::GRAPH_SUCCESS : fa::Refuse(ctx, err);
}

// The problem of an op with q/k/v and mask inputs at these indices (forward, backward).
ge::graphStatus ProblemOfInputs(const gert::InferShapeContext* ctx, uint32_t q, uint32_t k, uint32_t v, uint32_t mask,
                                fa::FaOpShapes& s, npu_fa::FaProblem& p, fa::FaOpAttrs& a) {
    if (!fa::ReadShapes(ctx, q, k, v, mask, s)) return fa::Refuse(ctx, "missing query/key/value shapes");
    return Problem(ctx, s, p, a);
}

}  // namespace

ge::graphStatus InferShapeFlashAttentionNpuFa(gert::InferShapeContext* context) {
    fa::FaOpShapes s;
    npu_fa::FaProblem p;
    fa::FaOpAttrs a;
    if (ProblemOfInputs(context, fa::kFwdQuery, fa::kFwdKey, fa::kFwdValue, fa::kFwdAttenMask, s, p, a) !=
        ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    std::vector<int64_t> out, stats;
    fa::FwdOutputShapes(p, s.query, out, stats);
    gert::Shape* o = context->GetOutputShape(fa::kFwdAttentionOut);
    gert::Shape* mx = context->GetOutputShape(fa::kFwdSoftmaxMax);
    gert::Shape* sm = context->GetOutputShape(fa::kFwdSoftmaxSum);
    if (o == nullptr || mx == nullptr || sm == nullptr) return fa::Refuse(context, "missing output shapes");
    SetShape(o, out);
    SetShape(mx, stats);
    SetShape(sm, stats);
    return ge::GRAPH_SUCCESS;
}

// The map's size depends on the blocks only (not on the core counts): the planned blocks (attributes, required
// here) with any chip of the table give it.
ge::graphStatus InferShapeFlashAttentionNpuFaBlockMap(gert::InferShapeContext* context) {
    fa::FaOpShapes s;
    if (!fa::ReadMapShapes(context, s)) return fa::Refuse(context, "missing atten_mask shape or shape attributes");
    npu_fa::FaProblem p;
    fa::FaOpAttrs a;
    if (Problem(context, s, p, a) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    if (a.s1Block <= 0 || a.s2Block <= 0) return fa::Refuse(context, "s1_block and s2_block are required");
    p.forceS1Block = (uint32_t)a.s1Block;
    p.forceS2Block = (uint32_t)a.s2Block;
    npu_fa::FaTilingOut t;
    const std::string err = npu_fa::ComputeFlashAttentionTiling(p, *npu_fa::FindChip(npu_fa::kDefaultChip), t);
    if (!err.empty()) return fa::Refuse(context, err);
    gert::Shape* map = context->GetOutputShape(0);
    if (map == nullptr) return fa::Refuse(context, "missing output shape");
    SetShape(map, {(int64_t)t.mapBytes});
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus InferShapeFlashAttentionNpuFaGrad(gert::InferShapeContext* context) {
    const uint32_t ins[] = {fa::kGradQuery, fa::kGradKey, fa::kGradValue};
    const uint32_t outs[] = {fa::kGradDq, fa::kGradDk, fa::kGradDv};
    for (int i = 0; i < 3; ++i) {
        const gert::Shape* in = context->GetInputShape(ins[i]);
        gert::Shape* out = context->GetOutputShape(outs[i]);
        if (in == nullptr || out == nullptr) return fa::Refuse(context, "missing query/key/value or dq/dk/dv shapes");
        *out = *in;
    }
    // dsink_rows: the statistics' shape with a sink, else one 8-float block
    const gert::Shape* stats = context->GetInputShape(fa::kGradSoftmaxMax);
    gert::Shape* rows = context->GetOutputShape(fa::kGradDsinkRows);
    if (stats == nullptr || rows == nullptr) return fa::Refuse(context, "missing softmax_max or dsink_rows shapes");
    if (context->GetOptionalInputShape(fa::kGradSink) != nullptr) {
        *rows = *stats;
    } else {
        SetShape(rows, {8});
    }
    // dpse_rows: with an outer pse, the kernel's dS rows (fa::PseGradElements), else one 8-float block
    gert::Shape* dpse = context->GetOutputShape(fa::kGradDpseRows);
    if (dpse == nullptr) return fa::Refuse(context, "missing dpse_rows shape");
    const gert::Shape* pse = context->GetOptionalInputShape(fa::kGradPse);
    if (pse == nullptr) {
        SetShape(dpse, {8});
        return ge::GRAPH_SUCCESS;
    }
    fa::FaOpShapes s;
    npu_fa::FaProblem p;
    fa::FaOpAttrs a;
    if (ProblemOfInputs(context, fa::kGradQuery, fa::kGradKey, fa::kGradValue, fa::kGradAttenMask, s, p, a) !=
        ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    const std::string err = fa::OuterPse(a, p, fa::DimVector(*pse));
    if (!err.empty()) return fa::Refuse(context, err);
    SetShape(dpse, {(int64_t)fa::PseGradElements(p)});
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus InferDataTypeFlashAttentionNpuFa(gert::InferDataTypeContext* context) {
    context->SetOutputDataType(fa::kFwdAttentionOut, context->GetInputDataType(fa::kFwdQuery));
    context->SetOutputDataType(fa::kFwdSoftmaxMax, ge::DT_FLOAT);
    context->SetOutputDataType(fa::kFwdSoftmaxSum, ge::DT_FLOAT);
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
