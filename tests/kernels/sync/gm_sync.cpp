// Twin test kernels for GM-word synchronisation (IBSet/IBWait, software SyncAll, ordered blocks), SuperKernel task
// sync, GM atomics (add/max/min per type), reserved event IDs and consecutive cross-core sets.
// prm (int32): [case, p1, p2, p3]. Rows of x / out hold L floats (or LA elements of the atomic type).
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t L = 72;
constexpr uint32_t LA = 96;

enum Case : int32_t {
    kIbChain = 1,     // out row (r, i) = out row before it + x[i]; p1 rounds; p2 = 1: the IBWaits are left out
    kIbNeverSet = 2,  // block 1 waits for a flag nobody sets
    kIbBadIdx = 3,    // IBSet names waiting core p1
    kSoftSync = 4,    // p1 usedCores (0: all); p2 = 1: the middle SyncAll is left out; p3 UB workspace bytes (0: enough)
    kSoftSyncMix = 5, // the software SyncAll with isAIVOnly = false
    kOrdered = 6,     // p1 tiles; p2 = 1: NotifyNextBlock without WaitPreBlock; p2 = 2: no InitDetermineComputeWorkspace
    kTaskSync = 7,    // SetNextTaskStart and WaitPreTaskEnd, p1 times each
    kAtomic = 8,      // p1 type (0 float, 1 half, 2 int32, 3 int16, 4 int8, 5 bf16); p2 op (0 add, 1 max, 2 min,
                      // 3 SetAtomicMin<float> then SetAtomicType<T>)
    kReservedId = 9,  // SetFlag/WaitFlag<MTE2_V>(p1) with a live TPipe; p2 = 1: all 8 IDs taken by AllocEventID first
    kMisuse = 10,     // p1: 0 IBSet with eventID -1; 1 SyncAll(usedCores 2) on every core; 2 DCCI to CACHELINE_UB;
                      // 3 DCCI of an unallocated LocalTensor; 4 WaitPreBlock with an unallocated ubWorkspace;
                      // 5 InitDetermineComputeWorkspace (in a 1:2 mix launch)
    kGroupBarrier = 11,  // p1 arrivers (blocks 0..), p2 waiters (the next blocks), p3 rounds; prm[4] = 1: the last
                         // arriver skips round 2; prm[5]: byte offset of the workspace
};

// Round r: every arriver a atomically adds x row r * arrivers + a into out row r, then arrives; every waiter w waits
// and copies out row r to out row rounds + w * rounds + r.
__aicore__ inline void Barrier(GlobalTensor<float>& x, GM_ADDR ws, GlobalTensor<float>& out, int32_t arrivers,
                               int32_t waiters, int32_t rounds, bool skip) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> aBuf;
    pipe.InitBuffer(aBuf, L * sizeof(float));
    LocalTensor<float> a = aBuf.Get<float>();
    GroupBarrier<PipeMode::MTE3_MODE> bar(ws, arrivers, waiters);
    const int32_t id = GetBlockIdx();
    for (int32_t r = 0; r < rounds; ++r) {
        if (id < arrivers) {
            if (skip && r == 1 && id == arrivers - 1) continue;
            DataCopy(a, x[(r * arrivers + id) * L], L);
            PipeBarrier<PIPE_ALL>();
            SetAtomicAdd<float>();
            DataCopy(out[r * L], a, L);
            DisableDmaAtomic();
            PipeBarrier<PIPE_ALL>();
            bar.Arrive(id);
        } else if (id < arrivers + waiters) {
            const int32_t w = id - arrivers;
            bar.Wait(w);
            DataCopy(a, out[r * L], L);
            PipeBarrier<PIPE_ALL>();
            DataCopy(out[(rounds + w * rounds + r) * L], a, L);
            PipeBarrier<PIPE_ALL>();
        }
    }
}

__aicore__ inline void Sync() { PipeBarrier<PIPE_ALL>(); }

__aicore__ inline void IbChain(GlobalTensor<float>& x, GlobalTensor<int32_t>& ws, GlobalTensor<float>& out,
                               int32_t rounds, bool skipWait) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> aBuf, bBuf, fBuf;
    pipe.InitBuffer(aBuf, L * sizeof(float));
    pipe.InitBuffer(bBuf, L * sizeof(float));
    pipe.InitBuffer(fBuf, 32);
    LocalTensor<float> a = aBuf.Get<float>(), b = bBuf.Get<float>();
    LocalTensor<int32_t> flag = fBuf.Get<int32_t>();
    const int32_t n = GetBlockNum(), i = GetBlockIdx();
    for (int32_t r = 0; r < rounds; ++r) {
        const int32_t row = r * n + i;
        if (row > 0 && !skipWait) IBWait(ws, flag, i, 0);
        DataCopy(a, x[i * L], L);
        if (row > 0) DataCopy(b, out[(row - 1) * L], L);
        Sync();
        if (row > 0) Add(a, a, b, L);
        Sync();
        DataCopy(out[row * L], a, L);
        Sync();
        if (row + 1 < rounds * n) IBSet(ws, flag, (i + 1) % n, 0);
    }
}

