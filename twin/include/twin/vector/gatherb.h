// Gatherb (dav-2201; T: uint16_t, uint32_t): block-granular gather. Repeat r copies 8 blocks of 32 B; block j is
// read from src + offset[r * 8 + j] (a byte offset from src's start) and written at
//     dst + r * dstRepStride * 32 + j * dstBlkStride * 32      (dstBlkStride 0 counts as 1).
// The mask is not used; the implementation resets the mask register to all ones first, as the twin does.
// Strict twin: every offset must be 32 B aligned and its block must lie inside src, and dst must not overlap the
// gathered blocks (the page forbids src and dst in the same memory).
#pragma once
#include "twin/vector/more_common.h"

namespace AscendC {

struct GatherRepeatParams {
    GatherRepeatParams() {}
    GatherRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t dstRepStrideIn)
        : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}
    // Only dstBlkStride and dstRepStride are used; the other fields are reserved by the API.
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

template <typename T>
inline void Gatherb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& offset,
                    const uint8_t repeatTime, const GatherRepeatParams& repeatParams) {
    const char* api = "Gatherb";
    twin::RequireAiv(api);
    if (!twin::vec::OneOf<T, uint16_t, uint32_t>) {
        twin::Fail(api, "data type of %zu bytes is not supported on dav-2201 (uint16_t, uint32_t only)", sizeof(T));
    }
    twin::vec::RegSet(twin::vec::kFullMask, twin::vec::kFullMask);
    const uint64_t R = repeatTime, blocks = R * 8;
    const uint64_t blk = repeatParams.dstBlkStride == 0 ? 1 : repeatParams.dstBlkStride;
    const uint64_t rep = repeatParams.dstRepStride;
    const uint64_t dstEnd = R == 0 ? 0 : ((R - 1) * rep + 7 * blk + 1) * 32;
    twin::vec::CheckSpanUB(api, "dst", dst, dstEnd, true);
    twin::vec::CheckSpanUB(api, "offset", offset, blocks * 4, false);
    twin::vec::CheckSpanUB(api, "src", src, 0, false);
    const uint32_t* off = reinterpret_cast<const uint32_t*>(offset.Ptr());
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint64_t i = 0; i < blocks; ++i) {
        if (off[i] % 32 != 0) {
            twin::Fail(api, "offset[%llu] = %u bytes is not a multiple of 32 (the gathered block must be 32 B aligned)",
                       (unsigned long long)i, off[i]);
        }
        if ((uint64_t)off[i] + 32 > src.GetLength()) {
            twin::Fail(api, "offset[%llu] = %u bytes: the block reaches past the src tensor's %u bytes",
                       (unsigned long long)i, off[i], src.GetLength());
        }
        lo = std::min<uint64_t>(lo, off[i]);
        hi = std::max<uint64_t>(hi, off[i] + 32ull);
    }
    if (blocks > 0) {
        if (twin::vec::Overlaps(dst.Ptr(), dstEnd, src.Ptr() + lo, hi - lo)) {
            twin::Fail(api, "dst overlaps the gathered src bytes (src and dst must not share memory)");
        }
        twin::NoteAccess(api, twin::Mem::UB, src.Addr(api) + lo, hi - lo, false);
    }
    std::vector<uint8_t> vals(blocks * 32);  // sources are read before any write
    for (uint64_t i = 0; i < blocks; ++i) std::memcpy(&vals[i * 32], src.Ptr() + off[i], 32);
    for (uint64_t i = 0; i < blocks; ++i) {
        std::memcpy(dst.Ptr() + ((i / 8) * rep + (i % 8) * blk) * 32, &vals[i * 32], 32);
    }
    twin::vec::TraceV(api, blocks * 32 / sizeof(T), blocks * 68, R, dst.Ptr(), src.Ptr());
}

}  // namespace AscendC
