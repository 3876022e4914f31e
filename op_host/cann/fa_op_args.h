// The CANN operators' view of a FlashAttention call: input/attribute positions of the three OpDefs and the
// translation of (tensor shapes, attributes) into the host tiling's FaProblem. Pure C++ (no CANN header): the
// TilingFuncs, the InferShape functions and the torch_npu adapter all call it, so the adapter builds seq_info and
// the block map from exactly the problem the TilingFunc tiles.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chip_spec.h"
#include "flash_attention_tiling_host.h"

namespace npu_fa {
namespace op {

constexpr int64_t kInt32Max = 2147483647;

// Op types (OpDef class names) and the kernel entries they bind to (opFile / opInterface).
constexpr const char* kFwdOp = "FlashAttentionNpuFa";
constexpr const char* kMapOp = "FlashAttentionNpuFaBlockMap";
constexpr const char* kGradOp = "FlashAttentionNpuFaGrad";

// Inputs, in kernel-argument order (op_kernel/flash_attention_fwd.cpp, _block_map.cpp, _bwd.cpp).
enum FwdInput : uint32_t {
    kFwdQuery = 0, kFwdKey, kFwdValue, kFwdAttenMask, kFwdBlockMap, kFwdSeqInfo, kFwdSink, kFwdAlibiSlopes, kFwdPse,
    kFwdDropMask
};
enum FwdOutput : uint32_t { kFwdAttentionOut = 0, kFwdSoftmaxMax, kFwdSoftmaxSum };
enum MapInput : uint32_t { kMapAttenMask = 0, kMapSeqInfo };
enum GradInput : uint32_t {
    kGradQuery = 0, kGradKey, kGradValue, kGradDy, kGradAttentionIn, kGradSoftmaxMax, kGradSoftmaxSum,
    kGradAttenMask, kGradBlockMap, kGradSeqInfo, kGradSink, kGradAlibiSlopes, kGradPse, kGradDropMask
};
// dsink_rows: with a sink, each query row's share of dsink in the statistics' layout (the caller sums them per head);
// without one a single unused block.
// dpse_rows: with an outer pse, dS as FaBwdVector::StorePseGrad writes it (the caller reduces it to dpse).
enum GradOutput : uint32_t { kGradDq = 0, kGradDk, kGradDv, kGradDsinkRows, kGradDpseRows };

// Attributes shared by the three ops, in declaration order (= GetAttrs() index). Names and defaults are the torch
// schema's (python/npu_flash_attn/ops.py SCHEMA); s1_block/s2_block are the blocks the caller built seq_info (and
// the block map) for: the TilingFunc refuses a call whose own choice differs (0 = not checked).
enum Attr : uint32_t {
    kAttrHeadNum = 0, kAttrInputLayout, kAttrScale, kAttrKeepProb, kAttrPreTokens, kAttrNextTokens,
    kAttrInnerPrecise, kAttrPrefix, kAttrActualSeqQlen, kAttrActualSeqKvlen, kAttrSparseMode, kAttrSeed,
    kAttrOffset, kAttrSoftcap, kAttrPseType, kAttrQStartIdx, kAttrKvStartIdx, kAttrS1Block, kAttrS2Block, kCommonAttrs
};
// The block-map op has no q/k/v inputs: their shapes and dtype come as attributes after the common ones.
enum MapAttr : uint32_t { kMapAttrQueryShape = kCommonAttrs, kMapAttrKeyShape, kMapAttrValueShape, kMapAttrDtype };
// The backward: deterministic (torch schema), then which kernel launch of the schedule this call is.
enum GradAttr : uint32_t { kGradAttrDeterministic = kCommonAttrs, kGradAttrLaunch };

struct FaOpAttrs {
    int64_t headNum = 0;
    std::string inputLayout;
    float scale = 1.0f, keepProb = 1.0f;
    float softcap = 0.0f;  // the schema's None
    int64_t pseType = 1;
    std::vector<int64_t> qStartIdx, kvStartIdx;
    int64_t preTokens = kInt32Max, nextTokens = kInt32Max, innerPrecise = 0;
    std::vector<int64_t> prefix, actualSeqQlen, actualSeqKvlen;
    int64_t sparseMode = 0;
    int64_t seed = 0, offset = 0;
    int64_t s1Block = 0, s2Block = 0;
};

// A column-broadcast mask ([..., S1, 1]) travels as rows of this many equal bytes, at least every s2 block (the
// twin path's rule, python/npu_flash_attn/masks.py COLUMN_BROADCAST_WIDTH): the kernels read it with column step
// 0, so it costs 128 bytes per row instead of S2.
constexpr int64_t kColumnBroadcastWidth = 128;

struct FaOpShapes {
    std::vector<int64_t> query, key, value;
    bool bf16 = false;
    bool hasMask = false;
    // The mask as the op reads it: contiguous, broadcast dimensions of size 1, a broadcast last dimension widened
    // to kColumnBroadcastWidth.
    std::vector<int64_t> mask;
};

inline std::string ShapeStr(const std::vector<int64_t>& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

inline bool ParseLayout(const std::string& s, FaLayout& out) {
    static const struct { const char* name; FaLayout layout; } kLayouts[] = {
        {"BSH", kBSH}, {"SBH", kSBH}, {"BSND", kBSND}, {"BNSD", kBNSD}, {"TND", kTND}};
    std::string up = s;
    for (char& c : up) c = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
    for (const auto& l : kLayouts) {
        if (up == l.name) {
            out = l.layout;
            return true;
        }
    }
    return false;
}

// A cumulative TND list without its disabled tail (zeros after the last positive entry); "" or what is wrong.
inline std::string EnabledCumulative(const char* name, const std::vector<int64_t>& cu, std::vector<int64_t>& out) {
    if (cu.empty()) return std::string(name) + " must not be empty for input_layout TND";
    size_t n = cu.size();
    while (n > 0 && cu[n - 1] == 0) --n;
    if (n == 0) n = cu.size();  // all zeros: every sequence is empty
    out.assign(cu.begin(), cu.begin() + (std::ptrdiff_t)n);
    int64_t prev = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] < prev) return std::string(name) + " must be non-negative and non-decreasing, got " + ShapeStr(cu);
        prev = out[i];
    }
    return "";
}

