// Inter-core synchronisation through GM words (dav-2201): IBSet/IBWait, the software SyncAll, and the ordered
// execution of InitDetermineComputeWorkspace / WaitPreBlock / NotifyNextBlock; plus SetNextTaskStart /
// WaitPreTaskEnd. On the NPU each core spins on GM with DMA copies through a UB scratch tensor; the twin blocks the
// core's thread until the GM words it polls hold what it waits for (deadlocks are reported as for cross-core flags),
// fills the UB tensor as the copies would, and carries the setter's knowledge to the waiter for the hazard checker
// (each call is bracketed by PIPE_ALL barriers, as in the official implementation). The sync words are not checked
// as ordinary GM data: polling them while another core writes them is the protocol.
#pragma once
#include <thread>

#include "twin/sync/dcache.h"
#include "twin/sync/sync.h"

namespace twin {

// The blocks of a GM-sync kernel must all be resident (every doc page of these APIs): more blocks than cores run in
// rounds and hang. (Launches that fit the chip run every core on its own thread in the twin too.)
inline void RequireResident(const char* api) {
    CoreState& c = Cur();
    LaunchState& L = *c.launch;
    const bool aic = L.kernelType == AscendC::KERNEL_TYPE_AIC_ONLY;
    const uint32_t physical = aic ? c.chip->aicNum : c.chip->aivNum;
    if ((L.kernelType == AscendC::KERNEL_TYPE_AIV_ONLY || aic) && L.numBlocks > physical) {
        Fail(api, "numBlocks %u exceeds the %u %s cores of %s: the blocks would run in rounds and the GM "
                  "synchronisation would hang",
             L.numBlocks, physical, aic ? "cube" : "vector", c.chip->name);
    }
}

inline int32_t GmWord(uint64_t a) {
    int32_t v;
    std::memcpy(&v, (const void*)(uintptr_t)a, 4);
    return v;
}
inline void SetGmWords(uint64_t a, int32_t v, int n) {
    for (int i = 0; i < n; ++i) std::memcpy((void*)(uintptr_t)(a + 4 * i), &v, 4);
}

template <typename T>
inline void RequireUbWorkspace(const char* api, const AscendC::LocalTensor<T>& ub, uint64_t bytes) {
    if (!ub.Valid()) Fail(api, "ubWorkspace is not allocated");
    RequirePhys(api, "ubWorkspace", ub, Mem::UB);
    if (ub.GetLength() < bytes) {
        Fail(api, "ubWorkspace holds %u bytes; this call needs %llu", ub.GetLength(), (unsigned long long)bytes);
    }
}

// The UB scratch tensor receives `words` (the GM blocks the last poll copied) at byte `off`.
template <typename T>
inline void FillUb(const char* api, const AscendC::LocalTensor<T>& ub, uint64_t off, const std::vector<int32_t>& words) {
    const uint64_t bytes = words.size() * 4;
    NoteAccess(api, Mem::UB, ub.Addr(api) + off, bytes, true);
    Trace(api, PIPE_MTE2, words.size(), bytes, (uint32_t)(bytes / 32), ub.Ptr() + off, nullptr);
    std::memcpy(ub.Ptr() + off, words.data(), bytes);
}

inline std::vector<int32_t> GmWords(uint64_t a, uint64_t n) {
    std::vector<int32_t> w(n);
    std::memcpy(w.data(), (const void*)(uintptr_t)a, n * 4);
    return w;
}

inline void AllBarrier(const char* api) { Trace(api, PIPE_ALL, 0, 0, 0, nullptr, nullptr, TraceKind::Barrier); }

// Publishes / learns the knowledge carried by the sync words at [a, a + n) (call under L.mu).
inline void SyncRelease(CoreState& c, uint64_t a, uint64_t n) {
    std::lock_guard<std::mutex> g(c.launch->dcMu);
    if (c.hz.on) Release(c, a, n, c.hz.Merged());
}
inline void SyncAcquire(CoreState& c, uint64_t a, uint64_t n) {
    std::lock_guard<std::mutex> g(c.launch->dcMu);
    Acquire(c, a, n);
}

// IBSet / IBWait: the flag word of (blockIdx, eventID) goes 0 -> 1 (IBSet, after it is 0 again) and 1 -> 0 (IBWait).
template <bool isAIVOnly>
inline void IbFlag(const char* api, const AscendC::GlobalTensor<int32_t>& gm, const AscendC::LocalTensor<int32_t>& ub,
                   int32_t blockIdx, int32_t eventID, bool set) {
    CoreState& c = Cur();
    if (c.coreType != AscendC::AIV) return;  // the dav-2201 implementation returns on the AIC
    RequireResident(api);
    const int64_t n = isAIVOnly ? c.blockNum : c.blockNum * 2;
    if (blockIdx < 0 || blockIdx >= n) Fail(api, "blockIdx %d is outside [0, %lld] (the cores taking part)", blockIdx, (long long)n - 1);
    if (eventID < 0) Fail(api, "eventID %d is negative", eventID);
    RequireUbWorkspace(api, ub, 32);
    const uint64_t slot = (uint64_t)n * 8 * eventID + (uint64_t)blockIdx * 8;
    gm.CheckElems(api, slot, 8);
    const uint64_t a = (uint64_t)(uintptr_t)gm.GetPhyAddr(slot);
    LaunchState& L = *c.launch;
    AllBarrier(api);
    std::vector<int32_t> block;
    {
        std::unique_lock<std::mutex> lk(L.mu);
        char what[96];
        std::snprintf(what, sizeof what, "%s(blockIdx %d, eventID %d): GM flag word %d", api, blockIdx, eventID, set ? 0 : 1);
        BlockUntil(lk, api, what, [&] { return GmWord(a) == (set ? 0 : 1); });
        if (!set) SyncAcquire(c, a, 4);
        SetGmWords(a, set ? 1 : 0, 1);
        SyncRelease(c, a, 4);
        block = GmWords(a, 8);
        L.cv.notify_all();
    }
    FillUb(api, ub, 0, block);
    Trace(api, PIPE_S, 0, 0, 0, nullptr, nullptr, set ? TraceKind::CrossSet : TraceKind::CrossWait, (uint16_t)eventID);
    AllBarrier(api);
}

// Software SyncAll: core i raises its counter word (slot i), then waits until every participant's counter caught up.
template <bool isAIVOnly>
inline void SoftSyncAll(const AscendC::GlobalTensor<int32_t>& gm, const AscendC::LocalTensor<int32_t>& ub, int32_t usedCores) {
    const char* api = "SyncAll(gmWorkspace, ubWorkspace, usedCores)";
    CoreState& c = Cur();
    if (c.coreType != AscendC::AIV) return;  // the software form synchronises the AIVs only
    if (!isAIVOnly) Fail(api, "the software SyncAll supports only isAIVOnly = true (pure vector kernels)");
    RequireResident(api);
    const int64_t aivs = c.blockNum * c.taskRatio;
    if (usedCores < 0 || usedCores > aivs) {
        Fail(api, "usedCores %d is outside [0, %lld] (GetBlockNum() * GetTaskRatio())", usedCores, (long long)aivs);
    }
    const int64_t total = usedCores != 0 ? usedCores : aivs, me = c.apiBlockIdx;
    if (me >= total) Fail(api, "core %lld calls it but only cores 0..%lld take part (usedCores %d)", (long long)me, (long long)total - 1, usedCores);
    RequireUbWorkspace(api, ub, (uint64_t)total * 32);
    gm.CheckElems(api, 0, (uint64_t)total * 8);
    const uint64_t base = (uint64_t)(uintptr_t)gm.GetPhyAddr(), mine = base + (uint64_t)me * 32;
    LaunchState& L = *c.launch;
    AllBarrier(api);
    std::vector<int32_t> all;
    {
        std::unique_lock<std::mutex> lk(L.mu);
        if (std::find(c.softSyncWs.begin(), c.softSyncWs.end(), base) == c.softSyncWs.end()) {
            if (GmWord(mine) != 0) {
                Fail(api, "gmWorkspace word %lld holds %d at this core's first SyncAll: the workspace must be "
                          "initialised to 0 (on the host, or by every core before use)",
                     (long long)me * 8, GmWord(mine));
            }
            c.softSyncWs.push_back(base);
        }
        const int32_t round = GmWord(mine) + 1;
        SetGmWords(mine, round, 1);
        {
            std::lock_guard<std::mutex> g(L.dcMu);
            if (c.hz.on) L.roundRelease[{mine, round}] = c.hz.Merged();
        }
        L.cv.notify_all();
        char what[96];
        std::snprintf(what, sizeof what, "SyncAll (software, round %d): every gmWorkspace counter of %lld cores", round, (long long)total);
        BlockUntil(lk, api, what, [&] {
            for (int64_t i = 0; i < total; ++i) {
                if (GmWord(base + (uint64_t)i * 32) < round) return false;
            }
            return true;
        });
        {
            std::lock_guard<std::mutex> g(L.dcMu);
            for (int64_t i = 0; c.hz.on && i < total; ++i) {
                for (auto& k : c.hz.known) MergeInto(k, L.roundRelease[{base + (uint64_t)i * 32, round}]);
            }
        }
        all = GmWords(base, (uint64_t)total * 8);
    }
    FillUb(api, ub, 0, all);
    Trace(api, PIPE_S, 0, 0, 0, nullptr, nullptr, TraceKind::CrossWait, 0);
    AllBarrier(api);
}

// Ordered execution: the repeat counter k lives in ubWorkspace[n * 8]; in round k core i may pass WaitPreBlock once
// GM slots 0..i-1 hold k and slots i..n-1 hold 0; NotifyNextBlock writes k into slot i (the last core clears all).
struct DetermineArgs {
    int64_t n, me;
    uint64_t gm;
};

inline DetermineArgs DetermineCheck(const char* api, const AscendC::GlobalTensor<int32_t>& gm,
                                    const AscendC::LocalTensor<int32_t>& ub) {
    CoreState& c = Cur();
    RequireResident(api);
    const int64_t n = c.blockNum, me = c.apiBlockIdx;
    if (me >= n) {
        Fail(api, "GetBlockIdx() %lld >= GetBlockNum() %lld: the ordered-block APIs need one AIV per block "
                  "(KERNEL_TYPE_AIV_ONLY or MIX_AIV_1_0)",
             (long long)me, (long long)n);
    }
    RequireUbWorkspace(api, ub, (uint64_t)n * 32 + 32);
    gm.CheckElems(api, 0, (uint64_t)n * 8);
    return DetermineArgs{n, me, (uint64_t)(uintptr_t)gm.GetPhyAddr()};
}

inline int32_t RepeatCounter(const AscendC::LocalTensor<int32_t>& ub, int64_t n) {
    int32_t k;
    std::memcpy(&k, ub.Ptr() + n * 32, 4);
    return k;
}
inline void SetRepeatCounter(const char* api, const AscendC::LocalTensor<int32_t>& ub, int64_t n, int32_t k) {
    NoteAccess(api, Mem::UB, ub.Addr(api) + n * 32, 4, true);
    Trace(api, PIPE_S, 1, 4, 1, ub.Ptr() + n * 32, nullptr);
    std::memcpy(ub.Ptr() + n * 32, &k, 4);
}

inline void DetermineInit(AscendC::GlobalTensor<int32_t>& gm, AscendC::LocalTensor<int32_t>& ub) {
    const char* api = "InitDetermineComputeWorkspace";
    CoreState& c = Cur();
    if (c.coreType != AscendC::AIV) return;
    const DetermineArgs d = DetermineCheck(api, gm, ub);
    AllBarrier(api);
    if (d.me == 0) {
        {
            std::lock_guard<std::mutex> lk(c.launch->mu);
            SetGmWords(d.gm, 0, (int)(d.n * 8));
            SyncRelease(c, d.gm, (uint64_t)d.n * 32);
            c.launch->cv.notify_all();
        }
        FillUb(api, ub, 0, std::vector<int32_t>((size_t)d.n * 8, 0));
    }
    SetRepeatCounter(api, ub, d.n, 1);
    c.determineOpen = 0;
    AllBarrier(api);
}

inline void DetermineWait(AscendC::GlobalTensor<int32_t>& gm, AscendC::LocalTensor<int32_t>& ub) {
    const char* api = "WaitPreBlock";
    CoreState& c = Cur();
    if (c.coreType != AscendC::AIV) return;
    const DetermineArgs d = DetermineCheck(api, gm, ub);
    const int32_t k = RepeatCounter(ub, d.n);
    if (k <= 0) {
        Fail(api, "the repeat counter ubWorkspace[%lld] holds %d: call InitDetermineComputeWorkspace first (and keep "
                  "ubWorkspace for these calls only)",
             (long long)d.n * 8, k);
    }
    AllBarrier(api);
    std::vector<int32_t> all;
    {
        std::unique_lock<std::mutex> lk(c.launch->mu);
        char what[96];
        std::snprintf(what, sizeof what, "WaitPreBlock (round %d): blocks 0..%lld to notify", k, (long long)d.me - 1);
        BlockUntil(lk, api, what, [&] {
            for (int64_t i = 0; i < d.n; ++i) {
                if (GmWord(d.gm + (uint64_t)i * 32) != (i < d.me ? k : 0)) return false;
            }
            return true;
        });
        SyncAcquire(c, d.gm, (uint64_t)d.n * 32);
        all = GmWords(d.gm, (uint64_t)d.n * 8);
    }
    FillUb(api, ub, 0, all);
    ++c.determineOpen;
    Trace(api, PIPE_S, 0, 0, 0, nullptr, nullptr, TraceKind::CrossWait, (uint16_t)k);
    AllBarrier(api);
}

inline void DetermineNotify(AscendC::GlobalTensor<int32_t>& gm, AscendC::LocalTensor<int32_t>& ub) {
    const char* api = "NotifyNextBlock";
    CoreState& c = Cur();
    if (c.coreType != AscendC::AIV) return;
    const DetermineArgs d = DetermineCheck(api, gm, ub);
    if (c.determineOpen == 0) {
        Fail(api, "no WaitPreBlock before it on this core: every core must pair WaitPreBlock and NotifyNextBlock, "
                  "otherwise the block order (and the result) is not deterministic");
    }
    --c.determineOpen;
    const int32_t k = RepeatCounter(ub, d.n);
    const bool last = d.me + 1 == d.n;
    const uint64_t at = last ? d.gm : d.gm + (uint64_t)d.me * 32;
    const int words = last ? (int)(d.n * 8) : 8;
    AllBarrier(api);
    {
        std::lock_guard<std::mutex> lk(c.launch->mu);
        SetGmWords(at, last ? 0 : k, words);
        SyncRelease(c, at, (uint64_t)words * 4);
        c.launch->cv.notify_all();
    }
    FillUb(api, ub, at - d.gm, std::vector<int32_t>((size_t)words, last ? 0 : k));
    SetRepeatCounter(api, ub, d.n, k + 1);
    Trace(api, PIPE_S, 0, 0, 0, nullptr, nullptr, TraceKind::CrossSet, (uint16_t)k);
    AllBarrier(api);
}

// SetNextTaskStart / WaitPreTaskEnd let a SuperKernel's sub-kernels overlap; a single-kernel launch has no
// neighbour, so they order nothing. Each core must call each at most once.
inline void TaskSyncCall(const char* api, int& calls) {
    if (++calls > 1) Fail(api, "called %d times on this core; the docs allow one call per core", calls);
    Trace(api, PIPE_S, 0, 0, 0, nullptr, nullptr, TraceKind::Barrier);
}

}  // namespace twin

