"""npu_flash_attn.distributed against float64 attention over the whole sequence, in gloo process groups of 2 and 4
ranks spawned here (cp_harness.py): the four algorithms under causal, full and windowed masks, BSND / BNSD / BSH /
TND, GQA, sinks, softcap, both load balances; forward and backward (dq/dk/dv/dsink); dropout, whose reference is
one device's dropout with the same seed (a different keep decision anywhere misses the criterion by far); ALiBi
(slopes per head or per batch / sequence, the bias over global positions);
reproducibility; the argument errors. Each spawn runs many cases; the wide grid is marked slow."""
from __future__ import annotations

import itertools
import os
import random

import pytest

from cp_harness import spawn

pytestmark = pytest.mark.skipif(os.environ.get("NPU_FA_NO_SPAWN") == "1", reason="process spawning disabled")


def _seed() -> int:
    return int(os.environ.get("NPU_FA_SEED") or random.SystemRandom().randrange(1 << 30))


def _case(id_, **kw):
    base = dict(id=id_, seed=_seed(), n1=4, n2=2, d=32, s_chunks=5, layout="BSND", dtype="bf16")
    base.update(kw)
    return base


def _check(results: dict, cases: list):
    bad = {c["id"]: results[c["id"]] for c in cases if results[c["id"]][0] != "ok"}
    assert not bad, "\n".join(f"{cid} (seed {next(c['seed'] for c in cases if c['id'] == cid)}): {v}"
                              for cid, v in bad.items())


_ERRORS = [
    ("indivisible heads", dict(algo="ulysses", n1=3, n2=3), "ValueError", "divisible by the Ulysses degree"),
    ("hybrid heads", dict(algo="hybrid", ulysses_degree=2, n1=4, n2=1), "ValueError", "divisible by the Ulysses"),
    ("hybrid degree", dict(algo="hybrid", ulysses_degree=3), "ValueError", "ulysses_degree, a divisor"),
    ("ulysses degree", dict(algo="ulysses", ulysses_degree=1), "ValueError", "must be None or the world size"),
    ("world mismatch", dict(algo="ring", layout="TND", seq_chunks=[3, 1], cp_cu_seqlens=[0, 12, 24]),
     "ValueError", "over the world size"),
    ("uneven parts", dict(algo="allgather", uneven=True), "ValueError",
     "the ranks hold different local sequence lengths [10, 8]"),
    ("cu no leading 0", dict(algo="ring", layout="TND", seq_chunks=[2, 2], cp_cu_seqlens=[8, 16]),
     "ValueError", "must start with 0"),
    ("cu indivisible", dict(algo="allgather", layout="TND", seq_chunks=[2, 2], cp_cu_seqlens=[0, 6, 16]),
     "ValueError", "does not split into 4 equal chunks"),
    ("cu decreasing", dict(algo="allgather", layout="TND", seq_chunks=[2, 2], cp_cu_seqlens=[0, 12, 8, 16]),
     "ValueError", "non-decreasing"),
    ("algo", dict(algo="star"), "ValueError", "algo='star' is not supported"),
    ("dropout odd chunks", dict(algo="ring", keep_prob=0.9), "ValueError", "needs chunks of even length"),
    ("sink shape", dict(algo="ring", bad_sink=True), "ValueError", "sink must be a float32 tensor of shape [4]"),
    ("alibi shape", dict(algo="ring", bad_alibi=True), "ValueError", "alibi_slopes shape (3, 2, 4) must be [N]"),
    ("alibi batches", dict(algo="ulysses", layout="TND", seq_chunks=[2, 2], alibi="batch", bad_alibi_batches=True),
     "ValueError", "alibi_slopes shape (3, 4) must be [4] or [2, 4]: one slope per query head and sequence"),
]


def _error_cases():
    return [_case("error " + name, expect_error=(typ, text), **kw) for name, kw, typ, text in _ERRORS]


