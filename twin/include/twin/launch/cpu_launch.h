// The `<<<numBlocks, dynicsize, stream>>>` launch of a `.asc` source in CPU mode. CANN's compiler rewrites each
// such call into AscendC::AscCPUKernelLaunch(numBlocks, dynicsize, stream, name, kernel, args...) (asc-tools
// cpudebug/include/cpu_debug_launch.h) and registers every kernel's mode from its execution-space qualifier
// (__vector__, __cube__, __mix__(cube, vec)); a tool doing that rewrite for the twin registers the mode with
// twin::RegisterKernelMode. A host runtime standing in for ACL registers the device buffers it hands out with
// twin::RegisterHostGm, so the launch checks every GM access against them.
#pragma once
#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "twin/launch/core_builds.h"
#include "twin/launch/launch.h"

namespace twin {

struct HostLaunchRegistry {
    std::mutex mu;
    std::map<std::string, int> kernelModes;     // kernel name -> KernelMetaType
    std::map<const uint8_t*, GmRange> gm;       // device buffers handed out by the host runtime
    uint64_t gmSerial = 0;
};

inline HostLaunchRegistry& HostRegistry() {
    static HostLaunchRegistry r;
    return r;
}

// Returns true so that it can initialise a namespace-scope constant.
inline bool RegisterKernelMode(const char* kernel, int kernelType) {
    HostLaunchRegistry& r = HostRegistry();
    std::lock_guard<std::mutex> g(r.mu);
    r.kernelModes[kernel] = kernelType;
    return true;
}

// `bytes` as requested; kernels may access `accessible` bytes (aclrtMalloc's padding included).
inline void RegisterHostGm(const void* ptr, uint64_t bytes, uint64_t accessible = 0) {
    HostLaunchRegistry& r = HostRegistry();
    std::lock_guard<std::mutex> g(r.mu);
    const uint8_t* p = (const uint8_t*)ptr;
    r.gm[p] = {p, std::max(bytes, accessible),
               "device buffer " + std::to_string(r.gmSerial++) + " (" + std::to_string(bytes) + " bytes)"};
}

inline void UnregisterHostGm(const void* ptr) {
    HostLaunchRegistry& r = HostRegistry();
    std::lock_guard<std::mutex> g(r.mu);
    r.gm.erase((const uint8_t*)ptr);
}

}  // namespace twin

namespace AscendC {

// Runs synchronously: the stream is accepted and ignored, so aclrtSynchronizeStream has nothing left to wait for.
// Kernels that take scalars or typed pointers are fine: the arguments are passed through unchanged.
template <typename T, typename... Args>
inline void AscCPUKernelLaunch(unsigned numBlocks, void* dynicsize, void* stream, const char* mangling, T kernelFunc,
                               Args... args) {
    (void)dynicsize;
    (void)stream;
    twin::LaunchOptions o;
    o.numBlocks = numBlocks;
    o.trace = false;
    {
        twin::HostLaunchRegistry& r = twin::HostRegistry();
        std::lock_guard<std::mutex> g(r.mu);
        auto it = r.kernelModes.find(mangling);
        if (it == r.kernelModes.end()) {
            twin::ThrowPlain(std::string("launch: kernel '") + mangling +
                             "' has no registered kernel mode (declare it __vector__, __cube__ or __mix__(cube, vec))");
        }
        o.kernelType = it->second;
        for (const auto& kv : r.gm) o.gm.push_back(kv.second);
    }
    // Per-core builds (core_builds.h): each core runs the build of its core type.
    const twin::CoreEntries entry = twin::CoreBuildEntries(reinterpret_cast<void*>(kernelFunc), o.kernelType);
    const twin::LaunchResult r =
        twin::Launch(o, [&]() { reinterpret_cast<T>(entry.For(twin::Cur().coreType))(args...); });
    for (const std::string& w : r.warnings) std::fprintf(stderr, "twin warning: %s\n", w.c_str());
}

}  // namespace AscendC
