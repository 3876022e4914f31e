// A user-defined TBufPool (EXTERN_IMPL_BUFPOOL) as the tbufpool_management sample declares one: its InitBuffer
// overloads place TQue / TBuf buffers with InitStartBufHandle / InitBufHandle and keep the allocation mark with
// Get/SetCurAddr and Get/SetCurBufSize. p[0] picks the case, p[1..] its numbers; z = x + y in the normal case.
#include "kernel_operator.h"

using namespace AscendC;

class MyBufPool {
public:
    __aicore__ inline MyBufPool() { Init(); }
    // Buffers go `gap_` bytes apart, so the pool's blocks need not be contiguous.
    template <class T>
    __aicore__ inline bool InitBuffer(T& que, uint8_t num, uint32_t len) {
        len = (len + 31) / 32 * 32;
        auto ptr = this->GetBufHandle(this->GetCurBufSize());
        auto addr = this->GetCurAddr();
        que.InitStartBufHandle(ptr, num, len);
        for (uint32_t i = 0; i < num; i++) que.InitBufHandle(this, i, ptr, addr + i * (len + gap_), len);
        this->SetCurAddr(addr + num * (len + gap_));
        this->SetCurBufSize(this->GetCurBufSize() + num);
        return true;
    }
    template <TPosition bufPos>
    __aicore__ inline bool InitBuffer(TBuf<bufPos>& buf, uint32_t len) {
        len = (len + 31) / 32 * 32;
        auto ptr = this->GetBufHandle(this->GetCurBufSize());
        auto addr = this->GetCurAddr();
        buf.InitStartBufHandle(ptr, 1, len);
        buf.InitBufHandle(this, 0, ptr, addr, len);
        this->SetCurAddr(addr + len + gap_);
        this->SetCurBufSize(this->GetCurBufSize() + 1);
        return true;
    }
    uint32_t gap_ = 0;
    EXTERN_IMPL_BUFPOOL(MyBufPool, TPosition::VECCALC, 4);
};

extern "C" __global__ __aicore__ void custom_pool(GM_ADDR params, GM_ADDR x, GM_ADDR y, GM_ADDR z) {
    GlobalTensor<int64_t> pg;
    pg.SetGlobalBuffer((__gm__ int64_t*)params, 8);
    const int64_t which = pg.GetValue(0), n = pg.GetValue(1), gap = pg.GetValue(2), poolLen = pg.GetValue(3);
    GlobalTensor<float> xg, yg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * n, n);
    yg.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * n, n);
    zg.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * n, n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> before;  // the pool does not start at UB address 0
    pipe.InitBuffer(before, 96);
    MyBufPool pool;
    pool.gap_ = (uint32_t)gap;
    pipe.InitBufPool(pool, (uint32_t)poolLen);
    TQue<TPosition::VECIN, 1> inX;
    TBuf<TPosition::VECCALC> inY;
    TQue<TPosition::VECOUT, 1> outZ;
    GlobalTensor<uint32_t> og;
    og.SetGlobalBuffer((__gm__ uint32_t*)z + 4096, 8);
    const uint32_t start = pool.GetCurAddr();
    pool.InitBuffer(inX, 1, n * sizeof(float));
    pool.InitBuffer(inY, n * sizeof(float));
    pool.InitBuffer(outZ, 1, n * sizeof(float));
    if (GetBlockIdx() == 0) {
        og.SetValue(0, start);
        og.SetValue(1, pool.GetCurAddr());
        og.SetValue(2, pool.GetCurBufSize());
    }
    if (which == 1) {  // a fifth buffer: beyond BUFID_SIZE 4
        TBuf<TPosition::VECCALC> b4, b5;
        pool.InitBuffer(b4, 32);
        pool.InitBuffer(b5, 32);
    }
    LocalTensor<float> xl = inX.AllocTensor<float>();
    LocalTensor<float> yl = inY.Get<float>();
    DataCopy(xl, xg, (uint32_t)n);
    DataCopy(yl, yg, (uint32_t)n);
    inX.EnQue(xl);
    xl = inX.DeQue<float>();
    PipeBarrier<PIPE_ALL>();
    LocalTensor<float> zl = outZ.AllocTensor<float>();
    Add(zl, xl, yl, (uint32_t)n);
    outZ.EnQue(zl);
    inX.FreeTensor(xl);
    zl = outZ.DeQue<float>();
    DataCopy(zg, zl, (uint32_t)n);
    if (which == 2) pool.Reset();  // zl is still allocated
    outZ.FreeTensor(zl);
    pool.Reset();
}
