// DataCopy L0C (CO1) -> GM / L1 with DataCopyCO12DstParams: the raw Fixpipe instruction. Unlike the Fixpipe API it
// takes its NZ2ND geometry (ndNum, srcNdStride, dstNdStride), scalar quantisation word and per-column quantisation
// address from the registers set by SetFixpipeNz2ndFlag, SetFixpipePreQuantFlag and SetFixPipeConfig
// (cube/fixpipe_config.h); the conversion itself is Fixpipe's (cube/fixpipe.h). Units as FixpipeParamsV220.
#pragma once
#include "twin/cube/fixpipe.h"
#include "twin/cube/fixpipe_config.h"

namespace AscendC {

struct DataCopyCO12DstParams {
    DataCopyCO12DstParams() {}
    DataCopyCO12DstParams(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint32_t dstStrideIn, const uint16_t srcStrideIn,
                          const QuantMode_t quantPreIn, const uint8_t reluPreIn, const bool channelSplitIn,
                          const bool nz2ndEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), dstStride(dstStrideIn), srcStride(srcStrideIn), quantPre(quantPreIn),
          reluPre(reluPreIn), channelSplit(channelSplitIn), nz2ndEn(nz2ndEnIn) {}
    uint8_t sid = 0;
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint32_t dstStride = 0;  // DEFAULT_DATA_COPY_STRIDE
    uint16_t srcStride = 0;
    uint8_t unitFlag = 0;
    uint8_t clipReluPre = 0;
    uint8_t eltWiseOp = 0;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint8_t reluPre = 0;
    bool channelSplit = false;
    bool nz2ndEn = false;
};

}  // namespace AscendC

namespace twin {

// Translates the instruction fields plus the registers into Fixpipe's parameters and source view.
template <typename U>
inline AscendC::FixpipeParamsV220 Co12Params(const char* api, const AscendC::LocalTensor<U>& src,
                                             const AscendC::DataCopyCO12DstParams& d, FixpipeView& v) {
    if (d.clipReluPre != 0 || d.eltWiseOp != 0) {
        Fail(api, "clipReluPre %u / eltWiseOp %u: ClipReLU and element-wise operations exist only on Atlas 200I/500 A2, "
                  "not on dav-2201; leave both 0", d.clipReluPre, d.eltWiseOp);
    }
    if (d.reluPre > 1) Fail(api, "reluPre %u is not 0 (off) or 1 (normal ReLU)", d.reluPre);
    const CubeSpr& r = CubeRegs();
    AscendC::FixpipeParamsV220 p(d.nSize, d.mSize, d.srcStride, d.dstStride, d.reluPre == 1);
    p.quantPre = d.quantPre;
    p.unitFlag = d.unitFlag;
    p.isChannelSplit = d.channelSplit;
    if (d.nz2ndEn) {
        if (!r.ndParaSet) Fail(api, "nz2ndEn needs the ND_PARA register: call SetFixpipeNz2ndFlag first in this kernel");
        p.ndNum = r.ndNum;
        p.srcNdStride = r.srcNdStride;
        p.dstNdStride = r.dstNdStride;
    }
    if (d.quantPre == DEQF16 || d.quantPre == QF322B8_PRE || d.quantPre == REQ8) {
        if (!r.quantPreSet) {
            Fail(api, "quantPre %s reads the QUANT_PRE register: call SetFixpipePreQuantFlag first in this kernel",
                 QuantName(d.quantPre));
        }
        p.deqScalar = r.quantPre;
    }
    v = FixpipeSource(api, src);
    if (IsVectorQuant(d.quantPre) && d.nSize != 0 && d.mSize != 0) {
        if (r.fpcQuantAddr < 0) {
            Fail(api, "quantPre %s reads per-column words at the FPC address, which is not valid: %s", QuantName(d.quantPre),
                 r.fpcInvalid);
        }
        const uint64_t bytes = (uint64_t)d.nSize * 8, fb = AccessibleBytes(Cur(), Mem::FB);
        if ((uint64_t)r.fpcQuantAddr + bytes > fb) {
            Fail(api, "%u quantisation words at Fixpipe Buffer byte %lld run past its %llu bytes", d.nSize,
                 (long long)r.fpcQuantAddr, (unsigned long long)fb);
        }
        const uint64_t* w = reinterpret_cast<const uint64_t*>(Cur().Base(Mem::FB) + r.fpcQuantAddr);
        for (uint32_t j = 0; j < d.nSize; ++j) {
            if (w[j] == ~0ull) {
                Fail(api, "quantisation word %u at Fixpipe Buffer byte %lld was never written (copy it L1 -> C2PIPE2GM)", j,
                     (long long)(r.fpcQuantAddr + 8 * j));
            }
        }
        NoteAccess(api, Mem::FB, (uint64_t)r.fpcQuantAddr, bytes, false);
        v.cols = w;
    }
    return p;
}

}  // namespace twin

namespace AscendC {

// L0C -> GM: NZ2NZ, or NZ2ND with nz2ndEn.
template <typename T, typename U>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyCO12DstParams& intriParams) {
    const char* api = "DataCopy(L0C->GM)";
    twin::RequireAic(api);
    twin::FixpipeView v{};
    const FixpipeParamsV220 p = twin::Co12Params(api, src, intriParams, v);
    if (p.nSize == 0 || p.mSize == 0) return;  // documented NOP
    dst.CheckElems(api, 0, 0);
    uint8_t* d = (uint8_t*)dst.GetPhyAddr();
    if (intriParams.nz2ndEn) {
        twin::FixpipeRun<T, U, CO2Layout::ROW_MAJOR>(api, d, true, 0, &dst, v, p);
    } else {
        twin::FixpipeRun<T, U, CO2Layout::NZ>(api, d, true, 0, &dst, v, p);
    }
}

// L0C -> L1: NZ only on dav-2201.
template <typename T, typename U>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyCO12DstParams& intriParams) {
    const char* api = "DataCopy(L0C->L1)";
    twin::RequireAic(api);
    if (intriParams.nz2ndEn) twin::Fail(api, "nz2ndEn: L0C -> L1 writes NZ only on dav-2201");
    if (intriParams.channelSplit) twin::Fail(api, "channelSplit needs float output to GM; L0C -> L1 cannot split");
    twin::FixpipeView v{};
    const FixpipeParamsV220 p = twin::Co12Params(api, src, intriParams, v);
    if (p.nSize == 0 || p.mSize == 0) return;  // documented NOP
    twin::CubeOperand(api, "dst", dst, twin::Mem::L1, 32, "L1 (A1/B1/C1)");
    twin::FixpipeRun<T, U, CO2Layout::NZ>(api, dst.Ptr(), false, dst.GetLength(), (const GlobalTensor<T>*)nullptr, v, p);
}

}  // namespace AscendC
