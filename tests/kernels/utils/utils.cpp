// Twin test kernels for the debug and utility APIs: printf / PRINTF, assert / ascendc_assert, DumpTensor, DivCeil,
// IsSameType, Conditional, GetTPipePtr, GlobalTensor::SetL2CacheHint, ListTensorDesc / TensorDesc.
// utils_case: p[0] picks the case, p[1] the block that runs it (-1: every block), p[2..7] its numbers; i/f/h hold
// random int32 / float / half inputs, o receives outputs.
#include "kernel_operator.h"
#include "kernel_operator_list_tensor_intf.h"

using namespace AscendC;

static_assert(IsSameType<Conditional<true, int16_t, float>::type, int16_t>::value, "Conditional<true> is T1");
static_assert(IsSameType<Conditional<false, int16_t, float>::type, float>::value, "Conditional<false> is T2");
static_assert(!IsSameType<int32_t, uint32_t>::value && IsSameType<half, half>::value, "IsSameType");
static_assert(DivCeil(7, 3) == 3 && DivCeil(6, 3) == 2 && DivCeil(0, 5) == 0, "DivCeil is constexpr");

// As the get_tpipe_ptr sample: Init reaches the kernel's TPipe through GetTPipePtr().
class KernelCopyViaPipePtr {
public:
    __aicore__ inline void Init(GM_ADDR src, GM_ADDR dst, uint32_t n, bool disableL2) {
        n_ = n;
        srcGm_.SetGlobalBuffer((__gm__ float*)src, n);
        dstGm_.SetGlobalBuffer((__gm__ float*)dst, n);
        if (disableL2) {
            srcGm_.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);
            dstGm_.SetL2CacheHint<CacheRwMode::WRITE>(CacheMode::CACHE_MODE_NORMAL);
        }
        GetTPipePtr()->InitBuffer(que_, 1, n * sizeof(float));
    }
    __aicore__ inline void Process() {
        LocalTensor<float> t = que_.AllocTensor<float>();
        DataCopy(t, srcGm_, n_);
        que_.EnQue(t);
        t = que_.DeQue<float>();
        DataCopy(dstGm_, t, n_);
        que_.FreeTensor(t);
    }

private:
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> que_;
    GlobalTensor<float> srcGm_, dstGm_;
    uint32_t n_ = 0;
};

