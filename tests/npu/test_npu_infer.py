"""npu_fused_infer_attention_score and flash_attn_with_kvcache on NPU tensors (the inference adapter and the CANN
operators FlashAttentionNpuFaInfer / ...Combine; not yet run on hardware): decode and prefill over contiguous and
paged caches (both layouts), GQA, split and unsplit keys, a dense mask, pse_shift, an int8 cache, flash_attn's
window, softcap and ALiBi, the LSE, judged on the CPU against the float64 model with the FlashAttention criterion,
as tests/test_infer_kernel.py, test_infer_prologue.py and test_infer_int8.py judge the twin."""
from __future__ import annotations

import math

import pytest
import torch

from npu_env import npu_kwargs, requires_npu, to_cpu, to_npu
from npu_flash_attn import flash_attn_with_kvcache, npu_fused_infer_attention_score
from npu_flash_attn.criterion import assert_close_fa
from npu_flash_attn.reference import fused_infer_lowprec, fused_infer_reference
from test_infer_int8 import _paged_int8, _params
from test_infer_kernel import _paged, _query

pytestmark = requires_npu


def check_on_npu(q, k, v, mask=None, table=None, **kw):
    out, lse = to_cpu(*npu_fused_infer_attention_score(*to_npu(q, k, v), atten_mask=to_npu(mask)[0],
                                                        block_table=to_npu(table)[0], softmax_lse_flag=True,
                                                        **npu_kwargs(kw)))
    ref_kw = dict(kw, atten_mask=mask, block_table=table)
    ref, ref_lse = fused_infer_reference(q, k, v, **ref_kw)
    assert_close_fa(out, ref, fused_infer_lowprec(q, k, v, **ref_kw), what="attention_out (NPU)")
    finite = torch.isfinite(ref_lse)
    assert bool((torch.isposinf(lse) == ~finite).all()), "rows without a key must have lse +inf, and only they"
    assert bool(((lse.double() - ref_lse)[finite].abs() <= 1e-4 * (1 + ref_lse[finite].abs())).all())


@pytest.mark.parametrize("layout,n1,n2,dtype", [("BSH", 8, 2, torch.float16), ("BSND", 8, 1, torch.bfloat16),
                                                ("TND", 16, 2, torch.bfloat16)])
@pytest.mark.parametrize("batch", [1, 24])  # one sequence splits its keys (combine pass), 24 do not
def test_decode_paged(layout, n1, n2, dtype, batch):
    d, block_size = 128, 128
    kv_lens = [int(x) for x in torch.randint(0, 3000, (batch,))]
    k, v, table = _paged(batch, n2, d, kv_lens, block_size, n_major=False, dtype=dtype)
    q = _query(layout, batch, n1, 1, d, dtype, q_lens=[1] * batch)
    extra = dict(actual_seq_lengths=list(range(1, batch + 1))) if layout == "TND" else {}
    check_on_npu(q, k, v, table=table, num_heads=n1, num_key_value_heads=n2, input_layout=layout,
                 scale=1 / math.sqrt(d), block_size=block_size, actual_seq_lengths_kv=kv_lens, **extra)


@pytest.mark.parametrize("n_major", [False, True])
def test_prefill_causal_over_paged_cache(n_major):
    b, n1, n2, d, s1, block_size = 3, 8, 2, 64, 37, 64
    kv_lens = [s1 + 5, s1 + 300, s1]
    k, v, table = _paged(b, n2, d, kv_lens, block_size, n_major=n_major, dtype=torch.float16)
    q = _query("BNSD", b, n1, s1, d, torch.float16)
    check_on_npu(q, k, v, table=table, num_heads=n1, num_key_value_heads=n2, input_layout="BNSD",
                 scale=1 / math.sqrt(d), block_size=block_size, actual_seq_lengths_kv=kv_lens, sparse_mode=3)


def test_dense_mask_contiguous_cache():
    b, n1, n2, d, s1, s2 = 2, 4, 4, 64, 9, 200
    q = _query("BSND", b, n1, s1, d, torch.float16)
    k, v = torch.randn(2, b, s2, n2, d, dtype=torch.float16)
    mask = torch.rand(b, 1, s1, s2) > 0.7
    check_on_npu(q, k, v, mask=mask, num_heads=n1, num_key_value_heads=n2, input_layout="BSND",
                 scale=1 / math.sqrt(d), sparse_mode=1)


