// Host-runtime stand-in for the few ACL calls the official Ascend C examples' main() makes, so that main() runs
// unchanged on the CPU twin (scripts/run_official_examples.py). Device memory is host memory, zero-filled as CANN's
// CPU debug mode maps it, and registered with the twin so every kernel GM access is checked against the buffers
// main() allocated. Launches are synchronous (twin/launch/cpu_launch.h), so streams and devices are no-ops.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kernel_operator.h"

typedef int aclError;
typedef void* aclrtStream;
typedef void* aclrtContext;
constexpr aclError ACL_SUCCESS = 0;
constexpr aclError ACL_ERROR_INVALID_PARAM = 100000;
constexpr aclError ACL_ERROR_BAD_ALLOC = 200000;

enum aclrtMemMallocPolicy { ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY };
enum aclrtMemcpyKind { ACL_MEMCPY_HOST_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST,
                       ACL_MEMCPY_DEVICE_TO_DEVICE };

namespace twin_acl {
constexpr size_t kAlign = 512;  // generous device-address alignment, so no kernel fails on the buffer base
// What aclrtMalloc(size) holds: size rounded up to 32 bytes, plus 32 (the aclrtMalloc page); kernels may use it all.
inline size_t MallocBytes(size_t size) { return (size + 31) / 32 * 32 + 32; }
inline void* Alloc(size_t size) {
    void* p = std::aligned_alloc(kAlign, (MallocBytes(size) + kAlign - 1) / kAlign * kAlign);
    if (p != nullptr) std::memset(p, 0, MallocBytes(size));
    return p;
}
}  // namespace twin_acl

typedef uint16_t aclFloat16;  // ACL's host-side half: the raw IEEE binary16 bits
inline float aclFloat16ToFloat(aclFloat16 v) { return twin::vnum::HalfToFloat1(v); }
inline aclFloat16 aclFloatToFloat16(float v) { return twin::vnum::FloatToHalf1(v); }

inline aclError aclInit(const char*) { return ACL_SUCCESS; }
inline aclError aclFinalize() { return ACL_SUCCESS; }
inline aclError aclrtSetDevice(int32_t) { return ACL_SUCCESS; }
inline aclError aclrtResetDevice(int32_t) { return ACL_SUCCESS; }
inline aclError aclrtCreateContext(aclrtContext* context, int32_t) {
    *context = nullptr;
    return ACL_SUCCESS;
}
inline aclError aclrtDestroyContext(aclrtContext) { return ACL_SUCCESS; }
inline aclError aclrtCreateStream(aclrtStream* stream) {
    *stream = nullptr;
    return ACL_SUCCESS;
}
inline aclError aclrtDestroyStream(aclrtStream) { return ACL_SUCCESS; }
inline aclError aclrtSynchronizeStream(aclrtStream) { return ACL_SUCCESS; }
inline aclError aclrtSynchronizeDevice() { return ACL_SUCCESS; }

inline aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy) {
    if (devPtr == nullptr) return ACL_ERROR_INVALID_PARAM;
    *devPtr = twin_acl::Alloc(size);
    if (*devPtr == nullptr) return ACL_ERROR_BAD_ALLOC;
    twin::RegisterHostGm(*devPtr, size, twin_acl::MallocBytes(size));
    return ACL_SUCCESS;
}
inline aclError aclrtMallocHost(void** hostPtr, size_t size) {
    if (hostPtr == nullptr) return ACL_ERROR_INVALID_PARAM;
    *hostPtr = twin_acl::Alloc(size);
    return *hostPtr == nullptr ? ACL_ERROR_BAD_ALLOC : ACL_SUCCESS;
}
inline aclError aclrtFree(void* devPtr) {
    twin::UnregisterHostGm(devPtr);
    std::free(devPtr);
    return ACL_SUCCESS;
}
inline aclError aclrtFreeHost(void* hostPtr) {
    std::free(hostPtr);
    return ACL_SUCCESS;
}
inline aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind) {
    if (count > destMax || (count > 0 && (dst == nullptr || src == nullptr))) return ACL_ERROR_INVALID_PARAM;
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
}
inline aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
    if (count > maxCount || (count > 0 && devPtr == nullptr)) return ACL_ERROR_INVALID_PARAM;
    std::memset(devPtr, value, count);
    return ACL_SUCCESS;
}
