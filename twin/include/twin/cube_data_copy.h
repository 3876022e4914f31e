// Cube-core data movement (GM->L1 and friends). Placeholder until the cube unit lands.
#pragma once
#include "twin/data_copy.h"

namespace twin {
template <typename T>
void CopyGmToL1(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>&, uint32_t) {
    Fail("DataCopy", "destination position %s is not supported yet", PositionName(dst.Pos()));
}
template <typename T>
void CopyGmToL1(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>&, const AscendC::DataCopyParams&) {
    Fail("DataCopy", "destination position %s is not supported yet", PositionName(dst.Pos()));
}
template <typename T>
void CopyLocalToLocal(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, const AscendC::DataCopyParams&) {
    Fail("DataCopy", "%s -> %s is not supported yet", PositionName(src.Pos()), PositionName(dst.Pos()));
}
template <typename T>
void CopyPadGmToL1(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>&, const AscendC::DataCopyExtParams&,
                   const AscendC::DataCopyPadExtParams<T>&) {
    Fail("DataCopyPad", "destination position %s is not supported yet", PositionName(dst.Pos()));
}
}  // namespace twin
