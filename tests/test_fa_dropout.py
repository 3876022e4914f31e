"""Dropout (keep_prob < 1): the kernel's keep bits equal the host generator's, forward and backward against float64
with the same mask, the keep rate within a binomial bound, reproducibility, a user dropout_mask, bad values."""
import math

import pytest
import torch

import npu_flash_attn  # noqa: F401
from npu_flash_attn import dropout as drop
from npu_flash_attn import reference as R

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
    R.assert_close_fa(out, ref, low)
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
