// The CANN operators' view of an inference call (npu_fused_infer_attention_score): input/attribute positions of the
// inference OpDef and of its split-KV combine pass. Pure C++ (no CANN header); fa_infer_op_context.h reads a call
// through them into the problem module's FaInferCall, the one the torch_npu adapter fills too.
#pragma once
#include <cstdint>

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

// Attributes of both ops, in declaration order (= GetAttrs() index): torch_npu's scalar arguments of the built-in,
// with its names and defaults (the length lists as ListInt, empty = None).
enum InferAttr : uint32_t {
    kInferAttrNumHeads = 0, kInferAttrScale, kInferAttrPreTokens, kInferAttrNextTokens, kInferAttrInputLayout,
    kInferAttrNumKeyValueHeads, kInferAttrSparseMode, kInferAttrInnerPrecise, kInferAttrBlockSize,
    kInferAttrSoftmaxLseFlag, kInferAttrActualSeqLengths, kInferAttrActualSeqLengthsKv, kInferAttrs
};
// The combine pass has no q/k/v, block_table or mask inputs (its kernel reads only the workspace): their shapes
// (an empty block_table_shape / atten_mask_shape: not given) and the query dtype (0 fp16, 1 bf16) come as
// attributes, so its TilingFunc builds the main pass's problem and plan.
enum CombineAttr : uint32_t {
    kCombineAttrQueryShape = kInferAttrs, kCombineAttrKeyShape, kCombineAttrValueShape, kCombineAttrBlockTableShape,
    kCombineAttrAttenMaskShape, kCombineAttrDtype
};

}  // namespace op
}  // namespace npu_fa
