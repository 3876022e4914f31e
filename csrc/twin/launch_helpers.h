// What the op bindings need around a twin launch: device-like GM for the workspace, and no tolerated warnings.
#pragma once
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "twin/launch/runtime.h"

namespace twin_bindings {

// GM the binding allocates itself (the workspace), 512-byte aligned like aclrtMalloc's device memory.
inline std::unique_ptr<uint8_t, void (*)(void*)> DeviceAlloc(uint64_t bytes) {
    const uint64_t n = (bytes + 511) / 512 * 512;
    return {static_cast<uint8_t*>(std::aligned_alloc(512, n != 0 ? n : 512)), &std::free};
}

// The op's own kernels must not do what the twin only warns about (twin::Warn): it would be a kernel bug.
inline void RequireNoWarnings(const std::vector<std::string>& warnings) {
    if (!warnings.empty()) throw twin::TwinError("twin warning in the op's kernel: " + warnings.front());
}

}  // namespace twin_bindings
