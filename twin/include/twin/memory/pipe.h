// TPipe, TQueBind/TQue and TBuf: bump allocation per physical buffer within what a TPipe may hand out (core_mem.h),
// queue state machines with the real HardEvent mapping (EnQue sets / DeQue waits the enqueue event; FreeTensor sets /
// the next AllocTensor of that buffer waits the free event), 8 event IDs per HardEvent.
#pragma once
#include <exception>
#include <tuple>

#include "twin/sync/sync.h"
#include "twin/memory/tensor.h"

namespace twin {

struct PipeState {
    uint32_t head[(int)Mem::COUNT] = {};
    int numBuffers = 0;
};

constexpr int kMaxPipeBuffers = 64;  // QBUF_MAX_LEN

// Reserves `bytes` (already 32 B aligned) in memory `m` of the current core; returns the host pointer.
// `handles` buffer handles count against the TPipe's 64 (-1: one per block; TPipe::InitBufPool takes none).
inline uint8_t* PipeReserve(const char* api, PipeState& p, Mem m, uint32_t bytes, int count, int handles = -1) {
    if (handles < 0) handles = count;
    CoreState& c = Cur();
    ProvideMem(c, m);  // also on the core kind that lacks it: addresses only (memory/core_mem.h)
    if (p.numBuffers + handles > kMaxPipeBuffers) {
        Fail(api, "a TPipe holds at most %d buffers; this call would make %d", kMaxPipeBuffers, p.numBuffers + handles);
    }
    uint64_t need = (uint64_t)bytes * count;
    uint32_t head = p.head[(int)m];
    if (head + need > c.usable[(int)m]) {
        Fail(api, "%s exhausted: %d x %u bytes requested at offset %u, usable capacity %u bytes", MemName(m), count, bytes,
             head, c.usable[(int)m]);
    }
    p.head[(int)m] = head + (uint32_t)need;
    p.numBuffers += handles;
    if (m == Mem::UB) c.ubTop = std::max(c.ubTop, p.head[(int)m]);
    return c.Base(m) + head;
}

inline uint32_t Align32(uint64_t v) { return (uint32_t)((v + 31) / 32 * 32); }

// ---- queue buffers (CoreState::queBufs) ----

// Appends `num` free buffers and returns the index of the first.
inline int AddQueBufs(uint8_t* const* ptrs, const uint32_t* lens, int num) {
    std::vector<QueBuf>& v = Cur().queBufs;
    const int first = (int)v.size();
    for (int i = 0; i < num; ++i) {
        v.push_back(QueBuf{ptrs[i], lens[i], kQueFree, -1, 0, 0});
        NoteOwnedPtr(ptrs[i], lens[i], "a TQue buffer");
    }
    return first;
}
// Waits the pending free events of buffers [first, first + num) (what TPipe::Destroy / TBufPool::Reset do).
inline void DrainQueBufs(const char* api, int first, int num) {
    CoreState& c = Cur();
    for (int i = first; i < first + num; ++i) {
        QueBuf& b = c.queBufs[i];
        if (b.freeId < 0) continue;
        DoWaitFlag(api, b.freeEvt, b.freeId);
        ReleaseEventId(api, b.freeEvt, b.freeId);
        b.freeId = -1;
    }
}
inline int BusyQueBufs(int first, int num) {
    CoreState& c = Cur();
    int n = 0;
    for (int i = first; i < first + num; ++i) n += c.queBufs[i].state != kQueFree;
    return n;
}
// The owner (TPipe, TBufPool) is gone or reset: tensors of these buffers are no longer usable.
inline void RetireQueBufs(int first, int num) {
    CoreState& c = Cur();
    for (int i = first; i < first + num; ++i) ++c.queBufs[i].gen;
}
// Fails when a buffer of [first, first + num) is still allocated or enqueued as its owner ends.
inline void RequireQueBufsFree(const char* api, const char* when, int first, int num) {
    const int busy = BusyQueBufs(first, num);
    if (busy != 0) {
        Fail(api, "%d queue buffer(s) still allocated or enqueued %s: every AllocTensor needs its FreeTensor (and every "
                  "EnQue its DeQue) before the buffers are released", busy, when);
    }
}

}  // namespace twin

namespace AscendC {

using TEventID = int8_t;

template <TPosition pos>
class TBuf;

template <TPosition src, TPosition dst, int32_t depth, auto mask = 0>
class TQueBind {
public:
    // The position whose physical buffer holds the data.
    static constexpr TPosition kPos = (src == TPosition::GM) ? dst
                                    : (dst == TPosition::GM || dst == TPosition::CO2) ? src : dst;

