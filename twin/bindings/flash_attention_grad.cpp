// Twin entry of the backward FlashAttention op: tiling (op_host), then the Ascend C kernel
// (op_kernel/flash_attention_bwd.cpp) launched two or three times (one per pass of its schedule) on the emulated chip,
// sharing one workspace (D = rowsum(dO * O) between the passes). Every GM buffer is range-checked.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>
#include <memory>

#include "flash_attention_grad_tiling_host.h"
#include "kernel_operator.h"
#include "cost_model_hook.h"
#include "kernel_entries.h"
#include "problem.h"


namespace py = pybind11;

// The cycle model's hook (cost_model.cpp): when enabled, every backward launch is traced and modelled.

namespace {

// Dense masks: the forward's block-map pre-pass for the backward's blocks (the tiling's mapTiling).
void BuildBlockMap(const npu_fa::FaGradTilingOut& t, const npu_fa::ChipSpec* chip, uintptr_t mask, uint64_t maskBytes,
                   std::vector<uint8_t>& map) {
    map.assign(t.mapBytes, 0);
    npu_fa::FlashAttentionTilingData tiling = t.mapTiling;
    if (tiling.mapRows == 0) return;
    std::vector<int64_t> seqInfo(t.seqInfo.size() / npu_fa::kBwdSeqFields * npu_fa::kSeqInfoFields);
    for (size_t b = 0; b < seqInfo.size() / npu_fa::kSeqInfoFields; ++b) {
        for (uint32_t f = 0; f < npu_fa::kSeqInfoFields; ++f) {
            seqInfo[b * npu_fa::kSeqInfoFields + f] = t.seqInfo[b * npu_fa::kBwdSeqFields + f];
        }
    }
    uint8_t workspace[32] = {};
    twin::LaunchOptions o;
    o.kernelType = AscendC::KERNEL_TYPE_AIV_ONLY;
    o.numBlocks = tiling.mapCores;
    o.chip = chip;
    o.trace = false;
    o.gm = {{(const uint8_t*)mask, maskBytes, "atten_mask"},
            {(const uint8_t*)seqInfo.data(), seqInfo.size() * 8, "seq_info"},
            {map.data(), map.size(), "block_map"},
            {workspace, sizeof(workspace), "workspace"},
            {(const uint8_t*)&tiling, sizeof(tiling), "tiling"}};
    twin::LaunchKernel(&flash_attention_block_map, o, (uint8_t*)mask, (uint8_t*)seqInfo.data(), map.data(), workspace,
                       (uint8_t*)&tiling);
}

py::dict FlashAttentionGrad(const py::dict& problem, const std::string& chipName, bool deterministic, uintptr_t q,
                            uintptr_t k, uintptr_t v, uintptr_t dy, uintptr_t attn, uintptr_t smax, uintptr_t ssum,
                            uintptr_t mask, uint64_t maskBytes, uintptr_t sink, uintptr_t pse, uintptr_t dropMask, uintptr_t dq,
                            uintptr_t dk, uintptr_t dv, uintptr_t dsinkRows, uintptr_t dpseRows) {
    const npu_fa::ChipSpec* chip = npu_fa::FindChip(chipName.c_str());
    if (chip == nullptr) throw py::value_error("chip '" + chipName + "' is not in the chip table");
    const npu_fa::FaProblem p = twin_bindings::ParseProblem(problem);
    npu_fa::FaGradTilingOut t;
    const std::string err = npu_fa::ComputeFlashAttentionGradTiling(p, *chip, t);
    if (!err.empty()) throw py::value_error("flash_attention_grad tiling: " + err);
    const uint64_t pseBytes = twin_bindings::PseBytes(p);
    const bool alibi = p.alibiMode != npu_fa::kAlibiNone;
    if (pseBytes != 0 && pse == 0) throw py::value_error("flash_attention_grad: the problem has a pse but no pse buffer");
    const uint64_t dpseBytes = twin_bindings::PseGradBytes(p);
    if (dpseBytes != 0 && dpseRows == 0) {
        throw py::value_error("flash_attention_grad: the problem has an outer pse but no dpse_rows buffer");
    }
    const uint64_t dropBytes = twin_bindings::DropMaskBytes(p);
    if (dropBytes != 0 && dropMask == 0) throw py::value_error("flash_attention_grad: the problem has a dropout mask but no buffer");
    if (p.sink && (sink == 0 || dsinkRows == 0)) {
        throw py::value_error("flash_attention_grad: the problem has sinks but no sink or dsink_rows buffer");
    }

    const bool varlen = p.layout == npu_fa::kTND;
    const uint64_t qTok = varlen ? p.t1 : (uint64_t)p.batch * p.s1, kTok = varlen ? p.t2 : (uint64_t)p.batch * p.s2;
    const uint64_t qBytes = qTok * p.n1 * p.d * 2, kBytes = kTok * p.n2 * p.d * 2, vBytes = kTok * p.n2 * p.dv * 2;
    const uint64_t oBytes = qTok * p.n1 * p.dv * 2, statBytes = qTok * p.n1 * 8 * 4;
    // System part (the library's, untouched here) then the user part, poisoned so that unwritten reads are NaN.
    const uint64_t wsBytes = t.workspaceBytes;
    auto wsMem = twin_bindings::DeviceAlloc(wsBytes);
    std::memset(wsMem.get() + npu_fa::kLibApiWorkspaceBytes, 0xFF, wsBytes - npu_fa::kLibApiWorkspaceBytes);
    std::vector<int64_t> seqInfo = t.seqInfo;
    if (seqInfo.empty()) seqInfo.assign(npu_fa::kBwdSeqFields, 0);

    const auto start = std::chrono::steady_clock::now();
    std::vector<uint8_t> map;
    const bool model = CostModelOn();
    py::list models, digests;  // per launch, in launch order: cycle-model result, trace digest
    {
        if (p.denseMask) {
            py::gil_scoped_release release;
            BuildBlockMap(t, chip, mask, maskBytes, map);
        }
        for (const npu_fa::FlashAttentionGradTilingData& pass : t.launches) {
            npu_fa::FlashAttentionGradTilingData tiling = pass;
            twin::LaunchOptions o;
            o.kernelType = AscendC::KERNEL_TYPE_MIX_AIC_1_2;
            o.numBlocks = tiling.blockDim;
            o.chip = chip;
            o.trace = model;
            o.modelOnly = CostModelOnly();
            o.sampleBlocks = SampledBlocks(o.numBlocks);
            o.gm = {{(const uint8_t*)q, qBytes, "query"},
                    {(const uint8_t*)k, kBytes, "key"},
                    {(const uint8_t*)v, vBytes, "value"},
                    {(const uint8_t*)dy, oBytes, "dy"},
                    {(const uint8_t*)attn, oBytes, "attention_in"},
                    {(const uint8_t*)smax, statBytes, "softmax_max"},
                    {(const uint8_t*)ssum, statBytes, "softmax_sum"},
                    {(const uint8_t*)seqInfo.data(), seqInfo.size() * 8, "seq_info"},
                    {(const uint8_t*)dq, qBytes, "dq"},
                    {(const uint8_t*)dk, kBytes, "dk"},
                    {(const uint8_t*)dv, vBytes, "dv"},
                    {wsMem.get(), wsBytes, "workspace"},
                    {(const uint8_t*)&tiling, sizeof(tiling), "tiling"}};
            if (p.denseMask) {
                o.gm.push_back({(const uint8_t*)mask, maskBytes, "atten_mask"});
                o.gm.push_back({map.data(), map.size(), "block_map"});
            }
            if (p.sink) {
                o.gm.push_back({(const uint8_t*)sink, (uint64_t)p.n1 * 4, "sink"});
                o.gm.push_back({(const uint8_t*)dsinkRows, statBytes, "dsink_rows"});
            }
            if (pseBytes != 0) o.gm.push_back({(const uint8_t*)pse, pseBytes, alibi ? "alibi_slopes" : "pse"});
            if (dpseBytes != 0) o.gm.push_back({(const uint8_t*)dpseRows, dpseBytes, "dpse_rows"});
            if (dropBytes != 0) o.gm.push_back({(const uint8_t*)dropMask, dropBytes, "dropout_mask"});
            twin::LaunchResult r;
            {
                py::gil_scoped_release release;
                r = twin::LaunchKernel(&flash_attention_bwd, o, (uint8_t*)q, (uint8_t*)k, (uint8_t*)v, (uint8_t*)dy,
                                       (uint8_t*)attn, (uint8_t*)smax, (uint8_t*)ssum, (uint8_t*)mask, map.data(),
                                       (uint8_t*)seqInfo.data(), (uint8_t*)sink,
                                       (uint8_t*)(alibi ? pse : 0), (uint8_t*)(alibi ? 0 : pse), (uint8_t*)dropMask,
                                       (uint8_t*)dq, (uint8_t*)dk,
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
    info["launches"] = t.launches.size();
    info["block_dim_dq"] = dqPass.blockDim;
    info["block_dim_dkv"] = dkvPass.blockDim;
    info["s1_block"] = dqPass.s1Block;
    info["s2_block"] = dqPass.s2Block;
    info["tasks_dq"] = dqPass.taskTotal;
    info["tasks_dkv"] = dkvPass.taskTotal;
    info["tiles"] = t.tiles;
    if (p.denseMask) {
        uint64_t masked = 0;
        for (uint64_t i = 0; i < t.mapTiling.mapEntries; ++i) masked += map[i] == npu_fa::kTileMasked ? 1 : 0;
        info["tiles_masked"] = masked;
        info["block_map_entries"] = t.mapTiling.mapEntries;
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
    m.def("flash_attention_grad", &FlashAttentionGrad, py::arg("problem"), py::arg("chip"), py::arg("deterministic"),
          py::arg("q"), py::arg("k"), py::arg("v"), py::arg("dy"), py::arg("attention_in"), py::arg("softmax_max"),
          py::arg("softmax_sum"), py::arg("mask"), py::arg("mask_bytes"), py::arg("sink"), py::arg("pse"), py::arg("drop_mask"), py::arg("dq"), py::arg("dk"),
          py::arg("dv"), py::arg("dsink_rows"), py::arg("dpse_rows"));
}
