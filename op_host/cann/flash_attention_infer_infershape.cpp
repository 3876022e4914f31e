// InferShape / InferDataType of the inference op and its combine pass (graph mode; aclnn callers allocate the
// outputs themselves): the problem module's output shapes, attention_out in the query's dtype, softmax_lse float32
// ([B, N1, S1, 1], TND [T, N1, 1]; one element without softmax_lse_flag).
#include "cann/fa_infer_op_context.h"
#include "cann/fa_op_funcs.h"

namespace ops {
namespace {

namespace fa = npu_fa::op;
using fa::SetShape;

// Both passes write the same two outputs, at the same positions.
ge::graphStatus OutputShapes(gert::InferShapeContext* ctx, bool combine) {
    static_assert(fa::kInferAttentionOut == fa::kCombineAttentionOut && fa::kInferSoftmaxLse == fa::kCombineSoftmaxLse,
                  "both passes write attention_out and softmax_lse at the same output positions");
    npu_fa::FaInferCall call;
    npu_fa::FaInferProblemInfo info;
    const std::string err = fa::ReadInferProblem(ctx, combine, call, info);
    if (!err.empty()) return fa::Refuse(ctx, err);
    gert::Shape* out = ctx->GetOutputShape(fa::kInferAttentionOut);
    gert::Shape* lse = ctx->GetOutputShape(fa::kInferSoftmaxLse);
    if (out == nullptr || lse == nullptr) return fa::Refuse(ctx, "missing output shapes");
    SetShape(out, info.outShape);
    SetShape(lse, info.lseShape);
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus SetOutputTypes(gert::InferDataTypeContext* context, ge::DataType out) {
    context->SetOutputDataType(fa::kInferAttentionOut, out);
    context->SetOutputDataType(fa::kInferSoftmaxLse, ge::DT_FLOAT);
    return ge::GRAPH_SUCCESS;
}

}  // namespace

ge::graphStatus InferShapeFlashAttentionNpuFaInfer(gert::InferShapeContext* context) {
    return OutputShapes(context, false);
}

ge::graphStatus InferShapeFlashAttentionNpuFaInferCombine(gert::InferShapeContext* context) {
    return OutputShapes(context, true);
}

ge::graphStatus InferDataTypeFlashAttentionNpuFaInfer(gert::InferDataTypeContext* context) {
    return SetOutputTypes(context, context->GetInputDataType(fa::kInferQuery));
}

// The combine pass has no query input: the dtype attribute names it (0 fp16, 1 bf16).
ge::graphStatus InferDataTypeFlashAttentionNpuFaInferCombine(gert::InferDataTypeContext* context) {
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    const int64_t* dtype = attrs == nullptr ? nullptr : attrs->GetInt(fa::kCombineAttrDtype);
    return SetOutputTypes(context, dtype != nullptr && *dtype == 1 ? ge::DT_BF16 : ge::DT_FLOAT16);
}

}  // namespace ops
