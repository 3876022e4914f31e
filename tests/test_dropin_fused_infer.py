"""npu_fused_infer_attention_score's surface: torch_npu 2.14's keyword names and defaults, the arguments of later
stages refused by name (NotImplementedError), and bad input refused with a message naming the argument, the value
and the rule."""
import inspect
import math

import pytest
import torch

from npu_flash_attn import npu_fused_infer_attention_score as fia

# torch_npu 2.14's schema (torch_npu/_op_plugin_docs.py), keyword arguments in order with their defaults.
TORCH_NPU_KEYWORDS = [
    ("pse_shift", None), ("atten_mask", None), ("actual_seq_lengths", None), ("actual_seq_lengths_kv", None),
    ("dequant_scale1", None), ("quant_scale1", None), ("dequant_scale2", None), ("quant_scale2", None),
    ("quant_offset2", None), ("antiquant_scale", None), ("antiquant_offset", None), ("block_table", None),
    ("query_padding_size", None), ("kv_padding_size", None), ("key_antiquant_scale", None),
    ("key_antiquant_offset", None), ("value_antiquant_scale", None), ("value_antiquant_offset", None),
    ("key_shared_prefix", None), ("value_shared_prefix", None), ("actual_shared_prefix_len", None),
    ("query_rope", None), ("key_rope", None), ("key_rope_antiquant_scale", None), ("num_heads", 1), ("scale", 1.0),
    ("pre_tokens", 2147483647), ("next_tokens", 2147483647), ("input_layout", "BSH"), ("num_key_value_heads", 0),
    ("sparse_mode", 0), ("inner_precise", 0), ("block_size", 0), ("antiquant_mode", 0), ("softmax_lse_flag", False),
    ("key_antiquant_mode", 0), ("value_antiquant_mode", 0)]


def test_signature_matches_torch_npu():
    params = list(inspect.signature(fia).parameters.values())
    assert [p.name for p in params[:3]] == ["query", "key", "value"]
    assert all(p.kind == p.POSITIONAL_OR_KEYWORD for p in params[:3])
    assert [(p.name, p.default) for p in params[3:]] == TORCH_NPU_KEYWORDS
    assert all(p.kind == p.KEYWORD_ONLY for p in params[3:])


def _decode(layout="BNSD", dtype=torch.float16):
    q = torch.randn(2, 4, 1, 64, dtype=dtype)
    k = torch.randn(2, 2, 40, 64, dtype=dtype)
    return q, k, k.clone()


def test_default_call_bsh_matches_reference():
    from npu_flash_attn.criterion import assert_close_fa
    from npu_flash_attn.reference import fused_infer_lowprec, fused_infer_reference
    q = torch.randn(2, 3, 64, dtype=torch.float16)  # BSH, num_heads=1 by default
    k, v = torch.randn(2, 50, 64, dtype=torch.float16), torch.randn(2, 50, 64, dtype=torch.float16)
    out, lse = fia(q, k, v)
    assert lse.shape == (1,)
    assert_close_fa(out, fused_infer_reference(q, k, v, num_heads=1)[0], fused_infer_lowprec(q, k, v, num_heads=1))


@pytest.mark.parametrize("name", ["dequant_scale1", "quant_scale2", "key_shared_prefix", "query_rope",
                                  "query_padding_size", "kv_padding_size"])
def test_later_stage_tensors_refused_by_name(name):
    q, k, v = _decode()
    with pytest.raises(NotImplementedError, match=name):
        fia(q, k, v, num_heads=4, num_key_value_heads=2, input_layout="BNSD", **{name: torch.ones(1)})


@pytest.mark.parametrize("name", ["antiquant_mode", "key_antiquant_mode", "value_antiquant_mode"])
def test_antiquant_modes_need_an_int8_cache(name):
    q, k, v = _decode()
    with pytest.raises(ValueError, match=f"{name}=1 needs an int8 cache"):
        fia(q, k, v, num_heads=4, num_key_value_heads=2, input_layout="BNSD", **{name: 1})


