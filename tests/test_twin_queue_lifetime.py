"""Queue buffers belong to the core, not to the queue object: a queue declared in a helper function may go out of
scope before the TPipe that waits its free events (as in the official implementation, which keeps that state in the
pipe). A tensor is usable only until its FreeTensor, and no queue buffer may still be allocated when the pipe ends."""
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "memory" / "queue_lifetime.cpp"
N, BLOCKS = 96, 3


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNEL)


def run(lib, which, x):
    y = np.full_like(x, np.nan)
    lib.launch("queue_lifetime", BLOCKS, np.array([which, 0, 0, 0, 0, 0, 0, 0], np.int32), x, y, kernel_type="aiv")
    return y


def test_helper_scoped_queues_drained_by_the_pipe(lib, rng):
    x = rng.standard_normal(BLOCKS * N).astype(np.float32)
    for _ in range(3):  # the old twin failed at random here (dangling queue pointers in the pipe)
        np.testing.assert_array_equal(run(lib, 0, x), x + np.float32(3.0))


def test_fresh_allocation_after_free_is_usable(lib, rng):
    x = rng.standard_normal(BLOCKS * N).astype(np.float32)
    np.testing.assert_array_equal(run(lib, 5, x), x)


@pytest.mark.parametrize("which,pattern", [
    (1, r"Adds: tensor of queue buffer \d+ used after its TQue::FreeTensor"),
    (2, r"LocalTensor::GetValue: tensor of queue buffer \d+ used after its TQue::FreeTensor"),
    (3, r"TQue::FreeTensor: tensor freed twice"),
    (4, r"TPipe::Destroy: 1 queue buffer\(s\) still allocated or enqueued when the TPipe is destroyed \(kernel end\)"),
])
def test_queue_tensor_misuse_is_refused(lib, rng, which, pattern):
    x = rng.standard_normal(BLOCKS * N).astype(np.float32)
    with pytest.raises(twin.TwinError, match=r"^\[AIV \d \(block \d, sub 0\)\] " + pattern):
        run(lib, which, x)
    np.testing.assert_array_equal(run(lib, 5, x), x)  # the next launch works
