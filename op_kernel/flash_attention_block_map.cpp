// Block-map pre-pass entry (vector cores only): kernel/block_map.h classifies a dense mask's tiles for the forward
// (and, run with its blocks, the backward).
#include "kernel_operator.h"
#include "kernel/block_map.h"

extern "C" __global__ __aicore__ void flash_attention_block_map(GM_ADDR attenMask, GM_ADDR seqInfo, GM_ADDR blockMap,
                                                                GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    REGISTER_TILING_DEFAULT(npu_fa::FlashAttentionTilingData);
    GET_TILING_DATA_WITH_STRUCT(npu_fa::FlashAttentionTilingData, tilingData, tiling);
    (void)workspace;
    AscendC::TPipe pipe;
    npu_fa::FaBlockMapPass pass;
    pass.Init(&tilingData, npu_fa::FaBlockMapGmArgs{attenMask, seqInfo, blockMap}, &pipe);
    pass.Process();
}
