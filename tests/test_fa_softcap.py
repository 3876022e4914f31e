"""Logit soft-capping (`softcap`, flash_attn's semantics: the scaled scores x = scale * q.k become
softcap * tanh(x / softcap) before the masks and the softmax), forward and backward, on the CPU twin.

Forward against the float64 reference (FA criterion, statistics to fp32 rounding) over every layout, fp16/bf16,
GQA/MQA, masks, varlen and sinks; dq/dk/dv against float64 autograd within 3x the error of the same program in the
input dtype; the float64 reference's own gradient against finite differences; capping bounds softmax_max; bad values
raise naming the argument."""
from __future__ import annotations

import math

import pytest
import torch

from feature_problems import CASES, case_id, check_forward, check_grads, fwd, problem
from npu_flash_attn.reference import flash_attention_reference


def _cap(gen) -> float:
    return float(torch.empty(1).uniform_(1.0, 8.0, generator=gen))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward_with_softcap_matches_reference(case, gen):
    args, kw = problem(case, gen, q_gain=4.0)  # scores of several units: the cap bends them
    cap = _cap(gen)
    out, ro = check_forward(args, dict(kw, softcap=cap))
    plain = fwd(*args, **kw)[0]
    assert (plain.double() - ro).abs().max() > 4 * (out.double() - ro).abs().max()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_grads_with_softcap_match_float64(case, gen):
    args, kw = problem(case, gen, q_gain=4.0)
    grads, ref, dy = check_grads(args, dict(kw, softcap=_cap(gen)), gen)
    q, k, v, n1, layout = args
    plain = [t.clone().requires_grad_() for t in (q, k, v)]
    fwd(*plain, n1, layout, **kw)[0].backward(dy)
    assert (plain[0].grad.double() - ref[0]).abs().max() > 2 * (grads[0].double() - ref[0]).abs().max()


def test_softcap_with_sink_and_gqa(gen):
    args, kw = problem(("BSND", "bf16", 2, 150, 333, 6, 2, 72, dict(sparse_mode=3)), gen, q_gain=4.0)
    kw.update(softcap=_cap(gen), sink=1.0 + torch.randn(6, generator=gen))
    check_forward(args, kw)
    check_grads(args, kw, gen, train=("sink",))  # dsink: the sink competes with the capped scores


def test_capped_max_is_bounded(gen):
    q = (8 * torch.randn(1, 2, 70, 64, generator=gen)).half()
    k = (8 * torch.randn(1, 2, 300, 64, generator=gen)).half()
    out, smax, ssum = fwd(q, k, k, 2, "BNSD", scale=0.125, softcap=3.0)
    assert float(smax.max()) <= 3.0 and float(smax.min()) > 2.0  # raw maxima are far above 3: they saturate
    assert torch.all(ssum >= 1.0) and torch.all(ssum <= 300.0)


def test_large_cap_is_nearly_no_cap(gen):
    # cap >> |scores|: tanh is linear there; the capped result equals the plain one to the kernel's accuracy
    q = torch.randn(1, 2, 90, 64, generator=gen).bfloat16()
    k = torch.randn(1, 2, 210, 64, generator=gen).bfloat16()
    v = torch.randn(1, 2, 210, 64, generator=gen).bfloat16()
    plain = fwd(q, k, v, 2, "BNSD", scale=0.125)[0].double()
    capped = fwd(q, k, v, 2, "BNSD", scale=0.125, softcap=500.0)[0].double()
    assert (capped - plain).abs().max() <= 0.02  # a few bf16 ulps of outputs of size ~1


def test_reference_softcap_gradient_matches_finite_differences(gen):
    # the float64 model the kernel is checked against is itself checked by finite differences
    q, k, v = (torch.randn(1, 7, 2, 8, generator=gen, dtype=torch.float64).requires_grad_() for _ in range(3))

    def f(q, k, v):
        return flash_attention_reference(q * 3, k, v, 2, "BSND", scale=0.5, softcap=1.5, sparse_mode=2)[0]
    assert torch.autograd.gradcheck(f, (q, k, v))


@pytest.mark.parametrize("bad,err,words", [
    (0.0, ValueError, "softcap=0.0 must be finite and > 0"),
    (-2.0, ValueError, "softcap=-2.0 must be finite and > 0"),
    (math.inf, ValueError, "softcap=inf must be finite"),
    (math.nan, ValueError, "softcap=nan must be finite"),
    ("2", RuntimeError, "for argument 'softcap'"),  # the schema's own type check
])
def test_bad_softcap_is_refused(gen, bad, err, words):
    q = torch.randn(1, 2, 16, 64, generator=gen).half()
    with pytest.raises(err, match=words):
        fwd(q, q, q, 2, "BNSD", softcap=bad)
    dy = torch.ones_like(q)
    stats = torch.zeros(1, 2, 16, 8)
    with pytest.raises(err, match=words):
        torch.ops.npu.flash_attention_grad(q, q, q, dy, 2, "BNSD", softmax_max=stats, softmax_sum=stats,
                                           attention_in=q, softcap=bad)


def test_opcheck_with_softcap(gen):
    q = torch.randn(1, 40, 2, 64, generator=gen).half().requires_grad_()
    k = torch.randn(1, 50, 2, 64, generator=gen).half().requires_grad_()
    torch.library.opcheck(fwd.default, (q, k, k.detach().clone(), 2, "BSND"), dict(scale=0.125, sparse_mode=3,
                                                                                 softcap=2.5))
