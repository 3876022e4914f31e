// GlobalTensor and LocalTensor with the official member functions. A LocalTensor is (position, host pointer into
// this core's buffer, byte length); every API that touches it checks its footprint against that length.
#pragma once
#include <type_traits>

#include "twin/launch/launch_state.h"
#include "twin/launch/runtime.h"
#include "twin/memory/core_mem.h"
#include "twin/memory/int4.h"
#include "twin/sync/dcache.h"

namespace AscendC {

template <typename T>
using PrimT = T;

// L2 cache modes of GlobalTensor::SetL2CacheHint (CACHE_MODE_LAST is in the headers, not in the docs).
enum class CacheMode : uint8_t { CACHE_MODE_DISABLE = 0, CACHE_MODE_NORMAL = 1, CACHE_MODE_LAST = 2, CACHE_MODE_PERSISTENT = 4 };
enum class CacheRwMode { READ = 1, WRITE = 2, RW = 3 };

template <typename T>
class GlobalTensor {
public:
    using PrimType = T;
    GlobalTensor() = default;
    void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize) {
        addr_ = buffer;
        size_ = bufferSize;
    }
    void SetGlobalBuffer(__gm__ T* buffer) {
        addr_ = buffer;
        size_ = 0;
    }
    const __gm__ T* GetPhyAddr() const { return addr_; }
    __gm__ T* GetPhyAddr(const uint64_t offset) const { return At("GlobalTensor::GetPhyAddr", offset); }
    uint64_t GetSize() const { return size_; }
    // Offsets the address; the declared size is not reduced (as in the real headers).
    GlobalTensor operator[](const uint64_t offset) const {
        GlobalTensor t;
        t.addr_ = At("GlobalTensor::operator[]", offset);
        t.size_ = size_;
        t.origin_ = origin_ ? origin_ : addr_;
        t.cacheMode_ = cacheMode_;
        return t;
    }
    // Only the cache policy changes, never a result; the twin records the mode (trace arg) and refuses the modes
    // dav-2201 lacks (PERSISTENT is documented as not yet supported; LAST is undocumented).
    template <CacheRwMode rwMode = CacheRwMode::RW>
    void SetL2CacheHint(CacheMode mode) {
        const char* api = "GlobalTensor::SetL2CacheHint";
        if (mode != CacheMode::CACHE_MODE_DISABLE && mode != CacheMode::CACHE_MODE_NORMAL) {
            twin::Fail(api, "CacheMode %d is not supported on dav-2201 (CACHE_MODE_DISABLE = 0 or CACHE_MODE_NORMAL = 1)", (int)mode);
        }
        cacheMode_ = mode;
        twin::Trace(api, PIPE_S, 0, 0, 0, addr_, nullptr, twin::TraceKind::Instr, (uint16_t)mode);
    }
    T GetValue(const uint64_t offset) const {
        CheckElems("GlobalTensor::GetValue", offset, 1);
        if constexpr (twin::ElemBits<T>::value == 4) {
            return twin::GetNibble(GmByte("GlobalTensor::GetValue", offset, false), offset);
        }
        twin::Trace("GlobalTensor::GetValue", PIPE_S, 1, sizeof(T), 1, nullptr, addr_ + offset);
        T v;
        twin::DcacheRead("GlobalTensor::GetValue", (uint64_t)(uintptr_t)(addr_ + offset), &v, sizeof(T));
        return v;
    }
    void SetValue(const uint64_t offset, T value) {
        CheckElems("GlobalTensor::SetValue", offset, 1);
        if constexpr (twin::ElemBits<T>::value == 4) {
            const uint8_t b = twin::SetNibble(GmByte("GlobalTensor::SetValue", offset, true), offset, value);
            twin::DcacheWrite("GlobalTensor::SetValue", (uint64_t)(uintptr_t)((uint8_t*)addr_ + offset / 2), &b, 1);
            return;
        }
        twin::Trace("GlobalTensor::SetValue", PIPE_S, 1, sizeof(T), 1, addr_ + offset, nullptr);
        twin::DcacheWrite("GlobalTensor::SetValue", (uint64_t)(uintptr_t)(addr_ + offset), &value, sizeof(T));
    }
    __gm__ T& operator()(const uint64_t offset) const {
        CheckElems("GlobalTensor::operator()", offset, 1);
        if constexpr (twin::ElemBits<T>::value == 4) {
            // The real operator() indexes bytes (address_[offset]): element `offset` is not there.
            twin::Fail("GlobalTensor::operator()", "int4b_t elements are packed two per byte; use GetValue/SetValue");
        }
        return addr_[offset];
    }
    template <typename U>
    GlobalTensor<U> ReinterpretCast() const {
        GlobalTensor<U> t;
        t.SetGlobalBuffer(reinterpret_cast<__gm__ U*>(addr_), twin::BytesElems<U>(twin::ElemBytes<T>(size_)));
        t.cacheMode_ = cacheMode_;
        return t;
    }

