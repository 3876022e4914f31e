// Twin test kernels for GM <-> UB slice copies (DataCopy with SliceInfo), DataCopyPad with 64-bit data, and
// L1 -> GM copies. One block each; parameters from an int32 (slice, pad) or int64 (l1) GM buffer.
#include "kernel_operator.h"

using namespace AscendC;

// slice_*: p[0] dimValue, p[1] UB elements, then dimValue SliceInfos (5 values each) for: the GM source, the UB
// destination, the GM destination of the copy back. UB starts filled with -1; it is dumped to ubOut as well.
template <typename T>
__aicore__ inline void SliceBody(GM_ADDR prm, GM_ADDR in, GM_ADDR ubOut, GM_ADDR out) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 160);
    const uint32_t dims = P.GetValue(0), ubElems = P.GetValue(1);
    SliceInfo src[8], dst[8], back[8];
    SliceInfo* lists[3] = {src, dst, back};
    for (uint32_t l = 0; l < 3; ++l) {
        for (uint32_t i = 0; i < dims && i < 8; ++i) {
            const uint32_t o = 2 + (l * dims + i) * 5;
            lists[l][i] = SliceInfo(P.GetValue(o), P.GetValue(o + 1), P.GetValue(o + 2), P.GetValue(o + 3), P.GetValue(o + 4));
        }
    }
    GlobalTensor<T> inG, ubG, outG;
    inG.SetGlobalBuffer((__gm__ T*)in);
    ubG.SetGlobalBuffer((__gm__ T*)ubOut, ubElems);
    outG.SetGlobalBuffer((__gm__ T*)out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, ubElems * sizeof(T));
    LocalTensor<T> ub = buf.Get<T>();
    Duplicate(ub, (T)(-1.0f), ubElems);
    SetFlag<HardEvent::V_MTE2>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);
    DataCopy(ub, inG, dst, src, dims);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(ubG, ub, ubElems);
    DataCopy(outG, ub, back, dst, dims);
}

extern "C" __global__ __aicore__ void slice_f32(GM_ADDR p, GM_ADDR in, GM_ADDR ub, GM_ADDR out) { SliceBody<float>(p, in, ub, out); }
extern "C" __global__ __aicore__ void slice_f16(GM_ADDR p, GM_ADDR in, GM_ADDR ub, GM_ADDR out) { SliceBody<half>(p, in, ub, out); }

// pad_*: DataCopyPad GM -> UB of p[0] rows of p[1] bytes, rightPadding p[2] elements, isPad p[3] with paddingValue
// p[4] (p[5] = 1: the DataCopyPadParams form), then the padded rows UB -> GM.
template <typename T>
__aicore__ inline void PadBody(GM_ADDR prm, GM_ADDR in, GM_ADDR out) {
    GlobalTensor<int64_t> P;
    P.SetGlobalBuffer((__gm__ int64_t*)prm, 8);
    const uint16_t rows = P.GetValue(0);
    const uint32_t len = P.GetValue(1);
    const uint8_t right = P.GetValue(2);
    const bool isPad = P.GetValue(3) != 0;
    const int64_t v = P.GetValue(4);
    GlobalTensor<T> inG, outG;
    inG.SetGlobalBuffer((__gm__ T*)in);
    outG.SetGlobalBuffer((__gm__ T*)out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4096);
    LocalTensor<T> ub = buf.Get<T>();
    if (P.GetValue(5) == 1) {
        DataCopyPad(ub, inG, DataCopyParams(rows, (uint16_t)len, 0, 0), DataCopyPadParams(isPad, 0, right, (uint64_t)v));
    } else {
        const T pv = static_cast<T>(v);
        DataCopyPad(ub, inG, DataCopyExtParams(rows, len, 0, 0, 0), DataCopyPadExtParams<T>(isPad, 0, right, pv));
    }
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    const uint32_t row = (len + right * sizeof(T) + 31) / 32 * 32;
    DataCopy(outG, ub, rows * row / sizeof(T));
}

extern "C" __global__ __aicore__ void pad_i64(GM_ADDR p, GM_ADDR in, GM_ADDR out) { PadBody<int64_t>(p, in, out); }
extern "C" __global__ __aicore__ void pad_f64(GM_ADDR p, GM_ADDR in, GM_ADDR out) { PadBody<double>(p, in, out); }

// l1_gm: GM -> L1 (count form, p[0] doubles), then L1 -> GM from L1 element p[1]: p[2] = 0 the count form of p[3]
// elements, else DataCopyParams(p[3] blocks, p[4] length, p[5] srcGap, p[6] dstGap).
extern "C" __global__ __aicore__ void l1_gm(GM_ADDR prm, GM_ADDR in, GM_ADDR out) {
    if ASCEND_IS_AIV {
        return;
    }
    GlobalTensor<int64_t> P;
    P.SetGlobalBuffer((__gm__ int64_t*)prm, 8);
    GlobalTensor<double> inG, outG;
    inG.SetGlobalBuffer((__gm__ double*)in);
    outG.SetGlobalBuffer((__gm__ double*)out);
    TPipe pipe;
    TBuf<TPosition::A1> buf;
    pipe.InitBuffer(buf, 16384);
    LocalTensor<double> l1 = buf.Get<double>();
    DataCopy(l1, inG, (uint32_t)P.GetValue(0));
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    LocalTensor<double> s = l1[(uint32_t)P.GetValue(1)];
    if (P.GetValue(2) == 0) {
        DataCopy(outG, s, (uint32_t)P.GetValue(3));
    } else {
        DataCopy(outG, s, DataCopyParams((uint16_t)P.GetValue(3), (uint16_t)P.GetValue(4), (uint16_t)P.GetValue(5),
                                         (uint16_t)P.GetValue(6)));
    }
}
