"""The op's softmax statistics in the layouts other interfaces use.

The op returns softmax_max/softmax_sum as float32 `[B, N1, S1, 8]`, TND `[T1, N1, 8]` stored per sequence head-major
(sequence b, then head, then token: the built-in's default "NTD" order). Here: the per-row log-sum-exp (flash_attn's
`softmax_lse`) and the TND statistics in token-major order (the built-in's `softmax_layout="TND"`)."""
from __future__ import annotations

from typing import Sequence

import torch

from ..problem import FLT_MAX

__all__ = ["lse", "sequence_blocks", "ntd_to_tnd", "tnd_to_ntd"]


def lse(softmax_max: torch.Tensor, softmax_sum: torch.Tensor) -> torch.Tensor:
    """float32 log-sum-exp of every row (the statistics' last axis dropped): max + ln(sum); rows that see no key
    (max = -FLT_MAX) get +inf, flash_attn's value for them (zero weight in any LSE merge)."""
    m, s = softmax_max[..., 0], softmax_sum[..., 0]
    return torch.where(m == -FLT_MAX, torch.full_like(m, float("inf")), m + torch.log(s))


def sequence_blocks(stats: torch.Tensor, cu_q: Sequence[int]) -> list[torch.Tensor]:
    """Views [N1, Sq_b, ...] of TND statistics [T1, N1, ...] in the op's order, one per sequence of the cumulative
    list `cu_q`, then one for the tokens past its end (padding)."""
    n1 = stats.shape[1]
    flat = stats.reshape(-1, *stats.shape[2:])
    bounds = [0, *cu_q, stats.shape[0]]
    return [flat[a * n1:b * n1].view(n1, b - a, *stats.shape[2:]) for a, b in zip(bounds, bounds[1:])]


def ntd_to_tnd(stats: torch.Tensor, cu_q: Sequence[int]) -> torch.Tensor:
    """The op's TND statistics in token-major order: row (t, n) at t * N1 + n."""
    return torch.cat([blk.transpose(0, 1) for blk in sequence_blocks(stats, cu_q)], dim=0)


def tnd_to_ntd(stats: torch.Tensor, cu_q: Sequence[int]) -> torch.Tensor:
    """Inverse of `ntd_to_tnd`: token-major TND statistics back in the op's order."""
    bounds = [0, *cu_q, stats.shape[0]]
    return torch.cat([stats[a:b].transpose(0, 1).reshape(-1, *stats.shape[2:]) for a, b in zip(bounds, bounds[1:])],
                     dim=0).view(stats.shape)
