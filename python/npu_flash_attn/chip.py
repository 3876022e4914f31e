"""Which chip the CPU twin emulates: set_chip(name) > $NPU_FA_CHIP > Ascend910B2 (logged once per chip and source)."""
from __future__ import annotations

import logging
import os
import threading
from typing import Any, Optional

from . import twin_backend

__all__ = ["DEFAULT_CHIP", "available_chips", "set_chip", "get_chip"]

DEFAULT_CHIP = "Ascend910B2"
_lock = threading.Lock()
_chip_override: Optional[str] = None
_log = logging.getLogger("npu_flash_attn")
_logged_chips: set[tuple[str, str]] = set()


def available_chips() -> list[str]:
    """Names of the chips the twin can emulate (from `_C.chips()`)."""
    return [c["name"] for c in twin_backend.ext().chips()]


def _check_chip(name: Any, source: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"{source} must be a chip name string, got {type(name).__name__}")
    names = available_chips()
    if name not in names:
        raise ValueError(f"{source}={name!r} is not an emulated chip; choose one of {names}")
    return name


def set_chip(name: Optional[str]) -> None:
    """Select the chip the CPU twin emulates for following launches; None restores the default (env NPU_FA_CHIP,
    else Ascend910B2). Raises ValueError for names not in `_C.chips()`."""
    global _chip_override
    checked = None if name is None else _check_chip(name, "chip")
    with _lock:
        _chip_override = checked


def get_chip() -> str:
    """The chip used by the next CPU launch: set_chip(...) > $NPU_FA_CHIP > Ascend910B2."""
    with _lock:
        override = _chip_override
    if override is not None:
        return _note_chip(override, "set_chip")
    env = os.environ.get("NPU_FA_CHIP")
    if env:
        return _note_chip(_check_chip(env, "environment variable NPU_FA_CHIP"), "NPU_FA_CHIP")
    return _note_chip(DEFAULT_CHIP, "the default")


def _note_chip(chip: str, source: str) -> str:
    """Logs (INFO, once per chip and source) which chip the CPU twin emulates and why."""
    if (chip, source) not in _logged_chips:
        _logged_chips.add((chip, source))
        _log.info("CPU twin emulates %s (chosen by %s)", chip, source)
    return chip
