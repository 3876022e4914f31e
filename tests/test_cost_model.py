"""Cycle model (twin/include/twin/costmodel) and profiler: isolated instruction costs equal the parameter table,
pipelining and serialisation move the modeled time the right way, FA runs respect every bound, and the profiler's
JSON and files."""
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import _C, twin
from npu_flash_attn.tools import profiler
from npu_flash_attn.tools.cli import main

KERNEL = Path(__file__).parent / "kernels" / "costmodel" / "costmodel.cpp"
CHIP = "Ascend910B2"


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNEL)


@pytest.fixture(scope="module")
def table():
    return {r["key"]: r["value"] for r in _C.cost_params(CHIP)}


def _schedule(cm):
    s = cm["schedule"]
    return [(s["op_names"][o], cm["pipes"][p], e - b) for o, p, b, e in zip(s["op"], s["pipe"], s["start"], s["end"])]


def test_isolated_costs_match_table(lib, table, rng):
    reps = int(rng.integers(5, 40))
    n = 64 * reps  # float32: 64 elements per 256-B repeat
    x = rng.random(n, dtype=np.float32) + 0.5
    fam = {0: ("Add", "binary"), 1: ("Exp", "exp"), 2: ("Muls", "scalar"), 3: ("Div", "div")}
    for which, (op, f) in fam.items():
        out = np.zeros(n, np.float32)
        lib.launch("isolated", 1, np.array([which, n, 0, 0], np.int32), x, out, trace=True)
        dur = [d for name, pipe, d in _schedule(profiler.model_trace(lib, CHIP)) if name == op]
        assert dur == [pytest.approx(table[f"vec.{f}.head"] + table[f"vec.{f}.slope"] * reps)], op
    lib.launch("isolated", 1, np.array([4, n, 0, 0], np.int32), x, np.zeros(n, np.float32), trace=True)
    sch = _schedule(profiler.model_trace(lib, CHIP))
    mte2 = [d for name, pipe, d in sch if pipe == "MTE2"]
    mte3 = [d for name, pipe, d in sch if pipe == "MTE3"]
    assert mte2 == [pytest.approx(table["mte2.gm_ub.lat"] + 4 * n / table["mte2.gm_ub.bw"])] * 3
    assert mte3 == [pytest.approx(table["mte3.ub_gm.lat"] + 4 * n / table["mte3.ub_gm.bw"])]


def _stream(lib, rng, n, bufs, serial):
    tiles = 5
    x = rng.standard_normal(tiles * n).astype(np.float32)
    out = np.zeros_like(x)
    lib.launch("stream", 1, np.array([tiles, n, bufs, serial], np.int32), x, out, trace=True)
    np.testing.assert_allclose(out, np.exp(x) * 0.25, rtol=1e-5)
    cm = profiler.model_trace(lib, CHIP)
    return cm["cycles"], cm["cores"][0]["busy"]


def test_double_buffering_and_serialisation(lib, rng):
    n = 64 * int(rng.integers(20, 60))
    single, busy1 = _stream(lib, rng, n, 1, 0)
    double, busy2 = _stream(lib, rng, n, 2, 0)
    serial, busy3 = _stream(lib, rng, n, 2, 1)
    for p in ("MTE2", "MTE3"):  # same transfers: only the overlap differs (V pays its head again after each wait)
        assert busy1[p] == pytest.approx(busy2[p]) and busy2[p] == pytest.approx(busy3[p])
    assert double < single < serial
    # Fully serialised, the time is at least the sum of the pipes' busy time.
    assert serial >= sum(busy3.values())
    assert double < sum(busy2.values())


@pytest.fixture(scope="module")
def fa_reports():
    return {causal: profiler.profile(chip=CHIP, heads=3, kv_heads=1, seqlen=1297, head_dim=128, dtype="bf16",
                                     causal=causal, bins=50) for causal in (False, True)}


def test_fa_respects_bounds(fa_reports):
    for causal, rep in fa_reports.items():
        us = rep["kernel_time_us"]
        assert us >= rep["bounds"]["cube"] and us >= rep["bounds"]["hbm"]
        assert us >= max(rep["bounds"].values()) * (1 - 1e-9)
        assert rep["modeled_time_us"] > us and 0 < rep["utilization"] < 1
        cm = rep["model"]
        assert 2 * cm["macs"] >= rep["flops"] * (1 - 1e-9)  # the cube computes at least the visible scores
        assert all(c["end"] <= cm["cycles"] + 1e-6 for c in cm["cores"])
        assert all(0 <= v <= 1 for v in rep["pipe_busy"].values())
    assert fa_reports[True]["flops"] < fa_reports[False]["flops"]
    assert fa_reports[True]["model"]["macs"] < fa_reports[False]["model"]["macs"]


