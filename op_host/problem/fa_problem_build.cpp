// The rules of a FlashAttention call (fa_problem_build.h), in the order the op checks them.
#include "problem/fa_problem_build.h"

#include <algorithm>
#include <cmath>

#include "problem/fa_rules.h"
#include "problem/fa_text.h"

namespace npu_fa {
namespace rules {

std::vector<int64_t> Lengths(const std::vector<int64_t>& cu) {
    std::vector<int64_t> out;
    int64_t prev = 0;
    for (int64_t c : cu) {
        out.push_back(c - prev);
        prev = c;
    }
    return out;
}

unsigned __int128 Numel(const std::vector<int64_t>& shape) {
    unsigned __int128 n = 1;
    for (int64_t x : shape) n *= (unsigned __int128)(x < 0 ? 0 : x);
    return n;
}

std::vector<std::pair<int64_t, int64_t>> SequenceShapes(const FaProblem& p) {
    std::vector<std::pair<int64_t, int64_t>> out;
    if (p.layout != kTND) {
        out.assign(p.batch, {(int64_t)p.s1, (int64_t)p.s2});
        return out;
    }
    const std::vector<int64_t> lq = Lengths(p.cuSeqQ), lk = Lengths(p.cuSeqKv);
    for (size_t b = 0; b < lq.size(); ++b) out.push_back({lq[b], lk[b]});
    return out;
}

}  // namespace rules

namespace {

using text::Float;
using text::List;
using text::Repr;
using text::Tuple;

constexpr const char* kLayoutNames[] = {"BSH", "SBH", "BSND", "BNSD", "TND"};
constexpr FaLayout kLayouts[] = {kBSH, kSBH, kBSND, kBNSD, kTND};
const char* kLayoutShapes[] = {
    "query [B,S1,N1*D], key [B,S2,N2*D], value [B,S2,N2*Dv]",
    "query [S1,B,N1*D], key [S2,B,N2*D], value [S2,B,N2*Dv]",
    "query [B,S1,N1,D], key [B,S2,N2,D], value [B,S2,N2,Dv]",
    "query [B,N1,S1,D], key [B,N2,S2,D], value [B,N2,S2,Dv]",
    "query [T1,N1,D], key [T2,N2,D], value [T2,N2,Dv]",
};
bool IsHalf(const std::string& dt) { return dt == "torch.float16" || dt == "torch.bfloat16"; }

uint64_t ElementSize(const std::string& dt) {
    if (dt == "torch.float64" || dt == "torch.int64" || dt == "torch.complex64") return 8;
    if (dt == "torch.float32" || dt == "torch.int32") return 4;
    if (dt == "torch.float16" || dt == "torch.bfloat16" || dt == "torch.int16") return 2;
    return 1;
}

int64_t MaxOr0(const std::vector<int64_t>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

using rules::Dims;
using rules::Lengths;
using rules::Numel;
using rules::NotImplemented;
using rules::Type;
using rules::Value;

FaError ShapeDims(const FaCall& c, uint32_t li, int64_t headNum, Dims& o) {
    const FaLayout layout = kLayouts[li];
    const std::string lr = Repr(kLayoutNames[li]);
    const size_t rank = (layout == kBSND || layout == kBNSD) ? 4 : 3;
    const FaTensorArg* ts[] = {&c.query, &c.key, &c.value};
    const char* names[] = {"query", "key", "value"};
    for (int i = 0; i < 3; ++i) {
        if (ts[i]->shape.size() != rank) {
            return Value(std::string(names[i]) + " must be " + std::to_string(rank) + "-D for input_layout=" + lr +
                         " (" + kLayoutShapes[li] + "), got shape " + Tuple(ts[i]->shape));
        }
    }
    const std::vector<int64_t>&q = c.query.shape, &k = c.key.shape, &v = c.value.shape;
    const std::string name = kLayoutNames[li];
    int64_t b = 0, bk = 0, bv = 0, n1 = 0, n2 = 0, n2v = 0, s1 = 0, s2 = 0, s2v = 0, d = 0, dk = 0, dv = 0;
    if (layout == kBSH || layout == kSBH) {
        const int pb = layout == kBSH ? 0 : 1, ps = 1 - pb;
        b = q[pb], bk = k[pb], bv = v[pb], s1 = q[ps], s2 = k[ps], s2v = v[ps];
        const int64_t h1 = q[2], h2 = k[2], h3 = v[2];
        n1 = headNum;
        if (h1 == 0 || h1 % headNum != 0) {
            return Value("query hidden size H1=" + std::to_string(h1) + " must be a positive multiple of head_num=" +
                         std::to_string(headNum) + " (" + name + ": D = H1 / head_num), query shape " + Tuple(q));
        }
        d = h1 / headNum;
        if (h2 == 0 || h2 % d != 0) {
            return Value("key hidden size H2=" + std::to_string(h2) + " must be a positive multiple of D=" +
                         std::to_string(d) + " (H1=" + std::to_string(h1) + " / head_num=" + std::to_string(headNum) +
                         "; " + name + ": N2 = H2 / D), key shape " + Tuple(k));
        }
        n2 = h2 / d;
        if (h3 == 0 || h3 % n2 != 0) {
            return Value("value hidden size H3=" + std::to_string(h3) + " must be a positive multiple of N2=" +
                         std::to_string(n2) + " (" + name + ": Dv = H3 / N2), value shape " + Tuple(v));
        }
        dv = h3 / n2;
        dk = d, n2v = n2;
    } else if (layout == kBSND) {
        b = q[0], s1 = q[1], n1 = q[2], d = q[3], bk = k[0], s2 = k[1], n2 = k[2], dk = k[3];
        bv = v[0], s2v = v[1], n2v = v[2], dv = v[3];
    } else if (layout == kBNSD) {
        b = q[0], n1 = q[1], s1 = q[2], d = q[3], bk = k[0], n2 = k[1], s2 = k[2], dk = k[3];
        bv = v[0], n2v = v[1], s2v = v[2], dv = v[3];
    } else {
        o.t1 = q[0], n1 = q[1], d = q[2], o.t2 = k[0], n2 = k[1], dk = k[2], n2v = v[1], dv = v[2];
        if (v[0] != k[0]) {
            return Value("value T2=" + std::to_string(v[0]) + " must equal key T2=" + std::to_string(k[0]) +
                         " (TND), key shape " + Tuple(k) + ", value shape " + Tuple(v));
        }
    }
    if (n1 != headNum) {
        return Value("head_num=" + std::to_string(headNum) + " must equal the query's head dimension N1=" +
                     std::to_string(n1) + " (" + name + ": " + kLayoutShapes[li] + "), query shape " + Tuple(q));
    }
    if (layout != kTND) {
        if (bk != b || bv != b) {
            return Value("batch sizes must match: query B=" + std::to_string(b) + ", key B=" + std::to_string(bk) +
                         ", value B=" + std::to_string(bv) + " (" + name + ")");
        }
        if (s2v != s2) {
            return Value("key and value sequence lengths must match: key S2=" + std::to_string(s2) + ", value S2=" +
                         std::to_string(s2v) + " (" + name + ")");
        }
    }
    if (dk != d) {
        return Value("key head dim " + std::to_string(dk) + " must equal query head dim D=" + std::to_string(d) + " (" +
                     name + "), query shape " + Tuple(q) + ", key shape " + Tuple(k));
    }
    if (n2v != n2) {
        return Value("value head count " + std::to_string(n2v) + " must equal key head count N2=" + std::to_string(n2) +
                     " (" + name + "), key shape " + Tuple(k) + ", value shape " + Tuple(v));
    }
    if (n2 < 1) {
        return Value("key/value head count N2=" + std::to_string(n2) + " must be >= 1 (" + name + "), key shape " +
                     Tuple(k));
    }
    if (n1 % n2 != 0) {
        return Value("query heads N1=" + std::to_string(n1) + " must be a multiple of key/value heads N2=" +
                     std::to_string(n2) + " (GQA/MQA groups)");
    }
    if (!(1 <= d && d <= kMaxHeadDim)) {
        return Value("head dim D=" + std::to_string(d) + " must be in [1, " + std::to_string(kMaxHeadDim) + "] (" +
                     name + "), query shape " + Tuple(q));
    }
    if (!(1 <= dv && dv <= d)) {
        return Value("value head dim Dv=" + std::to_string(dv) + " must be in [1, D=" + std::to_string(d) +
                     "] (Dv <= D), value shape " + Tuple(v));
    }
    o.b = b, o.n1 = n1, o.n2 = n2, o.s1 = s1, o.s2 = s2, o.d = d, o.dv = dv;
    return {};
}

// The kernel holds sizes in 32-bit fields, and no chip holds more than kMaxProblemBytes.
FaError CheckSizes(const FaCall& c, FaLayout layout, const Dims& g) {
    const FaTensorArg* ts[] = {&c.query, &c.key, &c.value};
    const char* names[] = {"query", "key", "value"};
    for (int i = 0; i < 3; ++i) {
        for (size_t axis = 0; axis < ts[i]->shape.size(); ++axis) {
            const int64_t n = ts[i]->shape[axis];
            if (n > kInt32Max) {
                return Value(std::string(names[i]) + " dimension " + std::to_string(axis) + " is " + std::to_string(n) +
                             "; every dimension must be <= " + std::to_string(kInt32Max) +
                             " (the kernel's tiling holds sizes as 32-bit fields), shape " + Tuple(ts[i]->shape));
            }
        }
    }
    const unsigned __int128 rows = layout == kTND ? (unsigned __int128)g.t1 : (unsigned __int128)g.b * g.s1;
    const uint64_t esize = ElementSize(c.query.dtype);
    struct Part {
        const char* name;
        unsigned __int128 bytes;
    } parts[] = {{"query", Numel(c.query.shape) * esize},
                 {"key", Numel(c.key.shape) * ElementSize(c.key.dtype)},
                 {"value", Numel(c.value.shape) * ElementSize(c.value.dtype)},
                 {"attention_out", rows * (uint64_t)g.n1 * (uint64_t)g.dv * esize},
                 {"softmax_max/softmax_sum", 2 * rows * (uint64_t)g.n1 * 32}};
    unsigned __int128 total = 0;
    const Part* big = &parts[0];
    for (const Part& p : parts) {
        total += p.bytes;
        if (p.bytes > big->bytes) big = &p;
    }
    if (total <= kMaxProblemBytes) return {};
    const double gib = 1024.0 * 1024.0 * 1024.0;
    std::string detail;
    for (const Part& p : parts) {
        detail += (detail.empty() ? "" : ", ") + std::string(p.name) + " " + text::G((double)p.bytes / gib, 3) + " GiB";
    }
    return Value("the problem needs " + text::G((double)total / gib, 4) + " GiB of device memory (" + detail +
                 "), more than the " + std::to_string(kMaxProblemBytes >> 30) +
                 " GiB HBM of the largest supported chip; the largest part is " + big->name + " (" +
                 text::Uint(big->bytes) + " bytes)");
}

// One cumulative TND list: its enabled prefix (trailing zeros after the last positive entry dropped).
FaError EnabledCumulative(const char* name, const std::vector<int64_t>& vals, std::vector<int64_t>& enabled) {
    if (vals.empty()) {
        return Value(std::string(name) + " must not be empty for input_layout='TND' (one cumulative entry per batch)");
    }
    size_t n = vals.size();
    size_t lastPos = vals.size();
    for (size_t i = 0; i < vals.size(); ++i) {
        if (vals[i] > 0) lastPos = i;
    }
    if (lastPos != vals.size()) n = lastPos + 1;
    for (size_t i = n; i < vals.size(); ++i) {
        if (vals[i] != 0) {
            return Value(std::string(name) + "=" + List(vals) +
                         ": only zeros may follow the last sequence (disabled batches)");
        }
    }
    enabled.assign(vals.begin(), vals.begin() + (std::ptrdiff_t)n);
    int64_t prev = 0;
    for (size_t i = 0; i < n; ++i) {
        const int64_t x = enabled[i];
        if (x < 0) {
            return Value(std::string(name) + "=" + List(vals) + ": entry " + std::to_string(i) + " is " +
                         std::to_string(x) + "; cumulative lengths must be >= 0");
        }
        if (x < prev) {
            return Value(std::string(name) + "=" + List(vals) + ": entry " + std::to_string(i) + " (" +
                         std::to_string(x) + ") is smaller than entry " + std::to_string(i - 1) + " (" +
                         std::to_string(prev) +
                         "); the list must be cumulative (non-decreasing), with trailing zeros only to disable the "
                         "last batches");
        }
        prev = x;
    }
    return {};
}

// attention_out: the query's shape with D -> Dv; statistics [B, N1, S1, 8] (TND [T1, N1, 8]), as input dims.
void OutputDims(FaProblemInfo& o, int64_t headNum) {
    auto ref = [](uint32_t t, uint32_t a) { return FaDim{1, {{t, a}}, {}}; };
    auto constant = [](int64_t c) { return FaDim{c, {}, {}}; };
    const FaDim hidden{1, {{0, 2}, {2, 2}}, {{1, 2}}};  // N1 * Dv = H1 * H3 / H2
    switch (o.p.layout) {
        case kBSH:
            o.outDims = {ref(0, 0), ref(0, 1), hidden};
            o.statsDims = {ref(0, 0), constant(headNum), ref(0, 1), constant(8)};
            break;
        case kSBH:
            o.outDims = {ref(0, 0), ref(0, 1), hidden};
            o.statsDims = {ref(0, 1), constant(headNum), ref(0, 0), constant(8)};
            break;
        case kBSND:
            o.outDims = {ref(0, 0), ref(0, 1), ref(0, 2), ref(2, 3)};
            o.statsDims = {ref(0, 0), ref(0, 2), ref(0, 1), constant(8)};
            break;
        case kBNSD:
            o.outDims = {ref(0, 0), ref(0, 1), ref(0, 2), ref(2, 3)};
            o.statsDims = {ref(0, 0), ref(0, 1), ref(0, 2), constant(8)};
            break;
        default:
            o.outDims = {ref(0, 0), ref(0, 1), ref(2, 2)};
            o.statsDims = {ref(0, 0), ref(0, 1), constant(8)};
    }
}

std::vector<int64_t> Evaluate(const std::vector<FaDim>& dims, const FaCall& c) {
    const FaTensorArg* ts[] = {&c.query, &c.key, &c.value};
    std::vector<int64_t> out;
    for (const FaDim& d : dims) {
        int64_t v = d.constant, div = 1;
        for (const FaDimRef& r : d.mul) v *= ts[r.tensor]->shape[r.axis];
        for (const FaDimRef& r : d.div) div *= ts[r.tensor]->shape[r.axis];
        out.push_back(div != 0 ? v / div : 0);
    }
    return out;
}

// The backward's saved tensors must have the forward output's and statistics' shapes and dtypes.
FaError GradInputs(const FaCall& c, const FaProblemInfo& o) {
    const struct {
        const char* name;
        const FaTensorArg& t;
        bool stats;
    } named[] = {{"dy", c.dy, false},
                 {"attention_in", c.attentionIn, false},
                 {"softmax_max", c.softmaxMax, true},
                 {"softmax_sum", c.softmaxSum, true},
                 {"attention_in_residual", c.attentionInResidual, false}};
    for (const auto& n : named) {
        const std::string name = n.name;
        if (!n.t.present && name == "attention_in_residual") continue;  // optional: D from attention_in alone
        if (!n.t.present) {
            return Value(name == "dy" ? "dy is required"
                                      : name + " is required by flash_attention_grad (pass the forward's " + name + ")");
        }
        const std::vector<int64_t>& want = n.stats ? o.statsShape : o.outShape;
        if (n.t.shape != want) {
            return Value(name + " shape " + Tuple(n.t.shape) + " must be " + Tuple(want) + " (" +
                         (n.stats ? "the forward statistics' shape" : "the forward output's shape") +
                         ", input_layout=" + Repr(o.layoutName) + ")");
        }
        const std::string dtype = n.stats ? "torch.float32" : c.query.dtype;
        if (n.t.dtype != dtype) {  // statistics: ValueError (the op contract); the others: TypeError like key
            const std::string m = name + " dtype " + n.t.dtype + " must be " + dtype;
            return n.stats ? Value(m) : Type(m);
        }
    }
    return {};
}

void PostProcess(FaProblemInfo& o) {
    const FaProblem& p = o.p;
    FaPostProcess& post = o.post;
    post.tnd = p.layout == kTND;
    if (post.tnd) {
        bool q = false, k = false;
        for (int64_t len : Lengths(p.cuSeqQ)) q = q || len > 0;
        for (int64_t len : Lengths(p.cuSeqKv)) k = k || len > 0;
        post.hasWork = p.batch > 0 && q && k;
        post.padQFrom = p.cuSeqQ.empty() ? 0 : (uint64_t)p.cuSeqQ.back();
        post.padKvFrom = p.cuSeqKv.empty() ? 0 : (uint64_t)p.cuSeqKv.back();
        int64_t q0 = 0;
        for (int64_t q1 : p.cuSeqQ) {
            post.rowGroups.push_back({(uint64_t)q0 * p.n1, 1, (uint64_t)(q1 - q0)});
            q0 = q1;
        }
    } else {
        post.hasWork = p.batch > 0 && p.s1 > 0 && p.s2 > 0;
        post.padQFrom = o.t1;
        post.padKvFrom = o.t2;
        post.rowGroups.push_back({0, p.batch, p.s1});
    }
    if (p.pseMode != kPseNone) {
        const bool perRow = p.pseStrideS != 0;
        post.dpseRowsShape = {(int64_t)p.batch, (int64_t)p.n1, (int64_t)PseGradRows(p), (int64_t)p.s2};
        if (!perRow) post.dpseSumDims.push_back(2);
        if (p.pseStrideB == 0 && p.batch > 1) post.dpseSumDims.push_back(0);
        post.dpseFactor = p.pseMode == kPseScaled ? o.scale : 1.0;
    }
}

}  // namespace

FaError BuildProblem(const FaCall& c, FaProblemInfo& o) {
    o = FaProblemInfo{};
    FaProblem& p = o.p;
    const FaAttrs& a = c.attrs;
    std::string up = a.inputLayout;
    for (char& ch : up) ch = (ch >= 'a' && ch <= 'z') ? (char)(ch - 'a' + 'A') : ch;
    uint32_t li = 5;
    for (uint32_t i = 0; i < 5; ++i) {
        if (up == kLayoutNames[i]) li = i;
    }
    if (li == 5) {
        return Value("input_layout=" + Repr(a.inputLayout) +
                     " is not supported; use one of ['BSH', 'SBH', 'BSND', 'BNSD', 'TND']");
    }
    p.layout = kLayouts[li];
    o.layoutName = kLayoutNames[li];
    if (c.paddingMask.present) {
        return Value("padding_mask is reserved and not supported (as in torch_npu.npu_fusion_attention); pass None");
    }
    if (!IsHalf(c.query.dtype)) {
        return Type("query dtype " + c.query.dtype + " is not supported; use torch.float16 or torch.bfloat16");
    }
    if (c.key.dtype != c.query.dtype) return Type("key dtype " + c.key.dtype + " must equal query dtype " + c.query.dtype);
    if (c.value.dtype != c.query.dtype) {
        return Type("value dtype " + c.value.dtype + " must equal query dtype " + c.query.dtype);
    }
    p.dtype = c.query.dtype == "torch.bfloat16" ? kBf16 : kFp16;
    if (a.headNum < 1) return Value("head_num=" + std::to_string(a.headNum) + " must be >= 1");
    Dims g;
    FaError e;
    if ((e = ShapeDims(c, li, a.headNum, g)) || (e = CheckSizes(c, p.layout, g))) return e;
    if (!std::isfinite(a.scale)) return Value("scale=" + Float(a.scale) + " must be finite");
    if (!(a.keepProb > 0.0 && a.keepProb <= 1.0)) return Value("keep_prob=" + Float(a.keepProb) + " must be in (0, 1]");
    if (a.innerPrecise < 0 || a.innerPrecise > 3) {
        return Value("inner_precise=" + std::to_string(a.innerPrecise) +
                     " must be 0-3: bit 0 picks high precision (0) or high performance (1); invalid rows always get "
                     "zero output");
    }
    p.highPerformance = (a.innerPrecise & 1) != 0;
    if (a.sparseMode < 0 || a.sparseMode > 8) {
        return Value("sparse_mode=" + std::to_string(a.sparseMode) + " must be in [0, 8]");
    }
    const struct {
        const char* name;
        int64_t v;
    } band[] = {{"pre_tokens", a.preTokens}, {"next_tokens", a.nextTokens}};
    for (const auto& b : band) {
        if (b.v < kInt32Min || b.v > kInt32Max) {
            return Value(std::string(b.name) + "=" + std::to_string(b.v) + " must fit in int32 [" +
                         std::to_string(kInt32Min) + ", " + std::to_string(kInt32Max) + "]");
        }
    }
    if (a.pseType < 0 || a.pseType > 3) return Value("pse_type=" + std::to_string(a.pseType) + " must be 0, 1, 2 or 3");
    if (a.hasSoftcap && !(std::isfinite(a.softcap) && a.softcap > 0.0)) {
        return Value("softcap=" + Float(a.softcap) + " must be finite and > 0 (None turns soft-capping off)");
    }
    p.n1 = (uint32_t)g.n1, p.n2 = (uint32_t)g.n2, p.d = (uint32_t)g.d, p.dv = (uint32_t)g.dv;
    p.scale = (float)a.scale;
    o.scale = a.scale;
    p.softcap = a.hasSoftcap ? (float)a.softcap : 0.0f;
    int64_t batches = g.b;
    if (p.layout == kTND) {
        const FaIntList &lq = a.actualSeqQlen, &lk = a.actualSeqKvlen;
        if (!lq.present || !lk.present) {
            const std::string missing = !lq.present && !lk.present ? "actual_seq_qlen and actual_seq_kvlen"
                                        : !lq.present              ? "actual_seq_qlen"
                                                                   : "actual_seq_kvlen";
            return Value("input_layout='TND' requires " + missing + " (cumulative sequence lengths)");
        }
        if (lq.values.size() != lk.values.size()) {
            return Value("actual_seq_qlen (length " + std::to_string(lq.values.size()) + ") and actual_seq_kvlen (length " +
                         std::to_string(lk.values.size()) + ") must have the same length (the number of batches)");
        }
        if ((e = EnabledCumulative("actual_seq_qlen", lq.values, p.cuSeqQ)) ||
            (e = EnabledCumulative("actual_seq_kvlen", lk.values, p.cuSeqKv))) {
            return e;
        }
        const size_t nb = std::min(p.cuSeqQ.size(), p.cuSeqKv.size());  // disabled in either list = disabled
        p.cuSeqQ.resize(nb);
        p.cuSeqKv.resize(nb);
        if (nb > 0 && p.cuSeqQ.back() > g.t1) {
            return Value("actual_seq_qlen total " + std::to_string(p.cuSeqQ.back()) + " exceeds query T1=" +
                         std::to_string(g.t1) + " (TND query shape " + Tuple(c.query.shape) +
                         "); the last cumulative length must be <= T1");
        }
        if (nb > 0 && p.cuSeqKv.back() > g.t2) {
            return Value("actual_seq_kvlen total " + std::to_string(p.cuSeqKv.back()) + " exceeds key/value T2=" +
                         std::to_string(g.t2) + " (TND key shape " + Tuple(c.key.shape) +
                         "); the last cumulative length must be <= T2");
        }
        g.b = (int64_t)nb;
        g.s1 = MaxOr0(Lengths(p.cuSeqQ));
        g.s2 = MaxOr0(Lengths(p.cuSeqKv));
        batches = (int64_t)lq.values.size();
        o.t1 = (uint64_t)g.t1, o.t2 = (uint64_t)g.t2;
    } else {
        const struct {
            const char* name;
            bool present;
        } lists[] = {{"actual_seq_qlen", a.actualSeqQlen.present}, {"actual_seq_kvlen", a.actualSeqKvlen.present}};
        for (const auto& l : lists) {
            if (l.present) {
                return Value(std::string(l.name) + " is only valid with input_layout='TND', got input_layout=" +
                             Repr(a.inputLayout));
            }
        }
        o.t1 = (uint64_t)(g.b * g.s1), o.t2 = (uint64_t)(g.b * g.s2);
    }
    p.batch = (uint32_t)g.b, p.s1 = (uint32_t)g.s1, p.s2 = (uint32_t)g.s2;
    p.t1 = (uint64_t)g.t1, p.t2 = (uint64_t)g.t2;
    if ((e = rules::Pse(c, p.layout, batches, g, p)) || (e = rules::Dropout(c, g, p, o))) return e;
    if (c.sink.present) {
        if (c.sink.dtype != "torch.float32") {
            return Type("sink dtype " + c.sink.dtype +
                        " must be torch.float32 (one logit per query head, as the built-in's sink)");
        }
        if (c.sink.shape != std::vector<int64_t>{g.n1}) {
            return Value("sink shape " + Tuple(c.sink.shape) + " must be (" + std::to_string(g.n1) +
                         ",): one logit per query head (head_num=" + std::to_string(g.n1) + ")");
        }
        p.sink = true;
    }
    if ((e = rules::Masks(c, p, g.s1, g.s2, o))) return e;
    if (p.denseMask) rules::MaskView(c, p, o.mask);
    OutputDims(o, a.headNum);
    o.outShape = Evaluate(o.outDims, c);
    o.statsShape = Evaluate(o.statsDims, c);
    if (c.grad && (e = GradInputs(c, o))) return e;
    if (c.partialKeys && !c.grad) return Value("partial_keys is an argument of flash_attention_grad only");
    p.partialKeys = c.partialKeys;
    if (c.grad && c.outResidual != c.attentionInResidual.present) {
        return Value("the grad call's outResidual flag must say whether attention_in_residual is given");
    }
    p.outResidual = c.outResidual;
    if (!c.dropMaskInPlaceDevice.empty() && o.dropMaskRepack) {
        return NotImplemented("dropout_mask on " + c.dropMaskInPlaceDevice +
                              " needs a non-TND layout and S2 % 8 == 0 (got input_layout=" + Repr(o.layoutName) +
                              ", S2=" + std::to_string(p.s2) +
                              "): the NPU path reads the bits in place and does not repack them yet; the CPU (twin) "
                              "path takes every form");
    }
    p.forceS1Block = c.forceS1Block;
    p.forceS2Block = c.forceS2Block;
    p.forceLowScores = c.forceLowScores;
    p.forceLazy = c.forceLazy;
    p.lazyThreshold = c.lazyThreshold;
    p.bwdStoreLimit = c.bwdStoreLimit;
    o.sequences = rules::SequenceShapes(p);
    PostProcess(o);
    return {};
}

FaTensorBytes TensorBytes(const FaProblem& p) {
    const bool varlen = p.layout == kTND;
    const uint64_t qTok = varlen ? p.t1 : (uint64_t)p.batch * p.s1, kTok = varlen ? p.t2 : (uint64_t)p.batch * p.s2;
    return {qTok * p.n1 * p.d * 2, kTok * p.n2 * p.d * 2, kTok * p.n2 * p.dv * 2, qTok * p.n1 * p.dv * 2,
            qTok * p.n1 * 8 * 4};
}

uint64_t PseBytes(const FaProblem& p) {
    if (p.alibiMode != kAlibiNone) return (p.alibiPerBatch ? (uint64_t)p.batch : 1) * p.n1 * 4;
    if (p.pseMode == kPseNone) return 0;
    return (p.pseStrideB != 0 ? (uint64_t)p.batch * p.pseStrideB : (uint64_t)p.n1 * p.pseStrideN) * 2;
}

uint64_t PseGradRows(const FaProblem& p) { return p.pseStrideS != 0 ? p.s1 : 4 * (((uint64_t)p.s1 + 15) / 16); }

uint64_t DropMaskBytes(const FaProblem& p) {
    if (p.dropMode != kDropMask) return 0;
    const uint64_t rows = p.layout == kTND ? p.t1 * p.n1 : (uint64_t)p.batch * p.n1 * p.s1;
    return rows * p.dropMaskPitch;
}

}  // namespace npu_fa