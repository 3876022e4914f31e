// ListTensorDesc / TensorDesc<T> (kernel_operator_list_tensor_intf.h): decode a host-built list of GM tensors.
// GM layout, all little-endian uint64 words:
//   word 0                      ptrOffset: byte offset of the pointer array from the list's start
//   then per tensor i           (dim | i << 32), shape[0], ..., shape[dim-1]      (1 + dim words)
//   at ptrOffset                data pointer of tensor 0, 1, ..., count-1
// so ptrOffset = 8 * (1 + count * (1 + dim)). The count is the first descriptor's high word when it is not 0, else
// the last descriptor's index + 1. A list of pointers only has dim 0 and the single descriptor (count << 32, 0xffffffff),
// ptrOffset 24. Every tensor of a list has the same dim. The twin checks the layout (and, when both are given, the
// length and shapeSize arguments) at Init, and every index against the count.
#pragma once
#include "twin/memory/tensor.h"

namespace AscendC {

class ListTensorDesc;

template <class T>
class TensorDesc {
public:
    __aicore__ inline TensorDesc() {}
    __aicore__ inline ~TensorDesc() {}
    __aicore__ inline void SetShapeAddr(uint64_t* shapePtr) {
        if (shapePtr == nullptr) twin::Fail("TensorDesc::SetShapeAddr", "shapePtr is a null pointer");
        shape_ = shapePtr;
    }
    __aicore__ inline uint64_t GetDim() { return dim_; }
    __aicore__ inline uint64_t GetIndex() { return index_; }
    __aicore__ inline uint64_t GetShape(uint32_t offset) {
        if (offset >= dim_) twin::Fail("TensorDesc::GetShape", "offset %u is not below the tensor's dim %u", offset, dim_);
        return shape_[offset];
    }
    __aicore__ inline __gm__ T* GetDataPtr() { return ptr_; }
    // The data as a GlobalTensor whose declared size is the shape's element count.
    __aicore__ inline GlobalTensor<T> GetDataObj() {
        uint64_t n = dim_ ? 1 : 0;
        for (uint32_t i = 0; i < dim_; ++i) n *= shape_[i];
        GlobalTensor<T> g;
        g.SetGlobalBuffer(ptr_, n);
        return g;
    }

    friend class ListTensorDesc;

private:
    uint32_t dim_ = 0;
    uint32_t index_ = 0;
    uint64_t* shape_ = nullptr;
    __gm__ T* ptr_ = nullptr;
};

class ListTensorDesc {
public:
    __aicore__ inline ListTensorDesc() {}
    __aicore__ inline ~ListTensorDesc() {}
    __aicore__ inline ListTensorDesc(__gm__ void* data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff) {
        Init(data, length, shapeSize);
    }
    __aicore__ inline void Init(__gm__ void* data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff) {
        const char* api = "ListTensorDesc::Init";
        if (data == nullptr) twin::Fail(api, "data is a null pointer");
        base_ = static_cast<const uint8_t*>(data);
        const uint64_t ptrOffset = Word(api, 0);
        const uint64_t first = Word(api, 1);
        dim_ = (uint32_t)first;
        descWords_ = dim_ == 0 ? 2 : 1 + dim_;
        if (dim_ == 0) {
            if (ptrOffset != 24 || Word(api, 2) != 0xffffffffull) {
                twin::Fail(api, "a list with dim 0 has one descriptor (count << 32, 0xffffffff) and ptrOffset 24; got "
                                "ptrOffset %llu, second word 0x%llx", (unsigned long long)ptrOffset,
                           (unsigned long long)Word(api, 2));
            }
            count_ = (uint32_t)(first >> 32) ? (uint32_t)(first >> 32) : 1;
        } else {
            const uint64_t table = ptrOffset < 8 ? 0 : ptrOffset - 8, descBytes = 8ull * descWords_;
            if (ptrOffset < 8 || table % descBytes != 0 || table == 0) {
                twin::Fail(api, "ptrOffset %llu bytes is not 8 + a whole number of %llu-byte descriptors (dim %u)",
                           (unsigned long long)ptrOffset, (unsigned long long)descBytes, dim_);
            }
            const uint64_t last = Word(api, ptrOffset / 8 - descWords_);
            count_ = (uint32_t)(first >> 32) ? (uint32_t)(first >> 32) : (uint32_t)(last >> 32) + 1;
            if (count_ != table / descBytes) {
                twin::Fail(api, "the descriptors give %u tensors but ptrOffset %llu holds %llu descriptors of dim %u", count_,
                           (unsigned long long)ptrOffset, (unsigned long long)(table / descBytes), dim_);
            }
            for (uint32_t i = 1; i < count_; ++i) {
                const uint32_t d = (uint32_t)Word(api, 1 + (uint64_t)i * descWords_);
                if (d != dim_) twin::Fail(api, "descriptor %u has dim %u, descriptor 0 dim %u (one dim per list)", i, d, dim_);
            }
        }
        ptrWord_ = ptrOffset / 8;
        const uint64_t total = ptrOffset + 8ull * count_;
        twin::CheckGm(api, base_, total);
        if (length != 0xffffffffu && shapeSize != 0xffffffffu && (shapeSize != count_ || length != total)) {
            twin::Fail(api, "length %u / shapeSize %u do not match the list: %llu bytes holding %u tensors", length, shapeSize,
                       (unsigned long long)total, count_);
        }
        twin::Trace(api, PIPE_S, count_, total, 1, nullptr, base_);
    }
    template <class T>
    __aicore__ inline void GetDesc(TensorDesc<T>& desc, uint32_t index) {
        const char* api = "ListTensorDesc::GetDesc";
        CheckIndex(api, index);
        if (dim_ == 0) twin::Fail(api, "the list holds data pointers only (dim 0), no shapes");
        if (desc.shape_ == nullptr) twin::Fail(api, "call TensorDesc::SetShapeAddr before GetDesc");
        desc.dim_ = dim_;
        desc.index_ = index;
        desc.ptr_ = reinterpret_cast<__gm__ T*>((uintptr_t)Word(api, ptrWord_ + index));
        for (uint32_t i = 0; i < dim_; ++i) desc.shape_[i] = Word(api, 1 + (uint64_t)index * descWords_ + 1 + i);
    }
    template <class T>
    __aicore__ inline __gm__ T* GetDataPtr(uint32_t index) {
        const char* api = "ListTensorDesc::GetDataPtr";
        CheckIndex(api, index);
        return reinterpret_cast<__gm__ T*>((uintptr_t)Word(api, ptrWord_ + index));
    }
    __aicore__ inline uint32_t GetSize() {
        if (base_ == nullptr) twin::Fail("ListTensorDesc::GetSize", "ListTensorDesc used before Init");
        return count_;
    }

private:
    uint64_t Word(const char* api, uint64_t i) const {
        twin::CheckGm(api, base_ + 8 * i, 8);
        uint64_t w;
        std::memcpy(&w, base_ + 8 * i, 8);
        return w;
    }
    void CheckIndex(const char* api, uint32_t index) const {
        if (base_ == nullptr) twin::Fail(api, "ListTensorDesc used before Init");
        if (index >= count_) twin::Fail(api, "index %u is not below the list's %u tensors", index, count_);
    }

    const uint8_t* base_ = nullptr;
    uint32_t dim_ = 0, descWords_ = 0, count_ = 0;
    uint64_t ptrWord_ = 0;
};

}  // namespace AscendC
