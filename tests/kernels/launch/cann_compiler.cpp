// What CANN's compiler gives a kernel besides the headers, as the twin models it (tests/test_twin_cann_compiler.py):
// a build per core type (__DAV_CUBE__ / __DAV_VEC__: g_coreType a constant), __forceinline__ and the raw
// pipe_barrier intrinsic.
#include <atomic>

#include "kernel_operator.h"
using namespace AscendC;

static_assert(g_coreType == AIC || g_coreType == AIV, "compile_kernel builds once per core type");

// Same mangled name, a different body per build: every core must run its own build's.
inline int32_t BuildMark() {
#if defined(__DAV_CUBE__)
    return 10;
#else
    return 20;
#endif
}

template <int32_t CORE_TYPE = g_coreType>
struct Role {
    static constexpr int32_t kId = 0;
};
template <>
struct Role<AIC> {
    static constexpr int32_t kId = 1;
};
template <>
struct Role<AIV> {
    static constexpr int32_t kId = 2;
};

__forceinline__ __aicore__ int32_t Twice(int32_t v) { return 2 * v; }

// Kernel globals are shared by both builds, as the twin's own state is.
inline std::atomic<int32_t> g_calls{0};

// One 8-int line per core (AICs first, then AIVs by GetBlockIdx):
// [g_coreType, Role<>::kId, BuildMark(), if-constexpr branches taken (1 AIC, 2 AIV), Twice(GetBlockIdx())].
extern "C" __global__ __aicore__ void core_builds(GM_ADDR out) {
    GlobalTensor<int32_t> o;
    o.SetGlobalBuffer((__gm__ int32_t*)out, 1024);
    int32_t branch = 0;
    if ASCEND_IS_AIC {
        branch += 1;
    }
    if ASCEND_IS_AIV {
        branch += 2;
    }
    const int64_t line = (g_coreType == AIC ? 0 : 32) + GetBlockIdx();
    o.SetValue(line * 8 + 0, g_coreType);
    o.SetValue(line * 8 + 1, Role<>::kId);
    o.SetValue(line * 8 + 2, BuildMark());
    o.SetValue(line * 8 + 3, branch);
    o.SetValue(line * 8 + 4, Twice((int32_t)GetBlockIdx()));
    g_calls.fetch_add(1);
}

extern "C" __global__ __aicore__ void calls_so_far(GM_ADDR out) {
    GlobalTensor<int32_t> o;
    o.SetGlobalBuffer((__gm__ int32_t*)out, 8);
    o.SetValue(0, g_calls.load());
}

// Two MTE2 copies into the same UB bytes (x[0:64], then x[64:128]) ordered by pipe_barrier(P[0]), then y = UB.
// The PipeBarrier page asks for a PIPE_MTE2 barrier between them; P[0] = -1: no barrier at all.
extern "C" __global__ __aicore__ void raw_barrier(GM_ADDR x, GM_ADDR y, GM_ADDR prm) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 8);
    const int32_t pipe = P.GetValue(0);
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, 128);
    gy.SetGlobalBuffer((__gm__ float*)y, 64);
    TPipe tp;
    TBuf<TPosition::VECCALC> ub;
    tp.InitBuffer(ub, 256);
    LocalTensor<float> t = ub.Get<float>();
    DataCopy(t, gx, 64);
    if (pipe >= 0) pipe_barrier((pipe_t)pipe);
    DataCopy(t, gx[64], 64);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(gy, t, 64);
}
