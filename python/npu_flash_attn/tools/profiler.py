"""Modeled dav-2201 time of the forward or backward op: runs it on the CPU twin with the instruction trace on and feeds the
per-core traces to the cycle model (twin/include/twin/costmodel, parameters and sources in docs/cost_model.md).
Numbers are "modeled (<chip>)", not measurements."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

from .. import twin_backend
from ..chip import get_chip, set_chip
from ..problem import INT32_MAX

AIC_PIPES = ("S", "MTE1", "MTE2", "MTE3", "M", "FIX")
AIV_PIPES = ("S", "MTE2", "MTE3", "V")
# The report's lower bounds on the kernel time, in order, with what each counts. A pipe's bound is its busiest core's
# busy time (the pipe runs one instruction at a time); `bound` names the largest.
BOUNDS = {
    "cube": "FLOPs at the cube peak",
    "aic.MTE1": "L1->L0A/L0B/BT/FB loads, busiest AIC",
    "aic.MTE2": "GM->L1 and L1 fills, busiest AIC",
    "aic.MTE3": "L1->GM, busiest AIC",
    "aic.FIX": "Fixpipe L0C->GM/L1, busiest AIC",
    "aic.M": "Mmad, busiest AIC",
    "aic.S": "scalar, busiest AIC",
    "aiv.MTE2": "GM->UB, busiest AIV",
    "aiv.MTE3": "UB->GM/L1, busiest AIV",
    "aiv.V": "vector, busiest AIV",
    "aiv.S": "scalar, busiest AIV",
    "l2": "all GM bytes at the aggregate L2 rate",
    "hbm": "HBM bytes at the HBM rate",
}


def _chip_row(chip: str) -> dict:
    for c in twin_backend.ext().chips():
        if c["name"] == chip:
            return c
    raise ValueError(f"chip {chip!r} is not one of {[c['name'] for c in twin_backend.ext().chips()]}")


def model_trace(lib, chip: str = "Ascend910B2", *, overrides: Optional[dict] = None, keep_blocks: int = 1,
                bins: int = 0, ranges=False) -> dict:
    """Cycle model of the last traced launch of a standalone kernel (`npu_flash_attn.twin.KernelLibrary`).
    ranges=True adds the error bars (`range`: the model re-run with each parameter of the table that has a plausible
    range at its ends, then at the two joint corners); a dict {key: (lo, hi)} replaces those rows' ranges."""
    return twin_backend.ext().cost_model_trace(lib.trace_refs(), chip, overrides or {}, keep_blocks, bins, 1.0, ranges)


def _cube_peak(cm: dict) -> float:
    """FLOP/s of every AIC's cube, with the parameter values the model ran with."""
    return cm["params"]["chip.aic"] * cm["params"]["chip.cube_flop_per_cycle"] * cm["clock_mhz"] * 1e6


def _bounds(cm: dict, flops: float) -> dict:
    """BOUNDS of one modeled launch, in us, with the parameter values the model ran with."""
    mhz, prm = cm["clock_mhz"], cm["params"]
    out = {"cube": flops / _cube_peak(cm) * 1e6}
    for name in BOUNDS:
        kind, _, pipe = name.partition(".")
        if pipe:
            out[name] = max((c["busy"].get(pipe, 0.0) for c in cm["cores"] if c["kind"] == kind), default=0.0) / mhz
    out["l2"] = cm["gm_bytes"] / prm["l2.bytes_per_cycle"] / mhz
    out["hbm"] = cm["hbm_bytes"] / prm["chip.hbm_bytes_per_cycle"] / mhz
    return {name: out[name] for name in BOUNDS}


def _range_fields(low_us: float, high_us: float, widest: Optional[str], by_param: dict, flops: float, peak: float,
                  seconds: float) -> dict:
    """The error-bar fields of a report: the modeled time at the fast and slow joint corners, the utilization at
    each, the parameter that moves the time most (None: none does) and each one's [time at lo, time at hi]."""
    return {"modeled_time_us_low": low_us, "modeled_time_us_high": high_us,
            "utilization_low": flops / (high_us * 1e-6) / peak, "utilization_high": flops / (low_us * 1e-6) / peak,
            "range_param": widest, "range_by_param": by_param, "range_seconds": seconds}


