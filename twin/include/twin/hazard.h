// Pipe-hazard detector. On the NPU the pipes of a core (MTE1, MTE2, MTE3, M, V, FIX) run concurrently, ordered
// only by SetFlag/WaitFlag (also inside EnQue/DeQue/AllocTensor/FreeTensor) and PIPE_ALL barriers; the twin runs
// them one after another, so a missing flag would go unnoticed. Each pipe keeps a vector clock of what it is
// guaranteed to see of the others; every on-core read or write of an instruction is checked against the last
// writer and readers of the 32-byte blocks it touches. Unordered accesses (read-after-write, write-after-write,
// write-after-read between two pipes) raise an error naming both instructions.
// Not modelled: the scalar pipe (the compiler's auto-sync orders S against V/MTE2/MTE3 on the AIV; S cannot touch
// L1/L0), GM (ordered across cores by cross-core flags), and same-pipe ordering (pipes are in order).
#pragma once
#include <cstdlib>
#include <cstring>

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
    const char* api;
    Mem mem;
    uint64_t off, bytes;
    bool write;
};

struct HazardState {
    bool on = true;
    uint32_t clock[kHzPipes] = {};
    uint32_t known[kHzPipes][kHzPipes] = {};  // known[q][p]: pipe q has seen pipe p up to this clock
    uint32_t snapshot[kNumHardEvents][kEventIds][kHzPipes] = {};
    std::vector<HzBlock> shadow[(int)Mem::COUNT];
    std::vector<HzAccess> pending;
};

// Default for new launches: on unless NPU_TWIN_HAZARDS=0.
inline bool HazardsDefault() {
    const char* e = std::getenv("NPU_TWIN_HAZARDS");
    return !(e != nullptr && e[0] == '0');
}

}  // namespace twin