    TQueBind() = default;

    template <typename T>
    LocalTensor<T> AllocTensor() {
        const char* api = "TQue::AllocTensor";
        twin::QueBuf& b = Buf(api, cursor_);
        if (b.state != twin::kQueFree) {
            twin::Fail(api, "buffer %d of %d in this queue is still in use (allocate only after FreeTensor)", cursor_, num_);
        }
        if (b.freeId >= 0) {
            twin::DoWaitFlag(api, b.freeEvt, b.freeId);
            twin::ReleaseEventId(api, b.freeEvt, b.freeId);
            b.freeId = -1;
        }
        b.state = twin::kQueAllocated;
        LocalTensor<T> t = TensorOf<T>(cursor_);
        cursor_ = (cursor_ + 1) % num_;
        return t;
    }

    template <typename T>
    void FreeTensor(LocalTensor<T>& t) {
        const char* api = "TQue::FreeTensor";
        const int i = Lookup(api, t);
        twin::QueBuf& b = Buf(api, i);
        if (b.state == twin::kQueFree || t.QueGen() != b.gen) twin::Fail(api, "tensor freed twice (its buffer is already free)");
        if (b.state == twin::kQueEnqueued) twin::Fail(api, "tensor freed while still enqueued (DeQue it first)");
        b.freeEvt = freeEvt_;
        b.freeId = twin::AllocEventId(api, freeEvt_);
        twin::DoSetFlag(api, freeEvt_, b.freeId);
        b.state = twin::kQueFree;
        ++b.gen;
    }

    template <typename T>
    bool EnQue(const LocalTensor<T>& t) {
        const char* api = "TQue::EnQue";
        const int i = Lookup(api, t);
        twin::QueBuf& b = Buf(api, i);
        if (b.state != twin::kQueAllocated) twin::Fail(api, "only an allocated (not enqueued, not freed) tensor can be enqueued");
        if (count_ >= depth) twin::Fail(api, "queue depth %d exceeded: %d tensors already enqueued", depth, count_);
        int32_t id = twin::AllocEventId(api, enqEvt_);
        twin::DoSetFlag(api, enqEvt_, id);
        b.state = twin::kQueEnqueued;
        fifo_[(head_ + count_) % twin::kMaxPipeBuffers] = Entry{i, id};
        ++count_;
        return true;
    }

    template <typename T>
    LocalTensor<T> DeQue() {
        const char* api = "TQue::DeQue";
        Check(api);
        if (count_ == 0) twin::Fail(api, "DeQue on an empty queue (the NPU would wait forever)");
        Entry e = fifo_[head_];
        head_ = (head_ + 1) % twin::kMaxPipeBuffers;
        --count_;
        twin::DoWaitFlag(api, enqEvt_, e.eventId);
        twin::ReleaseEventId(api, enqEvt_, e.eventId);
        Buf(api, e.buf).state = twin::kQueDequeued;
        return TensorOf<T>(e.buf);
    }

    bool VacantInQue() const { return count_ < depth; }
    bool HasTensorInQue() const { return count_ > 0; }
    int32_t GetTensorCountInQue() const { return count_; }
    bool HasIdleBuffer() const {
        for (int i = 0; i < num_; ++i) if (twin::Cur().queBufs[first_ + i].state == twin::kQueFree) return true;
        return false;
    }
    // Waits the free events of all buffers, as TPipe::Destroy does.
    void FreeAllEvent() { twin::DrainQueBufs("TQue::FreeAllEvent", first_, num_); }

    // A custom TBufPool (EXTERN_IMPL_BUFPOOL) announces `num` buffers, then places buffers 0..num-1 in order at
    // pool addresses; the queue is usable once the last one is placed.
    void InitStartBufHandle(TBufHandle startBufhandle, uint8_t num, uint32_t len) {
        const char* api = "TQue::InitStartBufHandle";
        (void)len;
        if (startBufhandle == nullptr) twin::Fail(api, "startBufhandle is a null handle");
        if (num < 1 || num > twin::kMaxPipeBuffers) twin::Fail(api, "buffer number %u is outside [1, %d]", num, twin::kMaxPipeBuffers);
        pendNum_ = num;
        pendSet_ = 0;
    }
    template <typename T>
    void InitBufHandle(T* bufPool, uint32_t index, TBufHandle bufhandle, uint32_t curPoolAddr, uint32_t len) {
        const char* api = "TQue::InitBufHandle";
        (void)bufhandle;
        if (pendNum_ == 0) twin::Fail(api, "call InitStartBufHandle before placing buffers");
        if (index != pendSet_) twin::Fail(api, "buffer %u placed, expected buffer %u of %u (place them in order)", index, pendSet_, pendNum_);
        const uint32_t l = twin::Align32(len);
        pendPtr_[index] = bufPool->TwinPlace(api, TQueBind::Position(), index, curPoolAddr, l);
        pendLen_[index] = l;
        if (++pendSet_ == pendNum_) {
            TwinInitEach(pendPtr_, pendLen_, pendNum_);
            bufPool->TwinAdopt(first_, num_);
            pendNum_ = 0;
        }
    }

