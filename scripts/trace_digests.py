"""Trace digests of the forward and backward kernels (one schedule: `deterministic` changes nothing) on a fixed set of problems (model-only twin launches).

A refactor of the kernels or the host plan must leave every digest unchanged: the digest covers every trace record
(op, pipe, operands as buffer + offset), so an identical digest means the same instructions in the same order on
every core. Intended kernel changes regenerate the file with --write and say so in the commit.

    python scripts/trace_digests.py --check            # compare with tests/data/trace_digests.json
    python scripts/trace_digests.py --write            # record the current digests
"""
from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys

import torch

DEFAULT_FILE = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "trace_digests.json"


def _cases():
    """(name, args, kwargs) of each problem; inputs from a fixed generator (the digest depends on mask contents)."""
    g = torch.Generator().manual_seed(2512)

    def t(*shape, dt=torch.bfloat16):
        return torch.randn(*shape, generator=g).to(dt)

    def qkv(layout, b, n1, n2, s1, s2, d, dv=None, dt=torch.bfloat16):
        dv = d if dv is None else dv
        shapes = {"BNSD": ((b, n1, s1, d), (b, n2, s2, d), (b, n2, s2, dv)),
                  "BSND": ((b, s1, n1, d), (b, s2, n2, d), (b, s2, n2, dv)),
                  "BSH": ((b, s1, n1 * d), (b, s2, n2 * d), (b, s2, n2 * dv)),
                  "SBH": ((s1, b, n1 * d), (s2, b, n2 * d), (s2, b, n2 * dv))}[layout]
        return tuple(t(*s, dt=dt) for s in shapes) + (n1, layout)

    def tnd(lq, lk, n1, n2, d, dt=torch.bfloat16):
        cq = [sum(lq[:i + 1]) for i in range(len(lq))]
        ck = [sum(lk[:i + 1]) for i in range(len(lk))]
        return (t(cq[-1], n1, d, dt=dt), t(ck[-1], n2, d, dt=dt), t(ck[-1], n2, d, dt=dt), n1, "TND"), \
            dict(actual_seq_qlen=cq, actual_seq_kvlen=ck, scale=1 / math.sqrt(d))

    sc = lambda d: dict(scale=1 / math.sqrt(d))  # noqa: E731
    yield "bnsd_plain_bf16", qkv("BNSD", 2, 2, 2, 200, 300, 128), sc(128)
    yield "bsh_gqa_fp16_d96", qkv("BSH", 1, 4, 2, 131, 77, 96, dt=torch.float16), sc(96)
    yield "sbh_dv64_d128", qkv("SBH", 2, 2, 1, 90, 150, 128, dv=64), sc(128)
    yield "bsnd_causal_rd", qkv("BSND", 1, 2, 2, 260, 300, 64), {**sc(64), "sparse_mode": 3}
    yield "bnsd_causal_lu", qkv("BNSD", 1, 2, 1, 300, 260, 128), {**sc(128), "sparse_mode": 2}
    yield "bnsd_band", qkv("BNSD", 1, 1, 1, 333, 333, 128), {**sc(128), "sparse_mode": 4, "pre_tokens": 100,
                                                              "next_tokens": 20}
    yield "bnsd_dense_mask", qkv("BNSD", 2, 2, 2, 150, 270, 128), {
        **sc(128), "atten_mask": torch.rand(2, 1, 150, 270, generator=g) > 0.7}
    yield "bnsd_mask_band_mode0", qkv("BNSD", 1, 2, 2, 200, 200, 64), {
        **sc(64), "atten_mask": torch.rand(200, 200, generator=g) > 0.9, "pre_tokens": 60, "next_tokens": 0}
    yield "bnsd_prefix_mode6", qkv("BNSD", 2, 1, 1, 180, 220, 128), {**sc(128), "sparse_mode": 6, "prefix": [50, 100]}
    yield "bnsd_sink_softcap", qkv("BNSD", 1, 2, 2, 140, 190, 128), {
        **sc(128), "sink": torch.randn(2, generator=g), "softcap": 30.0, "sparse_mode": 3}
    yield "bnsd_alibi_sqrt", qkv("BNSD", 2, 2, 2, 100, 180, 128), {
        **sc(128), "pse": torch.rand(2, 2, generator=g), "pse_type": 3, "q_start_idx": [5], "kv_start_idx": [0]}
    yield "bnsd_pse_rows", qkv("BNSD", 1, 2, 2, 120, 160, 64, dt=torch.float16), {
        **sc(64), "pse": t(1, 2, 120, 160, dt=torch.float16), "pse_type": 1}
    yield "bnsd_pse_bcast_row", qkv("BNSD", 2, 2, 2, 70, 130, 128), {**sc(128), "pse": t(2, 2, 1, 130), "pse_type": 0}
    yield "bnsd_dropout", qkv("BNSD", 1, 2, 2, 150, 170, 128), {**sc(128), "keep_prob": 0.8, "seed": 7, "offset": 3}
    yield "bnsd_dropout_mask", qkv("BNSD", 1, 1, 1, 64, 96, 128), {
        **sc(128), "keep_prob": 0.7, "dropout_mask": torch.randint(0, 256, (64 * 96 // 8,), generator=g,
                                                                   dtype=torch.uint8)}
    yield "bnsd_d256", qkv("BNSD", 1, 1, 1, 100, 140, 256), sc(256)
    args, kw = tnd([50, 0, 130, 77], [60, 40, 100, 77], 2, 1, 128)
    yield "tnd_plain", args, kw
    args, kw = tnd([50, 130, 77], [60, 100, 77], 2, 2, 64)
    yield "tnd_mode7", args, {**kw, "sparse_mode": 7, "pre_tokens": 200, "next_tokens": -10}
    args, kw = tnd([50, 130, 77], [60, 100, 140], 2, 2, 64)
    yield "tnd_mode8", args, {**kw, "sparse_mode": 8, "pre_tokens": 100, "next_tokens": 5}
    args, kw = tnd([40, 90], [70, 60], 2, 2, 128)
    yield "tnd_global_mask", args, {**kw, "atten_mask": torch.rand(130, 130, generator=g) > 0.6}


def digests() -> dict:
    from npu_flash_attn import _C, ops, twin_backend

    result = {}
    g = torch.Generator().manual_seed(77)
    for name, args, kw in _cases():
        o, smax, ssum = ops.flash_attention(*args, **kw)  # computed: the backward's inputs must be finite
        dy = torch.randn(o.shape, generator=g).to(o.dtype)
        _C.set_cost_model(True, 1, 0, {}, True)
        try:
            ops.flash_attention(*args, **kw)
            fwd = twin_backend.last_launch_info()["trace_digest"]
            torch.ops.npu.flash_attention_grad(*args[:3], dy, *args[3:], softmax_max=smax, softmax_sum=ssum,
                                               attention_in=o, **kw)
            bwd = list(twin_backend.last_launch_info()["trace_digests"])
        finally:
            _C.set_cost_model(False)
        result[name] = {"forward": fwd, "backward": bwd}
    # the training path's output residual (written by the forward, read by the backward), on one problem
    first, args, kw = next(iter(_cases()))
    o, smax, ssum, res = torch.ops.npu.flash_attention_fwd(*args, **kw, output_residual=True)
    dy = torch.randn(o.shape, generator=g).to(o.dtype)
    _C.set_cost_model(True, 1, 0, {}, True)
    try:
        torch.ops.npu.flash_attention_fwd(*args, **kw, output_residual=True)
        fwd = twin_backend.last_launch_info()["trace_digest"]
        torch.ops.npu.flash_attention_grad(*args[:3], dy, *args[3:], softmax_max=smax, softmax_sum=ssum,
                                           attention_in=o, attention_in_residual=res, **kw)
        bwd = list(twin_backend.last_launch_info()["trace_digests"])
    finally:
        _C.set_cost_model(False)
    result["residual_" + first] = {"forward": fwd, "backward": bwd}
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="record the current digests")
    mode.add_argument("--check", action="store_true", help="compare with the recorded digests")
    ap.add_argument("--file", type=pathlib.Path, default=DEFAULT_FILE)
    a = ap.parse_args(argv)
    now = digests()
    if a.write:
        a.file.parent.mkdir(parents=True, exist_ok=True)
        a.file.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(now)} cases to {a.file}")
        return 0
    recorded = json.loads(a.file.read_text())
    bad = [n for n in sorted(set(now) | set(recorded)) if now.get(n) != recorded.get(n)]
    for n in bad:
        print(f"{n}: recorded {recorded.get(n)}\n{' ' * len(n)}  now      {now.get(n)}")
    print(f"{len(now) - len(bad)} of {len(now)} cases have the recorded digests")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