def test_pse_shift_prefill_causal():
    b, n1, n2, d, s1, s2 = 2, 8, 2, 64, 7, 300
    q = _query("BSND", b, n1, s1, d, torch.bfloat16)
    k, v = torch.randn(2, b, s2, n2, d, dtype=torch.bfloat16)
    pse = torch.randn(1, n1, s1 + 3, s2 + 5, dtype=torch.bfloat16) * 2  # wider than needed: the padding is not read
    check_on_npu(q, k, v, pse_shift=pse, num_heads=n1, num_key_value_heads=n2, input_layout="BSND",
                 scale=1 / math.sqrt(d), sparse_mode=3, actual_seq_lengths_kv=[s2, 150])


@pytest.mark.parametrize("batch", [1, 24])
def test_int8_paged_cache_key_per_channel_value_per_token(batch):
    n1, n2, d, block_size = 8, 2, 128, 64
    kv_lens = [int(x) for x in torch.randint(0, 3000, (batch,))]
    k, v, table = _paged_int8(batch, n2, d, kv_lens, block_size, n_major=False)
    q = _query("BSH", batch, n1, 1, d, torch.float16)
    ks, ko = _params(0, 1, n2, d, batch, max(kv_lens) + 1, torch.float16, shape=(1, n2 * d))
    vs, vo = _params(1, 1, n2, d, batch, max(kv_lens) + 1, torch.float16)
    check_on_npu(q, k, v, table=table, num_heads=n1, num_key_value_heads=n2, input_layout="BSH",
                 scale=1 / math.sqrt(d), block_size=block_size, actual_seq_lengths_kv=kv_lens,
                 key_antiquant_scale=ks, key_antiquant_offset=ko, value_antiquant_scale=vs, value_antiquant_offset=vo,
                 value_antiquant_mode=1)


def test_kvcache_window_softcap_alibi_match_the_twin():
    b, n1, n2, d, page, blocks = 2, 8, 2, 64, 128, 8
    k_pages, v_pages = torch.randn(2, blocks, page, n2, d, dtype=torch.float16)
    table = torch.tensor([[5, 2], [7, 0]], dtype=torch.int32)
    seqlens = torch.tensor([200, 12], dtype=torch.int32)
    q = torch.randn(b, 1, n1, d, dtype=torch.float16)
    kw = dict(cache_seqlens=seqlens, block_table=table, causal=True, window_size=(50, -1), softcap=8.0,
              alibi_slopes=torch.rand(b, n1) * 0.3)
    want = flash_attn_with_kvcache(q, k_pages, v_pages, **kw)
    got = flash_attn_with_kvcache(*to_npu(q, k_pages, v_pages), **npu_kwargs(kw))
    assert (got.cpu().float() - want.float()).abs().max() <= 2e-2


def test_kvcache_append_matches_the_twin():
    """flash_attn_with_kvcache's in-place append and attention on NPU tensors == the same call on the twin."""
    b, n1, n2, d, page, blocks = 2, 8, 2, 64, 128, 8
    k_pages, v_pages = torch.randn(2, blocks, page, n2, d, dtype=torch.bfloat16)
    table = torch.tensor([[5, 2], [7, 0]], dtype=torch.int32)
    seqlens = torch.tensor([130, 12], dtype=torch.int32)
    q, k1, v1 = torch.randn(b, 1, n1, d, dtype=torch.bfloat16), *torch.randn(2, b, 1, n2, d, dtype=torch.bfloat16)
    cpu = [t.clone() for t in (k_pages, v_pages)]
    want = flash_attn_with_kvcache(q, *cpu, k=k1, v=v1, cache_seqlens=seqlens, block_table=table, causal=True)
    dev = to_npu(k_pages, v_pages)
    got = flash_attn_with_kvcache(*to_npu(q), *dev, k=k1.to(dev[0].device), v=v1.to(dev[0].device),
                                  cache_seqlens=seqlens.to(dev[0].device), block_table=table.to(dev[0].device),
                                  causal=True)
    assert torch.equal(dev[0].cpu(), cpu[0]) and torch.equal(dev[1].cpu(), cpu[1])
    assert (got.cpu().float() - want.float()).abs().max() <= 2e-2
