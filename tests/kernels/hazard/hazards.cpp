// Pipe-ordering cases for the twin's hazard detector: params[0] picks the case. Synced variants must run; the
// others leave out exactly one ordering and must be reported.
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t N = 256;

enum Case : int32_t {
    kVecSynced = 0,       // MTE2 -> V -> MTE3 with flags
    kVecNoMte2V = 1,      // V reads what MTE2 wrote, no flag
    kVecNoVMte3 = 2,      // MTE3 reads what V wrote, no flag
    kVecNoWar = 3,        // MTE2 overwrites a buffer MTE3 may still read (write-after-read)
    kVecBarrier = 4,      // PipeBarrier<PIPE_ALL> instead of flags
    kVecQueues = 5,       // TQue EnQue/DeQue do the syncs
    kCubeSynced = 10,     // GM -> L1 -> L0A/L0B -> Mmad -> Fixpipe with flags
    kCubeNoMte2Mte1 = 11, // LoadData reads L1 before the Nd2Nz copy is ordered
    kCubeNoMte1M = 12,    // Mmad reads L0A/L0B before the loads are ordered
    kCubeNoMFix = 13,     // Fixpipe reads L0C before Mmad is ordered
    kGmFlagOnMte3 = 20,   // AIV 0 writes GM, sets a mode-1 flag on MTE3; AIV 1 waits and reads it back
    kGmFlagOnV = 21,      // the same, but the flag is issued on PIPE_V: it does not cover the MTE3 write
    // Write-after-read across cores (the forward kernel's zero-row ProbsReady): both AIVs read `out` on MTE2 and
    // signal the AIC (mode 2), which then overwrites `out` with a Fixpipe.
    kReadThenSetOnMte3 = 22,   // the set is issued on MTE3: it does not cover the MTE2 read
    kReadThenSetOnMte2 = 23,   // the set is issued on the reading pipe
    kReadFlagThenMte3 = 24,    // MTE2 -> MTE3 flag first, then the MTE3 set
    kReadBarrierThenMte3 = 25, // PipeBarrier<PIPE_ALL> first, then the MTE3 set
};

__aicore__ inline void ReadThenSignal(int32_t c, GM_ADDR out) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * sizeof(float));
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float*)out, N);
    DataCopy(buf.Get<float>(), g, N);
    if (c == kReadFlagThenMte3) {
        SetFlag<HardEvent::MTE2_MTE3>(0);
        WaitFlag<HardEvent::MTE2_MTE3>(0);
    }
    if (c == kReadBarrierThenMte3) PipeBarrier<PIPE_ALL>();
    if (c == kReadThenSetOnMte2) {
        CrossCoreSetFlag<2, PIPE_MTE2>(6);
    } else {
        CrossCoreSetFlag<2, PIPE_MTE3>(6);
    }
}

// Cross-core GM hand-over between the two AIVs of an AI core: x -> (AIV 0) -> z -> (AIV 1) -> out.
__aicore__ inline void GmHandOver(int32_t c, GlobalTensor<half>& x, GlobalTensor<half>& z, GlobalTensor<half>& back) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * sizeof(half));
    LocalTensor<half> t = buf.Get<half>();
    if (GetSubBlockIdx() == 0) {
        DataCopy(t, x, N);
        SetFlag<HardEvent::MTE2_MTE3>(0);
        WaitFlag<HardEvent::MTE2_MTE3>(0);
        DataCopy(z, t, N);
        if (c == kGmFlagOnMte3) {
            CrossCoreSetFlag<1, PIPE_MTE3>(5);
        } else {
            CrossCoreSetFlag<1, PIPE_V>(5);
        }
        CrossCoreWaitFlag(5);
    } else {
        if (c == kGmFlagOnMte3) {
            CrossCoreSetFlag<1, PIPE_MTE3>(5);
        } else {
            CrossCoreSetFlag<1, PIPE_V>(5);
        }
        CrossCoreWaitFlag(5);
        DataCopy(t, z, N);
        SetFlag<HardEvent::MTE2_MTE3>(0);
        WaitFlag<HardEvent::MTE2_MTE3>(0);
        DataCopy(back, t, N);
    }
}

