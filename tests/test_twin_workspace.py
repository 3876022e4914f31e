"""GetUserWorkspace with the NPU's semantics: the user part starts 16 MB (dav-2201's system workspace) past the
workspace pointer, so a host that sizes only the user part fails the GM checks, as it would overrun on the NPU."""
import numpy as np
import pytest

from npu_flash_attn import twin

SYS = 16 * 1024 * 1024
N = 64

SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;

// Each core stages x through its slice of the user workspace: x -> UB -> workspace -> UB -> y.
extern "C" __global__ __aicore__ void ws_copy(GM_ADDR x, GM_ADDR y, GM_ADDR workspace) {
    constexpr uint32_t N = 64;
    GM_ADDR user = GetUserWorkspace(workspace);
    GlobalTensor<float> xg, yg, wg;
    xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * N, N);
    yg.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * N, N);
    wg.SetGlobalBuffer((__gm__ float*)user + GetBlockIdx() * N, N);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * sizeof(float));
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, xg, N);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(wg, t, N);
    SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
    WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
    DataCopy(t, wg, N);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(yg, t, N);
}
'''


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(SRC)


def test_user_part_follows_the_system_workspace(lib, rng):
    blocks = 3
    x = rng.standard_normal(blocks * N).astype(np.float32)
    y = np.zeros_like(x)
    ws = np.zeros(SYS + blocks * N * 4, np.uint8)
    lib.launch("ws_copy", blocks, x, y, ws, kernel_type="aiv")
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(ws[SYS:].view(np.float32), x)  # the user part is where the NPU puts it
    assert not ws[:SYS].any()                                     # the system part is left to the library


@pytest.mark.parametrize("user_only", [True, False])
def test_workspace_sized_without_the_system_part_fails(lib, rng, user_only):
    x = rng.standard_normal(N).astype(np.float32)
    y = np.zeros_like(x)
    ws = np.zeros(N * 4 if user_only else SYS - 64, np.uint8)  # aclrtMalloc pads SYS - 64 to SYS - 32
    with pytest.raises(twin.TwinError, match=r"GetUserWorkspace: workspace buffer 'argument 2' has \d+ bytes from the "
                                             r"workspace pointer, less than the 16777216-byte system workspace"):
        lib.launch("ws_copy", 1, x, y, ws, kernel_type="aiv")
