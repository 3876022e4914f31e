"""setup.py's NPU step: whether to build the torch_npu adapter library (csrc/npu/npu_adapter.cpp) and how.

It is built only when the CANN toolkit's environment is set (ASCEND_HOME_PATH, from `source <cann>/set_env.sh`)
and torch_npu is importable by the Python that runs the build (pip's build isolation hides it: install with
`pip install --no-build-isolation ...`); NPU_FA_SKIP_ADAPTER=1 skips it. Otherwise the package installs with the CPU
twin only and setup.py prints one line saying why. The build runs `scripts/build_npu.sh --adapter` (the CANN
operator package and the adapter, in build/npu) and copies the library next to the package's other modules, where
`npu_flash_attn.npu` looks for it. NPU_FA_OPP_INSTALL=<dir> also installs the operator package there (`default`:
the package's own default location). Not yet run on hardware.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Mapping, Optional

ROOT = Path(__file__).resolve().parent
ADAPTER_FILE = "libnpu_flash_attn_npu.so"  # CMakeLists.txt target npu_flash_attn_npu (npu_flash_attn/npu.py)


def _importable(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def adapter_decision(environ: Mapping[str, str] = os.environ,
                     importable: Callable[[str], bool] = _importable) -> tuple[bool, str]:
    """(True, "") to build the adapter, else (False, the one-line reason)."""
    if environ.get("NPU_FA_SKIP_ADAPTER") == "1":
        return False, "NPU adapter skipped: NPU_FA_SKIP_ADAPTER=1; installing the CPU twin only"
    if not environ.get("ASCEND_HOME_PATH"):
        return False, ("NPU adapter skipped: ASCEND_HOME_PATH is not set (no CANN toolkit; source <cann>/set_env.sh "
                       "to build it); installing the CPU twin only")
    if not importable("torch_npu"):
        return False, ("NPU adapter skipped: torch_npu is not importable by the build's Python (install torch_npu "
                       "2.14.0 and use pip install --no-build-isolation); installing the CPU twin only")
    return True, ""


def build_adapter(package_dir: Path, environ: Mapping[str, str] = os.environ,
                  run: Callable[..., object] = subprocess.run, build: Path = ROOT / "build" / "npu") -> Path:
    """Builds the operator package and the adapter with scripts/build_npu.sh (in `build`) and copies the library
    into `package_dir`; returns the copy. Raises CalledProcessError (the build's own output says why)."""
    cmd = ["bash", str(ROOT / "scripts" / "build_npu.sh"), "--build-dir", str(build), "--adapter"]
    install: Optional[str] = environ.get("NPU_FA_OPP_INSTALL")
    if install:
        cmd += ["--install"] + ([] if install == "default" else [install])
    run(cmd, check=True, cwd=str(ROOT))
    dest = Path(package_dir) / ADAPTER_FILE
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(build / ADAPTER_FILE, dest)
    return dest
