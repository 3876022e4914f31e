// Per-core register state kept outside CoreState (the sort and reduction special registers VMS4_SR, MAX_MIN_CNT,
// ACC_VAL): one value per thread, reset to S{} whenever the thread starts running another core, as
// mem_allocator.h does for its counters (every launch runs its cores on fresh threads).
#pragma once
#include "twin/launch/runtime.h"

namespace twin {
namespace vec {

template <class S>
inline S& CoreLocal() {
    struct Slot {
        const CoreState* core = nullptr;
        const LaunchState* launch = nullptr;
        S value{};
    };
    static thread_local Slot slot;
    CoreState& c = Cur();
    if (slot.core != &c || slot.launch != c.launch) slot = Slot{&c, c.launch, S{}};
    return slot.value;
}

}  // namespace vec
}  // namespace twin
