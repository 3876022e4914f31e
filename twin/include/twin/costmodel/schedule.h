// Cycle model of one launch from the twin's per-core traces. Each core has in-order pipes (AIC: S, MTE1, MTE2, MTE3,
// M, FIX; AIV: S, MTE2, MTE3, V) fed in program order by the scalar unit. An instruction starts when its pipe is free,
// its queue has room and every wait in front of it is met: SetFlag/WaitFlag events (source pipe drained -> destination
// pipe released), PipeBarrier, CrossCoreSetFlag/WaitFlag between cores (with a latency) and SyncAll. GM transfers
// go through an LRU L2 of 512-B lines: lines not resident are HBM traffic, the rest L2 hits; each transfer moves its
// HBM lines at a fair share of the HBM bandwidth and all its lines at a fair share of the aggregate L2 bandwidth (a
// fixed point over the passes).
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "twin/costmodel/op_cost.h"

namespace twin::cost {

struct CoreTrace {
    std::string name;
    bool aic;
    int64_t block;
    const TraceRec* recs;
    size_t n;
    const TraceAcc* acc;  // TraceRec::acc indexes it
};

// Block index from a twin core name ("AIC 3", "AIV 5 (block 2, sub 1)").
inline int64_t BlockOfName(const std::string& name, bool aic) {
    const size_t at = aic ? name.find("AIC ") : name.find("block ");
    if (at == std::string::npos) return 0;
    return std::atoll(name.c_str() + at + (aic ? 4 : 6));
}

inline std::vector<CoreTrace> CoresOf(const LaunchResult& r) {
    std::vector<CoreTrace> out;
    for (size_t i = 0; i < r.traces.size(); ++i) {
        const bool aic = r.coreTypes[i] == AscendC::AIC;
        out.push_back({r.coreNames[i], aic, BlockOfName(r.coreNames[i], aic), r.traces[i].data(), r.traces[i].size(),
                       r.traceAccs[i].data()});
    }
    return out;
}

struct Options {
    std::vector<bool> keep;   // per core: record its per-instruction schedule
    size_t keepCap = 2000000;  // at most this many schedule entries
    int bins = 0;             // per-core per-pipe busy histogram over the run (0: none)
    int passes = 12;          // at most this many passes of the HBM / L2 fair-share fixed point
    // A block-sampled launch: each traced block stands for this many (numBlocks / sampled blocks). Its GM transfers
    // count that many times in the HBM and L2 bandwidth shares (the L2 capacity is the whole chip's), and the MAC
    // and byte totals are scaled to the whole launch.
    double blockScale = 1;
    // The launch's GM buffers (begin, bytes), in argument order. The L2 model counts 512-B lines, so a transfer's line
    // count depends on where its buffer starts; host allocations start anywhere (64-B aligned for torch), NPU ones on
    // 512-B boundaries. Given the buffers, the model places them as the NPU allocator would: each group of
    // overlapping buffers (views of one allocation) from its own 512-B-aligned base, in argument order, so the modeled
    // time does not depend on the host heap. Empty: the host addresses as they are.
    std::vector<std::pair<uint64_t, uint64_t>> gm;
};

struct Interval {
    int32_t core;
    uint32_t rec;
    uint8_t pipe;
    double start, end;
};

struct Result {
    double cycles = 0;        // kernel: first issue to the last core's end
    double launchCycles = 0;  // launch overhead (added to the total time by the caller)
    double clockMHz = 0;
    std::vector<std::array<double, kPipes>> busy;  // per core, per pipe
    std::vector<double> coreEnd;
    std::vector<Interval> schedule;
    std::vector<float> hist;  // [core][pipe][bin] busy fraction
    double binCycles = 0;
    uint64_t macs = 0, gmBytes = 0, hbmBytes = 0, l2HitBytes = 0;
    std::array<double, (int)Family::COUNT> familyCycles{};
    std::array<uint64_t, (int)Family::COUNT> familyCount{};
};

class Model {
public:
    Model(const Params& P, std::vector<CoreTrace> cores) : P_(P), R_(P), cores_(std::move(cores)) {
        depth_ = (size_t)P["queue.depth"];
        flagLat_ = P["flag.latency"], crossLat_ = P["cross.latency"], syncLat_ = P["syncall.latency"];
        line_ = (uint64_t)P["gm.line"], bin_ = P["gm.bin"], hbmBpc_ = P["chip.hbm_bytes_per_cycle"];
        l2Bpc_ = P["l2.bytes_per_cycle"], l2Bytes_ = P["l2.bytes"];
        Prepare();
    }

