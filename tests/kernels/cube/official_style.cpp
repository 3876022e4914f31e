// Twin test kernel written the way the dav-2201 basic-API matrix samples are written (class with Init / CopyIn /
// SplitA / SplitB / Compute / CopyOut, TQue-managed L1/L0 buffers, explicit LocalTensor addresses for L0C -> L1
// chaining), covering the scenarios the docs walk through. p[0] selects the scenario:
//   1  half  A[m,k] x B[k,n]    : B via LoadDataWithTranspose (b16), C out as Nz half (CFG_NZ, F322F16)
//   2  float A^T[k,m], B[k,n]   : both Zz in L1 + LoadDataWithTranspose (b32), kDirectionAlign, C out ND fp32
//   3  half  (A x B^T) -> L1 (Fixpipe CFG_NZ F322F16) -> L0A -> x D^T : Fixpipe into L1 feeds a second Mmad
//   4  half  A x B^T            : C out as int8 with QF322B8_PRE (deqScalar) and ReLU
//   5  int8  A x B^T            : int32 C (NoQuant)
//   6  half  A x B^T + bias     : bias (float, GM "d") -> L1 -> BiasTable (C2), Mmad with a bias tensor, ND fp32
//   7  half  A x B^T            : int8 out with per-column VQF322B8_PRE words (uint64, GM "d" -> L1 cbufWorkspace)
// p[1..3] = m, k, n; p[4] = quant word low 32 bits, p[5] = high 32 bits (scenario 4); p[6] = 1 disables
// kDirectionAlign in scenario 2 (negative test).
#include "kernel_operator.h"

using namespace AscendC;

