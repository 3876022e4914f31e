// Twin test kernels for mix launches (1 AIC + 2 AIV per block), cross-core flags, SyncAll and GM atomics.
#include "kernel_operator.h"

using namespace AscendC;

__aicore__ inline uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

// Spins ~ms milliseconds so that the other cores reach their sync point first.
__aicore__ inline void Spin(int64_t ms) {
    int64_t t0 = GetSystemCycle();
    while (GetSystemCycle() - t0 < ms * 1000000) {
    }
}

// One 64 B line per core: [coreType, GetBlockIdx, GetBlockNum, GetSubBlockIdx, GetSubBlockNum, GetTaskRatio].
extern "C" __global__ __aicore__ void core_ids(GM_ADDR out) {
    GlobalTensor<int64_t> g;
    g.SetGlobalBuffer((__gm__ int64_t*)out);
    int64_t slot = g_coreType == AIC ? GetBlockIdx() : GetBlockNum() + GetBlockIdx();
    GlobalTensor<int64_t> s = g[slot * 8];
    s.SetValue(0, g_coreType == AIC ? 1 : 2);
    s.SetValue(1, GetBlockIdx());
    s.SetValue(2, GetBlockNum());
    s.SetValue(3, GetSubBlockIdx());
    s.SetValue(4, GetSubBlockNum());
    s.SetValue(5, GetTaskRatio());
    DataCacheCleanAndInvalid<int64_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(s);
}

// ---------------------------------------------------------------------------------------------------------------
// Ping-pong: per round r the AIC computes C_r = A_r x B^T (M x N fp32, half inputs) into workspace slot r % 2 and
// raises flag 0 (mode 2: each AIV's counter +1). Each AIV waits, takes its M/2 rows, writes 2*C + r to out[r] and
// answers with flag 1 (mode 2: the AIC's counter moves once both AIVs answered). The AIC waits for round r-2's
// answer before overwriting its slot, and drains the last answers at the end.
constexpr uint32_t PP_M = 32, PP_N = 64, PP_K = 32;
// Tile-ready alternates two IDs by round parity: rounds 0 and 1 set it back to back, and the 2201 architecture page
// forbids setting one flagId twice in a row.
constexpr uint16_t FLAG_TILE_READY = 0, FLAG_TILE_FREE = 1;
__aicore__ inline uint16_t TileReady(uint32_t r) { return (uint16_t)(FLAG_TILE_READY + 2 * (r % 2)); }

__aicore__ inline void PingPongCube(GM_ADDR a, GM_ADDR b, GM_ADDR ws, uint32_t rounds) {
    GlobalTensor<half> aG, bG;
    aG.SetGlobalBuffer((__gm__ half*)a, (uint64_t)rounds * PP_M * PP_K);
    bG.SetGlobalBuffer((__gm__ half*)b, PP_N * PP_K);
    GlobalTensor<float> wG;
    wG.SetGlobalBuffer((__gm__ float*)ws, 2 * PP_M * PP_N);
    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> cBuf;
    pipe.InitBuffer(a1Buf, PP_M * PP_K * sizeof(half));
    pipe.InitBuffer(b1Buf, PP_N * PP_K * sizeof(half));
    pipe.InitBuffer(a2Buf, PP_M * PP_K * sizeof(half));
    pipe.InitBuffer(b2Buf, PP_N * PP_K * sizeof(half));
    pipe.InitBuffer(cBuf, PP_M * PP_N * sizeof(float));
    LocalTensor<half> a1 = a1Buf.Get<half>(), b1 = b1Buf.Get<half>(), a2 = a2Buf.Get<half>(), b2 = b2Buf.Get<half>();
    LocalTensor<float> c = cBuf.Get<float>();
    const uint32_t M1 = PP_M / 16, N1 = PP_N / 16, K1 = PP_K / 16;
    // B once: Nz of B [N, K] is Zn.
    DataCopy(b1, bG, Nd2NzParams(1, PP_N, PP_K, 0, PP_K, PP_N, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID1);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID1);
    LoadData(b2, b1, LoadData2DParams(0, K1 * N1, 1, 0, 0, false, 0));
    for (uint32_t r = 0; r < rounds; ++r) {
        if (r > 0) WaitFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
        DataCopy(a1, aG[r * PP_M * PP_K], Nd2NzParams(1, PP_M, PP_K, 0, PP_K, PP_M, 1, 0));
        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        if (r > 0) WaitFlag<HardEvent::M_MTE1>(EVENT_ID3);
        for (uint32_t m1 = 0; m1 < M1; ++m1) {
            LoadData(a2[m1 * K1 * 256], a1[m1 * 256], LoadData2DParams(0, K1, M1, 0, 0, false, 0));
        }
        SetFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
        SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
        WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
        if (r > 0) WaitFlag<HardEvent::FIX_M>(EVENT_ID0);
        Mmad(c, a2, b2, MmadParams(PP_M, PP_N, PP_K, 0, false, true));
        SetFlag<HardEvent::M_MTE1>(EVENT_ID3);
        SetFlag<HardEvent::M_FIX>(EVENT_ID0);
        WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
        if (r >= 2) CrossCoreWaitFlag(FLAG_TILE_FREE);  // slot r % 2 was read by both AIVs in round r - 2
        Fixpipe(wG[(r % 2) * PP_M * PP_N], c, FixpipeParamsV220(PP_N, PP_M, PP_M, PP_N, false));
        SetFlag<HardEvent::FIX_M>(EVENT_ID0);
        CrossCoreSetFlag<2, PIPE_FIX>(TileReady(r));
    }
    WaitFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
    WaitFlag<HardEvent::M_MTE1>(EVENT_ID3);
    WaitFlag<HardEvent::FIX_M>(EVENT_ID0);
    for (uint32_t r = rounds >= 2 ? rounds - 2 : 0; r < rounds; ++r) CrossCoreWaitFlag(FLAG_TILE_FREE);
}

