"""Which kernel calls a rank makes for its query chunks against a set of key/value chunks, under the global mask.

The mask of the whole problem is a band on the global positions of each sequence: key j is visible to query i when
j - i lies in [lo, hi] (`Visibility`; causal, windows and full attention are such bands). A chunk pair is empty,
full or partial. A call takes some query chunks (rows) and some key chunks (columns), concatenated in buffer order,
and must reproduce every pair's visibility with one band of the op (sparse_mode 4 in call coordinates, or 0 when
nothing is masked). The planner tries all visible pairs of a sequence in one call, then one call per query chunk,
then one call per pair; pairs with nothing visible are never launched. TND calls group sequences whose bands agree
(their rows disjoint), so a step is one varlen launch in the common cases. `contiguous` (dropout and ALiBi, which
place a call by its first global row and column): a call's rows must be one run of global positions and so must
its columns, and TND calls hold one sequence."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import torch

from .sharding import Chunk

__all__ = ["Visibility", "Call", "plan_calls", "INT32_MAX"]

INT32_MAX = 2147483647
_INF = 1 << 62


@dataclass(frozen=True)
class Visibility:
    """Key j of sequence b is visible to query i when lo[b] <= j - i <= hi[b] (global positions)."""
    lo: tuple[int, ...]
    hi: tuple[int, ...]

    @staticmethod
    def of(q_lengths: Sequence[int], kv_lengths: Sequence[int], causal: bool,
           window: Optional[tuple[int, int]]) -> "Visibility":
        """flash_attn's semantics: bottom-right aligned (d = Skv - Sq), window (left, right) with -1 = unbounded,
        causal = right 0."""
        left, right = (-1, -1) if window is None else window
        los, his = [], []
        for sq, skv in zip(q_lengths, kv_lengths):
            d = skv - sq
            lo = -_INF if left < 0 else d - left
            hi = _INF if right < 0 else d + right
            if causal:
                hi = min(hi, d)
            los.append(lo)
            his.append(hi)
        return Visibility(tuple(los), tuple(his))


@dataclass(frozen=True)
class SubCall:
    """One sequence of a call: its query rows and key columns as (first, length) runs of the local buffers, the
    sequence and the global positions of its first row and first column."""
    rows: tuple[tuple[int, int], ...]
    cols: tuple[tuple[int, int], ...]
    seq: int = 0
    q0: int = 0
    k0: int = 0

    @property
    def lq(self) -> int:
        return sum(n for _, n in self.rows)

    @property
    def lk(self) -> int:
        return sum(n for _, n in self.cols)


@dataclass(frozen=True)
class Call:
    """One kernel launch: its sequences (one unless TND) and the op's mask arguments."""
    subs: tuple[SubCall, ...]
    sparse_mode: int
    pre_tokens: int
    next_tokens: int

    def mask_kwargs(self) -> dict:
        if self.sparse_mode == 0:
            return {}
        return dict(sparse_mode=self.sparse_mode, pre_tokens=self.pre_tokens, next_tokens=self.next_tokens)

    def row_index(self) -> torch.Tensor:
        return _index(r for s in self.subs for r in s.rows)

    def col_index(self) -> torch.Tensor:
        return _index(c for s in self.subs for c in s.cols)


def _index(runs) -> torch.Tensor:
    parts = [torch.arange(a, a + n) for a, n in runs]
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int64)


def _pair_range(qa: Chunk, ra: int, kc: Chunk, cb: int, vis: Visibility):
    """(J - I over the pair's cells, the visible part of it) in call coordinates (row offset ra, column offset cb);
    the visible part is None when empty."""
    rng = (cb - (ra + qa.length - 1), cb + kc.length - 1 - ra)
    shift = (kc.start - cb) - (qa.start - ra)
    w0, w1 = max(rng[0], vis.lo[qa.seq] - shift), min(rng[1], vis.hi[qa.seq] - shift)
    return rng, ((w0, w1) if w0 <= w1 else None)


def _band(rows: Sequence[Chunk], cols: Sequence[Chunk], vis: Visibility) -> Optional[tuple[int, int]]:
    """One band [lo, hi] on J - I reproducing every pair's visibility, or None."""
    pairs, ra = [], 0
    for qa in rows:
        cb = 0
        for kc in cols:
            pairs.append(_pair_range(qa, ra, kc, cb, vis))
            cb += kc.length
        ra += qa.length
    lo_exact, hi_exact, lo_max, hi_min = set(), set(), _INF, -_INF
    for rng, want in pairs:
        if want is None:
            continue
        lo_max, hi_min = min(lo_max, want[0]), max(hi_min, want[1])
        if want[0] > rng[0]:
            lo_exact.add(want[0])
        if want[1] < rng[1]:
            hi_exact.add(want[1])
    if len(lo_exact) > 1 or len(hi_exact) > 1:
        return None
    lo_opts = list(lo_exact) or [-_INF, lo_max]
    hi_opts = list(hi_exact) or [_INF, hi_min]
    for lo in lo_opts:
        for hi in hi_opts:
            if lo > lo_max or hi < hi_min:
                continue
            if all(want is not None or max(lo, rng[0]) > min(hi, rng[1]) for rng, want in pairs):
                return lo, hi
    return None


