// Reading an inference operator call (gert::TilingContext / InferShapeContext) into the problem module's FaInferCall
// (through fa_infer_op_args.h's positions), shared by the inference TilingFuncs and InferShape.
#pragma once
#include <string>

#include "cann/fa_infer_op_args.h"
#include "cann/fa_op_context.h"
#include "problem/fa_infer_problem.h"

namespace npu_fa {
namespace op {

// A shape attribute (with a dtype) as the tensor it describes: absent when empty and `optional`.
inline FaTensorArg ShapeArg(const gert::RuntimeAttrs* attrs, uint32_t index, const std::string& dtype, bool optional) {
    FaTensorArg t;
    t.shape = ListOf(attrs->GetListInt(index));
    t.present = !optional || !t.shape.empty();
    t.dtype = dtype;
    return t;
}

// The attributes of both inference ops (InferAttr order); false when one is missing.
inline bool ReadInferAttrs(const gert::RuntimeAttrs* attrs, FaInferCall& c) {
    if (attrs == nullptr) return false;
    const float* scale = attrs->GetFloat(kInferAttrScale);
    const float* softcap = attrs->GetFloat(kInferAttrSoftcap);
    const char* layout = attrs->GetStr(kInferAttrInputLayout);
    const bool* lse = attrs->GetBool(kInferAttrSoftmaxLseFlag);
    const int64_t* ints[] = {attrs->GetInt(kInferAttrNumHeads),          attrs->GetInt(kInferAttrPreTokens),
                             attrs->GetInt(kInferAttrNextTokens),        attrs->GetInt(kInferAttrNumKeyValueHeads),
                             attrs->GetInt(kInferAttrSparseMode),        attrs->GetInt(kInferAttrInnerPrecise),
                             attrs->GetInt(kInferAttrBlockSize),         attrs->GetInt(kInferAttrWindowLeft),
                             attrs->GetInt(kInferAttrWindowRight),       attrs->GetInt(kInferAttrAntiquantMode),
                             attrs->GetInt(kInferAttrKeyAntiquantMode),  attrs->GetInt(kInferAttrValueAntiquantMode)};
    if (scale == nullptr || softcap == nullptr || layout == nullptr || lse == nullptr) return false;
    for (const int64_t* v : ints) {
        if (v == nullptr) return false;
    }
    c.scale = *scale;
    c.softcap = *softcap;
    c.inputLayout = layout;
    c.softmaxLseFlag = *lse;
    c.numHeads = *ints[0];
    c.preTokens = *ints[1];
    c.nextTokens = *ints[2];
    c.numKeyValueHeads = *ints[3];
    c.sparseMode = *ints[4];
    c.innerPrecise = *ints[5];
    c.blockSize = *ints[6];
    c.windowLeft = *ints[7];
    c.windowRight = *ints[8];
    c.antiquantMode = *ints[9];
    c.keyAntiquantMode = *ints[10];
    c.valueAntiquantMode = *ints[11];
    c.actualSeqLengths = IntsOf(attrs->GetListInt(kInferAttrActualSeqLengths));
    c.actualSeqLengthsKv = IntsOf(attrs->GetListInt(kInferAttrActualSeqLengthsKv));
#define NPU_FA_READ_ANTIQUANT(name, Name, member)                                                  \
    {                                                                                              \
        const int64_t* dtype = attrs->GetInt(kInferAttr##Name##Dtype);                             \
        if (dtype == nullptr) return false;                                                        \
        c.member = ShapeArg(attrs, kInferAttr##Name##Shape, InferDtypeName(*dtype), true);         \
    }
    NPU_FA_INFER_ANTIQUANT_TENSORS(NPU_FA_READ_ANTIQUANT)
#undef NPU_FA_READ_ANTIQUANT
    return true;
}

// The inference op: its tensors are inputs (all but q/k/v optional), read by their OpDef position.
template <typename Context>
inline bool ReadInferInputs(const Context* ctx, FaInferCall& c) {
    c.query = InputArg(ctx, kInferQuery, false);
    c.key = InputArg(ctx, kInferKey, false);
    c.value = InputArg(ctx, kInferValue, false);
    c.blockTable = InputArg(ctx, kInferBlockTable, true);
    c.attenMask = InputArg(ctx, kInferAttenMask, true);
    c.pseShift = InputArg(ctx, kInferPseShift, true);
    c.alibiSlopes = InputArg(ctx, kInferAlibiSlopes, true);
    return c.query.present && c.key.present && c.value.present;
}

// The combine pass: the main pass's tensors as shape attributes (the mask read as bytes, the table as int32,
// pse_shift in the query's dtype and alibi_slopes float32, the dtypes the main pass's rules required).
inline bool ReadCombineShapes(const gert::RuntimeAttrs* attrs, FaInferCall& c) {
    const int64_t* dtype = attrs->GetInt(kCombineAttrDtype);
    const int64_t* kvDtype = attrs->GetInt(kCombineAttrKvDtype);
    if (dtype == nullptr || kvDtype == nullptr) return false;
    const std::string q = InferDtypeName(*dtype), kv = InferDtypeName(*kvDtype);
    c.query = ShapeArg(attrs, kCombineAttrQueryShape, q, false);
    c.key = ShapeArg(attrs, kCombineAttrKeyShape, kv, false);
    c.value = ShapeArg(attrs, kCombineAttrValueShape, kv, false);
    c.blockTable = ShapeArg(attrs, kCombineAttrBlockTableShape, "torch.int32", true);
    c.attenMask = ShapeArg(attrs, kCombineAttrAttenMaskShape, "torch.uint8", true);
    c.pseShift = ShapeArg(attrs, kCombineAttrPseShiftShape, q, true);
    c.alibiSlopes = ShapeArg(attrs, kCombineAttrAlibiSlopesShape, "torch.float32", true);
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
