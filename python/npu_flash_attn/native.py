"""The compiled extension `_C`: the C++ problem module every backend shares (`Call`, `flash_attention_problem`)
and the CPU twin with the kernels (launched only by `twin_backend`)."""
from __future__ import annotations

__all__ = ["ext"]


def ext():
    """The compiled extension (imported lazily so that importing the package works before a build)."""
    try:
        from . import _C
    except ImportError as e:  # pragma: no cover - depends on the build
        raise ImportError(f"npu_flash_attn._C is not built ({e}); run `pip install -e .` in the repository") from e
    return _C
