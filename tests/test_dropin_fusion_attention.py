"""npu_fusion_attention / npu_fusion_attention_grad with torch_npu 2.14's signatures: the 7 outputs, the built-in's
semantics where our op differs (no mask = full attention whatever sparse_mode says), softmax_layout="TND", dropout's
seed/offset/numels round trip into the grad, and the one-line switch of a torch_npu script (a stand-in torch_npu
module on CPU)."""
from __future__ import annotations

import inspect
import math
import sys
import types

import pytest
import torch

import npu_flash_attn as nfa
from npu_flash_attn.masks import compressed_causal_mask
from npu_flash_attn.criterion import assert_close_fa, assert_stats_close
from npu_flash_attn.reference import flash_attention_lowprec, flash_attention_reference

# torch_npu 2.14's argument names, in order (torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml)
BUILTIN_FWD = ["query", "key", "value", "head_num", "input_layout", "pse", "padding_mask", "atten_mask", "scale",
               "keep_prob", "pre_tockens", "next_tockens", "inner_precise", "prefix", "actual_seq_qlen",
               "actual_seq_kvlen", "sparse_mode", "gen_mask_parallel", "sync", "softmax_layout", "sink",
               "dropout_mask", "seed", "offset"]
BUILTIN_GRAD = ["query", "key", "value", "dy", "head_num", "input_layout", "pse", "padding_mask", "atten_mask",
                "softmax_max", "softmax_sum", "softmax_in", "attention_in", "scale_value", "keep_prob", "pre_tockens",
                "next_tockens", "inner_precise", "seed", "offset", "numels", "prefix", "actual_seq_qlen",
                "actual_seq_kvlen", "sparse_mode", "gen_mask_parallel", "sync", "softmax_layout", "sink"]


def test_signatures_are_the_builtins():
    fwd = inspect.signature(nfa.npu_fusion_attention).parameters
    grad = inspect.signature(nfa.npu_fusion_attention_grad).parameters
    assert list(fwd) == BUILTIN_FWD and list(grad) == BUILTIN_GRAD
    assert all(grad[n].kind is inspect.Parameter.KEYWORD_ONLY for n in BUILTIN_GRAD[6:])
    assert fwd["pre_tockens"].default == 2147483647 and grad["scale_value"].default == 1.0


def _bsnd(gen, b, s1, s2, n1, n2, d, dt=torch.bfloat16):
    return (torch.randn(b, s1, n1, d, generator=gen).to(dt), torch.randn(b, s2, n2, d, generator=gen).to(dt),
            torch.randn(b, s2, n2, d, generator=gen).to(dt))


def _grads_vs_float64(q, k, v, dq, dk, dv, dy, n1, layout, kw):
    ref = [t.detach().double().requires_grad_() for t in (q, k, v)]
    flash_attention_reference(*ref, n1, layout, **kw)[0].backward(dy.double())
    low = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    (flash_attention_lowprec(*low, n1, layout, **kw).double() * dy.double()).sum().backward()
    for name, g, r, lo in zip(("dq", "dk", "dv"), (dq, dk, dv), ref, low):
        err = (g.double() - r.grad).abs().max().item()
        base = (lo.grad.double() - r.grad).abs().max().item()
        assert err <= 3 * base + 1e-5, f"{name}: {err:.3e} > 3 * {base:.3e} + 1e-5"


def test_seven_outputs_and_grad(gen):
    b, s1, s2, n1, n2, d = 2, 77, 131, 4, 2, 32
    q, k, v = _bsnd(gen, b, s1, s2, n1, n2, d)
    kw = dict(scale=d ** -0.5, sparse_mode=3, atten_mask=compressed_causal_mask())
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out, smax, ssum, softmax_out, seed, offset, numels = nfa.npu_fusion_attention(*leaves, n1, "BSND", **kw)
    ro, rm, rs = flash_attention_reference(q.double(), k.double(), v.double(), n1, "BSND", **kw)
    assert_close_fa(out, ro, flash_attention_lowprec(q, k, v, n1, "BSND", **kw))
    assert_stats_close(smax, ssum, rm, rs)
    assert softmax_out.numel() == 0 and softmax_out.dtype == q.dtype
    assert (seed, offset, numels) == (0, 0, b * n1 * s1 * s2)
    dy = torch.randn(out.shape, generator=gen).to(out.dtype)
    out.backward(dy)  # autograd through the drop-in
    _grads_vs_float64(q, k, v, *(t.grad for t in leaves), dy, n1, "BSND", kw)
    dq, dk, dv, dpse, dsink = nfa.npu_fusion_attention_grad(
        q, k, v, dy, n1, "BSND", atten_mask=kw["atten_mask"], softmax_max=smax, softmax_sum=ssum,
        softmax_in=softmax_out, attention_in=out.detach(), scale_value=kw["scale"], seed=seed, offset=offset,
        numels=numels, sparse_mode=3)
    # the built-in's grad API has no output residual: D from attention_in, as the autograd without the residual
    _grads_vs_float64(q, k, v, dq, dk, dv, dy, n1, "BSND", kw)
    assert dpse.numel() == 0 and dsink.numel() == 0
    nfa.set_output_residual(False)
    try:
        plain = [t.clone().requires_grad_() for t in (q, k, v)]
        nfa.npu_fusion_attention(*plain, n1, "BSND", **kw)[0].backward(dy)
    finally:
        nfa.set_output_residual(True)
    assert torch.equal(dq, plain[0].grad) and torch.equal(dk, plain[1].grad) and torch.equal(dv, plain[2].grad)


