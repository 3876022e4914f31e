// The mask rules of a call and the dense mask's kernel view (fa_rules.h).
#include <algorithm>
#include <string>

#include "problem/fa_rules.h"

namespace npu_fa {
namespace rules {
namespace {

const char* kModeNames[] = {"mask with pre/next band", "arbitrary mask", "left-up causal", "right-down causal", "band",
                            "prefix, uncompressed mask", "prefix, compressed mask", "varlen split, right-down causal",
                            "varlen split, left-up causal"};
constexpr int64_t kCompressedMaskSize = 2048;
constexpr int64_t kPrefixMaskRows = 3072;

FaError PrefixUnused(const FaIntList& prefix, int64_t mode) {
    if (!prefix.present) return {};
    return Value("prefix=" + List(prefix.values) + " is only used by sparse_mode 5 and 6, got sparse_mode=" +
                 std::to_string(mode) + "; pass prefix=None");
}

// Raises unless the dense mask's shape is accepted; sets tndGlobal for the TND form [sum Sq, sum Skv].
FaError DenseShape(const FaCall& c, int64_t mode, const FaProblem& p, int64_t s1, int64_t s2, bool& tndGlobal) {
    const std::vector<int64_t>& m = c.attenMask.shape;
    tndGlobal = false;
    if (p.layout == kTND) {
        const int64_t tq = p.cuSeqQ.empty() ? 0 : p.cuSeqQ.back(), tk = p.cuSeqKv.empty() ? 0 : p.cuSeqKv.back();
        if (m.size() == 2 && p.cuSeqQ.size() > 1 && m[0] == tq && m[1] == tk) {
            tndGlobal = true;
            return {};
        }
        // [T1, T2] of a batch with padding tokens looks like global positions but would be read inside each sequence
        const int64_t t1 = (int64_t)p.t1, t2 = (int64_t)p.t2;
        if (m.size() == 2 && p.cuSeqQ.size() > 1 && m[0] == t1 && m[1] == t2) {
            return Value("atten_mask shape " + Tuple(m) + " is the token counts [T1, T2] of query and key, but the "
                         "sequences end at " + List({tq, tk}) + " (actual_seq_qlen/actual_seq_kvlen; the tokens "
                         "after them are padding): pass atten_mask[:" + std::to_string(tq) + ", :" +
                         std::to_string(tk) + "] for global token positions, or a [R, C] mask with R >= the longest "
                         "query sequence (" + std::to_string(s1) + ") and C >= the longest key sequence (" +
                         std::to_string(s2) + ") other than [T1, T2], read at the positions inside each sequence");
        }
        if (m.size() != 2 || m[0] < s1 || m[1] < s2) {
            return Value("atten_mask shape " + Tuple(m) + " is not supported for input_layout='TND' with sparse_mode=" +
                         std::to_string(mode) + ": pass a 2-D [R, C] mask with R >= the longest query sequence (" +
                         std::to_string(s1) + ") and C >= the longest key sequence (" + std::to_string(s2) +
                         "), read at the positions inside each sequence, or [sum Sq, sum Skv] = " + List({tq, tk}) +
                         " read at the global token positions");
        }
        return {};
    }
    const int64_t target[4] = {(int64_t)p.batch, (int64_t)p.n1, s1, s2};
    bool ok = m.size() <= 4;
    for (size_t i = 0; ok && i < m.size(); ++i) {
        const int64_t have = m[m.size() - 1 - i], want = target[3 - i];
        // the CANN op's kernel view: a column-broadcast mask arrives as rows of kColumnBroadcastWidth bytes
        const bool widened = c.maskIsKernelView && i == 0 && have == kColumnBroadcastWidth;
        ok = have == 1 || have == want || widened;
    }
    if (ok && c.maskIsKernelView && !m.empty() && m.back() == 1 && s2 > 1) {  // the kernels never read [.., 1]
        return Value("atten_mask shape " + Tuple(m) + ": the op's mask input is the kernels' view, whose last "
                     "dimension must equal S2=" + std::to_string(s2) + " or be " +
                     std::to_string(kColumnBroadcastWidth) + " (a column-broadcast mask as rows of equal bytes)");
    }
    if (!ok) {
        return Value("atten_mask shape " + Tuple(m) + " is not broadcastable to [B, N1, S1, S2] = " +
                     List({target[0], target[1], target[2], target[3]}) + " (sparse_mode=" + std::to_string(mode) +
                     "): each of its trailing dimensions must be 1 or equal the target's");
    }
    return {};
}

FaError CompressedShape(const FaTensorArg& m, int64_t mode) {
    const bool prefix = mode == 6;
    const std::vector<int64_t> shape = {prefix ? kPrefixMaskRows : kCompressedMaskSize, kCompressedMaskSize};
    if (m.shape == shape) return {};
    const char* what = prefix ? "the compressed prefix mask (rows 0-2047: torch.triu(ones(2048, 2048), 1); rows "
                                "2048-3071: columns 0-1023 False, 1024-2047 True)"
                              : "the compressed mask torch.triu(torch.ones(2048, 2048), diagonal=1) (True/1 above the "
                                "diagonal)";
    return Value("atten_mask shape " + Tuple(m.shape) + " is not supported for sparse_mode=" + std::to_string(mode) +
                 " (" + kModeNames[mode] + "): pass None or the compressed " + List(shape) + " mask, " + what);
}

// The built-in's band checks (its tiling): the band j in [i - pre, i + next] must reach the matrix.
FaError BandMode0(int64_t pre, int64_t nxt, int64_t s1, int64_t s2) {
    const std::string P = std::to_string(pre), N = std::to_string(nxt);
    if (pre < 0 && nxt < 0) {
        return Value("sparse_mode=0: pre_tokens=" + P + " and next_tokens=" + N +
                     " are both negative: there is no valid data block (at most one may be negative)");
    }
    if (nxt < 0 && !(pre >= -nxt && -nxt < s1)) {
        return Value("sparse_mode=0: next_tokens=" + N + " < 0 needs pre_tokens >= " + std::to_string(-nxt) +
                     " (got " + P + ") and |next_tokens| < S1=" + std::to_string(s1) + " (else no row sees a key)");
    }
    if (pre < 0 && !(nxt >= -pre && -pre < s2)) {
        return Value("sparse_mode=0: pre_tokens=" + P + " < 0 needs next_tokens >= " + std::to_string(-pre) +
                     " (got " + N + ") and |pre_tokens| < S2=" + std::to_string(s2) + " (else no row sees a key)");
    }
    return {};
}

// Modes 7/8: the band sequence (the last / first with Sq > 0) continues a causal split, so its band must keep every
// key on the pre side (pre_tokens >= its Skv) and, for mode 7, end on or left of its diagonal.
FaError SplitModes(int64_t mode, int64_t pre, int64_t nxt, const std::vector<std::pair<int64_t, int64_t>>& seqs) {
    std::vector<size_t> nonempty;
    for (size_t i = 0; i < seqs.size(); ++i) {
        if (seqs[i].first > 0) nonempty.push_back(i);
    }
    if (nonempty.empty()) return {};
    const size_t b = mode == 7 ? nonempty.back() : nonempty.front();
    const int64_t skv = seqs[b].second;
    if (pre < skv) {
        return Value("sparse_mode=" + std::to_string(mode) + ": pre_tokens=" + std::to_string(pre) +
                     " must be >= Skv=" + std::to_string(skv) + " of the " + (mode == 7 ? "last" : "first") +
                     " sequence with queries (batch " + std::to_string(b) +
                     "), whose band [i + (Skv-Sq) - pre_tokens, i + (Skv-Sq) + next_tokens] continues a causal split");
    }
    if (mode == 7 && nxt > 0) {
        return Value("sparse_mode=7: next_tokens=" + std::to_string(nxt) +
                     " must be <= 0 (the last sequence's band ends on or left of its right-down diagonal)");
    }
    return {};
}

FaError Prefix(const FaIntList& prefix, int64_t mode, const std::vector<std::pair<int64_t, int64_t>>& seqs,
               FaProblem& p) {
    if (!prefix.present) {
        return Value("sparse_mode=" + std::to_string(mode) +
                     " (prefix attention) requires prefix: one prefix length per batch");
    }
    if (prefix.values.size() != p.batch) {
        return Value("prefix has " + std::to_string(prefix.values.size()) + " entries but there are B=" +
                     std::to_string(p.batch) + " batches; sparse_mode=" + std::to_string(mode) +
                     " needs one prefix length per batch");
    }
    for (size_t b = 0; b < seqs.size(); ++b) {
        const int64_t x = prefix.values[b], sq = seqs[b].first, skv = seqs[b].second;
        const int64_t lo = sq > skv ? 0 : skv - sq;
        if (sq > 0 && !(lo <= x && x <= skv)) {  // a sequence without queries uses no prefix
            const std::string B = std::to_string(b);
            return Value("prefix[" + B + "]=" + std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " +
                         std::to_string(skv) + "] for batch " + B + " (Sq=" + std::to_string(sq) + ", Skv=" +
                         std::to_string(skv) + ": " +
                         (sq > skv ? "Sq > Skv gives [0, Skv]" : "Sq <= Skv gives [Skv - Sq, Skv]") + ")");
        }
    }
    p.prefix = prefix.values;
    return {};
}

}  // namespace

FaError BandMode4(int64_t pre, int64_t nxt, const FaProblem& p, const std::vector<std::pair<int64_t, int64_t>>& seqs) {
    if (pre + nxt < 0) {
        return Value("sparse_mode=4: pre_tokens=" + std::to_string(pre) + " + next_tokens=" + std::to_string(nxt) +
                     " < 0, so no query row can see any key (the band is empty)");
    }
    bool any = false, visible = false;
    for (const auto& s : seqs) {
        if (s.first <= 0 || s.second <= 0) continue;
        any = true;
        // right-down origin: does some row i < sq see some j < skv in [i+d-pre, i+d+nxt]?
        visible = visible || (pre + nxt >= 0 && pre >= 1 - s.first && nxt >= 1 - s.second);
    }
    if (any && !visible) {
        const std::string where = p.layout == kTND ? "every sequence"
                                                   : "S1=" + std::to_string(p.s1) + ", S2=" + std::to_string(p.s2);
        return Value("sparse_mode=4: the band [i + (S2-S1) - pre_tokens, i + (S2-S1) + next_tokens] with pre_tokens=" +
                     std::to_string(pre) + ", next_tokens=" + std::to_string(nxt) + " misses the attention matrix (" +
                     where + "): no row sees any key");
    }
    return {};
}

FaError Masks(const FaCall& c, FaProblem& p, int64_t s1, int64_t s2, FaProblemInfo& out) {
    const FaAttrs& a = c.attrs;
    const int64_t mode = a.sparseMode;
    const bool tnd = p.layout == kTND;
    if (tnd && mode == 5) {
        return Value("sparse_mode=5 (prefix with an uncompressed mask) is not supported for input_layout='TND' (as in "
                     "the built-in); use sparse_mode=6 with the compressed [3072, 2048] prefix mask");
    }
    if (!tnd && (mode == 7 || mode == 8)) {
        return Value("sparse_mode=" + std::to_string(mode) + " (" + kModeNames[mode] +
                     ") requires input_layout='TND', got " + Repr(out.layoutName));
    }
    const bool hasMask = c.attenMask.present;
    if (hasMask && c.attenMask.dtype != "torch.bool" && c.attenMask.dtype != "torch.uint8") {
        return Type("atten_mask dtype " + c.attenMask.dtype +
                    " is not supported; use torch.bool or torch.uint8 (True/1 = masked out)");
    }
    if ((mode == 0 || mode == 1) && !hasMask) return PrefixUnused(a.prefix, mode);  // full attention
    const auto seqs = SequenceShapes(p);
    FaError e;
    p.denseMask = (mode == 0 || mode == 1 || mode == 5) && hasMask;
    if (p.denseMask) {
        if ((e = DenseShape(c, mode, p, s1, s2, p.maskTndGlobal))) return e;
    } else if (hasMask) {
        if ((e = CompressedShape(c.attenMask, mode))) return e;
        out.compressedMask = true;
    }
    const bool band = mode == 0 || mode == 4 || mode == 7 || mode == 8;
    const int64_t pre = band ? a.preTokens : kInt32Max, nxt = band ? a.nextTokens : kInt32Max;
    if (mode == 0 && (e = BandMode0(pre, nxt, s1, s2))) return e;
    if (mode == 4 && (e = BandMode4(pre, nxt, p, seqs))) return e;
    if ((mode == 7 || mode == 8) && (e = SplitModes(mode, pre, nxt, seqs))) return e;
    if (mode == 5 || mode == 6) {
        if ((e = Prefix(a.prefix, mode, seqs, p))) return e;
    } else if ((e = PrefixUnused(a.prefix, mode))) {
        return e;
    }
    p.sparseMode = (uint32_t)mode;
    p.preTokens = pre;
    p.nextTokens = nxt;
    return {};
}

namespace {

bool Contiguous(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
    int64_t expected = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        if (shape[i] == 1) continue;
        if (strides[i] != expected) return false;
        expected *= shape[i];
    }
    return true;
}

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape) {
    std::vector<int64_t> st(shape.size());
    int64_t s = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        st[i] = s;
        s *= std::max<int64_t>(shape[i], 1);
    }
    return st;
}

}  // namespace

