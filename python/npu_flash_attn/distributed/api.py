"""`context_parallel_attention`: this rank's attention output over the whole (sharded) sequence, differentiable,
by one of four algorithms (ring, ulysses, hybrid, allgather); the argument rules and their messages."""
from __future__ import annotations

import math
import numbers
from typing import Optional, Sequence, Union

import torch
import torch.distributed as dist

from ..dropout import draw_seed
from ..interfaces.flash_attn import check_alibi_slopes
from .allgather import allgather_attention
from .blocks import OpSpec
from .comm import SumOverRanks
from .hybrid import hybrid_attention
from .plan import Visibility
from .ring import RingSetup, ring_attention
from .rows import SEQ_DIM
from .sharding import LOAD_BALANCES, Sharding, check_cu_seqlens, group_rank_world
from .ulysses import check_heads, ulysses_attention

__all__ = ["ALGOS", "context_parallel_attention"]

ALGOS = ("ring", "ulysses", "hybrid", "allgather")
_LAYOUTS = ("BSND", "BNSD", "BSH", "TND")


def _int(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}")
    return int(v)


def _window(window_size) -> Optional[tuple[int, int]]:
    if window_size is None:
        return None
    try:
        left, right = window_size
    except (TypeError, ValueError):
        raise ValueError(f"window_size={window_size!r} must be a pair (left, right) of ints, -1 = unbounded")
    left, right = _int("window_size[0]", left), _int("window_size[1]", right)
    if left < -1 or right < -1:
        raise ValueError(f"window_size={window_size!r}: each side must be >= 0, or -1 for unbounded")
    return left, right


