// Twin test kernels for the register-driven cube APIs (one AI core, AIC only).
//
// co12_*: C = A x B^T (A [M, K], B [N, K] in GM; one K step), then C leaves L0C through DataCopy with
//   DataCopyCO12DstParams, configured by SetFixpipeNz2ndFlag / SetFixpipePreQuantFlag / SetFixPipeConfig (quantisation
//   words GM -> L1 -> Fixpipe Buffer). Optionally into L1 first, then L1 -> GM. int64 parameters, see P_*.
// load3d_*: LoadData with LoadData3DParamsV2 (img2col of a C1 x H x W x C0 feature map) into L0A or L0B, read back
//   through Mmad against an identity staged from GM (Zz image for L0A, Zn image for L0B), Fixpipe ND to GM.
#include "kernel_operator.h"

using namespace AscendC;

__aicore__ inline uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
__aicore__ inline uint32_t Align16(uint32_t a) { return CeilDiv(a, 16) * 16; }

// ---- co12 parameters ----
constexpr int P_M = 0, P_N = 1, P_K = 2, P_QUANT = 3, P_RELU = 4, P_ND2 = 5, P_SPLIT = 6, P_FLAGS = 7, P_NSIZE = 8,
              P_DSTSTRIDE = 9, P_WORD = 10, P_NDNUM = 11, P_SRCND = 12, P_DSTND = 13, P_FBOFF = 14, P_UNIT = 15,
              P_CLIP = 16, P_CLEN = 17, P_L1GAP = 18;
constexpr int64_t kSetNd = 1;          // SetFixpipeNz2ndFlag(P_NDNUM, P_SRCND, P_DSTND)
constexpr int64_t kSetQuant = 2;       // SetFixpipePreQuantFlag(P_WORD)
constexpr int64_t kSetFpc = 4;         // words GM -> L1 -> FB at byte P_FBOFF, SetFixPipeConfig(fb)
constexpr int64_t kFixpipeFirst = 8;   // a Fixpipe API call (same conversion, CFG_ROW_MAJOR) before the DataCopy
constexpr int64_t kToL1 = 16;          // DataCopy L0C -> L1 (NZ), then L1 -> GM with the count form
constexpr int64_t kL1Params = 32;      // ... or L1 -> GM with DataCopyParams, dstGap P_L1GAP between column blocks
constexpr int64_t kFpcFromL0c = 64;    // SetFixPipeConfig(L0C tensor) after the FB one
constexpr int64_t kFbTwoTensor = 128;  // SetFixPipeConfig(reluPre = {}, quantPre = fb) form
constexpr int64_t kCountToFb = 256;    // L1 -> FB with the count form (blockLen then counts 32 B as 128 B units)

