"""The forward's high-performance mode (inner_precise bit 0): the scores may leave the cube rounded to the input
dtype. The kernel path is forced on (twin_backend.set_score_override) for every case of the feature problems
(layouts, GQA/MQA, head dims and lengths off the block grid, causal/band/dense masks, TND with padding) and the
features (sink, softcap, ALiBi, dropout), fp16 and bf16, against the float64 reference with the FlashAttention
criterion; the statistics within the rounding of the scores. The backward's mode (S and dP out of the cube in the
input dtype, where the forward's tiling takes 16-bit scores): gradients through autograd on every case and feature,
its schedules (recompute, deterministic). Then the tiling's rule (where the mode takes 16-bit scores, the same for
both directions), the fp16 range rule and the argument checks."""
from __future__ import annotations

import math

import pytest
import torch

import npu_flash_attn
from npu_flash_attn import problem as problem_module, twin_backend
from npu_flash_attn.criterion import assert_close_fa, assert_stats_close
from npu_flash_attn.reference import flash_attention_lowprec, flash_attention_reference
from feature_problems import CASES, DT, case_id, check_grads, problem

fwd = torch.ops.npu.flash_attention
EPS = {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}  # unit roundoff of the scores' dtype


@pytest.fixture
def low_scores():
    twin_backend.set_score_override(True)
    yield
    twin_backend.set_score_override(None)


def check_hp_forward(args, kw, inner_precise=1):
    """Output (FA criterion) and statistics against float64. The statistics come from scores rounded to the input
    dtype: softmax_max moves by the rounding of the scaled score it comes from (at most u |x| for the largest
    |x| = |scale q.k| of the problem: a bias or a cap can make the max much smaller than that score), softmax_sum by
    about twice that, relatively (each term exp(x - max) moves by |dx - dmax|)."""
    q, k, v, n1, layout = args
    out, smax, ssum = fwd(*args, inner_precise=inner_precise, **kw)
    info = npu_flash_attn.last_launch_info()
    assert info["score_dtype"] == {torch.float16: "fp16", torch.bfloat16: "bf16"}[q.dtype]
    dbl = {n: (x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x) for n, x in kw.items()}
    ro, rm, rs = flash_attention_reference(q.double(), k.double(), v.double(), n1, layout, **dbl)
    assert_close_fa(out, ro, flash_attention_lowprec(q, k, v, n1, layout, **kw))
    u = EPS[q.dtype]
    p = problem_module.validate_flash_attention(q, k, v, n1, layout, **kw)
    x_top = abs(kw.get("scale", 1.0)) * problem_module._max_abs_score(p, q, k) + 1.0
    assert_stats_close(smax, ssum, rm, rs, max_tol=2 * u * x_top + 1e-4, sum_rtol=4 * u * x_top + 2e-4)
    return out


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_high_performance_forward_cases(case, gen, low_scores):
    args, kw = problem(case, gen, q_gain=2.0)
    check_hp_forward(args, kw, inner_precise=(1, 3)[CASES.index(case) % 2])


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
def test_high_performance_features(dt, gen, low_scores):
    # sink, softcap, ALiBi and dropout on top of the rounded scores, off the block grid
    case = ("BSND", dt, 2, 150, 333, 4, 2, 72, {})
    args, kw = problem(case, gen, q_gain=1.5)
    n1 = 4
    feats = [dict(sink=torch.randn(n1, generator=gen)), dict(softcap=12.0, sparse_mode=3),
             dict(pse=torch.rand(n1, generator=gen) * 0.3, pse_type=2),
             dict(keep_prob=0.8, seed=int(torch.randint(0, 2 ** 31, (1,), generator=gen)), offset=5)]
    for f in feats:
        check_hp_forward(args, dict(kw, **f))


HALF_CHAIN = [
    ("BNSD", "fp16", 1, 300, 1200, 2, 2, 128, {}),
    ("BSND", "fp16", 2, 150, 1100, 4, 2, 128, dict(sparse_mode=3)),
    ("BSH", "fp16", 1, 260, 1500, 2, 1, 64, dict(sparse_mode=4, pre_tokens=900, next_tokens=0)),
    ("BNSD", "fp16", 2, 140, 1300, 2, 2, 96, dict(atten_mask="tail")),
    ("TND", "fp16", 2, 0, 0, 4, 2, 128, dict(actual_seq_qlen=[100, 350], actual_seq_kvlen=[700, 1900],
                                             sparse_mode=3)),
]


