// torch_npu adapter of the inference op: the PrivateUse1 (NPU) kernel of torch.ops.npu.fused_infer_attention, the
// op python/npu_flash_attn/interfaces/fused_infer.py calls for NPU tensors (npu_fused_infer_attention_score and,
// through it, flash_attn_with_kvcache; the Python side defines the schema, checks the call and loads this library
// with npu_adapter.cpp's). Each call fills the problem module's FaInferCall, plans it with the same PlanInfer as
// the TilingFunc on the chip the platform reports, builds the seq_info input from the plan, and runs the operators
// through their two-phase aclnn API on the current NPU stream:
//   FlashAttentionNpuFaInfer -> [FlashAttentionNpuFaInferCombine (the plan splits the keys)], one workspace buffer.
// Not yet run on hardware.
#include <torch/library.h>
#include <ATen/ATen.h>

#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "aclnn_call.h"
#include "cann/fa_infer_op_args.h"
#include "cann/fa_platform.h"
#include "fa_kernel_args.h"
#include "plan/fa_launch_plan.h"
#include "problem/fa_infer_problem.h"

#ifndef NPU_FA_ACLNN_STANDIN  // the headers CANN's op build generates from op_host/cann/flash_attention_infer_def.cpp
#include "aclnn_flash_attention_npu_fa_infer.h"
#include "aclnn_flash_attention_npu_fa_infer_combine.h"
#endif

