// Twin test kernels for cube APIs catlass and the dav-2201 examples use (one AI core, AIC only): HF32 and the Mmad
// layout setters, the 4:2 sparse matmul, LoadData2DParamsV2 (not on dav-2201) and Fill footprints. int64
// parameters (P_*) choose shapes and modes.
#include "kernel_operator.h"

using namespace AscendC;

__aicore__ inline uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

constexpr int P_M = 0, P_N = 1, P_K = 2, P_FLAGS = 3, P_REP = 4, P_BLK = 5, P_GAP = 6, P_LEN = 7;
constexpr int64_t kHf32 = 1;        // SetHF32Mode(ENABLE) before the Mmad
constexpr int64_t kTowardZero = 2;  // SetHF32TransMode(NEAREST_ZERO)
constexpr int64_t kBoolForms = 4;   // ... through the former bool overloads
constexpr int64_t kRowMajor = 8;    // SetMMRowMajor(); SetMMLayoutTransform(true) with kBoolForms
constexpr int64_t kOffAgain = 16;   // SetHF32Mode(DISABLE) again before the Mmad

// C = A x B^T, A [M, K], B [N, K] float in GM (one K step), C ND float.
extern "C" __global__ __aicore__ void hf32_matmul(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR prm) {
    if ASCEND_IS_AIV {
        return;
    }
    GlobalTensor<int64_t> P;
    P.SetGlobalBuffer((__gm__ int64_t*)prm, 16);
    const uint32_t M = P.GetValue(P_M), N = P.GetValue(P_N), K = P.GetValue(P_K);
    const int64_t flags = P.GetValue(P_FLAGS);
    constexpr uint32_t C0 = 8, FRAC = 128;
    const uint32_t M1 = CeilDiv(M, 16), N1 = CeilDiv(N, 16), K1 = CeilDiv(K, C0);
    GlobalTensor<float> aG, bG, cG;
    aG.SetGlobalBuffer((__gm__ float*)a, (uint64_t)M * K);
    bG.SetGlobalBuffer((__gm__ float*)b, (uint64_t)N * K);
    cG.SetGlobalBuffer((__gm__ float*)c, (uint64_t)M * N);
    LocalTensor<float> a1(TPosition::A1, 0, 16 * 1024), b1(TPosition::B1, 64 * 1024, 16 * 1024);
    LocalTensor<float> a2(TPosition::A2, 0, 8 * 1024), b2(TPosition::B2, 0, 8 * 1024);
    LocalTensor<float> c1(TPosition::CO1, 0, 16 * 1024);
    DataCopy(a1, aG, Nd2NzParams(1, M, K, 0, K, M1 * 16, 1, 0));
    DataCopy(b1, bG, Nd2NzParams(1, N, K, 0, K, N1 * 16, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    for (uint32_t m1 = 0; m1 < M1; ++m1) {
        LoadData(a2[m1 * K1 * FRAC], a1[m1 * FRAC], LoadData2DParams(0, K1, M1, 0, 0, false, 0));
    }
    LoadData(b2, b1, LoadData2DParams(0, K1 * N1, 1, 0, 0, false, 0));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    const bool bools = (flags & kBoolForms) != 0;
    if (flags & kHf32) {
        if (bools) {
            SetHF32Mode(true);
            SetHF32TransMode((flags & kTowardZero) != 0);
        } else {
            SetHF32Mode(HF32Mode::ENABLE);
            SetHF32TransMode((flags & kTowardZero) ? HF32TransMode::NEAREST_ZERO : HF32TransMode::NEAREST_EVEN);
        }
    }
    if (flags & kRowMajor) {
        if (bools) {
            SetMMLayoutTransform(true);
        } else {
            SetMMRowMajor();
        }
    }
    if (flags & kOffAgain) SetHF32Mode(HF32Mode::DISABLE);
    MmadParams mp;
    mp.m = M;
    mp.n = N;
    mp.k = K;
    Mmad(c1, a2, b2, mp);
    SetMMColumnMajor();
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(cG, c1, FixpipeParamsV220(N, M, M1 * 16, N, false));
}

// C (int32) = A (int8 [M, K]) x B with B 4:2 sparse: dense B' [K/2, N] as Zn fractals (GM bytes as they go to L1)
// and its 2-bit index fractals; the sparse load takes P_REP fractals from fractal P_BLK.
extern "C" __global__ __aicore__ void sparse_matmul(GM_ADDR a, GM_ADDR bd, GM_ADDR idx, GM_ADDR c, GM_ADDR prm) {
    if ASCEND_IS_AIV {
        return;
    }
    GlobalTensor<int64_t> P;
    P.SetGlobalBuffer((__gm__ int64_t*)prm, 16);
    const uint32_t M = P.GetValue(P_M), N = P.GetValue(P_N), K = P.GetValue(P_K);
    const uint32_t M1 = CeilDiv(M, 16), N1 = CeilDiv(N, 16), K1 = CeilDiv(K, 32), Kd1 = CeilDiv(K / 2, 32);
    GlobalTensor<int8_t> aG, bG;
    aG.SetGlobalBuffer((__gm__ int8_t*)a, (uint64_t)M * K);
    bG.SetGlobalBuffer((__gm__ int8_t*)bd, (uint64_t)Kd1 * N1 * 512);
    GlobalTensor<uint8_t> iG;
    iG.SetGlobalBuffer((__gm__ uint8_t*)idx, (uint64_t)Kd1 * N1 * 128);
    GlobalTensor<int32_t> cG;
    cG.SetGlobalBuffer((__gm__ int32_t*)c, (uint64_t)M * N);
    LocalTensor<int8_t> a1(TPosition::A1, 0, 32 * 1024), b1(TPosition::B1, 32 * 1024, 32 * 1024);
    LocalTensor<uint8_t> i1(TPosition::B1, 64 * 1024, 8 * 1024);
    LocalTensor<int8_t> a2(TPosition::A2, 0, 32 * 1024), b2(TPosition::B2, 0, 32 * 1024);
    LocalTensor<int32_t> c1(TPosition::CO1, 0, 16 * 1024);
    DataCopy(a1, aG, Nd2NzParams(1, M, K, 0, K, M1 * 16, 1, 0));
    DataCopy(b1, bG, Kd1 * N1 * 512);
    DataCopy(i1, iG, Kd1 * N1 * 128);
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    for (uint32_t m1 = 0; m1 < M1; ++m1) {
        LoadData(a2[m1 * K1 * 512], a1[m1 * 512], LoadData2DParams(0, K1, M1, 0, 0, false, 0));
    }
    LoadData2dParams lp;
    lp.startIndex = (uint16_t)P.GetValue(P_BLK);
    lp.repeatTimes = (uint8_t)P.GetValue(P_REP);
    LoadDataWithSparse(b2, b1, i1, lp);
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadWithSparse(c1, a2, b2, MmadParams(M, N, K, false, 0, false, false, false));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(cG, c1, FixpipeParamsV220(N, M, M1 * 16, N, false));
}

// LoadData with LoadData2DParamsV2, as the examples' dav-3510 branches write it.
extern "C" __global__ __aicore__ void load2d_v2(GM_ADDR) {
    if ASCEND_IS_AIV {
        return;
    }
    LocalTensor<half> a1(TPosition::A1, 0, 1024), a2(TPosition::A2, 0, 1024);
    LoadData(a2, a1, LoadData2DParamsV2{0, 0, 2, 2, 2, 2, false, 0});
}

// Fill of an L1 tensor of P_LEN bytes holding x (half, from GM) with value 7: P_REP runs of P_BLK 32 B blocks, P_GAP
// blocks apart; the tensor goes back to GM. With P_FLAGS = 1 the same Fill goes to an L0A tensor of P_LEN bytes
// (512 B blocks).
extern "C" __global__ __aicore__ void fill_probe(GM_ADDR x, GM_ADDR y, GM_ADDR prm) {
    if ASCEND_IS_AIV {
        return;
    }
    GlobalTensor<int64_t> P;
    P.SetGlobalBuffer((__gm__ int64_t*)prm, 16);
    const uint32_t len = P.GetValue(P_LEN) / sizeof(half);
    GlobalTensor<half> xG, yG;
    xG.SetGlobalBuffer((__gm__ half*)x, len);
    yG.SetGlobalBuffer((__gm__ half*)y, len);
    const InitConstValueParams<half> fp((uint16_t)P.GetValue(P_REP), (uint16_t)P.GetValue(P_BLK),
                                        (uint16_t)P.GetValue(P_GAP), (half)7.0f);
    if (P.GetValue(P_FLAGS) == 1) {
        LocalTensor<half> a2(TPosition::A2, 0, len);
        InitConstValue(a2, fp);
        return;
    }
    LocalTensor<half> l1(TPosition::A1, 0, len);
    DataCopy(l1, xG, len);
    PipeBarrier<PIPE_MTE2>();  // the Fill (PIPE_MTE2) overwrites bytes the copy in wrote
    Fill(l1, fp);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(yG, l1, len);
}

// C (int32) = A x B^T with A [M, K], B [N, K] int4b_t packed two per byte in GM (row-major): ND -> NZ as bytes, the
// 16 x 64 fractals L1 -> L0A (Zz) / L0B (Zn), Mmad (int32_t, int4b_t, int4b_t). With P_FLAGS = 1, B is given as
// [K, N] (K and N multiples of 64) and reaches L0B through LoadDataWithTranspose (64 x 64 squares).
extern "C" __global__ __aicore__ void int4_matmul(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR prm) {
    if ASCEND_IS_AIV {
        return;
    }
    GlobalTensor<int64_t> P;
    P.SetGlobalBuffer((__gm__ int64_t*)prm, 16);
    const uint32_t M = P.GetValue(P_M), N = P.GetValue(P_N), K = P.GetValue(P_K);
    constexpr uint32_t FRAC = 1024;  // int4b_t elements per 512 B fractal
    const uint32_t M1 = CeilDiv(M, 16), N1 = CeilDiv(N, 16), K1 = CeilDiv(K, 64);
    GlobalTensor<int4b_t> aG, bG;
    aG.SetGlobalBuffer((__gm__ int4b_t*)a, (uint64_t)M * K);
    bG.SetGlobalBuffer((__gm__ int4b_t*)b, (uint64_t)N * K);
    GlobalTensor<int32_t> cG;
    cG.SetGlobalBuffer((__gm__ int32_t*)c, (uint64_t)M * N);
    LocalTensor<int4b_t> a1(TPosition::A1, 0, 32 * 1024), b1(TPosition::B1, 32 * 1024, 32 * 1024);
    LocalTensor<int4b_t> a2(TPosition::A2, 0, 32 * 1024), b2(TPosition::B2, 0, 32 * 1024);
    LocalTensor<int32_t> c1(TPosition::CO1, 0, 8 * 1024);
    DataCopy(a1, aG, Nd2NzParams(1, M, K / 2, 0, K / 2, M1 * 16, 1, 0));  // b4 moves as b8: dValue in bytes
    const bool bKn = P.GetValue(P_FLAGS) == 1;
    if (bKn) {
        DataCopy(b1, bG, Nd2NzParams(1, K, N / 2, 0, N / 2, K, 1, 0));  // Nz of [K, N]: N / 64 blocks of K rows
    } else {
        DataCopy(b1, bG, Nd2NzParams(1, N, K / 2, 0, K / 2, N1 * 16, 1, 0));
    }
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    for (uint32_t m1 = 0; m1 < M1; ++m1) {
        LoadData(a2[m1 * K1 * FRAC], a1[m1 * FRAC], LoadData2DParams(0, K1, M1, 0, 0, false, 0));
    }
    if (bKn) {  // square (k1, nb) of 64 K rows x 64 N -> Zn fractals (k1, 4 nb .. 4 nb + 3)
        for (uint32_t k1 = 0; k1 < K1; ++k1) {
            LoadDataWithTranspose(b2[k1 * N1 * FRAC], b1[k1 * 4 * FRAC],
                                  LoadData2dTransposeParams(0, (uint8_t)(N / 64), (uint16_t)(K / 64), 3, 0));
        }
    } else {
        LoadData(b2, b1, LoadData2DParams(0, K1 * N1, 1, 0, 0, false, 0));
    }
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadParams mp;
    mp.m = M;
    mp.n = N;
    mp.k = K;
    Mmad(c1, a2, b2, mp);
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(cG, c1, FixpipeParamsV220(N, M, M1 * 16, N, false));
}

// img2col of an int4b_t feature map C1 x H x W x 64 (GM bytes moved as int8_t) into L0A (LoadData3DParamsV2, stride
// and filter 1, padding P_GAP on every side with pad value P_BLK), times an int4b_t identity in L0B (Zn bytes from
// GM): C (int32) = the P_M x P_K window starting at row 0, column 0.
extern "C" __global__ __aicore__ void int4_img2col(GM_ADDR fm, GM_ADDR idn, GM_ADDR c, GM_ADDR prm) {
    if ASCEND_IS_AIV {
        return;
    }
    GlobalTensor<int64_t> P;
    P.SetGlobalBuffer((__gm__ int64_t*)prm, 16);
    const uint32_t M = P.GetValue(P_M), K = P.GetValue(P_K), H = P.GetValue(P_N), W = P.GetValue(P_REP);
    const uint32_t C = P.GetValue(P_FLAGS), pad = P.GetValue(P_GAP), fmBytes = C / 2 * H * W;
    const uint32_t idBytes = CeilDiv(K, 64) * CeilDiv(K, 16) * 512;
    GlobalTensor<int8_t> fG, iG;
    fG.SetGlobalBuffer((__gm__ int8_t*)fm, fmBytes);
    iG.SetGlobalBuffer((__gm__ int8_t*)idn, idBytes);
    GlobalTensor<int32_t> cG;
    cG.SetGlobalBuffer((__gm__ int32_t*)c, (uint64_t)M * K);
    LocalTensor<int4b_t> f1(TPosition::A1, 0, 64 * 1024), i1(TPosition::B1, 32 * 1024, 64 * 1024);
    LocalTensor<int4b_t> a2(TPosition::A2, 0, 64 * 1024), b2(TPosition::B2, 0, 64 * 1024);
    LocalTensor<int32_t> c1(TPosition::CO1, 0, 8 * 1024);
    DataCopy(f1.ReinterpretCast<int8_t>(), fG, fmBytes);
    DataCopy(i1.ReinterpretCast<int8_t>(), iG, idBytes);
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    LoadData3DParamsV2<int4b_t> p;
    for (int i = 0; i < 4; ++i) p.padList[i] = (uint8_t)pad;
    p.l1H = H;
    p.l1W = W;
    p.channelSize = C;
    p.kExtension = K;
    p.mExtension = M;
    p.padValue = int4b_t((int32_t)P.GetValue(P_BLK));
    LoadData(a2, f1, p);
    LoadData(b2, i1, LoadData2DParams(0, (uint8_t)(idBytes / 512), 1, 0, 0, false, 0));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadParams mp;
    mp.m = M;
    mp.n = K;
    mp.k = K;
    Mmad(c1, a2, b2, mp);
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(cG, c1, FixpipeParamsV220(K, M, CeilDiv(M, 16) * 16, K, false));
}
