// torch_npu adapter: the PrivateUse1 (NPU) kernels of torch.ops.npu.flash_attention and flash_attention_grad (the
// schemas are python/npu_flash_attn's; the Python package defines them and loads this library). Each call plans
// on the host with the same pure-C++ code as the TilingFunc (op_host/cann/fa_op_args.h builds the problem,
// op_host/*tiling_host.cpp the tiling) to build the seq_info input, then runs the operators through their two-phase
// aclnn API on the current NPU stream with workspaces from the caching allocator:
//   forward:  [FlashAttentionNpuFaBlockMap (dense mask)] -> FlashAttentionNpuFa
//   backward: [FlashAttentionNpuFaBlockMap (dense mask, backward blocks)] -> FlashAttentionNpuFaGrad, once per launch
//             the grad tiling returns (FaGradTilingOut::launches), all with one workspace buffer.
// Block maps are cached per mask (block_map_cache.h). The argument checks with Python's messages run before
// dispatch (python/npu_flash_attn/dispatch.py); the ones here guard the structure. Not yet run on hardware.
#include <torch/library.h>
#include <ATen/ATen.h>

#include <iterator>
#include <string>
#include <tuple>
#include <vector>

#include "torch_npu/csrc/core/npu/NPUStream.h"
#include "op_plugin/utils/op_api_common.h"

#include "aclnn_call.h"
#include "block_map_cache.h"
#include "cann/fa_platform.h"
#include "fa_kernel_args.h"
#include "plan/fa_block_map_key.h"
#include "plan/fa_launch_plan.h"
#include "problem/fa_problem_build.h"

#ifndef NPU_FA_ACLNN_STANDIN  // the headers CANN's op build generates from op_host/cann/flash_attention_def.cpp
#include "aclnn_flash_attention_npu_fa.h"
#include "aclnn_flash_attention_npu_fa_block_map.h"
#include "aclnn_flash_attention_npu_fa_grad.h"
#endif

namespace {

namespace fa = npu_fa::op;
using npu_fa_adapter::AclArgs;
using npu_fa_adapter::Arg;
using npu_fa_adapter::Ints;
using npu_fa_adapter::Require;
using npu_fa_adapter::RunAclnn;
constexpr double kFltMax = 3.4028234663852886e38;  // invalid rows: softmax_max = -FLT_MAX, softmax_sum = +FLT_MAX

// The attributes every operator takes (fa_op_args.h Attr order), for the aclnn call of `a` and its `acl` objects.
#define NPU_FA_ACL_ATTRS(a, layout, seed, offset, s1Block, s2Block)                                                   \
    a.headNum, &layout[0], a.scale, a.keepProb, a.preTokens, a.nextTokens, a.innerPrecise, acl.A(a.prefix.values),     \
        acl.A(a.actualSeqQlen.values), acl.A(a.actualSeqKvlen.values), a.sparseMode, seed, offset, a.softcap,           \
        a.pseType, acl.A(a.qStartIdx.values), acl.A(a.kvStartIdx.values), acl.A(a.dropoutOrigin.values), s1Block,     \
        s2Block
struct FwdArgs {
    NPU_FA_FWD_INPUTS(NPU_FA_TENSOR_FIELD) NPU_FA_FWD_OUTPUTS(NPU_FA_TENSOR_FIELD)
};
struct MapArgs {
    NPU_FA_MAP_INPUTS(NPU_FA_TENSOR_FIELD) NPU_FA_MAP_OUTPUTS(NPU_FA_TENSOR_FIELD)
};
struct GradArgs {
    NPU_FA_GRAD_INPUTS(NPU_FA_TENSOR_FIELD) NPU_FA_GRAD_OUTPUTS(NPU_FA_TENSOR_FIELD)
};

// The call as the operators see it: attributes, the problem, the mask in its kernel view, the chip.
struct Call {
    npu_fa::FaCall call;
    npu_fa::FaProblemInfo info;
    at::Tensor userMask;  // dense masks only: the caller's atten_mask (the block-map cache's key)
    at::Tensor mask;      // ... and its kernel view (info.mask), contiguous
    at::Tensor slopes;    // in-kernel ALiBi (pse_type 2/3): the caller's pse, contiguous
    at::Tensor pse;       // an outer bias (pse_type 0/1): the caller's pse, contiguous
    at::Tensor dropMask;  // a user dropout mask (keep bits as rows of S2 / 8 bytes), contiguous
    npu_fa::ChipSpec chip{};

