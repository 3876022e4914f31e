// LoadData with LoadData3DParamsV2 / LoadData3DParamsV2Pro (img2col, L1 -> L0A/L0B on PIPE_MTE1) and its register
// setters SetFmatrix (Load3DSetFMatrixCal), SetLoadDataPaddingValue, SetLoadDataRepeat and SetLoadDataBoundary
// (cube/cube_spr.h).
//
// The feature map sits in L1 as C1 x l1H x l1W x C0 (C0 = 32 B / sizeof(T)). img2col turns it into a matrix X with
// one row per output position m = ho * Wo + wo and one column per k = ((c1 * Hk + kh) * Wk + kw) * C0 + c0:
//   X[m][k] = fmap[c1][ho*strideH + kh*dilationH - padTop][wo*strideW + kw*dilationW - padLeft][c0]
// (the pad value outside the map), Ho/Wo as for a padded, dilated convolution. The call moves the window
// rows [mStartPt, +mExtension) x columns [kStartPt, +kExtension) of X:
//   L0A            A = window (Zz);   L0A, enTranspose (b16/b32)  A = window^T (Zz);
//   L0B (b16/b32)  B = window (K = m, N = k; Zn, transposed implicitly).
// Not modelled (they raise): channelSize values that are not a multiple of C0 (the small-channel L1 layouts),
// SetLoadDataRepeat with repeatTime > 1.
#pragma once
#include "twin/cube/cube_spr.h"
#include "twin/cube/fractal.h"