@pytest.mark.parametrize("kw,exc,pattern", [
    (dict(input_layout="SBH"), ValueError, r"input_layout='SBH'"),
    (dict(num_heads=3), ValueError, r"num_heads=3"),
    (dict(num_key_value_heads=3), ValueError, r"num_key_value_heads=3"),
    (dict(sparse_mode=2, num_heads=4, num_key_value_heads=2), None, None),  # one query token: the mode is ignored
    (dict(sparse_mode=7), ValueError, r"sparse_mode=7"),
    (dict(inner_precise=5), ValueError, r"inner_precise=5"),
    (dict(block_size=16), ValueError, r"block_size=16 is only valid with block_table"),
    (dict(actual_seq_lengths_kv=[41, 3]), ValueError, r"actual_seq_lengths_kv\[0\]=41 must be in \[0, key S=40\]"),
    (dict(actual_seq_lengths_kv=[1, 2, 3][:0]), ValueError, r"actual_seq_lengths_kv has 0 values"),
    (dict(scale=math.inf), ValueError, r"scale=inf"),
    (dict(scale="x"), TypeError, r"scale must be a float"),
])
def test_argument_errors(kw, exc, pattern):
    q, k, v = _decode()
    args = dict(num_heads=4, num_key_value_heads=2, input_layout="BNSD")
    args.update(kw)
    if exc is None:
        fia(q, k, v, **args)
        return
    with pytest.raises(exc, match=pattern):
        fia(q, k, v, **args)


