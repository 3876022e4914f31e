"""The inference kernel (op_kernel/flash_attention_infer.cpp + its combine pass) through
npu_fused_infer_attention_score on the twin, against the float64 model (reference.fused_infer_reference) with the
FlashAttention criterion: decode and prefill over a cache, every layout, GQA/MQA, contiguous and paged caches (both
layouts, random permuted block tables), ragged key lengths (0 and non-multiples of the block), split and unsplit
keys, D = 64 ... 512, fp16 and bf16, the LSE, sparse modes 0-4 (bands per batch; decode ignores the mode). Inputs
are random and fresh each run; shapes are small (the twin)."""
import math

import pytest
import torch

from npu_flash_attn import last_launch_info, npu_fused_infer_attention_score
from npu_flash_attn.criterion import assert_close_fa
from npu_flash_attn.reference import fused_infer_lowprec, fused_infer_reference
from npu_flash_attn.twin_backend import set_infer_split_override


@pytest.fixture
def splits():
    """Forces the KV split count for one test (0 = the tiling's choice), restored afterwards."""
    yield set_infer_split_override
    set_infer_split_override(0)


def _check(q, k, v, **kw):
    out, lse = npu_fused_infer_attention_score(q, k, v, softmax_lse_flag=True, **kw)
    ref, ref_lse = fused_infer_reference(q, k, v, **kw)
    assert_close_fa(out, ref, fused_infer_lowprec(q, k, v, **kw))
    assert lse.dtype == torch.float32 and lse.shape == ref_lse.shape
    finite = torch.isfinite(ref_lse)
    assert bool((torch.isposinf(lse) == ~finite).all()), "rows without a key must have lse +inf, and only they"
    err = (lse.double()[finite] - ref_lse[finite]).abs()
    assert err.numel() == 0 or bool((err <= 1e-4 * (1 + ref_lse[finite].abs())).all()), err.max()
    return last_launch_info()