extern "C" __global__ __aicore__ void utils_case(GM_ADDR params, GM_ADDR i, GM_ADDR f, GM_ADDR h, GM_ADDR o) {
    GlobalTensor<int64_t> pg;
    pg.SetGlobalBuffer((__gm__ int64_t*)params, 8);
    const int64_t which = pg.GetValue(0), onBlock = pg.GetValue(1);
    if (onBlock >= 0 && GetBlockIdx() != onBlock) return;
    const int64_t p2 = pg.GetValue(2), p3 = pg.GetValue(3);
    GlobalTensor<int32_t> ig;
    GlobalTensor<float> fg;
    GlobalTensor<half> hg;
    GlobalTensor<uint32_t> og;
    ig.SetGlobalBuffer((__gm__ int32_t*)i, 4096);
    fg.SetGlobalBuffer((__gm__ float*)f, 4096);
    hg.SetGlobalBuffer((__gm__ half*)h, 4096);
    og.SetGlobalBuffer((__gm__ uint32_t*)o, 4096);
    const int64_t b = GetBlockIdx();
    switch (which) {
        case 1: {  // every documented conversion, each core its own values; a line split over two calls
            const int32_t v = ig.GetValue(b);
            const int64_t big = (int64_t)v * 100003;
            const uint32_t u = (uint32_t)ig.GetValue(b + 8);
            const int8_t s8 = (int8_t)v;
            const uint16_t u16 = (uint16_t)v;
            AscendC::printf("d=%d i=%i ld=%ld lli=%lli s8=%d\n", v, v, big, big, s8);
            AscendC::printf("u=%u lu=%lu llu=%llu x=%x lx=%lx llx=%llx u16=%u\n", u, (uint64_t)u, (uint64_t)big, u,
                            (uint64_t)big, (int64_t)v, u16);
            PRINTF("f=%f F=%F h=%f s=%s p=%p\n", fg.GetValue(b), fg.GetValue(b + 8), hg.GetValue(b), "twin", i);
            AscendC::printf("half a line, ");
            PRINTF("the rest %u\nnext line\n", (uint32_t)b);
            printf("unqualified %d\n", v);  // with arguments the template is the better match than the C printf
            break;
        }
        case 2: {  // DumpTensor of a UB tensor (float), a GM half tensor and a UB int32 tensor
            TPipe pipe;
            TBuf<TPosition::VECCALC> buf;
            pipe.InitBuffer(buf, 8192);
            LocalTensor<float> ft = buf.Get<float>();
            LocalTensor<int32_t> it = buf.GetWithOffset<int32_t>(512, 4096);
            const uint32_t n = (uint32_t)p2;
            DataCopy(ft, fg, 512);
            DataCopy(it, ig, 512);
            PipeBarrier<PIPE_ALL>();
            DumpTensor(ft, 5, n);
            DumpTensor(hg[3], 7, (uint32_t)p3);
            DumpTensor(it, (uint32_t)__LINE__, n);
            break;
        }
        case 3: {  // assertions that hold print nothing; ascendc_assert with a message fails on block p2
            const int32_t v = ig.GetValue(b);
            assert(v == ig.GetValue(b));
            ascendc_assert(b < GetBlockNum(), "block %d of %d\n", (int32_t)b, (int32_t)GetBlockNum());
            ascendc_assert(b != p2, "value %d on block %u is %f\n", v, (uint32_t)b, fg.GetValue(b));
            break;
        }
        case 4: assert(ig.GetValue(0) == ig.GetValue(1) + 1); break;  // plain assert, no message
        case 5: {  // DivCeil on random numbers, IsSameType / Conditional at run time
            for (int k = 0; k < 16; ++k) {
                og.SetValue(k, DivCeil((uint32_t)ig.GetValue(k), (uint32_t)ig.GetValue(16 + k)));
            }
            og.SetValue(16, IsSameType<Conditional<(sizeof(half) == 2), half, float>::type, half>::value);
            og.SetValue(17, sizeof(Conditional<false, int8_t, int64_t>::type));
            break;
        }
        case 6: (void)DivCeil((uint32_t)p2, (uint32_t)p3); break;
        case 7: {  // GetTPipePtr() inside Init, with (p2 = 1) or without L2 cache hints
            TPipe pipe;
            og.SetValue(0, GetTPipePtr() == &pipe);
            KernelCopyViaPipePtr op;
            op.Init(f, o + 64 * sizeof(uint32_t), (uint32_t)p3, p2 == 1);
            op.Process();
            break;
        }
        case 8: (void)GetTPipePtr(); break;  // no TPipe
        case 9: fg.SetL2CacheHint((CacheMode)p2); break;
        // printf / DumpTensor misuse
        case 10: AscendC::printf("%5d\n", 1); break;
        case 11: AscendC::printf("tab\there %d\n", 1); break;
        case 12: AscendC::printf("%d\n", 1.5f); break;
        case 13: AscendC::printf("%d %d\n", 1); break;
        case 14: AscendC::printf("%d\n", 1, 2); break;
        case 15: AscendC::printf("%s\n", (const char*)h); break;  // a long string from GM
        case 16: AscendC::printf("%s\n", 7); break;
        case 17: {
            TPipe pipe;
            TBuf<TPosition::VECCALC> buf;
            pipe.InitBuffer(buf, (uint32_t)p3);
            DumpTensor(buf.Get<float>(), 1, (uint32_t)p2);
            break;
        }
        case 18: DumpTensor(fg, 1, (uint32_t)p2); break;
        case 19: AscendC::printf("100%%\n"); break;
        case 20: AscendC::printf((const char*)nullptr); break;
        case 21: DumpTensor(LocalTensor<float>(), 1, 8); break;
        case 22: {
            TPipe pipe;
            TBuf<TPosition::VECCALC> buf;
            pipe.InitBuffer(buf, 1024);
            DumpTensor(buf.Get<float>()[(uint32_t)p2], 1, 8);
            break;
        }
        default: break;
    }
}

// Cube core: DumpTensor of L1 and L0C tensors, and a refused L0A dump.
extern "C" __global__ __aicore__ void dump_cube(GM_ADDR params, GM_ADDR f) {
    GlobalTensor<int64_t> pg;
    pg.SetGlobalBuffer((__gm__ int64_t*)params, 8);
    GlobalTensor<float> fg;
    fg.SetGlobalBuffer((__gm__ float*)f, 4096);
    LocalTensor<float> l1(TPosition::A1, 0, 1024);
    DataCopy(l1, fg, 1024);
    PipeBarrier<PIPE_ALL>();
    if (pg.GetValue(0) == 0) {
        DumpTensor(l1, 11, 24);
        LocalTensor<float> l0c(TPosition::CO1, 0, 256);
        DumpTensor(l0c[0], 12, 0);
    } else {
        LocalTensor<float> l0a(TPosition::A2, 0, 256);
        DumpTensor(l0a, 13, 8);
    }
}

