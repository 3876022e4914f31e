"""Command line: `python -m npu_flash_attn demo` runs the forward FlashAttention kernel on the CPU twin and checks it
against the float64 reference and torch's SDPA; `python -m npu_flash_attn chips` lists the emulated chips;
`python -m npu_flash_attn profile` prints the cycle model's time of the forward or backward op (with --cp-world,
of context parallelism over several NPUs: tools/cp_model.py); `--version` the
package, torch and torch_npu versions."""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

SPARSE_NAMES = {0: "full attention", 1: "full attention (no mask given)", 2: "left-up causal",
                3: "right-down causal", 4: "band"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m npu_flash_attn",
                                description="npu-flash-attn: FlashAttention for Ascend NPUs (Ascend C), run on the "
                                            "CPU twin of the Ascend C API.")
    p.add_argument("--version", action="store_true", help="print the package, torch and torch_npu versions and exit")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")
    d = sub.add_parser("demo", help="run the forward op on the emulated chip and check it against the reference",
                       description="Runs npu::flash_attention on the CPU twin (default: B=1, N1=8, N2=2, S=1024, "
                                   "D=128, bf16, BSND, sparse_mode=3 right-down causal, scale=1/sqrt(D)), checks it "
                                   "with the FlashAttention criterion max|out-ref64| <= 2*max|lowprec-ref64| + 1e-5 and "
                                   "prints tiling, cores, errors and wall time. Exit code 1 if the check fails.")
    d.add_argument("--chip", help="emulated chip (default: $NPU_FA_CHIP or Ascend910B2); see `chips`")
    d.add_argument("--layout", default="BSND", type=str.upper, choices=["BSH", "SBH", "BSND", "BNSD", "TND"],
                   help="input_layout (default BSND); TND packs --batch sequences of --seq / --seq-kv tokens")
    d.add_argument("--batch", type=int, default=1, help="B (default 1)")
    d.add_argument("--heads", type=int, default=8, help="query heads N1 = head_num (default 8)")
    d.add_argument("--kv-heads", type=int, default=2, help="key/value heads N2 (default 2, GQA)")
    d.add_argument("--seq", type=int, default=1024, help="query length S1 (default 1024)")
    d.add_argument("--seq-kv", type=int, default=None, help="key/value length S2 (default: --seq)")
    d.add_argument("--dim", type=int, default=128, help="head dim D (default 128)")
    d.add_argument("--dim-v", type=int, default=None, help="value head dim Dv <= D (default: --dim)")
    d.add_argument("--dtype", default="bf16", choices=["fp16", "bf16"], help="input dtype (default bf16)")
    d.add_argument("--sparse-mode", type=int, default=3, choices=[0, 1, 2, 3, 4],
                   help="0/1 full, 2 left-up causal, 3 right-down causal (default), 4 band")
    d.add_argument("--pre-tokens", type=int, default=2147483647, help="band: keys before the diagonal (mode 4)")
    d.add_argument("--next-tokens", type=int, default=0, help="band: keys after the diagonal (mode 4, default 0)")
    d.add_argument("--scale", type=float, default=None, help="scale of QK^T (default 1/sqrt(D))")
    d.add_argument("--seed", type=int, default=None, help="random seed of the inputs (default: fresh)")
    sub.add_parser("chips", help="list the chips the twin emulates")
    pr = sub.add_parser("profile", help="modeled dav-2201 time of the forward or backward op (cycle model over the "
                                        "twin's trace)",
                        description="Runs the forward op (--backward: the backward op; BNSD, random inputs) on the "
                                    "twin with the trace on and "
                                    "prints the cycle model's time, TFLOPS, utilisation, per-pipe busy, every lower "
                                    "bound on the kernel time (the binding one marked) and the error bars: the range "
                                    "the time spans when the parameters move across their plausible ranges. Numbers "
                                    "are modeled, not measured (docs/cost_model.md).")
    pr.add_argument("--chip", default="Ascend910B2", help="chip of the model (default Ascend910B2)")
    pr.add_argument("--batch", type=int, default=1)
    pr.add_argument("--heads", type=int, default=8)
    pr.add_argument("--kv-heads", type=int, default=None, help="default: --heads")
    pr.add_argument("--seqlen", type=int, default=None, help="S1 (default 2048; with --infer 1)")
    pr.add_argument("--head-dim", type=int, default=128)
    pr.add_argument("--dtype", default="bf16", choices=["fp16", "bf16"])
    pr.add_argument("--causal", action="store_true", help="right-down causal (sparse_mode 3)")
    pr.add_argument("--backward", action="store_true", help="model the backward op (2.5x the forward's FLOPs)")
    pr.add_argument("--infer", action="store_true",
                    help="model npu_fused_infer_attention_score over a paged cache (S1 from --seqlen, default 1 "
                         "with --infer) and report hbm_utilization")
    pr.add_argument("--kv-seqlen", type=int, default=4096, help="with --infer: keys per batch (default 4096)")
    pr.add_argument("--block-size", type=int, default=128, help="with --infer: the cache's block size (default 128)")
    pr.add_argument("--kv-dtype", default=None, choices=["fp16", "bf16", "int8"],
                    help="with --infer: the cache's dtype (default: --dtype; int8: per-channel scales and offsets, their "
                         "bytes counted)")
    pr.add_argument("--baseline", action="store_true",
                    help="with --infer: also model a naive decode on the same cache (page gathers, Q K^T, softmax, "
                         "P V as separate launches) and report baseline_time_us and speedup_vs_baseline")
    pr.add_argument("--deterministic", action="store_true", help="with --backward: the deterministic schedule")
    pr.add_argument("--keep-prob", type=float, default=1.0, help="dropout keep probability (default 1: no dropout)")
    pr.add_argument("--scale", type=float, default=None, help="softmax scale (default head_dim^-0.5)")
    pr.add_argument("--inner-precise", type=int, default=0,
                    help="the op's inner_precise (1: high-performance mode, the forward's scores in the input dtype)")
    pr.add_argument("--lazy-rescale", choices=("off", "1", "2"), default=None,
                    help="the forward's lazy rescale (twin tuning, twin_backend.set_lazy_rescale_override): off, or "
                         "on with 1 or 2 score tiles beside the resident output in L0C (default: the tiling's choice)")
    pr.add_argument("--residual", choices=("on", "off"), default=None,
                    help="the forward's output residual (written by the forward, read by the backward; default: on "
                         "with --backward, as the autograd runs it, off for the forward alone)")
    pr.add_argument("--model-only", action="store_true",
                    help="run the kernels without their arithmetic: the same trace, seconds instead of minutes")
    pr.add_argument("--sample-blocks", type=int, default=0, metavar="K",
                    help="with --model-only: run K evenly spaced AI cores, each standing for numBlocks/K (default: all)")
    pr.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="override a cost-model parameter (docs/cost_model.md), e.g. fix.l0c_gm.bw=128; repeatable")
    pr.add_argument("--no-range", action="store_true",
                    help="skip the error bars (the model re-run at each end of every parameter's plausible range)")
    pr.add_argument("--cp-world", type=int, default=None, metavar="W",
                    help="context parallelism over W NPUs (8 per node): model --cp-algo's forward and backward on each "
                         "rank, --seqlen being the whole sequence (zigzag), with the link model of "
                         "tools/cp_model.py; prints compute, exposed communication and CP efficiency")
    pr.add_argument("--cp-algo", default="ring", choices=["ring", "ulysses", "hybrid", "allgather"],
                    help="with --cp-world: the algorithm (default ring)")
    pr.add_argument("--ulysses-degree", type=int, default=None, help="with --cp-algo hybrid: ranks per all-to-all")
    pr.add_argument("--link", action="append", default=[], metavar="KEY=VALUE",
                    help="with --cp-world: override a link parameter (hccs.gbps, hccs.latency_us, roce.gbps, "
                         "roce.latency_us); repeatable")
    pr.add_argument("--json", action="store_true", help="print one JSON object")
    pr.add_argument("--out", default=None, help="directory for timeline.png and trace.json (Perfetto)")
    return p