    // ---- twin-internal ----
    void TwinInit(uint8_t* base, uint8_t num, uint32_t len) {
        uint8_t* ptrs[twin::kMaxPipeBuffers];
        uint32_t lens[twin::kMaxPipeBuffers];
        for (int i = 0; i < num; ++i) {
            ptrs[i] = base + (size_t)i * len;
            lens[i] = len;
        }
        TwinInitEach(ptrs, lens, num);
    }
    // Buffers at explicit places (TPipe::InitBuffer with address tuples).
    void TwinInitEach(uint8_t* const* ptrs, const uint32_t* lens, uint8_t num) {
        int enq, fre;
        EventsOf(enq, fre);
        enqEvt_ = enq;
        freeEvt_ = fre;
        first_ = twin::AddQueBufs(ptrs, lens, num);
        num_ = num;
        cursor_ = head_ = count_ = 0;
    }
    static void EventsOf(int& enq, int& fre) {
        using H = HardEvent;
        auto isL1 = [](TPosition p) { return p == TPosition::A1 || p == TPosition::B1 || p == TPosition::C1; };
        auto isL0 = [](TPosition p) { return p == TPosition::A2 || p == TPosition::B2 || p == TPosition::C2; };
        H e = H::MAX, f = H::MAX;
        if (src == TPosition::GM && dst == TPosition::VECIN) { e = H::MTE2_V; f = H::V_MTE2; }
        else if (src == TPosition::VECOUT && dst == TPosition::GM) { e = H::V_MTE3; f = H::MTE3_V; }
        else if (src == TPosition::VECIN && dst == TPosition::VECOUT) { e = H::MTE2_MTE3; f = H::MTE3_MTE2; }
        else if (src == TPosition::GM && isL1(dst)) { e = H::MTE2_MTE1; f = H::MTE1_MTE2; }
        else if (isL1(src) && isL0(dst)) { e = H::MTE1_M; f = H::M_MTE1; }
        else if (src == TPosition::CO1 && dst == TPosition::CO2) { e = H::M_FIX; f = H::FIX_M; }
        if (e == H::MAX) {
            twin::Fail("TPipe::InitBuffer", "queue %s -> %s is not supported on dav-2201 (TQue<VECCALC> is invalid; use TBuf)",
                       twin::PositionName(src), twin::PositionName(dst));
        }
        enq = (int)e;
        fre = (int)f;
    }
    static constexpr TPosition Position() { return kPos; }
    bool Initialised() const { return num_ > 0; }
    // Buffers allocated or enqueued (not yet freed).
    int TwinBusy() const { return twin::BusyQueBufs(first_, num_); }
    // The queue's buffers in CoreState::queBufs: [TwinFirst(), TwinFirst() + TwinNum()).
    int TwinFirst() const { return first_; }
    int TwinNum() const { return num_; }
    static constexpr bool isTQue = true;

private:
    struct Entry {
        int buf;
        int32_t eventId;
    };
    void Check(const char* api) const {
        if (num_ == 0) twin::Fail(api, "queue used before TPipe::InitBuffer");
    }
    twin::QueBuf& Buf(const char* api, int i) {
        Check(api);
        return twin::Cur().queBufs[first_ + i];
    }
    template <typename T>
    LocalTensor<T> TensorOf(int i) {
        const twin::QueBuf& b = twin::Cur().queBufs[first_ + i];
        LocalTensor<T> t;
        t.Init(kPos, b.ptr, b.len, i, first_ + i, b.gen);
        return t;
    }
    template <typename T>
    int Lookup(const char* api, const LocalTensor<T>& t) {
        Check(api);
        for (int i = 0; i < num_; ++i) if (twin::Cur().queBufs[first_ + i].ptr == t.Ptr()) return i;
        twin::Fail(api, "tensor does not start a buffer of this queue");
    }

