// Special-purpose registers of the cube core (AIC) that configuration APIs write and later cube instructions read.
// The docs state they keep their value for the rest of the kernel and start undefined in each new kernel; the twin
// records "never written" so a read of an unset register fails instead of using a stale value.
//   Fixpipe: QUANT_PRE (scalar quantisation word), ND_PARA (NZ2ND ndNum / srcNdStride / dstNdStride), FPC (Fixpipe
//            Buffer address of per-column quantisation words). Read by DataCopy(L0C->GM/L1, DataCopyCO12DstParams);
//            the Fixpipe API writes them itself (cube/fixpipe.h).
//   Load3D:  FMATRIX (l1H, l1W, padList), PADDING (pad value), L3D_RPT (repeat), L1_3D_SIZE (L1 read boundary).
//            Read by LoadData with LoadData3DParamsV2; that call writes FMATRIX/PADDING itself unless told not to.
#pragma once
#include <cstdint>

#include "twin/launch/core_local.h"

namespace twin {

struct CubeSpr {
    // Fixpipe
    bool quantPreSet = false;
    uint64_t quantPre = 0;
    bool ndParaSet = false;
    uint16_t ndNum = 0, srcNdStride = 0, dstNdStride = 0;
    // FPC quantisation address: byte offset in the Fixpipe Buffer, or why it does not point at user data.
    int64_t fpcQuantAddr = -1;
    const char* fpcInvalid = "SetFixPipeConfig was never called in this kernel";
    // Load3D
    bool fmatrixSet = false;
    uint16_t l1H = 0, l1W = 0;
    uint8_t padList[4] = {0, 0, 0, 0};
    bool paddingSet = false;
    uint64_t padding = 0;
    uint16_t repeatStride = 0;
    uint8_t repeatTime = 1, repeatMode = 0;  // power-on behaviour: one iteration (official samples never set it)
    uint32_t boundary = 0;                   // 0: no boundary
};

// The registers of the calling core (zeroed at the start of each launch).
inline CubeSpr& CubeRegs() { return CoreLocal<CubeSpr>(); }

}  // namespace twin
