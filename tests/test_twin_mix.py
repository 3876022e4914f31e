"""Mix launches (KERNEL_TYPE_MIX_AIC_1_2: N AIC + 2N AIV threads), cross-core flags, SyncAll, GM atomics, traces.

Kernels: tests/kernels/cube/mix.cpp (one source, several entries; cases picked through an int32 GM parameter).
"""
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KDIR = Path(__file__).parent / "kernels" / "cube"
MIX_SRC = KDIR / "mix.cpp"


@pytest.fixture(scope="module")
def mix():
    return twin.compile_kernel(MIX_SRC)


def params(*vals):
    p = np.zeros(8, np.int32)
    p[: len(vals)] = vals
    return p


@pytest.mark.parametrize("blocks", [1, 3])
def test_core_indices_mix_1_2(mix, blocks):
    out = np.full((3 * blocks, 8), -1, np.int64)
    mix.launch("core_ids", blocks, out, kernel_type="mix")
    for b in range(blocks):  # AIC rows first: [kind, GetBlockIdx, GetBlockNum, GetSubBlockIdx, GetSubBlockNum, ratio]
        assert list(out[b, :6]) == [1, b, blocks, 0, 1, 1]
    for i in range(2 * blocks):  # AIV rows by GetBlockIdx = 2 * block + sub
        assert list(out[blocks + i, :6]) == [2, i, blocks, i % 2, 2, 2]


def test_core_indices_mix_1_1(mix):
    blocks = 2
    out = np.full((3 * blocks, 8), -1, np.int64)
    mix.launch("core_ids", blocks, out, kernel_type="mix_aic_1_1")
    for b in range(blocks):
        assert list(out[b, :6]) == [1, b, blocks, 0, 1, 1]
        assert list(out[blocks + b, :6]) == [2, b, blocks, 0, 1, 1]
    assert np.all(out[2 * blocks :] == -1)  # one AIV per block: nothing else written


def run_pingpong(mix, rng, rounds, trace=False):
    a = rng.integers(-3, 4, (rounds, 32, 32)).astype(np.float16)
    b = rng.integers(-3, 4, (64, 32)).astype(np.float16)
    ws = np.zeros((2, 32, 64), np.float32)
    out = np.full((rounds, 32, 64), np.nan, np.float32)
    mix.launch("pingpong", 1, a, b, ws, out, params(rounds), kernel_type="mix", trace=trace)
    ref = 2 * np.einsum("rmk,nk->rmn", a.astype(np.float64), b.astype(np.float64)) + np.arange(rounds)[:, None, None]
    return out, ref


def test_pingpong_matmul_tiles_between_aic_and_aivs(mix, rng):
    # Small integers: the matmul and 2x + r are exact in fp32, so results must match exactly, every round.
    for rounds in (1, 2, 7):
        out, ref = run_pingpong(mix, rng, rounds)
        assert np.array_equal(out, ref)


def _signature(trace):
    return [(c["core"], [(r["op"], r["pipe"], r["kind"], r["bytes"], r["arg"]) for r in c["records"]]) for c in trace]


def test_trace_is_deterministic_and_shows_cross_core_sync(mix, fa_seed):
    rounds = 5
    out1, ref = run_pingpong(mix, np.random.default_rng(fa_seed), rounds, trace=True)
    t1 = mix.last_trace()
    out2, _ = run_pingpong(mix, np.random.default_rng(fa_seed), rounds, trace=True)
    t2 = mix.last_trace()
    assert np.array_equal(out1, ref) and np.array_equal(out2, ref)
    assert _signature(t1) == _signature(t2)
    by_core = {c["core"]: c["records"] for c in t1}
    assert set(by_core) == {"AIC 0", "AIV 0 (block 0, sub 0)", "AIV 1 (block 0, sub 1)"}
    aic = by_core["AIC 0"]
    sets = [r for r in aic if r["kind"] == "cross_set"]
    # tile-ready alternates flag IDs 0 and 2 by round parity (no flagId set twice in a row)
    assert len(sets) == rounds and all(r["pipe"] == "FIX" and r["arg"] == 2 * (i % 2) and r["repeats"] == 2
                                       for i, r in enumerate(sets))
    assert sum(r["kind"] == "cross_wait" for r in aic) == rounds
    assert sum(r["op"] == "Mmad" for r in aic) == rounds
    for name in ("AIV 0 (block 0, sub 0)", "AIV 1 (block 0, sub 1)"):
        recs = by_core[name]
        assert sum(r["kind"] == "cross_wait" and r["arg"] in (0, 2) for r in recs) == rounds
        assert sum(r["kind"] == "cross_set" and r["pipe"] == "MTE3" and r["arg"] == 1 for r in recs) == rounds
        assert not any(r["pipe"] in ("M", "MTE1", "FIX") for r in recs)
    # Each AIC round: its Fixpipe comes before its set; each AIV round: its wait comes before its GM read.
    ops = [r["op"] for r in aic if r["kind"] in ("instr", "cross_set")]
    fix = [i for i, o in enumerate(ops) if o.startswith("Fixpipe")]
    cset = [i for i, o in enumerate(ops) if o == "CrossCoreSetFlag"]
    assert all(f < s for f, s in zip(fix, cset))