template <typename Tin, typename Tacc, typename Tout>
__aicore__ inline void Co12Body(GM_ADDR a, GM_ADDR b, GM_ADDR words, GM_ADDR c, GM_ADDR prm) {
    if ASCEND_IS_AIV {
        return;
    }
    GlobalTensor<int64_t> P;
    P.SetGlobalBuffer((__gm__ int64_t*)prm, 24);
    const uint32_t M = P.GetValue(P_M), N = P.GetValue(P_N), K = P.GetValue(P_K);
    const int64_t flags = P.GetValue(P_FLAGS);
    constexpr uint32_t C0 = 32 / sizeof(Tin), FRAC = 512 / sizeof(Tin);
    const uint32_t M1 = CeilDiv(M, 16), N1 = CeilDiv(N, 16), K1 = CeilDiv(K, C0);

    GlobalTensor<Tin> aG, bG;
    aG.SetGlobalBuffer((__gm__ Tin*)a, (uint64_t)M * K);
    bG.SetGlobalBuffer((__gm__ Tin*)b, (uint64_t)N * K);
    GlobalTensor<uint64_t> wG;
    wG.SetGlobalBuffer((__gm__ uint64_t*)words, 256);
    GlobalTensor<Tout> cG;
    cG.SetGlobalBuffer((__gm__ Tout*)c, (uint64_t)P.GetValue(P_CLEN));

    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::C1> wBuf, outBuf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> c1Buf;
    TBuf<TPosition::C2PIPE2GM> fbBuf;
    pipe.InitBuffer(a1Buf, 64 * 1024);
    pipe.InitBuffer(b1Buf, 64 * 1024);
    pipe.InitBuffer(wBuf, 2048);
    pipe.InitBuffer(outBuf, 64 * 1024);
    pipe.InitBuffer(a2Buf, 32 * 1024);
    pipe.InitBuffer(b2Buf, 32 * 1024);
    pipe.InitBuffer(c1Buf, 64 * 1024);
    pipe.InitBuffer(fbBuf, 2048);
    LocalTensor<Tin> a1 = a1Buf.Get<Tin>(), b1 = b1Buf.Get<Tin>(), a2 = a2Buf.Get<Tin>(), b2 = b2Buf.Get<Tin>();
    LocalTensor<Tacc> c1 = c1Buf.Get<Tacc>();
    LocalTensor<uint64_t> w1 = wBuf.Get<uint64_t>();

    DataCopy(a1, aG, Nd2NzParams(1, M, K, 0, K, Align16(M), 1, 0));
    DataCopy(b1, bG, Nd2NzParams(1, N, K, 0, K, Align16(N), 1, 0));
    DataCopy(w1, wG, 256);
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    SetFlag<HardEvent::MTE2_FIX>(EVENT_ID0);  // the quantisation words are read by PIPE_FIX
    WaitFlag<HardEvent::MTE2_FIX>(EVENT_ID0);
    for (uint32_t m1 = 0; m1 < M1; ++m1) {
        LoadData(a2[m1 * K1 * FRAC], a1[m1 * FRAC], LoadData2DParams(0, K1, M1, 0, 0, false, 0));
    }
    LoadData(b2, b1, LoadData2DParams(0, K1 * N1, 1, 0, 0, false, 0));  // Nz of B [N, K] is Zn
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadParams mp;
    mp.m = M;
    mp.n = N;
    mp.k = K;
    Mmad(c1, a2, b2, mp);
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);

    const QuantMode_t quant = (QuantMode_t)P.GetValue(P_QUANT);
    if (flags & kSetFpc) {
        LocalTensor<uint64_t> fb = fbBuf.Get<uint64_t>()[(uint32_t)(P.GetValue(P_FBOFF) / 8)];
        if (flags & kCountToFb) {
            DataCopy(fb, w1, (uint32_t)Align16(N));
        } else {
            DataCopy(fb, w1, DataCopyParams(1, (uint16_t)CeilDiv(N * 8, 128), 0, 0));
        }
        if (flags & kFbTwoTensor) {
            LocalTensor<uint64_t> none;
            SetFixPipeConfig(none, fb);
        } else {
            SetFixPipeConfig(fb);
        }
        if (flags & kFpcFromL0c) SetFixPipeConfig(c1.template ReinterpretCast<uint64_t>(), true);
    }
    if (flags & kSetQuant) SetFixpipePreQuantFlag((uint64_t)P.GetValue(P_WORD));
    if (flags & kSetNd) {
        SetFixpipeNz2ndFlag((uint16_t)P.GetValue(P_NDNUM), (uint16_t)P.GetValue(P_SRCND), (uint16_t)P.GetValue(P_DSTND));
    }
    if (flags & kFixpipeFirst) {
        FixpipeParamsV220 fp(N, M, Align16(M), N, P.GetValue(P_RELU) != 0);
        fp.quantPre = quant;
        fp.deqScalar = (uint64_t)P.GetValue(P_WORD);
        if (quant == VDEQF16 || quant == VQF322B8_PRE || quant == VREQ8) {
            Fixpipe(cG, c1, w1, fp);
        } else {
            Fixpipe(cG, c1, fp);
        }
    }
    DataCopyCO12DstParams d;
    d.nSize = (uint16_t)P.GetValue(P_NSIZE);
    d.mSize = M;
    d.srcStride = Align16(M);
    d.dstStride = (uint32_t)P.GetValue(P_DSTSTRIDE);
    d.quantPre = quant;
    d.reluPre = (uint8_t)P.GetValue(P_RELU);
    d.nz2ndEn = P.GetValue(P_ND2) != 0;
    d.channelSplit = P.GetValue(P_SPLIT) != 0;
    d.unitFlag = (uint8_t)P.GetValue(P_UNIT);
    d.clipReluPre = (uint8_t)P.GetValue(P_CLIP);
    if (flags & (kToL1 | kL1Params)) {
        LocalTensor<Tout> o1 = outBuf.Get<Tout>();
        DataCopy(o1, c1, d);
        SetFlag<HardEvent::FIX_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::FIX_MTE3>(EVENT_ID0);
        // NZ in L1: column blocks of C0out columns, each M rows x 32 B (the last one 16 B wide for an odd b8 tail).
        if (flags & kL1Params) {
            const uint32_t blocks = CeilDiv(d.nSize * sizeof(Tout), 32);
            DataCopy(cG, o1, DataCopyParams((uint16_t)blocks, (uint16_t)M, (uint16_t)(d.dstStride - M), (uint16_t)P.GetValue(P_L1GAP)));
        } else {
            DataCopy(cG, o1, (uint32_t)P.GetValue(P_CLEN));
        }
    } else {
        DataCopy(cG, c1, d);
    }
}

