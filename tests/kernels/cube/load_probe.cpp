// Twin test kernel that makes L0A visible: an L1 image (from GM) is moved into a zero-filled L0A by one LoadData or
// LoadDataWithTranspose with parameters from GM, then C = L0A x I (identity in L0B, loaded straight from GM with the
// GM-source LoadData) is written to GM, so the caller reads back L0A through the Zz map and compares it with its
// own model of the load.
//   p[0] mode (0 LoadData, 1 LoadDataWithTranspose), p[1] startIndex, p[2] repeatTimes, p[3] srcStride, p[4] dstGap,
//   p[5] ifTranspose, p[6] addrMode, p[7] dstFracGap, p[8] M1, p[9] K1 (fractals along k), p[10] L1 elements,
//   p[11] dst offset in L0A in bytes (alignment tests); p[12..15] if p[12] > 0: Fill the L1 image (viewed as int16)
//   with repeatTimes p[12], blockNum p[13] (32 B blocks), dstGap p[14], value p[15] before the load;
//   if p[16] > 0 the GM -> L1 copy is DataCopy with DataCopyParams(p[16], p[17], p[18], p[19]) into a zeroed L1.
#include "kernel_operator.h"

using namespace AscendC;

template <typename T, typename C>
__aicore__ inline void ProbeBody(GM_ADDR l1Image, GM_ADDR eye, GM_ADDR out, GM_ADDR prm) {
    if ASCEND_IS_AIV {
        return;
    }
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 20);
    const int32_t mode = P.GetValue(0);
    const uint32_t M1 = P.GetValue(8), K1 = P.GetValue(9), l1Elems = P.GetValue(10), dstOff = P.GetValue(11);
    constexpr uint32_t K0 = 32 / sizeof(T);
    const uint32_t M = M1 * 16, K = K1 * K0;
    GlobalTensor<T> srcG, eyeG;
    srcG.SetGlobalBuffer((__gm__ T*)l1Image, l1Elems);
    eyeG.SetGlobalBuffer((__gm__ T*)eye, (uint64_t)K * K);
    GlobalTensor<C> outG;
    outG.SetGlobalBuffer((__gm__ C*)out, (uint64_t)M * K);

    LocalTensor<T> a1(TPosition::A1, 0, 256 * 1024 / sizeof(T));
    LocalTensor<T> a2(TPosition::A2, 0, 64 * 1024 / sizeof(T));
    LocalTensor<T> b2(TPosition::B2, 0, 64 * 1024 / sizeof(T));
    LocalTensor<C> c(TPosition::CO1, 0, 128 * 1024 / sizeof(C));
    if (P.GetValue(16) > 0) {
        Fill(a1.template ReinterpretCast<int16_t>(), InitConstValueParams<int16_t>(1, 256 * 1024 / 32, 0, (int16_t)0));
        PipeBarrier<PIPE_MTE2>();  // the copy overwrites filled bytes on the same pipe
        DataCopy(a1, srcG, DataCopyParams(P.GetValue(16), P.GetValue(17), P.GetValue(18), P.GetValue(19)));
    } else {
        DataCopy(a1, srcG, l1Elems);
    }
    if (P.GetValue(12) > 0) {
        // Fill of L1 runs on MTE2 like the copy; overlapping writes of one pipe still need a PipeBarrier.
        PipeBarrier<PIPE_MTE2>();
        Fill(a1.template ReinterpretCast<int16_t>(),
             InitConstValueParams<int16_t>(P.GetValue(12), P.GetValue(13), P.GetValue(14), (int16_t)P.GetValue(15)));
    }
    Fill(a2.template ReinterpretCast<int16_t>(), InitConstValueParams<int16_t>(1, 128, 0, (int16_t)0));
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    LocalTensor<T> dst = a2[dstOff / sizeof(T)];
    if (mode == 0) {
        LoadData2DParams p(P.GetValue(1), P.GetValue(2), P.GetValue(3), 0, P.GetValue(4), P.GetValue(5) != 0, P.GetValue(6));
        LoadData(dst, a1, p);
    } else {
        LoadData2dTransposeParams p(P.GetValue(1), P.GetValue(2), P.GetValue(3), P.GetValue(4), P.GetValue(7), P.GetValue(6));
        LoadDataWithTranspose(dst, a1, p);
    }
    LoadData(b2, eyeG, LoadData2DParams(0, K1 * (K / 16), 1, 0, 0, false, 0));  // GM -> L0B runs on MTE2
    SetFlag<HardEvent::MTE2_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_M>(EVENT_ID0);
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    Mmad(c, a2, b2, MmadParams(M, K, K, 0, false, true));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(outG, c, FixpipeParamsV220(K, M, M, K, false));
}

extern "C" __global__ __aicore__ void probe_b16(GM_ADDR s, GM_ADDR e, GM_ADDR o, GM_ADDR p) { ProbeBody<half, float>(s, e, o, p); }
extern "C" __global__ __aicore__ void probe_b8(GM_ADDR s, GM_ADDR e, GM_ADDR o, GM_ADDR p) { ProbeBody<int8_t, int32_t>(s, e, o, p); }
