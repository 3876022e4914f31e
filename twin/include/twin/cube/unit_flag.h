// L0C unit flags (MmadParams / FixpipeParamsV220 / DataCopyCO12DstParams::unitFlag; Mmad计算关键特性说明/UnitFlag.md):
// with unitFlag 2 or 3, each 512 B block of L0C has a flag, 0 = writable, 1 = readable. An Mmad waits for 0 on
// every block it writes and, with 3, sets it to 1 when done; a Fixpipe waits for 1 on every block it reads and,
// with 3, sets it back to 0 (2 keeps the flag on both sides); both hand over whole fractals (the pages: the result
// leaves "each time the hardware completes a fractal"), so a Fixpipe of a partial 16-row fractal frees all of it.
// So Fixpipe may drain L0C while the Mmad still
// writes it, without SetFlag/WaitFlag between PIPE_M and PIPE_FIX: the twin turns each handshake into an ordering
// of the waiting access after the instruction that flipped the flag (HzAccess::unitPipe/unitClk). Flags start 0
// in each launch; SetFixPipeConfig(..., isUnitFlag = true) resets them all to 0. Instructions with unitFlag 0
// ignore the flags. A wait no earlier instruction can satisfy (a Fixpipe with unitFlag on a block no Mmad with
// unitFlag 3 filled; an Mmad with unitFlag on a block still full) would wait for a later instruction of the
// other pipe or hang, and is reported.
#pragma once
#include <vector>

#include "twin/launch/core_local.h"

namespace twin {

constexpr uint64_t kUnitBytes = 512;

struct L0cUnits {
    std::vector<uint8_t> full;      // flag per block
    std::vector<uint32_t> mmadClk;  // PIPE_M clock of the Mmad (unitFlag 3) that last set the flag
    std::vector<uint32_t> fixClk;   // PIPE_FIX clock of the Fixpipe (unitFlag 3) that last cleared it
    std::vector<const char*> filler;