    const npu_fa::FaProblem& p() const { return info.p; }
    const npu_fa::FaAttrs& a() const { return call.attrs; }
};

// The dense mask as the kernels read it (the problem's view: broadcast dimensions narrowed, a column-broadcast mask
// widened to rows of equal bytes), contiguous: the op takes its mask input as a plain tensor.
at::Tensor KernelMask(const at::Tensor& m, const npu_fa::FaProblemInfo& info) {
    if (info.p.layout == npu_fa::kTND) return m.contiguous();
    at::Tensor v = m;
    while (v.dim() < 4) v = v.unsqueeze(0);
    for (uint32_t d : info.mask.narrow) v = v.narrow(d, 0, 1);
    if (info.mask.widen) v = v.expand(info.mask.shape);
    return v.contiguous();
}

void Plan(Call& c, const at::Tensor& q) {
    c.call.contiguousMask = true;
    c.call.dropMaskInPlaceDevice = q.device().str();
    Require(npu_fa::BuildProblem(c.call, c.info));
    const npu_fa::FaProblem& p = c.p();
    if (p.denseMask) c.mask = KernelMask(c.userMask, c.info);
    const platform_ascendc::PlatformAscendC* plat = platform_ascendc::PlatformAscendCManager::GetInstance();
    TORCH_CHECK(plat != nullptr, "flash_attention: no CANN platform information (is the NPU visible?)");
    c.chip = fa::ChipFromPlatform(*plat);
    const std::string err = fa::CheckPlatform(*plat, c.chip);
    TORCH_CHECK(err.empty(), "flash_attention: ", err);
}

// The call's tensors and attributes (the torch schema's), planned.
Call MakeCall(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const c10::optional<at::Tensor>& pse,
              const c10::optional<at::Tensor>& paddingMask, const c10::optional<at::Tensor>& attenMask,
              const c10::optional<at::Tensor>& sink, const c10::optional<at::Tensor>& dropoutMask, int64_t headNum,
              c10::string_view layout, double scale, double keepProb, int64_t pre, int64_t next, int64_t innerPrecise,
              at::OptionalIntArrayRef prefix, at::OptionalIntArrayRef cuQ, at::OptionalIntArrayRef cuKv,
              int64_t sparseMode, int64_t seed, int64_t offset, c10::optional<double> softcap, int64_t pseType,
              at::OptionalIntArrayRef qStartIdx, at::OptionalIntArrayRef kvStartIdx,
              at::OptionalIntArrayRef dropoutOrigin, const std::vector<c10::optional<at::Tensor>>& saved = {},
              bool partialKeys = false, bool outputResidual = false) {
    Call c;
    npu_fa::FaCall& call = c.call;
    call.query = Arg(q), call.key = Arg(k), call.value = Arg(v);
    call.pse = Arg(pse), call.paddingMask = Arg(paddingMask), call.attenMask = Arg(attenMask);
    call.sink = Arg(sink), call.dropoutMask = Arg(dropoutMask);
    npu_fa::FaAttrs& a = call.attrs;
    a.headNum = headNum;
    a.inputLayout = std::string(layout.data(), layout.size());
    a.scale = scale, a.keepProb = keepProb, a.preTokens = pre, a.nextTokens = next, a.innerPrecise = innerPrecise;
    a.prefix = Ints(prefix), a.actualSeqQlen = Ints(cuQ), a.actualSeqKvlen = Ints(cuKv);
    a.sparseMode = sparseMode, a.seed = (uint64_t)seed, a.offset = (uint64_t)offset;
    a.hasSoftcap = softcap.has_value();
    a.softcap = softcap.value_or(0.0);
    a.pseType = pseType, a.qStartIdx = Ints(qStartIdx), a.kvStartIdx = Ints(kvStartIdx);
    a.dropoutOrigin = Ints(dropoutOrigin);
    call.outResidual = outputResidual;
    if (!saved.empty()) {  // the backward: dy, attention_in, softmax_max, softmax_sum, attention_in_residual
        call.grad = true;
        call.dy = Arg(saved[0]), call.attentionIn = Arg(saved[1]), call.softmaxMax = Arg(saved[2]);
        call.softmaxSum = Arg(saved[3]);
        call.attentionInResidual = Arg(saved[4]);
        call.outResidual = call.attentionInResidual.present;
        call.partialKeys = partialKeys;
    }
    if (attenMask.has_value()) c.userMask = *attenMask;
    Plan(c, q);
    const bool alibi = c.p().alibiMode != npu_fa::kAlibiNone;
    if (alibi) c.slopes = pse->contiguous();
    if (!alibi && c.p().pseMode != npu_fa::kPseNone) c.pse = pse->contiguous();
    if (c.p().dropMode == npu_fa::kDropMask) c.dropMask = dropoutMask->contiguous();
    return c;
}

// A plan's per-sequence table as the int64 seq_info input on the device.
at::Tensor SeqInfoTensor(const std::vector<int64_t>& rows, const at::Tensor& like) {
    return at::tensor(rows, at::TensorOptions().dtype(at::kLong)).to(like.device());
}

using MapCache = npu_fa_adapter::BlockMapCache<at::Tensor, c10::weak_intrusive_ptr<c10::StorageImpl>>;
constexpr size_t kMapCacheEntries = 32;  // as many as the Python package keeps

MapCache& Maps() {
    static MapCache cache(kMapCacheEntries);
    return cache;
}

// What the map of the caller's mask depends on: the mask (identity, version, geometry), the device and stream the
// map was written on, and the map's problem (npu_fa::BlockMapKeyFields, the twin cache's rule too).
npu_fa_adapter::BlockMapKey MapKey(const Call& c, const npu_fa::FaBlockMapPass& pass) {
    const at::Tensor& m = c.userMask;
    npu_fa_adapter::BlockMapKey k;
    k.storage = m.storage().unsafeGetStorageImpl();
    k.data = m.data_ptr();
    k.version = m._version();
    k.fields = {m.device().index(), (int64_t)c10_npu::getCurrentNPUStream().id(), (int64_t)m.scalar_type(), m.dim(),
                m.storage_offset()};
    k.fields.insert(k.fields.end(), m.sizes().begin(), m.sizes().end());
    k.fields.insert(k.fields.end(), m.strides().begin(), m.strides().end());
    const std::vector<int64_t> problem = npu_fa::BlockMapKeyFields(c.p(), pass);
    k.fields.insert(k.fields.end(), problem.begin(), problem.end());
    return k;
}

// Dense masks: the block map of the plan's pre-pass. From the cache when the same mask comes back unchanged, else
// built by the pre-pass and cached.
at::Tensor BlockMap(const Call& c, const npu_fa::FaBlockMapPass& pass, const at::Tensor& like) {
    const npu_fa_adapter::BlockMapKey key = MapKey(c, pass);
    at::Tensor map;
    if (Maps().Get(key, map)) return map;
    map = at::zeros({(int64_t)pass.bytes}, like.options().dtype(at::kByte));
    if (pass.tiling.mapRows == 0) return map;
    const at::Tensor seqInfo = SeqInfoTensor(pass.seqInfo, like);
    AclArgs acl;
    const npu_fa::FaAttrs& a = c.a();
    std::string layout = a.inputLayout;
    const npu_fa::FaCall& s = c.call;
    MapArgs args;
    args.atten_mask = c.mask, args.seq_info = seqInfo, args.block_map = map;
    at::Tensor workspace;
    RunAclnn(
        "aclnnFlashAttentionNpuFaBlockMap",
        [&](uint64_t* size, aclOpExecutor** exec) {
            return aclnnFlashAttentionNpuFaBlockMapGetWorkspaceSize(
                NPU_FA_MAP_INPUTS(NPU_FA_ACL_TENSOR)
                    NPU_FA_ACL_ATTRS(a, layout, 0, 0, pass.tiling.s1Block, pass.tiling.s2Block), acl.A(s.query.shape),
                acl.A(s.key.shape), acl.A(s.value.shape), c.p().dtype == npu_fa::kBf16 ? 1 : 0,
                NPU_FA_MAP_OUTPUTS(NPU_FA_ACL_TENSOR) size, exec);
        },
        aclnnFlashAttentionNpuFaBlockMap, workspace, like, true);
    Maps().Put(key, c.userMask.storage().getWeakStorageImpl(), map);
    return map;
}

// Per query head, the sum of a per-row quantity in the statistics' layout, over the problem's row groups (one of
// the 8 copies per row).
at::Tensor SumRowsPerHead(const npu_fa::FaProblemInfo& info, const at::Tensor& rows) {
    const int64_t n1 = info.p.n1;
    const at::Tensor flat = rows.reshape({-1, 8});
    at::Tensor out = at::zeros({n1}, rows.options());
    for (const npu_fa::FaRowGroup& g : info.post.rowGroups) {
        const int64_t seqs = (int64_t)g.seqs, tokens = (int64_t)g.tokens;
        out += flat.narrow(0, (int64_t)g.firstRow, seqs * n1 * tokens).select(1, 0).reshape({seqs, n1, tokens})
                   .sum({0, 2});
    }
    return out;
}

// dpse in pse's shape and dtype from the kernel's dS rows (the problem's reduction).
at::Tensor Dpse(const npu_fa::FaProblemInfo& info, const at::Tensor& pse, const at::Tensor& rows) {
    at::Tensor g = rows.view(info.post.dpseRowsShape);
    for (uint32_t d : info.post.dpseSumDims) g = g.sum(d, true);
    if (info.post.dpseFactor != 1.0) g = g * info.post.dpseFactor;
    return g.to(pse.scalar_type()).reshape(pse.sizes());
}

// Rows of the statistics (and out / dq / dk / dv tokens) that belong to no sequence: TND padding.
void FillPadding(const npu_fa::FaProblemInfo& info, at::Tensor out, at::Tensor smax, at::Tensor ssum) {
    const int64_t used = (int64_t)info.post.padQFrom, rows = smax.size(0);
    if (!info.post.tnd || used >= rows) return;
    if (out.defined()) out.narrow(0, used, rows - used).zero_();
    smax.narrow(0, used, rows - used).fill_(-kFltMax);
    ssum.narrow(0, used, rows - used).fill_(kFltMax);
}

// Statistics of rows that see no key: max -FLT_MAX, sum FLT_MAX; with sink logits max = the head's sink, sum 1.
void FillRowsWithoutKeys(const npu_fa::FaProblemInfo& info, const c10::optional<at::Tensor>& sink, at::Tensor smax,
                         at::Tensor ssum) {
    if (!sink.has_value()) {
        smax.fill_(-kFltMax);
        ssum.fill_(kFltMax);
        return;
    }
    ssum.fill_(1.0);
    const int64_t n1 = info.p.n1;
    at::Tensor rows = smax.view({-1, 8});
    for (const npu_fa::FaRowGroup& g : info.post.rowGroups) {
        const int64_t seqs = (int64_t)g.seqs, tokens = (int64_t)g.tokens;
        rows.narrow(0, (int64_t)g.firstRow, seqs * n1 * tokens)
            .copy_(sink->view({1, -1, 1, 1}).expand({seqs, n1, tokens, 8}).reshape({-1, 8}));
    }
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> FlashAttentionNpu(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, int64_t head_num,
    c10::string_view input_layout, const c10::optional<at::Tensor>& pse, const c10::optional<at::Tensor>& padding_mask,
    const c10::optional<at::Tensor>& atten_mask, double scale, double keep_prob, int64_t pre_tokens,
    int64_t next_tokens, int64_t inner_precise, at::OptionalIntArrayRef prefix, at::OptionalIntArrayRef actual_seq_qlen,
    at::OptionalIntArrayRef actual_seq_kvlen, int64_t sparse_mode, int64_t seed, int64_t offset,
    const c10::optional<at::Tensor>& sink,
    c10::optional<double> softcap, int64_t pse_type, at::OptionalIntArrayRef q_start_idx,
    at::OptionalIntArrayRef kv_start_idx, const c10::optional<at::Tensor>& dropout_mask,
    at::OptionalIntArrayRef dropout_origin, bool output_residual) {
    const Call c = MakeCall(query, key, value, pse, padding_mask, atten_mask, sink, dropout_mask, head_num,
                            input_layout, scale, keep_prob, pre_tokens, next_tokens, inner_precise, prefix,
                            actual_seq_qlen, actual_seq_kvlen, sparse_mode, seed, offset, softcap, pse_type,
                            q_start_idx, kv_start_idx, dropout_origin, {}, false, output_residual);
    at::Tensor out = at::empty(c.info.outShape, query.options());
    // zero where no kernel writes (rows without keys, TND padding): their output is exactly 0
    at::Tensor residual = output_residual ? at::zeros(c.info.outShape, query.options()) : at::empty({0}, query.options());
    at::Tensor smax = at::empty(c.info.statsShape, query.options().dtype(at::kFloat));
    at::Tensor ssum = at::empty(c.info.statsShape, query.options().dtype(at::kFloat));
    if (!c.info.post.hasWork) {  // every row is invalid (with sinks: max = the head's sink, sum = 1): no launch
        out.zero_();
        FillRowsWithoutKeys(c.info, sink, smax, ssum);
        FillPadding(c.info, out, smax, ssum);
        return {out, smax, ssum, residual};
    }
    npu_fa::FaForwardPlan plan;
    const std::string err = npu_fa::PlanForward(c.p(), c.chip, plan);
    TORCH_CHECK(err.empty(), "flash_attention tiling: ", err);
    const npu_fa::FaTilingOut& t = plan.launch;
    const at::Tensor seqInfo = SeqInfoTensor(t.seqInfo, query);
    const at::Tensor map = c.p().denseMask ? BlockMap(c, plan.map, query) : at::Tensor();
    const at::Tensor q = query.contiguous(), k = key.contiguous(), v = value.contiguous();
    const at::Tensor sinkLogits = sink.has_value() ? sink->contiguous() : at::Tensor();
    AclArgs acl;
    const npu_fa::FaAttrs& a = c.a();
    std::string layout = a.inputLayout;
    FwdArgs args;
    args.query = q, args.key = k, args.value = v, args.atten_mask = c.mask, args.block_map = map;
    args.seq_info = seqInfo, args.sink = sinkLogits, args.alibi_slopes = c.slopes, args.pse = c.pse;
    args.dropout_mask = c.dropMask, args.attention_out = out, args.softmax_max = smax, args.softmax_sum = ssum;
    if (output_residual) args.attention_out_residual = residual;
    at::Tensor workspace;
    RunAclnn(
        "aclnnFlashAttentionNpuFa",
        [&](uint64_t* size, aclOpExecutor** exec) {
            return aclnnFlashAttentionNpuFaGetWorkspaceSize(
                NPU_FA_FWD_INPUTS(NPU_FA_ACL_TENSOR)
                    NPU_FA_ACL_ATTRS(a, layout, seed, offset, t.data.s1Block, t.data.s2Block),
                output_residual, NPU_FA_FWD_OUTPUTS(NPU_FA_ACL_TENSOR) size, exec);
        },
        aclnnFlashAttentionNpuFa, workspace, query, true);
    FillPadding(c.info, out, smax, ssum);
    return {out, smax, ssum, residual};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> FlashAttentionGradNpu(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const at::Tensor& dy, int64_t head_num,
    c10::string_view input_layout, const c10::optional<at::Tensor>& pse, const c10::optional<at::Tensor>& padding_mask,
    const c10::optional<at::Tensor>& atten_mask, const c10::optional<at::Tensor>& softmax_max,
    const c10::optional<at::Tensor>& softmax_sum, const c10::optional<at::Tensor>& attention_in, double scale,
    double keep_prob, int64_t pre_tokens, int64_t next_tokens, int64_t inner_precise, at::OptionalIntArrayRef prefix,
    at::OptionalIntArrayRef actual_seq_qlen, at::OptionalIntArrayRef actual_seq_kvlen, int64_t sparse_mode,
    int64_t seed, int64_t offset, const c10::optional<at::Tensor>& sink, bool deterministic,
    c10::optional<double> softcap, int64_t pse_type, at::OptionalIntArrayRef q_start_idx,
    at::OptionalIntArrayRef kv_start_idx, const c10::optional<at::Tensor>& dropout_mask,
    at::OptionalIntArrayRef dropout_origin, bool partial_keys, const c10::optional<at::Tensor>& attention_in_residual) {
    const Call c = MakeCall(query, key, value, pse, padding_mask, atten_mask, sink, dropout_mask, head_num,
                            input_layout, scale, keep_prob, pre_tokens, next_tokens, inner_precise, prefix,
                            actual_seq_qlen, actual_seq_kvlen, sparse_mode, seed, offset, softcap, pse_type,
                            q_start_idx, kv_start_idx, dropout_origin,
                            {dy, attention_in, softmax_max, softmax_sum, attention_in_residual}, partial_keys);
    const npu_fa::FaProblem& p = c.p();
    const at::Tensor none = at::empty({0}, query.options());  // dpse: no pse; dsink without a sink
    if (!c.info.post.hasWork) {  // no row sees a key: every sink's probability is 1, dsink = 0
        return {at::zeros_like(query), at::zeros_like(key), at::zeros_like(value), none,
                sink.has_value() ? at::zeros({p.n1}, sink->options()) : none.clone()};
    }
    at::Tensor dq = at::empty_like(query, at::MemoryFormat::Contiguous);  // the kernels write every row
    at::Tensor dk = at::empty_like(key, at::MemoryFormat::Contiguous);
    at::Tensor dv = at::empty_like(value, at::MemoryFormat::Contiguous);
    npu_fa::FaBackwardPlan plan;
    const std::string err = npu_fa::PlanBackward(p, c.chip, plan);
    TORCH_CHECK(err.empty(), "flash_attention_grad tiling: ", err);
    const npu_fa::FaGradTilingOut& t = plan.launches;
    const uint32_t s1Block = t.launches[0].s1Block, s2Block = t.launches[0].s2Block;
    // the forward's block-map pre-pass for the backward's blocks
    const at::Tensor map = p.denseMask ? BlockMap(c, plan.map, query) : at::Tensor();
    const at::Tensor seqInfo = SeqInfoTensor(t.seqInfo, query);
    const at::Tensor q = query.contiguous(), k = key.contiguous(), v = value.contiguous(), g = dy.contiguous();
    const at::Tensor o = attention_in->contiguous(), mx = softmax_max->contiguous(), sm = softmax_sum->contiguous();
    const at::Tensor sinkLogits = sink.has_value() ? sink->contiguous() : at::Tensor();
    // rows of no task (TND padding) must read 0
    at::Tensor dsinkRows = sink.has_value() ? at::zeros(c.info.statsShape, mx.options()) : at::empty({8}, mx.options());
    // dS for dpse as StorePseGrad writes it; rows no tile reaches must read 0
    const bool outer = !c.info.post.dpseRowsShape.empty();
    at::Tensor dpseRows = outer ? at::zeros(c.info.post.dpseRowsShape, mx.options()) : at::empty({8}, mx.options());
    const npu_fa::FaAttrs& a = c.a();
    std::string layout = a.inputLayout;
    GradArgs args;
    args.query = q, args.key = k, args.value = v, args.dy = g, args.attention_in = o, args.softmax_max = mx;
    args.softmax_sum = sm, args.atten_mask = c.mask, args.block_map = map, args.seq_info = seqInfo;
    args.sink = sinkLogits, args.alibi_slopes = c.slopes, args.pse = c.pse, args.dropout_mask = c.dropMask;
    args.dq = dq, args.dk = dk, args.dv = dv, args.dsink_rows = dsinkRows, args.dpse_rows = dpseRows;
    if (p.outResidual) args.attention_in_residual = attention_in_residual->contiguous();
    at::Tensor workspace;  // shared by the launches: D lives there between them
    // As many launches as the grad tiling returns (the schedule may change; the TilingFunc refuses other indices).
    for (size_t launch = 0; launch < t.launches.size(); ++launch) {
        AclArgs acl;
        RunAclnn(
            "aclnnFlashAttentionNpuFaGrad",
            [&](uint64_t* size, aclOpExecutor** exec) {
                return aclnnFlashAttentionNpuFaGradGetWorkspaceSize(
                    NPU_FA_GRAD_INPUTS(NPU_FA_ACL_TENSOR) NPU_FA_ACL_ATTRS(a, layout, seed, offset, s1Block, s2Block),
                    deterministic, partial_keys, (int64_t)launch, NPU_FA_GRAD_OUTPUTS(NPU_FA_ACL_TENSOR) size, exec);
            },
            aclnnFlashAttentionNpuFaGrad, workspace, query, launch == 0);
    }
    if (c.info.post.tnd) {  // tokens after the last enabled sequence get zero gradients
        dq.narrow(0, (int64_t)c.info.post.padQFrom, query.size(0) - (int64_t)c.info.post.padQFrom).zero_();
        dk.narrow(0, (int64_t)c.info.post.padKvFrom, key.size(0) - (int64_t)c.info.post.padKvFrom).zero_();
        dv.narrow(0, (int64_t)c.info.post.padKvFrom, key.size(0) - (int64_t)c.info.post.padKvFrom).zero_();
    }
    return {dq, dk, dv, outer ? Dpse(c.info, *pse, dpseRows) : none,
            sink.has_value() ? -SumRowsPerHead(c.info, dsinkRows) : none.clone()};
}

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) {
    m.impl("flash_attention_fwd", TORCH_FN(FlashAttentionNpu));
    m.impl("flash_attention_grad", TORCH_FN(FlashAttentionGradNpu));
}
