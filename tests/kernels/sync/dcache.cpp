// Twin test kernels for the scalar data cache: GM flag polling, false sharing of a 64-byte line, stale lines after
// DMA writes, dirty lines under DMA and bypass writes, partial-line DataCacheCleanAndInvalid.
// prm (int32): [case, variant]. x: blocks rows of L floats; work: rows of L floats; flags: 16 int32 per block.
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t L = 40;

enum Case : int32_t {
    kPoll = 1,        // variant 0: as documented; 1: the reader does not invalidate; 2: the writer does not clean;
                      // 3: the writer sets the flag without waiting for its DMA; 4: the writer cleans the entire cache
    kFalseShare = 2,  // variant 0: two cores SetValue into one line; 1: 64 bytes apart; 2: WriteGmByPassDCache
    kOwnDma = 3,      // GetValue, a DMA write of that line, GetValue again; variant 1: invalidate in between
    kDirtyDma = 4,    // SetValue then a DMA write of that line; variant 1: clean in between
    kBypass = 5,      // SetValue, then WriteGmByPassDCache into that line: variant 0 as is, 1 after a clean,
                      // 2 after a clean and DataSyncBarrier<DDR>; 3: ReadGmByPassDCache of a line a DMA changed
    kPartial = 6,     // 8 uint64 SetValues from byte 32 of a line, clean, then a DMA over the last 4;
                      // variant 1: the second line is cleaned too
    kMissCost = 7,    // GetValue of work[0] (a miss), work[1] (a hit: same line), then after an invalidate work[0]
                      // again (a miss); out[0..2] = the three values
};

template <typename T>
__aicore__ inline void Clean(const GlobalTensor<T>& g) {
    DataCacheCleanAndInvalid<T, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(g);
}

__aicore__ inline void Poll(GM_ADDR xAddr, GM_ADDR workAddr, GM_ADDR flagsAddr, GM_ADDR outAddr, int32_t variant) {
    const int32_t n = GetBlockNum(), i = GetBlockIdx();
    GlobalTensor<float> x, work, out;
    x.SetGlobalBuffer((__gm__ float*)xAddr, n * L);
    work.SetGlobalBuffer((__gm__ float*)workAddr, n * L);
    out.SetGlobalBuffer((__gm__ float*)outAddr, L);
    GlobalTensor<int32_t> flags;
    flags.SetGlobalBuffer((__gm__ int32_t*)flagsAddr, n * 16);
    if (i == 0 && variant == 1) {
        for (int32_t j = 0; j < n; ++j) (void)flags.GetValue(j * 16);  // the flag lines are now cached
    }
    SyncAll<true>();
    TPipe pipe;
    TBuf<TPosition::VECCALC> aBuf, bBuf;
    pipe.InitBuffer(aBuf, L * sizeof(float));
    pipe.InitBuffer(bBuf, L * sizeof(float));
    LocalTensor<float> a = aBuf.Get<float>(), b = bBuf.Get<float>();
    DataCopy(a, x[i * L], L);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Muls(a, a, 3.0f, L);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(work[i * L], a, L);
    if (variant != 3) {
        SetFlag<HardEvent::MTE3_S>(0);
        WaitFlag<HardEvent::MTE3_S>(0);
    }
    GlobalTensor<int32_t> mine = flags[i * 16];
    mine.SetValue(0, i + 1);
    if (variant == 4) {
        DataCacheCleanAndInvalid<int32_t, CacheLine::ENTIRE_DATA_CACHE, DcciDst::CACHELINE_OUT>(mine);
    } else if (variant != 2 || i == 0) {
        Clean(mine);
    }
    if (i != 0) return;
    for (int32_t j = 0; j < n; ++j) {
        GlobalTensor<int32_t> f = flags[j * 16];
        for (;;) {
            if (variant != 1) Clean(f);
            if (f.GetValue(0) == j + 1) break;
        }
    }
    PipeBarrier<PIPE_ALL>();
    Duplicate(a, 0.0f, L);
    for (int32_t j = 0; j < n; ++j) {
        PipeBarrier<PIPE_ALL>();
        DataCopy(b, work[j * L], L);
        PipeBarrier<PIPE_ALL>();
        Add(a, a, b, L);
    }
    PipeBarrier<PIPE_ALL>();
    DataCopy(out, a, L);
}

