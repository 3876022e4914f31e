// The vector mask register of an AIV core (dav-2201): normal mode (a per-repeat bit mask, 128 bits) or counter
// mode (the low 64 bits are an element count for the whole instruction), and the APIs that set it.
// Register layout in CoreState::maskReg: [0] = low 64 bits (elements 0..63), [1] = high 64 bits (elements 64..127).
#pragma once
#include "twin/launch/runtime.h"

namespace AscendC {

constexpr uint64_t MASK_PLACEHOLDER_LIST[2] = {0, 0};

}  // namespace AscendC

namespace twin {
namespace vec {

constexpr uint64_t kFullMask = ~0ull;

inline void RegSet(uint64_t high, uint64_t low) {
    CoreState& c = Cur();
    c.maskReg[0] = low;
    c.maskReg[1] = high;
}

// Bit pattern that the "continuous" mask form writes for `len` leading elements (AscendCUtils::SetMask(len)):
// 64 -> low word full; >= 128 -> both words full; otherwise the first `len` bits. Independent of the element type
// for every length a repeat can hold.
inline void LenToBits(const char* api, int32_t len, uint64_t& high, uint64_t& low) {
    if (len < 0) Fail(api, "continuous mask %d is negative (undefined on the NPU)", len);
    if (len >= 128) {
        high = low = kFullMask;
    } else if (len == 64) {
        high = 0;
        low = kFullMask;
    } else if (len > 64) {
        high = (1ull << (len - 64)) - 1;
        low = kFullMask;
    } else {
        high = 0;
        low = (1ull << len) - 1;
    }
}

// Count forms (level 2) finish with normal mode and an all-ones mask, as the real implementation does.
inline void RestoreNormalFullMask() {
    CoreState& c = Cur();
    c.counterMode = false;
    c.maskReg[0] = c.maskReg[1] = kFullMask;
}

}  // namespace vec
}  // namespace twin

namespace AscendC {

// Mask state APIs. On the cube core the real implementation guards them with ASCEND_IS_NOT_AIC, so they are
// no-ops there (not errors).
inline void SetMaskCount() {
    if (twin::Cur().coreType != AIV) return;
    twin::Cur().counterMode = true;
}

inline void SetMaskNorm() {
    if (twin::Cur().coreType != AIV) return;
    twin::Cur().counterMode = false;
}

inline void ResetMask() {
    if (twin::Cur().coreType != AIV) return;
    twin::vec::RegSet(twin::vec::kFullMask, twin::vec::kFullMask);
}

// Writes the register as given: a bit mask in normal mode; in counter mode maskLow is the element count.
template <typename T, MaskMode mode = MaskMode::NORMAL>
static inline void SetVectorMask(const uint64_t maskHigh, const uint64_t maskLow) {
    if (twin::Cur().coreType != AIV) return;
    twin::vec::RegSet(maskHigh, maskLow);
}

// NORMAL: the first `len` elements of every repeat; COUNTER: `len` elements in total. The mode of the register
// itself is only changed by SetMaskCount / SetMaskNorm.
template <typename T, MaskMode mode = MaskMode::NORMAL>
static inline void SetVectorMask(int32_t len) {
    if (twin::Cur().coreType != AIV) return;
    if constexpr (mode == MaskMode::COUNTER) {
        if (len < 0) twin::Fail("SetVectorMask<COUNTER>", "element count %d is negative", len);
        twin::vec::RegSet(0, (uint64_t)len);
    } else {
        uint64_t hi, lo;
        twin::vec::LenToBits("SetVectorMask", len, hi, lo);
        twin::vec::RegSet(hi, lo);
    }
}

}  // namespace AscendC
