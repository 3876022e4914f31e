// The scalar data cache (DCache) of dav-2201: GlobalTensor::GetValue/SetValue go through a private cache of 64-byte
// lines per core that does not see DMA or other cores. The twin keeps each core's lines and reports, instead of
// silently returning stale data, where a cache maintenance step is missing:
// - a GetValue hit on a line whose GM bytes changed since it was cached (DataCacheCleanAndInvalid before reading);
// - a write-back (DataCacheCleanAndInvalid of a dirty line) that would overwrite GM bytes another core or a DMA
//   changed since the line was cached (lines are written back whole: separate cores' data by 64 bytes);
// - a DMA or WriteGmByPassDCache writing bytes some core holds dirty (its later write-back would undo the write).
// SetValue bytes are written to the host buffer at once (the compiler's default DCCI before kernel end makes them
// visible then), while other cores' scalar reads keep seeing the old GM value until the line is written back.
// Publishing a line (write-back, bypass write) carries what the writing core's scalar pipe knew; a core that later
// reads those bytes learns it, so a DMA it issues after seeing a flag is ordered after the writer's earlier DMAs.
// - a DMA reading bytes some core holds dirty (the DMA would see the old GM bytes).
// Not modelled: eviction (lines stay until invalidated).
#pragma once
#include <chrono>
#include <thread>

#include "twin/launch/launch_state.h"

