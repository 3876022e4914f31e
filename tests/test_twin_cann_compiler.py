"""What CANN's compiler gives a kernel besides the headers (tests/kernels/launch/cann_compiler.cpp), with both
compilers the twin supports: a build per core type (__DAV_CUBE__ on AIC cores, __DAV_VEC__ on AIV cores, g_coreType a
constant and ASCEND_IS_* if-constexpr conditions as impl/utils/sys_macros.h makes them), `__forceinline__` and the
raw `pipe_barrier` intrinsic."""
import subprocess
from pathlib import Path

import numpy as np
import pytest

from compilers import COMPILERS, compile_with
from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "launch" / "cann_compiler.cpp"
AIC, AIV = 1, 2


def build(cxx):
    return compile_with(cxx, KERNEL)


@pytest.fixture(scope="module", params=COMPILERS)
def lib(request):
    return build(request.param)


def lines(out, first, n):
    return out.reshape(-1, 8)[first:first + n, :5]


@pytest.mark.parametrize("kernel_type, aics, aivs_per_block", [("mix", 1, 2), ("mix_aic_1_1", 1, 1), ("aiv", 0, 1),
                                                                ("aic", 1, 0), ("mix_aiv_1_0", 0, 1)])
def test_each_core_runs_the_build_of_its_core_type(lib, rng, kernel_type, aics, aivs_per_block):
    blocks = int(rng.integers(1, 5))
    out = np.full(64 * 8, -1, np.int32)
    lib.launch("core_builds", blocks, out, kernel_type=kernel_type)
    n_aiv = blocks * aivs_per_block
    aic = np.array([[AIC, 1, 10, 1, 2 * b] for b in range(blocks * aics)], np.int32).reshape(-1, 5)
    aiv = np.array([[AIV, 2, 20, 2, 2 * i] for i in range(n_aiv)], np.int32).reshape(-1, 5)
    np.testing.assert_array_equal(lines(out, 0, blocks * aics), aic)
    np.testing.assert_array_equal(lines(out, 32, n_aiv), aiv)
    assert (out.reshape(-1, 8)[blocks * aics:32] == -1).all() and (out.reshape(-1, 8)[32 + n_aiv:] == -1).all()


def test_kernel_globals_are_shared_by_both_builds(lib, rng):
    blocks = int(rng.integers(1, 5))
    before, after = np.zeros(8, np.int32), np.zeros(8, np.int32)
    lib.launch("calls_so_far", 1, before, kernel_type="aiv")  # read by the vector build
    lib.launch("core_builds", blocks, np.zeros(64 * 8, np.int32), kernel_type="mix")
    lib.launch("calls_so_far", 1, after, kernel_type="aiv")
    assert after[0] - before[0] == 3 * blocks  # the cube build's AICs counted into the same variable


def test_the_compilers_build_separate_libraries():
    assert len({build(cxx).path for cxx in COMPILERS}) == len(COMPILERS)  # the cache tells the compilers apart


@pytest.mark.parametrize("pipe, error", [(4, None), (6, None), (-1, "MTE2.*PipeBarrier<PIPE_MTE2>"),
                                         (1, "MTE2.*PipeBarrier<PIPE_MTE2>"),
                                         (0, r"pipe_barrier: PIPE_S is not a valid barrier pipe"),
                                         (7, r"pipe_barrier: 7 is not a pipe of dav-2201")])
def test_raw_pipe_barrier_orders_its_pipe(lib, rng, pipe, error):
    x = rng.uniform(-1, 1, 128).astype(np.float32)
    y = np.zeros(64, np.float32)
    prm = np.array([pipe, 0, 0, 0, 0, 0, 0, 0], np.int32)
    if error:  # no barrier, or one of a pipe that does not order MTE2: the second copy races the first
        with pytest.raises(twin.TwinError, match=error):
            lib.launch("raw_barrier", 1, x, y, prm, kernel_type="aiv")
        return
    lib.launch("raw_barrier", 1, x, y, prm, kernel_type="aiv")  # PIPE_MTE2 or PIPE_ALL
    np.testing.assert_array_equal(y, x[64:])


FORCEINLINE_SRC = """
#include "twin/launch/core_types.h"
{qual} __aicore__ int Twice(int v) {{ return 2 * v; }}
extern "C" int twice_{tag}(int v) {{ return Twice(v); }}
"""


@pytest.mark.parametrize("cxx", COMPILERS)
def test_forceinline_is_inline_and_forced(tmp_path, cxx):
    def build(qual, tag):
        src = tmp_path / f"{tag}.cpp"
        src.write_text(FORCEINLINE_SRC.format(qual=qual, tag=tag))
        obj = tmp_path / f"{tag}.o"
        subprocess.run([cxx, "-std=c++17", "-O0", "-c", str(src), "-o", str(obj), *[f"-I{d}" for d in twin.include_dirs()]],
                       check=True, capture_output=True)
        return obj, subprocess.run(["nm", "-C", str(obj)], check=True, capture_output=True, text=True).stdout

    a, syms = build("__forceinline__", "a")
    b, _ = build("__forceinline__", "b")
    assert "Twice(int)" not in syms  # inlined even at -O0: no out-of-line copy
    _, plain = build("inline", "c")
    assert "Twice(int)" in plain  # the control: a plain inline function is called at -O0
    # inline linkage: the same __forceinline__ definition in two translation units links
    subprocess.run([cxx, "-shared", str(a), str(b), "-o", str(tmp_path / "ab.so")], check=True, capture_output=True)
