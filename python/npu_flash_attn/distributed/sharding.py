"""How one sequence is cut across the ranks of a context-parallel group, and `shard_sequence` / `unshard_sequence`.

A sequence of length L is cut into `pieces` equal chunks: "zigzag" (2 * world chunks; rank r holds chunks r and
2 * world - 1 - r, so causal work is balanced) or "contiguous" (world chunks; rank r holds chunk r). TND input
(`cu_seqlens`, global and with a leading 0) cuts every sequence the same way; a rank's local tensor holds, sequence
after sequence, its chunks of that sequence."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Union

import torch
import torch.distributed as dist

__all__ = ["Chunk", "Sharding", "LOAD_BALANCES", "shard_sequence", "unshard_sequence", "check_cu_seqlens",
           "group_rank_world"]

LOAD_BALANCES = ("zigzag", "contiguous")


@dataclass(frozen=True)
class Chunk:
    """A run of one sequence's tokens held together in some buffer: global positions [start, start + length) of
    sequence `seq`, at rows [local, local + length) of the buffer's sequence dimension."""
    seq: int
    start: int
    length: int
    local: int


def group_rank_world(group) -> tuple[int, int]:
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("npu_flash_attn.distributed needs an initialized torch.distributed process group "
                           "(torch.distributed.init_process_group)")
    return dist.get_rank(group), dist.get_world_size(group)


def _check_load_balance(load_balance: str) -> None:
    if load_balance not in LOAD_BALANCES:
        raise ValueError(f"load_balance={load_balance!r} is not supported: use one of {LOAD_BALANCES}")


def check_cu_seqlens(cu_seqlens, pieces: int, *, what: str = "cu_seqlens") -> list[int]:
    """The cumulative lengths as ints: an int list or 1-D integer tensor with a leading 0, non-decreasing, every
    sequence length divisible by `pieces` (the number of chunks a sequence is cut into)."""
    if isinstance(cu_seqlens, torch.Tensor):
        if cu_seqlens.dim() != 1 or cu_seqlens.is_floating_point() or cu_seqlens.dtype == torch.bool:
            raise ValueError(f"{what} must be a 1-D integer tensor or an int list, got a tensor of shape "
                             f"{tuple(cu_seqlens.shape)} and dtype {cu_seqlens.dtype}")
        cu = [int(c) for c in cu_seqlens.tolist()]
    else:
        try:
            cu = [int(c) for c in cu_seqlens]
        except TypeError:
            raise ValueError(f"{what} must be an int list or a 1-D integer tensor, got {type(cu_seqlens).__name__}")
        if any(isinstance(c, bool) or int(c) != c for c in cu_seqlens):
            raise ValueError(f"{what}={list(cu_seqlens)!r} must hold ints")
    if len(cu) < 2 or cu[0] != 0:
        raise ValueError(f"{what}={cu} must start with 0 and hold at least one sequence (cumulative lengths with a "
                         "leading 0, e.g. [0, 5, 12])")
    for b in range(len(cu) - 1):
        n = cu[b + 1] - cu[b]
        if n < 0:
            raise ValueError(f"{what}={cu} must be non-decreasing (sequence {b} has length {n})")
        if n % pieces:
            raise ValueError(f"{what}={cu}: sequence {b} has length {n}, which does not split into {pieces} equal "
                             "chunks (each sequence's length must be a multiple of the number of chunks: 2 * world "
                             "for zigzag, world for contiguous; pad the sequences)")
    return cu


@dataclass(frozen=True)
class Sharding:
    """The cut of the global sequences (one length per sequence; one sequence without cu_seqlens) over `world`
    ranks."""
    lengths: tuple[int, ...]
    world: int
    load_balance: str

    @property
    def pieces(self) -> int:
        return 2 * self.world if self.load_balance == "zigzag" else self.world

    def chunk_ids(self, rank: int) -> tuple[int, ...]:
        return (rank, 2 * self.world - 1 - rank) if self.load_balance == "zigzag" else (rank,)

    def local_total(self) -> int:
        return sum(self.lengths) // self.world

    def part(self, ranks: Sequence[int]) -> tuple[Chunk, ...]:
        """The chunks ranks `ranks` hold, laid out as their local tensors concatenated in that order along the
        sequence dimension, each rank's tensor grouped by sequence (zero-length chunks left out)."""
        out, local = [], 0
        for rank in ranks:
            for b, n in enumerate(self.lengths):
                c = n // self.pieces
                for idx in self.chunk_ids(rank):
                    if c:
                        out.append(Chunk(b, idx * c, c, local))
                    local += c
        return tuple(out)

    def regrouped(self, ranks: Sequence[int]) -> tuple[Chunk, ...]:
        """The chunks of `ranks` laid out sequence by sequence (all of sequence 0's chunks, in rank order, then
        sequence 1's, ...): the per-sequence order TND calls need after a gather."""
        out, local = [], 0
        for b, n in enumerate(self.lengths):
            c = n // self.pieces
            for rank in ranks:
                for idx in self.chunk_ids(rank):
                    if c:
                        out.append(Chunk(b, idx * c, c, local))
                    local += c
        return tuple(out)

    def natural(self) -> tuple[Chunk, ...]:
        """Every chunk, sequence by sequence in global order (the unsharded layout)."""
        out, local = [], 0
        for b, n in enumerate(self.lengths):
            c = n // self.pieces
            for idx in range(self.pieces):
                if c:
                    out.append(Chunk(b, idx * c, c, local))
                local += c
        return tuple(out)