def _heads(q, k, v, head_num: int, layout: str) -> tuple[int, int]:
    """(N1, N2) after the layout checks (BSH already viewed as BSND)."""
    if q.dim() != (3 if layout == "TND" else 4) or k.dim() != q.dim() or v.dim() != q.dim():
        raise ValueError(f"input_layout={layout!r} needs {3 if layout == 'TND' else 4}-D query/key/value, got shapes "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    hd = 2 if layout == "BSND" else 1
    n1, n2 = q.shape[hd], k.shape[hd]
    if n1 != head_num:
        raise ValueError(f"head_num={head_num} does not match the query's {n1} heads (shape {tuple(q.shape)}, "
                         f"{layout})")
    if v.shape[hd] != n2 or n2 == 0 or n1 % n2:
        raise ValueError(f"key/value heads {n2}/{v.shape[hd]} must be equal and divide the {n1} query heads (GQA)")
    return n1, n2


def _as_bsnd(t: torch.Tensor, head_num: Optional[int], d: Optional[int]) -> torch.Tensor:
    """A BSH tensor viewed as BSND (heads from head_num, or from the query's head dim d)."""
    if t.dim() != 3:
        raise ValueError(f"input_layout='BSH' needs 3-D query/key/value, got shape {tuple(t.shape)}")
    b, s, h = t.shape
    n = head_num if head_num is not None else h // d
    if n <= 0 or h % n:
        raise ValueError(f"input_layout='BSH': hidden size {h} does not split into {n} heads")
    return t.view(b, s, n, h // n)


def _same_local_length(s_local: int, group, world: int) -> None:
    sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(sizes, torch.tensor([s_local], dtype=torch.int64), group=group)
    got = [int(x) for x in sizes]
    if len(set(got)) != 1:
        raise ValueError(f"the ranks hold different local sequence lengths {got}: every rank must pass its part from "
                         f"shard_sequence(..., group) of the same global sequence (world size {world})")


def _shared_seed(seed: Optional[int], group) -> int:
    """The caller's seed, or one drawn on the group's first rank (dropout.draw_seed) and sent to the others."""
    if seed is not None:
        return seed
    t = torch.tensor([draw_seed()], dtype=torch.int64)
    dist.broadcast(t, src=dist.get_global_rank(group, 0) if group is not None else 0, group=group)
    return int(t)


def context_parallel_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, head_num: int,
                               input_layout: str = "BSND", *, group=None, algo: str = "ring",
                               ulysses_degree: Optional[int] = None, load_balance: str = "zigzag",
                               scale: Optional[float] = None, causal: bool = False,
                               window_size: Optional[tuple[int, int]] = None,
                               cu_seqlens: Optional[Union[Sequence[int], torch.Tensor]] = None,
                               sink: Optional[torch.Tensor] = None, softcap: Optional[float] = None,
                               keep_prob: float = 1.0, seed: Optional[int] = None,
                               alibi_slopes: Optional[torch.Tensor] = None,
                               deterministic: bool = False) -> torch.Tensor:
    """This rank's attention output for its shard of the sequence (inputs as `shard_sequence` returns them, the
    same `load_balance`), equal to attention over the whole sequence once unsharded.

    causal is bottom-right over the whole sequence; window_size=(left, right) as flash_attn's (-1 = unbounded);
    scale=None means D**-0.5; TND needs cu_seqlens (global, with a leading 0; every sequence a multiple of
    2 * world tokens for zigzag, world for contiguous); sink (float32 [head_num]) joins every row's softmax once and
    its gradient is summed over the ranks; algo "ring" (any head counts), "ulysses" (head counts divisible by the
    world size), "hybrid" (ulysses_degree ranks all-to-all, a ring across the rest), "allgather" (gathers K/V).
    keep_prob < 1: dropout on the attention probabilities as the op's (seed, offset 0), each element kept or dropped
    as one device would at its global position (the calls pass dropout_origin); seed=None draws one on the group's
    first rank; chunks must have even lengths. alibi_slopes (float32 [head_num] or [B, head_num], B the batch or,
    with TND, the number of sequences) adds flash_attn's -slope * |i - j| over global positions (the op's in-kernel
    ALiBi, each call given its global start indices); the slopes get no gradient. Autograd gives this rank's dq /
    dk / dv. Sums over ranks run in a fixed order: results are bitwise reproducible for a fixed world size whatever
    `deterministic` says (it is passed to the op)."""
    rank, world = group_rank_world(group)
    head_num = _int("head_num", head_num)
    if not isinstance(input_layout, str) or input_layout.upper() not in _LAYOUTS:
        raise ValueError(f"input_layout={input_layout!r} is not supported by context_parallel_attention: use one of "
                         f"{_LAYOUTS}")
    layout = input_layout.upper()
    if algo not in ALGOS:
        raise ValueError(f"algo={algo!r} is not supported: use one of {ALGOS}")
    if load_balance not in LOAD_BALANCES:
        raise ValueError(f"load_balance={load_balance!r} is not supported: use one of {LOAD_BALANCES}")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    if not isinstance(deterministic, bool):
        raise TypeError(f"deterministic must be a bool, got {type(deterministic).__name__}")
    if isinstance(keep_prob, bool) or not isinstance(keep_prob, numbers.Real) or not 0.0 < keep_prob <= 1.0:
        raise ValueError(f"keep_prob={keep_prob!r} must be a float in (0, 1]")
    if seed is not None:
        seed = _int("seed", seed)
    window = _window(window_size)
    bsh = layout == "BSH"
    if bsh:
        d = query.shape[-1] // head_num if query.dim() == 3 and head_num > 0 else 1
        query, key, value = _as_bsnd(query, head_num, None), _as_bsnd(key, None, d), _as_bsnd(value, None, d)
        layout = "BSND"
    n1, n2 = _heads(query, key, value, head_num, layout)
    if scale is None:
        scale = query.shape[-1] ** -0.5
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not math.isfinite(scale):
        raise ValueError(f"scale={scale!r} must be a finite number (or None for D**-0.5)")
    dim = SEQ_DIM[layout]
    if key.shape[dim] != query.shape[dim] or value.shape[dim] != query.shape[dim]:
        raise ValueError(f"query, key and value hold {query.shape[dim]}, {key.shape[dim]} and {value.shape[dim]} "
                         "tokens: context parallelism shards one sequence for queries and keys alike "
                         "(self-attention)")
    pieces = 2 * world if load_balance == "zigzag" else world
    if layout == "TND":
        if cu_seqlens is None:
            raise ValueError("input_layout='TND' needs cu_seqlens (the global cumulative lengths, leading 0)")
        cu = check_cu_seqlens(cu_seqlens, pieces)
        if cu[-1] != query.shape[0] * world:
            raise ValueError(f"cu_seqlens={cu} ends at {cu[-1]} but this rank holds {query.shape[0]} tokens, "
                             f"{query.shape[0] * world} over the world size {world}: pass the global cu_seqlens of "
                             "the sequences shard_sequence cut for this group")
        lengths = tuple(cu[b + 1] - cu[b] for b in range(len(cu) - 1))
        sh = Sharding(lengths, world, load_balance)
    else:
        if cu_seqlens is not None:
            raise ValueError(f"cu_seqlens is for input_layout='TND', got input_layout={input_layout!r}")
        if (query.shape[dim] * world) % pieces:
            raise ValueError(f"query holds {query.shape[dim]} tokens on each of {world} ranks, which does not split "
                             f"into {pieces} equal chunks ({load_balance}): shard a sequence whose length is a "
                             f"multiple of {pieces}")
        sh = Sharding((query.shape[dim] * world,), world, load_balance)
    _same_local_length(query.shape[dim], group, world)
    if sink is not None:
        if not isinstance(sink, torch.Tensor) or sink.dtype != torch.float32 or tuple(sink.shape) != (n1,):
            raise ValueError(f"sink must be a float32 tensor of shape [{n1}] (one logit per query head), got "
                             f"{getattr(sink, 'dtype', type(sink).__name__)} {tuple(getattr(sink, 'shape', ()))}")
        sink = SumOverRanks.apply(sink, group)
    alibi = check_alibi_slopes(alibi_slopes, query, n1)
    if alibi is not None:
        batches = len(sh.lengths) if layout == "TND" else query.shape[0]
        if alibi.dim() == 2 and alibi.shape[0] != batches:
            raise ValueError(f"alibi_slopes shape {tuple(alibi.shape)} must be [{n1}] or [{batches}, {n1}]: one slope "
                             f"per query head{' and sequence' if layout == 'TND' else ' and batch'}")
    vis = Visibility.of(sh.lengths, sh.lengths, causal, window)
    if keep_prob < 1.0:
        odd = [c for r in range(world) for c in sh.part([r]) if c.length % 2]
        if odd:
            raise ValueError(f"keep_prob={keep_prob} under context parallelism needs chunks of even length (keep bits "
                             f"are drawn for column pairs), got a chunk of {odd[0].length} tokens ({load_balance} "
                             f"over {pieces} chunks): use sequence lengths that are multiples of {2 * pieces}")
        seed = _shared_seed(seed, group)
    spec = OpSpec(head_num, layout, float(scale), softcap, deterministic, float(keep_prob), seed or 0, alibi=alibi)
    if algo == "ring":
        parts = tuple(sh.part([r]) for r in range(world))
        out = ring_attention(query, key, value, sink, RingSetup(group, parts, vis, spec))[0]
    elif algo == "ulysses":
        if ulysses_degree is not None and ulysses_degree != world:
            raise ValueError(f"algo='ulysses' uses the whole group: ulysses_degree={ulysses_degree} must be None or "
                             f"the world size {world} (use algo='hybrid' for a smaller degree)")
        check_heads(n1, n2, world, "algo='ulysses'")
        out = ulysses_attention(query, key, value, sink, sh, vis, spec, group)
    elif algo == "hybrid":
        degree = _int("ulysses_degree", ulysses_degree) if ulysses_degree is not None else None
        if degree is None or degree < 1 or world % degree:
            raise ValueError(f"algo='hybrid' needs ulysses_degree, a divisor of the world size {world} (the ranks "
                             f"of each all-to-all; the ring runs across world / degree of them), got {ulysses_degree}")
        check_heads(n1, n2, degree, f"algo='hybrid' with ulysses_degree={degree}")
        out = hybrid_attention(query, key, value, sink, sh, vis, spec, group, degree)
    else:
        out = allgather_attention(query, key, value, sink, sh, vis, spec, group)
    return out.reshape(out.shape[0], out.shape[1], -1) if bsh else out
