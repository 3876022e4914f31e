"""The dropout keep-mask the kernels generate, reproduced on the host (numpy), and the user `dropout_mask` format.

Generated mask (keep_prob < 1 without a `dropout_mask`): element (b, n, i, j) -- batch (TND: sequence), query head,
query row and key column, positions inside the sequence -- is kept iff ``h_j < round(keep_prob * 2**16) - 2**15``,
h_j the signed 16-bit half j % 2 (0 = low) of a per-row keyed 32-bit hash of the column pair k = j // 2::

    k0  = mix64(mix64(seed) ^ offset)                       (seed, offset as unsigned 64-bit)
    key = mix64(k0 ^ ((b * N1 + n) << 32 | i))               one 64-bit key per query row
    m   = (key >> 32) | 1,  a = key mod 2**32                an odd multiplier and an offset
    x   = (k * m + a) mod 2**32
    x ^= x >> 16;  x *= 0x7feb352d;  x ^= x >> 15;  x *= 0x846ca68b;  x ^= x >> 16   (mod 2**32)

mix64 is SplitMix64's finaliser, the last line Wellons' lowbias32. The mask depends on nothing else: not on the
chip, the core count, the tiling or the layout, so the same (seed, offset) gives bitwise the same result everywhere,
forward and backward. Kept probabilities are scaled by 1 / keep_prob (the built-in's convention);
softmax_max/softmax_sum describe the softmax before dropout. The keep rate is round(keep_prob * 2**16) / 2**16
(within 8e-6 of keep_prob). A call given `dropout_origin=[row, col, head, heads]` draws the bits of its place in a
larger problem: (b, n, i, j) above become (head index b * heads + head + n, row + i, column col + j).

User mask (`dropout_mask`, the built-in's format): uint8, 8 elements per byte (element e is bit e % 8 of byte e // 8,
1 = keep), flattened over [B, N1, S1, S2] (TND: over each sequence's [N1, Sq, Skv] in turn), at least
ceil(elements / 8) bytes. The kernels read it as rows of whole bytes in the statistics' row order; when S2 is not a
multiple of 8 (or for TND) the host repacks it into that form first (`kernel_rows`).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import torch

__all__ = ["keep_mask", "keep_threshold", "seed_key", "mask_elements", "unpack_mask", "kernel_rows",
           "draw_seed", "KEY_BITS"]

KEY_BITS = 16  # keep decisions compare a signed 16-bit half of a hash
_M64 = (1 << 64) - 1


def _mix64(z: np.ndarray) -> np.ndarray:
    z = z.astype(np.uint64)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def seed_key(seed: int, offset: int) -> int:
    """k0 of (seed, offset), as the host tiling passes it to the kernels."""
    s = _mix64(np.array([seed & _M64], dtype=np.uint64))
    return int(_mix64(s ^ np.uint64(offset & _M64))[0])


def keep_threshold(keep_prob: float) -> int:
    """Elements whose signed 16-bit hash half is below this are kept (keep_prob at float precision, as the kernels
    get it)."""
    return int(float(np.float32(keep_prob)) * (1 << KEY_BITS) + 0.5) - (1 << (KEY_BITS - 1))


def keep_mask(seed: int, offset: int, keep_prob: float, n1: int, batch: int, heads: Sequence[int] | int,
              rows: int, cols: int) -> torch.Tensor:
    """Bool keep-mask [len(heads), rows, cols] of sequence `batch`, query heads `heads`, rows/columns from 0 (the
    positions inside the sequence), exactly as the kernels generate it."""
    heads = [heads] if isinstance(heads, int) else list(heads)
    k0 = np.uint64(seed_key(seed, offset))
    hn = np.array([(batch * n1 + h) for h in heads], dtype=np.uint64)[:, None]
    i = np.arange(rows, dtype=np.uint64)[None, :]
    key = _mix64(k0 ^ ((hn << np.uint64(32)) | i))                                   # [heads, rows]
    m = ((key >> np.uint64(32)) | np.uint64(1)).astype(np.uint32)[..., None]
    a = (key & np.uint64(0xFFFFFFFF)).astype(np.uint32)[..., None]
    k = np.arange((cols + 1) // 2, dtype=np.uint32)[None, None, :]
    with np.errstate(over="ignore"):
        x = k * m + a
        x ^= x >> np.uint32(16)
        x *= np.uint32(0x7FEB352D)
        x ^= x >> np.uint32(15)
        x *= np.uint32(0x846CA68B)
        x ^= x >> np.uint32(16)
    halves = np.ascontiguousarray(x.astype("<u4")).view("<i2")[..., :cols]           # column j: half j % 2
    return torch.from_numpy(halves < keep_threshold(keep_prob))


def mask_elements(batch_shapes: Sequence[tuple[int, int]], n1: int) -> int:
    """Elements a user dropout mask covers: sum over sequences of N1 * Sq * Skv."""
    return sum(n1 * sq * skv for sq, skv in batch_shapes)


def unpack_mask(mask: torch.Tensor, n1: int, batch_shapes: Sequence[tuple[int, int]]) -> list[torch.Tensor]:
    """A user bit mask -> one bool [N1, Sq, Skv] keep tensor per sequence."""
    flat = np.unpackbits(mask.contiguous().view(-1).cpu().numpy(), bitorder="little")
    out, pos = [], 0
    for sq, skv in batch_shapes:
        e = n1 * sq * skv
        out.append(torch.from_numpy(flat[pos:pos + e].reshape(n1, sq, skv).astype(bool)))
        pos += e
    return out


def kernel_rows(mask: torch.Tensor, n1: int, batch_shapes: Sequence[tuple[int, int]], pitch: int) -> torch.Tensor:
    """A user mask repacked into the kernels' form: uint8 rows of `pitch` bytes (bit c of a row = key column c) in
    the statistics' row order (non-TND [B, N1, S1]; TND each sequence's [N1, Sq] after the previous one). The
    problem (problem.validate_flash_attention) says when a mask needs it (TND or S2 % 8 != 0) and the pitch."""
    parts = []
    for keep in unpack_mask(mask, n1, batch_shapes):
        nh, sq, skv = keep.shape
        padded = np.zeros((nh, sq, pitch * 8), dtype=np.uint8)
        padded[..., :skv] = keep.numpy()
        parts.append(np.packbits(padded, axis=-1, bitorder="little").reshape(-1))
    data = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)
    return torch.from_numpy(np.ascontiguousarray(data))


def draw_seed() -> int:
    """A fresh seed from torch's default CPU generator, for callers that pass none (the drop-in interfaces, whose
    originals draw theirs from the device generator): `torch.manual_seed` makes their dropout reproducible."""
    return int(torch.randint(0, (1 << 63) - 1, (), dtype=torch.int64))