extern "C" __global__ __aicore__ void co12_h_f(GM_ADDR a, GM_ADDR b, GM_ADDR w, GM_ADDR c, GM_ADDR p) {
    Co12Body<half, float, float>(a, b, w, c, p);
}
extern "C" __global__ __aicore__ void co12_h_h(GM_ADDR a, GM_ADDR b, GM_ADDR w, GM_ADDR c, GM_ADDR p) {
    Co12Body<half, float, half>(a, b, w, c, p);
}
extern "C" __global__ __aicore__ void co12_h_s8(GM_ADDR a, GM_ADDR b, GM_ADDR w, GM_ADDR c, GM_ADDR p) {
    Co12Body<half, float, int8_t>(a, b, w, c, p);
}
extern "C" __global__ __aicore__ void co12_b_h(GM_ADDR a, GM_ADDR b, GM_ADDR w, GM_ADDR c, GM_ADDR p) {
    Co12Body<int8_t, int32_t, half>(a, b, w, c, p);
}
extern "C" __global__ __aicore__ void co12_b_s8(GM_ADDR a, GM_ADDR b, GM_ADDR w, GM_ADDR c, GM_ADDR p) {
    Co12Body<int8_t, int32_t, int8_t>(a, b, w, c, p);
}

// ---- load3d parameters ----
constexpr int Q_H = 0, Q_W = 1, Q_CH = 2, Q_KEXT = 3, Q_MEXT = 4, Q_KST = 5, Q_MST = 6, Q_SW = 7, Q_SH = 8, Q_FW = 9,
              Q_FH = 10, Q_DW = 11, Q_DH = 12, Q_PAD = 13 /* 4 entries */, Q_TRANS = 17, Q_TOB = 18, Q_PADV = 19,
              Q_FLAGS = 20, Q_FMOFF = 21, Q_BOUND = 22, Q_FMLEN = 23, Q_RPT = 24, Q_IDN = 25, Q_CHK = 26;
constexpr int64_t kManualRegs = 1;  // isSetFMatrix = isSetPadding = false: SetFmatrix + SetLoadDataPaddingValue
constexpr int64_t kNoFmatrix = 2;   // ... without SetFmatrix
constexpr int64_t kNoPadding = 4;   // ... without SetLoadDataPaddingValue
constexpr int64_t kBoundary = 8;    // SetLoadDataBoundary(Q_BOUND); feature map split at the boundary
constexpr int64_t kRepeat = 16;     // SetLoadDataRepeat with repeatTime Q_RPT
constexpr int64_t kRightFm = 32;    // SetFmatrix(FMATRIX_RIGHT)
constexpr int64_t kV2Pro = 64;      // Load3DSetFMatrixCal + SetLoadDataPaddingValue + LoadData3DParamsV2Pro

