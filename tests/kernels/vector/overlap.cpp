// Source/destination overlap cases of the vector APIs (tests/test_twin_overlap.py). One 8 KB TBuf: t = floats
// [0, 1024) (x loaded at its start), y1 = floats [1024, 1536) (y). z receives t[0, 512), or y1 in case 7.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void overlap(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR prm) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    const int32_t kase = P.GetValue(0), n = P.GetValue(1), off = P.GetValue(2), rep = P.GetValue(3);
    GlobalTensor<float> xg, yg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x, 512);
    yg.SetGlobalBuffer((__gm__ float*)y, 512);
    zg.SetGlobalBuffer((__gm__ float*)z, 512);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 8192);
    LocalTensor<float> t = buf.Get<float>(1024), y1 = buf.Get<float>()[1024];
    DataCopy(t, xg, 512);
    DataCopy(y1, yg, 512);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    LocalTensor<uint8_t> u8 = t.ReinterpretCast<uint8_t>();
    LocalTensor<half> h = t.ReinterpretCast<half>();
    switch (kase) {
        case 0: Add(t, t, y1, n); break;                 // in place, dst == src0
        case 1: Add(t, y1, t, n); break;                 // in place, dst == src1
        case 2: Add(t[off], t, y1, n); break;            // dst shifted against src0
        case 3: Exp(t[off], t, n); break;                // dst ahead of src
        case 9: Exp(t, t[off], n); break;                // dst behind src
        case 4: Cast(h, u8, RoundMode::CAST_NONE, n); break;  // u8 -> half onto its own bytes
        case 5: Cast(h[1024], u8, RoundMode::CAST_NONE, n); break;  // u8 -> half into bytes [2048, ...)
        case 6: Cast(h, t, RoundMode::CAST_NONE, n); break;  // float -> half onto its own bytes
        case 10: Cast(h[off], t, RoundMode::CAST_NONE, n); break;  // float -> half, dst `off` halves ahead
        case 7:
        case 8: {  // dst == src1 with dstRepStride = src1RepStride = 0: y1[0, 64) += t[r * 64 ...] over `rep` repeats
            const uint64_t mask = 64;
            const BinaryRepeatParams p(1, 1, 1, 0, 8, 0);
            if (kase == 7) Add(y1, t, y1, mask, (uint8_t)rep, p);
            else Div(y1, t, y1, mask, (uint8_t)rep, p);
            break;
        }
        default: break;
    }
    if (kase == 5) Cast(t, h[1024], RoundMode::CAST_NONE, n);  // back to float for the check
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(zg, kase == 7 ? y1 : t, 512);
}