def _summarize(cm: dict, chip: str, flops: float) -> dict:
    mhz = cm["clock_mhz"]
    cycles = cm["cycles"]
    peak = _cube_peak(cm)
    us = cm["total_us"]
    busy: dict[str, float] = {}
    for kind, pipes in (("aic", AIC_PIPES), ("aiv", AIV_PIPES)):
        mine = [c for c in cm["cores"] if c["kind"] == kind]
        for p in pipes:
            vals = [c["busy"].get(p, 0.0) for c in mine]
            if vals:
                busy[f"{kind}.{p}"] = sum(vals) / len(vals) / cycles if cycles else 0.0
    bounds = _bounds(cm, flops)
    rep = {"chip": chip, "label": f"modeled ({chip})", "modeled_time_us": us, "kernel_time_us": cm["kernel_us"],
           "launch_overhead_us": cm["launch_cycles"] / mhz, "cycles": cycles, "flops": flops,
           "tflops": flops / (us * 1e-6) / 1e12, "cube_peak_tflops": peak / 1e12,
           "utilization": flops / (us * 1e-6) / peak, "pipe_busy": busy, "bounds": bounds,
           "bound": max(bounds, key=bounds.get),
           "cube_macs": cm["macs"], "gm_bytes": cm["gm_bytes"], "hbm_bytes": cm["hbm_bytes"],
           "l2_hit_bytes": cm["l2_hit_bytes"],
           "cores": [{"name": c["name"], "end_us": c["end"] / mhz,
                      "busy": {p: v / cycles if cycles else 0.0 for p, v in c["busy"].items()}} for c in cm["cores"]]}
    r = cm.get("range")
    if r is not None:
        by_param = {k: {"lo": e["lo"], "hi": e["hi"], "modeled_time_us": e["total_us"]}
                    for k, e in r["by_param"].items()}
        rep.update(_range_fields(r["total_us_low"], r["total_us_high"], r["param"], by_param, flops, peak,
                                 r["seconds"]))
    return rep


