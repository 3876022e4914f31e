// Reading an inference operator call (gert::TilingContext / InferShapeContext) into the problem module's FaInferCall
// (through fa_infer_op_args.h's positions), shared by the inference TilingFuncs and InferShape.
#pragma once
#include <string>

#include "cann/fa_infer_op_args.h"
#include "cann/fa_op_context.h"
#include "problem/fa_infer_problem.h"

namespace npu_fa {
namespace op {

// The attributes of both inference ops (InferAttr order); false when one is missing.
inline bool ReadInferAttrs(const gert::RuntimeAttrs* attrs, FaInferCall& c) {
    if (attrs == nullptr) return false;
    const float* scale = attrs->GetFloat(kInferAttrScale);
    const char* layout = attrs->GetStr(kInferAttrInputLayout);
    const bool* lse = attrs->GetBool(kInferAttrSoftmaxLseFlag);
    const int64_t* ints[] = {attrs->GetInt(kInferAttrNumHeads),         attrs->GetInt(kInferAttrPreTokens),
                             attrs->GetInt(kInferAttrNextTokens),       attrs->GetInt(kInferAttrNumKeyValueHeads),
                             attrs->GetInt(kInferAttrSparseMode),       attrs->GetInt(kInferAttrInnerPrecise),
                             attrs->GetInt(kInferAttrBlockSize)};
    if (scale == nullptr || layout == nullptr || lse == nullptr) return false;
    for (const int64_t* v : ints) {
        if (v == nullptr) return false;
    }
    c.scale = *scale;
    c.inputLayout = layout;
    c.softmaxLseFlag = *lse;
    c.numHeads = *ints[0];
    c.preTokens = *ints[1];
    c.nextTokens = *ints[2];
    c.numKeyValueHeads = *ints[3];
    c.sparseMode = *ints[4];
    c.innerPrecise = *ints[5];
    c.blockSize = *ints[6];
    c.actualSeqLengths = IntsOf(attrs->GetListInt(kInferAttrActualSeqLengths));
    c.actualSeqLengthsKv = IntsOf(attrs->GetListInt(kInferAttrActualSeqLengthsKv));
    return true;
}

// The inference op: its tensors are inputs (block_table and atten_mask optional).
template <typename Context>
inline bool ReadInferInputs(const Context* ctx, FaInferCall& c) {
    c.query = InputArg(ctx, kInferQuery, false);
    c.key = InputArg(ctx, kInferKey, false);
    c.value = InputArg(ctx, kInferValue, false);
    c.blockTable = InputArg(ctx, kInferBlockTable, true);
    c.attenMask = InputArg(ctx, kInferAttenMask, true);
    return c.query.present && c.key.present && c.value.present;
}

// A shape attribute of the combine pass as the tensor it describes (absent when empty and `optional`).
inline FaTensorArg ShapeArg(const gert::RuntimeAttrs* attrs, uint32_t index, const std::string& dtype, bool optional) {
    FaTensorArg t;
    t.shape = ListOf(attrs->GetListInt(index));
    t.present = !optional || !t.shape.empty();
    t.dtype = dtype;
    return t;
}

// The combine pass: the main pass's tensors as shape attributes (the mask read as bytes, the table as int32).
inline bool ReadCombineShapes(const gert::RuntimeAttrs* attrs, FaInferCall& c) {
    const int64_t* dtype = attrs->GetInt(kCombineAttrDtype);
    if (dtype == nullptr) return false;
    const std::string qkv = *dtype == 1 ? "torch.bfloat16" : "torch.float16";
    c.query = ShapeArg(attrs, kCombineAttrQueryShape, qkv, false);
    c.key = ShapeArg(attrs, kCombineAttrKeyShape, qkv, false);
    c.value = ShapeArg(attrs, kCombineAttrValueShape, qkv, false);
    c.blockTable = ShapeArg(attrs, kCombineAttrBlockTableShape, "torch.int32", true);
    c.attenMask = ShapeArg(attrs, kCombineAttrAttenMaskShape, "torch.uint8", true);
    return true;
}

// The problem of an inference operator call (the main pass or its combine pass): "" or why the call is refused.
template <typename Context>
inline std::string ReadInferProblem(const Context* ctx, bool combine, FaInferCall& c, FaInferProblemInfo& info) {
    const gert::RuntimeAttrs* attrs = ctx->GetAttrs();
    const bool ok = ReadInferAttrs(attrs, c) && (combine ? ReadCombineShapes(attrs, c) : ReadInferInputs(ctx, c));
    if (!ok) return "missing input shapes or attributes";
    const FaError e = BuildInferProblem(c, info);
    return e ? e.message : "";
}

}  // namespace op
}  // namespace npu_fa
