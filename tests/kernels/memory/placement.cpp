// Where a kernel's data lives: l0c_overrun accesses past a LocalTensor's declared length on the cube side
// (tests/test_twin_bounds.py), gm_where the GM addresses a launch hands over and gm_past_end the padding after them
// (tests/test_twin_gm_align.py).
//
// l0c_overrun: A = 16 x 16 and
// B = 16 x 32 half filled with the constants a and b, so C = 16 * a * b everywhere. The L0C tile c1 is declared
// 16 x 16 floats (1 KB) at P[1], but Mmad n = 32 writes 2 KB; Fixpipe reads back only the declared 16 x 16 (as
// the official int8 Mmad example does with its n rounded up). P[0]: 1 = a second tensor owns the next 1 KB of L0C;
// 2 = C goes to GM as NZ (CFG_NZ) instead of ND.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void l0c_overrun(GM_ADDR c, GM_ADDR prm) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    GlobalTensor<float> F;
    F.SetGlobalBuffer((__gm__ float*)(prm + 16), 2);
    const int32_t kase = P.GetValue(0);
    const uint32_t addrC = (uint32_t)P.GetValue(1);
    TPipe pipe;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    pipe.InitBuffer(a2Buf, 512);
    pipe.InitBuffer(b2Buf, 1024);
    LocalTensor<half> a2 = a2Buf.Get<half>(), b2 = b2Buf.Get<half>();
    LocalTensor<float> c1(TPosition::CO1, addrC, 256);
    if (kase == 1) {
        LocalTensor<float> other(TPosition::CO1, addrC + 1024, 256);
        (void)other;
    }
    Fill(a2, InitConstValueParams<half>(1, 1, 0, half(F.GetValue(0))));
    Fill(b2, InitConstValueParams<half>(1, 2, 0, half(F.GetValue(1))));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    Mmad(c1, a2, b2, MmadParams(16, 32, 16, 0, false, true));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    GlobalTensor<float> cG;
    cG.SetGlobalBuffer((__gm__ float*)c, 256);
    FixpipeParamsV220 fp(16, 16, 16, 16, false);
    if (kase == 2) {
        fp.dstStride = 16 * 16 * sizeof(float) / 32;  // one NZ column block of 16 rows x 64 B (32-byte units)
        Fixpipe<float, float, CFG_NZ>(cG, c1, fp);
    } else {
        Fixpipe(cG, c1, fp);
    }
}

// out[0] = a % 512, out[1] = b - a, out[2] = a[0] * 1000, and a[1] = 7.0 (a write the caller must see).
extern "C" __global__ __aicore__ void gm_where(GM_ADDR a, GM_ADDR b, GM_ADDR out) {
    GlobalTensor<uint64_t> o;
    o.SetGlobalBuffer((__gm__ uint64_t*)out, 3);
    GlobalTensor<float> ga;
    ga.SetGlobalBuffer((__gm__ float*)a, 2);
    o.SetValue(0, (uint64_t)(uintptr_t)a % 512);
    o.SetValue(1, (uint64_t)((uintptr_t)b - (uintptr_t)a));
    o.SetValue(2, (uint64_t)(ga.GetValue(0) * 1000.0f));
    ga.SetValue(1, 7.0f);
}

// Copies P[0] + P[1] bytes of `buf` (P[1] past its P[0]-byte end) to `out` through UB; P[2] = 1 also writes them
// back over `buf`, the last P[1] bytes into what follows it.
extern "C" __global__ __aicore__ void gm_past_end(GM_ADDR buf, GM_ADDR prm, GM_ADDR out) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 4);
    const uint32_t n = (uint32_t)(P.GetValue(0) + P.GetValue(1));
    const bool writeBack = P.GetValue(2) == 1;
    GlobalTensor<uint8_t> src, dst;
    src.SetGlobalBuffer((__gm__ uint8_t*)buf, n);
    dst.SetGlobalBuffer((__gm__ uint8_t*)out, n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> ub;
    pipe.InitBuffer(ub, 256);
    LocalTensor<uint8_t> t = ub.Get<uint8_t>();
    DataCopyPad(t, src, DataCopyExtParams(1, n, 0, 0, 0), DataCopyPadExtParams<uint8_t>(false, 0, 0, 0));
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopyPad(dst, t, DataCopyExtParams(1, n, 0, 0, 0));
    if (writeBack) DataCopyPad(src, t, DataCopyExtParams(1, n, 0, 0, 0));
}
