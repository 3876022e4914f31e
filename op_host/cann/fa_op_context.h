// Reading an operator call (gert::TilingContext / InferShapeContext) into the problem module's FaCall (through
// fa_op_args.h's positions), shared by the TilingFuncs and the InferShape functions.
#pragma once
#include <string>
#include <vector>

#include "exe_graph/runtime/runtime_attrs.h"
#include "exe_graph/runtime/shape.h"
#include "exe_graph/runtime/storage_shape.h"
#include "graph/ge_error_codes.h"
#include "graph/types.h"
#include "log/log.h"

#include "cann/fa_op_args.h"
#include "problem/fa_problem_build.h"

namespace npu_fa {
namespace op {

inline std::vector<int64_t> DimVector(const gert::Shape& s) {
    std::vector<int64_t> d(s.GetDimNum());
    for (size_t i = 0; i < d.size(); ++i) d[i] = s.GetDim(i);
    return d;
}
inline std::vector<int64_t> DimVector(const gert::StorageShape& s) { return DimVector(s.GetOriginShape()); }

inline std::vector<int64_t> ListOf(const gert::TypedContinuousVector<int64_t>* v) {
    if (v == nullptr) return {};
    return std::vector<int64_t>(v->GetData(), v->GetData() + v->GetSize());
}

// torch's name of a CANN dtype, as the problem module's rules spell them.
inline std::string DtypeName(ge::DataType t) {
    switch (t) {
        case ge::DT_FLOAT16: return "torch.float16";
        case ge::DT_BF16: return "torch.bfloat16";
        case ge::DT_FLOAT: return "torch.float32";
        case ge::DT_UINT8: return "torch.uint8";
        case ge::DT_BOOL: return "torch.bool";
        case ge::DT_INT8: return "torch.int8";
        case ge::DT_INT32: return "torch.int32";
        default: return "torch.other";
    }
}

// An InferShape output shape from the problem module's dims.
inline void SetShape(gert::Shape* out, const std::vector<int64_t>& dims) {
    out->SetDimNum(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) out->SetDim(i, dims[i]);
}

// A CANN ListInt attribute: the schema's None arrives as an empty list.
inline FaIntList IntsOf(const gert::TypedContinuousVector<int64_t>* v) {
    FaIntList l;
    l.values = ListOf(v);
    l.present = !l.values.empty();
    return l;
}

// The common attributes (fa::Attr order); false when one is missing.
inline bool ReadAttrs(const gert::RuntimeAttrs* attrs, FaAttrs& a, FaOpBlocks& blocks) {
    if (attrs == nullptr) return false;
    const int64_t* headNum = attrs->GetInt(kAttrHeadNum);
    const char* layout = attrs->GetStr(kAttrInputLayout);
    const float* scale = attrs->GetFloat(kAttrScale);
    const float* keepProb = attrs->GetFloat(kAttrKeepProb);
    const float* softcap = attrs->GetFloat(kAttrSoftcap);
    const int64_t* ints[] = {attrs->GetInt(kAttrPreTokens), attrs->GetInt(kAttrNextTokens),
                             attrs->GetInt(kAttrInnerPrecise), attrs->GetInt(kAttrSparseMode),
                             attrs->GetInt(kAttrS1Block), attrs->GetInt(kAttrS2Block), attrs->GetInt(kAttrPseType),
                             attrs->GetInt(kAttrSeed), attrs->GetInt(kAttrOffset)};
    if (headNum == nullptr || layout == nullptr || scale == nullptr || keepProb == nullptr || softcap == nullptr) {
        return false;
    }
    for (const int64_t* v : ints) {
        if (v == nullptr) return false;
    }
    a.headNum = *headNum;
    a.inputLayout = layout;
    a.scale = *scale;
    a.keepProb = *keepProb;
    a.hasSoftcap = *softcap != 0.0f;  // the schema's None travels as 0
    a.softcap = *softcap;
    a.preTokens = *ints[0];
    a.nextTokens = *ints[1];
    a.innerPrecise = *ints[2];
    a.sparseMode = *ints[3];
    blocks.s1Block = *ints[4];
    blocks.s2Block = *ints[5];
    a.pseType = *ints[6];
    a.seed = (uint64_t)*ints[7];
    a.offset = (uint64_t)*ints[8];
    a.prefix = IntsOf(attrs->GetListInt(kAttrPrefix));
    a.actualSeqQlen = IntsOf(attrs->GetListInt(kAttrActualSeqQlen));
    a.actualSeqKvlen = IntsOf(attrs->GetListInt(kAttrActualSeqKvlen));
    a.qStartIdx = IntsOf(attrs->GetListInt(kAttrQStartIdx));
    a.kvStartIdx = IntsOf(attrs->GetListInt(kAttrKvStartIdx));
    a.dropoutOrigin = IntsOf(attrs->GetListInt(kAttrDropoutOrigin));
    return true;
}

// One input as the problem module takes it, by its position in the OpDef (absent when an optional input is not
// connected: GetInputShape would count only the connected inputs).
template <typename Context>
inline FaTensorArg InputArg(const Context* ctx, uint32_t index, bool optional) {
    const auto* shape = optional ? ctx->GetOptionalInputShape(index) : ctx->GetRequiredInputShape(index);
    const auto* desc = optional ? ctx->GetOptionalInputDesc(index) : ctx->GetRequiredInputDesc(index);
    FaTensorArg t;
    if (shape == nullptr || desc == nullptr) return t;
    t.present = true;
    t.shape = DimVector(*shape);
    t.dtype = DtypeName(desc->GetDataType());
    return t;
}

// Where the forward and the backward op keep the inputs the problem reads.
struct FaOpInputs {
    uint32_t query, key, value, attenMask, sink, alibiSlopes, pse, dropoutMask;
};
constexpr FaOpInputs kFwdInputs{kFwdQuery, kFwdKey,         kFwdValue, kFwdAttenMask,
                                kFwdSink,  kFwdAlibiSlopes, kFwdPse,   kFwdDropoutMask};
constexpr FaOpInputs kGradInputs{kGradQuery, kGradKey,         kGradValue, kGradAttenMask,
                                 kGradSink,  kGradAlibiSlopes, kGradPse,   kGradDropoutMask};

// The problem module's view of this operator call: the op's mask input is the kernels' view, read in place.
inline void OpReading(FaCall& c) {
    c.maskIsKernelView = true;
    c.contiguousMask = true;
    c.dropMaskInPlaceDevice = "npu";
}

// The call of the forward or backward op; false when an input or attribute is missing.
template <typename Context>
inline bool ReadCall(const Context* ctx, const FaOpInputs& in, FaCall& c, FaOpBlocks& blocks) {
    if (!ReadAttrs(ctx->GetAttrs(), c.attrs, blocks)) return false;
    c.query = InputArg(ctx, in.query, false);
    c.key = InputArg(ctx, in.key, false);
    c.value = InputArg(ctx, in.value, false);
    if (!c.query.present || !c.key.present || !c.value.present) return false;
    c.attenMask = InputArg(ctx, in.attenMask, true);
    c.sink = InputArg(ctx, in.sink, true);
    const bool alibi = c.attrs.pseType == 2 || c.attrs.pseType == 3;  // the slopes input carries the op's pse
    c.pse = InputArg(ctx, alibi ? in.alibiSlopes : in.pse, true);
    c.dropoutMask = InputArg(ctx, in.dropoutMask, true);
    OpReading(c);
    return true;
}

// The backward's saved inputs, checked against the forward's shapes, and its partial_keys; false when the
// attribute is missing.
template <typename Context>
inline bool ReadGradInputs(const Context* ctx, FaCall& c) {
    c.grad = true;
    c.dy = InputArg(ctx, kGradDy, false);
    c.attentionIn = InputArg(ctx, kGradAttentionIn, false);
    c.softmaxMax = InputArg(ctx, kGradSoftmaxMax, false);
    c.softmaxSum = InputArg(ctx, kGradSoftmaxSum, false);
    c.attentionInResidual = InputArg(ctx, kGradAttentionInResidual, true);
    c.outResidual = c.attentionInResidual.present;
    const bool* partial = ctx->GetAttrs()->GetBool(kGradAttrPartialKeys);
    if (partial == nullptr) return false;
    c.partialKeys = *partial;
    return true;
}

// The forward's output_residual; false when the attribute is missing.
template <typename Context>
inline bool ReadFwdAttrs(const Context* ctx, FaCall& c) {
    const bool* residual = ctx->GetAttrs()->GetBool(kFwdAttrOutputResidual);
    if (residual == nullptr) return false;
    c.outResidual = *residual;
    return true;
}

// The block-map op: q/k/v shapes and dtype are attributes; the mask is its first input.
template <typename Context>
inline bool ReadMapCall(const Context* ctx, FaCall& c, FaOpBlocks& blocks) {
    const gert::RuntimeAttrs* attrs = ctx->GetAttrs();
    const auto* ms = ctx->GetRequiredInputShape(kMapAttenMask);
    if (!ReadAttrs(attrs, c.attrs, blocks) || ms == nullptr || attrs->GetInt(kMapAttrDtype) == nullptr) return false;
    const std::string dtype = *attrs->GetInt(kMapAttrDtype) == 1 ? "torch.bfloat16" : "torch.float16";
    const uint32_t shapes[] = {kMapAttrQueryShape, kMapAttrKeyShape, kMapAttrValueShape};
    FaTensorArg* args[] = {&c.query, &c.key, &c.value};
    for (int i = 0; i < 3; ++i) {
        args[i]->present = true;
        args[i]->shape = ListOf(attrs->GetListInt(shapes[i]));
        args[i]->dtype = dtype;
    }
    c.attenMask = InputArg(ctx, kMapAttenMask, false);
    OpReading(c);
    return true;
}

// Which of the three operators a context runs.
enum class FaOpKind { kForward, kBlockMap, kBackward };

// The problem of an operator call: the call read through the op's positions (the block-map op's at the planned
// blocks, which it requires; the backward's with its saved inputs) and the problem module's verdict. "" or why the
// call is refused.
template <typename Context>
inline std::string ReadProblem(const Context* ctx, FaOpKind kind, FaCall& c, FaOpBlocks& blocks, FaProblemInfo& info) {
    const bool ok = kind == FaOpKind::kBlockMap ? ReadMapCall(ctx, c, blocks)
                                                : ReadCall(ctx, kind == FaOpKind::kForward ? kFwdInputs : kGradInputs,
                                                           c, blocks);
    if (!ok) return "missing input shapes or attributes";
    if (kind == FaOpKind::kBlockMap) {
        if (blocks.s1Block <= 0 || blocks.s2Block <= 0) return "s1_block and s2_block are required";
        c.forceS1Block = (uint32_t)blocks.s1Block;
        c.forceS2Block = (uint32_t)blocks.s2Block;
    }
    if (kind == FaOpKind::kBackward && !ReadGradInputs(ctx, c)) return "missing attribute partial_keys";
    if (kind == FaOpKind::kForward && !ReadFwdAttrs(ctx, c)) return "missing attribute output_residual";
    const FaError e = BuildProblem(c, info);
    return e ? e.message : "";
}

// Logs why the call is refused (CANN's error log, EZ9999) and returns the failure status.
template <typename Context>
inline ge::graphStatus Refuse(const Context* ctx, const std::string& why) {
    OP_LOGE(ctx->GetNodeName(), "%s", why.c_str());
    return ge::GRAPH_FAILED;
}

}  // namespace op
}  // namespace npu_fa
