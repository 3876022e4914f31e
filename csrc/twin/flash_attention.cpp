// Twin entry of the forward FlashAttention op: tiling on the host side (op_host), then the Ascend C kernel
// (op_kernel/flash_attention_fwd.cpp) launched on the emulated chip with every GM buffer range-checked.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>

#include "flash_attention_tiling_host.h"
#include "kernel_operator.h"
#include "cost_model_hook.h"
#include "kernel_entries.h"
#include "launch_helpers.h"
#include "problem.h"
#include "plan/fa_block_map_key.h"
#include "plan/fa_launch_plan.h"


namespace py = pybind11;

// The cycle model's hook (cost_model.cpp): when enabled, the forward launch is traced and modelled.

namespace {

struct Plan {
    const npu_fa::ChipSpec* chip;
    npu_fa::FaProblem p;
    npu_fa::FaForwardPlan fwd;
    const npu_fa::FaTilingOut& t() const { return fwd.launch; }
};

Plan MakePlan(const npu_fa::FaCall& call, const std::string& chipName) {
    Plan plan;
    plan.chip = npu_fa::FindChip(chipName.c_str());
    if (plan.chip == nullptr) throw py::value_error("chip '" + chipName + "' is not in the chip table");
    plan.p = twin_bindings::Solve(call).p;
    const std::string err = npu_fa::PlanForward(plan.p, *plan.chip, plan.fwd);
    if (!err.empty()) throw py::value_error("flash_attention tiling: " + err);
    return plan;
}

py::dict PlanInfo(const Plan& plan) {
    const npu_fa::FlashAttentionTilingData& tiling = plan.t().data;
    py::dict info;
    info["chip"] = plan.chip->name;
    info["block_dim"] = tiling.blockDim;
    info["s1_block"] = tiling.s1Block;
    info["s2_block"] = tiling.s2Block;
    info["vec_rows"] = tiling.vecRows;
    info["band_tiles"] = tiling.bandTiles;
    info["half_softmax"] = tiling.halfSoftmax != npu_fa::kHalfChainOff;
    info["half_row_sums"] = tiling.halfSoftmax == npu_fa::kHalfChainHalfSums;
    info["out_residual"] = tiling.problem.outResidual != 0;
    info["residual_in_probs"] = tiling.residualInProbs != 0;
    info["lazy_rescale"] = tiling.lazyRescale != 0;
    if (tiling.lazyRescale != 0) info["lazy_threshold"] = tiling.lazyThreshold;
    info["score_dtype"] = tiling.lowScores != 0 ? (tiling.problem.dtype == npu_fa::kBf16 ? "bf16" : "fp16") : "fp32";
    info["k_chunk_qk"] = tiling.kChunkQK;
    info["n_chunk_qk"] = tiling.nChunkQK;
    info["k_chunk_pv"] = tiling.kChunkPV;
    info["n_chunk_pv"] = tiling.nChunkPV;
    info["tasks"] = tiling.taskTotal;
    info["steps"] = plan.t().visibleSteps;
    info["workspace_bytes"] = plan.t().workspaceBytes;
    info["ub_bytes_per_aiv"] = plan.t().ubBytes;
    info["l1_bytes_per_aic"] = plan.t().l1Bytes;
    info["block_map_bytes"] = plan.t().mapBytes;
    info["block_map_entries"] = tiling.mapEntries;
    info["block_map_rows"] = tiling.mapRows;
    info["block_map_cores"] = tiling.mapCores;
    info["block_map_key"] = npu_fa::BlockMapKeyFields(plan.p, plan.fwd.map);
    return info;
}

// Instruction counts from the twin's trace: per core kind ({"aic": {op: n}, "aiv": {op: n}}) and per core
// ([{"core": name, "kind": "aic"|"aiv", "ops": {op: n}}]).
void AddOpCounts(const twin::LaunchResult& r, py::dict& info) {
    std::map<std::string, std::map<std::string, uint64_t>> counts;
    py::list perCore;
    for (size_t c = 0; c < r.traces.size(); ++c) {
        const std::string kind = r.coreTypes[c] == AscendC::AIC ? "aic" : "aiv";
        std::map<std::string, uint64_t> mine;
        for (const twin::TraceRec& rec : r.traces[c]) {
            ++counts[kind][rec.op];
            ++mine[rec.op];
        }
        py::dict d;
        d["core"] = r.coreNames[c];
        d["kind"] = kind;
        d["ops"] = mine;
        perCore.append(d);
    }
    py::dict out;
    for (const auto& kv : counts) out[py::str(kv.first)] = kv.second;
    info["op_counts"] = out;
    info["op_counts_per_core"] = perCore;
}

py::dict FlashAttentionPlan(const npu_fa::FaCall& call, const std::string& chipName) {
    return PlanInfo(MakePlan(call, chipName));
}

py::dict FlashAttentionBlockMap(const npu_fa::FaCall& call, const std::string& chipName, uintptr_t mask, uint64_t maskBytes,
                                uintptr_t blockMap, uint64_t blockMapBytes) {
    Plan plan = MakePlan(call, chipName);
    if (!plan.p.denseMask) throw py::value_error("flash_attention_block_map: the problem has no dense mask");
    if (blockMapBytes != plan.t().mapBytes) {
        throw py::value_error("flash_attention_block_map: block map buffer of " + std::to_string(blockMapBytes) +
                              " bytes, the tiling needs " + std::to_string(plan.t().mapBytes));
    }
    auto start = std::chrono::steady_clock::now();
    {
        py::gil_scoped_release release;
        twin_bindings::LaunchBlockMap(plan.fwd.map, plan.chip, mask, maskBytes, (uint8_t*)blockMap, blockMapBytes);
    }
    py::dict info = PlanInfo(plan);
    info["twin_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return info;
}

py::dict FlashAttentionFwd(const npu_fa::FaCall& call, const std::string& chipName, uintptr_t q, uintptr_t k, uintptr_t v,
                           uintptr_t mask, uint64_t maskBytes, uintptr_t blockMap, uint64_t blockMapBytes, uintptr_t sink,
                           uintptr_t pse, uintptr_t dropMask, uintptr_t out, uintptr_t smax, uintptr_t ssum,
                           bool countOps, uintptr_t residual) {
    Plan plan = MakePlan(call, chipName);
    const npu_fa::FaProblem& p = plan.p;
    if (p.denseMask && blockMapBytes != plan.t().mapBytes) {
        throw py::value_error("flash_attention_fwd: block map of " + std::to_string(blockMapBytes) + " bytes, the tiling "
                              "needs " + std::to_string(plan.t().mapBytes));
    }
    const npu_fa::FaTensorBytes bytes = npu_fa::TensorBytes(p);
    const uint64_t wsBytes = plan.t().workspaceBytes;
    auto wsMem = twin_bindings::PoisonedWorkspace(wsBytes);
    npu_fa::FlashAttentionTilingData tiling = plan.t().data;
    std::vector<int64_t> seqInfo = plan.t().seqInfo;

    twin::LaunchOptions o = twin_bindings::MixLaunch(tiling.blockDim, plan.chip, countOps);
    o.gm = {{(const uint8_t*)q, bytes.query, "query"},
            {(const uint8_t*)k, bytes.key, "key"},
            {(const uint8_t*)v, bytes.value, "value"},
            {(const uint8_t*)seqInfo.data(), seqInfo.size() * 8, "seq_info"},
            {(const uint8_t*)out, bytes.out, "attention_out"},
            {(const uint8_t*)smax, bytes.stats, "softmax_max"},
            {(const uint8_t*)ssum, bytes.stats, "softmax_sum"},
            {wsMem.get(), wsBytes, "workspace"},
            {(const uint8_t*)&tiling, sizeof(tiling), "tiling"}};
    if (p.denseMask) {
        o.gm.push_back({(const uint8_t*)mask, maskBytes, "atten_mask"});
        o.gm.push_back({(const uint8_t*)blockMap, blockMapBytes, "block_map"});
    }
    if (p.outResidual) {
        if (residual == 0) throw py::value_error("flash_attention_fwd: the problem writes a residual but has no buffer");
        o.gm.push_back({(const uint8_t*)residual, bytes.out, "attention_out_residual"});
    }
    if (p.sink) {
        if (sink == 0) throw py::value_error("flash_attention_fwd: the problem has sinks but no sink buffer");
        o.gm.push_back({(const uint8_t*)sink, (uint64_t)p.n1 * 4, "sink"});
    }
    // The op's pse: the ALiBi slopes input or the outer bias input of the kernel.
    const uint64_t pseBytes = npu_fa::PseBytes(p);
    const bool alibi = p.alibiMode != npu_fa::kAlibiNone;
    if (pseBytes != 0) {
        if (pse == 0) throw py::value_error("flash_attention_fwd: the problem has a pse but no pse buffer");
        o.gm.push_back({(const uint8_t*)pse, pseBytes, alibi ? "alibi_slopes" : "pse"});
    }
    const uint64_t dropBytes = npu_fa::DropMaskBytes(p);
    if (dropBytes != 0) {
        if (dropMask == 0) throw py::value_error("flash_attention_fwd: the problem has a dropout mask but no buffer");
        o.gm.push_back({(const uint8_t*)dropMask, dropBytes, "dropout_mask"});
    }
    auto start = std::chrono::steady_clock::now();
    twin::LaunchResult r;
    {
        py::gil_scoped_release release;
        r = twin::LaunchKernel(&flash_attention_fwd, o, (uint8_t*)q, (uint8_t*)k, (uint8_t*)v, (uint8_t*)mask,
                               (uint8_t*)blockMap, (uint8_t*)seqInfo.data(), (uint8_t*)sink,
                               (uint8_t*)(alibi ? pse : 0), (uint8_t*)(alibi ? 0 : pse), (uint8_t*)dropMask, (uint8_t*)out, (uint8_t*)smax,
                               (uint8_t*)ssum, (uint8_t*)residual, wsMem.get(), (uint8_t*)&tiling);
    }
    twin_bindings::RequireNoWarnings(r.warnings);
    py::dict info = PlanInfo(plan);
    info["twin_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (countOps) AddOpCounts(r, info);
    if (tiling.lazyRescale != 0) {  // each cube's flush count, in its workspace part (kernel/fwd_cube.h)
        std::vector<uint32_t> ran = o.sampleBlocks;
        if (ran.empty()) {
            for (uint32_t b = 0; b < tiling.blockDim; ++b) ran.push_back(b);
        }
        uint64_t flushes = 0;
        for (uint32_t b : ran) {
            uint32_t n = 0;
            std::memcpy(&n, wsMem.get() + npu_fa::kLibApiWorkspaceBytes + b * tiling.wsPerCore + tiling.wsOffsetFlush +
                                npu_fa::kFwdFlushCount, sizeof(n));
            flushes += n;
        }
        info["lazy_flushes"] = flushes;  // in model-only launches: of the cores run, with no arithmetic (none)
    }
    if (o.trace) info["trace_digest"] = twin::TraceDigest(r, o.gm);
    if (CostModelOn()) AddCostModel(r, o.gm, *plan.chip, info);
    return info;
}

}  // namespace

void RegisterFlashAttention(py::module_& m) {
    m.def("flash_attention_plan", &FlashAttentionPlan, py::arg("call"), py::arg("chip"));
    m.def("flash_attention_block_map", &FlashAttentionBlockMap, py::arg("call"), py::arg("chip"), py::arg("mask"),
          py::arg("mask_bytes"), py::arg("block_map"), py::arg("block_map_bytes"));
    m.def("flash_attention_fwd", &FlashAttentionFwd, py::arg("call"), py::arg("chip"), py::arg("q"), py::arg("k"),
          py::arg("v"), py::arg("mask"), py::arg("mask_bytes"), py::arg("block_map"), py::arg("block_map_bytes"),
          py::arg("sink"), py::arg("pse"), py::arg("drop_mask"), py::arg("out"), py::arg("softmax_max"), py::arg("softmax_sum"),
          py::arg("count_ops") = false, py::arg("residual") = 0);
}
