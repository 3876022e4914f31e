"""Forward with every attention mask: dense masks of any broadcastable shape (read in place), sparse modes 0-8,
prefix, TND masks, block skipping (tiles counted through the twin trace), the block-map cache, and the mask
error rules. Every result is checked against the float64 reference with the FlashAttention criterion."""
from __future__ import annotations

import math

import pytest
import torch

import npu_flash_attn
from npu_flash_attn import problem, twin_backend
from npu_flash_attn.masks import compressed_causal_mask, compressed_prefix_mask
from test_fa_forward import make_qkv, run_and_check

op = torch.ops.npu.flash_attention
F16, BF16 = torch.float16, torch.bfloat16


def rand_mask(gen, shape, p=0.5):
    return torch.rand(shape, generator=gen) < p


def holes(m, gen):
    """Adds fully masked rows, columns and a fully masked 64x128-aligned tile to a [.., S1, S2] mask (in place)."""
    s1, s2 = m.shape[-2], m.shape[-1]
    if s1 > 1:
        m[..., int(torch.randint(0, s1, (1,), generator=gen)), :] = True
    if s2 > 1:
        m[..., :, int(torch.randint(0, s2, (1,), generator=gen))] = True
    if s1 > 64 and s2 > 128:
        m[..., 64:, :128] = True
    return m


# ---------------------------------------------------------------------------------------------------------------
# dense masks of every shape
# ---------------------------------------------------------------------------------------------------------------
B, N1, N2, S1, S2 = 2, 4, 2, 150, 200
SHAPES = {"BNSS": (B, N1, S1, S2), "B1SS": (B, 1, S1, S2), "11SS": (1, 1, S1, S2), "SS": (S1, S2),
          "key_pad": (B, 1, 1, S2), "query_pad": (B, 1, S1, 1), "per_head": (1, N1, S1, S2), "N1S": (N1, 1, S2),
          "row": (S2,), "B111": (B, 1, 1, 1), "scalar": ()}


@pytest.mark.parametrize("name", list(SHAPES))
def test_dense_mask_shapes(gen, name):
    shape = SHAPES[name]
    m = holes(rand_mask(gen, shape, 0.4), gen) if len(shape) > 1 and shape[-1] > 1 else rand_mask(gen, shape, 0.4)
    layouts = ["BSND", "BNSD", "BSH", "SBH"]
    layout = layouts[list(SHAPES).index(name) % 4]
    dtype = (F16, BF16)[list(SHAPES).index(name) % 2]
    q, k, v = make_qkv(gen, layout, B, N1, N2, S1, S2, 64, 64, dtype)
    for mode, mask in ((1, m), (0, m.to(torch.uint8))):
        run_and_check(q, k, v, N1, layout, scale=0.125, sparse_mode=mode, atten_mask=mask, label=f"{name} mode {mode}")


def test_mask_read_through_strides_without_expansion(gen):
    # an expand()ed or transposed mask is read as given: the kernel's view shares the caller's storage when the last
    # dimension is contiguous, and copies at most the unbroadcast mask otherwise
    q, k, v = make_qkv(gen, "BNSD", B, N1, N2, S1, S2, 64, 64, F16)
    base = rand_mask(gen, (B, 1, 1, S2))
    expanded = base.expand(B, N1, S1, S2)
    p = problem.validate_flash_attention(q, k, v, N1, "BNSD", atten_mask=expanded, sparse_mode=1)
    view, fields = twin_backend.kernel_mask(p, expanded), p.mask_view
    assert view.data_ptr() == base.data_ptr() and view.numel() == B * S2
    assert tuple(fields[n] for n in ("stride_n", "stride_s", "col_step", "per_batch", "per_head")) == \
        (0, 0, 1, True, False)
    t = rand_mask(gen, (S2, S1)).t()  # [S1, S2] with a strided last dimension
    p = problem.validate_flash_attention(q, k, v, N1, "BNSD", atten_mask=t, sparse_mode=1)
    assert twin_backend.kernel_mask(p, t).numel() == S1 * S2 and p.mask_view["stride_s"] == S2
    for mask in (expanded, t):
        run_and_check(q, k, v, N1, "BNSD", scale=0.125, sparse_mode=1, atten_mask=mask)


