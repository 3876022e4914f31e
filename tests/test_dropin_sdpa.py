"""scaled_dot_product_attention against torch.nn.functional.scaled_dot_product_attention itself: float64 as the
reference, the input's low precision as the FlashAttention criterion's baseline; top-left `is_causal`, bool masks
(True = attend) of broadcast shapes read without expansion, float masks as bias (-inf included, gradient included),
GQA/MQA, forward and backward."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import npu_flash_attn as nfa
from npu_flash_attn.interfaces.sdpa import mask_arguments
from dropin_checks import check_fwd_bwd, math_attention, repeat_heads

DT = {"fp16": torch.float16, "bf16": torch.bfloat16}


def _mask(kind: str, gen, b, n, l, s, dt):
    if kind == "none":
        return None
    if kind == "keypad":  # [B, 1, 1, S] bool, every row keeps a key
        m = torch.rand(b, 1, 1, s, generator=gen) > 0.4
        m[..., 0] = True
        return m
    if kind == "2d":  # [L, S] bool with a fully masked row (output 0 there, as torch)
        m = torch.rand(l, s, generator=gen) > 0.5
        m[3] = False
        return m
    if kind == "float":  # additive bias [B, 1, L, S] with -inf entries
        m = torch.randn(b, 1, l, s, generator=gen)
        m[torch.rand(b, 1, l, s, generator=gen) > 0.8] = -math.inf
        m[..., 0] = 0.0
        return m.to(dt)
    raise AssertionError(kind)


CASES = [  # dtype, B, N1, N2, L, S, E, Ev, mask, is_causal, enable_gqa
    ("bf16", 2, 4, 4, 77, 131, 32, 32, "none", True, False),    # top-left causal with L < S
    ("fp16", 1, 2, 2, 131, 77, 64, 64, "none", True, False),    # L > S
    ("bf16", 2, 4, 2, 90, 120, 32, 16, "keypad", False, True),  # GQA, Ev < E
    ("fp16", 2, 2, 1, 64, 100, 32, 32, "2d", False, False),     # MQA broadcast without enable_gqa
    ("bf16", 2, 2, 2, 70, 99, 32, 32, "float", False, False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-n{c[2]}/{c[3]}-{c[4]}x{c[5]}-{c[8]}-causal{c[9]}")
def test_matches_torch_sdpa(case, gen):
    dt, b, n1, n2, l, s, e, ev, kind, causal, gqa = case
    dt = DT[dt]
    q = torch.randn(b, n1, l, e, generator=gen).to(dt)
    k = torch.randn(b, n2, s, e, generator=gen).to(dt)
    v = torch.randn(b, n2, s, ev, generator=gen).to(dt)
    mask = _mask(kind, gen, b, n1, l, s, dt)
    kw = dict(is_causal=causal, enable_gqa=gqa)
    inputs = (q, k, v) if mask is None or mask.dtype == torch.bool else (q, k, v, mask)

    def run(f):
        if len(inputs) == 4:
            return lambda q, k, v, m: f(q, k, v, attn_mask=m, **kw)
        return lambda q, k, v: f(q, k, v, attn_mask=None if mask is None else mask, **kw)
    # baseline: SDPA's definition as plain torch math in the input's precision (torch's own CPU SDPA computes
    # fp16/bf16 in float32, which would not be the low-precision program the criterion asks for)
    check_fwd_bwd(run(nfa.scaled_dot_product_attention), run(F.scaled_dot_product_attention), inputs, gen,
                  low=run(_sdpa_math))


def _sdpa_math(q, k, v, attn_mask=None, is_causal=False, enable_gqa=False):
    l, s = q.shape[2], k.shape[2]
    visible = torch.ones(l, s, dtype=torch.bool).tril() if is_causal else None
    bias = None
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        visible = attn_mask
    elif attn_mask is not None:
        bias = attn_mask
    k, v = repeat_heads(k, q.shape[1], 1), repeat_heads(v, q.shape[1], 1)
    return math_attention(q, k, v, q.shape[-1] ** -0.5, visible, bias)[0]


def test_is_causal_is_top_left(gen):
    q = torch.randn(1, 2, 40, 32, generator=gen).bfloat16()
    k = torch.randn(1, 2, 100, 32, generator=gen).bfloat16()
    ours = nfa.scaled_dot_product_attention(q, k, k, is_causal=True).double()
    top_left = F.scaled_dot_product_attention(q.double(), k.double(), k.double(), is_causal=True)
    bottom_right = nfa.flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), k.transpose(1, 2), causal=True)
    assert (ours - top_left).abs().max() < 0.05
    assert (ours - bottom_right.transpose(1, 2).double()).abs().max() > 0.2


def test_broadcast_bool_mask_is_not_expanded(gen):
    q = torch.randn(2, 4, 30, 16, generator=gen).half()
    keep = (torch.rand(2, 1, 1, 50, generator=gen) > 0.5).expand(2, 1, 30, 50)  # stride 0 over queries
    args = mask_arguments(keep, False, q, (2, 4, 30, 50))
    m = args["atten_mask"]
    assert m.stride()[2] == 0 and m.untyped_storage().nbytes() == 2 * 50  # O(B * S) memory, inverted
    assert torch.equal(m, ~keep)


def test_float_mask_gradient_matches_torch(gen):
    q = torch.randn(1, 2, 40, 32, generator=gen).bfloat16()
    k = torch.randn(1, 2, 60, 32, generator=gen).bfloat16()
    bias = torch.randn(1, 2, 40, 60, generator=gen).bfloat16().requires_grad_()
    out = nfa.scaled_dot_product_attention(q, k, k, attn_mask=bias)
    dy = torch.randn(out.shape, generator=gen).bfloat16()
    out.backward(dy)
    b64 = bias.detach().double().requires_grad_()
    F.scaled_dot_product_attention(q.double(), k.double(), k.double(), attn_mask=b64).backward(dy.double())
    low = bias.detach().clone().requires_grad_()
    _sdpa_math(q, k, k, attn_mask=low).backward(dy)
    err = (bias.grad.double() - b64.grad).abs().max().item()
    base = (low.grad.double() - b64.grad).abs().max().item()
    assert err <= 3 * base + 1e-5, (err, base)


def test_dropout_is_seeded_by_torch(gen):
    q = torch.randn(1, 2, 50, 32, generator=gen).half()
    torch.manual_seed(3)
    a = nfa.scaled_dot_product_attention(q, q, q, dropout_p=0.2)
    torch.manual_seed(3)
    assert torch.equal(a, nfa.scaled_dot_product_attention(q, q, q, dropout_p=0.2))
    assert not torch.equal(a, nfa.scaled_dot_product_attention(q, q, q))


@pytest.mark.parametrize("kv_heads,kw,err,words", [
    (2, {}, RuntimeError, "pass enable_gqa=True"),
    (3, dict(enable_gqa=True), RuntimeError, r"key/value heads \(3\) to divide the number of query heads \(4\)"),
    (4, dict(attn_mask=torch.ones(7, 50, dtype=torch.bool)), ValueError,
     r"attn_mask shape \(7, 50\) is not broadcastable to \[B, N1, L, S\] = \[1, 4, 30, 50\]"),
    (4, dict(attn_mask=torch.ones(30, 50, dtype=torch.int32)), TypeError, "attn_mask dtype torch.int32 must be"),
    (4, dict(dropout_p=-0.1), ValueError, r"dropout_p=-0.1 must be a float in \[0, 1\)"),
    (4, dict(attn_mask=torch.ones(30, 50, dtype=torch.bool), is_causal=True), RuntimeError,
     "attn_mask and is_causal=True were both given"),
], ids=["gqa-flag", "gqa-divide", "mask-shape", "mask-dtype", "dropout", "mask-and-causal"])
def test_bad_arguments_are_refused(kv_heads, kw, err, words, gen):
    q = torch.randn(1, 4, 30, 16, generator=gen).half()
    k = torch.randn(1, kv_heads, 50, 16, generator=gen).half()
    with pytest.raises(err, match=words):
        nfa.scaled_dot_product_attention(q, k, k, **kw)
    with pytest.raises(ValueError, match=r"query must be a 4-D \[B, N, S, E\] tensor, got \(4, 30, 16\)"):
        nfa.scaled_dot_product_attention(q[0], k[0], k[0])