def test_dense_mask_errors():
    q = torch.randn(1, 4, 3, 64, dtype=torch.float16)
    k = torch.randn(1, 4, 40, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"sparse_mode=1 \(all mask\) requires atten_mask"):
        fia(q, k, k, num_heads=4, input_layout="BNSD", sparse_mode=1)
    with pytest.raises(ValueError, match=r"atten_mask shape \(3, 41\) is not broadcastable to \[B, N1, S1, S2\] = "
                                         r"\[1, 4, 3, 40\]"):
        fia(q, k, k, num_heads=4, input_layout="BNSD", atten_mask=torch.zeros(3, 41, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"atten_mask shape \(2, 1, 3, 40\) is not broadcastable"):
        fia(q, k, k, num_heads=4, input_layout="BNSD", sparse_mode=1, atten_mask=torch.zeros(2, 1, 3, 40, dtype=torch.bool))
    with pytest.raises(TypeError, match=r"atten_mask dtype torch.float16 is not supported; use torch.bool, torch.int8"):
        fia(q, k, k, num_heads=4, input_layout="BNSD", atten_mask=torch.zeros(3, 40, dtype=torch.float16))
    with pytest.raises(ValueError, match=r"sparse_mode=0: pre_tokens=-2 and next_tokens=-1 are both negative"):
        fia(q, k, k, num_heads=4, input_layout="BNSD", atten_mask=torch.zeros(3, 40, dtype=torch.bool), pre_tokens=-2,
            next_tokens=-1)


@pytest.mark.parametrize("mode", [2, 3, 4])
def test_compressed_mask_errors(mode):
    q = torch.randn(1, 4, 3, 64, dtype=torch.float16)
    k = torch.randn(1, 4, 40, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match=rf"atten_mask of sparse_mode={mode} must be the compressed causal mask of "
                                         r"shape \(2048, 2048\).*got shape \(3, 40\)"):
        fia(q, k, k, num_heads=4, input_layout="BNSD", sparse_mode=mode, atten_mask=torch.zeros(3, 40, dtype=torch.bool))
    wrong = torch.ones(1, 2048, 2048, dtype=torch.bool).tril()  # the right shape, the wrong triangle
    with pytest.raises(ValueError, match=rf"atten_mask for sparse_mode={mode} must equal"):
        fia(q, k, k, num_heads=4, input_layout="BNSD", sparse_mode=mode, atten_mask=wrong)


def test_band_mode_errors():
    q = torch.randn(1, 4, 3, 64, dtype=torch.float16)
    k = torch.randn(1, 4, 40, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"sparse_mode=4: pre_tokens=-5 \+ next_tokens=2 < 0"):
        fia(q, k, k, num_heads=4, input_layout="BNSD", sparse_mode=4, pre_tokens=-5, next_tokens=2)
    with pytest.raises(ValueError, match=r"sparse_mode=4: the band .* pre_tokens=-3, next_tokens=10 misses"):
        fia(q, k, k, num_heads=4, input_layout="BNSD", sparse_mode=4, pre_tokens=-3, next_tokens=10)


def test_dtype_errors():
    q, k, v = _decode()
    with pytest.raises(ValueError, match=r"an int8 key/value cache needs antiquant_scale"):
        fia(q, k.to(torch.int8), v.to(torch.int8), num_heads=4, num_key_value_heads=2, input_layout="BNSD")
    with pytest.raises(TypeError, match=r"query dtype torch.float32"):
        fia(q.float(), k.float(), v.float(), num_heads=4, num_key_value_heads=2, input_layout="BNSD")
    with pytest.raises(TypeError, match=r"value dtype torch.bfloat16 must be the query dtype torch.float16"):
        fia(q, k, v.bfloat16(), num_heads=4, num_key_value_heads=2, input_layout="BNSD")


def _paged_args(block_size=16, pages=3, kv_lens=(40, 20)):
    q = torch.randn(2, 1, 4 * 64, dtype=torch.float16)
    cache = torch.randn(8, block_size, 2 * 64, dtype=torch.float16)
    table = torch.arange(2 * pages, dtype=torch.int32).reshape(2, pages)
    return q, cache, dict(num_heads=4, num_key_value_heads=2, block_table=table, block_size=block_size,
                          actual_seq_lengths_kv=list(kv_lens))


@pytest.mark.parametrize("change,exc,pattern", [
    (dict(block_size=24), ValueError, r"block_size=24 must be a multiple of 16"),
    (dict(block_size=32), ValueError, r"block_size=32 must equal the cache's block size 16"),
    (dict(actual_seq_lengths_kv=None), ValueError, r"actual_seq_lengths_kv is required with block_table"),
    (dict(block_table=torch.zeros(2, 2, dtype=torch.int32)), ValueError,
     r"block_table has 2 columns but batch 0 needs 3 blocks \(actual_seq_lengths_kv=40, block_size=16\)"),
    (dict(block_table=torch.zeros(2, 3, dtype=torch.int64)), TypeError, r"block_table dtype torch.int64"),
    (dict(block_table=torch.tensor([[0, 1, 9], [3, 4, 5]], dtype=torch.int32)), ValueError,
     r"block_table\[0, 2\]=9 must name a block of the cache, in \[0, 8\)"),
])
def test_paged_errors(change, exc, pattern):
    q, cache, kw = _paged_args()
    kw.update(change)
    with pytest.raises(exc, match=pattern):
        fia(q, cache, cache.clone(), **kw)


def test_n_major_cache_needs_bnsd_or_tnd():
    q = torch.randn(2, 1, 4 * 64, dtype=torch.float16)
    cache = torch.randn(8, 2, 16, 64, dtype=torch.float16)
    table = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    with pytest.raises(ValueError, match=r"\(blocks, N, block_size, D\) cache needs input_layout 'BNSD'"):
        fia(q, cache, cache, num_heads=4, num_key_value_heads=2, block_table=table, block_size=16,
            actual_seq_lengths_kv=[40, 20])


def test_tnd_needs_actual_seq_lengths():
    q = torch.randn(5, 4, 64, dtype=torch.float16)
    k = torch.randn(9, 4, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"actual_seq_lengths is required for input_layout='TND'"):
        fia(q, k, k, num_heads=4, input_layout="TND")
    with pytest.raises(ValueError, match=r"actual_seq_lengths_kv is required for input_layout='TND'"):
        fia(q, k, k, num_heads=4, input_layout="TND", actual_seq_lengths=[2, 5])
    with pytest.raises(ValueError, match=r"actual_seq_lengths must be cumulative"):
        fia(q, k, k, num_heads=4, input_layout="TND", actual_seq_lengths=[3, 2], actual_seq_lengths_kv=[4, 9])


def test_high_performance_bit_is_accepted_and_keeps_float32_scores(gen):
    """inner_precise 1 and 3 (vLLM-ascend passes 1) run as 0 and 2: the same output, bit for bit."""
    q, k, v = (torch.randn(2, 4, 1, 64, generator=gen).half(), torch.randn(2, 2, 70, 64, generator=gen).half(),
               torch.randn(2, 2, 70, 64, generator=gen).half())
    kw = dict(num_heads=4, num_key_value_heads=2, input_layout="BNSD", scale=0.125, softmax_lse_flag=True)
    for hp, plain in ((1, 0), (3, 2)):
        a, b = fia(q, k, v, inner_precise=hp, **kw), fia(q, k, v, inner_precise=plain, **kw)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
