// The pse and dropout rules of a call (fa_rules.h).
#include <string>

#include "problem/fa_rules.h"

namespace npu_fa {
namespace rules {
namespace {

FaError StartIndex(const char* name, const FaIntList& x, int64_t& out) {
    if (x.values.empty()) {
        return Value(std::string(name) + "=" + List(x.values) +
                     " must be a non-empty list of ints (only element 0 is used, as the built-in)");
    }
    out = x.values[0];
    if (out < kInt32Min || out > kInt32Max) {
        return Value(std::string(name) + "[0]=" + std::to_string(out) + " must fit in int32");
    }
    return {};
}

FaError OuterPse(const FaCall& c, int64_t pseType, FaLayout layout, const Dims& g, FaProblem& p) {
    const FaTensorArg& pse = c.pse;
    if (pse.dtype != c.query.dtype) {
        return Type("pse dtype " + pse.dtype + " must equal query dtype " + c.query.dtype + " for pse_type=" +
                    std::to_string(pseType) + " (an outer bias tensor)");
    }
    if (layout == kTND) {
        return NotImplemented("an outer pse tensor with input_layout='TND' is not implemented yet in npu_flash_attn "
                              "(ALiBi from slopes, pse_type 2/3, works with TND)");
    }
    const std::vector<int64_t>& s = pse.shape;
    const bool ok = s.size() == 4 && (s[0] == 1 || s[0] == g.b) && s[1] == g.n1 && (s[2] == 1 || s[2] == g.s1) &&
                    s[3] == g.s2;
    if (!ok) {
        return Value("pse shape " + Tuple(s) + " must be [B or 1, N1, S1 or 1, S2] = [" + std::to_string(g.b) +
                     " or 1, " + std::to_string(g.n1) + ", " + std::to_string(g.s1) + " or 1, " + std::to_string(g.s2) +
                     "] for pse_type=" + std::to_string(pseType) +
                     " (the built-in's 1024-row ALiBi compression is not supported: pass pse_type 2/3 with slopes "
                     "instead)");
    }
    const bool perBatch = s[0] == g.b && g.b > 1, perRow = s[2] == g.s1 && g.s1 > 1;
    p.pseMode = pseType == 0 ? kPseAdd : kPseScaled;
    const uint64_t rows = perRow ? (uint64_t)g.s1 : 1;
    p.pseStrideN = rows * (uint64_t)g.s2;
    p.pseStrideB = perBatch ? (uint64_t)g.n1 * rows * (uint64_t)g.s2 : 0;
    p.pseStrideS = perRow ? (uint64_t)g.s2 : 0;
    return {};
}

}  // namespace

// In-kernel ALiBi (pse_type 2/3, slopes in pse) or an outer bias (0/1).
FaError Pse(const FaCall& c, FaLayout layout, int64_t batches, const Dims& g, FaProblem& p) {
    const FaAttrs& a = c.attrs;
    if (a.pseType == 0 || a.pseType == 1) {
        const struct {
            const char* name;
            const FaIntList& x;
        } idx[] = {{"q_start_idx", a.qStartIdx}, {"kv_start_idx", a.kvStartIdx}};
        for (const auto& i : idx) {
            if (i.x.present) {
                return Value(std::string(i.name) + " is only used by the in-kernel ALiBi of pse_type 2 and 3, got "
                             "pse_type=" + std::to_string(a.pseType));
            }
        }
        return c.pse.present ? OuterPse(c, a.pseType, layout, g, p) : FaError{};
    }
    const std::string t = std::to_string(a.pseType);
    if (!c.pse.present) return Value("pse_type=" + t + " needs `pse`: the ALiBi slopes, float32 [N1] or [B, N1]");
    if (c.pse.dtype != "torch.float32") {
        return Type("pse dtype " + c.pse.dtype + " must be torch.float32 for pse_type=" + t + " (the ALiBi slopes)");
    }
    const std::vector<int64_t>& s = c.pse.shape;
    const bool perHead = s.size() == 1 && s[0] == g.n1, perBatch = s.size() == 2 && s[0] == batches && s[1] == g.n1;
    if (!perHead && !perBatch) {
        return Value("pse shape " + Tuple(s) + " must be (" + std::to_string(g.n1) + ",) or (" +
                     std::to_string(batches) + ", " + std::to_string(g.n1) + ") for pse_type=" + t +
                     ": one ALiBi slope per query head (per batch)");
    }
    int64_t q0 = 0, k0 = 0;
    FaError e;
    if (a.qStartIdx.present && (e = StartIndex("q_start_idx", a.qStartIdx, q0))) return e;
    if (a.kvStartIdx.present && (e = StartIndex("kv_start_idx", a.kvStartIdx, k0))) return e;
    p.alibiMode = (uint32_t)a.pseType;
    p.alibiPerBatch = perBatch;
    p.alibiDelta = k0 - q0;
    return {};
}

FaError Dropout(const FaCall& c, const Dims& g, FaProblem& p, FaProblemInfo& out) {
    const FaAttrs& a = c.attrs;
    if (c.dropoutMask.present) {
        if (a.keepProb >= 1.0) {
            return Value("dropout_mask is given but keep_prob=" + Float(a.keepProb) +
                         ": the mask is only applied with keep_prob < 1 (its kept values are scaled by 1 / keep_prob); "
                         "pass keep_prob < 1 or no mask");
        }
        if (c.dropoutMask.dtype != "torch.uint8") {
            return Value("dropout_mask must be uint8 (8 bit-packed elements per byte, 1 = keep), got " +
                         c.dropoutMask.dtype);
        }
        uint64_t elements = 0;
        for (const auto& sq : SequenceShapes(p)) elements += (uint64_t)g.n1 * sq.first * sq.second;
        const uint64_t need = (elements + 7) / 8, have = (uint64_t)Numel(c.dropoutMask.shape);
        if (have < need) {
            return Value("dropout_mask has " + std::to_string(have) + " bytes; the problem's " +
                         std::to_string(elements) + " score elements need at least ceil(" + std::to_string(elements) +
                         " / 8) = " + std::to_string(need));
        }
    }
    if (a.dropoutOrigin.present) {
        const std::vector<int64_t>& o = a.dropoutOrigin.values;
        const std::string what = "dropout_origin=" + List(o);
        if (a.keepProb >= 1.0 || c.dropoutMask.present) {
            return Value(what + " is only used by generated dropout (keep_prob < 1 without dropout_mask)");
        }
        if (o.size() != 4) {
            return Value(what + " must be 4 ints [row, col, head, heads]: the call's keep bits are those of rows " +
                         "row + i, columns col + j and head index b * heads + head + n of a larger problem");
        }
        for (int64_t x : o) {
            if (x < 0 || x > 0xFFFFFFFFll) return Value(what + ": every entry must be in [0, 2^32)");
        }
        if (o[1] % 2 != 0) return Value(what + ": col must be even (keep bits are drawn for column pairs)");
        if (o[3] < g.n1) {
            return Value(what + ": heads must be at least the call's query heads (head_num=" + std::to_string(g.n1) +
                         ")");
        }
        const int64_t seqs = (int64_t)SequenceShapes(p).size();
        if (o[0] + g.s1 > 0xFFFFFFFFll || o[2] + (seqs - 1) * o[3] + g.n1 > 0xFFFFFFFFll) {
            return Value(what + ": the rows (row + S1) and head indices (head + (B - 1) * heads + N1) must stay " +
                         "below 2^32");
        }
        p.dropRow0 = (uint32_t)o[0], p.dropCol0 = (uint32_t)o[1];
        p.dropHeadBase = (uint32_t)o[2], p.dropHeads = (uint32_t)o[3];
    }
    if (a.keepProb >= 1.0) return {};
    p.dropMode = c.dropoutMask.present ? kDropMask : kDropGenerated;
    p.keepProb = a.keepProb;
    p.seed = a.seed;
    p.offset = a.offset;
    if (p.dropMode == kDropMask) {
        const bool inPlace = p.layout != kTND && p.s2 % 8 == 0;
        int64_t maxKv = 0;
        for (const auto& sq : SequenceShapes(p)) maxKv = std::max(maxKv, sq.second);
        p.dropMaskPitch = inPlace ? p.s2 / 8 : (uint32_t)((maxKv + 7) / 8);
        out.dropMaskRepack = !inPlace;
    }
    return {};
}

}  // namespace rules
}  // namespace npu_fa
