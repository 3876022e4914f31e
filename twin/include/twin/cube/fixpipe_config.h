// Fixpipe register setters (scalar instructions on the AIC): SetFixpipeNz2ndFlag -> ND_PARA, SetFixpipePreQuantFlag
// -> QUANT_PRE, SetFixPipeConfig -> FPC (Fixpipe Buffer address of the per-column quantisation words). They feed
// DataCopy with DataCopyCO12DstParams (cube/data_copy_co12.h). SetFixPipeClipRelu and SetFixPipeAddr are declared by
// the headers but exist only on Atlas 200I/500 A2; dav-2201 reports them as unsupported, and so does the twin.
#pragma once
#include "twin/cube/cube_spr.h"
#include "twin/cube/fractal.h"
#include "twin/cube/unit_flag.h"

namespace AscendC {

inline void SetFixpipeNz2ndFlag(uint16_t ndNum, uint16_t srcNdStride, uint16_t dstNdStride) {
    const char* api = "SetFixpipeNz2ndFlag";
    twin::RequireAic(api);
    if (ndNum == 0) twin::Fail(api, "ndNum %u is outside [1, 65535]", ndNum);
    if (srcNdStride > 512) twin::Fail(api, "srcNdStride %u is outside [0, 512] (units of 1 KB)", srcNdStride);
    if (ndNum > 1 && (srcNdStride == 0 || dstNdStride == 0)) {
        twin::Fail(api, "with ndNum %u, srcNdStride %u must lie in [1, 512] and dstNdStride %u in [1, 65535]", ndNum,
                   srcNdStride, dstNdStride);
    }
    twin::CubeSpr& r = twin::CubeRegs();
    r.ndNum = ndNum;
    r.srcNdStride = srcNdStride;
    r.dstNdStride = dstNdStride;
    r.ndParaSet = true;
    twin::Trace(api, PIPE_S, 0, 0, 1, nullptr, nullptr);
}

inline void SetFixpipePreQuantFlag(uint64_t config) {
    const char* api = "SetFixpipePreQuantFlag";
    twin::RequireAic(api);
    twin::CubeSpr& r = twin::CubeRegs();
    r.quantPre = config;
    r.quantPreSet = true;
    twin::Trace(api, PIPE_S, 0, 0, 1, nullptr, nullptr);
}

}  // namespace AscendC

namespace twin {

// FPC[15:8] holds the quantisation address in 128 B units, so the tensor must sit on a 128 B boundary of the FB.
// An L0C tensor (any element type, as the unit-flag reset of the official mmad_unitflag example passes its float
// CO1 tensor) only carries isUnitFlag.
template <typename T>
inline void SetFpcQuant(const char* api, const AscendC::LocalTensor<T>& quantPre, bool isUnitFlag) {
    CubeSpr& r = CubeRegs();
    if (isUnitFlag) ResetUnits();
    if (quantPre.Valid() && quantPre.Phys() == Mem::L0C) {
        // FPC then holds the L0C address, which points at no quantisation data.
        r.fpcQuantAddr = -1;
        r.fpcInvalid = "the last SetFixPipeConfig passed an L0C tensor (unit-flag reset only)";
    } else {
        if (!std::is_same<T, uint64_t>::value) Fail(api, "the quantisation tensor holds uint64_t words, got %s", TypeName<T>());
        r.fpcQuantAddr = (int64_t)CubeOperand(api, "quantPre", quantPre, Mem::FB, 128, "the Fixpipe Buffer (C2PIPE2GM)");
        r.fpcInvalid = nullptr;
    }
    Trace(api, PIPE_S, 0, 0, 1, nullptr, nullptr);
}

}  // namespace twin

namespace AscendC {

// reluPre is reserved on dav-2201 (pass an empty tensor); isUnitFlag sets every L0C unit flag to 0 (SetFixPipeConfig.md).
template <typename T>
inline void SetFixPipeConfig(const LocalTensor<T>& reluPre, const LocalTensor<T>& quantPre, bool isUnitFlag = false) {
    const char* api = "SetFixPipeConfig";
    twin::RequireAic(api);
    if (reluPre.Valid()) twin::CubeOperand(api, "reluPre", reluPre, twin::Mem::FB, 64, "the Fixpipe Buffer (C2PIPE2GM)");
    twin::SetFpcQuant(api, quantPre, isUnitFlag);
}

template <typename T, bool setRelu = false>
inline void SetFixPipeConfig(const LocalTensor<T>& preData, bool isUnitFlag = false) {
    static_assert(!setRelu, "SetFixPipeConfig: setRelu = true (a ReLU tensor) is not supported; only quantPre can be set");
    twin::RequireAic("SetFixPipeConfig");
    twin::SetFpcQuant("SetFixPipeConfig", preData, isUnitFlag);
}

inline void SetFixPipeClipRelu(uint64_t) {
    twin::Fail("SetFixPipeClipRelu", "not supported on Atlas A2/A3 (dav-2201); ClipReLU exists only on Atlas 200I/500 A2");
}

template <typename T>
inline void SetFixPipeAddr(const LocalTensor<T>&, uint16_t) {
    twin::Fail("SetFixPipeAddr", "not supported on Atlas A2/A3 (dav-2201); element-wise Fixpipe operands exist only on "
               "Atlas 200I/500 A2");
}

}  // namespace AscendC