def test_key_padding_ragged_lengths(gen):
    lens = [0, S2, 1, 77, 128]
    b = len(lens)
    keep = torch.arange(S2).view(1, S2) < torch.tensor(lens).view(b, 1)
    m = (~keep).view(b, 1, 1, S2)
    q, k, v = make_qkv(gen, "BSND", b, N1, N2, S1, S2, 128, 128, BF16)
    r = run_and_check(q, k, v, N1, "BSND", scale=0.09, sparse_mode=1, atten_mask=m)
    assert r["invalid_rows"] == N1 * S1  # the zero-length batch: every row invalid, output 0, no NaN


def test_query_padding_and_band_with_mask(gen):
    q, k, v = make_qkv(gen, "BNSD", B, N1, N2, S1, S2, 64, 64, F16)
    qpad = (torch.arange(S1).view(1, 1, S1, 1) >= torch.tensor([100, 150]).view(B, 1, 1, 1))
    run_and_check(q, k, v, N1, "BNSD", scale=0.125, sparse_mode=1, atten_mask=qpad)
    m = rand_mask(gen, (B, 1, S1, S2), 0.3)
    for pre, nxt in ((S1, 0), (40, 10), (60, -20), (-30, 90), (2147483647, 2147483647)):
        run_and_check(q, k, v, N1, "BNSD", scale=0.125, sparse_mode=0, atten_mask=m, pre_tokens=pre, next_tokens=nxt,
                      label=f"pre {pre} next {nxt}")


