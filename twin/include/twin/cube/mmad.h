// Mmad: C (L0C, Nz fp32/int32) = [C or bias or 0] + A (L0A, Zz) x B (L0B, Zn), PIPE_M.
// Only the valid m x k x n elements take part; the padding of partially used fractals is never read. Type pairs:
// half x half -> float, bfloat16_t x bfloat16_t -> float, float x float -> float, int8_t x int8_t -> int32_t,
// int4b_t x int4b_t -> int32_t (fractals of 16 x 64; no bias form).
// m == 1 runs in GEMV mode: A is read as one contiguous ND row of k elements (not Zz), as dav-2201 does.
// float x float rounds both inputs to HF32 first while SetHF32Mode(ENABLE) holds (cube/mmad_config.h).
//
// Speed: the used L0A/L0B regions are converted to packed float panels once per call, then a register-blocked
// micro-kernel written with GCC vector extensions accumulates MR x NR tiles of C over k.
#pragma once
#include <vector>

#include "twin/cube/fractal.h"
#include "twin/cube/mmad_config.h"
#include "twin/cube/unit_flag.h"

namespace AscendC {

struct MmadParams {
    MmadParams() {}
    MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const bool isBiasIn, const int32_t fmOffsetIn,
               const bool enSsparseIn, const bool enWinogradAIn, const bool enWinogradBIn)
        : m(mIn), n(nIn), k(kIn), isBias(isBiasIn), fmOffset(fmOffsetIn), enSsparse(enSsparseIn),
          enWinogradA(enWinogradAIn), enWinogradB(enWinogradBIn) {}
    MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const uint8_t unitFlagIn,
               const bool cmatrixSourceIn, const bool cmatrixInitValIn)
        : m(mIn), n(nIn), k(kIn), unitFlag(unitFlagIn), cmatrixSource(cmatrixSourceIn), cmatrixInitVal(cmatrixInitValIn) {}
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    bool isBias = false;  // deprecated: true = accumulate onto C
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
    uint8_t unitFlag = 0;
    bool kDirectionAlign = false;  // float only: L0A rows hold ceil(k/16)*16 k values instead of ceil(k/8)*8
    bool cmatrixSource = false;    // with cmatrixInitVal == false: true = initialise C from BiasTable, false = from L0C
    bool cmatrixInitVal = true;    // true: C = A x B (L0C ignored)
};

}  // namespace AscendC

