"""What the host does with the kernels' outputs on the CPU (twin) path, executing the problem's post-processing
data (`FAProblem.post`, from the problem module): rows no kernel writes (TND padding, problems where no row sees a
key), and the reductions of the backward's per-row dsink and per-tile dpse buffers."""
from __future__ import annotations

from typing import Optional

import torch

from .problem import FLT_MAX, FAProblem

__all__ = ["fill_padding", "fill_rows_without_keys", "zero_padding", "dpse_rows", "dpse_of_rows", "sum_rows_per_head"]


def fill_padding(p: FAProblem, out: Optional[torch.Tensor], smax: torch.Tensor, ssum: torch.Tensor) -> None:
    """TND: query tokens after the last enabled sequence (padding) are invalid rows."""
    used = p.post["pad_q_from"]
    if not p.post["tnd"] or used >= p.T1:
        return
    if out is not None:
        out[used:].zero_()
    smax.view(-1)[used * p.N1 * 8:].fill_(-FLT_MAX)
    ssum.view(-1)[used * p.N1 * 8:].fill_(FLT_MAX)


def _row_groups(p: FAProblem, rows: torch.Tensor):
    """Each run of sequences' statistics rows (first copy of the 8) as [seqs, N1, tokens]."""
    flat = rows.reshape(-1, 8)
    for first, seqs, tokens in p.post["row_groups"]:
        yield flat[first:first + seqs * p.N1 * tokens], (seqs, p.N1, tokens)


def fill_rows_without_keys(p: FAProblem, sink: Optional[torch.Tensor], smax: torch.Tensor, ssum: torch.Tensor) -> None:
    """Statistics of rows that see no key: max -FLT_MAX, sum FLT_MAX; with sink logits max = the head's sink, sum 1."""
    if sink is None:
        smax.fill_(-FLT_MAX)
        ssum.fill_(FLT_MAX)
        return
    z = sink.detach().to(smax.device)
    ssum.fill_(1.0)
    for rows, (seqs, heads, tokens) in _row_groups(p, smax):
        rows.copy_(z.view(1, -1, 1, 1).expand(seqs, heads, tokens, 8).reshape(-1, 8))


def sum_rows_per_head(p: FAProblem, rows: torch.Tensor) -> torch.Tensor:
    """Per query head, the sum of a per-row quantity stored in the statistics' layout (one of the 8 copies)."""
    out = torch.zeros(p.N1, dtype=rows.dtype, device=rows.device)
    for group, shape in _row_groups(p, rows):
        out += group[:, 0].reshape(shape).sum(dim=(0, 2))
    return out


def zero_padding(p: FAProblem, dq: torch.Tensor, dk: torch.Tensor, dv: torch.Tensor) -> None:
    """TND: tokens after the last enabled sequence belong to no task; their gradients are 0."""
    if p.post["tnd"]:
        dq[p.post["pad_q_from"]:].zero_()
        dk[p.post["pad_kv_from"]:].zero_()
        dv[p.post["pad_kv_from"]:].zero_()


def dpse_rows(p: FAProblem) -> Optional[torch.Tensor]:
    """The backward kernel's dS output for an outer pse (fp32, zeroed: tiles no step reaches have dS = 0)."""
    shape = p.post["dpse_rows_shape"]
    return torch.zeros(*shape, dtype=torch.float32) if shape else None


def dpse_of_rows(p: FAProblem, pse: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """dpse in pse's shape and dtype from the kernel's rows: summed over what pse broadcasts, times the scale for
    pse_type 1 (whose bias enters as scale * pse)."""
    g = rows
    for d in p.post["dpse_sum_dims"]:
        g = g.sum(dim=d, keepdim=True)
    if p.post["dpse_factor"] != 1.0:
        g = g * p.post["dpse_factor"]
    return g.to(pse.dtype)
