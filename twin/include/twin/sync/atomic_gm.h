// Writes to GM from UB (MTE3) or L0C (Fixpipe): a plain copy, or an element-wise add when SetAtomicAdd<T> is
// active. Adds from concurrent cores are serialised so accumulation is exact up to floating-point order.
#pragma once
#include "twin/sync/sync.h"

namespace twin {

template <typename E>
inline void AddInto(uint8_t* dst, const uint8_t* src, uint64_t bytes) {
    for (uint64_t i = 0; i + sizeof(E) <= bytes; i += sizeof(E)) {
        E a, b;
        std::memcpy(&a, dst + i, sizeof(E));
        std::memcpy(&b, src + i, sizeof(E));
        E r = E((float)a + (float)b);
        std::memcpy(dst + i, &r, sizeof(E));
    }
}

template <typename E>
inline void AddIntoInt(uint8_t* dst, const uint8_t* src, uint64_t bytes) {
    for (uint64_t i = 0; i + sizeof(E) <= bytes; i += sizeof(E)) {
        E a, b;
        std::memcpy(&a, dst + i, sizeof(E));
        std::memcpy(&b, src + i, sizeof(E));
        E r = (E)(a + b);
        std::memcpy(dst + i, &r, sizeof(E));
    }
}

// T is the element type of the copy; the atomic type set by SetAtomicAdd decides how bytes are added.
template <typename T>
inline void GmWrite(uint8_t* dst, const uint8_t* src, uint64_t bytes) {
    CoreState& c = Cur();
    if (c.atomicKind == kAtomicNone) {
        // A plain write that leaves every byte as it was cannot depend on its order against other accesses (several
        // cores storing the same values, e.g. a shared constant): the hazard check only sees writes that change GM.
        if (std::memcmp(dst, src, bytes) != 0) NoteGm(nullptr, dst, bytes, true, false);
        std::memcpy(dst, src, bytes);
        return;
    }
    NoteGm(nullptr, dst, bytes, true, true);
    std::lock_guard<std::mutex> g(c.launch->atomicMu);
    switch (c.atomicKind) {
        case kAtomicAddF32: AddInto<float>(dst, src, bytes); break;
        case kAtomicAddF16: AddInto<half>(dst, src, bytes); break;
        case kAtomicAddBf16: AddInto<bfloat16_t>(dst, src, bytes); break;
        case kAtomicAddS32: AddIntoInt<int32_t>(dst, src, bytes); break;
        case kAtomicAddS16: AddIntoInt<int16_t>(dst, src, bytes); break;
        default: Fail("GM write", "unknown atomic mode %d", c.atomicKind);
    }
}

}  // namespace twin