__aicore__ inline void PingPongVector(GM_ADDR ws, GM_ADDR out, uint32_t rounds) {
    constexpr uint32_t ROWS = PP_M / 2, ELEMS = ROWS * PP_N;
    const uint32_t sub = GetSubBlockIdx();
    GlobalTensor<float> wG, oG;
    wG.SetGlobalBuffer((__gm__ float*)ws, 2 * PP_M * PP_N);
    oG.SetGlobalBuffer((__gm__ float*)out, (uint64_t)rounds * PP_M * PP_N);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, ELEMS * sizeof(float));
    LocalTensor<float> t = buf.Get<float>();
    for (uint32_t r = 0; r < rounds; ++r) {
        CrossCoreWaitFlag(TileReady(r));
        if (r > 0) WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        DataCopy(t, wG[(r % 2) * PP_M * PP_N + sub * ELEMS], ELEMS);
        SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
        for (uint32_t i = 0; i < ELEMS; ++i) t.SetValue(i, 2.0f * t.GetValue(i) + (float)r);
        SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
        DataCopy(oG[r * PP_M * PP_N + sub * ELEMS], t, ELEMS);
        SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        CrossCoreSetFlag<2, PIPE_MTE3>(FLAG_TILE_FREE);
    }
    WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
}

extern "C" __global__ __aicore__ void pingpong(GM_ADDR a, GM_ADDR b, GM_ADDR ws, GM_ADDR out, GM_ADDR prm) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GlobalTensor<int32_t> p;
    p.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    const uint32_t rounds = p.GetValue(0);
    if ASCEND_IS_AIC {
        PingPongCube(a, b, ws, rounds);
    }
    if ASCEND_IS_AIV {
        PingPongVector(ws, out, rounds);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Cross-core sync cases. slots: one 64 B line (16 int32) per participant; result: one line per participant.
// p[0] = case, p[1] = core that arrives late (spins p[2] ms first).
__aicore__ inline void WriteSlot(GlobalTensor<int32_t>& slots, int64_t i, int32_t v) {
    GlobalTensor<int32_t> s = slots[i * 16];
    s.SetValue(0, v);
    DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(s);
}
__aicore__ inline int32_t CountSlots(GlobalTensor<int32_t>& slots, int64_t n) {
    int32_t seen = 0;
    for (int64_t i = 0; i < n; ++i) {
        GlobalTensor<int32_t> s = slots[i * 16];
        DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(s);
        if (s.GetValue(0) == (int32_t)(i + 1)) ++seen;
    }
    return seen;
}

extern "C" __global__ __aicore__ void cross_case(GM_ADDR slotsAddr, GM_ADDR resultAddr, GM_ADDR prm) {
    GlobalTensor<int32_t> p, slots, result;
    p.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    slots.SetGlobalBuffer((__gm__ int32_t*)slotsAddr);
    result.SetGlobalBuffer((__gm__ int32_t*)resultAddr);
    const int32_t which = p.GetValue(0), late = p.GetValue(1), spinMs = p.GetValue(2);
    // Participant numbering: AIVs 0 .. 2N-1 by GetBlockIdx, then AICs 2N .. 3N-1.
    const int64_t nAiv = GetBlockNum() * 2;
    const int64_t me = g_coreType == AIV ? GetBlockIdx() : nAiv + GetBlockIdx();
    switch (which) {
        case 0: {  // mode 0 barrier across all AIVs (flag 3)
            if ASCEND_IS_AIC {
                return;
            }
            if (me == late) Spin(spinMs);
            WriteSlot(slots, me, (int32_t)me + 1);
            CrossCoreSetFlag<0, PIPE_MTE3>(3);
            CrossCoreWaitFlag(3);
            WriteSlot(result, me, CountSlots(slots, nAiv));
            break;
        }
        case 1: {  // mode 1 between the two AIVs of each AI core (flag 4)
            if ASCEND_IS_AIC {
                return;
            }
            if (me == late) Spin(spinMs);
            WriteSlot(slots, me, (int32_t)me + 1);
            CrossCoreSetFlag<1, PIPE_MTE3>(4);
            CrossCoreWaitFlag(4);
            GlobalTensor<int32_t> other = slots[(me ^ 1) * 16];
            WriteSlot(result, me, other.GetValue(0) == (int32_t)((me ^ 1) + 1) ? 1 : 0);
            break;
        }
        case 2: {  // 16 mode-2 sets of flag 5 from the AIC that nobody waits for (flag 10 in between: no set twice in a row)
            if ASCEND_IS_AIC {
                for (int i = 0; i < 16; ++i) {
                    CrossCoreSetFlag<2, PIPE_FIX>(5);
                    CrossCoreSetFlag<2, PIPE_FIX>(10);
                }
            }
            break;
        }
        case 3: {  // deadlock: the AIC waits for flag 6, every AIV for flag 7; nobody sets either
            if ASCEND_IS_AIC {
                CrossCoreWaitFlag(6);
            } else {
                CrossCoreWaitFlag(7);
            }
            break;
        }
        case 4: {  // SyncAll<false>: every AIC and AIV
            if (me == late) Spin(spinMs);
            WriteSlot(slots, me, (int32_t)me + 1);
            SyncAll<false>();
            WriteSlot(result, me, CountSlots(slots, nAiv + GetBlockNum()));
            break;
        }
        case 5: {  // SyncAll<true>: the AIVs only
            if ASCEND_IS_AIC {
                return;
            }
            if (me == late) Spin(spinMs);
            WriteSlot(slots, me, (int32_t)me + 1);
            SyncAll<true>();
            WriteSlot(result, me, CountSlots(slots, nAiv));
            break;
        }
        case 6: {  // cross-core flag in a launch type without the cross-core module
            CrossCoreSetFlag<0, PIPE_MTE3>(1);
            CrossCoreWaitFlag(1);
            break;
        }
        case 7: {  // mode-2 handshake AIC -> AIVs -> AIC, p[3] rounds, no data
            const int32_t rounds = p.GetValue(3);
            for (int32_t r = 0; r < rounds; ++r) {
                if ASCEND_IS_AIC {
                    CrossCoreSetFlag<2, PIPE_FIX>(8);
                    CrossCoreWaitFlag(9);
                } else {
                    CrossCoreWaitFlag(8);
                    CrossCoreSetFlag<2, PIPE_MTE3>(9);
                }
            }
            WriteSlot(result, me, rounds);
            break;
        }
        default:
            break;
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Atomics. Every AIV block adds its 64-float row x[block] into out[0:64] with SetAtomicAdd<float> + DataCopy.
extern "C" __global__ __aicore__ void atomic_ub(GM_ADDR x, GM_ADDR out) {
    constexpr uint32_t LEN = 64;
    GlobalTensor<float> xG, oG;
    xG.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * LEN, LEN);
    oG.SetGlobalBuffer((__gm__ float*)out, LEN);
    TPipe pipe;
    // GM -> UB -> GM with no vector step: a VECIN -> VECOUT queue, whose EnQue/DeQue order MTE2 before MTE3
    // (a TQue<VECIN> would order MTE2 before V only, leaving the MTE3 read unsynchronised).
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, LEN * sizeof(float));
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, xG, LEN);
    q.EnQue(t);
    t = q.DeQue<float>();
    SetAtomicAdd<float>();
    DataCopy(oG, t, LEN);
    SetAtomicNone();
    q.FreeTensor(t);
}