// Every taking part core doubles its x row into work, then (after each SyncAll) sums what all cores wrote.
__aicore__ inline void SoftSync(GlobalTensor<float>& x, GlobalTensor<int32_t>& ws, GlobalTensor<float>& out,
                                int32_t usedCores, bool skipMiddle, int32_t ubBytes) {
    const int32_t n = GetBlockNum(), i = GetBlockIdx(), used = usedCores ? usedCores : n;
    if (i >= used) return;
    TPipe pipe;
    TBuf<TPosition::VECCALC> aBuf, bBuf, wBuf;
    pipe.InitBuffer(aBuf, L * sizeof(float));
    pipe.InitBuffer(bBuf, L * sizeof(float));
    pipe.InitBuffer(wBuf, ubBytes ? ubBytes : n * 32);
    LocalTensor<float> a = aBuf.Get<float>(), b = bBuf.Get<float>();
    LocalTensor<int32_t> w = wBuf.Get<int32_t>();
    GlobalTensor<float> work = out[n * L];
    DataCopy(a, x[i * L], L);
    Sync();
    Muls(a, a, 2.0f, L);
    Sync();
    DataCopy(work[i * L], a, L);
    SyncAll(ws, w, usedCores);
    for (int32_t j = 0; j < used; ++j) {
        if (j == i) continue;
        DataCopy(b, work[j * L], L);
        Sync();
        Add(a, a, b, L);
        Sync();
    }
    if (!skipMiddle) SyncAll(ws, w, usedCores);  // every core has read the work rows before they change
    DataCopy(work[i * L], a, L);
    SyncAll(ws, w, usedCores);
    Duplicate(a, 0.0f, L);
    for (int32_t j = 0; j < used; ++j) {
        Sync();
        DataCopy(b, work[j * L], L);
        Sync();
        Add(a, a, b, L);
    }
    Sync();
    DataCopy(out[i * L], a, L);
}

__aicore__ inline void Ordered(GlobalTensor<float>& x, GlobalTensor<int32_t>& ws, GlobalTensor<float>& out,
                               int32_t tiles, int32_t variant) {
    const int32_t n = GetBlockNum(), i = GetBlockIdx();
    TPipe pipe;
    TBuf<TPosition::VECCALC> aBuf, wBuf;
    pipe.InitBuffer(aBuf, L * sizeof(float));
    pipe.InitBuffer(wBuf, n * 32 + 32);
    LocalTensor<float> a = aBuf.Get<float>();
    LocalTensor<int32_t> w = wBuf.Get<int32_t>();
    if (variant != 2) InitDetermineComputeWorkspace(ws, w);
    for (int32_t t = 0; t < tiles; ++t) {
        DataCopy(a, x[(t * n + i) * L], L);
        Sync();
        if (variant != 1) WaitPreBlock(ws, w);
        SetAtomicAdd<float>();
        DataCopy(out[t * L], a, L);
        DisableDmaAtomic();
        NotifyNextBlock(ws, w);
        Sync();
    }
}

template <typename T>
__aicore__ inline void AtomicRows(GM_ADDR x, GM_ADDR out, int32_t op) {
    GlobalTensor<T> xg, og;
    xg.SetGlobalBuffer((__gm__ T*)x + GetBlockIdx() * LA, LA);
    og.SetGlobalBuffer((__gm__ T*)out, LA);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, LA * sizeof(T));
    LocalTensor<T> t = buf.Get<T>();
    DataCopy(t, xg, LA);
    Sync();
    if (op == 0) SetAtomicAdd<T>();
    if (op == 1) SetAtomicMax<T>();
    if (op == 2) SetAtomicMin<T>();
    if (op == 3) {
        SetAtomicMin<float>();
        SetAtomicType<T>();
    }
    DataCopy(og, t, LA);
    DisableDmaAtomic();
}

