"""Running planned calls (`plan.Call`) of the op on one rank's buffers: forward calls merged into a `RowMerge`,
and backward calls with the merged (global) statistics whose dq / dk / dv are summed into fp32 buffers.

The backward's calls see only part of each row's keys while the statistics and the output are the whole row's:
they pass the grad op's `partial_keys=True`, so that its dQ pass does not take a one-step task to hold all of a
row's keys (bwd_vector.h, ExactRowD)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import torch

from ..interfaces.flash_attn import alibi_op_args
from .merge import RowMerge
from .plan import Call
from .rows import SEQ_DIM, bnsd, op_stats, stats_rows, take

__all__ = ["OpSpec", "run_forward", "run_backward", "attend_whole_rows"]


@dataclass(frozen=True)
class OpSpec:
    """The op's arguments every call of one context-parallel problem shares. With dropout (keep_prob < 1) each
    call draws the keep bits of its place in the whole problem (the op's dropout_origin): its first global row and
    column, and its heads from `head0` of `heads_total` (Ulysses ranks hold a slice of the heads). With ALiBi
    (`alibi`: the slopes of all heads, float32 [N1] or [B, N1]; B = the sequences with TND) each call passes the
    global positions of its first row and column as the op's start indices, and its heads' slopes."""
    head_num: int
    layout: str  # BSND, BNSD or TND
    scale: float
    softcap: Optional[float] = None
    deterministic: bool = False
    keep_prob: float = 1.0
    seed: int = 0
    head0: int = 0
    heads_total: int = 0  # 0: head_num
    alibi: Optional[torch.Tensor] = None

    @property
    def dropping(self) -> bool:
        return self.keep_prob < 1.0

    @property
    def one_run(self) -> bool:
        """Calls must each cover one run of global rows and one of global columns (plan_calls' contiguous): the
        dropout origin and the ALiBi start indices place a call by its first row and column only."""
        return self.dropping or self.alibi is not None

    def kwargs(self, call: Call) -> dict:
        kw = dict(scale=self.scale, **call.mask_kwargs())
        sub = call.subs[0]
        if self.softcap is not None:
            kw["softcap"] = self.softcap
        if self.dropping:
            heads = self.heads_total or self.head_num
            kw.update(keep_prob=self.keep_prob, seed=self.seed,
                      dropout_origin=[sub.q0, sub.k0, sub.seq * heads + self.head0, heads])
        if self.alibi is not None:  # self-attention: Sk - Sq = 0, query and key positions are both global
            slopes = self.alibi[..., self.head0:self.head0 + self.head_num]
            if slopes.dim() == 2 and self.layout == "TND":  # one sequence per call
                slopes = slopes[sub.seq:sub.seq + 1]
            kw.update(alibi_op_args(slopes.contiguous(), sub.q0, sub.k0))
        if self.layout == "TND":
            kw["actual_seq_qlen"] = _cumulative(s.lq for s in call.subs)
            kw["actual_seq_kvlen"] = _cumulative(s.lk for s in call.subs)
        return kw


def _cumulative(lengths) -> list[int]:
    out, at = [], 0
    for n in lengths:
        at += n
        out.append(at)
    return out


def run_forward(spec: OpSpec, merge: RowMerge, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                calls: Sequence[Call]) -> None:
    """Each call's (out, max, sum) merged into `merge` (its rows are the query buffer's rows)."""
    for call in calls:
        rows, cols = call.row_index(), call.col_index()
        out, smax, ssum = torch.ops.npu.flash_attention(
            take(q, spec.layout, rows), take(k, spec.layout, cols), take(v, spec.layout, cols), spec.head_num,
            spec.layout, **spec.kwargs(call))
        lq = [s.lq for s in call.subs]
        merge.add(rows, bnsd(out, spec.layout), stats_rows(smax, spec.layout, lq), stats_rows(ssum, spec.layout, lq))


def run_backward(spec: OpSpec, q, k, v, dy, out, smax_rows, ssum_rows, sink: Optional[torch.Tensor],
                 calls: Sequence[Call], dq: torch.Tensor, dk: torch.Tensor, dv: torch.Tensor,
                 row_calls: torch.Tensor) -> Optional[torch.Tensor]:
    """Adds each call's dq into dq and dk / dv into dk / dv (fp32 buffers in the inputs' layouts), counts the
    calls of each query row in `row_calls`, and returns the sum of the calls' dsink (None without a sink)."""
    dim = SEQ_DIM[spec.layout]
    dsink = None
    for call in calls:
        rows, cols = call.row_index(), call.col_index()
        lq = [s.lq for s in call.subs]
        m = op_stats(smax_rows.index_select(2, rows), spec.layout, lq)
        s = op_stats(ssum_rows.index_select(2, rows), spec.layout, lq)
        g = torch.ops.npu.flash_attention_grad(
            take(q, spec.layout, rows), take(k, spec.layout, cols), take(v, spec.layout, cols),
            take(dy, spec.layout, rows).contiguous(), spec.head_num, spec.layout, softmax_max=m, softmax_sum=s,
            attention_in=take(out, spec.layout, rows).contiguous(), sink=sink, deterministic=spec.deterministic,
            partial_keys=True, **spec.kwargs(call))
        dq.index_add_(dim, rows.to(dq.device), g[0].float())
        dk.index_add_(dim, cols.to(dk.device), g[1].float())
        dv.index_add_(dim, cols.to(dv.device), g[2].float())
        row_calls.index_add_(0, rows.to(row_calls.device), torch.ones(rows.numel(), dtype=row_calls.dtype,
                                                                       device=row_calls.device))
        if sink is not None:
            dsink = g[4].clone() if dsink is None else dsink + g[4]
    return dsink


def attend_whole_rows(spec: OpSpec, q, k, v, sink: Optional[torch.Tensor], calls: Sequence[Call]) -> torch.Tensor:
    """The output for calls that each hold all the visible keys of their rows (rows disjoint), through the op's
    own autograd; rows no call holds see no key and stay zero."""
    dim = SEQ_DIM[spec.layout]
    outs, index = [], []
    for call in calls:
        rows, cols = call.row_index(), call.col_index()
        outs.append(torch.ops.npu.flash_attention(
            take(q, spec.layout, rows), take(k, spec.layout, cols), take(v, spec.layout, cols), spec.head_num,
            spec.layout, sink=sink, **spec.kwargs(call))[0])
        index.append(rows)
    shape = list(q.shape)
    shape[-1] = v.shape[-1]
    out = q.new_zeros(shape)
    if not outs:
        return out + 0 * (q.sum() + k.sum() + v.sum())  # keeps the graph: zero gradients, not None
    return out.index_copy(dim, torch.cat(index).to(q.device), torch.cat(outs, dim=dim))