def half_chain_problem(case, gen):
    """A HALF_CHAIN case with a scale exact in fp16 (2^-3 or 2^-4); "tail": a dense mask whose third tile is masked
    in batch 0, with every tile visible but the first, mixed, in batch 1."""
    if case[8].get("atten_mask") == "tail":
        layout, dt, B, S1, S2 = case[:5]
        args, kw = problem(case[:8] + ({},), gen, q_gain=2.0)
        m = torch.zeros(B, 1, S1, S2, dtype=torch.bool)
        m[0, :, :, 1024:] = True
        m[1, :, 7, 3] = True
        kw["atten_mask"] = m
    else:
        args, kw = problem(case, gen, q_gain=2.0)
    kw["scale"] = 2.0 ** -3 if case[7] <= 96 else 2.0 ** -4
    return args, kw


@pytest.mark.parametrize("case", HALF_CHAIN, ids=case_id)
def test_half_chain_tiles(case, gen):
    # key lengths past two 512-key tiles: fully visible tiles take the fp16 chain, band-cut, masked and tail tiles
    # the widened fp32 path, in the same rows (the tiling's choice: fp16, no per-score features, a scale exact in
    # fp16)
    check_hp_forward(*half_chain_problem(case, gen))
    assert npu_flash_attn.last_launch_info()["half_softmax"]


@pytest.mark.parametrize("extra,s1,s2", [(dict(sparse_mode=3), 1700, 1700),
                                        (dict(sparse_mode=4, pre_tokens=1300, next_tokens=0), 1800, 1800),
                                        (dict(sparse_mode=2), 1100, 2000)], ids=["causal", "band", "left-up"])
def test_half_chain_right_band_edge(extra, s1, s2, gen):
    # chunks only the band's right edge cuts, whose rows see 1024 keys or more, take the fp16 chain with the edge
    # masked in half (rows from 1024 on in the causal case); the other band chunks (fewer keys, the left edge of
    # mode 4, the tail tile) take the widened fp32 path in the same tasks
    case = ("BNSD", "fp16", 1, s1, s2, 2, 1, 128, extra)
    args, kw = problem(case, gen, q_gain=2.0)
    kw["scale"] = 2.0 ** -4
    check_hp_forward(args, kw)
    assert npu_flash_attn.last_launch_info()["half_softmax"]


def test_tiling_takes_16bit_scores_where_they_pay(gen):
    # fp16 in the high-performance mode: when the fp16 chain applies (no softcap, bias or dropout, a scale exact in
    # fp16: D = 64's default 1/8, not D = 128's 1/sqrt(128)), else from D >= 192; never for bf16 or inner_precise 0/2
    for dt, d, ip, extra, want, chain in (
            ("fp16", 64, 1, {}, "fp16", True), ("fp16", 128, 3, dict(scale=0.0625), "fp16", True),
            ("fp16", 128, 1, {}, "fp32", False), ("fp16", 64, 0, {}, "fp32", False), ("fp16", 64, 2, {}, "fp32", False),
            ("fp16", 64, 1, dict(softcap=20.0), "fp32", False), ("fp16", 160, 1, dict(keep_prob=0.9), "fp32", False),
            ("fp16", 192, 1, dict(softcap=20.0), "fp16", False), ("fp16", 256, 1, {}, "fp16", True),
            ("bf16", 256, 1, {}, "fp32", False)):
        args, kw = problem(("BNSD", dt, 1, 70, 300, 2, 2, d, {}), gen)
        kw.update(extra)
        fwd(*args, inner_precise=ip, **kw)
        info = npu_flash_attn.last_launch_info()
        assert (info["score_dtype"], info["half_softmax"]) == (want, chain), (dt, d, ip, extra)
        assert info["half_row_sums"] == (chain and d > 64)  # sums of 16 in half where the vector cores bind


def test_high_performance_differs_from_default(gen):
    # the 16-bit scores really are taken (the outputs differ), and both modes meet the criterion
    args, kw = problem(("BNSD", "fp16", 1, 200, 520, 2, 2, 256, {}), gen, q_gain=3.0)
    o0 = fwd(*args, **kw)[0]
    o1 = check_hp_forward(args, kw)
    assert not torch.equal(o0, o1)


