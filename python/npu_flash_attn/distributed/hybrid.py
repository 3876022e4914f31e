"""Hybrid (Ulysses x ring) attention: the group's ranks form rings of `world / degree` members and Ulysses groups
of `degree` consecutive ranks. The all-to-all inside a Ulysses group gives each rank the group's sequence chunks
for heads / degree of the heads; a ring across the Ulysses groups (ranks with the same place in theirs) then
attends those chunks against every other group's, and the inverse all-to-all returns the output."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import torch
import torch.distributed as dist

from .blocks import OpSpec
from .plan import Visibility
from .ring import RingSetup, ring_attention
from .sharding import Sharding
from .ulysses import heads_to_seq, seq_to_heads

__all__ = ["subgroups", "hybrid_attention"]

_GROUPS: dict = {}


def subgroups(group, degree: int):
    """(the Ulysses group, the ring group) of this rank: created once per (group, degree) by every rank in the
    same order, as torch.distributed requires."""
    world = dist.get_world_size(group)
    ranks = [dist.get_global_rank(group, r) if group is not None else r for r in range(world)]
    key = (tuple(ranks), degree)
    if key not in _GROUPS:
        uly = [dist.new_group(ranks[g * degree:(g + 1) * degree]) for g in range(world // degree)]
        ring = [dist.new_group(ranks[j::degree]) for j in range(degree)]
        _GROUPS[key] = (uly, ring)
    uly, ring = _GROUPS[key]
    rank = dist.get_rank(group)
    return uly[rank // degree], ring[rank % degree]


def hybrid_attention(q, k, v, sink: Optional[torch.Tensor], sh: Sharding, vis: Visibility, spec: OpSpec, group,
                     degree: int):
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    uly, ring = subgroups(group, degree)
    layout = spec.layout
    members = world // degree
    parts = tuple(sh.part(range(g * degree, (g + 1) * degree)) for g in range(members))
    heads = spec.head_num // degree
    slot = rank % degree
    local = replace(spec, head_num=heads, head0=slot * heads, heads_total=spec.head_num)
    setup = RingSetup(ring, parts, vis, local)
    qh, kh, vh = (seq_to_heads(t, layout, uly) for t in (q, k, v))
    sink_h = None if sink is None else sink[slot * heads:(slot + 1) * heads]
    out = ring_attention(qh, kh, vh, sink_h, setup)[0]
    return heads_to_seq(out, layout, uly)
