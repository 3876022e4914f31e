// The problem dict of the Python layer (ops.py `problem_dict`) -> the host tiling's FaProblem, shared by the op
// bindings.
#pragma once
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "flash_attention_tiling_host.h"
#include "twin/launch/runtime.h"

namespace twin_bindings {

namespace py = pybind11;

// GM the binding allocates itself (the workspace), 512-byte aligned like aclrtMalloc's device memory.
inline std::unique_ptr<uint8_t, void (*)(void*)> DeviceAlloc(uint64_t bytes) {
    const uint64_t n = (bytes + 511) / 512 * 512;
    return {static_cast<uint8_t*>(std::aligned_alloc(512, n != 0 ? n : 512)), &std::free};
}

// The op's own kernels must not do what the twin only warns about (twin::Warn): it would be a kernel bug.
inline void RequireNoWarnings(const std::vector<std::string>& warnings) {
    if (!warnings.empty()) throw twin::TwinError("twin warning in the op's kernel: " + warnings.front());
}

inline npu_fa::FaLayout ParseLayout(const std::string& s) {
    if (s == "BSH") return npu_fa::kBSH;
    if (s == "SBH") return npu_fa::kSBH;
    if (s == "BSND") return npu_fa::kBSND;
    if (s == "BNSD") return npu_fa::kBNSD;
    if (s == "TND") return npu_fa::kTND;
    throw py::value_error("input_layout '" + s + "' is not one of BSH, SBH, BSND, BNSD, TND");
}

template <typename V>
inline V Get(const py::dict& d, const char* key) {
    if (!d.contains(key)) throw py::value_error(std::string("flash_attention problem: missing '") + key + "'");
    return d[key].cast<V>();
}

// The problem as the Python layer validated it (ops.py `problem_dict`).
inline npu_fa::FaProblem ParseProblem(const py::dict& d) {
    npu_fa::FaProblem p;
    const std::string dtype = Get<std::string>(d, "dtype");
    if (dtype != "fp16" && dtype != "bf16") throw py::value_error("dtype must be fp16 or bf16, got " + dtype);
    p.dtype = dtype == "bf16" ? npu_fa::kBf16 : npu_fa::kFp16;
    p.layout = ParseLayout(Get<std::string>(d, "layout"));
    p.batch = Get<uint32_t>(d, "B");
    p.n1 = Get<uint32_t>(d, "N1");
    p.n2 = Get<uint32_t>(d, "N2");
    p.s1 = Get<uint32_t>(d, "S1");
    p.s2 = Get<uint32_t>(d, "S2");
    p.d = Get<uint32_t>(d, "D");
    p.dv = Get<uint32_t>(d, "Dv");
    p.scale = Get<float>(d, "scale");
    p.sparseMode = Get<uint32_t>(d, "sparse_mode");
    p.preTokens = Get<int64_t>(d, "pre_tokens");
    p.nextTokens = Get<int64_t>(d, "next_tokens");
    p.cuSeqQ = Get<std::vector<int64_t>>(d, "cu_seqlens_q");
    p.cuSeqKv = Get<std::vector<int64_t>>(d, "cu_seqlens_kv");
    p.t1 = Get<uint64_t>(d, "T1");
    p.t2 = Get<uint64_t>(d, "T2");
    p.prefix = Get<std::vector<int64_t>>(d, "prefix");
    p.denseMask = Get<bool>(d, "dense_mask");
    p.sink = d.contains("sink") && d["sink"].cast<bool>();
    if (d.contains("softcap") && !d["softcap"].is_none()) p.softcap = d["softcap"].cast<float>();
    if (d.contains("alibi_mode")) {
        p.alibiMode = Get<uint32_t>(d, "alibi_mode");
        p.alibiPerBatch = Get<bool>(d, "alibi_per_batch");
        p.alibiDelta = Get<int64_t>(d, "alibi_delta");
    }
    if (d.contains("pse_mode")) {
        p.pseMode = Get<uint32_t>(d, "pse_mode");
        p.pseStrideB = Get<uint64_t>(d, "pse_stride_b");
        p.pseStrideN = Get<uint64_t>(d, "pse_stride_n");
        p.pseStrideS = Get<uint64_t>(d, "pse_stride_s");
    }
    if (p.denseMask) {
        p.maskPerBatch = Get<bool>(d, "mask_per_batch");
        p.maskPerHead = Get<bool>(d, "mask_per_head");
        p.maskStrideB = Get<uint64_t>(d, "mask_stride_b");
        p.maskStrideN = Get<uint64_t>(d, "mask_stride_n");
        p.maskStrideS = Get<uint64_t>(d, "mask_stride_s");
        p.maskColStep = Get<uint32_t>(d, "mask_col_step");
        p.maskTndGlobal = Get<bool>(d, "mask_tnd_global");
    }
    if (d.contains("drop_mode")) {
        p.dropMode = Get<uint32_t>(d, "drop_mode");
        p.keepProb = Get<double>(d, "keep_prob");
        p.seed = (uint64_t)Get<int64_t>(d, "seed");
        p.offset = (uint64_t)Get<int64_t>(d, "offset");
        p.dropMaskPitch = Get<uint32_t>(d, "drop_mask_pitch");
    }
    if (d.contains("force_s1_block")) p.forceS1Block = Get<uint32_t>(d, "force_s1_block");
    if (d.contains("force_s2_block")) p.forceS2Block = Get<uint32_t>(d, "force_s2_block");
    return p;
}

// Bytes of the pse input: ALiBi slopes ([B, N1] or [N1] fp32) or an outer bias ([B or 1, N1, S1 or 1, S2] of the
// input dtype); 0 without either.
inline uint64_t PseBytes(const npu_fa::FaProblem& p) {
    if (p.alibiMode != npu_fa::kAlibiNone) return (p.alibiPerBatch ? (uint64_t)p.batch : 1) * p.n1 * 4;
    if (p.pseMode == npu_fa::kPseNone) return 0;
    return (p.pseStrideB != 0 ? (uint64_t)p.batch * p.pseStrideB : (uint64_t)p.n1 * p.pseStrideN) * 2;
}

// Bytes of the backward's dpse_rows output (FaBwdVector::StorePseGrad): fp32 [B, N1, S1, S2] for a [.., S1, S2]
// outer pse, [B, N1, 4 * ceil(S1 / 16), S2] for a [.., 1, S2] one; 0 without an outer pse.
inline uint64_t PseGradBytes(const npu_fa::FaProblem& p) {
    if (p.pseMode == npu_fa::kPseNone) return 0;
    return (uint64_t)p.batch * p.n1 * npu_fa::PseGradRows(p) * p.s2 * 4;
}

// Bytes of a user dropout mask as the kernels read it: one row of dropMaskPitch bytes per statistics row.
inline uint64_t DropMaskBytes(const npu_fa::FaProblem& p) {
    if (p.dropMode != npu_fa::kDropMask) return 0;
    const uint64_t rows = p.layout == npu_fa::kTND ? p.t1 * p.n1 : (uint64_t)p.batch * p.n1 * p.s1;
    return rows * p.dropMaskPitch;
}

}  // namespace twin_bindings