    // Twin: fails when [offset, offset+count) elements lie outside the declared size or any launch buffer.
    void CheckElems(const char* api, uint64_t offset, uint64_t count) const {
        if (addr_ == nullptr) twin::Fail(api, "GlobalTensor has no buffer (SetGlobalBuffer not called)");
        if (size_ != 0) {
            const T* base = origin_ ? origin_ : addr_;
            const int64_t bits = ((const uint8_t*)addr_ - (const uint8_t*)base) * 8;
            int64_t start = bits / (int64_t)twin::ElemBits<T>::value + (int64_t)offset;
            if (start < 0 || (uint64_t)start + count > size_) {
                twin::Fail(api, "access of %llu elements at element %lld is outside the GlobalTensor's declared size %llu",
                           (unsigned long long)count, (long long)start, (unsigned long long)size_);
            }
        }
        const uint64_t first = offset * twin::ElemBits<T>::value / 8;  // an odd int4b_t offset starts mid-byte
        twin::CheckGm(api, (const uint8_t*)addr_ + first, twin::ElemBytes<T>(offset + count) - first);
    }

    template <typename U>
    friend class GlobalTensor;

private:
    __gm__ T* At(const char* api, uint64_t offset) const {
        return reinterpret_cast<__gm__ T*>((uint8_t*)addr_ + twin::ElemOffsetBytes<T>(api, offset));
    }
    // The byte holding int4b_t element `offset`, read as the scalar unit does (through the data cache).
    uint8_t GmByte(const char* api, uint64_t offset, bool write) const {
        const uint8_t* p = (const uint8_t*)addr_ + offset / 2;
        twin::Trace(api, PIPE_S, 1, 1, 1, write ? p : nullptr, write ? nullptr : p);
        uint8_t b;
        twin::DcacheRead(api, (uint64_t)(uintptr_t)p, &b, 1);
        return b;
    }

    __gm__ T* addr_ = nullptr;
    __gm__ T* origin_ = nullptr;  // buffer start that size_ refers to
    uint64_t size_ = 0;
    CacheMode cacheMode_ = CacheMode::CACHE_MODE_NORMAL;
};

using TBufHandle = uint8_t*;  // a buffer handle of a custom TBufPool (EXTERN_IMPL_BUFPOOL, buf_pool.h)

// Where a LocalTensor lives (kernel_tensor_base.h): its fields, plus the host pointer the CPU debug build keeps
// (absAddr) and the twin's queue-buffer record and generation (a tensor of a freed queue buffer is detected).
struct TBuffAddr {
    uint32_t dataLen = 0;
    uint32_t bufferAddr = 0;
    TBufHandle bufferHandle = nullptr;
    uint8_t logicPos = (uint8_t)TPosition::MAX;
    uint8_t* absAddr = nullptr;
    int32_t twinRec = -1;
    uint32_t twinGen = 0;
};

