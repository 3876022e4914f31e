"""flash_attn 2.x-compatible functions against flash_attn's own semantics, written out in plain torch: [B, S, N, D]
layout, bottom-right causal and window, ALiBi -slope * |i + Sk - Sq - j|, softcap, LSE [B, N, Sq] (varlen
[N, total_q]) with +inf for rows that see no key; forward and backward with the FlashAttention criterion."""
from __future__ import annotations

import math

import pytest
import torch

import npu_flash_attn as nfa
from dropin_checks import check_fwd_bwd, math_attention, repeat_heads

DT = {"fp16": torch.float16, "bf16": torch.bfloat16}


def fa_visible(sq: int, sk: int, causal: bool, window=(-1, -1)) -> torch.Tensor:
    """flash_attn's mask: bottom-right aligned causal / window, -1 = unbounded."""
    left, right = window
    if causal:
        right = 0
    i = torch.arange(sq).view(-1, 1) + (sk - sq)
    j = torch.arange(sk).view(1, -1)
    vis = torch.ones(sq, sk, dtype=torch.bool)
    if left >= 0:
        vis &= j >= i - left
    if right >= 0:
        vis &= j <= i + right
    return vis


def fa_math(q, k, v, *, causal=False, window=(-1, -1), softcap=0.0, alibi=None, scale=None):
    """flash_attn_func's definition on [B, S, N, D] tensors; returns (out [B, Sq, N, Dv], lse [B, N, Sq])."""
    b, sq, n, d = q.shape
    sk = k.shape[1]
    qt, kt, vt = q.transpose(1, 2), repeat_heads(k.transpose(1, 2), n, 1), repeat_heads(v.transpose(1, 2), n, 1)
    bias = None
    if alibi is not None:
        i = torch.arange(sq).view(-1, 1) + (sk - sq)
        dist = (i - torch.arange(sk).view(1, -1)).abs().to(torch.float64)
        slopes = alibi.double().view(alibi.shape[0] if alibi.dim() == 2 else 1, n, 1, 1)
        bias = (-slopes * dist).to(q.dtype)
    out, lse = math_attention(qt, kt, vt, d ** -0.5 if scale is None else scale, fa_visible(sq, sk, causal, window),
                              bias, softcap or None)
    return out.transpose(1, 2), lse


def _tensors(gen, dt, b, sq, sk, n, nk, d):
    q = torch.randn(b, sq, n, d, generator=gen).to(dt)
    k = torch.randn(b, sk, nk, d, generator=gen).to(dt)
    v = torch.randn(b, sk, nk, d, generator=gen).to(dt)
    return q, k, v


CASES = [  # dtype, B, Sq, Sk, N, Nk, D, kwargs
    ("fp16", 2, 77, 131, 4, 2, 32, {}),
    ("bf16", 1, 131, 77, 2, 1, 64, dict(causal=True)),  # Sq > Sk: the first 54 rows see no key
    ("bf16", 2, 100, 100, 4, 4, 16, dict(window=(20, 5), softcap=4.0)),
    ("fp16", 1, 90, 150, 4, 2, 32, dict(causal=True, alibi="heads")),
    ("bf16", 2, 64, 97, 2, 2, 32, dict(window=(-1, 7), alibi="batch", scale=0.3)),
]


def _case_id(c):
    return f"{c[0]}-s{c[2]}x{c[3]}-n{c[4]}/{c[5]}-" + ("-".join(c[7]) or "full")


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_flash_attn_func_matches_flash_attn_semantics(case, gen):
    dt, b, sq, sk, n, nk, d, kw = case
    kw = dict(kw)
    if kw.get("alibi") == "heads":
        kw["alibi"] = torch.rand(n, generator=gen) * 0.5
    elif kw.get("alibi") == "batch":
        kw["alibi"] = torch.rand(b, n, generator=gen) * 0.5
    q, k, v = _tensors(gen, DT[dt], b, sq, sk, n, nk, d)
    fa_kw = dict(causal=kw.get("causal", False), window_size=kw.get("window", (-1, -1)),
                 softcap=kw.get("softcap", 0.0), alibi_slopes=kw.get("alibi"), softmax_scale=kw.get("scale"))
    check_fwd_bwd(lambda *t: nfa.flash_attn_func(*t, **fa_kw), lambda *t: fa_math(*t, **kw)[0], (q, k, v), gen)
    out, lse, s_dmask = nfa.flash_attn_func(q, k, v, return_attn_probs=True, **fa_kw)
    ref_out, ref_lse = fa_math(q.double(), k.double(), v.double(), **kw)
    assert lse.dtype == torch.float32 and tuple(lse.shape) == (b, n, sq) and s_dmask.numel() == 0
    finite = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), finite)  # rows without keys: +inf, as flash_attn
    assert bool((lse[~finite] == math.inf).all()) and bool((out.transpose(1, 2)[~finite] == 0).all())
    assert (lse[finite].double() - ref_lse[finite]).abs().max() <= 1e-4 * (1 + ref_lse[finite].abs().max())


