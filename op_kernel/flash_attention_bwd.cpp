// Backward FlashAttention kernel entry (mix mode, AIC:AIV = 1:2), launched once per pass of the schedule in
// flash_attention_grad_tiling.h; the tiling's pass and kvParts fields say which. See fa_bwd_cube.h and
// fa_bwd_vector.h.
#include "kernel_operator.h"
#include "flash_attention_grad_tiling.h"
#include "fa_bwd_cube.h"
#include "fa_bwd_vector.h"

namespace npu_fa {

template <typename T>
__aicore__ inline void RunFlashAttentionBwd(const FlashAttentionGradTilingData* t, GM_ADDR q, GM_ADDR k, GM_ADDR v,
                                            GM_ADDR dy, GM_ADDR attentionIn, GM_ADDR softmaxMax, GM_ADDR softmaxSum,
                                            GM_ADDR attenMask, GM_ADDR blockMap, GM_ADDR seqInfo, GM_ADDR sink,
                                            GM_ADDR alibiSlopes, GM_ADDR pse, GM_ADDR dropoutMask, GM_ADDR dq, GM_ADDR dk,
                                            GM_ADDR dv, GM_ADDR dsinkRows, GM_ADDR dpseRows, GM_ADDR workspace) {
    AscendC::TPipe pipe;
    if ASCEND_IS_AIC {
        FaBwdCube<T> cube;
        cube.Init(t, q, k, v, dy, blockMap, seqInfo, workspace, &pipe);
        cube.Process();
    }
    if ASCEND_IS_AIV {
        FaBwdVector<T> vec;
        vec.Init(t, dy, attentionIn, softmaxMax, softmaxSum, attenMask, blockMap, seqInfo, sink, alibiSlopes, pse,
                 dropoutMask, dq, dk, dv, dsinkRows, dpseRows, workspace, &pipe);
        vec.Process();
    }
}

}  // namespace npu_fa

// attenMask and blockMap are read only with a dense mask (tiling maskMode 1): the block map is the forward's
// pre-pass (flash_attention_block_map.cpp) run for this kernel's blocks. sink (fp32 [N1]) and dsinkRows (fp32, the
// statistics' shape) only with sinks (tiling sinkMode 1): the dQ pass writes each query row's share of dsink.
// alibiSlopes (fp32 [N1] or [B, N1]) only with in-kernel ALiBi (alibiMode 2/3), pse (the outer bias) and
// dpseRows (fp32, FaBwdVector::StorePseGrad) only with pseMode 1/2; dropoutMask (the user's keep bits as rows,
// fa_dropout.h) only with dropout mode kDropMask.
extern "C" __global__ __aicore__ void flash_attention_bwd(GM_ADDR query, GM_ADDR key, GM_ADDR value, GM_ADDR dy,
                                                          GM_ADDR attentionIn, GM_ADDR softmaxMax, GM_ADDR softmaxSum,
                                                          GM_ADDR attenMask, GM_ADDR blockMap, GM_ADDR seqInfo,
                                                          GM_ADDR sink, GM_ADDR alibiSlopes, GM_ADDR pse, GM_ADDR dropoutMask,
                                                          GM_ADDR dq, GM_ADDR dk, GM_ADDR dv, GM_ADDR dsinkRows, GM_ADDR dpseRows,
                                                          GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    REGISTER_TILING_DEFAULT(npu_fa::FlashAttentionGradTilingData);  // a standard-C++ tiling struct
    GET_TILING_DATA_WITH_STRUCT(npu_fa::FlashAttentionGradTilingData, tilingData, tiling);
    GM_ADDR userWorkspace = AscendC::GetUserWorkspace(workspace);  // past the system workspace on the NPU
    if (tilingData.dtype == npu_fa::kBf16) {
        npu_fa::RunFlashAttentionBwd<bfloat16_t>(&tilingData, query, key, value, dy, attentionIn, softmaxMax, softmaxSum,
                                                 attenMask, blockMap, seqInfo, sink, alibiSlopes, pse, dropoutMask, dq, dk,
                                                 dv, dsinkRows, dpseRows, userWorkspace);
    } else {
        npu_fa::RunFlashAttentionBwd<half>(&tilingData, query, key, value, dy, attentionIn, softmaxMax, softmaxSum,
                                           attenMask, blockMap, seqInfo, sink, alibiSlopes, pse, dropoutMask, dq, dk, dv,
                                           dsinkRows, dpseRows, userWorkspace);
    }
}