    Result Run(const Options& o) {
        scale_ = std::max(1.0, o.blockScale);
        Result res;
        for (int pass = 0; pass < std::max(1, o.passes); ++pass) {
            const bool last = pass + 1 >= o.passes;
            res = Pass(last ? &o : nullptr, last ? res.cycles : 0);
            if (pass == 0) PlaceGm(o.gm), AssignHbm();
            if (last) break;
            if (!UpdateShares()) {  // the shares settled: this pass is final
                res = Pass(&o, res.cycles);
                break;
            }
        }
        res.launchCycles = P_["launch.cycles"];
        res.clockMHz = P_["chip.clock_mhz"];
        for (auto& d : dmas_) res.hbmBytes += (uint64_t)d.hbm, res.l2HitBytes += d.bytes - std::min(d.bytes, (uint64_t)d.hbm);
        res.macs = (uint64_t)(res.macs * scale_), res.gmBytes = (uint64_t)(res.gmBytes * scale_);
        res.hbmBytes = (uint64_t)(res.hbmBytes * scale_), res.l2HitBytes = (uint64_t)(res.l2HitBytes * scale_);
        return res;
    }

private:
    struct Dma {  // one GM transfer: its GM range, HBM lines and shares of the HBM and L2 bandwidths
        uint64_t addr, bytes;
        double start = 0, xferStart = 0, end = 0, hbm = 0;
        double k = 1, kl = 1;  // transfers sharing HBM / L2 with it
    };
    // A vector instruction's on-core accesses and the time its result is complete (end of its body + tail).
    struct VecInFlight {
        uint32_t acc, nacc;
        double done;
    };
    static constexpr int kL0cUnits = 128 * 1024 / 512;
    struct Sim {
        size_t pc = 0;
        double issue = 0, tail = 0;
        double free[kPipes] = {}, gate[kPipes] = {};
        bool fresh[kPipes] = {true, true, true, true, true, true, true};
        std::deque<double> starts[kPipes];
        std::unordered_map<int, std::deque<double>> flags;
        int syncRound = 0;
        bool syncWaiting = false;
        size_t dmaAt = 0;  // next entry of dmaIdx_[core]
        bool done = false;
        std::vector<VecInFlight> vecInFlight;  // vector instructions whose result may not be complete yet
        double unitReady[kL0cUnits] = {}, unitFree[kL0cUnits] = {};  // L0C unit flags (unitFlag), see UnitWait
    };

    const Params& P_;
    Rates R_;
    std::vector<CoreTrace> cores_;
    size_t depth_;
    double flagLat_, crossLat_, syncLat_, bin_, hbmBpc_, l2Bpc_, l2Bytes_, scale_ = 1;
    uint64_t line_;
    std::vector<std::vector<Family>> fam_;  // per core, per record (instructions)
    std::vector<std::vector<uint8_t>> l0b_;  // per core, per record: L1->L0 load into L0B
    std::vector<Dma> dmas_;
    std::vector<std::vector<uint32_t>> dmaIdx_;  // per core: its entries of dmas_, in program order
    // Cross-core flags: tokens[core][flag] arrival times; pending group sets[mode][core][flag].
    std::vector<std::array<std::deque<double>, kCrossFlags>> tokens_;
    std::vector<std::array<std::deque<double>, kCrossFlags>> pend_[3];
    std::vector<double> syncMax_;
    std::vector<int> syncArrived_;
    int syncParticipants_ = 0;

    static bool IsCross(const TraceRec& r) { return std::strcmp(r.op, "CrossCoreSetFlag") == 0 || std::strcmp(r.op, "CrossCoreWaitFlag") == 0; }
    static bool IsSyncAll(const TraceRec& r) { return r.kind == TraceKind::Barrier && std::strcmp(r.op, "SyncAll") == 0; }

