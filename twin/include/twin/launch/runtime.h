// The twin's execution state: one CoreState per running core (AIC or AIV), the launch that owns them, strict
// error reporting and the per-core instruction trace. Kernel code never sees this; the AscendC API reaches it
// through twin::Cur().
#pragma once
#include <algorithm>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "chip_spec.h"
#include "twin/launch/core_types.h"

// Core kind. CANN's compiler builds a kernel once per core type it runs on, with __DAV_CUBE__ (cube) or __DAV_VEC__
// (vector) defined; for dav-2201 that defines SPLIT_CORE_CUBE / SPLIT_CORE_VEC, makes g_coreType a constant and
// ASCEND_IS_AIV/AIC `if constexpr` conditions (impl/utils/sys_macros.h), so `if ASCEND_IS_AIC {` and
// `template <int32_t CORE_TYPE = g_coreType>` work. npu_flash_attn.twin.compile_kernel builds kernels that way
// (twin/launch/core_builds.h). Without either macro (the extension's op kernels, plain C++ hosts) the twin keeps the
// CPU debug form of that header: one build for every core, g_coreType set per core at run time.
#if defined(__DAV_CUBE__) && defined(__DAV_VEC__)
#error "define one of __DAV_CUBE__ (cube build) and __DAV_VEC__ (vector build), not both"
#endif
#if defined(__DAV_CUBE__) && __NPU_ARCH__ == 2201
#define SPLIT_CORE_CUBE
constexpr int32_t g_coreType = AscendC::AIC;
#elif defined(__DAV_VEC__) && __NPU_ARCH__ == 2201
#define SPLIT_CORE_VEC
constexpr int32_t g_coreType = AscendC::AIV;
#endif
#if defined(SPLIT_CORE_CUBE) || defined(SPLIT_CORE_VEC)
#define ASCEND_IS_AIV constexpr(g_coreType == AscendC::AIV)
#define ASCEND_IS_AIC constexpr(g_coreType == AscendC::AIC)
#define ASCEND_IS_NOT_AIV constexpr(g_coreType != AscendC::AIV)
#define ASCEND_IS_NOT_AIC constexpr(g_coreType != AscendC::AIC)
#else
inline thread_local int32_t g_coreType = AscendC::AIV;
#define ASCEND_IS_AIV (g_coreType == AscendC::AIV)
#define ASCEND_IS_AIC (g_coreType == AscendC::AIC)
#define ASCEND_IS_NOT_AIV (g_coreType != AscendC::AIV)
#define ASCEND_IS_NOT_AIC (g_coreType != AscendC::AIC)
#endif
// Raw core-index builtins of the CPU debug build (set per core by the launcher): block_idx is the AI core index
// (0,0,1,1,... for the AIVs of a 1:2 mix launch; GetBlockIdx() is the API form), sub_block_idx the AIV's index in it.
inline thread_local int64_t block_idx = 0;
inline thread_local int64_t sub_block_idx = 0;
// Tiling key of the running launch, read by TILING_KEY_IS (set per core by the launcher from LaunchOptions).
inline thread_local uint64_t g_tilingKey = 0;

namespace twin {

// Raised for every condition the NPU would silently get wrong; reaches Python as npu_flash_attn.twin.TwinError.
class TwinError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};
// Raised in the other cores after one core failed, so they unwind quietly.
class TwinAborted : public std::runtime_error {
public:
    TwinAborted() : std::runtime_error("aborted: another core failed") {}
};

// Physical on-core buffers. GM is shared by all cores.
enum class Mem : uint8_t { UB, L1, L0A, L0B, L0C, BT, FB, GM, COUNT };
inline const char* MemName(Mem m) {
    static const char* names[] = {"UB", "L1", "L0A", "L0B", "L0C", "BT", "FB", "GM"};
    return names[(int)m];
}

inline Mem PhysicalMem(AscendC::TPosition p) {
    using AscendC::TPosition;
    switch (p) {
        case TPosition::VECIN: case TPosition::VECOUT: case TPosition::VECCALC: return Mem::UB;
        case TPosition::A1: case TPosition::B1: case TPosition::C1: case TPosition::TSCM: case TPosition::SHM:
            return Mem::L1;
        case TPosition::A2: return Mem::L0A;
        case TPosition::B2: return Mem::L0B;
        case TPosition::CO1: return Mem::L0C;
        case TPosition::C2: return Mem::BT;
        case TPosition::C2PIPE2GM: return Mem::FB;
        default: return Mem::GM;
    }
}

