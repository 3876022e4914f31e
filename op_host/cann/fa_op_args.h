// The CANN operators' view of a FlashAttention call: input/attribute positions of the three OpDefs. Pure C++ (no
// CANN header); fa_op_context.h reads a call through them into the problem module's FaCall (op_host/problem), the
// one the torch_npu adapter fills too, so the adapter builds seq_info and the block map from exactly the problem
// the TilingFunc tiles.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chip_spec.h"
#include "fa_kernel_args.h"
#include "problem/fa_call.h"

namespace npu_fa {
namespace op {

// Op types (OpDef class names) and the kernel entries they bind to (opFile / opInterface).
constexpr const char* kFwdOp = "FlashAttentionNpuFa";
constexpr const char* kMapOp = "FlashAttentionNpuFaBlockMap";
constexpr const char* kGradOp = "FlashAttentionNpuFaGrad";

// Input and output positions, in kernel-argument order (fa_kernel_args.h): kFwdQuery, ..., kGradDpseRows.
#define NPU_FA_POSITION_FWD(name, Name, dtypes, presence) kFwd##Name,
#define NPU_FA_POSITION_MAP(name, Name, dtypes, presence) kMap##Name,
#define NPU_FA_POSITION_GRAD(name, Name, dtypes, presence) kGrad##Name,
enum FwdInput : uint32_t { NPU_FA_FWD_INPUTS(NPU_FA_POSITION_FWD) };
enum FwdOutput : uint32_t { NPU_FA_FWD_OUTPUTS(NPU_FA_POSITION_FWD) };
enum MapInput : uint32_t { NPU_FA_MAP_INPUTS(NPU_FA_POSITION_MAP) };
enum GradInput : uint32_t { NPU_FA_GRAD_INPUTS(NPU_FA_POSITION_GRAD) };
enum GradOutput : uint32_t { NPU_FA_GRAD_OUTPUTS(NPU_FA_POSITION_GRAD) };
#undef NPU_FA_POSITION_FWD
#undef NPU_FA_POSITION_MAP
#undef NPU_FA_POSITION_GRAD

// Attributes shared by the three ops, in declaration order (= GetAttrs() index). Names and defaults are the torch
// schema's (python/npu_flash_attn/ops.py SCHEMA); s1_block/s2_block are the blocks the caller built seq_info (and
// the block map) for: the TilingFunc refuses a call whose own choice differs (0 = not checked).
enum Attr : uint32_t {
    kAttrHeadNum = 0, kAttrInputLayout, kAttrScale, kAttrKeepProb, kAttrPreTokens, kAttrNextTokens,
    kAttrInnerPrecise, kAttrPrefix, kAttrActualSeqQlen, kAttrActualSeqKvlen, kAttrSparseMode, kAttrSeed,
    kAttrOffset, kAttrSoftcap, kAttrPseType, kAttrQStartIdx, kAttrKvStartIdx, kAttrDropoutOrigin, kAttrS1Block, kAttrS2Block, kCommonAttrs
};
// The block-map op has no q/k/v inputs: their shapes and dtype come as attributes after the common ones.
enum MapAttr : uint32_t { kMapAttrQueryShape = kCommonAttrs, kMapAttrKeyShape, kMapAttrValueShape, kMapAttrDtype };
// The forward: output_residual (torch schema of npu::flash_attention_fwd).
enum FwdAttr : uint32_t { kFwdAttrOutputResidual = kCommonAttrs };
// The backward: deterministic and partial_keys (torch schema), then which kernel launch of the schedule this call is.
enum GradAttr : uint32_t { kGradAttrDeterministic = kCommonAttrs, kGradAttrPartialKeys, kGradAttrLaunch };

// The planned blocks (attributes s1_block/s2_block) must be the ones the tiling chose: seq_info and the block map
// were built for them.
struct FaOpBlocks {
    int64_t s1Block = 0, s2Block = 0;
};

inline std::string CheckPlannedBlocks(const FaOpBlocks& a, uint32_t s1Block, uint32_t s2Block) {
    if ((a.s1Block == 0 && a.s2Block == 0) || (a.s1Block == s1Block && a.s2Block == s2Block)) return "";
    return "seq_info was built for blocks " + std::to_string(a.s1Block) + "x" + std::to_string(a.s2Block) +
           " but this chip's tiling chose " + std::to_string(s1Block) + "x" + std::to_string(s2Block);
}

// A chip description from the sizes the platform reports (cores, UB, L1, L0); the rest of ChipSpec is only used
// by the twin's cost model and stays zero.
inline ChipSpec ChipFromSizes(const char* name, uint32_t aic, uint32_t aiv, uint64_t ub, uint64_t l1, uint64_t l0a,
                              uint64_t l0b, uint64_t l0c) {
    ChipSpec c{};
    c.name = name;
    c.aicNum = aic;
    c.aivNum = aiv;
    c.ubSize = (uint32_t)ub;
    c.l1Size = (uint32_t)l1;
    c.l0aSize = (uint32_t)l0a;
    c.l0bSize = (uint32_t)l0b;
    c.l0cSize = (uint32_t)l0c;
    return c;
}

}  // namespace op
}  // namespace npu_fa
