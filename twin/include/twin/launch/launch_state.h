// State shared by all cores of one launch: the GM buffers the kernel may touch, cross-core flag counters, and
// the bookkeeping that turns "every live core is blocked" into an error instead of a hang.
#pragma once
#include <array>
#include <atomic>
#include <deque>
#include <map>
#include <functional>
#include <memory>

#include "twin/launch/runtime.h"
#include "twin/memory/poison.h"

namespace twin {

struct GmRange {
    const uint8_t* begin;
    uint64_t bytes;
    std::string name;
};

struct LaunchState {
    int kernelType = AscendC::KERNEL_TYPE_AIV_ONLY;
    uint32_t numBlocks = 1;
    std::vector<GmRange> gm;  // empty: GM accesses are not range-checked
    std::vector<CoreState*> cores;

    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> warnings;  // Warn(): harmless on the NPU but worth knowing (guarded by mu)
    int live = 0;
    int blocked = 0;
    bool aborted = false;
    std::string error;

    // Cross-core flags: counters[core][flag]; pending sets that wait for the rest of their group.
    std::vector<std::array<uint8_t, kCrossFlags>> counters;
    std::vector<std::array<uint32_t, kCrossFlags>> pending;  // per core: sets not yet matched by the group
    bool hwSyncAll = false;       // the hardware SyncAll ran (it owns flags 11-14; sync.h CheckRuntimeFlag)
    std::string syncAllFlagUser;  // the kernel's first own use of a flag in 11-14, for that check's message
    std::mutex atomicMu;
    std::mutex gmWriteMu;  // plain GM writes: compare with GM and copy as one step (sync/atomic_gm.h GmWrite)
    PoisonLedger poison;  // memory/poison_store.h

    // Hazard checking (hazard.h): the knowledge each pending/counted cross-core set carries, and the GM shadow.
    std::vector<std::array<std::deque<std::vector<uint32_t>>, kCrossFlags>> pendingSnaps, counterSnaps;
    std::mutex gmMu;
    HzShadow gmShadow;  // GM bytes written during the launch (guarded by gmMu)
    // Per core id, while it is blocked in BlockUntil: its wake-up condition. A core that was signalled but has not
    // re-acquired the mutex yet still counts in `blocked`, so the deadlock test asks these instead.
    std::vector<std::function<bool()>> waitPred;

    // Scalar data cache of each core (sync/dcache.h): per core id, 64-byte line address -> this core's copy.
    struct DcLine {
        uint8_t data[64];   // the core's copy (its SetValue bytes included)
        uint8_t orig[64];   // GM when the line was filled: what other agents still see of the dirty bytes
        uint64_t valid = 0, dirty = 0;  // byte masks
    };
    std::vector<std::map<uint64_t, DcLine>> dcache;
    std::atomic<int> dcDirtyLines{0};  // lines with dirty bytes, over all cores (read unlocked by the DMA fast path)
    // What a core knew when it published a 32-byte GM block (DCache write-back, bypass write, GM sync word); a core
    // that observes the block learns it (sync/dcache.h, sync/gm_sync.h).
    std::map<uint64_t, std::vector<uint32_t>> gmRelease;
    // The same per (counter word, value) for the software SyncAll: a core that sees a counter past the round it
    // waits for is guaranteed only what the setter knew when the counter reached that round.
    std::map<std::pair<uint64_t, int32_t>, std::vector<uint32_t>> roundRelease;
    std::mutex dcMu;  // guards dcache, dcDirtyLines, gmRelease, roundRelease; taken after mu, never before