inline const char* PositionName(AscendC::TPosition p) {
    static const char* names[] = {"GM", "A1", "A2", "B1", "B2", "C1", "C2", "CO1", "CO2", "VECIN", "VECOUT",
                                  "VECCALC", "SPM", "TSCM", "C2PIPE2GM", "C2PIPE2LOCAL", "MAX"};
    return names[(int)p];
}

// One trace record per API call or sync. `op` is a string literal (compared by pointer).
enum class TraceKind : uint8_t { Instr, SetFlag, WaitFlag, Barrier, CrossSet, CrossWait, Atomic };
// On-core bytes [lo, hi) of memory `mem` (Mem) an instruction reads or writes, as its API noted them for the hazard
// checker (NoteAccess: an operand's whole span, strides included). The cost model orders dependent vector
// instructions and unit-flag handovers by them.
struct TraceAcc {
    uint32_t lo, hi;
    uint8_t mem;
    uint8_t write;
};
struct TraceRec {
    const char* op;
    uint8_t pipe;       // pipe_t
    TraceKind kind;
    uint16_t arg;       // event id / flag id / mode; Mmad and Fixpipe: their unitFlag
    uint32_t repeats;   // vector repeats, fractal count, or DMA block count
    uint64_t elems;     // elements processed (vector / cube MACs / fixpipe elements)
    uint64_t bytes;     // bytes moved
    uint64_t dst, src;  // addresses (on-core byte offsets or GM pointers)
    uint32_t acc, nacc; // its on-core accesses: entries [acc, acc + nacc) of the core's TraceAcc list
    // A scalar GM read (GetValue) that missed the core's DCache (sync/dcache.h): the cost model adds an L2 round
    // trip. Derived from the records before it, so TraceDigest leaves it out.
    bool dcMiss = false;
};

constexpr int kNumHardEvents = (int)AscendC::HardEvent::MAX;
constexpr int kEventIds = 8;
constexpr int kCrossFlags = 16;

struct LaunchState;

}  // namespace twin

#include "twin/sync/hazard.h"

namespace twin {

// Special-purpose registers of an AIV that vector / MTE APIs write and later calls read: CMPMASK (128 bits; written
// by Compare without dst, SetCmpMask and Select, read by Select without a selMask tensor and GetCmpMask) and the pad
// value of DataCopyPad GM->UB (SetPadValue, or DataCopyPad with isPad = true).
// One buffer of a TQue/TQueBind (TPipe::InitBuffer, TBufPool::InitBuffer). Queue buffers live in the core, not in
// the queue object: a queue may go out of scope (declared in a helper function) before the pipe or pool that waits
// its free events, as the official implementation allows by keeping this state in the pipe. `gen` changes whenever
// the buffer is freed or its owner is reset, so a LocalTensor taken from an earlier allocation is detected.
struct QueBuf {
    uint8_t* ptr;
    uint32_t len;
    uint8_t state;   // QueBufState
    int32_t freeId;  // event ID of the pending "free" flag (-1: none)
    int freeEvt;     // HardEvent of that flag
    uint32_t gen;
};
enum QueBufState : uint8_t { kQueFree, kQueAllocated, kQueEnqueued, kQueDequeued };

struct SprState {
    uint8_t cmpMask[16] = {};
    bool cmpMaskSet = false;
    uint64_t padValue = 0;
    bool padSet = false;
};

// On-core bytes handed to a tensor: a queue buffer, a TBuf or an explicit-address LocalTensor.
struct OwnedRange {
    Mem m;
    uint64_t lo, hi;
    std::string what;
};

struct CoreState {
    int32_t coreType = AscendC::AIV;
    int64_t blockIdx = 0, blockNum = 1, subBlockIdx = 0, subBlockNum = 1, taskRatio = 1;
    int64_t apiBlockIdx = 0;  // what GetBlockIdx() returns
    int id = 0;               // index in the launch
    const npu_fa::ChipSpec* chip = nullptr;
    LaunchState* launch = nullptr;

    std::vector<uint8_t> mem[(int)Mem::COUNT];
    uint32_t usable[(int)Mem::COUNT] = {};

    // In-core flags: set but not yet waited; IDs handed out by AllocEventID (queues and user code).
    bool flagSet[kNumHardEvents][kEventIds] = {};
    bool idTaken[kNumHardEvents][kEventIds] = {};

    // Vector mask register state.
    bool counterMode = false;
    uint64_t maskReg[2] = {~0ull, ~0ull};
    // Atomic accumulation mode for writes to GM: 0 none, else the element type tag.
    int atomicKind = 0;
    int atomicOp = 0;  // what the atomic mode does: 0 add, 1 max, 2 min (sync/atomic_gm.h)
    uint64_t deqScale = 0;
    SprState spr;  // CMPMASK and pad-value registers

