// The steps every TilingFunc of the package shares: the chip from the platform, size checks of inputs/outputs
// against the plan, and handing the plan's tiling struct, blocks and workspace to CANN.
#pragma once
#include <string>
#include <vector>

#include "tiling/platform/platform_ascendc.h"

#include "cann/fa_op_context.h"
#include "cann/fa_platform.h"

namespace npu_fa {
namespace op {

// The chip the call runs on (cores, UB/L1/L0 sizes) and the library's system workspace.
inline ge::graphStatus Chip(gert::TilingContext* ctx, ChipSpec& chip, uint64_t& sysWorkspace) {
    if (ctx->GetPlatformInfo() == nullptr) return Refuse(ctx, "no platform info");
    const platform_ascendc::PlatformAscendC plat(ctx->GetPlatformInfo());
    chip = ChipFromPlatform(plat);
    const std::string err = CheckPlatform(plat, chip);
    if (!err.empty()) return Refuse(ctx, err);
    sysWorkspace = plat.GetLibApiWorkSpaceSize();
    return ge::GRAPH_SUCCESS;
}

// A tensor's element count must be what the tiling expects (seq_info rows, block-map bytes, geometry).
inline ge::graphStatus CheckSize(gert::TilingContext* ctx, const gert::StorageShape* shape, const char* name,
                                 uint64_t want) {
    const int64_t have = shape == nullptr ? -1 : shape->GetStorageShape().GetShapeSize();
    if (have == (int64_t)want) return ge::GRAPH_SUCCESS;
    return Refuse(ctx, std::string(name) + " has " + std::to_string(have) + " elements, the tiling needs " +
                           std::to_string(want));
}

inline uint64_t Elements(const std::vector<int64_t>& dims) {
    uint64_t n = 1;
    for (int64_t d : dims) n *= (uint64_t)d;
    return n;
}

// The tiling struct, the launch's blocks and the workspace: the user part after the library's system part.
template <typename T>
ge::graphStatus Emit(gert::TilingContext* ctx, const T& tiling, uint32_t blockDim, uint64_t userWorkspace,
                     uint64_t sysWorkspace) {
    T* t = ctx->GetTilingData<T>();
    size_t* ws = ctx->GetWorkspaceSizes(1);
    if (t == nullptr || ws == nullptr) return Refuse(ctx, "no room for the tiling data or the workspace size");
    *t = tiling;
    ctx->SetBlockDim(blockDim);
    ctx->SetTilingKey(0);
    ws[0] = (size_t)(sysWorkspace + userWorkspace);
    return ge::GRAPH_SUCCESS;
}

}  // namespace op
}  // namespace npu_fa
