// The rules of an inference call (fa_infer_problem.h), in the order torch_npu's documentation lists them.
#include "problem/fa_infer_problem.h"

#include <algorithm>

#include "problem/fa_rules.h"
#include "problem/fa_text.h"

namespace npu_fa {
namespace {

using rules::NotImplemented;
using rules::Type;
using rules::Value;
using text::List;
using text::Repr;
using text::Tuple;

const char* const kInferLayouts[] = {"BSH", "BSND", "BNSD", "BNSD_BSND", "TND"};
constexpr int64_t kMaxPageSize = 512;
constexpr int64_t kMaxGroup = 64;
constexpr int64_t kMaxHeadH = 65535;  // (blocks, block_size, H) caches: the data-move instructions' stride field

std::string I(int64_t v) { return std::to_string(v); }

bool IsHalf(const std::string& dt) { return dt == "torch.float16" || dt == "torch.bfloat16"; }

// A per-batch length list of the built-in: one value for every batch, or at least B values (the first B count).
FaError PerBatch(const FaIntList& l, const char* name, int64_t b, int64_t limit, const char* limitName,
                 std::vector<int64_t>& out) {
    const size_t n = l.values.size();
    if (n != 1 && n < (size_t)b) {
        return Value(std::string(name) + " has " + I((int64_t)n) + " values " + List(l.values) + "; it needs 1 (every "
                     "batch) or at least B=" + I(b));
    }
    out.assign((size_t)b, 0);
    for (int64_t i = 0; i < b; ++i) {
        const int64_t v = l.values[n == 1 ? 0 : (size_t)i];
        if (v < 0 || v > limit) {
            return Value(std::string(name) + "[" + I(n == 1 ? 0 : i) + "]=" + I(v) + " must be in [0, " + limitName + "=" +
                         I(limit) + "], got " + List(l.values));
        }
        out[(size_t)i] = v;
    }
    return {};
}

// A TND cumulative list: nondecreasing, nonnegative, the last at most the token count; lengths and first tokens.
FaError Cumulative(const FaIntList& l, const char* name, int64_t tokens, const char* tokensName,
                   std::vector<int64_t>& lens, std::vector<int64_t>& firsts) {
    int64_t prev = 0;
    for (size_t i = 0; i < l.values.size(); ++i) {
        const int64_t v = l.values[i];
        if (v < prev) {
            return Value(std::string(name) + " must be cumulative (nondecreasing from 0) for input_layout='TND', got " +
                         List(l.values));
        }
        lens.push_back(v - prev);
        firsts.push_back(prev);
        prev = v;
    }
    if (prev > tokens) {
        return Value(std::string(name) + " ends at " + I(prev) + " but " + tokensName + "=" + I(tokens) + ", got " +
                     List(l.values));
    }
    return {};
}

void Contiguous(const std::vector<int64_t>& shape, FaStrides& st, size_t b, size_t n, size_t s) {
    std::vector<uint64_t> el(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) el[i - 1] = el[i] * (uint64_t)shape[i];
    st.b = b < shape.size() ? el[b] : 0;
    st.n = el[n];
    st.s = el[s];
}

// A dense atten_mask through the training op's mask rules (shape, mode 0's band, the kernel's view) on a problem of
// the same geometry: B, N1, S1, S2 (the key dimension; a paged cache: block_table columns x block_size; TND: the
// longest key length), TND with the cumulative lengths; a 3-D mask is [B, S1, S2] (FIA's). int8 masks are read as
// bytes, like uint8 (nonzero = masked).
FaError DenseMask(const FaInferCall& c, bool tnd, bool decode, int64_t b, int64_t s1, int64_t s2,
                  const std::vector<int64_t>& qLen, const std::vector<int64_t>& kvLen, FaInferProblemInfo& out) {
    const std::string& dt = c.attenMask.dtype;
    if (dt != "torch.bool" && dt != "torch.int8" && dt != "torch.uint8") {
        return Type("atten_mask dtype " + dt + " is not supported; use torch.bool, torch.int8 or torch.uint8 (nonzero "
                    "= masked out)");
    }
    FaCall mc;
    mc.attenMask = c.attenMask;
    mc.attenMask.dtype = "torch.uint8";
    if (!tnd && mc.attenMask.shape.size() == 3) {  // FIA's 3-D mask is [B, S1, S2]: the head dimension broadcast
        mc.attenMask.shape.insert(mc.attenMask.shape.begin() + 1, 1);
        if (!mc.attenMask.strides.empty()) mc.attenMask.strides.insert(mc.attenMask.strides.begin() + 1, 0);
    }
    mc.attrs.sparseMode = decode ? 0 : c.sparseMode;  // one query token: the mask alone
    mc.attrs.preTokens = decode ? kInt32Max : c.preTokens;
    mc.attrs.nextTokens = decode ? kInt32Max : c.nextTokens;
    FaProblem fp;
    fp.layout = tnd ? kTND : kBSND;
    fp.batch = (uint32_t)b, fp.n1 = (uint32_t)c.numHeads, fp.s1 = (uint32_t)s1, fp.s2 = (uint32_t)s2;
    int64_t q = 0, k = 0;
    for (int64_t i = 0; tnd && i < b; ++i) {
        fp.cuSeqQ.push_back(q += qLen[(size_t)i]);
        fp.cuSeqKv.push_back(k += kvLen[(size_t)i]);
    }
    fp.t1 = tnd ? (uint64_t)c.query.shape[0] : 0;
    fp.t2 = tnd ? (uint64_t)k : 0;
    FaProblemInfo info;
    info.layoutName = c.inputLayout;
    const FaError e = rules::Masks(mc, fp, s1, s2, info);
    if (e) return e;
    rules::MaskView(mc, fp, out.mask);
    FaInferProblem& p = out.p;
    p.denseMask = true;
    p.maskTndGlobal = fp.maskTndGlobal;
    p.maskStrideB = fp.maskStrideB, p.maskStrideN = fp.maskStrideN, p.maskStrideS = fp.maskStrideS;
    p.maskColStep = fp.maskColStep;
    p.maskBytes = out.mask.extent;
    return {};
}

uint64_t Numel(const std::vector<int64_t>& shape) {
    uint64_t n = 1;
    for (int64_t x : shape) n *= (uint64_t)x;
    return n;
}

// pse_shift: [B or 1, N1, Q_S, KV_S] in the query's dtype with Q_S >= S1 and KV_S >= the key's S (a paged cache:
// block_table columns x block_size), read contiguously; not with TND (the built-in's shape has no token axis).
FaError PseShift(const FaInferCall& c, bool tnd, int64_t b, int64_t n1, int64_t s1, int64_t s2, FaInferProblem& p) {
    if (tnd) {
        return NotImplemented("pse_shift with input_layout='TND' is not supported (pse_shift is [B or 1, N1, Q_S, "
                              "KV_S]); use BSH, BSND, BNSD or BNSD_BSND");
    }
    if (c.pseShift.dtype != c.query.dtype) {
        return Type("pse_shift dtype " + c.pseShift.dtype + " must equal the query dtype " + c.query.dtype);
    }
    const std::vector<int64_t>& e = c.pseShift.shape;
    if (e.size() != 4 || (e[0] != b && e[0] != 1) || e[1] != n1 || e[2] < s1 || e[3] < s2) {
        return Value("pse_shift must be [B=" + I(b) + " or 1, N1=" + I(n1) + ", Q_S >= " + I(s1) + ", KV_S >= " +
                     I(s2) + "] (Q_S at least the query's S, KV_S at least the key's S" +
                     (c.blockTable.present ? std::string(": block_table columns x block_size") : std::string()) +
                     "), got shape " + Tuple(e));
    }
    p.pse = true;
    p.pseStride = FaStrides{e[0] == 1 ? 0 : (uint64_t)(e[1] * e[2] * e[3]), (uint64_t)(e[2] * e[3]), (uint64_t)e[3]};
    p.pseElems = Numel(e);
    return {};
}

// An antiquant mode: 0 (per channel, per tensor included) and 1 (per token) are built; 2-5 are documented for
// key_/value_antiquant_mode (`perSide`).
FaError AntiquantMode(const char* name, int64_t mode, bool perSide) {
    const char* const documented[] = {"per tensor and per head", "per token and per head",
                                      "per token managed by page attention",
                                      "per token and per head managed by page attention"};
    if (perSide && mode >= 2 && mode <= 5) {
        return NotImplemented(std::string(name) + "=" + I(mode) + " (" + documented[mode - 2] + ") is not supported; "
                              "use 0 (per channel or per tensor) or 1 (per token)");
    }
    if (mode != 0 && mode != 1) {
        return Value(std::string(name) + "=" + I(mode) + " must be 0 (per channel) or 1 (per token)" +
                     (perSide ? " (2-5: the built-in's per-head and page-managed modes)" : ""));
    }
    return {};
}

// The scale (or offset) of one antiquant argument: `lead` = 2 for antiquant_scale/offset (K then V), 1 for the
// separate ones. Per channel: (lead,), (lead, H), (lead, N2, D) or (lead, N2, 1, D), the query's dtype; per token:
// (lead, B, S) float32 with S the cache's S (a contiguous BSH/BSND/BNSD cache) or at least the longest key length.
FaError AntiquantTensor(const FaTensorArg& a, const char* name, int64_t lead, int64_t mode, const std::string& qDtype,
                        int64_t n2, int64_t d, int64_t b, int64_t cacheS, int64_t maxKv, int64_t& tokens) {
    const std::vector<int64_t>& s = a.shape;
    const std::string l = I(lead);
    if (mode == 0) {
        const bool ok = !s.empty() && s[0] == lead &&
                        (s.size() == 1 || (s.size() == 2 && s[1] == n2 * d) ||
                         (s.size() == 3 && s[1] == n2 && s[2] == d) ||
                         (s.size() == 4 && s[1] == n2 && s[2] == 1 && s[3] == d));
        if (!ok) {
            return Value(std::string(name) + " shape " + Tuple(s) + " must be (" + l + ",) (per tensor), (" + l +
                         ", H), (" + l + ", N2, D) or (" + l + ", N2, 1, D) per channel, with N2=" + I(n2) + ", D=" +
                         I(d) + ", H=" + I(n2 * d));
        }
        if (a.dtype != qDtype) {
            return Type(std::string(name) + " dtype " + a.dtype + " must equal the query dtype " + qDtype +
                        " per channel or per tensor");
        }
        return {};
    }
    if (s.size() != 3 || s[0] != lead || s[1] != b) {
        return Value(std::string(name) + " shape " + Tuple(s) + " must be (" + l + ", B=" + I(b) + ", S) per token");
    }
    if (cacheS > 0 ? s[2] != cacheS : s[2] < maxKv) {
        return Value(std::string(name) + " shape " + Tuple(s) + ": per token its S=" + I(s[2]) + " must " +
                     (cacheS > 0 ? "equal the key cache's S=" + I(cacheS)
                                 : "cover the longest key length " + I(maxKv) + " (actual_seq_lengths_kv)"));
    }
    if (a.dtype != "torch.float32") {
        return Type(std::string(name) + " dtype " + a.dtype + " must be torch.float32 per token");
    }
    tokens = s[2];
    return {};
}

// The antiquant arguments of an int8 cache (or their absence with a 16-bit one) into p's kvQuant fields.
FaError Antiquant(const FaInferCall& c, bool kvInt8, int64_t n2, int64_t d, int64_t b, int64_t cacheS,
                  int64_t maxKv, FaInferProblem& p) {
    const bool combined = c.antiquantScale.present || c.antiquantOffset.present;
    const bool separate = c.keyAntiquantScale.present || c.keyAntiquantOffset.present ||
                          c.valueAntiquantScale.present || c.valueAntiquantOffset.present;
    if (!kvInt8) {
        if (combined || separate) {
            return Value(std::string(combined ? "antiquant_scale/antiquant_offset" : "key_/value_antiquant_scale/"
                         "offset") + " given but key and value are " + c.key.dtype + "; antiquant needs an int8 "
                         "cache (key and value torch.int8)");
        }
        for (auto m : {std::make_pair("antiquant_mode", c.antiquantMode),
                       std::make_pair("key_antiquant_mode", c.keyAntiquantMode),
                       std::make_pair("value_antiquant_mode", c.valueAntiquantMode)}) {
            if (m.second != 0) {
                return Value(std::string(m.first) + "=" + I(m.second) + " needs an int8 cache; key and value are " +
                             c.key.dtype);
            }
        }
        return {};
    }
    if (combined && separate) {
        return Value("give antiquant_scale/antiquant_offset or key_/value_antiquant_scale/offset, not both");
    }
    if (!c.antiquantScale.present && !(c.keyAntiquantScale.present || c.valueAntiquantScale.present)) {
        return Value("an int8 key/value cache needs antiquant_scale (K and V stacked) or key_antiquant_scale and "
                     "value_antiquant_scale (value = scale * (int8 + offset))");
    }
    if (d % 32 != 0) return Value("an int8 key/value cache needs D a multiple of 32, got D=" + I(d));
    if (c.blockTable.present && c.blockSize % 32 != 0) {
        return Value("block_size=" + I(c.blockSize) + " must be a multiple of 32 for an int8 key/value cache");
    }
    int64_t tokens[2] = {0, 0};
    if (combined) {
        if (!c.antiquantScale.present) return Value("antiquant_offset needs antiquant_scale");
        if (c.keyAntiquantMode != 0 || c.valueAntiquantMode != 0) {
            return Value("key_antiquant_mode=" + I(c.keyAntiquantMode) + " / value_antiquant_mode=" +
                         I(c.valueAntiquantMode) + " apply to key_/value_antiquant_scale; with antiquant_scale use "
                         "antiquant_mode");
        }
        FaError e = AntiquantMode("antiquant_mode", c.antiquantMode, false);
        if (e) return e;
        e = AntiquantTensor(c.antiquantScale, "antiquant_scale", 2, c.antiquantMode, c.query.dtype, n2, d, b, cacheS,
                            maxKv, tokens[0]);
        if (e) return e;
        if (c.antiquantOffset.present) {
            if (c.antiquantOffset.shape != c.antiquantScale.shape || c.antiquantOffset.dtype != c.antiquantScale.dtype) {
                return Value("antiquant_offset " + Tuple(c.antiquantOffset.shape) + " " + c.antiquantOffset.dtype +
                             " must have antiquant_scale's shape " + Tuple(c.antiquantScale.shape) + " and dtype " +
                             c.antiquantScale.dtype);
            }
        }
        p.keyQuantMode = p.valueQuantMode = (uint32_t)c.antiquantMode;
        p.quantOffset = c.antiquantOffset.present;
        tokens[1] = tokens[0];
    } else {
        if (c.antiquantMode != 0) {
            return Value("antiquant_mode=" + I(c.antiquantMode) + " applies to antiquant_scale; with key_/value_"
                         "antiquant_scale use key_antiquant_mode and value_antiquant_mode");
        }
        if (c.keyAntiquantScale.present != c.valueAntiquantScale.present) {
            return Value("key_antiquant_scale and value_antiquant_scale must be given together");
        }
        if (c.keyAntiquantOffset.present != c.valueAntiquantOffset.present) {
            return Value("key_antiquant_offset and value_antiquant_offset must be given together");
        }
        FaError e = AntiquantMode("key_antiquant_mode", c.keyAntiquantMode, true);
        if (e) return e;
        e = AntiquantMode("value_antiquant_mode", c.valueAntiquantMode, true);
        if (e) return e;
        if (c.keyAntiquantMode != c.valueAntiquantMode && !(c.keyAntiquantMode == 0 && c.valueAntiquantMode == 1)) {
            return Value("key_antiquant_mode=" + I(c.keyAntiquantMode) + " and value_antiquant_mode=" +
                         I(c.valueAntiquantMode) + " must be equal, except key 0 (per channel) with value 1 (per "
                         "token)");
        }
        const FaTensorArg* args[] = {&c.keyAntiquantScale, &c.keyAntiquantOffset, &c.valueAntiquantScale,
                                     &c.valueAntiquantOffset};
        const char* names[] = {"key_antiquant_scale", "key_antiquant_offset", "value_antiquant_scale",
                               "value_antiquant_offset"};
        for (int i = 0; i < 4; ++i) {
            if (!args[i]->present) continue;
            const int64_t mode = i < 2 ? c.keyAntiquantMode : c.valueAntiquantMode;
            e = AntiquantTensor(*args[i], names[i], 1, mode, c.query.dtype, n2, d, b, cacheS, maxKv, tokens[i / 2]);
            if (e) return e;
            if (i % 2 == 1 && (args[i]->shape != args[i - 1]->shape || args[i]->dtype != args[i - 1]->dtype)) {
                return Value(std::string(names[i]) + " " + Tuple(args[i]->shape) + " " + args[i]->dtype +
                             " must have " + names[i - 1] + "'s shape " + Tuple(args[i - 1]->shape) + " and dtype " +
                             args[i - 1]->dtype);
            }
        }
        if (c.keyAntiquantMode == c.valueAntiquantMode && c.keyAntiquantScale.shape != c.valueAntiquantScale.shape) {
            return Value("key_antiquant_scale " + Tuple(c.keyAntiquantScale.shape) + " and value_antiquant_scale " +
                         Tuple(c.valueAntiquantScale.shape) + " must have the same shape in the same mode");
        }
        p.keyQuantMode = (uint32_t)c.keyAntiquantMode;
        p.valueQuantMode = (uint32_t)c.valueAntiquantMode;
        p.quantOffset = c.keyAntiquantOffset.present;
    }
    p.kvQuant = true;
    p.quantTokens = (uint32_t)std::max(tokens[0], tokens[1]);
    const uint64_t perChannel = (uint64_t)(n2 * d), perToken = (uint64_t)b * p.quantTokens;
    p.antiquantElems = 2 * ((p.keyQuantMode == 0 ? perChannel : perToken) + (p.valueQuantMode == 0 ? perChannel : perToken));
    return {};
}

}  // namespace

FaError BuildInferProblem(const FaInferCall& c, FaInferProblemInfo& out) {
    out = FaInferProblemInfo{};
    FaInferProblem& p = out.p;
    // Layout.
    int li = -1;
    for (int i = 0; i < 5; ++i) {
        if (c.inputLayout == kInferLayouts[i]) li = i;
    }
    if (li < 0) {
        return Value("input_layout=" + Repr(c.inputLayout) + " is not supported; use 'BSH', 'BSND', 'BNSD', "
                     "'BNSD_BSND' or 'TND'");
    }
    out.layoutName = c.inputLayout;
    if (!c.laterArgs.empty()) {
        return NotImplemented("npu_fused_infer_attention_score: " + c.laterArgs.front() + " is not supported yet "
                              "(quantisation, shared prefix, rope and padding sizes come in a later stage: leave it "
                              "at its default)");
    }
    const bool tnd = li == 4, bnsd = li == 2 || li == 3;
    // Dtypes.
    if (!IsHalf(c.query.dtype)) {
        if (c.query.dtype == "torch.int8") {
            return NotImplemented("query dtype torch.int8 (full quantisation) is not supported yet; use float16 or "
                                  "bfloat16");
        }
        return Type("query dtype " + c.query.dtype + " is not supported; use torch.float16 or torch.bfloat16");
    }
    const FaTensorArg* kv[] = {&c.key, &c.value};
    const char* kvNames[] = {"key", "value"};
    const bool kvInt8 = c.key.dtype == "torch.int8";
    for (int i = 0; i < 2; ++i) {
        if (kv[i]->dtype == "torch.int32") {
            return NotImplemented(std::string(kvNames[i]) + " dtype torch.int32 (an int4 KV cache, 8 values packed per "
                                  "int32) is not supported; use int8 with antiquant or the query's dtype " +
                                  c.query.dtype);
        }
        if (kvInt8 ? kv[i]->dtype != "torch.int8" : kv[i]->dtype != c.query.dtype) {
            return Type(std::string(kvNames[i]) + " dtype " + kv[i]->dtype + " must be " +
                        (kvInt8 ? "torch.int8 like key (an int8 cache)"
                                : "the query dtype " + c.query.dtype + " (or key and value both torch.int8 with "
                                  "antiquant)"));
        }
    }
    p.dtype = c.query.dtype == "torch.bfloat16" ? kBf16 : kFp16;
    // Heads.
    if (c.numHeads < 1) return Value("num_heads=" + I(c.numHeads) + " must be >= 1");
    if (c.numKeyValueHeads < 0) {
        return Value("num_key_value_heads=" + I(c.numKeyValueHeads) + " must be >= 0 (0: the same as num_heads)");
    }
    const int64_t n1 = c.numHeads, n2 = c.numKeyValueHeads == 0 ? n1 : c.numKeyValueHeads;
    if (n1 % n2 != 0 || n1 / n2 > kMaxGroup) {
        return Value("num_heads=" + I(n1) + " must be a multiple of num_key_value_heads=" + I(n2) + " with a ratio of "
                     "at most " + I(kMaxGroup));
    }
    // Query.
    const std::vector<int64_t>& q = c.query.shape;
    const size_t qRank = (li == 0 || tnd) ? 3 : 4;
    const char* qShapes[] = {"[B, S, H]", "[B, S, N, D]", "[B, N, S, D]", "[B, N, S, D]", "[T, N, D]"};
    if (q.size() != qRank) {
        return Value("query must be " + I((int64_t)qRank) + "-D " + qShapes[li] + " for input_layout=" +
                     Repr(c.inputLayout) + ", got shape " + Tuple(q));
    }
    int64_t b = 0, s1 = 0, qn = 0, d = 0, t1 = 0;
    if (li == 0) {
        b = q[0], s1 = q[1], qn = n1;
        if (q[2] % n1 != 0 || q[2] == 0) {
            return Value("query hidden size H=" + I(q[2]) + " must be a positive multiple of num_heads=" + I(n1) +
                         " (BSH: D = H / num_heads), query shape " + Tuple(q));
        }
        d = q[2] / n1;
    } else if (li == 1) {
        b = q[0], s1 = q[1], qn = q[2], d = q[3];
    } else if (bnsd) {
        b = q[0], qn = q[1], s1 = q[2], d = q[3];
    } else {
        t1 = q[0], qn = q[1], d = q[2];
    }
    if (qn != n1) {
        return Value("num_heads=" + I(n1) + " must equal the query's head dimension N=" + I(qn) + " (" + c.inputLayout +
                     " " + qShapes[li] + "), query shape " + Tuple(q));
    }
    if (d < 1 || d > kMaxHeadDim) {
        return Value("head dim D=" + I(d) + " must be in [1, " + I(kMaxHeadDim) + "], query shape " + Tuple(q));
    }
    std::vector<int64_t> qLen, qTok;
    if (tnd) {
        if (!c.actualSeqLengths.present || c.actualSeqLengths.values.empty()) {
            return Value("actual_seq_lengths is required for input_layout='TND' (cumulative query lengths, one per "
                         "batch)");
        }
        const FaError e = Cumulative(c.actualSeqLengths, "actual_seq_lengths", t1, "query T", qLen, qTok);
        if (e) return e;
        b = (int64_t)qLen.size();
        s1 = qLen.empty() ? 0 : *std::max_element(qLen.begin(), qLen.end());
    } else if (c.actualSeqLengths.present && s1 > 1) {
        const FaError e = PerBatch(c.actualSeqLengths, "actual_seq_lengths", b, s1, "query S", qLen);
        if (e) return e;
        qTok.assign((size_t)b, 0);
    } else {
        qLen.assign((size_t)b, s1);
        qTok.assign((size_t)b, 0);
    }
    // Block table and the caches.
    const bool paged = c.blockTable.present;
    out.paged = paged;
    if (c.key.shape != c.value.shape) {
        return Value("key and value must have the same shape, got key " + Tuple(c.key.shape) + ", value " +
                     Tuple(c.value.shape));
    }
    const std::vector<int64_t>& k = c.key.shape;
    int64_t s2 = 0, t2 = 0, pages = 0;
    if (paged) {
        if (c.blockTable.dtype != "torch.int32") {
            return Type("block_table dtype " + c.blockTable.dtype + " must be torch.int32");
        }
        const std::vector<int64_t>& bt = c.blockTable.shape;
        if (bt.size() != 2 || bt[0] != b) {
            return Value("block_table must be 2-D [B=" + I(b) + ", max blocks per sequence], got shape " + Tuple(bt));
        }
        pages = bt[1];
        if (c.blockSize < 1 || c.blockSize > kMaxPageSize || c.blockSize % 16 != 0) {
            return Value("block_size=" + I(c.blockSize) + " must be a multiple of 16 in [16, " + I(kMaxPageSize) +
                         "] with block_table");
        }
        const bool nMajor = k.size() == 4;
        if (k.size() != 3 && !nMajor) {
            return Value("key must be a paged cache (blocks, block_size, H) or (blocks, N, block_size, D) with "
                         "block_table, got shape " + Tuple(k));
        }
        if (nMajor && (li == 0 || li == 1)) {
            return Value("a (blocks, N, block_size, D) cache needs input_layout 'BNSD', 'BNSD_BSND' or 'TND'; "
                         "input_layout=" + Repr(c.inputLayout) + " takes (blocks, block_size, H), key shape " +
                         Tuple(k));
        }
        const int64_t ps = nMajor ? k[2] : k[1];
        if (ps != c.blockSize) {
            return Value("block_size=" + I(c.blockSize) + " must equal the cache's block size " + I(ps) +
                         ", key shape " + Tuple(k));
        }
        const int64_t kn = nMajor ? k[1] : (k[2] % d == 0 ? k[2] / d : -1), kd = nMajor ? k[3] : d;
        if (kn != n2 || kd != d) {
            return Value("key cache shape " + Tuple(k) + " must hold num_key_value_heads=" + I(n2) + " heads of D=" +
                         I(d) + (nMajor ? " as (blocks, N, block_size, D)" : " as (blocks, block_size, N*D)"));
        }
        if (!nMajor && n2 * d > kMaxHeadH) {
            return Value("a (blocks, block_size, H) cache needs H = N*D <= " + I(kMaxHeadH) + ", got " + I(n2 * d) +
                         "; use the (blocks, N, block_size, D) layout");
        }
        out.numBlocks = (uint32_t)k[0];
        s2 = pages * ps;
        if (nMajor) {
            Contiguous(k, p.k, 0, 1, 2);
        } else {
            p.k = FaStrides{(uint64_t)(ps * n2 * d), (uint64_t)d, (uint64_t)(n2 * d)};
        }
        p.v = p.k;
        p.pageSize = (uint32_t)ps;
        p.maxPages = (uint32_t)pages;
    } else {
        if (c.blockSize != 0) return Value("block_size=" + I(c.blockSize) + " is only valid with block_table");
        const size_t kRank = qRank;
        if (k.size() != kRank) {
            return Value("key must be " + I((int64_t)kRank) + "-D for input_layout=" + Repr(c.inputLayout) + ", got "
                         "shape " + Tuple(k));
        }
        int64_t kb = b, kn = 0, kd = d;
        if (li == 0) {
            kb = k[0], s2 = k[1], kn = k[2] % d == 0 ? k[2] / d : -1;
            p.k = FaStrides{(uint64_t)(k[1] * k[2]), (uint64_t)d, (uint64_t)k[2]};
        } else if (li == 1) {
            kb = k[0], s2 = k[1], kn = k[2], kd = k[3];
            Contiguous(k, p.k, 0, 2, 1);
        } else if (bnsd) {
            kb = k[0], kn = k[1], s2 = k[2], kd = k[3];
            Contiguous(k, p.k, 0, 1, 2);
        } else {
            t2 = k[0], kn = k[1], kd = k[2];
            p.k = FaStrides{0, (uint64_t)kd, (uint64_t)(kn * kd)};
        }
        if (kb != b || kn != n2 || kd != d) {
            return Value("key shape " + Tuple(k) + " must match B=" + I(b) + ", num_key_value_heads=" + I(n2) +
                         " and D=" + I(d) + " (" + c.inputLayout + ")");
        }
        p.v = p.k;
    }
    // Key lengths.
    std::vector<int64_t> kvLen, kvTok((size_t)b, 0);
    if (tnd && !paged) {
        if (!c.actualSeqLengthsKv.present || (int64_t)c.actualSeqLengthsKv.values.size() != b) {
            return Value("actual_seq_lengths_kv is required for input_layout='TND' without block_table: cumulative "
                         "key lengths, one per batch (B=" + I(b) + ")");
        }
        kvTok.clear();
        const FaError e = Cumulative(c.actualSeqLengthsKv, "actual_seq_lengths_kv", t2, "key T", kvLen, kvTok);
        if (e) return e;
    } else if (paged || c.actualSeqLengthsKv.present) {
        if (!c.actualSeqLengthsKv.present) {
            return Value("actual_seq_lengths_kv is required with block_table (each batch's key length)");
        }
        // With a block table the table's width is checked below, with its own message.
        const FaError e = PerBatch(c.actualSeqLengthsKv, "actual_seq_lengths_kv", b, paged ? kInt32Max : s2,
                                   paged ? "int32 max" : "key S", kvLen);
        if (e) return e;
    } else {
        kvLen.assign((size_t)b, s2);
    }
    {
        const int64_t maxKv = kvLen.empty() ? 0 : *std::max_element(kvLen.begin(), kvLen.end());
        const FaError e = Antiquant(c, kvInt8, n2, d, b, paged || tnd ? 0 : s2, maxKv, p);
        if (e) return e;
    }
    // Mask modes.
    const bool window = c.windowLeft >= 0 || c.windowRight >= 0;
    if (window && (c.sparseMode != 0 || c.attenMask.present)) {
        return Value("window_size=(" + I(c.windowLeft) + ", " + I(c.windowRight) + ") takes no sparse_mode (got " +
                     I(c.sparseMode) + ") and no atten_mask: causal is window_size[1]=0");
    }
    const bool decode = s1 <= 1 && !window;
    if (c.sparseMode < 0 || c.sparseMode > 4) {
        return Value("sparse_mode=" + I(c.sparseMode) + " is not supported; the built-in takes 0-4");
    }
    // With one query token the mode is ignored (the built-in's rule); modes 2-4 take their band from the geometry
    // and at most the compressed causal mask.
    const bool compressedModes = c.sparseMode >= 2;
    if (c.sparseMode == 1 && !decode && !c.attenMask.present) {
        return Value("sparse_mode=1 (all mask) requires atten_mask: a dense mask broadcastable to [B, N1, S1, S2]");
    }
    if (c.attenMask.present && !compressedModes) {
        const int64_t maskCols = tnd ? *std::max_element(kvLen.begin(), kvLen.end()) : s2;  // TND: the longest
        const FaError e = DenseMask(c, tnd, decode, b, s1, maskCols, qLen, kvLen, out);
        if (e) return e;
    } else if (c.attenMask.present) {
        const std::vector<int64_t>& m = c.attenMask.shape;
        const bool shapeOk = m.size() >= 2 && m.size() <= 4 && m[m.size() - 1] == 2048 && m[m.size() - 2] == 2048 &&
                             Numel(m) == 2048 * 2048;
        if (!shapeOk) {
            return Value("atten_mask of sparse_mode=" + I(c.sparseMode) + " must be the compressed causal mask of "
                         "shape (2048, 2048), (1, 2048, 2048) or (1, 1, 2048, 2048), got shape " + Tuple(m));
        }
        out.compressedMask = true;
    }
    if (!decode && c.sparseMode == 4) {
        FaProblem shape;
        shape.layout = tnd ? kTND : kBSND;
        shape.s1 = (uint32_t)s1;
        shape.s2 = (uint32_t)std::max<int64_t>(0, *std::max_element(kvLen.begin(), kvLen.end()));
        std::vector<std::pair<int64_t, int64_t>> seqs;
        for (int64_t i = 0; i < b; ++i) seqs.emplace_back(qLen[(size_t)i], kvLen[(size_t)i]);
        const FaError e = rules::BandMode4(c.preTokens, c.nextTokens, shape, seqs);
        if (e) return e;
    }
    if (window) {  // flash_attn's sliding window: sparse mode 4's bottom-right band
        p.sparseMode = 4;
        p.preTokens = c.windowLeft < 0 ? kInt32Max : c.windowLeft;
        p.nextTokens = c.windowRight < 0 ? kInt32Max : c.windowRight;
    } else {
        p.sparseMode = decode ? 0 : (uint32_t)c.sparseMode;
        p.preTokens = decode ? kInt32Max : c.preTokens;
        p.nextTokens = decode ? kInt32Max : c.nextTokens;
    }
    // inner_precise bit 0 (high performance) permits 16-bit scores; the inference kernel keeps fp32 scores in every
    // mode (decode is HBM-bound, where the mode's Fixpipe saving buys nothing), so 1 and 3 run as 0 and 2. Bit 1
    // (invalid-row correction) is always on.
    if (c.innerPrecise < 0 || c.innerPrecise > 3) {
        return Value("inner_precise=" + I(c.innerPrecise) + " must be 0, 1, 2 or 3");
    }
    // The block table covers every key.
    if (paged) {
        for (int64_t i = 0; i < b; ++i) {
            const int64_t need = (kvLen[(size_t)i] + c.blockSize - 1) / c.blockSize;
            if (need > pages) {
                return Value("block_table has " + I(pages) + " columns but batch " + I(i) + " needs " + I(need) +
                             " blocks (actual_seq_lengths_kv=" + I(kvLen[(size_t)i]) + ", block_size=" +
                             I(c.blockSize) + ")");
            }
        }
    }
    // Positional bias and soft-cap.
    if (c.pseShift.present) {
        const FaError e = PseShift(c, tnd, b, n1, s1, s2, p);
        if (e) return e;
    }
    if (!(c.softcap >= 0.0) || c.softcap > 3.0e38) {
        return Value("softcap=" + text::Float(c.softcap) + " must be a finite number >= 0 (0: no soft-cap)");
    }
    p.softcap = (float)c.softcap;
    if (c.alibiSlopes.present) {
        const std::vector<int64_t>& a = c.alibiSlopes.shape;
        if (c.alibiSlopes.dtype != "torch.float32") {
            return Type("alibi_slopes dtype " + c.alibiSlopes.dtype + " must be torch.float32");
        }
        const bool perBatch = a.size() == 2 && a[0] == b && a[1] == n1;
        if (!perBatch && !(a.size() == 1 && a[0] == n1)) {
            return Value("alibi_slopes must be [nheads=" + I(n1) + "] or [batch_size=" + I(b) + ", nheads=" + I(n1) +
                         "], got shape " + Tuple(a));
        }
        p.alibi = true;
        p.alibiPerBatch = perBatch;
        p.alibiElems = Numel(a);
    }
    // The problem.
    p.batch = (uint32_t)b, p.n1 = (uint32_t)n1, p.n2 = (uint32_t)n2, p.d = (uint32_t)d, p.dv = (uint32_t)d;
    p.scale = (float)c.scale;
    p.lse = c.softmaxLseFlag;
    p.qLen = qLen, p.kvLen = kvLen, p.qTok = qTok, p.kvTok = kvTok;
    p.forceSplits = c.forceSplits;
    if (li == 0 || li == 1) {
        p.q = FaStrides{(uint64_t)(s1 * n1 * d), (uint64_t)d, (uint64_t)(n1 * d)};
    } else if (bnsd) {
        p.q = FaStrides{(uint64_t)(n1 * s1 * d), (uint64_t)(s1 * d), (uint64_t)d};
    } else {
        p.q = FaStrides{0, (uint64_t)d, (uint64_t)(n1 * d)};
    }
    p.out = li == 3 ? FaStrides{(uint64_t)(s1 * n1 * d), (uint64_t)d, (uint64_t)(n1 * d)} : p.q;
    out.outShape = li == 3 ? std::vector<int64_t>{b, s1, n1, d} : q;
    if (tnd) {
        p.lseB = 0, p.lseN = 1, p.lseS = (uint64_t)n1;
        out.lseShape = c.softmaxLseFlag ? std::vector<int64_t>{t1, n1, 1} : std::vector<int64_t>{1};
    } else {
        p.lseB = (uint64_t)(n1 * s1), p.lseN = (uint64_t)s1, p.lseS = 1;
        out.lseShape = c.softmaxLseFlag ? std::vector<int64_t>{b, n1, s1, 1} : std::vector<int64_t>{1};
    }
    p.queryElems = Numel(q);
    p.keyElems = Numel(k);
    p.valueElems = Numel(c.value.shape);
    p.outElems = Numel(out.outShape);
    p.lseElems = Numel(out.lseShape);
    p.tableElems = paged ? (uint64_t)b * (uint64_t)pages : 0;
    return {};
}

}  // namespace npu_fa