@pytest.mark.parametrize("mode,extra", [(2, {}), (3, {}), (4, dict(pre_tockens=10, next_tockens=0)),
                                        (6, dict(prefix=[5]))])
def test_sparse_modes_without_mask_compute_full_attention(mode, extra, gen):
    q, k, v = _bsnd(gen, 1, 60, 90, 2, 2, 32, torch.float16)
    out = nfa.npu_fusion_attention(q, k, v, 2, "BSND", scale=0.2, sparse_mode=mode, **extra)[0]
    full = flash_attention_reference(q.double(), k.double(), v.double(), 2, "BSND", scale=0.2)[0]
    masked = flash_attention_reference(q.double(), k.double(), v.double(), 2, "BSND", scale=0.2, sparse_mode=3)[0]
    assert_close_fa(out, full, flash_attention_lowprec(q, k, v, 2, "BSND", scale=0.2))
    assert (out.double() - masked).abs().max() > 0.1  # the op alone would have applied the mode


def test_tnd_softmax_layout_round_trip(gen):
    lens_q, lens_k, n1 = [30, 0, 51], [40, 20, 51], 4
    cu_q, cu_k = torch.tensor(lens_q).cumsum(0).tolist(), torch.tensor(lens_k).cumsum(0).tolist()
    q = torch.randn(sum(lens_q), n1, 32, generator=gen).bfloat16()
    k = torch.randn(sum(lens_k), 2, 32, generator=gen).bfloat16()
    v = torch.randn(sum(lens_k), 2, 32, generator=gen).bfloat16()
    kw = dict(scale=0.18, actual_seq_qlen=cu_q, actual_seq_kvlen=cu_k, sparse_mode=3,
              atten_mask=compressed_causal_mask())
    out, smax, ssum, _, _, _, numels = nfa.npu_fusion_attention(q, k, v, n1, "TND", **kw)
    out_t, smax_t, ssum_t, *_ = nfa.npu_fusion_attention(q, k, v, n1, "TND", softmax_layout="TND", **kw)
    assert numels == n1 * sum(a * b for a, b in zip(lens_q, lens_k)) and torch.equal(out, out_t)
    # token-major: row (t, n) of softmax_layout="TND" is the op's row (sequence of t, n, position of t)
    t, n = cu_q[0] + 7, 3  # token 7 of sequence 2 (the first holds 30 tokens, the second none)
    assert torch.equal(smax_t[t, n], smax.reshape(-1, 8)[cu_q[0] * n1 + n * lens_q[2] + 7])
    assert not torch.equal(smax_t, smax)
    dy = torch.randn(out.shape, generator=gen).bfloat16()
    grad_kw = dict(attention_in=out, scale_value=0.18, actual_seq_qlen=cu_q, actual_seq_kvlen=cu_k, sparse_mode=3,
                   atten_mask=compressed_causal_mask())
    default = nfa.npu_fusion_attention_grad(q, k, v, dy, n1, "TND", softmax_max=smax, softmax_sum=ssum, **grad_kw)
    token_major = nfa.npu_fusion_attention_grad(q, k, v, dy, n1, "TND", softmax_max=smax_t, softmax_sum=ssum_t,
                                                softmax_layout="TND", **grad_kw)
    assert all(torch.equal(a, b) for a, b in zip(default[:3], token_major[:3]))


