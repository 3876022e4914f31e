"""Argument checks of the drop-in interfaces, in the spelling of the API the user called.

The drop-ins translate their arguments into the op's (`softmax_scale` -> `scale`, `alibi_slopes` -> `pse`,
`cu_seqlens_q` -> `actual_seq_qlen`, ...), so the op's own messages would name arguments the user never passed. Every
argument a drop-in translates is therefore checked here first, by its own name: the type (a string, a bool or a
tensor where a number belongs is refused, as is a number where a bool belongs), the value and the rule."""
from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Optional

import torch

from ..dispatch import describe, is_fake, seed_value, value_checks

__all__ = ["real", "flag", "integer", "seed_value", "optional_tensor", "check_finite_values", "require"]


def real(name: str, v: Any, *, rule: str = "") -> float:
    """A Python int or float (not a bool, a string or a tensor), finite; returned as float."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a float, got {describe(v)}")
    x = float(v)
    if not -math.inf < x < math.inf:  # not math.isfinite: torch.compile cannot trace it on a symbolic float
        raise ValueError(f"{name}={x} must be finite{rule}")
    return x


def flag(name: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError(f"{name} must be a bool, got {describe(v)}")
    return v


def integer(name: str, v: Any) -> int:
    if isinstance(v, torch.SymInt):  # a size under torch.compile or torch.export: kept symbolic
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {describe(v)}")
    return int(v)


def optional_tensor(name: str, t: Any, like: torch.Tensor, like_name: str) -> Optional[torch.Tensor]:
    """None or a tensor on `like`'s device."""
    if t is None:
        return None
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or None, got {describe(t)}")
    if t.device != like.device:
        raise ValueError(f"{name} is on device {t.device} but {like_name} is on {like.device}; all tensors must be "
                         "on the same device")
    return t


def check_finite_values(name: str, t: torch.Tensor, *, allow_neg_inf: bool = False, rule: str = "") -> None:
    """Raises naming the first NaN (or +-inf) of `t` (skipped for fake tensors, and on the NPU unless
    NPU_FA_CHECK_VALUES=1, as every data check)."""
    if is_fake(t) or not value_checks(t.device):
        return
    bad = torch.isnan(t) | (torch.isposinf(t) if allow_neg_inf else torch.isinf(t))
    if bool(bad.any()):
        idx = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(f"{name} contains {t[idx].item()} at index {idx}{rule}")


def require(cond: Any, rule: str, message: Callable[[], str]) -> None:
    """ValueError `message()` when `cond` is False. While torch.compile or torch.export traces, a ValueError stating
    `rule`, or, when `cond` is symbolic (values read from a tensor), a run-time assertion of the graph."""
    if torch.compiler.is_compiling() or isinstance(cond, torch.SymBool):
        torch._check_with(ValueError, cond, lambda: rule)
    elif not cond:
        raise ValueError(message())
