"""The profiler's report of the cycle model (python/npu_flash_attn/tools/profiler.py): every lower bound on the kernel
time with the binding one named (a kernel whose time one pipe, the L2 or the HBM sets names it), and the error bars
(twin/include/twin/costmodel/range.h): one parameter at each end of its range moves the time as computed by hand, the
joint corners bracket every run, rows with lo == hi and overridden rows move nothing, the backward adds its launches'
ranges, and the CLI prints and emits both."""
import json
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import _C, twin
from npu_flash_attn.tools import baseline, profiler
from npu_flash_attn.tools.cli import main

KERNELS = Path(__file__).parent / "kernels" / "costmodel"
CHIP = "Ascend910B2"


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNELS / "costmodel.cpp")


@pytest.fixture(scope="module")
def mem():
    return twin.compile_kernel(KERNELS / "memory.cpp")


@pytest.fixture(scope="module")
def rows():
    return {r["key"]: r for r in _C.cost_params(CHIP)}


def _ranged(rows):
    return {k for k, r in rows.items() if r["lo"] < r["hi"]}


def _summary(cm):
    return profiler._summarize(cm, CHIP, 0.0)


def _check_bounds(rep):
    assert list(rep["bounds"]) == list(profiler.BOUNDS)
    assert rep["bound"] == max(rep["bounds"], key=rep["bounds"].get)
    for name, us in rep["bounds"].items():  # each is a lower bound on the kernel time
        # (the L2 and HBM shares come from a fixed point that may overrun the aggregate rates by a few %)
        slack = 1 / 0.93 if name in ("l2", "hbm") else 1 + 1e-9
        assert 0 <= us <= rep["kernel_time_us"] * slack, name


def _stream(lib, rng, blocks, tiles, n, overrides):
    x = rng.standard_normal(blocks * tiles * n).astype(np.float32)
    lib.launch("stream", blocks, np.array([tiles, n, 2, 0], np.int32), x, np.zeros_like(x), trace=True)
    return _summary(profiler.model_trace(lib, CHIP, overrides=overrides)), x.nbytes


@pytest.mark.parametrize("overrides,pipe", [({"mte2.gm_ub.bw": 4}, "aiv.MTE2"), ({"mte3.ub_gm.bw": 4}, "aiv.MTE3"),
                                            ({"vec.exp.slope": 300}, "aiv.V"), ({"scalar.op": 20000}, "aiv.S")])
def test_aiv_kernel_names_the_pipe_that_sets_its_time(lib, rows, rng, overrides, pipe):
    tiles, n = int(rng.integers(3, 6)), 64 * int(rng.integers(8, 20))
    rep, nbytes = _stream(lib, rng, 1, tiles, n, overrides)
    _check_bounds(rep)
    assert rep["bound"] == pipe
    mhz = rows["chip.clock_mhz"]["value"]
    if pipe == "aiv.MTE3":  # one UB->GM DataCopy per tile, one after another
        per = rows["mte3.ub_gm.lat"]["value"] + 4 * n / 4
        assert rep["bounds"][pipe] == pytest.approx(tiles * per / mhz)
    # one core, 2 buffers: every byte read once and written once, through L2
    assert rep["bounds"]["l2"] == pytest.approx(2 * nbytes / rows["l2.bytes_per_cycle"]["value"] / mhz)


@pytest.mark.parametrize("overrides,pipe", [({"fix.l0c_gm.bw": 0.5}, "aic.FIX"),
                                            ({"mte1.l0a.bw": 0.5, "mte1.l0b.bw": 0.5}, "aic.MTE1"),
                                            ({"cube.fractal": 60}, "aic.M"), ({"mte2.gm_l1.bw": 0.5}, "aic.MTE2")])