# ---------------------------------------------------------------------------------------------------------------
# prefix (modes 5, 6)
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("s1,s2", [(150, 200), (200, 130)])
def test_prefix_modes_at_range_limits(gen, s1, s2):
    lo = 0 if s1 > s2 else s2 - s1
    b = 3
    prefix = [lo, s2, (lo + s2) // 2 + 1]
    q, k, v = make_qkv(gen, "BSND", b, N1, N2, s1, s2, 64, 64, BF16)
    i = torch.arange(s1).view(s1, 1)
    j = torch.arange(s2).view(1, s2)
    full = torch.stack([~((j <= i + s2 - s1) | (j < p)) for p in prefix]).unsqueeze(1)  # the built-in's mode-5 mask
    extra = full | rand_mask(gen, (b, 1, s1, s2), 0.2)  # any mask: visible = mask == 0 and (causal or prefix)
    for mask in (full, extra):
        run_and_check(q, k, v, N1, "BSND", scale=0.125, sparse_mode=5, atten_mask=mask, prefix=prefix)
    for mask in (None, compressed_prefix_mask()):
        run_and_check(q, k, v, N1, "BSND", scale=0.125, sparse_mode=6, atten_mask=mask, prefix=prefix)


def test_prefix_tnd(gen):
    q_lens, kv_lens = [30, 0, 170, 64], [90, 20, 150, 64]
    cu = lambda ls: [sum(ls[:i + 1]) for i in range(len(ls))]  # noqa: E731
    q, k, v = make_qkv(gen, "TND", 0, N1, N2, 0, 0, 64, 64, F16, q_lens=q_lens, kv_lens=kv_lens)
    prefix = [60, 20, 0, 64]
    run_and_check(q, k, v, N1, "TND", scale=0.125, sparse_mode=6, prefix=prefix, actual_seq_qlen=cu(q_lens),
                  actual_seq_kvlen=cu(kv_lens), atten_mask=compressed_prefix_mask(torch.uint8))


# ---------------------------------------------------------------------------------------------------------------
# TND: masks and the context-parallel modes 7 / 8
# ---------------------------------------------------------------------------------------------------------------
def test_tnd_dense_masks_local_and_global(gen):
    q_lens, kv_lens = [70, 0, 140, 1], [130, 40, 90, 200]
    cu = lambda ls: [sum(ls[:i + 1]) for i in range(len(ls))]  # noqa: E731
    q, k, v = make_qkv(gen, "TND", 0, N1, N2, 0, 0, 96, 64, BF16, q_lens=q_lens, kv_lens=kv_lens, pad=(5, 3))
    kw = dict(actual_seq_qlen=cu(q_lens), actual_seq_kvlen=cu(kv_lens), scale=0.1)
    local = holes(rand_mask(gen, (150, 210), 0.3), gen)
    run_and_check(q, k, v, N1, "TND", sparse_mode=1, atten_mask=local, **kw)
    run_and_check(q, k, v, N1, "TND", sparse_mode=0, atten_mask=local, pre_tokens=50, next_tokens=5, **kw)
    glob = rand_mask(gen, (sum(q_lens), sum(kv_lens)), 0.3)
    p = problem.validate_flash_attention(q, k, v, N1, "TND", atten_mask=glob, sparse_mode=1, **kw)
    assert p.mask_tnd_global
    run_and_check(q, k, v, N1, "TND", sparse_mode=1, atten_mask=glob, **kw)


def test_tnd_mask_must_cover_every_sequence(gen):
    """A 2-D TND mask is read inside each sequence ([R >= max Sq, C >= max Skv]) or at global token positions
    ([sum Sq, sum Skv]); a mask that covers neither, or that has the shape [T1, T2] of a padded batch (which looks
    global but would be read inside each sequence), is refused naming atten_mask, its shape and the rule."""
    q, k, v = make_qkv(gen, "TND", 0, 2, 2, 0, 0, 32, 32, BF16, q_lens=[300], kv_lens=[300])
    mask = rand_mask(gen, (100, 200), 0.3)  # no fully masked row: only padding rows give 0 below
    for lens in ([300], [150, 300]):  # T = 300 queries in sequences longer than the mask's 100 rows
        check_raises(ValueError, r"atten_mask shape \(100, 200\) is not supported for input_layout='TND' with "
                     r"sparse_mode=1: pass a 2-D \[R, C\] mask with R >= the longest query sequence \(%d\)" % lens[0],
                     q, k, v, 2, "TND", atten_mask=mask, sparse_mode=1, actual_seq_qlen=lens, actual_seq_kvlen=lens)
    thirds = dict(actual_seq_qlen=[100, 200, 300], actual_seq_kvlen=[100, 200, 300], scale=0.2)
    run_and_check(q, k, v, 2, "TND", atten_mask=mask, sparse_mode=1, **thirds)  # every sequence fits in the mask
    padded = dict(actual_seq_qlen=[100, 200], actual_seq_kvlen=[100, 200], scale=0.2)  # tokens 200-299: padding
    check_raises(ValueError, r"atten_mask shape \(300, 300\) is the token counts \[T1, T2\] of query and key, but "
                 r"the sequences end at \[200, 200\].*pass atten_mask\[:200, :200\] for global token positions",
                 q, k, v, 2, "TND", atten_mask=torch.zeros(300, 300, dtype=torch.bool), sparse_mode=1, **padded)
    run_and_check(q, k, v, 2, "TND", atten_mask=mask, sparse_mode=1, **padded)  # a valid mask of the sequences
    out = npu_flash_attn.flash_attention(q, k, v, 2, "TND", atten_mask=mask, sparse_mode=1, **padded)[0]
    assert torch.all(out[200:] == 0) and torch.all(out[:200].abs().sum((1, 2)) > 0)  # the padding rows only are 0


# The built-in's worked examples (docs/masks.md), run on the kernel.
CP_EXAMPLES = [(7, 6, -2, [3, 5], [3, 9]), (7, 2147483647, 0, [2, 7, 11], [6, 11, 15]),
               (8, 4, 1, [3, 8, 12], [4, 9, 13]), (8, 2147483647, 2147483647, [3, 5], [3, 7])]


@pytest.mark.parametrize("mode,pre,nxt,cq,ckv", CP_EXAMPLES)
def test_context_parallel_examples(gen, mode, pre, nxt, cq, ckv):
    q, k, v = make_qkv(gen, "TND", 0, N1, N2, 0, 0, 64, 64, F16, q_lens=[cq[0]] + [b - a for a, b in zip(cq, cq[1:])],
                       kv_lens=[ckv[0]] + [b - a for a, b in zip(ckv, ckv[1:])])
    for mask in (None, compressed_causal_mask()):
        run_and_check(q, k, v, N1, "TND", scale=0.125, sparse_mode=mode, pre_tokens=pre, next_tokens=nxt,
                      actual_seq_qlen=cq, actual_seq_kvlen=ckv, atten_mask=mask)


def test_context_parallel_long_pieces(gen):
    # pieces longer than a block, a zero-length query piece before the band sequence, band rows that see nothing
    q_lens, kv_lens = [0, 200, 150, 190, 0], [50, 200, 300, 330, 10]
    cu = lambda ls: [sum(ls[:i + 1]) for i in range(len(ls))]  # noqa: E731
    q, k, v = make_qkv(gen, "TND", 0, N1, N2, 0, 0, 64, 64, BF16, q_lens=q_lens, kv_lens=kv_lens)
    kw = dict(actual_seq_qlen=cu(q_lens), actual_seq_kvlen=cu(kv_lens), scale=0.125)
    run_and_check(q, k, v, N1, "TND", sparse_mode=7, pre_tokens=330, next_tokens=-170, **kw)
    run_and_check(q, k, v, N1, "TND", sparse_mode=8, pre_tokens=200, next_tokens=-30, **kw)


# ---------------------------------------------------------------------------------------------------------------
# block skipping: counted through the twin's trace
# ---------------------------------------------------------------------------------------------------------------
def _counts(info, kind, name):
    return info["op_counts"].get(kind, {}).get(name, 0)


def test_masked_tiles_are_skipped_and_visible_tiles_skip_the_select(gen):
    b, n, s1, s2 = 2, 2, 256, 384  # 2 x 3 tiles of 128 x 128 per (batch, head)
    q, k, v = make_qkv(gen, "BNSD", b, n, n, s1, s2, 64, 64, F16)
    m = torch.zeros(b, 1, s1, s2, dtype=torch.bool)
    m[0, :, :128, 128:256] = True                   # batch 0: one fully masked tile
    m[0, :, 128:, :] = rand_mask(gen, (128, s2))    # ... and a row of three mixed tiles
    m[1, :, :, 256:] = True                         # batch 1: a column of fully masked tiles
    m[1, :, 5, 7] = True                            # ... and one mixed tile
    # tiles: batch 0 -> masked 1, mixed 3, visible 2; batch 1 -> masked 2, mixed 1, visible 3 (per head)
    twin_backend.set_op_counting(True)
    try:
        r = run_and_check(q, k, v, n, "BNSD", scale=0.125, sparse_mode=1, atten_mask=m)
    finally:
        twin_backend.set_op_counting(False)
    info = r["info"]
    assert info["s1_block"] == 128 and info["s2_block"] == 128, info
    assert (info["tiles_masked"], info["tiles_mixed"], info["tiles_visible"]) == (3, 4, 5)
    computed = n * (5 + 4)  # (mixed + visible) tiles per head
    # the cube signals "scores ready" and "output ready" once per computed tile
    assert _counts(info, "aic", "CrossCoreSetFlag") == 2 * computed
    # each of the two AIVs loads the mask of a mixed tile once per chunk of its 64 rows; visible tiles load nothing
    chunks = -(-64 // info["vec_rows"])
    assert _counts(info, "aiv", "DataCopyPad(GM->UB)") == 2 * n * 4 * chunks
    # no band: the only Selects are the dense mask's (one per AIV chunk per mixed tile) and the finalize's
    finalize = 2 * 2 * b * n * (s1 // 128)  # two Selects per AIV per task
    assert _counts(info, "aiv", "Select") == 2 * n * 4 * chunks + finalize


def test_block_map_cache_and_in_place_changes(gen):
    q, k, v = make_qkv(gen, "BSND", B, N1, N2, S1, S2, 64, 64, F16)
    m = holes(rand_mask(gen, (B, 1, S1, S2), 0.3), gen)
    twin_backend.clear_block_mask_cache()
    info = npu_flash_attn.precompute_block_mask(q, k, v, N1, "BSND", m, sparse_mode=1)
    assert info.tiles_masked + info.tiles_mixed + info.tiles_visible == B * 2 * 2
    assert twin_backend.block_mask_cache_info()["misses"] == 1
    for _ in range(2):  # reused, e.g. by every layer
        run_and_check(q, k, v, N1, "BSND", scale=0.125, sparse_mode=1, atten_mask=m)
    stats = twin_backend.block_mask_cache_info()
    assert (stats["hits"], stats["misses"]) == (2, 1)
    m[:, :, :, :] = True  # in place: the cached map is stale and must not be used
    m[:, :, :, 3] = False
    run_and_check(q, k, v, N1, "BSND", scale=0.125, sparse_mode=1, atten_mask=m)
    assert twin_backend.block_mask_cache_info()["misses"] == 2
    del m  # an entry dies with its mask
    assert twin_backend.block_mask_cache_info()["entries"] == 0


def test_fully_masked_everything_gives_zeros_without_nan(gen):
    q, k, v = make_qkv(gen, "BSND", B, N1, N2, S1, S2, 64, 64, BF16)
    out, smax, ssum = op(q, k, v, N1, "BSND", atten_mask=torch.ones(1, S2, dtype=torch.bool), sparse_mode=1)
    assert bool((out == 0).all()) and bool((smax == -problem.FLT_MAX).all()) and bool((ssum == problem.FLT_MAX).all())


# ---------------------------------------------------------------------------------------------------------------
# errors: ValueError / TypeError naming the argument, the value and the rule; nothing runs
# ---------------------------------------------------------------------------------------------------------------
def _qkv(layout="BSND", **lens):
    g = torch.Generator().manual_seed(1)
    if layout == "TND":
        return make_qkv(g, "TND", 0, 4, 2, 0, 0, 64, 64, F16, q_lens=lens["q"], kv_lens=lens["kv"])
    return make_qkv(g, layout, 2, 4, 2, 5, 7, 64, 64, F16)


def check_raises(exc, pattern, *args, **kwargs):
    before = npu_flash_attn.last_launch_info()
    with pytest.raises(exc, match=pattern):
        op(*args, **kwargs)
    assert npu_flash_attn.last_launch_info() == before


TND_KW = dict(actual_seq_qlen=[3, 5], actual_seq_kvlen=[3, 9])


@pytest.mark.parametrize("case", [
    ("BSND", dict(atten_mask=torch.zeros(2, 4, 5, 6, dtype=torch.bool), sparse_mode=1), ValueError,
     r"atten_mask shape \(2, 4, 5, 6\) is not broadcastable to \[B, N1, S1, S2\] = \[2, 4, 5, 7\]"),
    ("BSND", dict(atten_mask=torch.zeros(3, 1, 5, 7, dtype=torch.bool)), ValueError, r"not broadcastable"),
    ("BSND", dict(atten_mask=torch.zeros(1, 2, 4, 5, 7, dtype=torch.bool)), ValueError, r"not broadcastable"),
    ("BSND", dict(atten_mask=torch.zeros(5, 7, dtype=torch.int32)), TypeError, r"atten_mask dtype torch.int32"),
    ("BSND", dict(atten_mask=torch.zeros(5, 7, dtype=torch.bool), sparse_mode=2), ValueError,
     r"atten_mask shape \(5, 7\) is not supported for sparse_mode=2 \(left-up causal\): pass None or the compressed"),
    ("BSND", dict(atten_mask=compressed_causal_mask(), sparse_mode=6, prefix=[3, 3]), ValueError,
     r"atten_mask shape \(2048, 2048\) is not supported for sparse_mode=6 .* \[3072, 2048\]"),
    ("BSND", dict(atten_mask=~compressed_prefix_mask(), sparse_mode=6, prefix=[3, 3]), ValueError,
     r"atten_mask for sparse_mode=6 must equal the compressed prefix mask"),
    ("BSND", dict(sparse_mode=5), ValueError, r"sparse_mode=5 \(prefix attention\) requires prefix"),
    ("BSND", dict(sparse_mode=6, prefix=[3]), ValueError, r"prefix has 1 entries but there are B=2 batches"),
    ("BSND", dict(sparse_mode=6, prefix=[1, 3]), ValueError,
     r"prefix\[0\]=1 is out of range \[2, 7\] for batch 0 \(Sq=5, Skv=7: Sq <= Skv gives \[Skv - Sq, Skv\]\)"),
    ("BSND", dict(sparse_mode=6, prefix=[3, 8]), ValueError, r"prefix\[1\]=8 is out of range \[2, 7\]"),
    ("BSND", dict(sparse_mode=1, prefix=[3, 3]), ValueError, r"prefix=\[3, 3\] is only used by sparse_mode 5 and 6"),
    ("BSND", dict(sparse_mode=7), ValueError, r"sparse_mode=7 \(varlen split, right-down causal\) requires "
                                              r"input_layout='TND'"),
    ("BSND", dict(atten_mask=torch.zeros(5, 7, dtype=torch.bool), pre_tokens=-1, next_tokens=-1), ValueError,
     r"pre_tokens=-1 and next_tokens=-1 are both negative"),
    ("BSND", dict(atten_mask=torch.zeros(5, 7, dtype=torch.bool), pre_tokens=2, next_tokens=-3), ValueError,
     r"next_tokens=-3 < 0 needs pre_tokens >= 3 \(got 2\)"),
    ("BSND", dict(atten_mask=torch.zeros(5, 7, dtype=torch.bool), pre_tokens=10, next_tokens=-5), ValueError,
     r"\|next_tokens\| < S1=5"),
    ("BSND", dict(atten_mask=torch.zeros(5, 7, dtype=torch.bool), pre_tokens=-7, next_tokens=9), ValueError,
     r"pre_tokens=-7 < 0 needs .* \|pre_tokens\| < S2=7"),
    ("TND", dict(sparse_mode=5, prefix=[1, 1], **TND_KW), ValueError, r"sparse_mode=5 .* not supported for "
                                                                      r"input_layout='TND'"),
    ("TND", dict(sparse_mode=7, pre_tokens=5, next_tokens=-2, **TND_KW), ValueError,
     r"sparse_mode=7: pre_tokens=5 must be >= Skv=6 of the last sequence with queries \(batch 1\)"),
    ("TND", dict(sparse_mode=7, pre_tokens=6, next_tokens=1, **TND_KW), ValueError, r"next_tokens=1 must be <= 0"),
    ("TND", dict(sparse_mode=8, pre_tokens=2, next_tokens=0, **TND_KW), ValueError,
     r"sparse_mode=8: pre_tokens=2 must be >= Skv=3 of the first sequence"),
    ("TND", dict(atten_mask=torch.zeros(2, 6, dtype=torch.bool), sparse_mode=1, **TND_KW), ValueError,
     r"atten_mask shape \(2, 6\) is not supported for input_layout='TND'.*R >= the longest query sequence \(3\)"),
    ("TND", dict(atten_mask=torch.zeros(1, 3, 6, dtype=torch.bool), sparse_mode=1, **TND_KW), ValueError,
     r"is not supported for input_layout='TND'"),
], ids=lambda c: c if isinstance(c, str) else None)
def test_mask_errors(case):
    layout, kw, exc, pattern = case
    q, k, v = _qkv(layout, q=[3, 2], kv=[3, 6])
    check_raises(exc, pattern, q, k, v, 4, layout, **kw)


def test_mask_on_another_device():
    q, k, v = _qkv()
    check_raises(ValueError, r"atten_mask is on device meta but query is on cpu", q, k, v, 4, "BSND",
                 atten_mask=torch.zeros(5, 7, dtype=torch.bool, device="meta"))


# ---------------------------------------------------------------------------------------------------------------
# random configurations (a fresh sample each run; `-m slow` runs many)
# ---------------------------------------------------------------------------------------------------------------
def random_config(g: torch.Generator):
    def pick(xs):
        return xs[int(torch.randint(0, len(xs), (1,), generator=g))]

    def rint(lo, hi):
        return int(torch.randint(lo, hi + 1, (1,), generator=g))
    layout = pick(["BSH", "SBH", "BSND", "BNSD", "TND"])
    n2 = pick([1, 2, 3])
    n1 = n2 * pick([1, 2])
    D = pick([16, 40, 64, 72, 128, 192, 256])
    Dv = pick([D, max(8, D // 2)])
    dtype = pick([F16, BF16])
    kw = dict(scale=1.0 / math.sqrt(D))
    if layout == "TND":
        nb = rint(1, 4)
        q_lens = [rint(0, 260) for _ in range(nb)]
        kv_lens = [rint(0, 260) for _ in range(nb)]
        cu = lambda ls: [sum(ls[:i + 1]) for i in range(len(ls))]  # noqa: E731
        kw.update(actual_seq_qlen=cu(q_lens), actual_seq_kvlen=cu(kv_lens))
        q, k, v = make_qkv(g, "TND", 0, n1, n2, 0, 0, D, Dv, dtype, q_lens=q_lens, kv_lens=kv_lens)
        mode = pick([0, 1, 6, 7, 8])
        s1, s2 = max(q_lens), max(kv_lens)
        if mode in (0, 1):
            kw["atten_mask"] = rand_mask(g, (s1 + rint(0, 3), s2 + rint(0, 3)), pick([0.05, 0.5, 0.95]))
        if mode == 6:
            kw["prefix"] = [rint(0 if a > b else b - a, b) for a, b in zip(q_lens, kv_lens)]
        if mode in (7, 8):
            idx = [i for i, a in enumerate(q_lens) if a > 0]
            band_kv = kv_lens[idx[-1] if mode == 7 else idx[0]] if idx else 0
            kw.update(pre_tokens=band_kv + rint(0, 5), next_tokens=-rint(0, 40) if mode == 7 else rint(-40, 40))
    else:
        b, s1, s2 = rint(1, 3), rint(1, 300), rint(1, 300)
        q, k, v = make_qkv(g, layout, b, n1, n2, s1, s2, D, Dv, dtype)
        mode = pick([0, 1, 5, 6])
        full = [b, n1, s1, s2]
        shape = [d if torch.rand(1, generator=g) < 0.5 else 1 for d in full][4 - rint(1, 4):]
        m = rand_mask(g, shape, pick([0.05, 0.5, 0.95]))
        if mode in (0, 1, 5):
            kw["atten_mask"] = m
        if mode == 0:
            kw.update(pre_tokens=rint(0, s1 + 5), next_tokens=rint(0, s2 + 5))
        if mode in (5, 6):
            kw["prefix"] = [rint(0 if s1 > s2 else s2 - s1, s2) for _ in range(b)]
    kw["sparse_mode"] = mode
    return q, k, v, n1, layout, kw


def _run_random(seed):
    q, k, v, n1, layout, kw = random_config(torch.Generator().manual_seed(seed))
    label = f"seed {seed}: {layout} {tuple(q.shape)} {q.dtype} " + \
        ", ".join(f"{a}={b if not isinstance(b, torch.Tensor) else tuple(b.shape)}" for a, b in kw.items())
    run_and_check(q, k, v, n1, layout, label=label, **kw)


def test_random_mask_configs(fa_seed):
    for i in range(12):
        _run_random(fa_seed * 100 + i)


@pytest.mark.slow
@pytest.mark.parametrize("i", range(400))
def test_random_mask_configs_many(fa_seed, i):
    _run_random(fa_seed * 1000 + i)


def test_opcheck_and_compile_with_masks(gen):
    q, k, v = make_qkv(gen, "BSND", 2, 2, 1, 70, 90, 32, 32, F16)
    pad = torch.arange(90).view(1, 1, 1, 90) >= torch.tensor([40, 90]).view(2, 1, 1, 1)
    for kw in (dict(atten_mask=pad, sparse_mode=1), dict(atten_mask=pad, sparse_mode=5, prefix=[30, 60]),
               dict(sparse_mode=6, prefix=[20, 90])):
        torch.library.opcheck(op, (q, k, v, 2, "BSND"), dict(scale=0.2, **kw))

    def f(q, k, v, m):
        return op(q, k, v, 2, "BSND", atten_mask=m, scale=0.2, sparse_mode=1)[0]
    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)(q, k, v, pad)
    assert torch.equal(compiled, f(q, k, v, pad))


def test_work_split_balances_visible_tiles(gen):
    # batch 0 sees nothing, batch 1 everything: a split by the band alone would leave half the cores idle
    b, n, s1, s2 = 2, 4, 512, 512
    q, k, v = make_qkv(gen, "BNSD", b, n, n, s1, s2, 64, 64, BF16)
    m = torch.zeros(b, 1, 1, s2, dtype=torch.bool)
    m[0] = True
    twin_backend.set_op_counting(True)
    try:
        r = run_and_check(q, k, v, n, "BNSD", scale=0.125, sparse_mode=1, atten_mask=m)
    finally:
        twin_backend.set_op_counting(False)
    info = r["info"]
    steps = [c["ops"].get("CrossCoreSetFlag", 0) // 2 for c in info["op_counts_per_core"] if c["kind"] == "aic"]
    total = n * (s1 // 128) * (s2 // 128)  # batch 1's tiles
    assert sum(steps) == total and len(steps) == info["block_dim"]
    per_task = s2 // 128
    assert max(steps) <= -(-total // len(steps)) + per_task, steps  # within one task of an even share
    assert min(steps) >= total // len(steps) - per_task, steps


@pytest.mark.parametrize("mode", [6, 3, 4])
def test_wide_steps_bands_and_prefix(gen, mode):
    """Steps of 512-1024 keys: prefix columns past the first 128 of a step, and causal / band edges inside a wide
    step, against the reference (a prefix mask that only covered a step's first 128 columns passed with 128-key steps)."""
    s1, s2 = int(torch.randint(200, 330, (1,), generator=gen)), int(torch.randint(900, 1300, (1,), generator=gen))
    q, k, v = make_qkv(gen, "BNSD", 2, 2, 1, s1, s2, 64, 64, torch.bfloat16)
    kw = dict(scale=0.125, sparse_mode=mode)
    if mode == 6:
        kw["prefix"] = [int(torch.randint(s2 - s1, s2 + 1, (1,), generator=gen)) for _ in range(2)]  # its range
    if mode == 4:
        kw.update(pre_tokens=int(torch.randint(100, 600, (1,), generator=gen)), next_tokens=300)
    info = run_and_check(q, k, v, 2, "BNSD", **kw)["info"]
    assert info["s2_block"] >= 512 and info["band_tiles"] == 1


def test_forced_blocks_are_checked_against_the_block_map_ub(gen):
    # The block-map pre-pass of a dense mask holds a whole s1_block x s2_block tile three times (u8, half, fp32):
    # 128 x 256 needs 7 * 32768 + ~20 KB of UB, more than the 188416 bytes usable; the tiling refuses it by name.
    q, k, v = make_qkv(gen, "BNSD", 1, 2, 2, 150, 300, 64, 64, F16)
    mask = rand_mask(gen, (150, 300))
    try:
        twin_backend.set_block_override(128, 256)
        with pytest.raises(ValueError, match=r"s1_block 128 x s2_block 256 needs 25\d{4} bytes of UB per vector core "
                                             r"in the block-map pre-pass of a dense atten_mask .* more than the 188416 "
                                             r"bytes usable on Ascend910B2; s1_block \* s2_block may be at most 23552"):
            op(q, k, v, 2, "BNSD", scale=0.125, sparse_mode=1, atten_mask=mask)
        twin_backend.set_block_override(64, 256)  # fits: the same blocks run and match the reference
        info = run_and_check(q, k, v, 2, "BNSD", scale=0.125, sparse_mode=1, atten_mask=mask)["info"]
        assert (info["s1_block"], info["s2_block"]) == (64, 256)
        twin_backend.set_block_override(128, 256)  # without a dense mask there is no pre-pass to refuse
        run_and_check(q, k, v, 2, "BNSD", scale=0.125, sparse_mode=3)
    finally:
        twin_backend.set_block_override()
