// Twin test kernel: C = A x B (or A x B^T) through the whole cube path, one AI core, K in several steps:
//   GM -(DataCopy Nd2NzParams)-> L1 (Nz) -(LoadData / LoadDataWithTranspose)-> L0A (Zz), L0B (Zn)
//   -(Mmad, accumulate over K)-> L0C -(Fixpipe, NZ -> ND, optional F322F16/F322BF16)-> GM.
// Parameters come from an int32 GM buffer so one compiled source covers every shape and mode:
//   p[0] M, p[1] N, p[2] K, p[3] bTrans (1: B stored [N, K]; 0: B stored [K, N]), p[4] out (0 fp32, 1 half, 2 bf16),
//   p[5] kTile (multiple of 16), p[6] flags (fault injection for negative tests, see kFlag*).
#include "kernel_operator.h"

using namespace AscendC;

constexpr int32_t kFlagSkipTranspose = 1;   // load B [K, N] without the per-fractal transpose
constexpr int32_t kFlagMisalignL0A = 2;     // place the A tile 256 B into L0A
constexpr int32_t kFlagHugeM = 4;           // Mmad with m = 4096
constexpr int32_t kFlagL1Overflow = 8;      // ask TPipe for more L1 than exists
constexpr int32_t kFlagAccumulateFirst = 16;  // first K step with cmatrixInitVal = false
constexpr int32_t kFlagNzOutput = 32;       // Fixpipe CFG_NZ to GM (C written as Nz fp32, srcStride-sized blocks)
constexpr int32_t kFlagGemvA = 64;          // M == 1: stage A as one contiguous ND row (what GEMV-mode Mmad reads)

__aicore__ inline uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
__aicore__ inline uint32_t Align16(uint32_t a) { return CeilDiv(a, 16) * 16; }