namespace AscendC {

constexpr uint8_t PAD_SIZE = 4;  // entries of padList: left, right, top, bottom (kernel_utils_constants.h)

enum class FmatrixMode : uint8_t {
    FMATRIX_LEFT = 0,
    FMATRIX_RIGHT = 1,
};

struct IsResetLoad3dConfig {
    constexpr IsResetLoad3dConfig(const bool isSetFMatrixIn, const bool isSetPaddingIn)
        : isSetFMatrix(isSetFMatrixIn), isSetPadding(isSetPaddingIn) {}
    bool isSetFMatrix = true;
    bool isSetPadding = true;
};
inline constexpr IsResetLoad3dConfig IS_RESER_LOAD3D_DEFAULT_CONFIG = {true, true};

struct LoadDataRepeatParam {
    LoadDataRepeatParam() {}
    LoadDataRepeatParam(const uint16_t repeatStrideIn, const uint8_t repeatTimeIn, const uint8_t repeatModeIn)
        : repeatStride(repeatStrideIn), repeatTime(repeatTimeIn), repeatMode(repeatModeIn) {}
    uint16_t repeatStride = 0;
    uint8_t repeatTime = 1;
    uint8_t repeatMode = 0;
    uint8_t reserved = 0;
};

template <typename T>
struct LoadData3DParamsV2 {
    LoadData3DParamsV2() {}
    LoadData3DParamsV2(const uint8_t padListIn[4], const uint16_t l1HIn, const uint16_t l1WIn, const uint16_t channelSizeIn,
                       const uint16_t kExtensionIn, const uint16_t mExtensionIn, const uint16_t kStartPtIn,
                       const uint16_t mStartPtIn, const uint8_t strideWIn, const uint8_t strideHIn, const uint8_t filterWIn,
                       const uint8_t filterHIn, const uint8_t dilationFilterWIn, const uint8_t dilationFilterHIn,
                       const bool enTransposeIn, const bool enSmallKIn, const T padValueIn)
        : l1H(l1HIn), l1W(l1WIn), channelSize(channelSizeIn), kExtension(kExtensionIn), mExtension(mExtensionIn),
          kStartPt(kStartPtIn), mStartPt(mStartPtIn), strideW(strideWIn), strideH(strideHIn), filterW(filterWIn),
          filterH(filterHIn), dilationFilterW(dilationFilterWIn), dilationFilterH(dilationFilterHIn),
          enTranspose(enTransposeIn), enSmallK(enSmallKIn), padValue(padValueIn) {
        for (int i = 0; i < 4; ++i) padList[i] = padListIn[i];
    }
    LoadData3DParamsV2(const uint8_t padListIn[4], const uint16_t l1HIn, const uint16_t l1WIn, const uint16_t channelSizeIn,
                       const uint16_t kExtensionIn, const uint16_t mExtensionIn, const uint16_t kStartPtIn,
                       const uint16_t mStartPtIn, const uint8_t strideWIn, const uint8_t strideHIn, const uint8_t filterWIn,
                       const uint8_t filterHIn, const uint8_t dilationFilterWIn, const uint8_t dilationFilterHIn,
                       const bool enTransposeIn, const bool enSmallKIn, const T padValueIn, const bool filterSizeWIn,
                       const bool filterSizeHIn, const bool fMatrixCtrlIn)
        : LoadData3DParamsV2(padListIn, l1HIn, l1WIn, channelSizeIn, kExtensionIn, mExtensionIn, kStartPtIn, mStartPtIn,
                             strideWIn, strideHIn, filterWIn, filterHIn, dilationFilterWIn, dilationFilterHIn, enTransposeIn,
                             enSmallKIn, padValueIn) {
        filterSizeW = filterSizeWIn;
        filterSizeH = filterSizeHIn;
        fMatrixCtrl = fMatrixCtrlIn;
    }
    uint8_t padList[4] = {0, 0, 0, 0};  // left, right, top, bottom
    uint16_t l1H = 0;
    uint16_t l1W = 0;
    uint16_t channelSize = 0;
    uint16_t kExtension = 0;
    uint16_t mExtension = 0;
    uint16_t kStartPt = 0;
    uint16_t mStartPt = 0;
    uint8_t strideW = 1;
    uint8_t strideH = 1;
    uint8_t filterW = 1;
    uint8_t filterH = 1;
    uint8_t dilationFilterW = 1;
    uint8_t dilationFilterH = 1;
    bool enTranspose = false;
    bool enSmallK = false;
    T padValue = 0;
    bool filterSizeW = false;
    bool filterSizeH = false;
    bool fMatrixCtrl = false;
};

// LoadData3DParamsV2Pro: the LoadData3DParamsV2 fields packed into two words (LoadData_3D.md, table 5); l1H, l1W,
// padList and the pad value come from the FMATRIX and PADDING registers (SetFmatrix / Load3DSetFMatrixCal,
// SetLoadDataPaddingValue).
struct LoadData3DParamsV2Pro {
    LoadData3DParamsV2Pro() {}
    LoadData3DParamsV2Pro(const uint16_t channelSizeIn, const bool enTransposeIn, const bool enSmallKIn,
                          const bool filterSizeWIn, const bool filterSizeHIn, const bool fMatrixCtrlIn,
                          const uint64_t extConfigIn, const uint64_t filterConfigIn)
        : channelSize(channelSizeIn), enTranspose(enTransposeIn), enSmallK(enSmallKIn), filterSizeW(filterSizeWIn),
          filterSizeH(filterSizeHIn), fMatrixCtrl(fMatrixCtrlIn), extConfig(extConfigIn), filterConfig(filterConfigIn) {}
    uint16_t channelSize = 0;
    bool enTranspose = false;
    bool enSmallK = false;
    bool filterSizeW = false;
    bool filterSizeH = false;
    bool fMatrixCtrl = false;
    uint64_t extConfig = 0;  // mStartPt [63:48], kStartPt [47:32], mExtension [31:16], kExtension [15:0]
    uint64_t filterConfig = 0X10101010101;  // dilationH [47:40], dilationW [39:32], filterH, filterW, strideH, strideW
};

}  // namespace AscendC

namespace twin {

// The FMATRIX register write shared by SetFmatrix and the raw Load3DSetFMatrixCal.
inline void WriteFmatrix(uint16_t l1H, uint16_t l1W, const uint8_t padList[4]) {
    CubeSpr& r = CubeRegs();
    r.l1H = l1H;
    r.l1W = l1W;
    for (int i = 0; i < 4; ++i) r.padList[i] = padList[i];
    r.fmatrixSet = true;
}

}  // namespace twin