def check_hp_grads(args, kw, gen, train=()):
    """Gradients through autograd in the high-performance mode, 3x torch's error (FA criterion); the backward took
    its S and dP out of the cube in the input dtype."""
    check_grads(args, kw, gen, train=train, op_kw=dict(inner_precise=1))
    assert npu_flash_attn.last_launch_info()["score_dtype"] == {torch.float16: "fp16", torch.bfloat16: "bf16"}[
        args[0].dtype]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_high_performance_gradients(case, gen, low_scores):
    # every layout/dtype/mask case (GQA, TND with padding among them): the backward's P comes from the same rounded
    # scores as the forward's statistics
    args, kw = problem(case, gen)
    check_hp_grads(args, kw, gen)


def test_high_performance_gradients_regression_seed(low_scores):
    # a draw on which fp32 scores in the backward against the forward's 16-bit statistics missed the criterion
    # (dq 5.7e-3 > 3 * 1.37e-3 + 1e-5)
    gen = torch.Generator().manual_seed(3100339400)
    args, kw = problem(CASES[1], gen)
    check_hp_grads(args, kw, gen)


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
def test_high_performance_gradient_features(dt, gen, low_scores):
    # trained sink with softcap, ALiBi, a trained outer pse, dropout; GQA, off the block grid
    case = ("BSND", dt, 2, 150, 333, 4, 2, 72, dict(sparse_mode=3))
    args, kw = problem(case, gen, q_gain=1.5)
    n1, seed = 4, int(torch.randint(0, 2 ** 31, (1,), generator=gen))
    check_hp_grads(args, dict(kw, sink=torch.randn(n1, generator=gen), softcap=15.0), gen, train=("sink",))
    check_hp_grads(args, dict(kw, pse=torch.rand(n1, generator=gen) * 0.3, pse_type=2), gen)
    pse = torch.randn(1, n1, 150, 333, generator=gen).to(args[0].dtype)
    check_hp_grads(args, dict(kw, pse=pse, pse_type=1), gen, train=("pse",))
    check_hp_grads(args, dict(kw, keep_prob=0.8, seed=seed, offset=7), gen)


def test_high_performance_grad_schedules(gen, low_scores):
    # the recompute schedule (no stored tiles) and the deterministic flag give what the stored one gives, within the
    # criterion; the deterministic run equals the default bitwise (one schedule, no atomics)
    case = ("BNSD", "fp16", 2, 140, 300, 4, 2, 64, dict(sparse_mode=4, pre_tokens=150, next_tokens=20))
    args, kw = problem(case, gen)
    q, k, v, n1, layout = args
    out, smax, ssum = fwd(q, k, v, n1, layout, inner_precise=1, **kw)
    dy = torch.randn(out.shape, generator=gen).to(out.dtype)

    def grad(**extra):
        g = torch.ops.npu.flash_attention_grad(q, k, v, dy, n1, layout, softmax_max=smax, softmax_sum=ssum,
                                               attention_in=out, inner_precise=1, **kw, **extra)[:3]
        info = npu_flash_attn.last_launch_info()
        assert info["score_dtype"] == "fp16"
        return g, info["stored_tiles"]
    stored, was_stored = grad()
    det, _ = grad(deterministic=True)
    assert was_stored and all(torch.equal(a, b) for a, b in zip(stored, det))
    twin_backend.set_bwd_store_limit(1)
    try:
        recomputed, was_stored = grad()
    finally:
        twin_backend.set_bwd_store_limit(None)
    assert not was_stored
    check_grads(args, kw, gen, op_kw=dict(inner_precise=1))  # the criterion's references on the same problem
    for a, b in zip(stored, recomputed):
        assert (a.double() - b.double()).abs().max() <= 4 * torch.finfo(torch.float16).eps * b.double().abs().max()


