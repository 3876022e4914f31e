"""Varlen (TND) sequence bookkeeping: the cumulative length lists the ops take and the per-sequence shapes they
describe."""
from __future__ import annotations

import operator
from typing import Any, Sequence

__all__ = ["as_int", "lengths", "normalize_cumulative", "sequence_shapes"]


def as_int(name: str, v: Any) -> int:
    if isinstance(v, bool):
        raise TypeError(f"{name} must be an int, got bool {v!r}")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}") from None


def lengths(cu: Sequence[int]) -> list[int]:
    prev, out = 0, []
    for c in cu:
        out.append(c - prev)
        prev = c
    return out


def normalize_cumulative(name: str, seq: Sequence[Any]) -> list[int]:
    """Checks one cumulative list; returns its enabled prefix (trailing zeros after a positive value dropped)."""
    vals = [as_int(f"{name}[{i}]", x) for i, x in enumerate(seq)]
    if not vals:
        raise ValueError(f"{name} must not be empty for input_layout='TND' (one cumulative entry per batch)")
    last_pos = max((i for i, x in enumerate(vals) if x > 0), default=None)
    enabled = vals if last_pos is None else vals[:last_pos + 1]
    tail = vals[len(enabled):]
    if any(x != 0 for x in tail):  # cannot happen by construction; kept as a guard
        raise ValueError(f"{name}={vals}: only zeros may follow the last sequence (disabled batches)")
    prev = 0
    for i, x in enumerate(enabled):
        if x < 0:
            raise ValueError(f"{name}={vals}: entry {i} is {x}; cumulative lengths must be >= 0")
        if x < prev:
            raise ValueError(f"{name}={vals}: entry {i} ({x}) is smaller than entry {i - 1} ({prev}); the list must be "
                             "cumulative (non-decreasing), with trailing zeros only to disable the last batches")
        prev = x
    return enabled


def sequence_shapes(layout: str, B, S1, S2, cu_q: Sequence[int], cu_kv: Sequence[int]) -> list[tuple[int, int]]:
    """(Sq, Skv) of every sequence: the TND lengths, else B times (S1, S2)."""
    return list(zip(lengths(cu_q), lengths(cu_kv))) if layout == "TND" else [(S1, S2)] * B
