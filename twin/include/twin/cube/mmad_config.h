// Mmad configuration (CTRL register bits; Mmad计算辅助配置接口/*.md, Mmad计算关键特性说明/HF32.md):
//   SetHF32Mode       float x float Mmads round L0A/L0B values to HF32 first (8 exponent bits and 11 mantissa bits on
//                     dav-2201: HF32.md gives 10 only for Ascend 950, CANN's ATC --allow_hf32 page gives 11);
//   SetHF32TransMode  that rounding: NEAREST_EVEN (default) or NEAREST_ZERO, which the page describes as rounding to
//                     nearest "towards zero", i.e. ties go to the value nearer zero (SetHF32TransMode.md; the
//                     high-level Matmul SetHF32 page says ties away from zero for its transMode 1: the twin follows
//                     the basic API's own page);
//   SetMMRowMajor / SetMMColumnMajor / SetMMLayoutTransform (deprecated)  the order in which the cube produces the
//                     fractals of C: it changes timing only, so the twin records it and computes as before.
// Each core starts a launch with HF32 off, NEAREST_EVEN and column-major order.
#pragma once
#include <cstring>

#include "twin/launch/core_local.h"

namespace AscendC {

enum class HF32Mode { ENABLE, DISABLE };
enum class HF32TransMode { NEAREST_ZERO, NEAREST_EVEN };

}  // namespace AscendC

namespace twin {

struct MmadCtrl {
    bool hf32 = false;
    bool hf32TowardZero = false;
    bool rowMajor = false;
};

inline MmadCtrl& MmadCtrlRegs() { return CoreLocal<MmadCtrl>(); }

// float -> HF32 (kept in a float): the low 12 of the 23 mantissa bits rounded away.
inline float RoundToHf32(float x, bool tiesTowardZero) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    const uint32_t low = b & 0xFFFu, keep = b & ~0xFFFu;
    uint32_t r = keep;
    if (low > 0x800u || (low == 0x800u && !tiesTowardZero && (keep & 0x1000u) != 0)) r = keep + 0x1000u;
    std::memcpy(&x, &r, 4);
    return x;
}

}  // namespace twin

namespace AscendC {

inline void SetHF32Mode(HF32Mode mode) {
    twin::MmadCtrlRegs().hf32 = mode == HF32Mode::ENABLE;
    twin::Trace("SetHF32Mode", PIPE_S, 0, 0, 1, nullptr, nullptr);
}
// Former form: true = ENABLE.
inline void SetHF32Mode(bool hf32Mode) { SetHF32Mode(hf32Mode ? HF32Mode::ENABLE : HF32Mode::DISABLE); }

inline void SetHF32TransMode(HF32TransMode mode) {
    twin::MmadCtrlRegs().hf32TowardZero = mode == HF32TransMode::NEAREST_ZERO;
    twin::Trace("SetHF32TransMode", PIPE_S, 0, 0, 1, nullptr, nullptr);
}
// Former form: true = NEAREST_ZERO.
inline void SetHF32TransMode(bool hf32TransMode) {
    SetHF32TransMode(hf32TransMode ? HF32TransMode::NEAREST_ZERO : HF32TransMode::NEAREST_EVEN);
}

inline void SetMMLayoutTransform(bool mmLayoutMode) {
    twin::MmadCtrlRegs().rowMajor = mmLayoutMode;
    twin::Trace("SetMMLayoutTransform", PIPE_S, 0, 0, 1, nullptr, nullptr);
}
inline void SetMMRowMajor() { SetMMLayoutTransform(true); }
inline void SetMMColumnMajor() { SetMMLayoutTransform(false); }

}  // namespace AscendC