def permutation(src: Sequence[Chunk], dst: Sequence[Chunk]) -> torch.Tensor:
    """Index i such that buffer_dst = buffer_src.index_select(dim, i), for two layouts of the same chunks."""
    where = {(c.seq, c.start): c.local for c in src}
    idx = [torch.arange(where[(c.seq, c.start)], where[(c.seq, c.start)] + c.length) for c in dst]
    return torch.cat(idx) if idx else torch.zeros(0, dtype=torch.int64)


def _sharding(x: torch.Tensor, seq_dim: int, world: int, load_balance: str, cu_seqlens, *, local: bool):
    _check_load_balance(load_balance)
    if not -x.dim() <= seq_dim < x.dim():
        raise ValueError(f"seq_dim={seq_dim} is out of range for a tensor of shape {tuple(x.shape)}")
    pieces = 2 * world if load_balance == "zigzag" else world
    total = x.shape[seq_dim] * (world if local else 1)
    if cu_seqlens is None:
        if total % pieces:
            raise ValueError(f"sequence length {total} (dim {seq_dim} of shape {tuple(x.shape)}"
                             f"{' times world' if local else ''}) does not split into {pieces} equal chunks "
                             f"({load_balance}, world {world}); pad the sequence to a multiple of {pieces}")
        return Sharding((total,), world, load_balance)
    cu = check_cu_seqlens(cu_seqlens, pieces)
    if cu[-1] != total:
        raise ValueError(f"cu_seqlens ends at {cu[-1]} but the {'global ' if local else ''}token count is {total} "
                         f"(dim {seq_dim} of shape {tuple(x.shape)}{', times world ' + str(world) if local else ''})")
    return Sharding(tuple(cu[b + 1] - cu[b] for b in range(len(cu) - 1)), world, load_balance)


def _local_cu(cu_seqlens, sh: Sharding):
    cu = [0]
    for n in sh.lengths:
        cu.append(cu[-1] + n // sh.world)
    if isinstance(cu_seqlens, torch.Tensor):
        return torch.tensor(cu, dtype=torch.int32, device=cu_seqlens.device)
    return cu


def shard_sequence(x: torch.Tensor, group=None, *, seq_dim: int, load_balance: str = "zigzag",
                   cu_seqlens: Optional[Union[Sequence[int], torch.Tensor]] = None):
    """This rank's part of the global tensor `x` along `seq_dim` (see the module docstring). With `cu_seqlens`
    (global, leading 0) returns (x_local, cu_seqlens_local), the local list in the input's kind (list or int32
    tensor)."""
    rank, world = group_rank_world(group)
    sh = _sharding(x, seq_dim, world, load_balance, cu_seqlens, local=False)
    idx = permutation(sh.natural(), sh.part([rank])).to(x.device)
    x_local = x.index_select(seq_dim, idx)
    return x_local if cu_seqlens is None else (x_local, _local_cu(cu_seqlens, sh))


def unshard_sequence(x_local: torch.Tensor, group=None, *, seq_dim: int, load_balance: str = "zigzag",
                     cu_seqlens: Optional[Union[Sequence[int], torch.Tensor]] = None) -> torch.Tensor:
    """The inverse of `shard_sequence`: all-gathers every rank's part and puts the chunks back in global order
    (`cu_seqlens` is the global list). Not differentiable."""
    rank, world = group_rank_world(group)
    sh = _sharding(x_local, seq_dim, world, load_balance, cu_seqlens, local=True)
    parts = [torch.empty_like(x_local) for _ in range(world)]
    dist.all_gather(parts, x_local.detach().contiguous(), group=group)
    gathered = torch.cat(parts, dim=seq_dim)
    idx = permutation(sh.part(range(world)), sh.natural()).to(x_local.device)
    return gathered.index_select(seq_dim, idx)