    void Prepare() {
        const size_t nc = cores_.size();
        fam_.resize(nc);
        l0b_.resize(nc);
        dmaIdx_.resize(nc);
        std::unordered_map<uint64_t, Family> cache;
        for (size_t c = 0; c < nc; ++c) {
            const CoreTrace& t = cores_[c];
            fam_[c].resize(t.n);
            bool syncs = false;
            for (size_t i = 0; i < t.n; ++i) {
                const TraceRec& r = t.recs[i];
                syncs = syncs || IsSyncAll(r);
                if (r.kind != TraceKind::Instr) continue;
                const int p = PipeOf(r.pipe);
                const uint64_t key = ((uint64_t)(uintptr_t)r.op << 4) ^ (uint64_t)(p + 1) ^ ((uint64_t)t.aic << 3);
                auto it = cache.find(key);
                const Family f = it != cache.end() ? it->second : (cache[key] = Classify(r.op, p < 0 ? kS : p, t.aic));
                fam_[c][i] = f;
                const GmSide g = GmSideOf(f);
                if (g != GmSide::None && r.bytes > 0) {
                    dmaIdx_[c].push_back((uint32_t)dmas_.size());
                    dmas_.push_back({g == GmSide::Src ? r.src : r.dst, r.bytes});
                }
            }
            syncParticipants_ += syncs;
            if (t.aic) SplitL0(c);
        }
    }

    // Which L1->L0 loads write L0B: the memory of the load's recorded write access (TraceRec::acc). Traces without
    // accesses carry only host addresses; the two buffers are separate 64 KB blocks, so the load destinations form
    // two clusters, and the one holding Mmad's left-matrix addresses is L0A (the largest gap between destinations
    // splits them, which a layout with wide gaps inside L0A, e.g. resident A operands, can mislead).
    void SplitL0(size_t c) {
        const CoreTrace& t = cores_[c];
        l0b_[c].assign(t.n, 0);
        bool recorded = false;
        for (size_t i = 0; t.acc != nullptr && i < t.n; ++i) {
            if (t.recs[i].kind != TraceKind::Instr || fam_[c][i] != Family::L1ToL0) continue;
            for (uint32_t x = t.recs[i].acc; x < t.recs[i].acc + t.recs[i].nacc; ++x) {
                const TraceAcc& a = t.acc[x];
                if (!a.write || (a.mem != (uint8_t)Mem::L0A && a.mem != (uint8_t)Mem::L0B)) continue;
                l0b_[c][i] = a.mem == (uint8_t)Mem::L0B;
                recorded = true;
            }
        }
        if (recorded) return;
        std::vector<uint64_t> dst;
        uint64_t aSrc = UINT64_MAX;
        for (size_t i = 0; i < t.n; ++i) {
            if (t.recs[i].kind != TraceKind::Instr) continue;
            if (fam_[c][i] == Family::L1ToL0) dst.push_back(t.recs[i].dst);
            if (fam_[c][i] == Family::Mmad) aSrc = std::min(aSrc, t.recs[i].src);
        }
        if (dst.empty() || aSrc == UINT64_MAX) return;
        std::sort(dst.begin(), dst.end());
        dst.erase(std::unique(dst.begin(), dst.end()), dst.end());
        const uint64_t span = 64 * 1024;
        uint64_t split = 0, gap = 0;
        for (size_t i = 1; i < dst.size(); ++i) {
            if (dst[i - 1] - dst[0] < span && dst.back() - dst[i] < span && dst[i] - dst[i - 1] > gap) {
                gap = dst[i] - dst[i - 1];
                split = dst[i];
            }
        }
        if (split == 0) return;  // one cluster: every load is taken as L0A
        const bool aHigh = aSrc >= split;
        for (size_t i = 0; i < t.n; ++i) {
            if (t.recs[i].kind == TraceKind::Instr && fam_[c][i] == Family::L1ToL0) l0b_[c][i] = (t.recs[i].dst >= split) != aHigh;
        }
    }

