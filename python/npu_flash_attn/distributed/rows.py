"""Query rows across the op's layouts: the sequence dimension, row selection, [B, N, S, D] views of outputs, and
the softmax statistics between the op's layouts ([B, N, S, 8]; TND [T, N, 8] stored sequence by sequence, head
by head) and per-row fp32 [B, N, R] (TND: B = 1, rows in buffer order)."""
from __future__ import annotations

from typing import Sequence

import torch

from ..layouts import to_bnsd

__all__ = ["SEQ_DIM", "take", "bnsd", "stats_rows", "op_stats"]

SEQ_DIM = {"BSND": 1, "BNSD": 2, "TND": 0}


def take(x: torch.Tensor, layout: str, index: torch.Tensor) -> torch.Tensor:
    """Rows `index` of x along the layout's sequence dimension (a view when they are one run)."""
    dim = SEQ_DIM[layout]
    n = index.numel()
    if n and int(index[-1]) - int(index[0]) == n - 1 and bool((index[1:] > index[:-1]).all()):
        return x.narrow(dim, int(index[0]), n)
    return x.index_select(dim, index.to(x.device))


def bnsd(x: torch.Tensor, layout: str) -> torch.Tensor:
    """[B, N, S, D] view of a BSND/BNSD tensor; [1, N, T, D] of a TND one."""
    if layout == "TND":
        return x.permute(1, 0, 2).unsqueeze(0)
    return to_bnsd(x, layout, x.shape[2] if layout == "BSND" else x.shape[1])


def stats_rows(stats: torch.Tensor, layout: str, q_lengths: Sequence[int]) -> torch.Tensor:
    """The op's statistics -> fp32 [B, N, R] (TND: [1, N, T], `q_lengths` the call's sequence lengths)."""
    if layout != "TND":
        return stats[..., 0]
    flat = stats[..., 0].reshape(-1)
    n = stats.shape[1]
    parts, at = [], 0
    for sq in q_lengths:
        parts.append(flat[at:at + n * sq].view(n, sq))
        at += n * sq
    return torch.cat(parts, dim=1).unsqueeze(0)


def op_stats(rows: torch.Tensor, layout: str, q_lengths: Sequence[int]) -> torch.Tensor:
    """fp32 [B, N, R] (TND [1, N, T]) -> the op's statistics layout (each value replicated 8 times)."""
    if layout != "TND":
        return rows.unsqueeze(-1).expand(*rows.shape, 8).contiguous()
    per_seq, at = [], 0
    for sq in q_lengths:
        per_seq.append(rows[0, :, at:at + sq].reshape(-1))
        at += sq
    flat = torch.cat(per_seq) if per_seq else rows.new_zeros(0)
    return flat.view(-1, rows.shape[1]).unsqueeze(-1).expand(-1, -1, 8).contiguous()
