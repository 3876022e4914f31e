// The one definition of an inference problem: from a call (fa_infer_call.h) to the kernels' FaInferProblem and the
// output shapes. Every rule of the inference op lives here with the message that names the argument (torch_npu's
// spelling), the value and the rule; the twin binding (and, through the extension, the Python layer) call it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "flash_attention_infer_tiling_host.h"
#include "problem/fa_infer_call.h"
#include "problem/fa_problem_build.h"

namespace npu_fa {

struct FaInferProblemInfo {
    FaInferProblem p;
    std::string layoutName;
    bool paged = false;
    uint32_t numBlocks = 0;                 // a paged cache's blocks
    std::vector<int64_t> outShape, lseShape;
    bool compressedMask = false;            // sparse_mode 2-4 got the compressed mask: the caller checks its content
    FaMaskView mask;                        // p.denseMask only: how the kernel reads atten_mask in place
};

// Checks every rule of the call and fills `out`; the error names the argument, the value and the rule.
FaError BuildInferProblem(const FaInferCall& call, FaInferProblemInfo& out);

}  // namespace npu_fa
