"""All-gather attention (the llama3 style): every rank gathers the whole K/V, puts it in global order and attends
its own query chunks, each chunk in one call holding all of its visible keys (so the op's forward and backward
apply unchanged); the K/V gradients go back to their owners summed in rank order."""
from __future__ import annotations

from typing import Optional

import torch.distributed as dist

from .blocks import OpSpec, attend_whole_rows
from .comm import AllGatherSeq
from .plan import Visibility, plan_calls
from .rows import SEQ_DIM
from .sharding import Sharding, permutation

__all__ = ["allgather_attention"]


def allgather_attention(q, k, v, sink: Optional[object], sh: Sharding, vis: Visibility, spec: OpSpec, group):
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    dim = SEQ_DIM[spec.layout]
    natural = sh.natural()
    to_natural = permutation(sh.part(range(world)), natural).to(k.device)
    k_all, v_all = (AllGatherSeq.apply(t, dim, group).index_select(dim, to_natural) for t in (k, v))
    calls = plan_calls(sh.part([rank]), natural, vis, spec.layout == "TND", spec.one_run)
    return attend_whole_rows(spec, q, k_all, v_all, sink, calls)
