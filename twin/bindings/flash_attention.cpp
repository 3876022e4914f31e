// Twin entry of the forward FlashAttention op: tiling on the host side (op_host), then the Ascend C kernel
// (op_kernel/flash_attention_fwd.cpp) launched on the emulated chip with every GM buffer range-checked.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>
#include <memory>

#include "flash_attention_tiling_host.h"
#include "kernel_operator.h"

extern "C" void flash_attention_fwd(uint8_t* query, uint8_t* key, uint8_t* value, uint8_t* seqInfo,
                                    uint8_t* attentionOut, uint8_t* softmaxMax, uint8_t* softmaxSum,
                                    uint8_t* workspace, uint8_t* tiling);

namespace py = pybind11;

namespace {

npu_fa::FaLayout ParseLayout(const std::string& s) {
    if (s == "BSH") return npu_fa::kBSH;
    if (s == "SBH") return npu_fa::kSBH;
    if (s == "BSND") return npu_fa::kBSND;
    if (s == "BNSD") return npu_fa::kBNSD;
    if (s == "TND") return npu_fa::kTND;
    throw py::value_error("input_layout '" + s + "' is not one of BSH, SBH, BSND, BNSD, TND");
}

py::dict FlashAttentionFwd(uintptr_t q, uintptr_t k, uintptr_t v, uintptr_t out, uintptr_t smax, uintptr_t ssum,
                           const std::string& dtype, const std::string& layout, uint32_t B, uint32_t N1, uint32_t N2,
                           uint32_t S1, uint32_t S2, uint32_t D, uint32_t Dv, float scale, uint32_t sparseMode,
                           int64_t preTokens, int64_t nextTokens, const std::vector<int64_t>& cuSeqQ,
                           const std::vector<int64_t>& cuSeqKv, uint64_t T1, uint64_t T2, const std::string& chipName) {
    const npu_fa::ChipSpec* chip = npu_fa::FindChip(chipName.c_str());
    if (chip == nullptr) throw py::value_error("chip '" + chipName + "' is not in the chip table");
    if (dtype != "fp16" && dtype != "bf16") throw py::value_error("dtype must be fp16 or bf16, got " + dtype);
    npu_fa::FaProblem p;
    p.dtype = dtype == "bf16" ? npu_fa::kBf16 : npu_fa::kFp16;
    p.layout = ParseLayout(layout);
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
    npu_fa::FaTilingOut t;
    std::string err = npu_fa::ComputeFlashAttentionTiling(p, *chip, t);
    if (!err.empty()) throw py::value_error("flash_attention tiling: " + err);

    const bool varlen = p.layout == npu_fa::kTND;
    const uint64_t qTok = varlen ? T1 : (uint64_t)B * S1, kTok = varlen ? T2 : (uint64_t)B * S2;
    const uint64_t qBytes = qTok * N1 * D * 2, kBytes = kTok * N2 * D * 2, vBytes = kTok * N2 * Dv * 2;
    const uint64_t oBytes = qTok * N1 * Dv * 2, statBytes = qTok * N1 * 8 * 4;
    // System part (the library's, untouched here) then the user part, poisoned so that unwritten reads are NaN.
    const uint64_t wsBytes = t.workspaceBytes;
    std::unique_ptr<uint8_t[]> wsMem(new uint8_t[wsBytes]);
    std::memset(wsMem.get() + npu_fa::kLibApiWorkspaceBytes, 0xFF, wsBytes - npu_fa::kLibApiWorkspaceBytes);
    npu_fa::FlashAttentionTilingData tiling = t.data;
    std::vector<int64_t> seqInfo = t.seqInfo;
    if (seqInfo.empty()) seqInfo.assign(npu_fa::kSeqInfoFields, 0);

    twin::LaunchOptions o;
    o.kernelType = AscendC::KERNEL_TYPE_MIX_AIC_1_2;
    o.numBlocks = tiling.blockDim;
    o.chip = chip;
    o.trace = false;
    o.gm = {{(const uint8_t*)q, qBytes, "query"},
            {(const uint8_t*)k, kBytes, "key"},
            {(const uint8_t*)v, vBytes, "value"},
            {(const uint8_t*)seqInfo.data(), seqInfo.size() * 8, "seq_info"},
            {(const uint8_t*)out, oBytes, "attention_out"},
            {(const uint8_t*)smax, statBytes, "softmax_max"},
            {(const uint8_t*)ssum, statBytes, "softmax_sum"},
            {wsMem.get(), wsBytes, "workspace"},
            {(const uint8_t*)&tiling, sizeof(tiling), "tiling"}};
    auto start = std::chrono::steady_clock::now();
    {
        py::gil_scoped_release release;
        twin::LaunchKernel(&flash_attention_fwd, o, (uint8_t*)q, (uint8_t*)k, (uint8_t*)v, (uint8_t*)seqInfo.data(),
                           (uint8_t*)out, (uint8_t*)smax, (uint8_t*)ssum, wsMem.get(), (uint8_t*)&tiling);
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    py::dict info;
    info["chip"] = chip->name;
    info["block_dim"] = tiling.blockDim;
    info["s1_block"] = tiling.s1Block;
    info["s2_block"] = tiling.s2Block;
    info["k_chunk_qk"] = tiling.kChunkQK;
    info["n_chunk_qk"] = tiling.nChunkQK;
    info["k_chunk_pv"] = tiling.kChunkPV;
    info["n_chunk_pv"] = tiling.nChunkPV;
    info["tasks"] = tiling.taskTotal;
    info["steps"] = t.visibleSteps;
    info["workspace_bytes"] = t.workspaceBytes;
    info["ub_bytes_per_aiv"] = t.ubBytes;
    info["l1_bytes_per_aic"] = t.l1Bytes;
    info["twin_seconds"] = secs;
    return info;
}

}  // namespace

void RegisterFlashAttention(py::module_& m) {
    m.def("flash_attention_fwd", &FlashAttentionFwd, py::arg("q"), py::arg("k"), py::arg("v"), py::arg("out"),
          py::arg("softmax_max"), py::arg("softmax_sum"), py::arg("dtype"), py::arg("layout"), py::arg("B"),
          py::arg("N1"), py::arg("N2"), py::arg("S1"), py::arg("S2"), py::arg("D"), py::arg("Dv"), py::arg("scale"),
          py::arg("sparse_mode"), py::arg("pre_tokens"), py::arg("next_tokens"), py::arg("cu_seqlens_q"),
          py::arg("cu_seqlens_kv"), py::arg("T1"), py::arg("T2"), py::arg("chip"));
}