// As the list_tensor_desc_input sample: x and y arrive through a ListTensorDesc, z = x + y.
extern "C" __global__ __aicore__ void list_addn(GM_ADDR srcList, GM_ADDR z) {
    ascendc_assert(GetBlockNum() != 0 && "block dim can not be zero!");
    ListTensorDesc list((__gm__ void*)srcList);
    __gm__ uint8_t* x = (__gm__ uint8_t*)list.GetDataPtr<__gm__ uint8_t>(0);
    __gm__ uint8_t* y = (__gm__ uint8_t*)list.GetDataPtr<__gm__ uint8_t>(1);
    uint64_t shape[8] = {0};
    TensorDesc<float> desc;
    desc.SetShapeAddr(shape);
    list.GetDesc(desc, 0);
    const uint32_t total = (uint32_t)(desc.GetShape(0) * desc.GetShape(1));
    const uint32_t per = total / GetBlockNum(), tile = per / 2;
    GlobalTensor<float> xg, yg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x + per * GetBlockIdx(), per);
    yg.SetGlobalBuffer((__gm__ float*)y + per * GetBlockIdx(), per);
    zg.SetGlobalBuffer((__gm__ float*)z + per * GetBlockIdx(), per);
    LocalTensor<float> xl(TPosition::VECIN, 0, tile), yl(TPosition::VECIN, tile * 4, tile),
        zl(TPosition::VECOUT, tile * 8, tile);
    for (uint32_t t = 0; t < 2; ++t) {
        DataCopy(xl, xg[t * tile], tile);
        DataCopy(yl, yg[t * tile], tile);
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
        Add(zl, xl, yl, tile);
        SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
        DataCopy(zg[t * tile], zl, tile);
        SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
    }
}

// Everything a list exposes, written to o: p[0] = 0 decode (o: count, then per tensor index, dim, shapes, pointer
// low/high words and GetDataObj size), 1 GetDataPtr(p[1]), 2 GetDesc(p[1]), 3 GetShape(p[1]) of tensor 0, 4 Init with
// length p[1] and shapeSize p[2], 5 GetDesc without SetShapeAddr, 6 SetShapeAddr(nullptr), 7 GetSize before Init.
extern "C" __global__ __aicore__ void list_case(GM_ADDR params, GM_ADDR srcList, GM_ADDR o) {
    GlobalTensor<int64_t> pg;
    pg.SetGlobalBuffer((__gm__ int64_t*)params, 8);
    GlobalTensor<uint64_t> og;
    og.SetGlobalBuffer((__gm__ uint64_t*)o, 512);
    const int64_t which = pg.GetValue(0), p1 = pg.GetValue(1), p2 = pg.GetValue(2);
    ListTensorDesc list;
    if (which == 7) {
        (void)list.GetSize();
        return;
    }
    if (which == 4) {
        list.Init((__gm__ void*)srcList, (uint32_t)p1, (uint32_t)p2);
        og.SetValue(0, list.GetSize());
        return;
    }
    list.Init((__gm__ void*)srcList);
    uint64_t shape[8] = {0};
    TensorDesc<int32_t> desc;
    if (which == 5 || which == 6) {
        if (which == 6) desc.SetShapeAddr(nullptr);
        list.GetDesc(desc, 0);
        return;
    }
    desc.SetShapeAddr(shape);
    if (which == 1) {
        (void)list.GetDataPtr<int32_t>((uint32_t)p1);
    } else if (which == 2) {
        list.GetDesc(desc, (uint32_t)p1);
    } else if (which == 3) {
        list.GetDesc(desc, 0);
        (void)desc.GetShape((uint32_t)p1);
    } else {
        const uint32_t n = list.GetSize();
        uint32_t w = 0;
        og.SetValue(w++, n);
        for (uint32_t k = 0; k < n; ++k) {
            const uint64_t ptr = (uint64_t)(uintptr_t)list.GetDataPtr<int32_t>(k);
            if (p1 != 0) {  // a list with shapes
                list.GetDesc(desc, k);
                og.SetValue(w++, desc.GetIndex());
                og.SetValue(w++, desc.GetDim());
                for (uint32_t d = 0; d < desc.GetDim(); ++d) og.SetValue(w++, desc.GetShape(d));
                og.SetValue(w++, (uint64_t)(uintptr_t)desc.GetDataPtr() == ptr);
                og.SetValue(w++, desc.GetDataObj().GetSize());
                og.SetValue(w++, (uint64_t)desc.GetDataObj().GetValue(desc.GetDataObj().GetSize() - 1));
            }
            og.SetValue(w++, ptr);
        }
    }
}
