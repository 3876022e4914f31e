// Cast<T, U> (dst type T, src type U) with the dav-2201 (Atlas A2) type pairs and round modes, and
// SetDeqScale(half) for int32_t -> half. Mask and repeat are sized by the wider of the two types; each operand's
// blocks are 32 B of its own type (half -> float: 64 elements per repeat, src 4 blocks, dst 8 blocks; half <->
// int4b_t: 128 elements per repeat, the int4b_t operand 2 blocks of 64 packed nibbles, element 2k in the low nibble).
#pragma once
#include "twin/vector/more_common.h"

namespace twin {
namespace vec {

constexpr uint32_t kModeNone = 1u << 0, kModeRint = 1u << 1, kModeFloor = 1u << 2, kModeCeil = 1u << 3,
                   kModeRound = 1u << 4, kModeTrunc = 1u << 5, kModeOdd = 1u << 6;
constexpr uint32_t kModesRFCAZ = kModeRint | kModeFloor | kModeCeil | kModeRound | kModeTrunc;
constexpr uint32_t kModesAll = kModesRFCAZ | kModeNone | kModeOdd;

// Round modes allowed for dst T <- src U on A2; 0 = pair not supported.
template <typename T, typename U>
constexpr uint32_t CastModes() {
    if constexpr (std::is_same_v<T, half> && (std::is_same_v<U, int8_t> || std::is_same_v<U, uint8_t>)) return kModeNone;
    else if constexpr (std::is_same_v<T, half> && std::is_same_v<U, int16_t>) return kModesRFCAZ | kModeNone;
    else if constexpr (std::is_same_v<T, float> && std::is_same_v<U, int16_t>) return kModeNone;
    else if constexpr ((std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) && std::is_same_v<U, half>) return kModesRFCAZ | kModeNone;
    else if constexpr ((std::is_same_v<T, int16_t> || std::is_same_v<T, int32_t>) && std::is_same_v<U, half>) return kModesRFCAZ;
    else if constexpr (std::is_same_v<T, float> && std::is_same_v<U, half>) return kModeNone;
    else if constexpr (std::is_same_v<T, int32_t> && std::is_same_v<U, bfloat16_t>) return kModesRFCAZ;
    else if constexpr (std::is_same_v<T, float> && std::is_same_v<U, bfloat16_t>) return kModeNone;
    else if constexpr (std::is_same_v<T, int16_t> && std::is_same_v<U, int32_t>) return kModeNone;
    else if constexpr (std::is_same_v<T, half> && std::is_same_v<U, int32_t>) return kModesAll;  // deq: mode ignored
    else if constexpr (std::is_same_v<T, float> && std::is_same_v<U, int32_t>) return kModesRFCAZ | kModeNone;
    else if constexpr (std::is_same_v<T, int64_t> && std::is_same_v<U, int32_t>) return kModeNone;
    else if constexpr (std::is_same_v<T, int16_t> && std::is_same_v<U, float>) return kModesRFCAZ;
    else if constexpr (std::is_same_v<T, half> && std::is_same_v<U, float>) return kModesAll;
    else if constexpr (std::is_same_v<T, bfloat16_t> && std::is_same_v<U, float>) return kModesRFCAZ;
    else if constexpr ((std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> || std::is_same_v<T, float>) &&
                       std::is_same_v<U, float>) return kModesRFCAZ;
    else if constexpr (std::is_same_v<T, int32_t> && std::is_same_v<U, int64_t>) return kModeNone;
    else if constexpr (std::is_same_v<T, float> && std::is_same_v<U, int64_t>) return kModesRFCAZ;
    else if constexpr (std::is_same_v<T, half> && std::is_same_v<U, AscendC::int4b_t>) return kModeNone;
    else if constexpr (std::is_same_v<T, AscendC::int4b_t> && std::is_same_v<U, half>) return kModesRFCAZ | kModeNone;
    else return 0;
}

inline const char* RoundModeName(int m) {
    static const char* n[] = {"CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"};
    return (m >= 0 && m < 7) ? n[m] : "an unknown RoundMode";
}

template <typename X>
inline const char* TypeName() {
    if constexpr (std::is_same_v<X, half>) return "half";
    else if constexpr (std::is_same_v<X, bfloat16_t>) return "bfloat16_t";
    else if constexpr (std::is_same_v<X, float>) return "float";
    else if constexpr (std::is_same_v<X, int8_t>) return "int8_t";
    else if constexpr (std::is_same_v<X, uint8_t>) return "uint8_t";
    else if constexpr (std::is_same_v<X, int16_t>) return "int16_t";
    else if constexpr (std::is_same_v<X, uint16_t>) return "uint16_t";
    else if constexpr (std::is_same_v<X, int32_t>) return "int32_t";
    else if constexpr (std::is_same_v<X, uint32_t>) return "uint32_t";
    else if constexpr (std::is_same_v<X, int64_t>) return "int64_t";
    else if constexpr (std::is_same_v<X, AscendC::int4b_t>) return "int4b_t";
    else return "?";
}

template <typename U>
inline long double SourceValue(const U& v) {
    if constexpr (std::is_same_v<U, half>) return vnum::HalfToFloat1(v.bits);
    else if constexpr (std::is_same_v<U, bfloat16_t>) return vnum::Bf16ToFloat1(v.bits);
    else return (long double)v;
}

// One element, general path.
template <typename T, typename U>
inline T CastOne(const U& v, int mode, float deqScale) {
    const int m = mode == vnum::kNone ? vnum::kRint : mode;  // NONE: exact when possible, otherwise RINT
    T out;
    if constexpr (std::is_same_v<T, half>) {
        if constexpr (std::is_same_v<U, int32_t>) {
            out.bits = vnum::FloatToHalf1((float)v * deqScale);
        } else {
            out.bits = vnum::ToHalfMode(SourceValue(v), m);
        }
    } else if constexpr (std::is_same_v<T, bfloat16_t>) {
        out.bits = vnum::ToBf16Mode(SourceValue(v), m);
    } else if constexpr (std::is_same_v<T, float>) {
        if constexpr (std::is_same_v<U, float>) out = vnum::RoundIntegral(v, m);
        else if constexpr (std::is_same_v<U, int32_t> || std::is_same_v<U, int64_t>) out = vnum::ToFloatMode((long double)v, m);
        else out = (float)SourceValue(v);
    } else if constexpr (std::is_integral_v<U>) {  // integer -> integer: saturate
        const long long s = (long long)v;
        const long long lo = (long long)std::numeric_limits<T>::min(), hi = (long long)std::numeric_limits<T>::max();
        out = (T)(s < lo ? lo : (s > hi ? hi : s));
    } else {
        out = vnum::ToIntMode<T>((double)SourceValue(v), m);
    }
    return out;
}

template <typename T, typename U>
inline void CastRunN(T* d, const U* s, uint64_t n, int mode, float deqScale) {
    if constexpr (std::is_same_v<T, half> && std::is_same_v<U, float>) {
        if (mode == vnum::kNone || mode == vnum::kRint) {
            for (uint64_t i = 0; i < n; i += kChunk) {
                const uint32_t m = (uint32_t)std::min<uint64_t>(kChunk, n - i);
                vnum::FloatToHalf(reinterpret_cast<uint16_t*>(d + i), s + i, m);
            }
            return;
        }
    } else if constexpr (std::is_same_v<T, float> && std::is_same_v<U, half>) {
        for (uint64_t i = 0; i < n; i += kChunk) {
            const uint32_t m = (uint32_t)std::min<uint64_t>(kChunk, n - i);
            vnum::HalfToFloat(d + i, reinterpret_cast<const uint16_t*>(s + i), m);
        }
        return;
    } else if constexpr (std::is_same_v<T, float> && std::is_same_v<U, bfloat16_t>) {
        const uint16_t* b = reinterpret_cast<const uint16_t*>(s);
        for (uint64_t i = 0; i < n; ++i) d[i] = vnum::Bf16ToFloat1(b[i]);
        return;
    } else if constexpr (std::is_same_v<T, bfloat16_t> && std::is_same_v<U, float>) {
        if (mode == vnum::kRint) {
            uint16_t* b = reinterpret_cast<uint16_t*>(d);
            for (uint64_t i = 0; i < n; ++i) b[i] = vnum::FloatToBf16Rne1(s[i]);
            return;
        }
    } else if constexpr (std::is_same_v<T, float> && std::is_same_v<U, int32_t>) {
        if (mode == vnum::kNone || mode == vnum::kRint) {
            for (uint64_t i = 0; i < n; ++i) d[i] = (float)s[i];
            return;
        }
    }
    for (uint64_t i = 0; i < n; ++i) d[i] = CastOne<T, U>(s[i], mode, deqScale);
}

// half <-> int4b_t, element by element over the selection (the engine's operands have whole-byte elements).
// half -> int4b_t rounds with the mode and saturates to [-8, 7]. The two operands must not share bytes.
template <typename T, typename U>
inline void CastInt4Run(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& src, int mode,
                        const Exec& x, const AscendC::UnaryRepeatParams& p) {
    constexpr bool toInt4 = std::is_same_v<T, AscendC::int4b_t>;
    const uint32_t hBlk = toInt4 ? p.srcBlkStride : p.dstBlkStride, hRep = toInt4 ? p.srcRepStride : p.dstRepStride;
    const uint32_t nBlk = toInt4 ? p.dstBlkStride : p.srcBlkStride, nRep = toInt4 ? p.dstRepStride : p.srcRepStride;
    auto halfAt = [&](uint64_t r, uint32_t e) { return r * hRep * 32 + (uint64_t)(e / 16) * hBlk * 32 + (e % 16) * 2; };
    auto nibbleAt = [&](uint64_t r, uint32_t e) { return r * nRep * 32 + (uint64_t)(e / 64) * nBlk * 32 + (e % 64) / 2; };
    uint64_t hEnd = 0, nEnd = 0, active = 0;
    for (uint64_t r = 0; r < x.Repeats(); ++r) {
        uint64_t b[2];
        x.RepBits(r, b);
        for (uint32_t e = 0; e < x.perRep; ++e) {
            if (((b[e >> 6] >> (e & 63)) & 1u) == 0) continue;
            hEnd = std::max(hEnd, halfAt(r, e) + 2);
            nEnd = std::max(nEnd, nibbleAt(r, e) + 1);
            ++active;
        }
    }
    CheckSpanUB(api, "dst", dst, toInt4 ? nEnd : hEnd, true);
    CheckSpanUB(api, "src", src, toInt4 ? hEnd : nEnd, false);
    uint8_t* h = toInt4 ? src.Ptr() : dst.Ptr();
    uint8_t* n = toInt4 ? dst.Ptr() : src.Ptr();
    if (Overlaps(h, hEnd, n, nEnd)) {
        Fail(api, "dst and src share bytes: half and int4b_t operands cannot overlap 100%% (通用说明和约束.md, "
                  "通用地址重叠约束; Cast.md warns of narrow -> wide overlap)");
    }
    for (uint64_t r = 0; r < x.Repeats() && twin::Computing(); ++r) {
        uint64_t b[2];
        x.RepBits(r, b);
        for (uint32_t e = 0; e < x.perRep; ++e) {
            if (((b[e >> 6] >> (e & 63)) & 1u) == 0) continue;
            uint8_t& byte = n[nibbleAt(r, e)];
            const int shift = (e % 2) * 4;
            half* hv = reinterpret_cast<half*>(h + halfAt(r, e));
            if constexpr (toInt4) {
                const int8_t v = vnum::ToIntMode<int8_t>((double)vnum::HalfToFloat1(hv->bits),
                                                         mode == vnum::kNone ? vnum::kRint : mode);
                const int8_t q = v < -8 ? -8 : (v > 7 ? 7 : v);
                byte = (uint8_t)((byte & ~(0xF << shift)) | (((uint8_t)q & 0xF) << shift));
            } else {
                const int v = ((byte >> shift) & 0xF) ^ 0x8;
                hv->bits = vnum::FloatToHalf1((float)(v - 8));
            }
        }
    }
    TraceV(api, active, active * 2 + (active + 1) / 2, x.Repeats(), dst.Ptr(), src.Ptr());
}

template <typename T, typename U>
inline void CastBytesRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& src,
                         int mode, const Exec& x, const AscendC::UnaryRepeatParams& p);

template <typename T, typename U>
inline void CastRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& src,
                    AscendC::RoundMode roundMode, const Exec& x, const AscendC::UnaryRepeatParams& p) {
    const int mode = (int)roundMode;
    if (mode < 0 || mode > 6 || (CastModes<T, U>() & (1u << mode)) == 0) {
        Fail(api, "Cast %s -> %s does not support RoundMode::%s on dav-2201", TypeName<U>(), TypeName<T>(),
             RoundModeName(mode));
    }
    if constexpr (std::is_same_v<T, AscendC::int4b_t> || std::is_same_v<U, AscendC::int4b_t>) {
        CastInt4Run<T, U>(api, dst, src, mode, x, p);
    } else {
        CastBytesRun<T, U>(api, dst, src, mode, x, p);
    }
}

