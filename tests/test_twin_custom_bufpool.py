"""A user-defined TBufPool (EXTERN_IMPL_BUFPOOL) on the twin: the pool hands out TQue / TBuf buffers at the
addresses its own InitBuffer picks, inside the range TPipe::InitBufPool gave it, and its Reset ends them."""
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "utils" / "custom_bufpool.cpp"


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNEL)


def _run(lib, rng, case, n, gap, pool_len, blocks=3):
    x, y = (rng.standard_normal(blocks * n).astype(np.float32) for _ in range(2))
    z = np.zeros(4096 + 8 if blocks * n <= 4096 else blocks * n, np.float32)
    lib.launch("custom_pool", blocks, np.array([case, n, gap, pool_len], np.int64), x, y, z)
    return x, y, z


def test_custom_pool_places_buffers(lib, rng):
    n = 8 * int(rng.integers(1, 100))
    gap = 32 * int(rng.integers(0, 4))
    size = n * 4
    x, y, z = _run(lib, rng, 0, n, gap, 3 * (size + gap))
    assert np.array_equal(z[:3 * n], x + y)
    marks = z[4096:4099].view(np.uint32)
    assert list(marks) == [96, 96 + 3 * (size + gap), 3]  # GetCurAddr is the UB byte address after the TBuf


@pytest.mark.parametrize("case, gap, extra, match", [
    (0, 32, -64, r"TQue::InitBufHandle: buffer \[\d+, \d+\) is outside the pool \[96, \d+\)"),
    (1, 0, 64, r"MyBufPool::GetBufHandle: handle offset 4 is not below the pool's BUFID_SIZE 4"),
    (2, 0, 0, r"MyBufPool::Reset: 1 queue buffer\(s\) still allocated or enqueued at the custom TBufPool's Reset"),
])
def test_custom_pool_misuse(lib, rng, case, gap, extra, match):
    n = 64
    with pytest.raises(twin.TwinError, match=r"\[AIV 0 \(block 0, sub 0\)\] " + match):
        _run(lib, rng, case, n, gap, 3 * (n * 4 + gap) + extra, blocks=1)
