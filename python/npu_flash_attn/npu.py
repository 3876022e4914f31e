"""NPU tensors: finding and loading the torch_npu adapter library (csrc/npu/npu_adapter.cpp,
npu_infer_adapter.cpp). Not yet run on hardware.

The adapter registers the PrivateUse1 (NPU) kernels of `torch.ops.npu.flash_attention_fwd` (which the composite
`torch.ops.npu.flash_attention` calls), `torch.ops.npu.flash_attention_grad` and `torch.ops.npu.fused_infer_attention`
(npu_fused_infer_attention_score's); the Python package keeps the schemas, the CPU (twin) kernels, the autograd and
the argument checks (`ops.py` / `backward.py`, `interfaces/fused_infer.py`), so NPU and CPU calls are validated by the
same code and differentiated by the same registration.

Lookup, at `import npu_flash_attn`, only when `torch_npu` is importable:

1. the environment variable ``NPU_FA_ADAPTER_LIB`` (the path of the library; a path that does not exist is an
   error, reported when NPU tensors are used);
2. ``libnpu_flash_attn_npu.so`` in the package directory (where `pip install --no-build-isolation .` puts it when
   CANN and torch_npu are present at build time, see setup_npu.py).

The library found is loaded with `torch.ops.load_library`. `status()` tells what happened; `require_adapter()` is
what the ops call for NPU tensors: it raises a RuntimeError naming what is missing and how to build it.
"""
from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional

import torch

__all__ = ["ADAPTER_ENV", "ADAPTER_FILE", "AdapterStatus", "find_adapter", "load_adapter", "status",
           "require_adapter", "BUILD_HINT"]

ADAPTER_ENV = "NPU_FA_ADAPTER_LIB"
ADAPTER_FILE = "libnpu_flash_attn_npu.so"  # CMakeLists.txt target npu_flash_attn_npu
PACKAGE_DIR = Path(__file__).resolve().parent
BUILD_HINT = ("build it on a machine with CANN 9.1.0 and torch_npu 2.14.0: `source <cann>/set_env.sh && pip install "
              "--no-build-isolation -e .` (puts it in the package), or `scripts/build_npu.sh --adapter` and set "
              f"{ADAPTER_ENV} to build/npu/{ADAPTER_FILE}")


@dataclass(frozen=True)
class AdapterStatus:
    """What the loader decided: `loaded` (the PrivateUse1 kernels are registered), the library `path` it found (or
    None) and, when not loaded, `reason`: a sentence naming what is missing."""
    loaded: bool
    path: Optional[str]
    reason: str


def find_adapter(environ: Mapping[str, str] = os.environ, package_dir: Path = PACKAGE_DIR) -> tuple[Optional[Path], str]:
    """(path, "") of the adapter library, or (None, why not): $NPU_FA_ADAPTER_LIB first, then the package
    directory."""
    env = environ.get(ADAPTER_ENV)
    if env:
        p = Path(env)
        if not p.is_file():
            return None, f"{ADAPTER_ENV}={env} does not name an existing file (the adapter library {ADAPTER_FILE})"
        return p, ""
    p = Path(package_dir) / ADAPTER_FILE
    if p.is_file():
        return p, ""
    return None, (f"the adapter library {ADAPTER_FILE} is not in the package directory {package_dir} and "
                  f"{ADAPTER_ENV} is not set; {BUILD_HINT}")


def _torch_npu_importable() -> bool:
    return importlib.util.find_spec("torch_npu") is not None


def load_adapter(environ: Mapping[str, str] = os.environ, package_dir: Path = PACKAGE_DIR,
                 torch_npu_importable: Callable[[], bool] = _torch_npu_importable,
                 import_module: Callable[[str], object] = importlib.import_module,
                 load_library: Callable[[str], None] = torch.ops.load_library) -> AdapterStatus:
    """Decides and (when everything is there) loads; never raises. The callables are the decision's inputs, so the
    tests can drive it without torch_npu."""
    if not torch_npu_importable():
        return AdapterStatus(False, None, "torch_npu is not installed (the NPU path needs torch_npu 2.14.0, which "
                                          f"pins torch 2.14.0, and the adapter library); {BUILD_HINT}")
    try:
        import_module("torch_npu")  # registers the NPU device (PrivateUse1) the adapter's kernels are for
    except Exception as e:  # noqa: BLE001 - any import failure (driver, CANN libraries) is reported, not raised
        return AdapterStatus(False, None, f"torch_npu is installed but `import torch_npu` failed: {e}")
    path, why = find_adapter(environ, package_dir)
    if path is None:
        return AdapterStatus(False, None, why)
    try:
        load_library(str(path))
    except Exception as e:  # noqa: BLE001 - e.g. unresolved CANN symbols: the message says which
        return AdapterStatus(False, str(path), f"loading the adapter library {path} failed: {e}")
    return AdapterStatus(True, str(path), "")


_lock = threading.Lock()
_status: Optional[AdapterStatus] = None


def status() -> AdapterStatus:
    """The loader's decision for this process (made once, at the first call; `import npu_flash_attn` makes it)."""
    global _status
    with _lock:
        if _status is None:
            _status = load_adapter()
            log = logging.getLogger("npu_flash_attn")
            if _status.loaded:
                log.info("NPU adapter loaded from %s: NPU tensors run the CANN kernels", _status.path)
            else:
                log.info("NPU adapter not loaded (NPU tensors will raise; CPU tensors run the twin): %s", _status.reason)
        return _status


def require_adapter(op: str) -> None:
    """Called by `op` for NPU tensors: returns when the adapter's kernels are registered, else raises RuntimeError
    naming what is missing."""
    st = status()
    if not st.loaded:
        raise RuntimeError(f"{op} on NPU tensors needs the torch_npu adapter library, which is not loaded: "
                           f"{st.reason}")