    // Options::gm: rebases each transfer into its buffer group's NPU-like placement (transfers outside every buffer
    // keep their address).
    void PlaceGm(const std::vector<std::pair<uint64_t, uint64_t>>& gm) {
        if (gm.empty()) return;
        struct Group {
            uint64_t lo, hi, base;
        };
        std::vector<Group> groups;  // argument order of each group's first buffer
        for (const auto& [b, n] : gm) {
            if (b == 0) continue;  // a null tensor
            const uint64_t lo = b, hi = b + std::max<uint64_t>(n, 1);
            std::vector<Group> keep;
            Group g{lo, hi, 0};
            size_t at = groups.size();
            for (size_t i = 0; i < groups.size(); ++i) {
                if (groups[i].lo < g.hi && g.lo < groups[i].hi) {
                    g.lo = std::min(g.lo, groups[i].lo), g.hi = std::max(g.hi, groups[i].hi);
                    at = std::min(at, keep.size());
                } else {
                    keep.push_back(groups[i]);
                }
            }
            keep.insert(keep.begin() + (std::ptrdiff_t)std::min(at, keep.size()), g);
            groups.swap(keep);
        }
        const uint64_t align = 512;
        uint64_t next = 1ull << 32;
        for (Group& g : groups) {
            g.base = next;
            next = (next + (g.hi - g.lo) + align - 1) / align * align;
        }
        for (Dma& d : dmas_) {
            for (const Group& g : groups) {
                if (d.addr >= g.lo && d.addr < g.hi) {
                    d.addr = g.base + (d.addr - g.lo);
                    break;
                }
            }
        }
    }

    // HBM bytes per GM transfer: its 512-B lines that are not resident in an LRU L2 of l2.bytes (reads and writes
    // allocate; HBM moves whole lines), in the order the first pass started the transfers. A sampled launch's traced
    // blocks see the whole capacity: right where blocks share their data (FA cores of one head share its K/V, which
    // dominates), optimistic where each block streams data of its own.
    void AssignHbm() {
        std::vector<uint32_t> order(dmas_.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = (uint32_t)i;
        std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return dmas_[a].start < dmas_[b].start; });
        const size_t cap = std::max<size_t>(1, (size_t)(l2Bytes_ / line_));
        std::list<uint64_t> lru;  // most recent first
        std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where;
        where.reserve(std::min<size_t>(cap, 1u << 22));
        for (uint32_t i : order) {
            Dma& d = dmas_[i];
            uint64_t miss = 0;
            for (uint64_t l = d.addr / line_; l <= (d.addr + d.bytes - 1) / line_; ++l) {
                auto it = where.find(l);
                if (it != where.end()) {
                    lru.splice(lru.begin(), lru, it->second);
                    continue;
                }
                ++miss;
                if (where.size() >= cap) {
                    where.erase(lru.back());
                    lru.pop_back();
                }
                lru.push_front(l);
                where.emplace(l, lru.begin());
            }
            d.hbm = (double)(miss * line_);
        }
    }

    // Mean number of transfers in flight per gm.bin over the previous pass (each sampled one counted blockScale
    // times): only those with HBM lines (hbm) or all of them (L2).
    std::vector<double> InFlight(bool hbm) const {
        std::vector<double> active;
        for (const Dma& d : dmas_) {
            if ((hbm && d.hbm <= 0) || d.end <= d.xferStart) continue;
            for (size_t b = (size_t)(d.xferStart / bin_); b <= (size_t)(d.end / bin_); ++b) {
                if (b >= active.size()) active.resize(b + 1, 0.0);
                const double lo = std::max(d.xferStart, b * bin_), hi = std::min(d.end, (b + 1) * bin_);
                if (hi > lo) active[b] += scale_ * (hi - lo) / bin_;
            }
        }
        return active;
    }

    // Time-weighted mean of `active` over a transfer's interval (1 where it has none).
    double MeanOver(const std::vector<double>& active, const Dma& d) const {
        double sum = 0, w = 0;
        for (size_t b = (size_t)(d.xferStart / bin_); b <= (size_t)(d.end / bin_) && b < active.size(); ++b) {
            const double lo = std::max(d.xferStart, b * bin_), hi = std::min(d.end, (b + 1) * bin_);
            if (hi > lo) sum += active[b] * (hi - lo), w += hi - lo;
        }
        return w > 0 ? sum / w : 1.0;
    }

