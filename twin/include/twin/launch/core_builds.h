// Per-core-type builds of one kernel source, as CANN's compiler makes them: a cube build (__DAV_CUBE__) run on the
// AIC cores and a vector build (__DAV_VEC__) run on the AIV cores of a launch (runtime.h has the macros).
//
// How two builds of the same source share one process: npu_flash_attn.twin.compile_kernel links each build into its
// own shared library with -Bsymbolic-functions, and the vector library names the cube one as a dependency. Inline and
// template functions with the same mangled name but core-specific bodies (`if ASCEND_IS_AIC`, g_coreType defaults)
// then bind inside their own library, while data symbols stay interposable: the twin's run-time state (inline and
// thread_local variables, function-local statics) resolves to one copy for both libraries, since the vector library
// comes first in the lookup scope both are relocated in. Renaming every function symbol of one object per core type
// (objcopy --redefine-syms) would also work inside a single library, but COMDAT group signatures (constructor
// groups, for instance) must then be renamed too, or the linker keeps one build's group and drops the other's code.
//
// Each build registers itself here under the build id compile_kernel gives both (TWIN_CORE_BUILD_ID); the launcher
// finds a kernel's function in the other build by its symbol name (dladdr, then dlsym in that library).
#pragma once
#include <dlfcn.h>

#include <map>
#include <mutex>
#include <string>

#include "twin/launch/runtime.h"

namespace twin {

struct CoreBuild {
    std::string id;
    int32_t coreType;
};

struct CoreBuildRegistry {
    std::mutex mu;
    std::map<std::string, CoreBuild> byLib;                   // shared library path -> its build
    std::map<std::string, std::map<int32_t, std::string>> libs;  // build id -> core type -> library path
};

inline CoreBuildRegistry& CoreBuilds() {
    static CoreBuildRegistry r;
    return r;
}

inline const char* CoreBuildName(int32_t coreType) {
    return coreType == AscendC::AIC ? "cube build (__DAV_CUBE__)" : "vector build (__DAV_VEC__)";
}

// Returns true so that it can initialise a namespace-scope constant. `anchor`: any function of the build's library.
inline bool RegisterCoreBuild(const char* id, int32_t coreType, void* anchor) {
    Dl_info info{};
    if (dladdr(anchor, &info) == 0 || info.dli_fname == nullptr) return false;
    CoreBuildRegistry& r = CoreBuilds();
    std::lock_guard<std::mutex> g(r.mu);
    r.byLib[info.dli_fname] = {id, coreType};
    r.libs[id][coreType] = info.dli_fname;
    return true;
}

// The function to run on cores of type `coreType` for kernel entry `fn` (a function of any build of the kernel):
// `fn` itself in a single (CPU debug) build, else the same-named function of the build for that core type.
inline void* CoreBuildFunction(void* fn, int32_t coreType) {
    Dl_info info{};
    if (dladdr(fn, &info) == 0 || info.dli_fname == nullptr) return fn;
    std::string other;
    {
        CoreBuildRegistry& r = CoreBuilds();
        std::lock_guard<std::mutex> g(r.mu);
        auto self = r.byLib.find(info.dli_fname);
        if (self == r.byLib.end()) {
#if defined(SPLIT_CORE_CUBE) || defined(SPLIT_CORE_VEC)
            // A per-core build compiled without a build id: it can only run on its own core type.
            if (coreType != g_coreType) {
                ThrowPlain(std::string("launch: this kernel library is only a ") + CoreBuildName(g_coreType) +
                           ", and the launch runs it on cores that need the " + CoreBuildName(coreType));
            }
#endif
            return fn;
        }
        if (self->second.coreType == coreType) return fn;
        std::map<int32_t, std::string>& pair = r.libs[self->second.id];
        if (pair.count(coreType) == 0) {
            ThrowPlain(std::string("launch: ") + info.dli_fname + " has no " + CoreBuildName(coreType) +
                       " loaded, and the launch runs cores of that type");
        }
        other = pair[coreType];
    }
    if (info.dli_sname == nullptr || info.dli_saddr != fn) {
        ThrowPlain(std::string("launch: the kernel function in ") + info.dli_fname +
                   " has no exported symbol, so its " + CoreBuildName(coreType) +
                   " cannot be found by name (give the kernel external linkage)");
    }
    void* lib = dlopen(other.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    void* f = lib ? dlsym(lib, info.dli_sname) : nullptr;
    if (lib) dlclose(lib);  // still loaded: the other build's library depends on it or is the one that loaded it
    if (f == nullptr) {
        ThrowPlain(std::string("launch: ") + info.dli_sname + " is not in the " + CoreBuildName(coreType) + " " + other);
    }
    return f;
}

// The kernel entry of each core type a launch of `kernelType` (KernelMetaType) runs.
struct CoreEntries {
    void* aic = nullptr;
    void* aiv = nullptr;
    void* For(int32_t coreType) const { return coreType == AscendC::AIC ? aic : aiv; }
};

inline CoreEntries CoreBuildEntries(void* fn, int kernelType) {
    const bool aic = kernelType == KERNEL_TYPE_AIC_ONLY || kernelType == KERNEL_TYPE_MIX_AIC_1_0 ||
                     kernelType == KERNEL_TYPE_MIX_AIC_1_1 || kernelType == KERNEL_TYPE_MIX_AIC_1_2;
    const bool aiv = kernelType != KERNEL_TYPE_AIC_ONLY && kernelType != KERNEL_TYPE_MIX_AIC_1_0;
    CoreEntries e;
    if (aic) e.aic = CoreBuildFunction(fn, AscendC::AIC);
    if (aiv) e.aiv = CoreBuildFunction(fn, AscendC::AIV);
    return e;
}

}  // namespace twin

#if defined(TWIN_CORE_BUILD_ID) && (defined(SPLIT_CORE_CUBE) || defined(SPLIT_CORE_VEC))
namespace {
void TwinCoreBuildAnchor() {}
[[maybe_unused]] const bool kTwinCoreBuildRegistered =
    twin::RegisterCoreBuild(TWIN_CORE_BUILD_ID, g_coreType, reinterpret_cast<void*>(&TwinCoreBuildAnchor));
}  // namespace
#endif