def _make_inputs(a, gen):
    import torch
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[a.dtype]
    B, N1, N2, S1, S2, D, Dv = a.batch, a.heads, a.kv_heads, a.seq, a.seq_kv, a.dim, a.dim_v

    def rnd(*shape):
        return torch.randn(*shape, generator=gen).to(dtype)
    extra = {}
    if a.layout == "TND":
        q, k, v = rnd(B * S1, N1, D), rnd(B * S2, N2, D), rnd(B * S2, N2, Dv)
        extra = dict(actual_seq_qlen=[S1 * (i + 1) for i in range(B)], actual_seq_kvlen=[S2 * (i + 1) for i in range(B)])
    else:
        shape = {"BSH": lambda S, N, d: (B, S, N * d), "SBH": lambda S, N, d: (S, B, N * d),
                 "BSND": lambda S, N, d: (B, S, N, d), "BNSD": lambda S, N, d: (B, N, S, d)}[a.layout]
        q, k, v = rnd(*shape(S1, N1, D)), rnd(*shape(S2, N2, D)), rnd(*shape(S2, N2, Dv))
    return q, k, v, extra


def _demo(a) -> int:
    import torch

    import npu_flash_attn
    from npu_flash_attn import twin_backend
    from npu_flash_attn.criterion import assert_close_fa, assert_stats_close
    from npu_flash_attn.reference import flash_attention_lowprec, flash_attention_reference
    a.seq_kv = a.seq if a.seq_kv is None else a.seq_kv
    a.dim_v = a.dim if a.dim_v is None else a.dim_v
    scale = 1.0 / math.sqrt(a.dim) if a.scale is None else a.scale
    seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "little")
    gen = torch.Generator().manual_seed(seed)
    try:
        if a.chip is not None:
            npu_flash_attn.set_chip(a.chip)
        chip = npu_flash_attn.get_chip()
        q, k, v, extra = _make_inputs(a, gen)
    except (ValueError, TypeError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    kw = dict(scale=scale, sparse_mode=a.sparse_mode, **extra)
    if a.sparse_mode == 4:
        kw.update(pre_tokens=a.pre_tokens, next_tokens=a.next_tokens)
    print(f"npu-flash-attn forward demo [twin: CPU emulation of {chip}, not hardware]")
    print(f"problem : {a.layout} B={a.batch} N1={a.heads} N2={a.kv_heads} S1={a.seq} S2={a.seq_kv} D={a.dim} "
          f"Dv={a.dim_v} {a.dtype} sparse_mode={a.sparse_mode} ({SPARSE_NAMES[a.sparse_mode]}"
          + (f", pre={a.pre_tokens}, next={a.next_tokens}" if a.sparse_mode == 4 else "")
          + f") scale={scale:.6g} seed={seed}")
    t0 = time.perf_counter()
    try:
        out, smax, ssum = torch.ops.npu.flash_attention(q, k, v, a.heads, a.layout, **kw)
    except (ValueError, TypeError, NotImplementedError) as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:  # TwinError and friends: the kernel failed on the twin
        print(f"FAIL (twin): the kernel raised {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    t_op = time.perf_counter() - t0
    info = npu_flash_attn.last_launch_info()
    if info is None:
        print("FAIL (twin): the op returned without a kernel launch (empty problem?)", file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    ref_o, ref_m, ref_s = flash_attention_reference(q, k, v, a.heads, a.layout, **kw)
    low = flash_attention_lowprec(q, k, v, a.heads, a.layout, **kw)
    t_ref = time.perf_counter() - t0
    aic = next((c["aic_num"] for c in twin_backend.ext().chips() if c["name"] == info.get("chip", chip)), None)
    tiling = ", ".join(f"{key}={val}" for key, val in info.items() if key not in ("chip", "twin_seconds"))
    print(f"tiling  : {tiling}")
    print(f"cores   : {info.get('block_dim')} of {aic} AI cores used (each 1 AIC + 2 AIV) on {info.get('chip', chip)}")
    ok = True
    lowerr = (low.double() - ref_o).abs().max().item()
    try:
        err, bound = assert_close_fa(out, ref_o, low)
    except AssertionError as e:
        ok = False
        err = (out.double() - ref_o).abs().max().item()
        bound = 2 * lowerr + 1e-5
        print(f"check   : {e}")
    try:
        stats = assert_stats_close(smax, ssum, ref_m, ref_s)
        stats_txt = (f"softmax_max err {stats['max_err']:.3e}, softmax_sum rel err {stats['sum_rel_err']:.3e}, "
                     f"invalid rows {stats['invalid_rows']}")
    except AssertionError as e:
        ok = False
        stats_txt = f"FAILED: {e}"
    print(f"error   : max|out - ref64| = {err:.3e}  (low-precision torch {a.dtype}: {lowerr:.3e}; "
          f"bound 2x + 1e-5 = {bound:.3e})")
    print(f"stats   : {stats_txt}")
    twin_s = info.get("twin_seconds")
    print(f"time    : {t_op:.3f} s wall for the op" + (f" ({twin_s:.3f} s in the twin launch)" if twin_s is not None
                                                      else "") + f" - CPU emulation time, not NPU time; reference "
          f"{t_ref:.3f} s")
    sdpa = _sdpa_comparison(a, q, k, v, kw, ref_o)
    if sdpa is not None:
        print(f"torch   : scaled_dot_product_attention on the same problem ({a.dtype}, CPU wall time): {sdpa[0]:.3f} s, "
              f"max|out - ref64| = {sdpa[1]:.3e}")
    print(f"result  : {'PASS' if ok else 'FAIL'} (twin)")
    print("your own tensors (CPU tensors run on the twin; torch_npu NPU tensors run the CANN kernel):\n"
          "    import torch, npu_flash_attn\n"
          "    q = torch.randn(2, 1024, 8, 128, dtype=torch.bfloat16)   # [B, S, N, D]\n"
          "    k, v = (torch.randn(2, 1024, 2, 128, dtype=torch.bfloat16) for _ in range(2))  # GQA: 2 kv heads\n"
          "    out, softmax_max, softmax_sum = npu_flash_attn.flash_attention(q, k, v, 8, \"BSND\", "
          "scale=128 ** -0.5, sparse_mode=3)")
    return 0 if ok else 1


def _sdpa_comparison(a, q, k, v, kw, ref_o):
    """(seconds, max error against the float64 reference) of torch's SDPA on the demo's problem, in its dtype, with
    the same visible keys; None for TND (SDPA has no varlen form)."""
    import torch

    from npu_flash_attn.layouts import from_bnsd, to_bnsd
    from npu_flash_attn.reference import visible_mask
    if a.layout == "TND":
        return None
    qb, kb, vb = (to_bnsd(t, a.layout, n) for t, n in ((q, a.heads), (k, a.kv_heads), (v, a.kv_heads)))
    vis = visible_mask(a.seq, a.seq_kv, a.sparse_mode, kw.get("pre_tokens", 2147483647),
                       kw.get("next_tokens", 2147483647))
    t0 = time.perf_counter()
    out = torch.nn.functional.scaled_dot_product_attention(qb, kb, vb, attn_mask=vis, scale=kw["scale"],
                                                           enable_gqa=a.heads != a.kv_heads)
    dt = time.perf_counter() - t0
    rows = vis.any(dim=-1)[None, None, :, None]  # rows that see no key: SDPA gives NaN, the op and reference 0
    out = from_bnsd(torch.where(rows, out, torch.zeros((), dtype=out.dtype)), a.layout)
    return dt, (out.double() - ref_o).abs().max().item()


def _chips() -> int:
    from npu_flash_attn import get_chip, twin_backend
    current = get_chip()
    for c in twin_backend.ext().chips():
        mark = "*" if c["name"] == current else " "
        print(f"{mark} {c['name']:<14} AIC {c['aic_num']:>2}  AIV {c['aiv_num']:>2}  UB {c['ub_size'] // 1024} KB  "
              f"L1 {c['l1_size'] // 1024} KB  L0A/B/C {c['l0a_size'] // 1024}/{c['l0b_size'] // 1024}/"
              f"{c['l0c_size'] // 1024} KB  cube {c['cube_freq_mhz']:.0f} MHz  HBM {c['hbm_gbps']:.0f} GB/s")
    return 0


def _key_values(option: str, items) -> dict:
    out = {}
    for kv in items:
        key, sep, val = kv.partition("=")
        if not sep:
            raise ValueError(f"{option} {kv!r}: expected KEY=VALUE")
        out[key.strip()] = float(val)
    return out


def _profile_cp(a) -> int:
    import json

    from npu_flash_attn.tools import cp_model
    try:
        if a.backward or a.deterministic or a.keep_prob != 1.0 or a.param:
            raise ValueError("--cp-world models the forward and the backward of the default schedule without dropout "
                             "or parameter overrides: drop --backward, --deterministic, --keep-prob and --param")
        problem = cp_model.CpProblem(world=a.cp_world, algo=a.cp_algo, batch=a.batch, heads=a.heads,
                                     kv_heads=a.kv_heads if a.kv_heads is not None else a.heads, seqlen=a.seqlen or 2048,
                                     head_dim=a.head_dim, causal=a.causal, ulysses_degree=a.ulysses_degree)
        rep = cp_model.cp_report(problem, cp_model.kernel_time(a.chip, a.head_dim, a.dtype, a.sample_blocks or 2),
                                 a.chip, _key_values("--link", a.link))
    except (ValueError, TypeError, NotImplementedError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(rep))
        return 0
    p = rep["problem"]
    print(f"{rep['label']}: context parallel {rep['algo']}"
          f"{' (ulysses degree %d)' % p['ulysses_degree'] if rep['algo'] == 'hybrid' else ''} over {p['world']} NPUs, "
          f"B={p['batch']} N={p['heads']} N2={p['kv_heads']} S={p['seqlen']} ({p['tokens_per_rank']} per rank) "
          f"D={p['head_dim']} {a.dtype}{' causal' if p['causal'] else ''}, zigzag")
    for d in ("forward", "backward", "step"):
        r = rep[d]
        print(f"{d:<9}: compute {r['compute_us']:9.1f} us, exposed communication {r['exposed_comm_us']:8.1f} us, CP "
              f"efficiency {100 * r['efficiency']:.1f} % [{100 * r['efficiency_low']:.1f} - "
              f"{100 * r['efficiency_high']:.1f}]" + ("" if d == "step" else "  exposed: " + ", ".join(
                  f"{k} {v:.1f} us" for k, v in r["exposed_by_term"].items())))
    return 0


def _profile(a) -> int:
    import json

    from npu_flash_attn.tools import profiler
    if a.cp_world is not None:
        return _profile_cp(a)
    try:
        overrides = _key_values("--param", a.param)
        if a.infer:
            rep = profiler.profile_infer(chip=a.chip, batch=a.batch, heads=a.heads, kv_heads=a.kv_heads,
                                         seqlen=a.seqlen or 1, kv_seqlen=a.kv_seqlen, block_size=a.block_size,
                                         head_dim=a.head_dim, dtype=a.dtype, kv_dtype=a.kv_dtype, overrides=overrides,
                                         model_only=a.model_only, sample_blocks=a.sample_blocks,
                                         ranges=not a.no_range, baseline=a.baseline)
        else:
            if a.lazy_rescale is not None:
                from .. import twin_backend
                twin_backend.set_lazy_rescale_override(0 if a.lazy_rescale == "off" else int(a.lazy_rescale))
            rep = profiler.profile(chip=a.chip, batch=a.batch, heads=a.heads, kv_heads=a.kv_heads,
                                   seqlen=a.seqlen or 2048, head_dim=a.head_dim, dtype=a.dtype, causal=a.causal,
                                   backward=a.backward, deterministic=a.deterministic, keep_prob=a.keep_prob,
                                   inner_precise=a.inner_precise, scale=a.scale, overrides=overrides, model_only=a.model_only, sample_blocks=a.sample_blocks,
                                   ranges=not a.no_range,
                                   residual=None if a.residual is None else a.residual == "on")
    except NotImplementedError as e:
        print(f"error: NotImplementedError: {e}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    files = profiler.write_outputs(rep, a.out) if a.out else {}
    pub = dict(profiler.public(rep), **({"files": files} if files else {}))
    if a.json:
        print(json.dumps(pub))
        for k, v in files.items():
            if not v:
                print(f"skipped: {k} (needs matplotlib: pip install matplotlib, or the package's [profile] extra)",
                      file=sys.stderr)
        return 0
    p = rep["problem"]
    if p.get("infer"):
        print(f"{rep['label']}: inference B={p['batch']} N={p['heads']} N2={p['kv_heads']} S1={p['seqlen']} "
              f"KV={p['kv_seqlen']} block={p['block_size']} D={p['head_dim']} {p['dtype']}, {rep['block_dim']} AI "
              f"cores, {rep['splits']} KV split(s)")
        print(f"time    : {rep['modeled_time_us']:.1f} us; HBM {rep['hbm_bytes_required'] / 1e6:.2f} MB required, "
              f"{100 * rep['hbm_utilization']:.1f} % of the HBM bandwidth")
        if "baseline" in rep:
            print(f"naive   : {rep['baseline_time_us']:.1f} us ({' + '.join(rep['baseline']['launch_names'])}); "
                  f"ours {rep['speedup_vs_baseline']:.2f}x faster")
        return 0
    what = ("backward (deterministic)" if p["deterministic"] else "backward") if p["backward"] else "forward"
    how = "" if not p["model_only"] else (f", model-only, {p['sample_blocks']} sampled cores" if p["sample_blocks"]
                                          else ", model-only")
    print(f"{rep['label']}: {what} B={p['batch']} N={p['heads']} N2={p['kv_heads']} S={p['seqlen']} "
          f"D={p['head_dim']} {p['dtype']}{' causal' if p['causal'] else ''}"
          f"{' keep_prob=%g' % p['keep_prob'] if p['keep_prob'] < 1 else ''}"
          f"{' inner_precise=%d' % p['inner_precise'] if p['inner_precise'] else ''}"
          f"{' scale=%g' % a.scale if a.scale is not None else ''}, {rep['block_dim']} AI cores{how}")
    print(f"time    : {rep['modeled_time_us']:.1f} us (kernel {rep['kernel_time_us']:.1f} + launch "
          f"{rep['launch_overhead_us']:.1f})")
    print(f"TFLOPS  : {rep['tflops']:.1f} of {rep['cube_peak_tflops']:.1f} cube peak ({100 * rep['utilization']:.1f} %)")
    if "modeled_time_us_low" in rep:
        print(f"{rep['label']}: {rep['modeled_time_us']:.1f} us [{rep['modeled_time_us_low']:.1f} - "
              f"{rep['modeled_time_us_high']:.1f}], {100 * rep['utilization']:.1f} % "
              f"[{100 * rep['utilization_low']:.1f} - "
              f"{100 * rep['utilization_high']:.1f}] of peak; most sensitive: {rep['range_param'] or 'none'} "
              f"(error bars: {rep['range_seconds']:.1f} s of extra model runs)")
    print("busy    : " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in rep["pipe_busy"].items()))
    print("bounds  : lower bounds on the kernel time (* binding)")
    for name, us in rep["bounds"].items():
        print(f"        {'*' if name == rep['bound'] else ' '} {name:<9} {us:10.1f} us  {profiler.BOUNDS[name]}")
    for k, v in files.items():
        print(f"wrote   : {v}" if v else f"skipped : {k} (needs matplotlib: pip install matplotlib, or the package's "
              "[profile] extra)")
    return 0


def _version() -> str:
    from importlib import metadata

    import torch

    import npu_flash_attn
    from npu_flash_attn import npu
    try:
        tnpu = metadata.version("torch_npu")
    except metadata.PackageNotFoundError:
        tnpu = "not installed"
    st = npu.status()
    return (f"npu-flash-attn {npu_flash_attn.__version__} (torch {torch.__version__}, torch_npu {tnpu}, NPU adapter "
            f"{'loaded from ' + str(st.path) if st.loaded else 'not loaded'}; CPU twin chips: "
            f"{', '.join(npu_flash_attn.chip.available_chips())})")


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.version:
        print(_version())
        return 0
    if args.cmd == "demo":
        return _demo(args)
    if args.cmd == "chips":
        return _chips()
    if args.cmd == "profile":
        return _profile(args)
    _parser().print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
