// Softmax kernels of the naive (unfused) attention baseline (python/npu_flash_attn/tools/baseline.py), the way an eager
// framework runs them around materialised score matrices [rows, s2] (fp16 in GM, fp32 math in UB):
//   naive_softmax(p, s, P):            P = softmax(scale * S), three passes over each row (max; sum of exp; exp / sum);
//   naive_softmax_grad(p, P, dP, dS):  dS = scale * P * (dP - rowsum(P * dP)), two passes (the sum; dS).
// KERNEL_TYPE_AIV_ONLY; every vector core takes a contiguous range of rows; chunks of kChunk columns stream through
// double-buffered TQues. causal = 1: right-down causal, row i of a head (i = row % s1) sees the first
// min(s2, i + 1 + s2 - s1) columns; the passes read only those and the output is 0 past them.
// p (int32 GM): rows, s1, s2 (a multiple of 16: 32 B DataCopy rows), causal, then scale as a float at p[4].
#include "kernel_operator.h"

using namespace AscendC;

namespace {

constexpr uint32_t kChunk = 4096;

template <HardEvent E>
__aicore__ inline void Sync() {
    SetFlag<E>(EVENT_ID0);
    WaitFlag<E>(EVENT_ID0);
}

__aicore__ inline uint32_t Min(uint32_t a, uint32_t b) { return a < b ? a : b; }

struct RowParams {
    uint64_t rows;
    int64_t s1, s2;
    bool causal;
    float scale;
};

class RowKernel {
public:
    // x: the first input (S or P), y: the second (dP; may be null), out: P or dS.
    __aicore__ inline void Init(const RowParams& rp, GM_ADDR x, GM_ADDR y, GM_ADDR out) {
        s2_ = (uint32_t)rp.s2;
        scale_ = rp.scale;
        xG_.SetGlobalBuffer((__gm__ half*)x, rp.rows * s2_);
        yG_.SetGlobalBuffer((__gm__ half*)y, y == nullptr ? 0 : rp.rows * s2_);
        outG_.SetGlobalBuffer((__gm__ half*)out, rp.rows * s2_);
        pipe_.InitBuffer(inX_, 2, kChunk * sizeof(half));
        pipe_.InitBuffer(inY_, 2, kChunk * sizeof(half));
        pipe_.InitBuffer(out_, 2, kChunk * sizeof(half));
        pipe_.InitBuffer(xf_, kChunk * sizeof(float));
        pipe_.InitBuffer(yf_, kChunk * sizeof(float));
        pipe_.InitBuffer(acc_, kChunk * sizeof(float));
        pipe_.InitBuffer(tmp_, kChunk * sizeof(float));
        pipe_.InitBuffer(red_, 1024);  // ReduceSum keeps its per-level partial sums in dst
    }

    // Softmax of row `row` with its first `len` columns visible (0 < len <= s2).
    __aicore__ inline void Softmax(uint64_t row, uint32_t len) {
        LocalTensor<float> xf = xf_.Get<float>(), acc = acc_.Get<float>();
        // Pass 1: running element-wise max over the chunks, then one reduction.
        Duplicate(acc, -3.0e38f, kChunk);
        PipeBarrier<PIPE_V>();
        for (uint32_t c0 = 0; c0 < len; c0 += kChunk) {
            const uint32_t v = Min(kChunk, len - c0);
            LoadCast(inX_, xG_, row, c0, v, xf);
            Max(acc, acc, xf, v);
            PipeBarrier<PIPE_V>();
        }
        const float mx = Reduce(acc, Min(kChunk, len), true);
        // Pass 2: sum of exp(scale * (x - max)).
        Duplicate(acc, 0.0f, kChunk);
        PipeBarrier<PIPE_V>();
        for (uint32_t c0 = 0; c0 < len; c0 += kChunk) {
            const uint32_t v = Min(kChunk, len - c0);
            LoadCast(inX_, xG_, row, c0, v, xf);
            ScaledExp(xf, mx, v);
            Add(acc, acc, xf, v);
            PipeBarrier<PIPE_V>();
        }
        const float inv = 1.0f / Reduce(acc, Min(kChunk, len), false);
        // Pass 3: exp(scale * (x - max)) / sum.
        for (uint32_t c0 = 0; c0 < s2_; c0 += kChunk) {
            const uint32_t n = Min(kChunk, s2_ - c0), v = c0 < len ? Min(n, len - c0) : 0;
            if (v > 0) {
                ZeroTail(xf, v, n);
                LoadCast(inX_, xG_, row, c0, v, xf);
                ScaledExp(xf, mx, v);
                Muls(xf, xf, inv, v);
                PipeBarrier<PIPE_V>();
            }
            Store(row, c0, v, n, xf);
        }
    }

