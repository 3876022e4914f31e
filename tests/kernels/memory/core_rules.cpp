// Kernels of tests/test_twin_memory_rules.py: which memories a core may allocate and touch (twin/memory/core_mem.h),
// buffer capacities, ND -> NZ copies judged by the bytes they write (cube/data_copy.h Nd2NzRuns),
// LocalTensor::SetAddr and SetSyncBaseAddr. P (int32) holds the case and its numbers.
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t kN = 256;  // halves of x per copy (512 B)

// Mix 1:2. Every core allocates every buffer whole, as catlass's Arch::Resource does (addresses only), plus
// explicit-address tensors of both core kinds. P[0]: 0 each core moves x through its own memory (AIC: GM -> L1
// -> y[0, kN); AIV sub s: GM -> UB -> y[kN * (1 + s), ...)); 1 the AIVs copy GM -> L1; 2 the AIC copies GM -> UB.
extern "C" __global__ __aicore__ void both_kinds(GM_ADDR x, GM_ADDR y, GM_ADDR prm) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    GlobalTensor<half> xG, yG;
    xG.SetGlobalBuffer((__gm__ half*)x, kN);
    yG.SetGlobalBuffer((__gm__ half*)y, 3 * kN);
    const int32_t kase = P.GetValue(0);
    TPipe pipe;
    TBuf<TPosition::A1> l1;
    TBuf<TPosition::A2> l0a;
    TBuf<TPosition::B2> l0b;
    TBuf<TPosition::CO1> l0c;
    TBuf<TPosition::C2> bt;
    TBuf<TPosition::C2PIPE2GM> fb;
    TBuf<TPosition::VECCALC> ub;
    GetTPipePtr()->InitBuffer(l1, 512 * 1024);
    GetTPipePtr()->InitBuffer(l0a, 64 * 1024);
    GetTPipePtr()->InitBuffer(l0b, 64 * 1024);
    GetTPipePtr()->InitBuffer(l0c, 128 * 1024);
    GetTPipePtr()->InitBuffer(bt, 1024);
    GetTPipePtr()->InitBuffer(fb, 7 * 1024);
    GetTPipePtr()->InitBuffer(ub, 192 * 1024);
    LocalTensor<half> a1(TPosition::A1, 1024, kN);
    LocalTensor<half> vec(TPosition::VECCALC, 1024, kN);
    if ASCEND_IS_AIC {
        LocalTensor<half> t = (kase == 2) ? vec : l1.Get<half>();
        DataCopy(t, xG, kN);
        PipeBarrier<PIPE_ALL>();
        DataCopy(yG, t, kN);
    }
    if ASCEND_IS_AIV {
        LocalTensor<half> t = (kase == 1) ? a1 : ub.Get<half>();
        DataCopy(t, xG, kN);
        PipeBarrier<PIPE_ALL>();
        DataCopy(yG[kN * (1 + GetSubBlockIdx())], t, kN);
    }
}

template <TPosition pos>
__aicore__ inline void TakeBytes(TPipe& pipe, uint32_t bytes) {
    TBuf<pos> b;
    pipe.InitBuffer(b, bytes);
}

// One TBuf of P[1] bytes in memory P[0] (0 L1, 1 L0A, 2 L0B, 3 L0C, 4 BiasTable, 5 Fixpipe Buffer, 6 UB).
extern "C" __global__ __aicore__ void capacity(GM_ADDR prm) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    const int32_t m = P.GetValue(0);
    const uint32_t bytes = (uint32_t)P.GetValue(1);
    TPipe pipe;
    if (m == 0) TakeBytes<TPosition::A1>(pipe, bytes);
    if (m == 1) TakeBytes<TPosition::A2>(pipe, bytes);
    if (m == 2) TakeBytes<TPosition::B2>(pipe, bytes);
    if (m == 3) TakeBytes<TPosition::CO1>(pipe, bytes);
    if (m == 4) TakeBytes<TPosition::C2>(pipe, bytes);
    if (m == 5) TakeBytes<TPosition::C2PIPE2GM>(pipe, bytes);
    if (m == 6) TakeBytes<TPosition::VECCALC>(pipe, bytes);
}

// AIC: 2 KB of words GM -> L1 -> Fixpipe Buffer byte P[0] (a 7 KB TBuf holds the FB addresses).
extern "C" __global__ __aicore__ void fb_copy(GM_ADDR w, GM_ADDR prm) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    GlobalTensor<uint64_t> wG;
    wG.SetGlobalBuffer((__gm__ uint64_t*)w, 256);
    const uint32_t at = (uint32_t)P.GetValue(0);
    if ASCEND_IS_AIV {
        return;
    }
    TPipe pipe;
    TBuf<TPosition::C1> l1;
    TBuf<TPosition::C2PIPE2GM> fb;
    pipe.InitBuffer(l1, 2048);
    pipe.InitBuffer(fb, 7 * 1024);
    LocalTensor<uint64_t> src = l1.Get<uint64_t>();
    DataCopy(src, wG, 256);
    PipeBarrier<PIPE_ALL>();
    DataCopy(fb.Get<uint64_t>()[at / 8], src, DataCopyParams(1, 16, 0, 0));
}

// AIC: x (kN halves) GM -> L1 at byte P[0] -> y.
extern "C" __global__ __aicore__ void l1_at(GM_ADDR x, GM_ADDR y, GM_ADDR prm) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    GlobalTensor<half> xG, yG;
    xG.SetGlobalBuffer((__gm__ half*)x, kN);
    yG.SetGlobalBuffer((__gm__ half*)y, kN);
    const uint32_t at = (uint32_t)P.GetValue(0);
    if ASCEND_IS_AIV {
        return;
    }
    LocalTensor<half> t(TPosition::A1, at, kN);
    DataCopy(t, xG, kN);
    PipeBarrier<PIPE_ALL>();
    DataCopy(yG, t, kN);
}

