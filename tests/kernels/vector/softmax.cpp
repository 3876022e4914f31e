// Row softmax over a [rows, cols] matrix on several AIV cores (tests/test_twin_vector.py), in two styles:
// - softmax_rows_{f32,f16}: one row at a time with count-form APIs (half is computed in float via Cast);
// - softmax_tile_f32: a tile of rows at once with level-0 APIs, the way attention kernels do it: WholeReduceMax /
//   WholeReduceSum per 64-column chunk with a padded row pitch as repeat stride, Brcb to spread one value per row
//   over a 32 B block, and Sub / Mul with src1BlkStride 0 to broadcast it along the row.
// tiling (int64): rows, cols.
#include "kernel_operator.h"
using namespace AscendC;

template <HardEvent E>
__aicore__ inline void Sync() {
    SetFlag<E>(EVENT_ID0);
    WaitFlag<E>(EVENT_ID0);
}

__aicore__ inline void RowRange(int64_t rows, int64_t& start, int64_t& end) {
    const int64_t n = GetBlockNum(), i = GetBlockIdx();
    const int64_t per = (rows + n - 1) / n;
    start = i * per < rows ? i * per : rows;
    end = start + per < rows ? start + per : rows;
}

template <typename T>
__aicore__ inline void SoftmaxRows(GM_ADDR tiling, GM_ADDR x, GM_ADDR y) {
    GlobalTensor<int64_t> tg;
    tg.SetGlobalBuffer((__gm__ int64_t*)tiling, 2);
    const int64_t rows = tg.GetValue(0), cols = tg.GetValue(1);
    int64_t r0, r1;
    RowRange(rows, r0, r1);
    GlobalTensor<T> xg, yg;
    xg.SetGlobalBuffer((__gm__ T*)x, rows * cols);
    yg.SetGlobalBuffer((__gm__ T*)y, rows * cols);

    TPipe pipe;
    const uint32_t pitch = (uint32_t)((cols * sizeof(float) + 31) / 32 * 32);
    TBuf<TPosition::VECCALC> bx, bf, bt, bs;
    pipe.InitBuffer(bx, (uint32_t)((cols * sizeof(T) + 31) / 32 * 32));
    pipe.InitBuffer(bf, pitch);
    pipe.InitBuffer(bt, 1024);
    pipe.InitBuffer(bs, 1024);
    LocalTensor<T> xt = bx.Get<T>();
    LocalTensor<float> xf = bf.Get<float>();
    LocalTensor<float> tmp = bt.Get<float>();
    LocalTensor<float> red = bs.Get<float>();
    const int32_t n = (int32_t)cols;
    for (int64_t r = r0; r < r1; ++r) {
        DataCopyPad(xt, xg[r * cols], DataCopyExtParams(1, (uint32_t)(cols * sizeof(T)), 0, 0, 0),
                    DataCopyPadExtParams<T>(false, 0, 0, T(0)));
        Sync<HardEvent::MTE2_V>();
        if constexpr (std::is_same_v<T, float>) {
            DataCopy(xf, xt, (uint32_t)(pitch / sizeof(float)));
        } else {
            Cast(xf, xt, RoundMode::CAST_NONE, (uint32_t)n);
        }
        PipeBarrier<PIPE_V>();
        ReduceMax(red, xf, tmp, n, false);
        Sync<HardEvent::V_S>();
        const float mx = red.GetValue(0);
        Sync<HardEvent::S_V>();
        Adds(xf, xf, -mx, n);
        PipeBarrier<PIPE_V>();
        Exp(xf, xf, n);
        PipeBarrier<PIPE_V>();
        ReduceSum(red, xf, tmp, n);
        Sync<HardEvent::V_S>();
        const float sum = red.GetValue(0);
        Sync<HardEvent::S_V>();
        Muls(xf, xf, 1.0f / sum, n);
        PipeBarrier<PIPE_V>();
        if constexpr (std::is_same_v<T, float>) {
            DataCopy(xt, xf, (uint32_t)(pitch / sizeof(float)));
        } else {
            Cast(xt, xf, RoundMode::CAST_RINT, (uint32_t)n);
        }
        Sync<HardEvent::V_MTE3>();
        DataCopyPad(yg[r * cols], xt, DataCopyExtParams(1, (uint32_t)(cols * sizeof(T)), 0, 0, 0));
        Sync<HardEvent::MTE3_MTE2>();
    }
}

extern "C" __global__ __aicore__ void softmax_rows_f32(GM_ADDR t, GM_ADDR x, GM_ADDR y) { SoftmaxRows<float>(t, x, y); }
extern "C" __global__ __aicore__ void softmax_rows_f16(GM_ADDR t, GM_ADDR x, GM_ADDR y) { SoftmaxRows<half>(t, x, y); }

