"""flash_attn_with_kvcache: new keys appended into the cache in place (contiguous rows, cache_batch_idx, or pages
through block_table), attention over the grown cache against the float64 model (FlashAttention criterion),
bottom-right causal, the LSE, and refused arguments that leave the cache untouched."""

import pytest
import torch

from npu_flash_attn import flash_attn_with_kvcache
from npu_flash_attn.criterion import assert_close_fa
from npu_flash_attn.reference import kvcache_reference


def _expected(q, keys, values, causal):
    """float64 (out [B, Sq, N1, D], lse [B, N1, Sq]) and the low-precision baseline, per sequence over its keys."""
    out, lse = kvcache_reference(q, keys, values, causal=causal)
    return out, kvcache_reference(q, keys, values, causal=causal, lowprec=True), lse


@pytest.mark.parametrize("paged,causal,s_new", [(False, False, 1), (True, True, 1), (True, True, 5),
                                                (False, True, 3)])
def test_append_and_attend(paged, causal, s_new):
    b, n1, n2, d, page, dtype = 3, 8, 2, 64, 16, torch.bfloat16
    seqlens = [37, 0, 16]
    sq = s_new
    q = torch.randn(b, sq, n1, d, dtype=dtype)
    k_new, v_new = torch.randn(b, s_new, n2, d, dtype=dtype), torch.randn(b, s_new, n2, d, dtype=dtype)
    if paged:
        per = 4
        blocks = b * per + 2
        k_cache = torch.randn(blocks, page, n2, d, dtype=dtype)
        v_cache = torch.randn(blocks, page, n2, d, dtype=dtype)
        table = torch.randperm(blocks)[:b * per].reshape(b, per).to(torch.int32)
    else:
        k_cache, v_cache = torch.randn(b, 60, n2, d, dtype=dtype), torch.randn(b, 60, n2, d, dtype=dtype)
        table = None
    before_k, before_v = k_cache.clone(), v_cache.clone()
    out, lse = flash_attn_with_kvcache(q, k_cache, v_cache, k_new, v_new,
                                       cache_seqlens=torch.tensor(seqlens, dtype=torch.int32), block_table=table,
                                       causal=causal, return_softmax_lse=True)

    def token(cache, i, t):
        if table is None:
            return cache[i, t]
        return cache[int(table[i, t // page]), t % page]

    keys, values = [], []
    for i, n in enumerate(seqlens):
        for t in range(s_new):  # appended in place at positions n ... n + s_new - 1
            assert torch.equal(token(k_cache, i, n + t), k_new[i, t]) and torch.equal(token(v_cache, i, n + t), v_new[i, t])
        keys.append(torch.stack([token(before_k, i, t) for t in range(n)] + [k_new[i, t] for t in range(s_new)]))
        values.append(torch.stack([token(before_v, i, t) for t in range(n)] + [v_new[i, t] for t in range(s_new)]))
    # Nothing else of the cache changed.
    changed = (k_cache != before_k).reshape(k_cache.shape[0], k_cache.shape[1], -1).any(-1).sum().item()
    assert changed <= b * s_new
    ref, low, ref_lse = _expected(q, keys, values, causal)
    assert_close_fa(out, ref, low)
    assert lse.shape == (b, n1, sq) and lse.dtype == torch.float32
    assert bool(((lse.double() - ref_lse).abs() <= 1e-4 * (1 + ref_lse.abs())).all())


def test_cache_batch_idx_and_int_seqlens():
    b, n1, d, dtype = 2, 4, 64, torch.float16
    q = torch.randn(b, 1, n1, d, dtype=dtype)
    k_cache, v_cache = torch.randn(4, 30, 1, d, dtype=dtype), torch.randn(4, 30, 1, d, dtype=dtype)
    idx = torch.tensor([3, 1], dtype=torch.int32)
    out = flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=21, cache_batch_idx=idx)
    keys = [k_cache[3, :21], k_cache[1, :21]]
    values = [v_cache[3, :21], v_cache[1, :21]]
    ref, low, _ = _expected(q, keys, values, False)
    assert_close_fa(out, ref, low)


@pytest.mark.parametrize("kw,exc,pattern", [
    (dict(cache_seqlens=torch.tensor([59, 0], dtype=torch.int32)), ValueError, r"cache_seqlens\[0\]=59 must be in \[0, 58\]"),
    (dict(softcap=-2.0), ValueError, r"softcap=-2(\.0)? must be a finite number >= 0"),
    (dict(alibi_slopes=torch.rand(5)), ValueError, r"alibi_slopes must be \[nheads=4\]"),
    (dict(v=None), ValueError, r"k and v must be given together"),
    (dict(causal=1), TypeError, r"causal must be a bool"),
])
def test_refused_arguments_write_nothing(kw, exc, pattern):
    b, n1, d, dtype = 2, 4, 64, torch.float16
    q = torch.randn(b, 2, n1, d, dtype=dtype)
    k_cache, v_cache = torch.randn(b, 60, 2, d, dtype=dtype), torch.randn(b, 60, 2, d, dtype=dtype)
    before = k_cache.clone(), v_cache.clone()
    args = dict(k=torch.randn(b, 2, 2, d, dtype=dtype), v=torch.randn(b, 2, 2, d, dtype=dtype),
                cache_seqlens=torch.tensor([10, 0], dtype=torch.int32))
    args.update(kw)
    with pytest.raises(exc, match=pattern):
        flash_attn_with_kvcache(q, k_cache, v_cache, **args)
    assert torch.equal(k_cache, before[0]) and torch.equal(v_cache, before[1])


def test_paged_block_table_errors_write_nothing():
    dtype = torch.float16
    q = torch.randn(1, 1, 4, 64, dtype=dtype)
    k_cache, v_cache = torch.randn(3, 16, 1, 64, dtype=dtype), torch.randn(3, 16, 1, 64, dtype=dtype)
    before = k_cache.clone()
    new = torch.randn(1, 1, 1, 64, dtype=dtype)
    with pytest.raises(ValueError, match=r"block_table\[0, 1\]=7 must name a block of k_cache, in \[0, 3\)"):
        flash_attn_with_kvcache(q, k_cache, v_cache, new, new.clone(), cache_seqlens=20,
                                block_table=torch.tensor([[0, 7]], dtype=torch.int32))
    with pytest.raises(ValueError, match=r"page_block_size=24"):
        flash_attn_with_kvcache(q, torch.randn(3, 24, 1, 64, dtype=dtype), torch.randn(3, 24, 1, 64, dtype=dtype),
                                block_table=torch.tensor([[0, 1]], dtype=torch.int32))
    assert torch.equal(k_cache, before)


def test_q_errors_name_q():
    cache = torch.randn(2, 20, 1, 64, dtype=torch.float16)
    with pytest.raises(TypeError, match=r"q dtype torch.float32"):
        flash_attn_with_kvcache(torch.randn(2, 1, 4, 64), cache, cache.clone())
    with pytest.raises(ValueError, match=r"headdim=640"):
        flash_attn_with_kvcache(torch.randn(2, 1, 4, 640, dtype=torch.float16), cache, cache.clone())
    with pytest.raises(ValueError, match=r"nheads 128 a multiple of nheads_k of at most 64"):
        flash_attn_with_kvcache(torch.randn(2, 1, 128, 64, dtype=torch.float16), cache, cache.clone())

