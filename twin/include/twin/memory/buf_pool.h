// TBufPool<pos, bufIDSize>: a manually managed slice of UB or L1, carved from the TPipe (TPipe::InitBufPool) or
// from another pool, that hands out TQue/TBuf buffers with a bump pointer. Two pools may share one range
// (InitBufPool with shareBuf) so that consecutive stages reuse the memory. Reset() waits the pending free events of
// the pool's queues; afterwards the pool keeps its buffers but cannot allocate any more (its length is 0, as in
// the real implementation). The twin also refuses a Reset while one of the pool's buffers is still in use.
// EXTERN_IMPL_BUFPOOL declares a user-defined pool class instead, whose own InitBuffer places buffers anywhere in its
// range through TQue/TBuf::InitStartBufHandle and InitBufHandle (TBufPoolImpl below holds its state).
#pragma once
#include <exception>

#include "twin/memory/pipe.h"

namespace twin {

// What InitBufPool(bufPool, len, shareBuf) requires of shareBuf, for TBufPool and custom pools alike.
template <class U>
inline void CheckPoolShare(const char* api, AscendC::TPosition pos, U& shareBuf, uint32_t len) {
    if (PhysicalMem(U::poolPos) != PhysicalMem(pos)) {
        Fail(api, "pool position %s and shareBuf position %s are different memories", PositionName(pos),
             PositionName(U::poolPos));
    }
    if (!shareBuf.TwinAttached()) Fail(api, "shareBuf is not initialised (InitBufPool it first)");
    if (shareBuf.TwinWasReset()) {
        Fail(api, "shareBuf was already Reset (its start and length are 0); share it before resetting it");
    }
    if (len == 0) Fail(api, "pool length must be positive");
    const uint32_t l = Align32(len);
    if (l > shareBuf.TwinLen()) Fail(api, "length %u bytes exceeds the %u bytes of the shared pool", l, shareBuf.TwinLen());
}

}  // namespace twin

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
        twin::CheckPoolShare(api, pos, shareBuf, len);
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

// State of a custom TBufPool (EXTERN_IMPL_BUFPOOL): the pool's range in its memory as byte addresses
// [startAddr_, startAddr_ + maxLen_), the user's allocation mark maxAddr_ and buffer count curBufSize_ (the fields
// the macro's Get/SetCurAddr and Get/SetCurBufSize read and write), the buffer handles, and the queue buffers placed
// in it. The twin checks every placement against the range and every handle index against bufIDSize.
template <int bufIDSize>
struct TBufPoolImpl {
    uint32_t startAddr_ = 0;
    uint32_t maxAddr_ = 0;
    uint32_t maxLen_ = 0;
    uint8_t curBufSize_ = 0;
    uint8_t isReset_ = 0;

    void Init() {
        core_ = nullptr;
        base_ = nullptr;
        startAddr_ = maxAddr_ = maxLen_ = 0;
        curBufSize_ = 0;
        isReset_ = 1;
        nq_ = 0;
    }
    void Attach(const char* api, TPosition pos, uint8_t* start, uint32_t len) {
        if (core_ != nullptr) twin::Fail(api, "this custom TBufPool is already initialised");
        const twin::Mem m = twin::PhysicalMem(pos);
        if (m != twin::Mem::UB && m != twin::Mem::L1) {
            twin::Fail(api, "custom TBufPool position %s is neither UB (VECIN/VECOUT/VECCALC) nor L1 (A1/B1/C1)", twin::PositionName(pos));
        }
        twin::CoreState& c = twin::Cur();
        core_ = &c;
        base_ = c.Base(m);
        startAddr_ = maxAddr_ = (uint32_t)(start - base_);
        maxLen_ = len;
        isReset_ = 0;
    }
    TBufHandle Handle(const char* api, uint8_t offset) {
        if (offset >= bufIDSize) {
            twin::Fail(api, "handle offset %u is not below the pool's BUFID_SIZE %d", offset, bufIDSize);
        }
        return &handles_[offset];
    }
    // Host address of [addr, addr + len) of the pool's memory, which must lie inside the pool.
    // `index` counts the buffers of this allocation, placed after the pool's curBufSize_ ones.
    uint8_t* Place(const char* api, TPosition bufPos, TPosition poolPos, uint32_t index, uint32_t addr, uint32_t len) {
        Check(api);
        if (twin::PhysicalMem(bufPos) != twin::PhysicalMem(poolPos)) {
            twin::Fail(api, "buffer position %s is not in the pool's memory (position %s)", twin::PositionName(bufPos),
                       twin::PositionName(poolPos));
        }
        if (curBufSize_ + index >= (uint32_t)bufIDSize) {
            twin::Fail(api, "buffer %u would be the pool's buffer %u, beyond BUFID_SIZE %d", index, curBufSize_ + index, bufIDSize);
        }
        if (addr % 32 != 0) twin::Fail(api, "buffer address %u is not 32-byte aligned", addr);
        if (addr < startAddr_ || (uint64_t)addr + len > (uint64_t)startAddr_ + maxLen_) {
            twin::Fail(api, "buffer [%u, %llu) is outside the pool [%u, %llu)", addr, (unsigned long long)addr + len, startAddr_,
                       (unsigned long long)startAddr_ + maxLen_);
        }
        return base_ + addr;
    }
    void Adopt(int first, int num) {
        ranges_[nq_][0] = first;
        ranges_[nq_][1] = num;
        ++nq_;
    }
    // Waits the pending free events of the pool's queue buffers; the buffers become unusable.
    void Reset(const char* api) {
        if (core_ == nullptr || core_ != twin::tCore) return;  // never attached, or unwinding on another core
        for (int i = 0; i < nq_; ++i) twin::RequireQueBufsFree(api, "at the custom TBufPool's Reset", ranges_[i][0], ranges_[i][1]);
        for (int i = 0; i < nq_; ++i) twin::DrainQueBufs(api, ranges_[i][0], ranges_[i][1]);
        for (int i = 0; i < nq_; ++i) twin::RetireQueBufs(ranges_[i][0], ranges_[i][1]);
        nq_ = 0;
        curBufSize_ = 0;
        startAddr_ = maxAddr_ = maxLen_ = 0;
        isReset_ = 1;
    }
    bool Attached() const { return core_ != nullptr; }
    bool WasReset() const { return core_ != nullptr && isReset_; }
    uint8_t* Start() const { return base_ + startAddr_; }

private:
    void Check(const char* api) const {
        if (core_ == nullptr) twin::Fail(api, "custom TBufPool used before TPipe::InitBufPool / TBufPool::InitBufPool");
        if (core_ != twin::tCore) twin::Fail(api, "custom TBufPool belongs to another core");
        if (isReset_) twin::Fail(api, "the custom TBufPool was Reset: it and its buffers cannot be used again");
    }
    twin::CoreState* core_ = nullptr;
    uint8_t* base_ = nullptr;  // host address of the pool memory's byte 0
    uint8_t handles_[bufIDSize > 0 ? bufIDSize : 1] = {};
    int ranges_[twin::kMaxPipeBuffers][2] = {};  // queue buffers [first, first + num) in CoreState::queBufs
    int nq_ = 0;
};

}  // namespace AscendC