namespace twin {

constexpr uint64_t kDcLineBytes = 64;
constexpr uint64_t kGmBlockBytes = 32;

using DcLine = LaunchState::DcLine;

inline std::map<uint64_t, DcLine>& CoreLines(LaunchState& L, int core) {
    if (L.dcache.size() < L.cores.size()) L.dcache.resize(L.cores.size());
    return L.dcache[(size_t)core];
}

// "GM buffer 'name' byte k" for a message.
inline std::string GmWhere(const LaunchState& L, uint64_t a) {
    for (const GmRange& r : L.gm) {
        const uint64_t b = (uint64_t)(uintptr_t)r.begin;
        if (a >= b && a < b + r.bytes) return "GM buffer '" + r.name + "' byte " + std::to_string(a - b);
    }
    char buf[40];
    std::snprintf(buf, sizeof buf, "GM address 0x%llx", (unsigned long long)a);
    return buf;
}

// Bytes of the line at `line` that exist: the launch buffer holding `a` bounds them (a line may run past it).
inline void LineSpan(const LaunchState& L, uint64_t line, uint64_t a, uint64_t n, uint64_t& lo, uint64_t& hi) {
    lo = a;
    hi = a + n;
    for (const GmRange& r : L.gm) {
        const uint64_t b = (uint64_t)(uintptr_t)r.begin;
        if (a >= b && a < b + r.bytes) {
            lo = std::max(line, b);
            hi = std::min(line + kDcLineBytes, b + r.bytes);
        }
    }
}

// The GM byte at a as other agents see it: another core's dirty copy has not reached GM yet (*holder: that core).
inline uint8_t VisibleByte(LaunchState& L, int self, uint64_t a, int* holder = nullptr) {
    const uint64_t line = a & ~(kDcLineBytes - 1), bit = 1ull << (a - line);
    if (L.dcDirtyLines > 0) {
        for (size_t o = 0; o < L.dcache.size(); ++o) {
            if ((int)o == self) continue;
            auto it = L.dcache[o].find(line);
            if (it != L.dcache[o].end() && (it->second.dirty & bit)) {
                if (holder) *holder = (int)o;
                return it->second.orig[a - line];
            }
        }
    }
    return *(const uint8_t*)(uintptr_t)a;
}

// Seconds a core may keep reading GM bytes another core holds dirty before the twin calls it a missing write-back
// (a poll loop would spin until that core's kernel ends); NPU_TWIN_DCACHE_SPIN_S overrides the default 5.
inline double DcacheSpinLimit() {
    const char* e = std::getenv("NPU_TWIN_DCACHE_SPIN_S");
    return e ? std::atof(e) : 5.0;
}

// After a scalar read (fill or bypass read) of `line` by core c: holder >= 0 when some bytes it read are dirty in
// that core's cache. A read that keeps seeing such bytes for longer than the limit is a missing write-back.
inline void NoteDirtyRead(const char* api, CoreState& c, uint64_t line, uint64_t a, int holder) {
    auto it = std::find_if(c.dcSpin.begin(), c.dcSpin.end(), [&](const auto& e) { return e.first == line; });
    if (holder < 0) {
        if (it != c.dcSpin.end()) c.dcSpin.erase(it);
        return;
    }
    const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    if (it == c.dcSpin.end()) it = c.dcSpin.insert(c.dcSpin.end(), {line, now});
    if (now - it->second > DcacheSpinLimit()) {
        LaunchState& L = *c.launch;
        Fail(api, "has read %s for %.1f s while %s holds it dirty in its DCache: that core wrote it with "
                  "GlobalTensor::SetValue and has not written the line back (DataCacheCleanAndInvalid after the "
                  "SetValue), so this core keeps seeing the old value",
             GmWhere(L, a).c_str(), now - it->second, L.cores[holder]->Name().c_str());
    }
}

// The core learns what the publishers of the 32-byte blocks over [a, a + n) knew (every pipe: the scalar pipe
// stalls issue until the load returns).
inline void Acquire(CoreState& c, uint64_t a, uint64_t n) {
    if (!c.hz.on) return;
    LaunchState& L = *c.launch;
    for (uint64_t b = a & ~(kGmBlockBytes - 1); b < a + n; b += kGmBlockBytes) {
        auto it = L.gmRelease.find(b);
        if (it == L.gmRelease.end()) continue;
        for (auto& k : c.hz.known) MergeInto(k, it->second);
    }
}

inline void Release(CoreState& c, uint64_t a, uint64_t n, const std::vector<uint32_t>& knowledge) {
    if (!c.hz.on) return;
    for (uint64_t b = a & ~(kGmBlockBytes - 1); b < a + n; b += kGmBlockBytes) c.launch->gmRelease[b] = knowledge;
}

// Fails when a core (other than `self` unless includeSelf) holds [a, a + n) in a dirty line: `exact`, the bytes
// themselves are dirty (a SetValue); else any copy in a dirty line counts, since write-backs are whole lines (a DMA
// or bypass write, which the write-back would then undo).
inline void RequireNotDirty(LaunchState& L, int self, bool includeSelf, bool exact, const char* api, uint64_t a,
                            uint64_t n, bool dmaRead = false) {
    if (L.dcDirtyLines == 0) return;
    for (uint64_t line = a & ~(kDcLineBytes - 1); line < a + n; line += kDcLineBytes) {
        uint64_t mask = 0;
        for (uint64_t x = std::max(a, line); x < std::min(a + n, line + kDcLineBytes); ++x) mask |= 1ull << (x - line);
        for (size_t o = 0; o < L.dcache.size(); ++o) {
            if ((int)o == self && !includeSelf) continue;
            auto it = L.dcache[o].find(line);
            if (it == L.dcache[o].end() || it->second.dirty == 0) continue;
            const uint64_t hit = (exact ? it->second.dirty : it->second.valid) & mask;
            if (hit == 0) continue;
            const uint64_t x = line + (uint64_t)__builtin_ctzll(hit);
            const std::string holder = (int)o == self ? std::string("this core") : L.cores[o]->Name();
            if (dmaRead) {
                Fail(api, "reads %s, which %s holds dirty in its DCache (GlobalTensor::SetValue not yet written back): "
                          "the DMA would see the old GM bytes; write the line back first (DataCacheCleanAndInvalid on "
                          "%s%s)", GmWhere(L, x).c_str(), holder.c_str(), holder.c_str(),
                     (int)o == self ? "" : " and a cross-core sync to this core");
            }
            Fail(api, "writes %s, which %s holds in a dirty DCache line (GlobalTensor::SetValue not yet written "
                      "back): the later write-back of that line would overwrite this write; write the line back "
                      "first (DataCacheCleanAndInvalid on %s, then DataSyncBarrier<MemDsbT::DDR>%s)",
                 GmWhere(L, x).c_str(), holder.c_str(), holder.c_str(),
                 (int)o == self ? "" : " and a cross-core sync to this core");
        }
    }
}

// The line holding a, filled (from what GM shows) where it has no valid bytes yet. Called under dcMu.
inline DcLine& LineFor(const char* api, CoreState& c, uint64_t a, bool* missed = nullptr) {
    LaunchState& L = *c.launch;
    const uint64_t line = a & ~(kDcLineBytes - 1);
    DcLine& d = CoreLines(L, c.id)[line];
    uint64_t lo, hi;
    LineSpan(L, line, a, 1, lo, hi);
    bool filled = false;
    int holder = -1;
    uint64_t held = 0;
    for (uint64_t x = lo; x < hi; ++x) {
        const uint64_t bit = 1ull << (x - line);
        if (d.valid & bit) continue;
        int h = -1;
        d.data[x - line] = d.orig[x - line] = VisibleByte(L, c.id, x, &h);
        if (h >= 0 && holder < 0) {
            holder = h;
            held = x;
        }
        d.valid |= bit;
        filled = true;
    }
    if (filled) {
        NoteDirtyRead(api, c, line, held, holder);
        Acquire(c, lo, hi - lo);
    }
    if (missed) *missed = *missed || filled;
    return d;
}

// GetValue / SetValue of n bytes at a through this core's DCache.
inline void DcacheRead(const char* api, uint64_t a, void* out, uint64_t n) {
    CoreState& c = Cur();
    LaunchState& L = *c.launch;
    bool missed = false;
    std::unique_lock<std::mutex> g(L.dcMu);
    for (uint64_t x = a; x < a + n; ++x) {
        DcLine& d = LineFor(api, c, x, &missed);
        const uint64_t i = x & (kDcLineBytes - 1), bit = 1ull << i;
        if (!(d.dirty & bit) && d.data[i] != VisibleByte(L, c.id, x)) {
            Fail(api, "%s changed in GM (another core or a DMA wrote it) since this core's DCache cached its line, so "
                      "the NPU returns the stale cached value: call DataCacheCleanAndInvalid<T, CacheLine::"
                      "SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT> on it before GetValue",
                 GmWhere(L, x).c_str());
        }
        ((uint8_t*)out)[x - a] = d.data[i];
    }
    g.unlock();
    if (missed && c.traceOn && !c.trace.empty()) c.trace.back().dcMiss = true;  // the GetValue traced just before
    if (missed) std::this_thread::yield();  // most likely a poll loop after DataCacheCleanAndInvalid: let others run
}

inline void DcacheWrite(const char* api, uint64_t a, const void* in, uint64_t n) {
    CoreState& c = Cur();
    LaunchState& L = *c.launch;
    std::lock_guard<std::mutex> g(L.dcMu);
    RequireNotDirty(L, c.id, false, true, api, a, n);
    for (uint64_t x = a; x < a + n; ++x) {
        DcLine& d = LineFor(api, c, x);
        const uint64_t i = x & (kDcLineBytes - 1), bit = 1ull << i;
        if (d.dirty == 0) ++L.dcDirtyLines;
        d.dirty |= bit;
        d.data[i] = ((const uint8_t*)in)[x - a];
        *(uint8_t*)(uintptr_t)x = d.data[i];
    }
}

// Clean and invalidate: [from, line end) of the line holding `from`, or every line (entire).
inline void DcacheCleanInvalidate(const char* api, uint64_t from, bool entire) {
    CoreState& c = Cur();
    LaunchState& L = *c.launch;
    std::lock_guard<std::mutex> g(L.dcMu);
    std::map<uint64_t, DcLine>& lines = CoreLines(L, c.id);
    auto one = [&](std::map<uint64_t, DcLine>::iterator it, uint64_t lo) {
        DcLine& d = it->second;
        const uint64_t line = it->first;
        const uint64_t mask = ~0ull << (lo - line);
        if (d.dirty & mask) {  // written back: every valid byte of the range goes to GM
            for (uint64_t x = lo; x < line + kDcLineBytes; ++x) {
                const uint64_t i = x - line, bit = 1ull << i;
                if (!(d.valid & bit) || (d.dirty & bit)) continue;
                if (d.data[i] != VisibleByte(L, c.id, x)) {
                    Fail(api, "writing this core's dirty DCache line back would overwrite %s, which another core or a "
                              "DMA changed since the line was cached (lines are written back whole, 64 bytes): keep "
                              "each core's scalar GM data 64 bytes apart or use WriteGmByPassDCache",
                         GmWhere(L, x).c_str());
                }
            }
            if (c.hz.on) Release(c, lo, line + kDcLineBytes - lo, c.hz.known[HzPipe(PIPE_S)]);
            c.dcUnfenced.push_back(line);
        }
        const bool wasDirty = d.dirty != 0;
        d.valid &= ~mask;
        d.dirty &= ~mask;
        if (wasDirty && d.dirty == 0) --L.dcDirtyLines;
        if (d.valid == 0) {
            lines.erase(it);
            return;
        }
    };
    if (entire) {
        for (auto it = lines.begin(); it != lines.end();) {
            auto next = std::next(it);
            one(it, it->first);
            it = next;
        }
        return;
    }
    auto it = lines.find(from & ~(kDcLineBytes - 1));
    if (it != lines.end()) one(it, from);
}

// A DMA (GM -> UB/L1/L0) reads [p, p + n) of GM (NoteGm in launch/runtime.h).
inline void DcacheOnDmaRead(const char* api, const void* p, uint64_t n) {
    CoreState* c = tCore;
    if (c == nullptr || c->launch == nullptr) return;
    LaunchState& L = *c->launch;
    if (L.dcDirtyLines.load(std::memory_order_relaxed) == 0) return;
    std::lock_guard<std::mutex> g(L.dcMu);
    RequireNotDirty(L, c->id, true, true, api ? api : "DataCopy from GM", (uint64_t)(uintptr_t)p, n, true);
}

// A DMA or Fixpipe writes [p, p + n) of GM (sync/atomic_gm.h).
inline void DcacheOnDmaWrite(const void* p, uint64_t n) {
    CoreState* c = tCore;
    if (c == nullptr || c->launch == nullptr) return;
    LaunchState& L = *c->launch;
    if (L.dcDirtyLines.load(std::memory_order_relaxed) == 0) return;  // no SetValue pending anywhere: the common case
    std::lock_guard<std::mutex> g(L.dcMu);
    RequireNotDirty(L, c->id, true, false, "DataCopy/Fixpipe to GM", (uint64_t)(uintptr_t)p, n);
}

}  // namespace twin
