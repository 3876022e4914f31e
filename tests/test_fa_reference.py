"""Tests of the float64 reference (npu_flash_attn.reference) itself: against a naive per-row loop written from the
spec, against torch's scaled_dot_product_attention, invalid rows, GQA, layouts, and the test criteria helpers."""
import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from npu_flash_attn.reference import (FLT_MAX, assert_close_fa, assert_stats_close, flash_attention_lowprec,
                                      flash_attention_reference)

LAYOUTS = ["BSH", "SBH", "BSND", "BNSD", "TND"]


# ---------------------------------------------------------------------------------------------------------------
# helpers: build inputs in a layout; read one logical row (b, n, s) back with explicit index formulas
# ---------------------------------------------------------------------------------------------------------------
def make_inputs(gen, layout, B, N1, N2, S1, S2, D, Dv, dtype=torch.float64, seqs=None, pad=(0, 0)):
    """Random q/k/v in `layout`. For TND, seqs = (q_lens, kv_lens) and pad adds unused tokens at the end."""
    def rnd(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64).to(dtype)
    if layout == "TND":
        T1, T2 = sum(seqs[0]) + pad[0], sum(seqs[1]) + pad[1]
        return rnd(T1, N1, D), rnd(T2, N2, D), rnd(T2, N2, Dv)
    shapes = {
        "BSH": lambda S, N, d: (B, S, N * d), "SBH": lambda S, N, d: (S, B, N * d),
        "BSND": lambda S, N, d: (B, S, N, d), "BNSD": lambda S, N, d: (B, N, S, d),
    }[layout]
    return rnd(*shapes(S1, N1, D)), rnd(*shapes(S2, N2, D)), rnd(*shapes(S2, N2, Dv))


def row(x, layout, b, n, s, d, starts=None):
    """The length-d vector of logical row (batch b, head n, token s)."""
    if layout == "BSH":
        return x[b, s, n * d:(n + 1) * d]
    if layout == "SBH":
        return x[s, b, n * d:(n + 1) * d]
    if layout == "BSND":
        return x[b, s, n, :]
    if layout == "BNSD":
        return x[b, n, s, :]
    return x[starts[b] + s, n, :]


def cumsum(lens):
    return list(itertools.accumulate(lens))


