"""A kernel in catlass's style (tests/kernels/catlass_style/gemm_relu.cpp: a Resource struct per core type, operator()
specialised on `CORE_TYPE = g_coreType`, if-constexpr on ASCEND_IS_AIC, a cube matmul feeding a vector epilogue
through cross-core flags) runs unchanged on the twin with g++ and clang++ and matches numpy."""
import subprocess
from pathlib import Path

import numpy as np
import pytest

from compilers import COMPILERS, compile_with
from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "catlass_style" / "gemm_relu.cpp"


@pytest.fixture(scope="module", params=COMPILERS)
def lib(request):
    return compile_with(request.param, KERNEL)


def test_gemm_relu_matches_numpy(lib, rng):
    blocks = int(rng.integers(1, 5))
    a = rng.uniform(-1, 1, (blocks * 32, 32)).astype(np.float16)
    b = rng.uniform(-1, 1, (32, 32)).astype(np.float16)
    x = rng.uniform(-4, 4, (blocks * 32, 32)).astype(np.float32)
    alpha = np.float32(rng.uniform(0.5, 2))
    ws = np.zeros((blocks * 32, 32), np.float32)
    d = np.full((blocks * 32, 32), np.nan, np.float32)
    lib.launch("gemm_relu", blocks, a, b, x, ws, d, np.array([alpha], np.float32), kernel_type="mix")
    c = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(ws, c, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(d, np.maximum(alpha * c + x, 0), rtol=1e-5, atol=1e-5)
    assert (d == 0).any() and (d > 0).any()  # the relu cut some entries and kept others


def test_a_single_cpu_debug_build_cannot_compile_it():
    # CANN's CPU debug form (one build for all cores, g_coreType a variable) rejects `CORE_TYPE = g_coreType`:
    # the reason compile_kernel builds per core type.
    cxx = COMPILERS[0]
    r = subprocess.run([cxx, "-std=c++17", "-fsyntax-only", *[f"-I{d}" for d in twin.include_dirs()], str(KERNEL)],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "g_coreType" in r.stderr