// Nothing is copied unless the last dimension is strided (one copy in
// the mask's own unbroadcast shape), broadcast (rows of kColumnBroadcastWidth bytes) or the caller needs it
// contiguous.
void MaskView(const FaCall& c, FaProblem& p, FaMaskView& v) {
    const FaTensorArg& m = c.attenMask;
    std::vector<int64_t> shape = m.shape, st = m.strides.empty() ? ContiguousStrides(m.shape) : m.strides;
    while (shape.size() < 4) {
        shape.insert(shape.begin(), 1);
        st.insert(st.begin(), 0);
    }
    // stride-0 (expanded) dimensions are broadcasts: read one slice (a 2-D TND mask the NPU op takes whole)
    const bool narrows = !(c.contiguousMask && p.layout == kTND);
    for (uint32_t d = 0; narrows && d < 4; ++d) {
        if (shape[d] > 1 && st[d] == 0) {
            shape[d] = 1;
            v.narrow.push_back(d);
        }
    }
    p.maskColStep = 1;
    if (shape[3] == 1 && p.s2 > 1) {
        shape[3] = kColumnBroadcastWidth;
        v.widen = v.copy = true;
        p.maskColStep = 0;
    } else if ((shape[3] > 1 && st[3] != 1) || (c.contiguousMask && !Contiguous(shape, st))) {
        v.copy = true;
    }
    // the CANN op's input is the view itself: its widened rows are read with column step 0
    if (c.maskIsKernelView && shape[3] == kColumnBroadcastWidth && p.s2 != kColumnBroadcastWidth) p.maskColStep = 0;
    if (v.copy) st = ContiguousStrides(shape);
    int64_t extent = 1;
    uint64_t strides[4];
    for (int d = 0; d < 4; ++d) {
        strides[d] = shape[d] > 1 ? (uint64_t)st[d] : 0;
        extent += (shape[d] - 1) * st[d];
    }
    v.shape = shape;
    v.strideB = p.maskStrideB = strides[0];
    v.strideN = p.maskStrideN = strides[1];
    v.strideS = p.maskStrideS = strides[2];
    v.colStep = p.maskColStep;
    v.extent = (uint64_t)std::max<int64_t>(extent, 0);
    v.perBatch = p.maskPerBatch = shape[0] > 1;
    v.perHead = p.maskPerHead = shape[1] > 1;
}

}  // namespace rules
}  // namespace npu_fa