def test_context_parallel_two_ranks():
    """One spawn of 2 ranks: every algorithm's forward over the layouts and masks, every algorithm's backward
    (sinks, GQA; full attention, whose ring calls hold part of each row's keys in one key block), bitwise
    reproducibility, and the argument errors."""
    cases = [
        _case("ring BSND causal gqa sink", algo="ring", causal=True, sink=True),
        _case("ring BNSD window", algo="ring", layout="BNSD", window=(7, 3), n2=4),
        _case("ring TND causal window", algo="ring", layout="TND", seq_chunks=[3, 1, 4], causal=True, window=(9, -1)),
        _case("ring BSH full contiguous", algo="ring", layout="BSH", load_balance="contiguous", n2=1),
        _case("ring softcap fp16", algo="ring", causal=True, softcap=5.0, dtype="fp16"),
        _case("ring BSND causal grad gqa sink", algo="ring", causal=True, sink=True, grad=True),
        _case("ring BNSD full grad sink", algo="ring", layout="BNSD", n2=4, sink=True, grad=True),
        _case("ring TND window grad", algo="ring", layout="TND", seq_chunks=[3, 1, 4], window=(9, 2), grad=True),
        _case("ring BSND full contiguous grad softcap", algo="ring", load_balance="contiguous", softcap=4.0,
              grad=True),
        _case("hybrid BSND causal grad sink", algo="hybrid", ulysses_degree=1, causal=True, sink=True, grad=True),
        _case("ring BSND deterministic", algo="ring", causal=True, sink=True, repeat=True),
        _case("ring BSND causal dropout grad sink", algo="ring", causal=True, sink=True, keep_prob=0.8, s_chunks=6,
              grad=True),
        _case("ring TND window dropout grad", algo="ring", layout="TND", seq_chunks=[4, 2], window=(9, 2),
              keep_prob=0.7, grad=True),
        _case("allgather BNSD causal dropout grad", algo="allgather", layout="BNSD", causal=True, keep_prob=0.8,
              s_chunks=4, grad=True),
        _case("ulysses TND dropout grad", algo="ulysses", layout="TND", seq_chunks=[2, 4], keep_prob=0.75,
              grad=True),
        _case("allgather TND causal grad sink", algo="allgather", layout="TND", seq_chunks=[2, 5], causal=True,
              sink=True, grad=True),
        _case("allgather BNSD window grad", algo="allgather", layout="BNSD", window=(4, 6), grad=True),
        _case("ulysses BSND causal grad sink", algo="ulysses", causal=True, sink=True, grad=True),
        _case("ulysses TND window grad", algo="ulysses", layout="TND", seq_chunks=[4, 2], window=(5, 5), n2=4,
              grad=True),
        _case("ulysses BSND deterministic", algo="ulysses", causal=True, sink=True, repeat=True),
        _case("allgather TND deterministic", algo="allgather", layout="TND", seq_chunks=[3, 2], causal=True,
              repeat=True),
        _case("ring BSND causal alibi grad sink", algo="ring", causal=True, sink=True, alibi="head", grad=True),
        _case("ring TND full alibi grad", algo="ring", layout="TND", seq_chunks=[3, 2], alibi="batch", grad=True),
        _case("ulysses BSND full alibi grad", algo="ulysses", alibi="batch", grad=True),
        _case("allgather TND causal alibi dropout grad", algo="allgather", layout="TND", seq_chunks=[2, 4],
              causal=True, alibi="head", keep_prob=0.8, grad=True),
    ]
    errors = _error_cases()
    results = spawn(cases + errors, world=2)
    _check(results, cases)
    for c in errors:
        verdict = results[c["id"]]
        typ, text = c["expect_error"]
        assert verdict[0] == "raised" and verdict[1] == typ and text in verdict[2], f"{c['id']}: {verdict}"


def test_context_parallel_four_ranks():
    """One spawn of 4 ranks: forward and backward of hybrid (2 x 2), ring, Ulysses and all-gather."""
    cases = [
        _case("hybrid BSND deterministic", algo="hybrid", ulysses_degree=2, s_chunks=2, causal=True, sink=True,
              alibi="head", repeat=True, b=1),
        _case("hybrid TND causal grad sink", algo="hybrid", ulysses_degree=2, layout="TND", seq_chunks=[2, 1],
              causal=True, sink=True, grad=True),
        _case("hybrid BSND full grad", algo="hybrid", ulysses_degree=2, s_chunks=2, grad=True, b=1),
        _case("ring BSND window grad", algo="ring", s_chunks=2, window=(5, 0), grad=True, b=1),
        _case("ring BNSD causal grad sink", algo="ring", layout="BNSD", s_chunks=2, n2=4, causal=True, sink=True,
              grad=True, b=1),
        _case("ulysses BNSD causal grad", algo="ulysses", layout="BNSD", s_chunks=2, n1=4, n2=4, causal=True,
              grad=True, b=1),
        _case("allgather BSND causal grad gqa", algo="allgather", s_chunks=2, causal=True, grad=True, b=1),
        _case("hybrid BSND causal dropout grad sink", algo="hybrid", ulysses_degree=2, s_chunks=2, causal=True,
              sink=True, keep_prob=0.8, grad=True, b=1),
        _case("ring TND dropout grad", algo="ring", layout="TND", seq_chunks=[2, 4], keep_prob=0.8, grad=True),
        _case("hybrid BSND causal alibi grad", algo="hybrid", ulysses_degree=2, s_chunks=2, causal=True,
              alibi="batch", grad=True, b=2),
        _case("ring TND causal alibi grad sink", algo="ring", layout="TND", seq_chunks=[2, 1], causal=True,
              alibi="head", sink=True, grad=True),
        _case("ulysses TND full alibi grad", algo="ulysses", layout="TND", seq_chunks=[1, 2], n2=4, alibi="batch",
              grad=True),
        _case("allgather BSND full alibi grad", algo="allgather", s_chunks=2, alibi="head", grad=True, b=1),
    ]
    _check(spawn(cases, world=4), cases)


_ALGOS = [("ring", None), ("ulysses", None), ("hybrid", 2), ("allgather", None)]
_MASKS = [dict(causal=True), dict(), dict(window=(6, 2)), dict(causal=True, window=(10, -1))]
_LAYOUTS = [dict(layout="BSND"), dict(layout="BNSD"), dict(layout="TND", seq_chunks=[3, 1, 2])]


@pytest.mark.slow
@pytest.mark.parametrize("world", [2, 4])
def test_context_parallel_grid(world):
    """Every algorithm x mask x layout, GQA (with ALiBi) and MHA (with sinks), forward and backward."""
    cases = []
    for (algo, deg), mask, lay, (n1, n2) in itertools.product(_ALGOS, _MASKS, _LAYOUTS, [(4, 2), (4, 4)]):
        gqa = n1 != n2
        if algo == "hybrid" and world == 2:
            deg = 1
        if algo == "ulysses" and n2 % world:  # Ulysses needs both head counts divisible by the world: GQA 8 / 4
            n1, n2 = 2 * n1, 2 * n2
        cid = f"{algo} {lay['layout']} {mask} n{n1}/{n2}"
        cases.append(_case(cid, algo=algo, ulysses_degree=deg, n1=n1, n2=n2, grad=True, s_chunks=3, sink=not gqa,
                           alibi="head" if gqa else None, **mask, **lay))
    _check(spawn(cases, world=world, timeout=3000), cases)
