"""Modeled benchmark sweep: this package's FlashAttention forward and backward against the naive unfused attention
(python/npu_flash_attn/tools/baseline.py: S = Q K^T to GM, a 3-pass softmax kernel, O = P V), every launch on the CPU twin in
model-only mode and fed to the cycle model. Every number is "modeled (<chip>)", not a measurement.

    python scripts/bench.py --quick --out bench_out
    python scripts/bench.py --seqlens 1K,4K --dims 128 --causal both --passes fwd --out bench_out
    python scripts/bench.py --compare before/bench.csv after/bench.csv   (two sweeps' shared cases side by side)

Per row: the case, modeled us, TFLOPS (4*B*N*S^2*D, times the visible fraction for causal; 2.5x for the backward),
% of the cube peak, the binding bound (profiler.BOUNDS), the error bars (us and % of peak at the joint corners of the
parameters' plausible ranges, and the parameter that moves the time most; --no-range skips them), and peak device
memory: the bytes of every GM buffer the launches hold at once,
from the tensor sizes: ours = Q, K, V, O + softmax_max/softmax_sum (B*N*S rows x 8 fp32 each) + the op's workspace
(its tiling's workspaceBytes, 16 MiB of it the Ascend C library's); the backward adds dO, dQ, dK, dV. Naive forward = Q,
K, V, O + S and P (fp16 [B, N, S, S], both alive during the softmax); naive backward = Q, K, V, O, dO, dV + P, dP, dS
(baseline.naive_peak_bytes). Writes bench.csv (and bench.png with matplotlib) into --out.
"""
from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from npu_flash_attn import progress, twin_backend  # noqa: E402
from npu_flash_attn.tools import baseline, profiler  # noqa: E402

RANGE = ["us_low", "us_high", "pct_peak_low", "pct_peak_high", "range_param"]  # the error bars, per side
COLUMNS = ["label", "pass", "seqlen", "head_dim", "heads", "causal", "ours_us", "ours_tflops", "ours_pct_peak",
           "ours_bound", "ours_peak_bytes"] + [f"ours_{c}" for c in RANGE] + [
           "naive_us", "naive_tflops", "naive_pct_peak", "naive_bound", "naive_peak_bytes"] + [
           f"naive_{c}" for c in RANGE] + ["speedup"]


def _size(text: str) -> int:
    t = text.strip().upper()
    return int(float(t[:-1]) * 1024) if t.endswith("K") else int(t)


def case_name(s: int, d: int, causal: bool, backward: bool) -> str:
    return f"{'bwd' if backward else 'fwd'} S={s} D={d}{' causal' if causal else ''}"


def ours_peak_bytes(b: int, n: int, s: int, d: int, workspace: int, backward: bool) -> int:
    tensors = 4 * b * n * s * d * 2          # Q, K, V, O (fp16/bf16)
    stats = 2 * b * n * s * 8 * 4            # softmax_max, softmax_sum
    grads = 4 * b * n * s * d * 2 if backward else 0  # dO, dQ, dK, dV
    return tensors + stats + grads + workspace


def _range_columns(side: str, rep: dict) -> dict:
    """The error-bar columns of one side (ours / naive) from its report (none without ranges)."""
    if "modeled_time_us_low" not in rep:
        return {}
    return {f"{side}_us_low": rep["modeled_time_us_low"], f"{side}_us_high": rep["modeled_time_us_high"],
            f"{side}_pct_peak_low": 100 * rep["utilization_low"],
            f"{side}_pct_peak_high": 100 * rep["utilization_high"],
            f"{side}_range_param": rep["range_param"] or "-"}