def profile(*, chip: str = "Ascend910B2", batch: int = 1, heads: int = 8, kv_heads: Optional[int] = None,
            seqlen: int = 2048, seqlen_kv: Optional[int] = None, head_dim: int = 128, dtype: str = "bf16",
            causal: bool = False, backward: bool = False, deterministic: bool = False, keep_prob: float = 1.0,
            inner_precise: int = 0, scale: Optional[float] = None, bins: int = 400, keep_blocks: int = 1, overrides: Optional[dict] = None,
            seed: int = 0, model_only: bool = False, sample_blocks: int = 0, ranges=False,
            band: Optional[tuple[int, int]] = None, partial_keys: bool = False,
            residual: Optional[bool] = None) -> dict:
    """Runs the forward op (or, with backward=True, the forward unmodelled and then the backward op, fast or
    deterministic schedule, its launches modelled one after the other) on the twin (BNSD, random inputs) and
    returns the modeled time and its breakdown:
    chip, modeled_time_us (kernel + launch overhead), tflops (4*B*N*S1*S2*D, halved for causal), cube_peak_tflops,
    utilization (0-1), pipe_busy (per core kind and pipe, 0-1), bounds (BOUNDS: lower bounds on the kernel time in
    us), bound (the largest's name); `model` holds the raw result (per-core busy cycles, the schedule of the first
    `keep_blocks` AI cores, the busy histogram).
    ranges=True adds the error bars (docs/cost_model.md): modeled_time_us_low/high and utilization_low/high at the
    joint corners of the parameters' plausible ranges, range_param (the parameter that moves the time most),
    range_by_param ({key: {lo, hi, modeled_time_us: [at lo, at hi]}}) and range_seconds (the extra model runs'
    time); a dict {key: (lo, hi)} replaces those rows' ranges. Overridden parameters are taken as exact.
    keep_prob < 1 adds the kernel's dropout (generated bits, seed 0) to both passes; inner_precise is the op's
    (bit 0: the forward's high-performance mode, scores in the input dtype); scale None is head_dim^-0.5 (the
    high-performance mode's fp16 softmax chain needs a scale fp16 holds exactly, e.g. 2^-3).
    model_only=True runs the kernels without their arithmetic (same trace, undefined outputs, no hazard checks): the
    inputs are zeros and the forward that feeds the backward runs model-only too. sample_blocks=k (model-only) runs k
    evenly spaced AI cores of each launch instead of all: each stands for numBlocks/k cores in the shared HBM bandwidth
    and the totals; exact for balanced launches, see docs/cost_model.md.
    band=(pre_tokens, next_tokens) instead of causal: sparse_mode 4 (the calls context parallelism issues);
    partial_keys=True: the backward as a context-parallel call runs it (its rows' other keys elsewhere).
    residual: the forward writes its output residual and the backward reads it (what the autograd does, issue 26);
    None = on for backward=True (the training path), off for the forward alone (a call autograd does not record)."""
    import torch
    kv_heads = heads if kv_heads is None else kv_heads
    s2 = seqlen if seqlen_kv is None else seqlen_kv
    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(dtype)
    if tdt is None:
        raise ValueError(f"dtype must be fp16 or bf16, got {dtype!r}")
    _chip_row(chip)
    gen = torch.Generator().manual_seed(seed)

    def rand(*shape):
        return torch.zeros(shape, dtype=tdt) if model_only else torch.randn(shape, generator=gen).to(tdt)

    q = rand(batch, heads, seqlen, head_dim)
    k = rand(batch, kv_heads, s2, head_dim)
    v = rand(batch, kv_heads, s2, head_dim)
    before = get_chip()
    set_chip(chip)
    if band is not None and causal:
        raise ValueError("profile takes causal=True or a band=(pre_tokens, next_tokens), not both")
    scale = 1.0 / math.sqrt(head_dim) if scale is None else float(scale)
    common = dict(scale=scale, sparse_mode=3 if causal else 0, keep_prob=keep_prob, inner_precise=inner_precise)
    if band is not None:
        common.update(sparse_mode=4, pre_tokens=band[0], next_tokens=band[1])
    residual = backward if residual is None else bool(residual)
    forward_op = torch.ops.npu.flash_attention_fwd
    try:
        if backward:  # the forward runs unmodelled; the backward's launches are modelled one after the other
            twin_backend.ext().set_cost_model(False, 0, 0, {}, model_only, sample_blocks)
            try:
                out, smax, ssum, res = forward_op(q, k, v, heads, "BNSD", **common, output_residual=residual)
            finally:
                twin_backend.ext().set_cost_model(False)
            if model_only:  # a model-only forward leaves its outputs undefined; the backward checks they are finite
                out.zero_(), smax.zero_(), ssum.fill_(1.0), res.zero_()
            dy = rand(*out.shape)
        twin_backend.ext().set_cost_model(True, keep_blocks, bins, overrides or {}, model_only, sample_blocks, ranges)
        try:
            if backward:
                torch.ops.npu.flash_attention_grad(q, k, v, dy, heads, "BNSD", softmax_max=smax, softmax_sum=ssum,
                                                   attention_in=out, deterministic=deterministic,
                                                   partial_keys=partial_keys,
                                                   attention_in_residual=res if residual else None, **common)
            else:
                forward_op(q, k, v, heads, "BNSD", **common, output_residual=residual)
            info = twin_backend.last_launch_info()
        finally:
            twin_backend.ext().set_cost_model(False)
    finally:
        set_chip(before)
    flops = 4.0 * batch * heads * visible_scores(seqlen, s2, (INT32_MAX, 0) if causal else band) * head_dim
    if backward:
        # FlashAttention's convention: the backward is 2.5x the forward's FLOPs (5 matmuls against 2)
        rep = _combine([_summarize(cm, chip, 0.0) for cm in info["cost_model_launches"]], chip, 2.5 * flops)
        cm = max(info["cost_model_launches"], key=lambda m: m["total_us"])  # the timeline shows the longest launch
    else:
        cm = info["cost_model"]
        rep = _summarize(cm, chip, flops)
    rep.update(problem=dict(batch=batch, heads=heads, kv_heads=kv_heads, seqlen=seqlen, seqlen_kv=s2,
                            head_dim=head_dim, dtype=dtype, causal=causal, backward=backward,
                            deterministic=deterministic, keep_prob=keep_prob, inner_precise=inner_precise, scale=scale,
                            residual=residual,
                            model_only=model_only, sample_blocks=sample_blocks),
               block_dim=info.get("block_dim", info.get("block_dim_dkv")), twin_seconds=info["twin_seconds"], model=cm)
    return rep


