// One call of the inference op (torch_npu's npu_fused_infer_attention_score, the arguments the kernels take) as
// every backend receives it: tensors as shapes and dtypes, attributes by the built-in's names and defaults, and
// which arguments of later stages (quantisation, shared prefix, rope, padding sizes) the caller gave; and
// flash_attn_with_kvcache's arguments the built-in lacks (window, softcap, ALiBi), which its drop-in fills.
// fa_infer_problem.h turns it into the problem.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "problem/fa_call.h"

namespace npu_fa {

struct FaInferCall {
    FaTensorArg query, key, value;
    FaTensorArg blockTable;    // int32 [B, max pages]: a paged cache
    FaTensorArg attenMask;     // dense (modes 0/1, any broadcastable shape) or the compressed one of modes 2-4
    FaTensorArg pseShift;      // [B or 1, N1, Q_S >= S1, KV_S >= S2], the query's dtype
    FaIntList actualSeqLengths, actualSeqLengthsKv;
    int64_t numHeads = 1;
    double scale = 1.0;
    int64_t preTokens = kInt32Max, nextTokens = kInt32Max;
    std::string inputLayout = "BSH";
    int64_t numKeyValueHeads = 0;
    int64_t sparseMode = 0;
    int64_t innerPrecise = 0;
    int64_t blockSize = 0;
    bool softmaxLseFlag = false;
    // flash_attn's window_size (left, right; negative: unbounded): the bottom-right band of sparse mode 4, applied
    // with one query token too; both negative: no window.
    int64_t windowLeft = -1, windowRight = -1;
    double softcap = 0.0;      // flash_attn's softcap (0: none)
    FaTensorArg alibiSlopes;   // flash_attn's alibi_slopes: fp32 [N1] or [B, N1]
    // An int8 K/V cache: antiquant_scale/offset (K at index 0, V at 1) with antiquant_mode, or the separate key_/
    // value_antiquant_scale/offset with key_/value_antiquant_mode.
    FaTensorArg antiquantScale, antiquantOffset;
    FaTensorArg keyAntiquantScale, keyAntiquantOffset, valueAntiquantScale, valueAntiquantOffset;
    int64_t antiquantMode = 0, keyAntiquantMode = 0, valueAntiquantMode = 0;
    // Arguments of later stages the caller gave, as "name" (a tensor) or "name=value" (a nonzero mode).
    std::vector<std::string> laterArgs;
    // Twin tuning: this many KV splits instead of the tiling's choice (0 = choose).
    uint32_t forceSplits = 0;
};

}  // namespace npu_fa
