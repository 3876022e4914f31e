// Cross-core flags (CrossCoreSetFlag mode 2: an AIC and its two AIVs), one table for every kernel. Each signal
// rotates over kFlagRing IDs by the core's step (or task) number, as the built-in does, so a signal may have
// kFlagRing steps outstanding (the backward's step signals: kBwdFlagRing). IDs 0-10 are ours; 11-15 stay free: 11-14 belong to SyncAll, 15 to CANN's kernel
// wrapper (its workspace clearing signals the AIVs with NotifyEvent<PIPE_MTE3>(15)).
#ifndef NPU_FA_COMMON_FLAGS_H
#define NPU_FA_COMMON_FLAGS_H

#include "kernel_operator.h"

namespace npu_fa {

constexpr uint16_t kFlagRing = 3;
constexpr uint16_t kFlagIdEnd = 11;  // first reserved ID

// Forward (kernel/fwd_*.h), IDs [base, base + kFlagRing).
constexpr uint16_t kFwdFlagScores = 0;   // AIC -> AIV: S of a step is in the workspace
constexpr uint16_t kFwdFlagOutput = 3;   // AIC -> AIV: P*V of a step is in the workspace
constexpr uint16_t kFwdFlagProbs = 6;    // AIV -> AIC: both halves of P are in the workspace
// Backward (kernel/bwd_*.h): the step signals rotate over kBwdFlagRing IDs (up to kBwdSlots steps in flight),
// the task signals over kFlagRing.
constexpr uint16_t kBwdFlagRing = 4;
constexpr uint16_t kBwdFlagScores = 0;   // AIC -> AIV: S and dP of a step are in the workspace
constexpr uint16_t kBwdFlagProbs = 4;    // AIV -> AIC: both halves of P and dS are in the workspace
constexpr uint16_t kBwdFlagSums = 8;     // AIC -> AIV: a task's sums are in the workspace (rotates by task)
// AIV -> AIC: a task's sums are read and their workspace may be rewritten; only the stored-tile dK/dV pass needs it
// (elsewhere the next task's P/dS hand-over orders it) and that pass hands over no P/dS: their IDs.
constexpr uint16_t kBwdFlagSumsRead = kBwdFlagProbs;
static_assert(kBwdFlagScores + kBwdFlagRing <= kBwdFlagProbs && kBwdFlagProbs + kBwdFlagRing <= kBwdFlagSums &&
                  kBwdFlagSums + kFlagRing <= kFlagIdEnd && kFlagRing <= kBwdFlagRing,
              "backward flags overlap or reach the reserved IDs 11-15");
// Inference over an int8 cache (kernel/infer_int8.h), one ID (a counter: the AIVs run at most a task ahead):
// AIV -> AIC, both halves of a task's int8 split query rows are in the workspace.
constexpr uint16_t kInferFlagKv = 9;
static_assert(kInferFlagKv >= kFwdFlagProbs + kFlagRing && kInferFlagKv < kFlagIdEnd,
              "the inference K/V flag overlaps the forward's or reaches the reserved IDs");

// True when the signals' ID ranges lie below kFlagIdEnd and do not overlap.
constexpr bool FlagRangesDisjoint(uint16_t a, uint16_t b, uint16_t c) {
    return a + kFlagRing <= kFlagIdEnd && b + kFlagRing <= kFlagIdEnd && c + kFlagRing <= kFlagIdEnd &&
           (a + kFlagRing <= b || b + kFlagRing <= a) && (a + kFlagRing <= c || c + kFlagRing <= a) &&
           (b + kFlagRing <= c || c + kFlagRing <= b);
}
static_assert(FlagRangesDisjoint(kFwdFlagScores, kFwdFlagOutput, kFwdFlagProbs),
              "forward flags overlap or reach the reserved IDs 11-15");

// The flag ID of `signal` (one of the bases above) for the core's step (or task) number `n`.
__aicore__ inline uint16_t FlagOf(uint16_t signal, uint32_t n) { return (uint16_t)(signal + n % kFlagRing); }
// The backward's step signals (kBwdFlagScores, kBwdFlagProbs) for the core's step number `step`.
__aicore__ inline uint16_t BwdStepFlag(uint16_t signal, uint32_t step) {
    return (uint16_t)(signal + step % kBwdFlagRing);
}

}  // namespace npu_fa

#endif  // NPU_FA_COMMON_FLAGS_H