__aicore__ inline void FalseShare(GM_ADDR flagsAddr, int32_t variant) {
    GlobalTensor<int32_t> flags;
    flags.SetGlobalBuffer((__gm__ int32_t*)flagsAddr, 64);
    const int32_t i = GetBlockIdx();
    GlobalTensor<int32_t> slot = flags[variant == 1 ? i * 16 : i];
    if (variant == 2) {
        WriteGmByPassDCache(const_cast<__gm__ int32_t*>(slot.GetPhyAddr()), 100 + i);
    } else {
        slot.SetValue(0, 100 + i);
    }
    SyncAll<true>();  // both copies are dirty before either is written back
    if (variant != 2) Clean(variant == 0 ? flags : slot);  // from the line start: the whole line goes back
}

extern "C" __global__ __aicore__ void dcache_case(GM_ADDR prm, GM_ADDR xAddr, GM_ADDR workAddr, GM_ADDR flagsAddr,
                                                  GM_ADDR outAddr) {
    GlobalTensor<int32_t> p;
    p.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    const int32_t which = p.GetValue(0), variant = p.GetValue(1);
    if (which == kPoll) return Poll(xAddr, workAddr, flagsAddr, outAddr, variant);
    if (which == kFalseShare) return FalseShare(flagsAddr, variant);
    GlobalTensor<float> x, work, out;
    x.SetGlobalBuffer((__gm__ float*)xAddr, L);
    work.SetGlobalBuffer((__gm__ float*)workAddr, L);
    out.SetGlobalBuffer((__gm__ float*)outAddr, L);
    TPipe pipe;
    TBuf<TPosition::VECCALC> aBuf;
    pipe.InitBuffer(aBuf, L * sizeof(float));
    LocalTensor<float> a = aBuf.Get<float>();
    DataCopy(a, x, L);
    PipeBarrier<PIPE_ALL>();
    switch (which) {
        case kOwnDma: {
            const float before = work.GetValue(0);
            DataCopy(work, a, L);
            PipeBarrier<PIPE_ALL>();
            if (variant == 1) Clean(work);
            out.SetValue(0, before);
            out.SetValue(1, work.GetValue(0));
            Clean(out);
            break;
        }
        case kDirtyDma:
            work.SetValue(3, -1.0f);
            if (variant == 1) Clean(work);
            PipeBarrier<PIPE_ALL>();
            DataCopy(work[8], a, 8);  // bytes 32..63: the same line, not the dirty bytes
            break;
        case kBypass: {
            GlobalTensor<int32_t> w;
            w.SetGlobalBuffer((__gm__ int32_t*)workAddr, L);
            if (variant == 3) {
                (void)w.GetValue(0);
                DataCopy(work, a, L);
                PipeBarrier<PIPE_ALL>();
                out.SetValue(0, (float)ReadGmByPassDCache(const_cast<__gm__ int32_t*>(w.GetPhyAddr())));
                Clean(out);
                break;
            }
            w.SetValue(0, 7);
            if (variant >= 1) Clean(w);
            if (variant == 2) DataSyncBarrier<MemDsbT::DDR>();
            WriteGmByPassDCache(const_cast<__gm__ int32_t*>(w.GetPhyAddr(1)), 9);
            break;
        }
        case kPartial: {
            GlobalTensor<uint64_t> g;
            g.SetGlobalBuffer((__gm__ uint64_t*)workAddr + 4, 8);
            for (int32_t k = 0; k < 8; ++k) g.SetValue(k, 1000 + k);
            Clean(g);  // bytes 32..63 of line 0 only
            if (variant == 1) Clean(g[4]);
            DataCacheCleanAndInvalid<uint64_t, CacheLine::SINGLE_CACHE_LINE>(g);
            PipeBarrier<PIPE_ALL>();
            DataCopy(work[24], a, 8);  // bytes 96..127 of line 1
            break;
        }
        case kMissCost: {
            const float first = work.GetValue(0), hit = work.GetValue(1);
            Clean(work);
            out.SetValue(0, first);
            out.SetValue(1, hit);
            out.SetValue(2, work.GetValue(0));
            Clean(out);
            break;
        }
        default: break;
    }
}