// Query heads, token dims and head dims of q/k/v per layout (the torch op's rules, ops.py _shape_dims).
inline std::string DimsOf(const FaOpShapes& s, int64_t headNum, FaProblem& p) {
    const size_t rank = (p.layout == kBSND || p.layout == kBNSD) ? 4 : 3;
    if (s.query.size() != rank || s.key.size() != rank || s.value.size() != rank) {
        return "query/key/value must be " + std::to_string(rank) + "-D for this layout, got " + ShapeStr(s.query) +
               ", " + ShapeStr(s.key) + ", " + ShapeStr(s.value);
    }
    const std::vector<int64_t>&q = s.query, &k = s.key, &v = s.value;
    int64_t b = 0, bk = 0, bv = 0, n1 = 0, n2 = 0, n2v = 0, s1 = 0, s2 = 0, s2v = 0, d = 0, dk = 0, dv = 0;
    switch (p.layout) {
        case kBSH: case kSBH: {
            const int pb = p.layout == kBSH ? 0 : 1, ps = 1 - pb;
            b = q[pb], bk = k[pb], bv = v[pb], s1 = q[ps], s2 = k[ps], s2v = v[ps];
            if (headNum < 1 || q[2] <= 0 || q[2] % headNum != 0) {
                return "query hidden size must be a positive multiple of head_num";
            }
            n1 = headNum, d = dk = q[2] / headNum;
            if (k[2] <= 0 || k[2] % d != 0) return "key hidden size must be a positive multiple of D";
            n2 = n2v = k[2] / d;
            if (v[2] <= 0 || v[2] % n2 != 0) return "value hidden size must be a positive multiple of N2";
            dv = v[2] / n2;
            break;
        }
        case kBSND: b = q[0], s1 = q[1], n1 = q[2], d = q[3], bk = k[0], s2 = k[1], n2 = k[2], dk = k[3];
                    bv = v[0], s2v = v[1], n2v = v[2], dv = v[3]; break;
        case kBNSD: b = q[0], n1 = q[1], s1 = q[2], d = q[3], bk = k[0], n2 = k[1], s2 = k[2], dk = k[3];
                    bv = v[0], n2v = v[1], s2v = v[2], dv = v[3]; break;
        case kTND:  n1 = q[1], d = q[2], n2 = k[1], dk = k[2], n2v = v[1], dv = v[2];
                    p.t1 = (uint64_t)q[0], p.t2 = (uint64_t)k[0];
                    if (v[0] != k[0]) return "value T2 must equal key T2";
                    break;
    }
    if (n1 != headNum) {
        return "head_num " + std::to_string(headNum) + " must equal the query's heads " + std::to_string(n1);
    }
    if (p.layout != kTND && (bk != b || bv != b || s2v != s2)) return "batch and key/value lengths must match";
    if (dk != d || n2v != n2) return "key head dim must equal D and value heads must equal key heads";
    if (n2 < 1 || n1 % n2 != 0) return "query heads must be a positive multiple of key/value heads";
    if (d < 1 || d > 512 || dv < 1 || dv > d) return "need 1 <= Dv <= D <= 512";
    for (int64_t x : {b, s1, s2}) {
        if (x < 0 || x > kInt32Max) return "a dimension is outside [0, 2**31 - 1]";
    }
    p.batch = (uint32_t)b, p.n1 = (uint32_t)n1, p.n2 = (uint32_t)n2;
    p.s1 = (uint32_t)s1, p.s2 = (uint32_t)s2, p.d = (uint32_t)d, p.dv = (uint32_t)dv;
    return "";
}