namespace AscendC {

inline void SetFmatrix(uint16_t l1H, uint16_t l1W, const uint8_t padList[4], const FmatrixMode& fmatrixMode) {
    const char* api = "SetFmatrix";
    twin::RequireAic(api);
    if (l1H < 1 || l1H > 32767 || l1W < 1 || l1W > 32767) twin::Fail(api, "l1H %u / l1W %u must lie in [1, 32767]", l1H, l1W);
    if (fmatrixMode != FmatrixMode::FMATRIX_LEFT) {
        twin::Fail(api, "FMATRIX_RIGHT is not supported: only FMATRIX_LEFT exists (it serves both matrices)");
    }
    twin::WriteFmatrix(l1H, l1W, padList);
    twin::Trace(api, PIPE_S, 0, 0, 1, nullptr, nullptr);
}

// The dav-2201 implementation function behind SetFmatrix(..., FMATRIX_LEFT) (kernel_operator_mm_impl.h), called
// directly by catlass: the plain register write, without SetFmatrix's range checks.
inline void Load3DSetFMatrixCal(uint16_t l1H, uint16_t l1W, const uint8_t padList[4]) {
    twin::RequireAic("Load3DSetFMatrixCal");
    twin::WriteFmatrix(l1H, l1W, padList);
    twin::Trace("Load3DSetFMatrixCal", PIPE_S, 0, 0, 1, nullptr, nullptr);
}

}  // namespace AscendC

namespace twin {

// PADDING register: b16/b32 values as their bits, a b8 value repeated in both bytes of the low half-word.
template <typename T>
inline void SetLoad3dPadding(const T v) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    if (sizeof(T) == 1) bits |= bits << 8;
    CubeSpr& r = CubeRegs();
    r.padding = bits;
    r.paddingSet = true;
}

}  // namespace twin

namespace AscendC {

template <typename T>
inline void SetLoadDataPaddingValue(const T padValue) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "SetLoadDataPaddingValue takes a b8, b16 or b32 value");
    twin::RequireAic("SetLoadDataPaddingValue");
    twin::SetLoad3dPadding(padValue);
    twin::Trace("SetLoadDataPaddingValue", PIPE_S, 0, 0, 1, nullptr, nullptr);
}

inline void SetLoadDataRepeat(const LoadDataRepeatParam& repeatParams) {
    const char* api = "SetLoadDataRepeat";
    twin::RequireAic(api);
    if (repeatParams.repeatMode > 1) twin::Fail(api, "repeatMode %u is not 0 (height) or 1 (width)", repeatParams.repeatMode);
    twin::CubeSpr& r = twin::CubeRegs();
    r.repeatStride = repeatParams.repeatStride;
    r.repeatTime = repeatParams.repeatTime;
    r.repeatMode = repeatParams.repeatMode;
    twin::Trace(api, PIPE_S, 0, 0, 1, nullptr, nullptr);
}

inline void SetLoadDataBoundary(uint32_t boundaryValue) {
    const char* api = "SetLoadDataBoundary";
    twin::RequireAic(api);
    if (boundaryValue != 0 && boundaryValue < 1024) {
        twin::Fail(api, "boundaryValue %u bytes: values in [1, 1023] are undefined (0 = no boundary, else >= 1024)", boundaryValue);
    }
    twin::CubeRegs().boundary = boundaryValue;
    twin::Trace(api, PIPE_S, 0, 0, 1, nullptr, nullptr);
}

}  // namespace AscendC

