// Poison: what on-core memory (L1, L0A/B/C, UB, BiasTable, Fixpipe Buffer) holds when a launch starts. On the NPU
// these keep whatever an earlier kernel left there (possibly NaN); a kernel must not depend on it. The twin fills
// them with 0xFF bytes, a NaN in half (0xFFFF), bfloat16_t (0xFFFF) and float (0xFFFFFFFF). Its signature, an
// all-ones exponent and the top 7 mantissa bits all ones (either sign), survives the twin's arithmetic (x86 returns a
// NaN operand's payload) and its casts (half/bfloat16_t <-> float keep the top payload bits, as F16C does:
// 0xFFFF half -> 0xFFFFE000 float -> 0xFFFF half), while NaNs computed from data never carry it (x86's default NaN
// 0xFFC00000, std::nan 0x7FC00000, half 0x7E00, bfloat16_t 0x7FC0).
//
// The rule (poison_store.h): a poison value that a launch leaves in GM is reported. Storing redundant data is legal
// (programming guide, 非对齐场景: "带着冗余数据搬出", overwritten later or beyond what the host reads), and so is
// padding that only fills fractals (Mmad page: invalid data of a partial fractal takes no part in the computation),
// so the twin notes the poison a store writes to GM, forgets what later stores overwrite, and reports what is left
// at the launch end: a TwinWarning, since only the host knows which bytes it reads; the op's launches, whose
// outputs are read whole, turn it into a TwinError. The workspace buffer is exempt (scratch: poison read back from
// it is caught where it is stored again).
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>

#include "twin/launch/core_types.h"

namespace twin {

constexpr uint8_t kPoisonByte = 0xFF;  // the launch fill (launch.h AllocCoreMemory, memory/core_mem.h ProvideMem)

// True for T's poison signature (half, bfloat16_t, float; other types carry none).
template <typename T>
inline bool IsPoison(const uint8_t* p) {
    if constexpr (std::is_same<T, float>::value) {
        uint32_t w;
        std::memcpy(&w, p, 4);
        return (w & 0x7FFF0000u) == 0x7FFF0000u;
    } else if constexpr (std::is_same<T, half>::value || std::is_same<T, bfloat16_t>::value) {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return (h & (std::is_same<T, half>::value ? 0x7FF8u : 0x7FFFu)) == (std::is_same<T, half>::value ? 0x7FF8u : 0x7FFFu);
    } else {
        return false;
    }
}

template <typename T>
constexpr bool CarriesPoison() {
    return std::is_same<T, float>::value || std::is_same<T, half>::value || std::is_same<T, bfloat16_t>::value;
}

// GM ranges holding poison that stores of the current launch left there, with the first store's details.
struct PoisonLedger {
    struct Entry {
        uint64_t end;
        uint64_t seq;     // store order: the earliest is reported
        int32_t core;
        const char* api;
        uint64_t srcOff;  // byte offset of the store's source in its memory
        uint64_t elem;    // the poison's element index in the store
        int8_t srcMem;    // Mem of the source
        uint32_t bits;    // the first poison value (as stored)
        uint8_t size;     // its element size
    };
    bool on = false;  // the launch fills with poison and NPU_TWIN_POISON_CHECK is not 0
    std::mutex mu;
    std::atomic<size_t> count{0};  // entries in `left` (read unlocked by the fast path)
    std::map<uint64_t, Entry> left;  // by begin address, disjoint
    uint64_t seq = 0;
    // A GM -> on-core load outside the workspace brought the signature in (user data that happens to carry it): the
    // launch's poison is then not told apart from the data, and nothing is reported.
    std::atomic<bool> dataHasPattern{false};
};

}  // namespace twin
