// TBufPool<pos, bufIDSize>: a manually managed slice of UB or L1, carved from the TPipe (TPipe::InitBufPool) or
// from another pool, that hands out TQue/TBuf buffers with a bump pointer. Two pools may share one range
// (InitBufPool with shareBuf) so that consecutive stages reuse the memory. Reset() waits the pending free events of
// the pool's queues; afterwards the pool keeps its buffers but cannot allocate any more (its length is 0, as in
// the real implementation). The twin also refuses a Reset while one of the pool's buffers is still in use.
#pragma once
#include <exception>

#include "twin/memory/pipe.h"

namespace AscendC {

constexpr uint32_t defaultBufIDSize = 4;  // buffer handles of a TBufPool unless the template argument says otherwise

template <TPosition pos, uint32_t bufIDSize = defaultBufIDSize>
class TBufPool {
public:
    static constexpr TPosition poolPos = pos;
    static constexpr bool isTbufPool = true;
    static_assert(pos != TPosition::GM && pos != TPosition::MAX, "TBufPool position must be a UB or L1 position");

    TBufPool() {
        twin::Mem m = twin::PhysicalMem(pos);
        if (m != twin::Mem::UB && m != twin::Mem::L1) {
            twin::Fail("TBufPool", "position %s is neither UB (VECIN/VECOUT/VECCALC) nor L1 (A1/B1/C1)", twin::PositionName(pos));
        }
    }
    TBufPool(const TBufPool&) = delete;
    TBufPool& operator=(const TBufPool&) = delete;
    // Waits the pending free events of the pool's queues, like the real destructor.
    ~TBufPool() noexcept(false) {
        if (std::uncaught_exceptions() == 0 && twin::tCore != nullptr && twin::tCore == core_) Drain();
    }

    template <class T>
    bool InitBuffer(T& que, uint8_t num, uint32_t len) {
        const char* api = "TBufPool::InitBuffer";
        static_assert(T::isTQue, "TBufPool::InitBuffer(que, num, len) takes a TQue/TQueBind; a TBuf takes (buf, len)");
        CheckMem(api, T::Position());
        if (num < 1) twin::Fail(api, "buffer number must be at least 1");
        if (len == 0) twin::Fail(api, "buffer length must be positive");
        uint32_t l = twin::Align32(len);
        uint8_t* p = Take(api, (uint64_t)num * l, num);
        que.TwinInit(p, num, l);
        ranges_[nq_][0] = que.TwinFirst();
        ranges_[nq_][1] = que.TwinNum();
        ++nq_;
        return true;
    }

    template <TPosition bufPos>
    bool InitBuffer(TBuf<bufPos>& buf, uint32_t len) {
        const char* api = "TBufPool::InitBuffer";
        CheckMem(api, bufPos);
        if (len == 0) twin::Fail(api, "buffer length must be positive");
        uint32_t l = twin::Align32(len);
        buf.TwinInit(Take(api, l, 1), l);
        return true;
    }

    // A child pool carved from this pool's free space.
    template <class T>
    bool InitBufPool(T& bufPool, uint32_t len) {
        const char* api = "TBufPool::InitBufPool";
        static_assert(T::isTbufPool, "TBufPool::InitBufPool takes a TBufPool");
        if (twin::PhysicalMem(T::poolPos) != twin::PhysicalMem(pos)) {
            twin::Fail(api, "child pool position %s is not in the same memory as this pool (%s)", twin::PositionName(T::poolPos),
                       twin::PositionName(pos));
        }
        if (len == 0) twin::Fail(api, "pool length must be positive");
        uint32_t l = twin::Align32(len);
        uint8_t* p = Take(api, l, 0);
        bufPool.TwinAttach(api, p, l);
        return true;
    }

    // A child pool sharing shareBuf's start address and length.
    template <class T, class U>
    bool InitBufPool(T& bufPool, uint32_t len, U& shareBuf) {
        static_assert(T::isTbufPool && U::isTbufPool, "TBufPool::InitBufPool takes TBufPools");
        Check("TBufPool::InitBufPool");
        bufPool.TwinShare("TBufPool::InitBufPool", shareBuf, len);
        return true;
    }

