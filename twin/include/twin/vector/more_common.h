// Helpers shared by the vector APIs added on top of the engine (copy.h, index.h, fused.h,
// bitwise.h, cmpmask.h): checks of operands whose footprint is not an Exec selection, overlap tests,
// and element kernels over operands of different types (compute in float for half, in double for the fused
// multiply-add family so that the product is exact and the sum is rounded once more at most).
#pragma once
#include "twin/vector/engine.h"
#include "twin/vector/ops.h"

namespace twin {
namespace vec {

// UB position, alignment and a byte footprint [0, end) of one operand; notes the access for the hazard detector.
template <typename T>
inline void CheckSpanUB(const char* api, const char* name, const AscendC::LocalTensor<T>& t, uint64_t end,
                        bool write, uint32_t align = 32) {
    if (!t.Valid()) Fail(api, "%s tensor is not allocated", name);
    if (t.Phys() != Mem::UB) {
        Fail(api, "%s must be in UB (VECIN/VECOUT/VECCALC), got position %s", name, PositionName(t.Pos()));
    }
    const uint64_t a = t.Addr(api);
    if (a % align != 0) Fail(api, "%s address %llu in UB is not %u-byte aligned", name, (unsigned long long)a, align);
    if (end > t.GetLength()) {
        Fail(api, "%s: the instruction reaches byte %llu but the tensor has %u bytes", name, (unsigned long long)end,
             t.GetLength());
    }
    NoteAccess(api, Mem::UB, a, end, write);
}

// Two operands' byte ranges [p, p + a) and [q, q + b) intersect.
inline bool Overlaps(const uint8_t* p, uint64_t a, const uint8_t* q, uint64_t b) {
    return a != 0 && b != 0 && p < q + b && q < p + a;
}

// Element kernel over n contiguous elements of dst (TD) and up to two sources (TA, TB): r = f(d, a, b) on the
// compute types; the last chunk is computed at full width like the engine's kernels.
template <typename TD, typename TA, typename TB, class F>
inline void RunMixed(TD* d, const TA* a, const TB* b, uint64_t n, F f) {
    using LD = Lane<TD>;
    using LA = Lane<TA>;
    using LB = Lane<TB>;
    alignas(64) typename LD::C xd[kChunk] = {}, xr[kChunk];
    alignas(64) typename LA::C xa[kChunk] = {};
    alignas(64) typename LB::C xb[kChunk] = {};
    for (uint64_t i = 0; i < n; i += kChunk) {
        const uint32_t m = (uint32_t)std::min<uint64_t>(kChunk, n - i);
        LD::Load(xd, d + i, m);
        if (a != nullptr) LA::Load(xa, a + i, m);
        if (b != nullptr) LB::Load(xb, b + i, m);
        for (uint32_t j = 0; j < kChunk; ++j) xr[j] = f(xd[j], xa[j], xb[j]);
        LD::Store(d + i, xr, m);
    }
}

// x * y + z with one rounding to float (the product of two floats is exact in double).
inline float MulAddOnce(float x, float y, float z) { return (float)((double)x * (double)y + (double)z); }

}  // namespace vec
}  // namespace twin
