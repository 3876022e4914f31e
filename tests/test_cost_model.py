"""Cycle model (twin/include/twin/costmodel) and profiler: isolated instruction costs equal the parameter table,
pipelining and serialisation move the modeled time the right way, FA runs respect the roofline, and the profiler's
JSON and files."""
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import _C, profiler, twin
from npu_flash_attn.__main__ import main

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
    return {causal: profiler.profile(chip=CHIP, heads=3, kv_heads=1, seqlen=397, head_dim=128, dtype="bf16",
                                     causal=causal, bins=50) for causal in (False, True)}


def test_fa_respects_roofline(fa_reports):
    for causal, rep in fa_reports.items():
        us = rep["kernel_time_us"]
        assert us >= rep["roofline_us"]["cube"] and us >= rep["roofline_us"]["hbm"]
        assert us >= max(rep["roofline_us"].values()) * (1 - 1e-9)
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
    assert pub["bound"] in pub["roofline_us"] and json.loads(json.dumps(pub)) == pub
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
    for deterministic, launches in ((False, 3), (True, 2)):
        rep = profiler.profile(heads=2, seqlen=200, head_dim=64, backward=True, deterministic=deterministic)
        assert len(rep["launches"]) == launches
        assert rep["modeled_time_us"] == pytest.approx(sum(p["modeled_time_us"] for p in rep["launches"]))
        assert rep["modeled_time_us"] > fwd["modeled_time_us"]  # 5 (fast) or 7 matmuls per tile against 2
        assert rep["flops"] == pytest.approx(2.5 * fwd["flops"])
        for bound in rep["roofline_us"].values():
            assert rep["modeled_time_us"] >= bound  # never faster than a roofline bound
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
