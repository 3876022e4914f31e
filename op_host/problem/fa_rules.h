// The problem module's rule groups (internal to op_host/problem): fa_problem_build.cpp checks the call in the op's
// order and calls the feature rules (fa_feature_rules.cpp: pse, dropout) and the mask rules (fa_mask_rules.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "problem/fa_problem_build.h"
#include "problem/fa_text.h"

namespace npu_fa {
namespace rules {

using text::Float;
using text::List;
using text::Repr;
using text::Tuple;

inline FaError Value(std::string m) { return {FaErrorKind::kValue, std::move(m)}; }
inline FaError Type(std::string m) { return {FaErrorKind::kType, std::move(m)}; }
inline FaError NotImplemented(std::string m) { return {FaErrorKind::kNotImplemented, std::move(m)}; }

// The geometry the shapes give (B, N1, N2, S1, S2, D, Dv; TND: T1, T2), the op's rank and consistency rules.
struct Dims {
    int64_t b = 0, n1 = 0, n2 = 0, s1 = 0, s2 = 0, d = 0, dv = 0, t1 = 0, t2 = 0;
};

// Sequence lengths of a cumulative list.
std::vector<int64_t> Lengths(const std::vector<int64_t>& cu);
// (Sq, Skv) of every sequence: the TND lengths, else B times (S1, S2).
std::vector<std::pair<int64_t, int64_t>> SequenceShapes(const FaProblem& p);
unsigned __int128 Numel(const std::vector<int64_t>& shape);

// What the pse arguments ask for (`batches`: the B the slopes may have: TND the lists' length).
FaError Pse(const FaCall& c, FaLayout layout, int64_t batches, const Dims& g, FaProblem& p);
// keep_prob < 1 turns dropout on: the kernels' generator keyed by (seed, offset), or the user's mask.
FaError Dropout(const FaCall& c, const Dims& g, FaProblem& p, FaProblemInfo& out);
// The sparse-mode / mask / prefix / pre-next rules, and which mode the kernels apply (s1/s2: the longest sequences).
FaError Masks(const FaCall& c, FaProblem& p, int64_t s1, int64_t s2, FaProblemInfo& out);
// sparse_mode 4's band [i + (Skv-Sq) - pre, i + (Skv-Sq) + next] must be nonempty and reach the matrix of some
// sequence (Sq, Skv) of `seqs` (p: the layout and S1/S2 its message names).
FaError BandMode4(int64_t pre, int64_t nxt, const FaProblem& p, const std::vector<std::pair<int64_t, int64_t>>& seqs);
// The kernels' view of a validated dense mask.
void MaskView(const FaCall& c, FaProblem& p, FaMaskView& v);

}  // namespace rules
}  // namespace npu_fa