template <typename T>
__aicore__ inline void GemmBody(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR prm) {
    if ASCEND_IS_AIV {
        return;
    }
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    const uint32_t M = P.GetValue(0), N = P.GetValue(1), K = P.GetValue(2);
    const int32_t bTrans = P.GetValue(3), out = P.GetValue(4), kTile = P.GetValue(5), flags = P.GetValue(6);
    constexpr uint32_t C0 = 32 / sizeof(T);
    constexpr uint32_t FRAC = 512 / sizeof(T);  // elements per fractal

    GlobalTensor<T> aG, bG;
    aG.SetGlobalBuffer((__gm__ T*)a, (uint64_t)M * K);
    bG.SetGlobalBuffer((__gm__ T*)b, (uint64_t)K * N);

    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> c1Buf;
    pipe.InitBuffer(a1Buf, (flags & kFlagL1Overflow) ? 400 * 1024 : 160 * 1024);
    pipe.InitBuffer(b1Buf, 160 * 1024);
    pipe.InitBuffer(a2Buf, 64 * 1024);
    pipe.InitBuffer(b2Buf, 64 * 1024);
    pipe.InitBuffer(c1Buf, 128 * 1024);
    LocalTensor<T> a1 = a1Buf.Get<T>(), b1 = b1Buf.Get<T>();
    LocalTensor<T> a2 = a2Buf.Get<T>(), b2 = b2Buf.Get<T>();
    LocalTensor<float> c1 = c1Buf.Get<float>();
    if (flags & kFlagMisalignL0A) a2 = a2[256 / sizeof(T)];

    const uint32_t M1 = CeilDiv(M, 16), N1 = CeilDiv(N, 16);
    const uint32_t steps = CeilDiv(K, kTile);
    for (uint32_t s = 0; s < steps; ++s) {
        const uint32_t k0 = s * kTile, kc = (K - k0 < (uint32_t)kTile) ? K - k0 : kTile;
        const uint32_t KC1 = CeilDiv(kc, C0);  // K fractals of A / Zn rows of B
        if (s > 0) {
            WaitFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);  // L1 tiles consumed by the previous loads
        }
        // ---- GM -> L1 ----
        DataCopy(a1, aG[k0], Nd2NzParams(1, M, kc, 0, K, Align16(M), 1, 0));
        if (bTrans) {
            DataCopy(b1, bG[k0], Nd2NzParams(1, N, kc, 0, K, Align16(N), 1, 0));
        } else if (sizeof(T) != 4) {
            DataCopy(b1, bG[(uint64_t)k0 * N], Nd2NzParams(1, kc, N, 0, N, Align16(kc), 1, 0));
        } else {
            // float B [K, N] needs Zz in L1 (16-row slabs side by side) for the b32 transpose load.
            const uint32_t full = kc / 16, tail = kc % 16, slab = 16 * Align16(N);
            if (full > 0) DataCopy(b1, bG[(uint64_t)k0 * N], Nd2NzParams(full, 16, N, 16 * N, N, 16, 1, slab));
            if (tail > 0) DataCopy(b1[full * slab], bG[(uint64_t)(k0 + full * 16) * N], Nd2NzParams(1, tail, N, 0, N, 16, 1, 0));
        }
        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        if (s > 0) {
            WaitFlag<HardEvent::M_MTE1>(EVENT_ID3);  // L0A/L0B consumed by the previous Mmad
        }
        // ---- L1 -> L0A (Nz -> Zz): one load per 16-row block of A ----
        if ((flags & kFlagGemvA) && M == 1) {
            // GEMV mode reads A as ND: re-stage the row with 32 B column blocks packed back to back (over the Nz
            // copy above: two MTE2 writes to the same bytes need a PipeBarrier).
            PipeBarrier<PIPE_MTE2>();
            DataCopy(a1, aG[k0], Nd2NzParams(1, 1, kc, 0, K, 1, 1, 0));
            SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
            LoadData(a2, a1, LoadData2DParams(0, CeilDiv(kc * sizeof(T), 512), 1, 0, 0, false, 0));
        } else {
            for (uint32_t m1 = 0; m1 < M1; ++m1) {
                LoadData(a2[m1 * KC1 * FRAC], a1[m1 * FRAC], LoadData2DParams(0, KC1, M1, 0, 0, false, 0));
            }
        }
        // ---- L1 -> L0B (Zn) ----
        if (bTrans) {
            // Nz of B [N, K] already is Zn.
            LoadData(b2, b1, LoadData2DParams(0, KC1 * N1, 1, 0, 0, false, 0));
        } else if (sizeof(T) != 4) {
            const uint32_t R1 = CeilDiv(kc, 16);
            const bool tr = (flags & kFlagSkipTranspose) == 0;
            for (uint32_t k1 = 0; k1 < R1; ++k1) {
                LoadData(b2[k1 * N1 * FRAC], b1[k1 * FRAC], LoadData2DParams(0, N1, R1, 0, 0, tr, 0));
            }
        } else {
            const uint32_t slabs = CeilDiv(kc, 16), slab = 16 * Align16(N);
            for (uint32_t q = 0; q < slabs; ++q) {
                LoadDataWithTranspose(b2[q * N1 * 2 * FRAC], b1[q * slab], LoadData2dTransposeParams(0, N1, 1, 0, N1 - 1));
            }
        }
        SetFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
        if (s == steps - 1) WaitFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
        SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
        WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
        // ---- Mmad ----
        MmadParams mp;
        mp.m = (flags & kFlagHugeM) ? 4096 : M;
        mp.n = N;
        mp.k = kc;
        mp.cmatrixInitVal = (s == 0) && !(flags & kFlagAccumulateFirst);
        mp.cmatrixSource = false;
        Mmad(c1, a2, b2, mp);
        if ((M / 16) * (N / 16) < 10) PipeBarrier<PIPE_M>();
        SetFlag<HardEvent::M_MTE1>(EVENT_ID3);
        if (s == steps - 1) WaitFlag<HardEvent::M_MTE1>(EVENT_ID3);
    }
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    // ---- L0C -> GM ----
    FixpipeParamsV220 fp;
    fp.nSize = N;
    fp.mSize = M;
    fp.srcStride = Align16(M);
    fp.dstStride = N;
    fp.ndNum = 1;
    fp.srcNdStride = 0;
    fp.dstNdStride = 0;
    if (flags & kFlagNzOutput) {
        // C as Nz fp32 in GM: column blocks of 16, each Align16(M) rows x 64 B.
        GlobalTensor<float> cG;
        cG.SetGlobalBuffer((__gm__ float*)c, (uint64_t)Align16(M) * Align16(N));
        fp.nSize = Align16(N);
        fp.dstStride = Align16(M) * 16 * sizeof(float) / 32;
        Fixpipe<float, float, CFG_NZ>(cG, c1, fp);
    } else if (out == 0) {
        GlobalTensor<float> cG;
        cG.SetGlobalBuffer((__gm__ float*)c, (uint64_t)M * N);
        Fixpipe(cG, c1, fp);
    } else if (out == 1) {
        GlobalTensor<half> cG;
        cG.SetGlobalBuffer((__gm__ half*)c, (uint64_t)M * N);
        fp.quantPre = QuantMode_t::F322F16;
        Fixpipe(cG, c1, fp);
    } else {
        GlobalTensor<bfloat16_t> cG;
        cG.SetGlobalBuffer((__gm__ bfloat16_t*)c, (uint64_t)M * N);
        fp.quantPre = QuantMode_t::F322BF16;
        Fixpipe(cG, c1, fp);
    }
}