namespace twin {

#if defined(TWIN_MMAD_MR) && defined(TWIN_MMAD_NR)
constexpr int kMmadMR = TWIN_MMAD_MR, kMmadNR = TWIN_MMAD_NR;
#elif defined(__AVX__)
constexpr int kMmadMR = 6, kMmadNR = 16;  // 12 ymm accumulators (best of 4/6/8 x 16 and 4 x 24 measured)
#else
constexpr int kMmadMR = 8, kMmadNR = 8;   // 16 xmm accumulators (best of 4/6/8 x 8 measured with plain -O2)
#endif
typedef float MmadVec __attribute__((vector_size(32)));  // 8 floats

// C[mp x np] (row-major, np % NR == 0) += Ap (panels of MR rows: [ib][kk][MR]) x Bp (panels of NR cols: [jb][kk][NR]).
inline void MmadMicroKernel(float* __restrict c, const float* __restrict ap, const float* __restrict bp, int mp, int np, int k) {
    constexpr int MR = kMmadMR, NR = kMmadNR, NV = NR / 8;
    for (int jb = 0; jb < np / NR; ++jb) {
        const float* bpanel = bp + (size_t)jb * k * NR;
        for (int ib = 0; ib < mp / MR; ++ib) {
            const float* apanel = ap + (size_t)ib * k * MR;
            MmadVec acc[MR][NV];
            for (int r = 0; r < MR; ++r)
                for (int v = 0; v < NV; ++v) std::memcpy(&acc[r][v], c + (size_t)(ib * MR + r) * np + jb * NR + v * 8, 32);
            for (int kk = 0; kk < k; ++kk) {
                MmadVec b[NV];
                for (int v = 0; v < NV; ++v) std::memcpy(&b[v], bpanel + (size_t)kk * NR + v * 8, 32);
                const float* a = apanel + (size_t)kk * MR;
                for (int r = 0; r < MR; ++r) {
                    const float ar = a[r];
                    const MmadVec av = {ar, ar, ar, ar, ar, ar, ar, ar};
                    for (int v = 0; v < NV; ++v) acc[r][v] += av * b[v];
                }
            }
            for (int r = 0; r < MR; ++r)
                for (int v = 0; v < NV; ++v) std::memcpy(c + (size_t)(ib * MR + r) * np + jb * NR + v * 8, &acc[r][v], 32);
        }
    }
}

struct MmadScratch {
    std::vector<float> a, b, c;
    std::vector<int32_t> ia, ib, ic;
};
inline MmadScratch& Scratch() {
    static thread_local MmadScratch s;
    return s;
}

// Geometry of one Mmad call.
struct MmadGeom {
    uint32_t m, n, k, M1, N1, K0, K1a, K1b;
    bool gemv;
};

// A NaN inside the m x k (L0A) or k x n (L0B) an Mmad computes. Mmad.md asks to avoid NaN inputs (they may raise an
// execution error), so data NaN is an error. The twin's never-written poison there is rows or columns the kernel left
// unloaded inside its m/k/n (catlass's FA passes m rounded up to whole fractals): on the NPU they hold an earlier
// kernel's leftovers, harmful only when those are NaN and only if the result is stored. So poison is computed with,
// a store of what it reaches is the poison rule's report (memory/poison.h), and the Mmad warns once per call.
template <typename S>
inline void OnNanInput(const char* api, const char* operand, const uint8_t* p, uint32_t row, uint32_t col,
                       bool& warned, const char* hint = "") {
    if (!IsPoison<S>(p)) {
        Fail(api, "%s holds NaN at (%u, %u); the cube may fault on NaN inputs%s", operand, row, col, hint);
    }
    if (warned) return;
    warned = true;
    Warn(api, "%s holds the twin's never-written poison at (%u, %u), inside the m/k/n it computes (missing "
              "LoadData/DataCopy, wrong offset, or rows/columns left unloaded); on the NPU these bytes are an earlier "
              "kernel's leftovers, and a NaN among them may fault the cube (Mmad page)%s",
         operand, row, col, hint);
}

// Packs A (L0A Zz, or ND in GEMV mode) into MR-row panels of floats, checking for NaN.
template <typename U>
inline void PackA(const char* api, const uint8_t* fm, const MmadGeom& g, float* ap, int mp) {
    constexpr int MR = kMmadMR;
    std::memset(ap, 0, sizeof(float) * (size_t)mp * g.k);
    bool warned = false;
    for (uint32_t i = 0; i < g.m; ++i) {
        const uint32_t m1 = i / 16, m0 = i % 16;
        float* dst = ap + (size_t)(i / MR) * g.k * MR + (i % MR);
        for (uint32_t kk = 0; kk < g.k; ++kk) {
            const uint8_t* p;
            if (g.gemv) {
                p = fm + (size_t)kk * sizeof(U);
            } else {
                const uint32_t k1 = kk / g.K0, k0 = kk % g.K0;
                p = fm + ((((size_t)m1 * g.K1a + k1) * 16 + m0) * g.K0 + k0) * sizeof(U);
            }
            float v = CubeToFloat<U>(p);
            if (v != v) {
                OnNanInput<U>(api, "fm (L0A)", p, i, kk, warned,
                                g.gemv ? ". Note: m = 1 runs in GEMV mode, which reads fm as one contiguous ND row of k "
                                         "elements, not as Zz fractals" : "");
            }
            dst[(size_t)kk * MR] = v;
        }
    }
}

// Packs B (L0B Zn) into NR-column panels of floats, checking for NaN.
template <typename S>
inline void PackB(const char* api, const uint8_t* filter, const MmadGeom& g, float* bp, int np) {
    constexpr int NR = kMmadNR;
    std::memset(bp, 0, sizeof(float) * (size_t)np * g.k);
    bool warned = false;
    for (uint32_t kk = 0; kk < g.k; ++kk) {
        const uint32_t k1 = kk / g.K0, k0 = kk % g.K0;
        for (uint32_t j = 0; j < g.n; ++j) {
            const uint32_t n1 = j / 16, n0 = j % 16;
            const uint8_t* p = filter + ((((size_t)k1 * g.N1 + n1) * 16 + n0) * g.K0 + k0) * sizeof(S);
            float v = CubeToFloat<S>(p);
            if (v != v) OnNanInput<S>(api, "filter (L0B)", p, kk, j, warned);
            bp[((size_t)(j / NR) * g.k + kk) * NR + (j % NR)] = v;
        }
    }
}

inline size_t L0cIndex(const MmadGeom& g, uint32_t i, uint32_t j) {
    return (((size_t)(j / 16) * g.M1 + i / 16) * 16 + i % 16) * 16 + j % 16;
}

// Marks the padding part of the touched L0C fractals as garbage (a quiet NaN for float, a fixed pattern for int32).
inline void MarkL0cPadding(uint8_t* co, const MmadGeom& g) {
    for (uint32_t i = 0; i < g.M1 * 16; ++i) {
        for (uint32_t j = 0; j < g.N1 * 16; ++j) {
            if (i < g.m && j < g.n) continue;
            std::memcpy(co + L0cIndex(g, i, j) * 4, &kPadGarbageWord, 4);
        }
    }
}

// initMode: 0 = zero, 1 = from L0C (accumulate), 2 = from bias (BT, 1 x n).
template <typename U, typename S>
inline void MmadFloat(const char* api, uint8_t* co, const uint8_t* fm, const uint8_t* filter, const uint8_t* bias,
                      const MmadGeom& g, int initMode) {
    constexpr int MR = kMmadMR, NR = kMmadNR;
    const int mp = (int)((g.m + MR - 1) / MR * MR), np = (int)((g.n + NR - 1) / NR * NR);
    MmadScratch& s = Scratch();
    s.a.resize((size_t)mp * g.k);
    s.b.resize((size_t)np * g.k);
    s.c.resize((size_t)mp * np);
    PackA<U>(api, fm, g, s.a.data(), mp);
    PackB<S>(api, filter, g, s.b.data(), np);
    const MmadCtrl& ctrl = MmadCtrlRegs();
    if (std::is_same<U, float>::value && ctrl.hf32) {  // SetHF32Mode: both inputs rounded to HF32 (mmad_config.h)
        for (float& v : s.a) v = RoundToHf32(v, ctrl.hf32TowardZero);
        for (float& v : s.b) v = RoundToHf32(v, ctrl.hf32TowardZero);
    }
    float* c = s.c.data();
    std::memset(c, 0, sizeof(float) * (size_t)mp * np);
    if (initMode == 1) {
        for (uint32_t i = 0; i < g.m; ++i) {
            for (uint32_t j = 0; j < g.n; ++j) {
                const uint8_t* p = co + L0cIndex(g, i, j) * 4;
                if (IsPoisonWord(p)) {
                    Fail(api, "accumulates (cmatrixInitVal = false, cmatrixSource = false) onto L0C element (%u, %u) that was "
                              "never written: the first Mmad of a K loop needs cmatrixInitVal = true", i, j);
                }
                std::memcpy(&c[(size_t)i * np + j], p, 4);
            }
        }
    } else if (initMode == 2) {
        for (uint32_t j = 0; j < g.n; ++j) {
            float b;
            std::memcpy(&b, bias + (size_t)j * 4, 4);
            for (uint32_t i = 0; i < g.m; ++i) c[(size_t)i * np + j] = b;
        }
    }
    MmadMicroKernel(c, s.a.data(), s.b.data(), mp, np, (int)g.k);
    for (uint32_t i = 0; i < g.m; ++i)
        for (uint32_t j = 0; j < g.n; ++j) std::memcpy(co + L0cIndex(g, i, j) * 4, &c[(size_t)i * np + j], 4);
    MarkL0cPadding(co, g);
}

// Element `idx` of an int8 (b4 = false) or packed int4 (b4: element 2i in the low nibble of byte i) operand.
template <bool b4>
inline int32_t IntElem(const uint8_t* p, size_t idx) {
    if (!b4) return (int8_t)p[idx];
    const uint8_t nib = (p[idx / 2] >> (4 * (idx % 2))) & 0xF;
    return nib >= 8 ? (int32_t)nib - 16 : (int32_t)nib;
}

template <bool b4>
inline void MmadInt(uint8_t* co, const uint8_t* fm, const uint8_t* filter, const uint8_t* bias, const MmadGeom& g, int initMode) {
    MmadScratch& s = Scratch();
    s.ia.assign((size_t)g.m * g.k, 0);
    s.ib.assign((size_t)g.k * g.n, 0);
    s.ic.assign((size_t)g.m * g.n, 0);
    for (uint32_t i = 0; i < g.m; ++i)
        for (uint32_t kk = 0; kk < g.k; ++kk) {
            size_t off = g.gemv ? kk : (((size_t)(i / 16) * g.K1a + kk / g.K0) * 16 + i % 16) * g.K0 + kk % g.K0;
            s.ia[(size_t)i * g.k + kk] = IntElem<b4>(fm, off);
        }
    for (uint32_t kk = 0; kk < g.k; ++kk)
        for (uint32_t j = 0; j < g.n; ++j)
            s.ib[(size_t)kk * g.n + j] = IntElem<b4>(filter, (((size_t)(kk / g.K0) * g.N1 + j / 16) * 16 + j % 16) * g.K0 + kk % g.K0);
    for (uint32_t i = 0; i < g.m; ++i) {
        int32_t* crow = &s.ic[(size_t)i * g.n];
        if (initMode == 1) {
            for (uint32_t j = 0; j < g.n; ++j) std::memcpy(&crow[j], co + L0cIndex(g, i, j) * 4, 4);
        } else if (initMode == 2) {
            for (uint32_t j = 0; j < g.n; ++j) std::memcpy(&crow[j], bias + (size_t)j * 4, 4);
        }
        for (uint32_t kk = 0; kk < g.k; ++kk) {
            const int32_t a = s.ia[(size_t)i * g.k + kk];
            const int32_t* brow = &s.ib[(size_t)kk * g.n];
            for (uint32_t j = 0; j < g.n; ++j) crow[j] += a * brow[j];
        }
        for (uint32_t j = 0; j < g.n; ++j) std::memcpy(co + L0cIndex(g, i, j) * 4, &crow[j], 4);
    }
    MarkL0cPadding(co, g);
}

template <typename T, typename U, typename S>
inline void MmadImpl(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& fm,
                     const AscendC::LocalTensor<S>& filter, const uint8_t* bias, uint64_t biasLen, bool biasGiven,
                     const AscendC::MmadParams& p) {
    RequireAic(api);
    constexpr bool kF16 = std::is_same<T, float>::value && std::is_same<U, half>::value && std::is_same<S, half>::value;
    constexpr bool kBf16 = std::is_same<T, float>::value && std::is_same<U, bfloat16_t>::value && std::is_same<S, bfloat16_t>::value;
    constexpr bool kF32 = std::is_same<T, float>::value && std::is_same<U, float>::value && std::is_same<S, float>::value;
    constexpr bool kS8 = std::is_same<T, int32_t>::value && std::is_same<U, int8_t>::value && std::is_same<S, int8_t>::value;
    constexpr bool kS4 = std::is_same<T, int32_t>::value && ElemBits<U>::value == 4 && ElemBits<S>::value == 4;
    static_assert(kF16 || kBf16 || kF32 || kS8 || kS4,
                  "Mmad on dav-2201 supports (dst, fm, filter) = (float, half, half), (float, bfloat16_t, bfloat16_t), "
                  "(float, float, float), (int32_t, int8_t, int8_t) and (int32_t, int4b_t, int4b_t) (Mmad.md table 7)");
    if (p.m > 4095 || p.n > 4095 || p.k > 4095) {
        Fail(api, "m = %u, n = %u, k = %u: each must lie in [0, 4095]", p.m, p.n, p.k);
    }
    CheckUnitFlagValue(api, p.unitFlag);
    CubeOperand(api, "dst", dst, Mem::L0C, 1024, "L0C (CO1)");
    CubeOperand(api, "fm", fm, Mem::L0A, 512, "L0A (A2)");
    CubeOperand(api, "filter", filter, Mem::L0B, 512, "L0B (B2)");
    if (p.kDirectionAlign && !kF32) Fail(api, "kDirectionAlign applies to float inputs only (got %s)", TypeName<U>());
    if (p.m == 0 || p.n == 0 || p.k == 0) return;  // documented NOP

    MmadGeom g;
    g.m = p.m;
    g.n = p.n;
    g.k = p.k;
    g.M1 = CeilDivU(p.m, 16);
    g.N1 = CeilDivU(p.n, 16);
    g.K0 = kS4 ? 64 : C0Of<U>();  // a 512 B fractal holds 16 x 64 int4b_t
    g.K1b = CeilDivU(p.k, g.K0);
    g.K1a = (kF32 && p.kDirectionAlign) ? CeilDivU(p.k, 16) * 2 : g.K1b;
    g.gemv = p.m == 1;
    const uint64_t needA = g.gemv ? ((uint64_t)p.k * ElemBits<U>::value + 7) / 8 : (uint64_t)g.M1 * g.K1a * kFractalBytes;
    const uint64_t needB = (uint64_t)g.K1b * g.N1 * kFractalBytes;
    const uint64_t needC = (uint64_t)g.N1 * g.M1 * 1024;
    char what[192];
    if (needA > fm.GetLength()) {
        std::snprintf(what, sizeof what, "fm: m = %u, k = %u%s read %llu bytes of L0A (%u x %u fractals), past the tensor's "
                      "%u bytes", p.m, p.k, g.gemv ? " (GEMV mode: one ND row)" : "", (unsigned long long)needA, g.M1,
                      g.K1a, fm.GetLength());
        JudgeOverrun(api, Mem::L0A, fm.Addr(api), fm.GetLength(), needA, what);
    }
    if (needB > filter.GetLength()) {
        std::snprintf(what, sizeof what, "filter: k = %u, n = %u read %llu bytes of L0B (%u x %u fractals), past the "
                      "tensor's %u bytes", p.k, p.n, (unsigned long long)needB, g.K1b, g.N1, filter.GetLength());
        JudgeOverrun(api, Mem::L0B, filter.Addr(api), filter.GetLength(), needB, what);
    }
    if (needC > dst.GetLength()) {
        std::snprintf(what, sizeof what, "dst: m = %u, n = %u write %llu bytes of L0C (%u x %u fractals of 1 KB), past the "
                      "tensor's %u bytes", p.m, p.n, (unsigned long long)needC, g.N1, g.M1, dst.GetLength());
        JudgeOverrun(api, Mem::L0C, dst.Addr(api), dst.GetLength(), needC, what);
    }
    NoteAccess(api, Mem::L0A, fm.Addr(api), needA, false);
    NoteAccess(api, Mem::L0B, filter.Addr(api), needB, false);
    // C's starting value: cmatrixInitVal (and not the deprecated isBias) -> 0; else bias table or L0C.
    int initMode = 0;
    const bool initZero = p.cmatrixInitVal && !p.isBias;
    if (!initZero) initMode = (p.cmatrixSource || biasGiven) ? 2 : 1;
    // Accumulating reads L0C: after an Mmad into the same tile the Mmad page asks for PipeBarrier<PIPE_M> unless the
    // tile is large enough for the hardware to resolve the dependency itself.
    if (initMode == 1) NoteAccess(api, Mem::L0C, dst.Addr(api), needC, false, (p.m / 16) * (p.n / 16) < 10);
    const uint64_t cLo = dst.Addr(api), cHi = cLo + needC;
    if (p.unitFlag == 0) {
        NoteAccess(api, Mem::L0C, cLo, needC, true);
    } else {
        MmadUnitsWrite(api, cLo, cHi, p.unitFlag);
    }
    const uint32_t clk = NextClock(PIPE_M);
    if (initMode == 2) {
        if (biasLen < (uint64_t)p.n * 4) {
            Fail(api, "bias: n = %u needs %llu bytes of BiasTable, the tensor has %llu", p.n, (unsigned long long)p.n * 4,
                 (unsigned long long)biasLen);
        }
    }
    if (Computing()) {
        if constexpr (kS8 || kS4) {
            MmadInt<kS4>(dst.Ptr(), fm.Ptr(), filter.Ptr(), bias, g, initMode);
        } else {
            MmadFloat<U, S>(api, dst.Ptr(), fm.Ptr(), filter.Ptr(), bias, g, initMode);
        }
    }
    Trace(api, PIPE_M, (uint64_t)p.m * p.n * p.k, 0, g.M1 * g.N1 * g.K1b, dst.Ptr(), fm.Ptr(), TraceKind::Instr, p.unitFlag);
    MmadUnitsDone(api, cLo, cHi, p.unitFlag, clk);
}

}  // namespace twin