def visible_scores(s1: int, s2: int, band: Optional[tuple[int, int]]) -> int:
    """The S1 x S2 scores a bottom-right band (pre_tokens, next_tokens) keeps (None: all): row i sees keys j with
    -pre <= j - i - (S2 - S1) <= next."""
    if band is None:
        return s1 * s2
    import torch
    d = torch.arange(s1, dtype=torch.int64) + (s2 - s1)
    lo = (d - min(band[0], s1 + s2)).clamp(min=0)
    hi = (d + min(band[1], s1 + s2)).clamp(max=s2 - 1)
    return int((hi - lo + 1).clamp(min=0).sum())


def profile_infer(*, chip: str = "Ascend910B2", batch: int = 1, heads: int = 8, kv_heads: Optional[int] = None,
                  seqlen: int = 1, kv_seqlen: int = 4096, block_size: int = 128, head_dim: int = 128,
                  dtype: str = "bf16", kv_dtype: Optional[str] = None, bins: int = 400, keep_blocks: int = 1,
                  overrides: Optional[dict] = None, seed: int = 0, model_only: bool = False, sample_blocks: int = 0,
                  ranges=False, baseline: bool = False) -> dict:
    """Modeled time of npu_fused_infer_attention_score over a paged cache ((blocks, N2, block_size, D), a random
    permuted block table, every batch kv_seqlen keys; `seqlen` query tokens per batch, causal bottom-right when more
    than one, BNSD): its launches (the kernel, and with split keys the combine pass) modelled one after the other.
    The report is profile()'s plus hbm_bytes_required (q, the K/V pages read, the block table, the output: what the
    problem must move; an int8 cache (kv_dtype "int8": per-channel antiquant_scale and antiquant_offset, K and V
    one byte an element) adds its scales and offsets) and hbm_utilization = hbm_bytes_required / (modeled time x the
    chip's HBM bandwidth), with
    ranges its ends hbm_utilization_low/_high (from the time's high/low ends). baseline (kv_seqlen a multiple of
    block_size): also the naive decode on the same cache and table (tools.baseline.naive_decode, fp16: the same bytes
    as bf16) as `baseline` (its report), baseline_time_us and speedup_vs_baseline (its time over ours)."""
    import torch
    from ..interfaces.fused_infer import npu_fused_infer_attention_score
    kv_heads = heads if kv_heads is None else kv_heads
    if kv_dtype not in (None, dtype, "int8"):
        raise ValueError(f"kv_dtype must be the query's dtype {dtype!r} or 'int8', got {kv_dtype!r}")
    int8 = kv_dtype == "int8"
    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(dtype)
    if tdt is None:
        raise ValueError(f"dtype must be fp16 or bf16, got {dtype!r}")
    if baseline and int8:
        raise ValueError("baseline=True models the naive decode on a 16-bit cache; use it without kv_dtype='int8'")
    if baseline and kv_seqlen % block_size:
        raise ValueError(f"baseline=True needs kv_seqlen a multiple of block_size (the naive decode reads whole "
                         f"pages), got kv_seqlen={kv_seqlen}, block_size={block_size}")
    row = _chip_row(chip)
    gen = torch.Generator().manual_seed(seed)

    def rand(*shape):
        return torch.zeros(shape, dtype=tdt) if model_only else torch.randn(shape, generator=gen).to(tdt)

    pages = (kv_seqlen + block_size - 1) // block_size
    q = rand(batch, heads, seqlen, head_dim)
    if int8:
        def cache():
            shape = (batch * pages, kv_heads, block_size, head_dim)
            return torch.zeros(shape, dtype=torch.int8) if model_only else \
                torch.randint(-128, 128, shape, generator=gen, dtype=torch.int8)
        k, v = cache(), cache()
        antiquant = dict(antiquant_scale=torch.full((2, kv_heads, 1, head_dim), 1 / 64, dtype=tdt),
                         antiquant_offset=rand(2, kv_heads, 1, head_dim))
    else:
        k = rand(batch * pages, kv_heads, block_size, head_dim)
        v = rand(batch * pages, kv_heads, block_size, head_dim)
        antiquant = {}
    table = torch.randperm(batch * pages, generator=gen).to(torch.int32).reshape(batch, pages)
    before = get_chip()
    set_chip(chip)
    try:
        twin_backend.ext().set_cost_model(True, keep_blocks, bins, overrides or {}, model_only, sample_blocks, ranges)
        try:
            npu_fused_infer_attention_score(
                q, k, v, num_heads=heads, num_key_value_heads=kv_heads, input_layout="BNSD",
                scale=1.0 / math.sqrt(head_dim), sparse_mode=3 if seqlen > 1 else 0, block_table=table,
                block_size=block_size, actual_seq_lengths_kv=[kv_seqlen] * batch, **antiquant)
            info = twin_backend.last_launch_info()
        finally:
            twin_backend.ext().set_cost_model(False)
    finally:
        set_chip(before)
    flops = 4.0 * batch * heads * seqlen * kv_seqlen * head_dim
    if seqlen > 1:
        flops *= sum(min(kv_seqlen, max(0, kv_seqlen - seqlen + i + 1)) for i in range(seqlen)) / (seqlen * kv_seqlen)
    parts = [_summarize(cm, chip, 0.0) for cm in info["cost_model_launches"]]
    rep = _combine(parts, chip, flops) if len(parts) > 1 else _summarize(info["cost_model"], chip, flops)
    esize, kv_esize = 2, 1 if int8 else 2
    required = (2 * batch * heads * seqlen * head_dim * esize  # q in, out
                + 2 * batch * kv_heads * kv_seqlen * head_dim * kv_esize  # K and V
                + table.numel() * 4 + sum(t.numel() * t.element_size() for t in antiquant.values()))
    rep.update(hbm_bytes_required=required,
               hbm_utilization=required / (rep["modeled_time_us"] * 1e-6 * row["hbm_gbps"] * 1e9),
               problem=dict(infer=True, batch=batch, heads=heads, kv_heads=kv_heads, seqlen=seqlen,
                            kv_seqlen=kv_seqlen, block_size=block_size, head_dim=head_dim, dtype=dtype,
                            kv_dtype="int8" if int8 else dtype, model_only=model_only, sample_blocks=sample_blocks),
               splits=info["splits"], block_dim=info["block_dim"], twin_seconds=info["twin_seconds"],
               model=info["cost_model"])
    if "modeled_time_us_low" in rep:
        bw = row["hbm_gbps"] * 1e9
        rep.update(hbm_utilization_low=required / (rep["modeled_time_us_high"] * 1e-6 * bw),
                   hbm_utilization_high=required / (rep["modeled_time_us_low"] * 1e-6 * bw))
    if baseline:
        import numpy as np

        from . import baseline as naive

        def half(x):  # model-only: lazily mapped zeros, as the op's inputs above
            return np.zeros(tuple(x.shape), np.float16) if model_only else x.float().numpy().astype(np.float16)

        _, base = naive.naive_decode(half(q), half(k), half(v), table.numpy(), scale=1.0 / math.sqrt(head_dim),
                                     chip=chip, model=True, model_only=model_only, sample_blocks=sample_blocks,
                                     overrides=overrides, ranges=ranges)
        rep.update(baseline=public(base), baseline_time_us=base["modeled_time_us"],
                   speedup_vs_baseline=base["modeled_time_us"] / rep["modeled_time_us"])
    return rep