// AIC: the 32 x 32 half ND matrix x into one NZ tile in L1 (2 column blocks of 32 rows), then the tile to y.
// P[0]: 0 two copies of the even and odd rows (dstNzNStride 2, the second 32 B further): their spans interleave,
// their bytes do not; 1 the second copy onto the first one's rows (a real overlap, no PipeBarrier); 2 one copy
// whose two column blocks interleave row by row (dstNzNStride 2, dstNzC0Stride 1); 3 one copy whose second column
// block starts inside the first (dstNzC0Stride 24 < 32 rows).
extern "C" __global__ __aicore__ void nd2nz(GM_ADDR x, GM_ADDR y, GM_ADDR prm) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    GlobalTensor<half> xG, yG;
    xG.SetGlobalBuffer((__gm__ half*)x, 32 * 32);
    yG.SetGlobalBuffer((__gm__ half*)y, 32 * 32);
    const int32_t kase = P.GetValue(0);
    TPipe pipe;
    TBuf<TPosition::B1> l1;
    pipe.InitBuffer(l1, 32 * 32 * sizeof(half));
    LocalTensor<half> t = l1.Get<half>();
    Nd2NzParams p(1, 32, 32, 0, 32, 32, 1, 0);  // ndNum, nValue, dValue, srcNdMatrixStride, srcDValue, C0, N, Matrix
    if (kase == 0 || kase == 1) {
        p.nValue = 16;
        p.srcDValue = 64;
        p.dstNzNStride = 2;
        DataCopy(t, xG, p);
        DataCopy(kase == 0 ? t[16] : t, xG[32], p);
    } else {
        if (kase == 2) {
            p.dstNzNStride = 2;
            p.dstNzC0Stride = 1;
        } else {
            p.dstNzC0Stride = 24;
        }
        DataCopy(t, xG, p);
    }
    PipeBarrier<PIPE_ALL>();
    DataCopy(yG, t, 32 * 32);
}

// AIC: the 16 x 32 half ND matrix x into one NZ tile (2 column blocks of 16 rows) one row per DataCopy (2 blocks
// of 32 B, dstGap 15), as catlass's interval copies do, then the tile to y. P[0]: 0 row i to its own 32 B rows (the
// spans interleave, the bytes do not); 1 every row onto row 0's bytes (a real overlap, no PipeBarrier).
extern "C" __global__ __aicore__ void interval_rows(GM_ADDR x, GM_ADDR y, GM_ADDR prm) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    GlobalTensor<half> xG, yG;
    xG.SetGlobalBuffer((__gm__ half*)x, 16 * 32);
    yG.SetGlobalBuffer((__gm__ half*)y, 16 * 32);
    const int32_t kase = P.GetValue(0);
    TPipe pipe;
    TBuf<TPosition::A1> l1;
    pipe.InitBuffer(l1, 16 * 32 * sizeof(half));
    LocalTensor<half> t = l1.Get<half>();
    for (uint32_t i = 0; i < 16; ++i) {
        DataCopy(t[kase == 0 ? i * 16 : 0], xG[i * 32], DataCopyParams(2, 1, 0, 15));
    }
    PipeBarrier<PIPE_ALL>();
    DataCopy(yG, t, 16 * 32);
}

// AIV: SetAddr places a tensor by a TBuffAddr. P[0]: 0 the address_ of base[P[1] / 4] (x lands there, read back
// through base); 1 a TBuffAddr built by hand at UB byte P[1], 256 bytes (read back through base too); 2 the address_
// of a queue tensor that is freed before the copy.
extern "C" __global__ __aicore__ void set_addr(GM_ADDR x, GM_ADDR y, GM_ADDR prm) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    GlobalTensor<float> xG, yG;
    xG.SetGlobalBuffer((__gm__ float*)x, 64);
    yG.SetGlobalBuffer((__gm__ float*)y, 64);
    const int32_t kase = P.GetValue(0);
    const uint32_t at = (uint32_t)P.GetValue(1);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    TQue<TPosition::VECIN, 1> que;
    pipe.InitBuffer(buf, 8192);
    pipe.InitBuffer(que, 1, 256);
    LocalTensor<float> base = buf.Get<float>();
    LocalTensor<float> u;
    if (kase == 0) {
        u.SetAddr(base[at / 4].address_);
    } else if (kase == 1) {
        TBuffAddr a;
        a.logicPos = (uint8_t)TPosition::VECCALC;
        a.bufferAddr = at;
        a.dataLen = 256;
        u.SetAddr(a);
    } else {
        LocalTensor<float> q = que.AllocTensor<float>();
        u.SetAddr(q.address_);
        que.FreeTensor(q);
    }
    DataCopy(u, xG, 64);
    PipeBarrier<PIPE_ALL>();
    DataCopy(yG, base[at / 4], 64);
}

// Mix 1:2: every core sets the cross-core sync base address first, as catlass's kernels do, then the AIC signals
// each AIV once.
extern "C" __global__ __aicore__ void sync_base(GM_ADDR ffts) {
    SetSyncBaseAddr((uint64_t)ffts);
    if ASCEND_IS_AIC {
        CrossCoreSetFlag<2, PIPE_FIX>(5);
    }
    if ASCEND_IS_AIV {
        CrossCoreWaitFlag(5);
    }
}
