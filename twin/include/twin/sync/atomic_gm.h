// Writes to GM from UB/L1 (MTE3) or L0C (Fixpipe): a plain copy, or an element-wise add / max / min when an atomic
// mode (SetAtomicAdd / SetAtomicMax / SetAtomicMin / SetAtomicType) is active. Atomic writes from concurrent cores
// are serialised so accumulation is exact up to floating-point order.
#pragma once
#include "twin/sync/dcache.h"
#include "twin/sync/sync.h"

namespace twin {

// One atomic step on GM value g with source value s. Floats compare as float; a NaN operand gives NaN (the
// INF/NAN mode of the dav-2201 atomic boundary-value tables); +0 ranks above -0.
template <typename E>
inline E AtomicCombine(int op, E g, E s) {
    if constexpr (!std::is_integral<E>::value) {
        const float a = (float)g, b = (float)s;
        if (op == kAtomicAdd) return E(a + b);
        if (a != a) return g;
        if (b != b) return s;
        if (a == b) return (std::signbit(a) == (op == kAtomicMax)) ? s : g;
        return ((a < b) == (op == kAtomicMax)) ? s : g;
    } else {
        if (op == kAtomicAdd) return (E)(g + s);
        return ((g < s) == (op == kAtomicMax)) ? s : g;
    }
}

template <typename E>
inline void AtomicInto(int op, uint8_t* dst, const uint8_t* src, uint64_t bytes) {
    for (uint64_t i = 0; i + sizeof(E) <= bytes; i += sizeof(E)) {
        E g, s;
        std::memcpy(&g, dst + i, sizeof(E));
        std::memcpy(&s, src + i, sizeof(E));
        const E r = AtomicCombine<E>(op, g, s);
        std::memcpy(dst + i, &r, sizeof(E));
    }
}

// T is the element type of the copy; the atomic type set by the atomic APIs decides how bytes are combined.
template <typename T>
inline void GmWrite(uint8_t* dst, const uint8_t* src, uint64_t bytes) {
    CoreState& c = Cur();
    DcacheOnDmaWrite(dst, bytes);
    if (c.atomicKind == kAtomicNone) {
        // A plain write that leaves every byte as it was cannot depend on its order against other accesses (several
        // cores storing the same values, e.g. a shared constant): the hazard check only sees writes that change GM.
        // Compare and copy under one lock: the cores run as concurrent threads, and two cores storing the same new
        // bytes must not both see the old ones (then both would count as writes, a race reported by timing).
        std::lock_guard<std::mutex> g(c.launch->gmWriteMu);
        if (c.hz.on && std::memcmp(dst, src, bytes) != 0) NoteGm(nullptr, dst, bytes, true, false);
        std::memcpy(dst, src, bytes);
        return;
    }
    NoteGm(nullptr, dst, bytes, true, true);
    std::lock_guard<std::mutex> g(c.launch->atomicMu);
    switch (c.atomicKind) {
        case kAtomicF32: AtomicInto<float>(c.atomicOp, dst, src, bytes); break;
        case kAtomicF16: AtomicInto<half>(c.atomicOp, dst, src, bytes); break;
        case kAtomicBf16: AtomicInto<bfloat16_t>(c.atomicOp, dst, src, bytes); break;
        case kAtomicS32: AtomicInto<int32_t>(c.atomicOp, dst, src, bytes); break;
        case kAtomicS16: AtomicInto<int16_t>(c.atomicOp, dst, src, bytes); break;
        case kAtomicS8: AtomicInto<int8_t>(c.atomicOp, dst, src, bytes); break;
        default: Fail("GM write", "unknown atomic mode %d", c.atomicKind);
    }
}

}  // namespace twin