namespace twin {

// channelSize values the dav-2201 docs allow (n >= 1): b32 4, 8n, 8n+4; b16 4, 8, 16n, 16n+4, 16n+8;
// b8 4, 8, 16, 32n, 32n+4, 32n+8, 32n+16; b4 8, 16, 32, 64n, 64n+8, 64n+16, 64n+32.
template <typename T>
inline bool Load3dChannelAllowed(uint32_t c) {
    if constexpr (ElemBits<T>::value == 4) {  // b4: 8, 16, 32, 64n, 64n+8, 64n+16, 64n+32
        return c == 8 || c == 16 || c == 32 || (c >= 64 && (c % 64 == 0 || c % 64 == 8 || c % 64 == 16 || c % 64 == 32));
    }
    constexpr uint32_t c0 = C0Of<T>();
    if (c == 4 || (c0 >= 16 && c == 8) || (c0 == 32 && c == 16)) return true;
    if (c < c0) return false;
    const uint32_t r = c % c0;
    return r == 0 || r == 4 || (c0 >= 16 && r == 8) || (c0 == 32 && r == 16);
}

template <typename T>
inline void LoadData3dV2(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                         const AscendC::LoadData3DParamsV2<T>& p, bool setFMatrix, bool setPadding) {
    RequireAic(api);
    if (!dst.Valid()) Fail(api, "dst tensor is not allocated");
    const Mem dm = dst.Phys();
    if (dm != Mem::L0A && dm != Mem::L0B) {
        Fail(api, "dst must be in L0A (A2) or L0B (B2), got position %s", PositionName(dst.Pos()));
    }
    CubeOperand(api, "dst", dst, dm, 512, "L0A (A2) or L0B (B2)");
    const uint64_t srcAddr = CubeOperand(api, "src", src, Mem::L1, 32, "L1 (A1/B1)");
    constexpr bool b4 = ElemBits<T>::value == 4;  // int4b_t: 64 per 32 B block, nibbles (element 2i low)
    constexpr bool b8 = sizeof(T) == 1 && !b4;
    constexpr uint32_t c0 = b4 ? 64 : C0Of<T>();
    const char* tname = b4 ? "int4b_t" : TypeName<T>();
    const bool toB = dm == Mem::L0B;
    constexpr bool typeOk = std::is_same<T, int8_t>::value || std::is_same<T, uint8_t>::value || std::is_same<T, half>::value ||
                            std::is_same<T, bfloat16_t>::value || std::is_same<T, int32_t>::value ||
                            std::is_same<T, uint32_t>::value || std::is_same<T, float>::value || b4;
    if (!typeOk) Fail(api, "%s is not a LoadData3DParamsV2 type on dav-2201", tname);
    if ((b8 || b4) && (toB || p.enTranspose)) {
        Fail(api, "b4/b8 data (%s) cannot go to L0B or be transposed into L0A on dav-2201", tname);
    }
    if (p.enSmallK) Fail(api, "enSmallK is no longer supported");
    if (p.fMatrixCtrl) Fail(api, "fMatrixCtrl = true (right-matrix FMATRIX) is not supported; only false");
    if (p.strideW < 1 || p.strideW > 63 || p.strideH < 1 || p.strideH > 63) {
        Fail(api, "strideW %u / strideH %u must lie in [1, 63]", p.strideW, p.strideH);
    }
    if (p.dilationFilterW < 1 || p.dilationFilterH < 1) {
        Fail(api, "dilationFilterW %u / dilationFilterH %u must lie in [1, 255]", p.dilationFilterW, p.dilationFilterH);
    }
    if (p.mStartPt > 32767) Fail(api, "mStartPt %u is outside [0, 32767]", p.mStartPt);
    if (p.kStartPt % c0 != 0 || p.kExtension % c0 != 0) {
        Fail(api, "kStartPt %u and kExtension %u must be multiples of %u for %s", p.kStartPt, p.kExtension, c0, tname);
    }
    CubeSpr& r = CubeRegs();
    if (setFMatrix) {  // the call programs FMATRIX (and PADDING) itself, and they stay set afterwards
        r.l1H = p.l1H;
        r.l1W = p.l1W;
        for (int i = 0; i < 4; ++i) r.padList[i] = p.padList[i];
        r.fmatrixSet = true;
    } else if (!r.fmatrixSet) {
        Fail(api, "the FMATRIX register was never set in this kernel (isSetFMatrix = false, or LoadData3DParamsV2Pro): "
                  "call SetFmatrix first");
    }
    if (setPadding) SetLoad3dPadding(p.padValue);
    const uint32_t H = r.l1H, W = r.l1W;
    if (H > 32767 || W > 32767) Fail(api, "l1H %u / l1W %u are outside [0, 32767]", H, W);
    const uint32_t fW = p.filterW + (p.filterSizeW ? 256u : 0u), fH = p.filterH + (p.filterSizeH ? 256u : 0u);
    // LoadData_3D.md calls a zero size a NOP; CANN's debug checks reject it (l1H, l1W, kExtension, mExtension, filter
    // size >= 1: asc-devkit tests/api/basic_api/ascendc_case_ascend910b1 test_loaddata_check.cpp): the destination
    // would keep stale bytes while the kernel goes on as if loaded, so the twin refuses it too.
    if (H == 0 || W == 0 || p.channelSize == 0 || p.kExtension == 0 || p.mExtension == 0 || fW == 0 || fH == 0) {
        Fail(api, "l1H %u, l1W %u, channelSize %u, kExtension %u, mExtension %u, filter %ux%u: a zero size loads nothing "
                  "(a NOP per LoadData_3D.md, rejected by CANN's debug checks): each must be at least 1", H, W,
             p.channelSize, p.kExtension, p.mExtension, fW, fH);
    }
    if (r.repeatTime == 0) return;  // documented NOP
    if (!Load3dChannelAllowed<T>(p.channelSize)) Fail(api, "channelSize %u is not allowed for %s", p.channelSize, tname);
    if (p.channelSize % c0 != 0) {
        Fail(api, "channelSize %u is allowed but not a multiple of C0 = %u: the small-channel L1 layouts are not "
                  "modelled by the twin", p.channelSize, c0);
    }
    if (r.repeatTime > 1) Fail(api, "SetLoadDataRepeat repeatTime %u > 1 is not modelled by the twin", r.repeatTime);
    const uint32_t padL = r.padList[0], padR = r.padList[1], padT = r.padList[2], padB = r.padList[3];
    const int64_t kH = (int64_t)(fH - 1) * p.dilationFilterH + 1, kW = (int64_t)(fW - 1) * p.dilationFilterW + 1;
    const int64_t Ho = ((int64_t)H + padT + padB - kH) / p.strideH + 1, Wo = ((int64_t)W + padL + padR - kW) / p.strideW + 1;
    if ((int64_t)H + padT + padB < kH || (int64_t)W + padL + padR < kW) {
        Fail(api, "the dilated %ux%u filter does not fit the padded %ux%u feature map: no output positions", fH, fW, H, W);
    }
    const uint64_t C1 = p.channelSize / c0, Mtot = (uint64_t)(Ho * Wo), Ktot = C1 * fH * fW * c0;
    if ((uint64_t)p.mStartPt + p.mExtension > Mtot || (uint64_t)p.kStartPt + p.kExtension > Ktot) {
        Fail(api, "window rows [%u, %u) x columns [%u, %u) reach past the img2col matrix of %llu x %llu (Ho %lld x Wo %lld, "
                  "C1 %llu x filter %ux%u x C0 %u)", p.mStartPt, p.mStartPt + p.mExtension, p.kStartPt, p.kStartPt + p.kExtension,
             (unsigned long long)Mtot, (unsigned long long)Ktot, (long long)Ho, (long long)Wo, (unsigned long long)C1, fH, fW, c0);
    }
    if (sizeof(T) != 4 && p.mExtension % 16 != 0 && (uint64_t)p.mStartPt + p.mExtension != Mtot) {
        Fail(api, "mExtension %u must be a multiple of 16 unless the window reaches the last row (%llu)", p.mExtension,
             (unsigned long long)Mtot);
    }
    // Destination layout: L0B Zn (K = window rows) with N1 fractal columns, L0A Zz with K1 fractal columns; the
    // transposed and the L0B forms pad the window rows to 16 before cutting them into C0-wide fractal columns.
    const bool trans = !toB && p.enTranspose;
    const uint64_t cols = toB ? CeilDivU(p.kExtension, 16)
                              : (trans ? (uint64_t)CeilDivU(p.mExtension, 16) * 16 / c0 : (uint64_t)p.kExtension / c0);
    auto dstOff = [&](uint64_t i, uint64_t j) -> uint64_t {  // element offset of window element (i, j)
        if (toB) return ((i / c0 * cols + j / 16) * 16 + j % 16) * c0 + i % c0;      // B[k = i][n = j]
        if (trans) return ((j / 16 * cols + i / c0) * 16 + j % 16) * c0 + i % c0;    // A[m = j][k = i]
        return ((i / 16 * cols + j / c0) * 16 + i % 16) * c0 + j % c0;               // A[m = i][k = j]
    };
    // The last window element is the highest offset in every layout; padding rows past the window are not written.
    const uint64_t dstElems = dstOff(p.mExtension - 1, p.kExtension - 1) + 1;
    const uint64_t dstBytes = b4 ? (dstElems + 1) / 2 : dstElems * sizeof(T);
    auto span = [&](const char* operand, const AscendC::LocalTensor<T>& t, uint64_t off, uint64_t n) {
        if constexpr (b4) {  // the span checks count bytes; an int4b_t view would refuse them
            CheckLocalSpan(api, operand, t.template ReinterpretCast<int8_t>(), off, n);
        } else {
            CheckLocalSpan(api, operand, t, off, n);
        }
    };
    span("dst", dst, 0, dstBytes);
    // Source footprint: the C1 planes the window's columns touch; with a boundary it wraps to the start of L1.
    const uint64_t plane = (uint64_t)H * W * 32, c1Lo = p.kStartPt / c0 / (fH * fW);
    const uint64_t c1Hi = (p.kStartPt + p.kExtension - 1) / c0 / (fH * fW);
    const uint64_t fmLo = c1Lo * plane, fmLen = (c1Hi - c1Lo + 1) * plane;
    const uint64_t B = r.boundary, l1Size = Cur().mem[(int)Mem::L1].size();
    if (B != 0 && srcAddr + fmLo >= B) {
        Fail(api, "src starts at L1 byte %llu, at or past the SetLoadDataBoundary of %llu bytes",
             (unsigned long long)(srcAddr + fmLo), (unsigned long long)B);
    }
    const bool wraps = B != 0 && srcAddr + fmLo + fmLen > B;
    if (wraps) {  // addresses wrap modulo the boundary, as often as the feature map needs (the official
                  // set_loaddata_boundary example reads 2 KB through a 1 KB boundary)
        if (B > l1Size) {
            Fail(api, "the boundary of %llu bytes lies past L1 (%llu bytes)", (unsigned long long)B, (unsigned long long)l1Size);
        }
        if (fmLen >= B) {
            NoteAccess(api, Mem::L1, 0, B, false);
        } else {
            NoteAccess(api, Mem::L1, srcAddr + fmLo, B - (srcAddr + fmLo), false);
            NoteAccess(api, Mem::L1, 0, srcAddr + fmLo + fmLen - B, false);
        }
    } else {
        span("src", src, fmLo, fmLen);
    }
    const uint8_t* l1 = Cur().Base(Mem::L1);
    auto fmapAt = [&](uint64_t c1, uint64_t h, uint64_t w) -> const uint8_t* {
        uint64_t a = srcAddr + ((c1 * H + h) * W + w) * 32;
        if (wraps && a >= B) a %= B;
        return l1 + a;
    };
    T padV;
    bool padNeeded = false;
    std::memcpy(&padV, &r.padding, sizeof(T));
    uint8_t* out = dst.Ptr();
    for (uint64_t i = 0; i < p.mExtension; ++i) {
        const uint64_t mm = p.mStartPt + i, ho = mm / Wo, wo = mm % Wo;
        for (uint64_t j = 0; j < p.kExtension; ++j) {
            const uint64_t kk = p.kStartPt + j, kb = kk / c0, kpos = kb % (fH * fW), c1 = kb / (fH * fW);
            const int64_t h = (int64_t)(ho * p.strideH + (kpos / fW) * p.dilationFilterH) - padT;
            const int64_t w = (int64_t)(wo * p.strideW + (kpos % fW) * p.dilationFilterW) - padL;
            const bool pad = h < 0 || h >= (int64_t)H || w < 0 || w >= (int64_t)W;
            if constexpr (b4) {
                padNeeded = padNeeded || pad;
                const uint64_t e = kk % c0, o = dstOff(i, j);
                const uint8_t nib = pad ? (uint8_t)(r.padding & 0xF)
                                        : (uint8_t)((fmapAt(c1, (uint64_t)h, (uint64_t)w)[e / 2] >> (4 * (e % 2))) & 0xF);
                out[o / 2] = (uint8_t)((out[o / 2] & ~(0xF << (4 * (o % 2)))) | (nib << (4 * (o % 2))));
                continue;
            }
            const uint8_t* v;
            if (pad) {
                padNeeded = true;
                v = reinterpret_cast<const uint8_t*>(&padV);
            } else {
                v = fmapAt(c1, (uint64_t)h, (uint64_t)w) + (kk % c0) * sizeof(T);
            }
            std::memcpy(out + dstOff(i, j) * sizeof(T), v, sizeof(T));
        }
    }
    if (padNeeded && !setPadding && !r.paddingSet) {
        Fail(api, "the window reads padding, but the PADDING register was never set in this kernel (isSetPadding = "
                  "false, or LoadData3DParamsV2Pro): call SetLoadDataPaddingValue first");
    }
    const uint64_t elems = (uint64_t)p.mExtension * p.kExtension;
    Trace(api, PIPE_MTE1, elems, elems * sizeof(T), CeilDivU(dstBytes, kFractalBytes), out, src.Ptr());
}

}  // namespace twin

