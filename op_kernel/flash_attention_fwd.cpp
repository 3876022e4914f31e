// Forward FlashAttention kernel entry (mix mode, AIC:AIV = 1:2). The AIC computes S = Q*K^T and O_part = P*V,
// the two AIVs run the online softmax on half of each query block each; see kernel/fwd_cube.h and
// kernel/fwd_vector.h.
#include "kernel_operator.h"
#include "kernel/fwd_cube.h"
#include "kernel/fwd_vector.h"
#include "common/mix_kernel.h"

// The optional inputs are read only when the tiling asks for them (common/gm_args.h); blockMap is the pre-pass's
// output (flash_attention_block_map.cpp).
extern "C" __global__ __aicore__ void flash_attention_fwd(GM_ADDR query, GM_ADDR key, GM_ADDR value, GM_ADDR attenMask,
                                                          GM_ADDR blockMap, GM_ADDR seqInfo, GM_ADDR sink,
                                                          GM_ADDR alibiSlopes, GM_ADDR pse, GM_ADDR dropoutMask,
                                                          GM_ADDR attentionOut, GM_ADDR softmaxMax, GM_ADDR softmaxSum,
                                                          GM_ADDR attentionOutResidual, GM_ADDR workspace,
                                                          GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    REGISTER_TILING_DEFAULT(npu_fa::FlashAttentionTilingData);  // a standard-C++ tiling struct (no TilingData macros)
    GET_TILING_DATA_WITH_STRUCT(npu_fa::FlashAttentionTilingData, tilingData, tiling);
    // The user workspace starts past the system workspace on the NPU.
    const npu_fa::FaFwdGmArgs gm{{query, key, value, attenMask, blockMap, seqInfo, sink, alibiSlopes, pse, dropoutMask},
                                 attentionOut, softmaxMax, softmaxSum, attentionOutResidual,
                                 AscendC::GetUserWorkspace(workspace)};
    npu_fa::RunMixKernel<npu_fa::FaFwdCube, npu_fa::FaFwdVector>(&tilingData, gm);
}