    // Fair shares: each transfer moves its HBM lines at most at the HBM bandwidth / k and all its bytes at most at the
    // L2 bandwidth / kl, k and kl = the mean number of transfers (with HBM lines / any) in flight over its interval in
    // the previous pass (itself included); each is averaged with its previous value to damp the fixed point. False
    // when no share moved by more than 2 %.
    bool UpdateShares() {
        const std::vector<double> hbm = InFlight(true), all = InFlight(false);
        bool moved = false;
        auto damp = [&](double& k, double now) {
            const double v = std::max(1.0, 0.5 * (k + now));
            moved = moved || std::fabs(v - k) > 0.02 * k;
            k = v;
        };
        for (Dma& d : dmas_) {
            if (d.end <= d.xferStart) continue;
            damp(d.kl, MeanOver(all, d));
            if (d.hbm > 0) damp(d.k, MeanOver(hbm, d));
        }
        return moved;
    }

    Result Pass(const Options* o, double prevCycles) {
        const size_t nc = cores_.size();
        std::vector<Sim> sim(nc);
        tokens_.assign(nc, {});
        for (auto& p : pend_) p.assign(nc, {});
        syncMax_.clear();
        syncArrived_.clear();
        Result res;
        res.busy.assign(nc, {});
        res.coreEnd.assign(nc, 0);
        int nb = o ? o->bins : 0;
        if (nb > 0) {
            res.binCycles = std::max(1.0, prevCycles * 1.02 / nb);
            res.hist.assign(nc * kPipes * nb, 0.f);
        }
        for (size_t left = nc; left > 0;) {
            bool progress = false;
            for (size_t c = 0; c < nc; ++c) {
                if (sim[c].done) continue;
                const size_t before = sim[c].pc;
                Step(c, sim[c], res, o);
                progress = progress || sim[c].pc != before || sim[c].done;
                if (sim[c].done) --left;
            }
            if (!progress && left > 0) {
                std::string who;
                for (size_t c = 0; c < nc; ++c) {
                    if (!sim[c].done) who += " " + cores_[c].name + " at record " + std::to_string(sim[c].pc) + " (" + cores_[c].recs[sim[c].pc].op + ");";
                }
                throw std::runtime_error("cost model: cross-core waits cannot be met:" + who);
            }
        }
        for (size_t c = 0; c < nc; ++c) res.cycles = std::max(res.cycles, res.coreEnd[c]);
        return res;
    }

    void Emit(size_t c, size_t i, int p, double s, double e, Result& res, const Options* o) {
        if (o && c < o->keep.size() && o->keep[c] && res.schedule.size() < o->keepCap) {
            res.schedule.push_back({(int32_t)c, (uint32_t)i, (uint8_t)p, s, e});
        }
        EmitBusy(c, p, s, e, res, o);
    }

    // Busy time of pipe p without a schedule entry (the scalar unit's issue of each instruction).
    void EmitBusy(size_t c, int p, double s, double e, Result& res, const Options* o) {
        res.busy[c][p] += e - s;
        if (!o || res.hist.empty() || e <= s) return;
        const int nb = o->bins;
        float* h = &res.hist[(c * kPipes + p) * nb];
        for (int b = std::min(nb - 1, (int)(s / res.binCycles)); b < nb; ++b) {
            const double lo = std::max(s, b * res.binCycles), hi = b == nb - 1 ? e : std::min(e, (b + 1) * res.binCycles);
            if (hi <= lo) break;
            h[b] += (float)((hi - lo) / res.binCycles);
        }
    }

    // Time at which everything issued so far on pipe p is done (with the vector result latency).
    double Drained(const Sim& s, int p) const { return s.free[p] + (p == kV ? s.tail : 0); }

    double PipeReady(const Sim& s, int p) const { return p == kS ? s.issue : std::max({s.issue, Drained(s, p), s.gate[p]}); }

