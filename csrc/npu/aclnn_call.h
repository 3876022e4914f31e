// What both adapters (npu_adapter.cpp: the training op; npu_infer_adapter.cpp: the inference op) share around an
// aclnn call: the acl objects of one call, the two-phase call on the current stream, and a torch tensor or list as
// the problem module's argument (op_host/problem/fa_call.h), its refusal as the Python exception it names.
#pragma once
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "torch_npu/csrc/core/npu/NPUStream.h"
#include "op_plugin/utils/op_api_common.h"

#include "problem/fa_problem_build.h"

// An operator's tensors by name (a struct of NPU_FA_TENSOR_FIELD over its fa_kernel_args.h lists), passed to aclnn
// in that order through `acl` (absent optional ones undefined: nullptr).
#define NPU_FA_TENSOR_FIELD(name, Name, dtypes, presence) at::Tensor name;
#define NPU_FA_ACL_TENSOR(name, Name, dtypes, presence) acl.T(args.name),

namespace npu_fa_adapter {

// acl objects of one aclnn call, released when the call has been enqueued.
class AclArgs {
public:
    ~AclArgs() {
        for (aclTensor* t : tensors_) Release(t);
        for (aclIntArray* a : arrays_) Release(a);
    }
    aclTensor* T(const at::Tensor& t) {
        if (!t.defined()) return nullptr;
        tensors_.push_back(ConvertType(t));
        return tensors_.back();
    }
    aclIntArray* A(at::IntArrayRef v) {
        arrays_.push_back(ConvertType(v));
        return arrays_.back();
    }

private:
    std::vector<aclTensor*> tensors_;
    std::vector<aclIntArray*> arrays_;
};

// One operator call: phase 1 sizes the workspace, phase 2 enqueues on the current stream. `workspace` grows when
// allowed; else (a later backward launch) it must already be large enough, because it carries state.
template <typename Phase1, typename Phase2>
inline void RunAclnn(const char* op, Phase1 phase1, Phase2 phase2, at::Tensor& workspace, const at::Tensor& like,
                     bool mayGrow) {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    aclnnStatus st = phase1(&size, &executor);
    TORCH_CHECK(st == 0, op, "GetWorkspaceSize failed with aclnn status ", st, " (see the CANN log)");
    const int64_t have = workspace.defined() ? workspace.numel() : 0;
    if ((int64_t)size > have) {
        TORCH_CHECK(mayGrow, op, ": launch asks for ", size, " workspace bytes, the shared workspace has ", have);
        workspace = at::empty({(int64_t)size}, like.options().dtype(at::kByte));
    }
    st = phase2(size > 0 ? workspace.data_ptr() : nullptr, size, executor, c10_npu::getCurrentNPUStream().stream());
    TORCH_CHECK(st == 0, op, " failed with aclnn status ", st, " (see the CANN log)");
}

inline std::vector<int64_t> Vec(at::OptionalIntArrayRef v) { return v.has_value() ? v->vec() : std::vector<int64_t>{}; }

inline npu_fa::FaIntList Ints(at::OptionalIntArrayRef v) {
    npu_fa::FaIntList l;
    l.present = v.has_value();
    l.values = Vec(v);
    return l;
}

// torch's dtype names, as the problem module's rules spell them.
inline std::string DtypeName(at::ScalarType t) {
    switch (t) {
        case at::kHalf: return "torch.float16";
        case at::kBFloat16: return "torch.bfloat16";
        case at::kFloat: return "torch.float32";
        case at::kDouble: return "torch.float64";
        case at::kByte: return "torch.uint8";
        case at::kChar: return "torch.int8";
        case at::kInt: return "torch.int32";
        case at::kBool: return "torch.bool";
        default: return std::string("torch.") + c10::toString(t);
    }
}

inline npu_fa::FaTensorArg Arg(const c10::optional<at::Tensor>& t) {
    npu_fa::FaTensorArg a;
    if (!t.has_value() || !t->defined()) return a;
    a.present = true;
    a.shape = t->sizes().vec();
    a.strides = t->strides().vec();
    a.dtype = DtypeName(t->scalar_type());
    return a;
}

// The problem module's refusal as the Python exception it names (c10::ValueError / TypeError / NotImplementedError).
inline void Require(const npu_fa::FaError& e) {
    TORCH_CHECK_VALUE(e.kind != npu_fa::FaErrorKind::kValue, e.message);
    TORCH_CHECK_TYPE(e.kind != npu_fa::FaErrorKind::kType, e.message);
    TORCH_CHECK_NOT_IMPLEMENTED(e.kind != npu_fa::FaErrorKind::kNotImplemented, e.message);
}

}  // namespace npu_fa_adapter
