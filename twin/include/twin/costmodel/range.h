// Error bars of a modeled launch (docs/cost_model.md "Error bars"): the launch is modeled again with each parameter
// that has a plausible range (lo < hi) at lo and at hi, every other row at its value, then at two joint corners:
// every such parameter at the end that made the launch slower in its own run, and every one at the end that made it
// faster. One-at-a-time sensitivity plus a joint corner, not a probability interval.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "twin/costmodel/schedule.h"

namespace twin::cost {

struct ParamRange {
    std::string key;
    double lo, hi;
};

// What the range reports of one model run: kernel cycles and the modeled time (kernel + launch overhead) in us.
struct RunTime {
    double cycles = 0, totalUs = 0;
};

inline RunTime TimeOf(const Result& r) { return {r.cycles, (r.cycles + r.launchCycles) / r.clockMHz}; }

struct ParamSensitivity {
    ParamRange range;
    RunTime atLo, atHi;
};

struct RangeResult {
    RunTime fast, slow;                    // the joint corners
    std::vector<ParamSensitivity> params;  // the rows with lo < hi, in the order given
    int widest = -1;                       // index in params of the row that moves the time most (-1: none moves it)
    int runs = 0;                          // model runs beyond the base one
};

// base: the run of P with the same traces and options (its schedule and histogram do not change its times, so the
// extra runs keep neither). An end equal to the row's value is the base run.
inline RangeResult ModelRange(const Params& P, const std::vector<CoreTrace>& cores, Options o, const RunTime& base,
                              const std::vector<ParamRange>& ranges) {
    o.keep.clear();
    o.bins = 0;
    RangeResult out;
    auto run = [&](const Params& q) {
        ++out.runs;
        return TimeOf(ModelLaunch(q, cores, o));
    };
    auto at = [&](const std::string& key, double v) {
        if (v == P[key.c_str()]) return base;
        Params q = P;
        q.Set(key, v);
        return run(q);
    };
    Params slow = P, fast = P;
    bool slowMoves = false, fastMoves = false;
    double widest = 0;
    for (const ParamRange& r : ranges) {
        if (!(r.lo < r.hi)) continue;
        const ParamSensitivity s{r, at(r.key, r.lo), at(r.key, r.hi)};
        const bool loSlower = s.atLo.totalUs > s.atHi.totalUs;
        if (std::max(s.atLo.totalUs, s.atHi.totalUs) > base.totalUs) slow.Set(r.key, loSlower ? r.lo : r.hi), slowMoves = true;
        if (std::min(s.atLo.totalUs, s.atHi.totalUs) < base.totalUs) fast.Set(r.key, loSlower ? r.hi : r.lo), fastMoves = true;
        const double spread = std::max({base.totalUs, s.atLo.totalUs, s.atHi.totalUs}) -
                              std::min({base.totalUs, s.atLo.totalUs, s.atHi.totalUs});
        if (spread > widest) widest = spread, out.widest = (int)out.params.size();
        out.params.push_back(s);
    }
    out.slow = slowMoves ? run(slow) : base;
    out.fast = fastMoves ? run(fast) : base;
    return out;
}

}  // namespace twin::cost
