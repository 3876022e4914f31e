"""An outer positional bias tensor (`pse` with pse_type 0 or 1, the built-in's shapes [B or 1, N1, S1 or 1, S2]):
added to the scores after the scale and the soft-cap, as it is (pse_type 0) or times the scale (pse_type 1), forward
and backward with dpse, on the CPU twin.

Forward against the float64 reference and against plain float64 attention with the bias added by hand; dq/dk/dv and
dpse against float64 autograd within 3x the error of the same program in the input dtype, for every shape form
(dpse summed over what the pse broadcasts); a zero bias changes nothing; bad arguments raise naming the argument."""
from __future__ import annotations

import pytest
import torch

from feature_problems import CASES, case_id, check_forward, check_grads, fwd, problem
from npu_flash_attn.criterion import assert_close_fa
from npu_flash_attn.reference import flash_attention_lowprec

NON_TND = [c for c in CASES if c[0] != "TND"]
FORMS = ["full", "batch-broadcast", "row-broadcast", "both-broadcast"]


def _with_pse(case, gen, form, pse_type):
    args, kw = problem(case, gen)
    _, _, B, S1, S2, N1, _, _, _ = case
    shape = (1 if "batch" in form or "both" in form else B, N1, 1 if "row" in form or "both" in form else S1, S2)
    kw.update(pse=(2 * torch.randn(shape, generator=gen)).to(args[0].dtype), pse_type=pse_type)
    return args, kw


@pytest.mark.parametrize("case", NON_TND, ids=case_id)
def test_forward_with_pse_matches_reference(case, gen):
    i = NON_TND.index(case)
    args, kw = _with_pse(case, gen, FORMS[i % 4], i % 2)
    out, ro = check_forward(args, kw)
    plain = {n: v for n, v in kw.items() if n not in ("pse", "pse_type")}
    assert (fwd(*args, **plain)[0].double() - ro).abs().max() > 4 * (out.double() - ro).abs().max()


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", NON_TND, ids=case_id)
def test_grads_and_dpse_match_float64(case, form, gen):
    args, kw = _with_pse(case, gen, form, NON_TND.index(case) % 2)
    grads, ref, _ = check_grads(args, kw, gen, train=("pse",))
    assert grads[3].shape == kw["pse"].shape and grads[3].dtype == kw["pse"].dtype


@pytest.mark.parametrize("pse_type", [0, 1])
def test_pse_equals_a_bias_added_by_hand(gen, pse_type):
    B, N1, S1, S2, D = 2, 3, 70, 150, 64
    q, k, v = (torch.randn(B, N1, s, D, generator=gen).half() for s in (S1, S2, S2))
    pse = torch.randn(B, N1, S1, S2, generator=gen).half()
    out = fwd(q, k, v, N1, "BNSD", scale=0.125, pse=pse, pse_type=pse_type)[0]
    s = 0.125 * q.double() @ k.double().transpose(-1, -2) + (0.125 if pse_type == 1 else 1.0) * pse.double()
    ref = torch.softmax(s, dim=-1) @ v.double()
    assert_close_fa(out, ref, flash_attention_lowprec(q, k, v, N1, "BNSD", scale=0.125, pse=pse, pse_type=pse_type))


def test_zero_pse_changes_nothing(gen):
    q = torch.randn(1, 2, 90, 64, generator=gen).bfloat16()
    k = torch.randn(1, 2, 210, 64, generator=gen).bfloat16()
    plain = fwd(q, k, k, 2, "BNSD", scale=0.125, sparse_mode=2)
    zero = fwd(q, k, k, 2, "BNSD", scale=0.125, sparse_mode=2, pse=torch.zeros(1, 2, 1, 210).bfloat16())
    assert all(torch.equal(a, b) for a, b in zip(plain, zero))


def test_grad_op_returns_dpse(gen):
    q = torch.randn(1, 40, 2, 64, generator=gen).half()
    k = torch.randn(1, 50, 2, 64, generator=gen).half()
    pse = torch.randn(1, 2, 1, 50, generator=gen).half()
    out, smax, ssum, res = torch.ops.npu.flash_attention_fwd(q, k, k, 2, "BSND", scale=0.125, pse=pse, pse_type=0,
                                                             output_residual=True)
    dy = torch.randn(out.shape, generator=gen).half()
    dq, dk, dv, dpse, dsink = torch.ops.npu.flash_attention_grad(
        q, k, k, dy, 2, "BSND", softmax_max=smax, softmax_sum=ssum, attention_in=out, scale=0.125, pse=pse,
        pse_type=0, attention_in_residual=res)
    assert dpse.shape == pse.shape and dpse.dtype == pse.dtype and dsink.numel() == 0
    # the autograd's gradient of pse is the grad op's dpse (the autograd keeps the forward's output residual)
    leaf = pse.clone().requires_grad_()
    fwd(q, k, k, 2, "BSND", scale=0.125, pse=leaf, pse_type=0)[0].backward(dy)
    assert torch.equal(leaf.grad, dpse)


@pytest.mark.parametrize("kw,err,words", [
    (dict(pse=torch.zeros(1, 2, 16, 16)), TypeError, "pse dtype torch.float32 must equal query dtype"),
    (dict(pse=torch.zeros(1, 2, 16, 15, dtype=torch.float16)), ValueError, r"pse shape \(1, 2, 16, 15\) must be"),
    (dict(pse=torch.zeros(2, 2, 16, 16, dtype=torch.float16)), ValueError, r"pse shape \(2, 2, 16, 16\)"),
    (dict(pse=torch.zeros(2, 16, 16, dtype=torch.float16)), ValueError, r"pse shape \(2, 16, 16\)"),
    (dict(pse=torch.zeros(1, 2, 16, 16, dtype=torch.float16), pse_type=0, q_start_idx=[1]), ValueError,
     "q_start_idx is only used"),
    (dict(pse=torch.full((1, 2, 1, 16), float("inf"), dtype=torch.float16)), ValueError, "pse contains NaN or Inf"),
    (dict(pse=torch.tensor([0.5, float("nan")]), pse_type=2), ValueError, "pse contains NaN or Inf"),
])
def test_bad_pse_is_refused(gen, kw, err, words):
    q = torch.randn(1, 2, 16, 64, generator=gen).half()
    with pytest.raises(err, match=words):
        fwd(q, q, q, 2, "BNSD", **kw)


def test_tnd_outer_pse_is_not_built(gen):
    q = torch.randn(30, 2, 64, generator=gen).half()
    with pytest.raises(NotImplementedError, match="outer pse tensor with input_layout='TND'"):
        fwd(q, q, q, 2, "TND", actual_seq_qlen=[30], actual_seq_kvlen=[30], pse=torch.zeros(1, 2, 30, 30).half())


def test_opcheck_with_pse(gen):
    q = torch.randn(1, 40, 2, 64, generator=gen).half().requires_grad_()
    k = torch.randn(1, 50, 2, 64, generator=gen).half().requires_grad_()
    pse = torch.randn(1, 2, 40, 50, generator=gen).half().requires_grad_()
    torch.library.opcheck(fwd.default, (q, k, k.detach().clone(), 2, "BSND"), dict(scale=0.125, pse=pse, pse_type=1))
