// Test kernels for tests/test_twin_vector_sort.py: Sort32, MrgSort + GetMrgSortResult, the reduction special
// registers (GetReduceRepeatMaxMinSpr, GetReduceRepeatSumSpr), the ReduceSum work-buffer rule and the unary type /
// mask rules. The parameter block and the three UB regions come from region_harness.h; region B is raw bytes (the
// uint32_t indices of Sort32, or the T work buffer of the reductions).
#include "region_harness.h"

// The register getters' results go to the last 8 words of region D.
template <typename T>
__aicore__ inline void PutWord(const LocalTensor<T>& D, uint32_t k, uint32_t v) {
    D.template ReinterpretCast<uint32_t>().SetValue(kRegion / 4 - 8 + k, v);
}

template <typename T>
__aicore__ inline uint32_t BitsOf(T v) {
    uint32_t b = 0;
    __builtin_memcpy(&b, &v, sizeof(T));
    return b;
}

template <typename T>
__aicore__ inline void ReadMaxMinSpr(const LocalTensor<T>& D) {
    T v, i;
    GetReduceRepeatMaxMinSpr<T>(v, i);
    PutWord(D, 0, BitsOf(v));
    PutWord(D, 1, BitsOf(i));
}

template <typename T>
__aicore__ inline void SortCase(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d) {
    const Prm p = LoadPrm(params);
    WithRegions<T, T, uint8_t>(p, a, b, d, [&](LocalTensor<T>& dst, LocalTensor<T>& s0, LocalTensor<uint8_t>& s1,
                                               LocalTensor<T>& A, LocalTensor<uint8_t>&, LocalTensor<T>& D) {
        LocalTensor<T> tmp = s1.template ReinterpretCast<T>();
        const int32_t rep = (int32_t)p.repeat, cnt = (int32_t)p.count, mask = (int32_t)p.mask0;
        uint64_t bits[2] = {p.mask0, p.mask1};
        switch (p.op) {
            case 0: Sort32<T>(dst, s0, s1.template ReinterpretCast<uint32_t>(), rep); break;
            case 1:
            case 3: {  // list k: lengths in 16-bit fields of mask0, element offsets in A in 16-bit fields of mask1;
                       // op 3 writes to A[offD] instead of dst
                uint16_t len[4];
                LocalTensor<T> l[4];
                for (int k = 0; k < 4; ++k) {
                    len[k] = (uint16_t)(p.mask0 >> (16 * k));
                    l[k] = A[(uint32_t)(uint16_t)(p.mask1 >> (16 * k))];
                }
                MrgSortSrcList<T> list(l[0], l[1], l[2], l[3]);
                MrgSort4Info info(len, p.extra2 != 0, (uint16_t)p.extra, (uint16_t)p.repeat);
                MrgSort<T>(p.op == 3 ? A[(uint32_t)p.offD] : dst, list, info);
                if (p.extra2 != 0 || p.extra3 != 0) {
                    uint16_t n[4];
                    GetMrgSortResult(n[0], n[1], n[2], n[3]);
                    for (int k = 0; k < 4; ++k) PutWord(D, k, n[k]);
                }
                break;
            }
            case 2: {  // GetMrgSortResult before any MrgSort
                uint16_t n[4];
                GetMrgSortResult(n[0], n[1], n[2], n[3]);
                break;
            }
            case 10:  // ReduceRepeat<MAX/MIN> (extra3 0 / 1) then MAX_MIN_CNT; form 1 mask[], 2 continuous, 4 counter
                if (p.form == 4) {
                    SetMaskCount();
                    SetVectorMask<T, MaskMode::COUNTER>(cnt);
                    WholeReduceMax<T, false>(dst, s0, MASK_PLACEHOLDER_LIST, 1, 1, (int32_t)p.s0Blk, (int32_t)p.s0Rep);
                    SetMaskNorm();
                    ResetMask();
                } else if (p.extra3 == 0) {
                    if (p.form == 1) ReduceRepeat<ReduceType::MAX, T, T>(dst, s0, bits, rep, 1, (int32_t)p.s0Blk, (int32_t)p.s0Rep);
                    else ReduceRepeat<ReduceType::MAX, T, T>(dst, s0, mask, rep, 1, (int32_t)p.s0Blk, (int32_t)p.s0Rep);
                } else {
                    if (p.form == 1) WholeReduceMin<T>(dst, s0, bits, rep, 1, (int32_t)p.s0Blk, (int32_t)p.s0Rep);
                    else WholeReduceMin<T>(dst, s0, mask, rep, 1, (int32_t)p.s0Blk, (int32_t)p.s0Rep);
                }
                ReadMaxMinSpr(D);
                break;
            case 11:  // ReduceMax / ReduceMin count form with calIndex, then MAX_MIN_CNT
                if (p.extra3 == 0) ReduceMax<T>(dst, s0, tmp, cnt, true);
                else ReduceMin<T>(dst, s0, tmp, cnt, true);
                ReadMaxMinSpr(D);
                break;
            case 12:  // ReduceSum count form, then ACC_VAL
                ReduceSum<T>(dst, s0, tmp, cnt);
                PutWord(D, 0, BitsOf(GetReduceRepeatSumSpr<T>()));
                break;
            case 13:  // ReduceSum mask form (continuous); extra2: then read ACC_VAL
                ReduceSum<T>(dst, s0, tmp, mask, rep, (int32_t)p.s0Rep);
                if (p.extra2 != 0) PutWord(D, 0, BitsOf(GetReduceRepeatSumSpr<T>()));
                break;
            case 14:  // WholeReduceSum, then ACC_VAL
                WholeReduceSum<T>(dst, s0, mask, rep, 1, 1, 8);
                PutWord(D, 0, BitsOf(GetReduceRepeatSumSpr<T>()));
                break;
            case 15: {  // MAX_MIN_CNT read with the other float type
                ReduceRepeat<ReduceType::MAX, T, T>(dst, s0, mask, rep, 1, 1, 8);
                if constexpr (sizeof(T) == 4) {
                    half v, i;
                    GetReduceRepeatMaxMinSpr<half>(v, i);
                } else {
                    float v, i;
                    GetReduceRepeatMaxMinSpr<float>(v, i);
                }
                break;
            }
            case 16:  // GetReduceRepeatSumSpr before any reduction
                PutWord(D, 0, BitsOf(GetReduceRepeatSumSpr<T>()));
                break;
            case 17:  // Exp with a continuous mask (normal mode)
                Exp<T>(dst, s0, (uint64_t)p.mask0, (uint8_t)rep, UnaryRepeatParams());
                break;
            default: break;
        }
        PipeBarrier<PIPE_ALL>();
    });
}

extern "C" __global__ __aicore__ void sort_f32(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { SortCase<float>(p, a, b, d); }
extern "C" __global__ __aicore__ void sort_f16(GM_ADDR p, GM_ADDR a, GM_ADDR b, GM_ADDR d) { SortCase<half>(p, a, b, d); }

// bf16 unary math: the official headers reject it at compile time, the twin at run time.
#if defined(ASCEND_TWIN)
extern "C" __global__ __aicore__ void unary_bf16(GM_ADDR params, GM_ADDR a, GM_ADDR b, GM_ADDR d) {
    const Prm p = LoadPrm(params);
    WithRegions<bfloat16_t, bfloat16_t, bfloat16_t>(p, a, b, d, [&](auto& dst, auto& s0, auto&...) {
        if (p.op == 0) Exp<bfloat16_t>(dst, s0, (int32_t)p.count);
        else Ln<bfloat16_t>(dst, s0, (uint64_t)64, 1, UnaryRepeatParams());
    });
}
#endif
