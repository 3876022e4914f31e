"""Combining partial attention outputs over disjoint key sets with their softmax statistics, in fp32.

A partial result over keys K_b is (o_b, m_b, s_b): o_b = sum_{j in K_b} exp(x_j - m_b) v_j / s_b. The merge keeps
the running max m, the sum l = sum_b s_b exp(m_b - m) and the numerator a = sum_b o_b s_b exp(m_b - m); the output
is a / l. Rows that saw no key (the op's -FLT_MAX / +FLT_MAX) have l = 0 and give exact zeros. A sink logit z joins
each row's softmax once, at the end: l += exp(z - m), as the single-device op counts it."""
from __future__ import annotations

from typing import Optional

import torch


__all__ = ["RowMerge", "FLT_MAX"]

FLT_MAX = torch.finfo(torch.float32).max  # the op's mark of a row that sees no key


class RowMerge:
    """The running merge of one rank's rows: [B, N, S, Dv] numerators, [B, N, S] max and sum (fp32)."""

    def __init__(self, batch: int, heads: int, rows: int, dv: int, device):
        self.acc = torch.zeros(batch, heads, rows, dv, dtype=torch.float32, device=device)
        self.m = torch.full((batch, heads, rows), float("-inf"), dtype=torch.float32, device=device)
        self.l = torch.zeros(batch, heads, rows, dtype=torch.float32, device=device)

    def add(self, index: torch.Tensor, out: torch.Tensor, smax: torch.Tensor, ssum: torch.Tensor) -> None:
        """Merges a partial result for rows `index` (out [B, N, R, Dv] in any float dtype, smax / ssum fp32
        [B, N, R] in the op's convention)."""
        index = index.to(self.acc.device)
        valid = smax > -FLT_MAX
        m_b = torch.where(valid, smax, torch.full_like(smax, float("-inf")))
        s_b = torch.where(valid, ssum, torch.zeros_like(ssum))
        m_old = self.m.index_select(2, index)
        m_new = torch.maximum(m_old, m_b)
        finite = m_new > float("-inf")
        keep = torch.where(finite, torch.exp(m_old - m_new), torch.zeros_like(m_new))
        w = torch.where(finite, s_b * torch.exp(m_b - m_new), torch.zeros_like(m_new))
        acc = self.acc.index_select(2, index) * keep.unsqueeze(-1) + out.float() * w.unsqueeze(-1)
        self.acc.index_copy_(2, index, acc)
        self.l.index_copy_(2, index, self.l.index_select(2, index) * keep + w)
        self.m.index_copy_(2, index, m_new)

    def finish(self, sink: Optional[torch.Tensor]):
        """(out fp32 [B, N, S, Dv], softmax_max, softmax_sum fp32 [B, N, S]) with the sink's term (float32 [N] or
        None) counted once per row."""
        m, l = self.m, self.l
        if sink is not None:
            z = sink.float().view(1, -1, 1).expand_as(m)
            m_f = torch.maximum(m, z)
            keep = torch.where(m > float("-inf"), torch.exp(m - m_f), torch.zeros_like(m))
            l_f = l * keep + torch.exp(z - m_f)
            out = self.acc * (keep / l_f).unsqueeze(-1)
            return out, m_f, l_f
        seen = l > 0
        out = torch.where(seen.unsqueeze(-1), self.acc / torch.where(seen, l, torch.ones_like(l)).unsqueeze(-1),
                          torch.zeros_like(self.acc))
        return (out, torch.where(seen, m, torch.full_like(m, -FLT_MAX)),
                torch.where(seen, l, torch.full_like(l, FLT_MAX)))
