"""Layout conversions between the ops' non-TND layouts (BSH, SBH, BSND, BNSD) and [B, N, S, D], and where each
keeps its batch and sequence axes."""
from __future__ import annotations

import torch

__all__ = ["to_bnsd", "from_bnsd", "batch_and_seq"]

_BATCH_SEQ_AXES = {"BSH": (0, 1), "SBH": (1, 0), "BSND": (0, 1), "BNSD": (0, 2)}


def to_bnsd(t: torch.Tensor, layout: str, heads: int) -> torch.Tensor:
    """Non-TND tensor -> [B, N, S, D] view."""
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.permute(0, 2, 1, 3)
    if layout == "BSH":
        b, s, h = t.shape
        return t.reshape(b, s, heads, h // heads).permute(0, 2, 1, 3)
    if layout == "SBH":
        s, b, h = t.shape
        return t.reshape(s, b, heads, h // heads).permute(1, 2, 0, 3)
    raise ValueError(layout)


def from_bnsd(t: torch.Tensor, layout: str) -> torch.Tensor:
    """[B, N, S, D] -> layout (contiguous)."""
    b, n, s, d = t.shape
    if layout == "BNSD":
        return t.contiguous()
    if layout == "BSND":
        return t.permute(0, 2, 1, 3).contiguous()
    if layout == "BSH":
        return t.permute(0, 2, 1, 3).reshape(b, s, n * d).contiguous()
    if layout == "SBH":
        return t.permute(2, 0, 1, 3).reshape(s, b, n * d).contiguous()
    raise ValueError(layout)


def batch_and_seq(t: torch.Tensor, layout: str) -> tuple:
    """(B, S) of a non-TND tensor, as its sizes (symbolic ones stay symbolic)."""
    b, s = _BATCH_SEQ_AXES[layout]
    return t.shape[b], t.shape[s]
