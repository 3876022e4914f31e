"""Tests of the float64 reference (npu_flash_attn.reference) itself: against a naive per-row loop written from the
spec, against torch's scaled_dot_product_attention, invalid rows, GQA, layouts, the test criteria helpers, and the
attention masks (dense / broadcast masks, prefix, sparse modes 5-8 with the built-in's worked examples, autograd)."""
import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from npu_flash_attn import reference as R
from npu_flash_attn.criterion import assert_close_fa, assert_stats_close
from npu_flash_attn.reference import FLT_MAX, flash_attention_lowprec, flash_attention_reference

LAYOUTS = ["BSH", "SBH", "BSND", "BNSD", "TND"]
INT32_MAX = 2147483647


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


# ---------------------------------------------------------------------------------------------------------------
# attention masks (atten_mask, prefix, sparse modes 5-8): docs/masks.md
# ---------------------------------------------------------------------------------------------------------------


def doc_visible(mode, i, j, sq, skv, pre, nxt, masked=None, prefix=None, band=False):
    """One element's visibility, written from the built-in's sparse-mode table (masked None: no mask passed)."""
    d = skv - sq
    m = bool(masked)
    if mode == 0:
        return masked is None or (not m and i - pre <= j <= i + nxt)
    if mode == 1:
        return not m
    if mode == 2 or (mode == 8 and not band):
        return j <= i
    if mode == 3 or (mode == 7 and not band):
        return j <= i + d
    if mode in (4, 7, 8):
        return i + d - pre <= j <= i + d + nxt
    if mode == 5:
        return not m and (j <= i + d or j < prefix)
    assert mode == 6
    return j <= i + d or j < prefix


