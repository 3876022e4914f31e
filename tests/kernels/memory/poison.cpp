// The poison rule (twin/include/twin/memory/poison.h): what a launch leaves in GM must not come from on-core memory
// no instruction wrote. params[0] picks the case; x holds N input floats (or 2N halves), y the N-float output.
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t N = 64;

__aicore__ inline void LoadsDone() {
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
}

extern "C" __global__ __aicore__ void poison_vec(GM_ADDR params, GM_ADDR x, GM_ADDR y) {
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t*)params, 8);
    const int32_t which = pg.GetValue(0);
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, N);
    yg.SetGlobalBuffer((__gm__ float*)y, N);
    GlobalTensor<half> xh;
    xh.SetGlobalBuffer((__gm__ half*)x, 2 * N);
    GlobalTensor<bfloat16_t> xb;
    xb.SetGlobalBuffer((__gm__ bfloat16_t*)x, 2 * N);
    TPipe pipe;
    TBuf<TPosition::VECCALC> inBuf, outBuf;
    pipe.InitBuffer(inBuf, 2 * N * sizeof(float));
    pipe.InitBuffer(outBuf, 2 * N * sizeof(float));
    LocalTensor<float> in = inBuf.Get<float>(), out = outBuf.Get<float>();
    switch (which) {
        case 0:  // control: y = x + 1
        case 1:  // x is loaded for the first half only: the second half of y comes from never-written UB
            DataCopy(in, xg, which == 0 ? N : N / 2);
            LoadsDone();
            Adds(out, in, 1.0f, N);
            break;
        case 2:  // half -> float of 2N halves of which only the first N were loaded
        case 3:  // the same through bfloat16_t
            if (which == 2) {
                DataCopy(in.ReinterpretCast<half>(), xh, N);
            } else {
                DataCopy(in.ReinterpretCast<bfloat16_t>(), xb, N);
            }
            LoadsDone();
            if (which == 2) {
                Cast(out, in.ReinterpretCast<half>()[N / 2], RoundMode::CAST_NONE, N);
            } else {
                Cast(out, in.ReinterpretCast<bfloat16_t>()[N / 2], RoundMode::CAST_NONE, N);
            }
            break;
        case 4:  // x copied through unchanged (the host puts real NaN / inf or poison-like bits in it)
            DataCopy(in, xg, N);
            LoadsDone();
            Adds(out, in, 0.0f, N);
            break;
        case 5: {  // redundant data stored, then overwritten with computed values (programming guide, 非对齐场景)
            DataCopy(in, xg, N / 2);
            LoadsDone();
            Adds(out, in, 1.0f, N);
            SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
            DataCopy(yg, out, N);  // the second half is poison for now
            Duplicate(in, 2.0f, N / 2);
            SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
            PipeBarrier<PIPE_MTE3>();  // two MTE3 writes of the same GM bytes (PipeBarrier page)
            DataCopy(yg[N / 2], in, N / 2);
            return;
        }
        case 6:  // never-written UB added atomically onto y
            Duplicate(out, 1.0f, N / 2);
            SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
            SetAtomicAdd<float>();
            DataCopy(yg, out, N);
            SetAtomicNone();
            return;
        case 7: {  // DataCopyPad of a never-written row tail
            DataCopy(in, xg, N / 2);
            LoadsDone();
            Adds(out, in, 1.0f, N);
            SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
            DataCopyPad(yg, out, DataCopyExtParams(1, (N / 2 + 3) * sizeof(float), 0, 0, 0));
            return;
        }
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(yg, out, N);
}

// The cube core: L1 -> GM of a tile whose second half was never loaded (params[0] = 1), or was (0).
extern "C" __global__ __aicore__ void poison_cube(GM_ADDR params, GM_ADDR x, GM_ADDR y) {
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t*)params, 8);
    const int32_t which = pg.GetValue(0);
    GlobalTensor<half> xg, yg;
    xg.SetGlobalBuffer((__gm__ half*)x, 2 * N);
    yg.SetGlobalBuffer((__gm__ half*)y, 2 * N);
    TPipe pipe;
    TBuf<TPosition::A1> l1;
    pipe.InitBuffer(l1, 2 * N * sizeof(half));
    LocalTensor<half> t = l1.Get<half>();
    DataCopy(t, xg, which == 0 ? 2 * N : N);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(yg, t, 2 * N);
}
