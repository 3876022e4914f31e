"""A DMA reads GM, not the scalar data cache: bytes a GlobalTensor::SetValue left dirty are invisible to it until
DataCacheCleanAndInvalid writes the line back. The twin reports such a read instead of returning the new value."""
import numpy as np
import pytest

from npu_flash_attn import twin

SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;

// w[0..7] = 1..8 through SetValue, then w -> UB -> out by DMA. clean != 0: write the line back first.
extern "C" __global__ __aicore__ void dirty_then_dma(GM_ADDR w, GM_ADDR out, GM_ADDR params) {
    GlobalTensor<int32_t> wg, og, pg;
    wg.SetGlobalBuffer((__gm__ int32_t*)w, 64);
    og.SetGlobalBuffer((__gm__ int32_t*)out, 64);
    pg.SetGlobalBuffer((__gm__ int32_t*)params, 8);
    const int32_t clean = pg.GetValue(0);
    for (int32_t i = 0; i < 8; ++i) wg.SetValue(i, i + 1);
    if (clean != 0) DataCacheCleanAndInvalid<int32_t, CacheLine::ENTIRE_DATA_CACHE, DcciDst::CACHELINE_OUT>(wg);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 64 * sizeof(int32_t));
    LocalTensor<int32_t> t = buf.Get<int32_t>();
    DataCopy(t, wg, 64);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(og, t, 64);
}
'''


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(SRC)


def run(lib, clean):
    w = np.zeros(64, np.int32)
    out = np.full(64, -1, np.int32)
    lib.launch("dirty_then_dma", 1, w, out, np.array([clean] + [0] * 7, np.int32), kernel_type="aiv")
    return out


def test_dma_after_write_back_sees_the_scalar_stores(lib):
    out = run(lib, 1)
    np.testing.assert_array_equal(out[:8], np.arange(1, 9))
    np.testing.assert_array_equal(out[8:], 0)


def test_dma_reading_dirty_bytes_is_reported(lib):
    with pytest.raises(twin.TwinError, match=r"DataCopy: reads GM buffer 'argument 0' byte 0, which this core holds "
                                             r"dirty in its DCache .* the DMA would see the old GM bytes"):
        run(lib, 0)