def naive_rows(q, k, v, scale, vis):
    """q [N1,Sq,D], k/v [N2,Skv,*] of one sequence, vis(n, i, j) -> bool: per-row loop; returns out, max, sum."""
    N1, Sq, _ = q.shape
    G = N1 // k.shape[0]
    out = torch.zeros(N1, Sq, v.shape[2], dtype=torch.float64)
    mx = torch.full((N1, Sq), -FLT_MAX, dtype=torch.float64)
    sm = torch.full((N1, Sq), FLT_MAX, dtype=torch.float64)
    for n in range(N1):
        for i in range(Sq):
            js = [j for j in range(k.shape[1]) if vis(n, i, j)]
            if not js:
                continue
            sc = [scale * float(torch.dot(q[n, i], k[n // G, j])) for j in js]
            m = max(sc)
            w = [math.exp(x - m) for x in sc]
            out[n, i] = sum(wj * v[n // G, j] for wj, j in zip(w, js)) / sum(w)
            mx[n, i], sm[n, i] = m, sum(w)
    return out, mx, sm


def check_bnsd(q, k, v, scale, ref, vis):
    """ref = reference (out, max, sum) of BNSD inputs; vis(b, n, i, j)."""
    for b in range(q.shape[0]):
        o, m, s = naive_rows(q[b], k[b], v[b], scale, lambda n, i, j: vis(b, n, i, j))
        assert torch.allclose(ref[0][b], o, rtol=1e-12, atol=1e-12), b
        assert torch.allclose(ref[1][b], m.unsqueeze(-1).expand(-1, -1, 8), rtol=1e-12, atol=1e-12), b
        assert torch.allclose(ref[2][b], s.unsqueeze(-1).expand(-1, -1, 8), rtol=1e-12, atol=1e-12), b


def rand_mask(gen, shape, p=0.3):
    return torch.rand(*shape, generator=gen) < p


MASK_MODES = [(0, INT32_MAX, INT32_MAX), (0, 2, 1), (0, 4, -2), (0, -1, 3), (1, 0, 0), (2, 0, 0), (3, 0, 0),
              (4, 3, 0), (5, 0, 0), (6, 0, 0)]


@pytest.mark.parametrize("mode,pre,nxt", MASK_MODES)
@pytest.mark.parametrize("S1,S2", [(5, 8), (7, 4)])
def test_masked_modes_match_naive_loop(gen, monkeypatch, mode, pre, nxt, S1, S2):
    B, N1, N2, D, Dv = 2, 3, 1, 8, 5
    monkeypatch.setattr(R, "_CHUNK_ELEMS", 2 * S1 * S2)  # head chunks 0:2, 2:3 with a per-head mask
    q, k, v = make_inputs(gen, "BNSD", B, N1, N2, S1, S2, D, Dv)
    mask = rand_mask(gen, (B, N1, S1, S2))
    mask[1, 2, 1] = True  # a fully masked row
    lo = max(S2 - S1, 0)
    prefix = [int(torch.randint(lo, S2 + 1, (1,), generator=gen)) for _ in range(B)]
    compressed = mode in (2, 3, 4, 6)  # these modes never read the mask: pass junk of the compressed shape
    am = torch.ones(2048, 2048, dtype=torch.bool) if compressed else mask
    ref = flash_attention_reference(q, k, v, N1, "BNSD", scale=0.45, sparse_mode=mode, pre_tokens=pre,
                                    next_tokens=nxt, atten_mask=am, prefix=prefix)
    check_bnsd(q, k, v, 0.45, ref, lambda b, n, i, j: doc_visible(
        mode, i, j, S1, S2, pre, nxt, None if compressed else mask[b, n, i, j], prefix[b]))
    if mode in (2, 3, 4):  # and without a mask they give the same (npu-flash-attn extension)
        bare = flash_attention_reference(q, k, v, N1, "BNSD", scale=0.45, sparse_mode=mode, pre_tokens=pre,
                                         next_tokens=nxt)
        assert all(torch.equal(x, y) for x, y in zip(ref, bare))
    if mode in (0, 1):  # without a mask: full attention whatever pre/next
        full = flash_attention_reference(q, k, v, N1, "BNSD", scale=0.45)
        bare = flash_attention_reference(q, k, v, N1, "BNSD", scale=0.45, sparse_mode=mode, pre_tokens=pre,
                                         next_tokens=nxt)
        assert all(torch.equal(x, y) for x, y in zip(full, bare))


def test_visible_mask_hand_written():
    def rows(*r):
        return torch.tensor([[c == "1" for c in x] for x in r])
    # mode 6, Sq=4, Skv=6, prefix 5: right-down causal (d=2) or the first 5 columns
    assert torch.equal(R.visible_mask(4, 6, 6, prefix=5), rows("111110", "111110", "111110", "111111"))
    # Sq > Skv (d=-2), prefix 1
    assert torch.equal(R.visible_mask(5, 3, 6, prefix=1), rows("100", "100", "100", "110", "111"))
    # mode 5 adds the mask on top; mode 0's band is top-left, mode 4's bottom-right
    m = rows("000000", "010000", "000000", "000001")
    assert torch.equal(R.visible_mask(4, 6, 5, atten_mask=m, prefix=5), rows("111110", "101110", "111110", "111110"))
    assert torch.equal(R.visible_mask(4, 6, 0, 1, 1, atten_mask=m), rows("110000", "101000", "011100", "001110"))
    assert torch.equal(R.visible_mask(4, 6, 4, 1, 0), rows("011000", "001100", "000110", "000011"))
    # mode 0 without a mask ignores pre/next; mode 1 is the mask alone; uint8 masks: nonzero = masked
    assert bool(R.visible_mask(4, 6, 0, 0, 0).all())
    assert torch.equal(R.visible_mask(4, 6, 1, 0, 0, atten_mask=m.to(torch.uint8) * 7), ~m)
    # broadcast: a [2, 1, 6] key-padding slice gives [2, 4, 6]
    kp = torch.tensor([[[0, 0, 0, 1, 1, 1]], [[0, 0, 0, 0, 0, 1]]], dtype=torch.bool)
    assert torch.equal(R.visible_mask(4, 6, 1, atten_mask=kp), (~kp).expand(2, 4, 6))


BCAST = [(2, 5, 6, 7), (2, 1, 6, 7), (1, 1, 6, 7), (6, 7), (2, 1, 1, 7), (2, 1, 6, 1), (1, 5, 6, 7), (5, 1, 7), (7,),
         (5, 6, 1)]


@pytest.mark.parametrize("mode", [0, 1, 5])
def test_broadcast_masks_equal_expanded(gen, monkeypatch, mode):
    B, N1, N2, S1, S2, D = 2, 5, 5, 6, 7, 8
    monkeypatch.setattr(R, "_CHUNK_ELEMS", 2 * S1 * S2)  # head chunks of 2, 2, 1: per-head masks cross chunks
    q, k, v = make_inputs(gen, "BSND", B, N1, N2, S1, S2, D, D)
    kw = dict(scale=0.3, sparse_mode=mode, pre_tokens=3, next_tokens=2, prefix=[1, 6])
    for shape in BCAST:
        mask = rand_mask(gen, shape, 0.25)
        expanded = mask.expand(B, N1, S1, S2).contiguous()
        a = flash_attention_reference(q, k, v, N1, "BSND", atten_mask=mask, **kw)
        b = flash_attention_reference(q, k, v, N1, "BSND", atten_mask=expanded.to(torch.uint8), **kw)
        assert all(torch.equal(x, y) for x, y in zip(a, b)), shape
        low_a = flash_attention_lowprec(q.half(), k.half(), v.half(), N1, "BSND", atten_mask=mask, **kw)
        low_b = flash_attention_lowprec(q.half(), k.half(), v.half(), N1, "BSND", atten_mask=expanded, **kw)
        assert torch.equal(low_a, low_b) and torch.equal(low_a == 0, a[0] == 0), shape
    # the same logical problem in BNSD with the expanded mask (layout independence)
    ref = flash_attention_reference(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), N1, "BNSD",
                                    atten_mask=expanded, **kw)
    assert torch.equal(ref[0].transpose(1, 2), b[0]) and torch.equal(ref[1], b[1])


def test_mask_errors(gen):
    q, k, v = make_inputs(gen, "BNSD", 2, 3, 3, 4, 5, 8, 8)
    for bad in [(2, 4, 5), (2, 3, 4, 4), (1, 2, 3, 4, 5), (5, 1)]:
        with pytest.raises(ValueError, match="does not broadcast"):
            flash_attention_reference(q, k, v, 3, "BNSD", sparse_mode=1, atten_mask=torch.zeros(bad, dtype=torch.bool))
    with pytest.raises(TypeError, match="not bool or uint8"):
        flash_attention_reference(q, k, v, 3, "BNSD", sparse_mode=1, atten_mask=torch.zeros(4, 5))
    with pytest.raises(ValueError, match="needs prefix"):
        flash_attention_reference(q, k, v, 3, "BNSD", sparse_mode=6)
    with pytest.raises(ValueError, match="TND only"):
        flash_attention_reference(q, k, v, 3, "BNSD", sparse_mode=7)
    qt, kt, vt = make_inputs(gen, "TND", 0, 2, 2, 0, 0, 8, 8, seqs=([3, 5], [4, 2]))
    with pytest.raises(ValueError, match="max Sq = 5 and C >= max Skv = 4"):
        flash_attention_reference(qt, kt, vt, 2, "TND", sparse_mode=1, actual_seq_qlen=[3, 8], actual_seq_kvlen=[4, 6],
                                  atten_mask=torch.zeros(5, 3, dtype=torch.bool))


def test_fully_masked_rows_and_columns(gen):
    B, N, S1, S2, D = 2, 2, 6, 9, 8
    q, k, v = make_inputs(gen, "BNSD", B, N, N, S1, S2, D, D)
    mask = torch.zeros(B, 1, S1, S2, dtype=torch.bool)
    mask[0, 0, 2] = True  # row 2 of batch 0 (all heads)
    mask[:, :, :, 4] = True  # key column 4 everywhere
    out, m, s = flash_attention_reference(q, k, v, N, "BNSD", scale=0.5, sparse_mode=1, atten_mask=mask)
    assert torch.all(out[0, :, 2] == 0) and torch.all(m[0, :, 2] == -FLT_MAX) and torch.all(s[0, :, 2] == FLT_MAX)
    assert bool(torch.isfinite(out).all()) and not bool(torch.isnan(m).any() or torch.isnan(s).any())
    keep = [j for j in range(S2) if j != 4]  # a masked column is the same as a removed key
    o2, m2, s2 = flash_attention_reference(q, k[:, :, keep], v[:, :, keep], N, "BNSD", scale=0.5)
    live = [i for i in range(S1) if i != 2]
    assert torch.allclose(out[1], o2[1], rtol=1e-12, atol=1e-12)
    assert torch.allclose(out[0][:, live], o2[0][:, live], rtol=1e-12, atol=1e-12)
    assert torch.allclose(m[0][:, live], m2[0][:, live], rtol=1e-12, atol=1e-12)
    assert torch.allclose(s[1], s2[1], rtol=1e-12)
    # an all-True mask: every row invalid, no NaN
    out, m, s = flash_attention_reference(q, k, v, N, "BNSD", sparse_mode=0, atten_mask=torch.ones(S1, S2).bool())
    assert torch.all(out == 0) and torch.all(m == -FLT_MAX) and torch.all(s == FLT_MAX)
    low = flash_attention_lowprec(q.bfloat16(), k.bfloat16(), v.bfloat16(), N, "BNSD", atten_mask=mask, sparse_mode=1)
    assert torch.all(low[0, :, 2] == 0) and not bool(torch.isnan(low).any())


@pytest.mark.parametrize("S1,S2", [(7, 4), (4, 7), (5, 5)])
def test_prefix_range_limits(gen, S1, S2):
    B, N, D = 2, 2, 8
    q, k, v = make_inputs(gen, "BNSD", B, N, N, S1, S2, D, D)
    full = flash_attention_reference(q, k, v, N, "BNSD", scale=0.4)
    causal = flash_attention_reference(q, k, v, N, "BNSD", scale=0.4, sparse_mode=3)
    lo = 0 if S1 > S2 else S2 - S1
    i = torch.arange(S1).unsqueeze(1)
    j = torch.arange(S2).unsqueeze(0)
    for mode in (5, 6):
        def run(pfx):
            # mode 5 takes the consistent full mask, built as the torch_npu doc's example builds it
            mask = torch.stack([~((j <= i + S2 - S1) | (j < p)) for p in pfx]).unsqueeze(1) if mode == 5 else None
            return flash_attention_reference(q, k, v, N, "BNSD", scale=0.4, sparse_mode=mode, prefix=pfx,
                                             atten_mask=mask)
        hi = run([S2, S2])  # upper limit: everything visible
        assert all(torch.allclose(x, y, rtol=1e-13, atol=1e-13) for x, y in zip(hi, full))
        low = run([lo, lo])  # lower limit: right-down causal (S1 > S2: rows i < S1 - S2 invalid)
        assert all(torch.equal(x, y) for x, y in zip(low, causal))
        if S1 > S2:
            assert torch.all(low[0][:, :, :S1 - S2] == 0) and torch.all(low[1][:, :, :S1 - S2] == -FLT_MAX)
        mixed = run([lo, S2])  # per batch
        assert torch.equal(mixed[0][0], causal[0][0])
        assert torch.allclose(mixed[0][1], full[0][1], rtol=1e-13, atol=1e-13)
    # mode 5 without a mask = mode 6 (npu-flash-attn extension), which ignores its compressed mask
    p = [lo + 1 if lo < S2 else lo, S2 - 1]
    a = flash_attention_reference(q, k, v, N, "BNSD", sparse_mode=5, prefix=p)
    b = flash_attention_reference(q, k, v, N, "BNSD", sparse_mode=6, prefix=p, atten_mask=torch.ones(3072, 2048) > 0)
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_tnd_masks_per_sequence(gen):
    """TND: a [R, C] mask read at [i, j] inside each sequence; modes 0 (top-left band & mask), 1, 6 per sequence."""
    q_lens, kv_lens = [3, 0, 5, 4], [6, 2, 4, 0]
    N1, N2, D = 4, 2, 8
    q, k, v = make_inputs(gen, "TND", 0, N1, N2, 0, 0, D, D, seqs=(q_lens, kv_lens), pad=(2, 1))
    mask = rand_mask(gen, (max(q_lens) + 1, max(kv_lens) + 2))
    mask[0, :6] = True  # row 0 of every sequence fully masked in its first 6 columns (an invalid row in TND)
    qs, ks = [0] + cumsum(q_lens)[:-1], [0] + cumsum(kv_lens)[:-1]
    for mode, pre, nxt, prefix in [(0, 1, 2, None), (1, 0, 0, None), (6, 0, 0, [4, 0, 1, 0])]:
        out, m, s = flash_attention_reference(q, k, v, N1, "TND", scale=0.35, sparse_mode=mode, pre_tokens=pre,
                                              next_tokens=nxt, actual_seq_qlen=cumsum(q_lens),
                                              actual_seq_kvlen=cumsum(kv_lens), atten_mask=mask, prefix=prefix)
        for b, (sq, skv) in enumerate(zip(q_lens, kv_lens)):
            if sq == 0:
                continue
            o, mx, sm = naive_rows(q[qs[b]:qs[b] + sq].transpose(0, 1), k[ks[b]:ks[b] + skv].transpose(0, 1),
                                   v[ks[b]:ks[b] + skv].transpose(0, 1), 0.35, lambda n, i, j: doc_visible(
                                       mode, i, j, sq, skv, pre, nxt, mask[i, j], prefix and prefix[b]))
            assert torch.allclose(out[qs[b]:qs[b] + sq].transpose(0, 1), o, rtol=1e-12, atol=1e-12), (mode, b)
            off = qs[b] * N1 * 8
            got_m = m.reshape(-1)[off:off + N1 * sq * 8].view(N1, sq, 8)[..., 0]
            got_s = s.reshape(-1)[off:off + N1 * sq * 8].view(N1, sq, 8)[..., 0]
            assert torch.allclose(got_m, mx, rtol=1e-12, atol=1e-12) and torch.allclose(got_s, sm, rtol=1e-12)
        if mode == 1:
            assert torch.all(out[0] == 0) and torch.all(out[3] == 0)  # fully masked row 0 of sequences 0 and 2
        assert torch.all(out[sum(q_lens) - 4:sum(q_lens)] == 0)  # the last sequence has no keys


# the context-parallel ("外切") worked examples of docs/context/sparse_mode参数说明.md, read off its pictures:
# one unsplit TND problem (batch lengths q [3, 4, 5, 4], kv [3, 6, 5, 4] for mode 7; q [3, 5, 5, 4], kv [3, 4, 5, 4]
# for mode 8) cut along the query of batch 1 into card 1 / card 2.
def vis_rows(*r):
    return torch.tensor([[c == "1" for c in x] for x in r])


DOC_EXAMPLES = {
    # mode 7 (from mode 3): card 1 ends with the band (pre 6 >= last Skv 6, next -2), card 2 stays mode 3
    "mode7_card1": dict(mode=7, pre=6, nxt=-2, qlen=[3, 5], kvlen=[3, 9], vis=[
        vis_rows("100", "110", "111"),
        vis_rows("111000", "111100")]),
    "mode7_card2": dict(mode=3, pre=INT32_MAX, nxt=INT32_MAX, qlen=[2, 7, 11], kvlen=[6, 11, 15], vis=[
        vis_rows("111110", "111111"),
        vis_rows("10000", "11000", "11100", "11110", "11111"),
        vis_rows("1000", "1100", "1110", "1111")]),
    # mode 8 (from mode 2): card 1 stays mode 2, card 2 starts with the band (pre 4 >= first Skv 4, next 1)
    "mode8_card1": dict(mode=2, pre=INT32_MAX, nxt=INT32_MAX, qlen=[3, 5], kvlen=[3, 7], vis=[
        vis_rows("100", "110", "111"),
        vis_rows("1000", "1100")]),
    "mode8_card2": dict(mode=8, pre=4, nxt=1, qlen=[3, 8, 12], kvlen=[4, 9, 13], vis=[
        vis_rows("1110", "1111", "1111"),
        vis_rows("10000", "11000", "11100", "11110", "11111"),
        vis_rows("1000", "1100", "1110", "1111")]),
}


def tnd_check_visibility(gen, mode, pre, nxt, qlen, kvlen, vis, N1=2, N2=1, D=8):
    """Reference on TND inputs == per-sequence explicit-mask (mode 1) attention with the expected visibility."""
    q_lens = [b - a for a, b in zip([0] + qlen[:-1], qlen)]
    kv_lens = [b - a for a, b in zip([0] + kvlen[:-1], kvlen)]
    q, k, v = make_inputs(gen, "TND", 0, N1, N2, 0, 0, D, D, seqs=(q_lens, kv_lens))
    out, m, s = flash_attention_reference(q, k, v, N1, "TND", scale=0.5, sparse_mode=mode, pre_tokens=pre,
                                          next_tokens=nxt, actual_seq_qlen=qlen, actual_seq_kvlen=kvlen,
                                          atten_mask=torch.ones(2048, 2048, dtype=torch.bool).triu(1))
    band_b = R.band_sequence_index(qlen, mode)
    q0 = k0 = 0
    for b, (sq, skv) in enumerate(zip(q_lens, kv_lens)):
        assert torch.equal(R.visible_mask(sq, skv, mode, pre, nxt, band=b == band_b), vis[b]), b
        o, mx, sm = naive_rows(q[q0:q0 + sq].transpose(0, 1), k[k0:k0 + skv].transpose(0, 1),
                               v[k0:k0 + skv].transpose(0, 1), 0.5, lambda n, i, j: bool(vis[b][i, j]))
        assert torch.allclose(out[q0:q0 + sq].transpose(0, 1), o, rtol=1e-12, atol=1e-12), b
        off = q0 * N1 * 8
        assert torch.allclose(m.reshape(-1)[off:off + N1 * sq * 8].view(N1, sq, 8)[..., 0], mx, rtol=1e-12, atol=1e-12)
        q0, k0 = q0 + sq, k0 + skv


@pytest.mark.parametrize("case", list(DOC_EXAMPLES))
def test_context_parallel_doc_examples(gen, case):
    tnd_check_visibility(gen, **DOC_EXAMPLES[case])


def test_context_parallel_split_reassembles_the_unsplit_mask():
    # mode 7: batch 1 (Sq 4, Skv 6) right-down causal = card 1's band rows over card 2's first rows
    ex1, ex2 = DOC_EXAMPLES["mode7_card1"], DOC_EXAMPLES["mode7_card2"]
    assert torch.equal(torch.cat([ex1["vis"][1], ex2["vis"][0]]), vis_rows("111000", "111100", "111110", "111111"))
    assert torch.equal(R.visible_mask(4, 6, 3), vis_rows("111000", "111100", "111110", "111111"))
    # mode 8: batch 1 (Sq 5, Skv 4) left-up causal = card 1's last rows over card 2's band rows
    ex1, ex2 = DOC_EXAMPLES["mode8_card1"], DOC_EXAMPLES["mode8_card2"]
    full = vis_rows("1000", "1100", "1110", "1111", "1111")
    assert torch.equal(torch.cat([ex1["vis"][1], ex2["vis"][0]]), full)
    assert torch.equal(R.visible_mask(5, 4, 2), full)


def test_band_sequence_role_skips_empty_sequences(gen):
    assert R.band_sequence_index([3, 5, 5], 7) == 1  # trailing zero-length sequence
    assert R.band_sequence_index([3, 5, 0, 0], 7) == 1  # trailing zeros disable batches
    assert R.band_sequence_index([0, 0, 3, 5], 8) == 2  # leading zero-length sequences
    assert R.band_sequence_index([3, 5], 3) is None and R.band_sequence_index([0, 0], 7) is None
    # mode 7 card 1 with an empty sequence after the band one: same visibility as the doc example
    tnd_check_visibility(gen, 7, 6, -2, [3, 5, 5], [3, 9, 11], DOC_EXAMPLES["mode7_card1"]["vis"] + [
        torch.zeros(0, 2, dtype=torch.bool)])
    # mode 8 card 2 with an empty first sequence
    tnd_check_visibility(gen, 8, 4, 1, [0, 3, 8, 12], [2, 6, 11, 15], [torch.zeros(0, 2, dtype=torch.bool)]
                         + DOC_EXAMPLES["mode8_card2"]["vis"])
    # Sq > 0 with Skv = 0 keeps the role (the built-in's tiling looks at the query length only): batch 0 is mode 3
    assert R.band_sequence_index([3, 5], 7) == 1
    tnd_check_visibility(gen, 7, 0, 0, [3, 5], [3, 3], [vis_rows("100", "110", "111"), torch.zeros(2, 0).bool()])


@pytest.mark.parametrize("layout,mode", [("BNSD", 1), ("BNSD", 5), ("TND", 0), ("TND", 7)])
def test_autograd_through_masks(gen, layout, mode):
    """float64 autograd: finite gradients, exactly zero for the q rows that see nothing; gradcheck on a tiny case."""
    N, D = 2, 4
    if layout == "TND":
        # the last sequence has no keys: in mode 7 it still takes the band role, sequence 1 is right-down causal
        qlen, kvlen = [3, 7, 9], [4, 9, 9]
        q, k, v = make_inputs(gen, "TND", 0, N, N, 0, 0, D, D, seqs=([3, 4, 2], [4, 5, 0]))
        mask = torch.zeros(4, 5, dtype=torch.bool)
        mask[1] = True  # row 1 of each sequence fully masked (mode 0); mode 7 ignores the mask
        kw = dict(actual_seq_qlen=qlen, actual_seq_kvlen=kvlen, sparse_mode=mode, atten_mask=mask, pre_tokens=2,
                  next_tokens=1)
        dead = [1, 4, 7, 8] if mode == 0 else [7, 8]
    else:
        q, k, v = make_inputs(gen, "BNSD", 1, N, N, 4, 5, D, D)
        mask = rand_mask(gen, (1, N, 4, 5), 0.3)
        mask[0, 1, 2] = True
        kw = dict(sparse_mode=mode, atten_mask=mask, prefix=[2])
        dead = None
    q, k, v = (t.clone().requires_grad_() for t in (q, k, v))

    def f(q, k, v):
        return flash_attention_reference(q, k, v, N, layout, scale=0.6, **kw)
    out, m, s = f(q, k, v)
    w = torch.randn(out.shape, generator=gen, dtype=torch.float64)
    ((out * w).sum() + (m[m > -FLT_MAX]).sum() * 0.1).backward()
    for t in (q, k, v):
        assert t.grad is not None and bool(torch.isfinite(t.grad).all())
    if layout == "TND":
        assert torch.all(q.grad[dead] == 0) and bool((q.grad.abs().sum(-1) > 0).sum() > 0)
        assert torch.all(out[dead] == 0)
    else:
        vis = R.visible_mask(4, 5, mode, atten_mask=mask[0], prefix=2)
        dead_rows = ~vis.any(-1)  # [N, 4]
        assert bool(dead_rows[1, 2])
        assert torch.all(q.grad[0][dead_rows] == 0) and torch.all(q.grad[0][~dead_rows].abs().sum(-1) > 0)
    assert torch.autograd.gradcheck(lambda q, k, v: f(q, k, v)[0], (q.detach().requires_grad_(),
                                    k.detach().requires_grad_(), v.detach().requires_grad_()))
