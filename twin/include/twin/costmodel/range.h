// Error bars of a modeled launch (docs/cost_model.md "Error bars"): the launch is modeled again with each parameter
// that has a plausible range (lo < hi) at lo and at hi, every other row at its value, then at two joint corners:
// every such parameter at the end that made the launch slower in its own run, and every one at the end that made it
// faster. One-at-a-time sensitivity plus a joint corner, not a probability interval. The runs are independent and
// run in parallel.
#pragma once
#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <string>
#include <thread>
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

// The model of each parameter table in `tables`, on up to hardware_concurrency threads (the runs are independent;
// the traces are only read).
inline std::vector<RunTime> ModelEach(const std::vector<Params>& tables, const std::vector<CoreTrace>& cores,
                                      const Options& o) {
    std::vector<RunTime> out(tables.size());
    std::vector<std::exception_ptr> errors(tables.size());
    std::atomic<size_t> next{0};
    auto worker = [&]() {
        for (size_t i; (i = next.fetch_add(1)) < tables.size();) {
            try {
                out[i] = TimeOf(ModelLaunch(tables[i], cores, o));
            } catch (...) {
                errors[i] = std::current_exception();
            }
        }
    };
    const size_t n = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), tables.size());
    std::vector<std::thread> threads;
    for (size_t w = 1; w < n; ++w) threads.emplace_back(worker);
    worker();
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors) {
        if (e) std::rethrow_exception(e);
    }
    return out;
}

// base: the run of P with the same traces and options (its schedule and histogram do not change its times, so the
// extra runs keep neither). An end equal to the row's value is the base run.
inline RangeResult ModelRange(const Params& P, const std::vector<CoreTrace>& cores, Options o, const RunTime& base,
                              const std::vector<ParamRange>& ranges) {
    o.keep.clear();
    o.bins = 0;
    RangeResult out;
    // The one-at-a-time runs: the table with one row at one end (index in `tables`, -1: the base run).
    std::vector<Params> tables;
    std::vector<std::array<int, 2>> runOf;
    for (const ParamRange& r : ranges) {
        if (!(r.lo < r.hi)) continue;
        out.params.push_back({r, base, base});
        std::array<int, 2> idx{-1, -1};
        for (int end = 0; end < 2; ++end) {
            const double v = end == 0 ? r.lo : r.hi;
            if (v == P[r.key.c_str()]) continue;
            idx[end] = (int)tables.size();
            tables.push_back(P);
            tables.back().Set(r.key, v);
        }
        runOf.push_back(idx);
    }
    const std::vector<RunTime> single = ModelEach(tables, cores, o);
    out.runs = (int)tables.size();
    // The joint corners: each row at the end that made the launch slower (faster) in its own run, when one did.
    std::vector<Params> corners{P, P};
    bool moves[2] = {false, false};  // fast, slow
    double widest = 0;
    for (size_t i = 0; i < out.params.size(); ++i) {
        ParamSensitivity& s = out.params[i];
        if (runOf[i][0] >= 0) s.atLo = single[runOf[i][0]];
        if (runOf[i][1] >= 0) s.atHi = single[runOf[i][1]];
        const ParamRange& r = s.range;
        const bool loSlower = s.atLo.totalUs > s.atHi.totalUs;
        if (std::min(s.atLo.totalUs, s.atHi.totalUs) < base.totalUs) {
            corners[0].Set(r.key, loSlower ? r.hi : r.lo);
            moves[0] = true;
        }
        if (std::max(s.atLo.totalUs, s.atHi.totalUs) > base.totalUs) {
            corners[1].Set(r.key, loSlower ? r.lo : r.hi);
            moves[1] = true;
        }
        const double spread = std::max({base.totalUs, s.atLo.totalUs, s.atHi.totalUs}) -
                              std::min({base.totalUs, s.atLo.totalUs, s.atHi.totalUs});
        if (spread > widest) widest = spread, out.widest = (int)i;
    }
    std::vector<Params> moved;
    for (int k = 0; k < 2; ++k) {
        if (moves[k]) moved.push_back(corners[k]);
    }
    const std::vector<RunTime> joint = ModelEach(moved, cores, o);
    out.runs += (int)moved.size();
    out.fast = moves[0] ? joint[0] : base;
    out.slow = moves[1] ? joint[moves[0] ? 1 : 0] : base;
    return out;
}

}  // namespace twin::cost
