"""Backward with every attention mask the forward takes: gradients of q, k, v through `out.backward()` against float64
autograd of the reference, with the FlashAttention criterion for gradients (3x the low-precision error + 1e-5).
Fully masked rows and keys get zero, finite gradients; fully masked tiles are skipped by the block map."""
from __future__ import annotations

import pytest
import torch

import npu_flash_attn
from npu_flash_attn.masks import compressed_causal_mask, compressed_prefix_mask
from npu_flash_attn.reference import flash_attention_lowprec, flash_attention_reference
from test_fa_forward import make_qkv

op = torch.ops.npu.flash_attention
F16, BF16 = torch.float16, torch.bfloat16
REF_ARGS = ("scale", "sparse_mode", "pre_tokens", "next_tokens", "actual_seq_qlen", "actual_seq_kvlen", "atten_mask",
            "prefix")


def check_grads(q, k, v, n1, layout, gen, **kw):
    """Backward of the op vs float64 autograd of the reference; returns the op's gradients."""
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    out = op(*leaves, n1, layout, **kw)[0]
    dy = torch.randn(out.shape, generator=gen).to(q.dtype)
    out.backward(dy)
    info = npu_flash_attn.last_launch_info()
    ref_kw = {a: kw[a] for a in REF_ARGS if a in kw}
    x64 = [t.detach().double().requires_grad_() for t in (q, k, v)]
    flash_attention_reference(*x64, n1, layout, **ref_kw)[0].backward(dy.double())
    xlow = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    flash_attention_lowprec(*xlow, n1, layout, **ref_kw).backward(dy)
    for name, g, g64, glow in zip(("dq", "dk", "dv"), (t.grad for t in leaves), (t.grad for t in x64),
                                  (t.grad for t in xlow)):
        assert g.dtype == q.dtype and bool(torch.isfinite(g).all()), name
        err = (g.double() - g64).abs().max().item()
        bound = 3 * (glow.double() - g64).abs().max().item() + 1e-5
        assert err <= bound, f"{name}: max|g - g64| = {err:.3e} > {bound:.3e} ({kw})"
    return [t.grad for t in leaves], info


B, N1, N2, S1, S2 = 2, 4, 2, 150, 200
SHAPES = {"BNSS": (B, N1, S1, S2), "B1SS": (B, 1, S1, S2), "SS": (S1, S2), "key_pad": (B, 1, 1, S2),
          "query_pad": (B, 1, S1, 1), "per_head": (1, N1, S1, S2)}


@pytest.mark.parametrize("name", list(SHAPES))
def test_grad_dense_masks(gen, name):
    layout = ["BSND", "BNSD", "BSH", "SBH", "BSND", "BNSD"][list(SHAPES).index(name)]
    dtype = (F16, BF16)[list(SHAPES).index(name) % 2]
    q, k, v = make_qkv(gen, layout, B, N1, N2, S1, S2, 64, 64, dtype)
    m = torch.rand(SHAPES[name], generator=gen) < 0.4
    if m.shape[-2] > 1:
        m[..., 7, :] = True  # a fully masked query row
    if m.shape[-1] > 1:
        m[..., :, 11] = True  # a fully masked key
    for deterministic in (False, True):
        torch.use_deterministic_algorithms(deterministic)
        try:
            check_grads(q, k, v, N1, layout, gen, scale=0.125, sparse_mode=1, atten_mask=m)
        finally:
            torch.use_deterministic_algorithms(False)


def test_grad_fully_masked_rows_and_keys_are_exactly_zero(gen):
    q, k, v = make_qkv(gen, "BNSD", B, N1, N2, S1, S2, 64, 64, F16)
    m = torch.rand(B, 1, S1, S2, generator=gen) < 0.3
    m[:, :, 9, :] = True     # query row 9 sees nothing
    m[:, :, :, 130] = True   # key 130 is seen by nobody
    (dq, dk, dv), _ = check_grads(q, k, v, N1, "BNSD", gen, scale=0.125, sparse_mode=1, atten_mask=m)
    assert bool((dq[:, :, 9] == 0).all())
    assert bool((dk[:, :, 130] == 0).all()) and bool((dv[:, :, 130] == 0).all())


def test_grad_key_padding_skips_tiles(gen):
    q, k, v = make_qkv(gen, "BSND", 3, N1, N2, 256, 384, 128, 128, BF16)
    m = (torch.arange(384).view(1, 1, 1, 384) >= torch.tensor([0, 384, 100]).view(3, 1, 1, 1))
    (dq, dk, dv), info = check_grads(q, k, v, N1, "BSND", gen, scale=0.09, sparse_mode=1, atten_mask=m)
    assert info["tiles_masked"] > 0, info
    assert bool((dq[0] == 0).all()) and bool((dk[0] == 0).all()) and bool((dv[0] == 0).all())


@pytest.mark.parametrize("s1,s2", [(150, 200), (200, 130)])
def test_grad_prefix_and_band_modes(gen, s1, s2):
    q, k, v = make_qkv(gen, "BNSD", 2, N1, N2, s1, s2, 64, 64, F16)
    lo = 0 if s1 > s2 else s2 - s1
    m = torch.rand(2, 1, s1, s2, generator=gen) < 0.3
    check_grads(q, k, v, N1, "BNSD", gen, scale=0.125, sparse_mode=5, atten_mask=m, prefix=[lo, s2 - 3])
    check_grads(q, k, v, N1, "BNSD", gen, scale=0.125, sparse_mode=6, atten_mask=compressed_prefix_mask(),
                prefix=[s2, lo + 1])
    check_grads(q, k, v, N1, "BNSD", gen, scale=0.125, sparse_mode=0, atten_mask=m, pre_tokens=50, next_tokens=-10)


def test_grad_tnd_masks_and_context_parallel(gen):
    q_lens, kv_lens = [70, 0, 140, 33], [130, 40, 90, 200]
    cu = lambda ls: [sum(ls[:i + 1]) for i in range(len(ls))]  # noqa: E731
    q, k, v = make_qkv(gen, "TND", 0, N1, N2, 0, 0, 64, 64, BF16, q_lens=q_lens, kv_lens=kv_lens)
    kw = dict(actual_seq_qlen=cu(q_lens), actual_seq_kvlen=cu(kv_lens), scale=0.125)
    check_grads(q, k, v, N1, "TND", gen, sparse_mode=1, atten_mask=torch.rand(150, 210, generator=gen) < 0.3, **kw)
    check_grads(q, k, v, N1, "TND", gen, sparse_mode=6, prefix=[60, 20, 0, 190], **kw)
    check_grads(q, k, v, N1, "TND", gen, sparse_mode=7, pre_tokens=200, next_tokens=-40,
                atten_mask=compressed_causal_mask(), **kw)
    check_grads(q, k, v, N1, "TND", gen, sparse_mode=8, pre_tokens=130, next_tokens=-20, **kw)
