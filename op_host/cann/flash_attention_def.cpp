// Operator prototypes of the CANN operator package: the forward (FlashAttentionNpuFa), its dense-mask block-map
// pre-pass (FlashAttentionNpuFaBlockMap) and the backward (FlashAttentionNpuFaGrad). Inputs then outputs are the
// kernel entries' arguments, from fa_kernel_args.h (the build appends workspace and tiling); attribute names and
// defaults follow the torch schemas (ops.py SCHEMA, backward.py GRAD_SCHEMA); attribute order is fa_op_args.h's. The
// torch schema's padding_mask is no operator input: the problem module refuses it.
#include <vector>

#include "register/op_def_registry.h"

#include "cann/fa_op_args.h"
#include "cann/fa_op_funcs.h"
#include "cann/fa_opdef_parts.h"

namespace ops {
namespace {

namespace fa = npu_fa::op;
using fa_opdef::BindKernel;

// The dtype combinations (position by position over all inputs and outputs): q/k/v dtype x mask dtype.
const std::vector<ge::DataType> kQkv = {ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT16, ge::DT_BF16};
const std::vector<ge::DataType> kMask = {ge::DT_UINT8, ge::DT_UINT8, ge::DT_BOOL, ge::DT_BOOL};
const std::vector<ge::DataType> kU8 = {ge::DT_UINT8, ge::DT_UINT8, ge::DT_UINT8, ge::DT_UINT8};
const std::vector<ge::DataType> kI64 = {ge::DT_INT64, ge::DT_INT64, ge::DT_INT64, ge::DT_INT64};
const std::vector<ge::DataType> kF32 = {ge::DT_FLOAT, ge::DT_FLOAT, ge::DT_FLOAT, ge::DT_FLOAT};
// The block-map op's combinations: its mask's dtype.
const std::vector<ge::DataType> kMapMask = {ge::DT_UINT8, ge::DT_BOOL};
const std::vector<ge::DataType> kMapI64 = {ge::DT_INT64, ge::DT_INT64};
const std::vector<ge::DataType> kMapU8 = {ge::DT_UINT8, ge::DT_UINT8};

// The torch schema's scalar arguments, then the blocks seq_info was built for (fa::Attr order).
void CommonAttrs(OpDef& def) {
    def.Attr("head_num").AttrType(REQUIRED).Int();
    def.Attr("input_layout").AttrType(REQUIRED).String();
    def.Attr("scale").AttrType(OPTIONAL).Float(1.0f);
    def.Attr("keep_prob").AttrType(OPTIONAL).Float(1.0f);
    def.Attr("pre_tokens").AttrType(OPTIONAL).Int(npu_fa::kInt32Max);
    def.Attr("next_tokens").AttrType(OPTIONAL).Int(npu_fa::kInt32Max);
    def.Attr("inner_precise").AttrType(OPTIONAL).Int(0);
    def.Attr("prefix").AttrType(OPTIONAL).ListInt({});
    def.Attr("actual_seq_qlen").AttrType(OPTIONAL).ListInt({});
    def.Attr("actual_seq_kvlen").AttrType(OPTIONAL).ListInt({});
    def.Attr("sparse_mode").AttrType(OPTIONAL).Int(0);
    def.Attr("seed").AttrType(OPTIONAL).Int(0);
    def.Attr("offset").AttrType(OPTIONAL).Int(0);
    def.Attr("softcap").AttrType(OPTIONAL).Float(0.0f);  // the schema's None
    def.Attr("pse_type").AttrType(OPTIONAL).Int(1);
    def.Attr("q_start_idx").AttrType(OPTIONAL).ListInt({});
    def.Attr("kv_start_idx").AttrType(OPTIONAL).ListInt({});
    def.Attr("dropout_origin").AttrType(OPTIONAL).ListInt({});
    def.Attr("s1_block").AttrType(OPTIONAL).Int(0);
    def.Attr("s2_block").AttrType(OPTIONAL).Int(0);
}

}  // namespace

class FlashAttentionNpuFa : public OpDef {
public:
    explicit FlashAttentionNpuFa(const char* name) : OpDef(name) {
        NPU_FA_FWD_INPUTS(NPU_FA_OPDEF_INPUT)
        NPU_FA_FWD_OUTPUTS(NPU_FA_OPDEF_OUTPUT)
        CommonAttrs(*this);
        // attention_out_residual is written only with output_residual (the backward's attention_in_residual).
        this->Attr("output_residual").AttrType(OPTIONAL).Bool(false);
        this->SetInferShape(InferShapeFlashAttentionNpuFa).SetInferDataType(InferDataTypeFlashAttentionNpuFa);
        BindKernel(*this, optiling::TilingFlashAttentionNpuFa, "flash_attention_fwd");
    }
};

class FlashAttentionNpuFaBlockMap : public OpDef {
public:
    explicit FlashAttentionNpuFaBlockMap(const char* name) : OpDef(name) {
        NPU_FA_MAP_INPUTS(NPU_FA_OPDEF_INPUT)
        NPU_FA_MAP_OUTPUTS(NPU_FA_OPDEF_OUTPUT)
        CommonAttrs(*this);
        // No q/k/v inputs: the problem's shapes and dtype (0 fp16, 1 bf16) come as attributes.
        this->Attr("query_shape").AttrType(REQUIRED).ListInt();
        this->Attr("key_shape").AttrType(REQUIRED).ListInt();
        this->Attr("value_shape").AttrType(REQUIRED).ListInt();
        this->Attr("dtype").AttrType(OPTIONAL).Int(0);
        this->SetInferShape(InferShapeFlashAttentionNpuFaBlockMap)
            .SetInferDataType(InferDataTypeFlashAttentionNpuFaBlockMap);
        BindKernel(*this, optiling::TilingFlashAttentionNpuFaBlockMap, "flash_attention_block_map");
    }
};

class FlashAttentionNpuFaGrad : public OpDef {
public:
    explicit FlashAttentionNpuFaGrad(const char* name) : OpDef(name) {
        NPU_FA_GRAD_INPUTS(NPU_FA_OPDEF_INPUT)
        NPU_FA_GRAD_OUTPUTS(NPU_FA_OPDEF_OUTPUT)
        CommonAttrs(*this);
        this->Attr("deterministic").AttrType(OPTIONAL).Bool(false);
        this->Attr("partial_keys").AttrType(OPTIONAL).Bool(false);
        // The backward is the grad tiling's kernel launches, sharing one workspace: which one this call is.
        this->Attr("launch").AttrType(OPTIONAL).Int(0);
        this->SetInferShape(InferShapeFlashAttentionNpuFaGrad).SetInferDataType(InferDataTypeFlashAttentionNpuFaGrad);
        BindKernel(*this, optiling::TilingFlashAttentionNpuFaGrad, "flash_attention_bwd");
    }
};

OP_ADD(FlashAttentionNpuFa);
OP_ADD(FlashAttentionNpuFaBlockMap);
OP_ADD(FlashAttentionNpuFaGrad);

}  // namespace ops
