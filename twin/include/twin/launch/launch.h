// Runs a kernel body on the cores of one launch. Mix launches (KERNEL_TYPE_MIX_*) run every core on its own
// thread at once, since cores may wait on each other; AIV_ONLY/AIC_ONLY cores cannot sync across cores and run
// on a small worker pool. Each core gets private, poisoned local memories.
#pragma once
#include <array>
#include <atomic>
#include <thread>

#include "twin/launch/launch_state.h"
#include "twin/memory/core_mem.h"
#include "twin/sync/sync.h"
#include "twin/memory/poison_store.h"

namespace twin {

struct LaunchOptions {
    int kernelType = AscendC::KERNEL_TYPE_AIV_ONLY;
    uint32_t numBlocks = 1;
    const npu_fa::ChipSpec* chip = nullptr;  // default: Ascend910B2
    std::vector<GmRange> gm;                 // buffers the kernel may touch; empty = unchecked
    bool trace = true;
    uint64_t tilingKey = 0;                  // what TILING_KEY_IS compares against (g_tilingKey)
    bool hazards = HazardsDefault();         // pipe-hazard checks (hazard.h); NPU_TWIN_HAZARDS=0 turns them off
    bool modelOnly = false;                  // trace without arithmetic (runtime.h Computing()); implies no hazard checks
    // Model-only launches may run a sample of the blocks (ascending block indices < numBlocks; empty: all). The kernel
    // still sees numBlocks; cross-core flags stay inside a block, SyncAll joins the sampled cores only.
    std::vector<uint32_t> sampleBlocks;
};

struct LaunchResult {
    uint32_t numBlocks = 0;  // the launch's block count (the traces may hold a sample of them)
    std::vector<std::string> coreNames;
    std::vector<std::array<std::pair<uint64_t, uint64_t>, (int)Mem::COUNT>> memSpans;  // per core: [base, size) per Mem
    std::vector<int32_t> coreTypes;
    std::vector<std::vector<TraceRec>> traces;
    std::vector<std::vector<TraceAcc>> traceAccs;  // per core: TraceRec::acc indexes it
    std::vector<std::string> warnings;  // LaunchState::warnings (Warn)
};

inline const char* KernelTypeName(int t) {
    static const char* n[] = {"KERNEL_TYPE_AIV_ONLY", "KERNEL_TYPE_AIC_ONLY", "KERNEL_TYPE_MIX_AIV_1_0",
                              "KERNEL_TYPE_MIX_AIC_1_0", "KERNEL_TYPE_MIX_AIC_1_1", "KERNEL_TYPE_MIX_AIC_1_2"};
    return (t >= 0 && t < 6) ? n[t] : "unknown";
}

// The core's own memories, filled as NPU_TWIN_LOCAL_FILL asks (memory/poison_store.h); one it lacks is provided,
// poisoned, when the kernel first allocates there (memory/core_mem.h), and is never read.
inline void AllocCoreMemory(CoreState& c, LocalFill fill) {
    for (int m = 0; m < (int)Mem::GM; ++m) {
        if (!CoreHasMem(c.coreType, (Mem)m)) continue;
        ProvideMem(c, (Mem)m);
        if (fill == LocalFill::kPoison) continue;
        const uint16_t unit = fill == LocalFill::kNaN ? 0x7FC0 : 0x3C00;  // an earlier kernel's NaN, or finite data
        std::vector<uint8_t>& v = c.mem[m];
        for (size_t i = 0; i + 2 <= v.size(); i += 2) std::memcpy(&v[i], &unit, 2);
    }
}

// Checks what must hold when a core's kernel body returns.
inline void CheckCoreEnd(CoreState& c) {
    for (int e = 0; e < kNumHardEvents; ++e) {
        for (int id = 0; id < kEventIds; ++id) {
            if (c.flagSet[e][id]) {
                Fail("kernel end", "SetFlag<HardEvent::%s>(%d) has no matching WaitFlag", HardEventName(e), id);
            }
        }
    }
}

inline LaunchResult Launch(const LaunchOptions& opt, const std::function<void()>& body) {
    using namespace AscendC;
    const npu_fa::ChipSpec* chip = opt.chip ? opt.chip : npu_fa::FindChip(npu_fa::kDefaultChip);
    const int kt = opt.kernelType;
    if (kt < KERNEL_TYPE_AIV_ONLY || kt > KERNEL_TYPE_MIX_AIC_1_2) {
        ThrowPlain("launch: kernel type " + std::to_string(kt) + " is not supported on dav-2201 (A2/A3 accept the first six KernelMetaType values)");
    }
    const bool mix = kt >= KERNEL_TYPE_MIX_AIV_1_0;
    if (opt.numBlocks < 1 || opt.numBlocks > 65535) {
        ThrowPlain("launch: numBlocks " + std::to_string(opt.numBlocks) + " is outside [1, 65535]");
    }
    const bool hasAic = kt == KERNEL_TYPE_AIC_ONLY || kt == KERNEL_TYPE_MIX_AIC_1_0 || kt == KERNEL_TYPE_MIX_AIC_1_1 ||
                        kt == KERNEL_TYPE_MIX_AIC_1_2;
    const int aivPerBlock = (kt == KERNEL_TYPE_MIX_AIC_1_2) ? 2 : (kt == KERNEL_TYPE_AIV_ONLY || kt == KERNEL_TYPE_MIX_AIV_1_0 || kt == KERNEL_TYPE_MIX_AIC_1_1) ? 1 : 0;
    if (mix) {
        uint32_t limit = hasAic ? chip->aicNum : chip->aivNum;
        if (opt.numBlocks > limit) {
            ThrowPlain("launch: " + std::string(KernelTypeName(kt)) + " with numBlocks " + std::to_string(opt.numBlocks) +
                       " exceeds the " + std::to_string(limit) + " physical cores of " + chip->name +
                       " (all cores of a mix launch must be resident at once)");
        }
    }

    if (!opt.sampleBlocks.empty()) {
        if (!opt.modelOnly) ThrowPlain("launch: sampleBlocks needs a model-only launch (the other blocks' outputs would be missing)");
        for (size_t i = 0; i < opt.sampleBlocks.size(); ++i) {
            if (opt.sampleBlocks[i] >= opt.numBlocks || (i > 0 && opt.sampleBlocks[i] <= opt.sampleBlocks[i - 1])) {
                ThrowPlain("launch: sampleBlocks must be ascending block indices below numBlocks " + std::to_string(opt.numBlocks));
            }
        }
    }
    std::vector<uint32_t> blocks = opt.sampleBlocks;
    if (blocks.empty()) {
        for (uint32_t b = 0; b < opt.numBlocks; ++b) blocks.push_back(b);
    }

    LaunchState L;
    const LocalFill fill = LocalFillMode();
    L.poison.on = !opt.modelOnly && PoisonCheckDefault();
    L.kernelType = kt;
    L.numBlocks = opt.numBlocks;
    L.gm = opt.gm;
    std::vector<std::unique_ptr<CoreState>> cores;
    for (uint32_t b : blocks) {
        if (hasAic) {
            auto c = std::make_unique<CoreState>();
            c->coreType = AIC;
            c->blockIdx = c->apiBlockIdx = b;
            c->subBlockIdx = 0;
            c->subBlockNum = 1;
            c->taskRatio = 1;
            cores.push_back(std::move(c));
        }
        for (int s = 0; s < aivPerBlock; ++s) {
            auto c = std::make_unique<CoreState>();
            c->coreType = AIV;
            c->blockIdx = b;
            c->subBlockIdx = s;
            c->subBlockNum = aivPerBlock;
            c->taskRatio = aivPerBlock;
            c->apiBlockIdx = (int64_t)b * aivPerBlock + s;
            cores.push_back(std::move(c));
        }
    }
    for (size_t i = 0; i < cores.size(); ++i) {
        CoreState& c = *cores[i];
        c.id = (int)i;
        c.blockNum = opt.numBlocks;
        c.chip = chip;
        c.launch = &L;
        c.traceOn = opt.trace;
        c.modelOnly = opt.modelOnly;
        c.hz.on = opt.hazards && !opt.modelOnly;
        if (c.hz.on) c.hz.Init((int)i, (int)cores.size());
        L.cores.push_back(&c);
    }
    L.counters.assign(cores.size(), {});
    L.pending.assign(cores.size(), {});
    L.pendingSnaps.assign(cores.size(), {});
    L.counterSnaps.assign(cores.size(), {});
    L.live = (int)cores.size();
    std::vector<std::array<std::pair<uint64_t, uint64_t>, (int)Mem::COUNT>> spans(cores.size());

    auto runCore = [&](CoreState& c) {
        tCore = &c;
#if !defined(SPLIT_CORE_CUBE) && !defined(SPLIT_CORE_VEC)
        g_coreType = c.coreType;  // per-core builds: a constant, and each core runs its own build (core_builds.h)
#endif
        block_idx = c.blockIdx;
        sub_block_idx = c.subBlockIdx;
        g_tilingKey = opt.tilingKey;
        try {
            AllocCoreMemory(c, fill);
            body();
            CheckCoreEnd(c);
        } catch (const TwinAborted&) {
        } catch (const std::exception& e) {
            std::lock_guard<std::mutex> g(L.mu);
            if (!L.aborted) {
                L.aborted = true;
                L.error = e.what();
            }
        }
        for (int m = 0; m < (int)Mem::COUNT; ++m) {
            spans[c.id][m] = {(uint64_t)(uintptr_t)c.mem[m].data(), c.mem[m].size()};
            std::vector<uint8_t>().swap(c.mem[m]);
        }
        tCore = nullptr;
        std::lock_guard<std::mutex> g(L.mu);
        --L.live;
        L.cv.notify_all();
    };

    // Every core on its own thread when all fit the chip at once (always for mix launches), so cores may wait on
    // each other through GM (IBWait, software SyncAll, ...); oversubscribed AIV/AIC-only launches, whose blocks run
    // in rounds on the NPU too, go through a worker pool.
    const uint32_t physical = hasAic ? chip->aicNum : chip->aivNum;
    if (mix || opt.numBlocks <= physical) {
        std::vector<std::thread> threads;
        threads.reserve(cores.size());
        for (auto& c : cores) threads.emplace_back(runCore, std::ref(*c));
        for (auto& t : threads) t.join();
    } else {
        std::atomic<size_t> next{0};
        unsigned hw = std::max(1u, std::thread::hardware_concurrency());
        unsigned nw = (unsigned)std::min<size_t>(hw, cores.size());
        auto worker = [&]() {
            for (size_t i; (i = next.fetch_add(1)) < cores.size();) {
                {
                    std::lock_guard<std::mutex> g(L.mu);
                    if (L.aborted) return;
                }
                runCore(*cores[i]);
            }
        };
        std::vector<std::thread> threads;
        for (unsigned w = 0; w < nw; ++w) threads.emplace_back(worker);
        for (auto& t : threads) t.join();
    }
    if (L.aborted) throw TwinError(L.error);
    // Poison left in GM is a warning (Warn's form): the twin cannot tell which GM bytes the host reads, and the
    // programming guide lets a kernel store redundant data it never overwrites; the op's launches refuse warnings.
    const std::string poison = PoisonLeftReport(L);
    if (!poison.empty()) L.warnings.push_back(poison);

    LaunchResult r;
    r.numBlocks = opt.numBlocks;
    r.warnings = std::move(L.warnings);
    r.memSpans = std::move(spans);
    for (auto& c : cores) {
        r.coreNames.push_back(c->Name());
        r.coreTypes.push_back(c->coreType);
        r.traces.push_back(std::move(c->trace));
        r.traceAccs.push_back(std::move(c->traceAcc));
    }
    return r;
}

// A digest of a launch's traces that two runs of the same kernel on the same problem share: every record's fields, its
// addresses as (on-core memory or GM buffer of `gm`, offset). Model-only and full launches must agree on it.
inline uint64_t TraceDigest(const LaunchResult& r, const std::vector<GmRange>& gm) {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t v) {
        for (int i = 0; i < 8; ++i, v >>= 8) h = (h ^ (v & 0xFF)) * 1099511628211ull;
    };
    for (size_t c = 0; c < r.traces.size(); ++c) {
        auto where = [&](uint64_t a) {
            for (int m = 0; m < (int)Mem::COUNT; ++m) {
                const auto& s = r.memSpans[c][m];
                if (s.second && a >= s.first && a <= s.first + s.second) {
                    mix(m), mix(a - s.first);
                    return;
                }
            }
            for (size_t g = 0; g < gm.size(); ++g) {
                const uint64_t b = (uint64_t)(uintptr_t)gm[g].begin;
                if (a >= b && a <= b + gm[g].bytes) {
                    mix(100 + g), mix(a - b);
                    return;
                }
            }
            mix(a == 0 ? 0 : 999);  // not a launch buffer (a null tensor, or host data the kernel never owns)
        };
        mix(r.traces[c].size());
        for (const TraceRec& t : r.traces[c]) {
            for (const char* p = t.op; *p; ++p) mix((uint8_t)*p);
            mix(t.pipe), mix((uint64_t)t.kind), mix(t.arg), mix(t.repeats), mix(t.elems), mix(t.bytes);
            where(t.dst), where(t.src);
        }
    }
    return h;
}

// Launches a kernel function whose parameters are all GM_ADDR, as CANN's ICPU_RUN_KF does.
template <class... Args>
inline LaunchResult LaunchKernel(void (*kernel)(Args...), const LaunchOptions& opt, Args... args) {
    return Launch(opt, [&]() { kernel(args...); });
}

}  // namespace twin
