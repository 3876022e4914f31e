// Which on-core memories a core has, how much of each a kernel may allocate and how much an instruction may touch.
// Allocating a buffer (TPipe::InitBuffer, TBuf, an explicit-address LocalTensor) is address arithmetic on the NPU
// and works on either core kind: mix kernels written once for both (catlass's Arch::Resource, the official matmul +
// GELU example) give L1/L0 buffers on the AIVs and UB buffers on the AIC and use each only on its own core. So the
// twin provides a memory the core lacks on demand, for addresses only; an access there is refused (CheckOnCoreAccess).
#pragma once
#include "twin/launch/launch_state.h"
#include "twin/launch/runtime.h"
#include "twin/memory/poison.h"

namespace twin {

// Top of UB and L1 the Ascend C framework keeps for itself in Cube+Vector fusion kernels (NPU架构版本2201.md,
// "各存储单元的参数规格": at most 192 KB - 256 B of UB and 512 KB - 256 B of L1 for the user). The page does not say
// what uses them, CANN's own TPipe checks allow the whole buffers, and catlass's FA example (run on hardware) writes
// the last UB bytes with its mask tile: touching them is a TwinWarning, not an error.
constexpr uint32_t kCvFusionReserved = 256;
// How much Fixpipe Buffer a TPipe may hand out: 7 KB, the bound of CANN's own TPipe checks on dav-2201
// (impl/basic_api/utils/kernel_utils_mode_cpu.h, bufferInitLen), which catlass's Arch::Resource allocates whole.
// Only the documented 2 KB (ChipSpec::fbSize) exist to be read or written.
constexpr uint32_t kFbTPipeBytes = 7 * 1024;

inline bool CoreHasMem(int32_t coreType, Mem m) {
    if (m == Mem::GM) return true;
    return coreType == AscendC::AIV ? m == Mem::UB : m != Mem::UB;
}

// Bytes a TPipe may hand out of `m`: the whole buffer, as CANN's TPipe checks allow (an allocation is addresses only).
inline uint32_t AllocBytes(const npu_fa::ChipSpec& chip, Mem m) {
    switch (m) {
        case Mem::UB: return chip.ubSize;
        case Mem::L1: return chip.l1Size;
        case Mem::L0A: return chip.l0aSize;
        case Mem::L0B: return chip.l0bSize;
        case Mem::L0C: return chip.l0cSize;
        case Mem::BT: return chip.btSize;
        case Mem::FB: return std::max(chip.fbSize, kFbTPipeBytes);
        default: return 0;
    }
}

// True when the launch runs cube and vector cores together (the fusion case of the 256 B reserve).
inline bool CvFusionLaunch(const CoreState& c) {
    const int kt = c.launch ? c.launch->kernelType : AscendC::KERNEL_TYPE_AIV_ONLY;
    return kt == AscendC::KERNEL_TYPE_MIX_AIC_1_1 || kt == AscendC::KERNEL_TYPE_MIX_AIC_1_2;
}

// End of the bytes of `m` an instruction may touch: the documented buffer size (NPU架构版本2201.md "各存储单元的参数规格":
// Fixpipe Buffer 2 KB, not the 7 KB a TPipe hands out).
inline uint64_t AccessibleBytes(const CoreState& c, Mem m) {
    return m == Mem::FB ? c.chip->fbSize : AllocBytes(*c.chip, m);
}

// Gives core `c` its buffer of `m` (poisoned) if it has none yet; a memory the core lacks is only ever addressed.
inline void ProvideMem(CoreState& c, Mem m) {
    if (m == Mem::GM || !c.mem[(int)m].empty()) return;
    c.mem[(int)m].assign(AllocBytes(*c.chip, m), kPoisonByte);
    c.usable[(int)m] = AllocBytes(*c.chip, m);
}

// Every on-core access (NoteAccess): the memory must be the core's own, and the bytes inside AccessibleBytes.
inline void CheckOnCoreAccess(const char* api, Mem m, uint64_t off, uint64_t bytes, bool write) {
    const CoreState& c = Cur();
    const char* what = write ? "writes" : "reads";
    if (!CoreHasMem(c.coreType, m)) {
        const bool aic = c.coreType == AscendC::AIC;
        Fail(api, "%s %s bytes [%llu, %llu), but the %s has no %s: a buffer there may be allocated on both core kinds "
                  "(addresses only), only the %s can read or write it; guard the call with %s",
             what, MemName(m), (unsigned long long)off, (unsigned long long)(off + bytes),
             aic ? "cube core (AIC)" : "vector core (AIV)", MemName(m), aic ? "vector core (AIV)" : "cube core (AIC)",
             aic ? "ASCEND_IS_AIV" : "ASCEND_IS_AIC");
    }
    const uint64_t end = AccessibleBytes(c, m);
    if (off + bytes > end) {
        Fail(api, "%s %s bytes [%llu, %llu), past the %llu bytes an instruction may touch (%s)", what, MemName(m),
             (unsigned long long)off, (unsigned long long)(off + bytes), (unsigned long long)end,
             m == Mem::FB ? "the Fixpipe Buffer is 2 KB, NPU架构版本2201.md; a TPipe may hand out 7 KB of addresses"
                          : "the end of the buffer");
    }
    const uint64_t top = end - kCvFusionReserved;
    if ((m == Mem::UB || m == Mem::L1) && off + bytes > top && CvFusionLaunch(c)) {
        Warn(api, "%s the top 256 B of %s, bytes [%llu, %llu), which the Ascend C framework keeps in Cube+Vector fusion "
                  "kernels (NPU架构版本2201.md, which does not say what uses them)",
             what, MemName(m), (unsigned long long)top, (unsigned long long)end);
    }
}

}  // namespace twin