    bool CrossCoreEnabled() const {
        return kernelType != AscendC::KERNEL_TYPE_AIV_ONLY && kernelType != AscendC::KERNEL_TYPE_AIC_ONLY;
    }
    CoreState* Find(int32_t type, int64_t block, int64_t sub) {
        for (CoreState* c : cores) {
            if (c->coreType == type && c->blockIdx == block && c->subBlockIdx == sub) return c;
        }
        return nullptr;
    }
};

// Records "[<core>] <api>: <message>" in the launch's warnings (each distinct message once, at most 64): something
// the NPU does silently and harmlessly that the docs do not forbid, but that the kernel likely did not mean.
inline void Warn(const char* api, const char* fmt, ...) {
    CoreState& c = Cur();
    va_list ap;
    va_start(ap, fmt);
    const std::string w = CoreMessage(api, fmt, ap);
    va_end(ap);
    std::lock_guard<std::mutex> g(c.launch->mu);
    std::vector<std::string>& v = c.launch->warnings;
    if (v.size() < 64 && std::find(v.begin(), v.end(), w) == v.end()) v.push_back(w);
}

// Fails when GM bytes [p, p+bytes) are not inside one buffer handed to the launch (when the launch declared them),
// naming the buffer it overlaps, where the access starts relative to it and the buffer's length (which counts
// aclrtMalloc's padding where the buffer ends its allocation).
inline void CheckGm(const char* api, const void* p, uint64_t bytes) {
    CoreState* c = tCore;
    if (c == nullptr || c->launch == nullptr || c->launch->gm.empty()) return;
    const uint8_t* q = (const uint8_t*)p;
    for (const GmRange& r : c->launch->gm) {
        if (q >= r.begin && q + bytes <= r.begin + r.bytes) return;
    }
    for (const GmRange& r : c->launch->gm) {
        if (q + bytes <= r.begin || q >= r.begin + r.bytes) continue;
        if (q < r.begin) {
            Fail(api, "GM access of %llu bytes starts %llu bytes before the start of buffer '%s' (length %llu bytes)",
                 (unsigned long long)bytes, (unsigned long long)(r.begin - q), r.name.c_str(),
                 (unsigned long long)r.bytes);
        }
        Fail(api, "GM access of %llu bytes at byte %llu of buffer '%s' (length %llu bytes) runs %llu bytes past its "
                  "end (the length counts aclrtMalloc's padding where the buffer ends its allocation)",
             (unsigned long long)bytes, (unsigned long long)(q - r.begin), r.name.c_str(), (unsigned long long)r.bytes,
             (unsigned long long)(q + bytes - (r.begin + r.bytes)));
    }
    Fail(api, "GM access of %llu bytes at %p is outside every buffer passed to the launch", (unsigned long long)bytes, p);
}

// Blocks the current core until pred() holds (pred is evaluated under lk). `what` describes the wait for a
// deadlock report. Fails with a report of every core's wait when all live cores are blocked.
template <class Pred>
inline void BlockUntil(std::unique_lock<std::mutex>& lk, const char* api, const std::string& what, Pred pred) {
    CoreState& c = Cur();
    LaunchState& L = *c.launch;
    if (pred()) return;
    if (L.waitPred.size() < L.cores.size()) L.waitPred.resize(L.cores.size());
    c.waitingFor = what;
    L.waitPred[c.id] = [&pred]() { return (bool)pred(); };
    ++L.blocked;
    auto leave = [&]() {
        --L.blocked;
        c.waitingFor.clear();
        L.waitPred[c.id] = nullptr;
    };
    for (;;) {
        if (L.aborted) {
            leave();
            throw TwinAborted();
        }
        if (pred()) break;
        if (L.blocked == L.live) {
            // Every live core is inside a wait; it is a deadlock only if none of them can proceed (a core that was
            // just signalled is still counted until it wakes up).
            bool anyReady = false;
            for (CoreState* o : L.cores) {
                if (o != &c && !o->waitingFor.empty() && L.waitPred[o->id] && L.waitPred[o->id]()) anyReady = true;
            }
            if (!anyReady) {
                std::string report;
                for (CoreState* o : L.cores) {
                    if (!o->waitingFor.empty()) report += "\n  " + o->Name() + " waits for " + o->waitingFor;
                }
                leave();
                lk.unlock();
                Fail(api, "deadlock: every live core is blocked:%s", report.c_str());
            }
        }
        L.cv.wait(lk);
    }
    leave();
}

// Checks one GM access of core c, pipe q at clock `now` against every core's writes and reads of those bytes.
inline void HazardGm(CoreState& c, const HzAccess& a, int q, uint32_t now) {
    LaunchState& L = *c.launch;
    const std::vector<uint32_t>& k = c.hz.known[q];
    HzConflict x;
    {
        std::lock_guard<std::mutex> g(L.gmMu);
        x = L.gmShadow.Access(a.off, a.off + a.bytes, a.write, a.atomic, HzWho{c.id, (int8_t)q, now, a.api},
                              [&](const HzWho& w) { return k[(size_t)w.core * kHzPipes + w.pipe] >= w.clk; },
                              [&](const HzWho& w) { return c.hz.SameOk(q, w, a.write, a.sameRaw); });
    }
    if (!x.found) return;
    std::string where = "GM";
    uint64_t base = 0;
    for (const GmRange& r : L.gm) {
        if (a.off >= (uint64_t)(uintptr_t)r.begin && a.off < (uint64_t)(uintptr_t)r.begin + r.bytes) {
            where = "GM buffer '" + r.name + "'";
            base = (uint64_t)(uintptr_t)r.begin;
        }
    }
    char range[80];
    std::snprintf(range, sizeof range, " bytes [%llu, %llu)", (unsigned long long)(x.who.lo - base),
                  (unsigned long long)(x.who.hi - base));
    const std::string other = std::string(x.who.api ? x.who.api : "an earlier instruction") + " on " +
                              L.cores[x.who.core]->Name() + " (pipe " + HzPipeName(x.who.pipe) + "," + range + ")";
    // Rule (a): across cores, only what the setting pipe had seen is ordered.
    const std::string hint = x.who.core == c.id ? std::string()
        : std::string("; a CrossCoreSetFlag orders only the earlier work of the pipe it is issued on and what that pipe "
                      "waited for: set it on PIPE_") + HzPipeName(x.who.pipe) + " or order " + HzPipeName(x.who.pipe) +
              " before the set (SetFlag/WaitFlag, PipeBarrier<PIPE_ALL>)";
    HazardFail(a, q, x.withWriter ? "wrote" : "may still be reading", other, x.at, where, base, x.samePipe, hint);
}

}  // namespace twin
