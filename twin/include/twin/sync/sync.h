// In-core pipe sync (SetFlag/WaitFlag/PipeBarrier with the per-core HardEvent pools), cross-core flags
// (CrossCoreSetFlag/WaitFlag modes 0/1/2, SyncAll) and the GM atomic mode (type and add/max/min).
// The twin runs each core's instructions in program order, so a WaitFlag whose SetFlag never came would hang the
// NPU: it is an error here, as is a second SetFlag before the Wait and a Set still pending at kernel end.
#pragma once
#include "twin/launch/launch_state.h"
#include "twin/memory/tensor.h"

namespace twin {

inline const char* HardEventName(int e) {
    static const char* n[] = {"MTE2_MTE1", "MTE1_MTE2", "MTE1_M", "M_MTE1", "MTE2_V", "V_MTE2", "MTE3_V", "V_MTE3",
                              "M_V", "V_M", "V_V", "MTE3_MTE1", "MTE1_MTE3", "MTE1_V", "MTE2_M", "M_MTE2", "V_MTE1",
                              "M_FIX", "FIX_M", "MTE3_MTE2", "MTE2_MTE3", "S_V", "V_S", "S_MTE2", "MTE2_S", "S_MTE3",
                              "MTE3_S", "MTE2_FIX", "FIX_MTE2", "FIX_S", "M_S", "FIX_MTE3", "MTE1_FIX", "FIX_MTE1",
                              "FIX_FIX"};
    return (e >= 0 && e < kNumHardEvents) ? n[e] : "?";
}

// Source and destination pipe of each HardEvent, in enum order.
inline void HardEventPipes(int e, pipe_t& src, pipe_t& dst) {
    static const pipe_t t[][2] = {
        {PIPE_MTE2, PIPE_MTE1}, {PIPE_MTE1, PIPE_MTE2}, {PIPE_MTE1, PIPE_M}, {PIPE_M, PIPE_MTE1}, {PIPE_MTE2, PIPE_V},
        {PIPE_V, PIPE_MTE2}, {PIPE_MTE3, PIPE_V}, {PIPE_V, PIPE_MTE3}, {PIPE_M, PIPE_V}, {PIPE_V, PIPE_M},
        {PIPE_V, PIPE_V}, {PIPE_MTE3, PIPE_MTE1}, {PIPE_MTE1, PIPE_MTE3}, {PIPE_MTE1, PIPE_V}, {PIPE_MTE2, PIPE_M},
        {PIPE_M, PIPE_MTE2}, {PIPE_V, PIPE_MTE1}, {PIPE_M, PIPE_FIX}, {PIPE_FIX, PIPE_M}, {PIPE_MTE3, PIPE_MTE2},
        {PIPE_MTE2, PIPE_MTE3}, {PIPE_S, PIPE_V}, {PIPE_V, PIPE_S}, {PIPE_S, PIPE_MTE2}, {PIPE_MTE2, PIPE_S},
        {PIPE_S, PIPE_MTE3}, {PIPE_MTE3, PIPE_S}, {PIPE_MTE2, PIPE_FIX}, {PIPE_FIX, PIPE_MTE2}, {PIPE_FIX, PIPE_S},
        {PIPE_M, PIPE_S}, {PIPE_FIX, PIPE_MTE3}, {PIPE_MTE1, PIPE_FIX}, {PIPE_FIX, PIPE_MTE1}, {PIPE_FIX, PIPE_FIX}};
    src = t[e][0];
    dst = t[e][1];
}

// dav-2201 event pools: the AIC has 24 HardEvents, the AIV 13; an event of the other core's pool is meaningless.
inline bool EventOnCore(int e, int32_t coreType) {
    using H = AscendC::HardEvent;
    static const H aiv[] = {H::MTE2_V, H::V_MTE2, H::MTE3_V, H::V_MTE3, H::V_V, H::MTE3_MTE2, H::MTE2_MTE3,
                            H::S_V, H::V_S, H::S_MTE2, H::MTE2_S, H::S_MTE3, H::MTE3_S};
    static const H aic[] = {H::MTE2_MTE1, H::MTE1_MTE2, H::MTE1_M, H::M_MTE1, H::MTE3_MTE1, H::MTE1_MTE3,
                            H::MTE2_M, H::M_MTE2, H::M_FIX, H::FIX_M, H::MTE3_MTE2, H::MTE2_MTE3, H::S_MTE2,
                            H::MTE2_S, H::S_MTE3, H::MTE3_S, H::MTE2_FIX, H::FIX_MTE2, H::FIX_S, H::M_S,
                            H::FIX_MTE3, H::MTE1_FIX, H::FIX_MTE1, H::FIX_FIX};
    if (coreType == AscendC::AIV) {
        for (H h : aiv) if ((int)h == e) return true;
    } else {
        for (H h : aic) if ((int)h == e) return true;
    }
    return false;
}

inline void CheckEvent(const char* api, int e, int32_t id) {
    CoreState& c = Cur();
    if (e < 0 || e >= kNumHardEvents) Fail(api, "invalid HardEvent %d", e);
    if (!EventOnCore(e, c.coreType)) {
        Fail(api, "HardEvent::%s does not exist on the %s", HardEventName(e), c.coreType == AscendC::AIC ? "cube core (AIC)" : "vector core (AIV)");
    }
    if (id < 0 || id >= kEventIds) Fail(api, "event ID %d of HardEvent::%s is outside [0, %d]", id, HardEventName(e), kEventIds - 1);
}

// On the AIC a live TPipe keeps M_MTE1 IDs 0-2 (set for the Matmul API and bias loading); user code must not use them.
inline void CheckReservedId(const char* api, int e, int32_t id) {
    CoreState& c = Cur();
    if (c.coreType == AscendC::AIC && c.pipe != nullptr && e == (int)AscendC::HardEvent::M_MTE1 && id < 3) {
        Fail(api, "HardEvent::M_MTE1 ID %d is reserved by TPipe on the cube core (IDs 0-2); use IDs 3-7", id);
    }
}

// While a TPipe is alive, event IDs 6 (system) and 7 (TPipe's automatic synchronisation) are not for hand-written
// SetFlag/WaitFlag (dav-2201 architecture and SetFlag pages); IDs handed out by AllocEventID are.
inline void CheckManualId(const char* api, int e, int32_t id) {
    CheckEvent(api, e, id);
    CoreState& c = Cur();
    if (c.pipe != nullptr && id >= 6 && !c.idTaken[e][id]) {
        Fail(api, "event ID %d of HardEvent::%s is reserved while a TPipe is alive (6: system, 7: TPipe automatic "
                  "sync); use IDs 0-5 or one from TPipe::AllocEventID",
             id, HardEventName(e));
    }
}

inline void DoSetFlag(const char* api, int e, int32_t id) {
    CheckEvent(api, e, id);
    CoreState& c = Cur();
    if (c.flagSet[e][id]) {
        Fail(api, "HardEvent::%s ID %d is set twice without a WaitFlag in between (undefined on the NPU)", HardEventName(e), id);
    }
    c.flagSet[e][id] = true;
    pipe_t s, d;
    HardEventPipes(e, s, d);
    Trace(api, s, 0, 0, 0, nullptr, nullptr, TraceKind::SetFlag, (uint16_t)(e * 8 + id));
}

inline void DoWaitFlag(const char* api, int e, int32_t id) {
    CheckEvent(api, e, id);
    CoreState& c = Cur();
    if (!c.flagSet[e][id]) {
        Fail(api, "HardEvent::%s ID %d was never set: the destination pipe would wait forever", HardEventName(e), id);
    }
    c.flagSet[e][id] = false;
    pipe_t s, d;
    HardEventPipes(e, s, d);
    Trace(api, d, 0, 0, 0, nullptr, nullptr, TraceKind::WaitFlag, (uint16_t)(e * 8 + id));
}

// Event IDs handed out by TPipe::AllocEventID and the queues; 8 per HardEvent per core.
inline int32_t AllocEventId(const char* api, int e) {
    CoreState& c = Cur();
    CheckEvent(api, e, 0);
    for (int id = 0; id < kEventIds; ++id) {
        if (!c.idTaken[e][id]) {
            c.idTaken[e][id] = true;
            return id;
        }
    }
    Fail(api, "all %d event IDs of HardEvent::%s are in use (too many buffers in flight; the NPU would hang)", kEventIds, HardEventName(e));
}

inline void ReleaseEventId(const char* api, int e, int32_t id) {
    CoreState& c = Cur();
    CheckEvent(api, e, id);
    if (!c.idTaken[e][id]) Fail(api, "event ID %d of HardEvent::%s released but not allocated", id, HardEventName(e));
    c.idTaken[e][id] = false;
}

// ---- cross-core flags ----

inline void RequireCrossCore(const char* api) {
    CoreState& c = Cur();
    if (!c.launch->CrossCoreEnabled()) {
        Fail(api, "cross-core sync does not work in KERNEL_TYPE_AIV_ONLY / AIC_ONLY launches (use a MIX kernel type)");
    }
}

// One more pending count on `target`'s flag, carrying the knowledge `snap` of the set(s) that produced it.
inline void BumpCounter(const char* api, CoreState& target, uint16_t flag, const std::vector<uint32_t>& snap) {
    LaunchState& L = *target.launch;
    uint8_t& cnt = L.counters[target.id][flag];
    if (cnt >= 15) {
        Fail(api, "cross-core flag %u of %s saturates at 15 pending sets (add a reverse sync)", flag, target.Name().c_str());
    }
    ++cnt;
    L.counterSnaps[target.id][flag].push_back(snap);
}

// Group members that a mode-0/1 set must collect before anyone's counter moves.
inline std::vector<CoreState*> CrossGroup(CoreState& c, uint8_t mode) {
    std::vector<CoreState*> g;
    for (CoreState* o : c.launch->cores) {
        if (o->coreType != c.coreType) continue;
        if (mode == 1 && o->blockIdx != c.blockIdx) continue;
        g.push_back(o);
    }
    return g;
}

// Takes one pending set from every member of `group` and returns the union of what they knew.
inline std::vector<uint32_t> CollectSets(LaunchState& L, const std::vector<CoreState*>& group, uint16_t flag) {
    std::vector<uint32_t> merged;
    for (CoreState* o : group) {
        --L.pending[o->id][flag];
        std::deque<std::vector<uint32_t>>& q = L.pendingSnaps[o->id][flag];
        if (merged.empty()) merged = q.front(); else MergeInto(merged, q.front());
        q.pop_front();
    }
    return merged;
}

// Cross-core flag IDs the runtime uses (rule (c)). The hardware SyncAll uses 11-14 (CrossCoreSetFlag(ISASI).md,
// 约束说明: "SyncAll硬件同步接口flagId占用范围为[11-14]"); CANN's kernel wrapper of a dav-2201 mix kernel clears the
// workspace on each AIC and signals its AIVs on flag 15 (NotifyEvent<PIPE_MTE3>(15), mode 2: asc-devkit
// kernel_kfc.h clearWorkspace, emitted by compile_op.py), so an AIV's flag-15 counter starts at 1; the dav-2201
// architecture page (架构规格/NPU架构版本2201.md, 核间同步) gives user code flagIds 0-10. A kernel may use 11-14 only
// when it never calls the hardware SyncAll (the official cross_core_set_wait_flag example uses 11-13 alone), and 15
// not at all in a launch with AIC and AIV cores. Call under L.mu; `internal`: the call is SyncAll's own.
inline void CheckRuntimeFlag(const char* api, CoreState& c, uint16_t flag, bool internal) {
    LaunchState& L = *c.launch;
    const bool aicAndAiv = L.kernelType == AscendC::KERNEL_TYPE_MIX_AIC_1_1 || L.kernelType == AscendC::KERNEL_TYPE_MIX_AIC_1_2;
    if (internal) {
        L.hwSyncAll = true;
        if (!L.syncAllFlagUser.empty()) {
            Fail(api, "the hardware SyncAll uses cross-core flags 11-14, which this kernel also uses by hand (%s): the "
                      "counters would mix (CrossCoreSetFlag page: SyncAll occupies flagId 11-14); use IDs 0-10",
                 L.syncAllFlagUser.c_str());
        }
        return;
    }
    if (flag == 15 && aicAndAiv) {
        Fail(api, "cross-core flag 15 is used by CANN's kernel wrapper of a mix kernel (the workspace clearing on each "
                  "AIC signals its AIVs with NotifyEvent<PIPE_MTE3>(15)); use IDs 0-10 (dav-2201 architecture page)");
    }
    if (flag < 11 || flag > 14) return;
    if (L.hwSyncAll) {
        Fail(api, "cross-core flag %u is used by the hardware SyncAll this kernel also calls (SyncAll occupies flagId "
                  "11-14, CrossCoreSetFlag page); use IDs 0-10", flag);
    }
    if (L.syncAllFlagUser.empty()) L.syncAllFlagUser = std::string(api) + "(" + std::to_string(flag) + ") on " + c.Name();
}

// `pipe`: the pipe the set is issued on; it publishes what that pipe has seen (PIPE_ALL: the whole core).
// Setting one flagId again before its wait is legal: each flagId is a counter of 0-15 pending sets
// (CrossCoreSetFlag(ISASI).md, flagId constraints; the dav-2201 hardware-constraints page: more than 15 sets need a
// reverse sync). The 2201 architecture page's "不允许连续设置同一个flagId" contradicts its own next bullet (a flagId's
// counter may be set up to 15 times); the twin follows the API page and refuses only the 16th pending set.
inline void CrossSet(const char* api, uint8_t mode, uint16_t flag, pipe_t pipe, bool internal = false) {
    CoreState& c = Cur();
    RequireCrossCore(api);
    if (flag >= kCrossFlags) Fail(api, "flagId %u is outside [0, 15]", flag);
    if (!internal && mode > 2) Fail(api, "modeId %u is not supported on dav-2201 (0, 1 or 2)", mode);
    LaunchState& L = *c.launch;
    std::vector<uint32_t> snap;
    if (c.hz.on) snap = (pipe == PIPE_ALL || HzPipe(pipe) < 0) ? c.hz.Merged() : c.hz.known[HzPipe(pipe)];
    std::lock_guard<std::mutex> lk(L.mu);
    CheckRuntimeFlag(api, c, flag, internal);
    if (mode == 1 && c.coreType != AscendC::AIV) Fail(api, "mode 1 synchronises the AIVs of one AI core; called on the AIC");
    if (mode == 1 && L.kernelType != AscendC::KERNEL_TYPE_MIX_AIC_1_2) Fail(api, "mode 1 needs two AIVs per AI core (KERNEL_TYPE_MIX_AIC_1_2)");
    if (mode == 0 || mode == 1) {
        ++L.pending[c.id][flag];
        L.pendingSnaps[c.id][flag].push_back(std::move(snap));
        std::vector<CoreState*> g = CrossGroup(c, mode);
        bool all = true;
        for (CoreState* o : g) all = all && L.pending[o->id][flag] > 0;
        if (all) {
            const std::vector<uint32_t> merged = CollectSets(L, g, flag);
            for (CoreState* o : g) BumpCounter(api, *o, flag, merged);
        }
    } else if (c.coreType == AscendC::AIC) {  // mode 2, AIC -> each AIV of its block
        bool any = false;
        for (CoreState* o : L.cores) {
            if (o->coreType == AscendC::AIV && o->blockIdx == c.blockIdx) {
                BumpCounter(api, *o, flag, snap);
                any = true;
            }
        }
        if (!any) Fail(api, "mode 2 from the AIC needs AIVs in the launch");
    } else {  // mode 2, AIV -> AIC once every AIV of the block has set
        CoreState* aic = L.Find(AscendC::AIC, c.blockIdx, 0);
        if (aic == nullptr) Fail(api, "mode 2 from an AIV needs an AIC in the launch");
        ++L.pending[c.id][flag];
        L.pendingSnaps[c.id][flag].push_back(std::move(snap));
        bool all = true;
        std::vector<CoreState*> aivs;
        for (CoreState* o : L.cores) {
            if (o->coreType == AscendC::AIV && o->blockIdx == c.blockIdx) {
                aivs.push_back(o);
                all = all && L.pending[o->id][flag] > 0;
            }
        }
        if (all) BumpCounter(api, *aic, flag, CollectSets(L, aivs, flag));
    }
    L.cv.notify_all();
}

// `pipe`: the pipe that waits. PIPE_S (the default) stalls instruction issue, so every later instruction of the
// core is ordered after the set; another pipe only orders its own later instructions.
inline void CrossWait(const char* api, uint16_t flag, pipe_t pipe, bool internal = false) {
    CoreState& c = Cur();
    RequireCrossCore(api);
    if (flag >= kCrossFlags) Fail(api, "flagId %u is outside [0, 15]", flag);
    LaunchState& L = *c.launch;
    std::unique_lock<std::mutex> lk(L.mu);
    CheckRuntimeFlag(api, c, flag, internal);
    char what[64];
    std::snprintf(what, sizeof what, "cross-core flag %u", flag);
    BlockUntil(lk, api, what, [&] { return L.counters[c.id][flag] > 0; });
    --L.counters[c.id][flag];
    std::deque<std::vector<uint32_t>>& q = L.counterSnaps[c.id][flag];
    if (!q.empty()) {
        if (c.hz.on) {
            const int w = HzPipe(pipe);
            if (pipe == PIPE_S || pipe == PIPE_ALL || w < 0) {
                for (int p = 0; p < kHzPipes; ++p) c.hz.Learn(p, q.front());
            } else {
                c.hz.Learn(w, q.front());
            }
        }
        q.pop_front();
    }
}

// Atomic data type of UB/L1->GM DataCopy and Fixpipe->GM (kAtomicNone: plain writes); CoreState::atomicOp says
// what the atomic does.
enum AtomicKind : int { kAtomicNone = 0, kAtomicF32, kAtomicF16, kAtomicBf16, kAtomicS32, kAtomicS16, kAtomicS8 };
enum AtomicOpKind : int { kAtomicAdd = 0, kAtomicMax, kAtomicMin };

template <typename T>
constexpr int AtomicKindOf() {
    if (std::is_same<T, float>::value) return kAtomicF32;
    if (std::is_same<T, half>::value) return kAtomicF16;
    if (std::is_same<T, bfloat16_t>::value) return kAtomicBf16;
    if (std::is_same<T, int32_t>::value) return kAtomicS32;
    if (std::is_same<T, int16_t>::value) return kAtomicS16;
    if (std::is_same<T, int8_t>::value) return kAtomicS8;
    return -1;
}

// Sets the atomic data type (and, op >= 0, the operation) for later GM writes.
template <typename T>
inline void SetAtomicMode(const char* api, int op) {
    constexpr int k = AtomicKindOf<T>();
    static_assert(k > 0, "the dav-2201 atomic types are int8_t, int16_t, half, bfloat16_t, int32_t and float");
    CoreState& c = Cur();
    c.atomicKind = k;
    if (op >= 0) c.atomicOp = op;
    Trace(api, PIPE_S, 0, 0, 0, nullptr, nullptr, TraceKind::Atomic, (uint16_t)(k + 8 * c.atomicOp));
}

}  // namespace twin

