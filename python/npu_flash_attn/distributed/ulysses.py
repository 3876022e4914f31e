"""Ulysses attention: an all-to-all turns (local sequence, all heads) into (whole sequence, heads / degree) on every
rank of the group, one op call per rank attends the whole sequence, and the inverse all-to-all brings the output
back; the backward is the same all-to-alls reversed around the op's own backward. Query and key/value head counts
must divide by the group size."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import torch
import torch.distributed as dist

from .blocks import OpSpec, attend_whole_rows
from .comm import AllToAll
from .plan import Visibility, plan_calls
from .rows import SEQ_DIM
from .sharding import Sharding, permutation

__all__ = ["HEAD_DIM", "check_heads", "seq_to_heads", "heads_to_seq", "ulysses_attention"]

HEAD_DIM = {"BSND": 2, "BNSD": 1, "TND": 1}


def check_heads(n1: int, n2: int, degree: int, what: str) -> None:
    if n1 % degree or n2 % degree:
        raise ValueError(f"{what}: query heads {n1} and key/value heads {n2} must both be divisible by the "
                         f"Ulysses degree {degree} (each rank attends heads / degree of them); use algo='ring', or "
                         "a hybrid with an ulysses_degree that divides both")


def seq_to_heads(x: torch.Tensor, layout: str, group) -> torch.Tensor:
    """[.., S_local, .., N, ..] -> [.., world * S_local, .., N / world, ..] (rank order along the sequence)."""
    return AllToAll.apply(x, HEAD_DIM[layout], SEQ_DIM[layout], group)


def heads_to_seq(x: torch.Tensor, layout: str, group) -> torch.Tensor:
    """The inverse of `seq_to_heads`."""
    return AllToAll.apply(x, SEQ_DIM[layout], HEAD_DIM[layout], group)


def ulysses_attention(q, k, v, sink: Optional[torch.Tensor], sh: Sharding, vis: Visibility, spec: OpSpec, group):
    """This rank's output (its shard of the sequence, all heads); `spec.head_num` is the full query head count."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    layout, dim = spec.layout, SEQ_DIM[spec.layout]
    gathered = sh.part(range(world))
    natural = sh.natural()
    to_natural = permutation(gathered, natural).to(q.device)
    back = permutation(natural, gathered).to(q.device)
    qh, kh, vh = (seq_to_heads(t, layout, group).index_select(dim, to_natural) for t in (q, k, v))
    heads = spec.head_num // world
    local = replace(spec, head_num=heads, head0=rank * heads, heads_total=spec.head_num)
    sink_h = None if sink is None else sink[rank * heads:(rank + 1) * heads]
    calls = plan_calls(natural, natural, vis, layout == "TND", spec.one_run)
    out = attend_whole_rows(local, qh, kh, vh, sink_h, calls)
    return heads_to_seq(out.index_select(dim, back), layout, group)