    void Size() {
        const size_t n = (Cur().mem[(int)Mem::L0C].size() + kUnitBytes - 1) / kUnitBytes;
        if (full.size() == n) return;
        full.assign(n, 0);
        mmadClk.assign(n, 0);
        fixClk.assign(n, 0);
        filler.assign(n, nullptr);
    }
};

inline L0cUnits& Units() {
    L0cUnits& u = CoreLocal<L0cUnits>();
    u.Size();
    return u;
}

inline void CheckUnitFlagValue(const char* api, uint8_t unitFlag) {
    if (unitFlag != 0 && unitFlag != 2 && unitFlag != 3) {
        Fail(api, "unitFlag %u is not 0 (off), 2 (keep the unit flags) or 3 (flip them)", unitFlag);
    }
}

// The pipe clock the instruction traced next gets (its accesses are noted before Trace numbers it).
inline uint32_t NextClock(pipe_t pipe) {
    const HazardState& h = Cur().hz;
    return h.on ? h.known[HzPipe(pipe)][h.self + HzPipe(pipe)] + 1 : 0;
}

// Notes an access of L0C bytes [lo, hi) made while waiting on the blocks' flags: ordered, block by block, after the
// instruction of `pipe` recorded in clk.
inline void NoteUnitAccess(const char* api, uint64_t lo, uint64_t hi, bool write, int8_t pipe,
                           const std::vector<uint32_t>& clk) {
    CoreState& c = Cur();
    NoteTraceAccess(c, api, Mem::L0C, lo, hi, write);
    if (!c.hz.on) return;
    uint64_t at = lo;
    while (at < hi) {
        const size_t b = at / kUnitBytes;
        uint64_t end = std::min(hi, (b + 1) * kUnitBytes);
        while (end < hi && clk[end / kUnitBytes] == clk[b]) end = std::min(hi, end + kUnitBytes);
        HzAccess a{api, Mem::L0C, at, end - at, write, false};
        a.unitPipe = pipe;
        a.unitClk = clk[b];
        c.hz.pending.push_back(a);
        at = end;
    }
}

// Mmad writing L0C bytes [lo, hi) with unitFlag (not 0): every block must be writable. Call before the Mmad's Trace.
inline void MmadUnitsWrite(const char* api, uint64_t lo, uint64_t hi, uint8_t unitFlag) {
    L0cUnits& u = Units();
    for (size_t b = lo / kUnitBytes; b * kUnitBytes < hi; ++b) {
        if (u.full[b]) {
            Fail(api, "unitFlag %u: L0C block %zu (bytes [%llu, %llu)) still has its unit flag set by %s with unitFlag "
                      "3 and no Fixpipe with unitFlag 3 has read it since; this Mmad would wait for a Fixpipe issued "
                      "later, or forever (UnitFlag.md: drain every block the Mmad filled, or reset the flags with "
                      "SetFixPipeConfig(..., isUnitFlag = true))", unitFlag, b, (unsigned long long)(b * kUnitBytes),
                 (unsigned long long)((b + 1) * kUnitBytes), u.filler[b]);
        }
    }
    NoteUnitAccess(api, lo, hi, true, (int8_t)HzPipe(PIPE_FIX), u.fixClk);
}

// After the Mmad's Trace: unitFlag 3 marks its blocks readable.
inline void MmadUnitsDone(const char* api, uint64_t lo, uint64_t hi, uint8_t unitFlag, uint32_t clk) {
    if (unitFlag != 3) return;
    L0cUnits& u = Units();
    for (size_t b = lo / kUnitBytes; b * kUnitBytes < hi; ++b) {
        u.full[b] = 1;
        u.mmadClk[b] = clk;
        u.filler[b] = api;
    }
}

// Blocks of L0C a Fixpipe reads: ranges [lo, hi) of bytes, merged into a per-block mask.
struct UnitSpan {
    std::vector<uint8_t> touched;
    uint64_t lo = ~0ull, hi = 0;
    void Add(uint64_t a, uint64_t b) {
        if (touched.empty()) touched.assign(Units().full.size(), 0);
        for (size_t k = a / kUnitBytes; k * kUnitBytes < b && k < touched.size(); ++k) touched[k] = 1;
        lo = std::min(lo, a);
        hi = std::max(hi, b);
    }
};

// Fixpipe reading the blocks of `s` with unitFlag (not 0): every block must be readable. Call before its Trace.
inline void FixpipeUnitsRead(const char* api, const UnitSpan& s, uint8_t unitFlag) {
    L0cUnits& u = Units();
    for (size_t b = 0; b < s.touched.size(); ++b) {
        if (!s.touched[b] || u.full[b]) continue;
        Fail(api, "unitFlag %u reads L0C block %zu (bytes [%llu, %llu)) whose unit flag no Mmad with unitFlag 3 has set "
                  "since it was last drained: it would wait for an Mmad issued later, or forever (UnitFlag.md: the "
                  "last Mmad writing the block needs unitFlag 3, the ones before it 2; both sides must enable unitFlag)",
             unitFlag, b, (unsigned long long)(b * kUnitBytes), (unsigned long long)((b + 1) * kUnitBytes));
    }
    for (size_t b = 0; b < s.touched.size(); ++b) {
        if (!s.touched[b]) continue;
        size_t e = b;
        while (e + 1 < s.touched.size() && s.touched[e + 1]) ++e;
        NoteUnitAccess(api, std::max(s.lo, b * kUnitBytes), std::min(s.hi, (e + 1) * kUnitBytes), false,
                       (int8_t)HzPipe(PIPE_M), u.mmadClk);
        b = e;
    }
}

// After the Fixpipe's Trace: unitFlag 3 marks its blocks writable again.
inline void FixpipeUnitsDone(const UnitSpan& s, uint8_t unitFlag, uint32_t clk) {
    if (unitFlag != 3) return;
    L0cUnits& u = Units();
    for (size_t b = 0; b < s.touched.size(); ++b) {
        if (!s.touched[b]) continue;
        u.full[b] = 0;
        u.fixClk[b] = clk;
    }
}

// SetFixPipeConfig(..., isUnitFlag = true): every flag back to 0, ordering nothing.
inline void ResetUnits() {
    L0cUnits& u = Units();
    std::fill(u.full.begin(), u.full.end(), 0);
}

}  // namespace twin
