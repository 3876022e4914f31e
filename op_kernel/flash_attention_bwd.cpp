// Backward FlashAttention kernel entry (mix mode, AIC:AIV = 1:2), launched once per pass of the schedule in
// tiling/bwd_tiling.h; the tiling's pass and kvParts fields say which. See kernel/bwd_cube.h and
// kernel/bwd_vector.h.
#include "kernel_operator.h"
#include "kernel/bwd_cube.h"
#include "kernel/bwd_vector.h"
#include "common/mix_kernel.h"

// The optional inputs and outputs are used only when the tiling asks for them (common/gm_args.h); blockMap is the
// forward's pre-pass (flash_attention_block_map.cpp) run for this kernel's blocks.
extern "C" __global__ __aicore__ void flash_attention_bwd(GM_ADDR query, GM_ADDR key, GM_ADDR value, GM_ADDR dy,
                                                          GM_ADDR attentionIn, GM_ADDR softmaxMax, GM_ADDR softmaxSum,
                                                          GM_ADDR attenMask, GM_ADDR blockMap, GM_ADDR seqInfo,
                                                          GM_ADDR sink, GM_ADDR alibiSlopes, GM_ADDR pse, GM_ADDR dropoutMask,
                                                          GM_ADDR attentionInResidual, GM_ADDR dq, GM_ADDR dk, GM_ADDR dv, GM_ADDR dsinkRows, GM_ADDR dpseRows,
                                                          GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    REGISTER_TILING_DEFAULT(npu_fa::FlashAttentionGradTilingData);  // a standard-C++ tiling struct
    GET_TILING_DATA_WITH_STRUCT(npu_fa::FlashAttentionGradTilingData, tilingData, tiling);
    // The user workspace starts past the system workspace on the NPU.
    const npu_fa::FaBwdGmArgs gm{{query, key, value, attenMask, blockMap, seqInfo, sink, alibiSlopes, pse, dropoutMask},
                                 dy, attentionIn, softmaxMax, softmaxSum, attentionInResidual, dq, dk, dv, dsinkRows,
                                 dpseRows,
                                 AscendC::GetUserWorkspace(workspace)};
    npu_fa::RunMixKernel<npu_fa::FaBwdCube, npu_fa::FaBwdVector>(&tilingData, gm);
}
