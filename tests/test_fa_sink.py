"""Attention sinks (`sink`: one float32 logit per query head that joins every softmax row's denominator and attends
no value, as torch_npu's `sink`), forward and backward, on the CPU twin.

Forward against the float64 reference (FA criterion, statistics to fp32 rounding); dq/dk/dv of a forward with a
(frozen) sink against float64 autograd with 3x the error of the same program in the input dtype; dsink is not built
yet and raises NotImplementedError; rows that see no key (their softmax is the sink alone: output 0, softmax_max =
sink, softmax_sum = 1) through the kernel and through the no-launch path; bad sink arguments raise naming the
argument."""
from __future__ import annotations

import math

import pytest
import torch

from npu_flash_attn import ops
from npu_flash_attn.reference import (assert_close_fa, assert_stats_close, flash_attention_lowprec,
                                      flash_attention_reference)

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


def _shape(layout, B, S, N, D):
    return {"BSH": (B, S, N * D), "SBH": (S, B, N * D), "BSND": (B, S, N, D), "BNSD": (B, N, S, D)}[layout]


def _problem(case, gen):
    layout, dt, B, S1, S2, N1, N2, D, extra = case
    dt = DT[dt]
    kw = dict(extra, scale=1 / math.sqrt(D))
    if layout == "TND":
        T1, T2 = kw["actual_seq_qlen"][-1] + 3, kw["actual_seq_kvlen"][-1]  # 3 padding query tokens
        shapes = ((T1, N1, D), (T2, N2, D), (T2, N2, D))
    else:
        shapes = (_shape(layout, B, S1, N1, D), _shape(layout, B, S2, N2, D), _shape(layout, B, S2, N2, D))
    q, k, v = (torch.randn(s, generator=gen).to(dt) for s in shapes)
    if kw.get("atten_mask") == "dense":
        kw["atten_mask"] = torch.rand(B, 1, S1, S2, generator=gen) > 0.7
    # about as heavy as the keys (a row's log-sum-exp is near log S2): the sink takes a sizeable share of each row
    sink = math.log(max(S2, 100)) + torch.randn(N1, generator=gen)
    return (q, k, v, N1, layout), kw, sink


def _id(c):
    return f"{c[0]}-{c[1]}-n{c[5]}/{c[6]}-d{c[7]}-" + ("-".join(f"{k}" for k in c[8]) or "full")


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_forward_with_sink_matches_reference(case, gen):
    args, kw, sink = _problem(case, gen)
    out, smax, ssum = fwd(*args, sink=sink, **kw)
    q, k, v, n1, layout = args
    ro, rm, rs = flash_attention_reference(q.double(), k.double(), v.double(), n1, layout, sink=sink.double(), **kw)
    assert_close_fa(out, ro, flash_attention_lowprec(q, k, v, n1, layout, sink=sink, **kw))
    assert_stats_close(smax, ssum, rm, rs)
    # the sink changes the result: the same call without it differs from the reference with it
    plain = fwd(*args, **kw)[0]
    assert (plain.double() - ro).abs().max() > 4 * (out.double() - ro).abs().max()


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_grads_with_frozen_sink_match_float64(case, gen):
    # dq/dk/dv of a forward with sinks: the backward needs only the statistics, which hold the sink's term.
    args, kw, sink = _problem(case, gen)
    q, k, v, n1, layout = args
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out = fwd(*leaves, n1, layout, sink=sink, **kw)[0]
    dy = torch.randn(out.shape, generator=gen).to(out.dtype)
    out.backward(dy)
    ref = [t.detach().double().requires_grad_() for t in (q, k, v)]
    flash_attention_reference(*ref, n1, layout, sink=sink.double(), **kw)[0].backward(dy.double())
    low = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    (flash_attention_lowprec(*low, n1, layout, sink=sink, **kw).double() * dy.double()).sum().backward()
    for name, g, r, l in zip(("dq", "dk", "dv"), leaves, ref, low):
        err = (g.grad.double() - r.grad).abs().max().item()
        base = (l.grad.double() - r.grad).abs().max().item()
        assert err <= 3 * base + 1e-5, f"{name}: max|g - g64| = {err:.3e} > 3 * {base:.3e} + 1e-5"
    # without the sink the gradients are those of another function
    plain = [t.clone().requires_grad_() for t in (q, k, v)]
    fwd(*plain, n1, layout, **kw)[0].backward(dy)
    assert (plain[0].grad.double() - ref[0].grad).abs().max() > 2 * (leaves[0].grad.double() - ref[0].grad).abs().max()


def test_dsink_is_not_built_yet(gen):
    q = torch.randn(1, 2, 40, 64, generator=gen).half().requires_grad_()
    sink = torch.zeros(2, requires_grad=True)
    out, smax, ssum = fwd(q, q, q, 2, "BNSD", sink=sink)
    with pytest.raises(NotImplementedError, match="dsink .* not implemented yet"):
        out.sum().backward()
    with pytest.raises(NotImplementedError, match="dsink .* not implemented yet"):
        torch.ops.npu.flash_attention_grad(q, q, q, torch.ones_like(out), 2, "BNSD", softmax_max=smax,
                                           softmax_sum=ssum, attention_in=out, sink=sink)


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
    assert torch.all(smax[45:] == -ops.FLT_MAX) and torch.all(ssum[45:] == ops.FLT_MAX) and torch.all(out[45:] == 0)


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
                          dict(scale=0.125, sparse_mode=3, sink=torch.randn(2, generator=gen)))


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
