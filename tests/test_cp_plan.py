"""The context-parallel planner (npu_flash_attn.distributed.plan) without processes: over all ring steps, the
elements its calls' bands keep are exactly the global mask's visible (query, key) pairs, each once; no call keeps
nothing and a step whose key chunks a rank cannot see launches no call (the contract's "blocks skipped under
causal or a window are never launched"); calls for dropout / ALiBi each cover one run of global rows and columns."""
from __future__ import annotations

import itertools

import pytest
import torch

from npu_flash_attn.distributed.plan import Visibility, plan_calls
from npu_flash_attn.distributed.sharding import Sharding

INT32_MAX = 2147483647


def _global(part, index):
    """Global (sequence, position) of each buffer row in `index`."""
    where = {}
    for c in part:
        for i in range(c.length):
            where[c.local + i] = (c.seq, c.start + i)
    return [where[int(i)] for i in index]


def _kept(call, q_part, kv_part):
    """The global (seq, i, j) the call's band keeps (the op's sparse mode 0 or 4, bottom-right, per sequence)."""
    out, r0, c0 = [], 0, 0
    rows, cols = _global(q_part, call.row_index()), _global(kv_part, call.col_index())
    for sub in call.subs:
        d = sub.lk - sub.lq
        for a in range(sub.lq):
            for b in range(sub.lk):
                if call.sparse_mode == 4 and not (d - call.pre_tokens <= b - a <= d + call.next_tokens):
                    continue
                (s, i), (s2, j) = rows[r0 + a], cols[c0 + b]
                assert s == s2, "a call mixes sequences within one sub-call"
                out.append((s, i, j))
        r0, c0 = r0 + sub.lq, c0 + sub.lk
    return out


def _visible(lengths, causal, window):
    left, right = window or (-1, -1)
    out = set()
    for s, n in enumerate(lengths):
        for i, j in itertools.product(range(n), repeat=2):
            if (left < 0 or j >= i - left) and (right < 0 or j <= i + right) and (not causal or j <= i):
                out.add((s, i, j))
    return out


@pytest.mark.parametrize("world,load_balance,lengths", [(4, "zigzag", (48,)), (3, "contiguous", (24,)),
                                                         (2, "zigzag", (8, 16, 4))])
@pytest.mark.parametrize("causal,window", [(True, None), (False, None), (False, (5, 2)), (True, (9, -1))])
@pytest.mark.parametrize("one_run", [False, True])
def test_ring_calls_keep_each_visible_pair_once_and_launch_nothing_invisible(world, load_balance, lengths, causal,
                                                                             window, one_run):
    sh = Sharding(lengths, world, load_balance)
    vis = Visibility.of(lengths, lengths, causal, window)
    varlen = len(lengths) > 1
    parts = [sh.part([r]) for r in range(world)]
    kept, want = [], _visible(lengths, causal, window)
    for r, src in itertools.product(range(world), repeat=2):
        calls = plan_calls(parts[r], parts[src], vis, varlen, one_run)
        mine = {(s, i, j) for s, i, j in want if any(c.seq == s and c.start <= i < c.start + c.length
                                                     for c in parts[r])
                and any(c.seq == s and c.start <= j < c.start + c.length for c in parts[src])}
        if not mine:
            assert calls == [], f"rank {r} sees nothing of rank {src}'s keys but launches {calls}"
        for call in calls:
            k = _kept(call, parts[r], parts[src])
            assert k, f"a call that keeps nothing: {call}"
            kept += k
            if one_run:  # the dropout origin / ALiBi start indices: first global row and column, then runs
                sub = call.subs[0]
                rows = [i for _, i in _global(parts[r], call.row_index())]
                cols = [j for _, j in _global(parts[src], call.col_index())]
                assert len(call.subs) == 1 and rows == list(range(sub.q0, sub.q0 + len(rows)))
                assert cols == list(range(sub.k0, sub.k0 + len(cols)))
    assert len(kept) == len(set(kept)), "a visible pair is computed twice"
    assert set(kept) == want


def test_zigzag_causal_ring_calls_are_balanced():
    """Zigzag gives every rank the same causal work at every step (S = 64, 4 ranks: 2 chunks of 8 per rank)."""
    sh = Sharding((64,), 4, "zigzag")
    vis = Visibility.of((64,), (64,), True, None)
    parts = [sh.part([r]) for r in range(4)]
    for t in range(4):
        per_rank = [sum(len(_kept(c, parts[r], parts[(r - t) % 4]))
                        for c in plan_calls(parts[r], parts[(r - t) % 4], vis, False)) for r in range(4)]
        assert len(set(per_rank)) == 1 and per_rank[0] > 0, f"step {t}: per-rank work {per_rank}"
