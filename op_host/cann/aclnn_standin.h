// STAND-IN, NOT A REAL HEADER. The CANN op build generates aclnn_flash_attention_npu_fa*.h from the OpDefs in
// op_host/cann/flash_attention_def.cpp and flash_attention_infer_def.cpp; this file declares what those headers are
// expected to declare (inputs, then attributes in declaration order, then outputs; Int -> int64_t, Float -> double,
// String -> char *, Bool -> bool, ListInt -> const aclIntArray *, tensors const aclTensor *, optional ones
// nullable), only so that csrc/npu/npu_adapter.cpp and npu_infer_adapter.cpp can be syntax-checked without CANN
// (scripts/check_host.sh passes it with --prelude).
// Passing that check says nothing about the real generated signatures: compare with the generated headers.
#pragma once
#include "aclnn/aclnn_base.h"
#include "cann/fa_infer_op_args.h"
#include "fa_kernel_args.h"

#define NPU_FA_ACLNN_STANDIN 1

#ifdef __cplusplus
extern "C" {
#endif

#define NPU_FA_STANDIN_COMMON_ATTRS                                                                              \
    int64_t headNum, char *inputLayout, double scale, double keepProb, int64_t preTokens, int64_t nextTokens,     \
        int64_t innerPrecise, const aclIntArray *prefixOptional, const aclIntArray *actualSeqQlenOptional,        \
        const aclIntArray *actualSeqKvlenOptional, int64_t sparseMode, int64_t seed, int64_t offset,              \
        double softcap, int64_t pseType, const aclIntArray *qStartIdxOptional,                                    \
        const aclIntArray *kvStartIdxOptional, const aclIntArray *dropoutOriginOptional, int64_t s1Block,        \
        int64_t s2Block

// Inputs (optional ones nullable) and outputs in fa_kernel_args.h's order.
#define NPU_FA_STANDIN_TENSOR(name, Name, dtypes, presence) const aclTensor *name,

aclnnStatus aclnnFlashAttentionNpuFaGetWorkspaceSize(
    NPU_FA_FWD_INPUTS(NPU_FA_STANDIN_TENSOR) NPU_FA_STANDIN_COMMON_ATTRS, bool outputResidual,
    NPU_FA_FWD_OUTPUTS(NPU_FA_STANDIN_TENSOR) uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnFlashAttentionNpuFa(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                     aclrtStream stream);

aclnnStatus aclnnFlashAttentionNpuFaBlockMapGetWorkspaceSize(
    NPU_FA_MAP_INPUTS(NPU_FA_STANDIN_TENSOR) NPU_FA_STANDIN_COMMON_ATTRS, const aclIntArray *queryShape,
    const aclIntArray *keyShape, const aclIntArray *valueShape, int64_t dtype,
    NPU_FA_MAP_OUTPUTS(NPU_FA_STANDIN_TENSOR) uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnFlashAttentionNpuFaBlockMap(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                             aclrtStream stream);

aclnnStatus aclnnFlashAttentionNpuFaGradGetWorkspaceSize(
    NPU_FA_GRAD_INPUTS(NPU_FA_STANDIN_TENSOR) NPU_FA_STANDIN_COMMON_ATTRS, bool deterministic, bool partialKeys, int64_t launch,
    NPU_FA_GRAD_OUTPUTS(NPU_FA_STANDIN_TENSOR) uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnFlashAttentionNpuFaGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                         aclrtStream stream);

// The inference op and its combine pass (op_host/cann/flash_attention_infer_def.cpp).
#define NPU_FA_STANDIN_ANTIQUANT_ATTRS(name, Name, member) \
    const aclIntArray *member##ShapeOptional, int64_t member##Dtype,
#define NPU_FA_STANDIN_INFER_ATTRS                                                                                \
    int64_t numHeads, double scale, int64_t preTokens, int64_t nextTokens, char *inputLayout,                     \
        int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise, int64_t blockSize, bool softmaxLseFlag, \
        const aclIntArray *actualSeqLengthsOptional, const aclIntArray *actualSeqLengthsKvOptional,               \
        int64_t windowLeft, int64_t windowRight, double softcap, int64_t antiquantMode, int64_t keyAntiquantMode,   \
        int64_t valueAntiquantMode, NPU_FA_INFER_ANTIQUANT_TENSORS(NPU_FA_STANDIN_ANTIQUANT_ATTRS)

aclnnStatus aclnnFlashAttentionNpuFaInferGetWorkspaceSize(
    NPU_FA_INFER_INPUTS(NPU_FA_STANDIN_TENSOR) NPU_FA_STANDIN_INFER_ATTRS
    NPU_FA_INFER_OUTPUTS(NPU_FA_STANDIN_TENSOR) uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnFlashAttentionNpuFaInfer(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                          aclrtStream stream);

aclnnStatus aclnnFlashAttentionNpuFaInferCombineGetWorkspaceSize(
    NPU_FA_INFER_COMBINE_INPUTS(NPU_FA_STANDIN_TENSOR) NPU_FA_STANDIN_INFER_ATTRS const aclIntArray *queryShape,
    const aclIntArray *keyShape, const aclIntArray *valueShape, const aclIntArray *blockTableShapeOptional,
    const aclIntArray *attenMaskShapeOptional, int64_t dtype, const aclIntArray *pseShiftShapeOptional,
    const aclIntArray *alibiSlopesShapeOptional, int64_t kvDtype,
    NPU_FA_INFER_OUTPUTS(NPU_FA_STANDIN_TENSOR) uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnFlashAttentionNpuFaInferCombine(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                 aclrtStream stream);

#undef NPU_FA_STANDIN_INFER_ATTRS
#undef NPU_FA_STANDIN_ANTIQUANT_ATTRS
#undef NPU_FA_STANDIN_TENSOR
#undef NPU_FA_STANDIN_COMMON_ATTRS

#ifdef __cplusplus
}
#endif
