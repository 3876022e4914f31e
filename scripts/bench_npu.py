"""On-device benchmark (not yet run on hardware): npu::flash_attention against torch_npu's built-in
npu_fusion_attention / npu_fusion_attention_grad on an Ascend NPU, over scripts/bench.py's grid (B = 1, N heads,
S x D, causal or not, forward and backward), fp16 BNSD, scale 1/sqrt(D).

    python scripts/bench_npu.py --quick --out bench_npu_out
    python scripts/bench_npu.py --seqlens 1K,4K,16K --dims 128 --causal both --passes both --out bench_npu_out

Per case: device time per call (NPU events around `--repeats` calls after `--warmup` calls, torch.npu.synchronize()
before and after), TFLOPS (scripts/bench.py's count: 4*B*N*S^2*D, times the visible fraction (S+1)/(2S) for causal,
2.5x for the backward) and peak device memory (torch.npu.max_memory_allocated() over one call, inputs included).
The backward times the gradient op alone, from its own forward's outputs. Causal: sparse_mode=3 with the
compressed [2048, 2048] mask for both ops. Writes bench.csv in scripts/bench.py's format; the naive_* columns hold
the built-in, the % peak columns are left empty (the peak of the device is not known here). Our op's Python checks
(finite inputs, scale) run on every call and are part of its time. Without an NPU it exits with status 2 and says
what is missing.
"""
from __future__ import annotations

import argparse
import csv
import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "scripts"))

import bench  # noqa: E402  (grid options, CSV columns and table writer)
from npu_flash_attn import progress  # noqa: E402


def npu_missing() -> str:
    """'' when an NPU, torch_npu and the adapter are there, else what is missing."""
    if importlib.util.find_spec("torch_npu") is None:
        return "torch_npu is not installed"
    import torch
    import torch_npu  # noqa: F401
    if not torch.npu.is_available():
        return "torch.npu.is_available() is False (no NPU visible)"
    import npu_flash_attn
    st = npu_flash_attn.npu.status()
    return "" if st.loaded else st.reason


def flops(s: int, d: int, heads: int, causal: bool, backward: bool) -> float:
    f = 4.0 * heads * s * s * d * ((s + 1) / (2 * s) if causal else 1.0)
    return f * (2.5 if backward else 1.0)


def timed(fn, warmup: int, repeats: int) -> tuple[float, int]:
    """(mean device us per call, peak bytes allocated during one call)."""
    import torch
    for _ in range(warmup):
        fn()
    torch.npu.synchronize()
    torch.npu.reset_peak_memory_stats()
    fn()
    torch.npu.synchronize()
    peak = torch.npu.max_memory_allocated()
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    torch.npu.synchronize()
    return start.elapsed_time(end) * 1e3 / repeats, peak


def run_case(heads: int, s: int, d: int, causal: bool, backward: bool, warmup: int, repeats: int,
             device: str) -> dict:
    import torch
    import torch_npu
    from npu_flash_attn.masks import compressed_causal_mask
    q, k, v = (torch.randn(1, heads, s, d, dtype=torch.float16, device=device) for _ in range(3))
    scale, mode = d ** -0.5, 3 if causal else 0
    mask = compressed_causal_mask().to(device) if causal else None
    ours_fwd = lambda: torch.ops.npu.flash_attention(q, k, v, heads, "BNSD", scale=scale, sparse_mode=mode,  # noqa
                                                     atten_mask=mask)
    builtin_fwd = lambda: torch_npu.npu_fusion_attention(q, k, v, heads, "BNSD", atten_mask=mask, scale=scale,  # noqa
                                                         sparse_mode=mode)
    if backward:
        o, m, l = ours_fwd()
        bo = builtin_fwd()
        dy = torch.randn_like(o)
        ours = lambda: torch.ops.npu.flash_attention_grad(  # noqa: E731
            q, k, v, dy, heads, "BNSD", atten_mask=mask, softmax_max=m, softmax_sum=l, attention_in=o, scale=scale,
            sparse_mode=mode)
        builtin = lambda: torch_npu.npu_fusion_attention_grad(  # noqa: E731
            q, k, v, dy, heads, "BNSD", atten_mask=mask, softmax_max=bo[1], softmax_sum=bo[2], attention_in=bo[0],
            scale_value=scale, seed=bo[4], offset=bo[5], numels=bo[6], sparse_mode=mode)
    else:
        ours, builtin = ours_fwd, builtin_fwd
    f = flops(s, d, heads, causal, backward)
    us, peak = timed(ours, warmup, repeats)
    bus, bpeak = timed(builtin, warmup, repeats)
    return {"label": f"measured ({torch.npu.get_device_name()}); naive = npu_fusion_attention",
            "pass": "bwd" if backward else "fwd", "seqlen": s, "head_dim": d, "heads": heads, "causal": int(causal),
            "ours_us": us, "ours_tflops": f / us / 1e6, "ours_pct_peak": "", "ours_bound": "-",
            "ours_peak_bytes": peak, "naive_us": bus, "naive_tflops": f / bus / 1e6, "naive_pct_peak": "",
            "naive_bound": "-", "naive_peak_bytes": bpeak, "speedup": bus / us}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bench.add_grid_args(ap)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--device", default="npu:0")
    ap.add_argument("--out", default="bench_npu_out", help="directory for bench.csv")
    a = ap.parse_args(argv)
    missing = npu_missing()
    if missing:
        print(f"bench_npu.py: no NPU to benchmark on: {missing}. Run it on an Ascend machine with torch_npu 2.14.0 "
              "and the adapter built (README: Build and install on an Ascend machine); for modeled numbers without "
              "an NPU use scripts/bench.py.", file=sys.stderr)
        return 2
    cases = bench.grid_cases(a)
    rows, t0, sweep = [], time.time(), progress.Sweep(len(cases), "bench_npu")
    for s, d, c, bw in cases:
        rows.append(run_case(a.heads, s, d, c, bw, a.warmup, a.repeats, a.device))
        sweep.step(bench.case_name(s, d, c, bw))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "bench.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=bench.COLUMNS, restval="")
        w.writeheader()
        w.writerows(rows)
    import torch
    bench.print_table(rows, a.device, title=f"Measured on {torch.npu.get_device_name()} (device time per call, "
                                            "NPU events); peak memory in MiB.", other="built-in")
    print(f"\nwrote {out / 'bench.csv'}; {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
