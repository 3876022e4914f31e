"""Backward on NPU tensors (the adapter's launches of FlashAttentionNpuFaGrad; not yet run on hardware): the twin's
gradient cases (layouts, dtypes, head dims up to 256, GQA/MQA, sparse modes), both schedules, TND with empty
sequences, dense masks, autograd through `out.backward()`; against float64 autograd of the reference with the
gradient criterion of tests/test_fa_backward.py (3x the low-precision error + 1e-5)."""
from __future__ import annotations

import math

import pytest
import torch

from npu_env import mask_case, npu_kwargs, requires_npu, to_cpu, to_npu
from npu_flash_attn.reference import flash_attention_lowprec, flash_attention_reference
from test_fa_backward import CASES, DT, SPARSE, _assert_grads, _case_id, _grads64, _lowprec_grads, _shape
from test_fa_backward_masks import B, N1, N2, REF_ARGS, S1, S2, SHAPES
from test_fa_forward import make_qkv

pytestmark = requires_npu
fwd = torch.ops.npu.flash_attention
grad_op = torch.ops.npu.flash_attention_grad


def grads_on_npu(q, k, v, dy, n1, layout, deterministic=False, **kw):
    dq_, dk_, dv_, dy_ = to_npu(q, k, v, dy)
    nkw = npu_kwargs(kw)
    out, smax, ssum = fwd(dq_, dk_, dv_, n1, layout, **nkw)
    dq, dk, dv, dpse, dsink = grad_op(dq_, dk_, dv_, dy_, n1, layout, softmax_max=smax, softmax_sum=ssum,
                                      attention_in=out, deterministic=deterministic, **nkw)
    assert dpse.numel() == 0 and dsink.numel() == 0
    return to_cpu(dq, dk, dv)


@pytest.mark.parametrize("deterministic", [False, True], ids=["fast", "deterministic"])
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_grad_cases_on_npu(case, deterministic, gen):
    c, dt = case, DT[case.dtype]
    q, k, v, dy = (torch.randn(_shape(c.layout, c.B, s, n, d), generator=gen).to(dt)
                   for s, n, d in ((c.S1, c.N1, c.D), (c.S2, c.N2, c.D), (c.S2, c.N2, c.Dv), (c.S1, c.N1, c.Dv)))
    scale = 1 / math.sqrt(c.D)
    mode, pre, nxt = SPARSE[c.sparse]
    got = grads_on_npu(q, k, v, dy, c.N1, c.layout, deterministic, scale=scale, sparse_mode=mode, pre_tokens=pre,
                       next_tokens=nxt)
    _assert_grads(got, _grads64(q, k, v, dy, c.N1, c.layout, scale, c.sparse),
                  _lowprec_grads(q, k, v, dy, c.N1, c.layout, scale, c.sparse), f"NPU {c}")


@pytest.mark.parametrize("deterministic", [False, True], ids=["fast", "deterministic"])
def test_grad_tnd_with_empty_sequences_on_npu(deterministic, gen):
    cu_q, cu_kv, T1, T2, n1, n2, D = [5, 5, 70, 140, 0], [9, 40, 40, 110, 0], 150, 120, 4, 1, 64
    q, k, v = (torch.randn(t, n, D, generator=gen).to(torch.float16) for t, n in ((T1, n1), (T2, n2), (T2, n2)))
    dy = torch.randn(T1, n1, D, generator=gen).to(torch.float16)
    got = grads_on_npu(q, k, v, dy, n1, "TND", deterministic, scale=0.125, sparse_mode=3, actual_seq_qlen=cu_q,
                       actual_seq_kvlen=cu_kv)
    _assert_grads(got, _grads64(q, k, v, dy, n1, "TND", 0.125, "causal_rd", cu_q, cu_kv),
                  _lowprec_grads(q, k, v, dy, n1, "TND", 0.125, "causal_rd", cu_q, cu_kv), "NPU TND")
    dq, dk, dv = got
    assert torch.equal(dq[140:], torch.zeros_like(dq[140:])) and torch.equal(dk[110:], torch.zeros_like(dk[110:]))


@pytest.mark.parametrize("name", list(SHAPES))
def test_grad_dense_masks_through_autograd_on_npu(name, gen):
    layout, dtype = mask_case(SHAPES, name)
    q, k, v = make_qkv(gen, layout, B, N1, N2, S1, S2, 64, 64, dtype)
    m = torch.rand(SHAPES[name], generator=gen) < 0.4
    kw = dict(scale=0.125, sparse_mode=1, atten_mask=m)
    leaves = [t.requires_grad_() for t in to_npu(q, k, v)]
    out = fwd(*leaves, N1, layout, **npu_kwargs(kw))[0]
    dy = torch.randn(out.shape, generator=gen).to(dtype)
    out.backward(dy.to(out.device))
    ref_kw = {a: kw[a] for a in REF_ARGS if a in kw}
    x64 = [t.detach().double().requires_grad_() for t in (q, k, v)]
    flash_attention_reference(*x64, N1, layout, **ref_kw)[0].backward(dy.double())
    xlow = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    flash_attention_lowprec(*xlow, N1, layout, **ref_kw).backward(dy)
    _assert_grads([t.grad.cpu() for t in leaves], [t.grad for t in x64], [t.grad for t in xlow], f"NPU mask {name}")