namespace AscendC {

template <bool isAIVOnly = true>
inline void IBSet(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace, int32_t blockIdx,
                  int32_t eventID) {
    twin::IbFlag<isAIVOnly>("IBSet", gmWorkspace, ubWorkspace, blockIdx, eventID, true);
}

template <bool isAIVOnly = true>
inline void IBWait(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace, int32_t blockIdx,
                   int32_t eventID) {
    twin::IbFlag<isAIVOnly>("IBWait", gmWorkspace, ubWorkspace, blockIdx, eventID, false);
}

template <bool isAIVOnly = true>
inline void SyncAll(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                    const int32_t usedCores = 0) {
    twin::SoftSyncAll<isAIVOnly>(gmWorkspace, ubWorkspace, usedCores);
}

inline void InitDetermineComputeWorkspace(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace) {
    twin::DetermineInit(gmWorkspace, ubWorkspace);
}
inline void WaitPreBlock(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace) {
    twin::DetermineWait(gmWorkspace, ubWorkspace);
}
inline void NotifyNextBlock(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace) {
    twin::DetermineNotify(gmWorkspace, ubWorkspace);
}

template <pipe_t AIV_PIPE = PIPE_MTE3, pipe_t AIC_PIPE = PIPE_FIX, bool FORCE = false>
inline void SetNextTaskStart() {
    static_assert(AIV_PIPE == PIPE_MTE2 || AIV_PIPE == PIPE_MTE3 || AIV_PIPE == PIPE_S || AIV_PIPE == PIPE_V,
                  "SetNextTaskStart: AIV_PIPE is one of PIPE_MTE2, PIPE_MTE3, PIPE_S, PIPE_V");
    static_assert(AIC_PIPE == PIPE_MTE1 || AIC_PIPE == PIPE_MTE2 || AIC_PIPE == PIPE_MTE3 || AIC_PIPE == PIPE_FIX ||
                      AIC_PIPE == PIPE_M,
                  "SetNextTaskStart: AIC_PIPE is one of PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_FIX, PIPE_M");
    twin::TaskSyncCall("SetNextTaskStart", twin::Cur().taskStartCalls);
}

template <bool FORCE = false>
inline void WaitPreTaskEnd() {
    twin::TaskSyncCall("WaitPreTaskEnd", twin::Cur().taskEndCalls);
}

}  // namespace AscendC