    void* pipe = nullptr;  // the live AscendC::TPipe, if any
    std::vector<QueBuf> queBufs;  // every queue buffer created on this core during the launch
    std::map<const void*, std::shared_ptr<void>> unitState;  // registers of API units kept elsewhere (core_local.h)
    std::vector<OwnedRange> owned;  // what the kernel gave to tensors during the launch (never shrinks)
    uint32_t ubTop = 0;  // end of the highest UB byte given to the kernel (TPipe, TBufPool, explicit-address tensors)
    bool traceOn = true;
    bool modelOnly = false;  // LaunchOptions::modelOnly: skip element arithmetic (Computing())
    std::vector<TraceRec> trace;
    std::vector<TraceAcc> traceAcc;  // accesses of the traced instructions (TraceRec::acc)
    std::vector<std::pair<const char*, TraceAcc>> accPending;  // noted by an API, not yet traced (api, access)
    std::string waitingFor;  // set while blocked in a cross-core wait, for deadlock reports
    HazardState hz;          // pipe-ordering checker (hazard.h)
    // GM synchronisation state (sync/dcache.h, sync/gm_sync.h, sync/sync.h).
    std::vector<uint64_t> dcUnfenced;  // DCache lines written back since the last DataSyncBarrier
    std::vector<uint64_t> softSyncWs;  // software-SyncAll workspaces this core has used
    int determineOpen = 0;             // WaitPreBlock calls not yet answered by NotifyNextBlock
    int taskStartCalls = 0, taskEndCalls = 0;  // SetNextTaskStart / WaitPreTaskEnd
    std::vector<std::pair<uint64_t, double>> dcSpin;  // lines read while another core holds them dirty: since when (s)