    void Gate(Sim& s, int p, double t) {
        if (p == kS || p < 0) {
            s.issue = std::max(s.issue, t);
            if (p < 0) {
                for (int q = 0; q < kPipes; ++q) s.gate[q] = std::max(s.gate[q], t);
            }
        } else {
            s.gate[p] = std::max(s.gate[p], t);
        }
        for (int q = 0; q < kPipes; ++q) {
            if (p < 0 || q == p) s.fresh[q] = true;
        }
    }

    void Deliver(int target, uint16_t flag, double t) { tokens_[target][flag].push_back(t); }

    void CrossSetRec(size_t c, const TraceRec& r, double t) {
        const int mode = (int)r.repeats;
        const uint16_t flag = r.arg;
        const CoreTrace& me = cores_[c];
        if (mode == 2 && me.aic) {
            for (size_t o = 0; o < cores_.size(); ++o) {
                if (!cores_[o].aic && cores_[o].block == me.block) Deliver((int)o, flag, t + crossLat_);
            }
            return;
        }
        // Group sets: every member's k-th set releases the k-th wake-up.
        std::vector<size_t> group;
        for (size_t o = 0; o < cores_.size(); ++o) {
            if (cores_[o].aic != me.aic) continue;
            if (mode != 0 && cores_[o].block != me.block) continue;
            group.push_back(o);
        }
        auto& pend = pend_[std::min(mode, 2)];
        pend[c][flag].push_back(t);
        double rel = 0;
        for (size_t o : group) {
            if (pend[o][flag].empty()) return;
            rel = std::max(rel, pend[o][flag].front());
        }
        for (size_t o : group) pend[o][flag].pop_front();
        if (mode == 2) {
            for (size_t o = 0; o < cores_.size(); ++o) {
                if (cores_[o].aic && cores_[o].block == me.block) Deliver((int)o, flag, rel + crossLat_);
            }
        } else {
            for (size_t o : group) Deliver((int)o, flag, rel + crossLat_);
        }
    }

    // Runs core c until it finishes or blocks on a cross-core flag or SyncAll not yet released.
    void Step(size_t c, Sim& s, Result& res, const Options* o) {
        const CoreTrace& t = cores_[c];
        for (; s.pc < t.n; ++s.pc) {
            const size_t i = s.pc;
            const TraceRec& r = t.recs[i];
            const int p = PipeOf(r.pipe);
            switch (r.kind) {
                case TraceKind::Instr: Instr(c, s, i, r, p, res, o); break;
                case TraceKind::SetFlag: {
                    s.flags[r.arg].push_back(PipeReady(s, p < 0 ? kS : p));
                    Issue(c, s, res, o);
                    break;
                }
                case TraceKind::WaitFlag: {
                    auto& q = s.flags[r.arg];
                    if (!q.empty()) {  // the twin pairs every wait with an earlier set of this core
                        Gate(s, p < 0 ? kS : p, q.front() + flagLat_);
                        q.pop_front();
                    }
                    Issue(c, s, res, o);
                    break;
                }
                case TraceKind::Barrier: {
                    if (IsSyncAll(r)) {
                        if (!SyncAllRec(s)) return;
                    } else if (p < 0) {  // PIPE_ALL: every pipe drained before anything else issues
                        double d = s.issue;
                        for (int q = 0; q < kPipes; ++q) d = std::max(d, Drained(s, q));
                        Gate(s, -1, d);
                    } else if (p != kS && std::strcmp(r.op, "PipeBarrier") == 0) {
                        Gate(s, p, Drained(s, p));
                    }
                    Issue(c, s, res, o);
                    break;
                }
                case TraceKind::CrossSet:
                    if (IsCross(r)) CrossSetRec(c, r, PipeReady(s, p < 0 ? kS : p));
                    Issue(c, s, res, o);
                    break;
                case TraceKind::CrossWait:
                    if (IsCross(r)) {
                        auto& q = tokens_[c][r.arg];
                        if (q.empty()) return;  // blocked until another core sets it
                        Gate(s, p < 0 ? kS : p, q.front());
                        q.pop_front();
                    }
                    Issue(c, s, res, o);
                    break;
                default: Issue(c, s, res, o); break;  // atomic-mode switches: scalar config
            }
        }
        double end = s.issue;
        for (int q = 0; q < kPipes; ++q) end = std::max(end, Drained(s, q));
        res.coreEnd[c] = end;
        s.done = true;
    }

