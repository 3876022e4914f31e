// Kernels for the cycle model's tests and calibration (one block each; p is an int32 GM buffer).
// isolated: one instruction between flag waits, picked by p[0] (0 Add, 1 Exp, 2 Muls, 3 Div, 4 DataCopy GM->UB,
// 5 DataCopy UB->GM) over p[1] float elements, so its modeled cost can be read off alone.
// stream: each block streams its own p[0] tiles of p[1] floats, GM -> UB -> (Exp, Muls) -> GM through TQue with
// p[2] buffers; p[3] = 1 adds PipeBarrier<PIPE_ALL> after every stage, which serialises MTE2, V and MTE3.
// chains: dependent, interleaved and independent vector instructions (below).
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void isolated(GM_ADDR prm, GM_ADDR in, GM_ADDR out) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 4);
    const int32_t which = P.GetValue(0);
    const uint32_t n = P.GetValue(1);
    GlobalTensor<float> inG, outG;
    inG.SetGlobalBuffer((__gm__ float*)in, n);
    outG.SetGlobalBuffer((__gm__ float*)out, n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 3 * n * sizeof(float));
    LocalTensor<float> a = buf.Get<float>(), b = a[n], c = a[2 * n];
    DataCopy(a, inG, n);
    DataCopy(b, inG, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Adds(b, b, 1.0f, n);  // keeps the divisor away from zero
    PipeBarrier<PIPE_V>();
    if (which == 0) Add(c, a, b, n);
    if (which == 1) Exp(c, a, n);
    if (which == 2) Muls(c, a, 0.5f, n);
    if (which == 3) Div(c, a, b, n);
    if (which >= 4) Duplicate(c, 0.0f, n);
    SetFlag<HardEvent::V_MTE2>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);
    if (which == 4) DataCopy(c, inG, n);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(outG, c, n);
}

extern "C" __global__ __aicore__ void stream(GM_ADDR prm, GM_ADDR in, GM_ADDR out) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 4);
    const int32_t tiles = P.GetValue(0), n = P.GetValue(1), bufs = P.GetValue(2), serial = P.GetValue(3);
    const int64_t base = (int64_t)GetBlockIdx() * tiles * n;
    GlobalTensor<float> inG, outG;
    inG.SetGlobalBuffer((__gm__ float*)in + base, tiles * n);
    outG.SetGlobalBuffer((__gm__ float*)out + base, tiles * n);
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> qin;
    TQue<QuePosition::VECOUT, 2> qout;
    pipe.InitBuffer(qin, bufs, n * sizeof(float));
    pipe.InitBuffer(qout, bufs, n * sizeof(float));
    for (int32_t t = 0; t < tiles; ++t) {
        LocalTensor<float> x = qin.AllocTensor<float>();
        DataCopy(x, inG[t * n], n);
        qin.EnQue(x);
        if (serial) PipeBarrier<PIPE_ALL>();
        LocalTensor<float> xi = qin.DeQue<float>();
        LocalTensor<float> y = qout.AllocTensor<float>();
        Exp(y, xi, n);
        PipeBarrier<PIPE_V>();
        Muls(y, y, 0.25f, n);
        qout.EnQue(y);
        qin.FreeTensor(xi);
        if (serial) PipeBarrier<PIPE_ALL>();
        LocalTensor<float> yo = qout.DeQue<float>();
        DataCopy(outG[t * n], yo, n);
        qout.FreeTensor(yo);
        if (serial) PipeBarrier<PIPE_ALL>();
    }
}

// cross (KERNEL_TYPE_MIX_AIC_1_2): p[0] = 0: p[1] ping-pong rounds, the AIC wakes its AIVs (mode 2, flag 0), each AIV
// fills p[2] floats of UB and answers (mode 2, flag 1, from PIPE_V). p[0] = 1: AIV 0 of block 0 fills p[2] floats
// p[1] times, then every core meets in SyncAll<false> and each AIV fills once more.
extern "C" __global__ __aicore__ void cross(GM_ADDR prm) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 4);
    const int32_t which = P.GetValue(0), rounds = P.GetValue(1), n = P.GetValue(2);
    TPipe pipe;
    if (which == 0) {
        for (int32_t r = 0; r < rounds; ++r) {
            if ASCEND_IS_AIC {
                CrossCoreSetFlag<2, PIPE_FIX>(0);
                CrossCoreWaitFlag(1);
            }
            if ASCEND_IS_AIV {
                TBuf<TPosition::VECCALC> buf;
                pipe.InitBuffer(buf, n * sizeof(float));
                CrossCoreWaitFlag(0);
                Duplicate(buf.Get<float>(), 1.0f, n);
                CrossCoreSetFlag<2, PIPE_V>(1);
                pipe.Reset();
            }
        }
        return;
    }
    TBuf<TPosition::VECCALC> buf;
    if ASCEND_IS_AIV {
        pipe.InitBuffer(buf, n * sizeof(float));
        if (GetBlockIdx() == 0) {
            for (int32_t r = 0; r < rounds; ++r) Duplicate(buf.Get<float>(), (float)r, n);
        }
    }
    SyncAll<false>();
    if ASCEND_IS_AIV {
        Duplicate(buf.Get<float>(), 2.0f, n);
    }
}

// chains: vector dependency patterns over buffers of p[1] floats, p[2] Adds each, after one GM -> UB load:
// p[0] = 0: one chain x = x + y; 1: two chains interleaved (x = x + y, z = z + y alternately); 2: independent Adds,
// each writing its own buffer from x and y.
extern "C" __global__ __aicore__ void chains(GM_ADDR prm, GM_ADDR in, GM_ADDR out) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 4);
    const int32_t which = P.GetValue(0), n = P.GetValue(1), k = P.GetValue(2);
    GlobalTensor<float> inG, outG;
    inG.SetGlobalBuffer((__gm__ float*)in, n);
    outG.SetGlobalBuffer((__gm__ float*)out, n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, (3 + k) * n * sizeof(float));
    LocalTensor<float> x = buf.Get<float>(), y = x[n], z = x[2 * n];
    DataCopy(x, inG, n);
    DataCopy(y, inG, n);
    DataCopy(z, inG, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    for (int32_t i = 0; i < k; ++i) {
        if (which == 0) Add(x, x, y, n);
        if (which == 1) {
            Add(x, x, y, n);
            Add(z, z, y, n);
        }
        if (which == 2) Add(x[(3 + i) * n], x, y, n);
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(outG, which == 2 ? x[3 * n] : x, n);
}
