"""Backward npu::flash_attention_grad (and the autograd of npu::flash_attention) on the CPU twin.

Criterion (DEVELOPERS.md): for each of dq/dk/dv, max|g - g64| <= 3 * max|g_lowprec - g64| + 1e-5, where g64 comes
from float64 autograd through `reference.flash_attention_reference` and g_lowprec from autograd through plain torch
attention in the input dtype (`_lowprec_attention` below: each op rounds to fp16/bf16, softmax as torch does it).
The kernel has one schedule (a dQ pass, then a dK/dV pass, sums kept in L0C, no atomics) for both values of
`deterministic`: every result is bitwise reproducible for any core count, and the two modes agree bitwise. The full
layout x dtype x head dim x GQA x mask grid and a TND grid are marked `slow`.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import pytest
import torch

import npu_flash_attn
from npu_flash_attn import problem, twin_backend
from npu_flash_attn.reference import enabled_sequences, flash_attention_reference, visible_mask

fwd = torch.ops.npu.flash_attention
grad_op = torch.ops.npu.flash_attention_grad
DT = {"fp16": torch.float16, "bf16": torch.bfloat16}
SPARSE = {  # name -> (sparse_mode, pre_tokens, next_tokens)
    "full": (0, problem.INT32_MAX, problem.INT32_MAX),
    "causal_lu": (2, problem.INT32_MAX, problem.INT32_MAX),
    "causal_rd": (3, problem.INT32_MAX, problem.INT32_MAX),
    "band": (4, 37, 11),
    "band_past": (4, 60, -40),  # the first rows see nothing (invalid rows) when S2 - S1 < 40
}


# ----------------------------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------------------------
def _shape(layout: str, B: int, S: int, N: int, D: int) -> tuple:
    return {"BSH": (B, S, N * D), "SBH": (S, B, N * D), "BSND": (B, S, N, D), "BNSD": (B, N, S, D)}[layout]


def _to_heads(t: torch.Tensor, layout: str, N: int) -> torch.Tensor:
    """Non-TND tensor -> [B, N, S, D] (a differentiable view/permutation)."""
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.permute(0, 2, 1, 3)
    if layout == "BSH":
        B, S, H = t.shape
        return t.reshape(B, S, N, H // N).permute(0, 2, 1, 3)
    S, B, H = t.shape  # SBH
    return t.reshape(S, B, N, H // N).permute(1, 2, 0, 3)


def _sequences(layout, q, k, v, N1, N2, cu_q, cu_kv):
    """[(q [N1,Sq,D], k [N2,Skv,D], v [N2,Skv,Dv])] per sequence (TND: per enabled cumulative entry)."""
    if layout != "TND":
        qh, kh, vh = _to_heads(q, layout, N1), _to_heads(k, layout, N2), _to_heads(v, layout, N2)
        return [(qh[b], kh[b], vh[b]) for b in range(qh.shape[0])]
    return [(q[q0:q1].transpose(0, 1), k[k0:k1].transpose(0, 1), v[k0:k1].transpose(0, 1))
            for q0, q1, k0, k1 in enabled_sequences(cu_q, cu_kv)]


def _lowprec_attention(q, k, v, N1, layout, scale, sparse, cu_q=None, cu_kv=None):
    """Attention as a plain torch program computes it in the input dtype (differentiable); returns the pieces of
    the output per sequence as [N1, Sq, Dv] tensors (invalid rows 0)."""
    mode, pre, nxt = SPARSE[sparse]
    N2 = k.shape[-2] if layout in ("BSND", "TND") else (k.shape[1] if layout == "BNSD" else None)
    if N2 is None:
        N2 = k.shape[-1] // (q.shape[-1] // N1)
    outs = []
    for qs, ks, vs in _sequences(layout, q, k, v, N1, N2, cu_q, cu_kv):
        g = N1 // N2
        ks, vs = ks.repeat_interleave(g, 0), vs.repeat_interleave(g, 0)
        vis = visible_mask(qs.shape[1], ks.shape[1], mode, pre, nxt)
        s = (qs @ ks.transpose(1, 2)) * scale
        s = s.masked_fill(~vis, torch.finfo(s.dtype).min)
        p = torch.softmax(s, dim=-1) * vis.any(dim=1, keepdim=True).to(s.dtype)
        outs.append(p @ vs)
    return outs


def _ref_outputs(q, k, v, N1, layout, scale, sparse, cu_q=None, cu_kv=None):
    mode, pre, nxt = SPARSE[sparse]
    return flash_attention_reference(q, k, v, N1, layout, scale=scale, sparse_mode=mode, pre_tokens=pre,
                                     next_tokens=nxt, actual_seq_qlen=cu_q, actual_seq_kvlen=cu_kv)[0]


def _lowprec_grads(q, k, v, dy, N1, layout, scale, sparse, cu_q=None, cu_kv=None):
    """dq, dk, dv of the low-precision torch program for the output gradient dy (layout of the op's output)."""
    qq, kk, vv = (t.detach().clone().requires_grad_() for t in (q, k, v))
    outs = _lowprec_attention(qq, kk, vv, N1, layout, scale, sparse, cu_q, cu_kv)
    # Same loss as sum(out * dy): dy cut into the same per-sequence [N1, Sq, Dv] pieces (float64 sum).
    if layout == "TND":
        pieces = [dy[q0:q1].transpose(0, 1) for q0, q1, _, _ in enabled_sequences(cu_q, cu_kv)]
    else:
        dyh = _to_heads(dy, layout, N1)
        pieces = [dyh[b] for b in range(dyh.shape[0])]
    loss = sum((o.double() * d.double()).sum() for o, d in zip(outs, pieces))
    loss.backward()
    return qq.grad, kk.grad, vv.grad


def _grads64(q, k, v, dy, N1, layout, scale, sparse, cu_q=None, cu_kv=None):
    qq, kk, vv = (t.detach().double().requires_grad_() for t in (q, k, v))
    out = _ref_outputs(qq, kk, vv, N1, layout, scale, sparse, cu_q, cu_kv)
    out.backward(dy.double())
    return qq.grad, kk.grad, vv.grad


def _assert_grads(got, ref64, low, what=""):
    for name, g, r, l in zip(("dq", "dk", "dv"), got, ref64, low):
        assert g.shape == r.shape, f"{what} {name}: shape {tuple(g.shape)} vs {tuple(r.shape)}"
        gd = g.double()
        assert bool(torch.isfinite(gd).all()), f"{what} {name}: non-finite values"
        err = (gd - r).abs().max().item() if g.numel() else 0.0
        base = (l.double() - r).abs().max().item() if g.numel() else 0.0
        assert err <= 3 * base + 1e-5, f"{what} {name}: max|g - g64| = {err:.3e} > 3 * {base:.3e} + 1e-5"


def _expected_launches(D: int, Dv: int) -> int:
    """dQ, then one dK/dV pass when both sums of a 64-key block fit half of L0C (64 KB), else dV and dK passes of at
    most 256 columns each."""
    pad = lambda x: -(-x // 16) * 16
    if 64 * (pad(D) + pad(Dv)) * 4 <= 64 * 1024:
        return 2
    return 1 + -(-Dv // 256) + -(-D // 256)


def _forward_and_grad(q, k, v, dy, N1, layout, scale, sparse, cu_q=None, cu_kv=None, deterministic=False):
    mode, pre, nxt = SPARSE[sparse]
    kw = dict(scale=scale, sparse_mode=mode, pre_tokens=pre, next_tokens=nxt, actual_seq_qlen=cu_q,
              actual_seq_kvlen=cu_kv)
    out, smax, ssum = fwd(q, k, v, N1, layout, **kw)
    dq, dk, dv, dpse, dsink = grad_op(q, k, v, dy, N1, layout, softmax_max=smax, softmax_sum=ssum, attention_in=out,
                                      deterministic=deterministic, **kw)
    assert dpse.numel() == 0 and dsink.numel() == 0 and dpse.dtype == q.dtype
    return out, (dq, dk, dv)


@dataclass(frozen=True)
class Case:
    layout: str
    dtype: str
    B: int
    S1: int
    S2: int
    N1: int
    N2: int
    D: int
    Dv: int
    sparse: str


# A covering subset of layouts x dtypes x head dims x MHA/GQA/MQA x masks; sequence lengths not multiples of the
# blocks (and blocks of several s1/s2 tiles), invalid rows in the causal_rd (S1 > S2) and band_past cases.
CASES = [
    Case("BSND", "fp16", 2, 37, 45, 2, 2, 64, 64, "full"),
    Case("BSH", "bf16", 1, 150, 139, 4, 2, 72, 72, "causal_lu"),
    Case("SBH", "fp16", 2, 97, 70, 3, 1, 128, 128, "causal_rd"),
    Case("BNSD", "bf16", 1, 83, 201, 2, 1, 64, 64, "band"),
    Case("BSND", "bf16", 1, 71, 66, 4, 2, 192, 128, "causal_rd"),
    Case("BNSD", "fp16", 1, 45, 77, 2, 2, 256, 256, "band_past"),
    Case("BSH", "fp16", 1, 1, 1, 1, 1, 64, 64, "full"),
    Case("SBH", "bf16", 1, 130, 17, 2, 2, 72, 72, "full"),
]


def _case_id(c: Case) -> str:
    return f"{c.layout}-{c.dtype}-{c.S1}x{c.S2}-n{c.N1}/{c.N2}-d{c.D}/{c.Dv}-{c.sparse}"


# The slow grid: every layout x dtype x head dim x MHA/GQA/MQA x mask, on sequence lengths spanning several tiles.
SLOW_CASES = [
    Case(layout, dtype, 1, s1, s2, n1, n2, d, dv, sparse)
    for layout in ("BSH", "SBH", "BSND", "BNSD")
    for dtype in ("fp16", "bf16")
    for (d, dv) in ((64, 64), (72, 72), (128, 128), (192, 128), (256, 256))
    for (n1, n2) in ((2, 2), (4, 2), (3, 1))
    for sparse, (s1, s2) in (("full", (257, 300)), ("causal_lu", (300, 257)), ("causal_rd", (333, 190)),
                             ("band", (190, 333)), ("band_past", (260, 250)))
]


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW_CASES, ids=_case_id)
def test_grad_grid_slow(case: Case, gen):
    test_grad_matches_float64_reference(case, gen)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_grad_matches_float64_reference(case: Case, gen):
    c = case
    dt = DT[c.dtype]
    q = torch.randn(_shape(c.layout, c.B, c.S1, c.N1, c.D), generator=gen).to(dt)
    k = torch.randn(_shape(c.layout, c.B, c.S2, c.N2, c.D), generator=gen).to(dt)
    v = torch.randn(_shape(c.layout, c.B, c.S2, c.N2, c.Dv), generator=gen).to(dt)
    dy = torch.randn(_shape(c.layout, c.B, c.S1, c.N1, c.Dv), generator=gen).to(dt)
    scale = 1 / math.sqrt(c.D)
    _, got = _forward_and_grad(q, k, v, dy, c.N1, c.layout, scale, c.sparse)
    assert twin_backend.last_launch_info()["launches"] == _expected_launches(c.D, c.Dv)
    ref = _grads64(q, k, v, dy, c.N1, c.layout, scale, c.sparse)
    low = _lowprec_grads(q, k, v, dy, c.N1, c.layout, scale, c.sparse)
    _assert_grads(got, ref, low, str(c))


def _randn(shape, gen, dt, mult=1.0):
    return (torch.randn(shape, generator=gen) * mult).to(dt)


@pytest.mark.slow
@pytest.mark.parametrize("sparse", list(SPARSE))
@pytest.mark.parametrize("dtype,D,heads", [("fp16", 72, (4, 2)), ("bf16", 128, (3, 1)), ("fp16", 256, (2, 2))])
def test_varlen_tnd_slow(dtype, D, heads, sparse, gen):
    test_varlen_tnd_with_empty_sequences(dtype, sparse, False, gen, D=D, heads=heads)


@pytest.mark.parametrize("dtype,sparse,deterministic", [("fp16", "causal_rd", False), ("bf16", "full", True)])
def test_varlen_tnd_with_empty_sequences(dtype, sparse, deterministic, gen, D=64, heads=(4, 1)):
    # lengths q 5, 0, 65, 70 and kv 9, 31, 0, 70; a trailing disabled batch; padding tokens after the last sequence
    cu_q, cu_kv = [5, 5, 70, 140, 0], [9, 40, 40, 110, 0]
    (N1, N2), T1, T2 = heads, 150, 120
    dt = DT[dtype]
    q, k, v = _randn((T1, N1, D), gen, dt), _randn((T2, N2, D), gen, dt), _randn((T2, N2, D), gen, dt)
    dy = _randn((T1, N1, D), gen, dt)
    scale = 0.125
    _, got = _forward_and_grad(q, k, v, dy, N1, "TND", scale, sparse, cu_q, cu_kv, deterministic=deterministic)
    ref = _grads64(q, k, v, dy, N1, "TND", scale, sparse, cu_q, cu_kv)
    low = _lowprec_grads(q, k, v, dy, N1, "TND", scale, sparse, cu_q, cu_kv)
    _assert_grads(got, ref, low, f"TND {dtype} {sparse}")
    dq, dk, dv = got
    assert torch.equal(dq[140:], torch.zeros_like(dq[140:])), "padding query tokens must get dq = 0"
    assert torch.equal(dk[110:], torch.zeros_like(dk[110:])) and torch.equal(dv[110:], torch.zeros_like(dv[110:]))
    # sequence 1 has no queries: its keys/values get zero gradients; sequence 2 has no keys: its queries get dq = 0
    assert torch.equal(dk[9:40], torch.zeros_like(dk[9:40])) and torch.equal(dv[9:40], torch.zeros_like(dv[9:40]))
    assert torch.equal(dq[5:70], torch.zeros_like(dq[5:70]))


def test_invalid_rows_get_zero_dq(gen):
    # right-down causal with S1 > S2: query rows i < S1 - S2 see no key
    B, S1, S2, N, D = 1, 90, 40, 2, 64
    dt = torch.float16
    q, k, v = (_randn((B, S, N, D), gen, dt) for S in (S1, S2, S2))
    dy = _randn((B, S1, N, D), gen, dt)
    out, (dq, dk, dv) = _forward_and_grad(q, k, v, dy, N, "BSND", 0.125, "causal_rd")
    assert torch.equal(out[:, :S1 - S2], torch.zeros_like(out[:, :S1 - S2]))
    assert torch.equal(dq[:, :S1 - S2], torch.zeros_like(dq[:, :S1 - S2]))
    assert all(bool(torch.isfinite(g).all()) for g in (dq, dk, dv))
    assert dq[:, S1 - S2:].abs().max() > 0 and dk.abs().max() > 0 and dv.abs().max() > 0


@pytest.mark.parametrize("mult", [5.0, 20.0])
def test_scaled_inputs_stay_finite(mult, gen):
    B, S1, S2, N1, N2, D = 1, 77, 93, 2, 1, 64
    dt = torch.bfloat16
    q, k = _randn((B, S1, N1, D), gen, dt, mult), _randn((B, S2, N2, D), gen, dt, mult)
    v, dy = _randn((B, S2, N2, D), gen, dt, mult), _randn((B, S1, N1, D), gen, dt, mult)
    _, got = _forward_and_grad(q, k, v, dy, N1, "BSND", 1 / 8, "causal_lu")
    assert all(bool(torch.isfinite(g).all()) for g in got)
    ref = _grads64(q, k, v, dy, N1, "BSND", 1 / 8, "causal_lu")
    low = _lowprec_grads(q, k, v, dy, N1, "BSND", 1 / 8, "causal_lu")
    _assert_grads(got, ref, low, f"inputs x{mult}")


def _det_problem(gen, deterministic=True):
    B, S, N1, N2, D = 2, 300, 4, 2, 64  # enough tasks to spread over every core of both chips
    dt = torch.float16
    q, k, v = (_randn((B, S, n, D), gen, dt) for n in (N1, N2, N2))
    dy = _randn((B, S, N1, D), gen, dt)
    out, smax, ssum = fwd(q, k, v, N1, "BSND", scale=0.125, sparse_mode=3)
    return lambda: grad_op(q, k, v, dy, N1, "BSND", softmax_max=smax, softmax_sum=ssum, attention_in=out, scale=0.125,
                           sparse_mode=3, deterministic=deterministic)[:3]


@pytest.mark.parametrize("deterministic", [True, False], ids=["deterministic", "default"])
def test_deterministic_repeat_and_core_count(deterministic, gen):
    run = _det_problem(gen, deterministic)
    try:
        npu_flash_attn.set_chip("Ascend910B2")
        first = run()
        assert twin_backend.last_launch_info()["block_dim_dq"] == 24
        for _ in range(19):
            again = run()
            assert all(torch.equal(a, b) for a, b in zip(first, again)), "repeated calls differ bitwise"
        npu_flash_attn.set_chip("Ascend910B4")
        other = run()
        assert twin_backend.last_launch_info()["block_dim_dq"] == 20
        assert all(torch.equal(a, b) for a, b in zip(first, other)), "24-core and 20-core results differ bitwise"
    finally:
        npu_flash_attn.set_chip(None)


def _tiny(gen, requires_grad=False):
    q, k, v = (_randn(s, gen, torch.float16) for s in ((1, 19, 2, 16), (1, 23, 1, 16), (1, 23, 1, 16)))
    return [t.requires_grad_(requires_grad) for t in (q, k, v)]


def test_opcheck_grad_op(gen):
    q, k, v = _tiny(gen)
    out, smax, ssum = fwd(q, k, v, 2, "BSND", scale=0.25, sparse_mode=3)
    dy = torch.randn_like(out)
    torch.library.opcheck(grad_op, (q, k, v, dy, 2, "BSND"),
                          dict(softmax_max=smax, softmax_sum=ssum, attention_in=out, scale=0.25, sparse_mode=3))


def test_opcheck_forward_with_autograd(gen):
    q, k, v = _tiny(gen, requires_grad=True)
    torch.library.opcheck(fwd, (q, k, v, 2, "BSND"), dict(scale=0.25, sparse_mode=2),
                          test_utils=("test_schema", "test_autograd_registration", "test_faketensor",
                                      "test_aot_dispatch_dynamic"))


def _loss(q, k, v):
    out = fwd(q, k, v, 2, "BSND", scale=0.25, sparse_mode=2)[0]
    return (out.float() ** 2).sum()


def test_autograd_follows_torch_deterministic_setting(gen):
    q, k, v = _tiny(gen, requires_grad=True)
    before = torch.are_deterministic_algorithms_enabled()
    try:
        for flag in (True, False):
            torch.use_deterministic_algorithms(flag)
            _loss(q, k, v).backward()
            assert twin_backend.last_launch_info()["deterministic"] is flag
    finally:
        torch.use_deterministic_algorithms(before)


def test_backward_eager_and_compiled(gen):
    q, k, v = _tiny(gen, requires_grad=True)
    torch.use_deterministic_algorithms(True)  # bitwise comparison below
    try:
        _loss(q, k, v).backward()
    finally:
        torch.use_deterministic_algorithms(False)
    eager = [t.grad.clone() for t in (q, k, v)]
    ref = _grads64(q, k, v, 2 * fwd(q, k, v, 2, "BSND", scale=0.25, sparse_mode=2)[0].detach().double(), 2, "BSND",
                   0.25, "causal_lu")
    assert all(torch.isfinite(g).all() and g.abs().max() > 0 for g in eager)
    for t in (q, k, v):
        t.grad = None
    torch._dynamo.reset()
    torch.use_deterministic_algorithms(True)
    try:
        torch.compile(lambda a, b, c: _loss(a, b, c).backward(), backend="aot_eager", fullgraph=False)(q, k, v)
    finally:
        torch.use_deterministic_algorithms(False)
    assert all(torch.equal(t.grad, g) for t, g in zip((q, k, v), eager)), "compiled backward differs from eager"
    for g, r in zip(eager, ref):  # loose sanity: the eager grads are the float64 ones up to fp16 rounding
        assert (g.double() - r).abs().max() <= 2e-2 * r.abs().max() + 1e-3


def test_bad_inputs_name_the_argument(gen):
    q, k, v = _tiny(gen)
    out, smax, ssum = fwd(q, k, v, 2, "BSND")
    dy = torch.randn_like(out)
    good = dict(softmax_max=smax, softmax_sum=ssum, attention_in=out)

    def call(dy_=dy, **over):
        kw = dict(good, **over)
        return grad_op(q, k, v, dy_, 2, "BSND", **kw)

    for name in ("softmax_max", "softmax_sum", "attention_in"):
        with pytest.raises(ValueError, match=name):
            call(**{name: None})
    with pytest.raises(ValueError, match="softmax_max shape"):
        call(softmax_max=smax[..., :4])
    with pytest.raises(ValueError, match="softmax_sum dtype"):
        call(softmax_sum=ssum.double())
    with pytest.raises(ValueError, match="attention_in shape"):
        call(attention_in=out[:, :-1])
    with pytest.raises(ValueError, match="dy shape"):
        call(dy_=dy[:, :-1])
    with pytest.raises(TypeError, match="dy dtype"):
        call(dy_=dy.bfloat16())
    with pytest.raises(TypeError, match="attention_in dtype"):
        call(attention_in=out.bfloat16())
    with pytest.raises(ValueError, match="dy is on device"):
        call(dy_=dy.to("meta"))
    with pytest.raises(ValueError, match="dy contains NaN"):
        call(dy_=torch.full_like(dy, float("nan")))
    with pytest.raises(ValueError, match="head_num"):
        grad_op(q, k, v, dy, 3, "BSND", **good)
    with pytest.raises(ValueError, match="padding_mask"):
        call(padding_mask=torch.zeros(1, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"pse shape \(1, 2, 19, 2\) must be"):
        call(pse=torch.zeros(1, 2, 19, 2, dtype=q.dtype))
    with pytest.raises(TypeError, match="pse dtype"):
        call(pse=torch.zeros(1, 2, 19, 23))
    with pytest.raises(ValueError, match=r"sink shape \(3,\) must be \(2,\)"):
        call(sink=torch.zeros(3, dtype=torch.float32))
    with pytest.raises(TypeError, match="sink dtype"):
        call(sink=torch.zeros(2, dtype=torch.float16))
    with pytest.raises(ValueError, match="keep_prob"):
        call(keep_prob=0.0)


@pytest.mark.parametrize("chip", [c["name"] for c in npu_flash_attn._C.chips()])
def test_every_chip_tiles_and_matches(chip, gen):
    B, S1, S2, N1, N2, D = 1, 70, 150, 3, 1, 96
    dt = torch.float16
    q, k, v = _randn((B, S1, N1, D), gen, dt), _randn((B, S2, N2, D), gen, dt), _randn((B, S2, N2, D), gen, dt)
    dy = _randn((B, S1, N1, D), gen, dt)
    try:
        npu_flash_attn.set_chip(chip)
        _, got = _forward_and_grad(q, k, v, dy, N1, "BSND", 0.1, "band")
        assert twin_backend.last_launch_info()["chip"] == chip
    finally:
        npu_flash_attn.set_chip(None)
    _assert_grads(got, _grads64(q, k, v, dy, N1, "BSND", 0.1, "band"),
                  _lowprec_grads(q, k, v, dy, N1, "BSND", 0.1, "band"), chip)


class _TinyLM(torch.nn.Module):
    """2-layer causal transformer with GQA (4 query heads, 2 kv heads, head dim 16); `attn` picks the attention."""

    def __init__(self, vocab=41, d=64, heads=4, kv_heads=2):
        super().__init__()
        self.h, self.kvh, self.hd = heads, kv_heads, d // heads
        self.emb = torch.nn.Embedding(vocab, d)
        self.layers = torch.nn.ModuleList()
        for _ in range(2):
            self.layers.append(torch.nn.ModuleDict(dict(
                ln1=torch.nn.LayerNorm(d), q=torch.nn.Linear(d, heads * self.hd),
                k=torch.nn.Linear(d, kv_heads * self.hd), v=torch.nn.Linear(d, kv_heads * self.hd),
                o=torch.nn.Linear(heads * self.hd, d), ln2=torch.nn.LayerNorm(d),
                mlp=torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d)))))
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, tokens, attn):
        x = self.emb(tokens)
        B, S, _ = x.shape
        for L in self.layers:
            y = L["ln1"](x)
            q = L["q"](y).view(B, S, self.h, self.hd)
            k, v = L["k"](y).view(B, S, self.kvh, self.hd), L["v"](y).view(B, S, self.kvh, self.hd)
            x = x + L["o"](attn(q, k, v).reshape(B, S, -1))
            x = x + L["mlp"](L["ln2"](x))
        return self.head(x)