// Types of whole bytes: through the engine's operand model.
template <typename T, typename U>
inline void CastBytesRun(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& src,
                         int mode, const Exec& x, const AscendC::UnaryRepeatParams& p) {
    const Opd o[2] = {{dst.Ptr(), (uint32_t)sizeof(T), p.dstBlkStride, p.dstRepStride},
                      {src.Ptr(), (uint32_t)sizeof(U), p.srcBlkStride, p.srcRepStride}};
    CheckOperand(api, "dst", dst, o[0], x);
    CheckOperand(api, "src", src, o[1], x);
    CheckDstBlkStride(api, "dstBlkStride", o[0], x);
    CheckOverlap(api, "src", o[0], o[1], x, false, /*narrowInPlace=*/true);
    float deq = 0.0f;
    if constexpr (std::is_same_v<T, half> && std::is_same_v<U, int32_t>) {
        deq = twin::HalfBitsToFloat((uint16_t)(Cur().deqScale & 0xFFFFu));
    }
    constexpr uint32_t wide = sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U);
    ForEachRun(o, x, wide, [mode, deq](uint8_t* const* q, uint64_t n, uint64_t) {
        CastRunN<T, U>(reinterpret_cast<T*>(q[0]), reinterpret_cast<const U*>(q[1]), n, mode, deq);
    });
    TraceV(api, x.Active(), x.Active() * (sizeof(T) + sizeof(U)), x.Repeats(), dst.Ptr(), src.Ptr());
}

}  // namespace vec
}  // namespace twin

