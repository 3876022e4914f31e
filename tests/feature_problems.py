"""Problems shared by the kernel-feature tests (sinks, softcap, ...): layouts, dtypes, GQA/MQA, head dims and masks
off the block grid, and the forward / gradient checks against the float64 reference."""
from __future__ import annotations

import math

import torch

from npu_flash_attn.criterion import assert_close_fa, assert_stats_close
from npu_flash_attn.reference import flash_attention_lowprec, flash_attention_reference

fwd = torch.ops.npu.flash_attention
DT = {"fp16": torch.float16, "bf16": torch.bfloat16}

# (layout, dtype, B, S1, S2, N1, N2, D, extra kwargs); sizes off the block grid, invalid rows in the mode-3 (S1 > S2)
# and band cases, a dense mask, GQA and MQA, TND with a zero-length key sequence.
CASES = [
    ("BNSD", "bf16", 2, 130, 257, 4, 2, 64, {}),
    ("BSH", "fp16", 1, 200, 90, 2, 1, 128, dict(sparse_mode=3)),
    ("SBH", "bf16", 2, 77, 140, 3, 3, 80, dict(sparse_mode=4, pre_tokens=50, next_tokens=-20)),
    ("BSND", "fp16", 1, 96, 300, 4, 4, 256, dict(sparse_mode=2)),
    ("BNSD", "fp16", 1, 65, 190, 2, 2, 96, dict(atten_mask="dense")),
    ("TND", "bf16", 3, 0, 0, 4, 2, 64, dict(actual_seq_qlen=[40, 40, 173], actual_seq_kvlen=[81, 200, 200],
                                             sparse_mode=3)),
]


def case_id(c) -> str:
    return f"{c[0]}-{c[1]}-n{c[5]}/{c[6]}-d{c[7]}-" + ("-".join(f"{k}" for k in c[8]) or "full")


def shape_of(layout, B, S, N, D):
    return {"BSH": (B, S, N * D), "SBH": (S, B, N * D), "BSND": (B, S, N, D), "BNSD": (B, N, S, D)}[layout]


def problem(case, gen, q_gain: float = 1.0):
    """((q, k, v, N1, layout), kwargs) of a case; q scaled by q_gain (larger scores)."""
    layout, dt, B, S1, S2, N1, N2, D, extra = case
    dt = DT[dt]
    kw = dict(extra, scale=1 / math.sqrt(D))
    if layout == "TND":
        T1, T2 = kw["actual_seq_qlen"][-1] + 3, kw["actual_seq_kvlen"][-1]  # 3 padding query tokens
        shapes = ((T1, N1, D), (T2, N2, D), (T2, N2, D))
    else:
        shapes = (shape_of(layout, B, S1, N1, D), shape_of(layout, B, S2, N2, D), shape_of(layout, B, S2, N2, D))
    q, k, v = (torch.randn(s, generator=gen) for s in shapes)
    q, k, v = (q * q_gain).to(dt), k.to(dt), v.to(dt)
    if kw.get("atten_mask") == "dense":
        kw["atten_mask"] = torch.rand(B, 1, S1, S2, generator=gen) > 0.7
    return (q, k, v, N1, layout), kw


def _as_double(x):
    return x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x


def _double(kw: dict) -> dict:
    return {n: _as_double(x) for n, x in kw.items()}


def check_forward(args, kw):
    """The op's output and statistics against the float64 reference (FA criterion); returns (out, ref64 out)."""
    out, smax, ssum = fwd(*args, **kw)
    q, k, v, n1, layout = args
    ro, rm, rs = flash_attention_reference(q.double(), k.double(), v.double(), n1, layout, **_double(kw))
    assert_close_fa(out, ro, flash_attention_lowprec(q, k, v, n1, layout, **kw))
    assert_stats_close(smax, ssum, rm, rs)
    return out, ro


def check_grads(args, kw, gen, train: tuple = (), op_kw: dict | None = None):
    """dq/dk/dv (and the gradients of the keyword tensors named in `train`, e.g. "sink", "pse") through the op's
    autograd against float64 autograd of the reference, within 3x the error of the same program in the input dtype;
    `op_kw`: arguments for the op only (e.g. inner_precise). Returns the op's gradients, the float64 ones and the
    output gradient used."""
    q, k, v, n1, layout = args
    names = ("dq", "dk", "dv") + tuple("d" + n for n in train)
    base = (q, k, v) + tuple(kw[n] for n in train)

    def run(ts, f, cast):
        extra = {n: cast(x) for n, x in kw.items() if n not in train}
        extra.update(zip(train, ts[3:]))
        return f(*ts[:3], n1, layout, **extra)
    leaves = [t.clone().requires_grad_() for t in base]
    out = run(leaves, lambda *a, **k: fwd(*a, **k, **(op_kw or {})), lambda x: x)[0]
    dy = torch.randn(out.shape, generator=gen).to(out.dtype)
    out.backward(dy)
    ref = [t.detach().double().requires_grad_() for t in base]
    run(ref, flash_attention_reference, _as_double)[0].backward(dy.double())
    low = [t.detach().clone().requires_grad_() for t in base]
    (run(low, flash_attention_lowprec, lambda x: x).double() * dy.double()).sum().backward()
    for name, g, r, lo in zip(names, leaves, ref, low):
        err = (g.grad.double() - r.grad).abs().max().item()
        base_err = (lo.grad.double() - r.grad).abs().max().item()
        assert err <= 3 * base_err + 1e-5, f"{name}: max|g - g64| = {err:.3e} > 3 * {base_err:.3e} + 1e-5"
    return [g.grad for g in leaves], [r.grad for r in ref], dy
