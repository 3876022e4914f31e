// Same-pipe ordering rules of the docs (PipeBarrier page; Mmad page): two MTE2 or two MTE3 transfers writing
// overlapping destination bytes need PipeBarrier<PIPE_MTE2/MTE3>; an Mmad accumulating into an L0C tile a previous
// Mmad wrote needs PipeBarrier<PIPE_M> when (m / 16) * (n / 16) < 10. params[0] picks the case; odd cases break a
// rule, even cases are the correct forms.
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t N = 256;  // halves

__aicore__ inline void VectorCase(int32_t which, GM_ADDR x, GM_ADDR z) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4 * N * sizeof(half));
    LocalTensor<half> a = buf.Get<half>();
    LocalTensor<half> b = a[N];
    GlobalTensor<half> xg, zg;
    xg.SetGlobalBuffer((__gm__ half*)x, N);
    zg.SetGlobalBuffer((__gm__ half*)z, N);
    switch (which) {
        case 1:  // MTE2 -> MTE2, same UB bytes, no barrier
        case 2:  // ... with PipeBarrier<PIPE_MTE2>
        case 4:  // ... with PipeBarrier<PIPE_ALL>
        case 6:  // ... ordered by a flag round trip through PIPE_V
        case 8:  // disjoint destinations need nothing
            DataCopy(a, xg, N);
            if (which == 2) PipeBarrier<PIPE_MTE2>();
            if (which == 4) PipeBarrier<PIPE_ALL>();
            if (which == 6) {
                SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
                WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
                SetFlag<HardEvent::V_MTE2>(EVENT_ID0);
                WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);
            }
            DataCopy(which == 8 ? b : a[64], xg, 64);  // overlaps a[64, 128) unless case 8
            break;
        case 3:  // MTE3 -> MTE3, overlapping GM destinations, no barrier
        case 10: {  // ... with PipeBarrier<PIPE_MTE3>
            DataCopy(a, xg, N);
            SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
            DataCopy(zg, a, N);
            if (which == 10) PipeBarrier<PIPE_MTE3>();
            DataCopy(zg[128], a, 64);
            break;
        }
        case 12: {  // overlapping atomic adds to GM may overlap (the adds commute)
            Duplicate(a, (half)1.0f, N);
            SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
            SetAtomicAdd<half>();
            DataCopy(zg, a, N);
            DataCopy(zg, a, N);
            SetAtomicNone();
            break;
        }
        case 14: {  // dependent vector instructions: the compiler's auto-sync orders PIPE_V, nothing to insert
            DataCopy(a, xg, N);
            SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
            Muls(b, a, (half)2.0f, N);
            Adds(b, b, (half)1.0f, N);
            SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
            DataCopy(zg, b, N);
            break;
        }
        default: break;
    }
}

// Two Mmads into one L0C tile, the second accumulating; m = n = `mn`.
__aicore__ inline void CubeCase(int32_t which, uint32_t mn, GM_ADDR x) {
    TPipe pipe;
    TBuf<TPosition::A1> l1;
    TBuf<TPosition::A2> l0a;
    TBuf<TPosition::B2> l0b;
    TBuf<TPosition::CO1> l0c;
    pipe.InitBuffer(l1, 2 * N * sizeof(half));
    pipe.InitBuffer(l0a, 64 * 16 * sizeof(half));
    pipe.InitBuffer(l0b, 64 * 16 * sizeof(half));
    pipe.InitBuffer(l0c, 64 * 64 * sizeof(float));
    if (which == 7) {  // Fill into L1 then a GM -> L1 copy over it: both MTE2 (the forward kernel's first defect)
        GlobalTensor<half> xg;
        xg.SetGlobalBuffer((__gm__ half*)x, N);
        Fill(l1.Get<half>(), InitConstValueParams<half>(1, (uint16_t)(2 * N * sizeof(half) / 32), 0, (half)0.0f));
        DataCopy(l1.Get<half>(), xg, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));
        return;
    }
    const uint16_t blocks = (uint16_t)(mn * 16 * sizeof(half) / 512);
    Fill(l0a.Get<half>(), InitConstValueParams<half>(1, blocks, 0, (half)0.5f));
    Fill(l0b.Get<half>(), InitConstValueParams<half>(1, blocks, 0, (half)0.25f));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadParams p((uint16_t)mn, (uint16_t)mn, 16, 0, false, true);
    Mmad(l0c.Get<float>(), l0a.Get<half>(), l0b.Get<half>(), p);
    if (which == 16) PipeBarrier<PIPE_M>();
    p.cmatrixInitVal = false;
    Mmad(l0c.Get<float>(), l0a.Get<half>(), l0b.Get<half>(), p);
}

extern "C" __global__ __aicore__ void same_pipe(GM_ADDR params, GM_ADDR x, GM_ADDR z) {
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t*)params, 8);
    const int32_t which = pg.GetValue(0);
    const uint32_t mn = (uint32_t)pg.GetValue(1);
    const bool cube = which == 5 || which == 7 || which >= 16;
    if (cube) {
        if ASCEND_IS_AIC { CubeCase(which == 5 ? 5 : which, mn, x); }
    } else if ASCEND_IS_AIV {
        if (GetBlockIdx() == 0) VectorCase(which, x, z);
    }
}