def _attn_fa(q, k, v):
    bf = torch.bfloat16
    return fwd(q.to(bf), k.to(bf), v.to(bf), q.shape[2], "BSND", scale=q.shape[-1] ** -0.5, sparse_mode=2)[0].float()


def _attn_sdpa(dtype):
    def attn(q, k, v):
        q, k, v = (t.transpose(1, 2).to(dtype) for t in (q, k, v))
        g = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).float()
    return attn


def test_tiny_transformer_trains_like_sdpa(gen):
    torch.manual_seed(int(torch.randint(0, 2 ** 31, (1,), generator=gen)))
    base = _TinyLM()
    tokens = torch.randint(0, 41, (2, 29), generator=gen)
    losses = {}
    variants = (("fa", _attn_fa), ("sdpa32", _attn_sdpa(torch.float32)), ("sdpa_bf16", _attn_sdpa(torch.bfloat16)))
    for name, attn in variants:
        model = copy.deepcopy(base)
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        trace = []
        for _ in range(5):
            logits = model(tokens[:, :-1], attn)
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            trace.append(loss.item())
        losses[name] = torch.tensor(trace, dtype=torch.float64)
    assert losses["fa"][-1] < losses["fa"][0], f"training does not reduce the loss: {losses['fa'].tolist()}"
    err = (losses["fa"] - losses["sdpa32"]).abs().max().item()
    base_err = (losses["sdpa_bf16"] - losses["sdpa32"]).abs().max().item()
    assert err <= 3 * base_err + 1e-5, f"loss vs fp32 SDPA {err:.3e} > 3 * bf16 SDPA's {base_err:.3e} + 1e-5: {losses}"


