// Kernels for the cycle model's GM tests (burst size, L2 capacity, L2 bandwidth); p is an int32 GM buffer.
// gm_read, p[0] = 0 (burst): one DataCopyPad GM->UB of p[1] blocks of p[2] bytes (contiguous in GM), then the same
// blocks back UB->GM. p[0] = 1 (re-read): each block reads its own slice of p[1] floats, in tiles of p[2] floats,
// p[3] times over (GM->UB only, so every GM byte of the launch is a read of `in`) into one UB tile.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void gm_read(GM_ADDR prm, GM_ADDR in, GM_ADDR out) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 4);
    const int32_t which = P.GetValue(0), a = P.GetValue(1), b = P.GetValue(2), passes = P.GetValue(3);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    GlobalTensor<float> inG, outG;
    if (which == 0) {
        const uint32_t blocks = a, len = b, row = (len + 31) / 32 * 32;  // UB rows are padded to 32 B
        inG.SetGlobalBuffer((__gm__ float*)in, blocks * len / sizeof(float));
        outG.SetGlobalBuffer((__gm__ float*)out, blocks * len / sizeof(float));
        pipe.InitBuffer(buf, blocks * row);
        LocalTensor<float> x = buf.Get<float>();
        const DataCopyExtParams p(blocks, len, 0, 0, 0);
        DataCopyPad(x, inG, p, DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        DataCopyPad(outG, x, p);
        return;
    }
    const int32_t n = a, tile = b;
    inG.SetGlobalBuffer((__gm__ float*)in + (int64_t)GetBlockIdx() * n, n);
    pipe.InitBuffer(buf, tile * sizeof(float));
    LocalTensor<float> x = buf.Get<float>();
    for (int32_t r = 0; r < passes; ++r) {
        for (int32_t t = 0; t < n; t += tile) {
            DataCopy(x, inG[t], tile);
            PipeBarrier<PIPE_MTE2>();  // the next tile overwrites x (MTE2 runs its transfers in order anyway)
        }
    }
}