extern "C" __global__ __aicore__ void gemm_f16(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR p) { GemmBody<half>(a, b, c, p); }
extern "C" __global__ __aicore__ void gemm_bf16(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR p) { GemmBody<bfloat16_t>(a, b, c, p); }
extern "C" __global__ __aicore__ void gemm_f32(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR p) { GemmBody<float>(a, b, c, p); }

// A cube API called on a vector core must raise (the NPU would silently skip it).
extern "C" __global__ __aicore__ void cube_on_aiv(GM_ADDR a) {
    LocalTensor<half> none;
    LoadData(none, none, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
}

// A vector (UB) DataCopy on the cube core must raise.
extern "C" __global__ __aicore__ void ub_copy_on_aic(GM_ADDR a) {
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float*)a, 64);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, g, 64);
    q.FreeTensor(t);
}

// Mmad throughput: L0A/L0B filled with constants by Fill, then p[3] Mmads of p[0] x p[1] x p[2] accumulating into
// L0C; C (fp32, ND) goes to GM so the caller can check C = reps * k * a * b.
template <typename T>
__aicore__ inline void MmadBenchBody(GM_ADDR c, GM_ADDR prm) {
    if ASCEND_IS_AIV {
        return;
    }
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    const uint32_t M = P.GetValue(0), N = P.GetValue(1), K = P.GetValue(2), reps = P.GetValue(3);
    TPipe pipe;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> c1Buf;
    pipe.InitBuffer(a2Buf, 64 * 1024);
    pipe.InitBuffer(b2Buf, 64 * 1024);
    pipe.InitBuffer(c1Buf, 128 * 1024);
    LocalTensor<T> a2 = a2Buf.Get<T>(), b2 = b2Buf.Get<T>();
    LocalTensor<float> c1 = c1Buf.Get<float>();
    Fill(a2, InitConstValueParams<T>(1, 64 * 1024 / 512, 0, T(0.5f)));
    Fill(b2, InitConstValueParams<T>(1, 64 * 1024 / 512, 0, T(2.0f)));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    for (uint32_t r = 0; r < reps; ++r) {
        MmadParams mp(M, N, K, 0, false, r == 0);
        Mmad(c1, a2, b2, mp);
    }
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    GlobalTensor<float> cG;
    cG.SetGlobalBuffer((__gm__ float*)c, (uint64_t)M * N);
    FixpipeParamsV220 fp(N, M, Align16(M), N, false);
    Fixpipe(cG, c1, fp);
}
extern "C" __global__ __aicore__ void mmad_bench_f16(GM_ADDR c, GM_ADDR p) { MmadBenchBody<half>(c, p); }
extern "C" __global__ __aicore__ void mmad_bench_f32(GM_ADDR c, GM_ADDR p) { MmadBenchBody<float>(c, p); }
