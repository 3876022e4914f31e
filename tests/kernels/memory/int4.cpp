// int4b_t tensors on one vector core: packed nibbles in GM and UB, element counts, offsets and scalar access.
// params[0] picks the case (0: the normal run, others: one misuse each; 30 and up run on the cube core), params[1]
// an even element offset (or the misused number), params[2] a value to wrap into int4b_t. Buffers: a = NB packed
// input bytes, v = E int32 values in [-8, 7], packed = NB bytes out (DMA), res = NV int32 results out (DMA),
// gset = NB bytes written by GlobalTensor::SetValue.
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t NB = 160;     // packed bytes
constexpr uint32_t E = 2 * NB;   // int4b_t elements
constexpr uint32_t NV = 512;     // int32 results
constexpr uint32_t NSET = 37;    // GM nibbles written from the offset on (odd: the last byte keeps its high nibble)

__aicore__ inline int32_t I(int4b_t x) {
    int8_t v = x;
    return v;
}

__aicore__ inline void Normal(GM_ADDR a, GM_ADDR v, GM_ADDR packed, GM_ADDR res, GM_ADDR gset, uint32_t off,
                              int32_t w) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> inBuf, outBuf, resBuf;
    pipe.InitBuffer(inBuf, NB);
    pipe.InitBuffer(outBuf, NB);
    pipe.InitBuffer(resBuf, NV * sizeof(int32_t));
    GlobalTensor<int8_t> aBytes, packedGm;
    aBytes.SetGlobalBuffer((__gm__ int8_t*)a, NB);
    packedGm.SetGlobalBuffer((__gm__ int8_t*)packed, NB);
    GlobalTensor<int4b_t> a4, g4;
    a4.SetGlobalBuffer((__gm__ int4b_t*)a, E);
    g4.SetGlobalBuffer((__gm__ int4b_t*)gset, E);
    GlobalTensor<int32_t> vGm, resGm;
    vGm.SetGlobalBuffer((__gm__ int32_t*)v, E);
    resGm.SetGlobalBuffer((__gm__ int32_t*)res, NV);

    LocalTensor<int4b_t> x = inBuf.Get<int4b_t>();
    LocalTensor<int4b_t> y = outBuf.Get<int4b_t>(E);
    LocalTensor<int32_t> r = resBuf.Get<int32_t>();
    DataCopy(x.ReinterpretCast<int8_t>(), aBytes, NB);  // int4b_t data moves as its packed bytes
    SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);

    // Unpacked input: r[0, E).
    for (uint32_t i = 0; i < E; ++i) r.SetValue(i, I(x.GetValue(i)));
    // Sizes, offsets and the type itself: r[E, E + 20).
    LocalTensor<int4b_t> z = x;
    z.SetSize(E - 64);
    LocalTensor<int4b_t> xo = x[off];
    LocalTensor<int4b_t> wo = inBuf.GetWithOffset<int4b_t>(128, 32);
    LocalTensor<int4b_t> ex(TPosition::VECCALC, 0, 192);
    const int32_t meta[20] = {
        (int32_t)x.GetSize(), (int32_t)y.GetSize(), (int32_t)x.GetLength(), (int32_t)a4.GetSize(),
        (int32_t)x.ReinterpretCast<int8_t>().GetSize(), (int32_t)xo.GetSize(), I(xo.GetValue(1)),
        I(a4[off].GetValue(1)), I(a4.GetValue(off + 1)), I(int4b_t(w)), (int32_t)int4b_t(w).storage,
        I(int4b_t((uint32_t)13)),
        (int4b_t(-3) < int4b_t(2)) + 2 * (int4b_t(7) > int4b_t(-8)) + 4 * (int4b_t(5) == int4b_t(-11)) +
            8 * (int4b_t(-1) <= int4b_t(-2)) + 16 * (int4b_t(-8) >= int4b_t(-8)) + 32 * (int4b_t(3) != int4b_t(3)),
        (int32_t)z.GetSize(), (int32_t)z.GetLength(), (int32_t)wo.GetSize(), (int32_t)wo.GetLength(),
        I(wo.GetValue(3)), (int32_t)ex.GetSize(), (int32_t)ex.GetLength()};
    for (uint32_t k = 0; k < 20; ++k) r.SetValue(E + k, meta[k]);

    // SetValue: odd elements first, then even ones, so each write must keep the other nibble of its byte.
    for (uint32_t i = 1; i < E; i += 2) y.SetValue(i, int4b_t(vGm.GetValue(i)));
    for (uint32_t i = 0; i < E; i += 2) y.SetValue(i, int4b_t(vGm.GetValue(i)));
    GlobalTensor<int4b_t> gs = g4[off];
    for (uint32_t k = 0; k < NSET; ++k) gs.SetValue(k, int4b_t(vGm.GetValue(off + k)));

    SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
    DataCopy(packedGm, y.ReinterpretCast<int8_t>(), NB);
    DataCopy(resGm, r, NV);
}