// Level-0 tile version (float). A tile holds up to kTile rows with a row pitch of `pb` 32 B blocks.
extern "C" __global__ __aicore__ void softmax_tile_f32(GM_ADDR tiling, GM_ADDR x, GM_ADDR y) {
    constexpr int32_t kTile = 24;
    GlobalTensor<int64_t> tg;
    tg.SetGlobalBuffer((__gm__ int64_t*)tiling, 2);
    const int64_t rows = tg.GetValue(0), cols = tg.GetValue(1);
    int64_t r0, r1;
    RowRange(rows, r0, r1);
    GlobalTensor<float> xg, yg;
    xg.SetGlobalBuffer((__gm__ float*)x, rows * cols);
    yg.SetGlobalBuffer((__gm__ float*)y, rows * cols);
    const uint32_t pb = (uint32_t)((cols * 4 + 31) / 32);  // row pitch in blocks
    const uint32_t pitch = pb * 8;                          // in floats
    const int32_t chunks = (int32_t)((cols + 63) / 64);

    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bm, bsum, bpart, bbc;
    pipe.InitBuffer(bx, kTile * pitch * 4);
    pipe.InitBuffer(bm, 256);
    pipe.InitBuffer(bsum, 256);
    pipe.InitBuffer(bpart, 256);
    pipe.InitBuffer(bbc, kTile * 32);
    LocalTensor<float> xt = bx.Get<float>();
    LocalTensor<float> mx = bm.Get<float>();
    LocalTensor<float> sum = bsum.Get<float>();
    LocalTensor<float> part = bpart.Get<float>();
    LocalTensor<float> bc = bbc.Get<float>();

    for (int64_t t0 = r0; t0 < r1; t0 += kTile) {
        const int32_t nr = (int32_t)((r1 - t0) < kTile ? (r1 - t0) : kTile);
        DataCopyPad(xt, xg[t0 * cols], DataCopyExtParams((uint16_t)nr, (uint32_t)(cols * 4), 0, 0, 0),
                    DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
        Sync<HardEvent::MTE2_V>();
        // row max: per chunk, then combine
        for (int32_t c = 0; c < chunks; ++c) {
            const int32_t w = (int32_t)((cols - c * 64) < 64 ? (cols - c * 64) : 64);
            WholeReduceMax(c == 0 ? mx : part, xt[c * 64], w, nr, 1, 1, (int32_t)pb, ReduceOrder::ORDER_ONLY_VALUE);
            PipeBarrier<PIPE_V>();
            if (c > 0) {
                Max(mx, mx, part, nr);
                PipeBarrier<PIPE_V>();
            }
        }
        Brcb(bc, mx, (uint8_t)((nr + 7) / 8), BrcbRepeatParams(1, 8));
        PipeBarrier<PIPE_V>();
        // x - max (src1 block stride 0: the row's block is reused across the repeat), then exp
        for (int32_t c = 0; c < chunks; ++c) {
            const uint64_t w = (uint64_t)((cols - c * 64) < 64 ? (cols - c * 64) : 64);
            Sub(xt[c * 64], xt[c * 64], bc, w, (uint8_t)nr, {1, 1, 0, (uint8_t)pb, (uint8_t)pb, 1});
            PipeBarrier<PIPE_V>();
            Exp(xt[c * 64], xt[c * 64], w, (uint8_t)nr, {1, 1, (uint8_t)pb, (uint8_t)pb});
            PipeBarrier<PIPE_V>();
        }
        // row sum
        for (int32_t c = 0; c < chunks; ++c) {
            const int32_t w = (int32_t)((cols - c * 64) < 64 ? (cols - c * 64) : 64);
            WholeReduceSum(c == 0 ? sum : part, xt[c * 64], w, nr, 1, 1, (int32_t)pb);
            PipeBarrier<PIPE_V>();
            if (c > 0) {
                Add(sum, sum, part, nr);
                PipeBarrier<PIPE_V>();
            }
        }
        Reciprocal(sum, sum, nr);
        PipeBarrier<PIPE_V>();
        Brcb(bc, sum, (uint8_t)((nr + 7) / 8), BrcbRepeatParams(1, 8));
        PipeBarrier<PIPE_V>();
        for (int32_t c = 0; c < chunks; ++c) {
            const uint64_t w = (uint64_t)((cols - c * 64) < 64 ? (cols - c * 64) : 64);
            Mul(xt[c * 64], xt[c * 64], bc, w, (uint8_t)nr, {1, 1, 0, (uint8_t)pb, (uint8_t)pb, 1});
            PipeBarrier<PIPE_V>();
        }
        Sync<HardEvent::V_MTE3>();
        DataCopyPad(yg[t0 * cols], xt, DataCopyExtParams((uint16_t)nr, (uint32_t)(cols * 4), 0, 0, 0));
        Sync<HardEvent::MTE3_MTE2>();
    }
}