    // Softmax gradient of row `row` (first `len` columns visible): x = P, y = dP.
    __aicore__ inline void SoftmaxGrad(uint64_t row, uint32_t len) {
        LocalTensor<float> xf = xf_.Get<float>(), yf = yf_.Get<float>(), acc = acc_.Get<float>();
        Duplicate(acc, 0.0f, kChunk);
        PipeBarrier<PIPE_V>();
        for (uint32_t c0 = 0; c0 < len; c0 += kChunk) {
            const uint32_t v = Min(kChunk, len - c0);
            LoadCast(inX_, xG_, row, c0, v, xf);
            LoadCast(inY_, yG_, row, c0, v, yf);
            Mul(xf, xf, yf, v);
            PipeBarrier<PIPE_V>();
            Add(acc, acc, xf, v);
            PipeBarrier<PIPE_V>();
        }
        const float dot = Reduce(acc, Min(kChunk, len), false);
        for (uint32_t c0 = 0; c0 < s2_; c0 += kChunk) {
            const uint32_t n = Min(kChunk, s2_ - c0), v = c0 < len ? Min(n, len - c0) : 0;
            if (v > 0) {
                ZeroTail(xf, v, n);
                LoadCast(inX_, xG_, row, c0, v, xf);
                LoadCast(inY_, yG_, row, c0, v, yf);
                Adds(yf, yf, -dot, v);
                PipeBarrier<PIPE_V>();
                Mul(xf, xf, yf, v);
                PipeBarrier<PIPE_V>();
                Muls(xf, xf, scale_, v);
                PipeBarrier<PIPE_V>();
            }
            Store(row, c0, v, n, xf);
        }
    }

private:
    // xf[0, v) = g[row, c0 + v) as float (the DataCopy moves whole 32 B blocks of the row).
    __aicore__ inline void LoadCast(TQue<QuePosition::VECIN, 2>& q, const GlobalTensor<half>& g, uint64_t row,
                                    uint32_t c0, uint32_t v, const LocalTensor<float>& xf) {
        LocalTensor<half> x = q.AllocTensor<half>();
        DataCopy(x, g[row * s2_ + c0], (v + 15) / 16 * 16);
        q.EnQue(x);
        LocalTensor<half> xi = q.DeQue<half>();
        Cast(xf, xi, RoundMode::CAST_NONE, v);
        PipeBarrier<PIPE_V>();
        q.FreeTensor(xi);
    }

    // A chunk that ends inside the visible part: zero its hidden columns first (the ops below write [0, v) only).
    __aicore__ inline void ZeroTail(const LocalTensor<float>& xf, uint32_t v, uint32_t n) {
        if (v < n) {
            Duplicate(xf, 0.0f, n);
            PipeBarrier<PIPE_V>();
        }
    }