__aicore__ inline void VectorCase(int32_t c, GlobalTensor<half>& x, GlobalTensor<half>& z) {
    TPipe pipe;
    if (c == kVecQueues) {
        TQue<TPosition::VECIN, 1> qin;
        TQue<TPosition::VECOUT, 1> qout;
        pipe.InitBuffer(qin, 1, N * sizeof(half));
        pipe.InitBuffer(qout, 1, N * sizeof(half));
        LocalTensor<half> a = qin.AllocTensor<half>();
        DataCopy(a, x, N);
        qin.EnQue(a);
        a = qin.DeQue<half>();
        LocalTensor<half> b = qout.AllocTensor<half>();
        Muls(b, a, (half)2.0f, N);
        qout.EnQue(b);
        qin.FreeTensor(a);
        b = qout.DeQue<half>();
        DataCopy(z, b, N);
        qout.FreeTensor(b);
        return;
    }
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * sizeof(half));
    LocalTensor<half> t = buf.Get<half>();
    DataCopy(t, x, N);
    if (c == kVecBarrier) {
        PipeBarrier<PIPE_ALL>();
    } else if (c != kVecNoMte2V) {
        SetFlag<HardEvent::MTE2_V>(0);
        WaitFlag<HardEvent::MTE2_V>(0);
    }
    Muls(t, t, (half)2.0f, N);
    if (c == kVecBarrier) {
        PipeBarrier<PIPE_ALL>();
    } else if (c != kVecNoVMte3) {
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
    }
    DataCopy(z, t, N);
    if (c == kVecNoWar) {
        SetFlag<HardEvent::V_MTE2>(0);  // ordered after the vector write, but not after MTE3's read
        WaitFlag<HardEvent::V_MTE2>(0);
        DataCopy(t, x, N);  // reload into the buffer MTE3 is draining
        SetFlag<HardEvent::MTE2_V>(0);
        WaitFlag<HardEvent::MTE2_V>(0);
    }
}

__aicore__ inline void CubeCase(int32_t c, GM_ADDR a, GM_ADDR out) {
    TPipe pipe;
    TBuf<TPosition::A1> l1;
    TBuf<TPosition::A2> l0a;
    TBuf<TPosition::B2> l0b;
    TBuf<TPosition::CO1> l0c;
    pipe.InitBuffer(l1, 16 * 16 * sizeof(half));
    pipe.InitBuffer(l0a, 512);
    pipe.InitBuffer(l0b, 512);
    pipe.InitBuffer(l0c, 1024);
    GlobalTensor<half> ga;
    ga.SetGlobalBuffer((__gm__ half*)a, N);
    GlobalTensor<float> gc;
    gc.SetGlobalBuffer((__gm__ float*)out, N);
    LocalTensor<half> t1 = l1.Get<half>();
    DataCopy(t1, ga, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));
    if (c != kCubeNoMte2Mte1) {
        SetFlag<HardEvent::MTE2_MTE1>(0);
        WaitFlag<HardEvent::MTE2_MTE1>(0);
    }
    LoadData(l0a.Get<half>(), t1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
    LoadData(l0b.Get<half>(), t1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
    if (c != kCubeNoMte1M) {
        SetFlag<HardEvent::MTE1_M>(0);
        WaitFlag<HardEvent::MTE1_M>(0);
    }
    Mmad(l0c.Get<float>(), l0a.Get<half>(), l0b.Get<half>(), MmadParams(16, 16, 16, 0, false, true));
    if (c != kCubeNoMFix) {
        SetFlag<HardEvent::M_FIX>(0);
        WaitFlag<HardEvent::M_FIX>(0);
    }
    FixpipeParamsV220 fp(16, 16, 16, 16, false);
    Fixpipe<float, float, CFG_ROW_MAJOR>(gc, l0c.Get<float>(), fp);
}

extern "C" __global__ __aicore__ void hazard_case(GM_ADDR x, GM_ADDR z, GM_ADDR out, GM_ADDR params) {
    GlobalTensor<int32_t> p;
    p.SetGlobalBuffer((__gm__ int32_t*)params, 8);
    const int32_t c = p.GetValue(0);
    if ASCEND_IS_AIV {
        if ((c == kGmFlagOnMte3 || c == kGmFlagOnV) && GetBlockIdx() < 2) {
            GlobalTensor<half> gx, gz, gb;
            gx.SetGlobalBuffer((__gm__ half*)x, N);
            gz.SetGlobalBuffer((__gm__ half*)z, N);
            gb.SetGlobalBuffer((__gm__ half*)out, N);
            GmHandOver(c, gx, gz, gb);
        }
        if (c >= kReadThenSetOnMte3 && GetBlockIdx() < 2) ReadThenSignal(c, out);
        if (c < 10 && GetBlockIdx() == 0) {  // one AIV: two writing z would race
            GlobalTensor<half> gx, gz;
            gx.SetGlobalBuffer((__gm__ half*)x, N);
            gz.SetGlobalBuffer((__gm__ half*)z, N);
            VectorCase(c, gx, gz);
        }
    }
    if ASCEND_IS_AIC {
        if (c >= 10 && c < 20) CubeCase(c, x, out);
        if (c >= kReadThenSetOnMte3) {
            CrossCoreWaitFlag(6);
            CubeCase(c, x, out);
        }
    }
}

// Hand-written sync on an M_MTE1 ID that TPipe keeps for itself on the cube core.
extern "C" __global__ __aicore__ void reserved_event_id(GM_ADDR unused) {
    TPipe pipe;
    if ASCEND_IS_AIC {
        SetFlag<HardEvent::M_MTE1>(1);
        WaitFlag<HardEvent::M_MTE1>(1);
    }
}
