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
#include "problem/fa_block_map_key.h"


namespace py = pybind11;

// The cycle model's hook (cost_model.cpp): when enabled, the forward launch is traced and modelled.

namespace {

struct Plan {
    const npu_fa::ChipSpec* chip;
    npu_fa::FaProblem p;
    npu_fa::FaTilingOut t;
};

Plan MakePlan(const npu_fa::FaCall& call, const std::string& chipName) {
    Plan plan;
    plan.chip = npu_fa::FindChip(chipName.c_str());
    if (plan.chip == nullptr) throw py::value_error("chip '" + chipName + "' is not in the chip table");
    plan.p = twin_bindings::Solve(call).p;
    std::string err = npu_fa::ComputeFlashAttentionTiling(plan.p, *plan.chip, plan.t);
    if (!err.empty()) throw py::value_error("flash_attention tiling: " + err);
    if (plan.t.seqInfo.empty()) plan.t.seqInfo.assign(npu_fa::kSeqInfoFields, 0);
    return plan;
}

py::dict PlanInfo(const Plan& plan) {
    const npu_fa::FlashAttentionTilingData& tiling = plan.t.data;
    py::dict info;
    info["chip"] = plan.chip->name;
    info["block_dim"] = tiling.blockDim;
    info["s1_block"] = tiling.s1Block;
    info["s2_block"] = tiling.s2Block;
    info["vec_rows"] = tiling.vecRows;
    info["band_tiles"] = tiling.bandTiles;
    info["k_chunk_qk"] = tiling.kChunkQK;
    info["n_chunk_qk"] = tiling.nChunkQK;
    info["k_chunk_pv"] = tiling.kChunkPV;
    info["n_chunk_pv"] = tiling.nChunkPV;
    info["tasks"] = tiling.taskTotal;
    info["steps"] = plan.t.visibleSteps;
    info["workspace_bytes"] = plan.t.workspaceBytes;
    info["ub_bytes_per_aiv"] = plan.t.ubBytes;
    info["l1_bytes_per_aic"] = plan.t.l1Bytes;
    info["block_map_bytes"] = plan.t.mapBytes;
    info["block_map_entries"] = tiling.mapEntries;
    info["block_map_rows"] = tiling.mapRows;
    info["block_map_cores"] = tiling.mapCores;
    info["block_map_key"] = npu_fa::BlockMapKeyFields(plan.p, plan.t);
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
    if (blockMapBytes != plan.t.mapBytes) {
        throw py::value_error("flash_attention_block_map: block map buffer of " + std::to_string(blockMapBytes) +
                              " bytes, the tiling needs " + std::to_string(plan.t.mapBytes));
    }
    npu_fa::FlashAttentionTilingData tiling = plan.t.data;
    std::vector<int64_t> seqInfo = plan.t.seqInfo;
    uint8_t workspace[32] = {};
    twin::LaunchOptions o;
    o.kernelType = AscendC::KERNEL_TYPE_AIV_ONLY;
    o.numBlocks = std::max<uint32_t>(1, tiling.mapCores);
    o.chip = plan.chip;
    o.trace = false;
    o.gm = {{(const uint8_t*)mask, maskBytes, "atten_mask"},
            {(const uint8_t*)seqInfo.data(), seqInfo.size() * 8, "seq_info"},
            {(const uint8_t*)blockMap, blockMapBytes, "block_map"},
            {workspace, sizeof(workspace), "workspace"},
            {(const uint8_t*)&tiling, sizeof(tiling), "tiling"}};
    auto start = std::chrono::steady_clock::now();
    if (tiling.mapRows > 0) {
        py::gil_scoped_release release;
        twin::LaunchKernel(&flash_attention_block_map, o, (uint8_t*)mask, (uint8_t*)seqInfo.data(), (uint8_t*)blockMap,
                           workspace, (uint8_t*)&tiling);
    }
    py::dict info = PlanInfo(plan);
    info["twin_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return info;
}

py::dict FlashAttentionFwd(const npu_fa::FaCall& call, const std::string& chipName, uintptr_t q, uintptr_t k, uintptr_t v,
                           uintptr_t mask, uint64_t maskBytes, uintptr_t blockMap, uint64_t blockMapBytes, uintptr_t sink,
                           uintptr_t pse, uintptr_t dropMask, uintptr_t out, uintptr_t smax, uintptr_t ssum,
                           bool countOps) {
    Plan plan = MakePlan(call, chipName);
    const npu_fa::FaProblem& p = plan.p;
    if (p.denseMask && blockMapBytes != plan.t.mapBytes) {
        throw py::value_error("flash_attention_fwd: block map of " + std::to_string(blockMapBytes) + " bytes, the tiling "
                              "needs " + std::to_string(plan.t.mapBytes));
    }
    const bool varlen = p.layout == npu_fa::kTND;
    const uint64_t qTok = varlen ? p.t1 : (uint64_t)p.batch * p.s1, kTok = varlen ? p.t2 : (uint64_t)p.batch * p.s2;
    const uint64_t qBytes = qTok * p.n1 * p.d * 2, kBytes = kTok * p.n2 * p.d * 2, vBytes = kTok * p.n2 * p.dv * 2;
    const uint64_t oBytes = qTok * p.n1 * p.dv * 2, statBytes = qTok * p.n1 * 8 * 4;
    // System part (the library's, untouched here) then the user part, poisoned so that unwritten reads are NaN.
    const uint64_t wsBytes = plan.t.workspaceBytes;
    auto wsMem = twin_bindings::DeviceAlloc(wsBytes);
    std::memset(wsMem.get() + npu_fa::kLibApiWorkspaceBytes, 0xFF, wsBytes - npu_fa::kLibApiWorkspaceBytes);
    npu_fa::FlashAttentionTilingData tiling = plan.t.data;
    std::vector<int64_t> seqInfo = plan.t.seqInfo;

    twin::LaunchOptions o;
    o.kernelType = AscendC::KERNEL_TYPE_MIX_AIC_1_2;
    o.numBlocks = tiling.blockDim;
    o.chip = plan.chip;
    o.trace = countOps || CostModelOn();
    o.modelOnly = CostModelOnly();
    o.sampleBlocks = SampledBlocks(o.numBlocks);
    o.gm = {{(const uint8_t*)q, qBytes, "query"},
            {(const uint8_t*)k, kBytes, "key"},
            {(const uint8_t*)v, vBytes, "value"},
            {(const uint8_t*)seqInfo.data(), seqInfo.size() * 8, "seq_info"},
            {(const uint8_t*)out, oBytes, "attention_out"},
            {(const uint8_t*)smax, statBytes, "softmax_max"},
            {(const uint8_t*)ssum, statBytes, "softmax_sum"},
            {wsMem.get(), wsBytes, "workspace"},
            {(const uint8_t*)&tiling, sizeof(tiling), "tiling"}};
    if (p.denseMask) {
        o.gm.push_back({(const uint8_t*)mask, maskBytes, "atten_mask"});
        o.gm.push_back({(const uint8_t*)blockMap, blockMapBytes, "block_map"});
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
                               (uint8_t*)ssum, wsMem.get(), (uint8_t*)&tiling);
    }
    twin_bindings::RequireNoWarnings(r.warnings);
    py::dict info = PlanInfo(plan);
    info["twin_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (countOps) AddOpCounts(r, info);
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
          py::arg("count_ops") = false);
}