namespace AscendC {

template <typename T, typename U, typename S>
inline void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter, const MmadParams& mmadParams) {
    const char* api = "Mmad";
    twin::RequireAic(api);
    const uint8_t* bias = nullptr;
    uint64_t biasLen = 0;
    const bool initZero = mmadParams.cmatrixInitVal && !mmadParams.isBias;
    if (!initZero && mmadParams.cmatrixSource) {  // C starts from the bias table at address 0
        twin::CoreState& c = twin::Cur();
        bias = c.Base(twin::Mem::BT);
        biasLen = c.mem[(int)twin::Mem::BT].size();
    }
    twin::MmadImpl(api, dst, fm, filter, bias, biasLen, false, mmadParams);
}

// Bias in BiasTable (C2): C starts from the bias row (when cmatrixInitVal is false); bias in L0C (CO1): accumulate.
template <typename T, typename U, typename S, typename V>
inline void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter, const LocalTensor<V>& bias,
                 const MmadParams& mmadParams) {
    const char* api = "Mmad(bias)";
    twin::RequireAic(api);
    if (!bias.Valid()) twin::Fail(api, "bias tensor is not allocated");
    static_assert(sizeof(V) == 4, "the bias of Mmad is float or int32_t");
    static_assert(twin::ElemBits<U>::value != 4, "Mmad with bias has no int4b_t form on dav-2201 (Mmad.md table 8)");
    MmadParams p = mmadParams;
    if (bias.Phys() == twin::Mem::BT) {
        twin::CubeOperand(api, "bias", bias, twin::Mem::BT, 64, "BiasTable (C2)");
        p.cmatrixSource = true;
        twin::MmadImpl(api, dst, fm, filter, bias.Ptr(), bias.GetLength(), !(p.cmatrixInitVal && !p.isBias), p);
    } else if (bias.Phys() == twin::Mem::L0C) {
        p.cmatrixSource = false;
        twin::MmadImpl(api, dst, fm, filter, nullptr, 0, false, p);
    } else {
        twin::Fail(api, "bias must be in BiasTable (C2) or L0C (CO1), got position %s", twin::PositionName(bias.Pos()));
    }
}

}  // namespace AscendC
