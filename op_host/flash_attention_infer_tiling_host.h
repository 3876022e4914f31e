// Host tiling of the inference kernel (op_kernel/flash_attention_infer.cpp) and its combine pass: from the problem
// (per-batch lengths, strides, the KV cache's paging) and the chip to the tiling struct, the seq table and the
// workspace. Pure C++, shared by the twin bindings and (later) the CANN TilingFunc.
#pragma once
#include <string>
#include <vector>

#include "chip_spec.h"
#include "tiling/infer_tiling.h"
#include "tiling/seq_table.h"
#include "tiling/ub_budget.h"

namespace npu_fa {

struct FaInferProblem {
    FaDtype dtype = kFp16;
    uint32_t batch = 1, n1 = 1, n2 = 1, d = 64, dv = 64;
    float scale = 1.0f;
    uint32_t sparseMode = 0;          // 0-4 (0 with one query token, as the built-in, unless a window); BandOfMode
    int64_t preTokens = kUnbounded, nextTokens = kUnbounded;  // the bands of modes 4 and 0 (with a dense mask)
    // A dense atten_mask (bytes, nonzero = masked) read in place (rules::MaskView): byte strides per batch, query
    // head and query token (0 = broadcast), maskColStep 0 for a column-broadcast mask widened to rows of equal
    // bytes; maskTndGlobal: a TND mask at global token positions; maskBytes: the bytes the kernel may read.
    bool denseMask = false, maskTndGlobal = false;
    uint64_t maskStrideB = 0, maskStrideN = 0, maskStrideS = 0, maskBytes = 0;
    uint32_t maskColStep = 1;
    bool lse = false;                 // softmax_lse_flag
    float softcap = 0.0f;             // > 0: the scaled scores x become softcap * tanh(x / softcap)
    bool alibi = false, alibiPerBatch = false;  // flash_attn's ALiBi slopes [N1] or [B, N1] fp32 (bottom-right)
    bool pse = false;                 // pse_shift [B or 1, N1, Q_S, KV_S] in the input dtype, added after the scale
    FaStrides pseStride{};            // its element strides per batch (0: broadcast), head, query token
    std::vector<int64_t> qLen, kvLen; // per batch
    std::vector<int64_t> qTok, kvTok; // TND: each batch's first query / key token (a contiguous TND cache), else 0
    FaStrides q{}, out{}, k{}, v{};   // element strides per batch (a paged cache: per page), head, token
    uint64_t lseB = 0, lseN = 0, lseS = 0;
    uint32_t pageSize = 0, maxPages = 0;  // a paged cache: block_size and the block table's columns
    // Elements the kernels may touch in each tensor (the twin checks every GM range against them).
    uint64_t queryElems = 0, keyElems = 0, valueElems = 0, outElems = 0, lseElems = 0, tableElems = 0;
    uint64_t pseElems = 0, alibiElems = 0;
    uint32_t forceSplits = 0;         // 0 = the tiling's choice
    // An int8 K/V cache (keyElems/valueElems are then bytes): each side's antiquant mode (0 per channel [n2, d],
    // 1 per token [batch, quantTokens]), whether offsets are given, and the fp32 elements of the antiquant argument.
    bool kvQuant = false, quantOffset = false;
    uint32_t keyQuantMode = 0, valueQuantMode = 0, quantTokens = 0;
    uint64_t antiquantElems = 0;
};

struct FaInferTilingOut {
    FaInferTilingData data{};
    std::vector<int64_t> seqInfo;      // kSeqInfoFields per batch
    uint64_t workspaceBytes = 0;       // kLibApiWorkspaceBytes (system) + the user part
    uint32_t ubBytes = 0;              // per AIV of the main pass
    uint32_t l1Bytes = 0;              // per AIC
    uint64_t steps = 0;                // (task, key block) pairs of the main pass
};

// Fills `out`; returns an empty string on success, else why the problem cannot be tiled on this chip.
std::string ComputeInferTiling(const FaInferProblem& p, const ChipSpec& chip, FaInferTilingOut& out);

}  // namespace npu_fa