def _varlen(gen, dt, lens_q, lens_k, n, nk, d):
    tq, tk = sum(lens_q), sum(lens_k)
    q = torch.randn(tq, n, d, generator=gen).to(dt)
    k = torch.randn(tk, nk, d, generator=gen).to(dt)
    v = torch.randn(tk, nk, d, generator=gen).to(dt)
    cu = [torch.tensor([0, *torch.tensor(x).cumsum(0).tolist()], dtype=torch.int32) for x in (lens_q, lens_k)]
    return q, k, v, cu[0], cu[1]


def _varlen_math(q, k, v, cu_q, cu_k, **kw):
    """Each sequence through fa_math; returns (out [total_q, N, Dv], lse [N, total_q])."""
    outs, lses = [], []
    for a, b, c, e in zip(cu_q[:-1].tolist(), cu_q[1:].tolist(), cu_k[:-1].tolist(), cu_k[1:].tolist()):
        o, lse = fa_math(q[a:b].unsqueeze(0), k[c:e].unsqueeze(0), v[c:e].unsqueeze(0), **kw)
        outs.append(o[0])
        lses.append(lse[0])
    return torch.cat(outs), torch.cat(lses, dim=1)


@pytest.mark.parametrize("kw", [dict(causal=True), dict(causal=True, window=(15, -1)), dict(softcap=3.0)],
                         ids=["causal", "causal-window", "softcap"])
def test_varlen_matches_per_sequence_semantics(kw, gen):
    lens_q, lens_k = [40, 0, 77, 13], [61, 9, 77, 30]
    q, k, v, cu_q, cu_k = _varlen(gen, torch.bfloat16, lens_q, lens_k, 4, 2, 32)
    fa_kw = dict(causal=kw.get("causal", False), window_size=kw.get("window", (-1, -1)),
                 softcap=kw.get("softcap", 0.0))
    check_fwd_bwd(lambda q, k, v: nfa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 77, 77, **fa_kw),
                  lambda q, k, v: _varlen_math(q, k, v, cu_q, cu_k, **kw)[0], (q, k, v), gen)
    _, lse, _ = nfa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 77, 77, return_attn_probs=True, **fa_kw)
    _, ref_lse = _varlen_math(q.double(), k.double(), v.double(), cu_q, cu_k, **kw)
    assert tuple(lse.shape) == (4, sum(lens_q)) and lse.dtype == torch.float32
    fin = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), fin)
    assert (lse[fin].double() - ref_lse[fin]).abs().max() <= 1e-4 * (1 + ref_lse[fin].abs().max())


def test_varlen_alibi_with_equal_offsets(gen):
    q, k, v, cu_q, cu_k = _varlen(gen, torch.float16, [50, 31], [70, 51], 2, 2, 32)  # Sk - Sq = 20 in both
    slopes = torch.rand(2, generator=gen)
    check_fwd_bwd(lambda q, k, v: nfa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 50, 70, causal=True,
                                                             alibi_slopes=slopes),
                  lambda q, k, v: _varlen_math(q, k, v, cu_q, cu_k, causal=True, alibi=slopes)[0], (q, k, v), gen)


def test_packed_variants_equal_the_unpacked_call(gen):
    qkv = torch.randn(2, 77, 3, 2, 32, generator=gen).bfloat16().requires_grad_()
    out = nfa.flash_attn_qkvpacked_func(qkv, causal=True)
    dy = torch.randn(out.shape, generator=gen).bfloat16()
    out.backward(dy)
    q, k, v = (t.detach().clone().requires_grad_() for t in qkv.unbind(2))
    ref = nfa.flash_attn_func(q, k, v, causal=True)
    ref.backward(dy)
    assert torch.equal(out, ref) and torch.equal(qkv.grad, torch.stack([q.grad, k.grad, v.grad], dim=2))
    kv = torch.stack([k, v], dim=2).detach()
    assert torch.equal(nfa.flash_attn_kvpacked_func(q.detach(), kv, causal=True), ref)
    cu = torch.tensor([0, 77, 154], dtype=torch.int32)
    flat = qkv.detach().reshape(154, 3, 2, 32)
    assert torch.equal(nfa.flash_attn_varlen_qkvpacked_func(flat, cu, 77, causal=True), ref.reshape(154, 2, 32))
    assert torch.equal(nfa.flash_attn_varlen_kvpacked_func(flat[:, 0], flat[:, 1:], cu, cu, 77, 77, causal=True),
                       ref.reshape(154, 2, 32))


