// Copy: UB -> UB on the vector pipe with a mask, repeats and CopyRepeatParams (dav-2201: int16_t, uint16_t, half,
// bfloat16_t, int32_t, uint32_t, float; level 0 only). Block strides are uint16_t; repeat sizes must lie in
// [0, 4095] (32 B units). Normal mode selects elements like every vector instruction. Counter mode differs from the
// other vector APIs (documented for Copy): the count in the mask register is the number of elements of EACH repeat
// and repeatTime applies; a repeat then spans ceil(count * sizeof(T) / 32) blocks, possibly more than 8.
#pragma once
#include "twin/vector/more_common.h"

namespace AscendC {

struct CopyRepeatParams {
    CopyRepeatParams() {}
    CopyRepeatParams(const uint16_t dstStrideIn, const uint16_t srcStrideIn, uint16_t dstRepeatSizeIn,
                     uint16_t srcRepeatSizeIn)
        : dstStride(dstStrideIn), srcStride(srcStrideIn), dstRepeatSize(dstRepeatSizeIn),
          srcRepeatSize(srcRepeatSizeIn) {}
    // Defaults as in the official struct: block strides DEFAULT_DATA_COPY_STRIDE (0), repeat sizes 8.
    uint16_t dstStride = 0;
    uint16_t srcStride = 0;
    uint16_t dstRepeatSize = DEFAULT_REPEAT_STRIDE;
    uint16_t srcRepeatSize = DEFAULT_REPEAT_STRIDE;
};

}  // namespace AscendC

namespace twin {
namespace vec {

// Counter mode of Copy: `count` elements per repeat, `repeats` repeats.
inline uint64_t CopyCounterEnd(uint32_t size, uint32_t blk, uint32_t rep, uint64_t count, uint64_t repeats) {
    if (count == 0 || repeats == 0) return 0;
    const uint32_t epb = 32 / size;
    const uint64_t nb = (count + epb - 1) / epb;
    const uint64_t last = count - (nb - 1) * epb;  // elements in the last block
    const uint64_t inRep = blk == 0 ? std::min<uint64_t>(count, epb) * size : (nb - 1) * blk * 32ull + last * size;
    return (repeats - 1) * rep * 32ull + inRep;
}

template <typename T>
inline void CopyRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                    const Exec& x, uint64_t repeat, const AscendC::CopyRepeatParams& p) {
    if (p.dstRepeatSize > 4095 || p.srcRepeatSize > 4095) {
        Fail(api, "dstRepeatSize %u / srcRepeatSize %u outside [0, 4095]", p.dstRepeatSize, p.srcRepeatSize);
    }
    const Opd od = {dst.Ptr(), (uint32_t)sizeof(T), p.dstStride, p.dstRepeatSize};
    const Opd os = {src.Ptr(), (uint32_t)sizeof(T), p.srcStride, p.srcRepeatSize};
    if (!x.counter) {
        CheckOperand(api, "dst", dst, od, x);
        CheckOperand(api, "src", src, os, x);
        CheckDstBlkStride(api, "dstStride", od, x);
        CheckOverlap(api, "src", od, os, x, false);
        const Opd o[2] = {od, os};
        ForEachRun(o, x, sizeof(T), [](uint8_t* const* q, uint64_t n, uint64_t) {
            std::memmove(q[0], q[1], n * sizeof(T));
        });
        TraceV(api, x.Active(), x.Active() * 2 * sizeof(T), x.Repeats(), dst.Ptr(), src.Ptr());
        return;
    }
    // Counter mode: every repeat copies x.count elements, block by block.
    const uint64_t count = x.count;
    if (count > kMaxCounterCount) {
        Fail(api, "counter mode with an element count of %llu (mask register low word)", (unsigned long long)count);
    }
    constexpr uint32_t epb = 32 / sizeof(T);
    const uint64_t nb = (count + epb - 1) / epb;
    if (p.dstStride == 0 && nb > 1 && repeat > 0) {
        Fail(api, "dstStride = 0 with %llu elements per repeat (more than one block; undefined on the NPU)",
             (unsigned long long)count);
    }
    CheckSpanUB(api, "dst", dst, CopyCounterEnd(sizeof(T), p.dstStride, p.dstRepeatSize, count, repeat), true);
    CheckSpanUB(api, "src", src, CopyCounterEnd(sizeof(T), p.srcStride, p.srcRepeatSize, count, repeat), false);
    for (uint64_t r = 0; r < repeat; ++r) {
        uint8_t* d = dst.Ptr() + r * p.dstRepeatSize * 32ull;
        const uint8_t* s = src.Ptr() + r * p.srcRepeatSize * 32ull;
        for (uint64_t b = 0; b < nb; ++b) {
            const uint64_t n = std::min<uint64_t>(epb, count - b * epb);
            std::memmove(d + b * p.dstStride * 32ull, s + b * p.srcStride * 32ull, n * sizeof(T));
        }
    }
    TraceV(api, count * repeat, count * repeat * 2 * sizeof(T), repeat, dst.Ptr(), src.Ptr());
}

}  // namespace vec
}  // namespace twin

namespace AscendC {

#define TWIN_COPY_TYPES int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float

template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[], const uint8_t repeatTime,
                 const CopyRepeatParams& repeatParams) {
    static_assert(twin::vec::OneOf<T, TWIN_COPY_TYPES>, "Copy: data type not supported on dav-2201");
    const char* api = "Copy";
    twin::RequireAiv(api);
    const twin::vec::Exec x =
        twin::vec::MakeL0Exec(api, twin::vec::MaskArg::Bits(mask, isSetMask), 256 / sizeof(T), repeatTime);
    twin::vec::CopyRun(api, dst, src, x, repeatTime, repeatParams);
}

template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask, const uint8_t repeatTime,
                 const CopyRepeatParams& repeatParams) {
    static_assert(twin::vec::OneOf<T, TWIN_COPY_TYPES>, "Copy: data type not supported on dav-2201");
    const char* api = "Copy";
    twin::RequireAiv(api);
    const twin::vec::Exec x =
        twin::vec::MakeL0Exec(api, twin::vec::MaskArg::Len(mask, isSetMask), 256 / sizeof(T), repeatTime);
    twin::vec::CopyRun(api, dst, src, x, repeatTime, repeatParams);
}

#undef TWIN_COPY_TYPES

}  // namespace AscendC
