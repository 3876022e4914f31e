"""Builds npu_flash_attn._C: the CPU twin of Ascend C with our op_kernel/ kernels and op_host/ tiling, as a
pybind11 extension. The twin headers are also shipped inside the package so standalone kernels can be compiled.
With CANN and torch_npu present it also builds the torch_npu adapter library (setup_npu.py); else it says why not
in one line and installs the twin only."""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
import setup_npu  # noqa: E402

SHIPPED = ["twin/include", "twin/src", "chip", "op_host", "op_kernel"]
# The extension's translation units compile in parallel: NPU_FA_BUILD_JOBS jobs, default one per CPU.
ParallelCompile("NPU_FA_BUILD_JOBS", default=0).install()


def _native_flags():
    """-march=native only on request (NPU_FA_NATIVE=1, for a build that runs where it is built: F16C/AVX make the
    twin's half/bfloat16 emulation faster); by default the compiler's portable baseline, so a built wheel runs on
    any CPU of its architecture. The twin's standalone kernels (npu_flash_attn.twin) are compiled on the machine
    that runs them and keep -march=native."""
    if os.environ.get("NPU_FA_NATIVE") != "1":
        return []
    with tempfile.TemporaryDirectory() as td:
        src = Path(td) / "t.cpp"
        src.write_text("int main(){return 0;}\n")
        r = subprocess.run([os.environ.get("CXX", "g++"), "-march=native", str(src), "-o", str(Path(td) / "t")],
                           capture_output=True)
        return ["-march=native"] if r.returncode == 0 else []


class BuildPyWithTwin(build_py):
    """Copies the twin sources into the package (wheel installs); editable installs read them from the checkout."""

    def run(self):
        super().run()
        dest = Path(self.build_lib) / "npu_flash_attn" / "_twin_src"
        for rel in SHIPPED:
            src = ROOT / rel
            if src.exists():
                shutil.copytree(src, dest / rel, dirs_exist_ok=True)


class BuildExtWithNpuAdapter(build_ext):
    """The twin extension, then the NPU adapter library when CANN and torch_npu are there (setup_npu.py)."""

    def run(self):
        super().run()
        build, why = setup_npu.adapter_decision()
        if not build:
            print(why)
            return
        package_dir = Path(self.get_ext_fullpath("npu_flash_attn._C")).parent
        print(f"NPU adapter: {setup_npu.build_adapter(package_dir)}")


ext = Pybind11Extension(
    "npu_flash_attn._C",
    sorted(str(p.relative_to(ROOT)) for d in ("csrc/twin", "op_kernel", "op_host", "op_host/plan", "op_host/problem") for p in (ROOT / d).glob("*.cpp")),
    include_dirs=["twin/include", "chip", "op_host", "op_kernel"],
    # headers: setuptools rebuilds every source when one changes (it tracks no includes itself)
    depends=sorted(str(p.relative_to(ROOT)) for d in ("twin/include", "csrc/twin", "chip", "op_kernel", "op_host") for p in (ROOT / d).rglob("*.h")),
    cxx_std=17,
    extra_compile_args=["-O3", "-pthread", *_native_flags()],
    extra_link_args=["-pthread"],
)

setup(ext_modules=[ext], cmdclass={"build_ext": BuildExtWithNpuAdapter, "build_py": BuildPyWithTwin}, package_dir={"": "python"})