// Dense mask as read in place: a contiguous [b', n', s', S2] (TND: [R, C]) whose broadcast dimensions are 1, or
// [b', n', s', kColumnBroadcastWidth] for a column-broadcast one (read with column step 0; when S2 is that width
// both readings see the same bytes and the column step stays 1).
inline std::string MaskOf(const FaOpShapes& s, FaProblem& p, uint32_t s1max, uint32_t s2max) {
    const std::vector<int64_t>& m = s.mask;
    p.denseMask = true;
    p.maskColStep = 1;
    if (p.layout == kTND) {
        if (m.size() != 2) return "atten_mask must be 2-D for input_layout TND, got " + ShapeStr(m);
        const int64_t totQ = p.cuSeqQ.empty() ? 0 : p.cuSeqQ.back(), totKv = p.cuSeqKv.empty() ? 0 : p.cuSeqKv.back();
        p.maskTndGlobal = p.batch > 1 && m[0] == totQ && m[1] == totKv;
        if (!p.maskTndGlobal && (m[0] < s1max || m[1] < s2max)) {
            return "atten_mask " + ShapeStr(m) + " must be [>= longest Sq, >= longest Skv] or [sum Sq, sum Skv]";
        }
        p.maskStrideS = (uint64_t)m[1];
        return "";
    }
    if (m.size() > 4) return "atten_mask has more than 4 dimensions: " + ShapeStr(m);
    std::vector<int64_t> m4(4 - m.size(), 1);
    m4.insert(m4.end(), m.begin(), m.end());
    const int64_t target[4] = {p.batch, p.n1, p.s1, p.s2};
    for (int i = 0; i < 3; ++i) {
        if (m4[i] != 1 && m4[i] != target[i]) {
            return "atten_mask " + ShapeStr(m) + " is not broadcastable to [B, N1, S1, S2]";
        }
    }
    if (m4[3] != target[3] && m4[3] != kColumnBroadcastWidth) {
        return "atten_mask's last dimension must equal S2 (or be " + std::to_string(kColumnBroadcastWidth) +
               ": a column-broadcast mask as rows of equal bytes): " + ShapeStr(m);
    }
    if (m4[3] != target[3]) p.maskColStep = 0;
    const uint64_t strideS = (uint64_t)m4[3], strideN = strideS * (uint64_t)m4[2], strideB = strideN * (uint64_t)m4[1];
    p.maskStrideS = m4[2] > 1 ? strideS : 0;
    p.maskStrideN = m4[1] > 1 ? strideN : 0;
    p.maskStrideB = m4[0] > 1 ? strideB : 0;
    p.maskPerHead = m4[1] > 1;
    p.maskPerBatch = m4[0] > 1;
    return "";
}

// The problem the kernels run for these shapes and attributes, with the torch op's mode rules: modes 0/1 without
// a mask are full attention, pre/next apply to modes 0/4/7/8 only, the prefix to modes 5/6 only. "" on success.
// In-kernel ALiBi: the slopes input holds `elements` fp32, one per query head ([N1]) or per (batch, head) ([B, N1];
// TND: B = the sequences the lists give). "" or what is wrong.
inline std::string AlibiSlopes(const FaOpAttrs& a, FaProblem& p, int64_t elements) {
    const int64_t batches = p.layout == kTND ? (int64_t)a.actualSeqQlen.size() : (int64_t)p.batch;
    if (elements == (int64_t)p.n1) {
        p.alibiPerBatch = false;
    } else if (elements == batches * (int64_t)p.n1) {
        p.alibiPerBatch = true;
    } else {
        return "the ALiBi slopes (pse of pse_type 2/3) must hold N1 or B*N1 values, got " + std::to_string(elements);
    }
    return "";
}

