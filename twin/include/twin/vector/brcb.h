// Brcb: every repeat takes 8 consecutive source elements and fills one 32 B destination block with each.
// BrcbRepeatParams' constructor takes (dstBlkStride, dstRepStride) although the members are declared the other way
// round. The source is read contiguously (no strides); dstBlkStride 0 and src/dst overlap are undefined on the NPU
// (the twin refuses them). Like the real implementation, Brcb resets the mask register to all ones.
#pragma once
#include "twin/vector/engine.h"

namespace AscendC {

struct BrcbRepeatParams {
    BrcbRepeatParams() {}
    BrcbRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
        : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

template <typename T>
inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint8_t repeatTime,
                 const BrcbRepeatParams& repeatParams) {
    static_assert(twin::vec::OneOf<T, int16_t, uint16_t, int32_t, uint32_t, half, bfloat16_t, float>,
                  "Brcb: data type not supported on dav-2201");
    const char* api = "Brcb";
    twin::RequireAiv(api);
    twin::vec::RegSet(twin::vec::kFullMask, twin::vec::kFullMask);
    const uint32_t R = repeatTime;
    const uint32_t blk = repeatParams.dstBlkStride, rep = repeatParams.dstRepStride;
    for (const LocalTensor<T>* t : {&dst, &src}) {
        const char* name = t == &dst ? "dst" : "src";
        if (!t->Valid()) twin::Fail(api, "%s tensor is not allocated", name);
        if (t->Phys() != twin::Mem::UB) twin::Fail(api, "%s must be in UB, got position %s", name, twin::PositionName(t->Pos()));
        twin::CheckAlign(api, name, *t, 32);
    }
    if (R == 0) {
        twin::vec::TraceV(api, 0, 0, 0, dst.Ptr(), src.Ptr());
        return;
    }
    if (blk == 0) twin::Fail(api, "dstBlkStride = 0 is undefined on the NPU");
    const uint64_t srcEnd = (uint64_t)R * 8 * sizeof(T);
    const uint64_t dstEnd = ((uint64_t)(R - 1) * rep + 7ull * blk) * 32 + 32;
    if (srcEnd > src.GetLength()) {
        twin::Fail(api, "src: %u repeats read %llu bytes but the tensor has %u bytes", R, (unsigned long long)srcEnd,
                   src.GetLength());
    }
    if (dstEnd > dst.GetLength()) {
        twin::Fail(api, "dst: %u repeats (dstBlkStride %u, dstRepStride %u) reach byte %llu but the tensor has %u bytes",
                   R, blk, rep, (unsigned long long)dstEnd, dst.GetLength());
    }
    const uint8_t* s0 = src.Ptr();
    const uint8_t* d0 = dst.Ptr();
    if (s0 < d0 + dstEnd && d0 < s0 + srcEnd) twin::Fail(api, "src and dst overlap (not supported by Brcb)");
    constexpr uint32_t epb = 32 / sizeof(T);
    const T* s = reinterpret_cast<const T*>(s0);
    for (uint32_t r = 0; r < R && twin::Computing(); ++r) {
        for (uint32_t j = 0; j < 8; ++j) {
            T* d = reinterpret_cast<T*>(dst.Ptr() + ((uint64_t)r * rep + (uint64_t)j * blk) * 32);
            const T v = s[r * 8 + j];
            for (uint32_t e = 0; e < epb; ++e) d[e] = v;
        }
    }
    twin::vec::TraceV(api, (uint64_t)R * 8 * epb, (uint64_t)R * 8 * (sizeof(T) + 32), R, dst.Ptr(), src.Ptr());
}

}  // namespace AscendC