    std::string Name() const {
        char buf[96];
        if (coreType == AscendC::AIC) {
            std::snprintf(buf, sizeof buf, "AIC %lld", (long long)blockIdx);
        } else {
            std::snprintf(buf, sizeof buf, "AIV %lld (block %lld, sub %lld)", (long long)apiBlockIdx,
                          (long long)blockIdx, (long long)subBlockIdx);
        }
        return buf;
    }
    uint8_t* Base(Mem m) { return mem[(int)m].data(); }
};

inline thread_local CoreState* tCore = nullptr;

[[noreturn]] inline void ThrowPlain(const std::string& msg) { throw TwinError(msg); }

inline CoreState& Cur() {
    if (tCore == nullptr) ThrowPlain("Ascend C API called outside a twin kernel launch (no current core)");
    return *tCore;
}

// "[<core>] <api>: <message>", the form of every twin error and warning.
inline std::string CoreMessage(const char* api, const char* fmt, va_list ap) {
    char msg[1024];
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    const std::string who = tCore ? tCore->Name() : std::string("host");
    return "[" + who + "] " + api + ": " + msg;
}

// Throws TwinError "[<core>] <api>: <message>".
[[noreturn]] inline void Fail(const char* api, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string m = CoreMessage(api, fmt, ap);
    va_end(ap);
    throw TwinError(m);
}

// A LocalTensor of queue buffer `rec` taken at generation `gen` is usable only until that buffer's FreeTensor.
inline void CheckQueBufLive(const char* api, int32_t rec, uint32_t gen) {
    CoreState& c = Cur();
    if (rec < 0 || (size_t)rec >= c.queBufs.size() || c.queBufs[rec].gen == gen) return;
    Fail(api, "tensor of queue buffer %d used after its TQue::FreeTensor (or after its TPipe/TBufPool was reset): the "
              "bytes may already belong to another allocation; take a new tensor with AllocTensor/DeQue", rec);
}

// Records that the API about to be traced reads or writes [off, off + bytes) of on-core memory `m`; the access is
// checked against the other pipes when the API's Trace call names its pipe.
// `sameRaw`: a read that must follow an earlier write of its own pipe only through a PipeBarrier (hazard.h).
// Every access must be to a memory of this core, inside the bytes an instruction may touch (memory/core_mem.h).
void CheckOnCoreAccess(const char* api, Mem m, uint64_t off, uint64_t bytes, bool write);
// Keeps on-core bytes [lo, hi) for the trace record of the instruction traced next (TraceRec::acc).
inline void NoteTraceAccess(CoreState& c, const char* api, Mem m, uint64_t lo, uint64_t hi, bool write) {
    if (c.traceOn) c.accPending.push_back({api, TraceAcc{(uint32_t)lo, (uint32_t)hi, (uint8_t)m, (uint8_t)write}});
}
inline void NoteAccess(const char* api, Mem m, uint64_t off, uint64_t bytes, bool write, bool sameRaw = false) {
    CoreState* c = tCore;
    if (c == nullptr || bytes == 0 || m == Mem::GM || m == Mem::COUNT) return;
    CheckOnCoreAccess(api, m, off, bytes, write);
    NoteTraceAccess(*c, api, m, off, off + bytes, write);
    if (!c->hz.on) return;
    c->hz.pending.push_back(HzAccess{api, m, off, bytes, write, false, sameRaw});
}

inline void DcacheOnDmaRead(const char* api, const void* p, uint64_t n);  // sync/dcache.h

// The same for GM bytes [p, p + bytes) moved by a DMA or Fixpipe (api nullptr: the next traced instruction). A DMA
// read is also checked against the scalar data caches (bytes a SetValue left dirty are not in GM yet).
inline void NoteGm(const char* api, const void* p, uint64_t bytes, bool write, bool atomic = false) {
    if (!write && bytes != 0) DcacheOnDmaRead(api, p, bytes);
    CoreState* c = tCore;
    if (c == nullptr || !c->hz.on || bytes == 0) return;
    c->hz.pending.push_back(HzAccess{api, Mem::GM, (uint64_t)(uintptr_t)p, bytes, write, atomic});
}

// GM accesses are checked against every core (defined in launch_state.h, which owns the shared GM shadow).
void HazardGm(CoreState& c, const HzAccess& a, int q, uint32_t now);

// `where` names the memory; offsets are printed relative to `base`. `samePipe`: the other instruction ran on the
// same pipe, so only a PipeBarrier of that pipe would have ordered the two.
inline void HazardFail(const HzAccess& a, int q, const char* what, const std::string& other, uint64_t at,
                       const std::string& where, uint64_t base = 0, bool samePipe = false, const std::string& hint = "") {
    const std::string how =
        !samePipe ? "with no ordering between the two (SetFlag/WaitFlag or queue EnQue/DeQue in a core, PIPE_ALL barrier, "
                    "CrossCoreSetFlag/WaitFlag or SyncAll across cores)"
                  : std::string("with no PipeBarrier<PIPE_") + HzPipeName(q) + "> between the two (the docs require one " +
                        (a.write ? "when two MTE2 or two MTE3 transfers write overlapping destination bytes)"
                                 : "between Mmads accumulating into one L0C tile when (m / 16) * (n / 16) < 10)");
    Fail(a.api ? a.api : "GM write", "pipe hazard: %s (pipe %s) %s %s bytes [%llu, %llu) that %s %s %s; first conflict at byte %llu%s",
         a.api ? a.api : "this instruction", HzPipeName(q), a.write ? "writes" : "reads", where.c_str(),
         (unsigned long long)(a.off - base), (unsigned long long)(a.off + a.bytes - base), other.c_str(), what, how.c_str(),
         (unsigned long long)(at - base), hint.c_str());
}

// Applies the pending accesses of instruction `op` on pipe `pipe`, or the ordering effect of a sync record.
inline void HazardOnTrace(CoreState& c, const char* op, pipe_t pipe, TraceKind kind, uint16_t arg) {
    HazardState& h = c.hz;
    if (!h.on) return;
    const int q = HzPipe(pipe);
    if (kind == TraceKind::SetFlag && q >= 0) {
        h.snapshot[arg / 8][arg % 8] = h.known[q];
        return;
    }
    if (kind == TraceKind::WaitFlag && q >= 0) {
        h.Learn(q, h.snapshot[arg / 8][arg % 8]);
        return;
    }
    if (kind == TraceKind::Barrier && pipe == PIPE_ALL) {
        const std::vector<uint32_t> m = h.Merged();
        for (auto& k : h.known) k = m;
        for (int p = 0; p < kHzPipes; ++p) h.Barrier(p);
        return;
    }
    if (kind == TraceKind::Barrier && q > 0) {
        h.Barrier(q);
        return;
    }
    if (kind != TraceKind::Instr) return;
    if (q <= 0) {  // scalar (auto-synchronised) or unknown pipe: not tracked
        h.pending.clear();
        return;
    }
    const uint32_t now = ++h.known[q][h.self + q];
    for (const HzAccess& a0 : h.pending) {
        if (a0.api != nullptr && std::strcmp(a0.api, op) != 0) continue;  // from an API that returned before tracing
        HzAccess a = a0;
        a.api = op;
        if (a.mem == Mem::GM) {
            HazardGm(c, a, q, now);
            continue;
        }
        const std::vector<uint32_t>& k = h.known[q];
        const int self = h.self / kHzPipes;
        HzConflict x = h.shadow[(int)a.mem].Access(
            a.off, a.off + a.bytes, a.write, false, HzWho{self, (int8_t)q, now, op},
            [&](const HzWho& w) { return k[h.self + w.pipe] >= w.clk || a.UnitOrdered(w); },
            [&](const HzWho& w) { return h.SameOk(q, w, a.write, a.sameRaw); });
        if (x.found) {
            HazardFail(a, q, x.withWriter ? "wrote" : "may still be reading",
                       std::string(x.who.api ? x.who.api : "an earlier instruction") + " (pipe " + HzPipeName(x.who.pipe) +
                           ", bytes [" + std::to_string(x.who.lo) + ", " + std::to_string(x.who.hi) + "))",
                       x.at, MemName(a.mem), 0, x.samePipe);
        }
    }
    h.pending.clear();
}

inline void Trace(const char* op, pipe_t pipe, uint64_t elems, uint64_t bytes, uint32_t repeats, const void* dst,
                  const void* src, TraceKind kind = TraceKind::Instr, uint16_t arg = 0) {
    CoreState& c = Cur();
    HazardOnTrace(c, op, pipe, kind, arg);
    if (!c.traceOn) return;
    const uint32_t first = (uint32_t)c.traceAcc.size();
    if (kind == TraceKind::Instr) {
        for (const auto& [api, a] : c.accPending) {
            if (api == nullptr || std::strcmp(api, op) == 0) c.traceAcc.push_back(a);  // else: an API that returned untraced
        }
        c.accPending.clear();
    }
    c.trace.push_back(TraceRec{op, (uint8_t)pipe, kind, arg, repeats, elems, bytes, (uint64_t)(uintptr_t)dst,
                               (uint64_t)(uintptr_t)src, first, (uint32_t)c.traceAcc.size() - first});
}

// False in a model-only launch (LaunchOptions::modelOnly): the kernel's control flow, parameter checks, data moves
// and trace run as always, the element arithmetic of vector, cube and Fixpipe instructions is skipped, so the trace
// is the full run's and the computed outputs are undefined. Kernels must not branch on computed values.
inline bool Computing() { return !Cur().modelOnly; }

// API core-kind guards: on the NPU a wrong-core call is a silent no-op; the twin refuses it.
inline void RequireAiv(const char* api) {
    if (Cur().coreType != AscendC::AIV) Fail(api, "vector/UB API called on the cube core (AIC); guard it with ASCEND_IS_AIV");
}
inline void RequireAic(const char* api) {
    if (Cur().coreType != AscendC::AIC) Fail(api, "cube/L1/L0 API called on a vector core (AIV); guard it with ASCEND_IS_AIC");
}

// Offset of p in its on-core buffer, or a failure naming the API when p is not inside `m` of this core.
// Records that the kernel gave bytes [lo, hi) of `m` to a tensor (`what` names it in error messages).
inline void NoteOwned(Mem m, uint64_t lo, uint64_t hi, const std::string& what) {
    std::vector<OwnedRange>& v = Cur().owned;
    for (const OwnedRange& o : v) {
        if (o.m == m && o.lo == lo && o.hi == hi) return;
    }
    v.push_back({m, lo, hi, what});
}

// The same for a host pointer into one of the core's memories.
inline void NoteOwnedPtr(const uint8_t* p, uint64_t bytes, const char* what) {
    CoreState& c = Cur();
    for (int m = 0; m < (int)Mem::COUNT; ++m) {
        const uint8_t* b = c.mem[m].data();
        if (b != nullptr && p >= b && p < b + c.mem[m].size()) {
            char d[96];
            std::snprintf(d, sizeof d, "%s at %s byte %llu (%llu bytes)", what, MemName((Mem)m),
                          (unsigned long long)(p - b), (unsigned long long)bytes);
            NoteOwned((Mem)m, (uint64_t)(p - b), (uint64_t)(p - b) + bytes, d);
            return;
        }
    }
}

inline uint64_t OffsetIn(const char* api, Mem m, const void* p) {
    CoreState& c = Cur();
    const uint8_t* base = c.Base(m);
    const uint8_t* q = (const uint8_t*)p;
    if (base == nullptr || q < base || q > base + c.mem[(int)m].size()) {
        Fail(api, "address %p is not inside this core's %s", p, MemName(m));
    }
    return (uint64_t)(q - base);
}

}  // namespace twin
