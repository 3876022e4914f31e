"""Attention sinks (`sink`: one float32 logit per query head that joins every softmax row's denominator and attends
no value, as torch_npu's `sink`), forward and backward, on the CPU twin.

Forward against the float64 reference (FA criterion, statistics to fp32 rounding); dq/dk/dv of a forward with a
frozen sink, and dq/dk/dv/dsink with a trained one, against float64 autograd with 3x the error of the same program
in the input dtype; dsink bitwise reproducible across runs and core counts; rows that see no key (their softmax is
the sink alone: output 0, softmax_max = sink, softmax_sum = 1, no dsink) through the kernel and through the
no-launch path; bad sink arguments raise naming the argument."""
from __future__ import annotations

import math

import pytest
import torch

from feature_problems import CASES, case_id, check_forward, check_grads, fwd, problem
import npu_flash_attn
from npu_flash_attn.problem import FLT_MAX
from npu_flash_attn.reference import flash_attention_reference

def _problem(case, gen):
    args, kw = problem(case, gen)
    S2 = case[4] if case[0] != "TND" else max(b - a for a, b in zip([0] + kw["actual_seq_kvlen"][:-1],
                                                                      kw["actual_seq_kvlen"]))
    # about as heavy as the keys (a row's log-sum-exp is near log S2): the sink takes a sizeable share of each row
    sink = math.log(max(S2, 100)) + torch.randn(args[3], generator=gen)
    return args, kw, sink


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward_with_sink_matches_reference(case, gen):
    args, kw, sink = _problem(case, gen)
    out, ro = check_forward(args, dict(kw, sink=sink))
    # the sink changes the result: the same call without it differs from the reference with it
    plain = fwd(*args, **kw)[0]
    assert (plain.double() - ro).abs().max() > 4 * (out.double() - ro).abs().max()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_grads_with_frozen_sink_match_float64(case, gen):
    # dq/dk/dv of a forward with sinks: the backward needs only the statistics, which hold the sink's term.
    args, kw, sink = _problem(case, gen)
    grads, ref, dy = check_grads(args, dict(kw, sink=sink), gen)
    # without the sink the gradients are those of another function
    q, k, v, n1, layout = args
    plain = [t.clone().requires_grad_() for t in (q, k, v)]
    fwd(*plain, n1, layout, **kw)[0].backward(dy)
    assert (plain[0].grad.double() - ref[0]).abs().max() > 2 * (grads[0].double() - ref[0]).abs().max()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_dsink_matches_float64(case, gen):
    # dsink through the autograd (a sink that requires grad) with dq/dk/dv, against float64 autograd of the
    # reference, within 3x the error of the same program in the input dtype (whose dsink is nearly fp32)
    args, kw, sink = _problem(case, gen)
    grads, ref, _ = check_grads(args, dict(kw, sink=sink), gen, train=("sink",))
    assert grads[3].dtype == torch.float32 and grads[3].shape == (args[3],)
    assert (ref[3].abs() > 1e-3).any()  # the sinks matter: a zero gradient would not pass the check above


def test_dsink_from_the_grad_op_is_bitwise_reproducible(gen):
    q = torch.randn(2, 300, 6, 64, generator=gen).bfloat16()
    k, v = (torch.randn(2, 333, 2, 64, generator=gen).bfloat16() for _ in range(2))
    sink = torch.randn(6, generator=gen) + 3.0
    kw = dict(scale=0.125, sparse_mode=3, sink=sink)
    out, smax, ssum = fwd(q, k, v, 6, "BSND", **kw)
    dy = torch.randn(out.shape, generator=gen).bfloat16()

    def grad():
        return torch.ops.npu.flash_attention_grad(q, k, v, dy, 6, "BSND", softmax_max=smax, softmax_sum=ssum,
                                                  attention_in=out, **kw)
    first = grad()
    assert first[4].shape == (6,) and first[3].numel() == 0
    assert torch.equal(grad()[4], first[4])
    try:
        npu_flash_attn.set_chip("Ascend910B4")  # another core count: another task split
        assert all(torch.equal(a, b) for a, b in zip(grad(), first))
    finally:
        npu_flash_attn.set_chip(None)
    # the same call without the sink: the same dq/dk/dv, no dsink
    plain = torch.ops.npu.flash_attention_grad(q, k, v, dy, 6, "BSND", softmax_max=smax, softmax_sum=ssum,
                                               attention_in=out, scale=0.125, sparse_mode=3)
    assert all(torch.equal(a, b) for a, b in zip(plain[:3], first[:3])) and plain[4].numel() == 0


def test_dsink_of_rows_without_keys_is_zero(gen):
    # a row that sees no key holds the sink alone (probability 1, output 0): it adds nothing to dsink
    q = torch.randn(1, 2, 200, 64, generator=gen).half()
    k = torch.randn(1, 2, 50, 64, generator=gen).half()
    sink = torch.tensor([0.5, -1.0], requires_grad=True)
    out = fwd(q, k, k, 2, "BNSD", scale=0.125, sparse_mode=3, sink=sink)[0]
    dy = torch.randn(out.shape, generator=gen).half()
    dy[:, :, 150:] = 0  # only rows without keys carry a gradient
    out.backward(dy)
    assert torch.equal(sink.grad, torch.zeros(2))
    none = torch.tensor([0.5, -1.0], requires_grad=True)  # no key at all: answered without a launch
    out = fwd(q, k[:, :, :0], k[:, :, :0], 2, "BNSD", sink=none)[0]
    out.sum().backward()
    assert torch.equal(none.grad, torch.zeros(2))


