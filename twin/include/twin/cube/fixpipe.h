// Fixpipe: L0C (Nz, fp32/int32) -> GM or L1 on PIPE_FIX, with the dav-2201 in-flight conversions:
//   layout  CFG_ROW_MAJOR (NZ -> ND, default; GM only) or CFG_NZ (NZ -> NZ);
//   quantPre NoQuant (f32->f32, s32->s32), F322F16 / F322BF16 (round to nearest even), scalar DEQF16 / QF322B8_PRE /
//           REQ8 (deqScalar) and their per-column V* forms (uint64 parameters in L1 via cbufWorkspace);
//   reluEn  NormReLU (negatives become 0; with a quantisation the negative-side factor M2 becomes 0);
//   SetAtomicAdd<T> turns GM writes into element-wise adds (atomic_gm.h).
// Units (FixpipeParamsV220): srcStride counts 16-element L0C rows (ceil(m/16)*16 for a packed C); dstStride is the
// ND row pitch in elements, or the distance of NZ column blocks in 32 B; srcNdStride counts 1 KB (16 x C0_SIZE);
// dstNdStride counts elements.
#pragma once
#include <vector>

#include "twin/sync/atomic_gm.h"
#include "twin/memory/poison_store.h"
#include "twin/cube/cube_spr.h"
#include "twin/cube/fractal.h"
#include "twin/cube/unit_flag.h"

namespace AscendC {

enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };

struct FixpipeConfig {
    CO2Layout format;
    constexpr FixpipeConfig(CO2Layout format_) : format(format_) {}
    constexpr FixpipeConfig(CO2Layout format_, bool) : format(format_) {}
    constexpr FixpipeConfig(CO2Layout format_, bool, bool) : format(format_) {}
};

inline constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ};
inline constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR};
inline constexpr FixpipeConfig CFG_COLUMN_MAJOR = {CO2Layout::COLUMN_MAJOR};

struct FixpipeParamsV220 {
    FixpipeParamsV220() {}
    FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn, const uint32_t dstStrideIn,
                      const bool reluEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn) {}
    FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn, const uint32_t dstStrideIn,
                      const bool reluEnIn, const QuantMode_t quantPreIn, const int64_t deqScalarIn, const uint16_t ndNumIn,
                      const uint16_t srcNdStrideIn, const uint16_t dstNdStrideIn, const uint8_t unitFlagIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), quantPre(quantPreIn),
          deqScalar((uint64_t)deqScalarIn), ndNum(ndNumIn), srcNdStride(srcNdStrideIn), dstNdStride(dstNdStrideIn),
          reluEn(reluEnIn), unitFlag(unitFlagIn) {}
    FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn, const uint32_t dstStrideIn,
                      const bool reluEnIn, const QuantMode_t quantPreIn, const int64_t deqScalarIn, const uint16_t ndNumIn,
                      const uint16_t srcNdStrideIn, const uint16_t dstNdStrideIn, const uint8_t unitFlagIn,
                      const bool isChannelSplitIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), quantPre(quantPreIn),
          deqScalar((uint64_t)deqScalarIn), ndNum(ndNumIn), srcNdStride(srcNdStrideIn), dstNdStride(dstNdStrideIn),
          reluEn(reluEnIn), unitFlag(unitFlagIn), isChannelSplit(isChannelSplitIn) {}
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;
    uint32_t dstStride = 0;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;  // left uninitialised by the real header; zero here so runs are reproducible
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
    bool reluEn = false;
    uint8_t unitFlag = 0;
    bool isChannelSplit = false;
};

using FixpipeParamsM300 = FixpipeParamsV220;
using FixpipeParamsM310 = FixpipeParamsV220;

}  // namespace AscendC

