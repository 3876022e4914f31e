// Pipe-hazard detector. On the NPU the pipes of a core (MTE1, MTE2, MTE3, M, V, FIX) run concurrently, ordered
// only by SetFlag/WaitFlag (also inside EnQue/DeQue/AllocTensor/FreeTensor) and PIPE_ALL barriers; the twin runs
// them one after another, so a missing flag would go unnoticed. Each pipe keeps a vector clock of what it is
// guaranteed to see of the others; every read or write of an instruction is checked, byte-exactly, against the
// last writer and readers of the bytes it touches. Unordered accesses (read-after-write, write-after-write,
// write-after-read between two pipes) raise an error naming both instructions.
// The clocks span every (core, pipe) of the launch, so the same check covers GM: cross-core flags (CrossCoreSetFlag on
// a pipe, CrossCoreWaitFlag, SyncAll) carry the setter's knowledge to the waiter, and DMA/Fixpipe accesses to GM are
// checked against the last writer and readers on any core (atomic adds may overlap each other). A
// CrossCoreSetFlag<mode, pipe> reports once the earlier work of its own pipe is done (CrossCoreSetFlag(ISASI).md,
// 功能说明), so it carries only what that pipe has seen: its own instructions and what it waited for through flags or
// barriers. An earlier read or write of another pipe of the setting core stays unordered against the waiter (a
// consumer's write over bytes the setter's MTE2 may still be reading is a write-after-read hazard).
// Same-pipe ordering: a pipe executes in order, but the docs require PipeBarrier<PIPE_X> between two dependent
// instructions of one pipe in these cases (PipeBarrier page; Mmad page, "synchronisation"): MTE2 -> MTE2 and
// MTE3 -> MTE3 writes to overlapping destination bytes (UB, L1 or GM), and an Mmad accumulating into L0C that a
// previous Mmad wrote when (m / 16) * (n / 16) < 10. PIPE_V -> PIPE_V needs nothing on dav-2201 (the compiler's
// auto-sync inserts it). Such a dependency is ordered by a PipeBarrier of that pipe (or PIPE_ALL), or by a flag
// round trip through another pipe (a WaitFlag whose setter had seen the earlier instruction complete).
// Unit flags (Mmad/Fixpipe unitFlag) order PIPE_M and PIPE_FIX accesses to L0C block by block (cube/unit_flag.h).
// Not modelled: the scalar pipe (the compiler's auto-sync orders S against V/MTE2/MTE3 on the AIV; S cannot touch
// L1/L0; scalar GM accesses go through the data cache).
#pragma once
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace twin {

constexpr int kHzPipes = 7;  // S, V, M, MTE1, MTE2, MTE3, FIX

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

// Who accessed memory: a (core, pipe) at that pipe's clock, by which API, and the whole byte range of that access
// (HzShadow::Access fills it in; a hazard report names both accesses' ranges).
struct HzWho {
    int32_t core;
    int8_t pipe;
    uint32_t clk;
    const char* api;
    uint64_t lo = 0, hi = 0;
};

struct HzConflict {
    bool found = false;
    bool withWriter = false;  // else with a reader
    bool samePipe = false;    // an earlier instruction of the same pipe (a missing PipeBarrier)
    HzWho who{};
    uint64_t at = 0;
};

// Byte ranges of one memory with their last writer(s) and readers since. Disjoint segments [key, end); bytes never
// accessed during the launch have no segment.
class HzShadow {
public:
    // Checks an access of [lo, hi) by `me` and records it. seen(w): is `me` ordered after access w of another pipe?
    // sameOk(w): may `me` follow w, an earlier write of its own pipe (the same-pipe rules above)? Returns the first
    // conflict, if any (then nothing is recorded).
    template <class Seen, class SameOk>
    HzConflict Access(uint64_t lo, uint64_t hi, bool write, bool atomic, HzWho me, Seen seen, SameOk sameOk) {
        HzConflict c;
        if (hi <= lo) return c;
        me.lo = lo;
        me.hi = hi;
        Split(lo);
        Split(hi);
        auto first = segs_.lower_bound(lo);
        for (auto it = first; it != segs_.end() && it->first < hi; ++it) {
            const Seg& s = it->second;
            const bool atomicPair = write && atomic && s.atomic;
            for (const HzWho& w : s.writers) {
                if (atomicPair) continue;
                if (Same(w, me) ? !sameOk(w) : !seen(w)) return Conflict(true, w, it->first, Same(w, me));
            }
            if (write) {
                for (const HzWho& r : s.readers) {
                    if (!Same(r, me) && !seen(r)) return Conflict(false, r, it->first);
                }
            }
        }
        if (!write) {  // bytes nobody wrote yet get a segment too: a later unordered write is a write-after-read
            const std::vector<std::pair<uint64_t, uint64_t>> gaps = Gaps(first, lo, hi);
            for (auto it = first; it != segs_.end() && it->first < hi; ++it) Upsert(it->second.readers, me);
            for (const auto& g : gaps) segs_.emplace(g.first, Seg{g.second, {}, false, {me}});
            return c;
        }
        if (!atomic) {  // one segment now covers [lo, hi)
            segs_.erase(first, segs_.lower_bound(hi));
            segs_.emplace(lo, Seg{hi, {me}, false, {}});
            return c;
        }
        const std::vector<std::pair<uint64_t, uint64_t>> gaps = Gaps(first, lo, hi);  // atomic add: overlapping
        for (auto it = first; it != segs_.end() && it->first < hi; ++it) {              // atomic writers stay
            Seg& s = it->second;
            if (!s.atomic) s.writers.clear();
            Upsert(s.writers, me);
            s.atomic = true;
            s.readers.clear();
        }
        for (const auto& g : gaps) segs_.emplace(g.first, Seg{g.second, {me}, true, {}});
        return c;
    }
    void Clear() { segs_.clear(); }

private:
    struct Seg {
        uint64_t end;
        std::vector<HzWho> writers;  // several only for overlapping atomic adds
        bool atomic;
        std::vector<HzWho> readers;
    };
    static bool Same(const HzWho& a, const HzWho& b) { return a.core == b.core && a.pipe == b.pipe; }
    static void Upsert(std::vector<HzWho>& v, const HzWho& me) {
        for (HzWho& w : v) {
            if (Same(w, me)) {
                w = me;
                return;
            }
        }
        v.push_back(me);
    }
    static HzConflict Conflict(bool withWriter, const HzWho& w, uint64_t at, bool samePipe = false) {
        HzConflict c;
        c.found = true;
        c.withWriter = withWriter;
        c.samePipe = samePipe;
        c.who = w;
        c.at = at;
        return c;
    }
    // The parts of [lo, hi) no segment covers; `first` is the first segment at or after lo (after Split(lo)).
    std::vector<std::pair<uint64_t, uint64_t>> Gaps(std::map<uint64_t, Seg>::iterator first, uint64_t lo,
                                                    uint64_t hi) const {
        std::vector<std::pair<uint64_t, uint64_t>> gaps;
        uint64_t cursor = lo;
        for (auto it = first; it != segs_.end() && it->first < hi; ++it) {
            if (it->first > cursor) gaps.push_back({cursor, it->first});
            cursor = it->second.end;
        }
        if (cursor < hi) gaps.push_back({cursor, hi});
        return gaps;
    }
    void Split(uint64_t at) {
        auto it = segs_.upper_bound(at);
        if (it == segs_.begin()) return;
        --it;
        if (it->first < at && it->second.end > at) {
            Seg right = it->second;
            it->second.end = at;
            segs_.emplace(at, std::move(right));
        }
    }
    std::map<uint64_t, Seg> segs_;
};

struct HzAccess {
    const char* api;  // nullptr: belongs to whichever instruction is traced next (GM writes noted by GmWrite)
    Mem mem;
    uint64_t off, bytes;  // GM: off is the host address
    bool write;
    bool atomic;
    bool sameRaw = false;  // a read that must be ordered after an earlier write of its own pipe (Mmad accumulation)
    // L0C access of an Mmad or Fixpipe with unitFlag (cube/unit_flag.h): it waits for the block's unit flag, which
    // instruction unitClk of pipe unitPipe on this core flipped, so it is ordered after that one and its predecessors.
    int8_t unitPipe = -1;
    uint32_t unitClk = 0;
    bool UnitOrdered(const HzWho& w) const { return w.pipe == unitPipe && w.clk <= unitClk; }
};

inline void MergeInto(std::vector<uint32_t>& dst, const std::vector<uint32_t>& src) {
    for (size_t i = 0; i < dst.size() && i < src.size(); ++i) dst[i] = std::max(dst[i], src[i]);
}

// Clock vectors have one slot per (core, pipe) of the launch: slot = core id * kHzPipes + pipe.
struct HazardState {
    bool on = true;
    int self = 0;                                             // this core's first slot
    std::vector<uint32_t> known[kHzPipes];                    // known[q][slot]: what pipe q has seen
    std::vector<uint32_t> snapshot[kNumHardEvents][kEventIds]; // knowledge carried by a pending SetFlag
    uint32_t done[kHzPipes] = {};  // done[q]: own clock of pipe q up to which its instructions are known complete
    HzShadow shadow[(int)Mem::COUNT];  // on-core memories (GM is shared: LaunchState::gmShadow)
    std::vector<HzAccess> pending;

    void Init(int coreId, int cores) {
        self = coreId * kHzPipes;
        for (auto& k : known) k.assign((size_t)cores * kHzPipes, 0);
        for (uint32_t& d : done) d = 0;
    }
    // Pipe q learns what `snap` (a setter's view) knows: other pipes' progress, and its own completed instructions.
    void Learn(int q, const std::vector<uint32_t>& snap) {
        const size_t own = (size_t)self + q;
        if (own < snap.size()) done[q] = std::max(done[q], snap[own]);
        MergeInto(known[q], snap);
    }
    // PipeBarrier<q>: every earlier instruction of pipe q is complete.
    void Barrier(int q) { done[q] = known[q][self + q]; }
    // May an access of pipe q follow `w`, an earlier write of the same pipe to the same bytes?
    bool SameOk(int q, const HzWho& w, bool write, bool sameRaw) const {
        const bool ruled = write ? (q == HzPipe(PIPE_MTE2) || q == HzPipe(PIPE_MTE3)) : sameRaw;
        return !ruled || w.clk <= done[q];
    }
    // Everything any pipe of this core has seen (what a PIPE_ALL barrier or a scalar-pipe wait publishes).
    std::vector<uint32_t> Merged() const {
        std::vector<uint32_t> m = known[0];
        for (int q = 1; q < kHzPipes; ++q)
            for (size_t i = 0; i < m.size(); ++i) m[i] = std::max(m[i], known[q][i]);
        return m;
    }
};


// Default for new launches: on unless NPU_TWIN_HAZARDS=0.
inline bool HazardsDefault() {
    const char* e = std::getenv("NPU_TWIN_HAZARDS");
    return !(e != nullptr && e[0] == '0');
}

}  // namespace twin