def check_feature_grads_on_npu(q, k, v, dy, n1, layout, kw, train=()):
    """dq/dk/dv (and the gradients of the keyword tensors named in `train`: "sink" -> dsink, "pse" -> dpse) of the
    grad op on the NPU against float64 autograd of the reference, within 3x the low-precision program's error."""
    dq_, dk_, dv_, dy_ = to_npu(q, k, v, dy)
    nkw = npu_kwargs(kw)
    out, smax, ssum = fwd(dq_, dk_, dv_, n1, layout, **nkw)
    dq, dk, dv, dpse, dsink = to_cpu(*grad_op(dq_, dk_, dv_, dy_, n1, layout, softmax_max=smax, softmax_sum=ssum,
                                              attention_in=out, **nkw))
    got = [dq, dk, dv] + [{"sink": dsink, "pse": dpse}[n] for n in train]
    base = (q, k, v) + tuple(kw[n] for n in train)

    def run(ts, f):
        return f(*ts[:3], n1, layout, **dict(kw, **dict(zip(train, ts[3:]))))
    ref = [t.double().requires_grad_() for t in base]
    run(ref, flash_attention_reference)[0].backward(dy.double())
    low = [t.clone().requires_grad_() for t in base]
    run(low, flash_attention_lowprec).backward(dy)
    for name, g, r, lo in zip(("dq", "dk", "dv") + tuple("d" + n for n in train), got, ref, low):
        err, base_err = (g.double() - r.grad).abs().max().item(), (lo.grad.double() - r.grad).abs().max().item()
        assert err <= 3 * base_err + 1e-5, f"{name} (NPU): {err:.3e} > 3 * {base_err:.3e} + 1e-5"


def test_softcap_grads_on_npu(gen):
    q = (4 * torch.randn(2, 150, 4, 64, generator=gen)).to(torch.bfloat16)
    k, v = (torch.randn(2, 230, 2, 64, generator=gen).to(torch.bfloat16) for _ in range(2))
    dy = torch.randn(2, 150, 4, 64, generator=gen).to(torch.bfloat16)
    check_feature_grads_on_npu(q, k, v, dy, 4, "BSND", dict(scale=0.125, sparse_mode=3, softcap=2.5))


def test_dsink_and_alibi_grads_on_npu(gen):
    slopes = torch.tensor([2 ** (-8 * (i + 1) / 4) for i in range(4)])
    q = torch.randn(2, 150, 4, 64, generator=gen).to(torch.bfloat16)
    k, v = (torch.randn(2, 230, 2, 64, generator=gen).to(torch.bfloat16) for _ in range(2))
    dy = torch.randn(2, 150, 4, 64, generator=gen).to(torch.bfloat16)
    kw = dict(scale=0.125, sparse_mode=3, pse=slopes, pse_type=2, sink=torch.randn(4, generator=gen) + 4.0)
    check_feature_grads_on_npu(q, k, v, dy, 4, "BSND", kw, train=("sink",))


@pytest.mark.parametrize("pse_shape", [(2, 4, 150, 230), (1, 4, 1, 230)])
def test_dpse_on_npu(gen, pse_shape):
    q = torch.randn(2, 4, 150, 64, generator=gen).to(torch.float16)
    k, v = (torch.randn(2, 2, 230, 64, generator=gen).to(torch.float16) for _ in range(2))
    dy = torch.randn(2, 4, 150, 64, generator=gen).to(torch.float16)
    kw = dict(scale=0.125, sparse_mode=3, pse_type=1, pse=torch.randn(pse_shape, generator=gen).to(torch.float16))
    check_feature_grads_on_npu(q, k, v, dy, 4, "BNSD", kw, train=("pse",))


@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_dropout_grads_with_dsink_on_npu(gen, layout):
    """Dropout regenerated in the NPU backward from (seed, offset), with a trained sink: dq/dk/dv/dsink against
    float64 autograd of the reference with the same mask."""
    q, k, v = make_qkv(gen, layout, 2, 4, 2, 150, 230, 64, 64, torch.bfloat16, [70, 0, 80], [90, 40, 230])
    dy = torch.randn(q.shape, generator=gen).to(torch.bfloat16)
    kw = dict(scale=0.125, sparse_mode=3, keep_prob=0.8, seed=int(torch.randint(0, 2 ** 62, (1,), generator=gen)),
              offset=5, sink=torch.randn(4, generator=gen) + 4.0)
    if layout == "TND":
        kw.update(actual_seq_qlen=[70, 70, 150], actual_seq_kvlen=[90, 130, 360])
    check_feature_grads_on_npu(q, k, v, dy, 4, layout, kw, train=("sink",))