def _combine(parts: list, chip: str, flops: float) -> dict:
    """One report for launches that run one after the other (the backward's passes): times, bounds and the error
    bars' ends (low with low) add up, pipe busy is time-weighted, `launches` keeps each launch's own summary."""
    peak = parts[0]["cube_peak_tflops"] * 1e12
    us = sum(p["modeled_time_us"] for p in parts)
    busy = {k: sum(p["pipe_busy"].get(k, 0.0) * p["modeled_time_us"] for p in parts) / us for k in parts[0]["pipe_busy"]}
    bounds = {k: sum(p["bounds"][k] for p in parts) for k in BOUNDS}
    bounds["cube"] = flops / peak * 1e6
    rep = dict(parts[0])
    rep.update(modeled_time_us=us, kernel_time_us=sum(p["kernel_time_us"] for p in parts),
               launch_overhead_us=sum(p["launch_overhead_us"] for p in parts),
               cycles=sum(p["cycles"] for p in parts), flops=flops, tflops=flops / (us * 1e-6) / 1e12,
               cube_peak_tflops=peak / 1e12, utilization=flops / (us * 1e-6) / peak, pipe_busy=busy,
               bounds=bounds, bound=max(bounds, key=bounds.get),
               cube_macs=sum(p["cube_macs"] for p in parts), gm_bytes=sum(p["gm_bytes"] for p in parts),
               hbm_bytes=sum(p["hbm_bytes"] for p in parts), l2_hit_bytes=sum(p["l2_hit_bytes"] for p in parts), cores=[],
               launches=[{k: p[k] for k in ("modeled_time_us", "pipe_busy", "bounds", "bound", "modeled_time_us_low",
                                            "modeled_time_us_high", "range_param") if k in p} for p in parts])
    if all("range_by_param" in p for p in parts):
        by_param = {}
        for key in dict.fromkeys(k for p in parts for k in p["range_by_param"]):
            # a launch without the row (not varied there) stays at its modeled time at both ends
            ends = [p["range_by_param"].get(key, {"modeled_time_us": [p["modeled_time_us"]] * 2})["modeled_time_us"]
                    for p in parts]
            e = next(p["range_by_param"][key] for p in parts if key in p["range_by_param"])
            by_param[key] = {"lo": e["lo"], "hi": e["hi"], "modeled_time_us": [sum(t[0] for t in ends),
                                                                               sum(t[1] for t in ends)]}
        # the row that moves the summed time most, as range.h picks it for one launch: the widest of its two ends
        # and the time itself (the first on a tie; none when no row moves it)
        spread = {k: max(us, *e["modeled_time_us"]) - min(us, *e["modeled_time_us"]) for k, e in by_param.items()}
        widest = max(spread, key=spread.get, default=None)
        rep.update(_range_fields(sum(p["modeled_time_us_low"] for p in parts),
                                 sum(p["modeled_time_us_high"] for p in parts),
                                 widest if widest is not None and spread[widest] > 0 else None, by_param, flops, peak,
                                 sum(p["range_seconds"] for p in parts)))
    return rep