def test_dropout_seed_offset_numels_round_trip(gen):
    q, k, v = _bsnd(gen, 1, 50, 70, 2, 2, 32)
    torch.manual_seed(11)
    out, smax, ssum, _, seed, offset, numels = nfa.npu_fusion_attention(q, k, v, 2, "BSND", scale=0.2, keep_prob=0.8)
    torch.manual_seed(11)
    again = nfa.npu_fusion_attention(q, k, v, 2, "BSND", scale=0.2, keep_prob=0.8)
    assert seed != 0 and again[4] == seed and torch.equal(again[0], out)
    given = nfa.npu_fusion_attention(q, k, v, 2, "BSND", scale=0.2, keep_prob=0.8, seed=seed, offset=offset)
    assert torch.equal(given[0], out) and given[4:6] == (seed, offset)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    nfa.set_output_residual(False)  # the built-in's grad API takes D from attention_in alone
    try:
        auto = nfa.npu_fusion_attention(*leaves, 2, "BSND", scale=0.2, keep_prob=0.8, seed=seed, offset=offset)[0]
        dy = torch.randn(out.shape, generator=gen).bfloat16()
        auto.backward(dy)
    finally:
        nfa.set_output_residual(True)
    grads = nfa.npu_fusion_attention_grad(q, k, v, dy, 2, "BSND", softmax_max=smax, softmax_sum=ssum,
                                          attention_in=out, scale_value=0.2, keep_prob=0.8, seed=seed,
                                          offset=offset, numels=numels)
    assert all(torch.equal(g, t.grad) for g, t in zip(grads[:3], leaves))
    with pytest.raises(ValueError, match=f"numels=5 must be the forward's {numels}"):
        nfa.npu_fusion_attention_grad(q, k, v, dy, 2, "BSND", softmax_max=smax, softmax_sum=ssum, attention_in=out,
                                      scale_value=0.2, keep_prob=0.8, seed=seed, offset=offset, numels=5)


def _torch_npu_script(q, k, v, n1):
    """A training step as written for torch_npu: forward with the built-in's spelling, explicit grad."""
    import torch_npu
    out, smax, ssum, sm_out, seed, offset, numels = torch_npu.npu_fusion_attention(
        q, k, v, n1, "BNSD", scale=1 / math.sqrt(q.shape[-1]), pre_tockens=65536, next_tockens=0, sparse_mode=0,
        atten_mask=torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).triu(1))
    dy = torch.ones_like(out)
    grads = torch_npu.npu_fusion_attention_grad(
        q, k, v, dy, n1, "BNSD", atten_mask=torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).triu(1),
        softmax_max=smax, softmax_sum=ssum, softmax_in=sm_out, attention_in=out,
        scale_value=1 / math.sqrt(q.shape[-1]), pre_tockens=65536, next_tockens=0, seed=seed, offset=offset,
        numels=numels)
    return out, grads


def test_one_line_switch_of_a_torch_npu_script(gen, monkeypatch):
    fake = types.ModuleType("torch_npu")  # stands in for torch_npu on this CPU machine
    monkeypatch.setitem(sys.modules, "torch_npu", fake)
    import torch_npu
    torch_npu.npu_fusion_attention = nfa.npu_fusion_attention  # the switch
    torch_npu.npu_fusion_attention_grad = nfa.npu_fusion_attention_grad
    q = torch.randn(1, 2, 70, 32, generator=gen).half()
    k = torch.randn(1, 2, 70, 32, generator=gen).half()
    v = torch.randn(1, 2, 70, 32, generator=gen).half()
    out, (dq, dk, dv, _, _) = _torch_npu_script(q, k, v, 2)
    kw = dict(scale=1 / math.sqrt(32), sparse_mode=2)  # the script's mask is top-left causal
    assert_close_fa(out, flash_attention_reference(q.double(), k.double(), v.double(), 2, "BNSD", **kw)[0],
                    flash_attention_lowprec(q, k, v, 2, "BNSD", **kw))
    _grads_vs_float64(q, k, v, dq, dk, dv, torch.ones_like(out), 2, "BNSD", kw)


@pytest.mark.parametrize("kw,err,words", [
    (dict(padding_mask=torch.ones(1)), NotImplementedError, "padding_mask is not supported"),
    (dict(softmax_layout="BSND"), ValueError, "softmax_layout='BSND' must be"),
    (dict(softmax_layout="TND"), ValueError, "softmax_layout='TND' needs input_layout='TND'"),
    (dict(sparse_mode=7), ValueError, r"sparse_mode=7 is not valid with input_layout='BNSD'; use one of"),
    (dict(sync=1), TypeError, "sync must be a bool"),
], ids=["padding-mask", "softmax-layout", "softmax-layout-tnd", "sparse-mode", "sync"])
def test_bad_arguments_are_refused(kw, err, words, gen):
    q = torch.randn(1, 2, 20, 16, generator=gen).half()
    with pytest.raises(err, match=words):
        nfa.npu_fusion_attention(q, q, q, 2, "BNSD", **kw)
    stats = torch.zeros(1, 2, 20, 8)
    with pytest.raises(err, match=words):
        nfa.npu_fusion_attention_grad(q, q, q, q, 2, "BNSD", softmax_max=stats, softmax_sum=stats, attention_in=q,
                                      **kw)


def test_reserved_softmax_in_is_refused(gen):
    q = torch.randn(1, 2, 20, 16, generator=gen).half()
    stats = torch.zeros(1, 2, 20, 8)
    with pytest.raises(NotImplementedError, match="softmax_in with 4 elements is not supported"):
        nfa.npu_fusion_attention_grad(q, q, q, q, 2, "BNSD", softmax_max=stats, softmax_sum=stats, attention_in=q,
                                      softmax_in=torch.ones(4))
