// Operator prototypes of the inference op (torch_npu's npu_fused_infer_attention_score on our kernels):
// FlashAttentionNpuFaInfer (kernel flash_attention_infer) and its split-KV combine pass FlashAttentionNpuFaInferCombine
// (kernel flash_attention_infer_combine, vector cores only). Inputs then outputs are the kernel entries' arguments,
// from fa_kernel_args.h (the build appends workspace and tiling); attribute names and defaults are the built-in's,
// attribute order fa_infer_op_args.h's. Unlike the built-in (whose actual_seq_lengths are value-dependent int64
// inputs), the length lists are ListInt attributes, as the training op's; the caller builds seq_info from them.
// Unlike the built-in's too, an int8 cache's antiquant scales and offsets are one fp32 input in the kernel's form
// (the caller packs them), described by shape and dtype attributes so the TilingFuncs check the caller's tensors.
#include <vector>

#include "register/op_def_registry.h"

#include "cann/fa_infer_op_args.h"
#include "cann/fa_op_funcs.h"
#include "cann/fa_opdef_parts.h"
#include "problem/fa_call.h"

namespace ops {
namespace {

using fa_opdef::BindKernel;

// torch_npu's scalar arguments of the built-in, its names and defaults, flash_attn's window and softcap, the antiquant
// modes and the antiquant tensors' descriptions (InferAttr order).
void InferAttrs(OpDef& def) {
    def.Attr("num_heads").AttrType(OPTIONAL).Int(1);
    def.Attr("scale").AttrType(OPTIONAL).Float(1.0f);
    def.Attr("pre_tokens").AttrType(OPTIONAL).Int(npu_fa::kInt32Max);
    def.Attr("next_tokens").AttrType(OPTIONAL).Int(npu_fa::kInt32Max);
    def.Attr("input_layout").AttrType(OPTIONAL).String("BSH");
    def.Attr("num_key_value_heads").AttrType(OPTIONAL).Int(0);
    def.Attr("sparse_mode").AttrType(OPTIONAL).Int(0);
    def.Attr("inner_precise").AttrType(OPTIONAL).Int(0);
    def.Attr("block_size").AttrType(OPTIONAL).Int(0);
    def.Attr("softmax_lse_flag").AttrType(OPTIONAL).Bool(false);
    def.Attr("actual_seq_lengths").AttrType(OPTIONAL).ListInt({});
    def.Attr("actual_seq_lengths_kv").AttrType(OPTIONAL).ListInt({});
    def.Attr("window_left").AttrType(OPTIONAL).Int(-1);
    def.Attr("window_right").AttrType(OPTIONAL).Int(-1);
    def.Attr("softcap").AttrType(OPTIONAL).Float(0.0f);
    def.Attr("antiquant_mode").AttrType(OPTIONAL).Int(0);
    def.Attr("key_antiquant_mode").AttrType(OPTIONAL).Int(0);
    def.Attr("value_antiquant_mode").AttrType(OPTIONAL).Int(0);
#define NPU_FA_ANTIQUANT_ATTRS(name, Name, member)               \
    def.Attr(#name "_shape").AttrType(OPTIONAL).ListInt({});      \
    def.Attr(#name "_dtype").AttrType(OPTIONAL).Int(-1);
    NPU_FA_INFER_ANTIQUANT_TENSORS(NPU_FA_ANTIQUANT_ATTRS)
#undef NPU_FA_ANTIQUANT_ATTRS
}

}  // namespace

// Each op's dtype combinations (position by position over its inputs and outputs) are members of its class, where
// the argument lists' dtype tokens find them.
class FlashAttentionNpuFaInfer : public OpDef {
    // query dtype x cache (the query's dtype or int8) x mask dtype (nonzero = masked out)
    inline static const std::vector<ge::DataType> kQkv = {
        ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT16, ge::DT_BF16,
        ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT16, ge::DT_BF16};
    inline static const std::vector<ge::DataType> kKv = {
        ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT16, ge::DT_BF16,
        ge::DT_INT8,    ge::DT_INT8, ge::DT_INT8,    ge::DT_INT8, ge::DT_INT8,    ge::DT_INT8};
    inline static const std::vector<ge::DataType> kMask = {
        ge::DT_BOOL, ge::DT_BOOL, ge::DT_INT8, ge::DT_INT8, ge::DT_UINT8, ge::DT_UINT8,
        ge::DT_BOOL, ge::DT_BOOL, ge::DT_INT8, ge::DT_INT8, ge::DT_UINT8, ge::DT_UINT8};
    inline static const std::vector<ge::DataType> kI32 = std::vector<ge::DataType>(12, ge::DT_INT32);
    inline static const std::vector<ge::DataType> kI64 = std::vector<ge::DataType>(12, ge::DT_INT64);
    inline static const std::vector<ge::DataType> kF32 = std::vector<ge::DataType>(12, ge::DT_FLOAT);

public:
    explicit FlashAttentionNpuFaInfer(const char* name) : OpDef(name) {
        NPU_FA_INFER_INPUTS(NPU_FA_OPDEF_INPUT)
        NPU_FA_INFER_OUTPUTS(NPU_FA_OPDEF_OUTPUT)
        InferAttrs(*this);
        this->SetInferShape(InferShapeFlashAttentionNpuFaInfer).SetInferDataType(InferDataTypeFlashAttentionNpuFaInfer);
        BindKernel(*this, optiling::TilingFlashAttentionNpuFaInfer, "flash_attention_infer");
    }
};

class FlashAttentionNpuFaInferCombine : public OpDef {
    // the query dtype
    inline static const std::vector<ge::DataType> kQkv = {ge::DT_FLOAT16, ge::DT_BF16};
    inline static const std::vector<ge::DataType> kI64 = {ge::DT_INT64, ge::DT_INT64};
    inline static const std::vector<ge::DataType> kF32 = {ge::DT_FLOAT, ge::DT_FLOAT};

public:
    explicit FlashAttentionNpuFaInferCombine(const char* name) : OpDef(name) {
        NPU_FA_INFER_COMBINE_INPUTS(NPU_FA_OPDEF_INPUT)
        NPU_FA_INFER_OUTPUTS(NPU_FA_OPDEF_OUTPUT)  // written in place: the main pass's outputs
        InferAttrs(*this);
        // The main pass's tensors (CombineAttr order): the problem and plan its TilingFunc rebuilds.
        this->Attr("query_shape").AttrType(REQUIRED).ListInt();
        this->Attr("key_shape").AttrType(REQUIRED).ListInt();
        this->Attr("value_shape").AttrType(REQUIRED).ListInt();
        this->Attr("block_table_shape").AttrType(OPTIONAL).ListInt({});
        this->Attr("atten_mask_shape").AttrType(OPTIONAL).ListInt({});
        this->Attr("dtype").AttrType(OPTIONAL).Int(0);
        this->Attr("pse_shift_shape").AttrType(OPTIONAL).ListInt({});
        this->Attr("alibi_slopes_shape").AttrType(OPTIONAL).ListInt({});
        this->Attr("kv_dtype").AttrType(OPTIONAL).Int(0);
        this->SetInferShape(InferShapeFlashAttentionNpuFaInferCombine)
            .SetInferDataType(InferDataTypeFlashAttentionNpuFaInferCombine);
        BindKernel(*this, optiling::TilingFlashAttentionNpuFaInferCombine, "flash_attention_infer_combine");
    }
};

OP_ADD(FlashAttentionNpuFaInfer);
OP_ADD(FlashAttentionNpuFaInferCombine);

}  // namespace ops