extern "C" __global__ __aicore__ void gm_sync_case(GM_ADDR prm, GM_ADDR xAddr, GM_ADDR wsAddr, GM_ADDR outAddr) {
    GlobalTensor<int32_t> p, ws;
    p.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    ws.SetGlobalBuffer((__gm__ int32_t*)wsAddr, 128);
    GlobalTensor<float> x, out;
    x.SetGlobalBuffer((__gm__ float*)xAddr);
    out.SetGlobalBuffer((__gm__ float*)outAddr);
    const int32_t which = p.GetValue(0), p1 = p.GetValue(1), p2 = p.GetValue(2), p3 = p.GetValue(3);
    switch (which) {
        case kIbChain: IbChain(x, ws, out, p1, p2 == 1); break;
        case kIbNeverSet:
        case kIbBadIdx: {
            TPipe pipe;
            TBuf<TPosition::VECCALC> fBuf;
            pipe.InitBuffer(fBuf, 32);
            LocalTensor<int32_t> flag = fBuf.Get<int32_t>();
            if (which == kIbNeverSet && GetBlockIdx() == 1) IBWait(ws, flag, 1, 3);
            if (which == kIbBadIdx) IBSet(ws, flag, p1, 0);
            break;
        }
        case kSoftSync: SoftSync(x, ws, out, p1, p2 == 1, p3); break;
        case kSoftSyncMix: {
            TPipe pipe;
            TBuf<TPosition::VECCALC> wBuf;
            pipe.InitBuffer(wBuf, 1024);
            LocalTensor<int32_t> w = wBuf.Get<int32_t>();
            SyncAll<false>(ws, w);
            break;
        }
        case kOrdered: Ordered(x, ws, out, p1, p2); break;
        case kTaskSync:
            for (int32_t k = 0; k < p1; ++k) {
                WaitPreTaskEnd();
                SetNextTaskStart();
            }
            break;
        case kAtomic:
            switch (p1) {
                case 0: AtomicRows<float>(xAddr, outAddr, p2); break;
                case 1: AtomicRows<half>(xAddr, outAddr, p2); break;
                case 2: AtomicRows<int32_t>(xAddr, outAddr, p2); break;
                case 3: AtomicRows<int16_t>(xAddr, outAddr, p2); break;
                case 4: AtomicRows<int8_t>(xAddr, outAddr, p2); break;
                default: AtomicRows<bfloat16_t>(xAddr, outAddr, p2); break;
            }
            break;
        case kReservedId: {
            TPipe pipe;
            if (p2 == 1) {
                for (int32_t k = 0; k < 8; ++k) pipe.AllocEventID<HardEvent::MTE2_V>();
            }
            SetFlag<HardEvent::MTE2_V>(p1);
            WaitFlag<HardEvent::MTE2_V>(p1);
            break;
        }
        case kGroupBarrier:
            Barrier(x, wsAddr + p.GetValue(5), out, p1, p2, p3, p.GetValue(4) == 1);
            break;
        case kMisuse: {
            if ASCEND_IS_AIC {
                return;
            }
            TPipe pipe;
            TBuf<TPosition::VECCALC> wBuf;
            pipe.InitBuffer(wBuf, 1024);
            LocalTensor<int32_t> w = wBuf.Get<int32_t>(), none;
            if (p1 == 0) IBSet(ws, w, 0, -1);
            if (p1 == 1) SyncAll(ws, w, 2);
            if (p1 == 2) DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_UB>(ws);
            if (p1 == 3) DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_UB>(none);
            if (p1 == 4) WaitPreBlock(ws, none);
            if (p1 == 5) InitDetermineComputeWorkspace(ws, w);
            break;
        }
        default: break;
    }
}

// Consecutive CrossCoreSetFlag of one flagId on the AIC (mix 1:2, one block). p[0]: 0 = set 0, wait 1, set 0;
// 1 = set 0, set 0; 2 = set 0, set 1; 3 = set 0 sixteen times while the AIVs wait for flag 1 first.
extern "C" __global__ __aicore__ void cross_twice(GM_ADDR prm) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<int32_t> p;
    p.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    const int32_t v = p.GetValue(0);
    if (v == 3) {
        if ASCEND_IS_AIC {
            for (int i = 0; i < 16; ++i) CrossCoreSetFlag<2, PIPE_FIX>(0);
            CrossCoreSetFlag<2, PIPE_FIX>(1);
        }
        if ASCEND_IS_AIV {
            CrossCoreWaitFlag(1);
            for (int i = 0; i < 16; ++i) CrossCoreWaitFlag(0);
        }
        return;
    }
    if ASCEND_IS_AIC {
        CrossCoreSetFlag<2, PIPE_FIX>(0);
        if (v == 0) CrossCoreWaitFlag(1);
        CrossCoreSetFlag<2, PIPE_FIX>(v == 2 ? 1 : 0);
    }
    if ASCEND_IS_AIV {
        CrossCoreWaitFlag(0);
        if (v == 0) CrossCoreSetFlag<2, PIPE_MTE3>(1);
        CrossCoreWaitFlag(v == 2 ? 1 : 0);
    }
}

// Cross-core flag IDs the runtime uses (mix 1:2). p[0]: 0 = AIC -> AIV on flag 12 by hand, no SyncAll (legal);
// 1 = the same, then the hardware SyncAll; 2 = SyncAll, then flag 12 by hand; 3 = flag 15 by hand; 4 = flag 10 by hand
// and SyncAll (legal).
extern "C" __global__ __aicore__ void reserved_cross(GM_ADDR prm) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<int32_t> p;
    p.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    const int32_t v = p.GetValue(0);
    const uint16_t flag = v == 3 ? 15 : v == 4 ? 10 : 12;
    if (v == 2) SyncAll<false>();
    if ASCEND_IS_AIC {
        CrossCoreSetFlag<2, PIPE_FIX>(flag);
    }
    if ASCEND_IS_AIV {
        CrossCoreWaitFlag(flag);
    }
    if (v == 1 || v == 4) SyncAll<false>();
}
