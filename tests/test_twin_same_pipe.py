"""Same-pipe ordering: a pipe runs in order, but the docs require a PipeBarrier of that pipe between two MTE2 (or
two MTE3) transfers writing overlapping destination bytes (PipeBarrier page) and between Mmads accumulating into one
L0C tile when (m / 16) * (n / 16) < 10 (Mmad page). PIPE_V needs none on dav-2201 (compiler auto-sync)."""
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "hazard" / "same_pipe.cpp"


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNEL)


def run(lib, which, mn=16, x=None):
    x = np.random.uniform(-2, 2, 256).astype(np.float16) if x is None else x
    z = np.zeros(256, np.float16)
    lib.launch("same_pipe", 1, np.array([which, mn, 0, 0, 0, 0, 0, 0], np.int32), x, z, kernel_type="mix")
    return x, z


@pytest.mark.parametrize("which", [2, 4, 6, 8, 10, 14])
def test_ordered_same_pipe_writes_pass(lib, which):
    x, z = run(lib, which)
    if which == 10:
        np.testing.assert_array_equal(z[:128], x[:128])
        np.testing.assert_array_equal(z[128:192], x[:64])
    if which == 14:
        np.testing.assert_array_equal(z, (x * np.float16(2)) + np.float16(1))


def test_overlapping_atomic_adds_need_no_barrier(lib):
    _, z = run(lib, 12)
    np.testing.assert_array_equal(z, np.full(256, 2, np.float16))


@pytest.mark.parametrize("which, mn, pattern", [
    (1, 16, r"DataCopy \(pipe MTE2\) writes UB bytes \[128, 256\) that DataCopy \(pipe MTE2, bytes \[0, 512\)\) wrote with no "
            r"PipeBarrier<PIPE_MTE2> between the two"),
    (3, 16, r"DataCopy \(pipe MTE3\) writes GM buffer 'argument 2' bytes \[256, 384\) that DataCopy on AIV 0 \(block 0, sub "
            r"0\) \(pipe MTE3, bytes \[0, 512\)\) wrote with no PipeBarrier<PIPE_MTE3> between the two"),
    (7, 16, r"DataCopy\(GM->L1, Nd2NzParams\) \(pipe MTE2\) writes L1 bytes \[0, 512\) that Fill \(pipe MTE2, bytes \[0, 1024\)\) wrote "
            r"with no PipeBarrier<PIPE_MTE2>"),
    (17, 16, r"Mmad \(pipe M\) reads L0C bytes \[0, 1024\) that Mmad \(pipe M, bytes \[0, 1024\)\) wrote with no PipeBarrier<PIPE_M> "
             r"between the two \(the docs require one between Mmads accumulating into one L0C tile when \(m / 16\) \* "
             r"\(n / 16\) < 10\)"),
    (17, 48, r"Mmad \(pipe M\) reads L0C bytes \[0, 9216\) that Mmad \(pipe M, bytes \[0, 9216\)\) wrote with no PipeBarrier<PIPE_M>"),
])
def test_missing_same_pipe_barrier_is_reported(lib, which, mn, pattern):
    with pytest.raises(twin.TwinError, match=r"pipe hazard: " + pattern):
        run(lib, which, mn)
    run(lib, 2)  # the next launch works


@pytest.mark.parametrize("which, mn", [(16, 16), (16, 48), (17, 64)])  # barrier given, or (64/16)^2 = 16 >= 10
def test_accumulating_mmads_ordered_or_large_pass(lib, which, mn):
    run(lib, which, mn)
