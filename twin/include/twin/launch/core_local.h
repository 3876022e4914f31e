// Per-core state of API units whose types CoreState cannot name (the special registers of the sort, reduction and
// cube data-movement units): one value of each type S per core, created zeroed on first use, living as long as the
// core's launch (CoreState::unitState).
#pragma once
#include "twin/launch/runtime.h"

namespace twin {

template <class S>
inline S& CoreLocal() {
    static const char key = 0;  // one address per S
    std::shared_ptr<void>& p = Cur().unitState[&key];
    if (!p) p = std::make_shared<S>();
    return *static_cast<S*>(p.get());
}

}  // namespace twin