def test_profile_json_and_files(fa_reports, tmp_path, capsys):
    rep = fa_reports[False]
    pub = profiler.public(rep)
    for key in ("chip", "modeled_time_us", "tflops", "cube_peak_tflops", "utilization", "pipe_busy", "bound"):
        assert key in pub
    assert pub["bound"] in pub["bounds"] and json.loads(json.dumps(pub)) == pub
    assert len(pub["cores"]) == 3 * rep["block_dim"]
    assert all(0 <= v <= 1 for c in pub["cores"] for v in c["busy"].values())
    assert pub["cube_peak_tflops"] == pytest.approx(24 * 8192 * 1.8e9 / 1e12)
    files = profiler.write_outputs(rep, tmp_path)
    if importlib.util.find_spec("matplotlib"):
        assert Path(files["timeline_png"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:  # the PNG needs matplotlib, which the package does not require
        assert files["timeline_png"] is None
    tr = json.loads(Path(files["chrome_trace"]).read_text())
    spans = [e for e in tr["traceEvents"] if e["ph"] == "X"]
    assert spans and all(e["dur"] >= 0 for e in spans)
    assert {e["pid"] for e in spans} <= {0, 1, 2}  # block 0: its AIC and two AIVs
    assert main(["profile", "--heads", "2", "--seqlen", "200", "--json", "--out", str(tmp_path / "cli")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["chip"] == CHIP and set(out["files"]) == {"timeline_png", "chrome_trace"}


def test_backward_is_modeled_launch_by_launch():
    fwd = profiler.profile(heads=2, seqlen=200, head_dim=64)
    for deterministic in (False, True):  # one schedule for both: a dQ pass, a dK/dV pass
        rep = profiler.profile(heads=2, seqlen=200, head_dim=64, backward=True, deterministic=deterministic)
        assert len(rep["launches"]) == 2
        assert rep["modeled_time_us"] == pytest.approx(sum(p["modeled_time_us"] for p in rep["launches"]))
        assert rep["modeled_time_us"] > fwd["modeled_time_us"]  # 7 matmuls per tile against 2
        assert rep["flops"] == pytest.approx(2.5 * fwd["flops"])
        for bound in rep["bounds"].values():
            assert rep["modeled_time_us"] >= bound  # never faster than a bound
    assert rep["problem"]["deterministic"]


def test_bad_requests():
    with pytest.raises(ValueError, match="no parameter 'vec.nope'"):
        _C.cost_model_trace([], CHIP, {"vec.nope": 1.0})
    with pytest.raises(ValueError, match="chip 'Ascend000'"):
        _C.cost_params("Ascend000")


def test_cross_core_flags_and_syncall(lib, table, rng):
    rounds, n = int(rng.integers(3, 9)), 64 * int(rng.integers(5, 30))
    lib.launch("cross", 1, np.array([0, rounds, n, 0], np.int32), kernel_type="mix_aic_1_2", trace=True)
    base = profiler.model_trace(lib, CHIP)
    slow = profiler.model_trace(lib, CHIP, overrides={"cross.latency": table["cross.latency"] + 700})
    # Every round waits for one AIC -> AIV and one AIV -> AIC flag, all on the critical path.
    assert slow["cycles"] - base["cycles"] == pytest.approx(2 * rounds * 700)
    aiv_v = [c["busy"]["V"] for c in base["cores"] if c["kind"] == "aiv"]
    assert base["cycles"] >= rounds * (2 * table["cross.latency"]) + aiv_v[0]
    lib.launch("cross", 3, np.array([1, rounds, n, 0], np.int32), kernel_type="mix_aic_1_2", trace=True)
    cm = profiler.model_trace(lib, CHIP, keep_blocks=3)
    slowest, other = cm["cores"][1], cm["cores"][2]  # AIV 0 of block 0 fills `rounds` more times before the SyncAll
    assert slowest["name"].startswith("AIV 0") and other["name"].startswith("AIV 1")
    before = slowest["busy"]["V"] - other["busy"]["V"]
    assert before >= rounds * table["vec.scalar.slope"] * n / 64
    for c in cm["cores"]:  # nobody leaves the SyncAll before the slowest core arrived plus the release latency
        assert c["end"] >= before + table["syncall.latency"]


def test_cube_path_costs(table, rng):
    """tests/kernels/cube/gemm.cpp (C = A B^T, K in steps): L1->L0A and L1->L0B loads at their own rates, Mmad per
    fractal plus its head (pto-isa's on-device TMATMUL: f16 40x50x60 = 54 cycles, 128x128x64 = 262)."""
    lib = twin.compile_kernel(Path(__file__).parent / "kernels" / "cube" / "gemm.cpp")
    for M, N, K, k_tile, mmad in ((40, 50, 60, 64, 54), (128, 128, 64 * int(rng.integers(2, 5)), 64, 262)):
        a = rng.standard_normal((M, K)).astype(np.float16)
        b = rng.standard_normal((N, K)).astype(np.float16)
        c = np.zeros((M, N), np.float32)
        lib.launch("gemm_f16", 1, a, b, c, np.array([M, N, K, 1, 0, k_tile, 0, 0], np.int32), kernel_type="aic",
                   trace=True)
        np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32).T, rtol=1e-2, atol=1e-2)
        sch = _schedule(profiler.model_trace(lib, CHIP))
        assert {d for name, pipe, d in sch if name == "Mmad"} == {mmad}
        loads = [d for name, pipe, d in sch if pipe == "MTE1"][: (M + 15) // 16 + 1]  # first K step: A blocks, then B
        kc1 = -(-min(K, k_tile) // 16)
        a_bytes, b_bytes = kc1 * 512, kc1 * ((N + 15) // 16) * 512
        assert loads[:-1] == [pytest.approx(table["mte1.lat"] + a_bytes / table["mte1.l0a.bw"])] * ((M + 15) // 16)
        assert loads[-1] == pytest.approx(table["mte1.lat"] + b_bytes / table["mte1.l0b.bw"])


def test_hbm_shared_by_all_cores(lib, table, rng):
    blocks, tiles, n = 40, 3, 128 * int(rng.integers(40, 90))  # rows of 512 B: HBM lines are not shared
    x = rng.standard_normal(blocks * tiles * n).astype(np.float32)
    out = np.zeros_like(x)
    lib.launch("stream", blocks, np.array([tiles, n, 2, 0], np.int32), x, out, trace=True)
    np.testing.assert_allclose(out, np.exp(x) * 0.25, rtol=1e-5)
    cm = profiler.model_trace(lib, CHIP)
    assert cm["gm_bytes"] == 2 * x.nbytes
    # Every byte is read or written once: HBM moves the 512-B lines of both buffers (each may start mid-line).
    assert 2 * x.nbytes <= cm["hbm_bytes"] <= 2 * (x.nbytes + table["gm.line"])
    assert cm["cycles"] >= cm["hbm_bytes"] / table["chip.hbm_bytes_per_cycle"]
    wide = profiler.model_trace(lib, CHIP, overrides={"chip.hbm_bytes_per_cycle": 1e6})
    one = max(c["end"] for c in wide["cores"])
    assert cm["cycles"] > 1.5 * one  # 40 cores streaming at once are HBM-bound; alone each is not


MEM = Path(__file__).parent / "kernels" / "costmodel" / "memory.cpp"


@pytest.fixture(scope="module")
def mem():
    return twin.compile_kernel(MEM)


def _copy_cycles(mem, rng, blocks, length, overrides=None):
    """Modeled MTE2 and MTE3 cycles of one DataCopyPad each way of `blocks` bursts of `length` bytes."""
    x = rng.standard_normal(blocks * length // 4).astype(np.float32)
    out = np.zeros_like(x)
    mem.launch("gm_read", 1, np.array([0, blocks, length, 0], np.int32), x, out, trace=True)
    np.testing.assert_array_equal(out, x)
    sch = _schedule(profiler.model_trace(mem, CHIP, overrides=overrides))
    return [d for name, pipe, d in sch if pipe == "MTE2"][0], [d for name, pipe, d in sch if pipe == "MTE3"][0]


def test_burst_size(mem, table, rng):
    """The same bytes in bursts below dma.burst.small move at the small-burst band's rate (msopmodeling's
    pkt_param fit), in one long burst at the path's rate; 64-255-B bursts keep the full rate unless the threshold is
    raised to 256."""
    lat2, lat3, bw2, bw3 = (table[k] for k in ("mte2.gm_ub.lat", "mte3.ub_gm.lat", "mte2.gm_ub.bw", "mte3.ub_gm.bw"))
    nb, small = int(rng.integers(150, 400)), 4 * int(rng.integers(3, 16))  # 12-60 B bursts
    b = nb * small
    slow = _copy_cycles(mem, rng, nb, small)
    fast = _copy_cycles(mem, rng, 1, b)
    band = table["dma.burst.lt64.bw"]
    assert slow == (pytest.approx(lat2 + b / min(bw2, band)), pytest.approx(lat3 + b / min(bw3, band)))
    assert fast == (pytest.approx(lat2 + b / bw2), pytest.approx(lat3 + b / bw3))
    raised = {"dma.burst.small": 256}
    for lo, hi, key in ((64, 128, "dma.burst.lt128.bw"), (128, 256, "dma.burst.lt256.bw")):
        length = 4 * int(rng.integers(lo // 4, hi // 4))
        nb = int(rng.integers(50, 150))
        assert _copy_cycles(mem, rng, nb, length)[0] == pytest.approx(lat2 + nb * length / bw2)  # on-device: full rate
        assert _copy_cycles(mem, rng, nb, length, raised)[0] == pytest.approx(lat2 + nb * length / table[key])


def _reread(mem, rng, blocks, n, tile, passes, overrides):
    x = rng.standard_normal(blocks * n).astype(np.float32)
    mem.launch("gm_read", blocks, np.array([1, n, tile, passes], np.int32), x, np.zeros(1, np.float32), trace=True)
    return profiler.model_trace(mem, CHIP, overrides=overrides), x.nbytes


def test_l2_capacity(mem, table, rng):
    """LRU over 512-B lines: a buffer re-read after more than l2.bytes of other lines misses again, one that fits hits."""
    assert {r["key"]: r["value"] for r in _C.cost_params("Ascend910B4")}["l2.bytes"] == 96 * 2**20
    assert {r["key"]: r["value"] for r in _C.cost_params("Ascend910B1")}["l2.bytes"] == 192 * 2**20
    tile = 64 * int(rng.integers(20, 40))
    n = tile * int(rng.integers(30, 60))
    line = 512
    fits, x = _reread(mem, rng, 1, n, tile, 2, {"l2.bytes": 2 * 4 * n})
    assert x <= fits["hbm_bytes"] <= x + 2 * line and fits["l2_hit_bytes"] >= x - 2 * line
    spills, x = _reread(mem, rng, 1, n, tile, 2, {"l2.bytes": 2 * n})  # half the buffer: streaming evicts it
    # only lines two neighbouring tiles share (tiles need not be 512-B aligned) still hit
    assert spills["hbm_bytes"] >= 2 * x and spills["l2_hit_bytes"] <= 2 * line * n // tile
    # 40 cores re-reading their slices in 75-150 KB DMAs: the misses run at the HBM share, the hits at the L2 share.
    blocks, tile = 40, 64 * int(rng.integers(300, 600))
    n = tile * int(rng.integers(2, 4))
    hit, x = _reread(mem, rng, blocks, n, tile, 2, {"l2.bytes": 2 * 4 * n * blocks})
    miss, _ = _reread(mem, rng, blocks, n, tile, 2, {"l2.bytes": 2 * n * blocks})
    assert miss["hbm_bytes"] >= 2 * x > hit["hbm_bytes"]
    assert miss["cycles"] >= 0.93 * miss["hbm_bytes"] / table["chip.hbm_bytes_per_cycle"]  # fair-share fixed point
    assert hit["cycles"] < miss["cycles"]


def test_l2_bandwidth_caps_many_cores(mem, table, rng):
    """Cores re-reading L2-resident slices share the aggregate L2 bandwidth (l2.bytes_per_cycle)."""
    blocks, tile = int(rng.integers(40, 48)), 64 * int(rng.integers(300, 600))  # 75-150 KB DMAs: near the path rate
    n = tile * int(rng.integers(2, 4))
    base, x = _reread(mem, rng, blocks, n, tile, 8, None)
    assert base["l2_hit_bytes"] >= 7 * x - 2 * 512 * blocks
    assert base["cycles"] >= 0.93 * base["l2_hit_bytes"] / table["l2.bytes_per_cycle"]
    narrow, _ = _reread(mem, rng, blocks, n, tile, 8, {"l2.bytes_per_cycle": 1000})
    wide, _ = _reread(mem, rng, blocks, n, tile, 8, {"l2.bytes_per_cycle": 1e9})
    assert narrow["cycles"] >= 0.93 * narrow["l2_hit_bytes"] / 1000
    assert wide["cycles"] < base["cycles"] < narrow["cycles"]
    assert narrow["cycles"] > 2 * wide["cycles"]


def test_sampled_blocks_with_small_l2():
    """Block sampling gives the traced blocks the whole L2: with a capacity the FA working set overflows, the sampled
    model stays close to the full one (cores of one head share its K/V, the bulk of the traffic)."""
    kw = dict(heads=6, seqlen=2048, head_dim=128, model_only=True, bins=0, overrides={"l2.bytes": 4e6})
    full, part = profiler.profile(**kw), profiler.profile(**kw, sample_blocks=3)
    roomy = profiler.profile(**{**kw, "overrides": {}})
    assert full["hbm_bytes"] > 5 * roomy["hbm_bytes"]  # the small L2 misses on the K/V re-reads
    assert 0.75 * full["hbm_bytes"] <= part["hbm_bytes"] <= 1.25 * full["hbm_bytes"]
    assert part["modeled_time_us"] == pytest.approx(full["modeled_time_us"], rel=0.2)
