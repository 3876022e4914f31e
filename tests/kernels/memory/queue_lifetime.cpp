// Queue lifetime cases: queues declared in helper functions (gone before the TPipe that drains them), and tensors
// used after their FreeTensor or left allocated when the pipe ends. params[0] picks the case.
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t N = 96;  // floats per core

// One GM -> UB -> GM round trip through queues that live only in this frame; y = x + bias.
__aicore__ inline void CopyThroughLocalQueues(TPipe& pipe, GlobalTensor<float>& x, GlobalTensor<float>& y, float bias) {
    TQue<TPosition::VECIN, 1> in;
    TQue<TPosition::VECOUT, 1> out;
    pipe.InitBuffer(in, 2, N * sizeof(float));
    pipe.InitBuffer(out, 2, N * sizeof(float));
    LocalTensor<float> a = in.AllocTensor<float>();
    DataCopy(a, x, N);
    in.EnQue(a);
    a = in.DeQue<float>();
    LocalTensor<float> b = out.AllocTensor<float>();
    Adds(b, a, bias, N);
    out.EnQue(b);
    in.FreeTensor(a);
    b = out.DeQue<float>();
    DataCopy(y, b, N);
    out.FreeTensor(b);  // the free events stay pending: the pipe waits them after `in`/`out` are gone
}

// Overwrites the stack region the queues above occupied.
__aicore__ inline uint32_t ScribbleStack(uint32_t seed) {
    volatile uint32_t junk[1024];
    for (uint32_t i = 0; i < 1024; ++i) junk[i] = seed * 2654435761u + i;
    return junk[seed % 1024];
}

extern "C" __global__ __aicore__ void queue_lifetime(GM_ADDR params, GM_ADDR x, GM_ADDR y) {
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t*)params, 8);
    const int32_t which = pg.GetValue(0);
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * N, N);
    yg.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * N, N);
    TPipe pipe;
    if (which == 0) {  // helper-scoped queues, three rounds with the stack overwritten in between
        for (int32_t r = 0; r < 3; ++r) {
            CopyThroughLocalQueues(pipe, xg, yg, 1.0f + r);
            ScribbleStack((uint32_t)r + 7);
            pipe.Reset();
        }
        return;
    }
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, N * sizeof(float));
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, xg, N);
    q.EnQue(t);
    LocalTensor<float> d = q.DeQue<float>();
    q.FreeTensor(d);
    switch (which) {
        case 1: Adds(t, t, 1.0f, N); break;  // t (same buffer as d) used after FreeTensor
        case 2: t.ReinterpretCast<int32_t>()[8].GetValue(0); break;  // a view of it, scalar access
        case 3: {  // FreeTensor of a stale tensor after the buffer was allocated again
            LocalTensor<float> again = q.AllocTensor<float>();
            q.FreeTensor(d);
            q.FreeTensor(again);
            break;
        }
        case 4: {  // allocated and never freed: the pipe ends with the buffer in use
            LocalTensor<float> kept = q.AllocTensor<float>();
            Duplicate(kept, 0.0f, N);
            break;
        }
        case 5: {  // a fresh allocation is usable again
            LocalTensor<float> fresh = q.AllocTensor<float>();
            DataCopy(fresh, xg, N);
            q.EnQue(fresh);
            fresh = q.DeQue<float>();
            PipeBarrier<PIPE_ALL>();
            DataCopy(yg, fresh, N);
            q.FreeTensor(fresh);
            break;
        }
        default: break;
    }
}