namespace twin {

inline const char* QuantName(QuantMode_t q) {
    static const char* n[] = {"NoQuant", "F322F16", "F322BF16", "DEQF16", "VDEQF16", "QF322B8_PRE", "VQF322B8_PRE", "REQ8", "VREQ8"};
    return ((int)q >= 0 && (int)q < 9) ? n[(int)q] : "?";
}

inline bool IsVectorQuant(QuantMode_t q) { return q == VDEQF16 || q == VQF322B8_PRE || q == VREQ8; }

// Decoded QUANT_PRE word: M1 in the (1, 8, 10) float format of bits [31:13], N shift [35:32] (+1), MCB [36],
// 9-bit two's complement offset [45:37], sign [46] (int8 vs uint8 result).
struct QuantWord {
    float m1 = 1.0f;
    int shift = 1;
    bool mcb = false;
    int offset = 0;
    bool sign = false;
};
inline QuantWord DecodeQuantWord(uint64_t q) {
    QuantWord w;
    uint32_t bits = (uint32_t)(q & 0xFFFFE000u);
    std::memcpy(&w.m1, &bits, 4);
    w.shift = (int)((q >> 32) & 0xF) + 1;
    w.mcb = ((q >> 36) & 1) != 0;
    int off = (int)((q >> 37) & 0x1FF);
    w.offset = off >= 256 ? off - 512 : off;
    w.sign = ((q >> 46) & 1) != 0;
    return w;
}

inline float RoundHalfEven(float x) { return std::nearbyint(x); }  // default FP environment: to nearest, ties to even

inline int32_t SatInt(double v, int32_t lo, int32_t hi) {
    if (!(v == v)) return 0;
    if (v < lo) return lo;
    if (v > hi) return hi;
    return (int32_t)v;
}

// Converts one L0C element (float or int32 bits) to the output element of type T.
template <typename T, typename U>
inline T FixpipeConvert(U x, QuantMode_t q, bool relu, const QuantWord& w) {
    if constexpr (std::is_same<U, float>::value) {
        if (q == NoQuant || q == F322F16 || q == F322BF16) {
            float v = relu && x < 0 ? 0.0f : x;
            if constexpr (std::is_same<T, half>::value) {
                return half::FromBits(FloatToHalfBits(v));
            } else if constexpr (std::is_same<T, bfloat16_t>::value) {
                return bfloat16_t::FromBits(FloatToBf16Bits(v));
            } else {
                return (T)v;
            }
        }
        // (V)QF322B8_PRE: scale by M1 (M2 = 0 under ReLU for negatives), round, add offset, saturate.
        float v = x >= 0 ? x * w.m1 : (relu ? 0.0f : x * w.m1);
        float r = RoundHalfEven(v < -256.0f ? -256.0f : (v > 255.0f ? 255.0f : v));
        int32_t z = (int32_t)r + w.offset;
        return (T)(w.sign ? SatInt(z, -128, 127) : SatInt(z, 0, 255));
    } else {
        int32_t xi = x;
        if (q == NoQuant) return (T)(relu && xi < 0 ? 0 : xi);
        double xv = xi;
        if (w.mcb) xv = SatInt((double)(xi >> w.shift), -32768, 32767);
        float f = (float)xv;
        float v = f >= 0 ? f * w.m1 : (relu ? 0.0f : f * w.m1);
        if (q == DEQF16 || q == VDEQF16) {
            if constexpr (std::is_same<T, half>::value) return half::FromBits(FloatToHalfBits(v));
            return T(0);
        }
        float r = RoundHalfEven(v < -256.0f ? -256.0f : (v > 255.0f ? 255.0f : v));
        int32_t z = (int32_t)r + w.offset;
        return (T)(w.sign ? SatInt(z, -128, 127) : SatInt(z, 0, 255));
    }
}

// Type / quantPre combinations dav-2201 accepts (toL1 excludes f32->f32 and s32->s32).
template <typename T, typename U>
inline void CheckFixpipeTypes(const char* api, QuantMode_t q, bool toL1) {
    constexpr bool fSrc = std::is_same<U, float>::value, iSrc = std::is_same<U, int32_t>::value;
    static_assert(fSrc || iSrc, "Fixpipe reads float or int32_t from L0C");
    constexpr bool b8 = std::is_same<T, int8_t>::value || std::is_same<T, uint8_t>::value;
    bool ok = false;
    const char* want = "";
    if (fSrc && std::is_same<T, float>::value) { ok = !toL1 && q == NoQuant; want = toL1 ? "(no float output to L1)" : "NoQuant"; }
    else if (fSrc && std::is_same<T, half>::value) { ok = q == F322F16; want = "F322F16"; }
    else if (fSrc && std::is_same<T, bfloat16_t>::value) { ok = q == F322BF16; want = "F322BF16"; }
    else if (fSrc && b8) { ok = q == QF322B8_PRE || q == VQF322B8_PRE; want = "QF322B8_PRE or VQF322B8_PRE"; }
    else if (iSrc && std::is_same<T, int32_t>::value) { ok = !toL1 && q == NoQuant; want = toL1 ? "(no int32 output to L1)" : "NoQuant"; }
    else if (iSrc && std::is_same<T, half>::value) { ok = q == DEQF16 || q == VDEQF16; want = "DEQF16 or VDEQF16"; }
    else if (iSrc && b8) { ok = q == REQ8 || q == VREQ8; want = "REQ8 or VREQ8"; }
    else { Fail(api, "%s -> %s is not a Fixpipe conversion on dav-2201", TypeName<U>(), TypeName<T>()); }
    if (!ok) {
        Fail(api, "%s -> %s%s needs quantPre %s, got %s (quantPre is never inferred: set it by hand)", TypeName<U>(),
             TypeName<T>(), toL1 ? " into L1" : "", want, QuantName(q));
    }
}

struct FixpipeView {
    const uint8_t* src;  // L0C tensor start
    uint64_t srcLen;
    const uint64_t* cols;  // per-column quant words (vector modes) or nullptr
};

template <typename T, typename U, AscendC::CO2Layout layout>
inline void FixpipeRun(const char* api, uint8_t* dst, bool toGm, uint64_t dstLen, const AscendC::GlobalTensor<T>* gdst,
                       const FixpipeView& v, const AscendC::FixpipeParamsV220& p) {
    using AscendC::CO2Layout;
    RequireAic(api);
    constexpr bool nd = layout == CO2Layout::ROW_MAJOR;
    if (layout == CO2Layout::COLUMN_MAJOR) Fail(api, "CFG_COLUMN_MAJOR (NZ -> DN) exists only on Ascend 950");
    CheckFixpipeTypes<T, U>(api, p.quantPre, !toGm);
    CheckUnitFlagValue(api, p.unitFlag);
    if (IsVectorQuant(p.quantPre) && v.cols == nullptr) {
        Fail(api, "quantPre %s takes per-column parameters: use the overload with a cbufWorkspace tensor", QuantName(p.quantPre));
    }
    if (!IsVectorQuant(p.quantPre) && v.cols != nullptr) {
        Fail(api, "a cbufWorkspace tensor is only used with VDEQF16 / VQF322B8_PRE / VREQ8, got %s", QuantName(p.quantPre));
    }
    if (p.isChannelSplit) {
        if (!(std::is_same<T, float>::value && std::is_same<U, float>::value) || nd || !toGm) {
            Fail(api, "isChannelSplit needs float -> float, CFG_NZ and a GM destination");
        }
        if (p.nSize % 8 != 0) Fail(api, "with isChannelSplit nSize %u must be a multiple of 8", p.nSize);
        if (p.unitFlag != 0) Fail(api, "isChannelSplit cannot be combined with unitFlag %u on dav-2201", p.unitFlag);
    } else if (!nd && p.nSize % 16 != 0) {
        Fail(api, "with NZ output nSize %u must be a multiple of 16", p.nSize);
    }
    if (p.nSize > 4095) Fail(api, "nSize %u is outside [0, 4095]", p.nSize);
    if (nd && p.mSize > 8192) Fail(api, "mSize %u is outside [0, 8192] with NZ2ND", p.mSize);
    if (p.dstStride == 0) Fail(api, "dstStride must not be 0");
    const uint32_t ndNum = nd ? p.ndNum : 1;
    if (p.nSize == 0 || p.mSize == 0 || p.ndNum == 0) return;  // documented NOP
    if (nd && ndNum > 1) {
        if (p.srcNdStride < 1 || p.srcNdStride > 512) Fail(api, "srcNdStride %u is outside [1, 512] (units of 1 KB) with ndNum %u", p.srcNdStride, ndNum);
        if (p.dstNdStride < 1) Fail(api, "dstNdStride must be >= 1 with ndNum %u", ndNum);
    }
    const uint32_t nBlocks = CeilDivU(p.nSize, 16);
    if (nBlocks > 1 && p.srcStride < p.mSize) {
        Fail(api, "srcStride %u (16-element rows between column blocks in L0C) is smaller than mSize %u: it should be "
                  "ceil(m/16)*16 of the Mmad that wrote the tile", p.srcStride, p.mSize);
    }
    const uint64_t srcElems = (uint64_t)(ndNum - 1) * p.srcNdStride * 256 + (uint64_t)(nBlocks - 1) * p.srcStride * 16 + (uint64_t)p.mSize * 16;
    if (srcElems * 4 > v.srcLen) {
        Fail(api, "src: ndNum %u, nSize %u, mSize %u, srcStride %u read %llu bytes of L0C, past the tensor's %llu bytes", ndNum,
             p.nSize, p.mSize, p.srcStride, (unsigned long long)(srcElems * 4), (unsigned long long)v.srcLen);
    }
    const uint64_t srcOff = OffsetIn(api, Mem::L0C, v.src);
    UnitSpan units;
    if (p.unitFlag == 0) {
        NoteAccess(api, Mem::L0C, srcOff, srcElems * 4, false);
    } else {  // the fractals each column block of each ND matrix drains wait for their unit flags (whole 16-row
              // fractals: the hand-off unit, "每计算完一个分形" on the Mmad and Fixpipe pages)
        for (uint32_t n = 0; n < ndNum; ++n) {
            for (uint32_t b = 0; b < nBlocks; ++b) {
                const uint64_t at = srcOff + ((uint64_t)n * p.srcNdStride * 256 + (uint64_t)b * p.srcStride * 16) * 4;
                units.Add(at, at + (uint64_t)CeilDivU(p.mSize, 16) * 1024);
            }
        }
        FixpipeUnitsRead(api, units, p.unitFlag);
    }
    const uint32_t clk = NextClock(PIPE_FIX);
    // Output geometry: ND rows, or NZ blocks of c0 columns (b8: 32 via channel merge, except that an odd last
    // group of 16 columns stays a 16-wide block; f32: 16, or 8 split).
    const uint32_t c0 = nd ? 0 : (sizeof(T) == 1 ? 32 : sizeof(T) == 2 ? 16 : (p.isChannelSplit ? 8 : 16));
    auto blockWidth = [&](uint32_t b) -> uint32_t { return (b + 1) * c0 > p.nSize ? p.nSize - b * c0 : c0; };
    uint64_t dstBytes;
    if (nd) {
        if (p.mSize > 1 && p.dstStride < p.nSize) {
            Fail(api, "dstStride %u (ND row pitch in elements) is smaller than nSize %u: output rows overlap", p.dstStride, p.nSize);
        }
        const uint64_t one = (uint64_t)(p.mSize - 1) * p.dstStride + p.nSize;
        if (ndNum > 1 && p.dstNdStride < one) {
            Fail(api, "dstNdStride %u elements is smaller than one ND matrix (%llu elements): outputs overlap", p.dstNdStride,
                 (unsigned long long)one);
        }
        dstBytes = ((uint64_t)(ndNum - 1) * p.dstNdStride + one) * sizeof(T);
    } else {
        const uint32_t outBlocks = CeilDivU(p.nSize, c0);
        const uint64_t blockBytes = (uint64_t)p.mSize * c0 * sizeof(T);
        if (outBlocks > 1 && (uint64_t)p.dstStride * 32 < blockBytes) {
            Fail(api, "dstStride %u x 32 B is smaller than one NZ column block (%u rows x %u x %zu B): outputs overlap",
                 p.dstStride, p.mSize, c0, sizeof(T));
        }
        dstBytes = (uint64_t)(outBlocks - 1) * p.dstStride * 32 + (uint64_t)p.mSize * blockWidth(outBlocks - 1) * sizeof(T);
    }
    if (toGm) {
        gdst->CheckElems(api, 0, (dstBytes + sizeof(T) - 1) / sizeof(T));
        if (!nd && (uintptr_t)dst % 32 != 0) Fail(api, "an NZ destination in GM must be 32-byte aligned (address %p)", (void*)dst);
        CoreState& c = Cur();
        if (c.atomicKind != kAtomicNone && c.atomicKind != AtomicKindOf<T>()) {
            Fail(api, "SetAtomicAdd type (kind %d) does not match the %s output; set SetAtomicAdd<%s>()", c.atomicKind,
                 TypeName<T>(), TypeName<T>());
        }
    } else {
        if (dstBytes > dstLen) {
            Fail(api, "dst: writes %llu bytes of L1, past the tensor's %llu bytes", (unsigned long long)dstBytes, (unsigned long long)dstLen);
        }
        NoteAccess(api, Mem::L1, OffsetIn(api, Mem::L1, dst), dstBytes, true);
    }

    if (Computing()) {
        QuantWord scalar = DecodeQuantWord(p.deqScalar);
        std::vector<QuantWord> perCol;
        if (v.cols != nullptr) {
            perCol.resize(p.nSize);
            for (uint32_t j = 0; j < p.nSize; ++j) perCol[j] = DecodeQuantWord(v.cols[j]);
        }
        std::vector<T> row(nd ? p.nSize : c0);
        // L0C no Mmad wrote (the pages set no rule against reading it) follows the poison rule (memory/poison.h): the
        // conversion keeps the poison's signature, so a store of it to GM is reported at the launch end, and one into
        // L1 is judged where it is used. An 8-bit output cannot carry the signature: the Fixpipe warns instead.
        bool warned = false;
        auto load = [&](uint32_t n, uint32_t i, uint32_t j) -> U {
            const uint8_t* q = v.src + ((uint64_t)n * p.srcNdStride * 256 + (uint64_t)(j / 16) * p.srcStride * 16 + (uint64_t)i * 16 + j % 16) * 4;
            if (!CarriesPoison<T>() && std::is_same<U, float>::value && !warned && IsPoisonWord(q)) {
                warned = true;
                Warn(api, "reads L0C element (row %u, column %u%s) that no Mmad wrote (never-written poison; nSize %u, "
                          "mSize %u, srcStride %u) into a %s output, which cannot carry the poison to the launch-end "
                          "report; on the NPU these bytes are an earlier kernel's leftovers", i, j,
                     ndNum > 1 ? ", of an ND matrix" : "", p.nSize, p.mSize, p.srcStride, TypeName<T>());
            }
            U x;
            std::memcpy(&x, q, 4);
            return x;
        };
        const uint64_t srcOff = OffsetIn(api, Mem::L0C, v.src);
        auto put = [&](uint8_t* out, const T* data, uint32_t count) {
            if (toGm) {
                GmWrite<T>(out, (const uint8_t*)data, (uint64_t)count * sizeof(T));
                NotePoisonStore<T>(api, out, (uint64_t)count * sizeof(T), Mem::L0C, srcOff);
            } else {
                std::memcpy(out, data, (size_t)count * sizeof(T));
            }
        };
        for (uint32_t n = 0; n < ndNum; ++n) {
            for (uint32_t i = 0; i < p.mSize; ++i) {
                if (nd) {
                    for (uint32_t j = 0; j < p.nSize; ++j) {
                        row[j] = FixpipeConvert<T, U>(load(n, i, j), p.quantPre, p.reluEn, v.cols ? perCol[j] : scalar);
                    }
                    put(dst + ((uint64_t)n * p.dstNdStride + (uint64_t)i * p.dstStride) * sizeof(T), row.data(), p.nSize);
                } else {
                    for (uint32_t b = 0; b * c0 < p.nSize; ++b) {
                        const uint32_t cnt = blockWidth(b);
                        for (uint32_t e = 0; e < cnt; ++e) {
                            const uint32_t j = b * c0 + e;
                            row[e] = FixpipeConvert<T, U>(load(n, i, j), p.quantPre, p.reluEn, v.cols ? perCol[j] : scalar);
                        }
                        put(dst + (uint64_t)b * p.dstStride * 32 + (uint64_t)i * cnt * sizeof(T), row.data(), cnt);
                    }
                }
            }
        }
    }
    const uint64_t elems = (uint64_t)ndNum * p.mSize * p.nSize;
    Trace(api, PIPE_FIX, elems, elems * sizeof(T), ndNum * p.mSize, dst, v.src, TraceKind::Instr, p.unitFlag);
    FixpipeUnitsDone(units, p.unitFlag, clk);
}

template <typename U>
inline FixpipeView FixpipeSource(const char* api, const AscendC::LocalTensor<U>& src) {
    RequireAic(api);
    CubeOperand(api, "src", src, Mem::L0C, 64, "L0C (CO1)");
    return FixpipeView{src.Ptr(), src.GetLength(), nullptr};
}

template <typename S>
inline const uint64_t* FixpipeWorkspace(const char* api, const AscendC::LocalTensor<S>& ws, uint32_t nSize) {
    static_assert(std::is_same<S, uint64_t>::value, "cbufWorkspace holds uint64_t quantisation words");
    CubeOperand(api, "cbufWorkspace", ws, Mem::L1, 32, "L1 (C1)");
    CheckLocalSpan(api, "cbufWorkspace", ws, 0, (uint64_t)nSize * 8);
    return reinterpret_cast<const uint64_t*>(ws.Ptr());
}

// The Fixpipe API programs the registers DataCopy(L0C->..., DataCopyCO12DstParams) reads: ND_PARA for CFG_ROW_MAJOR,
// QUANT_PRE for scalar quantisation, and FPC for per-column quantisation (pointed at a temporary Fixpipe Buffer copy
// of cbufWorkspace, so an earlier SetFixPipeConfig no longer holds).
inline void FixpipeWritesRegs(const AscendC::FixpipeParamsV220& p, bool rowMajor) {
    CubeSpr& r = CubeRegs();
    if (rowMajor) {
        r.ndNum = p.ndNum;
        r.srcNdStride = p.srcNdStride;
        r.dstNdStride = p.dstNdStride;
        r.ndParaSet = true;
    }
    if (p.quantPre == DEQF16 || p.quantPre == QF322B8_PRE || p.quantPre == REQ8) {
        r.quantPre = p.deqScalar;
        r.quantPreSet = true;
    }
    if (IsVectorQuant(p.quantPre)) {
        r.fpcQuantAddr = -1;
        r.fpcInvalid = "a Fixpipe with per-column quantisation re-pointed FPC at its own temporary Fixpipe Buffer copy";
    }
}

template <typename T, const AscendC::FixpipeConfig& config>
inline uint8_t* FixpipeL1Dst(const char* api, const AscendC::LocalTensor<T>& dst) {
    RequireAic(api);
    if (config.format == AscendC::CO2Layout::ROW_MAJOR) {
        Fail(api, "L0C -> L1 writes NZ only on dav-2201: pass CFG_NZ as the config template argument (the default "
                  "CFG_ROW_MAJOR has no effect on this path and is rejected by CANN's debug checks)");
    }
    CubeOperand(api, "dst", dst, Mem::L1, 32, "L1 (A1/B1/C1)");
    return dst.Ptr();
}

}  // namespace twin