def test_backward_takes_16bit_scores_where_the_forward_does(gen):
    # the forward's tiling rule decides for both directions (no override): fp16 with its fp16 chain or D >= 192;
    # the workspace's S and dP slots (kBwdSlots = 4 each per core) shrink from fp32 to 16 bits
    for dt, d, ip, extra, want in (
            ("fp16", 64, 1, {}, "fp16"), ("fp16", 128, 1, {}, "fp32"), ("fp16", 128, 3, dict(scale=0.0625), "fp16"),
            ("fp16", 64, 0, {}, "fp32"), ("fp16", 192, 1, dict(softcap=20.0), "fp16"), ("bf16", 256, 1, {}, "fp32")):
        (q, k, v, n1, layout), kw = problem(("BNSD", dt, 1, 70, 300, 2, 2, d, {}), gen)
        kw.update(extra)
        out, smax, ssum = fwd(q, k, v, n1, layout, inner_precise=ip, **kw)
        assert npu_flash_attn.last_launch_info()["score_dtype"] == want
        dy = torch.randn(out.shape, generator=gen).to(out.dtype)
        sizes = {}
        for mode in (ip, ip & 2):
            torch.ops.npu.flash_attention_grad(q, k, v, dy, n1, layout, softmax_max=smax, softmax_sum=ssum,
                                               attention_in=out, inner_precise=mode, **kw)
            sizes[mode] = info = npu_flash_attn.last_launch_info()
        assert info["score_dtype"] == "fp32" and sizes[ip]["score_dtype"] == want, (dt, d, ip, extra)
        if want != "fp32":
            saved = 2 * 4 * info["s1_block"] * info["s2_block"] * 2 * max(info["block_dim_dq"], info["block_dim_dkv"])
            assert info["workspace_bytes"] - sizes[ip]["workspace_bytes"] == saved


def test_fp16_scores_must_fit_fp16(gen):
    # the rule belongs to the mode (fp16, bit 0 set), whatever the tiling picks: D = 256 takes 16-bit scores
    q = torch.full((1, 1, 16, 256), 20.0).half()
    k = torch.full((1, 1, 16, 256), 15.0).half()  # q.k = 76800 > 65504
    v = torch.randn(1, 1, 16, 256, generator=gen).half()
    with pytest.raises(ValueError, match=r"inner_precise.*76800.*65504"):
        fwd(q, k, v, 1, "BNSD", scale=1e-4, inner_precise=1)
    out = fwd(q, k, v, 1, "BNSD", scale=1e-4, inner_precise=0)[0]  # fp32 scores hold it
    assert torch.isfinite(out).all()
    # bf16 scores have float32's range: no such limit
    fwd(q.bfloat16(), k.bfloat16(), v.bfloat16(), 1, "BNSD", scale=1e-4, inner_precise=1)
    # a large Cauchy-Schwarz bound alone is not refused: the exact largest |q.k| decides
    q2 = torch.zeros(1, 1, 16, 256).half()
    k2 = torch.zeros(1, 1, 16, 256).half()
    q2[..., 0, 0], k2[..., 0, 1] = 300.0, 300.0  # norms 300 x 300 = 90000, every q.k = 0
    fwd(q2, k2, v, 1, "BNSD", scale=0.125, inner_precise=1)
    assert npu_flash_attn.last_launch_info()["score_dtype"] == "fp16"
    with pytest.raises(ValueError, match=r"inner_precise.*76800"):  # also where the tiling keeps fp32 scores
        fwd(q[..., :128], k[..., :128] * 2, v[..., :128], 1, "BNSD", scale=1e-4, inner_precise=1)
    # the backward's mode has the same rule (its S leaves the cube in the input dtype too)
    out, smax, ssum = fwd(q, k, v, 1, "BNSD", scale=1e-4)
    saved = dict(softmax_max=smax, softmax_sum=ssum, attention_in=out, scale=1e-4)
    with pytest.raises(ValueError, match=r"inner_precise.*76800.*65504"):
        torch.ops.npu.flash_attention_grad(q, k, v, out, 1, "BNSD", inner_precise=1, **saved)
    assert torch.isfinite(torch.ops.npu.flash_attention_grad(q, k, v, out, 1, "BNSD", **saved)[0]).all()


@pytest.mark.parametrize("bad", [4, -1, 7])
def test_inner_precise_range(bad):
    q = torch.randn(1, 1, 8, 16).half()
    with pytest.raises(ValueError, match=rf"inner_precise={bad} must be 0-3"):
        fwd(q, q, q, 1, "BNSD", inner_precise=bad)


def test_dropin_passes_inner_precise(gen):
    q, k, v = (torch.randn(1, 40, 2, 256, generator=gen).half() for _ in range(3))
    npu_flash_attn.npu_fusion_attention(q, k, v, 2, "BSND", scale=0.125, inner_precise=1)
    assert npu_flash_attn.last_launch_info()["score_dtype"] == "fp16"
    npu_flash_attn.npu_fusion_attention(q, k, v, 2, "BSND", scale=0.125)
    assert npu_flash_attn.last_launch_info()["score_dtype"] == "fp32"
