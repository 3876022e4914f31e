"""Forms Ascend C kernels are written in, as the official dav-2201 examples and API pages use them, on the twin:
TBufPool (pipe-level and nested pools, shared ranges, Reset between stages), static tensor programming
(InitSocState, LocalMemAllocator<Hardware::UB>, LocalTensor at explicit addresses, raw block_idx), the tiling macros
(REGISTER_TILING_DEFAULT, GET_TILING_DATA*, TILING_KEY_IS / TILING_KEY_LIST with the launch's tiling key), and the
errors the twin raises when these are misused.
"""
import re

import numpy as np
import pytest

from npu_flash_attn import twin

SRC = r'''
#include "kernel_operator.h"

using namespace AscendC;

// ---------- TBufPool: the two stage-reuse layouts of the TBufPool API pages ----------
template <uint32_t N>
class PoolKernel {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR z, TPipe* pipeIn) {
        pipe = pipeIn;
        xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * N, N);
        zg.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * 4 * N, 4 * N);
    }
    // Two pools sharing one range; stage 2 reuses stage 1's memory after Reset.
    __aicore__ inline void ProcessReuse() {
        pipe->InitBufPool(pool1, N * sizeof(float) * 3);
        pipe->InitBufPool(pool2, N * sizeof(float) * 3, pool1);
        pool1.InitBuffer(srcQue0, 1, N * sizeof(float));
        pool1.InitBuffer(dstQue0, 1, N * sizeof(float));
        Stage(srcQue0, dstQue0, 0);
        pool1.Reset();
        pool2.InitBuffer(srcQue1, 1, N * sizeof(float));
        pool2.InitBuffer(dstQue1, 1, N * sizeof(float));
        // The first buffer of pool2 is the first buffer of pool1: it still holds stage 1's input.
        LocalTensor<float> stale = srcQue1.AllocTensor<float>();
        srcQue1.EnQue(stale);
        stale = srcQue1.DeQue<float>();
        DataCopy(zg[N], stale, N);
        // MTE3 read a VECIN buffer, whose FreeTensor only orders V before the next MTE2 fill: order MTE3 by hand.
        SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        srcQue1.FreeTensor(stale);
        Stage(srcQue1, dstQue1, 2 * N);
        pool2.Reset();
    }
    // A pool carved into a queue and a sub-pool; a second sub-pool shares the first.
    __aicore__ inline void ProcessSubdivide() {
        pipe->InitBufPool(pool0, N * sizeof(float) * 4);
        pool0.InitBufPool(pool1, N * sizeof(float) * 2);
        pool0.InitBuffer(srcQue0, 1, N * sizeof(float) * 2);
        pool0.InitBufPool(pool2, N * sizeof(float) * 2, pool1);
        pool1.InitBuffer(dstQue0, 1, N * sizeof(float));
        Stage(srcQue0, dstQue0, 0);
        pool1.Reset();
        pool2.InitBuffer(dstQue1, 1, N * sizeof(float));
        Stage(srcQue0, dstQue1, N);
        pool2.Reset();
        pool0.Reset();
        pipe->Reset();
    }

private:
    template <class QI, class QO>
    __aicore__ inline void Stage(QI& qi, QO& qo, uint32_t outOff) {
        LocalTensor<float> src = qi.template AllocTensor<float>();
        DataCopy(src, xg, N);
        qi.EnQue(src);
        src = qi.template DeQue<float>();
        LocalTensor<float> dst = qo.template AllocTensor<float>();
        DataCopy(dst, src[N / 2], N / 2);  // UB -> UB on PIPE_V, halves swapped
        DataCopy(dst[N / 2], src, N / 2);
        qo.EnQue(dst);
        qi.FreeTensor(src);
        dst = qo.template DeQue<float>();
        DataCopy(zg[outOff], dst, N);
        qo.FreeTensor(dst);
    }
    TPipe* pipe;
    TBufPool<TPosition::VECCALC> pool0, pool1, pool2;
    TQue<TPosition::VECIN, 1> srcQue0, srcQue1;
    TQue<TPosition::VECOUT, 1> dstQue0, dstQue1;
    GlobalTensor<float> xg, zg;
};

extern "C" __global__ __aicore__ void pool_reuse(GM_ADDR x, GM_ADDR z) {
    TPipe pipe;
    PoolKernel<128> op;
    op.Init(x, z, &pipe);
    op.ProcessReuse();
}

extern "C" __global__ __aicore__ void pool_subdivide(GM_ADDR x, GM_ADDR z) {
    TPipe pipe;
    PoolKernel<128> op;
    op.Init(x, z, &pipe);
    op.ProcessSubdivide();
}

// ---------- static tensor programming, as in the add / tensor_allocation samples ----------
template <uint32_t blockLength>
__vector__ __global__ void copy_custom(__gm__ float* x, __gm__ float* z, __gm__ uint32_t* addrs) {
    AscendC::InitSocState();
    AscendC::GlobalTensor<float> xGm, zGm;
    xGm.SetGlobalBuffer(x + block_idx * blockLength, blockLength);
    zGm.SetGlobalBuffer(z + block_idx * 2 * blockLength, 2 * blockLength);
    AscendC::LocalMemAllocator<AscendC::Hardware::UB> ubAllocator;
    AscendC::LocalTensor<float> xLocal = ubAllocator.Alloc<float, blockLength>();
    AscendC::LocalTensor<float> yLocal = ubAllocator.Alloc<float>(blockLength);
    AscendC::LocalTensor<float> wLocal = ubAllocator.Alloc<AscendC::TPosition::VECOUT, float>(blockLength);
    addrs[block_idx * 2] = ubAllocator.GetCurAddr();
    addrs[block_idx * 2 + 1] = (uint32_t)(yLocal.GetPhyAddr() - xLocal.GetPhyAddr());
    AscendC::DataCopy(xLocal, xGm, blockLength);
    AscendC::PipeBarrier<PIPE_ALL>();
    AscendC::DataCopy(yLocal, xLocal, blockLength);
    AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
    AscendC::DataCopy(zGm, yLocal, blockLength);
    // A tensor at an explicit address aliases the allocator's first tensor.
    AscendC::LocalTensor<float> alias(AscendC::TPosition::VECIN, 0, blockLength);
    AscendC::DataCopy(zGm[blockLength], alias, blockLength);
    (void)wLocal;
    AscendC::PipeBarrier<PIPE_ALL>();
}

extern "C" __global__ __aicore__ void static_copy(GM_ADDR x, GM_ADDR z, GM_ADDR addrs) {
    copy_custom<256>((__gm__ float*)x, (__gm__ float*)z, (__gm__ uint32_t*)addrs);
}

// ---------- vector kernels in the forms of the introductory samples ----------
// Static tensors: InitSocState, raw block_idx, LocalMemAllocator, PipeBarrier<PIPE_ALL> between stages.
template <uint32_t tileLen>
__vector__ __global__ void vadd_static(__gm__ float* x, __gm__ float* y, __gm__ float* z) {
    AscendC::InitSocState();
    AscendC::GlobalTensor<float> xg, yg, zg;
    xg.SetGlobalBuffer(x + block_idx * tileLen, tileLen);
    yg.SetGlobalBuffer(y + block_idx * tileLen, tileLen);
    zg.SetGlobalBuffer(z + block_idx * tileLen, tileLen);
    AscendC::LocalMemAllocator<AscendC::Hardware::UB> ub;
    AscendC::LocalTensor<float> xl = ub.Alloc<float, tileLen>();
    AscendC::LocalTensor<float> yl = ub.Alloc<float, tileLen>();
    AscendC::LocalTensor<float> zl = ub.Alloc<float, tileLen>();
    AscendC::DataCopy(xl, xg, tileLen);
    AscendC::DataCopy(yl, yg, tileLen);
    AscendC::PipeBarrier<PIPE_ALL>();
    AscendC::Add(zl, xl, yl, tileLen);
    AscendC::PipeBarrier<PIPE_ALL>();
    AscendC::DataCopy(zg, zl, tileLen);
    AscendC::PipeBarrier<PIPE_ALL>();
}

extern "C" __global__ __aicore__ void vadd_static_entry(GM_ADDR x, GM_ADDR y, GM_ADDR z) {
    vadd_static<512>((__gm__ float*)x, (__gm__ float*)y, (__gm__ float*)z);
}

// TPipe/TQue with a length argument that is not a GM address (the twin launcher passes GM buffers only).
__global__ __vector__ void vadd_queues(__gm__ uint8_t* x, __gm__ uint8_t* y, __gm__ uint8_t* z, uint32_t total) {
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> qx, qy;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> qz;
    AscendC::GlobalTensor<half> xg, yg, zg;
    uint32_t len = total / AscendC::GetBlockNum();
    xg.SetGlobalBuffer((__gm__ half*)x + len * AscendC::GetBlockIdx(), len);
    yg.SetGlobalBuffer((__gm__ half*)y + len * AscendC::GetBlockIdx(), len);
    zg.SetGlobalBuffer((__gm__ half*)z + len * AscendC::GetBlockIdx(), len);
    pipe.InitBuffer(qx, 1, len * sizeof(half));
    pipe.InitBuffer(qy, 1, len * sizeof(half));
    pipe.InitBuffer(qz, 1, len * sizeof(half));
    AscendC::LocalTensor<half> xl = qx.AllocTensor<half>();
    AscendC::LocalTensor<half> yl = qy.AllocTensor<half>();
    AscendC::DataCopy(xl, xg, len);
    AscendC::DataCopy(yl, yg, len);
    qx.EnQue(xl);
    qy.EnQue(yl);
    xl = qx.DeQue<half>();
    yl = qy.DeQue<half>();
    AscendC::LocalTensor<half> zl = qz.AllocTensor<half>();
    AscendC::Add(zl, xl, yl, len);
    qz.EnQue<half>(zl);
    qx.FreeTensor(xl);
    qy.FreeTensor(yl);
    zl = qz.DeQue<half>();
    AscendC::DataCopy(zg, zl, len);
    qz.FreeTensor(zl);
}

extern "C" __global__ __aicore__ void vadd_queues_entry(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR total) {
    vadd_queues(x, y, z, *(__gm__ uint32_t*)total);
}

// Tensors at explicit UB addresses with hand-written flags.
extern "C" __global__ __aicore__ void vadd_explicit(GM_ADDR x, GM_ADDR y, GM_ADDR z) {
    constexpr uint32_t n = 256;
    AscendC::GlobalTensor<float> xg, yg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x + AscendC::GetBlockIdx() * n, n);
    yg.SetGlobalBuffer((__gm__ float*)y + AscendC::GetBlockIdx() * n, n);
    zg.SetGlobalBuffer((__gm__ float*)z + AscendC::GetBlockIdx() * n, n);
    AscendC::LocalTensor<float> xl(AscendC::TPosition::VECIN, 0, n);
    AscendC::LocalTensor<float> yl(AscendC::TPosition::VECIN, n * sizeof(float), n);
    AscendC::LocalTensor<float> zl(AscendC::TPosition::VECOUT, 2 * n * sizeof(float), n);
    AscendC::DataCopy(xl, xg, n);
    AscendC::DataCopy(yl, yg, n);
    AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
    AscendC::Add(zl, xl, yl, n);
    AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
    AscendC::DataCopy(zg, zl, n);
}

// ---------- queue buffers at explicit addresses (TPipe::InitBuffer with Std::tuple) ----------
extern "C" __global__ __aicore__ void tuple_buffers(GM_ADDR x, GM_ADDR out, GM_ADDR params) {
    GlobalTensor<uint32_t> pg;
    pg.SetGlobalBuffer((__gm__ uint32_t*)params, 1);
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> que;
    auto addr0 = Std::make_tuple(0, 1024);
    auto addr1 = Std::make_tuple(pg.GetValue(0), 2048u);
    auto addr2 = Std::make_tuple(8192, 4096);
    pipe.InitBuffer(que, addr0, addr1, addr2);
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    og.SetGlobalBuffer((__gm__ float*)out, 6 + 3 * 64);
    float* first = nullptr;
    for (int i = 0; i < 3; ++i) {
        LocalTensor<float> t = que.AllocTensor<float>();
        if (i == 0) first = t.GetPhyAddr();
        og.SetValue(2 * i, (float)((t.GetPhyAddr() - first) * sizeof(float)));
        og.SetValue(2 * i + 1, (float)t.GetSize());
        // The scalar stores sit in the data cache; write them back before a DMA writes the same 64-byte line.
        DataCacheCleanAndInvalid<float, CacheLine::ENTIRE_DATA_CACHE, DcciDst::CACHELINE_OUT>(og);
        DataCopy(t, xg, 64);
        que.EnQue(t);
        t = que.DeQue<float>();
        DataCopy(og[6 + 64 * i], t, 64);
        que.FreeTensor(t);
    }
}

// ---------- tiling macros ----------
namespace optiling {
struct TilingData {
    uint32_t totalLength;
    uint32_t tileNum;
    float scale;
    uint32_t table[4];
};
struct TilingDataB {
    uint64_t base;
    int32_t delta;
    int32_t pad;
};
}  // namespace optiling

extern "C" __global__ __aicore__ void tiling_kernel(GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling) {
    REGISTER_TILING_DEFAULT(optiling::TilingData);
    REGISTER_TILING_FOR_TILINGKEY("(TILING_KEY_VAR >= 10) && (TILING_KEY_VAR <= 15)", optiling::TilingDataB);
    GlobalTensor<float> og;
    og.SetGlobalBuffer((__gm__ float*)out + GetBlockIdx() * 8, 8);
    if (workspace == nullptr) {
        return;
    }
    if (TILING_KEY_IS(11)) {
        GET_TILING_DATA_WITH_STRUCT(optiling::TilingDataB, tb, tiling);
        og.SetValue(0, (float)(tb.base + tb.delta));
    } else if (TILING_KEY_LIST(1, 2)) {
        GET_TILING_DATA(td, tiling);
        og.SetValue(0, (float)td.totalLength * td.scale);
        og.SetValue(1, (float)td.tileNum);
    } else if (TILING_KEY_IS(3)) {
        GET_TILING_DATA_MEMBER(optiling::TilingData, table, tbl, tiling);
        for (int i = 0; i < 4; ++i) og.SetValue(i, (float)tbl[i]);
    } else if (TILING_KEY_IS(4)) {
        GET_TILING_DATA_PTR_WITH_STRUCT(optiling::TilingData, tp, tiling);
        og.SetValue(0, (float)(tp->table[3] + GetBlockIdx()));
    }
}

// Kernel type per tiling key: the default, overridden for key 4.
extern "C" __global__ __aicore__ void task_types(GM_ADDR x) {
    KERNEL_TASK_TYPE(4, KERNEL_TYPE_MIX_AIC_1_2);
    if (TILING_KEY_IS(1)) {
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    }
}

// ---------- raw builtins and index APIs in a 1:2 mix launch ----------
extern "C" __global__ __aicore__ void core_ids(GM_ADDR out) {
    GlobalTensor<int64_t> og;
    og.SetGlobalBuffer((__gm__ int64_t*)out, 1024);
    int64_t slot = (g_coreType == AIC ? 512 : 0) + GetBlockIdx() * 8;
    og.SetValue(slot + 0, block_idx);
    og.SetValue(slot + 1, GetBlockIdx());
    og.SetValue(slot + 2, sub_block_idx);
    og.SetValue(slot + 3, GetSubBlockIdx());
    og.SetValue(slot + 4, GetBlockNum());
    og.SetValue(slot + 5, GetSubBlockNum());
    og.SetValue(slot + 6, (int64_t)g_tilingKey);
}

// ---------- misuse ----------
extern "C" __global__ __aicore__ void misuse(GM_ADDR params, GM_ADDR x, GM_ADDR tiling) {
    GlobalTensor<int64_t> pg;
    pg.SetGlobalBuffer((__gm__ int64_t*)params, 4);
    const int64_t which = pg.GetValue(0), p1 = pg.GetValue(1);
    switch (which) {
        case 1: {  // pool exhausted
            TPipe pipe;
            TBufPool<TPosition::VECCALC> pool;
            TQue<TPosition::VECIN, 1> q1, q2;
            pipe.InitBufPool(pool, 2048);
            pool.InitBuffer(q1, 1, 1024);
            pool.InitBuffer(q2, 1, (uint32_t)p1);
            break;
        }
        case 2: {  // more buffer handles than bufIDSize
            TPipe pipe;
            TBufPool<TPosition::VECCALC> pool;
            TBuf<TPosition::VECCALC> b[5];
            pipe.InitBufPool(pool, 4096);
            for (int64_t i = 0; i < p1; ++i) pool.InitBuffer(b[i], 32);
            break;
        }
        case 3: {  // Reset while a buffer is in use
            TPipe pipe;
            TBufPool<TPosition::VECCALC> pool;
            TQue<TPosition::VECIN, 1> q;
            pipe.InitBufPool(pool, 2048);
            pool.InitBuffer(q, 1, 1024);
            LocalTensor<float> t = q.AllocTensor<float>();
            (void)t;
            pool.Reset();
            break;
        }
        case 4: {  // allocate from a pool after its Reset
            TPipe pipe;
            TBufPool<TPosition::VECCALC> pool;
            TBuf<TPosition::VECCALC> b1, b2;
            pipe.InitBufPool(pool, 2048);
            pool.InitBuffer(b1, 1024);
            pool.Reset();
            pool.InitBuffer(b2, 32);
            break;
        }
        case 5: {  // shared pool longer than the one it shares
            TPipe pipe;
            TBufPool<TPosition::VECCALC> pool1, pool2;
            pipe.InitBufPool(pool1, 2048);
            pipe.InitBufPool(pool2, (uint32_t)p1, pool1);
            break;
        }
        case 6: {  // pool larger than the usable UB
            TPipe pipe;
            TBufPool<TPosition::VECIN> pool;
            pipe.InitBufPool(pool, (uint32_t)p1);
            break;
        }
        case 7: {  // an L1 queue in a UB pool
            TPipe pipe;
            TBufPool<TPosition::VECCALC> pool;
            TQue<TPosition::A1, 1> q;
            pipe.InitBufPool(pool, 2048);
            pool.InitBuffer(q, 1, 512);
            break;
        }
        case 8: {  // two allocators of one hardware position
            LocalMemAllocator<Hardware::UB> a1;
            LocalMemAllocator<Hardware::UB> a2;
            break;
        }
        case 9: {  // allocator next to a TPipe
            TPipe pipe;
            LocalMemAllocator<> a;
            break;
        }
        case 10: {  // allocation of p1 floats
            LocalMemAllocator<> a;
            LocalTensor<float> t = a.Alloc<float>((uint32_t)p1);
            (void)t;
            break;
        }
        case 12: {  // tiling struct larger than the tiling buffer
            GET_TILING_DATA_WITH_STRUCT(optiling::TilingData, td, tiling);
            (void)td;
            break;
        }
        default: break;
    }
}
'''


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(SRC)


