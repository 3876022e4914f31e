// A mix kernel written the way catlass writes its kernels (our own code; tests/test_twin_catlass_style.py builds it
// with g++ and clang++): parameters in one struct, the on-core buffers of each core type in a Resource struct, the
// kernel's operator() a member template with `int32_t CORE_TYPE = g_coreType` and one explicit specialisation per core
// type, if-constexpr on ASCEND_IS_AIC, cross-core flags between a cube producer and a vector epilogue.
//
// D = relu(alpha * A x B + X): A [blocks * 32, 32] and B [32, 32] half, X and D float. Block b's AIC multiplies its 32
// rows of A by B into a float workspace and raises a flag; each of its two AIVs waits for it, applies the epilogue to
// its 16 rows and writes D.
#include "kernel_operator.h"

namespace mini {

using namespace AscendC;

constexpr uint32_t kM = 32, kN = 32, kK = 32;  // per block; multiples of the 16 x 16 fractal
constexpr uint32_t kFrac = 256;                // half elements per 512-byte fractal
constexpr uint16_t kCReady = 4;                // cross-core flag: the block's C tile is in the workspace

struct Params {  // one member per line: GM_ADDR is a macro, `GM_ADDR a, b` would make b a plain byte
    GM_ADDR a;
    GM_ADDR b;
    GM_ADDR x;
    GM_ADDR ws;
    GM_ADDR d;
    GM_ADDR prm;
};

template <int32_t CORE_TYPE = g_coreType>
struct Resource;

template <>
struct Resource<AIC> {
    TPipe pipe;
    TBuf<TPosition::A1> l1A;
    TBuf<TPosition::B1> l1B;
    TBuf<TPosition::A2> l0A;
    TBuf<TPosition::B2> l0B;
    TBuf<TPosition::CO1> l0C;
    __aicore__ inline Resource() {
        pipe.InitBuffer(l1A, kM * kK * sizeof(half));
        pipe.InitBuffer(l1B, kK * kN * sizeof(half));
        pipe.InitBuffer(l0A, kM * kK * sizeof(half));
        pipe.InitBuffer(l0B, kK * kN * sizeof(half));
        pipe.InitBuffer(l0C, kM * kN * sizeof(float));
    }
};

template <>
struct Resource<AIV> {
    TPipe pipe;
    TBuf<TPosition::VECCALC> c, x;
    __aicore__ inline Resource() {
        pipe.InitBuffer(c, kM / 2 * kN * sizeof(float));
        pipe.InitBuffer(x, kM / 2 * kN * sizeof(float));
    }
};

// Rows of the block a core works on: all 32 on the cube, 16 per vector core.
template <int32_t CORE_TYPE>
__aicore__ inline uint32_t FirstRow() {
    if constexpr (CORE_TYPE == AIC) {
        return GetBlockIdx() * kM;
    } else {
        return GetBlockIdx() * (kM / 2);  // AIV i is sub-block i % 2 of block i / 2
    }
}

class GemmRelu {
public:
    template <int32_t CORE_TYPE = g_coreType>
    __aicore__ inline void operator()(const Params& p);
};

template <>
__aicore__ inline void GemmRelu::operator()<AIC>(const Params& p) {
    Resource<AIC> res;
    const uint32_t row0 = FirstRow<AIC>();
    GlobalTensor<half> aG, bG;
    aG.SetGlobalBuffer((__gm__ half*)p.a + row0 * kK, kM * kK);
    bG.SetGlobalBuffer((__gm__ half*)p.b, kK * kN);
    LocalTensor<half> a1 = res.l1A.Get<half>(), b1 = res.l1B.Get<half>();
    LocalTensor<half> a2 = res.l0A.Get<half>(), b2 = res.l0B.Get<half>();
    LocalTensor<float> c1 = res.l0C.Get<float>();

    DataCopy(a1, aG, Nd2NzParams(1, kM, kK, 0, kK, kM, 1, 0));
    DataCopy(b1, bG, Nd2NzParams(1, kK, kN, 0, kN, kK, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    for (uint32_t m1 = 0; m1 < kM / 16; ++m1) {  // Nz -> Zz, one row of fractals at a time
        LoadData(a2[m1 * (kK / 16) * kFrac], a1[m1 * kFrac], LoadData2DParams(0, kK / 16, kM / 16, 0, 0, false, 0));
    }
    for (uint32_t k1 = 0; k1 < kK / 16; ++k1) {  // Nz of B [K, N] -> Zn: each fractal transposed
        LoadData(b2[k1 * (kN / 16) * kFrac], b1[k1 * kFrac], LoadData2DParams(0, kN / 16, kK / 16, 0, 0, true, 0));
    }
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    Mmad(c1, a2, b2, MmadParams(kM, kN, kK, 0, false, true));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    GlobalTensor<float> wsG;
    wsG.SetGlobalBuffer((__gm__ float*)p.ws + row0 * kN, kM * kN);
    Fixpipe(wsG, c1, FixpipeParamsV220(kN, kM, kM, kN, false));
    CrossCoreSetFlag<2, PIPE_FIX>(kCReady);  // to both AIVs of the block, once the Fixpipe has written
}

template <>
__aicore__ inline void GemmRelu::operator()<AIV>(const Params& p) {
    Resource<AIV> res;
    const uint32_t row0 = FirstRow<AIV>(), n = kM / 2 * kN;
    GlobalTensor<float> wsG, xG, dG;
    GlobalTensor<float> alphaG;
    wsG.SetGlobalBuffer((__gm__ float*)p.ws + row0 * kN, n);
    xG.SetGlobalBuffer((__gm__ float*)p.x + row0 * kN, n);
    dG.SetGlobalBuffer((__gm__ float*)p.d + row0 * kN, n);
    alphaG.SetGlobalBuffer((__gm__ float*)p.prm, 1);
    const float alpha = alphaG.GetValue(0);
    LocalTensor<float> c = res.c.Get<float>(), x = res.x.Get<float>();

    DataCopy(x, xG, n);  // the epilogue's own input first, while the cube works
    CrossCoreWaitFlag(kCReady);
    DataCopy(c, wsG, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Muls(c, c, alpha, n);
    PipeBarrier<PIPE_V>();
    Add(c, c, x, n);
    PipeBarrier<PIPE_V>();
    Relu(c, c, n);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(dG, c, n);
}

}  // namespace mini

extern "C" __global__ __aicore__ void gemm_relu(GM_ADDR a, GM_ADDR b, GM_ADDR x, GM_ADDR ws, GM_ADDR d, GM_ADDR prm) {
    mini::GemmRelu kernel;
    const mini::Params p{a, b, x, ws, d, prm};
    if ASCEND_IS_AIC {
        AscendC::SetAtomicNone();  // the workspace is overwritten, never accumulated into
    }
    kernel(p);  // CORE_TYPE = g_coreType: the specialisation of this build's core type
}