    // The scalar unit's issue of a sync or configuration record.
    void Issue(size_t c, Sim& s, Result& res, const Options* o) {
        EmitBusy(c, kS, s.issue, s.issue + R_.scalarIssue, res, o);
        s.issue += R_.scalarIssue;
    }

    // SyncAll: every participating core drains, the last arrival releases them all. False: not yet released.
    bool SyncAllRec(Sim& s) {
        const int k = s.syncRound;
        if (!s.syncWaiting) {
            if ((int)syncArrived_.size() <= k) syncArrived_.resize(k + 1, 0), syncMax_.resize(k + 1, 0);
            double d = s.issue;
            for (int q = 0; q < kPipes; ++q) d = std::max(d, Drained(s, q));
            ++syncArrived_[k];
            syncMax_[k] = std::max(syncMax_[k], d);
            s.syncWaiting = true;
        }
        if (syncArrived_[k] < syncParticipants_) return false;
        s.syncWaiting = false;
        Gate(s, -1, syncMax_[k] + syncLat_);
        ++s.syncRound;
        return true;
    }

    static bool Overlap(const TraceAcc& a, const TraceAcc& b) { return a.mem == b.mem && a.lo < b.hi && b.lo < a.hi; }

    // Earliest start of vector instruction r on core c: an instruction that reads bytes an earlier vector instruction
    // writes, or writes bytes one reads or writes, waits until that one's result is complete. The compiler separates
    // such pairs with PipeBarrier<PIPE_V> (the PipeBarrier and in-core sync pages); independent instructions
    // pipeline. In-flight entries complete by `earliest` are dropped (later instructions start later still).
    double VecDependency(size_t c, Sim& s, const TraceRec& r, double earliest) const {
        auto& fl = s.vecInFlight;
        fl.erase(std::remove_if(fl.begin(), fl.end(), [&](const VecInFlight& v) { return v.done <= earliest; }), fl.end());
        const TraceAcc* A = cores_[c].acc;
        if (A == nullptr) return 0;
        double t = 0;
        for (const VecInFlight& v : fl) {
            if (v.done <= t) continue;
            bool dep = false;
            for (uint32_t x = r.acc; x < r.acc + r.nacc && !dep; ++x) {
                for (uint32_t y = v.acc; y < v.acc + v.nacc && !dep; ++y) {
                    dep = (A[x].write || A[y].write) && Overlap(A[x], A[y]);
                }
            }
            if (dep) t = v.done;
        }
        return t;
    }

    // The 512-B L0C units instruction r writes (an Mmad) or reads (a Fixpipe), in address order.
    std::vector<int> L0cUnits(size_t c, const TraceRec& r, bool write) const {
        std::vector<int> u;
        const TraceAcc* A = cores_[c].acc;
        for (uint32_t x = r.acc; A != nullptr && x < r.acc + r.nacc; ++x) {
            if (A[x].mem != (uint8_t)Mem::L0C || (bool)A[x].write != write) continue;
            for (int k = (int)(A[x].lo / 512); k < std::min(kL0cUnits, (int)((A[x].hi + 511) / 512)); ++k) u.push_back(k);
        }
        std::sort(u.begin(), u.end());
        u.erase(std::unique(u.begin(), u.end()), u.end());
        return u;
    }

    // Unit flags (cube/unit_flag.h; Mmad and Fixpipe unitFlag 2 or 3): a Fixpipe moves each 512-B L0C unit once
    // the Mmad with unitFlag 3 that wrote it has completed it, an Mmad writes a unit once the Fixpipe with unitFlag 3
    // that read it has moved it, with no SetFlag/WaitFlag between PIPE_M and PIPE_FIX. Units complete evenly over an
    // instruction's body, in address order. Returns the earliest start at which instruction r (body cycles) never
    // waits for a unit: unit k of n is needed at start + body * k / n.
    double UnitWait(const Sim& s, const std::vector<int>& u, double body, bool mmad) const {
        double t = 0;
        const size_t n = u.size();
        for (size_t k = 0; k < n; ++k) t = std::max(t, (mmad ? s.unitFree : s.unitReady)[u[k]] - body * k / n);
        return t;
    }

