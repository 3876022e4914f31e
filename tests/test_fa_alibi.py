"""ALiBi generated in the kernel (`pse_type` 2 and 3 with the slopes in `pse`, the built-in's in-kernel pse): score
(i, j) of head h gets -slope_h * |(j + kv_start_idx[0]) - (i + q_start_idx[0])| (type 3: its square root), forward and
backward, on the CPU twin.

Forward against the float64 reference and against plain float64 softmax attention with an explicit bias tensor
built by hand; dq/dk/dv against float64 autograd within 3x the error of the same program in the input dtype; slopes
per head or per (batch, head), start offsets, TND positions inside each sequence; bad arguments raise naming the
argument."""
from __future__ import annotations

import math

import pytest
import torch

from feature_problems import CASES, case_id, check_forward, check_grads, fwd, problem
from npu_flash_attn.criterion import assert_close_fa
from npu_flash_attn.reference import flash_attention_lowprec


def _slopes(n1, gen, batches=None):
    # BLOOM's geometric slopes 2^(-8 i / N1), jittered so that a head mix-up shows
    base = torch.tensor([2 ** (-8 * (i + 1) / n1) for i in range(n1)])
    shape = (n1,) if batches is None else (batches, n1)
    return (base * torch.empty(shape).uniform_(0.5, 1.5, generator=gen)).float()


def _alibi(case, gen, per_batch=False):
    args, kw = problem(case, gen)
    n1, layout = args[3], args[4]
    batches = len(kw["actual_seq_qlen"]) if layout == "TND" else case[2]
    starts = torch.randint(0, 300, (2,), generator=gen).tolist()
    kw.update(pse=_slopes(n1, gen, batches if per_batch else None), pse_type=2 + int(starts[0]) % 2,
              q_start_idx=[starts[0]], kv_start_idx=[starts[1]])
    return args, kw


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward_with_alibi_matches_reference(case, gen):
    args, kw = _alibi(case, gen, per_batch=case[0] in ("BNSD", "TND"))
    out, ro = check_forward(args, kw)
    plain = {n: v for n, v in kw.items() if n not in ("pse", "pse_type", "q_start_idx", "kv_start_idx")}
    assert (fwd(*args, **plain)[0].double() - ro).abs().max() > 4 * (out.double() - ro).abs().max()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_grads_with_alibi_match_float64(case, gen):
    args, kw = _alibi(case, gen)
    check_grads(args, kw, gen)


@pytest.mark.parametrize("pse_type", [2, 3])
def test_alibi_equals_an_explicit_bias(gen, pse_type):
    # plain float64 attention with the bias tensor written out by hand (not through the reference)
    B, N1, S1, S2, D = 2, 3, 70, 150, 64
    q, k, v = (torch.randn(B, N1, s, D, generator=gen).bfloat16() for s in (S1, S2, S2))
    slopes = _slopes(N1, gen, B)
    q0, k0 = 40, 7
    out = fwd(q, k, v, N1, "BNSD", scale=0.125, pse=slopes, pse_type=pse_type, q_start_idx=[q0],
              kv_start_idx=[k0])[0]
    i = torch.arange(S1, dtype=torch.float64).view(-1, 1) + q0
    j = torch.arange(S2, dtype=torch.float64).view(1, -1) + k0
    dist = (j - i).abs() if pse_type == 2 else (j - i).abs().sqrt()
    bias = -slopes.double().view(B, N1, 1, 1) * dist
    s = 0.125 * q.double() @ k.double().transpose(-1, -2) + bias
    ref = torch.softmax(s, dim=-1) @ v.double()
    low = flash_attention_lowprec(q, k, v, N1, "BNSD", scale=0.125, pse=slopes, pse_type=pse_type, q_start_idx=[q0],
                                  kv_start_idx=[k0])
    assert_close_fa(out, ref, low)


def test_alibi_with_softcap_sink_and_causal(gen):
    args, kw = problem(("BSND", "fp16", 1, 190, 260, 4, 2, 96, dict(sparse_mode=3)), gen, q_gain=3.0)
    kw.update(pse=_slopes(4, gen), pse_type=2, softcap=5.0, sink=torch.randn(4, generator=gen) + 2)
    check_forward(args, kw)
    check_grads(args, kw, gen, train=("sink",))


def test_slopes_that_require_grad_are_refused_in_backward(gen):
    q = torch.randn(1, 2, 30, 64, generator=gen).half().requires_grad_()
    slopes = torch.tensor([0.5, 0.25], requires_grad=True)
    out = fwd(q, q, q, 2, "BNSD", pse=slopes, pse_type=2)[0]
    with pytest.raises(NotImplementedError, match="gradient of ALiBi slopes"):
        out.sum().backward()


@pytest.mark.parametrize("kw,err,words", [
    (dict(pse_type=2), ValueError, r"pse_type=2 needs `pse`"),
    (dict(pse_type=3, pse=torch.zeros(2, dtype=torch.float16)), TypeError, "pse dtype torch.float16 must be"),
    (dict(pse_type=2, pse=torch.zeros(3)), ValueError, r"pse shape \(3,\) must be \(2,\) or \(1, 2\)"),
    (dict(pse_type=2, pse=torch.zeros(2, 2)), ValueError, r"pse shape \(2, 2\)"),
    (dict(pse_type=1, q_start_idx=[3]), ValueError, "q_start_idx is only used by the in-kernel ALiBi"),
    (dict(pse_type=2, pse=torch.zeros(2), kv_start_idx=[]), ValueError, "kv_start_idx=.* non-empty list"),
    (dict(pse_type=2, pse=torch.zeros(2), q_start_idx=[2 ** 40]), ValueError, r"q_start_idx\[0\]=.* int32"),
    (dict(pse=torch.zeros(2, dtype=torch.float16), pse_type=1), ValueError, r"pse shape \(2,\) must be \[B or 1, N1, S1 or 1, S2\]"),
    (dict(pse_type=5), ValueError, "pse_type=5 must be 0, 1, 2 or 3"),
])
def test_bad_alibi_arguments_are_refused(gen, kw, err, words):
    q = torch.randn(1, 2, 16, 64, generator=gen).half()
    with pytest.raises(err, match=words):
        fwd(q, q, q, 2, "BNSD", **kw)


def test_opcheck_with_alibi(gen):
    q = torch.randn(1, 40, 2, 64, generator=gen).half().requires_grad_()
    k = torch.randn(1, 50, 2, 64, generator=gen).half().requires_grad_()
    torch.library.opcheck(fwd.default, (q, k, k.detach().clone(), 2, "BSND"),
                          dict(scale=0.125, pse=torch.tensor([0.5, 0.125]), pse_type=3, q_start_idx=[4]))