def test_reference_dsink_matches_finite_differences(gen):
    q, k, v = (torch.randn(1, 2, 9, 8, generator=gen, dtype=torch.float64) for _ in range(3))
    sink = torch.randn(2, generator=gen, dtype=torch.float64).requires_grad_()

    def f(z):
        return flash_attention_reference(q, k, v, 2, "BNSD", scale=0.5, sparse_mode=3, sink=z)[0]
    assert torch.autograd.gradcheck(f, (sink,))


def test_rows_without_keys_hold_the_sink(gen):
    # Mode 3 with S1 > S2: the first S1 - S2 rows see no key (kernel path, tasks with visible keys and without).
    q = torch.randn(1, 2, 300, 64, generator=gen).half()
    k = torch.randn(1, 2, 40, 64, generator=gen).half()
    sink = torch.tensor([1.5, -2.0])
    out, smax, ssum = fwd(q, k, k, 2, "BNSD", sparse_mode=3, scale=0.125, sink=sink)
    dead = slice(0, 260)
    assert torch.all(out[:, :, dead] == 0)
    assert torch.equal(smax[0, :, dead], sink.view(2, 1, 1).expand(2, 260, 8))
    assert torch.all(ssum[:, :, dead] == 1.0)
    # No key at all: answered without a launch, the same statistics.
    out, smax, ssum = fwd(q, k[:, :, :0], k[:, :, :0], 2, "BNSD", sink=sink)
    assert torch.all(out == 0) and torch.all(ssum == 1.0)
    assert torch.equal(smax[0, :, :, 0], sink.view(2, 1).expand(2, 300))
    # TND: a zero-length key sequence holds the sink; padding tokens past the last sequence stay invalid rows.
    q = torch.randn(50, 2, 64, generator=gen).half()
    k = torch.randn(30, 2, 64, generator=gen).half()
    out, smax, ssum = fwd(q, k, k, 2, "TND", actual_seq_qlen=[20, 45], actual_seq_kvlen=[0, 30], sink=sink)
    first = smax.view(-1, 8)[:20 * 2, 0].view(2, 20)  # batch-major rows: head, then token
    assert torch.equal(first, sink.view(2, 1).expand(2, 20)) and torch.all(out[:20] == 0)
    assert torch.all(smax[45:] == -FLT_MAX) and torch.all(ssum[45:] == FLT_MAX) and torch.all(out[45:] == 0)


def test_dominant_and_negligible_sinks(gen):
    q = torch.randn(1, 2, 100, 64, generator=gen).bfloat16()
    k = torch.randn(1, 2, 150, 64, generator=gen).bfloat16()
    v = torch.randn(1, 2, 150, 64, generator=gen).bfloat16()
    plain = fwd(q, k, v, 2, "BNSD", scale=0.125)[0]
    quiet = fwd(q, k, v, 2, "BNSD", scale=0.125, sink=torch.full((2,), -200.0))[0]
    assert torch.equal(quiet, plain)  # exp(-200 - max) vanishes against the row sum
    loud, smax, ssum = fwd(q, k, v, 2, "BNSD", scale=0.125, sink=torch.full((2,), 200.0))
    assert torch.all(loud == 0) and torch.all(smax == 200.0) and torch.all(ssum == 1.0)


@pytest.mark.parametrize("bad,err,words", [
    (torch.zeros(2, dtype=torch.float16), TypeError, "sink dtype"),
    (torch.zeros(3), ValueError, "sink shape (3,)"),
    (torch.zeros(1, 2), ValueError, "sink shape (1, 2)"),
    (torch.tensor([0.0, float("nan")]), ValueError, "sink contains NaN"),
    ([0.0, 1.0], RuntimeError, "for argument 'sink'"),  # the schema's own type check
])
def test_bad_sink_is_refused(gen, bad, err, words):
    q = torch.randn(1, 2, 16, 64, generator=gen).half()
    with pytest.raises(err, match=words.replace("(", r"\(").replace(")", r"\)")):
        fwd(q, q, q, 2, "BNSD", sink=bad)


def test_opcheck_with_sink(gen):
    # schema, fake kernel, autograd registration and torch.compile dispatch agree with a sink argument
    q = torch.randn(1, 40, 2, 64, generator=gen).half().requires_grad_()
    k = torch.randn(1, 50, 2, 64, generator=gen).half().requires_grad_()
    torch.library.opcheck(fwd.default, (q, k, k.detach().clone(), 2, "BSND"),
                          dict(scale=0.125, sparse_mode=3, sink=torch.randn(2, generator=gen).requires_grad_()))


def test_tnd_without_keys_keeps_the_batch_major_rows(gen):
    # No key anywhere: no launch; the statistics still follow TND's batch-major row order (sequence, head, token).
    q = torch.randn(60, 3, 64, generator=gen).bfloat16()
    k = torch.randn(4, 3, 64, generator=gen).bfloat16()
    sink = torch.tensor([0.5, -1.0, 2.0])
    out, smax, ssum = fwd(q, k, k, 3, "TND", actual_seq_qlen=[25, 57], actual_seq_kvlen=[0, 0], sink=sink)
    _, ref_m, ref_s = flash_attention_reference(q.double(), k.double(), k.double(), 3, "TND", actual_seq_qlen=[25, 57],
                                                actual_seq_kvlen=[0, 0], sink=sink.double())
    assert torch.all(out == 0)
    assert torch.equal(smax.double(), ref_m) and torch.equal(ssum.double(), ref_s)