def test_dropout_follows_torch_seed_and_keeps_the_mean(gen):
    q, k, v = _tensors(gen, torch.bfloat16, 1, 64, 96, 2, 2, 32)
    torch.manual_seed(7)
    a = nfa.flash_attn_func(q, k, v, dropout_p=0.3)
    b = nfa.flash_attn_func(q, k, v, dropout_p=0.3)  # the generator moved on: another mask
    torch.manual_seed(7)
    c = nfa.flash_attn_func(q, k, v, dropout_p=0.3)
    plain = nfa.flash_attn_func(q, k, v)
    assert torch.equal(a, c) and not torch.equal(a, b) and not torch.equal(a, plain)
    # kept probabilities count 1/keep: the mean over many masks approaches the output without dropout
    mean = torch.stack([nfa.flash_attn_func(q, k, v, dropout_p=0.3).double() for _ in range(24)]).mean(0)
    assert (mean - plain.double()).abs().mean() < 0.5 * (a.double() - plain.double()).abs().mean()


@pytest.mark.parametrize("call,err,words", [
    (lambda q, cu: nfa.flash_attn_varlen_func(q, q, q, cu.long(), cu, 40, 40), ValueError,
     "cu_seqlens_q must be a 1-D torch.int32"),
    (lambda q, cu: nfa.flash_attn_varlen_func(q, q, q, cu + 1, cu, 40, 40), ValueError,
     r"cu_seqlens_q\[0\]=1 must be 0"),
    (lambda q, cu: nfa.flash_attn_varlen_func(q, q, q, cu, cu, 30, 40), ValueError,
     "max_seqlen_q=30 is below the longest sequence"),
    (lambda q, cu: nfa.flash_attn_varlen_func(q, q, q, cu, cu, 40, 40, block_table=cu), NotImplementedError,
     "block_table"),
    (lambda q, cu: nfa.flash_attn_varlen_func(q, q, q, cu, cu, 40, 40, alibi_slopes=torch.ones(2)), None, None),
    (lambda q, cu: nfa.flash_attn_func(q[None], q[None], q[None], window_size=(3,)), ValueError,
     r"window_size=\(3,\) must be a pair"),
    (lambda q, cu: nfa.flash_attn_func(q[None], q[None], q[None], window_size=(-2, 0)), ValueError,
     "must hold ints >= -1"),
    (lambda q, cu: nfa.flash_attn_func(q[None], q[None], q[None], dropout_p=1.0), ValueError,
     r"dropout_p=1.0 must be a float in \[0, 1\)"),
    (lambda q, cu: nfa.flash_attn_func(q[None], q[None], q[None], softcap=-1.0), ValueError, "softcap=-1.0 must be"),
    (lambda q, cu: nfa.flash_attn_qkvpacked_func(q[None]), ValueError, "qkv must have 5 dims"),
    (lambda q, cu: nfa.flash_attn_func(q, q, q), ValueError,
     r"q must be a 4-D tensor \(\[B, S, N, D\]\), got \(80, 2, 16\)"),
], ids=["cu-dtype", "cu-start", "max-seqlen", "block-table", "alibi-ok", "window-pair", "window-range", "dropout",
        "softcap", "packed-shape", "rank"])
def test_bad_arguments_are_refused(call, err, words, gen):
    q = torch.randn(80, 2, 16, generator=gen).half()
    cu = torch.tensor([0, 40, 80], dtype=torch.int32)
    if err is None:
        call(q, cu)  # equal Sk - Sq in every sequence: accepted
        return
    with pytest.raises(err, match=words):
        call(q, cu)


def test_varlen_alibi_with_different_offsets_is_not_implemented(gen):
    q, k, v, cu_q, cu_k = _varlen(gen, torch.float16, [20, 30], [20, 40], 2, 2, 16)
    with pytest.raises(NotImplementedError, match=r"Sk - Sq differ \(\[0, 10\]\)"):
        nfa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 30, 40, alibi_slopes=torch.ones(2))
