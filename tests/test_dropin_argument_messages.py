"""Bad arguments to the drop-ins and the package's Python functions are refused before anything runs, by the name
the caller used (the drop-ins translate names for the op, so its own messages would name arguments the caller never
passed), with the value and the rule; every number is type-checked (a string, bool or tensor is refused)."""
import pytest
import torch

import npu_flash_attn as nfa

B, S, N, D = 1, 37, 2, 40


@pytest.fixture
def qkv(gen):
    return tuple(torch.randn(B, S, N, D, generator=gen).bfloat16() for _ in range(3))


@pytest.fixture
def varlen(gen):
    t = torch.randn(10, N, D, generator=gen).bfloat16()
    return t, t.clone(), t.clone(), torch.tensor([0, 4, 10], dtype=torch.int32)


FLASH_ATTN = [
    (dict(alibi_slopes=[0.1, 0.2]), TypeError, r"alibi_slopes must be a torch.Tensor or None, got list"),
    (dict(alibi_slopes=torch.ones(N, device="meta")), ValueError, r"alibi_slopes is on device meta but q is on cpu"),
    (dict(alibi_slopes=torch.ones(N, dtype=torch.float16)), TypeError, r"alibi_slopes dtype torch.float16 must be "),
    (dict(alibi_slopes=torch.ones(N + 1)), ValueError, r"alibi_slopes shape \(3,\) must be \[N\] or \[B, N\]"),
    (dict(alibi_slopes=torch.tensor([0.1, float("nan")])), ValueError, r"alibi_slopes contains nan at index \(1,\)"),
    (dict(softmax_scale=float("nan")), ValueError, r"softmax_scale=nan must be finite"),
    (dict(softmax_scale="0.1"), TypeError, r"softmax_scale must be a float, got str '0.1'"),
    (dict(softmax_scale=torch.tensor(0.1)), TypeError, r"softmax_scale must be a float, got a tensor"),
    (dict(softcap=True), TypeError, r"softcap must be a float, got bool True"),
    (dict(softcap=torch.tensor(3.0)), TypeError, r"softcap must be a float, got a tensor of shape \(\)"),
    (dict(softcap=-1.0), ValueError, r"softcap=-1.0 must be >= 0"),
    (dict(dropout_p="0.1"), TypeError, r"dropout_p must be a float, got str"),
    (dict(dropout_p=1.0), ValueError, r"dropout_p=1.0 must be a float in \[0, 1\)"),
    (dict(deterministic=1), TypeError, r"deterministic must be a bool, got int 1"),
    (dict(causal=1), TypeError, r"causal must be a bool, got int 1"),
]


@pytest.mark.parametrize("kw,err,msg", FLASH_ATTN, ids=[str(i) for i in range(len(FLASH_ATTN))])
def test_flash_attn_func(qkv, kw, err, msg):
    with pytest.raises(err, match=msg):
        nfa.flash_attn_func(*qkv, **kw)


def test_flash_attn_func_refuses_non_tensors(qkv):
    with pytest.raises(TypeError, match=r"q must be a torch.Tensor, got ndarray"):
        nfa.flash_attn_func(qkv[0].float().numpy(), *qkv[1:])


VARLEN = [
    ("meta", ValueError, r"cu_seqlens_q is on the meta device without data"),
    ([0, 4, 10], TypeError, r"cu_seqlens_q must be a torch.Tensor \(int32, \[batch \+ 1\]\), got list"),
    (torch.tensor([0, 6, 4], dtype=torch.int32), ValueError,
     r"cu_seqlens_q=\[0, 6, 4\]: entry 2 \(4\) is smaller than entry 1 \(6\); cumulative lengths must be"),
    (torch.tensor([0, 6, 12], dtype=torch.int32), ValueError,
     r"cu_seqlens_q=\[0, 6, 12\] ends at 12 but q holds 10 tokens"),
    (torch.tensor([1, 6, 10], dtype=torch.int32), ValueError, r"cu_seqlens_q\[0\]=1 must be 0"),
]


@pytest.mark.parametrize("cu_q,err,msg", VARLEN, ids=[str(i) for i in range(len(VARLEN))])
def test_flash_attn_varlen_func(varlen, cu_q, err, msg):
    q, k, v, cu = varlen
    cu_q = cu.to("meta") if cu_q == "meta" else cu_q
    with pytest.raises(err, match=msg):
        nfa.flash_attn_varlen_func(q, k, v, cu_q, cu, 6, 6)


def test_sdpa(qkv):
    q, k, v = (t.transpose(1, 2) for t in qkv)
    bad = [(dict(attn_mask=torch.full((S, S), float("nan"))), ValueError,
            r"attn_mask contains nan at index \(0, 0\); a float attn_mask is an additive bias"),
           (dict(attn_mask=torch.full((S, S), float("inf"))), ValueError, r"attn_mask contains inf"),
           (dict(attn_mask=[[True]]), TypeError, r"attn_mask must be a torch.Tensor or None, got list"),
           (dict(scale="0.1"), TypeError, r"scale must be a float, got str '0.1'"),
           (dict(scale=float("inf")), ValueError, r"scale=inf must be finite"),
           (dict(enable_gqa="yes"), TypeError, r"enable_gqa must be a bool, got str 'yes'"),
           (dict(is_causal=0), TypeError, r"is_causal must be a bool, got int 0"),
           (dict(dropout_p=torch.tensor(0.1)), TypeError, r"dropout_p must be a float, got a tensor")]
    for kw, err, msg in bad:
        with pytest.raises(err, match=msg):
            nfa.scaled_dot_product_attention(q, k, v, **kw)
    masked = torch.zeros(S, S)
    masked[:, 5:] = float("-inf")  # -inf masks out: accepted
    assert nfa.scaled_dot_product_attention(q, k, v, attn_mask=masked).shape == q.shape