def test_empty_key_sequence_gives_zero_grads(gen):
    q = _randn((1, 5, 2, 16), gen, torch.float16).requires_grad_()
    k, v = (torch.empty(1, 0, 2, 16, dtype=torch.float16).requires_grad_() for _ in range(2))
    out = fwd(q, k, v, 2, "BSND")[0]
    out.float().sum().backward()
    assert torch.equal(q.grad, torch.zeros_like(q)) and k.grad.shape == k.shape and v.grad.shape == v.shape


@pytest.mark.parametrize("D,Dv,sparse", [(512, 512, "causal_rd"), (448, 320, "full"), (192, 128, "band")])
def test_large_head_dims_run_one_dkv_pass_per_gradient(D, Dv, sparse, gen):
    # the dK and dV sums of a key block no longer fit half of L0C together: a dV pass, then a dK pass
    q = torch.randn(_shape("BSND", 1, 70, 2, D), generator=gen).to(torch.bfloat16)
    k = torch.randn(_shape("BSND", 1, 90, 1, D), generator=gen).to(torch.bfloat16)
    v = torch.randn(_shape("BSND", 1, 90, 1, Dv), generator=gen).to(torch.bfloat16)
    dy = torch.randn(_shape("BSND", 1, 70, 2, Dv), generator=gen).to(torch.bfloat16)
    scale = 1 / math.sqrt(D)
    _, got = _forward_and_grad(q, k, v, dy, 2, "BSND", scale, sparse)
    assert twin_backend.last_launch_info()["launches"] == _expected_launches(D, Dv) > 2
    ref = _grads64(q, k, v, dy, 2, "BSND", scale, sparse)
    low = _lowprec_grads(q, k, v, dy, 2, "BSND", scale, sparse)
    _assert_grads(got, ref, low, f"D={D} Dv={Dv} {sparse}")
