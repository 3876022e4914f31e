"""The benchmark kernels and scripts: the multi-core GEMM (tools/kernels/gemm.cpp) against numpy on odd sizes, its
model-only trace and model against the full run's, the naive attention forward and backward
(python/npu_flash_attn/tools/baseline.py) against float64 references, naive slower than the op under the model,
scripts/bench.py's CSV (with the error bars) and calibrate.py's GEMM rows."""
import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from npu_flash_attn import _C, twin
from npu_flash_attn.tools import baseline, profiler

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import bench  # noqa: E402


def _gemm_case(rng, b_trans, a_trans=False, m=None):
    r = lambda lo, hi: int(rng.integers(lo, hi + 1))  # noqa: E731
    batch, M, N, K = r(1, 2), m or r(2, 300), r(20, 330), r(17, 600)
    a = rng.standard_normal((batch, K, M) if a_trans else (batch, M, K)).astype(np.float16)
    b = rng.standard_normal((batch, N, K) if b_trans else (batch, K, N)).astype(np.float16)
    t = lambda x, yes: np.swapaxes(x, 1, 2) if yes else x  # noqa: E731
    ref = t(a, a_trans).astype(np.float32) @ t(b, b_trans).astype(np.float32)
    return a, b, ref


@pytest.mark.parametrize("a_trans,b_trans", [(False, False), (False, True), (True, False), (True, True)])
def test_gemm_matches_numpy(rng, a_trans, b_trans):
    # odd M, N, K over several tiles per core (3 cores), K tails inside an L1 chunk and an L0 piece; M = 1 included
    for m in (None, 1):
        a, b, ref = _gemm_case(rng, b_trans, a_trans, m)
        for out in (np.float32, np.float16):
            c = baseline.gemm(a, b, a_trans=a_trans, b_trans=b_trans, out_dtype=out, blocks=3)
            assert c.dtype == out
            # fp16 products are exact in fp32; fp32 accumulation order and the fp16 output rounding differ
            tol = 1e-4 if out == np.float32 else 1e-3
            np.testing.assert_allclose(c.astype(np.float32), ref, rtol=tol, atol=tol * np.abs(ref).max())


