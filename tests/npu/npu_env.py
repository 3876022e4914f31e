"""Whether tests/npu can run here, and the helpers they share: inputs move to the NPU, results come back to the CPU,
where the float64 reference and the FlashAttention criterion of the twin tests judge them."""
from __future__ import annotations

import importlib.util
from typing import Optional

import pytest
import torch

import npu_flash_attn


def skip_reason() -> Optional[str]:
    """None when an NPU, torch_npu and the adapter library are all there; else why the NPU tests skip."""
    if importlib.util.find_spec("torch_npu") is None:
        return "no NPU: torch_npu is not installed"
    import torch_npu  # noqa: F401  (registers torch.npu)
    if not torch.npu.is_available():
        return "no NPU: torch.npu.is_available() is False"
    st = npu_flash_attn.npu.status()
    if not st.loaded:
        return f"no NPU adapter: {st.reason}"
    return None


REASON = skip_reason()
requires_npu = pytest.mark.skipif(REASON is not None, reason=REASON or "")
DEVICE = "npu:0"


def to_npu(*tensors):
    return [None if t is None else t.to(DEVICE) for t in tensors]


def to_cpu(*tensors):
    return [None if t is None else t.cpu() for t in tensors]


def npu_kwargs(kw: dict) -> dict:
    """The op's keyword arguments with every tensor (mask, sink, pse) moved to the NPU."""
    return {n: (x.to(DEVICE) if isinstance(x, torch.Tensor) else x) for n, x in kw.items()}


def mask_case(names: list, name: str):
    """(layout, dtype) of a dense-mask case, rotating through layouts and dtypes as the twin's mask tests do."""
    i = list(names).index(name)
    return ["BSND", "BNSD", "BSH", "SBH", "BSND", "BNSD"][i % 6], (torch.float16, torch.bfloat16)[i % 2]