def test_aic_kernel_names_the_pipe_that_sets_its_time(rows, rng, overrides, pipe):
    m, n, k = 128, 256, 64 * int(rng.integers(2, 5))  # one 128 x 256 output tile: one core works
    a, b = np.zeros((m, k), np.float16), np.zeros((k, n), np.float16)
    _, rep = baseline.gemm(a, b, blocks=2, model=True, model_only=True, overrides=overrides)
    _check_bounds(rep)
    assert rep["bound"] == pipe
    if pipe == "aic.M":  # its Mmads: (M/16) (N/16) (K/16) fractals at 60 cycles each, plus their heads
        fractals = (m // 16) * (n // 16) * (k // 16)
        assert rep["bounds"][pipe] >= fractals * 60 / rows["chip.clock_mhz"]["value"]


def test_l2_and_hbm_bounds(lib, mem, rows, rng):
    mhz = rows["chip.clock_mhz"]["value"]
    # 40 cores streaming their own data: with a narrow HBM, HBM sets the time
    rep, nbytes = _stream(lib, rng, 40, 3, 128 * int(rng.integers(40, 90)), {"chip.hbm_bytes_per_cycle": 60})
    _check_bounds(rep)
    assert rep["bound"] == "hbm"
    assert rep["bounds"]["hbm"] == pytest.approx(rep["hbm_bytes"] / 60 / mhz)
    assert 2 * nbytes <= rep["hbm_bytes"] <= 2 * (nbytes + 512)
    # 40 cores re-reading L2-resident slices: with a narrow L2, the aggregate L2 rate sets the time
    blocks, tile = 40, 64 * int(rng.integers(300, 600))
    n = tile * 2
    x = rng.standard_normal(blocks * n).astype(np.float32)
    mem.launch("gm_read", blocks, np.array([1, n, tile, 6], np.int32), x, np.zeros(1, np.float32), trace=True)
    rep = _summary(profiler.model_trace(mem, CHIP, overrides={"l2.bytes_per_cycle": 200}))
    _check_bounds(rep)
    assert rep["bound"] == "l2"
    assert rep["bounds"]["l2"] == pytest.approx(6 * x.nbytes / 200 / mhz)


def _copy(mem, rng):
    """gm_read's burst case: one GM->UB DataCopyPad of `nbytes` (bursts of 256-1020 B, the path's full rate), a
    flag, the same bytes back UB->GM; one core, so nothing shares the HBM or L2."""
    blocks, length = int(rng.integers(20, 60)), 4 * int(rng.integers(64, 256))
    x = rng.standard_normal(blocks * length // 4).astype(np.float32)
    mem.launch("gm_read", 1, np.array([0, blocks, length, 0], np.int32), x, np.zeros_like(x), trace=True)
    return x.nbytes


def test_one_parameter_moves_the_time_by_hand(mem, rows, rng):
    nbytes = _copy(mem, rng)
    bw = rows["mte2.gm_ub.bw"]["value"]
    lo, hi = bw / float(rng.uniform(1.5, 3)), bw * float(rng.uniform(1.2, 4))
    cm = profiler.model_trace(mem, CHIP, ranges={"mte2.gm_ub.bw": (lo, hi)})
    base = cm["cycles"]
    e = cm["range"]["by_param"]["mte2.gm_ub.bw"]
    # the GM->UB copy costs latency + bytes / bw and is on the critical path: only its bytes / bw term moves
    assert (e["lo"], e["hi"]) == (lo, hi)
    assert e["cycles"][0] == pytest.approx(base + nbytes / lo - nbytes / bw)
    assert e["cycles"][1] == pytest.approx(base + nbytes / hi - nbytes / bw)
    launch, mhz = cm["launch_cycles"], cm["clock_mhz"]
    assert e["total_us"][1] == pytest.approx((e["cycles"][1] + launch) / mhz)
    # the table's own ranges are all there, each at its ends
    assert set(cm["range"]["by_param"]) == _ranged(rows) | {"mte2.gm_ub.bw"}
    for key in _ranged(rows):
        assert cm["range"]["by_param"][key]["lo"] == rows[key]["lo"]
    # the launch overhead's range moves the total time by its ends, not the kernel cycles
    lc = cm["range"]["by_param"]["launch.cycles"]
    assert lc["cycles"] == [pytest.approx(base)] * 2
    assert lc["total_us"] == [pytest.approx((base + rows["launch.cycles"][end]) / mhz) for end in ("lo", "hi")]


def test_joint_corners_by_hand_and_exact_rows(mem, rows, rng):
    nbytes = _copy(mem, rng)
    exact = {k: (rows[k]["value"], rows[k]["value"]) for k in _ranged(rows)}  # lo == hi: taken as exact
    bw, lat = rows["mte2.gm_ub.bw"]["value"], rows["mte3.ub_gm.lat"]["value"]
    bw_lo, bw_hi = bw / 2, 2 * bw
    lat_lo, lat_hi = lat - int(rng.integers(10, 100)), lat + int(rng.integers(10, 300))
    given = dict(exact, **{"mte2.gm_ub.bw": (bw_lo, bw_hi), "mte3.ub_gm.lat": (lat_lo, lat_hi)})
    cm = profiler.model_trace(mem, CHIP, ranges=given)
    r, base = cm["range"], cm["cycles"]
    assert set(r["by_param"]) == {"mte2.gm_ub.bw", "mte3.ub_gm.lat"}  # the exact rows moved nothing
    # slow corner: the low rate and the high latency; fast corner: the other ends
    assert r["cycles_high"] == pytest.approx(base + nbytes / bw_lo - nbytes / bw + lat_hi - lat)
    assert r["cycles_low"] == pytest.approx(base + nbytes / bw_hi - nbytes / bw + lat_lo - lat)
    assert r["total_us_low"] == pytest.approx((r["cycles_low"] + cm["launch_cycles"]) / cm["clock_mhz"])
    moves = {k: abs(e["cycles"][1] - e["cycles"][0]) for k, e in r["by_param"].items()}
    assert r["param"] == max(moves, key=moves.get)
    assert r["runs"] == 2 * 2 + 2
    # every row exact: no extra run, the range is the value
    cm = profiler.model_trace(mem, CHIP, ranges=exact)
    r = cm["range"]
    assert r["by_param"] == {} and r["param"] is None and r["runs"] == 0
    assert r["cycles_low"] == r["cycles_high"] == cm["cycles"]
    # an overridden row is taken as exact: its table range is not run
    cm = profiler.model_trace(mem, CHIP, overrides={"mte3.ub_gm.lat": lat + 1}, ranges=True)
    assert "mte3.ub_gm.lat" not in cm["range"]["by_param"] and "launch.cycles" in cm["range"]["by_param"]


def test_ranges_of_the_op_bracket_every_run(rows):
    plain = profiler.profile(heads=2, kv_heads=1, seqlen=700, head_dim=128, model_only=True, bins=0)
    rep = profiler.profile(heads=2, kv_heads=1, seqlen=700, head_dim=128, model_only=True, bins=0, ranges=True)
    assert "modeled_time_us_low" not in plain
    assert rep["modeled_time_us"] == plain["modeled_time_us"]  # the extra runs leave the figure alone
    low, high = rep["modeled_time_us_low"], rep["modeled_time_us_high"]
    assert low < rep["modeled_time_us"] < high
    for key, e in rep["range_by_param"].items():  # each single run lies inside the joint corners
        assert low * (1 - 1e-9) <= min(e["modeled_time_us"]) and max(e["modeled_time_us"]) <= high * (1 + 1e-9), key
    assert set(rep["range_by_param"]) == _ranged(rows)
    assert rep["utilization_low"] == pytest.approx(rep["flops"] / (high * 1e-6) / (rep["cube_peak_tflops"] * 1e12))
    assert rep["utilization_low"] < rep["utilization"] < rep["utilization_high"]
    ends = {k: e["modeled_time_us"] + [rep["modeled_time_us"]] for k, e in rep["range_by_param"].items()}
    spread = {k: max(t) - min(t) for k, t in ends.items()}
    assert rep["range_param"] == max(spread, key=spread.get)
    assert rep["range_seconds"] > 0
    json.dumps(profiler.public(rep))


def test_backward_adds_its_launches_ranges():
    rep = profiler.profile(heads=2, seqlen=300, head_dim=64, backward=True, model_only=True, bins=0, ranges=True)
    parts = rep["launches"]
    assert len(parts) == 2
    for end in ("modeled_time_us_low", "modeled_time_us_high"):
        assert rep[end] == pytest.approx(sum(p[end] for p in parts))
    assert rep["modeled_time_us_low"] < rep["modeled_time_us"] < rep["modeled_time_us_high"]
    for name, us in rep["bounds"].items():
        if name != "cube":
            assert us == pytest.approx(sum(p["bounds"][name] for p in parts))
    assert rep["bound"] == max(rep["bounds"], key=rep["bounds"].get)


def test_bad_ranges(mem, rng):
    _copy(mem, rng)
    with pytest.raises(ValueError, match=r"ranges: cost model: no parameter 'vec\.nope'"):
        profiler.model_trace(mem, CHIP, ranges={"vec.nope": (1, 2)})
    with pytest.raises(ValueError, match=r"ranges\['mte2.gm_ub.bw'\] = \(200.0, 300.0\) must be finite with lo <= "
                                         r"value <= hi \(the value is 128.0\)"):
        profiler.model_trace(mem, CHIP, ranges={"mte2.gm_ub.bw": (200, 300)})
    with pytest.raises(TypeError, match=r"ranges\['mte2.gm_ub.bw'\] must be a pair \(lo, hi\)"):
        profiler.model_trace(mem, CHIP, ranges={"mte2.gm_ub.bw": 3})
    with pytest.raises(TypeError, match="ranges must be True, False or a dict"):
        profiler.model_trace(mem, CHIP, ranges="yes")


def test_cli_prints_bounds_and_ranges(capsys):
    args = ["profile", "--heads", "2", "--seqlen", "200", "--model-only"]
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("bounds", "bound", "utilization_low", "utilization_high", "modeled_time_us_low",
                "modeled_time_us_high", "range_param", "range_by_param"):
        assert key in out, key
    assert main(args + ["--json", "--no-range"]) == 0
    assert "utilization_low" not in json.loads(capsys.readouterr().out)
    assert main(args) == 0
    text = capsys.readouterr().out
    assert f"modeled ({CHIP}): {out['modeled_time_us']:.1f} us [{out['modeled_time_us_low']:.1f} - " \
           f"{out['modeled_time_us_high']:.1f}], {100 * out['utilization']:.1f} % [" in text
    assert f"most sensitive: {out['range_param']}" in text
    marked = [line.split()[1] for line in text.splitlines() if line.strip().startswith("* ")]
    assert marked == [out["bound"]]
    assert all(f" {name} " in text for name in profiler.BOUNDS)
