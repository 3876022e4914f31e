// Test kernels for tests/test_twin_vector_renamed.py: the old API names RepeatReduceSum and CompareScalar, Cast
// half <-> int4b_t, InitOutput, printf of a UB address through %lu / %x, and the operand overlaps the Sort32,
// ReduceSum and Transpose pages leave unsupported.
// p: [case, n, a, b, c, unused]; x: input bytes (GM), y: output bytes (GM); UB: 64 KB in, 64 KB out.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void edge_case(GM_ADDR pp, GM_ADDR x, GM_ADDR y) {
    GlobalTensor<int64_t> p;
    p.SetGlobalBuffer((__gm__ int64_t*)pp, 6);
    const int64_t kase = p.GetValue(0), n = p.GetValue(1), a = p.GetValue(2), b = p.GetValue(3), c = p.GetValue(4);
    GlobalTensor<uint8_t> gx, gy;
    gx.SetGlobalBuffer((__gm__ uint8_t*)x, 65536);
    gy.SetGlobalBuffer((__gm__ uint8_t*)y, 65536);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bin, bout;
    pipe.InitBuffer(bin, 65536);
    pipe.InitBuffer(bout, 65536);
    LocalTensor<uint8_t> in = bin.Get<uint8_t>(), out = bout.Get<uint8_t>();
    if (kase == 9) {  // InitOutput(y as int32, n, a): no UB involved
        GlobalTensor<int32_t> g;
        g.SetGlobalBuffer((__gm__ int32_t*)y, 16384);
        InitOutput<int32_t>(g, (uint32_t)n, (int32_t)a);
        return;
    }
    DataCopy(in, gx, 65536);
    DataCopy(out, gy, 65536);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    // where a case puts its extra operand: apart (c = 0: the second half of out) or at in[b]
    LocalTensor<uint8_t> spare = c == 0 ? out[32768] : in[(uint32_t)b];
    switch (kase) {
        case 0:  // RepeatReduceSum<float>(dst, src, repeat = n, mask = a, dstBlkStride = c, 1, dstRepStride = 1, srcRepStride = b)
            RepeatReduceSum<float>(out.ReinterpretCast<float>(), in.ReinterpretCast<float>(), (int32_t)n, (int32_t)a,
                                   (int32_t)c, 1, 1, (int32_t)b);
            break;
        case 1:  // RepeatReduceSum<half>, the same arguments
            RepeatReduceSum<half>(out.ReinterpretCast<half>(), in.ReinterpretCast<half>(), (int32_t)n, (int32_t)a,
                                  (int32_t)c, 1, 1, (int32_t)b);
            break;
        case 2: {  // CompareScalar<half, uint8_t> count form, mode a, scalar = in[0]; data from element 128
            LocalTensor<half> s = in.ReinterpretCast<half>();
            CompareScalar(out, s[128], s.GetValue(0), (CMPMODE)a, (uint32_t)n);
            break;
        }
        case 3: {  // CompareScalar<float, uint8_t> level 0 (mask reserved on A2), n repeats, mode a, scalar = in[0]
            LocalTensor<float> s = in.ReinterpretCast<float>();
            uint64_t mask[2] = {~0ull, 0};
            CompareScalar(out, s[64], s.GetValue(0), (CMPMODE)a, mask, (uint8_t)n, {1, 1, 8, 8});
            break;
        }
        case 4: {  // CompareScalar<int32_t> with mode a (only EQ is documented for int32_t)
            LocalTensor<int32_t> s = in.ReinterpretCast<int32_t>();
            CompareScalar(out, s[64], (int32_t)7, (CMPMODE)a, (uint32_t)n);
            break;
        }
        case 5:  // Cast half -> int4b_t, count n, round mode a
            Cast(out.ReinterpretCast<int4b_t>(), in.ReinterpretCast<half>(), (RoundMode)a, (uint32_t)n);
            break;
        case 6: {  // Cast half -> int4b_t level 0: mask a (continuous), repeat n, {1, 1, 2, 8}
            Cast<int4b_t, half>(out.ReinterpretCast<int4b_t>(), in.ReinterpretCast<half>(), RoundMode::CAST_CEIL,
                                (uint64_t)a, (uint8_t)n, {1, 1, 2, 8});
            break;
        }
        case 7:  // Cast int4b_t -> half, count n
            Cast(out.ReinterpretCast<half>(), in.ReinterpretCast<int4b_t>(), RoundMode::CAST_NONE, (uint32_t)n);
            break;
        case 11: {  // Sort32<float>: scores in[0, 128 n), indices in[32 KB...), n repeats, dst = spare
            Sort32(spare.ReinterpretCast<float>(), in.ReinterpretCast<float>(),
                   in[32768].ReinterpretCast<uint32_t>(), (int32_t)n);
            break;
        }
        case 12: {  // ReduceSum<float> mask form (64 per repeat, n repeats, srcRepStride 8), sharedTmpBuffer = spare
            LocalTensor<float> tmp = spare.ReinterpretCast<float>();
            ReduceSum<float>(out.ReinterpretCast<float>(), in.ReinterpretCast<float>(), tmp, 64, (int32_t)n, 8);
            break;
        }
        case 13: {  // Transpose NCHW -> NHWC of float [1, n, 2, 8], sharedTmpBuffer = spare
            Transpose(out.ReinterpretCast<float>(), in.ReinterpretCast<float>(), spare,
                      TransposeParamsExt(1, (uint16_t)n, 2, 8, TransposeType::TRANSPOSE_NCHW2NHWC));
            break;
        }
        case 10:  // printf of UB addresses through integer conversions (the NPU prints the address bits)
            AscendC::printf("in=%lu out=%llu x=%x\n", in.GetPhyAddr(), out[(uint32_t)n].GetPhyAddr(),
                            out.GetPhyAddr(512));
            break;
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(gy, out, 65536);
}