namespace twin {

// PipeBarrier<pipe> and the raw intrinsic it issues (pipe_barrier, impl/basic_api/kernel_reg.h): the PipeBarrier page
// excludes PIPE_S (scalar instructions are ordered by the hardware).
inline void DoPipeBarrier(const char* api, pipe_t pipe) {
    if (pipe == PIPE_S) Fail(api, "PIPE_S is not a valid barrier pipe");
    if (HzPipe(pipe) < 0 && pipe != PIPE_ALL) Fail(api, "%d is not a pipe of dav-2201", (int)pipe);
    Trace("PipeBarrier", pipe, 0, 0, 0, nullptr, nullptr, TraceKind::Barrier);
}

}  // namespace twin

namespace AscendC {

template <HardEvent event>
inline void SetFlag(int32_t eventID) {
    twin::CheckManualId("SetFlag", (int)event, eventID);
    twin::CheckReservedId("SetFlag", (int)event, eventID);
    twin::DoSetFlag("SetFlag", (int)event, eventID);
}
template <HardEvent event>
inline void WaitFlag(int32_t eventID) {
    twin::CheckManualId("WaitFlag", (int)event, eventID);
    twin::CheckReservedId("WaitFlag", (int)event, eventID);
    twin::DoWaitFlag("WaitFlag", (int)event, eventID);
}

template <pipe_t pipe>
inline void PipeBarrier() {
    twin::DoPipeBarrier("PipeBarrier", pipe);
}

template <pipe_t src, pipe_t dst>
class TQueSync {
public:
    void SetFlag(int32_t id) {
        twin::CheckManualId("TQueSync::SetFlag", EventOf(), id);
        twin::DoSetFlag("TQueSync::SetFlag", EventOf(), id);
    }
    void WaitFlag(int32_t id) {
        twin::CheckManualId("TQueSync::WaitFlag", EventOf(), id);
        twin::DoWaitFlag("TQueSync::WaitFlag", EventOf(), id);
    }

private:
    static int EventOf() {
        for (int e = 0; e < twin::kNumHardEvents; ++e) {
            pipe_t s, d;
            twin::HardEventPipes(e, s, d);
            if (s == src && d == dst) return e;
        }
        twin::Fail("TQueSync", "no HardEvent connects these pipes");
    }
};

template <uint8_t modeId, pipe_t pipe>
inline void CrossCoreSetFlag(uint16_t flagId) {
    if (pipe == PIPE_S || pipe == PIPE_ALL) twin::Fail("CrossCoreSetFlag", "pipe must not be PIPE_S or PIPE_ALL");
    twin::CrossSet("CrossCoreSetFlag", modeId, flagId, pipe);
    twin::Trace("CrossCoreSetFlag", pipe, 0, 0, modeId, nullptr, nullptr, twin::TraceKind::CrossSet, flagId);
}

template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
inline void CrossCoreWaitFlag(uint16_t flagId) {
    twin::CrossWait("CrossCoreWaitFlag", flagId, pipe);
    twin::Trace("CrossCoreWaitFlag", pipe, 0, 0, modeId, nullptr, nullptr, twin::TraceKind::CrossWait, flagId);
}

// Hardware all-core barrier. AIV-only form: mode 0 on flag 14 across all AIVs. Mixed form: AIV->AIC (mode 2,
// flag 12), AIC<->AIC (mode 0, flag 11), AIC->AIV (mode 2, flag 13).
template <bool isAIVOnly = true>
inline void SyncAll() {
    const char* api = "SyncAll";
    twin::Trace(api, PIPE_ALL, 0, 0, 0, nullptr, nullptr, twin::TraceKind::Barrier);
    twin::CoreState& c = twin::Cur();
    if (isAIVOnly) {
        twin::RequireAiv("SyncAll<true>");
        twin::CrossSet(api, 0, 14, PIPE_ALL, true);
        twin::CrossWait(api, 14, PIPE_ALL, true);
        return;
    }
    if (c.launch->kernelType != KERNEL_TYPE_MIX_AIC_1_1 && c.launch->kernelType != KERNEL_TYPE_MIX_AIC_1_2) {
        twin::Fail("SyncAll<false>", "the mixed form needs AIC and AIV cores (KERNEL_TYPE_MIX_AIC_1_1/1_2)");
    }
    if (c.coreType == AIV) {
        twin::CrossSet(api, 2, 12, PIPE_ALL, true);
        twin::CrossWait(api, 13, PIPE_ALL, true);
    } else {
        twin::CrossWait(api, 12, PIPE_ALL, true);
        twin::CrossSet(api, 0, 11, PIPE_ALL, true);
        twin::CrossWait(api, 11, PIPE_ALL, true);
        twin::CrossSet(api, 2, 13, PIPE_ALL, true);
    }
}

template <typename T>
inline void SetAtomicType() {
    twin::SetAtomicMode<T>("SetAtomicType", -1);
}
template <typename T>
inline void SetAtomicAdd() {
    twin::SetAtomicMode<T>("SetAtomicAdd", twin::kAtomicAdd);
}
template <typename T>
inline void SetAtomicMax() {
    twin::SetAtomicMode<T>("SetAtomicMax", twin::kAtomicMax);
}
template <typename T>
inline void SetAtomicMin() {
    twin::SetAtomicMode<T>("SetAtomicMin", twin::kAtomicMin);
}
inline void SetAtomicNone() {
    twin::Cur().atomicKind = twin::kAtomicNone;
    twin::Trace("SetAtomicNone", PIPE_S, 0, 0, 0, nullptr, nullptr, twin::TraceKind::Atomic, 0);
}
inline void DisableDmaAtomic() { SetAtomicNone(); }

}  // namespace AscendC

// The raw intrinsic of CANN's compiler that PipeBarrier<pipe> issues (impl/basic_api/kernel_reg.h), with the pipe as a
// run-time argument; kernels such as catlass's call it directly.
inline void pipe_barrier(pipe_t pipe) { twin::DoPipeBarrier("pipe_barrier", pipe); }
