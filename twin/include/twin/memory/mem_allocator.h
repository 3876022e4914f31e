// Static-tensor programming without TPipe: the Hardware enum, LocalMemAllocator<hard> (a bump allocator of
// LocalTensors at explicit addresses, starting at 0 on dav-2201) and InitSocState(), which resets the core state
// a previous operator may have left behind (atomic mode, mask mode and mask).
// Twin checks: one live allocator per Hardware per core, no mixing with a live TPipe, the LocalTensor address
// rules (32 B aligned, 32 B multiple, inside the physical buffer) and that the core owns the memory.
#pragma once
#include <type_traits>

#include "twin/memory/pipe.h"

namespace AscendC {

// Physical buffers, with the values of the real headers.
enum class Hardware : uint8_t { GM, UB, L1, L0A, L0B, L0C, BIAS, FIXBUF, MAX };

}  // namespace AscendC

namespace twin {

constexpr AscendC::Hardware HardwareOf(AscendC::TPosition p) {
    using AscendC::Hardware;
    using AscendC::TPosition;
    return (p == TPosition::GM) ? Hardware::GM
         : (p == TPosition::VECIN || p == TPosition::VECOUT || p == TPosition::VECCALC) ? Hardware::UB
         : (p == TPosition::A1 || p == TPosition::B1 || p == TPosition::C1 || p == TPosition::TSCM || p == TPosition::SHM) ? Hardware::L1
         : (p == TPosition::A2) ? Hardware::L0A
         : (p == TPosition::B2) ? Hardware::L0B
         : (p == TPosition::CO1) ? Hardware::L0C
         : (p == TPosition::C2) ? Hardware::BIAS
         : (p == TPosition::C2PIPE2GM) ? Hardware::FIXBUF
         : Hardware::MAX;
}

// The logical position LocalMemAllocator gives a tensor when Alloc names none.
constexpr AscendC::TPosition DefaultPosition(AscendC::Hardware h) {
    using AscendC::Hardware;
    using AscendC::TPosition;
    return (h == Hardware::UB) ? TPosition::VECCALC
         : (h == Hardware::L1) ? TPosition::A1
         : (h == Hardware::L0A) ? TPosition::A2
         : (h == Hardware::L0B) ? TPosition::B2
         : (h == Hardware::L0C) ? TPosition::CO1
         : (h == Hardware::BIAS) ? TPosition::C2
         : (h == Hardware::FIXBUF) ? TPosition::C2PIPE2GM
         : TPosition::MAX;
}

inline const char* HardwareName(AscendC::Hardware h) {
    static const char* n[] = {"GM", "UB", "L1", "L0A", "L0B", "L0C", "BIAS", "FIXBUF", "MAX"};
    return n[(int)h];
}

// Live LocalMemAllocators per Hardware of the core this thread runs (reset when the thread moves to another core).
struct AllocatorCount {
    const CoreState* core = nullptr;
    int live[(int)AscendC::Hardware::MAX + 1] = {};
};
inline thread_local AllocatorCount tAllocators;

inline int& LiveAllocators(AscendC::Hardware h) {
    CoreState* c = &Cur();
    if (tAllocators.core != c) tAllocators = AllocatorCount{c, {}};
    return tAllocators.live[(int)h];
}

}  // namespace twin

namespace AscendC {

template <Hardware hard = Hardware::UB>
class LocalMemAllocator {
    static_assert(hard != Hardware::GM && hard != Hardware::MAX, "LocalMemAllocator: illegal hardware position GM or MAX");

public:
    LocalMemAllocator() {
        const char* api = "LocalMemAllocator";
        if (twin::Cur().pipe != nullptr) {
            twin::Fail(api, "a TPipe is live on this core; LocalMemAllocator (static tensor programming) cannot be mixed with TPipe");
        }
        int& live = twin::LiveAllocators(hard);
        if (live != 0) {
            twin::Fail(api, "a LocalMemAllocator<Hardware::%s> already exists on this core (only one per hardware position)",
                       twin::HardwareName(hard));
        }
        ++live;
        core_ = twin::tCore;
    }
    ~LocalMemAllocator() {
        if (twin::tCore != nullptr && twin::tCore == core_) --twin::LiveAllocators(hard);
    }
    LocalMemAllocator(const LocalMemAllocator&) = delete;
    LocalMemAllocator& operator=(const LocalMemAllocator&) = delete;

    uint32_t GetCurAddr() const { return head_; }

    template <TPosition pos, class DataType, uint32_t tileSize>
    LocalTensor<DataType> Alloc() {
        static_assert(twin::HardwareOf(pos) == hard, "LocalMemAllocator::Alloc: logic pos and hardware pos not matched");
        return Make<DataType>(pos, tileSize);
    }
    template <TPosition pos, class DataType>
    LocalTensor<DataType> Alloc(uint32_t tileSize) {
        static_assert(twin::HardwareOf(pos) == hard, "LocalMemAllocator::Alloc: logic pos and hardware pos not matched");
        return Make<DataType>(pos, tileSize);
    }
    template <class DataType, uint32_t tileSize>
    LocalTensor<DataType> Alloc() {
        return Make<DataType>(twin::DefaultPosition(hard), tileSize);
    }
    template <class DataType>
    LocalTensor<DataType> Alloc(uint32_t tileSize) {
        return Make<DataType>(twin::DefaultPosition(hard), tileSize);
    }

private:
    template <class DataType>
    LocalTensor<DataType> Make(TPosition pos, uint32_t tileSize) {
        static_assert(std::is_trivially_copyable<DataType>::value, "LocalMemAllocator::Alloc: DataType must be a basic type");
        if (twin::Cur().pipe != nullptr) {
            twin::Fail("LocalMemAllocator::Alloc", "a TPipe is live on this core; LocalMemAllocator cannot be mixed with TPipe");
        }
        LocalTensor<DataType> t(pos, head_, tileSize);  // checks alignment, size and capacity
        head_ += (uint32_t)((uint64_t)tileSize * sizeof(DataType));
        return t;
    }
    uint32_t head_ = 0;  // GetDynamicMemStartPos() is 0 on dav-2201
    twin::CoreState* core_ = nullptr;
};

// Resets what a previous operator may have left: atomic accumulation off, normal mask mode, and on the AIV a full
// mask. (The AIC's LoadData padding value and L1 3D size have no twin state.)
inline void InitSocState() {
    twin::CoreState& c = twin::Cur();
    c.atomicKind = twin::kAtomicNone;
    c.counterMode = false;
    if (c.coreType == AIV) {
        c.maskReg[0] = ~0ull;
        c.maskReg[1] = ~0ull;
    }
    twin::Trace("InitSocState", PIPE_S, 0, 0, 0, nullptr, nullptr);
}

}  // namespace AscendC