def test_npu_fusion_attention(qkv):
    bad = [(dict(keep_prob="0.5"), TypeError, r"keep_prob must be a float, got str '0.5'"),
           (dict(keep_prob=torch.tensor(0.5)), TypeError, r"keep_prob must be a float, got a tensor of shape \(\)"),
           (dict(keep_prob=0.0), ValueError, r"keep_prob=0.0 must be in \(0, 1\]"),
           (dict(scale="1"), TypeError, r"scale must be a float, got str '1'"),
           (dict(pre_tockens=1.5), TypeError, r"pre_tockens must be an int, got float 1.5"),
           (dict(seed=2 ** 64), ValueError, r"seed=18446744073709551616 must fit in 64 bits"),
           (dict(offset="3"), TypeError, r"offset must be an int, got str '3'"),
           (dict(sync=1), TypeError, r"sync must be a bool, got int 1")]
    for kw, err, msg in bad:
        with pytest.raises(err, match=msg):
            nfa.npu_fusion_attention(*qkv, N, "BSND", **kw)


def test_npu_fusion_attention_grad_names_scale_value(qkv):
    out, smax, ssum = nfa.npu_fusion_attention(*qkv, N, "BSND")[:3]
    kw = dict(softmax_max=smax, softmax_sum=ssum, attention_in=out)
    with pytest.raises(TypeError, match=r"scale_value must be a float, got str 'x'"):
        nfa.npu_fusion_attention_grad(*qkv, out, N, "BSND", scale_value="x", **kw)
    with pytest.raises(TypeError, match=r"numels must be an int, got float"):
        nfa.npu_fusion_attention_grad(*qkv, out, N, "BSND", numels=1.0, **kw)


def test_unsigned_seed_is_accepted_and_returned(qkv):
    """The dropout docs say seeds are unsigned 64-bit: 2**64 - 1 works and draws the same bits as its two's
    complement (the op's signed int)."""
    top = nfa.npu_fusion_attention(*qkv, N, "BSND", keep_prob=0.5, seed=2 ** 64 - 1)
    same = nfa.npu_fusion_attention(*qkv, N, "BSND", keep_prob=0.5, seed=-1)
    assert top[4] == 2 ** 64 - 1 and torch.equal(top[0], same[0])


def test_package_functions_take_unsigned_seeds(qkv):
    """flash_attention / flash_attention_grad take the documented unsigned range too: 2**64 - 1 is the op's -1;
    2**64 is refused by name, before the dispatcher's own message about ints."""
    top = nfa.flash_attention(*qkv, N, "BSND", keep_prob=0.5, seed=2 ** 64 - 1, offset=2 ** 63)
    same = nfa.flash_attention(*qkv, N, "BSND", keep_prob=0.5, seed=-1, offset=-2 ** 63)
    assert torch.equal(top[0], same[0])
    dy = torch.randn_like(top[0])
    kw = dict(softmax_max=top[1], softmax_sum=top[2], attention_in=top[0], keep_prob=0.5)
    g_top = nfa.flash_attention_grad(*qkv, dy, N, "BSND", seed=2 ** 64 - 1, offset=2 ** 63, **kw)
    g_same = nfa.flash_attention_grad(*qkv, dy, N, "BSND", seed=-1, offset=-2 ** 63, **kw)
    assert all(torch.equal(a, b) for a, b in zip(g_top[:3], g_same[:3]))
    with pytest.raises(ValueError, match=r"seed=18446744073709551616 must fit in 64 bits"):
        nfa.flash_attention(*qkv, N, "BSND", keep_prob=0.5, seed=2 ** 64)
    with pytest.raises(TypeError, match=r"offset must be an int, got float 1.0"):
        nfa.flash_attention_grad(*qkv, dy, N, "BSND", offset=1.0, **kw)


def test_python_functions_check_scalar_types(qkv):
    out, smax, ssum = nfa.flash_attention(*qkv, N, "BSND")
    grad = dict(softmax_max=smax, softmax_sum=ssum, attention_in=out)
    with pytest.raises(TypeError, match=r"deterministic must be a bool, got int 1"):
        nfa.flash_attention_grad(*qkv, out, N, "BSND", deterministic=1, **grad)
    with pytest.raises(TypeError, match=r"keep_prob must be a float, got a tensor"):
        nfa.flash_attention(*qkv, N, "BSND", keep_prob=torch.tensor(0.9))
    with pytest.raises(TypeError, match=r"softcap must be a float, got bool True"):
        nfa.flash_attention(*qkv, N, "BSND", softcap=True)
    with pytest.raises(TypeError, match=r"head_num must be an int, got str"):
        nfa.flash_attention(*qkv, "2", "BSND")
    assert nfa.flash_attention(*qkv, N, "BSND", scale=1, softcap=None)[0].shape == out.shape  # int for float: fine
