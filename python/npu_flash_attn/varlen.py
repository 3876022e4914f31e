"""Varlen (TND) bookkeeping the Python layer still needs: int arguments and the lengths of a cumulative list (the
lists' rules are the problem module's, op_host/problem)."""
from __future__ import annotations

import operator
from typing import Any, Sequence

__all__ = ["as_int", "lengths"]


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