def test_gemm_model_only_trace_equals_full(rng):
    a, b, ref = _gemm_case(rng, False)
    lib = baseline._lib("gemm.cpp")
    runs = []
    for mo in (False, True):
        c, rep = baseline.gemm(a, b, blocks=5, model=True, model_only=mo)
        runs.append((lib.last_trace(), rep["cycles"], c))
    assert runs[0][0] == runs[1][0] and runs[0][1] == runs[1][1]  # the same records, the same modeled cycles
    np.testing.assert_allclose(runs[0][2], ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    assert not np.allclose(runs[1][2], ref)  # model-only: the arithmetic was skipped


def test_gemm_sampled_model_matches_full():
    # 8 cores, 2 equal tiles each: 2 sampled cores stand for all 8
    a = np.zeros((512, 384), np.float16)
    b = np.zeros((384, 1024), np.float16)
    _, full = baseline.gemm(a, b, blocks=8, model=True, model_only=True)
    _, part = baseline.gemm(a, b, blocks=8, model=True, model_only=True, sample_blocks=2)
    assert part["modeled_time_us"] == pytest.approx(full["modeled_time_us"], rel=0.03)
    assert part["cube_macs"] == pytest.approx(full["cube_macs"], rel=1e-6)
    with pytest.raises(ValueError, match="block_scale must be >= 1"):
        _C.cost_model_trace([], "Ascend910B2", {}, 1, 0, 0.5)
    with pytest.raises(twin.TwinError, match="sampleBlocks needs a model-only launch"):
        baseline._lib("gemm.cpp").launch("gemm", 8, a, b, np.zeros((512, 1024), np.float32),
                                         np.array([512, 1024, 384, 1, 0, 0, 0], np.int32), kernel_type="aic",
                                         sample_blocks=[0, 7])


def test_naive_attention_matches_reference(rng):
    B, N, S1, S2, D = 1, 2, 100, 144, 72
    q, k, v = (rng.standard_normal((B, N, s, D)).astype(np.float16) for s in (S1, S2, S2))
    scale = 1 / math.sqrt(D)
    for causal in (False, True):
        out = baseline.naive_attention(q, k, v, causal=causal)
        s64 = q.astype(np.float64) @ np.swapaxes(k, 2, 3).astype(np.float64) * scale
        mask = np.arange(S2)[None] > np.arange(S1)[:, None] + (S2 - S1)
        if causal:
            s64 = np.where(mask, -np.inf, s64)
        p64 = np.exp(s64 - s64.max(-1, keepdims=True))
        p64 /= p64.sum(-1, keepdims=True)
        ref = p64 @ v.astype(np.float64)
        # the same three steps in fp16 torch (the low-precision path the bound is relative to)
        tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
        ts = (tq @ tk.transpose(2, 3)) * scale
        if causal:
            ts = ts.masked_fill(torch.from_numpy(mask), float("-inf"))
        low = (torch.softmax(ts, -1) @ tv).double().numpy()
        # 3x, as for the op's gradients: three fp16 rounding points (S, P, O), in another order than torch's
        assert np.abs(out - ref).max() <= 3 * np.abs(low - ref).max() + 1e-5


def test_naive_attention_backward_matches_reference(rng):
    B, N, S1, S2, D = 1, 2, 90, 160, 40
    q, k, v, do = (rng.standard_normal((B, N, s, D)).astype(np.float16) for s in (S1, S2, S2, S1))
    mask = torch.from_numpy(np.arange(S2)[None] > np.arange(S1)[:, None] + (S2 - S1))
    for causal in (False, True):
        grads = baseline.naive_attention_backward(q, k, v, do, causal=causal)

        def autograd(dt):  # the same math through torch autograd in dt
            t = [torch.tensor(x, dtype=dt, requires_grad=True) for x in (q, k, v)]
            s = (t[0] @ t[1].transpose(2, 3)) / math.sqrt(D)
            if causal:
                s = s.masked_fill(mask, float("-inf"))
            (torch.softmax(s, -1) @ t[2]).backward(torch.tensor(do, dtype=dt))
            return [x.grad.double().numpy() for x in t]
        ref, low = autograd(torch.float64), autograd(torch.float16)
        for g, r, lo in zip(grads, ref, low):
            assert np.abs(g - r).max() <= 3 * np.abs(lo - r).max() + 1e-5


def test_naive_attention_slower_than_ours():
    heads, s, d = 4, 512, 128
    ours = profiler.profile(heads=heads, seqlen=s, head_dim=d, dtype="fp16", model_only=True, bins=0)
    q = np.zeros((1, heads, s, d), np.float16)
    _, naive = baseline.naive_attention(q, q, q, model=True, model_only=True)
    assert len(naive["launches"]) == 3
    assert naive["modeled_time_us"] > ours["modeled_time_us"]
    assert naive["peak_bytes"] == 2 * (4 * heads * s * d + 2 * heads * s * s)
    back = profiler.profile(heads=heads, seqlen=s, head_dim=d, dtype="fp16", backward=True, model_only=True, bins=0)
    _, naive_back = baseline.naive_attention_backward(q, q, q, q, model=True, model_only=True)
    assert len(naive_back["launches"]) == 5 and naive_back["flops"] == pytest.approx(back["flops"])
    # (no ordering: at this small size the op's first-version backward models slower than the naive one)
    assert naive_back["modeled_time_us"] == pytest.approx(sum(r["modeled_time_us"] for r in naive_back["launches"]))


def test_bench_tiny_run_writes_csv(tmp_path, capsys):
    assert bench.main(["--seqlens", "512", "--dims", "64", "--causal", "0", "--passes", "fwd", "--heads", "3",
                       "--out", str(tmp_path)]) == 0
    with open(tmp_path / "bench.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == bench.COLUMNS and len(rows) == 1
    r = rows[0]
    assert r["label"] == "modeled (Ascend910B2)" and (r["pass"], r["seqlen"], r["head_dim"]) == ("fwd", "512", "64")
    for key in ("ours_us", "ours_tflops", "naive_us", "naive_tflops", "ours_peak_bytes", "naive_peak_bytes"):
        assert float(r[key]) > 0
    assert float(r["speedup"]) == pytest.approx(float(r["naive_us"]) / float(r["ours_us"]))
    for side in ("ours", "naive"):  # the error bars hold the figure
        assert float(r[f"{side}_us_low"]) < float(r[f"{side}_us"]) < float(r[f"{side}_us_high"])
        assert float(r[f"{side}_pct_peak_low"]) < float(r[f"{side}_pct_peak"]) < float(r[f"{side}_pct_peak_high"])
        assert r[f"{side}_range_param"] in {row["key"] for row in _C.cost_params("Ascend910B2")}
    assert "modeled (Ascend910B2)" in capsys.readouterr().out


def test_calibrate_json_has_gemm_rows():
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "calibrate.py"), "--json", "--gemm-only"],
                         capture_output=True, text=True, check=True)
    rows = json.loads(res.stdout)
    assert [r["published"] for r in rows] == [186.8, 280.5, 308.0, 286.0]
    # the GM->L1 latency was fitted to 6144^3 alone; the other sizes are held out
    assert [r["role"] for r in rows] == ["validation", "validation", "fit", "validation"]
    assert abs(rows[2]["error"]) < 0.15
    for r in rows:
        assert set(r) == {"case", "role", "predicted", "published", "unit", "error", "source"} and r["unit"] == "TFLOPS"
        assert r["error"] == pytest.approx(r["predicted"] / r["published"] - 1, abs=1e-3)
        assert 0 < r["predicted"] < 353.9  # below the 24-core cube peak


