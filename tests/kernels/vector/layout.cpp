// Test kernels for tests/test_twin_vector_layout.py: Gatherb, Transpose (16 x 16 and TransposeParamsExt) and the
// three TransDataTo5HD forms. The parameter block and the UB regions come from region_harness.h: A is the source,
// D the destination, B raw bytes (Gatherb offsets, the Transpose work buffer, TransDataTo5HD address tensors).
#include "region_harness.h"

template <typename T>
__aicore__ inline void LayoutCase(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d) {
    const Prm p = LoadPrm(params);
    WithRegions<T, T, uint8_t>(p, a, b, d, [&](LocalTensor<T>& dst, LocalTensor<T>& src, LocalTensor<uint8_t>& raw,
                                               LocalTensor<T>& A, LocalTensor<uint8_t>& B, LocalTensor<T>& D) {
        constexpr uint32_t epb = 32 / sizeof(T);
        switch (p.op) {
            case 0:  // Gatherb; offsets (uint32_t) in raw
                Gatherb<T>(dst, src, raw.template ReinterpretCast<uint32_t>(), (uint8_t)p.repeat,
                           GatherRepeatParams((uint8_t)p.dstBlk, (uint8_t)p.dstRep));
                break;
            case 1:  // Gatherb with dst = src (shared memory)
                Gatherb<T>(src, src, raw.template ReinterpretCast<uint32_t>(), (uint8_t)p.repeat, GatherRepeatParams(1, 8));
                break;
            case 10: Transpose<T>(dst, src); break;
            case 11: Transpose<T>(dst, dst); break;  // in place
            case 14: Transpose<T>(src[epb], src); break;  // partial overlap
            case 12:  // extended form: n, c, h, w = extra, extra2, mask0, mask1; type = extra3; work buffer = raw
                Transpose<T>(dst, src, raw, TransposeParamsExt((uint16_t)p.extra, (uint16_t)p.extra2, (uint16_t)p.mask0,
                                                             (uint16_t)p.mask1, (TransposeType)p.extra3));
                break;
            case 13:  // extended form with dst overlapping src
                Transpose<T>(src[epb], src, raw, TransposeParamsExt((uint16_t)p.extra, (uint16_t)p.extra2,
                                                                  (uint16_t)p.mask0, (uint16_t)p.mask1,
                                                                  (TransposeType)p.extra3));
                break;
            case 20:
            case 21:
            case 22:
            case 23: {  // TransDataTo5HD: list entry j at dst[j * dstBlk blocks], src[j * s0Blk blocks]
                const TransDataTo5HDParams tp(p.extra != 0, p.extra2 != 0, (uint8_t)p.repeat, (uint16_t)p.dstRep,
                                              (uint16_t)p.s0Rep);
                LocalTensor<T> dl[NCHW_CONV_ADDR_LIST_SIZE], sl[NCHW_CONV_ADDR_LIST_SIZE];
                uint64_t da[NCHW_CONV_ADDR_LIST_SIZE], sa[NCHW_CONV_ADDR_LIST_SIZE];
                for (int j = 0; j < NCHW_CONV_ADDR_LIST_SIZE; ++j) {
                    dl[j] = dst[(uint32_t)(j * p.dstBlk * epb)];
                    sl[j] = src[(uint32_t)(j * p.s0Blk * epb)];
                    da[j] = (uint64_t)dl[j].GetPhyAddr();
                    sa[j] = (uint64_t)sl[j].GetPhyAddr();
                }
                if (p.form == 1) da[(uint32_t)p.count] += 8;  // a misaligned address
                if (p.op == 20) {
                    TransDataTo5HD<T>(dl, sl, tp);
                } else if (p.op == 21) {
                    TransDataTo5HD<T>(da, sa, tp);
                } else {
                    LocalTensor<uint64_t> dt = B.template ReinterpretCast<uint64_t>();
                    LocalTensor<uint64_t> st = B[1024].template ReinterpretCast<uint64_t>();
                    for (int j = 0; j < NCHW_CONV_ADDR_LIST_SIZE; ++j) {
                        dt.SetValue(j, da[j]);
                        st.SetValue(j, sa[j]);
                    }
                    PipeBarrier<PIPE_ALL>();
                    TransDataTo5HD<T>(dt, st, tp);
                    if (p.op == 23) TransDataTo5HD<T>(dt, st, tp);  // again, without refilling the address tensors
                }
                break;
            }
            default: break;
        }
        (void)A;
        (void)D;
    });
}

extern "C" __global__ __aicore__ void layout_u16(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { LayoutCase<uint16_t>(p, a, b, d); }
extern "C" __global__ __aicore__ void layout_u32(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { LayoutCase<uint32_t>(p, a, b, d); }
extern "C" __global__ __aicore__ void layout_f16(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { LayoutCase<half>(p, a, b, d); }
extern "C" __global__ __aicore__ void layout_f32(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { LayoutCase<float>(p, a, b, d); }
extern "C" __global__ __aicore__ void layout_s8(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { LayoutCase<int8_t>(p, a, b, d); }

// TransDataTo5HD's address form has no bfloat16_t instruction: the official header asserts at run time.
extern "C" __global__ __aicore__ void layout_bf16_addr(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d) {
    const Prm p = LoadPrm(params);
    WithRegions<bfloat16_t, bfloat16_t, uint8_t>(p, a, b, d, [&](LocalTensor<bfloat16_t>& dst,
                                                                 LocalTensor<bfloat16_t>& src, auto&...) {
        uint64_t da[NCHW_CONV_ADDR_LIST_SIZE], sa[NCHW_CONV_ADDR_LIST_SIZE];
        for (int j = 0; j < NCHW_CONV_ADDR_LIST_SIZE; ++j) {
            da[j] = (uint64_t)dst[(uint32_t)(16 * j)].GetPhyAddr();
            sa[j] = (uint64_t)src[(uint32_t)(16 * j)].GetPhyAddr();
        }
        TransDataTo5HD<bfloat16_t>(da, sa, TransDataTo5HDParams());
    });
}
