// TilingFuncs of the FlashAttention operators: read the call (shapes, attributes) and the platform (cores, UB/L1
// sizes), run the same pure-C++ tiling as the twin (op_host/flash_attention_tiling_host.cpp and
// _grad_tiling_host.cpp), and hand its struct to the kernel. The per-sequence table seq_info is an op input the
// caller builds with that same tiling (docs/npu.md); the TilingFunc checks it has the size and the blocks the
// tiling gives here. The kernels branch on the tiling's dtype field, so the tiling key is 0.
#include <initializer_list>
#include <utility>
#include <vector>

#include "tiling/platform/platform_ascendc.h"

#include "cann/fa_op_context.h"
#include "cann/fa_op_funcs.h"
#include "cann/fa_platform.h"
#include "flash_attention_grad_tiling_host.h"
#include "flash_attention_tiling_host.h"

namespace optiling {
namespace {

namespace fa = npu_fa::op;

ge::graphStatus Chip(gert::TilingContext* ctx, npu_fa::ChipSpec& chip, uint64_t& sysWorkspace) {
    if (ctx->GetPlatformInfo() == nullptr) return fa::Refuse(ctx, "no platform info");
    const platform_ascendc::PlatformAscendC plat(ctx->GetPlatformInfo());
    chip = fa::ChipFromPlatform(plat);
    const std::string err = fa::CheckPlatform(plat, chip);
    if (!err.empty()) return fa::Refuse(ctx, err);
    sysWorkspace = plat.GetLibApiWorkSpaceSize();
    return ge::GRAPH_SUCCESS;
}

ge::graphStatus Problem(gert::TilingContext* ctx, const fa::FaOpShapes& s, npu_fa::FaProblem& p, fa::FaOpAttrs& a) {
    if (!fa::ReadAttrs(ctx->GetAttrs(), a)) return fa::Refuse(ctx, "missing attributes");
    const std::string err = fa::BuildFaProblem(s, a, p);
    return err.empty() ? ge::GRAPH_SUCCESS : fa::Refuse(ctx, err);
}

// A tensor's element count must be what the tiling expects (seq_info rows, block-map bytes, geometry).
ge::graphStatus CheckSize(gert::TilingContext* ctx, const gert::StorageShape* shape, const char* name, uint64_t want) {
    const int64_t have = shape == nullptr ? -1 : shape->GetStorageShape().GetShapeSize();
    if (have == (int64_t)want) return ge::GRAPH_SUCCESS;
    return fa::Refuse(ctx, std::string(name) + " has " + std::to_string(have) + " elements, the tiling needs " +
                               std::to_string(want));
}

// In-kernel ALiBi (pse_type 2/3): the slopes input must be there, with N1 or B*N1 values. An outer pse input
// (pse_type 0/1) sets the pse mode and strides.
ge::graphStatus Slopes(gert::TilingContext* ctx, const fa::FaOpAttrs& a, npu_fa::FaProblem& p, uint32_t input,
                       uint32_t outerInput) {
    std::string err;
    if (p.alibiMode != npu_fa::kAlibiNone) {
        const gert::StorageShape* s = ctx->GetOptionalInputShape(input);
        if (s == nullptr) return fa::Refuse(ctx, "pse_type 2/3 needs the alibi_slopes input");
        err = fa::AlibiSlopes(a, p, s->GetStorageShape().GetShapeSize());
    }
    const gert::StorageShape* outer = ctx->GetOptionalInputShape(outerInput);
    if (err.empty() && outer != nullptr) err = fa::OuterPse(a, p, fa::DimVector(*outer));
    return err.empty() ? ge::GRAPH_SUCCESS : fa::Refuse(ctx, err);
}

// A dropout_mask input switches the problem's dropout from the generator to the user's keep bits.
ge::graphStatus DropMaskInput(gert::TilingContext* ctx, npu_fa::FaProblem& p, uint32_t input) {
    const gert::StorageShape* m = ctx->GetOptionalInputShape(input);
    if (m == nullptr) return ge::GRAPH_SUCCESS;
    const std::string err = fa::DropMask(p, m->GetStorageShape().GetShapeSize());
    return err.empty() ? ge::GRAPH_SUCCESS : fa::Refuse(ctx, err);
}

// The tiling struct, the launch's blocks and the workspace: the user part after the library's system part.
template <typename T>
ge::graphStatus Emit(gert::TilingContext* ctx, const T& tiling, uint32_t blockDim, uint64_t userWorkspace,
                     uint64_t sysWorkspace) {
    T* t = ctx->GetTilingData<T>();
    size_t* ws = ctx->GetWorkspaceSizes(1);
    if (t == nullptr || ws == nullptr) return fa::Refuse(ctx, "no room for the tiling data or the workspace size");
    *t = tiling;
    ctx->SetBlockDim(blockDim);
    ctx->SetTilingKey(0);
    ws[0] = (size_t)(sysWorkspace + userWorkspace);
    return ge::GRAPH_SUCCESS;
}

uint64_t SeqRows(const npu_fa::FaProblem& p) { return p.batch > 0 ? p.batch : 1; }

uint64_t Elements(const std::vector<int64_t>& dims) {
    uint64_t n = 1;
    for (int64_t d : dims) n *= (uint64_t)d;
    return n;
}

// The kernels index attention_out / dy / attention_in (shape of the output: false) and the statistics (true) by
// the problem's geometry, so each such tensor must hold exactly that many elements.
ge::graphStatus CheckGeometry(gert::TilingContext* ctx, const npu_fa::FaProblem& p, const fa::FaOpShapes& s,
                              std::initializer_list<std::pair<const gert::StorageShape*, bool>> tensors) {
    std::vector<int64_t> out, stats;
    fa::FwdOutputShapes(p, s.query, out, stats);
    for (const auto& t : tensors) {
        const bool stat = t.second;
        if (CheckSize(ctx, t.first, stat ? "softmax_max/softmax_sum" : "attention_out/dy/attention_in",
                      Elements(stat ? stats : out)) != ge::GRAPH_SUCCESS) {
            return ge::GRAPH_FAILED;
        }
    }
    return ge::GRAPH_SUCCESS;
}

}  // namespace

ge::graphStatus TilingFlashAttentionNpuFa(gert::TilingContext* context) {
    fa::FaOpShapes s;
    if (!fa::ReadShapes(context, fa::kFwdQuery, fa::kFwdKey, fa::kFwdValue, fa::kFwdAttenMask, s)) {
        return fa::Refuse(context, "missing query/key/value shapes");
    }
    s.bf16 = context->GetInputDesc(fa::kFwdQuery)->GetDataType() == ge::DT_BF16;
    npu_fa::FaProblem p;
    fa::FaOpAttrs a;
    npu_fa::ChipSpec chip;
    uint64_t sysWs = 0;
    if (Problem(context, s, p, a) != ge::GRAPH_SUCCESS || Chip(context, chip, sysWs) != ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    if (!fa::HasWork(p)) return fa::Refuse(context, "no query row sees a key: the caller answers without a launch");
    const gert::StorageShape* sink = context->GetOptionalInputShape(fa::kFwdSink);
    p.sink = sink != nullptr;
    if (p.sink && CheckSize(context, sink, "sink", p.n1) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    if (Slopes(context, a, p, fa::kFwdAlibiSlopes, fa::kFwdPse) != ge::GRAPH_SUCCESS ||
        DropMaskInput(context, p, fa::kFwdDropMask) != ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    npu_fa::FaTilingOut t;
    std::string err = npu_fa::ComputeFlashAttentionTiling(p, chip, t);
    if (err.empty()) err = fa::CheckPlannedBlocks(a, t.data.s1Block, t.data.s2Block);
    if (!err.empty()) return fa::Refuse(context, err);
    if (CheckSize(context, context->GetInputShape(fa::kFwdSeqInfo), "seq_info", SeqRows(p) * npu_fa::kSeqInfoFields) !=
            ge::GRAPH_SUCCESS ||
        (p.denseMask && CheckSize(context, context->GetOptionalInputShape(fa::kFwdBlockMap), "block_map",
                                  t.mapBytes) != ge::GRAPH_SUCCESS) ||
        CheckGeometry(context, p, s, {{context->GetOutputShape(fa::kFwdAttentionOut), false},
                                      {context->GetOutputShape(fa::kFwdSoftmaxMax), true},
                                      {context->GetOutputShape(fa::kFwdSoftmaxSum), true}}) != ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    return Emit(context, t.data, t.data.blockDim, t.workspaceBytes - npu_fa::kLibApiWorkspaceBytes, sysWs);
}

// The forward's tiling for the planned blocks (the forward's own, or the backward's), on the vector cores only.
ge::graphStatus TilingFlashAttentionNpuFaBlockMap(gert::TilingContext* context) {
    fa::FaOpShapes s;
    if (!fa::ReadMapShapes(context, s)) return fa::Refuse(context, "missing atten_mask shape or shape attributes");
    npu_fa::FaProblem p;
    fa::FaOpAttrs a;
    npu_fa::ChipSpec chip;
    uint64_t sysWs = 0;
    if (Problem(context, s, p, a) != ge::GRAPH_SUCCESS || Chip(context, chip, sysWs) != ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    if (!p.denseMask) return fa::Refuse(context, "the block map is only built for a dense mask (sparse_mode 0, 1, 5)");
    if (a.s1Block <= 0 || a.s2Block <= 0) return fa::Refuse(context, "s1_block and s2_block are required");
    p.forceS1Block = (uint32_t)a.s1Block;
    p.forceS2Block = (uint32_t)a.s2Block;
    npu_fa::FaTilingOut t;
    const std::string err = npu_fa::ComputeFlashAttentionTiling(p, chip, t);
    if (!err.empty()) return fa::Refuse(context, err);
    if (t.data.mapRows == 0) return fa::Refuse(context, "the block map is empty: the caller skips the launch");
    if (CheckSize(context, context->GetInputShape(fa::kMapSeqInfo), "seq_info", SeqRows(p) * npu_fa::kSeqInfoFields) !=
        ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    return Emit(context, t.data, t.data.mapCores, 0, sysWs);
}

// One launch (attribute `launch`) of the backward's schedule; every launch asks for the whole workspace, and the
// caller passes the same buffer to all of them (D and the dQ accumulator live there between launches).
ge::graphStatus TilingFlashAttentionNpuFaGrad(gert::TilingContext* context) {
    fa::FaOpShapes s;
    if (!fa::ReadShapes(context, fa::kGradQuery, fa::kGradKey, fa::kGradValue, fa::kGradAttenMask, s)) {
        return fa::Refuse(context, "missing query/key/value shapes");
    }
    s.bf16 = context->GetInputDesc(fa::kGradQuery)->GetDataType() == ge::DT_BF16;
    npu_fa::FaProblem p;
    fa::FaOpAttrs a;
    npu_fa::ChipSpec chip;
    uint64_t sysWs = 0;
    if (Problem(context, s, p, a) != ge::GRAPH_SUCCESS || Chip(context, chip, sysWs) != ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    const gert::RuntimeAttrs* attrs = context->GetAttrs();
    // (the `deterministic` attribute needs no tiling of its own: the schedule has no atomics)
    const int64_t* launch = attrs->GetInt(fa::kGradAttrLaunch);
    if (launch == nullptr) return fa::Refuse(context, "missing launch");
    if (!fa::HasWork(p)) return fa::Refuse(context, "no query row sees a key: the caller answers without a launch");
    const gert::StorageShape* sink = context->GetOptionalInputShape(fa::kGradSink);
    p.sink = sink != nullptr;  // dsink wanted: the dQ pass writes dsink_rows
    if (p.sink && (CheckSize(context, sink, "sink", p.n1) != ge::GRAPH_SUCCESS ||
                   CheckGeometry(context, p, s, {{context->GetOutputShape(fa::kGradDsinkRows), true}}) !=
                       ge::GRAPH_SUCCESS)) {
        return ge::GRAPH_FAILED;
    }
    if (Slopes(context, a, p, fa::kGradAlibiSlopes, fa::kGradPse) != ge::GRAPH_SUCCESS ||
        DropMaskInput(context, p, fa::kGradDropMask) != ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    if (p.pseMode != npu_fa::kPseNone &&
        CheckSize(context, context->GetOutputShape(fa::kGradDpseRows), "dpse_rows", fa::PseGradElements(p)) !=
            ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    npu_fa::FaGradTilingOut t;
    std::string err = npu_fa::ComputeFlashAttentionGradTiling(p, chip, t);
    if (err.empty() && (*launch < 0 || (size_t)*launch >= t.launches.size())) {
        err = "launch " + std::to_string(*launch) + " is outside the schedule's " + std::to_string(t.launches.size());
    }
    if (err.empty()) err = fa::CheckPlannedBlocks(a, t.launches[0].s1Block, t.launches[0].s2Block);
    if (!err.empty()) return fa::Refuse(context, err);
    if (CheckSize(context, context->GetInputShape(fa::kGradSeqInfo), "seq_info",
                  SeqRows(p) * npu_fa::kBwdSeqFields) != ge::GRAPH_SUCCESS ||
        (p.denseMask && CheckSize(context, context->GetOptionalInputShape(fa::kGradBlockMap), "block_map",
                                  t.mapBytes) != ge::GRAPH_SUCCESS) ||
        CheckGeometry(context, p, s, {{context->GetInputShape(fa::kGradDy), false},
                                      {context->GetInputShape(fa::kGradAttentionIn), false},
                                      {context->GetInputShape(fa::kGradSoftmaxMax), true},
                                      {context->GetInputShape(fa::kGradSoftmaxSum), true}}) != ge::GRAPH_SUCCESS ||
        CheckSize(context, context->GetOutputShape(fa::kGradDq), "dq", Elements(s.query)) != ge::GRAPH_SUCCESS ||
        CheckSize(context, context->GetOutputShape(fa::kGradDk), "dk", Elements(s.key)) != ge::GRAPH_SUCCESS ||
        CheckSize(context, context->GetOutputShape(fa::kGradDv), "dv", Elements(s.value)) != ge::GRAPH_SUCCESS) {
        return ge::GRAPH_FAILED;
    }
    const npu_fa::FlashAttentionGradTilingData& l = t.launches[(size_t)*launch];
    return Emit(context, l, l.blockDim, t.workspaceBytes - npu_fa::kLibApiWorkspaceBytes, sysWs);
}

}  // namespace optiling