    // out[row, c0 + n) = xf[0, n) as fp16, or 0 when the chunk is hidden (v = 0).
    __aicore__ inline void Store(uint64_t row, uint32_t c0, uint32_t v, uint32_t n, const LocalTensor<float>& xf) {
        LocalTensor<half> y = out_.AllocTensor<half>();
        if (v > 0) {
            Cast(y, xf, RoundMode::CAST_RINT, n);
        } else {
            Duplicate(y, (half)0, n);
        }
        PipeBarrier<PIPE_V>();
        out_.EnQue(y);
        LocalTensor<half> yo = out_.DeQue<half>();
        DataCopy(outG_[row * s2_ + c0], yo, n);
        out_.FreeTensor(yo);
    }

    __aicore__ inline void ScaledExp(const LocalTensor<float>& xf, float mx, uint32_t v) {
        Muls(xf, xf, scale_, v);
        PipeBarrier<PIPE_V>();
        Adds(xf, xf, -scale_ * mx, v);
        PipeBarrier<PIPE_V>();
        Exp(xf, xf, v);
        PipeBarrier<PIPE_V>();
    }

    // max (or sum) of acc[0, n) read back to the scalar unit.
    __aicore__ inline float Reduce(const LocalTensor<float>& acc, uint32_t n, bool isMax) {
        LocalTensor<float> red = red_.Get<float>(), tmp = tmp_.Get<float>();
        if (isMax) {
            ReduceMax(red, acc, tmp, (int32_t)n, false);
        } else {
            ReduceSum(red, acc, tmp, (int32_t)n);
        }
        Sync<HardEvent::V_S>();
        const float r = red.GetValue(0);
        Sync<HardEvent::S_V>();
        return r;
    }

    uint32_t s2_ = 0;
    float scale_ = 1.0f;
    GlobalTensor<half> xG_, yG_, outG_;
    TPipe pipe_;
    TQue<QuePosition::VECIN, 2> inX_, inY_;
    TQue<QuePosition::VECOUT, 2> out_;
    TBuf<TPosition::VECCALC> xf_, yf_, acc_, tmp_, red_;
};

__aicore__ inline RowParams ReadParams(GM_ADDR prm) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 5);
    GlobalTensor<float> Pf;
    Pf.SetGlobalBuffer((__gm__ float*)prm, 5);
    RowParams rp;
    rp.rows = (uint32_t)P.GetValue(0), rp.s1 = P.GetValue(1), rp.s2 = P.GetValue(2);
    rp.causal = P.GetValue(3) != 0;
    rp.scale = Pf.GetValue(4);
    return rp;
}

// Softmax (or, grad, its gradient) of this core's rows: x, y the inputs, out the output (see RowKernel::Init).
__aicore__ inline void RunRows(GM_ADDR prm, GM_ADDR x, GM_ADDR y, GM_ADDR out, bool grad) {
    const RowParams rp = ReadParams(prm);
    RowKernel k;
    k.Init(rp, x, y, out);
    const uint64_t per = (rp.rows + GetBlockNum() - 1) / GetBlockNum();
    const uint64_t r0 = GetBlockIdx() * per < rp.rows ? GetBlockIdx() * per : rp.rows;
    const uint64_t r1 = r0 + per < rp.rows ? r0 + per : rp.rows;
    for (uint64_t r = r0; r < r1; ++r) {
        const int64_t vis = rp.causal ? (int64_t)(r % (uint64_t)rp.s1) + 1 + rp.s2 - rp.s1 : rp.s2;
        const uint32_t len = (uint32_t)(vis < rp.s2 ? vis : rp.s2);
        if (grad) {
            k.SoftmaxGrad(r, len);
        } else {
            k.Softmax(r, len);
        }
    }
}

}  // namespace

extern "C" __global__ __aicore__ void naive_softmax(GM_ADDR prm, GM_ADDR s, GM_ADDR p) {
    RunRows(prm, s, nullptr, p, false);
}

extern "C" __global__ __aicore__ void naive_softmax_grad(GM_ADDR prm, GM_ADDR p, GM_ADDR dp, GM_ADDR ds) {
    RunRows(prm, p, dp, ds, true);
}
