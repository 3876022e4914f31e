"""Layout conversions between the ops' non-TND layouts (BSH, SBH, BSND, BNSD) and [B, N, S, D]."""
from __future__ import annotations

import torch

__all__ = ["to_bnsd", "from_bnsd"]


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
