"""The collectives context parallelism uses, written so that results do not depend on timing: ring send/receive
(asynchronous, posted before the compute they overlap), all-to-all of heads and sequence (Ulysses), all-gather
with its reduce-scatter gradient, and sums over ranks taken in rank order (bitwise reproducible for a fixed world
size, unlike a backend's all_reduce)."""
from __future__ import annotations

from typing import Sequence

import torch
import torch.distributed as dist

__all__ = ["RingExchange", "ring_peers", "ordered_sum", "all_to_all_dim", "AllGatherSeq", "SumOverRanks",
           "AllToAll"]


def ring_peers(group) -> tuple[int, int]:
    """Global ranks of the next and the previous member of `group`."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    if group is None:
        return nxt, prv
    return dist.get_global_rank(group, nxt), dist.get_global_rank(group, prv)


class RingExchange:
    """Sends `tensors` to the next ring member and receives the same shapes from the previous one into `into`
    (asynchronously: `wait()` returns `into` once both directions are done)."""

    def __init__(self, tensors: Sequence[torch.Tensor], into: Sequence[torch.Tensor], group):
        nxt, prv = ring_peers(group)
        ops = [dist.P2POp(dist.isend, t.contiguous(), nxt, group) for t in tensors]
        ops += [dist.P2POp(dist.irecv, t, prv, group) for t in into]
        self._reqs = dist.batch_isend_irecv(ops)
        self._into = list(into)

    def wait(self) -> list[torch.Tensor]:
        for r in self._reqs:
            r.wait()
        return self._into


def ordered_sum(t: torch.Tensor, group) -> torch.Tensor:
    """Sum of `t` over the group's ranks, added in rank order (the same bits on every rank and every run)."""
    world = dist.get_world_size(group)
    if world == 1:
        return t.clone()
    parts = [torch.empty_like(t) for _ in range(world)]
    dist.all_gather(parts, t.contiguous(), group=group)
    out = parts[0].clone()
    for p in parts[1:]:
        out += p
    return out


def all_to_all_dim(x: torch.Tensor, split_dim: int, cat_dim: int, group) -> torch.Tensor:
    """Splits x into `world` equal parts along split_dim, part r to rank r, and concatenates what every rank sent
    along cat_dim in rank order."""
    world = dist.get_world_size(group)
    if world == 1:
        return x
    send = [p.contiguous() for p in x.chunk(world, dim=split_dim)]
    recv = [torch.empty_like(send[0]) for _ in range(world)]
    dist.all_to_all(recv, send, group=group)
    return torch.cat(recv, dim=cat_dim)


class AllToAll(torch.autograd.Function):
    """`all_to_all_dim` with its gradient (the inverse all-to-all): Ulysses' sequence <-> heads exchanges."""

    @staticmethod
    def forward(ctx, x, split_dim: int, cat_dim: int, group):
        ctx.dims, ctx.group = (split_dim, cat_dim), group
        return all_to_all_dim(x, split_dim, cat_dim, group)

    @staticmethod
    def backward(ctx, g):
        split_dim, cat_dim = ctx.dims
        return all_to_all_dim(g, cat_dim, split_dim, ctx.group), None, None, None


class AllGatherSeq(torch.autograd.Function):
    """Every rank's x concatenated along `dim` in rank order; the gradient is summed back to each owner in rank
    order (a reduce-scatter built from an all-to-all, so it is reproducible)."""

    @staticmethod
    def forward(ctx, x, dim: int, group):
        ctx.dim, ctx.group = dim, group
        world = dist.get_world_size(group)
        if world == 1:
            return x
        parts = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(parts, x.contiguous(), group=group)
        return torch.cat(parts, dim=dim)

    @staticmethod
    def backward(ctx, g):
        world = dist.get_world_size(ctx.group)
        if world == 1:
            return g, None, None
        send = [p.contiguous() for p in g.chunk(world, dim=ctx.dim)]
        recv = [torch.empty_like(send[0]) for _ in range(world)]
        dist.all_to_all(recv, send, group=ctx.group)
        out = recv[0].float()
        for p in recv[1:]:
            out += p.float()
        return out.to(g.dtype), None, None


class SumOverRanks(torch.autograd.Function):
    """Identity forward; the gradient summed over the group's ranks in rank order (a parameter every rank holds
    a copy of, such as the sink logits, gets the gradient of the sum of all ranks' losses)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return ordered_sum(g, ctx.group), None