// int4b_t on the cube-core data paths (the docs list b4 for LoadData and Nd2Nz; the twin does not model it).
__aicore__ inline void Cube(GM_ADDR a, int32_t which) {
    TPipe pipe;
    TBuf<TPosition::A1> l1;
    TBuf<TPosition::A2> l0a;
    TBuf<TPosition::B2> l0b;
    pipe.InitBuffer(l1, 4096);
    pipe.InitBuffer(l0a, 1024);
    pipe.InitBuffer(l0b, 1024);
    GlobalTensor<int4b_t> g;
    g.SetGlobalBuffer((__gm__ int4b_t*)a, E);
    LocalTensor<int4b_t> x1 = l1.Get<int4b_t>();
    LoadData2DParams load;
    load.repeatTimes = 1;
    if (which == 30) DataCopy(x1, g, 128);
    if (which == 31) DataCopy(g, x1, 128);
    if (which == 32) DataCopy(x1, g, Nd2NzParams(1, 4, 32, 0, 32, 16, 1, 0));  // b4 as b8: 4 rows of 32 bytes
    if (which == 33) LoadData(l0a.Get<int4b_t>(), x1, load);
    if (which == 34) LoadData(l0a.Get<int4b_t>(), g, load);
    if (which == 35) {
        LoadData2dTransposeParams t;
        t.repeatTimes = 1;
        LoadDataWithTranspose(l0b.Get<int4b_t>(), x1, t);
    }
}

extern "C" __global__ __aicore__ void int4_case(GM_ADDR params, GM_ADDR a, GM_ADDR v, GM_ADDR packed, GM_ADDR res,
                                                GM_ADDR gset) {
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t*)params, 8);
    const int32_t which = pg.GetValue(0), p1 = pg.GetValue(1), p2 = pg.GetValue(2);
    if (which == 0) {
        Normal(a, v, packed, res, gset, (uint32_t)p1, p2);
        return;
    }
    if (which >= 30) {  // cube-core paths, launched as AIC
        Cube(a, which);
        return;
    }
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, NB);
    LocalTensor<int4b_t> x = buf.Get<int4b_t>();
    GlobalTensor<int4b_t> a4;
    a4.SetGlobalBuffer((__gm__ int4b_t*)a, E);
    DataCopyParams blocks(1, NB / 32, 0, 0);
    switch (which) {
        case 1: (void)x[(uint32_t)p1]; break;
        case 2: (void)a4[(uint32_t)p1]; break;
        case 3: (void)x.GetPhyAddr((uint32_t)p1); break;
        case 4: (void)a4.GetPhyAddr((uint32_t)p1); break;
        case 5: x.SetSize((uint32_t)p1); break;
        case 6: (void)buf.Get<int4b_t>((uint32_t)p1); break;
        case 7: (void)buf.GetWithOffset<int4b_t>((uint32_t)p1, 0); break;
        case 8: (void)x.GetValue((uint32_t)p1); break;
        case 9: x.SetValue((uint32_t)p1, int4b_t(1)); break;
        case 10: (void)a4.GetValue((uint32_t)p1); break;
        case 11: (void)a4((uint32_t)p1); break;
        case 12: {
            LocalTensor<int4b_t> t(TPosition::VECCALC, 0, (uint32_t)p1);
            break;
        }
        case 13: DataCopy(x, a4, (uint32_t)p1); break;
        case 14: DataCopy(a4, x, (uint32_t)p1); break;
        case 15: DataCopy(x, a4, blocks); break;
        case 16: DataCopy(a4, x, blocks); break;
        case 17: DataCopy(x, x, blocks); break;
        case 18: {
            DataCopyExtParams ext(1, (uint32_t)p1, 0, 0, 0);
            DataCopyPadExtParams<int4b_t> pad(false, 0, 0, int4b_t(0));
            DataCopyPad(x, a4, ext, pad);
            break;
        }
        case 19: {
            DataCopyExtParams ext(1, (uint32_t)p1, 0, 0, 0);
            DataCopyPad(a4, x, ext);
            break;
        }
        case 20: {
            SliceInfo info[1] = {{0, 63, 0, 1, 64}};
            DataCopy(x, a4, info, info, 1);
            break;
        }
        default: break;
    }
}
