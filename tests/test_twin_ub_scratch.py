"""TPipe may hand out all 192 KB of UB (as CANN's CPU checks allow), but Select's tensor-scalar and tensor-tensor
forms stage a vector at TMP_UB_OFFSET = 184 KB on dav-2201: a kernel whose buffers reach there gets them silently
overwritten on the NPU, so the twin refuses that Select."""
import numpy as np
import pytest

from npu_flash_attn import twin

SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;

// One TBuf of `bytes`; dst/src/selMask at its start; z = select(mask, x, 2.0).
extern "C" __global__ __aicore__ void scratch_select(GM_ADDR x, GM_ADDR m, GM_ADDR z, GM_ADDR params) {
    constexpr uint32_t N = 256;
    GlobalTensor<uint32_t> pg;
    pg.SetGlobalBuffer((__gm__ uint32_t*)params, 8);
    GlobalTensor<float> xg, zg;
    GlobalTensor<uint8_t> mg;
    xg.SetGlobalBuffer((__gm__ float*)x, N);
    zg.SetGlobalBuffer((__gm__ float*)z, N);
    mg.SetGlobalBuffer((__gm__ uint8_t*)m, N / 8);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, pg.GetValue(0));
    LocalTensor<float> src = buf.Get<float>();
    LocalTensor<float> dst = src[N];
    LocalTensor<uint8_t> mask = src[2 * N].ReinterpretCast<uint8_t>();
    DataCopy(src, xg, N);
    DataCopy(mask, mg, 32);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Select(dst, mask, src, 2.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, N);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(zg, dst, N);
}
'''


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(SRC)


def run(lib, rng, nbytes):
    x = rng.standard_normal(256).astype(np.float32)
    m = rng.integers(0, 256, 32, dtype=np.uint8)
    z = np.zeros_like(x)
    lib.launch("scratch_select", 1, x, m, z, np.array([nbytes] + [0] * 7, np.uint32), kernel_type="aiv")
    return x, m, z


def test_select_with_buffers_below_the_scratch(lib, rng):
    x, m, z = run(lib, rng, 184 * 1024)
    bits = np.unpackbits(m, bitorder="little").astype(bool)
    np.testing.assert_array_equal(z, np.where(bits, x, np.float32(2.0)))


def test_select_over_buffers_reaching_the_scratch_is_refused(lib, rng):
    # TPipe accepts the 188 KB buffer (test_twin_strict: up to 192 KB); Select then refuses to run over it.
    with pytest.raises(twin.TwinError, match=r"Select: this form stages its selector/scalar in UB at TMP_UB_OFFSET = "
                                             r"188416 .* the kernel's buffers reach byte 192512"):
        run(lib, rng, 188 * 1024)
