// Twin entry of the inference op: npu_flash_attn._C.InferCall (a call of npu_fused_infer_attention_score as shapes,
// dtypes and attributes), its problem (op_host/problem/fa_infer_problem.h), and the plan's launches: the inference
// kernel (op_kernel/flash_attention_infer.cpp) and, with split keys, the combine pass, every GM range checked.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>

#include "cost_model_hook.h"
#include "kernel_entries.h"
#include "launch_helpers.h"
#include "plan/fa_launch_plan.h"
#include "problem.h"
#include "problem/fa_infer_problem.h"

namespace py = pybind11;

namespace {

using twin_bindings::IntList;
using twin_bindings::TensorArg;

npu_fa::FaInferCall MakeCall(const py::object& query, const py::object& key, const py::object& value,
                             const py::object& blockTable, const py::object& attenMask, const py::object& pseShift,
                             const py::object& actualSeqLengths, const py::object& actualSeqLengthsKv,
                             int64_t numHeads, double scale, int64_t preTokens, int64_t nextTokens,
                             const std::string& inputLayout, int64_t numKeyValueHeads, int64_t sparseMode,
                             int64_t innerPrecise, int64_t blockSize, bool softmaxLseFlag, int64_t windowLeft,
                             int64_t windowRight, double softcap, const py::object& alibiSlopes, uint32_t forceSplits,
                             const std::vector<std::string>& laterArgs, const py::object& antiquantScale,
                             const py::object& antiquantOffset, const py::object& keyAntiquantScale,
                             const py::object& keyAntiquantOffset, const py::object& valueAntiquantScale,
                             const py::object& valueAntiquantOffset, int64_t antiquantMode, int64_t keyAntiquantMode,
                             int64_t valueAntiquantMode) {
    npu_fa::FaInferCall c;
    c.query = TensorArg(query), c.key = TensorArg(key), c.value = TensorArg(value), c.blockTable = TensorArg(blockTable);
    c.attenMask = TensorArg(attenMask), c.pseShift = TensorArg(pseShift), c.alibiSlopes = TensorArg(alibiSlopes);
    c.actualSeqLengths = IntList(actualSeqLengths), c.actualSeqLengthsKv = IntList(actualSeqLengthsKv);
    c.numHeads = numHeads, c.scale = scale, c.preTokens = preTokens, c.nextTokens = nextTokens;
    c.inputLayout = inputLayout, c.numKeyValueHeads = numKeyValueHeads, c.sparseMode = sparseMode;
    c.innerPrecise = innerPrecise, c.blockSize = blockSize, c.softmaxLseFlag = softmaxLseFlag;
    c.windowLeft = windowLeft, c.windowRight = windowRight, c.softcap = softcap;
    c.forceSplits = forceSplits;
    c.laterArgs = laterArgs;
    c.antiquantScale = TensorArg(antiquantScale), c.antiquantOffset = TensorArg(antiquantOffset);
    c.keyAntiquantScale = TensorArg(keyAntiquantScale), c.keyAntiquantOffset = TensorArg(keyAntiquantOffset);
    c.valueAntiquantScale = TensorArg(valueAntiquantScale), c.valueAntiquantOffset = TensorArg(valueAntiquantOffset);
    c.antiquantMode = antiquantMode, c.keyAntiquantMode = keyAntiquantMode, c.valueAntiquantMode = valueAntiquantMode;
    return c;
}

npu_fa::FaInferProblemInfo Solve(const npu_fa::FaInferCall& call) {
    npu_fa::FaInferProblemInfo info;
    const npu_fa::FaError e = npu_fa::BuildInferProblem(call, info);
    if (e) twin_bindings::Raise(e);
    return info;
}

py::dict Problem(const npu_fa::FaInferCall& call) {
    const npu_fa::FaInferProblemInfo o = Solve(call);
    const npu_fa::FaInferProblem& p = o.p;
    py::dict d;
    d["layout"] = o.layoutName;
    d["B"] = p.batch, d["N1"] = p.n1, d["N2"] = p.n2, d["D"] = p.d;
    d["q_lens"] = p.qLen, d["kv_lens"] = p.kvLen, d["q_starts"] = p.qTok;
    d["sparse_mode"] = p.sparseMode, d["paged"] = o.paged, d["num_blocks"] = o.numBlocks, d["block_size"] = p.pageSize;
    d["out_shape"] = py::tuple(py::cast(o.outShape)), d["lse_shape"] = py::tuple(py::cast(o.lseShape));
    d["compressed_mask"] = o.compressedMask;
    if (p.kvQuant) {
        py::dict q;
        q["key_mode"] = p.keyQuantMode, q["value_mode"] = p.valueQuantMode, q["tokens"] = p.quantTokens;
        q["offset"] = p.quantOffset, q["elems"] = p.antiquantElems;
        d["antiquant"] = q;
    } else {
        d["antiquant"] = py::none();
    }
    if (p.denseMask) {
        const npu_fa::FaMaskView& v = o.mask;
        py::dict m;
        m["narrow"] = v.narrow, m["widen"] = v.widen, m["copy"] = v.copy, m["shape"] = v.shape;
        d["mask_view"] = m;
    } else {
        d["mask_view"] = py::none();
    }
    return d;
}

struct Plan {
    const npu_fa::ChipSpec* chip;
    npu_fa::FaInferProblem p;
    npu_fa::FaInferPlan plan;
};

Plan MakePlan(const npu_fa::FaInferCall& call, const std::string& chipName) {
    Plan plan;
    plan.chip = npu_fa::FindChip(chipName.c_str());
    if (plan.chip == nullptr) throw py::value_error("chip '" + chipName + "' is not in the chip table");
    plan.p = Solve(call).p;
    const std::string err = npu_fa::PlanInfer(plan.p, *plan.chip, plan.plan);
    if (!err.empty()) throw py::value_error("flash_attention_infer tiling: " + err);
    return plan;
}

py::dict PlanInfo(const Plan& plan) {
    const npu_fa::FaInferTilingData& t = plan.plan.launch.data;
    py::dict info;
    info["chip"] = plan.chip->name;
    info["block_dim"] = t.blockDim;
    info["m_block"] = t.mBlock;
    info["s2_block"] = t.s2Block;
    info["vec_rows"] = t.vecRows;
    info["splits"] = t.splits;
    info["tasks"] = t.taskTotal;
    info["steps"] = plan.plan.launch.steps;
    info["combine_cores"] = plan.plan.combine ? t.combineCores : 0;
    info["workspace_bytes"] = plan.plan.launch.workspaceBytes;
    info["ub_bytes_per_aiv"] = plan.plan.launch.ubBytes;
    info["l1_bytes_per_aic"] = plan.plan.launch.l1Bytes;
    return info;
}

py::dict InferPlan(const npu_fa::FaInferCall& call, const std::string& chipName) {
    return PlanInfo(MakePlan(call, chipName));
}

py::dict Infer(const npu_fa::FaInferCall& call, const std::string& chipName, uintptr_t q, uintptr_t k, uintptr_t v,
               uintptr_t blockTable, uintptr_t mask, uintptr_t pse, uintptr_t alibiSlopes, uintptr_t antiquant,
               uintptr_t out, uintptr_t lse, bool trace) {
    Plan plan = MakePlan(call, chipName);
    const npu_fa::FaInferProblem& p = plan.p;
    const uint64_t esize = 2, kvSize = p.kvQuant ? 1 : esize;
    const uint64_t wsBytes = plan.plan.launch.workspaceBytes;
    auto wsMem = twin_bindings::PoisonedWorkspace(wsBytes);
    npu_fa::FaInferTilingData tiling = plan.plan.launch.data;
    std::vector<int64_t> seqInfo = plan.plan.launch.seqInfo;
    std::vector<twin::GmRange> gm = {{(const uint8_t*)seqInfo.data(), seqInfo.size() * 8, "seq_info"},
                                     {(const uint8_t*)out, p.outElems * esize, "attention_out"},
                                     {wsMem.get(), wsBytes, "workspace"},
                                     {(const uint8_t*)&tiling, sizeof(tiling), "tiling"}};
    if (p.lse) gm.push_back({(const uint8_t*)lse, p.lseElems * 4, "softmax_lse"});
    twin::LaunchOptions o = twin_bindings::MixLaunch(tiling.blockDim, plan.chip, trace);
    o.gm = gm;
    o.gm.push_back({(const uint8_t*)q, p.queryElems * esize, "query"});
    o.gm.push_back({(const uint8_t*)k, p.keyElems * kvSize, "key"});
    o.gm.push_back({(const uint8_t*)v, p.valueElems * kvSize, "value"});
    if (p.kvQuant) o.gm.push_back({(const uint8_t*)antiquant, p.antiquantElems * 4, "antiquant"});
    if (p.tableElems != 0) o.gm.push_back({(const uint8_t*)blockTable, p.tableElems * 4, "block_table"});
    if (p.denseMask) o.gm.push_back({(const uint8_t*)mask, p.maskBytes, "atten_mask"});
    if (p.pse) o.gm.push_back({(const uint8_t*)pse, p.pseElems * esize, "pse_shift"});
    if (p.alibi) o.gm.push_back({(const uint8_t*)alibiSlopes, p.alibiElems * 4, "alibi_slopes"});
    auto start = std::chrono::steady_clock::now();
    twin::LaunchResult r;
    py::dict info = PlanInfo(plan);
    {
        py::gil_scoped_release release;
        r = twin::LaunchKernel(&flash_attention_infer, o, (uint8_t*)q, (uint8_t*)k, (uint8_t*)v, (uint8_t*)blockTable,
                               (uint8_t*)mask, (uint8_t*)pse, (uint8_t*)alibiSlopes, (uint8_t*)antiquant,
                               (uint8_t*)seqInfo.data(), (uint8_t*)out, (uint8_t*)lse, wsMem.get(), (uint8_t*)&tiling);
    }
    twin_bindings::RequireNoWarnings(r.warnings);
    if (o.trace) info["trace_digest"] = twin::TraceDigest(r, o.gm);
    // With the cycle model on, each launch's model (cost_model: the main pass's; cost_model_launches: all, in order).
    py::list models;
    if (CostModelOn()) {
        AddCostModel(r, o.gm, *plan.chip, info);
        models.append(info["cost_model"]);
    }
    if (plan.plan.combine) {
        twin::LaunchOptions c;
        c.kernelType = AscendC::KERNEL_TYPE_AIV_ONLY;
        c.numBlocks = tiling.combineCores;
        c.chip = plan.chip;
        c.trace = CostModelOn();
        c.modelOnly = CostModelOnly();
        c.sampleBlocks = SampledBlocks(c.numBlocks);
        c.gm = gm;
        twin::LaunchResult rc;
        {
            py::gil_scoped_release release;
            rc = twin::LaunchKernel(&flash_attention_infer_combine, c, (uint8_t*)seqInfo.data(), (uint8_t*)out,
                                    (uint8_t*)lse, wsMem.get(), (uint8_t*)&tiling);
        }
        twin_bindings::RequireNoWarnings(rc.warnings);
        if (CostModelOn()) {
            py::dict one;
            AddCostModel(rc, c.gm, *plan.chip, one);
            models.append(one["cost_model"]);
        }
    }
    if (CostModelOn()) info["cost_model_launches"] = models;
    info["twin_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return info;
}

}  // namespace

void RegisterFlashAttentionInfer(py::module_& m) {
    py::class_<npu_fa::FaInferCall>(m, "InferCall", "One call of the inference op (npu_fused_infer_attention_score): "
                                                    "tensors as None or (shape, strides, dtype name), attributes by "
                                                    "torch_npu's names (window_left/right, softcap, alibi_slopes: "
                                                    "flash_attn_with_kvcache's)")
        .def(py::init(&MakeCall), py::arg("query"), py::arg("key"), py::arg("value"),
             py::arg("block_table") = py::none(), py::arg("atten_mask") = py::none(), py::arg("pse_shift") = py::none(),
             py::arg("actual_seq_lengths") = py::none(), py::arg("actual_seq_lengths_kv") = py::none(),
             py::arg("num_heads") = 1, py::arg("scale") = 1.0, py::arg("pre_tokens") = npu_fa::kInt32Max,
             py::arg("next_tokens") = npu_fa::kInt32Max, py::arg("input_layout") = "BSH",
             py::arg("num_key_value_heads") = 0, py::arg("sparse_mode") = 0, py::arg("inner_precise") = 0,
             py::arg("block_size") = 0, py::arg("softmax_lse_flag") = false, py::arg("window_left") = -1,
             py::arg("window_right") = -1, py::arg("softcap") = 0.0, py::arg("alibi_slopes") = py::none(),
             py::arg("force_splits") = 0, py::arg("later_args") = std::vector<std::string>{},
             py::arg("antiquant_scale") = py::none(), py::arg("antiquant_offset") = py::none(),
             py::arg("key_antiquant_scale") = py::none(), py::arg("key_antiquant_offset") = py::none(),
             py::arg("value_antiquant_scale") = py::none(), py::arg("value_antiquant_offset") = py::none(),
             py::arg("antiquant_mode") = 0, py::arg("key_antiquant_mode") = 0, py::arg("value_antiquant_mode") = 0);
    m.def("flash_attention_infer_problem", &Problem, py::arg("call"),
          "The problem of an inference call (ValueError / TypeError / NotImplementedError naming the rule it breaks)");
    m.def("flash_attention_infer_plan", &InferPlan, py::arg("call"), py::arg("chip"));
    m.def("flash_attention_infer", &Infer, py::arg("call"), py::arg("chip"), py::arg("q"), py::arg("k"), py::arg("v"),
          py::arg("block_table"), py::arg("atten_mask"), py::arg("pse_shift"), py::arg("alibi_slopes"),
          py::arg("antiquant"), py::arg("out"), py::arg("softmax_lse"), py::arg("trace") = false);
}
