"""Cube-side accesses past a LocalTensor's declared length are judged against physical memory (memory/tensor.h
JudgeOverrun): the docs set no rule for them and the NPU knows only physical buffers (the official int8 Mmad
example writes its L0C tile past the declared length and reads back the valid part), so bytes no other tensor was
given are a TwinWarning, bytes another tensor owns or bytes past the physical buffer an error."""
import warnings
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "memory" / "placement.cpp"
L0C = 128 * 1024


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNEL)


def params(rng, kase, addr):
    a, b = rng.integers(4, 17, 2).astype(np.float32) / 8  # few mantissa bits: every partial sum is exact
    p = np.zeros(8, np.int32)
    p[0], p[1] = kase, addr
    p[4:6] = np.array([a, b], np.float32).view(np.int32)
    return p, 16 * np.float32(a) * np.float32(b)


def test_overrun_into_unowned_l0c_warns_and_computes(lib, rng):
    addr = int(rng.integers(0, 64)) * 1024
    p, want = params(rng, 0, addr)
    c = np.zeros(256, np.float32)
    with pytest.warns(twin.TwinWarning, match=rf"\[AIC 0\] Mmad: dst: m = 16, n = 32 write 2048 bytes of L0C .* past the "
                      rf"tensor's 1024 bytes; bytes \[{addr + 1024}, {addr + 2048}\) of L0C belong to no other tensor"):
        lib.launch("l0c_overrun", 1, c, p, kernel_type="aic")
    np.testing.assert_array_equal(c, np.full(256, want, np.float32))
    assert len(lib.last_warnings()) == 1


def test_overrun_into_another_tensor_is_refused(lib, rng):
    addr = int(rng.integers(0, 64)) * 1024
    p, _ = params(rng, 1, addr)
    with pytest.raises(twin.TwinError, match=rf"\[AIC 0\] Mmad: dst: .* past the tensor's 1024 bytes, into L0C bytes "
                       rf"\[{addr + 1024}, {addr + 2048}\) of LocalTensor\(CO1, addr {addr + 1024}, 1024 bytes\)"):
        lib.launch("l0c_overrun", 1, np.zeros(256, np.float32), p, kernel_type="aic")


def test_overrun_past_physical_l0c_is_refused(lib, rng):
    p, _ = params(rng, 0, L0C - 1024)
    with pytest.raises(twin.TwinError, match=r"Mmad: dst: .* past the tensor's 1024 bytes, and past the end of L0C "
                       rf"\({L0C} bytes\)"):
        lib.launch("l0c_overrun", 1, np.zeros(256, np.float32), p, kernel_type="aic")


def test_in_bounds_launch_has_no_warnings(lib, rng):
    # Control: a kernel that keeps to its tensors leaves last_warnings() empty (the gemm bench writes only its tile).
    gemm = twin.compile_kernel(Path(__file__).parent / "kernels" / "cube" / "gemm.cpp")
    a = np.zeros(16 * 16, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", twin.TwinWarning)
        gemm.launch("mmad_bench_f16", 1, a, np.array([16, 16, 16, 1, 0, 0, 0, 0], np.int32), kernel_type="aic")
    assert gemm.last_warnings() == []
    np.testing.assert_array_equal(a, np.full(256, 16.0, np.float32))
