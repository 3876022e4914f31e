"""Dropout (keep_prob < 1): the kernel's keep bits equal the host generator's, forward and backward against float64
with the same mask, the keep rate within a binomial bound, reproducibility, a user dropout_mask, bad values."""
import itertools
import math

import pytest
import torch

import npu_flash_attn  # noqa: F401
from npu_flash_attn import dropout as drop
from npu_flash_attn import reference as R
from npu_flash_attn.criterion import assert_close_fa
from feature_problems import CASES as CASES_ALL, case_id, check_forward, check_grads, problem

CASES = [("BSND", 2, 200, 300, 4, 2, 64, torch.bfloat16, {}),
         ("BNSD", 1, 130, 77, 2, 1, 128, torch.float16, {"sparse_mode": 3}),
         ("BSH", 1, 96, 520, 2, 2, 32, torch.float16, {"sparse_mode": 4, "pre_tokens": 100, "next_tokens": 50})]


def _tensors(layout, B, S1, S2, N1, N2, D, dt, gen):
    def t(S, N):
        shape = {"BSND": (B, S, N, D), "BNSD": (B, N, S, D), "BSH": (B, S, N * D)}[layout]
        return torch.randn(shape, generator=gen).to(dt)
    return t(S1, N1), t(S2, N2), t(S2, N2)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
