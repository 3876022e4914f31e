// InitOutput(gm, size, value): the deprecated GM fill of include/basic_api/kernel_operator_common_intf.h ("use Fill
// instead"; the docs have no page for it, so the header and its dav-2201 implementation define it). The first `size`
// elements of the GlobalTensor become `value`. On the cube core it does nothing (the implementation returns there);
// on a vector core the value is staged in UB by the API itself (ordered V -> MTE3 inside the call) and written out by
// MTE3, so later readers of those GM bytes need the usual MTE3 ordering, and an atomic mode set by SetAtomicAdd
// applies to the write as to any MTE3 copy.
#pragma once
#include "twin/sync/atomic_gm.h"

namespace AscendC {

template <typename T>
inline void InitOutput(GlobalTensor<T> gmWorkspaceAddr, uint32_t size, T value = 0) {
    const char* api = "InitOutput";
    if (twin::Cur().coreType == AIC) return;
    gmWorkspaceAddr.CheckElems(api, 0, size);
    T chunk[256];
    for (T& v : chunk) v = value;
    uint8_t* g = reinterpret_cast<uint8_t*>(gmWorkspaceAddr.GetPhyAddr(0));
    for (uint64_t done = 0; done < size;) {
        const uint64_t n = std::min<uint64_t>(size - done, 256);
        twin::GmWrite<T>(g + done * sizeof(T), reinterpret_cast<const uint8_t*>(chunk), n * sizeof(T));
        done += n;
    }
    twin::Trace(api, PIPE_MTE3, size, (uint64_t)size * sizeof(T), 1, g, nullptr);
}

}  // namespace AscendC