namespace AscendC {

template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData3DParamsV2Pro& loadDataParams) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "LoadData with LoadData3DParamsV2Pro moves b8, b16 or b32 data");
    const LoadData3DParamsV2Pro& q = loadDataParams;
    LoadData3DParamsV2<T> p;
    p.channelSize = q.channelSize;
    p.kExtension = (uint16_t)q.extConfig;
    p.mExtension = (uint16_t)(q.extConfig >> 16);
    p.kStartPt = (uint16_t)(q.extConfig >> 32);
    p.mStartPt = (uint16_t)(q.extConfig >> 48);
    p.strideW = (uint8_t)q.filterConfig;
    p.strideH = (uint8_t)(q.filterConfig >> 8);
    p.filterW = (uint8_t)(q.filterConfig >> 16);
    p.filterH = (uint8_t)(q.filterConfig >> 24);
    p.dilationFilterW = (uint8_t)(q.filterConfig >> 32);
    p.dilationFilterH = (uint8_t)(q.filterConfig >> 40);
    p.enTranspose = q.enTranspose;
    p.enSmallK = q.enSmallK;
    p.filterSizeW = q.filterSizeW;
    p.filterSizeH = q.filterSizeH;
    p.fMatrixCtrl = q.fMatrixCtrl;
    twin::LoadData3dV2("LoadData(L1->L0, LoadData3DParamsV2Pro)", dst, src, p, false, false);
}

template <typename T, const IsResetLoad3dConfig& defaultConfig = IS_RESER_LOAD3D_DEFAULT_CONFIG, typename U = PrimT<T>,
          typename std::enable_if<std::is_same<PrimT<T>, U>::value, bool>::type = true>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData3DParamsV2<U>& loadDataParams) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "LoadData with LoadData3DParamsV2 moves b8, b16 or b32 data");
    twin::LoadData3dV2("LoadData(L1->L0, LoadData3DParamsV2)", dst, src, loadDataParams, defaultConfig.isSetFMatrix,
                       defaultConfig.isSetPadding);
}

}  // namespace AscendC
