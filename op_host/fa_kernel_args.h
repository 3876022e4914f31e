// The kernel entries' GM arguments, declared once, in argument order (op_kernel/flash_attention_fwd.cpp,
// flash_attention_block_map.cpp, flash_attention_bwd.cpp; workspace and tiling follow every list). Each X-macro list
// calls X(name, Name, dtypes, presence) per argument: the torch/CANN name, its CamelCase (the entry's parameter and
// the enumerator suffix), and the CANN OpDef's dtype combination and REQUIRED/OPTIONAL (tokens the OpDef defines).
// The CANN OpDefs and positions (op_host/cann), the aclnn stand-in, the twin's entry declarations and the torch_npu
// adapter's aclnn calls expand these lists; tests/test_npu_host_sources.py checks them against the entries.
#pragma once

#define NPU_FA_QKV_INPUTS(X)                         \
    X(query, Query, kQkv, REQUIRED)                  \
    X(key, Key, kQkv, REQUIRED)                      \
    X(value, Value, kQkv, REQUIRED)

// What both directions read after their tensors: the dense mask and its block map, the sequence table, the features.
#define NPU_FA_SHARED_INPUTS(X)                      \
    X(atten_mask, AttenMask, kMask, OPTIONAL)        \
    X(block_map, BlockMap, kU8, OPTIONAL)            \
    X(seq_info, SeqInfo, kI64, REQUIRED)             \
    X(sink, Sink, kF32, OPTIONAL)                    \
    X(alibi_slopes, AlibiSlopes, kF32, OPTIONAL)     \
    X(pse, Pse, kQkv, OPTIONAL)                      \
    X(dropout_mask, DropoutMask, kU8, OPTIONAL)

#define NPU_FA_FWD_INPUTS(X) NPU_FA_QKV_INPUTS(X) NPU_FA_SHARED_INPUTS(X)

#define NPU_FA_FWD_OUTPUTS(X)                        \
    X(attention_out, AttentionOut, kQkv, REQUIRED)   \
    X(softmax_max, SoftmaxMax, kF32, REQUIRED)       \
    X(softmax_sum, SoftmaxSum, kF32, REQUIRED)       \
    X(attention_out_residual, AttentionOutResidual, kQkv, OPTIONAL)

// The block-map pre-pass reads only the mask (its own dtype combinations: uint8 or bool masks).
#define NPU_FA_MAP_INPUTS(X)                         \
    X(atten_mask, AttenMask, kMapMask, REQUIRED)     \
    X(seq_info, SeqInfo, kMapI64, REQUIRED)

#define NPU_FA_MAP_OUTPUTS(X) X(block_map, BlockMap, kMapU8, REQUIRED)

#define NPU_FA_GRAD_INPUTS(X)                        \
    NPU_FA_QKV_INPUTS(X)                             \
    X(dy, Dy, kQkv, REQUIRED)                        \
    X(attention_in, AttentionIn, kQkv, REQUIRED)     \
    X(softmax_max, SoftmaxMax, kF32, REQUIRED)       \
    X(softmax_sum, SoftmaxSum, kF32, REQUIRED)       \
    NPU_FA_SHARED_INPUTS(X)                          \
    X(attention_in_residual, AttentionInResidual, kQkv, OPTIONAL)

// dsink_rows: with a sink, each query row's share of dsink in the statistics' layout (summed per head by the
// caller); dpse_rows: with an outer pse, dS as the kernel writes it (reduced to dpse by the caller).
#define NPU_FA_GRAD_OUTPUTS(X)                       \
    X(dq, Dq, kQkv, REQUIRED)                        \
    X(dk, Dk, kQkv, REQUIRED)                        \
    X(dv, Dv, kQkv, REQUIRED)                        \
    X(dsink_rows, DsinkRows, kF32, REQUIRED)         \
    X(dpse_rows, DpseRows, kF32, REQUIRED)

// The inference kernel (flash_attention_infer.cpp) and its split-KV combine pass (flash_attention_infer_combine.cpp,
// which reads the main pass's partials from the shared workspace). key/value: the query's dtype or an int8 cache;
// antiquant: an int8 cache's scales and offsets in the kernel's fp32 form (fused_infer.py's antiquant_params).
#define NPU_FA_INFER_INPUTS(X)                       \
    X(query, Query, kQkv, REQUIRED)                  \
    X(key, Key, kKv, REQUIRED)                       \
    X(value, Value, kKv, REQUIRED)                   \
    X(block_table, BlockTable, kI32, OPTIONAL)       \
    X(atten_mask, AttenMask, kMask, OPTIONAL)        \
    X(pse_shift, PseShift, kQkv, OPTIONAL)           \
    X(alibi_slopes, AlibiSlopes, kF32, OPTIONAL)     \
    X(antiquant, Antiquant, kF32, OPTIONAL)          \
    X(seq_info, SeqInfo, kI64, REQUIRED)

#define NPU_FA_INFER_OUTPUTS(X)                      \
    X(attention_out, AttentionOut, kQkv, REQUIRED)   \
    X(softmax_lse, SoftmaxLse, kF32, REQUIRED)

#define NPU_FA_INFER_COMBINE_INPUTS(X) X(seq_info, SeqInfo, kI64, REQUIRED)

// A byte-pointer parameter per argument (the twin's view of a GM_ADDR).
#define NPU_FA_GM_PARAM(name, Name, dtypes, presence) uint8_t* name,
