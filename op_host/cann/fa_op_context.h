// Reading an operator call (gert::TilingContext / InferShapeContext) into fa_op_args.h's FaOpShapes/FaOpAttrs,
// shared by the TilingFuncs and the InferShape functions.
#pragma once
#include <string>
#include <vector>

#include "exe_graph/runtime/runtime_attrs.h"
#include "exe_graph/runtime/shape.h"
#include "exe_graph/runtime/storage_shape.h"
#include "graph/ge_error_codes.h"
#include "log/log.h"

#include "cann/fa_op_args.h"

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

// The common attributes (fa::Attr order); false when one is missing.
inline bool ReadAttrs(const gert::RuntimeAttrs* attrs, FaOpAttrs& a) {
    if (attrs == nullptr) return false;
    const int64_t* headNum = attrs->GetInt(kAttrHeadNum);
    const char* layout = attrs->GetStr(kAttrInputLayout);
    const float* scale = attrs->GetFloat(kAttrScale);
    const float* keepProb = attrs->GetFloat(kAttrKeepProb);
    const float* softcap = attrs->GetFloat(kAttrSoftcap);
    const int64_t* ints[] = {attrs->GetInt(kAttrPreTokens), attrs->GetInt(kAttrNextTokens),
                             attrs->GetInt(kAttrInnerPrecise), attrs->GetInt(kAttrSparseMode),
                             attrs->GetInt(kAttrS1Block), attrs->GetInt(kAttrS2Block)};
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
    a.softcap = *softcap;
    const int64_t* pseType = attrs->GetInt(kAttrPseType);
    if (pseType == nullptr) return false;
    a.pseType = *pseType;
    a.qStartIdx = ListOf(attrs->GetListInt(kAttrQStartIdx));
    a.kvStartIdx = ListOf(attrs->GetListInt(kAttrKvStartIdx));
    a.preTokens = *ints[0];
    a.nextTokens = *ints[1];
    a.innerPrecise = *ints[2];
    a.sparseMode = *ints[3];
    const int64_t* seed = attrs->GetInt(kAttrSeed);
    const int64_t* offset = attrs->GetInt(kAttrOffset);
    if (seed == nullptr || offset == nullptr) return false;
    a.seed = *seed;
    a.offset = *offset;
    a.s1Block = *ints[4];
    a.s2Block = *ints[5];
    a.prefix = ListOf(attrs->GetListInt(kAttrPrefix));
    a.actualSeqQlen = ListOf(attrs->GetListInt(kAttrActualSeqQlen));
    a.actualSeqKvlen = ListOf(attrs->GetListInt(kAttrActualSeqKvlen));
    return true;
}

// q/k/v shapes and the optional mask of an op whose inputs include them (forward, backward).
template <typename Context>
inline bool ReadShapes(const Context* ctx, uint32_t q, uint32_t k, uint32_t v, uint32_t mask, FaOpShapes& s) {
    const auto* qs = ctx->GetInputShape(q);
    const auto* ks = ctx->GetInputShape(k);
    const auto* vs = ctx->GetInputShape(v);
    if (qs == nullptr || ks == nullptr || vs == nullptr) return false;
    s.query = DimVector(*qs);
    s.key = DimVector(*ks);
    s.value = DimVector(*vs);
    const auto* ms = ctx->GetOptionalInputShape(mask);
    s.hasMask = ms != nullptr;
    if (s.hasMask) s.mask = DimVector(*ms);
    return true;
}

// The block-map op: q/k/v shapes and dtype are attributes; the mask is its first input.
template <typename Context>
inline bool ReadMapShapes(const Context* ctx, FaOpShapes& s) {
    const gert::RuntimeAttrs* attrs = ctx->GetAttrs();
    const auto* ms = ctx->GetInputShape(kMapAttenMask);
    if (attrs == nullptr || ms == nullptr || attrs->GetInt(kMapAttrDtype) == nullptr) return false;
    s.query = ListOf(attrs->GetListInt(kMapAttrQueryShape));
    s.key = ListOf(attrs->GetListInt(kMapAttrKeyShape));
    s.value = ListOf(attrs->GetListInt(kMapAttrValueShape));
    s.bf16 = *attrs->GetInt(kMapAttrDtype) == 1;
    s.hasMask = true;
    s.mask = DimVector(*ms);
    return true;
}

// Logs why the call is refused (CANN's error log, EZ9999) and returns the failure status.
template <typename Context>
inline ge::graphStatus Refuse(const Context* ctx, const std::string& why) {
    OP_LOGE(ctx->GetNodeName(), "%s", why.c_str());
    return ge::GRAPH_FAILED;
}

}  // namespace op
}  // namespace npu_fa