def naive_check(q, k, v, head_num, layout, B, N1, N2, S1, S2, D, Dv, scale, mode, pre, nxt, seqs=None):
    """Per-row loop straight from the spec; compares every row of the reference."""
    kw = {}
    if layout == "TND":
        q_lens, kv_lens = seqs
        kw = dict(actual_seq_qlen=cumsum(q_lens), actual_seq_kvlen=cumsum(kv_lens))
        q_starts = [0] + cumsum(q_lens)[:-1]
        kv_starts = [0] + cumsum(kv_lens)[:-1]
        B = len(q_lens)
    out, smax, ssum = flash_attention_reference(q, k, v, head_num, layout, scale=scale, sparse_mode=mode,
                                                pre_tokens=pre, next_tokens=nxt, **kw)
    G = N1 // N2
    checked_invalid = 0
    for b in range(B):
        sq = q_lens[b] if layout == "TND" else S1
        skv = kv_lens[b] if layout == "TND" else S2
        for n in range(N1):
            for i in range(sq):
                if mode in (0, 1):
                    js = list(range(skv))
                elif mode == 2:
                    js = [j for j in range(skv) if j <= i]
                elif mode == 3:
                    js = [j for j in range(skv) if j <= i + skv - sq]
                else:
                    js = [j for j in range(skv) if i + skv - sq - pre <= j <= i + skv - sq + nxt]
                qi = row(q, layout, b, n, i, D, q_starts if layout == "TND" else None).double()
                scores = [scale * float(torch.dot(qi, row(k, layout, b, n // G, j, D,
                                                          kv_starts if layout == "TND" else None).double()))
                          for j in js]
                got_o = row(out, layout, b, n, i, Dv, q_starts if layout == "TND" else None)
                if layout == "TND":
                    off = (q_starts[b] * N1 + n * sq + i) * 8
                    got_m = smax.reshape(-1)[off:off + 8]
                    got_s = ssum.reshape(-1)[off:off + 8]
                else:
                    got_m, got_s = smax[b, n, i], ssum[b, n, i]
                if not js:
                    assert torch.all(got_o == 0), (b, n, i)
                    assert torch.all(got_m == -FLT_MAX) and torch.all(got_s == FLT_MAX), (b, n, i)
                    checked_invalid += 1
                    continue
                m = max(scores)
                w = [math.exp(x - m) for x in scores]
                l = sum(w)
                o = sum(wj * row(v, layout, b, n // G, j, Dv, kv_starts if layout == "TND" else None).double()
                        for wj, j in zip(w, js)) / l
                assert torch.allclose(got_o, o, rtol=1e-12, atol=1e-12), (b, n, i, got_o, o)
                assert torch.allclose(got_m, torch.full((8,), m, dtype=torch.float64), rtol=1e-12, atol=1e-12)
                assert torch.allclose(got_s, torch.full((8,), l, dtype=torch.float64), rtol=1e-12, atol=1e-12)
    if layout == "TND":  # padding rows after the last sequence are invalid rows
        used = sum(q_lens)
        assert torch.all(out[used:] == 0)
        assert torch.all(smax.reshape(-1)[used * N1 * 8:] == -FLT_MAX)
        assert torch.all(ssum.reshape(-1)[used * N1 * 8:] == FLT_MAX)
    return checked_invalid


# ---------------------------------------------------------------------------------------------------------------
# naive loop: all layouts, modes, GQA/MQA, S1 < / = / > S2
# ---------------------------------------------------------------------------------------------------------------
MODES = [(0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0), (4, 2, 1), (4, 0, 0), (4, 5, -2), (4, -1, 3), (4, 100, 100)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mode,pre,nxt", MODES)
@pytest.mark.parametrize("heads", [(2, 2), (4, 2), (3, 1)], ids=["MHA", "GQA", "MQA"])
def test_reference_matches_naive_loop(gen, layout, mode, pre, nxt, heads):
    N1, N2 = heads
    D, Dv = 8, 6
    for (S1, S2) in [(5, 9), (7, 7), (9, 4)]:
        B = 2
        seqs = None
        if layout == "TND":
            seqs = ([S1, 0, 1, 3], [S2, 2, 0, 5])  # zero-length and length-1 sequences
        q, k, v = make_inputs(gen, layout, B, N1, N2, S1, S2, D, Dv, seqs=seqs, pad=(2, 1))
        naive_check(q, k, v, N1, layout, B, N1, N2, S1, S2, D, Dv, 0.37, mode, pre, nxt, seqs)


def test_invalid_rows_right_down_causal(gen):
    # sparse_mode 3 with S1 > S2: rows i < S1 - S2 see nothing
    B, N, S1, S2, D = 1, 2, 10, 4, 8
    q, k, v = make_inputs(gen, "BNSD", B, N, N, S1, S2, D, D)
    out, m, s = flash_attention_reference(q, k, v, N, "BNSD", scale=0.5, sparse_mode=3)
    assert torch.all(out[:, :, :S1 - S2] == 0)
    assert torch.all(m[:, :, :S1 - S2] == -FLT_MAX) and torch.all(s[:, :, :S1 - S2] == FLT_MAX)
    assert torch.all(out[:, :, S1 - S2:].abs().sum(-1) > 0)
    assert torch.all(m[:, :, S1 - S2:].abs() < 1e6) and torch.all(s[:, :, S1 - S2:] >= 1)
    # LSE of invalid rows ~ -FLT_MAX: zero weight in a merge
    lse = m[..., 0] + torch.log(s[..., 0])
    assert torch.all(lse[:, :, :S1 - S2] < -1e38)
    # last row of right-down causal sees every key
    assert torch.allclose(out[:, :, -1], flash_attention_reference(q, k, v, N, "BNSD", scale=0.5)[0][:, :, -1])


def test_invalid_rows_band_and_zero_length_kv(gen):
    q, k, v = make_inputs(gen, "TND", 0, 2, 1, 0, 0, 8, 8, seqs=([3, 4], [0, 6]))
    out, m, s = flash_attention_reference(q, k, v, 2, "TND", scale=1.0, actual_seq_qlen=[3, 7],
                                          actual_seq_kvlen=[0, 6])
    assert torch.all(out[:3] == 0) and torch.all(m.reshape(-1)[:3 * 2 * 8] == -FLT_MAX)
    assert torch.all(out[3:].abs().sum(-1) > 0)
    # band with next < 0 on S1 == S2: the first rows are invalid
    q, k, v = make_inputs(gen, "BSND", 1, 2, 2, 6, 6, 8, 8)
    out, m, s = flash_attention_reference(q, k, v, 2, "BSND", sparse_mode=4, pre_tokens=4, next_tokens=-2)
    assert torch.all(out[:, :2] == 0) and torch.all(m[:, :, :2] == -FLT_MAX) and torch.all(s[:, :, :2] == FLT_MAX)
    assert torch.all(out[:, 2:].abs().sum(-1) > 0)


def test_trailing_zeros_disable_batches(gen):
    q, k, v = make_inputs(gen, "TND", 0, 2, 2, 0, 0, 8, 8, seqs=([2, 3, 4], [3, 3, 3]))
    full = flash_attention_reference(q, k, v, 2, "TND", sparse_mode=3, actual_seq_qlen=[2, 5, 9],
                                     actual_seq_kvlen=[3, 6, 9])
    cut = flash_attention_reference(q, k, v, 2, "TND", sparse_mode=3, actual_seq_qlen=[2, 5, 0],
                                    actual_seq_kvlen=[3, 6, 9])
    assert torch.equal(cut[0][:5], full[0][:5]) and torch.all(cut[0][5:] == 0)
    assert torch.equal(cut[1].reshape(-1)[:5 * 16], full[1].reshape(-1)[:5 * 16])
    assert torch.all(cut[1].reshape(-1)[5 * 16:] == -FLT_MAX)


# ---------------------------------------------------------------------------------------------------------------
# against torch SDPA (float64)
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("S1,S2", [(1, 1), (17, 17), (33, 70), (70, 33)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads", [(4, 4), (8, 2), (4, 1)], ids=["MHA", "GQA", "MQA"])
def test_reference_matches_sdpa(gen, S1, S2, causal, heads):
    N1, N2 = heads
    B, D, Dv = 2, 24, 16
    q, k, v = make_inputs(gen, "BNSD", B, N1, N2, S1, S2, D, Dv)
    scale = 1 / math.sqrt(D)
    # torch's is_causal is top-left aligned (j <= i) = sparse_mode 2, also for S1 != S2
    out, m, s = flash_attention_reference(q, k, v, N1, "BNSD", scale=scale, sparse_mode=2 if causal else 0)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=N1 != N2)
    assert torch.allclose(out, ref, rtol=1e-10, atol=1e-12)
    # LSE = max + ln(sum) equals logsumexp of the masked scaled scores
    kk = k.repeat_interleave(N1 // N2, dim=1)
    sc = scale * q @ kk.transpose(-1, -2)
    if causal:
        sc = sc.masked_fill(torch.ones(S1, S2, dtype=torch.bool).triu(1), -math.inf)
    assert torch.allclose(m[..., 0] + torch.log(s[..., 0]), torch.logsumexp(sc, -1), rtol=1e-12, atol=1e-12)
    assert torch.allclose(m[..., 0], sc.amax(-1), rtol=1e-13, atol=1e-13)
    if causal and S1 == S2:  # right-down == left-up when S1 == S2
        out3 = flash_attention_reference(q, k, v, N1, "BNSD", scale=scale, sparse_mode=3)[0]
        assert torch.equal(out3, out)


def test_band_equals_sdpa_with_explicit_mask(gen):
    B, N, S1, S2, D = 1, 3, 20, 31, 16
    q, k, v = make_inputs(gen, "BNSD", B, N, N, S1, S2, D, D)
    pre, nxt = 5, 2
    i = torch.arange(S1).unsqueeze(1)
    j = torch.arange(S2).unsqueeze(0)
    d = S2 - S1
    allowed = (j >= i + d - pre) & (j <= i + d + nxt)
    out = flash_attention_reference(q, k, v, N, "BNSD", scale=0.3, sparse_mode=4, pre_tokens=pre, next_tokens=nxt)[0]
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=0.3)
    assert torch.allclose(out, ref, rtol=1e-10, atol=1e-12)
    # band with huge pre and next = 0 is right-down causal
    b = flash_attention_reference(q, k, v, N, "BNSD", sparse_mode=4, pre_tokens=2147483647, next_tokens=0)
    c = flash_attention_reference(q, k, v, N, "BNSD", sparse_mode=3)
    assert torch.equal(b[0], c[0]) and torch.equal(b[1], c[1]) and torch.equal(b[2], c[2])


# ---------------------------------------------------------------------------------------------------------------
# layouts round-trip: the same logical problem in every layout gives the same logical answer
# ---------------------------------------------------------------------------------------------------------------
def to_layout(x_bnsd, layout):
    B, N, S, D = x_bnsd.shape
    if layout == "BNSD":
        return x_bnsd.clone()
    if layout == "BSND":
        return x_bnsd.permute(0, 2, 1, 3).contiguous()
    if layout == "BSH":
        return x_bnsd.permute(0, 2, 1, 3).reshape(B, S, N * D).contiguous()
    if layout == "SBH":
        return x_bnsd.permute(2, 0, 1, 3).reshape(S, B, N * D).contiguous()
    assert layout == "TND"
    return x_bnsd.permute(0, 2, 1, 3).reshape(B * S, N, D).contiguous()


def from_layout(x, layout, B, N, S, D):
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.permute(0, 2, 1, 3)
    if layout == "BSH":
        return x.reshape(B, S, N, D).permute(0, 2, 1, 3)
    if layout == "SBH":
        return x.reshape(S, B, N, D).permute(1, 2, 0, 3)
    return x.reshape(B, S, N, D).permute(0, 2, 1, 3)


@pytest.mark.parametrize("mode,pre,nxt", [(0, 0, 0), (3, 0, 0), (4, 3, 1)])
def test_layouts_round_trip(gen, mode, pre, nxt):
    B, N1, N2, S1, S2, D, Dv = 2, 4, 2, 9, 13, 8, 6
    q = torch.randn(B, N1, S1, D, generator=gen, dtype=torch.float64)
    k = torch.randn(B, N2, S2, D, generator=gen, dtype=torch.float64)
    v = torch.randn(B, N2, S2, Dv, generator=gen, dtype=torch.float64)
    base = flash_attention_reference(q, k, v, N1, "BNSD", scale=0.4, sparse_mode=mode, pre_tokens=pre,
                                     next_tokens=nxt)
    for layout in LAYOUTS:
        kw = {}
        if layout == "TND":
            kw = dict(actual_seq_qlen=cumsum([S1] * B), actual_seq_kvlen=cumsum([S2] * B))
        out, m, s = flash_attention_reference(to_layout(q, layout), to_layout(k, layout), to_layout(v, layout), N1,
                                              layout, scale=0.4, sparse_mode=mode, pre_tokens=pre, next_tokens=nxt,
                                              **kw)
        assert torch.equal(from_layout(out, layout, B, N1, S1, Dv), base[0]), layout
        if layout == "TND":  # batch-major physical order == [B, N1, S1, 8] when all sequences have equal length
            assert torch.equal(m.reshape(B, N1, S1, 8), base[1]) and torch.equal(s.reshape(B, N1, S1, 8), base[2])
        else:
            assert torch.equal(m, base[1]) and torch.equal(s, base[2])


def test_gqa_equals_repeated_kv_heads(gen):
    B, N1, N2, S, D = 2, 6, 2, 11, 8
    q, k, v = make_inputs(gen, "BNSD", B, N1, N2, S, S, D, D)
    a = flash_attention_reference(q, k, v, N1, "BNSD", sparse_mode=2)
    b = flash_attention_reference(q, k.repeat_interleave(3, 1), v.repeat_interleave(3, 1), N1, "BNSD", sparse_mode=2)
    assert all(torch.equal(x, y) for x, y in zip(a, b))


# ---------------------------------------------------------------------------------------------------------------
# low-precision baseline and criteria
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_lowprec_close_to_reference(gen, dtype, layout):
    seqs = ([7, 0, 12], [9, 3, 12]) if layout == "TND" else None
    q, k, v = make_inputs(gen, layout, 2, 4, 2, 12, 12, 16, 16, dtype=dtype, seqs=seqs, pad=(3, 0))
    kw = dict(actual_seq_qlen=cumsum(seqs[0]), actual_seq_kvlen=cumsum(seqs[1])) if seqs else {}
    ref = flash_attention_reference(q, k, v, 4, layout, scale=0.25, sparse_mode=3, **kw)[0]
    low = flash_attention_lowprec(q, k, v, 4, layout, scale=0.25, sparse_mode=3, **kw)
    assert low.dtype == dtype and low.shape == ref.shape
    err = (low.double() - ref).abs().max().item()
    eps = {torch.float16: 2 ** -10, torch.bfloat16: 2 ** -7}[dtype]
    assert 0 < err < 8 * eps * ref.abs().max().item()
    # invalid rows of the low-precision path are zero too
    inv = flash_attention_reference(q, k, v, 4, layout, sparse_mode=4, pre_tokens=0, next_tokens=-1, **kw)[0]
    lowinv = flash_attention_lowprec(q, k, v, 4, layout, sparse_mode=4, pre_tokens=0, next_tokens=-1, **kw)
    assert torch.equal(lowinv.double() == 0, inv == 0)


def test_assert_close_fa_accepts_and_rejects(gen):
    q, k, v = make_inputs(gen, "BSND", 1, 2, 2, 64, 64, 32, 32, dtype=torch.bfloat16)
    ref = flash_attention_reference(q, k, v, 2, "BSND", scale=32 ** -0.5)[0]
    low = flash_attention_lowprec(q, k, v, 2, "BSND", scale=32 ** -0.5)
    err, bound = assert_close_fa(ref.to(torch.bfloat16), ref, low)  # a correctly rounded result passes
    assert err <= bound
    assert_close_fa(low, ref, low)
    with pytest.raises(AssertionError, match="max\\|out - ref64\\|"):
        bad = low.clone()
        bad[0, 5, 1, 3] += 0.05
        assert_close_fa(bad, ref, low)
    with pytest.raises(AssertionError, match="non-finite"):
        bad = low.clone()
        bad[0, 0, 0, 0] = float("nan")
        assert_close_fa(bad, ref, low)
    with pytest.raises(AssertionError, match="shape"):
        assert_close_fa(low[:, :3], ref, low)


def test_assert_stats_close_accepts_and_rejects(gen):
    q, k, v = make_inputs(gen, "BNSD", 1, 2, 2, 40, 24, 16, 16, dtype=torch.float16)
    _, m, s = flash_attention_reference(q, k, v, 2, "BNSD", scale=0.25, sparse_mode=3)
    m32, s32 = m.float(), s.float()
    info = assert_stats_close(m32, s32, m, s)
    assert info["invalid_rows"] == 2 * 16
    with pytest.raises(AssertionError, match="softmax_sum"):
        bad = s32.clone()
        bad[0, 1, 30] *= 1.001
        assert_stats_close(m32, bad, m, s)
    with pytest.raises(AssertionError, match="softmax_max"):
        bad = m32.clone()
        bad[0, 0, 20] += 0.01
        assert_stats_close(bad, s32, m, s)
    with pytest.raises(AssertionError, match="invalid row"):
        bad = s32.clone()
        bad[0, 0, 3] = 0.0
        assert_stats_close(m32, bad, m, s)
    with pytest.raises(AssertionError, match="8 copies"):
        bad = m32.clone()
        bad[0, 0, 30, 7] += 1
        assert_stats_close(bad, s32, m, s)
    with pytest.raises(AssertionError, match="float32"):
        assert_stats_close(m, s32, m, s)