    Entry fifo_[twin::kMaxPipeBuffers] = {};
    int first_ = 0, num_ = 0, cursor_ = 0, head_ = 0, count_ = 0;
    uint8_t pendNum_ = 0, pendSet_ = 0;  // custom TBufPool placement in progress
    uint8_t* pendPtr_[twin::kMaxPipeBuffers] = {};
    uint32_t pendLen_[twin::kMaxPipeBuffers] = {};
    int enqEvt_ = 0, freeEvt_ = 0;
};

constexpr TPosition QueSrc(TPosition p) {
    return (p == TPosition::VECIN || p == TPosition::A1 || p == TPosition::B1 || p == TPosition::C1) ? TPosition::GM
         : (p == TPosition::A2) ? TPosition::A1 : (p == TPosition::B2) ? TPosition::B1 : (p == TPosition::C2) ? TPosition::C1 : p;
}
constexpr TPosition QueDst(TPosition p) {
    return (p == TPosition::VECOUT) ? TPosition::GM : (p == TPosition::CO1) ? TPosition::CO2 : p;
}

// Std::tuple / Std::make_tuple / Std::get for the explicit-address TPipe::InitBuffer (the twin uses the standard ones).
namespace Std {
using std::get;
using std::make_tuple;
using std::tuple;
}  // namespace Std

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public TQueBind<QueSrc(pos), QueDst(pos), depth, mask> {
    static_assert(pos != TPosition::VECCALC, "TQue<VECCALC> is invalid: use TBuf<VECCALC>");
};

template <TPosition pos = TPosition::VECCALC>
class TBuf {
public:
    template <typename T>
    LocalTensor<T> Get() {
        Check("TBuf::Get");
        LocalTensor<T> t;
        t.Init(pos, ptr_, len_);
        return t;
    }
    template <typename T>
    LocalTensor<T> Get(uint32_t len) {
        Check("TBuf::Get");
        uint64_t bytes = twin::ElemOffsetBytes<T>("TBuf::Get", len, "len");
        if (bytes > len_) twin::Fail("TBuf::Get", "%u elements (%llu bytes) exceed the buffer's %u bytes", len, (unsigned long long)bytes, len_);
        LocalTensor<T> t;
        t.Init(pos, ptr_, (uint32_t)bytes);
        return t;
    }
    template <typename T>
    LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset) {
        const char* api = "TBuf::GetWithOffset";
        Check(api);
        if (bufOffset % 32 != 0) twin::Fail(api, "bufOffset %u bytes is not 32-byte aligned", bufOffset);
        uint64_t bytes = twin::ElemOffsetBytes<T>(api, size, "size");
        if (bufOffset + bytes > len_) {
            twin::Fail(api, "%u elements at byte offset %u exceed the buffer's %u bytes", size, bufOffset, len_);
        }
        LocalTensor<T> t;
        t.Init(pos, ptr_ + bufOffset, (uint32_t)bytes);
        return t;
    }
    void TwinInit(uint8_t* p, uint32_t len) {
        twin::NoteOwnedPtr(p, len, "a TBuf");
        ptr_ = p;
        len_ = len;
    }
    // A custom TBufPool (EXTERN_IMPL_BUFPOOL) places the single buffer of a TBuf.
    void InitStartBufHandle(TBufHandle startBufhandle, uint8_t num, uint32_t len) {
        const char* api = "TBuf::InitStartBufHandle";
        (void)len;
        if (startBufhandle == nullptr) twin::Fail(api, "startBufhandle is a null handle");
        if (num != 1) twin::Fail(api, "a TBuf has one buffer, num is %u", num);
        pending_ = true;
    }
    template <typename T>
    void InitBufHandle(T* bufPool, uint32_t index, TBufHandle bufhandle, uint32_t curPoolAddr, uint32_t len) {
        const char* api = "TBuf::InitBufHandle";
        (void)bufhandle;
        if (!pending_) twin::Fail(api, "call InitStartBufHandle before placing the buffer");
        if (index != 0) twin::Fail(api, "a TBuf has one buffer, index is %u", index);
        const uint32_t l = twin::Align32(len);
        TwinInit(bufPool->TwinPlace(api, pos, 0, curPoolAddr, l), l);
        pending_ = false;
    }

private:
    bool pending_ = false;
    void Check(const char* api) const {
        if (ptr_ == nullptr) twin::Fail(api, "TBuf used before TPipe::InitBuffer");
    }
    uint8_t* ptr_ = nullptr;
    uint32_t len_ = 0;
};