namespace AscendC {

// L0C -> GM.
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& intriParams) {
    const char* api = "Fixpipe(L0C->GM)";
    twin::FixpipeView v = twin::FixpipeSource(api, src);
    dst.CheckElems(api, 0, 0);
    twin::FixpipeRun<T, U, config.format>(api, (uint8_t*)dst.GetPhyAddr(), true, 0, &dst, v, intriParams);
    twin::FixpipeWritesRegs(intriParams, config.format == CO2Layout::ROW_MAJOR);
}

// L0C -> GM with per-column quantisation words in L1.
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR, typename S = uint64_t,
          typename std::enable_if<std::is_same<PrimT<S>, uint64_t>::value, bool>::type = true>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const LocalTensor<S>& cbufWorkspace,
                    const FixpipeParamsV220& intriParams) {
    const char* api = "Fixpipe(L0C->GM, cbufWorkspace)";
    twin::FixpipeView v = twin::FixpipeSource(api, src);
    v.cols = twin::FixpipeWorkspace(api, cbufWorkspace, intriParams.nSize);
    dst.CheckElems(api, 0, 0);
    twin::FixpipeRun<T, U, config.format>(api, (uint8_t*)dst.GetPhyAddr(), true, 0, &dst, v, intriParams);
    twin::FixpipeWritesRegs(intriParams, config.format == CO2Layout::ROW_MAJOR);
}

