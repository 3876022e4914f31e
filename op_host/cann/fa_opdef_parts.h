// What every OpDef of the package (flash_attention_def.cpp, flash_attention_infer_def.cpp) declares the same way: a
// tensor parameter with its dtype combinations in format ND, inputs made contiguous by aclnn, the kernel entry a
// SoC config binds to, and the X-macros that declare an fa_kernel_args.h list as inputs or outputs.
#pragma once
#include <vector>

#include "register/op_def_registry.h"

namespace ops {
namespace fa_opdef {

inline OpParamDef& Param(OpParamDef& def, Option type, const std::vector<ge::DataType>& dtypes) {
    return def.ParamType(type).DataType(dtypes).Format(std::vector<ge::Format>(dtypes.size(), ge::FORMAT_ND));
}

// The kernels read dense row-major tensors: aclnn makes strided inputs contiguous first.
inline void In(OpParamDef& def, Option type, const std::vector<ge::DataType>& dtypes) {
    Param(def, type, dtypes).AutoContiguous();
}

// Atlas A2 (ascend910b) and A3 (ascend910_93), bound to our kernel entry (file and function name differ from the
// op type's snake case).
inline void BindKernel(OpDef& def, gert::OpImplRegisterV2::TilingKernelFunc tiling, const char* entry) {
    def.AICore().SetTiling(tiling);
    for (const char* soc : {"ascend910b", "ascend910_93"}) {
        OpAICoreConfig config(soc);
        config.ExtendCfgInfo("opFile.value", entry).ExtendCfgInfo("opInterface.value", entry);
        def.AICore().AddConfig(soc, config);
    }
}

}  // namespace fa_opdef
}  // namespace ops

// Inputs then outputs, in the kernel entries' argument order (fa_kernel_args.h); `dtypes` names the op's combination
// list for the argument.
#define NPU_FA_OPDEF_INPUT(name, Name, dtypes, presence) ops::fa_opdef::In(this->Input(#name), presence, dtypes);
#define NPU_FA_OPDEF_OUTPUT(name, Name, dtypes, presence) ops::fa_opdef::Param(this->Output(#name), presence, dtypes);