namespace AscendC {

// Sets DEQSCALE for Cast int32_t -> half: dst = half(src * scale).
inline void SetDeqScale(half scale) {
    twin::RequireAiv("SetDeqScale");
    twin::Cur().deqScale = scale.bits;
}

template <typename T, typename U, bool isSetMask = true>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                 const uint64_t mask[], const uint8_t repeatTime, const UnaryRepeatParams& repeatParams) {
    static_assert(twin::vec::CastModes<T, U>() != 0, "Cast: this dst/src type pair is not supported on dav-2201");
    const char* api = "Cast";
    twin::RequireAiv(api);
    constexpr uint32_t wide = sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U);
    const twin::vec::Exec x =
        twin::vec::MakeL0Exec(api, twin::vec::MaskArg::Bits(mask, isSetMask), 256 / wide, repeatTime);
    twin::vec::CastRun(api, dst, src, roundMode, x, repeatParams);
}

template <typename T, typename U, bool isSetMask = true>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                 const uint64_t mask, const uint8_t repeatTime, const UnaryRepeatParams& repeatParams) {
    static_assert(twin::vec::CastModes<T, U>() != 0, "Cast: this dst/src type pair is not supported on dav-2201");
    const char* api = "Cast";
    twin::RequireAiv(api);
    constexpr uint32_t wide = sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U);
    const twin::vec::Exec x =
        twin::vec::MakeL0Exec(api, twin::vec::MaskArg::Len(mask, isSetMask), 256 / wide, repeatTime);
    twin::vec::CastRun(api, dst, src, roundMode, x, repeatParams);
}

template <typename T, typename U>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                 const uint32_t count) {
    static_assert(twin::vec::CastModes<T, U>() != 0, "Cast: this dst/src type pair is not supported on dav-2201");
    const char* api = "Cast";
    twin::RequireAiv(api);
    constexpr uint32_t wide = sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U);
    const twin::vec::Exec x = twin::vec::CountExec(api, (int64_t)count, 256 / wide);
    UnaryRepeatParams p;
    p.dstRepStride = (uint8_t)(twin::ElemBits<T>::value / wide);  // 8 blocks of the wider type
    p.srcRepStride = (uint8_t)(twin::ElemBits<U>::value / wide);
    twin::vec::CastRun(api, dst, src, roundMode, x, p);
    twin::vec::RestoreNormalFullMask();
}

}  // namespace AscendC
