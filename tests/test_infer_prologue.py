"""The inference kernel's score prologue against the float64 model (FlashAttention criterion): FIA's pse_shift
([B or 1, N1, Q_S, KV_S], added to the scaled scores per packed GQA row) and flash_attn_with_kvcache's window_size
(bottom-right, one query token included), softcap and alibi_slopes ([N1] or [B, N1], -slope * |i + Sk - Sq - j|);
decode and prefill over a cache, paged and contiguous, GQA 1/4/8, ragged key lengths with 0, split and unsplit keys,
fp16/bf16, with masks and sparse modes; the messages that name each argument. Inputs are random, fresh each run."""
import math

import pytest
import torch

from npu_flash_attn import flash_attn_with_kvcache, last_launch_info, npu_fused_infer_attention_score
from npu_flash_attn.criterion import assert_close_fa
from npu_flash_attn.reference import fused_infer_lowprec, fused_infer_reference, kvcache_reference
from npu_flash_attn.twin_backend import set_infer_split_override


@pytest.fixture
def splits():
    """Forces the KV split count for one test (0 = the tiling's choice), restored afterwards."""
    yield set_infer_split_override
    set_infer_split_override(0)


def _assert_lse(lse, ref_lse):
    finite = torch.isfinite(ref_lse)
    assert bool((torch.isposinf(lse) == ~finite).all()), "rows without a key must have lse +inf, and only they"
    err = (lse.double()[finite] - ref_lse[finite]).abs()
    assert err.numel() == 0 or bool((err <= 1e-4 * (1 + ref_lse[finite].abs())).all()), err.max()


def _check_fia(q, k, v, **kw):
    out, lse = npu_fused_infer_attention_score(q, k, v, softmax_lse_flag=True, **kw)
    ref, ref_lse = fused_infer_reference(q, k, v, **kw)
    assert_close_fa(out, ref, fused_infer_lowprec(q, k, v, **kw))
    _assert_lse(lse, ref_lse)
    return last_launch_info()