class TPipe {
public:
    TPipe() { Init(); }
    // Destroy can report unmatched events, so the destructor may throw (never while unwinding another error).
    ~TPipe() noexcept(false) {
        if (!live_) return;
        if (std::uncaught_exceptions() == 0) {
            Destroy();
        } else if (twin::tCore == core_ && core_ != nullptr) {
            core_->pipe = nullptr;
        }
        live_ = false;
    }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    void Init() {
        twin::CoreState& c = twin::Cur();
        if (c.pipe != nullptr && c.pipe != this) {
            twin::Fail("TPipe", "a second TPipe is live on this core; only one TPipe may exist per kernel");
        }
        c.pipe = this;
        live_ = true;
        core_ = &c;
        qFirst_ = (int)c.queBufs.size();
        st_ = twin::PipeState{};
        if (c.coreType == AIC) {  // M_MTE1 IDs 0..2 are kept for the Matmul API / bias loading
            for (int id = 0; id < 3; ++id) c.idTaken[(int)HardEvent::M_MTE1][id] = true;
        }
    }

    template <class Q>
    bool InitBuffer(Q& que, uint8_t num, uint32_t len) {
        const char* api = "TPipe::InitBuffer";
        if (num < 1 || num > twin::kMaxPipeBuffers) twin::Fail(api, "buffer number %u is outside [1, %d]", num, twin::kMaxPipeBuffers);
        if (len == 0) twin::Fail(api, "buffer length must be positive");
        uint32_t l = twin::Align32(len);
        twin::Mem m = twin::PhysicalMem(Q::Position());
        uint8_t* base = twin::PipeReserve(api, st_, m, l, num);
        que.TwinInit(base, num, l);
        return true;
    }

    // Buffers at explicit (byte address, byte length) places of the queue's memory; the bump allocator does not move,
    // so mixing this form with the other (not recommended by the docs) can overlap buffers.
    template <class T, class U, class V, class... Addrs>
    bool InitBuffer(T& que, const Std::tuple<U, V>& addr0, const Addrs&... addrs) {
        const char* api = "TPipe::InitBuffer(que, Std::tuple...)";
        static_assert(T::isTQue, "the address-tuple InitBuffer takes a TQue/TQueBind");
        constexpr uint32_t num = sizeof...(addrs) + 1;
        static_assert(num <= twin::kMaxPipeBuffers, "at most 64 buffers");
        const uint64_t where[num][2] = {{(uint64_t)std::get<0>(addr0), (uint64_t)std::get<1>(addr0)},
                                        {(uint64_t)std::get<0>(addrs), (uint64_t)std::get<1>(addrs)}...};
        twin::Mem m = twin::PhysicalMem(T::Position());
        twin::CoreState& c = twin::Cur();
        twin::ProvideMem(c, m);
        if (st_.numBuffers + (int)num > twin::kMaxPipeBuffers) {
            twin::Fail(api, "a TPipe holds at most %d buffers; this call would make %d", twin::kMaxPipeBuffers,
                       st_.numBuffers + (int)num);
        }
        uint8_t* ptrs[num];
        uint32_t lens[num];
        for (uint32_t i = 0; i < num; ++i) {
            const uint64_t a = where[i][0], l = where[i][1];
            if (a % 32 != 0) twin::Fail(api, "buffer %u: address %llu is not 32-byte aligned", i, (unsigned long long)a);
            if (l == 0) twin::Fail(api, "buffer %u: length must be positive", i);
            if (a + l > c.usable[(int)m]) {
                twin::Fail(api, "buffer %u: address %llu + length %llu exceeds the usable %s capacity %u bytes", i,
                           (unsigned long long)a, (unsigned long long)l, twin::MemName(m), c.usable[(int)m]);
            }
            ptrs[i] = c.Base(m) + a;
            lens[i] = twin::Align32(l);
            if (m == twin::Mem::UB) c.ubTop = std::max<uint32_t>(c.ubTop, (uint32_t)(a + lens[i]));
        }
        st_.numBuffers += (int)num;
        que.TwinInitEach(ptrs, lens, (uint8_t)num);
        return true;
    }

