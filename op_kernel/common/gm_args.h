// GM arguments of the kernels as structs: each entry packs its GM_ADDR parameters once, and Init takes the struct.
// The entries' parameter lists are the operators' ABI (op_host/cann declares the same inputs in the same order).
#ifndef NPU_FA_COMMON_GM_ARGS_H
#define NPU_FA_COMMON_GM_ARGS_H

#include "kernel_operator.h"

namespace npu_fa {

// The inputs every attention kernel reads; the tiling says which optional ones are present.
struct FaGmInputs {
    GM_ADDR query;
    GM_ADDR key;
    GM_ADDR value;
    GM_ADDR attenMask;    // dense mask only (maskMode 1)
    GM_ADDR blockMap;     // dense mask only: the block-map pre-pass's output for this kernel's blocks
    GM_ADDR seqInfo;      // the seq table (tiling/seq_table.h)
    GM_ADDR sink;         // fp32 [N1], sinkMode 1 only
    GM_ADDR alibiSlopes;  // fp32 [N1] or [B, N1], alibiMode 2/3 only
    GM_ADDR pse;          // the outer bias, pseMode 1/2 only
    GM_ADDR dropoutMask;  // a user's keep bits as rows (tile/dropout.h), dropout mode kDropMask only
};

// q, k, v as typed GM tensors (the cube cores' operands).
template <typename T>
struct FaQkvTensors {
    AscendC::GlobalTensor<T> q, k, v;
    __aicore__ inline void Init(const FaGmInputs& in) {
        q.SetGlobalBuffer((__gm__ T*)in.query);
        k.SetGlobalBuffer((__gm__ T*)in.key);
        v.SetGlobalBuffer((__gm__ T*)in.value);
    }
};

struct FaFwdGmArgs {
    FaGmInputs in;
    GM_ADDR attentionOut;
    GM_ADDR softmaxMax;
    GM_ADDR softmaxSum;
    GM_ADDR attentionOutResidual;  // outResidual only: attention_out's rounding error, in the input dtype
    GM_ADDR workspace;    // the user part (past the system workspace)
};

struct FaBwdGmArgs {
    FaGmInputs in;
    GM_ADDR dy;
    GM_ADDR attentionIn;  // the forward's output
    GM_ADDR softmaxMax;
    GM_ADDR softmaxSum;
    GM_ADDR attentionInResidual;  // outResidual only: the forward's attention_out_residual
    GM_ADDR dq;
    GM_ADDR dk;
    GM_ADDR dv;
    GM_ADDR dsinkRows;    // fp32, the statistics' shape, sinkMode 1 only: each query row's share of dsink
    GM_ADDR dpseRows;     // fp32, pseMode 1/2 only (FaBwdVector::StorePseGrad)
    GM_ADDR workspace;    // the user part (past the system workspace)
};

struct FaBlockMapGmArgs {
    GM_ADDR attenMask;
    GM_ADDR seqInfo;
    GM_ADDR blockMap;
};

}  // namespace npu_fa

#endif  // NPU_FA_COMMON_GM_ARGS_H
