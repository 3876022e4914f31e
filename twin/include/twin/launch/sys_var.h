// Core-index APIs with the dav-2201 semantics (see launch.h for how each core kind is numbered), and the user
// workspace accessor.
#pragma once
#include <chrono>

#include "twin/launch/launch_state.h"

namespace AscendC {

inline int64_t GetBlockIdx() { return twin::Cur().apiBlockIdx; }
inline int64_t GetBlockNum() { return twin::Cur().blockNum; }
inline int64_t GetSubBlockIdx() { return twin::Cur().subBlockIdx; }
inline int64_t GetSubBlockNum() { return twin::Cur().subBlockNum; }
inline int64_t GetTaskRatio() { return twin::Cur().taskRatio; }
// CPU mode returns wall-clock nanoseconds, as CANN's CPU debug build does.
inline int64_t GetSystemCycle() {
    return (int64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The user part of an op's workspace. On the NPU it follows the 16 MB system workspace; in CPU mode (as in CANN's
// CPU debug build) the launcher hands the user part itself, so it is returned unchanged.
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) {
    if (workspace == nullptr) twin::Fail("GetUserWorkspace", "workspace can not be nullptr");
    return workspace;
}

}  // namespace AscendC

// Kernel-type selection inside the kernel body: the twin's launcher takes the type from the caller, so these only
// check that the body agrees with it.
#define KERNEL_TASK_TYPE_DEFAULT(value) ::twin::CheckKernelType(value)
// The per-key form only applies when the launch runs that tiling key (g_tilingKey, see tiling_macros.h).
#define KERNEL_TASK_TYPE(key, value) ((g_tilingKey == (uint64_t)(key)) ? ::twin::CheckKernelType(value) : (void)0)

namespace twin {
inline void CheckKernelType(int declared) {
    CoreState& c = Cur();
    if (c.launch != nullptr && c.launch->kernelType != declared) {
        Fail("KERNEL_TASK_TYPE_DEFAULT", "kernel declares type %d but was launched as type %d", declared, c.launch->kernelType);
    }
}
}  // namespace twin
