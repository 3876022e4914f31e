"""Progress lines for long CPU-twin runs and sweeps, on stderr.

Two forms, one line format (`line`)::

    [npu_flash_attn] forward launch: 12.0 s elapsed, about 30 s left (estimate)
    [npu_flash_attn] sweep 3/10 (30 %): 41.5 s elapsed, ETA 96.8 s: S=8192 D=128

* `Sweep(total, label)`: a loop of known length (benchmarks, grids); `step(what)` after each item prints the count,
  the elapsed time and the ETA from the mean time per item so far.
* `launch(label, flops, kind)`: a context manager around one twin kernel launch; if the launch is still running
  after `first` seconds it prints every `every` seconds from a background thread (the launch releases the GIL),
  with a time-left estimate from the twin's speed (FLOP per second) on this process's earlier launches of the same
  kind ("forward", "backward").

Printed when stderr is a terminal, or always with NPU_FA_PROGRESS=1; never with NPU_FA_PROGRESS=0.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import Iterator, Optional, TextIO

__all__ = ["enabled", "line", "Sweep", "launch"]

PREFIX = "[npu_flash_attn]"
_rate_lock = threading.Lock()
_twin_flops_per_s: dict[str, float] = {}  # per kind of launch: measured on this process's finished launches


def enabled(stream: Optional[TextIO] = None) -> bool:
    """Whether progress lines are printed (see the module docstring)."""
    env = os.environ.get("NPU_FA_PROGRESS")
    if env in ("0", "1"):
        return env == "1"
    stream = sys.stderr if stream is None else stream
    return bool(getattr(stream, "isatty", lambda: False)())


def _secs(s: float) -> str:
    return f"{s:.1f} s" if s < 600 else f"{s / 60:.1f} min"


def line(label: str, elapsed: float, *, done: Optional[int] = None, total: Optional[int] = None,
         left: Optional[float] = None, estimate: bool = False, what: str = "") -> str:
    """One progress line (without newline)."""
    head = f"{PREFIX} {label}"
    if done is not None and total:
        head += f" {done}/{total} ({100 * done // total} %)"
    text = f"{head}: {_secs(elapsed)} elapsed"
    if left is not None:
        text += f", about {_secs(left)} left (estimate)" if estimate else f", ETA {_secs(left)}"
    return text + (f": {what}" if what else "")


class Sweep:
    """Progress of a loop over `total` items: call `step(what)` after each one."""

    def __init__(self, total: int, label: str = "sweep", stream: Optional[TextIO] = None):
        self.total, self.label, self.done = total, label, 0
        self.stream = sys.stderr if stream is None else stream
        self.on = enabled(self.stream)
        self.t0 = time.perf_counter()

    def step(self, what: str = "") -> None:
        self.done += 1
        if not self.on:
            return
        el = time.perf_counter() - self.t0
        left = el / self.done * (self.total - self.done)
        print(line(self.label, el, done=self.done, total=self.total, left=left, what=what), file=self.stream,
              flush=True)


@contextlib.contextmanager
def launch(label: str, flops: float, kind: str, *, first: float = 5.0, every: float = 10.0,
           stream: Optional[TextIO] = None) -> Iterator[None]:
    """Around one twin launch of about `flops` floating-point operations (see the module docstring)."""
    stream = sys.stderr if stream is None else stream
    stop = threading.Event()
    t0 = time.perf_counter()

    def beat():
        wait = first
        while not stop.wait(wait):
            el = time.perf_counter() - t0
            with _rate_lock:
                rate = _twin_flops_per_s.get(kind)
            left = None if rate is None else max(flops / rate - el, 0.0)
            print(line(label, el, left=left, estimate=True), file=stream, flush=True)
            wait = every

    th = threading.Thread(target=beat, daemon=True) if enabled(stream) else None
    if th is not None:
        th.start()
    try:
        yield
    finally:
        stop.set()
        if th is not None:
            th.join()
    el = time.perf_counter() - t0
    if flops > 0 and el > 0.05:  # too short a launch says more about overheads than about the twin's speed
        with _rate_lock:
            r, old = flops / el, _twin_flops_per_s.get(kind)
            _twin_flops_per_s[kind] = r if old is None else 0.5 * (old + r)
