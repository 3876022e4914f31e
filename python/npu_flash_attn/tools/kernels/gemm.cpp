// Multi-core GEMM for the cost-model calibration and the naive-attention baseline (scripts/bench.py):
//   C[b] = op(A[b]) x op(B[b]), b < batch; A [M, K] (aTrans: [K, M]), B [K, N] (bTrans: [N, K]), C [M, N], all ND
//   row-major in GM; fp16 in, fp32 accumulate, fp16 or fp32 out. KERNEL_TYPE_AIC_ONLY.
// Output tiles of BM x BN (one full L0C of fp32: 128 x 256, or 256 x 128 when N <= 128) go round-robin to the AI cores.
// Per tile, K runs in L1 chunks of kL1K (two L1 stages for A and for B, GM -> L1 by Nd2Nz DataCopy, the next chunk
// loading while the current one computes), each cut in kL0K pieces through ping-pong halves of L0A/L0B (LoadData),
// Mmad accumulating in L0C, then one Fixpipe (NZ -> ND, F322F16 for fp16 out) to GM, overlapping the next tile's loads.
// p (int32 GM): M, N, K, batch, bTrans (1: B stored [N, K]), out (0 fp32, 1 fp16), aTrans (1: A stored [K, M]).
#include "kernel_operator.h"

using namespace AscendC;

namespace {

constexpr uint32_t kL1K = 256;        // K per L1 stage
constexpr uint32_t kL0K = 64;         // K per L0A/L0B half
constexpr uint32_t kTileElems = 32768;  // BM x BN: 128 KB of fp32 in L0C
constexpr uint32_t kFrac = 256;       // elements of a 16 x 16 fp16 fractal
constexpr uint32_t kL0Half = 32 * 1024;
// Event IDs. MTE2_MTE1 / MTE1_MTE2: L1 stage s of A is s, of B is 2 + s. M_MTE1: L0 half h is 3 + h (IDs 0-2 are
// TPipe's on the AIC, as in op_kernel/tile/matmul.h). MTE1_M: h. M_FIX / FIX_M: 0 (one L0C tile).
constexpr int32_t kL0FreeId0 = 3;

__aicore__ inline uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
__aicore__ inline uint32_t Align16(uint32_t a) { return CeilDiv(a, 16) * 16; }
__aicore__ inline uint32_t Min(uint32_t a, uint32_t b) { return a < b ? a : b; }

struct Problem {
    uint32_t M, N, K, batch;
    bool aTrans, bTrans;
    uint32_t BM, BN;
};

class GemmCore {
public:
    __aicore__ inline void Init(TPipe* pipe, const Problem& pr, GM_ADDR a, GM_ADDR b) {
        pr_ = pr;
        aG_.SetGlobalBuffer((__gm__ half*)a, (uint64_t)pr.batch * pr.M * pr.K);
        bG_.SetGlobalBuffer((__gm__ half*)b, (uint64_t)pr.batch * pr.K * pr.N);
        pipe->InitBuffer(l1a_, 2 * pr.BM * kL1K * sizeof(half));
        pipe->InitBuffer(l1b_, 2 * pr.BN * kL1K * sizeof(half));
        pipe->InitBuffer(l0a_, 2 * kL0Half);
        pipe->InitBuffer(l0b_, 2 * kL0Half);
        pipe->InitBuffer(l0c_, kTileElems * sizeof(float));
        for (int32_t s = 0; s < 2; ++s) {
            SetFlag<HardEvent::MTE1_MTE2>(s);
            SetFlag<HardEvent::MTE1_MTE2>(2 + s);
            SetFlag<HardEvent::M_MTE1>(kL0FreeId0 + s);
        }
        SetFlag<HardEvent::FIX_M>(0);
    }

    __aicore__ inline void End() {
        for (int32_t s = 0; s < 2; ++s) {
            WaitFlag<HardEvent::MTE1_MTE2>(s);
            WaitFlag<HardEvent::MTE1_MTE2>(2 + s);
            WaitFlag<HardEvent::M_MTE1>(kL0FreeId0 + s);
        }
        WaitFlag<HardEvent::FIX_M>(0);
    }