__aicore__ inline uint32_t DivRoundUp(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
__aicore__ inline uint32_t RoundUpTo(uint32_t a, uint32_t b) { return DivRoundUp(a, b) * b; }

template <typename U, typename T>
class KernelMatmulSample {
public:
    __aicore__ inline KernelMatmulSample() {}
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR d, GM_ADDR c, int32_t scen, uint32_t m, uint32_t k, uint32_t n,
                                uint64_t quant, bool noKAlign)
    {
        scenario = scen;
        M = m;
        K = k;
        N = n;
        quantWord = quant;
        disableKAlign = noKAlign;
        c0 = 32 / sizeof(U);
        fractalSize = BLOCK_CUBE * c0;
        aGM.SetGlobalBuffer((__gm__ U*)a);
        bGM.SetGlobalBuffer((__gm__ U*)b);
        dGM.SetGlobalBuffer((__gm__ U*)d);
        dAddr = d;
        cGM = c;
        pipe.InitBuffer(inQueueA1, 1, 64 * 1024);
        pipe.InitBuffer(inQueueB1, 1, 64 * 1024);
        pipe.InitBuffer(inQueueA2, 1, 32 * 1024);
        pipe.InitBuffer(inQueueB2, 1, 32 * 1024);
        pipe.InitBuffer(outQueueCO1, 1, 64 * 1024);
    }
    __aicore__ inline void Process()
    {
        CopyIn();
        SplitA();
        SplitB();
        Compute();
        CopyOut();
    }

private:
    __aicore__ inline void CopyIn()
    {
        LocalTensor<U> a1Local = inQueueA1.AllocTensor<U>();
        LocalTensor<U> b1Local = inQueueB1.AllocTensor<U>();
        Nd2NzParams nd2nzA1Params;
        Nd2NzParams nd2nzB1Params;
        if (scenario == 2) {
            // A^T [k, m] and B [k, n] as Zz: one Nz matrix per 16 rows of k.
            nd2nzA1Params.ndNum = DivRoundUp(K, BLOCK_CUBE);
            nd2nzA1Params.nValue = BLOCK_CUBE;
            nd2nzA1Params.dValue = M;
            nd2nzA1Params.srcNdMatrixStride = BLOCK_CUBE * M;
            nd2nzA1Params.srcDValue = M;
            nd2nzA1Params.dstNzC0Stride = BLOCK_CUBE;
            nd2nzA1Params.dstNzNStride = 1;
            nd2nzA1Params.dstNzMatrixStride = BLOCK_CUBE * RoundUpTo(M, BLOCK_CUBE);
            nd2nzB1Params = nd2nzA1Params;
            nd2nzB1Params.dValue = N;
            nd2nzB1Params.srcNdMatrixStride = BLOCK_CUBE * N;
            nd2nzB1Params.srcDValue = N;
            nd2nzB1Params.dstNzMatrixStride = BLOCK_CUBE * RoundUpTo(N, BLOCK_CUBE);
            // The last slab has K % 16 rows: copy it separately so no row past K is read from GM.
            uint32_t full = K / BLOCK_CUBE, tail = K % BLOCK_CUBE;
            nd2nzA1Params.ndNum = full;
            nd2nzB1Params.ndNum = full;
            if (full > 0) {
                DataCopy(a1Local, aGM, nd2nzA1Params);
                DataCopy(b1Local, bGM, nd2nzB1Params);
            }
            if (tail > 0) {
                nd2nzA1Params.ndNum = 1;
                nd2nzA1Params.nValue = tail;
                nd2nzB1Params.ndNum = 1;
                nd2nzB1Params.nValue = tail;
                DataCopy(a1Local[full * nd2nzA1Params.dstNzMatrixStride], aGM[full * BLOCK_CUBE * M], nd2nzA1Params);
                DataCopy(b1Local[full * nd2nzB1Params.dstNzMatrixStride], bGM[full * BLOCK_CUBE * N], nd2nzB1Params);
            }
        } else {
            nd2nzA1Params.ndNum = 1;
            nd2nzA1Params.nValue = M;
            nd2nzA1Params.dValue = K;
            nd2nzA1Params.srcNdMatrixStride = 0;
            nd2nzA1Params.srcDValue = K;
            nd2nzA1Params.dstNzC0Stride = RoundUpTo(M, BLOCK_CUBE);
            nd2nzA1Params.dstNzNStride = 1;
            nd2nzA1Params.dstNzMatrixStride = 0;
            DataCopy(a1Local, aGM, nd2nzA1Params);
            nd2nzB1Params.ndNum = 1;
            nd2nzB1Params.srcNdMatrixStride = 0;
            nd2nzB1Params.dstNzNStride = 1;
            nd2nzB1Params.dstNzMatrixStride = 0;
            if (scenario == 1) {  // B [k, n]
                nd2nzB1Params.nValue = K;
                nd2nzB1Params.dValue = N;
                nd2nzB1Params.srcDValue = N;
                nd2nzB1Params.dstNzC0Stride = RoundUpTo(K, BLOCK_CUBE);
            } else {  // B [n, k]
                nd2nzB1Params.nValue = N;
                nd2nzB1Params.dValue = K;
                nd2nzB1Params.srcDValue = K;
                nd2nzB1Params.dstNzC0Stride = RoundUpTo(N, BLOCK_CUBE);
            }
            DataCopy(b1Local, bGM, nd2nzB1Params);
        }
        inQueueA1.EnQue(a1Local);
        inQueueB1.EnQue(b1Local);
    }
    __aicore__ inline void SplitA()
    {
        LocalTensor<U> a1Local = inQueueA1.DeQue<U>();
        LocalTensor<U> a2Local = inQueueA2.AllocTensor<U>();
        if (scenario == 2) {
            uint32_t fractalNum = 2;
            uint32_t dstOffset = DivRoundUp(K, BLOCK_CUBE) * fractalSize * fractalNum;
            uint32_t srcOffset = fractalSize * fractalNum;
            LoadData2dTransposeParams loadDataParams;
            loadDataParams.startIndex = 0;
            loadDataParams.repeatTimes = DivRoundUp(K, BLOCK_CUBE);
            loadDataParams.srcStride = DivRoundUp(M, BLOCK_CUBE);
            loadDataParams.dstGap = 1;
            loadDataParams.dstFracGap = 0;
            for (uint32_t i = 0; i < DivRoundUp(M, BLOCK_CUBE); ++i) {
                LoadDataWithTranspose(a2Local[i * dstOffset], a1Local[i * srcOffset], loadDataParams);
            }
        } else {
            uint32_t dstOffset = DivRoundUp(K, c0) * fractalSize;
            uint32_t srcOffset = fractalSize;
            LoadData2DParams loadDataParams;
            loadDataParams.repeatTimes = DivRoundUp(K, c0);
            loadDataParams.srcStride = DivRoundUp(M, BLOCK_CUBE);
            loadDataParams.dstGap = 0;
            loadDataParams.ifTranspose = false;
            for (uint32_t i = 0; i < DivRoundUp(M, BLOCK_CUBE); ++i) {
                LoadData(a2Local[i * dstOffset], a1Local[i * srcOffset], loadDataParams);
            }
        }
        inQueueA2.EnQue<U>(a2Local);
        inQueueA1.FreeTensor(a1Local);
    }
    __aicore__ inline void SplitB()
    {
        LocalTensor<U> b1Local = inQueueB1.DeQue<U>();
        LocalTensor<U> b2Local = inQueueB2.AllocTensor<U>();
        if (scenario == 1) {
            // half B [k, n]: transpose each 16x16 fractal while reordering Nz -> Zn.
            uint32_t dstOffset = DivRoundUp(N, BLOCK_CUBE) * fractalSize;
            uint32_t srcOffset = fractalSize;
            LoadData2dTransposeParams loadDataParams;
            loadDataParams.startIndex = 0;
            loadDataParams.repeatTimes = DivRoundUp(N, BLOCK_CUBE);
            loadDataParams.srcStride = DivRoundUp(K, BLOCK_CUBE);
            loadDataParams.dstGap = 0;
            loadDataParams.dstFracGap = 0;
            for (uint32_t i = 0; i < DivRoundUp(K, BLOCK_CUBE); ++i) {
                LoadDataWithTranspose(b2Local[i * dstOffset], b1Local[i * srcOffset], loadDataParams);
            }
        } else if (scenario == 2) {
            // float B [k, n] in Zz: each 16x16 square splits into two 8-row fractals N1 apart in Zn.
            uint32_t fractalNum = 2;
            uint32_t dstOffset = DivRoundUp(N, BLOCK_CUBE) * fractalSize * fractalNum;
            uint32_t srcOffset = DivRoundUp(N, c0 * fractalNum) * fractalSize * fractalNum;
            LoadData2dTransposeParams loadDataParams;
            loadDataParams.startIndex = 0;
            loadDataParams.repeatTimes = DivRoundUp(N, c0 * fractalNum);
            loadDataParams.srcStride = 1;
            loadDataParams.dstGap = 0;
            loadDataParams.dstFracGap = DivRoundUp(N, BLOCK_CUBE) - 1;
            for (uint32_t i = 0; i < DivRoundUp(K, BLOCK_CUBE); ++i) {
                LoadDataWithTranspose(b2Local[i * dstOffset], b1Local[i * srcOffset], loadDataParams);
            }
        } else {
            // B [n, k] in Nz already is Zn: one load per k fractal row.
            uint32_t dstOffset = DivRoundUp(N, BLOCK_CUBE) * fractalSize;
            uint32_t srcOffset = DivRoundUp(N, BLOCK_CUBE) * fractalSize;
            LoadData2DParams loadDataParams;
            loadDataParams.repeatTimes = DivRoundUp(N, BLOCK_CUBE);
            loadDataParams.srcStride = 1;
            loadDataParams.dstGap = 0;
            loadDataParams.ifTranspose = false;
            for (uint32_t i = 0; i < DivRoundUp(K, c0); ++i) {
                LoadData(b2Local[i * dstOffset], b1Local[i * srcOffset], loadDataParams);
            }
        }
        inQueueB2.EnQue<U>(b2Local);
        inQueueB1.FreeTensor(b1Local);
    }
    __aicore__ inline void Compute()
    {
        LocalTensor<U> a2Local = inQueueA2.DeQue<U>();
        LocalTensor<U> b2Local = inQueueB2.DeQue<U>();
        LocalTensor<T> c1Local = outQueueCO1.AllocTensor<T>();
        MmadParams mmadParams;
        mmadParams.m = M;
        mmadParams.n = N;
        mmadParams.k = K;
        if (scenario == 2 && !disableKAlign) {
            mmadParams.kDirectionAlign = true;
        }
        mmadParams.cmatrixInitVal = true;
        if (scenario == 6) {
            GlobalTensor<float> biasGM;
            biasGM.SetGlobalBuffer((__gm__ float*)dAddr);
            LocalTensor<float> biasL1(TPosition::C1, 448 * 1024, RoundUpTo(N, BLOCK_CUBE));
            LocalTensor<float> biasBT(TPosition::C2, 0, RoundUpTo(N, BLOCK_CUBE));
            DataCopy(biasL1, biasGM, RoundUpTo(N, BLOCK_CUBE));
            SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID5);
            WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID5);
            // dav-2201 L1 -> BiasTable: blockLen in 64 B units.
            DataCopy(biasBT, biasL1, DataCopyParams(1, RoundUpTo(N * sizeof(float), 64) / 64, 0, 0));
            SetFlag<HardEvent::MTE1_M>(EVENT_ID5);
            WaitFlag<HardEvent::MTE1_M>(EVENT_ID5);
            mmadParams.cmatrixInitVal = false;
            Mmad(c1Local, a2Local, b2Local, biasBT, mmadParams);
        } else {
            Mmad(c1Local, a2Local, b2Local, mmadParams);
        }
        outQueueCO1.EnQue<T>(c1Local);
        inQueueA2.FreeTensor(a2Local);
        inQueueB2.FreeTensor(b2Local);
    }
    __aicore__ inline void CopyOut()
    {
        LocalTensor<T> c1Local = outQueueCO1.DeQue<T>();
        FixpipeParamsV220 fixpipeParams;
        fixpipeParams.nSize = N;
        fixpipeParams.mSize = M;
        fixpipeParams.srcStride = RoundUpTo(M, BLOCK_CUBE);
        fixpipeParams.dstStride = N;
        fixpipeParams.ndNum = 1;
        fixpipeParams.srcNdStride = 0;
        fixpipeParams.dstNdStride = 0;
        if (scenario == 1) {
            GlobalTensor<half> out;
            out.SetGlobalBuffer((__gm__ half*)cGM);
            fixpipeParams.nSize = RoundUpTo(N, BLOCK_CUBE);
            fixpipeParams.dstStride = M * BLOCK_CUBE * sizeof(half) / ONE_BLK_SIZE;  // NZ: 32 B units
            fixpipeParams.quantPre = QuantMode_t::F322F16;
            Fixpipe<half, T, CFG_NZ>(out, c1Local, fixpipeParams);
        } else if (scenario == 3) {
            if constexpr (std::is_same<U, half>::value) ChainThroughL1(c1Local);
        } else if (scenario == 7) {
            GlobalTensor<uint64_t> wordsGM;
            wordsGM.SetGlobalBuffer((__gm__ uint64_t*)dAddr);
            LocalTensor<uint64_t> words(TPosition::C1, 448 * 1024, RoundUpTo(N, 4));
            DataCopy(words, wordsGM, RoundUpTo(N, 4));
            SetFlag<HardEvent::MTE2_FIX>(EVENT_ID5);
            WaitFlag<HardEvent::MTE2_FIX>(EVENT_ID5);
            GlobalTensor<int8_t> out;
            out.SetGlobalBuffer((__gm__ int8_t*)cGM);
            fixpipeParams.quantPre = QuantMode_t::VQF322B8_PRE;
            Fixpipe(out, c1Local, words, fixpipeParams);
        } else if (scenario == 4) {
            GlobalTensor<int8_t> out;
            out.SetGlobalBuffer((__gm__ int8_t*)cGM);
            fixpipeParams.quantPre = QuantMode_t::QF322B8_PRE;
            fixpipeParams.deqScalar = quantWord;
            fixpipeParams.reluEn = true;
            Fixpipe(out, c1Local, fixpipeParams);
        } else {
            GlobalTensor<T> out;
            out.SetGlobalBuffer((__gm__ T*)cGM);
            Fixpipe(out, c1Local, fixpipeParams);
        }
        outQueueCO1.FreeTensor(c1Local);
    }
    // Scenario 3: C (fp32, L0C) -> L1 as Nz half, then E = C x D^T with D [p = M, N] from GM.
    __aicore__ inline void ChainThroughL1(LocalTensor<T>& c1Local)
    {
        const uint32_t P = M;
        LocalTensor<half> cL1(TPosition::C1, 256 * 1024, RoundUpTo(M, BLOCK_CUBE) * RoundUpTo(N, BLOCK_CUBE));
        LocalTensor<half> dL1(TPosition::B1, 320 * 1024, RoundUpTo(P, BLOCK_CUBE) * RoundUpTo(N, BLOCK_CUBE));
        LocalTensor<half> a2(TPosition::A2, 32 * 1024, 16 * 1024);
        LocalTensor<half> b2(TPosition::B2, 32 * 1024, 16 * 1024);
        LocalTensor<float> e1(TPosition::CO1, 64 * 1024, 16 * 1024);
        FixpipeParamsV220 toL1;
        toL1.nSize = RoundUpTo(N, BLOCK_CUBE);
        toL1.mSize = M;
        toL1.srcStride = RoundUpTo(M, BLOCK_CUBE);
        toL1.dstStride = RoundUpTo(M, BLOCK_CUBE) * BLOCK_CUBE * sizeof(half) / ONE_BLK_SIZE;
        toL1.quantPre = QuantMode_t::F322F16;
        Fixpipe<half, float, CFG_NZ>(cL1, c1Local, toL1);
        DataCopy(dL1, dGM, Nd2NzParams(1, P, N, 0, N, RoundUpTo(P, BLOCK_CUBE), 1, 0));
        SetFlag<HardEvent::FIX_MTE1>(EVENT_ID0);
        WaitFlag<HardEvent::FIX_MTE1>(EVENT_ID0);
        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID4);
        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID4);
        const uint32_t M1 = DivRoundUp(M, BLOCK_CUBE), K1 = DivRoundUp(N, BLOCK_CUBE), P1 = DivRoundUp(P, BLOCK_CUBE);
        for (uint32_t i = 0; i < M1; ++i) {
            LoadData(a2[i * K1 * 256], cL1[i * 256], LoadData2DParams(0, K1, M1, 0, 0, false, 0));
        }
        LoadData(b2, dL1, LoadData2DParams(0, K1 * P1, 1, 0, 0, false, 0));
        SetFlag<HardEvent::MTE1_M>(EVENT_ID4);
        WaitFlag<HardEvent::MTE1_M>(EVENT_ID4);
        Mmad(e1, a2, b2, MmadParams(M, P, N, 0, false, true));
        SetFlag<HardEvent::M_FIX>(EVENT_ID4);
        WaitFlag<HardEvent::M_FIX>(EVENT_ID4);
        GlobalTensor<float> out;
        out.SetGlobalBuffer((__gm__ float*)cGM);
        Fixpipe(out, e1, FixpipeParamsV220(P, M, RoundUpTo(M, BLOCK_CUBE), P, false));
    }

    TPipe pipe;
    TQue<TPosition::A1, 1> inQueueA1;
    TQue<TPosition::A2, 1> inQueueA2;
    TQue<TPosition::B1, 1> inQueueB1;
    TQue<TPosition::B2, 1> inQueueB2;
    TQue<TPosition::CO1, 1> outQueueCO1;
    GlobalTensor<U> aGM, bGM, dGM;
    GM_ADDR cGM;
    GM_ADDR dAddr;
    int32_t scenario;
    uint32_t M, K, N, c0, fractalSize;
    uint64_t quantWord;
    bool disableKAlign;
};

extern "C" __global__ __aicore__ void matmul_sample(GM_ADDR a, GM_ADDR b, GM_ADDR d, GM_ADDR c, GM_ADDR prm)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    GlobalTensor<int32_t> p;
    p.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    int32_t scen = p.GetValue(0);
    uint32_t m = p.GetValue(1), k = p.GetValue(2), n = p.GetValue(3);
    uint64_t quant = (uint64_t)(uint32_t)p.GetValue(4) | ((uint64_t)(uint32_t)p.GetValue(5) << 32);
    bool noKAlign = p.GetValue(6) != 0;
    if (scen == 2) {
        KernelMatmulSample<float, float> op;
        op.Init(a, b, d, c, scen, m, k, n, quant, noKAlign);
        op.Process();
    } else if (scen == 5) {
        KernelMatmulSample<int8_t, int32_t> op;
        op.Init(a, b, d, c, scen, m, k, n, quant, noKAlign);
        op.Process();
    } else {
        KernelMatmulSample<half, float> op;
        op.Init(a, b, d, c, scen, m, k, n, quant, noKAlign);
        op.Process();
    }
}