def _mode(lo: int, hi: int, lq: int, lk: int) -> tuple[int, int, int]:
    """(sparse_mode, pre_tokens, next_tokens) of the band lo <= J - I <= hi on an lq x lk call."""
    d = lk - lq
    pre = INT32_MAX if lo <= -(lq - 1) else d - lo
    nxt = INT32_MAX if hi >= lk - 1 else hi - d
    if pre == INT32_MAX and nxt == INT32_MAX:
        return 0, INT32_MAX, INT32_MAX
    return 4, min(pre, INT32_MAX), min(nxt, INT32_MAX)


def _runs(chunks: Sequence[Chunk]) -> tuple[tuple[int, int], ...]:
    runs: list[list[int]] = []
    for c in chunks:
        if runs and runs[-1][0] + runs[-1][1] == c.local:
            runs[-1][1] += c.length
        else:
            runs.append([c.local, c.length])
    return tuple((a, n) for a, n in runs)


def _visible(qa: Chunk, kc: Chunk, vis: Visibility) -> bool:
    return _pair_range(qa, 0, kc, 0, vis)[1] is not None


def _one_run(chunks: Sequence[Chunk]) -> bool:
    return all(b.start == a.start + a.length for a, b in zip(chunks, chunks[1:]))


def _sequence_calls(qs: Sequence[Chunk], ks: Sequence[Chunk], vis: Visibility, contiguous: bool):
    """[(rows, cols, (mode, pre, next))] for one sequence's chunks, taken in global order (a call's rows and columns
    may come from anywhere in the buffers): chunks that hold one run of global positions then sit together, so a
    hybrid ring member's zigzag chunks of several ranks form one causal band as one rank's two chunks do."""
    qs, ks = sorted(qs, key=lambda c: c.start), sorted(ks, key=lambda c: c.start)
    seen = {(qa, kc): _visible(qa, kc, vis) for qa in qs for kc in ks}
    rows = [qa for qa in qs if any(seen[(qa, kc)] for kc in ks)]
    cols = [kc for kc in ks if any(seen[(qa, kc)] for qa in qs)]
    if not rows:
        return []

    def planned(groups):
        bands = [_band(r, c, vis) for r, c in groups]
        ok = all(b is not None and (not contiguous or (_one_run(r) and _one_run(c))) for (r, c), b in zip(groups, bands))
        return bands if ok else None

    for groups in ([(rows, cols)],
                   [([qa], [kc for kc in cols if seen[(qa, kc)]]) for qa in rows],
                   [([qa], [kc]) for qa in rows for kc in cols if seen[(qa, kc)]]):
        bands = planned(groups)
        if bands is not None:
            break
    else:  # a single chunk pair is always one band and one run; kept as a guard against planner bugs
        raise AssertionError("context parallel planner: a chunk pair has no band")
    out = []
    for (r, c), b in zip(groups, bands):
        lq, lk = sum(x.length for x in r), sum(x.length for x in c)
        out.append((SubCall(_runs(r), _runs(c), r[0].seq, r[0].start, c[0].start), _mode(b[0], b[1], lq, lk)))
    return out


def plan_calls(q_part: Sequence[Chunk], kv_part: Sequence[Chunk], vis: Visibility, varlen: bool,
               contiguous: bool = False) -> list[Call]:
    """The launches for query chunks `q_part` against key/value chunks `kv_part` (see the module docstring)."""
    seqs = sorted({c.seq for c in q_part})
    subs = []
    for b in seqs:
        qs = [c for c in q_part if c.seq == b]
        ks = [c for c in kv_part if c.seq == b]
        subs.extend(_sequence_calls(qs, ks, vis, contiguous))
    if not varlen or contiguous:
        return [Call((s,), *m) for s, m in subs]
    calls: list[tuple[list[SubCall], tuple, set]] = []
    for s, m in subs:
        rows = set(r for r in s.rows)
        for group, mode, used in calls:
            if mode == m and not any(_overlap(r, u) for r in rows for u in used):
                group.append(s)
                used.update(rows)
                break
        else:
            calls.append(([s], m, set(rows)))
    return [Call(tuple(g), *m) for g, m, _ in calls]


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[0] + b[1] and b[0] < a[0] + a[1]