// Every AIC block computes A_blk (16 x 32) x B^T (B: 32 x 32) and adds it into out (16 x 32 fp32) through Fixpipe
// with SetAtomicAdd<float>.
extern "C" __global__ __aicore__ void atomic_fixpipe(GM_ADDR a, GM_ADDR b, GM_ADDR out) {
    constexpr uint32_t M = 16, N = 32, K = 32;
    GlobalTensor<half> aG, bG;
    aG.SetGlobalBuffer((__gm__ half*)a + GetBlockIdx() * M * K, M * K);
    bG.SetGlobalBuffer((__gm__ half*)b, N * K);
    GlobalTensor<float> oG;
    oG.SetGlobalBuffer((__gm__ float*)out, M * N);
    LocalTensor<half> a1(TPosition::A1, 0, M * K), b1(TPosition::B1, 4096, N * K);
    LocalTensor<half> a2(TPosition::A2, 0, M * K), b2(TPosition::B2, 0, N * K);
    LocalTensor<float> c(TPosition::CO1, 0, M * N);
    DataCopy(a1, aG, Nd2NzParams(1, M, K, 0, K, M, 1, 0));
    DataCopy(b1, bG, Nd2NzParams(1, N, K, 0, K, N, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    LoadData(a2, a1, LoadData2DParams(0, K / 16, 1, 0, 0, false, 0));
    LoadData(b2, b1, LoadData2DParams(0, (K / 16) * (N / 16), 1, 0, 0, false, 0));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    Mmad(c, a2, b2, MmadParams(M, N, K, 0, false, true));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    SetAtomicAdd<float>();
    Fixpipe(oG, c, FixpipeParamsV220(N, M, M, N, false));
    SetAtomicNone();
}