def run_case(chip: str, heads: int, s: int, d: int, causal: bool, backward: bool, sample: int, naive: bool,
             ranges: bool = True) -> dict:
    rep = profiler.profile(chip=chip, heads=heads, seqlen=s, head_dim=d, dtype="fp16", causal=causal,
                           backward=backward, bins=0, model_only=True, sample_blocks=sample, ranges=ranges)
    ws = int(twin_backend.last_launch_info().get("workspace_bytes", 0))
    row = {"label": f"modeled ({chip})", "pass": "bwd" if backward else "fwd", "seqlen": s, "head_dim": d,
           "heads": heads, "causal": int(causal), "ours_us": rep["modeled_time_us"], "ours_tflops": rep["tflops"],
           "ours_pct_peak": 100 * rep["utilization"], "ours_bound": rep["bound"],
           "ours_peak_bytes": ours_peak_bytes(1, heads, s, d, ws, backward), **_range_columns("ours", rep)}
    if naive:
        q = np.zeros((1, heads, s, d), np.float16)
        kw = dict(causal=causal, chip=chip, model=True, model_only=True, sample_blocks=sample, ranges=ranges)
        if backward:
            _, nv = baseline.naive_attention_backward(q, q, q, q, **kw)
        else:
            _, nv = baseline.naive_attention(q, q, q, **kw)
        row.update(naive_us=nv["modeled_time_us"], naive_tflops=nv["tflops"], naive_pct_peak=100 * nv["utilization"],
                   naive_bound=nv["bound"], naive_peak_bytes=nv["peak_bytes"],
                   speedup=nv["modeled_time_us"] / rep["modeled_time_us"], **_range_columns("naive", nv))
    return row


def _fmt(v) -> str:
    if v is None or v == "":
        return "-"
    if isinstance(v, float):
        return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"
    return str(v)


def _with_range(r: dict, key: str) -> str:
    """`key`'s cell, with its error bars [low - high] when the row has them."""
    lo, hi = r.get(f"{key}_low"), r.get(f"{key}_high")
    return _fmt(r.get(key)) + (f" [{_fmt(lo)} - {_fmt(hi)}]" if lo not in (None, "") else "")


