// AscendC cache-maintenance and DCache-bypass APIs of dav-2201 (DataCacheCleanAndInvalid, DataSyncBarrier,
// ReadGmByPassDCache, WriteGmByPassDCache) over the DCache model of sync/dcache.h.
#pragma once
#include "twin/memory/tensor.h"
#include "twin/sync/dcache.h"

namespace AscendC {

enum class CacheLine : uint64_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst : uint64_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };
enum class MemDsbT : uint8_t { ALL = 0, DDR, UB, SEQ };

// SINGLE_CACHE_LINE works on [address, next 64-byte boundary); ENTIRE_DATA_CACHE on every line of the core.
template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst) {
    const char* api = "DataCacheCleanAndInvalid";
    if (dcciDst == DcciDst::CACHELINE_UB) {
        twin::Fail(api, "DcciDst::CACHELINE_UB is reserved (not supported) for a GlobalTensor; use CACHELINE_OUT");
    }
    if (entireType == CacheLine::SINGLE_CACHE_LINE) dst.CheckElems(api, 0, 1);
    twin::Trace(api, PIPE_S, 0, 0, 0, dst.GetPhyAddr(), nullptr, twin::TraceKind::Instr, (uint16_t)entireType);
    twin::DcacheCleanInvalidate(api, (uint64_t)(uintptr_t)dst.GetPhyAddr(), entireType == CacheLine::ENTIRE_DATA_CACHE);
}
template <typename T, CacheLine entireType>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst) {
    DataCacheCleanAndInvalid<T, entireType, DcciDst::CACHELINE_OUT>(dst);
}
// The UB form keeps the DCache consistent with local memory; the twin's scalar UB accesses are direct.
template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const LocalTensor<T>& dst) {
    const char* api = "DataCacheCleanAndInvalid";
    if (!dst.Valid()) twin::Fail(api, "the LocalTensor is not allocated");
    twin::Trace(api, PIPE_S, 0, 0, 0, dst.GetPhyAddr(), nullptr, twin::TraceKind::Instr, (uint16_t)entireType);
}

template <MemDsbT arg0>
inline void DataSyncBarrier() {
    if (arg0 == MemDsbT::ALL || arg0 == MemDsbT::DDR) twin::Cur().dcUnfenced.clear();
    twin::Trace("DataSyncBarrier", PIPE_S, 0, 0, 0, nullptr, nullptr, twin::TraceKind::Barrier, (uint16_t)arg0);
}

template <typename T>
constexpr bool kBypassType = std::is_same<T, int8_t>::value || std::is_same<T, uint8_t>::value ||
                             std::is_same<T, int16_t>::value || std::is_same<T, uint16_t>::value ||
                             std::is_same<T, int32_t>::value || std::is_same<T, uint32_t>::value ||
                             std::is_same<T, int64_t>::value || std::is_same<T, uint64_t>::value;

template <typename T>
inline T ReadGmByPassDCache(__gm__ T* addr) {
    static_assert(kBypassType<T>, "ReadGmByPassDCache supports int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t and uint64_t");
    const char* api = "ReadGmByPassDCache";
    twin::CheckGm(api, addr, sizeof(T));
    twin::Trace(api, PIPE_S, 1, sizeof(T), 1, nullptr, addr);
    twin::CoreState& c = twin::Cur();
    std::lock_guard<std::mutex> g(c.launch->dcMu);
    const uint64_t a = (uint64_t)(uintptr_t)addr;
    uint8_t b[sizeof(T)];
    int holder = -1;
    for (uint64_t i = 0; i < sizeof(T); ++i) {
        int h = -1;
        b[i] = twin::VisibleByte(*c.launch, c.id, a + i, &h);
        holder = holder < 0 ? h : holder;
    }
    twin::NoteDirtyRead(api, c, a & ~(twin::kDcLineBytes - 1), a, holder);
    twin::Acquire(c, a, sizeof(T));
    T v;
    std::memcpy(&v, b, sizeof(T));
    return v;
}

template <typename T>
inline void WriteGmByPassDCache(__gm__ T* addr, T value) {
    static_assert(kBypassType<T>, "WriteGmByPassDCache supports int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t and uint64_t");
    const char* api = "WriteGmByPassDCache";
    twin::CheckGm(api, addr, sizeof(T));
    twin::Trace(api, PIPE_S, 1, sizeof(T), 1, addr, nullptr);
    twin::CoreState& c = twin::Cur();
    twin::LaunchState& L = *c.launch;
    std::lock_guard<std::mutex> g(L.dcMu);
    const uint64_t a = (uint64_t)(uintptr_t)addr;
    twin::RequireNotDirty(L, c.id, true, false, api, a, sizeof(T));
    for (uint64_t line : c.dcUnfenced) {
        if (a + sizeof(T) > line && a < line + twin::kDcLineBytes) {
            twin::Fail(api, "%s: its DCache line was written back by DataCacheCleanAndInvalid with no "
                            "DataSyncBarrier<MemDsbT::DDR> since; the NPU may complete the write-back after this "
                            "write and overwrite it",
                       twin::GmWhere(L, a).c_str());
        }
    }
    std::memcpy(addr, &value, sizeof(T));
    if (c.hz.on) twin::Release(c, a, sizeof(T), c.hz.known[twin::HzPipe(PIPE_S)]);
}

}  // namespace AscendC