def run_case(mix, which, blocks=2, late=-1, spin_ms=0, rounds=0, kernel_type="mix"):
    slots = np.zeros((3 * blocks, 16), np.int32)
    result = np.full((3 * blocks, 16), -1, np.int32)
    mix.launch("cross_case", blocks, slots, result, params(which, late, spin_ms, rounds), kernel_type=kernel_type)
    return result[:, 0]


@pytest.mark.parametrize("late", [0, 3])
def test_mode0_barrier_across_all_aivs(mix, late):
    # The late AIV spins 30 ms before writing its slot; every AIV must still see all four slots after the barrier.
    res = run_case(mix, 0, blocks=2, late=late, spin_ms=30)
    assert list(res[:4]) == [4, 4, 4, 4]


@pytest.mark.parametrize("late", [0, 1, 3])
def test_mode1_pairs_the_two_aivs_of_a_core(mix, late):
    res = run_case(mix, 1, blocks=2, late=late, spin_ms=30)
    assert list(res[:4]) == [1, 1, 1, 1]


def test_mode2_handshake_many_rounds(mix):
    for blocks in (1, 2, 4):
        res = run_case(mix, 7, blocks=blocks, rounds=200)
        assert np.all(res[: 3 * blocks] == 200)


def test_syncall_mixed(mix):
    # AIC 1 (participant 5) arrives late; every AIC and AIV must see all six slots.
    res = run_case(mix, 4, blocks=2, late=5, spin_ms=30)
    assert list(res[:6]) == [6] * 6


def test_syncall_aiv_only_form(mix):
    res = run_case(mix, 5, blocks=2, late=2, spin_ms=30)
    assert list(res[:4]) == [4, 4, 4, 4]


def test_flag_saturation_raises(mix):
    with pytest.raises(twin.TwinError, match=r"\[AIC 0\] CrossCoreSetFlag: cross-core flag 5 of AIV 0 \(block 0, sub 0\) saturates at 15"):
        run_case(mix, 2, blocks=1)


def test_cross_core_flag_in_aiv_only_launch_raises(mix):
    with pytest.raises(twin.TwinError, match=r"CrossCoreSetFlag: cross-core sync does not work in KERNEL_TYPE_AIV_ONLY"):
        run_case(mix, 6, blocks=2, kernel_type="aiv")


def test_deadlock_is_reported_not_hung():
    """Run in a child process with a timeout, so a regression to a hang fails instead of blocking the suite."""
    code = textwrap.dedent(
        f"""
        import numpy as np
        from npu_flash_attn import twin
        lib = twin.compile_kernel({str(MIX_SRC)!r})
        slots = np.zeros((6, 16), np.int32); res = np.zeros((6, 16), np.int32)
        try:
            lib.launch("cross_case", 2, slots, res, np.array([3, -1, 0, 0, 0, 0, 0, 0], np.int32), kernel_type="mix")
            print("NO ERROR")
        except twin.TwinError as e:
            print(e)
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    msg = r.stdout
    assert "deadlock: every live core is blocked" in msg, msg + r.stderr
    for core, flag in [("AIC 0", 6), ("AIC 1", 6), ("AIV 0 (block 0, sub 0)", 7), ("AIV 1 (block 0, sub 1)", 7),
                       ("AIV 2 (block 1, sub 0)", 7), ("AIV 3 (block 1, sub 1)", 7)]:
        assert f"{core} waits for cross-core flag {flag}" in msg, msg


def test_atomic_add_from_vector_cores(mix, rng):
    blocks = 8
    x = rng.standard_normal((blocks, 64)).astype(np.float32)
    out = rng.standard_normal(64).astype(np.float32)
    want = out.astype(np.float64) + x.astype(np.float64).sum(0)
    mix.launch("atomic_ub", blocks, x, out, kernel_type="aiv")
    assert np.abs(out - want).max() < 1e-5 * (np.abs(x).sum(0).max() + 1)


def test_atomic_add_through_fixpipe(mix, rng):
    blocks = 4
    a = rng.integers(-3, 4, (blocks, 16, 32)).astype(np.float16)
    b = rng.integers(-3, 4, (32, 32)).astype(np.float16)
    out = np.full((16, 32), 0.5, np.float32)
    mix.launch("atomic_fixpipe", blocks, a, b, out, kernel_type="aic")
    want = 0.5 + np.einsum("bmk,nk->mn", a.astype(np.float64), b.astype(np.float64))
    assert np.array_equal(out, want)
