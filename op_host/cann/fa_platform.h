// ChipSpec from the platform information CANN gives the host code (PlatformAscendC: core counts, UB/L1/L0 sizes),
// so the tiling runs on what the device reports rather than on the twin's name table. Used by the TilingFuncs
// (context->GetPlatformInfo()) and by the torch_npu adapter (PlatformAscendCManager, for seq_info).
#pragma once
#include "tiling/platform/platform_ascendc.h"

#include "cann/fa_op_args.h"

namespace npu_fa {
namespace op {

inline ChipSpec ChipFromPlatform(const platform_ascendc::PlatformAscendC& plat) {
    uint64_t ub = 0, l1 = 0, l0a = 0, l0b = 0, l0c = 0;
    plat.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
    plat.GetCoreMemSize(platform_ascendc::CoreMemType::L1, l1);
    plat.GetCoreMemSize(platform_ascendc::CoreMemType::L0_A, l0a);
    plat.GetCoreMemSize(platform_ascendc::CoreMemType::L0_B, l0b);
    plat.GetCoreMemSize(platform_ascendc::CoreMemType::L0_C, l0c);
    return ChipFromSizes("platform", plat.GetCoreNumAic(), plat.GetCoreNumAiv(), ub, l1, l0a, l0b, l0c);
}

// Only dav-2201 (Atlas A2 910B, A3 910_93: both report ASCEND910B) is supported; "" or what is wrong.
inline std::string CheckPlatform(const platform_ascendc::PlatformAscendC& plat, const ChipSpec& chip) {
    if (plat.GetSocVersion() != platform_ascendc::SocVersion::ASCEND910B) {
        return "only Atlas A2/A3 (SocVersion ASCEND910B) is supported";
    }
    if (chip.aicNum == 0 || chip.aivNum != 2 * chip.aicNum) return "expected 2 vector cores per AI core (split mode)";
    if (chip.ubSize <= kUbAscReserved || chip.l1Size <= kL1MixReserved) return "platform reports no UB/L1 size";
    return "";
}

}  // namespace op
}  // namespace npu_fa