// L0C -> L1 (NZ only; config must be CFG_NZ).
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const LocalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& intriParams) {
    const char* api = "Fixpipe(L0C->L1)";
    twin::FixpipeView v = twin::FixpipeSource(api, src);
    uint8_t* d = twin::FixpipeL1Dst<T, config>(api, dst);
    twin::FixpipeRun<T, U, CO2Layout::NZ>(api, d, false, dst.GetLength(), (const GlobalTensor<T>*)nullptr, v, intriParams);
    twin::FixpipeWritesRegs(intriParams, false);
}

template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR, typename S = uint64_t,
          typename std::enable_if<std::is_same<PrimT<S>, uint64_t>::value, bool>::type = true>
inline void Fixpipe(const LocalTensor<T>& dst, const LocalTensor<U>& src, const LocalTensor<S>& cbufWorkspace,
                    const FixpipeParamsV220& intriParams) {
    const char* api = "Fixpipe(L0C->L1, cbufWorkspace)";
    twin::FixpipeView v = twin::FixpipeSource(api, src);
    v.cols = twin::FixpipeWorkspace(api, cbufWorkspace, intriParams.nSize);
    uint8_t* d = twin::FixpipeL1Dst<T, config>(api, dst);
    twin::FixpipeRun<T, U, CO2Layout::NZ>(api, d, false, dst.GetLength(), (const GlobalTensor<T>*)nullptr, v, intriParams);
    twin::FixpipeWritesRegs(intriParams, false);
}

}  // namespace AscendC
