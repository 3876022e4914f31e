// npu_flash_attn._C bindings of the cycle model (twin/include/twin/costmodel): the parameter table, the model of a
// standalone kernel's trace (by the pointers npu_flash_attn.twin's library hands out) and the hook that models the
// op launches (cost_model_hook.h), each optionally with its error bars (range.h).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "kernel_operator.h"
#include "cost_model_hook.h"
#include "twin/costmodel/range.h"

namespace py = pybind11;

namespace {

// Error bars: off, or on with the table's ranges, the rows in `given` replaced by these (lo, hi).
struct RangeSettings {
    bool on = false;
    std::map<std::string, std::pair<double, double>> given;
};

// ranges=False | True | {key: (lo, hi)} (True with these rows' ranges replaced, for tests and what-ifs).
RangeSettings RangeSettingsOf(const py::object& ranges) {
    if (py::isinstance<py::bool_>(ranges)) return {ranges.cast<bool>(), {}};
    if (!py::isinstance<py::dict>(ranges)) {
        throw py::type_error("ranges must be True, False or a dict {key: (lo, hi)}, got " +
                             py::repr(ranges).cast<std::string>());
    }
    RangeSettings s{true, {}};
    for (const auto& kv : ranges.cast<py::dict>()) {
        if (!py::isinstance<py::str>(kv.first)) {
            throw py::type_error("ranges: keys must be parameter names (str), got " +
                                 py::repr(kv.first).cast<std::string>());
        }
        const std::string key = kv.first.cast<std::string>();
        try {
            s.given[key] = kv.second.cast<std::pair<double, double>>();
        } catch (const py::cast_error&) {
            throw py::type_error("ranges['" + key + "'] must be a pair (lo, hi) of numbers, got " +
                                 py::repr(kv.second).cast<std::string>());
        }
    }
    return s;
}

struct OpSettings {
    bool on = false, modelOnly = false;
    int keepBlocks = 1, bins = 0, sampleBlocks = 0;
    std::map<std::string, double> overrides;
    RangeSettings ranges;
};
OpSettings g_ops;

const npu_fa::ChipSpec& ChipOf(const std::string& name) {
    const npu_fa::ChipSpec* c = npu_fa::FindChip(name.c_str());
    if (c == nullptr) throw py::value_error("chip '" + name + "' is not in the chip table");
    return *c;
}

twin::cost::Params MakeParams(const npu_fa::ChipSpec& chip, const std::map<std::string, double>& overrides) {
    twin::cost::Params P(chip);
    for (const auto& kv : overrides) {
        try {
            P.Set(kv.first, kv.second);
        } catch (const std::invalid_argument& e) {
            throw py::value_error(e.what());
        }
    }
    return P;
}

// The rows the error bars move: the table's rows with lo < hi, except those the caller overrode (taken as exact),
// then the caller's given ranges (each must hold the row's value).
std::vector<twin::cost::ParamRange> RangesOf(const twin::cost::Params& P, const RangeSettings& s) {
    std::vector<twin::cost::ParamRange> out;
    for (const twin::cost::ParamRow& r : P.rows) {
        const bool overridden = std::strcmp(r.confidence, "override") == 0;
        if (r.lo < r.hi && !overridden && !s.given.count(r.key)) out.push_back({r.key, r.lo, r.hi});
    }
    for (const auto& [key, lohi] : s.given) {
        double v;
        try {
            v = P[key.c_str()];
        } catch (const std::invalid_argument& e) {
            throw py::value_error(std::string("ranges: ") + e.what());
        }
        const auto [lo, hi] = lohi;
        if (!(std::isfinite(lo) && std::isfinite(hi) && lo <= v && v <= hi)) {
            auto num = [](double x) { return py::repr(py::float_(x)).cast<std::string>(); };
            throw py::value_error("ranges['" + key + "'] = (" + num(lo) + ", " + num(hi) +
                                  ") must be finite with lo <= value <= hi (the value is " + num(v) + ")");
        }
        out.push_back({key, lo, hi});
    }
    return out;
}

py::dict RangeDict(const twin::cost::RangeResult& r, double seconds) {
    py::dict d, by;
    d["cycles_low"] = r.fast.cycles, d["cycles_high"] = r.slow.cycles;
    d["total_us_low"] = r.fast.totalUs, d["total_us_high"] = r.slow.totalUs;
    for (const twin::cost::ParamSensitivity& s : r.params) {
        py::dict e;
        e["lo"] = s.range.lo, e["hi"] = s.range.hi;
        e["cycles"] = std::vector<double>{s.atLo.cycles, s.atHi.cycles};
        e["total_us"] = std::vector<double>{s.atLo.totalUs, s.atHi.totalUs};
        by[py::str(s.range.key)] = e;
    }
    d["by_param"] = by;
    d["param"] = r.widest < 0 ? py::object(py::none()) : py::object(py::str(r.params[r.widest].range.key));
    d["runs"] = r.runs;
    d["seconds"] = seconds;
    return d;
}

py::dict Run(const twin::cost::Params& P, const std::vector<twin::cost::CoreTrace>& cores, int keepBlocks, int bins,
             double blockScale, const std::vector<twin::GmRange>& gm, const RangeSettings& ranges) {
    using namespace twin::cost;
    Options o;
    for (const twin::GmRange& g : gm) o.gm.push_back({(uint64_t)(uintptr_t)g.begin, g.bytes});
    o.bins = bins;
    o.blockScale = blockScale;
    for (const CoreTrace& c : cores) o.keep.push_back(c.block < keepBlocks);
    const std::vector<ParamRange> rows = ranges.on ? RangesOf(P, ranges) : std::vector<ParamRange>{};
    Result r;
    RangeResult range;
    double rangeSeconds = 0;
    try {
        r = ModelLaunch(P, cores, o);
        if (ranges.on) {
            const auto t0 = std::chrono::steady_clock::now();
            range = ModelRange(P, cores, o, TimeOf(r), rows);
            rangeSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
    } catch (const std::runtime_error& e) {
        throw py::value_error(e.what());
    }
    py::dict d;
    if (ranges.on) d["range"] = RangeDict(range, rangeSeconds);
    py::dict params;  // the values this run used (the table with the overrides)
    for (const ParamRow& row : P.rows) params[py::str(row.key)] = row.value;
    d["params"] = params;
    const double mhz = r.clockMHz;
    d["cycles"] = r.cycles;
    d["launch_cycles"] = r.launchCycles;
    d["clock_mhz"] = mhz;
    d["kernel_us"] = r.cycles / mhz;
    d["total_us"] = (r.cycles + r.launchCycles) / mhz;
    d["macs"] = r.macs;
    d["gm_bytes"] = r.gmBytes;
    d["hbm_bytes"] = r.hbmBytes;
    d["l2_hit_bytes"] = r.l2HitBytes;
    py::list cl;
    for (size_t c = 0; c < cores.size(); ++c) {
        py::dict e, busy;
        e["name"] = cores[c].name;
        e["kind"] = cores[c].aic ? "aic" : "aiv";
        e["block"] = cores[c].block;
        e["end"] = r.coreEnd[c];
        for (int p = 0; p < kPipes; ++p) {
            const bool used = cores[c].aic ? p != kV : (p == kS || p == kV || p == kMte2 || p == kMte3);
            if (used) busy[PipeName(p)] = r.busy[c][p];
        }
        e["busy"] = busy;
        cl.append(e);
    }
    d["cores"] = cl;
    py::dict fam;
    for (int f = 0; f < (int)Family::COUNT; ++f) {
        if (r.familyCount[f] == 0) continue;
        py::dict e;
        e["count"] = r.familyCount[f];
        e["cycles"] = r.familyCycles[f];
        fam[FamilyName((Family)f)] = e;
    }
    d["families"] = fam;
    // Schedule of the kept cores: parallel arrays, op names by index.
    const size_t n = r.schedule.size();
    py::array_t<int32_t> core(n), op(n);
    py::array_t<uint32_t> rec(n);
    py::array_t<uint64_t> src(n), dst(n);
    py::array_t<int8_t> pipe(n);
    py::array_t<double> start(n), end(n);
    std::map<const char*, int32_t> opIdx;
    py::list names;
    for (size_t i = 0; i < n; ++i) {
        const Interval& iv = r.schedule[i];
        const char* name = cores[iv.core].recs[iv.rec].op;
        auto it = opIdx.find(name);
        if (it == opIdx.end()) {
            it = opIdx.emplace(name, (int32_t)opIdx.size()).first;
            names.append(name);
        }
        core.mutable_at(i) = iv.core, op.mutable_at(i) = it->second, pipe.mutable_at(i) = (int8_t)iv.pipe;
        start.mutable_at(i) = iv.start, end.mutable_at(i) = iv.end;
        rec.mutable_at(i) = iv.rec, src.mutable_at(i) = cores[iv.core].recs[iv.rec].src,
        dst.mutable_at(i) = cores[iv.core].recs[iv.rec].dst;
    }
    py::dict sch;
    sch["core"] = core, sch["pipe"] = pipe, sch["start"] = start, sch["end"] = end, sch["op"] = op, sch["op_names"] = names;
    sch["rec"] = rec, sch["src"] = src, sch["dst"] = dst;
    d["schedule"] = sch;
    py::list pn;
    for (int p = 0; p < kPipes; ++p) pn.append(PipeName(p));
    d["pipes"] = pn;
    if (bins > 0) {
        py::array_t<float> h({(py::ssize_t)cores.size(), (py::ssize_t)kPipes, (py::ssize_t)bins});
        std::memcpy(h.mutable_data(), r.hist.data(), r.hist.size() * sizeof(float));
        d["hist"] = h;
        d["bin_cycles"] = r.binCycles;
    }
    return d;
}

// Standalone kernels: [(core name, address of its TraceRec array, length, address of its TraceAcc array)] from
// npu_flash_attn.twin (KernelLibrary.trace_refs). block_scale: launch blocks per traced block (a block-sampled
// model-only launch), as AddCostModel derives for the ops.
py::dict CostModelTrace(const std::vector<std::tuple<std::string, uintptr_t, uint64_t, uintptr_t>>& cores,
                        const std::string& chip, const std::map<std::string, double>& overrides, int keepBlocks,
                        int bins, double blockScale, const py::object& ranges) {
    if (!(blockScale >= 1)) throw py::value_error("block_scale must be >= 1 (launch blocks per traced block)");
    std::vector<twin::cost::CoreTrace> cs;
    for (const auto& [name, addr, n, acc] : cores) {
        const bool aic = name.rfind("AIC", 0) == 0;
        cs.push_back({name, aic, twin::cost::BlockOfName(name, aic), (const twin::TraceRec*)addr, (size_t)n,
                      (const twin::TraceAcc*)acc});
    }
    return Run(MakeParams(ChipOf(chip), overrides), cs, keepBlocks, bins, blockScale, {}, RangeSettingsOf(ranges));
}

py::list CostParams(const std::string& chip) {
    py::list out;
    for (const twin::cost::ParamRow& r : twin::cost::ChipRows(ChipOf(chip))) {
        py::dict d;
        d["key"] = r.key, d["value"] = r.value, d["unit"] = r.unit, d["source"] = r.source, d["confidence"] = r.confidence;
        d["lo"] = r.lo, d["hi"] = r.hi;
        out.append(d);
    }
    return out;
}

}  // namespace

bool CostModelOn() { return g_ops.on; }
bool CostModelOnly() { return g_ops.modelOnly; }

std::vector<uint32_t> SampledBlocks(uint32_t numBlocks) {
    std::vector<uint32_t> b;
    const uint32_t k = (uint32_t)std::max(0, g_ops.sampleBlocks);
    if (!g_ops.modelOnly || k == 0 || k >= numBlocks) return b;
    for (uint32_t i = 0; i < k; ++i) b.push_back(k == 1 ? 0 : (uint32_t)((uint64_t)i * (numBlocks - 1) / (k - 1)));
    return b;
}

void AddCostModel(const twin::LaunchResult& r, const std::vector<twin::GmRange>& gm, const npu_fa::ChipSpec& chip,
                  py::dict& info) {
    std::vector<twin::cost::CoreTrace> cores = twin::cost::CoresOf(r);
    std::set<int64_t> blocks;
    for (const auto& c : cores) blocks.insert(c.block);
    const double scale = blocks.empty() ? 1.0 : (double)r.numBlocks / (double)blocks.size();
    py::dict d = Run(MakeParams(chip, g_ops.overrides), cores, g_ops.keepBlocks, g_ops.bins, scale, gm, g_ops.ranges);
    d["sampled_blocks"] = blocks.size();
    d["num_blocks"] = r.numBlocks;
    info["cost_model"] = d;
}

void RegisterCostModel(py::module_& m) {
    m.def("cost_params", &CostParams, py::arg("chip"));
    m.def("cost_model_trace", &CostModelTrace, py::arg("cores"), py::arg("chip"),
          py::arg("overrides") = std::map<std::string, double>{}, py::arg("keep_blocks") = 1, py::arg("bins") = 0,
          py::arg("block_scale") = 1.0, py::arg("ranges") = false);
    m.def("set_cost_model",
          [](bool on, int keepBlocks, int bins, const std::map<std::string, double>& overrides, bool modelOnly,
             int sampleBlocks, const py::object& ranges) {
              if (sampleBlocks < 0) throw py::value_error("sample_blocks must be >= 0 (0: every block)");
              if (sampleBlocks > 0 && !modelOnly) throw py::value_error("sample_blocks needs model_only=True");
              g_ops = OpSettings{on, modelOnly, keepBlocks, bins, sampleBlocks, overrides, RangeSettingsOf(ranges)};
          },
          py::arg("enabled"), py::arg("keep_blocks") = 1, py::arg("bins") = 0,
          py::arg("overrides") = std::map<std::string, double>{}, py::arg("model_only") = false,
          py::arg("sample_blocks") = 0, py::arg("ranges") = false);
}
