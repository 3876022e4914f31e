// The CANN operators' view of an inference call (npu_fused_infer_attention_score): input/attribute positions of the
// inference OpDef and of its split-KV combine pass. Pure C++ (no CANN header); fa_infer_op_context.h reads a call
// through them into the problem module's FaInferCall, the one the torch_npu adapter fills too.
#pragma once
#include <cstdint>
#include <string>

#include "fa_kernel_args.h"

namespace npu_fa {
namespace op {

// Op types (OpDef class names); their kernel entries are flash_attention_infer / flash_attention_infer_combine.
constexpr const char* kInferOp = "FlashAttentionNpuFaInfer";
constexpr const char* kInferCombineOp = "FlashAttentionNpuFaInferCombine";

// Input and output positions, in kernel-argument order (fa_kernel_args.h): kInferQuery, ..., kCombineSoftmaxLse.
#define NPU_FA_POSITION_INFER(name, Name, dtypes, presence) kInfer##Name,
#define NPU_FA_POSITION_COMBINE(name, Name, dtypes, presence) kCombine##Name,
enum InferInput : uint32_t { NPU_FA_INFER_INPUTS(NPU_FA_POSITION_INFER) };
enum InferOutput : uint32_t { NPU_FA_INFER_OUTPUTS(NPU_FA_POSITION_INFER) };
enum CombineInput : uint32_t { NPU_FA_INFER_COMBINE_INPUTS(NPU_FA_POSITION_COMBINE) };
enum CombineOutput : uint32_t { NPU_FA_INFER_OUTPUTS(NPU_FA_POSITION_COMBINE) };
#undef NPU_FA_POSITION_INFER
#undef NPU_FA_POSITION_COMBINE

// An int8 cache's antiquant tensors (name, Name, FaInferCall member): the kernel reads only their fp32 form (the
// antiquant input), so each is described to the TilingFuncs by two attributes, <name>_shape (ListInt, empty: not
// given) and <name>_dtype (a kInferDtypes code, -1: not given).
#define NPU_FA_INFER_ANTIQUANT_TENSORS(X)                             \
    X(antiquant_scale, AntiquantScale, antiquantScale)                \
    X(antiquant_offset, AntiquantOffset, antiquantOffset)             \
    X(key_antiquant_scale, KeyAntiquantScale, keyAntiquantScale)      \
    X(key_antiquant_offset, KeyAntiquantOffset, keyAntiquantOffset)   \
    X(value_antiquant_scale, ValueAntiquantScale, valueAntiquantScale) \
    X(value_antiquant_offset, ValueAntiquantOffset, valueAntiquantOffset)

// Attributes of both ops, in declaration order (= GetAttrs() index): torch_npu's scalar arguments of the built-in,
// with its names and defaults (the length lists as ListInt, empty = None), flash_attn's window and softcap (the
// kvcache drop-in's; FaInferCall's names), the antiquant modes, then the antiquant tensors' descriptions.
#define NPU_FA_ANTIQUANT_ATTR_POSITIONS(name, Name, member) kInferAttr##Name##Shape, kInferAttr##Name##Dtype,
enum InferAttr : uint32_t {
    kInferAttrNumHeads = 0, kInferAttrScale, kInferAttrPreTokens, kInferAttrNextTokens, kInferAttrInputLayout,
    kInferAttrNumKeyValueHeads, kInferAttrSparseMode, kInferAttrInnerPrecise, kInferAttrBlockSize,
    kInferAttrSoftmaxLseFlag, kInferAttrActualSeqLengths, kInferAttrActualSeqLengthsKv, kInferAttrWindowLeft,
    kInferAttrWindowRight, kInferAttrSoftcap, kInferAttrAntiquantMode, kInferAttrKeyAntiquantMode,
    kInferAttrValueAntiquantMode, NPU_FA_INFER_ANTIQUANT_TENSORS(NPU_FA_ANTIQUANT_ATTR_POSITIONS) kInferAttrs
};
#undef NPU_FA_ANTIQUANT_ATTR_POSITIONS
// The combine pass has no tensor inputs but seq_info (its kernel reads only the workspace): the main pass's tensors
// come as shape attributes (empty for an optional one: not given) and the query's and the caches' dtypes as
// kInferDtypes codes, so its TilingFunc builds the main pass's problem and plan.
enum CombineAttr : uint32_t {
    kCombineAttrQueryShape = kInferAttrs, kCombineAttrKeyShape, kCombineAttrValueShape, kCombineAttrBlockTableShape,
    kCombineAttrAttenMaskShape, kCombineAttrDtype, kCombineAttrPseShiftShape, kCombineAttrAlibiSlopesShape,
    kCombineAttrKvDtype
};

// The dtype attributes' codes: the index in this table (the combine pass's dtype: 0 fp16, 1 bf16).
constexpr const char* kInferDtypes[] = {"torch.float16", "torch.bfloat16", "torch.float32", "torch.int8"};
constexpr int64_t kInferDtypeCount = sizeof(kInferDtypes) / sizeof(kInferDtypes[0]);

// A code's torch dtype name ("torch.other" for a code outside the table: the problem module refuses it by name).
inline std::string InferDtypeName(int64_t code) {
    return code >= 0 && code < kInferDtypeCount ? kInferDtypes[code] : "torch.other";
}

// A torch dtype name's code; -1 for a dtype outside the table.
inline int64_t InferDtypeCode(const std::string& name) {
    for (int64_t i = 0; i < kInferDtypeCount; ++i) {
        if (name == kInferDtypes[i]) return i;
    }
    return -1;
}

}  // namespace op
}  // namespace npu_fa