constexpr IsResetLoad3dConfig kManual = {false, false};

template <typename T, typename Tacc>
__aicore__ inline void Load3dBody(GM_ADDR fm, GM_ADDR idn, GM_ADDR c, GM_ADDR prm) {
    if ASCEND_IS_AIV {
        return;
    }
    GlobalTensor<int64_t> P;
    P.SetGlobalBuffer((__gm__ int64_t*)prm, 32);
    const int64_t flags = P.GetValue(Q_FLAGS);
    const bool toB = P.GetValue(Q_TOB) != 0, trans = P.GetValue(Q_TRANS) != 0;
    const uint32_t fmLen = P.GetValue(Q_FMLEN), idLen = P.GetValue(Q_IDN);
    GlobalTensor<T> fG, iG;
    fG.SetGlobalBuffer((__gm__ T*)fm, fmLen);
    iG.SetGlobalBuffer((__gm__ T*)idn, idLen);
    GlobalTensor<Tacc> cG;
    cG.SetGlobalBuffer((__gm__ Tacc*)c, (uint64_t)P.GetValue(Q_CHK));

    // L1: feature map at byte Q_FMOFF of [0, 256 KB); the identity at 256 KB.
    LocalTensor<T> l1(TPosition::A1, 0, 512 * 1024 / sizeof(T));
    LocalTensor<T> fm1 = l1[(uint32_t)(P.GetValue(Q_FMOFF) / sizeof(T))];
    LocalTensor<T> id1 = l1[256 * 1024 / sizeof(T)];
    if ((flags & kBoundary) && P.GetValue(Q_BOUND) > P.GetValue(Q_FMOFF)) {
        // Ring layout: the bytes past the boundary continue at L1 byte 0.
        const uint32_t first = (uint32_t)((P.GetValue(Q_BOUND) - P.GetValue(Q_FMOFF)) / sizeof(T));
        DataCopy(fm1, fG, first);
        DataCopy(l1, fG[first], fmLen - first);
    } else {
        DataCopy(fm1, fG, fmLen);
    }
    DataCopy(id1, iG, idLen);
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);

    LocalTensor<T> a2(TPosition::A2, 0, 64 * 1024 / sizeof(T));
    LocalTensor<T> b2(TPosition::B2, 0, 64 * 1024 / sizeof(T));
    LoadData3DParamsV2<T> p;
    for (int i = 0; i < 4; ++i) p.padList[i] = (uint8_t)P.GetValue(Q_PAD + i);
    p.l1H = P.GetValue(Q_H);
    p.l1W = P.GetValue(Q_W);
    p.channelSize = P.GetValue(Q_CH);
    p.kExtension = P.GetValue(Q_KEXT);
    p.mExtension = P.GetValue(Q_MEXT);
    p.kStartPt = P.GetValue(Q_KST);
    p.mStartPt = P.GetValue(Q_MST);
    p.strideW = P.GetValue(Q_SW);
    p.strideH = P.GetValue(Q_SH);
    p.filterW = P.GetValue(Q_FW);
    p.filterH = P.GetValue(Q_FH);
    p.dilationFilterW = P.GetValue(Q_DW);
    p.dilationFilterH = P.GetValue(Q_DH);
    p.enTranspose = trans;
    p.padValue = (T)(float)P.GetValue(Q_PADV);
    if (flags & kBoundary) SetLoadDataBoundary((uint32_t)P.GetValue(Q_BOUND));
    if (flags & kRepeat) SetLoadDataRepeat(LoadDataRepeatParam(0, (uint8_t)P.GetValue(Q_RPT), 0));
    if (flags & kRightFm) SetFmatrix(p.l1H, p.l1W, p.padList, FmatrixMode::FMATRIX_RIGHT);
    LocalTensor<T> dst = toB ? b2 : a2;
    if (flags & kV2Pro) {
        Load3DSetFMatrixCal(p.l1H, p.l1W, p.padList);
        SetLoadDataPaddingValue(p.padValue);
        const uint64_t ext = ((uint64_t)p.mStartPt << 48) | ((uint64_t)p.kStartPt << 32) | ((uint64_t)p.mExtension << 16) |
                             p.kExtension;
        const uint64_t filt = ((uint64_t)p.dilationFilterH << 40) | ((uint64_t)p.dilationFilterW << 32) |
                              ((uint64_t)p.filterH << 24) | ((uint64_t)p.filterW << 16) | ((uint64_t)p.strideH << 8) |
                              p.strideW;
        LoadData(dst, fm1, LoadData3DParamsV2Pro(p.channelSize, trans, false, false, false, false, ext, filt));
    } else if (flags & (kManualRegs | kNoFmatrix | kNoPadding)) {
        if (!(flags & kNoFmatrix)) SetFmatrix(p.l1H, p.l1W, p.padList, FmatrixMode::FMATRIX_LEFT);
        if (!(flags & kNoPadding)) SetLoadDataPaddingValue(p.padValue);
        LoadData3DParamsV2<T> q = p;  // the fields the registers replace must not matter
        q.l1H = 1;
        q.l1W = 1;
        q.padValue = (T)0.0f;
        for (int i = 0; i < 4; ++i) q.padList[i] = 0;
        LoadData<T, kManual>(dst, fm1, q);
    } else {
        LoadData(dst, fm1, p);
    }
    // The identity goes into the other L0 buffer as whole fractals.
    LoadData(toB ? a2 : b2, id1, LoadData2DParams(0, (uint8_t)(idLen * sizeof(T) / 512), 1, 0, 0, false, 0));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    // Stored matrix: L0A A = window (mExt x kExt) or window^T; L0B B = window (K = mExt, N = kExt).
    const uint32_t rows = toB ? p.mExtension : (trans ? p.kExtension : p.mExtension);
    const uint32_t cols = toB ? p.kExtension : (trans ? p.mExtension : p.kExtension);
    LocalTensor<Tacc> c1(TPosition::CO1, 0, 64 * 1024 / sizeof(Tacc));
    MmadParams mp;
    mp.m = rows;
    mp.k = toB ? rows : cols;  // L0A: C = A x I (cols x cols); L0B: C = I (rows x rows) x B
    mp.n = cols;
    Mmad(c1, a2, b2, mp);
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    FixpipeParamsV220 fp(mp.n, mp.m, Align16(mp.m), mp.n, false);
    Fixpipe(cG, c1, fp);
}