def pool_rows(lib, kernel, blocks, n=128):
    """Runs a TBufPool kernel on `blocks` random rows of n floats (output rows of 4n, preset to -5); yields per block
    (output row, input row, input row with its halves swapped)."""
    x = np.random.default_rng().standard_normal(n * blocks).astype(np.float32)
    z = np.full(4 * n * blocks, -5.0, dtype=np.float32)
    lib.launch(kernel, blocks, x, z)
    for c in range(blocks):
        xc = x[n * c:n * (c + 1)]
        yield z[4 * n * c:4 * n * (c + 1)], xc, np.concatenate([xc[n // 2:], xc[:n // 2]])


def test_tbufpool_shared_ranges_and_reset(lib):
    n = 128
    for row, xc, swapped in pool_rows(lib, "pool_reuse", 3, n):
        np.testing.assert_array_equal(row[:n], swapped)          # stage 1
        np.testing.assert_array_equal(row[n:2 * n], xc)          # pool2's first buffer is pool1's: stale stage-1 input
        np.testing.assert_array_equal(row[2 * n:3 * n], swapped)  # stage 2
        assert (row[3 * n:] == -5.0).all()


def test_tbufpool_subdivision(lib):
    n = 128
    for row, _, swapped in pool_rows(lib, "pool_subdivide", 2, n):
        np.testing.assert_array_equal(row[:n], swapped)
        np.testing.assert_array_equal(row[n:2 * n], swapped)
        assert (row[2 * n:] == -5.0).all()


def test_static_tensor_programming(lib):
    n, blocks = 256, 4
    x = np.random.default_rng().standard_normal(n * blocks).astype(np.float32)
    z = np.zeros(2 * n * blocks, dtype=np.float32)
    addrs = np.zeros(2 * blocks, dtype=np.uint32)
    lib.launch("static_copy", blocks, x, z, addrs)
    for c in range(blocks):
        np.testing.assert_array_equal(z[2 * n * c:2 * n * c + n], x[n * c:n * (c + 1)])
        np.testing.assert_array_equal(z[2 * n * c + n:2 * n * (c + 1)], x[n * c:n * (c + 1)])
    # Three 1 KB tensors from address 0: the next free address is 3072 and the second tensor starts at 1024.
    np.testing.assert_array_equal(addrs, np.tile([3 * n * 4, n], blocks))


@pytest.mark.parametrize("kernel,dtype,n", [("vadd_static_entry", np.float32, 512), ("vadd_queues_entry", np.float16, 384),
                                             ("vadd_explicit", np.float32, 256)])
def test_sample_forms_of_vector_kernels(lib, kernel, dtype, n):
    blocks = 4
    rng = np.random.default_rng()
    x = rng.standard_normal(n * blocks).astype(dtype)
    y = rng.standard_normal(n * blocks).astype(dtype)
    z = np.zeros_like(x)
    extra = (np.array([n * blocks], dtype=np.uint32),) if kernel == "vadd_queues_entry" else ()
    lib.launch(kernel, blocks, x, y, z, *extra)
    np.testing.assert_array_equal(z, x + y)  # elementwise sum rounded to the element type, as numpy does


def test_queue_buffers_at_explicit_addresses(lib):
    x = np.random.default_rng().standard_normal(64).astype(np.float32)
    out = np.zeros(6 + 3 * 64, dtype=np.float32)
    lib.launch("tuple_buffers", 1, x, out, np.array([2048], dtype=np.uint32))
    np.testing.assert_array_equal(out[:6], [0, 256, 2048, 512, 8192, 1024])  # byte offsets and element counts
    np.testing.assert_array_equal(out[6:], np.tile(x, 3))
    with pytest.raises(twin.TwinError, match=r"TPipe::InitBuffer\(que, Std::tuple...\): buffer 1: address 2050 is not "
                                             r"32-byte aligned"):
        lib.launch("tuple_buffers", 1, x, out, np.array([2050], dtype=np.uint32))
    with pytest.raises(twin.TwinError, match=r"buffer 1: address 195584 \+ length 2048 exceeds the usable UB capacity "
                                             r"196608 bytes"):
        lib.launch("tuple_buffers", 1, x, out, np.array([195584], dtype=np.uint32))


def tiling_bytes(total, tile, scale, table):
    t = np.zeros(7, dtype=np.uint32)
    t[0], t[1] = total, tile
    t[2] = np.float32(scale).view(np.uint32)
    t[3:7] = table
    return t


def test_tiling_macros_and_keys(lib):
    blocks = 2
    t = tiling_bytes(96, 5, 0.5, [7, 8, 9, 10])
    ws = np.zeros(8, dtype=np.uint8)
    for key, want in ((1, [48.0, 5.0, -1, -1]), (2, [48.0, 5.0, -1, -1]), (3, [7, 8, 9, 10]), (0, [-1, -1, -1, -1])):
        out = np.full(8 * blocks, -1.0, dtype=np.float32)
        lib.launch("tiling_kernel", blocks, out, ws, t, tiling_key=key)
        for c in range(blocks):
            np.testing.assert_array_equal(out[8 * c:8 * c + 4], np.array(want, dtype=np.float32), err_msg=f"key {key}")
    out = np.full(8 * blocks, -1.0, dtype=np.float32)
    lib.launch("tiling_kernel", blocks, out, ws, t, tiling_key=np.uint64(4))
    assert out[0] == 10.0 and out[8] == 11.0
    tb = np.zeros(2, dtype=np.uint64)
    tb[0] = 1000
    tb.view(np.int32)[2] = -3
    out = np.full(8 * blocks, -1.0, dtype=np.float32)
    lib.launch("tiling_kernel", blocks, out, ws, tb, tiling_key=11)
    assert out[0] == 997.0 and out[8] == 997.0
    with pytest.raises(ValueError, match="tiling_key"):
        lib.launch("tiling_kernel", 1, out, ws, t, tiling_key=-1)


def test_kernel_task_type_per_tiling_key(lib):
    x = np.zeros(8, dtype=np.float32)
    lib.launch("task_types", 1, x, tiling_key=1)
    lib.launch("task_types", 1, x, kernel_type="mix_aic_1_2", tiling_key=4)
    with pytest.raises(twin.TwinError, match=r"kernel declares type 5 but was launched as type 0"):
        lib.launch("task_types", 1, x, tiling_key=4)
    with pytest.raises(twin.TwinError, match=r"kernel declares type 0 but was launched as type 4"):
        lib.launch("task_types", 1, x, kernel_type="mix_aic_1_1", tiling_key=1)


def test_core_index_builtins_in_mix_launch(lib):
    blocks = 3
    out = np.full(1024, -1, dtype=np.int64)
    lib.launch("core_ids", blocks, out, kernel_type="mix_aic_1_2", tiling_key=42)
    for b in range(blocks):
        aic = out[512 + 8 * b:512 + 8 * b + 7]
        np.testing.assert_array_equal(aic, [b, b, 0, 0, blocks, 1, 42])
        for s in range(2):
            i = 2 * b + s
            aiv = out[8 * i:8 * i + 7]
            np.testing.assert_array_equal(aiv, [b, i, s, s, blocks, 2, 42])


def misuse(lib, which, p1=0, tiling=None):
    params = np.array([which, p1, 0, 0], dtype=np.int64)
    x = np.zeros(64, dtype=np.float32)
    if tiling is None:
        tiling = np.zeros(64, dtype=np.uint8)
    lib.launch("misuse", 2, params, x, tiling)


CORE = r"^\[AIV [01] \(block [01], sub 0\)\] "
MISUSE = [
    (1, 1056, r"TBufPool::InitBuffer: pool exhausted: 1056 bytes requested at pool offset 1024, pool length 2048 bytes"),
    (2, 5, r"TBufPool::InitBuffer: the pool holds 4 buffer handles \(bufIDSize 4, at most 16\); this call would make 5"),
    (3, 0, r"TBufPool::Reset: 1 queue buffer\(s\) still allocated or enqueued at TBufPool::Reset"),
    (4, 0, r"TBufPool::InitBuffer: the pool was Reset: its buffers stay usable but it cannot allocate again"),
    (5, 2080, r"TPipe::InitBufPool: length 2080 bytes exceeds the 2048 bytes of the shared pool"),
    (6, 196640, r"TPipe::InitBufPool: UB exhausted: 1 x 196640 bytes requested at offset 0, usable capacity 196608"),
    (7, 0, r"TBufPool::InitBuffer: buffer position A1 is not in the pool's memory \(UB, position VECCALC\)"),
    (8, 0, r"LocalMemAllocator: a LocalMemAllocator<Hardware::UB> already exists on this core"),
    (9, 0, r"LocalMemAllocator: a TPipe is live on this core; LocalMemAllocator .* cannot be mixed with TPipe"),
    (10, 50000, r"LocalTensor\(TPosition, addr, tileSize\): addr 0 \+ length 200000 bytes exceeds UB size 196608"),
    (10, 7, r"LocalTensor\(TPosition, addr, tileSize\): tensor length 28 bytes is not a positive multiple of 32"),
]


@pytest.mark.parametrize("which,p1,pattern", MISUSE)
def test_misuse_is_refused(lib, which, p1, pattern):
    with pytest.raises(twin.TwinError) as ei:
        misuse(lib, which, p1)
    assert re.search(CORE + pattern, str(ei.value)), str(ei.value)


def test_misuse_boundaries_pass(lib):
    misuse(lib, 1, 1024)      # exactly fills the pool
    misuse(lib, 2, 4)         # exactly bufIDSize handles
    misuse(lib, 5, 2048)      # shares the full length
    misuse(lib, 6, 196608)    # the whole UB (TPipe reserves nothing; see the Select scratch test)
    misuse(lib, 10, 49152)    # the whole nominal UB (static tensors are not limited by the TPipe reserve)


def test_tiling_buffer_too_small(lib):
    with pytest.raises(twin.TwinError, match=CORE + r"GET_TILING_DATA\(optiling::TilingData\): GM access of 28 bytes "
                                                   r"at byte 0 of buffer 'argument 2' \(length 8 bytes\) runs 20 bytes past its end"):
        misuse(lib, 12, tiling=np.zeros(64, dtype=np.uint8)[:8])  # a view inside its allocation: no padding
    misuse(lib, 12, tiling=np.zeros(28, dtype=np.uint8))
