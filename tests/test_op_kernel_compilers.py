"""The op kernels (op_kernel/*.cpp) compile against the twin with clang++ as well as g++ (the extension is built with
the default compiler in the CPU debug form), and in both per-core builds CANN's compiler makes of them: the cube build
(__DAV_CUBE__) and the vector build (__DAV_VEC__)."""
import shutil
import subprocess
from pathlib import Path

import pytest

from npu_flash_attn import twin

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "op_kernel").glob("*.cpp"))
BUILDS = {"cpu-debug": [], "cube": ["-D__DAV_CUBE__"], "vector": ["-D__DAV_VEC__"]}
CASES = [("clang++", b) for b in BUILDS] + [("g++", "cube"), ("g++", "vector")]  # g++ cpu-debug: setup.py's build


@pytest.mark.parametrize("cxx, build", CASES)
def test_op_kernels_compile(cxx, build):
    if shutil.which(cxx) is None:
        pytest.skip(f"{cxx} is not installed (.ci/run installs clang)")
    inc = [f"-I{d}" for d in (*twin.include_dirs(), ROOT / "op_kernel")]
    procs = [subprocess.Popen([cxx, "-std=c++17", "-fsyntax-only", *BUILDS[build], *inc, str(src)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for src in SOURCES]
    errors = {src.name: p.communicate()[1] for src, p in zip(SOURCES, procs) if p.wait() != 0}
    assert SOURCES and not errors, "\n".join(f"{k}:\n{v[-3000:]}" for k, v in errors.items())