// An outer bias tensor (pse_type 0/1) of shape `shape`: [B or 1, N1, S1 or 1, S2], not TND; sets the problem's pse
// mode and element strides (0 = broadcast). "" or what is wrong.
inline std::string OuterPse(const FaOpAttrs& a, FaProblem& p, const std::vector<int64_t>& shape) {
    if (a.pseType != 0 && a.pseType != 1) return "a pse input needs pse_type 0 or 1 (2/3 take alibi_slopes)";
    if (p.layout == kTND) return "an outer pse with input_layout TND is not supported";
    const bool ok = shape.size() == 4 && (shape[0] == 1 || shape[0] == (int64_t)p.batch) && shape[1] == (int64_t)p.n1 &&
                    (shape[2] == 1 || shape[2] == (int64_t)p.s1) && shape[3] == (int64_t)p.s2;
    if (!ok) return "pse shape " + ShapeStr(shape) + " must be [B or 1, N1, S1 or 1, S2]";
    const bool perRow = shape[2] == (int64_t)p.s1 && p.s1 > 1, perBatch = shape[0] == (int64_t)p.batch && p.batch > 1;
    p.pseMode = a.pseType == 0 ? kPseAdd : kPseScaled;
    const uint64_t rows = perRow ? p.s1 : 1;
    p.pseStrideN = rows * p.s2;
    p.pseStrideB = perBatch ? (uint64_t)p.n1 * rows * p.s2 : 0;
    p.pseStrideS = perRow ? p.s2 : 0;
    return "";
}

// Elements of the backward's dpse_rows output (fp32): [B, N1, S1, S2], or [B, N1, 4 * ceil(S1 / 16), S2] for a
// [.., 1, S2] pse (FaBwdVector::StorePseGrad).
// A user dropout mask (the built-in's bit-packed uint8 over [B, N1, S1, S2]): on the NPU only in the form the
// kernels read in place, rows of S2 / 8 bytes (the twin path also repacks other forms, dropout.py kernel_rows).
inline std::string DropMask(FaProblem& p, int64_t bytes) {
    if (p.dropMode == kDropNone) return "a dropout_mask needs keep_prob < 1";
    if (p.layout == kTND || p.s2 % 8 != 0) {
        return "a dropout_mask needs a non-TND layout and S2 % 8 == 0 on the NPU (rows of whole bytes)";
    }
    const uint64_t need = ((uint64_t)p.batch * p.n1 * p.s1 * p.s2 + 7) / 8;
    if ((uint64_t)bytes < need) return "dropout_mask has " + std::to_string(bytes) + " bytes, needs " + std::to_string(need);
    p.dropMode = kDropMask;
    p.dropMaskPitch = p.s2 / 8;
    return "";
}

inline uint64_t PseGradElements(const FaProblem& p) { return (uint64_t)p.batch * p.n1 * PseGradRows(p) * p.s2; }