    // Records when the units of an instruction with unitFlag 3 flip (its body starts at st).
    void UnitFlip(Sim& s, const std::vector<int>& u, double st, double body, bool mmad) const {
        const size_t n = u.size();
        for (size_t k = 0; k < n; ++k) (mmad ? s.unitReady : s.unitFree)[u[k]] = st + body * (k + 1) / n;
    }

    void Instr(size_t c, Sim& s, size_t i, const TraceRec& r, int p, Result& res, const Options* o) {
        const Family f = fam_[c][i];
        if (p < 0 || p == kS) {
            const double st = std::max(s.issue, s.gate[kS]), e = st + R_.scalarOp + (r.dcMiss ? R_.dcacheMiss : 0.0);
            s.issue = e;
            Emit(c, i, kS, st, e, res, o);
            ++res.familyCount[(int)f];
            res.familyCycles[(int)f] += e - st;
            return;
        }
        // The scalar unit issues in program order (the API's configuration writes, then the instruction) and stalls
        // while the pipe's queue is full.
        auto& q = s.starts[p];
        if (q.size() >= depth_) {
            s.issue = std::max(s.issue, q.front());
            q.pop_front();
        }
        const double issued = s.issue;
        s.issue += R_.issue[(int)f];
        EmitBusy(c, kS, issued, s.issue, res, o);
        const double t0 = s.issue;
        double st = std::max({t0, s.free[p], s.gate[p]});
        if (IsVector(f)) st = std::max(st, VecDependency(c, s, r, st));
        double body = BodyCycles(R_, f, r, cores_[c].aic && !l0b_[c].empty() && l0b_[c][i]);
        const bool units = r.arg != 0 && (f == Family::Mmad || f == Family::FixToGm || f == Family::FixToL1);
        std::vector<int> u;
        if (units) {
            u = L0cUnits(c, r, f == Family::Mmad);
            st = std::max(st, UnitWait(s, u, body, f == Family::Mmad));
        }
        double head = 0;
        if (IsVector(f) || f == Family::Mmad) {
            if (s.fresh[p] || st > s.free[p]) head = f == Family::Mmad ? R_.cubeHead : R_.vec[(int)f].head;
            if (IsVector(f)) s.tail = R_.vec[(int)f].tail;
        }
        if (f == Family::Mmad) res.macs += r.elems;
        const GmSide g = GmSideOf(f);
        if (g != GmSide::None && r.bytes > 0) {
            Dma& d = dmas_[dmaIdx_[c][s.dmaAt++]];
            const double bw = PathBw(R_, f, r);
            const double lat = body - r.bytes / bw;
            d.start = st;
            d.xferStart = st + lat;
            // L2 hits at the L2 share, the HBM lines (whole lines: hbm may exceed bytes) at the smaller of the shares
            const double l2 = std::min(bw, l2Bpc_ / d.kl), hbm = std::min(l2, hbmBpc_ / d.k);
            body = lat + (r.bytes - d.hbm) / l2 + d.hbm / hbm;
            d.end = st + body;
            res.gmBytes += r.bytes;
        }
        const double e = st + head + body;
        if (units && r.arg == 3) UnitFlip(s, u, st + head, body, f == Family::Mmad);
        if (IsVector(f)) s.vecInFlight.push_back({r.acc, r.nacc, e + s.tail});
        s.free[p] = e;
        s.fresh[p] = false;
        q.push_back(st);
        ++res.familyCount[(int)f];
        res.familyCycles[(int)f] += e - st;
        Emit(c, i, p, st, e, res, o);
    }
};

// Models a launch with the chip's parameter table.
inline Result ModelLaunch(const Params& P, std::vector<CoreTrace> cores, const Options& o) {
    Model m(P, std::move(cores));
    return m.Run(o);
}

}  // namespace twin::cost
