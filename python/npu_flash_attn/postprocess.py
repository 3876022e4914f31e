"""What the host does with the kernels' outputs on the CPU (twin) path: rows no kernel writes (TND padding, problems
where no row sees a key), and the reductions of the backward's per-row dsink and per-tile dpse buffers."""
from __future__ import annotations

from typing import Optional

import torch

from .problem import FLT_MAX, FAProblem

__all__ = ["fill_invalid_tail", "fill_rows_without_keys", "zero_tnd_tails", "dpse_rows", "dpse", "sum_rows_per_head"]


def fill_invalid_tail(p: FAProblem, out: torch.Tensor, smax: torch.Tensor, ssum: torch.Tensor) -> None:
    """TND: query tokens after the last enabled sequence (padding) are invalid rows."""
    used = p.cu_seqlens_q[-1] if p.cu_seqlens_q else 0
    if used >= p.T1:
        return
    out[used:].zero_()
    smax.view(-1)[used * p.N1 * 8:].fill_(-FLT_MAX)
    ssum.view(-1)[used * p.N1 * 8:].fill_(FLT_MAX)


def fill_rows_without_keys(p: FAProblem, sink: Optional[torch.Tensor], smax: torch.Tensor, ssum: torch.Tensor) -> None:
    """Statistics of rows that see no key: max -FLT_MAX, sum FLT_MAX; with sink logits max = the head's sink, sum 1."""
    if sink is None:
        smax.fill_(-FLT_MAX)
        ssum.fill_(FLT_MAX)
        return
    z = sink.detach().to(smax.device)
    ssum.fill_(1.0)
    if p.layout != "TND":
        smax.copy_(z.view(1, -1, 1, 1).expand(smax.shape))
        return
    # TND statistics are batch-major: sequence b's rows are [head][token] from cu_q[b-1] * N1 (module docstring)
    rows = smax.view(-1, 8)
    for q0, q1 in zip((0,) + tuple(p.cu_seqlens_q[:-1]), p.cu_seqlens_q):
        rows[q0 * p.N1:q1 * p.N1] = z.view(-1, 1, 1).expand(p.N1, q1 - q0, 8).reshape(-1, 8)


def zero_tnd_tails(p: FAProblem, dq, dk, dv) -> None:
    """TND: tokens after the last enabled sequence belong to no task; their gradients are 0."""
    used_q = p.cu_seqlens_q[-1] if p.cu_seqlens_q else 0
    used_kv = p.cu_seqlens_kv[-1] if p.cu_seqlens_kv else 0
    dq[used_q:].zero_()
    dk[used_kv:].zero_()
    dv[used_kv:].zero_()


def dpse_rows(p: FAProblem) -> Optional[torch.Tensor]:
    """The kernel's dS output for an outer pse (fp32, zeroed: tiles no step reaches have dS = 0): [B, N1, S1, S2] for
    a [.., S1, S2] pse, column sums of the vector cores' row chunks [B, N1, 4 * ceil(S1 / 16), S2] for a [.., 1, S2]
    one (op_kernel/kernel/bwd_vector.h StorePseGrad)."""
    if not p.pse.outer_mode:
        return None
    rows = p.S1 if p.pse.outer_per_row else 4 * ((p.S1 + 15) // 16)
    return torch.zeros(p.B, p.N1, rows, p.S2, dtype=torch.float32)


def dpse(p: FAProblem, pse: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """dpse in the shape and dtype of pse from the kernel's rows: summed over what pse broadcasts, times the scale for
    pse_type 1 (whose bias enters as scale * pse)."""
    g = rows if p.pse.outer_per_row else rows.sum(dim=2, keepdim=True)
    if pse.shape[0] == 1 and p.B > 1:
        g = g.sum(dim=0, keepdim=True)
    if p.pse.outer_mode == 2:
        g = g * p.scale
    return g.to(pse.dtype)


def sum_rows_per_head(p: FAProblem, rows: torch.Tensor) -> torch.Tensor:
    """Per query head, the sum of a per-row quantity stored in the statistics' layout ([B, N1, S1, 8], or TND's
    batch-major [T1, N1, 8]: sequence b's rows (head, token) from cu_q[b-1] * N1), one of the 8 copies per row."""
    if p.layout != "TND":
        return rows[..., 0].sum(dim=(0, 2))
    flat = rows.reshape(-1, 8)[:, 0]
    out = torch.zeros(p.N1, dtype=rows.dtype, device=rows.device)
    q0 = 0
    for q1 in p.cu_seqlens_q:
        if q1 > q0:
            out += flat[q0 * p.N1:q1 * p.N1].view(p.N1, q1 - q0).sum(dim=1)
        q0 = q1
    return out