def public(rep: dict) -> dict:
    """The report without the raw model arrays (what --json prints)."""
    return {k: v for k, v in rep.items() if k != "model"}


def write_outputs(rep: dict, out_dir) -> dict:
    """Writes trace.json (Chrome trace / Perfetto of the kept cores' instructions) and, when matplotlib is installed,
    timeline.png (busy fraction per core and pipe over time) into out_dir; returns their paths (None: not written)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"timeline_png": None, "chrome_trace": str(out / "trace.json")}
    _chrome_trace(rep["model"], paths["chrome_trace"])
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return paths
    paths["timeline_png"] = str(out / "timeline.png")
    _timeline_png(rep, paths["timeline_png"])
    return paths


def _chrome_trace(cm: dict, path: str) -> None:
    s = cm["schedule"]
    mhz = cm["clock_mhz"]
    names, pipes = s["op_names"], cm["pipes"]
    ev = []
    for ci, c in enumerate(cm["cores"]):
        ev.append({"ph": "M", "name": "process_name", "pid": ci, "args": {"name": c["name"]}})
        for pi, p in enumerate(pipes):
            ev.append({"ph": "M", "name": "thread_name", "pid": ci, "tid": pi, "args": {"name": p}})
    for core, pipe, st, en, op in zip(s["core"].tolist(), s["pipe"].tolist(), s["start"].tolist(), s["end"].tolist(),
                                      s["op"].tolist()):
        ev.append({"ph": "X", "name": names[op], "pid": core, "tid": pipe, "ts": st / mhz, "dur": max(en - st, 0) / mhz})
    Path(path).write_text(json.dumps({"traceEvents": ev, "displayTimeUnit": "ns",
                                      "otherData": {"label": "modeled, not measured", "clock_mhz": mhz}}))


def _timeline_png(rep: dict, path: str) -> None:
    """Busy fraction over time per core and pipe (up to 9 cores each get their rows; larger launches show the mean
    over all AICs / AIVs, then block 0 and the core that ends last), and below it the report's bounds as bars, the
    binding one highlighted, against the kernel time."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    cm = rep["model"]
    hist = cm.get("hist")
    if hist is None:
        raise ValueError("the profile has no busy histogram (run profile with bins > 0)")
    pipes, cores = cm["pipes"], cm["cores"]
    rows, labels = [], []

    def add(label, kind, data):
        for p in (AIC_PIPES if kind == "aic" else AIV_PIPES):
            rows.append(data[pipes.index(p)])
            labels.append(f"{label} {p}")
    if len(cores) > 9:
        for kind in ("aic", "aiv"):
            idx = [i for i, c in enumerate(cores) if c["kind"] == kind]
            if idx:
                add(f"mean {kind.upper()}", kind, hist[idx].mean(axis=0))
        last = max(range(len(cores)), key=lambda i: cores[i]["end"])
        show = sorted({i for i, c in enumerate(cores) if c["block"] == 0} | {last})
    else:
        show = range(len(cores))
    for i in show:
        add(cores[i]["name"].split(" (")[0], cores[i]["kind"], hist[i])
    img = np.clip(np.array(rows), 0, 1)
    t_us = hist.shape[2] * cm["bin_cycles"] / cm["clock_mhz"]
    bounds = rep["bounds"]
    heat_h, bars_h = max(2.0, 0.22 * len(rows)), 0.25 * len(bounds) + 0.6
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(12, heat_h + bars_h + 1.2),
                                 gridspec_kw={"height_ratios": [heat_h, bars_h]})
    im = ax.imshow(img, aspect="auto", interpolation="nearest", cmap="viridis", extent=(0, t_us, len(rows), 0),
                   vmin=0, vmax=1)
    ax.set_yticks(np.arange(len(rows)) + 0.5)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel("time (us)")
    span = (f" [{rep['modeled_time_us_low']:.1f} - {rep['modeled_time_us_high']:.1f}]" if "modeled_time_us_low" in rep
            else "")
    ax.set_title(f"{rep['label']}: pipe busy fraction, {rep['modeled_time_us']:.1f} us{span}, bound: {rep['bound']}")
    fig.colorbar(im, ax=ax, fraction=0.02)
    names = list(bounds)
    bx.barh(range(len(names)), [bounds[n] for n in names],
            color=["tab:red" if n == rep["bound"] else "tab:gray" for n in names])
    bx.axvline(rep["kernel_time_us"], color="black", linestyle="--", linewidth=1)
    bx.set_yticks(range(len(names)))
    bx.set_yticklabels([f"{n}: {BOUNDS[n]}" for n in names], fontsize=7)
    bx.invert_yaxis()
    bx.set_xlabel(f"lower bound on the kernel time (us); dashed: modeled kernel time {rep['kernel_time_us']:.1f} us")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
