// One call of the FlashAttention ops as every backend receives it: the tensors' shapes, strides and dtypes, which
// optional inputs are present, and the op's attributes (the torch schema's names and defaults,
// python/npu_flash_attn/ops.py SCHEMA). The Python layer, the torch_npu adapter and the CANN TilingFunc/InferShape
// fill it; fa_problem_build.h turns it into the problem. Pure C++: no CANN, pybind or torch header.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace npu_fa {

constexpr int64_t kInt32Max = 2147483647;
constexpr int64_t kInt32Min = -2147483647 - 1;

// A tensor argument: absent, or its sizes, element strides (empty = contiguous) and torch dtype name
// ("torch.float16"; messages quote it).
struct FaTensorArg {
    bool present = false;
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;
    std::string dtype;

    int64_t Dim(size_t axis) const { return shape[axis]; }
};

// An int[]? attribute: None, or its values.
struct FaIntList {
    bool present = false;
    std::vector<int64_t> values;
};

struct FaAttrs {
    int64_t headNum = 0;
    std::string inputLayout;
    double scale = 1.0, keepProb = 1.0;
    int64_t preTokens = kInt32Max, nextTokens = kInt32Max, innerPrecise = 0;
    FaIntList prefix, actualSeqQlen, actualSeqKvlen;
    int64_t sparseMode = 0;
    uint64_t seed = 0, offset = 0;
    bool hasSoftcap = false;  // the schema's float? softcap: None = off
    double softcap = 0.0;
    int64_t pseType = 1;
    FaIntList qStartIdx, kvStartIdx;
    FaIntList dropoutOrigin;  // not in the built-in: [row, col, head, heads] of generated dropout (FaDropoutParams)
};

struct FaCall {
    FaTensorArg query, key, value, pse, paddingMask, attenMask, sink, dropoutMask;
    FaAttrs attrs;
    // The backward's own tensors (checked against the forward's output and statistics shapes when `grad`).
    bool grad = false;
    FaTensorArg dy, attentionIn, softmaxMax, softmaxSum;
    // The grad op's partial_keys: the call sees only part of each row's keys; softmax_max/sum and attention_in are
    // the whole rows' (context parallelism).
    bool partialKeys = false;
    // The output residual (issue 26): the forward writes attention_out_residual when `outResidual`; the grad op
    // reads `attentionInResidual` when present (it sets `outResidual`).
    bool outResidual = false;
    FaTensorArg attentionInResidual;
    // How the caller hands the mask over: the CANN op's mask input already is the kernel's view (a column-broadcast
    // mask as rows of kColumnBroadcastWidth bytes); the torch_npu adapter passes the view as a contiguous tensor.
    bool maskIsKernelView = false;
    bool contiguousMask = false;
    // Non-empty: the device that reads a user dropout mask in place, without the twin path's repacking.
    std::string dropMaskInPlaceDevice;
    // Twin tuning (ops.set_block_override): these blocks instead of the tiling's choice (0 = choose).
    uint32_t forceS1Block = 0, forceS2Block = 0;
    // Twin tuning (twin_backend.set_score_override): the forward's scores in the input dtype (1) or fp32 (0) instead
    // of the tiling's choice (-1).
    int32_t forceLowScores = -1;
    // Twin tuning (twin_backend.set_lazy_rescale_override): the forward's lazy rescale off (0), on with one S slot
    // beside O in L0C (1) or two (2), instead of the tiling's choice (-1); lazyThreshold > -inf replaces the default
    // threshold (negative: every step flushes).
    int32_t forceLazy = -1;
    float lazyThreshold = -__builtin_huge_valf();
    // Twin tuning (twin_backend.set_bwd_store_limit): the backward's stored tiles may take this many bytes of
    // workspace per chunk of heads instead of kBwdStoreLimitBytes (0 = that default).
    uint64_t bwdStoreLimit = 0;
};

}  // namespace npu_fa
