// Self-contained kernel that touches every intrinsic family our op_kernel/ sources reach through the official
// headers (Fill, cube loads, Mmad, Fixpipe, b16 DataCopyPad, cross-core flags). check_conformance.sh passes it to
// check_api.py --learn so the stub list covers them; it is never built or run.
#include "kernel_operator.h"
using namespace AscendC;

template <typename T>
__aicore__ inline void Touch(GM_ADDR a, GM_ADDR c) {
    TPipe pipe;
    TBuf<TPosition::A1> l1;
    TBuf<TPosition::A2> l0a;
    TBuf<TPosition::B2> l0b;
    TBuf<TPosition::CO1> l0c;
    TBuf<TPosition::VECCALC> ub;
    pipe.InitBuffer(l1, 65536);
    pipe.InitBuffer(l0a, 32768);
    pipe.InitBuffer(l0b, 32768);
    pipe.InitBuffer(l0c, 65536);
    pipe.InitBuffer(ub, 65536);
    GlobalTensor<T> ga;
    ga.SetGlobalBuffer((__gm__ T*)a);
    GlobalTensor<float> gc;
    gc.SetGlobalBuffer((__gm__ float*)c);
    LocalTensor<T> t1 = l1.Get<T>();
    Fill(t1, InitConstValueParams<T>(1, 16, 0, (T)0.0f));
    Fill(l0a.Get<T>(), InitConstValueParams<T>(1, 1, 0, (T)0.0f));
    Fill(l0b.Get<T>(), InitConstValueParams<T>(1, 1, 0, (T)0.0f));
    DataCopy(t1, ga, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));
    LoadData(l0a.Get<T>(), t1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
    LoadData(l0b.Get<T>(), t1, LoadData2DParams(0, 1, 1, 0, 0, true, 0));
    Mmad(l0c.Get<float>(), l0a.Get<T>(), l0b.Get<T>(), MmadParams(16, 16, 16, 0, false, true));
    FixpipeParamsV220 fp(16, 16, 16, 16, false);
    Fixpipe<float, float, CFG_ROW_MAJOR>(gc, l0c.Get<float>(), fp);
    LocalTensor<T> u = ub.Get<T>();
    DataCopyPad(u, ga, DataCopyExtParams(1, 6, 0, 0, 0), DataCopyPadExtParams<T>(false, 0, 0, (T)0.0f));
    DataCopyPad(ga, u, DataCopyExtParams(1, 6, 0, 0, 0));
    CrossCoreSetFlag<2, PIPE_FIX>(1);
    CrossCoreWaitFlag(1);
}

extern "C" __global__ __aicore__ void conformance_learn(GM_ADDR a, GM_ADDR c) {
    Touch<half>(a, c);
    Touch<bfloat16_t>(a, c);
}
