"""Ring attention: K/V travel around the group's ring while each rank's queries stay; every step merges the visible
part of (local queries, visiting K/V) into fp32 row statistics. The next K/V are sent and received asynchronously
while the current step's kernels run (two receive buffers, alternating). The backward walks the same ring: K/V
travel again and the fp32 dK/dV of each source travel with them, each rank adding its part, until they reach their
owner; dQ stays local. Sums are taken in a fixed order, so results are reproducible for a fixed world size."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import torch.distributed as dist

from .blocks import OpSpec, run_backward, run_forward
from .comm import RingExchange
from .merge import RowMerge
from .plan import Visibility, plan_calls
from .rows import SEQ_DIM, bnsd
from .sharding import Chunk

__all__ = ["RingSetup", "ring_attention"]


@dataclass(frozen=True)
class RingSetup:
    """A ring: its process group, the chunks member g holds (queries and keys alike), the mask, the op's
    arguments."""
    group: object
    parts: tuple[tuple[Chunk, ...], ...]
    vis: Visibility
    spec: OpSpec


def _from_bnsd(x: torch.Tensor, layout: str) -> torch.Tensor:
    if layout == "TND":
        return x[0].permute(1, 0, 2)
    return x.permute(0, 2, 1, 3) if layout == "BSND" else x


def _calls(setup: RingSetup, rank: int, src: int):
    return plan_calls(setup.parts[rank], setup.parts[src], setup.vis, setup.spec.layout == "TND",
                      setup.spec.one_run)


def _kv_buffers(k, v):
    return [(torch.empty_like(k), torch.empty_like(v)) for _ in range(2)]


class _Ring(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, sink, setup: RingSetup):
        group, spec = setup.group, setup.spec
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        qb = bnsd(q, spec.layout)
        merge = RowMerge(qb.shape[0], qb.shape[1], qb.shape[2], v.shape[-1], q.device)
        cur, spare = (k, v), _kv_buffers(k, v) if world > 1 else []
        for t in range(world):
            ex = RingExchange(cur, spare[t % 2], group) if t < world - 1 else None
            run_forward(spec, merge, q, cur[0], cur[1], _calls(setup, rank, (rank - t) % world))
            if ex is not None:
                cur = tuple(ex.wait())
        out, smax, ssum = merge.finish(sink)
        out = _from_bnsd(out, spec.layout).to(q.dtype).contiguous()
        ctx.setup = setup
        ctx.save_for_backward(q, k, v, out, smax, ssum, sink)
        ctx.mark_non_differentiable(smax, ssum)
        return out, smax, ssum

    @staticmethod
    def backward(ctx, dy, _dmax, _dsum):
        q, k, v, out, smax, ssum, sink = ctx.saved_tensors
        setup = ctx.setup
        group, spec = setup.group, setup.spec
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        want_dsink = sink is not None and ctx.needs_input_grad[3]
        dy = dy.contiguous()
        dq = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
        row_calls = torch.zeros(q.shape[SEQ_DIM[spec.layout]], dtype=torch.int64, device=q.device)
        dsink = torch.zeros(sink.shape, dtype=torch.float32, device=q.device) if want_dsink else None
        cur, spare = (k, v), _kv_buffers(k, v) if world > 1 else []
        dkv_ex = None
        for t in range(world):
            kv_ex = RingExchange(cur, spare[t % 2], group) if t < world - 1 else None
            dk = torch.zeros(k.shape, dtype=torch.float32, device=k.device)
            dv = torch.zeros(v.shape, dtype=torch.float32, device=v.device)
            part = run_backward(spec, q, cur[0], cur[1], dy, out, smax, ssum, sink if want_dsink else None,
                                _calls(setup, rank, (rank - t) % world), dq, dk, dv, row_calls)
            if part is not None:
                dsink += part
            if dkv_ex is not None:  # the accumulated dK/dV of this source from the ranks before, then ours
                dk_in, dv_in = dkv_ex.wait()
                dk, dv = dk_in + dk, dv_in + dv
            if world > 1:
                dkv_ex = RingExchange((dk, dv), (torch.empty_like(dk), torch.empty_like(dv)), group)
            if kv_ex is not None:
                cur = tuple(kv_ex.wait())
        if dkv_ex is not None:  # after the last step our own dK/dV arrive, every rank's part added
            dk, dv = dkv_ex.wait()
        if want_dsink:
            dsink += _sink_correction(spec, dy, out, smax, ssum, sink, row_calls)
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), dsink, None


def _sink_correction(spec: OpSpec, dy, out, smax, ssum, sink, row_calls) -> torch.Tensor:
    """Each grad call adds D_i (1 - ps_i) to its rows' share of dsink (the op assumes its keys are all the row's,
    whose probabilities then sum to 1 - ps); a row in K calls had it added K times instead of once. D is the op's
    rowsum(dy * out); ps the sink's probability from the merged statistics."""
    d = (bnsd(dy, spec.layout).float() * bnsd(out, spec.layout).float()).sum(-1)
    ps = torch.exp(sink.float().view(1, -1, 1) - smax) / ssum
    extra = (row_calls - 1).clamp(min=0).to(torch.float32).view(1, 1, -1)
    return (ps * (1 - ps) * d * extra).sum(dim=(0, 2))


def ring_attention(q, k, v, sink: Optional[torch.Tensor], setup: RingSetup):
    """(out, softmax_max, softmax_sum [B, N, S] fp32) of this rank's queries over the whole ring's keys;
    differentiable in q, k, v and sink (dsink of this rank's rows only)."""
    return _Ring.apply(q, k, v, sink, setup)
