// Twin test kernel: a Fixpipe that reads more L0C columns than the last Mmad into the tile computed, the way
// catlass's FA example stores its key-tail QK tile (nSize = all columns stacked so far, from the buffer the last
// Mmad wrote). Two Mmads (m = 32, k = 16) write one L0C tile: n = 40 (columns 0..39 and the padding to 47), then
// n = 20 (columns 0..19 and the padding to 31). A Fixpipe of nSize 60 then stores 20 computed columns, 12 padding
// columns, 8 stale ones of the first Mmad, 8 of its padding and 12 (48..59) no Mmad wrote.
// params[0]: 0 = control, nSize 20 only; 1 = nSize 60 (float); 2 = nSize 60, then columns 20..59 of the output
// overwritten by a third Mmad's computed tile; 3 = nSize 60 to half; 4 = nSize 60 to int8 (scale 1).
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void fixpipe_stale(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR out) {
    if ASCEND_IS_AIV {
        return;
    }
    constexpr uint32_t M = 32, K = 16, ROWS = 30, PITCH = 64, FRAC = 256;
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t*)params, 8);
    const int32_t which = pg.GetValue(0);
    GlobalTensor<half> aG, bG;
    aG.SetGlobalBuffer((__gm__ half*)a, M * K);
    bG.SetGlobalBuffer((__gm__ half*)b, 80 * K);  // rows 0..47: the first Mmad's B, rows 48..79: the second's

    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> c1Buf;
    pipe.InitBuffer(a1Buf, M * K * sizeof(half));
    pipe.InitBuffer(b1Buf, 80 * K * sizeof(half));
    pipe.InitBuffer(a2Buf, M * K * sizeof(half));
    pipe.InitBuffer(b2Buf, 80 * K * sizeof(half));
    pipe.InitBuffer(c1Buf, M * 64 * sizeof(float));
    LocalTensor<half> a1 = a1Buf.Get<half>(), b1 = b1Buf.Get<half>(), a2 = a2Buf.Get<half>(), b2 = b2Buf.Get<half>();
    LocalTensor<float> c1 = c1Buf.Get<float>();

    DataCopy(a1, aG, Nd2NzParams(1, M, K, 0, K, M, 1, 0));
    DataCopy(b1, bG, Nd2NzParams(1, 80, K, 0, K, 80, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    LoadData(a2, a1, LoadData2DParams(0, 2, 1, 0, 0, false, 0));
    LoadData(b2, b1, LoadData2DParams(0, 5, 1, 0, 0, false, 0));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    Mmad(c1, a2, b2, MmadParams(M, 40, K, 0, false, true));
    Mmad(c1, a2, b2[3 * FRAC], MmadParams(M, 20, K, 0, false, true));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);

    const uint16_t nSize = which == 0 ? 20 : 60;
    if (which == 3) {
        GlobalTensor<half> oG;
        oG.SetGlobalBuffer((__gm__ half*)out, ROWS * PITCH);
        FixpipeParamsV220 fp(nSize, ROWS, M, PITCH, false);
        fp.quantPre = QuantMode_t::F322F16;
        Fixpipe(oG, c1, fp);
    } else if (which == 4) {
        GlobalTensor<int8_t> oG;
        oG.SetGlobalBuffer((__gm__ int8_t*)out, ROWS * PITCH);
        FixpipeParamsV220 fp(nSize, ROWS, M, PITCH, false);
        fp.quantPre = QuantMode_t::QF322B8_PRE;
        fp.deqScalar = 0x3F800000ull | (1ull << 46);  // M1 = 1.0, signed result
        Fixpipe(oG, c1, fp);
    } else {
        GlobalTensor<float> oG;
        oG.SetGlobalBuffer((__gm__ float*)out, ROWS * PITCH);
        Fixpipe(oG, c1, FixpipeParamsV220(nSize, ROWS, M, PITCH, false));
        if (which == 2) {  // the next tile: columns 20..59 of the output from a tile computed whole
            SetFlag<HardEvent::FIX_M>(EVENT_ID0);
            WaitFlag<HardEvent::FIX_M>(EVENT_ID0);
            Mmad(c1, a2, b2, MmadParams(M, 40, K, 0, false, true));
            SetFlag<HardEvent::M_FIX>(EVENT_ID0);
            WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
            Fixpipe(oG[20], c1, FixpipeParamsV220(40, ROWS, M, PITCH, false));
        }
    }
}
