// Twin entry of the backward FlashAttention op: tiling (op_host), then the Ascend C kernel
// (op_kernel/flash_attention_bwd.cpp) launched two or three times (one per pass of its schedule) on the emulated chip,
// sharing one workspace (D = rowsum(dO * O) between the passes). Every GM buffer is range-checked.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>
#include <memory>

#include "plan/fa_launch_plan.h"
#include "kernel_operator.h"
#include "cost_model_hook.h"
#include "kernel_entries.h"
#include "launch_helpers.h"
#include "problem.h"


namespace py = pybind11;

// The cycle model's hook (cost_model.cpp): when enabled, every backward launch is traced and modelled.

namespace {

py::dict FlashAttentionGrad(const npu_fa::FaCall& call, const std::string& chipName, bool deterministic, uintptr_t q,
                            uintptr_t k, uintptr_t v, uintptr_t dy, uintptr_t attn, uintptr_t smax, uintptr_t ssum,
                            uintptr_t mask, uint64_t maskBytes, uintptr_t sink, uintptr_t pse, uintptr_t dropMask, uintptr_t dq,
                            uintptr_t dk, uintptr_t dv, uintptr_t dsinkRows, uintptr_t dpseRows, uintptr_t residual) {
    const npu_fa::ChipSpec* chip = npu_fa::FindChip(chipName.c_str());
    if (chip == nullptr) throw py::value_error("chip '" + chipName + "' is not in the chip table");
    const npu_fa::FaProblem p = twin_bindings::Solve(call).p;
    npu_fa::FaBackwardPlan plan;
    const std::string err = npu_fa::PlanBackward(p, *chip, plan);
    if (!err.empty()) throw py::value_error("flash_attention_grad tiling: " + err);
    const npu_fa::FaGradTilingOut& t = plan.launches;
    const uint64_t pseBytes = npu_fa::PseBytes(p);
    const bool alibi = p.alibiMode != npu_fa::kAlibiNone;
    if (pseBytes != 0 && pse == 0) throw py::value_error("flash_attention_grad: the problem has a pse but no pse buffer");
    // the kernel's dS rows for dpse (fp32), with an outer pse only
    const uint64_t dpseBytes =
        p.pseMode == npu_fa::kPseNone ? 0 : (uint64_t)p.batch * p.n1 * npu_fa::PseGradRows(p) * p.s2 * 4;
    if (dpseBytes != 0 && dpseRows == 0) {
        throw py::value_error("flash_attention_grad: the problem has an outer pse but no dpse_rows buffer");
    }
    const uint64_t dropBytes = npu_fa::DropMaskBytes(p);
    if (dropBytes != 0 && dropMask == 0) throw py::value_error("flash_attention_grad: the problem has a dropout mask but no buffer");
    if (p.outResidual && residual == 0) {
        throw py::value_error("flash_attention_grad: the problem reads a residual but has no buffer");
    }
    if (p.sink && (sink == 0 || dsinkRows == 0)) {
        throw py::value_error("flash_attention_grad: the problem has sinks but no sink or dsink_rows buffer");
    }

    const npu_fa::FaTensorBytes bytes = npu_fa::TensorBytes(p);
    const uint64_t wsBytes = t.workspaceBytes;
    auto wsMem = twin_bindings::PoisonedWorkspace(wsBytes);
    std::vector<int64_t> seqInfo = t.seqInfo;

    const auto start = std::chrono::steady_clock::now();
    std::vector<uint8_t> map;
    const bool model = CostModelOn();
    py::list models, digests;  // per launch, in launch order: cycle-model result, trace digest
    {
        if (p.denseMask) {
            py::gil_scoped_release release;
            map.assign(plan.map.bytes, 0);
            twin_bindings::LaunchBlockMap(plan.map, chip, mask, maskBytes, map.data(), map.size());
        }
        for (const npu_fa::FlashAttentionGradTilingData& pass : t.launches) {
            npu_fa::FlashAttentionGradTilingData tiling = pass;
            twin::LaunchOptions o = twin_bindings::MixLaunch(tiling.blockDim, chip, false);
            o.gm = {{(const uint8_t*)q, bytes.query, "query"},
                    {(const uint8_t*)k, bytes.key, "key"},
                    {(const uint8_t*)v, bytes.value, "value"},
                    {(const uint8_t*)dy, bytes.out, "dy"},
                    {(const uint8_t*)attn, bytes.out, "attention_in"},
                    {(const uint8_t*)smax, bytes.stats, "softmax_max"},
                    {(const uint8_t*)ssum, bytes.stats, "softmax_sum"},
                    {(const uint8_t*)seqInfo.data(), seqInfo.size() * 8, "seq_info"},
                    {(const uint8_t*)dq, bytes.query, "dq"},
                    {(const uint8_t*)dk, bytes.key, "dk"},
                    {(const uint8_t*)dv, bytes.value, "dv"},
                    {wsMem.get(), wsBytes, "workspace"},
                    {(const uint8_t*)&tiling, sizeof(tiling), "tiling"}};
            if (p.denseMask) {
                o.gm.push_back({(const uint8_t*)mask, maskBytes, "atten_mask"});
                o.gm.push_back({map.data(), map.size(), "block_map"});
            }
            if (p.sink) {
                o.gm.push_back({(const uint8_t*)sink, (uint64_t)p.n1 * 4, "sink"});
                o.gm.push_back({(const uint8_t*)dsinkRows, bytes.stats, "dsink_rows"});
            }
            if (pseBytes != 0) o.gm.push_back({(const uint8_t*)pse, pseBytes, alibi ? "alibi_slopes" : "pse"});
            if (dpseBytes != 0) o.gm.push_back({(const uint8_t*)dpseRows, dpseBytes, "dpse_rows"});
            if (dropBytes != 0) o.gm.push_back({(const uint8_t*)dropMask, dropBytes, "dropout_mask"});
            if (p.outResidual) o.gm.push_back({(const uint8_t*)residual, bytes.out, "attention_in_residual"});
            twin::LaunchResult r;
            {
                py::gil_scoped_release release;
                r = twin::LaunchKernel(&flash_attention_bwd, o, (uint8_t*)q, (uint8_t*)k, (uint8_t*)v, (uint8_t*)dy,
                                       (uint8_t*)attn, (uint8_t*)smax, (uint8_t*)ssum, (uint8_t*)mask, map.data(),
                                       (uint8_t*)seqInfo.data(), (uint8_t*)sink,
                                       (uint8_t*)(alibi ? pse : 0), (uint8_t*)(alibi ? 0 : pse), (uint8_t*)dropMask,
                                       (uint8_t*)residual, (uint8_t*)dq, (uint8_t*)dk,
                                       (uint8_t*)dv, (uint8_t*)dsinkRows, (uint8_t*)dpseRows, wsMem.get(),
                                       (uint8_t*)&tiling);
            }
            twin_bindings::RequireNoWarnings(r.warnings);
            if (model) {
                py::dict one;
                AddCostModel(r, o.gm, *chip, one);
                models.append(one["cost_model"]);
                digests.append(twin::TraceDigest(r, o.gm));
            }
        }
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    py::dict info;
    info["chip"] = chip->name;
    const npu_fa::FlashAttentionGradTilingData& dqPass = t.launches.front();
    const npu_fa::FlashAttentionGradTilingData& dkvPass = t.launches[1];
    info["deterministic"] = deterministic;
    info["out_residual"] = p.outResidual;
    info["launches"] = t.launches.size();
    info["block_dim_dq"] = dqPass.blockDim;
    info["block_dim_dkv"] = dkvPass.blockDim;
    info["s1_block"] = dqPass.s1Block;
    info["s2_block"] = dqPass.s2Block;
    info["tasks_dq"] = dqPass.taskTotal;
    info["tasks_dkv"] = dkvPass.taskTotal;
    info["tiles"] = t.tiles;
    // stored P and dS (the dK/dV pass does not recompute them), in chunks of this many kv heads
    info["stored_tiles"] = dqPass.storeTiles != 0;
    info["head_chunk"] = dqPass.headCount;
    // where one kv head's tiles exceed the limit: the launches' query chunks, this many rows each (0: unchunked)
    info["query_chunk_rows"] = dqPass.chunkKeys != 0 ? dqPass.qBlkCount * dqPass.s1Block : 0;
    // the dQ pass keeps its task's Q and dO in L0A over the task's steps (bwd_tiling.h BwdDqResident)
    info["dq_resident"] = dqPass.dqChunkQ != 0;
    // the dtype S and dP leave the cube in (16-bit in the high-performance mode where the forward's S is)
    info["score_dtype"] = dqPass.problem.bwdLowScores == 0 ? "fp32" : p.dtype == npu_fa::kBf16 ? "bf16" : "fp16";
    if (p.denseMask) {
        uint64_t masked = 0;
        for (uint64_t i = 0; i < plan.map.tiling.mapEntries; ++i) masked += map[i] == npu_fa::kTileMasked ? 1 : 0;
        info["tiles_masked"] = masked;
        info["block_map_entries"] = plan.map.tiling.mapEntries;
    }
    info["workspace_bytes"] = t.workspaceBytes;
    info["ub_bytes_per_aiv"] = t.ubBytes;
    info["l1_bytes_per_aic"] = t.l1Bytes;
    info["twin_seconds"] = secs;
    if (model) info["cost_model_launches"] = models, info["trace_digests"] = digests;
    return info;
}

}  // namespace

void RegisterFlashAttentionGrad(py::module_& m) {
    m.def("flash_attention_grad", &FlashAttentionGrad, py::arg("call"), py::arg("chip"), py::arg("deterministic"),
          py::arg("q"), py::arg("k"), py::arg("v"), py::arg("dy"), py::arg("attention_in"), py::arg("softmax_max"),
          py::arg("softmax_sum"), py::arg("mask"), py::arg("mask_bytes"), py::arg("sink"), py::arg("pse"), py::arg("drop_mask"), py::arg("dq"), py::arg("dk"),
          py::arg("dv"), py::arg("dsink_rows"), py::arg("dpse_rows"), py::arg("residual") = 0);
}
