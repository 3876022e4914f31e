"""Cycle model (twin/include/twin/costmodel/schedule.h): dependent vector instructions wait for their producer's
result, independent ones pipeline; the scalar unit pays an issue cost per instruction and stalls on a full queue;
Mmad and Fixpipe with unit flags overlap per 512-B L0C unit. Each expectation is computed by hand from the parameter
table. Kernels: tests/kernels/costmodel/costmodel.cpp (chains), tests/kernels/cube/unitflag.cpp."""
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import _C, twin
from npu_flash_attn.tools import profiler

HERE = Path(__file__).parent
CHIP = "Ascend910B2"
DEPENDENT, INTERLEAVED, INDEPENDENT = 0, 1, 2


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(HERE / "kernels" / "costmodel" / "costmodel.cpp")


@pytest.fixture(scope="module")
def table():
    return {r["key"]: r["value"] for r in _C.cost_params(CHIP)}


def _ops(cm, name):
    """(start, end) of every instruction called `name`, in program order."""
    s = cm["schedule"]
    return [(b, e) for o, b, e in zip(s["op"], s["start"], s["end"]) if s["op_names"][o] == name]


def _chains(lib, which, reps, k, overrides=None):
    n = 64 * reps  # float32: 64 elements per 256-B repeat
    x = np.random.default_rng().random(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    lib.launch("chains", 1, np.array([which, n, k, 0], np.int32), x, out, trace=True)
    want = {DEPENDENT: x + k * x, INTERLEAVED: x + k * x, INDEPENDENT: 2 * x}[which]
    np.testing.assert_allclose(out, want, rtol=1e-5)
    return profiler.model_trace(lib, CHIP, overrides=overrides)


def test_dependent_chain_pays_full_latency(lib, table, rng):
    reps, k = int(rng.integers(1, 40)), int(rng.integers(3, 9))
    head, slope, tail = (table[f"vec.binary.{x}"] for x in ("head", "slope", "tail"))
    adds = _ops(_chains(lib, DEPENDENT, reps, k), "Add")
    assert len(adds) == k
    for j, (b, e) in enumerate(adds):
        assert e - b == pytest.approx(head + slope * reps)  # each one starts after a wait: head paid again
        if j:
            assert b == pytest.approx(adds[j - 1][1] + tail)  # the producer's result latency
    assert adds[-1][1] - adds[0][0] == pytest.approx(k * (head + slope * reps) + (k - 1) * tail)


def test_interleaved_chains_overlap(lib, table, rng):
    """x and z chains alternate: each Add depends on the one two back, so the other chain's Add hides the latency
    when it is at least as long as the tail; shorter ones stall for the rest and pay the head again."""
    head, slope, tail = (table[f"vec.binary.{x}"] for x in ("head", "slope", "tail"))
    for reps in (int(rng.integers(1, 7)), int(rng.integers(7, 40))):
        k = int(rng.integers(3, 9))
        adds = _ops(_chains(lib, INTERLEAVED, reps, k), "Add")
        assert len(adds) == 2 * k
        body = slope * reps
        t_end = adds[0][0] + head + body
        ends = [t_end]
        for j in range(1, 2 * k):
            ready = ends[j - 2] + tail if j >= 2 else adds[0][0]
            start = max(ends[j - 1], ready)
            stalled = start > ends[j - 1]
            ends.append(start + (head if stalled else 0) + body)
            assert adds[j][0] == pytest.approx(start), (reps, j)
        assert [e for _, e in adds] == pytest.approx(ends)
        if body >= tail:
            assert adds[-1][1] - adds[0][0] == pytest.approx(head + 2 * k * body)


def test_independent_instructions_pipeline(lib, table, rng):
    reps, k = int(rng.integers(3, 40)), int(rng.integers(3, 9))
    head, slope = table["vec.binary.head"], table["vec.binary.slope"]
    adds = _ops(_chains(lib, INDEPENDENT, reps, k), "Add")
    assert adds[-1][1] - adds[0][0] == pytest.approx(head + k * slope * reps)


def test_scalar_issue_bounds_short_instructions(lib, table, rng):
    """One-repeat Adds take 2 cycles on PIPE_V but 4 to issue. The first 32 are issued while the core waits for its
    input and fill the queue; from then on each issue waits for a queue slot, and once the issue has fallen behind
    the pipe (after about 70 Adds here) the Adds cannot start faster than they are issued: the pipe runs dry, pays
    its head again after each bubble, and S is the busy pipe."""
    k = int(rng.integers(130, 200))
    cm = _chains(lib, INDEPENDENT, 1, k)
    issue, slope, head = table["scalar.issue.vec"], table["vec.binary.slope"], table["vec.binary.head"]
    assert issue > slope
    starts = np.array([b for b, _ in _ops(cm, "Add")])
    gaps = np.diff(starts)
    assert gaps[1:20] == pytest.approx(np.full(19, slope))  # the queued ones, back to back
    # issue-bound: one Add issued every `issue` cycles, each starting at most head + slope after its issue
    assert abs((starts[-1] - starts[-61]) / 60 - issue) <= (head + slope) / 60
    assert set(np.round(gaps[-50:], 6)) <= {slope, issue, slope + head}
    busy = cm["cores"][0]["busy"]
    assert busy["S"] >= k * issue and busy["S"] > busy["V"]
    # with a one-cycle issue the same Adds run at the pipe's rate throughout
    cheap = np.diff([b for b, _ in _ops(_chains(lib, INDEPENDENT, 1, k, {"scalar.issue.vec": 1}), "Add")])
    assert cheap[1:] == pytest.approx(np.full(k - 2, slope))  # (the first one pays the head)


@pytest.fixture(scope="module")
def unitflag():
    return twin.compile_kernel(HERE / "kernels" / "cube" / "unitflag.cpp", flags=["-O0"])


def _matmul_twice(lib, rng, units):
    """unitflag.cpp: C = A B^T (64 x 64 x 64, one Mmad) twice into one L0C tile, each drained by a Fixpipe; with
    unit flags (3 on both sides) or with M_FIX / FIX_M flags instead."""
    m = n = k = 64
    p = np.zeros(16, np.int64)
    twice, sync_m_fix, sync_fix_m = 2, 1, 32
    # M, N, K, rounds, Mmad unitFlag (last, other), Fixpipe unitFlag, flags
    p[:8] = (m, n, k, 1, 3 if units else 0, 3 if units else 0, 3 if units else 0,
             twice if units else twice | sync_m_fix | sync_fix_m)
    a = rng.integers(-4, 5, (m, k)).astype(np.float16)
    b = rng.integers(-4, 5, (n, k)).astype(np.float16)
    c = np.zeros(2 * m * n, np.float32)
    lib.launch("unitflag_matmul", 1, a, b, c, p, kernel_type="aic", trace=True)
    ref = a.astype(np.float32) @ b.T.astype(np.float32)
    np.testing.assert_array_equal(c.reshape(2, m, n), np.stack([ref, ref]))
    cm = profiler.model_trace(lib, CHIP)
    return _ops(cm, "Mmad"), _ops(cm, "Fixpipe(L0C->GM)"), cm["cycles"]


def test_unit_flags_overlap_mmad_and_fixpipe(unitflag, table, rng):
    units = 64 * 64 * 4 // 512  # the 64 x 64 fp32 tile: 32 units of 512 B
    mm, fx, with_units = _matmul_twice(unitflag, rng, True)
    head = table["cube.head"]
    m_body = mm[0][1] - mm[0][0] - head  # 4 x 4 x 4 fractals
    assert m_body == pytest.approx(64 * table["cube.fractal"])
    f_body = fx[0][1] - fx[0][0]
    # The Fixpipe starts as soon as the first unit is complete and never waits for a later one (it is slower).
    assert fx[0][0] == pytest.approx(mm[0][0] + head + m_body / units)
    # The second Mmad refills unit j once the Fixpipe has moved it: the last unit binds.
    assert mm[1][0] == pytest.approx(fx[0][0] + f_body - m_body * (units - 1) / units)
    # Control: ordered by SetFlag/WaitFlag, each side waits for the other's whole instruction.
    mm0, fx0, with_flags = _matmul_twice(unitflag, rng, False)
    assert fx0[0][0] == pytest.approx(mm0[0][1] + table["flag.latency"])
    assert mm0[1][0] >= fx0[0][1] + table["flag.latency"] - 1e-9
    assert with_units < with_flags