    void Reset() {
        const char* api = "TBufPool::Reset";
        Check(api);
        for (int i = 0; i < nq_; ++i) {
            twin::RequireQueBufsFree(api, "at TBufPool::Reset (switching pools)", ranges_[i][0], ranges_[i][1]);
        }
        Drain();
        for (int i = 0; i < nq_; ++i) twin::RetireQueBufs(ranges_[i][0], ranges_[i][1]);
        reset_ = true;
    }

    // ---- twin-internal ----
    void TwinAttach(const char* api, uint8_t* start, uint32_t len) {
        if (core_ != nullptr) twin::Fail(api, "this TBufPool is already initialised");
        core_ = &twin::Cur();
        start_ = cur_ = start;
        len_ = len;
    }
    template <class U>
    void TwinShare(const char* api, U& shareBuf, uint32_t len) {
        if (twin::PhysicalMem(U::poolPos) != twin::PhysicalMem(pos)) {
            twin::Fail(api, "pool position %s and shareBuf position %s are different memories", twin::PositionName(pos),
                       twin::PositionName(U::poolPos));
        }
        if (!shareBuf.TwinAttached()) twin::Fail(api, "shareBuf is not initialised (InitBufPool it first)");
        if (shareBuf.TwinWasReset()) {
            twin::Fail(api, "shareBuf was already Reset (its start and length are 0); share it before resetting it");
        }
        if (len == 0) twin::Fail(api, "pool length must be positive");
        uint32_t l = twin::Align32(len);
        if (l > shareBuf.TwinLen()) {
            twin::Fail(api, "length %u bytes exceeds the %u bytes of the shared pool", l, shareBuf.TwinLen());
        }
        TwinAttach(api, shareBuf.TwinStart(), shareBuf.TwinLen());
    }
    bool TwinAttached() const { return core_ != nullptr; }
    bool TwinWasReset() const { return reset_; }
    uint8_t* TwinStart() const { return start_; }
    uint32_t TwinLen() const { return len_; }

private:
    static constexpr uint32_t kMaxHandles = bufIDSize < 16 ? bufIDSize : 16;  // QBUFPOOL_MAX_LEN = 16

    void Check(const char* api) const {
        if (core_ == nullptr) twin::Fail(api, "TBufPool used before TPipe::InitBufPool / TBufPool::InitBufPool");
        if (core_ != twin::tCore) twin::Fail(api, "TBufPool belongs to another core");
    }
    void CheckMem(const char* api, TPosition bufPos) const {
        if (twin::PhysicalMem(bufPos) != twin::PhysicalMem(pos)) {
            twin::Fail(api, "buffer position %s is not in the pool's memory (%s, position %s)", twin::PositionName(bufPos),
                       twin::MemName(twin::PhysicalMem(pos)), twin::PositionName(pos));
        }
    }
    // Bump-allocates `bytes` and `handles` buffer handles.
    uint8_t* Take(const char* api, uint64_t bytes, uint32_t handles) {
        Check(api);
        if (reset_) {
            twin::Fail(api, "the pool was Reset: its buffers stay usable but it cannot allocate again (length 0 after Reset)");
        }
        if (handles_ + handles > kMaxHandles) {
            twin::Fail(api, "the pool holds %u buffer handles (bufIDSize %u, at most 16); this call would make %u", kMaxHandles,
                       bufIDSize, handles_ + handles);
        }
        uint64_t used = (uint64_t)(cur_ - start_);
        if (used + bytes > len_) {
            twin::Fail(api, "pool exhausted: %llu bytes requested at pool offset %llu, pool length %u bytes",
                       (unsigned long long)bytes, (unsigned long long)used, len_);
        }
        uint8_t* p = cur_;
        cur_ += bytes;
        handles_ += handles;
        return p;
    }
    // Waits the pending free events of the pool's queue buffers (kept in the core, so the queues may be gone).
    void Drain() {
        for (int i = 0; i < nq_; ++i) twin::DrainQueBufs("TBufPool", ranges_[i][0], ranges_[i][1]);
    }

    twin::CoreState* core_ = nullptr;
    uint8_t* start_ = nullptr;
    uint8_t* cur_ = nullptr;
    uint32_t len_ = 0;
    uint32_t handles_ = 0;
    bool reset_ = false;
    int ranges_[kMaxHandles > 0 ? kMaxHandles : 1][2] = {};  // queue buffers [first, first + num) in CoreState::queBufs
    int nq_ = 0;
};

}  // namespace AscendC
