// int4b_t: the signed 4-bit integer of dav-2201, packed two to a byte. As in the real headers it is
// integer_sub_type<4, true>, declared both globally and as AscendC::int4b_t; one object holds one value in the low
// nibble of `storage` (sizeof == 1), while tensors of it count elements at 4 bits each. In memory element 2k is the
// low nibble and element 2k+1 the high nibble of byte k (LocalTensor/GlobalTensor GetValue/SetValue).
// twin::ElemBits<T> is the one place where element counts turn into bytes.
#pragma once
#include <cstdint>
#include <type_traits>

#include "twin/launch/runtime.h"

constexpr uint32_t INT4_BIT_NUM = 4;

template <int bit_num, bool sign = true>
struct integer_sub_type {
    static const int k_bits = bit_num;
    static const bool k_signed = sign;
    using T = typename std::conditional<sign, int8_t, uint8_t>::type;
    using Storage = uint8_t;
    static const Storage mask = Storage((1u << bit_num) - 1u);

    Storage storage;

    integer_sub_type() = default;
    // Keeps the low k_bits bits (two's complement wrap), as the real constructors do.
    integer_sub_type(uint32_t value) : storage(Storage(value & mask)) {}
    integer_sub_type(int32_t value) : storage(Storage((uint32_t)value & mask)) {}

    operator T() const {
        const bool neg = k_signed && (storage >> (k_bits - 1)) != 0;
        return neg ? T(int(storage) - (1 << k_bits)) : T(storage);
    }
    bool operator==(const integer_sub_type& r) const { return storage == r.storage; }
    bool operator!=(const integer_sub_type& r) const { return storage != r.storage; }
    bool operator<(const integer_sub_type& r) const { return T(*this) < T(r); }
    bool operator>(const integer_sub_type& r) const { return r < *this; }
    bool operator<=(const integer_sub_type& r) const { return !(r < *this); }
    bool operator>=(const integer_sub_type& r) const { return !(*this < r); }
};

using int4b_t = integer_sub_type<INT4_BIT_NUM, true>;

namespace AscendC {
using int4b_t = ::integer_sub_type<INT4_BIT_NUM, true>;
}

namespace twin {

template <typename T>
struct ElemBits {
    static constexpr uint32_t value = 8 * sizeof(T);
};
template <>
struct ElemBits<::int4b_t> {
    static constexpr uint32_t value = INT4_BIT_NUM;
};

// Bytes that n elements span, a partial last byte included.
template <typename T>
constexpr uint64_t ElemBytes(uint64_t n) {
    return (n * ElemBits<T>::value + 7) / 8;
}
// Elements held by n bytes.
template <typename T>
constexpr uint64_t BytesElems(uint64_t n) {
    return n * 8 / ElemBits<T>::value;
}
// Byte offset of element `offset`. The real headers halve int4b_t offsets (offset / 2): an odd one would silently
// address the even neighbour, so the twin refuses it.
template <typename T>
inline uint64_t ElemOffsetBytes(const char* api, uint64_t offset, const char* what = "offset") {
    if (offset * ElemBits<T>::value % 8 != 0) {
        Fail(api, "%s %llu is odd: int4b_t elements are packed two per byte, so it must be even", what,
             (unsigned long long)offset);
    }
    return offset * ElemBits<T>::value / 8;
}

// Nibble `index` of a packed byte array: even index = low nibble.
inline ::int4b_t GetNibble(uint8_t byte, uint64_t index) { return ::int4b_t(uint32_t(byte >> (4 * (index % 2)))); }
inline uint8_t SetNibble(uint8_t byte, uint64_t index, ::int4b_t v) {
    const uint32_t shift = 4 * (index % 2);
    return uint8_t((byte & ~(0xFu << shift)) | (uint32_t(v.storage) << shift));
}

}  // namespace twin
