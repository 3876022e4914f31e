// The poison rule (poison.h) at the GM side: stores note the poison they leave in GM, later stores erase what they
// overwrite, loads note user data that happens to carry the signature, and the launch end reports what is left.
#pragma once
#include <cstdlib>

#include "twin/memory/poison.h"
#include "twin/sync/dcache.h"

namespace twin {

// NPU_TWIN_LOCAL_FILL: what on-core memory holds at launch. "poison" (default): 0xFF bytes, checked by the rule;
// "nan": a NaN in every float type that is not poison (0x7FC0 per 16 bits), as an earlier kernel's NaN results
// would be; "stale": finite values (0x3C00 per 16 bits: 1.0 in half), as an earlier kernel's data would be.
enum class LocalFill { kPoison, kNaN, kStale };
inline LocalFill LocalFillMode() {
    const char* e = std::getenv("NPU_TWIN_LOCAL_FILL");
    if (e == nullptr || std::strcmp(e, "poison") == 0 || *e == 0) return LocalFill::kPoison;
    if (std::strcmp(e, "nan") == 0) return LocalFill::kNaN;
    if (std::strcmp(e, "stale") == 0) return LocalFill::kStale;
    ThrowPlain(std::string("NPU_TWIN_LOCAL_FILL=") + e + " is not one of poison, nan, stale");
}
inline bool PoisonCheckDefault() {
    const char* e = std::getenv("NPU_TWIN_POISON_CHECK");
    return LocalFillMode() == LocalFill::kPoison && !(e != nullptr && std::strcmp(e, "0") == 0);
}

inline bool InWorkspace(const LaunchState& L, uint64_t a) {
    for (const GmRange& r : L.gm) {
        const uint64_t b = (uint64_t)(uintptr_t)r.begin;
        if (a >= b && a < b + r.bytes) return r.name == "workspace";
    }
    return false;
}

// True when GM byte a holds poison a store of this launch left there (the ledger).
inline bool LeftByThisLaunch(PoisonLedger& P, uint64_t a) {
    if (P.count.load(std::memory_order_relaxed) == 0) return false;
    std::lock_guard<std::mutex> g(P.mu);
    auto it = P.left.upper_bound(a);
    return it != P.left.begin() && a < std::prev(it)->second.end;
}

// A GM -> on-core load of `bytes` at gm as T: user data carrying the signature turns the launch's reports off.
// Float types are judged at their own width (the low half of a float is no half value: judged as halves, one
// float input in 2048 would match by chance); other types at every 16-bit half, since kernels also move integers
// and bytes into float-typed buffers (e.g. Sort32 indices). Poison this launch stored there itself is not user data.
template <typename T>
inline void NotePoisonLoad(const uint8_t* gm, uint64_t bytes) {
    LaunchState& L = *Cur().launch;
    if (!L.poison.on || L.poison.dataHasPattern.load(std::memory_order_relaxed)) return;
    constexpr bool typed = CarriesPoison<T>();
    constexpr uint64_t step = typed ? sizeof(T) : 2;
    for (uint64_t i = typed ? 0 : (uintptr_t)gm & 1; i + step <= bytes; i += step) {
        if (!(typed ? IsPoison<T>(gm + i) : IsPoison<half>(gm + i))) continue;
        const uint64_t a = (uint64_t)(uintptr_t)(gm + i);
        if (InWorkspace(L, a) || LeftByThisLaunch(L.poison, a)) continue;
        L.poison.dataHasPattern = true;
        return;
    }
}

// Byte offset of p in the current core's memory m.
inline uint64_t OnCoreOffset(Mem m, const uint8_t* p) { return (uint64_t)(p - Cur().Base(m)); }

// After a store wrote GM [gm, gm + bytes) from memory srcMem at byte offset srcOff, on the current core.
template <typename T>
inline void NotePoisonStore(const char* api, const uint8_t* gm, uint64_t bytes, Mem srcMem, uint64_t srcOff) {
    LaunchState& L = *Cur().launch;
    PoisonLedger& P = L.poison;
    if (!P.on) return;
    const uint64_t a = (uint64_t)(uintptr_t)gm, e = a + bytes;
    uint64_t first = bytes;
    if constexpr (CarriesPoison<T>()) {
        for (uint64_t i = 0; i + sizeof(T) <= bytes; i += sizeof(T)) {
            if (IsPoison<T>(gm + i)) {
                first = i;
                break;
            }
        }
    }
    if (first == bytes && P.count.load(std::memory_order_relaxed) == 0) return;  // the common case
    if (first < bytes && InWorkspace(L, a)) return;
    std::lock_guard<std::mutex> g(P.mu);
    // Overwritten bytes no longer hold what an earlier store left: cut them out of the entries.
    auto it = P.left.lower_bound(a);
    if (it != P.left.begin() && std::prev(it)->second.end > a) --it;
    while (it != P.left.end() && it->first < e) {
        const uint64_t b = it->first;
        const PoisonLedger::Entry x = it->second;
        it = P.left.erase(it);
        if (b < a) P.left[b] = PoisonLedger::Entry{a, x.seq, x.core, x.api, x.srcOff, x.elem, x.srcMem, x.bits, x.size};
        if (x.end > e) P.left[e] = PoisonLedger::Entry{x.end, x.seq, x.core, x.api, x.srcOff, x.elem, x.srcMem, x.bits, x.size};
    }
    // Runs of poison elements of this store.
    for (uint64_t i = first; i < bytes;) {
        if (!IsPoison<T>(gm + i)) {
            i += sizeof(T);
            continue;
        }
        uint64_t j = i;
        while (j + sizeof(T) <= bytes && IsPoison<T>(gm + j)) j += sizeof(T);
        uint32_t bits = 0;
        std::memcpy(&bits, gm + i, sizeof(T));
        P.left[a + i] = PoisonLedger::Entry{a + j, P.seq++, Cur().id, api, srcOff, i / sizeof(T), (int8_t)srcMem, bits,
                                                 (uint8_t)sizeof(T)};
        i = j;
    }
    P.count = P.left.size();
}

// What a poison value says about where it came from.
inline std::string PoisonOrigin(uint32_t bits, uint8_t size) {
    if ((size == 4 && bits == 0xFFFFFFFFu) || (size == 2 && bits == 0xFFFFu)) {
        return "the twin's never-written poison itself, from bytes no instruction of the launch wrote, copied or "
               "passed through arithmetic (on the NPU, whatever an earlier kernel left in on-core memory)";
    }
    return "a value computed from never-written poison (its NaN payload, carried through arithmetic or a cast)";
}

// At the launch end: the earliest store whose poison is still in GM, as "[<core>] <api>: ...".
inline std::string PoisonLeftReport(LaunchState& L) {
    PoisonLedger& P = L.poison;
    if (!P.on || P.left.empty() || P.dataHasPattern) return "";
    auto best = P.left.begin();
    uint64_t bytes = 0;
    for (auto it = P.left.begin(); it != P.left.end(); ++it) {
        bytes += it->second.end - it->first;
        if (it->second.seq < best->second.seq) best = it;
    }
    const PoisonLedger::Entry& x = best->second;
    char msg[1024];
    std::snprintf(msg, sizeof msg,
                  "stored poison to %s (element %llu of the copy from %s byte %llu, a %u-byte 0x%0*x) and nothing "
                  "overwrote it by the launch end (%llu bytes of GM hold poison in all): it is %s. An output the host "
                  "reads must not depend on memory the kernel never wrote; store only computed elements "
                  "(DataCopyPad), or overwrite the redundant ones (programming guide, 非对齐场景)",
                  GmWhere(L, best->first).c_str(), (unsigned long long)x.elem, MemName((Mem)x.srcMem),
                  (unsigned long long)x.srcOff, x.size, x.size * 2, x.bits, (unsigned long long)bytes,
                  PoisonOrigin(x.bits, x.size).c_str());
    return "[" + L.cores[x.core]->Name() + "] " + x.api + ": " + msg;
}

}  // namespace twin