@pytest.mark.parametrize("user_mask", [False, True])
def test_dropout_forward_backward_vs_float64(case, user_mask, gen):
    layout, B, S1, S2, N1, N2, D, dt, kw = case
    q, k, v = _tensors(layout, B, S1, S2, N1, N2, D, dt, gen)
    a = dict(scale=D ** -0.5, keep_prob=0.75, seed=int(torch.randint(0, 2 ** 62, (1,), generator=gen)),
             offset=int(torch.randint(0, 1000, (1,), generator=gen)), **kw)
    if user_mask:
        a["dropout_mask"] = torch.randint(0, 256, ((B * N1 * S1 * S2 + 7) // 8,), dtype=torch.uint8, generator=gen)
    qs, ks, vs = (x.clone().requires_grad_() for x in (q, k, v))
    out = torch.ops.npu.flash_attention(qs, ks, vs, N1, layout, **a)[0]
    q64, k64, v64 = (x.double().requires_grad_() for x in (q, k, v))
    ref = R.flash_attention_reference(q64, k64, v64, N1, layout, **a)[0]
    low = R.flash_attention_lowprec(q, k, v, N1, layout, **a)
    assert_close_fa(out, ref, low)
    ref0 = R.flash_attention_reference(q.double(), k.double(), v.double(), N1, layout, **dict(a, keep_prob=1.0,
                                                                                               dropout_mask=None))[0]
    assert (out.double() - ref0).abs().max() > 10 * (out.double() - ref).abs().max()  # dropout really applied
    dy = torch.randn(out.shape, generator=gen).to(dt)
    out.backward(dy)
    ref.backward(dy.double())
    for name, g, g64 in (("dq", qs.grad, q64.grad), ("dk", ks.grad, k64.grad), ("dv", vs.grad, v64.grad)):
        err = (g.double() - g64).abs().max().item()
        tol = 3 * 2 * 2.0 ** -8 * g64.abs().max().item() + 1e-5   # 3x of two half-precision roundings of the scale
        assert err <= tol, f"{name}: {err} > {tol}"


def test_keep_rate_binomial_and_reproducible(gen):
    """The generated keep rate of 4M elements lies within 5 sigma of keep_prob; same seed -> same bits and the
    same kernel output on two chips; another offset -> other bits."""
    p = 0.9
    m = drop.keep_mask(7, 11, p, 4, 1, range(4), 1024, 1024)
    n = m.numel()
    assert abs(m.double().mean().item() - p) <= 5 * math.sqrt(p * (1 - p) / n)
    assert torch.equal(m, drop.keep_mask(7, 11, p, 4, 1, range(4), 1024, 1024))
    assert not torch.equal(m, drop.keep_mask(7, 12, p, 4, 1, range(4), 1024, 1024))
    q, k, v = _tensors("BSND", 1, 150, 140, 2, 2, 64, torch.float16, gen)
    a = dict(scale=0.125, keep_prob=0.6, seed=5, offset=6)
    outs = []
    for chip in ("Ascend910B2", "Ascend910B4"):
        npu_flash_attn.set_chip(chip)
        outs.append(torch.ops.npu.flash_attention(q, k, v, 2, "BSND", **a)[0])
    npu_flash_attn.set_chip(None)
    assert torch.equal(outs[0], outs[1])


@pytest.mark.parametrize("bad, exc, text", [
    (dict(keep_prob=0.0), ValueError, "keep_prob"),
    (dict(keep_prob=1.5), ValueError, "keep_prob"),
    (dict(keep_prob=1.0, dropout_mask=torch.zeros(10 ** 5, dtype=torch.uint8)), ValueError, "keep_prob"),
    (dict(keep_prob=0.5, dropout_mask=torch.zeros(3, dtype=torch.uint8)), ValueError, "dropout_mask"),
    (dict(keep_prob=0.5, dropout_mask=torch.zeros(10 ** 5, dtype=torch.int32)), ValueError, "uint8"),
])
def test_bad_dropout_arguments(bad, exc, text, gen):
    q, k, v = _tensors("BSND", 1, 64, 64, 2, 2, 32, torch.float16, gen)
    with pytest.raises(exc, match=text):
        torch.ops.npu.flash_attention(q, k, v, 2, "BSND", **bad)


def _seed_offset(gen):
    return int(torch.randint(0, 2 ** 62, (1,), generator=gen)), int(torch.randint(0, 2 ** 31, (1,), generator=gen))


def test_pairs_of_columns_and_rows_are_independent(gen):
    """Two key columns share one hash (its two halves): adjacent columns, columns two apart and adjacent rows are
    each kept together at the rate of independent draws (within 5 sigma of the squared sample rate)."""
    seed, offset = _seed_offset(gen)
    for p in (0.5, 0.9):
        m = drop.keep_mask(seed, offset, p, 3, 1, range(3), 512, 1024).double()
        rate = m.mean().item()
        for a, b in ((m[..., :-1], m[..., 1:]), (m[..., :-2], m[..., 2:]), (m[:, :-1], m[:, 1:])):
            both, n = (a * b).mean().item(), a.numel()
            assert abs(both - rate ** 2) <= 5 * math.sqrt(rate ** 2 * (1 - rate ** 2) / n), (p, both, rate ** 2)


def keep_bits_problem(layout: str, n1: int, s: int, gen):
    """A problem whose output shows the kernel's keep bits: q = 0 makes every probability 1 / Skv and v = I reads
    P out column by column, so out[i, j] != 0 exactly where (i, j) was kept. Returns (q, k, v, kwargs, lens,
    check), check(out, label) asserting the bits equal dropout.keep_mask's."""
    lens = [(150, s)] if layout == "BSND" else [(70, 130), (0, 40), (90, s)]
    T1, T2 = sum(a for a, _ in lens), sum(b for _, b in lens)
    eye = torch.eye(s, dtype=torch.float16)
    seed, offset = _seed_offset(gen)
    kw = dict(scale=1.0, keep_prob=0.7, seed=seed, offset=offset)
    if layout == "BSND":
        q, k = torch.zeros(1, T1, n1, s, dtype=torch.float16), torch.zeros(1, T2, 1, s, dtype=torch.float16)
        v = eye[None, :, None, :].contiguous()
    else:
        q, k = torch.zeros(T1, n1, s, dtype=torch.float16), torch.zeros(T2, 1, s, dtype=torch.float16)
        v = torch.cat([eye[:b] for _, b in lens])[:, None, :].contiguous()
        kw.update(actual_seq_qlen=list(itertools.accumulate(a for a, _ in lens)),
                  actual_seq_kvlen=list(itertools.accumulate(b for _, b in lens)))

    def check(out, label):
        rows = out[0] if layout == "BSND" else out
        row = 0
        for b, (sq, skv) in enumerate(lens):
            want = drop.keep_mask(seed, offset, 0.7, n1, b if layout == "TND" else 0, range(n1), sq, skv)
            got = rows[row:row + sq].transpose(0, 1)[..., :skv] != 0
            assert torch.equal(got, want), f"{label}, sequence {b}: {(got != want).sum().item()} bits differ"
            row += sq
    return q, k, v, kw, check


@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_kernel_keep_bits_equal_the_host_generator_bitwise(layout, gen):
    """The kernel's keep bits equal dropout.keep_mask's on two chips (other core counts, tilings), MQA."""
    q, k, v, kw, check = keep_bits_problem(layout, 3, 200, gen)
    for chip in ("Ascend910B2", "Ascend910B4"):
        npu_flash_attn.set_chip(chip)
        try:
            check(torch.ops.npu.flash_attention(q, k, v, 3, layout, **kw)[0], chip)
        finally:
            npu_flash_attn.set_chip(None)


@pytest.mark.parametrize("case", CASES_ALL, ids=case_id)
def test_dropout_with_every_layout_and_mask_vs_float64(case, gen):
    """Dropout in every feature case (layouts, GQA/MQA, causal, band, dense mask, TND with an empty key sequence):
    output, statistics and dq/dk/dv against float64 with the same generated mask (FA criterion, 3x for gradients)."""
    args, kw = problem(case, gen)
    seed, offset = _seed_offset(gen)
    kw.update(keep_prob=0.8, seed=seed, offset=offset)
    check_forward(args, kw)
    check_grads(args, kw, gen)


def test_tnd_user_mask_and_trained_sink_vs_float64(gen):
    """A user dropout_mask over TND sequences (repacked per sequence by the host) with a trained sink: dq/dk/dv and
    dsink against float64 with the same mask."""
    case = next(c for c in CASES_ALL if c[0] == "TND")
    args, kw = problem(case, gen)
    cu_q, cu_kv = kw["actual_seq_qlen"], kw["actual_seq_kvlen"]
    shapes = [(b - a, d - c) for a, b, c, d in zip([0] + cu_q[:-1], cu_q, [0] + cu_kv[:-1], cu_kv)]
    n = drop.mask_elements(shapes, args[3])
    kw.update(keep_prob=0.7, dropout_mask=torch.randint(0, 256, ((n + 7) // 8,), dtype=torch.uint8, generator=gen),
              sink=math.log(100) + torch.randn(args[3], generator=gen))
    check_forward(args, kw)
    check_grads(args, kw, gen, train=("sink",))


@pytest.mark.parametrize("extra", ["pse", "alibi_softcap"])
def test_dropout_with_pse_alibi_and_softcap_vs_float64(extra, gen):
    """Dropout combined with a trained outer pse (dpse), and with in-kernel ALiBi plus softcap, in a GQA causal case."""
    case = ("BNSD", "bf16", 2, 130, 257, 4, 2, 64, dict(sparse_mode=3))
    args, kw = problem(case, gen)
    seed, offset = _seed_offset(gen)
    kw.update(keep_prob=0.85, seed=seed, offset=offset)
    if extra == "pse":
        kw["pse"] = torch.randn(1, 4, 130, 257, generator=gen).to(torch.bfloat16)
        kw["pse_type"] = 0
        check_forward(args, kw)
        check_grads(args, kw, gen, train=("pse",))
    else:
        kw.update(pse=torch.rand(4, generator=gen) * 0.1, pse_type=2, softcap=20.0)
        check_forward(args, kw)
        check_grads(args, kw, gen)


def test_backward_regenerates_the_forwards_mask(gen):
    """The grad op called with the forward's seed/offset gives the autograd's gradients bitwise; another offset
    gives other gradients (the backward draws the mask from (seed, offset), nothing is stored)."""
    q, k, v = _tensors("BSND", 1, 120, 150, 4, 2, 64, torch.float16, gen)
    seed, offset = _seed_offset(gen)
    a = dict(scale=0.125, keep_prob=0.75, seed=seed, offset=offset)
    qs, ks, vs = (x.clone().requires_grad_() for x in (q, k, v))
    out, smax, ssum, res = torch.ops.npu.flash_attention_fwd(qs, ks, vs, 4, "BSND", **a, output_residual=True)
    dy = torch.randn(out.shape, generator=gen).to(out.dtype)
    out.backward(dy)

    def grad(**kw):
        return torch.ops.npu.flash_attention_grad(q, k, v, dy, 4, "BSND", softmax_max=smax, softmax_sum=ssum,
                                                  attention_in=out.detach(), attention_in_residual=res,
                                                  **dict(a, **kw))[:3]
    for g, want in zip(grad(), (qs.grad, ks.grad, vs.grad)):
        assert torch.equal(g, want)
    assert not torch.equal(grad(offset=offset + 1)[2], vs.grad)


def test_reference_with_dropout_passes_gradcheck(gen):
    """The float64 reference the tests judge by, with a generated mask, a sink and a user-mask TND problem: its
    autograd gradients equal finite differences (torch.autograd.gradcheck)."""
    q, k, v = (torch.randn(1, 9, 2, 5, generator=gen, dtype=torch.float64).requires_grad_() for _ in range(3))
    sink = torch.randn(2, generator=gen, dtype=torch.float64).requires_grad_()
    seed, offset = _seed_offset(gen)
    assert torch.autograd.gradcheck(
        lambda q, k, v, s: R.flash_attention_reference(q, k, v, 2, "BSND", scale=0.4, keep_prob=0.6, seed=seed,
                                                       offset=offset, sink=s, sparse_mode=3)[0], (q, k, v, sink))
    qt, kt, vt = (torch.randn(11, 2, 4, generator=gen, dtype=torch.float64).requires_grad_() for _ in range(3))
    mask = torch.randint(0, 256, (2 * (5 * 6 + 6 * 5) // 8 + 1,), dtype=torch.uint8, generator=gen)
    assert torch.autograd.gradcheck(
        lambda q, k, v: R.flash_attention_reference(q, k, v, 2, "TND", scale=0.5, keep_prob=0.5, dropout_mask=mask,
                                                    actual_seq_qlen=[5, 11], actual_seq_kvlen=[6, 11])[0],
        (qt, kt, vt))
