// Pipe-hazard detector. On the NPU the pipes of a core (MTE1, MTE2, MTE3, M, V, FIX) run concurrently, ordered
// only by SetFlag/WaitFlag (also inside EnQue/DeQue/AllocTensor/FreeTensor) and PIPE_ALL barriers; the twin runs
// them one after another, so a missing flag would go unnoticed. Each pipe keeps a vector clock of what it is
// guaranteed to see of the others; every on-core read or write of an instruction is checked against the last
// writer and readers of the 32-byte blocks it touches. Unordered accesses (read-after-write, write-after-write,
// write-after-read between two pipes) raise an error naming both instructions.
// The clocks span every (core, pipe) of the launch, so the same check covers GM: cross-core flags (CrossCoreSetFlag on
// a pipe, CrossCoreWaitFlag, SyncAll) carry the setter's knowledge to the waiter, and DMA/Fixpipe accesses to GM are
// checked byte-exactly against the last writer and readers on any core (atomic adds may overlap each other).
// Not modelled: the scalar pipe (the compiler's auto-sync orders S against V/MTE2/MTE3 on the AIV; S cannot touch
// L1/L0; scalar GM accesses go through the data cache) and same-pipe ordering (pipes are in order).
#pragma once
#include <cstdlib>
#include <cstring>
#include <vector>

namespace twin {

constexpr int kHzPipes = 7;  // S, V, M, MTE1, MTE2, MTE3, FIX
constexpr uint32_t kHzBlock = 32;

inline int HzPipe(int pipe) {
    switch (pipe) {
        case PIPE_S: return 0;
        case PIPE_V: return 1;
        case PIPE_M: return 2;
        case PIPE_MTE1: return 3;
        case PIPE_MTE2: return 4;
        case PIPE_MTE3: return 5;
        case PIPE_FIX: return 6;
        default: return -1;
    }
}
inline const char* HzPipeName(int i) {
    static const char* n[] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"};
    return n[i];
}

struct HzBlock {
    const char* writer = nullptr;  // API of the last write
    uint32_t wclk = 0;             // clock of the last write on its pipe (0: never written)
    uint32_t rclk[kHzPipes] = {};  // clock of the last read by each pipe since that write
    int8_t wpipe = -1;
};

struct HzAccess {
    const char* api;  // nullptr: belongs to whichever instruction is traced next (GM writes noted by GmWrite)
    Mem mem;
    uint64_t off, bytes;  // GM: off is the host address
    bool write;
    bool atomic;
};

// Clock vectors have one slot per (core, pipe) of the launch: slot = core id * kHzPipes + pipe.
struct HazardState {
    bool on = true;
    int self = 0;                                             // this core's first slot
    std::vector<uint32_t> known[kHzPipes];                    // known[q][slot]: what pipe q has seen
    std::vector<uint32_t> snapshot[kNumHardEvents][kEventIds]; // knowledge carried by a pending SetFlag
    std::vector<HzBlock> shadow[(int)Mem::COUNT];
    std::vector<HzAccess> pending;

    void Init(int coreId, int cores) {
        self = coreId * kHzPipes;
        for (auto& k : known) k.assign((size_t)cores * kHzPipes, 0);
    }
    // Everything any pipe of this core has seen (what a PIPE_ALL barrier or a scalar-pipe wait publishes).
    std::vector<uint32_t> Merged() const {
        std::vector<uint32_t> m = known[0];
        for (int q = 1; q < kHzPipes; ++q)
            for (size_t i = 0; i < m.size(); ++i) m[i] = std::max(m[i], known[q][i]);
        return m;
    }
};

inline void MergeInto(std::vector<uint32_t>& dst, const std::vector<uint32_t>& src) {
    for (size_t i = 0; i < dst.size() && i < src.size(); ++i) dst[i] = std::max(dst[i], src[i]);
}

// Default for new launches: on unless NPU_TWIN_HAZARDS=0.
inline bool HazardsDefault() {
    const char* e = std::getenv("NPU_TWIN_HAZARDS");
    return !(e != nullptr && e[0] == '0');
}

}  // namespace twin
