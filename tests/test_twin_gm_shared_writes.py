"""Several cores storing to the same GM bytes without ordering: a race (the docs' cross-core write-after-write)
when the stored values differ; harmless, and accepted, when every core stores the bytes GM already holds or the same
values (the result cannot depend on the order)."""
import numpy as np
import pytest

from npu_flash_attn import twin

SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;

// Every core stores x (+ blockIdx * bump) into z[0, 64), with no cross-core ordering.
extern "C" __global__ __aicore__ void shared_store(GM_ADDR x, GM_ADDR z, GM_ADDR params) {
    constexpr uint32_t N = 64;
    GlobalTensor<float> xg, zg, pg;
    xg.SetGlobalBuffer((__gm__ float*)x, N);
    zg.SetGlobalBuffer((__gm__ float*)z, N);
    pg.SetGlobalBuffer((__gm__ float*)params, 8);
    const float bump = pg.GetValue(0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * sizeof(float));
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, xg, N);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Adds(t, t, bump * (float)GetBlockIdx(), N);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(zg, t, N);
}
'''


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(SRC)


def launch(lib, x, bump, blocks=4):
    z = np.zeros_like(x)
    lib.launch("shared_store", blocks, x, z, np.array([bump] + [0] * 7, np.float32), kernel_type="aiv")
    return z


def test_identical_stores_from_several_cores_are_accepted(lib, rng):
    x = rng.standard_normal(64).astype(np.float32)
    np.testing.assert_array_equal(launch(lib, x, 0.0), x)


def test_different_stores_from_several_cores_are_a_race(lib, rng):
    x = rng.standard_normal(64).astype(np.float32)
    with pytest.raises(twin.TwinError, match=r"pipe hazard: DataCopy \(pipe MTE3\) writes GM buffer 'argument 1' bytes "
                                             r"\[0, 256\) that DataCopy on AIV \d .* \(pipe MTE3, bytes \[0, 256\)\) wrote with no ordering"):
        launch(lib, x, 1.0)