def _paged(b, n2, d, kv_lens, block_size, n_major, dtype):
    """A paged cache with the keys of `kv_lens` in randomly permuted blocks, and its table."""
    per = [max(1, (n + block_size - 1) // block_size) for n in kv_lens]
    blocks = sum(per) + 2
    shape = (blocks, n2, block_size, d) if n_major else (blocks, block_size, n2 * d)
    table = torch.randperm(blocks)[:sum(per)].to(torch.int32)
    rows = torch.full((b, max(per)), -1, dtype=torch.int32)
    start = 0
    for i, n in enumerate(per):
        rows[i, :n] = table[start:start + n]
        start += n
    return torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype), rows


@pytest.mark.parametrize("group,dtype,pse_b,pad,force", [
    (1, torch.float16, True, 0, 1), (4, torch.bfloat16, False, 13, 3), (8, torch.float16, True, 5, 0)])
def test_pse_shift_decode_contiguous(group, dtype, pse_b, pad, force, splits):
    """One query token, BSH over a contiguous cache with ragged key lengths (0 included): pse_shift [B or 1, N1, 1,
    KV_S], KV_S at least the cache's S (wider: the padding is never read)."""
    splits(force)
    b, n2, d, s2 = 3, 2, 64, 200
    n1 = n2 * group
    q = torch.randn(b, 1, n1 * d, dtype=dtype)
    k, v = torch.randn(b, s2, n2 * d, dtype=dtype), torch.randn(b, s2, n2 * d, dtype=dtype)
    pse = torch.randn(b if pse_b else 1, n1, 1, s2 + pad, dtype=dtype) * 2
    info = _check_fia(q, k, v, pse_shift=pse, num_heads=n1, num_key_value_heads=n2, input_layout="BSH",
                      scale=1 / math.sqrt(d), actual_seq_lengths_kv=[200, 0, 77])
    assert info["splits"] == (force or info["splits"])


@pytest.mark.parametrize("layout,group,dtype,force", [("BNSD", 1, torch.bfloat16, 1), ("BNSD_BSND", 4, torch.float16, 2),
                                                      ("BSND", 8, torch.bfloat16, 0)])
def test_pse_shift_prefill_paged_causal(layout, group, dtype, force, splits):
    """Prefill over a paged cache (sparse_mode 3, bottom-right) with a pse_shift taller and wider than needed: each
    packed row (head h, token i) adds pse[b, h, i, j]."""
    splits(force)
    b, n2, d, bs = 3, 2, 64, 32
    n1 = n2 * group
    q_lens, kv_lens = [9, 4, 17], [40, 0, 75]
    s1 = max(q_lens)
    k, v, table = _paged(b, n2, d, kv_lens, bs, layout != "BSND", dtype)
    q = torch.randn(b, s1, n1, d, dtype=dtype) if layout == "BSND" else torch.randn(b, n1, s1, d, dtype=dtype)
    pse = torch.randn(b, n1, s1 + 3, table.shape[1] * bs + 7, dtype=dtype)
    _check_fia(q, k, v, pse_shift=pse, num_heads=n1, num_key_value_heads=n2, input_layout=layout, scale=0.125,
               block_table=table, block_size=bs, actual_seq_lengths=q_lens, actual_seq_lengths_kv=kv_lens,
               sparse_mode=3)


@pytest.mark.parametrize("decode", [False, True])
def test_pse_shift_with_dense_mask(decode, splits):
    """pse_shift and a dense [B, 1, S1, S2] mask (sparse_mode 1) together: the bias is added, then masked."""
    splits(2)
    b, n1, n2, d, s2, dtype = 2, 8, 2, 64, 150, torch.float16
    s1 = 1 if decode else 12
    q = torch.randn(b, s1, n1, d, dtype=dtype)
    k, v = torch.randn(b, s2, n2, d, dtype=dtype), torch.randn(b, s2, n2, d, dtype=dtype)
    mask = torch.rand(b, 1, s1, s2) < 0.3
    pse = torch.randn(1, n1, s1, s2, dtype=dtype)
    _check_fia(q, k, v, pse_shift=pse, atten_mask=mask, num_heads=n1, num_key_value_heads=n2, input_layout="BSND",
               scale=0.125, actual_seq_lengths_kv=[150, 61], sparse_mode=1)


def test_pse_shift_errors():
    b, n1, d, s2, dtype = 2, 4, 64, 40, torch.float16
    q = torch.randn(b, 1, n1 * d, dtype=dtype)
    k = v = torch.randn(b, s2, n1 * d, dtype=dtype)
    kw = dict(num_heads=n1, input_layout="BSH")
    with pytest.raises(TypeError, match=r"pse_shift dtype torch.bfloat16 must equal the query dtype"):
        npu_fused_infer_attention_score(q, k, v, pse_shift=torch.zeros(b, n1, 1, s2, dtype=torch.bfloat16), **kw)
    with pytest.raises(ValueError, match=r"pse_shift must be \[B=2 or 1, N1=4, Q_S >= 1, KV_S >= 40\].*\(2, 4, 1, 39\)"):
        npu_fused_infer_attention_score(q, k, v, pse_shift=torch.zeros(b, n1, 1, s2 - 1, dtype=dtype), **kw)
    with pytest.raises(ValueError, match=r"pse_shift must be .*\(3, 4, 1, 40\)"):
        npu_fused_infer_attention_score(q, k, v, pse_shift=torch.zeros(3, n1, 1, s2, dtype=dtype), **kw)
    qt, kt = torch.randn(3, n1, d, dtype=dtype), torch.randn(5, n1, d, dtype=dtype)
    with pytest.raises(NotImplementedError, match=r"pse_shift with input_layout='TND'"):
        npu_fused_infer_attention_score(qt, kt, kt, pse_shift=torch.zeros(1, n1, 3, 5, dtype=dtype), num_heads=n1,
                                        input_layout="TND", actual_seq_lengths=[3], actual_seq_lengths_kv=[5])


def _kvcache_case(paged, group, dtype, sq, s_new, seqlens):
    b, n2, d, page = len(seqlens), 2, 64, 32
    n1 = n2 * group
    q = torch.randn(b, sq, n1, d, dtype=dtype)
    k_new = torch.randn(b, s_new, n2, d, dtype=dtype) if s_new else None
    v_new = torch.randn(b, s_new, n2, d, dtype=dtype) if s_new else None
    if paged:
        per = 5
        blocks = b * per + 1
        k_cache, v_cache = torch.randn(blocks, page, n2, d, dtype=dtype), torch.randn(blocks, page, n2, d, dtype=dtype)
        table = torch.randperm(blocks)[:b * per].reshape(b, per).to(torch.int32)
    else:
        k_cache, v_cache = torch.randn(b, 150, n2, d, dtype=dtype), torch.randn(b, 150, n2, d, dtype=dtype)
        table = None

    def token(cache, i, t):
        return cache[i, t] if table is None else cache[int(table[i, t // page]), t % page]
    keys = [torch.stack([token(k_cache, i, t) for t in range(n)] + [k_new[i, t] for t in range(s_new)])
            if n + s_new else k_cache.new_zeros(0, n2, d) for i, n in enumerate(seqlens)]
    values = [torch.stack([token(v_cache, i, t) for t in range(n)] + [v_new[i, t] for t in range(s_new)])
              if n + s_new else v_cache.new_zeros(0, n2, d) for i, n in enumerate(seqlens)]
    return q, k_cache, v_cache, k_new, v_new, table, keys, values


@pytest.mark.parametrize("paged,group,dtype,sq,s_new,causal,window,softcap,alibi,force", [
    (True, 1, torch.bfloat16, 1, 1, True, (40, -1), 0.0, None, 2),          # sliding-window decode, split keys
    (False, 4, torch.float16, 1, 0, False, (-1, -1), 5.0, None, 1),         # soft-cap, decode without new keys
    (True, 8, torch.float16, 1, 1, False, (-1, -1), 0.0, "heads", 3),       # ALiBi [N1], decode
    (False, 8, torch.bfloat16, 6, 6, True, (-1, -1), 0.0, "batch", 0),      # ALiBi [B, N1], causal prefill
    (True, 4, torch.bfloat16, 6, 6, True, (20, -1), 0.0, None, 1),          # causal sliding window, prefill
    (False, 1, torch.float16, 5, 5, False, (3, 2), 0.0, None, 2),           # a two-sided window, prefill
    (True, 4, torch.float16, 7, 7, True, (50, -1), 8.0, "batch", 2),        # all three, split keys
    (False, 8, torch.bfloat16, 1, 1, True, (10, -1), 3.0, "heads", 0),      # all three, decode
])
def test_kvcache_window_softcap_alibi(paged, group, dtype, sq, s_new, causal, window, softcap, alibi, force, splits):
    splits(force)
    seqlens = [97, 0, 40]
    q, k_cache, v_cache, k_new, v_new, table, keys, values = _kvcache_case(paged, group, dtype, sq, s_new, seqlens)
    b, n1 = q.shape[0], q.shape[2]
    slopes = None
    if alibi == "heads":
        slopes = torch.rand(n1) * 0.3
    elif alibi == "batch":
        slopes = torch.rand(b, n1) * 0.3
    out, lse = flash_attn_with_kvcache(q, k_cache, v_cache, k_new, v_new,
                                       cache_seqlens=torch.tensor(seqlens, dtype=torch.int32), block_table=table,
                                       causal=causal, window_size=window, softcap=softcap, alibi_slopes=slopes,
                                       return_softmax_lse=True)
    kw = dict(causal=causal, window_size=window, softcap=softcap, alibi_slopes=slopes)
    ref, ref_lse = kvcache_reference(q, keys, values, **kw)
    low = kvcache_reference(q, keys, values, lowprec=True, **kw)
    assert_close_fa(out, ref, low)
    _assert_lse(lse, ref_lse)
    info = last_launch_info()
    assert info["splits"] == (force or info["splits"])


def test_window_cuts_the_keys_read():
    """A sliding window over a long cache reads only the window's key steps (the band cuts each task's keys)."""
    b, n1, d, dtype = 1, 4, 64, torch.float16
    q = torch.randn(b, 1, n1, d, dtype=dtype)
    k_cache, v_cache = torch.randn(b, 2048, 1, d, dtype=dtype), torch.randn(b, 2048, 1, d, dtype=dtype)
    flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=2048)
    full = last_launch_info()["steps"]
    flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=2048, window_size=(100, 0))
    assert last_launch_info()["steps"] * 8 <= full


def test_kvcache_prologue_errors_write_nothing():
    b, n1, n2, d, dtype = 2, 4, 2, 64, torch.float16
    q = torch.randn(b, 1, n1, d, dtype=dtype)
    k_cache, v_cache = torch.randn(b, 30, n2, d, dtype=dtype), torch.randn(b, 30, n2, d, dtype=dtype)
    k, v = torch.randn(b, 1, n2, d, dtype=dtype), torch.randn(b, 1, n2, d, dtype=dtype)
    before = k_cache.clone()
    kw = dict(k=k, v=v, cache_seqlens=10)
    with pytest.raises(ValueError, match=r"softcap=-1(\.0)? must be a finite number >= 0"):
        flash_attn_with_kvcache(q, k_cache, v_cache, softcap=-1.0, **kw)
    with pytest.raises(ValueError, match=r"alibi_slopes must be \[nheads=4\] or \[batch_size=2, nheads=4\], got shape \(3,\)"):
        flash_attn_with_kvcache(q, k_cache, v_cache, alibi_slopes=torch.rand(3), **kw)
    with pytest.raises(TypeError, match=r"alibi_slopes dtype torch.float16 must be torch.float32"):
        flash_attn_with_kvcache(q, k_cache, v_cache, alibi_slopes=torch.rand(n1, dtype=torch.float16), **kw)
    with pytest.raises(TypeError, match=r"window_size must be a pair"):
        flash_attn_with_kvcache(q, k_cache, v_cache, window_size=5, **kw)
    with pytest.raises(TypeError, match=r"window_size\[0\] must be an int"):
        flash_attn_with_kvcache(q, k_cache, v_cache, window_size=(1.5, 0), **kw)
    assert torch.equal(k_cache, before)


@pytest.mark.parametrize("group,force", [(1, 1), (4, 2)])
def test_prefill_wide_key_steps(group, force, splits):
    """Prefill without a dense mask takes 256 keys per step: several steps per task over a long paged cache, with the
    causal band, a pse_shift and ragged lengths."""
    splits(force)
    b, n2, d, bs, dtype = 2, 2, 64, 128, torch.bfloat16
    n1 = n2 * group
    q_lens, kv_lens = [30, 11], [700, 300]
    k, v, table = _paged(b, n2, d, kv_lens, bs, True, dtype)
    q = torch.randn(b, n1, max(q_lens), d, dtype=dtype)
    pse = torch.randn(1, n1, max(q_lens), table.shape[1] * bs, dtype=dtype)
    info = _check_fia(q, k, v, pse_shift=pse, num_heads=n1, num_key_value_heads=n2, input_layout="BNSD",
                      scale=0.125, block_table=table, block_size=bs, actual_seq_lengths=q_lens,
                      actual_seq_lengths_kv=kv_lens, sparse_mode=3)
    assert info["s2_block"] == 256 and info["steps"] > info["tasks"]