def _paged(b, n2, d, kv_lens, block_size, n_major, dtype, spare=3):
    """A paged cache holding the keys of `kv_lens` in randomly permuted blocks (plus unused ones), its table."""
    per = [max(1, (n + block_size - 1) // block_size) for n in kv_lens]
    blocks = sum(per) + spare
    shape = (blocks, n2, block_size, d) if n_major else (blocks, block_size, n2 * d)
    k, v = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
    perm = torch.randperm(blocks)
    table = torch.full((b, max(per) + 1), -1, dtype=torch.int32)  # a wider table than needed; unused entries -1
    start = 0
    for i, n in enumerate(per):
        table[i, :n] = perm[start:start + n].to(torch.int32)
        start += n
    return k, v, table


def _query(layout, b, n1, s1, d, dtype, q_lens=None):
    if layout == "BSH":
        return torch.randn(b, s1, n1 * d, dtype=dtype)
    if layout == "BSND":
        return torch.randn(b, s1, n1, d, dtype=dtype)
    if layout == "TND":
        return torch.randn(sum(q_lens), n1, d, dtype=dtype)
    return torch.randn(b, n1, s1, d, dtype=dtype)


@pytest.mark.parametrize("layout,n1,n2,dtype", [("BSH", 4, 4, torch.float16), ("BSND", 8, 2, torch.bfloat16),
                                                ("BNSD", 8, 1, torch.float16), ("TND", 16, 2, torch.bfloat16)])
def test_decode_contiguous_cache(layout, n1, n2, dtype):
    b, d, s2 = 3, 64, 150
    kv_lens = [150, 0, 77]
    if layout == "TND":
        q = _query(layout, b, n1, 1, d, dtype, [1] * b)
        k = torch.randn(sum(kv_lens), n2, d, dtype=dtype)
        v = torch.randn(sum(kv_lens), n2, d, dtype=dtype)
        kw = dict(actual_seq_lengths=[1, 2, 3], actual_seq_lengths_kv=torch.tensor(kv_lens).cumsum(0).tolist())
    else:
        q = _query(layout, b, n1, 1, d, dtype)
        shape = {"BSH": (b, s2, n2 * d), "BSND": (b, s2, n2, d), "BNSD": (b, n2, s2, d)}[layout]
        k, v = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
        kw = dict(actual_seq_lengths_kv=kv_lens)
    _check(q, k, v, num_heads=n1, num_key_value_heads=n2, input_layout=layout, scale=1 / math.sqrt(d), **kw)


@pytest.mark.parametrize("n_major,block_size,force", [(False, 16, 1), (True, 32, 3), (False, 64, 0), (True, 128, 2)])
def test_decode_paged(n_major, block_size, force, splits):
    splits(force)
    b, n1, n2, d, dtype = 4, 8, 2, 128, torch.bfloat16 if n_major else torch.float16
    kv_lens = [block_size * 2 + 5, 0, block_size, 3]
    k, v, table = _paged(b, n2, d, kv_lens, block_size, n_major, dtype)
    layout = "BNSD" if n_major else "BSH"
    q = _query(layout, b, n1, 1, d, dtype)
    info = _check(q, k, v, num_heads=n1, num_key_value_heads=n2, input_layout=layout, scale=0.1, block_table=table,
                  block_size=block_size, actual_seq_lengths_kv=kv_lens)
    assert info["splits"] == (force or info["splits"])
    if force > 1:
        assert info["combine_cores"] > 0


def test_split_chosen_when_few_units():
    """B * N2 below 0.4 x the cores: the tiling splits the keys (flash-decoding) and the combine pass runs."""
    b, n1, n2, d = 1, 4, 1, 64
    q = torch.randn(b, 1, n1 * d, dtype=torch.float16)
    k, v = torch.randn(b, 700, n2 * d, dtype=torch.float16), torch.randn(b, 700, n2 * d, dtype=torch.float16)
    info = _check(q, k, v, num_heads=n1, num_key_value_heads=n2, input_layout="BSH", scale=0.125)
    assert info["splits"] > 1 and info["combine_cores"] > 0


@pytest.mark.parametrize("layout,paged", [("BSND", False), ("BNSD", True), ("TND", True), ("BNSD_BSND", False)])
def test_prefill_causal_over_cache(layout, paged, splits):
    """S1 > 1 with sparse_mode 3: query token i of a batch sees keys j <= i + Skv - Sq; a batch with fewer keys than
    queries has rows without a key (output 0, lse +inf)."""
    b, n1, n2, d, dtype = 3, 4, 2, 64, torch.float16
    q_lens, kv_lens = [20, 7, 33], [45, 3, 160]
    s1, s2 = max(q_lens), max(kv_lens)
    kw = dict(num_heads=n1, num_key_value_heads=n2, input_layout=layout, scale=1 / math.sqrt(d), sparse_mode=3)
    q = _query(layout, b, n1, s1, d, dtype, q_lens)
    if layout == "TND":
        kw["actual_seq_lengths"] = torch.tensor(q_lens).cumsum(0).tolist()
    else:
        kw["actual_seq_lengths"] = q_lens
    if paged:
        k, v, table = _paged(b, n2, d, kv_lens, 32, True, dtype)
        kw.update(block_table=table, block_size=32, actual_seq_lengths_kv=kv_lens)
    else:
        shape = (b, s2, n2, d) if layout == "BSND" else (b, n2, s2, d)
        k, v = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
        kw["actual_seq_lengths_kv"] = kv_lens
    splits(2)
    _check(q, k, v, **kw)


def test_prefill_with_compressed_mask_and_many_rows():
    """More packed rows than one tile (group x Sq > 128) and the built-in's compressed causal mask."""
    b, n1, n2, d = 1, 8, 1, 64
    q = torch.randn(b, 40, n1, d, dtype=torch.bfloat16)
    k, v = torch.randn(b, 90, n1 // 8, d, dtype=torch.bfloat16), torch.randn(b, 90, 1, d, dtype=torch.bfloat16)
    mask = torch.ones(2048, 2048, dtype=torch.bool).triu(1)
    info = _check(q, k, v, num_heads=n1, num_key_value_heads=n2, input_layout="BSND", scale=0.125, sparse_mode=3,
                  atten_mask=mask)
    assert info["tasks"] >= 3


@pytest.mark.parametrize("mode,band,layout,paged,group,dtype,force", [
    (2, (None, None), "BSND", False, 4, torch.float16, 1),
    (2, (None, None), "TND", True, 8, torch.bfloat16, 2),
    (4, (30, 0), "BNSD", True, 1, torch.float16, 2),
    (4, (70, 5), "TND", False, 4, torch.bfloat16, 1),
    (4, (10, -3), "BSH", False, 8, torch.float16, 3),  # below the diagonal, narrower than a key step
    (4, (200, -40), "BNSD_BSND", True, 4, torch.bfloat16, 0),
    (4, (-5, 140), "BSND", True, 1, torch.float16, 2),  # above the diagonal: the first keys of a row hidden
])
def test_prefill_sparse_modes(mode, band, layout, paged, group, dtype, force, splits):
    """S1 > 1, ragged lengths, per batch: mode 2 (causal, top-left: query token i sees keys j <= i) and mode 4 (band:
    i + Skv - Sq - pre_tokens <= j <= i + Skv - Sq + next_tokens), with the compressed mask or none. The GQA rows of a
    token share its band; rows whose band misses every key get 0 and lse +inf."""
    b, n2, d = 3, 2 if group < 8 else 1, 64
    n1 = n2 * group
    q_lens, kv_lens = [20, 7, 33], [45, 3, 160]
    s1, s2 = max(q_lens), max(kv_lens)
    kw = dict(num_heads=n1, num_key_value_heads=n2, input_layout=layout, scale=1 / math.sqrt(d), sparse_mode=mode)
    if band[0] is not None:
        kw.update(pre_tokens=band[0], next_tokens=band[1])
    if force != 1:
        kw["atten_mask"] = torch.ones(1, 2048, 2048, dtype=torch.bool).triu(1)
    q = _query(layout, b, n1, s1, d, dtype, q_lens)
    kw["actual_seq_lengths"] = torch.tensor(q_lens).cumsum(0).tolist() if layout == "TND" else q_lens
    if paged:
        k, v, table = _paged(b, n2, d, kv_lens, 32, layout in ("BNSD", "BNSD_BSND", "TND"), dtype)
        kw.update(block_table=table, block_size=32, actual_seq_lengths_kv=kv_lens)
    elif layout == "TND":
        k, v = torch.randn(sum(kv_lens), n2, d, dtype=dtype), torch.randn(sum(kv_lens), n2, d, dtype=dtype)
        kw["actual_seq_lengths_kv"] = torch.tensor(kv_lens).cumsum(0).tolist()
    else:
        shape = {"BSH": (b, s2, n2 * d), "BSND": (b, s2, n2, d)}.get(layout, (b, n2, s2, d))
        k, v = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
        kw["actual_seq_lengths_kv"] = kv_lens
    splits(force)
    _check(q, k, v, **kw)


@pytest.mark.parametrize("mode,band", [(2, {}), (4, dict(pre_tokens=0, next_tokens=0)), (1, {})])
def test_decode_ignores_sparse_mode(mode, band):
    """With one query token the built-in ignores sparse_mode and pre/next: the row sees all its keys."""
    b, n1, n2, d = 2, 8, 2, 64
    k, v, table = _paged(b, n2, d, [77, 200], 64, False, torch.bfloat16)
    q = _query("BSH", b, n1, 1, d, torch.bfloat16)
    _check(q, k, v, num_heads=n1, num_key_value_heads=n2, input_layout="BSH", scale=0.125, sparse_mode=mode,
           block_table=table, block_size=64, actual_seq_lengths_kv=[77, 200], **band)


def test_tnd_mode0_without_mask_is_full_attention():
    """The built-in's silent failure: TND with sparse_mode 0 and no mask must attend by the scores, not average the
    values uniformly."""
    n1, n2, d = 4, 2, 64
    q_lens, kv_lens = [5, 9], [40, 130]
    q = torch.randn(sum(q_lens), n1, d, dtype=torch.float16) * 3
    k = torch.randn(sum(kv_lens), n2, d, dtype=torch.float16)
    v = torch.randn(sum(kv_lens), n2, d, dtype=torch.float16)
    kw = dict(num_heads=n1, num_key_value_heads=n2, input_layout="TND", scale=0.125, sparse_mode=0,
              actual_seq_lengths=[5, 14], actual_seq_lengths_kv=[40, 170])
    _check(q, k, v, **kw)
    out, _ = npu_fused_infer_attention_score(q, k, v, **kw)
    uniform = v[:40].double().mean(0).repeat_interleave(n1 // n2, 0)  # batch 0's key average per query head
    assert float((out[:5].double() - uniform).abs().max()) > 0.1


def _random_mask(shape, dtype, p=0.3):
    m = torch.rand(shape) < p
    return m if dtype == torch.bool else m.to(dtype) * (-3 if dtype == torch.int8 else 7)  # any nonzero masks


@pytest.mark.parametrize("shape,mode,band,mdtype", [
    ("B1SS", 1, None, torch.bool), ("BSS", 0, None, torch.uint8), ("1SS", 1, None, torch.int8),
    ("SS", 0, (5, 2), torch.bool), ("BNSS", 1, None, torch.bool), ("B11S", 0, None, torch.uint8),
    ("111S", 1, None, torch.bool), ("B1S1", 0, None, torch.bool), ("1N1S", 0, (40, 0), torch.int8),
])
@pytest.mark.parametrize("layout,paged,force", [("BNSD", True, 2), ("BSND", False, 1)])
def test_prefill_dense_mask_shapes(shape, mode, band, mdtype, layout, paged, force, splits):
    """A dense atten_mask (nonzero = masked) in every documented shape and broadcastable ones, read in place: row r
    of the packed GQA tile takes its query token's mask row (and its head's, for a per-head mask); mode 0 adds the
    band [i - pre_tokens, i + next_tokens]. Rows the mask hides entirely give 0 and lse +inf."""
    b, n1, n2, d, dtype = 2, 8, 2, 64, torch.bfloat16
    q_lens, kv_lens, s1 = [9, 4], [150, 70], 9
    s2 = 192 if paged else 160  # the mask's S2: the key dimension (paged: table columns x block_size)
    dims = {"B": b, "N": n1, "S": None, "1": 1}
    full = []
    for i, ch in enumerate(shape):
        full.append(dims[ch] if ch != "S" else (s1 if i < len(shape) - 1 else s2))
    mask = _random_mask(tuple(full), mdtype)
    if shape == "B1S1":
        mask[0, 0, 2] = 1  # a query row hidden entirely
    kw = dict(num_heads=n1, num_key_value_heads=n2, input_layout=layout, scale=0.125, sparse_mode=mode,
              atten_mask=mask, actual_seq_lengths=q_lens, actual_seq_lengths_kv=kv_lens)
    if band is not None:
        kw.update(pre_tokens=band[0], next_tokens=band[1])
    q = _query(layout, b, n1, s1, d, dtype)
    if paged:
        k, v, table = _paged(b, n2, d, kv_lens, 64, True, dtype)
        table = table[:, :3]
        kw.update(block_table=table, block_size=64)
    else:
        k, v = torch.randn(b, s2, n2, d, dtype=dtype), torch.randn(b, s2, n2, d, dtype=dtype)
    splits(force)
    _check(q, k, v, **kw)


@pytest.mark.parametrize("group,force,cols", [(8, 3, 700), (1, 1, 1100), (4, 0, 600)])
def test_decode_key_padding_masks(group, force, cols, splits):
    """Decode over a paged cache with a [B, 1, 1, S2] key-padding mask and a [1, 1, 1, S] one wider than 512 columns
    (the built-in ignores the latter past 512: ours applies every column)."""
    b, n2, d, dtype = 3, 2, 128, torch.float16
    n1 = n2 * group
    kv_lens = [cols - 5, 37, cols]
    k, v, table = _paged(b, n2, d, kv_lens, 128, False, dtype)
    pages = -(-cols // 128)
    table = table[:, :pages]
    s2 = pages * 128
    q = _query("BSND", b, n1, 1, d, dtype)
    kw = dict(num_heads=n1, num_key_value_heads=n2, input_layout="BSND", scale=0.09, block_table=table,
              block_size=128, actual_seq_lengths_kv=kv_lens)
    splits(force)
    pad = torch.zeros(b, 1, 1, s2, dtype=torch.bool)
    pad[0, ..., 520:] = True  # past 512
    pad[1, ..., :30] = True
    _check(q, k, v, atten_mask=pad, **kw)
    wide = torch.zeros(1, 1, 1, s2, dtype=torch.uint8)
    wide[..., 513:cols - 40] = 1
    _check(q, k, v, atten_mask=wide, **kw)
    out, _ = npu_fused_infer_attention_score(q, k, v, atten_mask=wide, **kw)
    unmasked, _ = npu_fused_infer_attention_score(q, k, v, **kw)
    assert float((out[0].double() - unmasked[0].double()).abs().max()) > 1e-3


@pytest.mark.parametrize("global_positions", [False, True])
def test_tnd_dense_mask(global_positions, splits):
    """TND: a 2-D mask read at the positions inside each sequence, or at global token positions ([sum Sq, sum Skv])."""
    n1, n2, d, dtype = 4, 1, 64, torch.float16
    q_lens, kv_lens = [6, 11, 3], [50, 140, 9]
    q = torch.randn(sum(q_lens), n1, d, dtype=dtype)
    k, v = torch.randn(sum(kv_lens), n2, d, dtype=dtype), torch.randn(sum(kv_lens), n2, d, dtype=dtype)
    shape = (sum(q_lens), sum(kv_lens)) if global_positions else (12, 150)
    mask = _random_mask(shape, torch.bool)
    splits(2)
    _check(q, k, v, num_heads=n1, num_key_value_heads=n2, input_layout="TND", scale=0.125, sparse_mode=1,
           atten_mask=mask, actual_seq_lengths=torch.tensor(q_lens).cumsum(0).tolist(),
           actual_seq_lengths_kv=torch.tensor(kv_lens).cumsum(0).tolist())


def test_strided_mask_read_in_place():
    """An expanded (stride-0) and a sliced mask: read through their strides, no copy needed for the result."""
    b, n1, n2, d, dtype = 2, 4, 4, 64, torch.bfloat16
    q = torch.randn(b, n1, 7, d, dtype=dtype)
    k, v = torch.randn(b, n2, 90, d, dtype=dtype), torch.randn(b, n2, 90, d, dtype=dtype)
    kw = dict(num_heads=n1, num_key_value_heads=n2, input_layout="BNSD", scale=0.125, sparse_mode=1)
    row = _random_mask((b, 1, 1, 90), torch.bool)
    _check(q, k, v, atten_mask=row.expand(b, n1, 7, 90), **kw)
    big = _random_mask((b, 2, 10, 200), torch.bool)
    _check(q, k, v, atten_mask=big[:, :1, 2:9, 5:95], **kw)


@pytest.mark.parametrize("d,dtype", [(256, torch.float16), (512, torch.bfloat16), (72, torch.float16)])
def test_head_dims(d, dtype, splits):
    b, n1, n2 = 2, 4, 2
    kv_lens = [90, 33]
    k, v, table = _paged(b, n2, d, kv_lens, 16, True, dtype)
    q = _query("BNSD", b, n1, 1, d, dtype)
    splits(2)
    _check(q, k, v, num_heads=n1, num_key_value_heads=n2, input_layout="BNSD", scale=1 / math.sqrt(d),
           block_table=table, block_size=16, actual_seq_lengths_kv=kv_lens)


def test_lse_flag_off_and_empty_keys():
    q = torch.randn(2, 1, 4 * 64, dtype=torch.float16)
    k, v = torch.randn(2, 0, 64, dtype=torch.float16), torch.randn(2, 0, 64, dtype=torch.float16)
    out, lse = npu_fused_infer_attention_score(q, k, v, num_heads=4, num_key_value_heads=1)
    assert out.shape == q.shape and bool((out == 0).all())
    assert lse.shape == (1,) and lse.dtype == torch.float32 and float(lse[0]) == 0.0


@pytest.mark.parametrize("force", [1, 2])
def test_more_tasks_than_cores(force, splits):
    """32 (batch, KV head) units on 24 cores: a core runs several tasks back to back, some of one step and some
    without keys, so steps of one task are still in flight when the next starts."""
    splits(force)
    b, n1, n2, d, dtype = 8, 8, 4, 64, torch.float16
    kv_lens = [5, 0, 300, 130, 1, 64, 0, 257]
    k, v, table = _paged(b, n2, d, kv_lens, 64, False, dtype)
    q = _query("BSND", b, n1, 1, d, dtype)
    info = _check(q, k, v, num_heads=n1, num_key_value_heads=n2, input_layout="BSND", scale=0.125, block_table=table,
                  block_size=64, actual_seq_lengths_kv=kv_lens)
    assert info["tasks"] > info["block_dim"]