def print_table(rows: list[dict], chip: str, title: str = "", other: str = "naive") -> None:
    """The markdown table of `rows` (COLUMNS); `other` names what the naive_* columns hold (scripts/bench_npu.py:
    the built-in op). Modeled times and % of peak carry their error bars, the `sensitive` columns the parameter that
    moves the time most."""
    print(title or f"All times modeled ({chip}); peak memory in MiB; [low - high]: the error bars.")
    print(f"| pass | S | D | causal | ours us | TFLOPS | % peak | bound | sensitive | MiB | {other} us | TFLOPS | % peak "
          "| bound | sensitive | MiB | speedup |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        mib = lambda k: _fmt(r[k] / 2**20) if r.get(k) not in (None, "") else "-"  # noqa: E731
        print(f"| {r['pass']} | {r['seqlen']} | {r['head_dim']} | {r['causal']} | {_with_range(r, 'ours_us')} | "
              f"{_fmt(r['ours_tflops'])} | {_with_range(r, 'ours_pct_peak')} | {r['ours_bound']} | "
              f"{r.get('ours_range_param', '-')} | {mib('ours_peak_bytes')} | {_with_range(r, 'naive_us')} | "
              f"{_fmt(r.get('naive_tflops'))} | {_with_range(r, 'naive_pct_peak')} | {r.get('naive_bound', '-')} | "
              f"{r.get('naive_range_param', '-')} | {mib('naive_peak_bytes')} | {_fmt(r.get('speedup'))} |")


def write_plot(rows: list[dict], path: Path, chip: str) -> bool:
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    keys = sorted({(r["pass"], r["head_dim"], r["causal"]) for r in rows})
    for p, d, c in keys:
        sel = sorted((r for r in rows if (r["pass"], r["head_dim"], r["causal"]) == (p, d, c)), key=lambda r: r["seqlen"])
        xs = [r["seqlen"] for r in sel]
        tag = f"{p} D={d}{' causal' if c else ''}"
        line, = ax.plot(xs, [r["ours_tflops"] for r in sel], marker="o", label=f"ours {tag}")
        if all(r.get("ours_us_low") not in (None, "") for r in sel):  # the error bars, as TFLOPS
            ax.fill_between(xs, [r["ours_tflops"] * r["ours_us"] / r["ours_us_high"] for r in sel],
                            [r["ours_tflops"] * r["ours_us"] / r["ours_us_low"] for r in sel], color=line.get_color(),
                            alpha=0.2)
        nv = [(r["seqlen"], r["naive_tflops"]) for r in sel if r.get("naive_tflops") not in (None, "")]
        if nv:
            ax.plot(*zip(*nv), marker="x", linestyle="--", label=f"naive {tag}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequence length S")
    ax.set_ylabel("TFLOPS")
    ax.set_title(f"modeled ({chip}): FlashAttention vs naive attention (band: the error bars)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def compare(before: Path, after: Path) -> None:
    """The markdown table of the cases two sweeps share (same pass, S, D, causal, N): modeled µs, % of peak and
    binding bound of each, and the speedup (before's time over after's)."""
    def load(path: Path) -> dict:
        with open(path, newline="") as f:
            return {(r["pass"], r["seqlen"], r["head_dim"], r["causal"], r["heads"]): r for r in csv.DictReader(f)}
    old, new = load(before), load(after)
    print(f"| pass | S | D | causal | N | before µs | % peak | bound | after µs | % peak | bound | speedup |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in (k for k in new if k in old):
        b, a = old[key], new[key]
        print(f"| {' | '.join(key)} | {_fmt(float(b['ours_us']))} | {_fmt(float(b['ours_pct_peak']))} | "
              f"{b['ours_bound']} | {_fmt(float(a['ours_us']))} | {_fmt(float(a['ours_pct_peak']))} | {a['ours_bound']} | "
              f"{float(b['ours_us']) / float(a['ours_us']):.2f}x |")


def add_grid_args(ap: argparse.ArgumentParser) -> None:
    """The benchmark grid's options (also scripts/bench_npu.py's)."""
    ap.add_argument("--seqlens", default="1K,2K,4K,8K,16K,32K", help="comma list; 1K = 1024")
    ap.add_argument("--dims", default="64,128,256")
    ap.add_argument("--causal", choices=["0", "1", "both"], default="both")
    ap.add_argument("--passes", choices=["fwd", "bwd", "both"], default="both")
    ap.add_argument("--heads", type=int, default=8, help="N (B = 1); B*N*ceil(S/128) should fill the AI cores")
    ap.add_argument("--quick", action="store_true", help="S 1K,4K; D 128; non-causal; forward")


def grid_cases(a: argparse.Namespace) -> list[tuple[int, int, bool, bool]]:
    """(S, D, causal, backward) for each case of the grid the options select."""
    if a.quick:
        a.seqlens, a.dims, a.causal, a.passes = "1K,4K", "128", "0", "fwd"
    seqlens = [_size(x) for x in a.seqlens.split(",") if x.strip()]
    dims = [int(x) for x in a.dims.split(",") if x.strip()]
    causals = [False, True] if a.causal == "both" else [a.causal == "1"]
    passes = [False, True] if a.passes == "both" else [a.passes == "bwd"]
    return [(s, d, c, bw) for bw in passes for d in dims for c in causals for s in seqlens]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_grid_args(ap)
    ap.add_argument("--chip", default="Ascend910B2")
    ap.add_argument("--sample-blocks", type=int, default=2, help="AI cores simulated per launch (0: all)")
    ap.add_argument("--no-naive", action="store_true", help="skip the naive baseline")
    ap.add_argument("--no-range", action="store_true", help="skip the error bars (extra model runs per launch)")
    ap.add_argument("--out", default="bench_out", help="directory for bench.csv / bench.png")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE_CSV", "AFTER_CSV"),
                    help="print the shared cases of two sweeps' bench.csv side by side and exit")
    a = ap.parse_args(argv)
    if a.compare:
        compare(Path(a.compare[0]), Path(a.compare[1]))
        return 0
    cases = grid_cases(a)
    rows, t0, sweep = [], time.time(), progress.Sweep(len(cases), "bench")
    for s, d, c, bw in cases:
        rows.append(run_case(a.chip, a.heads, s, d, c, bw, a.sample_blocks, not a.no_naive, not a.no_range))
        sweep.step(case_name(s, d, c, bw))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "bench.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, restval="")
        w.writeheader()
        w.writerows(rows)
    print_table(rows, a.chip)
    png = write_plot(rows, out / "bench.png", a.chip)
    print(f"\nwrote {out / 'bench.csv'}" + (f" and {out / 'bench.png'}" if png else " (no matplotlib: no plot)")
          + f"; {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
