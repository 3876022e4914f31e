// Core-index APIs with the dav-2201 semantics (see launch.h for how each core kind is numbered), the user
// workspace accessor and the cross-core sync base address.
#pragma once
#include <chrono>

#include "twin/launch/launch_state.h"

namespace twin {

constexpr uint64_t kReservedWorkspace = 16ull * 1024 * 1024;  // dav-2201 system workspace (RESERVED_WORKSPACE)

// Fails when the launch buffer holding `workspace` ends before the system workspace does, i.e. the host sized only
// the user part (an NPU would then run into the next allocation).
inline void CheckSysWorkspace(const char* api, const uint8_t* workspace) {
    CoreState* c = tCore;
    if (c == nullptr || c->launch == nullptr) return;
    for (const GmRange& r : c->launch->gm) {
        if (workspace < r.begin || workspace >= r.begin + r.bytes) continue;
        const uint64_t left = (uint64_t)(r.begin + r.bytes - workspace);
        if (left < kReservedWorkspace) {
            Fail(api, "workspace buffer '%s' has %llu bytes from the workspace pointer, less than the %llu-byte system "
                      "workspace dav-2201 reserves in front of the user part: size the workspace as user bytes + "
                      "GetLibApiWorkSpaceSize() (16 MB)", r.name.c_str(), (unsigned long long)left,
                 (unsigned long long)kReservedWorkspace);
        }
        return;
    }
}

}  // namespace twin

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

// The user part of an op's workspace, with the NPU's semantics (not CANN CPU mode's, which returns the pointer
// unchanged): the library's system workspace starts at the op's workspace pointer and the user part follows it,
// RESERVED_WORKSPACE = 16 MB later on dav-2201 (impl/basic_api/dav_c220/kernel_operator_common_impl.h). The host
// must therefore size the workspace as user bytes + GetLibApiWorkSpaceSize() (16 MB on dav-2201).
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) {
    const char* api = "GetUserWorkspace";
    if (workspace == nullptr) twin::Fail(api, "workspace can not be nullptr");
    twin::CheckSysWorkspace(api, workspace);
    return workspace + twin::kReservedWorkspace;
}

// Sets the base address of the hardware cross-core sync unit (FFTS) to `config`, the value the host gets from
// aclrtGetHardwareSyncAddr (impl/basic_api/dav_c220/kernel_operator_sync_impl.h: set_ffts_base_addr; C-API page
// asc_sync_block_arrive.md shows the sequence). The twin's cross-core flags need no such unit, so the value is
// only traced (scalar pipe, `dst` = the value).
inline void SetSyncBaseAddr(uint64_t config) {
    twin::Trace("SetSyncBaseAddr", PIPE_S, 0, 0, 0, reinterpret_cast<const void*>((uintptr_t)config), nullptr);
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