template <typename T>
class LocalTensor {
public:
    using PrimType = T;
    LocalTensor() = default;
    // A tensor at an explicit byte address of the physical buffer behind `pos`; tileSize in elements.
    LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize) {
        const char* api = "LocalTensor(TPosition, addr, tileSize)";
        if (pos == TPosition::GM || pos == TPosition::MAX) twin::Fail(api, "position must not be GM or MAX");
        twin::Mem m = twin::PhysicalMem(pos);
        twin::CoreState& c = twin::Cur();
        twin::ProvideMem(c, m);  // also on the core kind that lacks it: an address, never accessed there
        uint32_t cap = (uint32_t)c.mem[(int)m].size();
        uint64_t len = twin::ElemBytes<T>(tileSize);
        if (addr % 32 != 0) twin::Fail(api, "addr %u is not 32-byte aligned", addr);
        if (tileSize == 0 || len % 32 != 0) twin::Fail(api, "tensor length %llu bytes is not a positive multiple of 32", (unsigned long long)len);
        if (addr + len > cap) twin::Fail(api, "addr %u + length %llu bytes exceeds %s size %u", addr, (unsigned long long)len, twin::MemName(m), cap);
        if (m == twin::Mem::UB && addr + len > c.ubTop) c.ubTop = (uint32_t)(addr + len);
        char what[96];
        std::snprintf(what, sizeof what, "LocalTensor(%s, addr %u, %llu bytes)", twin::PositionName(pos), addr,
                      (unsigned long long)len);
        twin::NoteOwned(m, addr, addr + len, what);
        Init(pos, c.Base(m) + addr, (uint32_t)len);
    }

    // Twin-internal constructor used by queues and buffers.
    // `rec`/`gen`: the queue buffer (CoreState::queBufs) and its generation, for tensors handed out by a queue.
    void Init(TPosition pos, uint8_t* ptr, uint32_t byteLen, int32_t bufId = -1, int32_t rec = -1, uint32_t gen = 0) {
        address_.logicPos = (uint8_t)pos;
        address_.absAddr = ptr;
        address_.dataLen = byteLen;
        const uint8_t* base = twin::Cur().Base(twin::PhysicalMem(pos));
        address_.bufferAddr = (base != nullptr && ptr >= base) ? (uint32_t)(ptr - base) : 0;
        bufId_ = bufId;
        address_.twinRec = rec;
        address_.twinGen = gen;
    }

    // The tensor's place (TBuffAddr: logicPos, bufferAddr = byte address in that position's buffer, dataLen),
    // e.g. another tensor's address_ (kernel_tensor_base.h, BaseLocalTensor::SetAddr; catlass uses it). No page
    // documents it; the NPU takes the address as it is, the twin only refuses one outside the physical buffer.
    void SetAddr(const TBuffAddr& bufferAddr) {
        const char* api = "LocalTensor::SetAddr";
        const TPosition pos = (TPosition)bufferAddr.logicPos;
        if (pos == TPosition::GM || bufferAddr.logicPos >= (uint8_t)TPosition::MAX) {
            twin::Fail(api, "logicPos %u is not an on-core TPosition", bufferAddr.logicPos);
        }
        const twin::Mem m = twin::PhysicalMem(pos);
        twin::CoreState& c = twin::Cur();
        twin::ProvideMem(c, m);  // an address only, also on the core kind without this memory
        if ((uint64_t)bufferAddr.bufferAddr + bufferAddr.dataLen > c.mem[(int)m].size()) {
            twin::Fail(api, "bufferAddr %u + dataLen %u bytes runs past the %zu bytes of %s", bufferAddr.bufferAddr,
                       bufferAddr.dataLen, c.mem[(int)m].size(), twin::MemName(m));
        }
        address_ = bufferAddr;
        address_.absAddr = c.Base(m) + bufferAddr.bufferAddr;  // the NPU uses bufferAddr; absAddr is the twin's view
        bufId_ = -1;
    }

    LocalTensor operator[](const uint32_t offset) const {
        uint64_t off = twin::ElemOffsetBytes<T>("LocalTensor::operator[]", offset);
        if (off > address_.dataLen) {
            twin::Fail("LocalTensor::operator[]", "offset %u elements (%llu bytes) is past the tensor's %u bytes",
                       offset, (unsigned long long)off, address_.dataLen);
        }
        LocalTensor t = *this;
        t.address_.absAddr += off;
        t.address_.bufferAddr += (uint32_t)off;
        t.address_.dataLen -= (uint32_t)off;
        return t;
    }
    uint32_t GetSize() const { return (uint32_t)twin::BytesElems<T>(address_.dataLen); }
    void SetSize(const uint32_t size) {
        if (twin::ElemBytes<T>(size) > address_.dataLen) {
            twin::Fail("LocalTensor::SetSize", "size %u elements exceeds the tensor's %u bytes", size, address_.dataLen);
        }
        address_.dataLen = (uint32_t)twin::ElemOffsetBytes<T>("LocalTensor::SetSize", size, "size");
    }
    uint32_t GetLength() const { return address_.dataLen; }
    int32_t GetPosition() const { return (int32_t)Pos(); }
    T* GetPhyAddr() const { return reinterpret_cast<T*>(address_.absAddr); }
    T* GetPhyAddr(const uint32_t offset) const {
        return reinterpret_cast<T*>(address_.absAddr + twin::ElemOffsetBytes<T>("LocalTensor::GetPhyAddr", offset));
    }

    T GetValue(const uint32_t index) const {
        CheckScalar("LocalTensor::GetValue", index);
        if constexpr (twin::ElemBits<T>::value == 4) {
            twin::Trace("LocalTensor::GetValue", PIPE_S, 1, 1, 1, nullptr, address_.absAddr + index / 2);
            return twin::GetNibble(address_.absAddr[index / 2], index);
        }
        twin::Trace("LocalTensor::GetValue", PIPE_S, 1, sizeof(T), 1, nullptr, address_.absAddr + index * sizeof(T));
        T v;
        std::memcpy(&v, address_.absAddr + (uint64_t)index * sizeof(T), sizeof(T));
        return v;
    }
    template <typename S>
    void SetValue(const uint32_t index, const S value) const {
        CheckScalar("LocalTensor::SetValue", index);
        if constexpr (twin::ElemBits<T>::value == 4) {
            // As in the real headers the value must be an int4b_t (its .storage is stored).
            twin::Trace("LocalTensor::SetValue", PIPE_S, 1, 1, 1, address_.absAddr + index / 2, nullptr);
            address_.absAddr[index / 2] = twin::SetNibble(address_.absAddr[index / 2], index, ::int4b_t(value.storage));
            return;
        }
        twin::Trace("LocalTensor::SetValue", PIPE_S, 1, sizeof(T), 1, address_.absAddr + index * sizeof(T), nullptr);
        T v = static_cast<T>(value);
        std::memcpy(address_.absAddr + (uint64_t)index * sizeof(T), &v, sizeof(T));
    }
    T& operator()(const uint32_t offset) const {
        CheckScalar("LocalTensor::operator()", offset);
        return *GetPhyAddr(offset);
    }
    template <typename U>
    LocalTensor<U> ReinterpretCast() const {
        LocalTensor<U> t;
        t.Init(Pos(), address_.absAddr, address_.dataLen, bufId_, address_.twinRec, address_.twinGen);
        return t;
    }

    // ---- twin-internal accessors ----
    uint8_t* Ptr() const { return address_.absAddr; }
    T* Data() const { return reinterpret_cast<T*>(address_.absAddr); }
    TPosition Pos() const { return (TPosition)address_.logicPos; }
    twin::Mem Phys() const { return twin::PhysicalMem(Pos()); }
    int32_t BufId() const { return bufId_; }
    bool Valid() const { return address_.absAddr != nullptr; }
    // Byte offset inside the physical buffer (the NPU's address of the tensor).
    uint64_t Addr(const char* api) const {
        twin::CheckQueBufLive(api, address_.twinRec, address_.twinGen);
        return twin::OffsetIn(api, Phys(), address_.absAddr);
    }
    int32_t QueRec() const { return address_.twinRec; }
    uint32_t QueGen() const { return address_.twinGen; }

    TBuffAddr address_;  // public, as in the real headers (kernels copy it into SetAddr)

