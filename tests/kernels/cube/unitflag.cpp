// Twin test kernels for L0C unit flags (Mmad / Fixpipe unitFlag; UnitFlag.md), one AI core, AIC only.
// C = A x B^T (A [M, K], B [N, K] half in GM) in kRound Mmads along K, accumulated in one L0C tile, then Fixpipe
// NZ2ND to GM; the unit flags of each side, the M -> FIX flags and a second round on the same L0C tile are chosen
// by int64 parameters (P_*), so the handshake can be broken one way at a time.
#include "kernel_operator.h"

using namespace AscendC;

constexpr int P_M = 0, P_N = 1, P_K = 2, P_ROUNDS = 3, P_MMAD_LAST = 4, P_MMAD_OTHER = 5, P_FIX = 6, P_FLAGS = 7,
              P_FIX_FIRST = 8;
constexpr int64_t kSyncMFix = 1;     // SetFlag/WaitFlag M_FIX before the Fixpipe (the usual ordering)
constexpr int64_t kTwice = 2;        // a second round of Mmads into the same L0C tile, output at C[M * N]
constexpr int64_t kSplitN = 4;       // the first round's Fixpipe in two: 32 columns, then the rest
constexpr int64_t kOnlyFirst = 8;    // ... and only the first of the two
constexpr int64_t kReset = 16;       // SetFixPipeConfig(L0C tensor, isUnitFlag = true) after the first round
constexpr int64_t kSyncFixM = 32;    // SetFlag/WaitFlag FIX_M between the rounds
constexpr int64_t kSecondPlain = 64; // the second round without unit flags (Mmads and Fixpipe)
constexpr int64_t kReadTwice = 128;  // the first round's tile read by one more Fixpipe first (unitFlag P_FIX_FIRST)

__aicore__ inline uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

extern "C" __global__ __aicore__ void unitflag_matmul(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR prm) {
    if ASCEND_IS_AIV {
        return;
    }
    GlobalTensor<int64_t> P;
    P.SetGlobalBuffer((__gm__ int64_t*)prm, 16);
    const uint32_t M = P.GetValue(P_M), N = P.GetValue(P_N), K = P.GetValue(P_K), rounds = P.GetValue(P_ROUNDS);
    const int64_t flags = P.GetValue(P_FLAGS);
    constexpr uint32_t C0 = 16, FRAC = 256;
    const uint32_t M1 = CeilDiv(M, 16), N1 = CeilDiv(N, 16), K1 = CeilDiv(K, C0), K1c = K1 / rounds;

    GlobalTensor<half> aG, bG;
    aG.SetGlobalBuffer((__gm__ half*)a, (uint64_t)M * K);
    bG.SetGlobalBuffer((__gm__ half*)b, (uint64_t)N * K);
    GlobalTensor<float> cG;
    cG.SetGlobalBuffer((__gm__ float*)c, 2ull * M * N);

    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> c1Buf;
    pipe.InitBuffer(a1Buf, 32 * 1024);
    pipe.InitBuffer(b1Buf, 32 * 1024);
    pipe.InitBuffer(a2Buf, 32 * 1024);
    pipe.InitBuffer(b2Buf, 32 * 1024);
    pipe.InitBuffer(c1Buf, 16 * 1024);
    LocalTensor<half> a1 = a1Buf.Get<half>(), b1 = b1Buf.Get<half>(), a2 = a2Buf.Get<half>(), b2 = b2Buf.Get<half>();
    LocalTensor<float> c1 = c1Buf.Get<float>();

    DataCopy(a1, aG, Nd2NzParams(1, M, K, 0, K, M1 * 16, 1, 0));
    DataCopy(b1, bG, Nd2NzParams(1, N, K, 0, K, N1 * 16, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    // L0A: per K chunk j, the Zz image of A[:, chunk]; L0B: the Zn image of B^T, chunks contiguous.
    for (uint32_t j = 0; j < rounds; ++j) {
        for (uint32_t m1 = 0; m1 < M1; ++m1) {
            LoadData(a2[(j * M1 + m1) * K1c * FRAC], a1[(j * K1c * M1 + m1) * FRAC],
                     LoadData2DParams(0, K1c, M1, 0, 0, false, 0));
        }
    }
    LoadData(b2, b1, LoadData2DParams(0, K1 * N1, 1, 0, 0, false, 0));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);

    const uint32_t passes = (flags & kTwice) ? 2 : 1;
    for (uint32_t pass = 0; pass < passes; ++pass) {
        const bool plain = pass == 1 && (flags & kSecondPlain);
        for (uint32_t j = 0; j < rounds; ++j) {
            MmadParams mp;
            mp.m = M;
            mp.n = N;
            mp.k = K1c * C0;
            mp.cmatrixInitVal = j == 0;
            mp.unitFlag = plain ? 0 : (uint8_t)P.GetValue(j + 1 == rounds ? P_MMAD_LAST : P_MMAD_OTHER);
            Mmad(c1, a2[j * M1 * K1c * FRAC], b2[j * K1c * N1 * FRAC], mp);
            PipeBarrier<PIPE_M>();  // (m / 16) * (n / 16) < 10: accumulating Mmads need it (Mmad page)
        }
        if (flags & kSyncMFix) {
            SetFlag<HardEvent::M_FIX>(EVENT_ID0);
            WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
        }
        const uint8_t fixUnit = plain ? 0 : (uint8_t)P.GetValue(P_FIX);
        GlobalTensor<float> out = cG[pass * M * N];
        if (pass == 0 && (flags & kReadTwice)) {
            FixpipeParamsV220 f0(N, M, M1 * 16, N, false);
            f0.unitFlag = (uint8_t)P.GetValue(P_FIX_FIRST);
            Fixpipe(cG[M * N], c1, f0);
        }
        if (pass == 0 && (flags & kSplitN)) {
            FixpipeParamsV220 f1(32, M, M1 * 16, N, false);
            f1.unitFlag = fixUnit;
            Fixpipe(out, c1, f1);
            if (!(flags & kOnlyFirst)) {
                FixpipeParamsV220 f2(N - 32, M, M1 * 16, N, false);
                f2.unitFlag = fixUnit;
                Fixpipe(out[32], c1[2 * M1 * 16 * 16], f2);
            }
        } else {
            FixpipeParamsV220 fp(N, M, M1 * 16, N, false);
            fp.unitFlag = fixUnit;
            Fixpipe(out, c1, fp);
        }
        if (pass == 0 && (flags & kReset)) SetFixPipeConfig<float>(c1, true);
        if (pass == 0 && (flags & kSyncFixM)) {
            SetFlag<HardEvent::FIX_M>(EVENT_ID0);
            WaitFlag<HardEvent::FIX_M>(EVENT_ID0);
        }
    }
}
