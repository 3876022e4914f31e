// Forward FlashAttention kernel entry (mix mode, AIC:AIV = 1:2). The AIC computes S = Q*K^T and O_part = P*V,
// the two AIVs run the online softmax on half of each query block each; see fa_cube.h and fa_vector.h.
#include "kernel_operator.h"
#include "flash_attention_tiling.h"
#include "fa_cube.h"
#include "fa_vector.h"

namespace npu_fa {

template <typename T>
__aicore__ inline void RunFlashAttentionFwd(const FlashAttentionTilingData* t, GM_ADDR q, GM_ADDR k, GM_ADDR v,
                                            GM_ADDR attenMask, GM_ADDR blockMap, GM_ADDR seqInfo, GM_ADDR sink,
                                            GM_ADDR alibiSlopes, GM_ADDR pse, GM_ADDR dropoutMask, GM_ADDR out, GM_ADDR softmaxMax, GM_ADDR softmaxSum, GM_ADDR workspace) {
    AscendC::TPipe pipe;
    if ASCEND_IS_AIC {
        FaCube<T> cube;
        cube.Init(t, q, k, v, blockMap, seqInfo, workspace, &pipe);
        cube.Process();
    }
    if ASCEND_IS_AIV {
        FaVector<T> vec;
        vec.Init(t, attenMask, blockMap, seqInfo, sink, alibiSlopes, pse, dropoutMask, out, softmaxMax, softmaxSum, workspace, &pipe);
        vec.Process();
    }
}

}  // namespace npu_fa

// attenMask and blockMap are read only with a dense mask (tiling maskMode 1); blockMap is the pre-pass's output
// (flash_attention_block_map.cpp); sink only with tiling sinkMode 1, alibiSlopes only with alibiMode 2/3, pse (the outer bias) only with pseMode 1/2, dropoutMask (a user's keep bits as rows, fa_dropout.h) only with
// dropout mode kDropMask.
extern "C" __global__ __aicore__ void flash_attention_fwd(GM_ADDR query, GM_ADDR key, GM_ADDR value, GM_ADDR attenMask,
                                                          GM_ADDR blockMap, GM_ADDR seqInfo, GM_ADDR sink,
                                                          GM_ADDR alibiSlopes, GM_ADDR pse, GM_ADDR dropoutMask, GM_ADDR attentionOut, GM_ADDR softmaxMax, GM_ADDR softmaxSum,
                                                          GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    REGISTER_TILING_DEFAULT(npu_fa::FlashAttentionTilingData);  // a standard-C++ tiling struct (no TilingData macros)
    GET_TILING_DATA_WITH_STRUCT(npu_fa::FlashAttentionTilingData, tilingData, tiling);
    GM_ADDR userWorkspace = AscendC::GetUserWorkspace(workspace);  // past the system workspace on the NPU
    if (tilingData.dtype == npu_fa::kBf16) {
        npu_fa::RunFlashAttentionFwd<bfloat16_t>(&tilingData, query, key, value, attenMask, blockMap, seqInfo, sink,
                                                 alibiSlopes, pse, dropoutMask, attentionOut, softmaxMax, softmaxSum, userWorkspace);
    } else {
        npu_fa::RunFlashAttentionFwd<half>(&tilingData, query, key, value, attenMask, blockMap, seqInfo, sink,
                                           alibiSlopes, pse, dropoutMask, attentionOut, softmaxMax, softmaxSum, userWorkspace);
    }
}