    // One BM x BN output tile at (m0, n0) of product b, written to C through Fixpipe.
    template <typename TOut>
    __aicore__ inline void Tile(const GlobalTensor<TOut>& cG, uint32_t b, uint32_t m0, uint32_t n0) {
        const uint32_t mLen = Min(pr_.BM, pr_.M - m0), nLen = Min(pr_.BN, pr_.N - n0);
        const uint32_t mBlocks = CeilDiv(mLen, 16), nBlocks = CeilDiv(nLen, 16);
        const uint32_t chunks = CeilDiv(pr_.K, kL1K);
        LoadL1(stage_, b, m0, n0, mLen, nLen, 0);
        LocalTensor<float> c = l0c_.Get<float>();
        WaitFlag<HardEvent::FIX_M>(0);  // the previous tile's Fixpipe has drained L0C
        for (uint32_t ch = 0; ch < chunks; ++ch) {
            const uint32_t st = stage_;
            stage_ ^= 1;  // the next chunk (or the next tile's first) goes to the other stage
            if (ch + 1 < chunks) LoadL1(stage_, b, m0, n0, mLen, nLen, ch + 1);
            const uint32_t kc = Min(kL1K, pr_.K - ch * kL1K), kcBlocks = CeilDiv(kc, 16);
            LocalTensor<half> a1 = l1a_.Get<half>()[st * pr_.BM * kL1K];
            LocalTensor<half> b1 = l1b_.Get<half>()[st * pr_.BN * kL1K];
            WaitFlag<HardEvent::MTE2_MTE1>(st);
            WaitFlag<HardEvent::MTE2_MTE1>(2 + st);
            for (uint32_t k0 = 0; k0 < kc; k0 += kL0K) {
                const uint32_t kLen = Min(kL0K, kc - k0), k1s = k0 / 16, k1n = CeilDiv(kLen, 16);
                const uint32_t h = l0Half_;
                l0Half_ ^= 1;
                LocalTensor<half> a2 = l0a_.Get<half>()[h * (kL0Half / sizeof(half))];
                LocalTensor<half> b2 = l0b_.Get<half>()[h * (kL0Half / sizeof(half))];
                WaitFlag<HardEvent::M_MTE1>(kL0FreeId0 + h);
                // L0A wants Zz: fractal (m1, k1) at m1 * k1n + k1, m rows x k columns. L1 A is Nz of [M, K] (fractal
                // (k1, m1) at k1 * mBlocks + m1) or, aTrans, of [K, M] ((m1, k1) at m1 * kcBlocks + k1, transposed).
                for (uint32_t k1 = 0; k1 < k1n; ++k1) {
                    if (pr_.aTrans) {
                        LoadData(a2[k1 * kFrac], a1[(k1s + k1) * kFrac],
                                 LoadData2DParams(0, (uint8_t)mBlocks, (uint16_t)kcBlocks, 0, (uint16_t)(k1n - 1),
                                                  true, 0));
                    } else {
                        LoadData(a2[k1 * kFrac], a1[(k1s + k1) * mBlocks * kFrac],
                                 LoadData2DParams(0, (uint8_t)mBlocks, 1, 0, (uint16_t)(k1n - 1), false, 0));
                    }
                }
                if (pr_.bTrans) {  // L1 B is Nz of [N, K]: already Zn, (k1, n1) at k1 * nBlocks + n1
                    LoadData(b2, b1[k1s * nBlocks * kFrac],
                             LoadData2DParams(0, (uint8_t)(k1n * nBlocks), 1, 0, 0, false, 0));
                } else {  // L1 B is Nz of [K, N] ((n1, k1) at n1 * kcBlocks + k1): gather along n1, transpose each
                    for (uint32_t k1 = 0; k1 < k1n; ++k1) {
                        LoadData(b2[k1 * nBlocks * kFrac], b1[(k1s + k1) * kFrac],
                                 LoadData2DParams(0, (uint8_t)nBlocks, (uint16_t)kcBlocks, 0, 0, true, 0));
                    }
                }
                if (k0 + kL0K >= kc) {  // this L1 stage is consumed
                    SetFlag<HardEvent::MTE1_MTE2>(st);
                    SetFlag<HardEvent::MTE1_MTE2>(2 + st);
                }
                SetFlag<HardEvent::MTE1_M>(h);
                WaitFlag<HardEvent::MTE1_M>(h);
                // m = 1 would switch the cube to GEMV mode (L0A read as a plain row): run 16 rows, Fixpipe keeps mLen.
                MmadParams mp(mLen == 1 ? 16 : mLen, nLen, kLen, 0, false, ch == 0 && k0 == 0);
                Mmad(c, a2, b2, mp);
                // The next Mmad accumulates into this L0C tile: the Mmad page's threshold on m and n.
                if ((mp.m / 16) * (mp.n / 16) < 10) PipeBarrier<PIPE_M>();
                SetFlag<HardEvent::M_MTE1>(kL0FreeId0 + h);
            }
        }
        SetFlag<HardEvent::M_FIX>(0);
        WaitFlag<HardEvent::M_FIX>(0);
        FixpipeParamsV220 fp(nLen, mLen, mBlocks * 16, pr_.N, false);
        fp.quantPre = sizeof(TOut) == 2 ? QuantMode_t::F322F16 : QuantMode_t::NoQuant;
        Fixpipe<TOut, float, CFG_ROW_MAJOR>(cG[((uint64_t)b * pr_.M + m0) * pr_.N + n0], c, fp);
        SetFlag<HardEvent::FIX_M>(0);
    }

private:
    // GM -> L1 stage st: the A rows [m0, m0 + mLen) and the B columns [n0, n0 + nLen) of K chunk ch.
    __aicore__ inline void LoadL1(uint32_t st, uint32_t b, uint32_t m0, uint32_t n0, uint32_t mLen, uint32_t nLen,
                                  uint32_t ch) {
        const uint32_t k0 = ch * kL1K, kc = Min(kL1K, pr_.K - k0);
        const uint64_t M = pr_.M, N = pr_.N, K = pr_.K;
        LocalTensor<half> a1 = l1a_.Get<half>()[st * pr_.BM * kL1K];
        WaitFlag<HardEvent::MTE1_MTE2>(st);
        if (mLen == 1) {  // the 16-row Mmad below reads rows 1-15 of each fractal: make them zero, then the row
            Fill(a1, InitConstValueParams<half>(1, (uint16_t)(CeilDiv(kc, 16) * 16), 0, (half)0));
            PipeBarrier<PIPE_MTE2>();
        }
        if (pr_.aTrans) {
            DataCopy(a1, aG_[(b * K + k0) * M + m0], Nd2NzParams(1, kc, mLen, 0, M, Align16(kc), 1, 0));
        } else {
            DataCopy(a1, aG_[(b * M + m0) * K + k0], Nd2NzParams(1, mLen, kc, 0, K, Align16(mLen), 1, 0));
        }
        SetFlag<HardEvent::MTE2_MTE1>(st);
        WaitFlag<HardEvent::MTE1_MTE2>(2 + st);
        LocalTensor<half> b1 = l1b_.Get<half>()[st * pr_.BN * kL1K];
        if (pr_.bTrans) {
            DataCopy(b1, bG_[(b * N + n0) * K + k0], Nd2NzParams(1, nLen, kc, 0, K, Align16(nLen), 1, 0));
        } else {
            DataCopy(b1, bG_[(b * K + k0) * N + n0], Nd2NzParams(1, kc, nLen, 0, N, Align16(kc), 1, 0));
        }
        SetFlag<HardEvent::MTE2_MTE1>(2 + st);
    }