extern "C" __global__ __aicore__ void load3d_f16(GM_ADDR fm, GM_ADDR idn, GM_ADDR c, GM_ADDR p) {
    Load3dBody<half, float>(fm, idn, c, p);
}
extern "C" __global__ __aicore__ void load3d_f32(GM_ADDR fm, GM_ADDR idn, GM_ADDR c, GM_ADDR p) {
    Load3dBody<float, float>(fm, idn, c, p);
}
extern "C" __global__ __aicore__ void load3d_s8(GM_ADDR fm, GM_ADDR idn, GM_ADDR c, GM_ADDR p) {
    Load3dBody<int8_t, int32_t>(fm, idn, c, p);
}

// SetFixPipeClipRelu / SetFixPipeAddr exist only on Atlas 200I/500 A2.
extern "C" __global__ __aicore__ void fixpipe_unsupported(GM_ADDR prm) {
    if ASCEND_IS_AIV {
        return;
    }
    GlobalTensor<int64_t> P;
    P.SetGlobalBuffer((__gm__ int64_t*)prm, 1);
    if (P.GetValue(0) == 0) {
        SetFixPipeClipRelu(0x3c00);
    } else {
        LocalTensor<half> e(TPosition::C1, 0, 256);
        SetFixPipeAddr(e, 1);
    }
}
