// Per-chip facts shared by the tiling (op_host) and the CPU twin (twin/), neither of which includes the other: core
// counts, on-core buffer sizes, clocks and bandwidths of the dav-2201 parts. Sources: shared/research/ascendc_api_and_chips.md §9 (confidence there).
#pragma once
#include <cstdint>
#include <cstring>

namespace npu_fa {

struct ChipSpec {
    const char* name;
    uint32_t aicNum;            // cube cores = AI cores
    uint32_t aivNum;            // vector cores (2 per AI core on split parts)
    uint32_t ubSize;            // bytes per AIV, nominal
    uint32_t l1Size;            // bytes per AIC, nominal
    uint32_t l0aSize, l0bSize, l0cSize, btSize, fbSize;
    uint64_t l2Size, hbmSize;
    double cubeFreqMHz;
    double hbmGBps;             // whole-chip HBM bandwidth (low confidence for some parts)
    uint32_t hbmBytesPerCycle;  // per core, from the .ini [AICoreMemoryRates]
    uint32_t l2BytesPerCycle;
};

// Buffer reserves that make the usable size smaller than the nominal one.
// Top 8 KB of UB: scratch of Select & co. (TMP_UB_OFFSET = 184 KB); it also covers the 256 B CV-fusion message
// area at the very top (ASC_UB_SIZE = 192 KB - 256).
constexpr uint32_t kUbAscReserved = 8 * 1024;
constexpr uint32_t kL1MixReserved = 256;       // ASC_L1_SIZE = 512 KB - 256
// GM the Ascend C library reserves at the start of an op's workspace on dav-2201 (GetLibApiWorkSpaceSize(); the
// kernel's GetUserWorkspace skips it).
constexpr uint64_t kLibApiWorkspaceBytes = 16ull * 1024 * 1024;

inline constexpr ChipSpec kChips[] = {
    {"Ascend910B1", 24, 48, 196608, 524288, 65536, 65536, 131072, 1024, 2048, 201326592ull, 68719476736ull, 1850.0, 1600.0, 32, 110},
    {"Ascend910B2", 24, 48, 196608, 524288, 65536, 65536, 131072, 1024, 2048, 201326592ull, 68719476736ull, 1800.0, 1600.0, 32, 110},
    {"Ascend910B3", 20, 40, 196608, 524288, 65536, 65536, 131072, 1024, 2048, 201326592ull, 68719476736ull, 1800.0, 1600.0, 32, 110},
    {"Ascend910B4", 20, 40, 196608, 524288, 65536, 65536, 131072, 1024, 2048, 100663296ull, 34359738368ull, 1500.0, 800.0, 32, 110},
    {"Ascend910_93", 24, 48, 196608, 524288, 65536, 65536, 131072, 1024, 2048, 201326592ull, 68719476736ull, 1800.0, 1600.0, 32, 110},
};
inline constexpr uint32_t kNumChips = sizeof(kChips) / sizeof(kChips[0]);
inline constexpr const char* kDefaultChip = "Ascend910B2";

inline const ChipSpec* FindChip(const char* name) {
    for (uint32_t i = 0; i < kNumChips; ++i) {
        if (std::strcmp(kChips[i].name, name) == 0) return &kChips[i];
    }
    return nullptr;
}

// What a kernel may allocate with TPipe: UB less the Ascend C reserve, L1 less the CV message area.
inline uint32_t UsableUb(const ChipSpec& c) { return c.ubSize - kUbAscReserved; }
inline uint32_t UsableL1(const ChipSpec& c) { return c.l1Size - kL1MixReserved; }

}  // namespace npu_fa