    Problem pr_;
    uint32_t stage_ = 0, l0Half_ = 0;
    GlobalTensor<half> aG_, bG_;
    TBuf<TPosition::A1> l1a_;
    TBuf<TPosition::B1> l1b_;
    TBuf<TPosition::A2> l0a_;
    TBuf<TPosition::B2> l0b_;
    TBuf<TPosition::CO1> l0c_;
};

template <typename TOut>
__aicore__ inline void RunTiles(GemmCore& core, const Problem& pr, GM_ADDR c) {
    GlobalTensor<TOut> cG;
    cG.SetGlobalBuffer((__gm__ TOut*)c, (uint64_t)pr.batch * pr.M * pr.N);
    const uint32_t mTiles = CeilDiv(pr.M, pr.BM), nTiles = CeilDiv(pr.N, pr.BN), perProduct = mTiles * nTiles;
    const uint32_t tiles = perProduct * pr.batch;
    for (uint32_t t = GetBlockIdx(); t < tiles; t += GetBlockNum()) {
        const uint32_t b = t / perProduct, r = t % perProduct;
        core.Tile<TOut>(cG, b, (r / nTiles) * pr.BM, (r % nTiles) * pr.BN);
    }
}

}  // namespace

extern "C" __global__ __aicore__ void gemm(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR prm) {
    if ASCEND_IS_AIV {
        return;
    }
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 7);
    Problem pr;
    pr.M = P.GetValue(0), pr.N = P.GetValue(1), pr.K = P.GetValue(2), pr.batch = P.GetValue(3);
    pr.bTrans = P.GetValue(4) != 0;
    const int32_t out = P.GetValue(5);
    pr.aTrans = P.GetValue(6) != 0;
    pr.BN = pr.N <= 128 ? 128 : 256;
    pr.BM = kTileElems / pr.BN;
    TPipe pipe;
    GemmCore core;
    core.Init(&pipe, pr, a, b);
    if (out == 1) {
        RunTiles<half>(core, pr, c);
    } else {
        RunTiles<float>(core, pr, c);
    }
    core.End();
}
