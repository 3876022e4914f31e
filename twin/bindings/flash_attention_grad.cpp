// Twin entry of the backward FlashAttention op: tiling (op_host), then the Ascend C kernel
// (op_kernel/flash_attention_bwd.cpp) launched two (deterministic) or three (fast) times on the emulated chip,
// sharing one workspace (D = rowsum(dO * O), the fast mode's dQ accumulator). Every GM buffer is range-checked.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>
#include <memory>

#include "flash_attention_grad_tiling_host.h"
#include "kernel_operator.h"

extern "C" void flash_attention_bwd(uint8_t* query, uint8_t* key, uint8_t* value, uint8_t* dy, uint8_t* attentionIn,
                                    uint8_t* softmaxMax, uint8_t* softmaxSum, uint8_t* seqInfo, uint8_t* dq,
                                    uint8_t* dk, uint8_t* dv, uint8_t* workspace, uint8_t* tiling);

namespace py = pybind11;

namespace {

npu_fa::FaLayout GradLayout(const std::string& s) {
    static const char* names[] = {"BSH", "SBH", "BSND", "BNSD", "TND"};
    for (uint32_t i = 0; i < 5; ++i) {
        if (s == names[i]) return (npu_fa::FaLayout)i;
    }
    throw py::value_error("input_layout '" + s + "' is not one of BSH, SBH, BSND, BNSD, TND");
}

py::dict FlashAttentionGrad(uintptr_t q, uintptr_t k, uintptr_t v, uintptr_t dy, uintptr_t attn, uintptr_t smax,
                            uintptr_t ssum, uintptr_t dq, uintptr_t dk, uintptr_t dv, const std::string& dtype,
                            const std::string& layout, uint32_t B, uint32_t N1, uint32_t N2, uint32_t S1, uint32_t S2,
                            uint32_t D, uint32_t Dv, float scale, uint32_t sparseMode, int64_t preTokens,
                            int64_t nextTokens, const std::vector<int64_t>& cuSeqQ, const std::vector<int64_t>& cuSeqKv,
                            uint64_t T1, uint64_t T2, bool deterministic, const std::string& chipName) {
    const npu_fa::ChipSpec* chip = npu_fa::FindChip(chipName.c_str());
    if (chip == nullptr) throw py::value_error("chip '" + chipName + "' is not in the chip table");
    if (dtype != "fp16" && dtype != "bf16") throw py::value_error("dtype must be fp16 or bf16, got " + dtype);
    npu_fa::FaProblem p;
    p.dtype = dtype == "bf16" ? npu_fa::kBf16 : npu_fa::kFp16;
    p.layout = GradLayout(layout);
    p.batch = B;
    p.n1 = N1;
    p.n2 = N2;
    p.s1 = S1;
    p.s2 = S2;
    p.d = D;
    p.dv = Dv;
    p.scale = scale;
    p.sparseMode = sparseMode;
    p.preTokens = preTokens;
    p.nextTokens = nextTokens;
    p.cuSeqQ = cuSeqQ;
    p.cuSeqKv = cuSeqKv;
    p.t1 = T1;
    p.t2 = T2;
    npu_fa::FaGradTilingOut t;
    const std::string err = npu_fa::ComputeFlashAttentionGradTiling(p, *chip, deterministic, t);
    if (!err.empty()) throw py::value_error("flash_attention_grad tiling: " + err);

    const bool varlen = p.layout == npu_fa::kTND;
    const uint64_t qTok = varlen ? T1 : (uint64_t)B * S1, kTok = varlen ? T2 : (uint64_t)B * S2;
    const uint64_t qBytes = qTok * N1 * D * 2, kBytes = kTok * N2 * D * 2, vBytes = kTok * N2 * Dv * 2;
    const uint64_t oBytes = qTok * N1 * Dv * 2, statBytes = qTok * N1 * 8 * 4;
    // System part (the library's, untouched here) then the user part, poisoned so that unwritten reads are NaN.
    const uint64_t wsBytes = t.workspaceBytes;
    std::unique_ptr<uint8_t[]> wsMem(new uint8_t[wsBytes]);
    std::memset(wsMem.get() + npu_fa::kLibApiWorkspaceBytes, 0xFF, wsBytes - npu_fa::kLibApiWorkspaceBytes);
    std::vector<int64_t> seqInfo = t.seqInfo;
    if (seqInfo.empty()) seqInfo.assign(npu_fa::kGradSeqFields, 0);

    double secs = 0;
    for (const npu_fa::FlashAttentionGradTilingData& pass : t.launches) {
        npu_fa::FlashAttentionGradTilingData tiling = pass;
        twin::LaunchOptions o;
        o.kernelType = AscendC::KERNEL_TYPE_MIX_AIC_1_2;
        o.numBlocks = tiling.blockDim;
        o.chip = chip;
        o.trace = false;
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
        const auto start = std::chrono::steady_clock::now();
        {
            py::gil_scoped_release release;
            twin::LaunchKernel(&flash_attention_bwd, o, (uint8_t*)q, (uint8_t*)k, (uint8_t*)v, (uint8_t*)dy,
                               (uint8_t*)attn, (uint8_t*)smax, (uint8_t*)ssum, (uint8_t*)seqInfo.data(), (uint8_t*)dq,
                               (uint8_t*)dk, (uint8_t*)dv, wsMem.get(), (uint8_t*)&tiling);
        }
        secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }

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
    info["workspace_bytes"] = t.workspaceBytes;
    info["ub_bytes_per_aiv"] = t.ubBytes;
    info["l1_bytes_per_aic"] = t.l1Bytes;
    info["twin_seconds"] = secs;
    return info;
}

}  // namespace

void RegisterFlashAttentionGrad(py::module_& m) {
    m.def("flash_attention_grad", &FlashAttentionGrad, py::arg("q"), py::arg("k"), py::arg("v"), py::arg("dy"),
          py::arg("attention_in"), py::arg("softmax_max"), py::arg("softmax_sum"), py::arg("dq"), py::arg("dk"),
          py::arg("dv"), py::arg("dtype"), py::arg("layout"), py::arg("B"), py::arg("N1"), py::arg("N2"),
          py::arg("S1"), py::arg("S2"), py::arg("D"), py::arg("Dv"), py::arg("scale"), py::arg("sparse_mode"),
          py::arg("pre_tokens"), py::arg("next_tokens"), py::arg("cu_seqlens_q"), py::arg("cu_seqlens_kv"),
          py::arg("T1"), py::arg("T2"), py::arg("deterministic"), py::arg("chip"));
}
