// STAND-IN, NOT A REAL HEADER. The CANN op build generates aclnn_flash_attention_npu_fa*.h from the OpDefs in
// op_host/cann/flash_attention_def.cpp; this file declares what those headers are expected to declare (inputs, then
// attributes in declaration order, then outputs; Int -> int64_t, Float -> double, String -> char *, Bool -> bool,
// ListInt -> const aclIntArray *, tensors const aclTensor *, optional ones nullable), only so that
// csrc/npu/npu_adapter.cpp can be syntax-checked without CANN (scripts/check_host.sh passes it with --prelude).
// Passing that check says nothing about the real generated signatures: compare with the generated headers.
#pragma once
#include "aclnn/aclnn_base.h"

#define NPU_FA_ACLNN_STANDIN 1

#ifdef __cplusplus
extern "C" {
#endif

#define NPU_FA_STANDIN_COMMON_ATTRS                                                                              \
    int64_t headNum, char *inputLayout, double scale, double keepProb, int64_t preTokens, int64_t nextTokens,     \
        int64_t innerPrecise, const aclIntArray *prefixOptional, const aclIntArray *actualSeqQlenOptional,        \
        const aclIntArray *actualSeqKvlenOptional, int64_t sparseMode, int64_t seed, int64_t offset,              \
        double softcap, int64_t pseType, const aclIntArray *qStartIdxOptional,                                    \
        const aclIntArray *kvStartIdxOptional, int64_t s1Block, int64_t s2Block

aclnnStatus aclnnFlashAttentionNpuFaGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *attenMaskOptional,
    const aclTensor *blockMapOptional, const aclTensor *seqInfo, const aclTensor *sinkOptional,
    const aclTensor *alibiSlopesOptional, const aclTensor *pseOptional, const aclTensor *dropoutMaskOptional,
    NPU_FA_STANDIN_COMMON_ATTRS, const aclTensor *attentionOutOut, const aclTensor *softmaxMaxOut,
    const aclTensor *softmaxSumOut,
    uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnFlashAttentionNpuFa(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                     aclrtStream stream);

aclnnStatus aclnnFlashAttentionNpuFaBlockMapGetWorkspaceSize(
    const aclTensor *attenMask, const aclTensor *seqInfo, NPU_FA_STANDIN_COMMON_ATTRS, const aclIntArray *queryShape,
    const aclIntArray *keyShape, const aclIntArray *valueShape, int64_t dtype, const aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnFlashAttentionNpuFaBlockMap(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                             aclrtStream stream);

aclnnStatus aclnnFlashAttentionNpuFaGradGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *dy,
    const aclTensor *attentionIn, const aclTensor *softmaxMax, const aclTensor *softmaxSum,
    const aclTensor *attenMaskOptional, const aclTensor *blockMapOptional, const aclTensor *seqInfo,
    const aclTensor *sinkOptional, const aclTensor *alibiSlopesOptional, const aclTensor *pseOptional,
    const aclTensor *dropoutMaskOptional, NPU_FA_STANDIN_COMMON_ATTRS, bool deterministic, int64_t launch, const aclTensor *dqOut, const aclTensor *dkOut,
    const aclTensor *dvOut, const aclTensor *dsinkRowsOut, const aclTensor *dpseRowsOut,
    uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnFlashAttentionNpuFaGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                         aclrtStream stream);

#undef NPU_FA_STANDIN_COMMON_ATTRS

#ifdef __cplusplus
}
#endif