    template <TPosition pos>
    bool InitBuffer(TBuf<pos>& buf, uint32_t len) {
        const char* api = "TPipe::InitBuffer";
        if (len == 0) twin::Fail(api, "buffer length must be positive");
        uint32_t l = twin::Align32(len);
        uint8_t* base = twin::PipeReserve(api, st_, twin::PhysicalMem(pos), l, 1);
        buf.TwinInit(base, l);
        return true;
    }

    // A TBufPool carved from this pipe's buffer of the pool's position (TBufPool in buf_pool.h). Takes no handle.
    template <class T>
    bool InitBufPool(T& bufPool, uint32_t len) {
        const char* api = "TPipe::InitBufPool";
        static_assert(T::isTbufPool, "TPipe::InitBufPool takes a TBufPool");
        if (len == 0) twin::Fail(api, "pool length must be positive");
        uint32_t l = twin::Align32(len);
        twin::Mem m = twin::PhysicalMem(T::poolPos);
        uint8_t* base = twin::PipeReserve(api, st_, m, l, 1, 0);
        bufPool.TwinAttach(api, base, l);
        return true;
    }
    // A TBufPool sharing shareBuf's start address and length (len must not exceed it).
    template <class T, class U>
    bool InitBufPool(T& bufPool, uint32_t len, U& shareBuf) {
        static_assert(T::isTbufPool && U::isTbufPool, "TPipe::InitBufPool takes TBufPools");
        bufPool.TwinShare("TPipe::InitBufPool", shareBuf, len);
        return true;
    }

    template <HardEvent evt>
    TEventID AllocEventID() {
        return (TEventID)twin::AllocEventId("TPipe::AllocEventID", (int)evt);
    }
    template <HardEvent evt>
    void ReleaseEventID(TEventID id) {
        twin::ReleaseEventId("TPipe::ReleaseEventID", (int)evt, id);
    }
    // An ID for a one-shot Set/Wait pair, without taking it.
    template <HardEvent evt>
    TEventID FetchEventID() {
        return FetchEventID(evt);
    }
    TEventID FetchEventID(HardEvent evt) {
        twin::CoreState& c = twin::Cur();
        twin::CheckEvent("TPipe::FetchEventID", (int)evt, 0);
        for (int id = 0; id < twin::kEventIds; ++id) {
            if (!c.idTaken[(int)evt][id]) return (TEventID)id;
        }
        twin::Fail("TPipe::FetchEventID", "no free event ID of HardEvent::%s", twin::HardEventName((int)evt));
    }

    // Frees every buffer and resets event IDs; InitBuffer may run again afterwards.
    void Reset() {
        ReleaseQueues("TPipe::Reset", "at TPipe::Reset");
        st_ = twin::PipeState{};
    }
    void Destroy() {
        if (!live_) return;
        ReleaseQueues("TPipe::Destroy", "when the TPipe is destroyed (kernel end)");
        twin::CoreState* c = twin::tCore;
        if (c == core_ && c != nullptr) {
            twin::Trace("PipeBarrier", PIPE_ALL, 0, 0, 0, nullptr, nullptr, twin::TraceKind::Barrier);
            c->pipe = nullptr;
            if (c->coreType == AIC) {
                for (int id = 0; id < 3; ++id) c->idTaken[(int)HardEvent::M_MTE1][id] = false;
            }
        }
        live_ = false;
    }

private:
    // The queue buffers created while this pipe lived (its own and its pools'): all must be free; their pending
    // free events are waited and their tensors become unusable.
    void ReleaseQueues(const char* api, const char* when) {
        if (twin::tCore != core_ || core_ == nullptr) return;  // unwinding after an error on another thread
        const int n = (int)core_->queBufs.size() - qFirst_;
        twin::RequireQueBufsFree(api, when, qFirst_, n);
        twin::DrainQueBufs(api, qFirst_, n);
        twin::RetireQueBufs(qFirst_, n);
        qFirst_ = (int)core_->queBufs.size();
    }
    twin::PipeState st_;
    bool live_ = false;
    twin::CoreState* core_ = nullptr;
    int qFirst_ = 0;  // first CoreState::queBufs entry of this pipe
};

}  // namespace AscendC

// The live TPipe of the calling core, at global scope as in basic_api/kernel_common.h (the TPipe constructor sets it).
inline AscendC::TPipe* GetTPipePtr() {
    void* p = twin::Cur().pipe;
    if (p == nullptr) twin::Fail("GetTPipePtr", "no TPipe is live on this core (construct a TPipe first)");
    return static_cast<AscendC::TPipe*>(p);
}
