// GroupBarrier (Cube group management, dav-2201): an Arrive group of AIVs releases a Wait group through counters
// in a user GM workspace (512-byte aligned, zeroed by the user). Counter k of each kind sits in its own 512-byte
// slot: arrive counters at k * 512, wait counters at 64 + k * 512, k < max(arriveSize, waitSize). Arrive adds 1 to
// every arrive counter (after the previous round's waits all finished); Wait blocks until its arrive counter reaches
// round * arriveSize, then adds 1 to every wait counter. The twin blocks instead of spinning (see gm_sync.h) and
// carries what the arriving core's MTE3 pipe knew (the counters are written by an MTE3 atomic add) to the waiter.
#pragma once
#include "twin/sync/gm_sync.h"

namespace twin {

constexpr uint64_t kBarrierSlot = 512;
constexpr uint64_t kBarrierWaitOffset = 64;

// Adds 1 to the counter words at base + k * 512 (k < n) and adds what the MTE3 and scalar pipes know to what the
// counters carry (several cores bump one counter per round).
inline void BarrierBump(CoreState& c, uint64_t base, uint32_t n) {
    std::lock_guard<std::mutex> g(c.launch->dcMu);
    std::vector<uint32_t> k;
    if (c.hz.on) {
        k = c.hz.known[HzPipe(PIPE_MTE3)];
        MergeInto(k, c.hz.known[HzPipe(PIPE_S)]);
    }
    for (uint32_t i = 0; i < n; ++i) {
        const uint64_t a = base + i * kBarrierSlot;
        SetGmWords(a, GmWord(a) + 1, 1);
        if (c.hz.on) MergeInto(c.launch->gmRelease.emplace(a & ~(kGmBlockBytes - 1), k).first->second, k);
    }
}

}  // namespace twin

namespace AscendC {

enum class PipeMode : uint8_t { SCALAR_MODE = 0, MTE3_MODE = 1, MAX };

template <PipeMode pipeMode>
class GroupBarrier {
public:
    GroupBarrier(GM_ADDR groupWorkspace, uint32_t arriveSizeIn, uint32_t waitSizeIn)
        : ws_((uint64_t)(uintptr_t)groupWorkspace), arriveSize_(arriveSizeIn), waitSize_(waitSizeIn) {
        static_assert(pipeMode == PipeMode::MTE3_MODE, "GroupBarrier supports only PipeMode::MTE3_MODE");
        const char* api = "GroupBarrier";
        twin::CoreState& c = twin::Cur();
        if (c.coreType != AIV) return;
        if (arriveSizeIn == 0 || waitSizeIn == 0 || arriveSizeIn > c.blockNum || waitSizeIn > c.blockNum) {
            twin::Fail(api, "arriveSize %u and waitSize %u must lie in [1, GetBlockNum() = %lld]", arriveSizeIn,
                       waitSizeIn, (long long)c.blockNum);
        }
        if (ws_ % twin::kBarrierSlot != 0) {
            twin::Fail(api, "groupWorkspace %p is not 512-byte aligned", (void*)groupWorkspace);
        }
        twin::CheckGm(api, groupWorkspace, GetWorkspaceLen());
        twin::RequireResident(api);
        twin::Trace(api, PIPE_S, 0, 0, 0, groupWorkspace, nullptr);
    }

    void Arrive(uint32_t arriveIndex) {
        const char* api = "GroupBarrier::Arrive";
        twin::CoreState& c = twin::Cur();
        if (c.coreType != AIV) return;
        if (arriveIndex >= arriveSize_) twin::Fail(api, "arriveIndex %u is outside [0, %u]", arriveIndex, arriveSize_ - 1);
        std::unique_lock<std::mutex> lk(c.launch->mu);
        if (counter_ > 1) {  // the previous round's waits must all be done
            const uint64_t a = ws_ + twin::kBarrierWaitOffset + arriveIndex * twin::kBarrierSlot;
            const int32_t want = (int32_t)((counter_ - 1) * waitSize_);
            char what[96];
            std::snprintf(what, sizeof what, "GroupBarrier::Arrive(%u): wait counter %d", arriveIndex, want);
            twin::BlockUntil(lk, api, what, [&] { return twin::GmWord(a) == want; });
            twin::SyncAcquire(c, a, 4);
        }
        twin::BarrierBump(c, ws_, Slots());
        c.launch->cv.notify_all();
        lk.unlock();
        ++counter_;
        hasArrive_ = true;
        twin::Trace(api, PIPE_MTE3, Slots(), Slots() * 32ull, Slots(), (void*)(uintptr_t)ws_, nullptr,
                    twin::TraceKind::CrossSet, (uint16_t)arriveIndex);
    }

    void Wait(uint32_t waitIndex) {
        const char* api = "GroupBarrier::Wait";
        twin::CoreState& c = twin::Cur();
        if (c.coreType != AIV) return;
        if (waitIndex >= waitSize_) twin::Fail(api, "waitIndex %u is outside [0, %u]", waitIndex, waitSize_ - 1);
        const uint32_t round = hasArrive_ ? counter_ - 1 : counter_;
        const uint64_t a = ws_ + waitIndex * twin::kBarrierSlot;
        const int32_t want = (int32_t)(round * arriveSize_);
        {
            std::unique_lock<std::mutex> lk(c.launch->mu);
            char what[96];
            std::snprintf(what, sizeof what, "GroupBarrier::Wait(%u): arrive counter %d", waitIndex, want);
            twin::BlockUntil(lk, api, what, [&] { return twin::GmWord(a) >= want; });
            twin::SyncAcquire(c, a, 4);
            twin::BarrierBump(c, ws_ + twin::kBarrierWaitOffset, Slots());
            c.launch->cv.notify_all();
        }
        if (!hasArrive_) ++counter_;
        hasArrive_ = false;
        twin::Trace(api, PIPE_S, 0, 0, 0, nullptr, nullptr, twin::TraceKind::CrossWait, (uint16_t)waitIndex);
    }

    uint64_t GetWorkspaceLen() { return (uint64_t)std::max(arriveSize_, waitSize_) * twin::kBarrierSlot; }

private:
    GroupBarrier() = delete;
    uint32_t Slots() const { return std::max(arriveSize_, waitSize_); }

    uint64_t ws_;
    uint32_t arriveSize_, waitSize_;
    uint32_t counter_ = 1;    // the round this core is in
    bool hasArrive_ = false;  // Arrive was called in this round
};

}  // namespace AscendC
