// Inference FlashAttention kernel entry (mix mode, AIC:AIV = 1:2): the query heads of a KV group packed as the rows
// of one cube tile, K/V read through the block table, split-KV partials for the combine pass; see
// kernel/infer_common.h, kernel/infer_cube.h and kernel/infer_vector.h.
#include "kernel_operator.h"
#include "kernel/infer_cube.h"
#include "kernel/infer_vector.h"
#include "common/mix_kernel.h"

// blockTable is read only for a paged cache, attenMask only with a dense mask, pseShift and alibiSlopes only with
// the tiling's pseMode / alibiMode, antiquant only over an int8 cache; softmaxLse only with the tiling's lseFlag.
extern "C" __global__ __aicore__ void flash_attention_infer(GM_ADDR query, GM_ADDR key, GM_ADDR value,
                                                            GM_ADDR blockTable, GM_ADDR attenMask, GM_ADDR pseShift,
                                                            GM_ADDR alibiSlopes, GM_ADDR antiquant, GM_ADDR seqInfo,
                                                            GM_ADDR attentionOut, GM_ADDR softmaxLse, GM_ADDR workspace,
                                                            GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    REGISTER_TILING_DEFAULT(npu_fa::FaInferTilingData);
    GET_TILING_DATA_WITH_STRUCT(npu_fa::FaInferTilingData, tilingData, tiling);
    const npu_fa::FaInferGmArgs gm{query,       key,       value,   blockTable,   attenMask,
                                   pseShift,    alibiSlopes, antiquant, seqInfo, attentionOut, softmaxLse,
                                   AscendC::GetUserWorkspace(workspace)};
    npu_fa::RunMixKernel<npu_fa::FaInferCube, npu_fa::FaInferVector>(&tilingData, gm);
}