private:
    void CheckScalar(const char* api, uint32_t index) const {
        if (address_.absAddr == nullptr) twin::Fail(api, "tensor is not allocated");
        twin::CheckQueBufLive(api, address_.twinRec, address_.twinGen);
        twin::Mem m = Phys();
        if (m != twin::Mem::UB) {
            twin::Fail(api, "scalar access is only possible in UB (VECIN/VECOUT/VECCALC), not %s", twin::PositionName(Pos()));
        }
        twin::RequireAiv(api);
        if (index >= GetSize()) {
            twin::Fail(api, "index %u is past the tensor's %u elements", index, GetSize());
        }
    }

    int32_t bufId_ = -1;
};

}  // namespace AscendC

namespace twin {

// An access reaching byte `end` of a tensor at byte `start` of `m` with `len` declared bytes (end > len); `what`
// describes it ("dst: ... past the tensor's N bytes"). The NPU knows only physical buffers and the docs set no rule
// for the bytes past a LocalTensor's length (an official int8 Mmad example writes its L0C tile past its declared
// length and reads back only the valid part), so the cube-side buffers are judged as the hardware would: past the
// physical buffer, or into bytes the kernel gave another tensor, is an error; bytes no other tensor was given are a
// warning (LaunchResult::warnings). UB accesses keep the stricter rule: an error past the declared length.
inline void JudgeOverrun(const char* api, Mem m, uint64_t start, uint64_t len, uint64_t end, const char* what) {
    CoreState& c = Cur();
    if (m == Mem::UB) Fail(api, "%s", what);
    const uint64_t cap = AccessibleBytes(c, m);
    if (start + end > cap) {
        Fail(api, "%s, and past the end of %s (%llu bytes)", what, MemName(m), (unsigned long long)cap);
    }
    for (const OwnedRange& o : c.owned) {
        if (o.m != m || (o.lo <= start && start < o.hi)) continue;  // another memory, or the tensor's own buffer
        if (o.lo < start + end && start + len < o.hi) {
            Fail(api, "%s, into %s bytes [%llu, %llu) of %s", what, MemName(m),
                 (unsigned long long)std::max(o.lo, start + len), (unsigned long long)std::min(o.hi, start + end),
                 o.what.c_str());
        }
    }
    Warn(api, "%s; bytes [%llu, %llu) of %s belong to no other tensor, so the NPU writes or reads them harmlessly",
         what, (unsigned long long)(start + len), (unsigned long long)(start + end), MemName(m));
}

// Fails unless [t + offsetBytes, + bytes) lies inside t's tensor (or, cube side, JudgeOverrun lets it pass), with a
// message naming the API and the numbers. Records nothing (CheckLocalSpan below, or NoteAccess per written run).
template <typename T>
inline void CheckLocalBounds(const char* api, const char* operand, const AscendC::LocalTensor<T>& t, uint64_t offsetBytes,
                             uint64_t bytes) {
    if (!t.Valid()) Fail(api, "%s tensor is not allocated", operand);
    if constexpr (ElemBits<T>::value == 4) {  // no twin data path models packed nibbles: refuse, never move bytes
        Fail(api, "%s is an int4b_t tensor, which the twin does not model for this API", operand);
    }
    if (offsetBytes + bytes > t.GetLength()) {
        char what[256];
        std::snprintf(what, sizeof what, "%s: access of %llu bytes at byte %llu is past the tensor's %u bytes (%s)", operand,
                      (unsigned long long)bytes, (unsigned long long)offsetBytes, t.GetLength(), PositionName(t.Pos()));
        JudgeOverrun(api, t.Phys(), t.Addr(api), t.GetLength(), offsetBytes + bytes, what);
    }
}

// CheckLocalBounds, and the whole span is what the instruction reads (or, operand "dst...", writes).
template <typename T>
inline void CheckLocalSpan(const char* api, const char* operand, const AscendC::LocalTensor<T>& t, uint64_t offsetBytes,
                           uint64_t bytes) {
    CheckLocalBounds(api, operand, t, offsetBytes, bytes);
    NoteAccess(api, t.Phys(), t.Addr(api) + offsetBytes, bytes, std::strncmp(operand, "dst", 3) == 0);
}

// CheckLocalBounds over `count` blocks of `len` bytes, `step` bytes apart head to head, of which the instruction
// reads (or, operand "dst...", writes) only the blocks: bytes in the gaps stay another copy's, so copies that
// interleave their blocks (rows of one NZ tile, one per copy, as catlass's interval copies do) are judged by the
// bytes they move.
template <typename T>
inline void CheckLocalBlocks(const char* api, const char* operand, const AscendC::LocalTensor<T>& t, uint64_t offsetBytes,
                             uint64_t count, uint64_t len, uint64_t step) {
    if (count == 0 || len == 0) return;
    const uint64_t span = (count - 1) * step + len;
    CheckLocalBounds(api, operand, t, offsetBytes, span);
    const bool write = std::strncmp(operand, "dst", 3) == 0;
    const uint64_t at = t.Addr(api) + offsetBytes;
    if (step <= len) {
        NoteAccess(api, t.Phys(), at, span, write);
        return;
    }
    for (uint64_t b = 0; b < count; ++b) NoteAccess(api, t.Phys(), at + b * step, len, write);
}

template <typename T>
inline void CheckAlign(const char* api, const char* operand, const AscendC::LocalTensor<T>& t, uint32_t align) {
    uint64_t a = t.Addr(api);
    if (a % align != 0) {
        Fail(api, "%s address %llu in %s is not %u-byte aligned", operand, (unsigned long long)a, MemName(t.Phys()), align);
    }
}

template <typename T>
inline void RequirePhys(const char* api, const char* operand, const AscendC::LocalTensor<T>& t, Mem m) {
    if (t.Phys() != m) {
        Fail(api, "%s must be in %s, got position %s", operand, MemName(m), PositionName(t.Pos()));
    }
}

}  // namespace twin