def test_naive_decode_matches_reference(rng):
    # GQA 8/2, a random permuted block table, block 32: the gather must follow the table, each query head its KV head
    B, N1, N2, block, pages, D = 2, 8, 2, 32, 3, 64
    q = rng.standard_normal((B, N1, 1, D)).astype(np.float16)
    kc, vc = (rng.standard_normal((B * pages + 1, N2, block, D)).astype(np.float16) for _ in range(2))
    table = rng.permutation(B * pages + 1)[:B * pages].astype(np.int32).reshape(B, pages)
    out = baseline.naive_decode(q, kc, vc, table)
    k, v = (np.concatenate([c[table[b]].transpose(1, 0, 2, 3).reshape(N2, pages * block, D)[None] for b in range(B)])
            for c in (kc, vc))  # [B, N2, S2, D]
    k, v = (np.repeat(x, N1 // N2, axis=1) for x in (k, v))
    s64 = q.astype(np.float64) @ np.swapaxes(k, 2, 3).astype(np.float64) / math.sqrt(D)
    p64 = np.exp(s64 - s64.max(-1, keepdims=True))
    ref = (p64 / p64.sum(-1, keepdims=True)) @ v.astype(np.float64)
    tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
    low = (torch.softmax(tq @ tk.transpose(2, 3) / math.sqrt(D), -1) @ tv).double().numpy()
    assert np.abs(out - ref).max() <= 3 * np.abs(low - ref).max() + 1e-5  # 3x: as test_naive_attention's


def test_profile_infer_reports_the_naive_decode():
    B, N1, N2, kv, D = 2, 8, 2, 512, 128
    rep = profiler.profile_infer(batch=B, heads=N1, kv_heads=N2, kv_seqlen=kv, head_dim=D, model_only=True, bins=0,
                                 baseline=True)
    base = rep["baseline"]
    assert base["launch_names"][:2] == ["gather K pages", "gather V pages"] and len(base["launches"]) == 5
    assert rep["baseline_time_us"] == pytest.approx(sum(x["modeled_time_us"] for x in base["launches"]))
    assert rep["speedup_vs_baseline"] == rep["baseline_time_us"] / rep["modeled_time_us"]
    # the gathers alone read and write K and V once each: at least twice the bytes the fused kernel must read
    kv_bytes = 2 * B * N2 * kv * D * 2
    assert base["gm_bytes"] >= 2 * kv_bytes
    assert rep["speedup_vs_baseline"] > 1
    with pytest.raises(ValueError, match="kv_seqlen a multiple of block_size"):
        profiler.profile_infer(kv_seqlen=500, model_only=True, bins=0, baseline=True)
    # P V at KV = 64K + 16: P's stored rows are longer than gemm.cpp's Nd2Nz loads can take
    with pytest.raises(ValueError, match="rows of 65552 elements"):
        baseline.gemm(np.zeros((1, 65552), np.float16), np.zeros((65552, 16), np.float16), model_only=True)


def test_compare_prints_shared_cases(tmp_path, capsys):
    # two hand-written sweeps: only the case both hold is printed, with each side's figures and before / after
    def write(name, rows):
        path = tmp_path / name
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=bench.COLUMNS, restval="")
            w.writeheader()
            w.writerows(rows)
        return path
    case = dict(label="modeled", seqlen=2048, head_dim=128, heads=8, causal=0)
    before = write("b.csv", [{**case, "pass": "fwd", "ours_us": 300.0, "ours_pct_peak": 30.0, "ours_bound": "aiv.V"},
                             {**case, "pass": "bwd", "ours_us": 900.0, "ours_pct_peak": 25.0, "ours_bound": "FIX"}])
    after = write("a.csv", [{**case, "pass": "fwd", "ours_us": 200.0, "ours_pct_peak": 45.0, "ours_bound": "l2"},
                            {**case, "seqlen": 4096, "pass": "fwd", "ours_us": 1.0, "ours_pct_peak": 1.0,
                             "ours_bound": "l2"}])
    assert bench.main(["--compare", str(before), str(after)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| fwd")]
    assert rows == ["| fwd | 2048 | 128 | 0 | 8 | 300.0 | 30.0 | aiv.V | 200.0 | 45.0 | l2 | 1.50x |"]