namespace {

namespace fa = npu_fa::op;
using npu_fa_adapter::AclArgs;
using npu_fa_adapter::Arg;
using npu_fa_adapter::Ints;
using npu_fa_adapter::Require;
using npu_fa_adapter::RunAclnn;

struct InferArgs {
    NPU_FA_INFER_INPUTS(NPU_FA_TENSOR_FIELD) NPU_FA_INFER_OUTPUTS(NPU_FA_TENSOR_FIELD)
};
struct CombineArgs {
    NPU_FA_INFER_COMBINE_INPUTS(NPU_FA_TENSOR_FIELD) NPU_FA_INFER_OUTPUTS(NPU_FA_TENSOR_FIELD)
};

// The antiquant tensors' description attributes of the call `c`: shape (empty: not given) and dtype code.
#define NPU_FA_ACL_ANTIQUANT_ATTRS(name, Name, member) \
    acl.A(c.member.present ? c.member.shape : none), c.member.present ? fa::InferDtypeCode(c.member.dtype) : -1,

// The attributes of both operators (fa_infer_op_args.h InferAttr order), for the aclnn call of `c` and its `acl`.
#define NPU_FA_ACL_INFER_ATTRS(c, layout)                                                                         \
    c.numHeads, c.scale, c.preTokens, c.nextTokens, &layout[0], c.numKeyValueHeads, c.sparseMode, c.innerPrecise, \
        c.blockSize, c.softmaxLseFlag, acl.A(c.actualSeqLengths.values), acl.A(c.actualSeqLengthsKv.values),       \
        c.windowLeft, c.windowRight, c.softcap, c.antiquantMode, c.keyAntiquantMode, c.valueAntiquantMode,         \
        NPU_FA_INFER_ANTIQUANT_TENSORS(NPU_FA_ACL_ANTIQUANT_ATTRS)

// The schema's tensors and attributes (python/npu_flash_attn/interfaces/fused_infer.py NPU_OP_SCHEMA): the
// built-in's, flash_attn's window, softcap and alibi_slopes, the antiquant tensors (described to the operators by
// attributes) and `antiquant`, their fp32 form the kernel reads (fused_infer.py's antiquant_params).
std::tuple<at::Tensor, at::Tensor> FusedInferAttentionNpu(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const c10::optional<at::Tensor>& block_table, const c10::optional<at::Tensor>& atten_mask,
    const c10::optional<at::Tensor>& pse_shift, const c10::optional<at::Tensor>& alibi_slopes,
    const c10::optional<at::Tensor>& antiquant_scale, const c10::optional<at::Tensor>& antiquant_offset,
    const c10::optional<at::Tensor>& key_antiquant_scale, const c10::optional<at::Tensor>& key_antiquant_offset,
    const c10::optional<at::Tensor>& value_antiquant_scale, const c10::optional<at::Tensor>& value_antiquant_offset,
    const c10::optional<at::Tensor>& antiquant, at::OptionalIntArrayRef actual_seq_lengths,
    at::OptionalIntArrayRef actual_seq_lengths_kv, int64_t num_heads, double scale, int64_t pre_tokens,
    int64_t next_tokens, c10::string_view input_layout, int64_t num_key_value_heads, int64_t sparse_mode,
    int64_t inner_precise, int64_t block_size, bool softmax_lse_flag, int64_t window_left, int64_t window_right,
    double softcap, int64_t antiquant_mode, int64_t key_antiquant_mode, int64_t value_antiquant_mode) {
    // The operators take dense row-major tensors: the call is the contiguous tensors' (the TilingFunc reads shapes).
    InferArgs args;
    args.query = query.contiguous(), args.key = key.contiguous(), args.value = value.contiguous();
    const std::pair<at::Tensor*, const c10::optional<at::Tensor>*> optional[] = {
        {&args.block_table, &block_table}, {&args.atten_mask, &atten_mask}, {&args.pse_shift, &pse_shift},
        {&args.alibi_slopes, &alibi_slopes}, {&args.antiquant, &antiquant}};
    for (const auto& [field, given] : optional) {
        if (given->has_value()) *field = (*given)->contiguous();
    }
    npu_fa::FaInferCall c;
    c.query = Arg(args.query), c.key = Arg(args.key), c.value = Arg(args.value);
    c.blockTable = Arg(args.block_table), c.attenMask = Arg(args.atten_mask);
    c.pseShift = Arg(args.pse_shift), c.alibiSlopes = Arg(args.alibi_slopes);
    c.antiquantScale = Arg(antiquant_scale), c.antiquantOffset = Arg(antiquant_offset);
    c.keyAntiquantScale = Arg(key_antiquant_scale), c.keyAntiquantOffset = Arg(key_antiquant_offset);
    c.valueAntiquantScale = Arg(value_antiquant_scale), c.valueAntiquantOffset = Arg(value_antiquant_offset);
    c.actualSeqLengths = Ints(actual_seq_lengths), c.actualSeqLengthsKv = Ints(actual_seq_lengths_kv);
    c.numHeads = num_heads, c.scale = scale, c.preTokens = pre_tokens, c.nextTokens = next_tokens;
    c.inputLayout = std::string(input_layout.data(), input_layout.size());
    c.numKeyValueHeads = num_key_value_heads, c.sparseMode = sparse_mode, c.innerPrecise = inner_precise;
    c.blockSize = block_size, c.softmaxLseFlag = softmax_lse_flag;
    c.windowLeft = window_left, c.windowRight = window_right, c.softcap = softcap;
    c.antiquantMode = antiquant_mode, c.keyAntiquantMode = key_antiquant_mode;
    c.valueAntiquantMode = value_antiquant_mode;
    npu_fa::FaInferProblemInfo info;
    Require(npu_fa::BuildInferProblem(c, info));
    // A column-broadcast mask is widened to rows of equal bytes on the twin path; the op's mask input is read in
    // its own shape, so that form has no operator reading yet.
    TORCH_CHECK_NOT_IMPLEMENTED(!(info.p.denseMask && info.mask.widen),
                                "npu_fused_infer_attention_score on NPU tensors: atten_mask of shape ",
                                atten_mask->sizes(),
                                " broadcasts its last (key) dimension; expand it to the key length first");
    at::Tensor out = at::zeros(info.outShape, query.options());
    at::Tensor lse = at::full(info.lseShape, softmax_lse_flag ? std::numeric_limits<double>::infinity() : 0.0,
                              query.options().dtype(at::kFloat));
    if (!npu_fa::InferHasWork(info.p)) return {out, lse};  // rows without keys: 0 and lse +inf
    TORCH_CHECK_VALUE(!info.p.kvQuant || (args.antiquant.defined() && args.antiquant.scalar_type() == at::kFloat &&
                                          args.antiquant.numel() == (int64_t)info.p.antiquantElems),
                      "npu_fused_infer_attention_score on NPU tensors: an int8 cache needs antiquant, float32 with ",
                      info.p.antiquantElems, " elements (fused_infer.antiquant_params)");
    const platform_ascendc::PlatformAscendC* plat = platform_ascendc::PlatformAscendCManager::GetInstance();
    TORCH_CHECK(plat != nullptr, "npu_fused_infer_attention_score: no CANN platform information (is the NPU visible?)");
    const npu_fa::ChipSpec chip = fa::ChipFromPlatform(*plat);
    std::string err = fa::CheckPlatform(*plat, chip);
    TORCH_CHECK(err.empty(), "npu_fused_infer_attention_score: ", err);
    npu_fa::FaInferPlan plan;
    err = npu_fa::PlanInfer(info.p, chip, plan);
    TORCH_CHECK(err.empty(), "npu_fused_infer_attention_score tiling: ", err);
    args.seq_info = at::tensor(plan.launch.seqInfo, at::TensorOptions().dtype(at::kLong)).to(query.device());
    args.attention_out = out, args.softmax_lse = lse;
    std::string layout = c.inputLayout;
    const std::vector<int64_t> none;
    at::Tensor workspace;  // the main pass leaves the splits' partials there for the combine pass
    {
        AclArgs acl;
        RunAclnn(
            "aclnnFlashAttentionNpuFaInfer",
            [&](uint64_t* size, aclOpExecutor** exec) {
                return aclnnFlashAttentionNpuFaInferGetWorkspaceSize(
                    NPU_FA_INFER_INPUTS(NPU_FA_ACL_TENSOR) NPU_FA_ACL_INFER_ATTRS(c, layout)
                    NPU_FA_INFER_OUTPUTS(NPU_FA_ACL_TENSOR) size, exec);
            },
            aclnnFlashAttentionNpuFaInfer, workspace, query, true);
    }
    if (plan.combine) {
        CombineArgs combine;
        combine.seq_info = args.seq_info, combine.attention_out = out, combine.softmax_lse = lse;
        AclArgs acl;
        const CombineArgs& args = combine;  // the argument-list macros read `args`
        RunAclnn(
            "aclnnFlashAttentionNpuFaInferCombine",
            [&](uint64_t* size, aclOpExecutor** exec) {
                return aclnnFlashAttentionNpuFaInferCombineGetWorkspaceSize(
                    NPU_FA_INFER_COMBINE_INPUTS(NPU_FA_ACL_TENSOR) NPU_FA_ACL_INFER_ATTRS(c, layout)
                    acl.A(c.query.shape), acl.A(c.key.shape), acl.A(c.value.shape),
                    acl.A(c.blockTable.present ? c.blockTable.shape : none),
                    acl.A(c.attenMask.present ? c.attenMask.shape : none), fa::InferDtypeCode(c.query.dtype),
                    acl.A(c.pseShift.present ? c.pseShift.shape : none),
                    acl.A(c.alibiSlopes.present ? c.alibiSlopes.shape : none), fa::InferDtypeCode(c.key.dtype),
                    NPU_FA_INFER_OUTPUTS(NPU_FA_ACL_TENSOR) size, exec);
            },
            aclnnFlashAttentionNpuFaInferCombine, workspace, query, false);
    }
    return {out, lse};
}

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) {
    m.impl("fused_infer_attention", TORCH_FN(FusedInferAttentionNpu));
}