inline std::string BuildFaProblem(const FaOpShapes& s, const FaOpAttrs& a, FaProblem& p) {
    p = FaProblem{};
    if (!ParseLayout(a.inputLayout, p.layout)) {
        return "input_layout '" + a.inputLayout + "' is not BSH, SBH, BSND, BNSD or TND";
    }
    p.dtype = s.bf16 ? kBf16 : kFp16;
    if (!(a.keepProb > 0.0f && a.keepProb <= 1.0f)) return "keep_prob must be in (0, 1]";
    if (a.keepProb < 1.0f) {  // dropout from the kernels' generator; DropMask switches to a user mask
        p.dropMode = kDropGenerated;
        p.keepProb = a.keepProb;
        p.seed = (uint64_t)a.seed;
        p.offset = (uint64_t)a.offset;
    }
    if (a.innerPrecise < 0 || a.innerPrecise > 2) return "inner_precise must be 0, 1 or 2";
    if (a.sparseMode < 0 || a.sparseMode > 8) return "sparse_mode must be in [0, 8]";
    std::string err = DimsOf(s, a.headNum, p);
    if (!err.empty()) return err;
    p.scale = a.scale;
    if (!(a.softcap >= 0.0f && a.softcap <= 3.4028234663852886e38f)) return "softcap must be finite and > 0";
    p.softcap = a.softcap;
    if (a.pseType < 0 || a.pseType > 3) return "pse_type must be 0, 1, 2 or 3";
    if (a.pseType == kAlibiLinear || a.pseType == kAlibiSqrt) {
        p.alibiMode = (uint32_t)a.pseType;
        p.alibiDelta = (a.kvStartIdx.empty() ? 0 : a.kvStartIdx[0]) - (a.qStartIdx.empty() ? 0 : a.qStartIdx[0]);
    } else if (!a.qStartIdx.empty() || !a.kvStartIdx.empty()) {
        return "q_start_idx / kv_start_idx are only used by the in-kernel ALiBi of pse_type 2 and 3";
    }
    uint32_t s1max = p.s1, s2max = p.s2;
    if (p.layout == kTND) {
        if (!(err = EnabledCumulative("actual_seq_qlen", a.actualSeqQlen, p.cuSeqQ)).empty()) return err;
        if (!(err = EnabledCumulative("actual_seq_kvlen", a.actualSeqKvlen, p.cuSeqKv)).empty()) return err;
        const size_t nb = std::min(p.cuSeqQ.size(), p.cuSeqKv.size());  // disabled in either list = disabled
        p.cuSeqQ.resize(nb);
        p.cuSeqKv.resize(nb);
        if (nb > 0 && (p.cuSeqQ.back() > (int64_t)p.t1 || p.cuSeqKv.back() > (int64_t)p.t2)) {
            return "actual_seq_qlen/actual_seq_kvlen totals exceed the token dims T1/T2";
        }
        p.batch = (uint32_t)nb;
        s1max = s2max = 0;
        for (size_t b = 0; b < nb; ++b) {
            s1max = std::max<uint32_t>(s1max, (uint32_t)(p.cuSeqQ[b] - (b ? p.cuSeqQ[b - 1] : 0)));
            s2max = std::max<uint32_t>(s2max, (uint32_t)(p.cuSeqKv[b] - (b ? p.cuSeqKv[b - 1] : 0)));
        }
    } else if (!a.actualSeqQlen.empty() || !a.actualSeqKvlen.empty()) {
        return "actual_seq_qlen/actual_seq_kvlen are only valid with input_layout TND";
    }
    const int64_t mode = a.sparseMode;
    if ((mode == 7 || mode == 8) && p.layout != kTND) return "sparse_mode 7/8 require input_layout TND";
    if (mode == 5 && p.layout == kTND) return "sparse_mode 5 is not supported for input_layout TND";
    const bool dense = (mode == 0 || mode == 1 || mode == 5) && s.hasMask;
    if ((mode == 0 || mode == 1) && !s.hasMask) return "";  // full attention
    p.sparseMode = (uint32_t)mode;
    const bool band = mode == 0 || mode == 4 || mode == 7 || mode == 8;
    p.preTokens = band ? a.preTokens : kInt32Max;
    p.nextTokens = band ? a.nextTokens : kInt32Max;
    if (mode == 5 || mode == 6) {
        if (a.prefix.size() != p.batch) return "prefix needs one entry per batch for sparse_mode 5/6";
        p.prefix = a.prefix;
    }
    return dense ? MaskOf(s, p, s1max, s2max) : "";
}

// Output shapes of the forward (attention_out: the query's with D -> Dv; statistics [B, N1, S1, 8] / [T1, N1, 8]).
inline void FwdOutputShapes(const FaProblem& p, const std::vector<int64_t>& query, std::vector<int64_t>& out,
                            std::vector<int64_t>& stats) {
    out = query;
    if (p.layout == kBSH || p.layout == kSBH) {
        out[2] = (int64_t)p.n1 * p.dv;
    } else {
        out.back() = p.dv;
    }
    if (p.layout == kTND) {
        stats = {(int64_t)p.t1, (int64_t)p.n1, 8};
    } else {
        stats = {(int64_t)p.batch, (int64_t)p.n1, (int64_t)p.s1, 8};
    }
}

// True when some query row sees some key (else the caller answers without a launch: every row is invalid).
inline bool HasWork(const FaProblem& p) {
    if (p.layout != kTND) return p.batch > 0 && p.s1 > 0 && p.s2 > 0;
    bool q = false, k = false;
    for (size_t b = 0; b < p.cuSeqQ.size(); ++b) {
        q = q || p.cuSeqQ[b] > (b ? p.cuSeqQ[b - 1] : 0);
        k = k || p.cuSeqKv[b] > (b ? p.cuSeqKv[b - 1] : 0);
    }
    return q && k;
}

// The planned blocks (attributes s1_block/s2_block) must be the ones the tiling chose: seq_info and the block map
// were built for them.
inline std::string CheckPlannedBlocks(const FaOpAttrs& a, uint32_t s1Block, uint32_t s2Block) {
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
