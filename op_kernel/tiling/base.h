// Fixed-width types, the enums of the tiling fields and the integer maths that host tiling and kernels share.
// Everything under tiling/ is plain data and inline maths: op_host (tiling) and op_kernel (device code) include it.
#ifndef NPU_FA_TILING_BASE_H
#define NPU_FA_TILING_BASE_H

// Device builds get the fixed-width types from kernel_operator.h; host builds from <cstdint>.
#if !defined(ASCEND_TWIN) && !defined(__CCE__)
#include <cstddef>
#include <cstdint>
#endif

#if defined(__aicore__) || defined(__CCE_KT_TEST__) || defined(__CCE__)
#define FA_INLINE __aicore__ inline
#else
#define FA_INLINE inline
#endif

namespace npu_fa {

constexpr uint32_t kMaxCores = 64;           // per-core task ranges kept in the tiling
constexpr int64_t kUnbounded = 1LL << 40;    // "no limit" for band offsets

enum FaLayout : uint32_t { kBSH = 0, kSBH = 1, kBSND = 2, kBNSD = 3, kTND = 4 };
enum FaDtype : uint32_t { kFp16 = 0, kBf16 = 1 };
// In-kernel ALiBi (tile/alibi.h), by the built-in's pse_type values.
enum FaAlibiMode : uint32_t { kAlibiNone = 0, kAlibiLinear = 2, kAlibiSqrt = 3 };
// An outer bias tensor (tile/pse.h): added as it is (the built-in's pse_type 0) or times the scale (pse_type 1).
enum FaPseMode : uint32_t { kPseNone = 0, kPseAdd = 1, kPseScaled = 2 };
// Dropout on the probabilities (tile/dropout.h): keep bits generated from (seed, offset) or read from a user mask.
enum FaDropMode : uint32_t { kDropNone = 0, kDropGenerated = 1, kDropMask = 2 };

FA_INLINE int64_t FaMin(int64_t a, int64_t b) { return a < b ? a : b; }
FA_INLINE int64_t FaMax(int64_t a, int64_t b) { return a > b ? a : b; }
FA_INLINE int64_t FaClamp(int64_t v, int64_t lo, int64_t hi) { return FaMin(FaMax(v, lo), hi); }
FA_INLINE uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
FA_INLINE uint32_t AlignUp(uint32_t a, uint32_t b) { return CeilDiv(a, b) * b; }

}  // namespace npu_fa

#endif  // NPU_FA_TILING_BASE_H
