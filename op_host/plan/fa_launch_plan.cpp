// The launch plans of fa_launch_plan.h.
#include "plan/fa_launch_plan.h"

namespace npu_fa {

std::string PlanForward(const FaProblem& p, const ChipSpec& chip, FaForwardPlan& plan) {
    plan = FaForwardPlan{};
    const std::string err = ComputeFlashAttentionTiling(p, chip, plan.launch);
    if (!err.empty()) return err;
    if (plan.launch.seqInfo.empty()) plan.launch.seqInfo.assign(kSeqInfoFields, 0);
    if (p.denseMask) plan.map = {plan.launch.data, plan.launch.seqInfo, plan.launch.mapBytes};
    return "";
}

std::string PlanBackward(const FaProblem& p, const ChipSpec& chip, FaBackwardPlan& plan) {
    plan = FaBackwardPlan{};
    const std::string err = ComputeFlashAttentionGradTiling(p, chip, plan.launches);
    if (!err.empty()) return err;
    FaGradTilingOut& t = plan.launches;
    if (t.seqInfo.empty()) t.seqInfo.assign(kBwdSeqFields, 0);
    if (p.denseMask) plan.map = {t.mapTiling, t.mapSeqInfo, t.mapBytes};
    return "";
}

std::string PlanInfer(const FaInferProblem& p, const ChipSpec& chip, FaInferPlan& plan) {
    plan = FaInferPlan{};
    const std::string err = ComputeInferTiling(p, chip, plan.launch);
    if (!err.empty()) return err;
    plan.combine = plan.launch.data.splits > 1;
    return "";
}

bool InferHasWork(const FaInferProblem& p) {
    for (size_t b = 0; b < p.qLen.size(); ++b) {
        if (p.qLen[b] > 0 && p.kvLen[b] > 0) return true;
    }
    return false;
}

}  // namespace npu_fa
