// Split-KV combine pass of the inference kernel (vector cores only): merges the splits' partials in the workspace
// into attention_out and softmax_lse; see kernel/infer_combine.h.
#include "kernel_operator.h"
#include "kernel/infer_combine.h"

extern "C" __global__ __aicore__ void flash_attention_infer_combine(GM_ADDR seqInfo, GM_ADDR attentionOut,
                                                                    GM_ADDR softmaxLse, GM_ADDR workspace,
                                                                    GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    REGISTER_TILING_DEFAULT(npu_fa::FaInferTilingData);
    GET_TILING_DATA_WITH_STRUCT(npu_fa::FaInferTilingData, tilingData, tiling);
    const npu_fa::FaInferGmArgs gm{nullptr, nullptr, nullptr,      nullptr,    nullptr, nullptr, nullptr, nullptr,
                                   seqInfo, attentionOut, softmaxLse, AscendC::GetUserWorkspace(workspace)};
    AscendC::TPipe pipe;
    if (tilingData.problem.dtype == npu_fa::kBf16) {
        npu_fa::FaInferCombine<bfloat16_t> pass;
        pass.Init(&tilingData, gm, &pipe);
        pass.Process();
    } else {
        npu_fa::FaInferCombine<half> pass;
        pass.Init(&tilingData, gm, &pipe);
        pass.Process();
    }
}