// Declares a user-defined TBufPool class (inside its body): poolPos, bufIDSize, isTbufPool, the destructor, Reset,
// Init, GetBufHandle, Set/GetCurAddr, Set/GetCurBufSize, as the real macro; the class writes its own InitBuffer
// overloads with TQue/TBuf::InitStartBufHandle and InitBufHandle. Addresses are byte addresses in the pool's memory.
#define EXTERN_IMPL_BUFPOOL(EXT_BUFPOOL, POSITION, BUFID_SIZE)                                                          \
public:                                                                                                                 \
    static constexpr AscendC::TPosition poolPos = POSITION;                                                             \
    static constexpr int bufIDSize = BUFID_SIZE;                                                                        \
    static constexpr bool isTbufPool = true;                                                                            \
    ~EXT_BUFPOOL() noexcept(false) {                                                                                    \
        if (std::uncaught_exceptions() == 0) Reset();                                                                   \
    }                                                                                                                   \
    void Reset() { tBufPoolImpl.Reset(#EXT_BUFPOOL "::Reset"); }                                                        \
    void Init() {                                                                                                       \
        static_assert(POSITION != AscendC::TPosition::GM && POSITION != AscendC::TPosition::MAX,                        \
                      "TbufPool Position should be L1 Buffer(A1/B1/C1)/UB(VECIN/VECOUT/VECCALC)");                      \
        tBufPoolImpl.Init();                                                                                            \
    }                                                                                                                   \
    AscendC::TBufHandle GetBufHandle(uint8_t offset) { return tBufPoolImpl.Handle(#EXT_BUFPOOL "::GetBufHandle", offset); } \
    void SetCurAddr(uint32_t curAddr) { tBufPoolImpl.maxAddr_ = curAddr; }                                             \
    uint32_t GetCurAddr() { return tBufPoolImpl.maxAddr_; }                                                             \
    void SetCurBufSize(uint8_t curBufSize) { tBufPoolImpl.curBufSize_ = curBufSize; }                                  \
    uint8_t GetCurBufSize() { return tBufPoolImpl.curBufSize_; }                                                        \
    /* twin hooks: TPipe / TBufPool::InitBufPool, and TQue / TBuf::InitBufHandle */                                     \
    void TwinAttach(const char* api, uint8_t* start, uint32_t len) { tBufPoolImpl.Attach(api, poolPos, start, len); }   \
    template <class U>                                                                                                  \
    void TwinShare(const char* api, U& shareBuf, uint32_t len) {                                                        \
        twin::CheckPoolShare(api, poolPos, shareBuf, len);                                                              \
        TwinAttach(api, shareBuf.TwinStart(), shareBuf.TwinLen());                                                      \
    }                                                                                                                   \
    bool TwinAttached() const { return tBufPoolImpl.Attached(); }                                                      \
    bool TwinWasReset() const { return tBufPoolImpl.WasReset(); }                                                      \
    uint8_t* TwinStart() const { return tBufPoolImpl.Start(); }                                                        \
    uint32_t TwinLen() const { return tBufPoolImpl.maxLen_; }                                                          \
    uint8_t* TwinPlace(const char* api, AscendC::TPosition bufPos, uint32_t index, uint32_t addr, uint32_t len) {       \
        return tBufPoolImpl.Place(api, bufPos, poolPos, index, addr, len);                                             \
    }                                                                                                                   \
    void TwinAdopt(int first, int num) { tBufPoolImpl.Adopt(first, num); }                                              \
                                                                                                                        \
protected:                                                                                                              \
    AscendC::TBufPoolImpl<BUFID_SIZE> tBufPoolImpl
