// The one definition of a FlashAttention problem: from a call (fa_call.h: shapes, dtypes, optional inputs,
// attributes) to the kernels' FaProblem, the output shapes, the dense mask's in-place view and what each backend does
// around the launch. Every rule of the op lives here once, with the message that names the argument, the value and
// the rule; the twin bindings, the torch_npu adapter, the CANN TilingFunc/InferShape and (through the extension) the
// Python layer call it.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flash_attention_tiling_host.h"
#include "problem/fa_call.h"

namespace npu_fa {

// A column-broadcast mask ([..., S1, 1]) travels as rows of this many equal bytes, at least every s2 block: the
// kernels read it with column step 0, so it costs 128 bytes per row instead of S2.
constexpr int64_t kColumnBroadcastWidth = 128;
constexpr int64_t kMaxHeadDim = 512;
// Largest problem accepted: what the largest supported chip's HBM holds (910B1/B2/B3/910_93: 64 GiB).
constexpr uint64_t kMaxProblemBytes = 64ull * 1024 * 1024 * 1024;

// Python's exception class of a refused call: ValueError, TypeError or NotImplementedError.
enum class FaErrorKind : uint32_t { kNone = 0, kValue, kType, kNotImplemented };

struct FaError {
    FaErrorKind kind = FaErrorKind::kNone;
    std::string message;

    explicit operator bool() const { return kind != FaErrorKind::kNone; }
};

// An output dimension as the inputs' dimensions give it: constant * prod(mul) / prod(div), each a (tensor, axis)
// of query (0), key (1) or value (2), so that traced callers compute it from symbolic sizes.
struct FaDimRef {
    uint32_t tensor, axis;
};
struct FaDim {
    int64_t constant = 1;
    std::vector<FaDimRef> mul, div;
};

// The dense mask as the kernels read it, derived from the mask's shape and strides (4-D; TND [1, 1, R, C]):
// broadcast (stride-0) dimensions in `narrow` are read as one slice; `copy`: the caller copies the (narrowed) mask
// contiguously, and `widen`: a column-broadcast mask becomes rows of kColumnBroadcastWidth equal bytes (expanded,
// then copied). Element (b, n, r, c) then sits at b*strideB + n*strideN + r*strideS + c*colStep bytes; `extent`
// bytes are touched.
struct FaMaskView {
    std::vector<uint32_t> narrow;
    bool widen = false, copy = false;
    std::vector<int64_t> shape;  // the view's 4-D shape
    uint64_t strideB = 0, strideN = 0, strideS = 0;
    uint32_t colStep = 1;
    uint64_t extent = 0;
    bool perBatch = false, perHead = false;
};

// Statistics rows of a run of sequences: [seqs, N1, tokens] rows (8 floats each), contiguous from firstRow.
struct FaRowGroup {
    uint64_t firstRow, seqs, tokens;
};

// What every backend does around the kernels, as data.
struct FaPostProcess {
    bool hasWork = false;          // some query row sees some key; else no launch: every row is invalid
    // TND: query tokens from padQFrom and key tokens from padKvFrom belong to no sequence (output 0, invalid
    // statistics, zero gradients); non-TND: no padding (both = the token dims).
    bool tnd = false;
    uint64_t padQFrom = 0, padKvFrom = 0;
    // Every sequence's statistics rows: sink rows without keys are filled and dsink_rows sum per head over them
    // (dsink = -sum).
    std::vector<FaRowGroup> rowGroups;
    // Backward with an outer pse: the kernel's dS rows (fp32, zeroed) of this shape reduce to dpse by summing the
    // dims in order (keepdim), times dpseFactor, cast to pse's dtype.
    std::vector<int64_t> dpseRowsShape;
    std::vector<uint32_t> dpseSumDims;
    double dpseFactor = 1.0;
};

struct FaProblemInfo {
    FaProblem p;
    double scale = 1.0;                   // the attribute at full precision (p.scale is the kernels' float)
    std::string layoutName;
    uint64_t t1 = 0, t2 = 0;              // token dims (TND: q/k rows; else B*S)
    std::vector<int64_t> outShape, statsShape;
    std::vector<FaDim> outDims, statsDims;
    bool compressedMask = false;          // modes 2-4/6-8 got the compressed mask: the caller checks its content
    bool dropMaskRepack = false;          // a user dropout mask must be repacked into rows of dropMaskPitch bytes
    std::vector<std::pair<int64_t, int64_t>> sequences;  // (Sq, Skv) of every sequence (non-TND: B times (S1, S2))
    FaMaskView mask;                      // p.denseMask only
    FaPostProcess post;
};

// Checks every rule of the call and fills `out`; the error names the argument, the value and the rule.
FaError BuildProblem(const FaCall& call, FaProblemInfo& out);

// Bytes of the kernels' dense tensors: q/k/v and attention_out (or dy / attention_in) in the input dtype, each of
// the fp32 statistics (softmax_max, softmax_sum, dsink_rows).
struct FaTensorBytes {
    uint64_t query, key, value, out, stats;
};
FaTensorBytes TensorBytes(const FaProblem& p);

// Bytes of the pse input: ALiBi slopes ([B, N1] or [N1] fp32) or an outer bias ([B or 1, N1, S1 or 1, S2] of the
// input dtype); 0 without either.
uint64_t PseBytes(const FaProblem& p);

// Rows of the backward's dS output for dpse (FaBwdVector::StorePseGrad writes [B, N1, rows, S2] fp32): S1 for a
// [.., S1, S2] outer pse, 4 * ceil(S1 / 16) (column sums of each query block's four row chunks) for a [.., 1, S2] one.
uint64_t PseGradRows(const FaProblem& p);

// Bytes of a user dropout mask as the kernels read it: one row of dropMaskPitch bytes per statistics row.
uint64_t DropMaskBytes(const FaProblem& p);

}  // namespace npu_fa
