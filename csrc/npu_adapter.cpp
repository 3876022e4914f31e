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

#include "block_map_cache.h"
#include "cann/fa_op_args.h"
#include "cann/fa_platform.h"
#include "flash_attention_grad_tiling_host.h"
#include "flash_attention_tiling_host.h"

#ifndef NPU_FA_ACLNN_STANDIN  // the headers CANN's op build generates from op_host/cann/flash_attention_def.cpp
#include "aclnn_flash_attention_npu_fa.h"
#include "aclnn_flash_attention_npu_fa_block_map.h"
#include "aclnn_flash_attention_npu_fa_grad.h"
#endif

namespace {

namespace fa = npu_fa::op;
constexpr double kFltMax = 3.4028234663852886e38;  // invalid rows: softmax_max = -FLT_MAX, softmax_sum = +FLT_MAX

// acl objects of one aclnn call, released when the call has been enqueued.
class AclArgs {
public:
    ~AclArgs() {
        for (aclTensor* t : tensors_) Release(t);
        for (aclIntArray* a : arrays_) Release(a);
    }
    aclTensor* T(const at::Tensor& t) {
        if (!t.defined()) return nullptr;
        tensors_.push_back(ConvertType(t));
        return tensors_.back();
    }
    aclIntArray* A(at::IntArrayRef v) {
        arrays_.push_back(ConvertType(v));
        return arrays_.back();
    }

private:
    std::vector<aclTensor*> tensors_;
    std::vector<aclIntArray*> arrays_;
};

// One operator call: phase 1 sizes the workspace, phase 2 enqueues on the current stream. `workspace` grows when
// allowed; else (a later backward launch) it must already be large enough, because it carries state.
template <typename Phase1, typename Phase2>
void RunAclnn(const char* op, Phase1 phase1, Phase2 phase2, at::Tensor& workspace, const at::Tensor& like,
              bool mayGrow) {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    aclnnStatus st = phase1(&size, &executor);
    TORCH_CHECK(st == 0, op, "GetWorkspaceSize failed with aclnn status ", st, " (see the CANN log)");
    const int64_t have = workspace.defined() ? workspace.numel() : 0;
    if ((int64_t)size > have) {
        TORCH_CHECK(mayGrow, op, ": launch asks for ", size, " workspace bytes, the shared workspace has ", have);
        workspace = at::empty({(int64_t)size}, like.options().dtype(at::kByte));
    }
    st = phase2(size > 0 ? workspace.data_ptr() : nullptr, size, executor, c10_npu::getCurrentNPUStream().stream());
    TORCH_CHECK(st == 0, op, " failed with aclnn status ", st, " (see the CANN log)");
}

std::vector<int64_t> Vec(at::OptionalIntArrayRef v) { return v.has_value() ? v->vec() : std::vector<int64_t>{}; }

// The call as the operators see it: attributes, shapes, the mask in its kernel view, the problem, the chip.
struct Call {
    fa::FaOpAttrs attrs;
    fa::FaOpShapes shapes;
    at::Tensor userMask;  // dense masks only: the caller's atten_mask (the block-map cache's key)
    at::Tensor mask;      // ... and its kernel view: contiguous, broadcast dimensions of size 1 (TND: 2-D)
    at::Tensor slopes;    // in-kernel ALiBi (pse_type 2/3): the caller's pse, contiguous
    at::Tensor pse;       // an outer bias (pse_type 0/1): the caller's pse, contiguous
    at::Tensor dropMask;  // a user dropout mask (keep bits as rows of S2 / 8 bytes), contiguous
    npu_fa::FaProblem p;
    npu_fa::ChipSpec chip{};
};

// The dense mask as the kernels read it: stride-0 (expanded) dimensions become size 1 and a broadcast last
// dimension becomes rows of kColumnBroadcastWidth equal bytes (read with column step 0, as on the twin path:
// O(rows) bytes, never S2 columns). The op takes contiguous masks, so a strided one is copied once in that shape.
at::Tensor MaskView(const at::Tensor& m, bool tnd, int64_t s2) {
    if (tnd) return m.contiguous();
    at::Tensor v = m;
    while (v.dim() < 4) v = v.unsqueeze(0);
    for (int64_t d = 0; d < 4; ++d) {
        if (v.size(d) > 1 && v.stride(d) == 0) v = v.narrow(d, 0, 1);
    }
    if (v.size(3) == 1 && s2 > 1) v = v.expand({v.size(0), v.size(1), v.size(2), fa::kColumnBroadcastWidth});
    return v.contiguous();
}

void Plan(Call& c, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const c10::optional<at::Tensor>& mask,
          const c10::optional<at::Tensor>& pse, const c10::optional<at::Tensor>& paddingMask,
          const c10::optional<at::Tensor>& sink) {
    TORCH_CHECK(!paddingMask.has_value(), "padding_mask is reserved and not supported; pass None");
    const bool alibi = c.attrs.pseType == npu_fa::kAlibiLinear || c.attrs.pseType == npu_fa::kAlibiSqrt;
    TORCH_CHECK(alibi || !pse.has_value() || pse->scalar_type() == q.scalar_type(),
                "pse dtype must equal the query's for pse_type 0/1 (an outer bias)");
    TORCH_CHECK(!alibi || (pse.has_value() && pse->scalar_type() == at::kFloat && pse->dim() >= 1 && pse->dim() <= 2),
                "pse_type ", c.attrs.pseType, " needs pse: the ALiBi slopes, float32 [N1] or [B, N1]");
    TORCH_CHECK(!sink.has_value() || (sink->scalar_type() == at::kFloat && sink->dim() == 1),
                "sink must be a float32 tensor of shape [head_num]");
    TORCH_CHECK(q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16,
                "query dtype must be float16 or bfloat16, got ", q.scalar_type());
    TORCH_CHECK(k.scalar_type() == q.scalar_type() && v.scalar_type() == q.scalar_type(),
                "key and value dtypes must equal the query's");
    c.shapes.query = q.sizes().vec();
    c.shapes.key = k.sizes().vec();
    c.shapes.value = v.sizes().vec();
    c.shapes.bf16 = q.scalar_type() == at::kBFloat16;
    c.shapes.hasMask = false;
    npu_fa::FaLayout layout = npu_fa::kBSND;
    TORCH_CHECK(fa::ParseLayout(c.attrs.inputLayout, layout), "input_layout '", c.attrs.inputLayout,
                "' is not one of BSH, SBH, BSND, BNSD, TND");
    // A first pass without the mask gives S2 (and whether the mode reads a dense mask at all).
    std::string err = fa::BuildFaProblem(c.shapes, c.attrs, c.p);
    TORCH_CHECK(err.empty(), "flash_attention: ", err);
    // The pse facts of the problem (BuildFaProblem resets them: applied again after the mask pass below).
    const auto psePart = [&]() {
        std::string e;
        if (alibi) e = fa::AlibiSlopes(c.attrs, c.p, pse->numel());
        if (!alibi && pse.has_value()) e = fa::OuterPse(c.attrs, c.p, pse->sizes().vec());
        TORCH_CHECK(e.empty(), "flash_attention: ", e);
    };
    psePart();
    if (alibi) c.slopes = pse->contiguous();
    if (!alibi && pse.has_value()) c.pse = pse->contiguous();
    const int64_t mode = c.attrs.sparseMode;
    if (mask.has_value() && (mode == 0 || mode == 1 || mode == 5)) {
        TORCH_CHECK(mask->scalar_type() == at::kBool || mask->scalar_type() == at::kByte,
                    "atten_mask dtype must be bool or uint8 (True/1 = masked out), got ", mask->scalar_type());
        c.userMask = *mask;
        c.mask = MaskView(*mask, layout == npu_fa::kTND, c.p.s2);
        c.shapes.hasMask = true;
        c.shapes.mask = c.mask.sizes().vec();
        err = fa::BuildFaProblem(c.shapes, c.attrs, c.p);
        TORCH_CHECK(err.empty(), "flash_attention: ", err);
        psePart();
    }
    const platform_ascendc::PlatformAscendC* plat = platform_ascendc::PlatformAscendCManager::GetInstance();
    TORCH_CHECK(plat != nullptr, "flash_attention: no CANN platform information (is the NPU visible?)");
    c.chip = fa::ChipFromPlatform(*plat);
    err = fa::CheckPlatform(*plat, c.chip);
    TORCH_CHECK(err.empty(), "flash_attention: ", err);
}

at::Tensor SeqInfoTensor(const std::vector<int64_t>& rows, uint32_t fields, const at::Tensor& like) {
    std::vector<int64_t> data = rows.empty() ? std::vector<int64_t>(fields, 0) : rows;
    at::Tensor host = at::tensor(data, at::TensorOptions().dtype(at::kLong));
    return host.to(like.device());
}

using MapCache = npu_fa_adapter::BlockMapCache<at::Tensor, c10::weak_intrusive_ptr<c10::StorageImpl>>;
constexpr size_t kMapCacheEntries = 32;  // as many as the Python package keeps

MapCache& Maps() {
    static MapCache cache(kMapCacheEntries);
    return cache;
}

// What the map of the caller's mask depends on: the mask (identity, version, geometry), the device and stream the
// map was written on, and the map's problem: blocks, map rows and bytes, the mask view's strides, and the
// per-sequence table (lengths, bands, prefix, map rows, mask bases).
npu_fa_adapter::BlockMapKey MapKey(const Call& c, const npu_fa::FaTilingOut& t) {
    const at::Tensor& m = c.userMask;
    const npu_fa::FaProblem& p = c.p;
    npu_fa_adapter::BlockMapKey k;
    k.storage = m.storage().unsafeGetStorageImpl();
    k.data = m.data_ptr();
    k.version = m._version();
    k.fields = {m.device().index(), (int64_t)c10_npu::getCurrentNPUStream().id(), (int64_t)m.scalar_type(), m.dim(),
                m.storage_offset()};
    k.fields.insert(k.fields.end(), m.sizes().begin(), m.sizes().end());
    k.fields.insert(k.fields.end(), m.strides().begin(), m.strides().end());
    const int64_t problem[] = {t.data.s1Block, t.data.s2Block, t.data.mapRows, (int64_t)t.mapBytes, (int64_t)p.layout,
                               p.n1, p.sparseMode, (int64_t)p.maskStrideB, (int64_t)p.maskStrideN,
                               (int64_t)p.maskStrideS, p.maskColStep, p.maskTndGlobal, p.maskPerBatch, p.maskPerHead};
    k.fields.insert(k.fields.end(), std::begin(problem), std::end(problem));
    k.fields.insert(k.fields.end(), t.seqInfo.begin(), t.seqInfo.end());
    return k;
}

// Dense masks: the block map for blocks (s1Block, s2Block); `tiling` is the forward tiling for those blocks. From
// the cache when the same mask comes back unchanged, else built by the pre-pass and cached.
at::Tensor BlockMap(const Call& c, const npu_fa::FaTilingOut& tiling, const at::Tensor& like) {
    const npu_fa_adapter::BlockMapKey key = MapKey(c, tiling);
    at::Tensor map;
    if (Maps().Get(key, map)) return map;
    map = at::zeros({(int64_t)tiling.mapBytes}, like.options().dtype(at::kByte));
    if (tiling.data.mapRows == 0) return map;
    const at::Tensor seqInfo = SeqInfoTensor(tiling.seqInfo, npu_fa::kSeqInfoFields, like);
    AclArgs acl;
    std::string layout = c.attrs.inputLayout;
    const fa::FaOpAttrs& a = c.attrs;
    at::Tensor workspace;
    RunAclnn(
        "aclnnFlashAttentionNpuFaBlockMap",
        [&](uint64_t* size, aclOpExecutor** exec) {
            return aclnnFlashAttentionNpuFaBlockMapGetWorkspaceSize(
                acl.T(c.mask), acl.T(seqInfo), a.headNum, &layout[0], a.scale, a.keepProb, a.preTokens, a.nextTokens,
                a.innerPrecise, acl.A(a.prefix), acl.A(a.actualSeqQlen), acl.A(a.actualSeqKvlen), a.sparseMode, 0, 0,
                a.softcap, a.pseType, acl.A(a.qStartIdx), acl.A(a.kvStartIdx), tiling.data.s1Block, tiling.data.s2Block, acl.A(c.shapes.query), acl.A(c.shapes.key),
                acl.A(c.shapes.value), c.shapes.bf16 ? 1 : 0, acl.T(map), size, exec);
        },
        aclnnFlashAttentionNpuFaBlockMap, workspace, like, true);
    Maps().Put(key, c.userMask.storage().getWeakStorageImpl(), map);
    return map;
}

// A user dropout mask: the problem switches from the generator to its keep bits (rows of S2 / 8 bytes).
void DropPart(Call& c, const c10::optional<at::Tensor>& dropoutMask) {
    if (!dropoutMask.has_value()) return;
    const std::string err = fa::DropMask(c.p, dropoutMask->numel());
    TORCH_CHECK_NOT_IMPLEMENTED(err.empty(), "flash_attention: ", err);  // the other rules were checked in Python
    c.dropMask = dropoutMask->contiguous();
}

fa::FaOpAttrs Attrs(int64_t headNum, c10::string_view layout, double scale, double keepProb, int64_t pre,
                    int64_t next, int64_t innerPrecise, at::OptionalIntArrayRef prefix, at::OptionalIntArrayRef cuQ,
                    at::OptionalIntArrayRef cuKv, int64_t sparseMode, int64_t seed, int64_t offset,
                    c10::optional<double> softcap, int64_t pseType,
                    at::OptionalIntArrayRef qStartIdx, at::OptionalIntArrayRef kvStartIdx,
                    const c10::optional<at::Tensor>& dropoutMask) {
    TORCH_CHECK(!softcap.has_value() || *softcap > 0.0, "softcap must be finite and > 0 (None turns it off), got ",
                softcap.value_or(0.0));
    TORCH_CHECK(!dropoutMask.has_value() || dropoutMask->scalar_type() == at::kByte,
                "dropout_mask must be uint8 (8 bit-packed elements per byte, 1 = keep)");
    fa::FaOpAttrs a;
    a.softcap = (float)softcap.value_or(0.0);
    a.pseType = pseType;
    a.qStartIdx = Vec(qStartIdx);
    a.kvStartIdx = Vec(kvStartIdx);
    a.headNum = headNum;
    a.inputLayout = std::string(layout.data(), layout.size());
    a.scale = (float)scale;
    a.keepProb = (float)keepProb;
    a.preTokens = pre;
    a.nextTokens = next;
    a.innerPrecise = innerPrecise;
    a.prefix = Vec(prefix);
    a.actualSeqQlen = Vec(cuQ);
    a.actualSeqKvlen = Vec(cuKv);
    a.sparseMode = sparseMode;
    a.seed = seed;
    a.offset = offset;
    return a;
}

// Per query head, the sum of a per-row quantity in the statistics' layout ([B, N1, S1, 8], or TND's batch-major
// rows: sequence b's (head, token) rows from cu_q[b-1] * N1), one of the 8 copies per row (backward.py's
// sum_rows_per_head).
at::Tensor SumRowsPerHead(const npu_fa::FaProblem& p, const at::Tensor& rows) {
    if (p.layout != npu_fa::kTND) return rows.select(-1, 0).sum({0, 2});
    const at::Tensor flat = rows.reshape({-1, 8}).select(1, 0);
    at::Tensor out = at::zeros({(int64_t)p.n1}, rows.options());
    int64_t q0 = 0;
    for (const int64_t q1 : p.cuSeqQ) {
        if (q1 > q0) out += flat.narrow(0, q0 * p.n1, (q1 - q0) * p.n1).view({(int64_t)p.n1, q1 - q0}).sum(1);
        q0 = q1;
    }
    return out;
}

// dpse in pse's shape and dtype from the kernel's dS rows: summed over what pse broadcasts, times the scale for
// pse_type 1 (backward.py's _dpse).
at::Tensor Dpse(const npu_fa::FaProblem& p, const at::Tensor& pse, const at::Tensor& rows) {
    const bool perRow = p.pseStrideS != 0;
    const int64_t r = (int64_t)npu_fa::PseGradRows(p);
    const int64_t keys = p.s2;
    at::Tensor g = rows.view({(int64_t)p.batch, (int64_t)p.n1, r, keys});
    if (!perRow) g = g.sum(2, true);
    if (pse.size(0) == 1 && p.batch > 1) g = g.sum(0, true);
    if (p.pseMode == npu_fa::kPseScaled) g = g * p.scale;
    return g.to(pse.scalar_type()).reshape(pse.sizes());
}

// TND: tokens after the last enabled sequence belong to no sequence.
int64_t UsedTokens(const std::vector<int64_t>& cu) { return cu.empty() ? 0 : cu.back(); }

std::tuple<at::Tensor, at::Tensor, at::Tensor> FlashAttentionNpu(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, int64_t head_num,
    c10::string_view input_layout, const c10::optional<at::Tensor>& pse, const c10::optional<at::Tensor>& padding_mask,
    const c10::optional<at::Tensor>& atten_mask, double scale, double keep_prob, int64_t pre_tokens,
    int64_t next_tokens, int64_t inner_precise, at::OptionalIntArrayRef prefix, at::OptionalIntArrayRef actual_seq_qlen,
    at::OptionalIntArrayRef actual_seq_kvlen, int64_t sparse_mode, int64_t seed, int64_t offset,
    const c10::optional<at::Tensor>& sink,
    c10::optional<double> softcap, int64_t pse_type, at::OptionalIntArrayRef q_start_idx,
    at::OptionalIntArrayRef kv_start_idx, const c10::optional<at::Tensor>& dropout_mask) {
    Call c;
    c.attrs = Attrs(head_num, input_layout, scale, keep_prob, pre_tokens, next_tokens, inner_precise, prefix,
                    actual_seq_qlen, actual_seq_kvlen, sparse_mode, seed, offset, softcap, pse_type, q_start_idx,
                    kv_start_idx, dropout_mask);
    Plan(c, query, key, value, atten_mask, pse, padding_mask, sink);
    DropPart(c, dropout_mask);
    c.p.sink = sink.has_value();
    std::vector<int64_t> outShape, statShape;
    fa::FwdOutputShapes(c.p, c.shapes.query, outShape, statShape);
    at::Tensor out = at::empty(outShape, query.options());
    at::Tensor smax = at::empty(statShape, query.options().dtype(at::kFloat));
    at::Tensor ssum = at::empty(statShape, query.options().dtype(at::kFloat));
    if (!fa::HasWork(c.p)) {  // every row is invalid (with sinks: max = the head's sink, sum = 1): no launch
        out.zero_();
        if (sink.has_value() && c.p.layout != npu_fa::kTND) {
            smax.copy_(sink->view({1, -1, 1, 1}).expand_as(smax));
            ssum.fill_(1.0);
        } else if (sink.has_value()) {  // batch-major rows: sequence b's [head][token] block from cu_q[b-1] * N1
            at::Tensor rows = smax.view({-1, 8});
            int64_t q0 = 0;
            for (int64_t q1 : c.p.cuSeqQ) {
                if (q1 > q0) rows.narrow(0, q0 * c.p.n1, (q1 - q0) * c.p.n1).copy_(
                                 sink->view({-1, 1, 1}).expand({(int64_t)c.p.n1, q1 - q0, 8}).reshape({-1, 8}));
                q0 = q1;
            }
            ssum.fill_(1.0);
        } else {
            smax.fill_(-kFltMax);
            ssum.fill_(kFltMax);
        }
        if (c.p.layout == npu_fa::kTND) {
            const int64_t used = UsedTokens(c.p.cuSeqQ);
            smax.narrow(0, used, query.size(0) - used).fill_(-kFltMax);
            ssum.narrow(0, used, query.size(0) - used).fill_(kFltMax);
        }
        return {out, smax, ssum};
    }
    npu_fa::FaTilingOut t;
    const std::string err = npu_fa::ComputeFlashAttentionTiling(c.p, c.chip, t);
    TORCH_CHECK(err.empty(), "flash_attention tiling: ", err);
    const at::Tensor seqInfo = SeqInfoTensor(t.seqInfo, npu_fa::kSeqInfoFields, query);
    const at::Tensor map = c.p.denseMask ? BlockMap(c, t, query) : at::Tensor();
    const at::Tensor q = query.contiguous(), k = key.contiguous(), v = value.contiguous();
    const at::Tensor sinkLogits = sink.has_value() ? sink->contiguous() : at::Tensor();
    AclArgs acl;
    std::string layout = c.attrs.inputLayout;
    const fa::FaOpAttrs& a = c.attrs;
    at::Tensor workspace;
    RunAclnn(
        "aclnnFlashAttentionNpuFa",
        [&](uint64_t* size, aclOpExecutor** exec) {
            return aclnnFlashAttentionNpuFaGetWorkspaceSize(
                acl.T(q), acl.T(k), acl.T(v), acl.T(c.mask), acl.T(map), acl.T(seqInfo), acl.T(sinkLogits), acl.T(c.slopes),
                acl.T(c.pse), acl.T(c.dropMask), a.headNum,
                &layout[0],
                a.scale, a.keepProb, a.preTokens, a.nextTokens, a.innerPrecise, acl.A(a.prefix),
                acl.A(a.actualSeqQlen), acl.A(a.actualSeqKvlen), a.sparseMode, seed, offset, a.softcap, a.pseType,
                acl.A(a.qStartIdx), acl.A(a.kvStartIdx), t.data.s1Block,
                t.data.s2Block, acl.T(out), acl.T(smax), acl.T(ssum), size, exec);
        },
        aclnnFlashAttentionNpuFa, workspace, query, true);
    if (c.p.layout == npu_fa::kTND) {
        const int64_t used = UsedTokens(c.p.cuSeqQ);
        if (used < query.size(0)) {
            out.narrow(0, used, query.size(0) - used).zero_();
            smax.narrow(0, used, query.size(0) - used).fill_(-kFltMax);
            ssum.narrow(0, used, query.size(0) - used).fill_(kFltMax);
        }
    }
    return {out, smax, ssum};
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
    at::OptionalIntArrayRef kv_start_idx, const c10::optional<at::Tensor>& dropout_mask) {
    TORCH_CHECK(softmax_max.has_value() && softmax_sum.has_value() && attention_in.has_value(),
                "flash_attention_grad needs the forward's softmax_max, softmax_sum and attention_in");
    Call c;
    c.attrs = Attrs(head_num, input_layout, scale, keep_prob, pre_tokens, next_tokens, inner_precise, prefix,
                    actual_seq_qlen, actual_seq_kvlen, sparse_mode, seed, offset, softcap, pse_type, q_start_idx,
                    kv_start_idx, dropout_mask);
    Plan(c, query, key, value, atten_mask, pse, padding_mask, sink);
    DropPart(c, dropout_mask);
    std::vector<int64_t> outShape, statShape;
    fa::FwdOutputShapes(c.p, c.shapes.query, outShape, statShape);
    // The kernels index these by the problem's geometry: the forward's output and statistics shapes.
    const struct { const char* name; const at::Tensor& t; bool stat; } saved[] = {
        {"dy", dy, false}, {"attention_in", *attention_in, false}, {"softmax_max", *softmax_max, true},
        {"softmax_sum", *softmax_sum, true}};
    for (const auto& s : saved) {
        const std::vector<int64_t>& want = s.stat ? statShape : outShape;
        const at::ScalarType dtype = s.stat ? at::kFloat : query.scalar_type();
        TORCH_CHECK(s.t.sizes().vec() == want, s.name, " shape ", s.t.sizes(), " must be ", at::IntArrayRef(want),
                    " (the forward's)");
        TORCH_CHECK(s.t.scalar_type() == dtype, s.name, " dtype ", s.t.scalar_type(), " must be ", dtype);
    }
    const at::Tensor none = at::empty({0}, query.options());  // dpse: no pse; dsink without a sink
    c.p.sink = sink.has_value();
    if (!fa::HasWork(c.p)) {  // no row sees a key: every sink's probability is 1, dsink = 0
        return {at::zeros_like(query), at::zeros_like(key), at::zeros_like(value), none,
                sink.has_value() ? at::zeros({c.p.n1}, sink->options()) : none.clone()};
    }
    at::Tensor dq = at::empty_like(query, at::MemoryFormat::Contiguous);  // the kernels write every row
    at::Tensor dk = at::empty_like(key, at::MemoryFormat::Contiguous);
    at::Tensor dv = at::empty_like(value, at::MemoryFormat::Contiguous);
    npu_fa::FaGradTilingOut t;
    std::string err = npu_fa::ComputeFlashAttentionGradTiling(c.p, c.chip, t);
    TORCH_CHECK(err.empty(), "flash_attention_grad tiling: ", err);
    const uint32_t s1Block = t.launches[0].s1Block, s2Block = t.launches[0].s2Block;
    at::Tensor map;
    if (c.p.denseMask) {  // the forward's block-map pre-pass for the backward's blocks
        npu_fa::FaProblem mp = c.p;
        mp.forceS1Block = s1Block;
        mp.forceS2Block = s2Block;
        npu_fa::FaTilingOut mt;
        err = npu_fa::ComputeFlashAttentionTiling(mp, c.chip, mt);
        TORCH_CHECK(err.empty(), "flash_attention_grad block-map tiling: ", err);
        map = BlockMap(c, mt, query);
    }
    const at::Tensor seqInfo = SeqInfoTensor(t.seqInfo, npu_fa::kBwdSeqFields, query);
    const at::Tensor q = query.contiguous(), k = key.contiguous(), v = value.contiguous(), g = dy.contiguous();
    const at::Tensor o = attention_in->contiguous(), mx = softmax_max->contiguous(), sm = softmax_sum->contiguous();
    const at::Tensor sinkLogits = sink.has_value() ? sink->contiguous() : at::Tensor();
    // rows of no task (TND padding) must read 0
    at::Tensor dsinkRows = sink.has_value() ? at::zeros(statShape, mx.options()) : at::empty({8}, mx.options());
    // dS for dpse as StorePseGrad writes it; rows no tile reaches must read 0
    const bool outer = c.p.pseMode != npu_fa::kPseNone;
    at::Tensor dpseRows = outer ? at::zeros({(int64_t)fa::PseGradElements(c.p)}, mx.options()) : at::empty({8}, mx.options());
    std::string layout = c.attrs.inputLayout;
    const fa::FaOpAttrs& a = c.attrs;
    at::Tensor workspace;  // shared by the launches: the dQ pass leaves D there for the dK/dV passes
    // As many launches as the grad tiling returns (the schedule may change; the TilingFunc refuses other indices).
    for (size_t launch = 0; launch < t.launches.size(); ++launch) {
        AclArgs acl;
        RunAclnn(
            "aclnnFlashAttentionNpuFaGrad",
            [&](uint64_t* size, aclOpExecutor** exec) {
                return aclnnFlashAttentionNpuFaGradGetWorkspaceSize(
                    acl.T(q), acl.T(k), acl.T(v), acl.T(g), acl.T(o), acl.T(mx), acl.T(sm), acl.T(c.mask), acl.T(map),
                    acl.T(seqInfo), acl.T(sinkLogits), acl.T(c.slopes), acl.T(c.pse), acl.T(c.dropMask), a.headNum, &layout[0], a.scale, a.keepProb, a.preTokens,
                    a.nextTokens, a.innerPrecise, acl.A(a.prefix), acl.A(a.actualSeqQlen), acl.A(a.actualSeqKvlen),
                    a.sparseMode, seed, offset, a.softcap, a.pseType, acl.A(a.qStartIdx), acl.A(a.kvStartIdx), s1Block,
                    s2Block, deterministic, (int64_t)launch, acl.T(dq),
                    acl.T(dk), acl.T(dv), acl.T(dsinkRows), acl.T(dpseRows), size, exec);
            },
            aclnnFlashAttentionNpuFaGrad, workspace, query, launch == 0);
    }
    if (c.p.layout == npu_fa::kTND) {  // tokens after the last enabled sequence get zero gradients
        const int64_t usedQ = UsedTokens(c.p.cuSeqQ), usedKv = UsedTokens(c.p.cuSeqKv);
        if (usedQ < query.size(0)) dq.narrow(0, usedQ, query.size(0) - usedQ).zero_();
        if (usedKv < key.size(0)) {
            dk.narrow(0, usedKv, key.size(0) - usedKv).zero_();
            dv.narrow(0, usedKv, key.size(0) - usedKv).zero_();
        }
    }
    return {dq, dk, dv, outer ? Dpse(c.p, *pse, dpseRows) : none,
            sink.has_value() ? -SumRowsPerHead(c.p, dsinkRows) : none.clone()};
}

}  // namespace

TORCH_LIBRARY_IMPL(npu, PrivateUse1, m) {
    m.impl("flash_attention", TORCH_FN(FlashAttentionNpu));
    m.impl("flash_attention_grad", TORCH_FN(FlashAttentionGradNpu));
}
