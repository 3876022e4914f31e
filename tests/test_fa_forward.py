"""Forward npu::flash_attention on the CPU twin against the float64 reference (npu_flash_attn.reference).

Criterion (DEVELOPERS.md): max|out - ref64| <= 2 * max|out_lowprec_torch - ref64| + 1e-5; softmax_max/sum within
fp32-statistics tolerances; invalid rows exactly 0 / -FLT_MAX / +FLT_MAX.

The grid axes are (S1, S2) x D x MHA/GQA/MQA x fp16/bf16 x sparse mode (0, 2, 3, 4 with several pre/next) x
layout x chip. The default suite runs a pairwise covering subset of that grid (every pair of axis values appears
in at least one case; fixed selection, fresh random data each run) with small batch/head counts; the full
cartesian grid (plus D=512 and D=192/Dv=128) is marked `slow` (run with `pytest -m slow`; the chip axis is rotated
through the cases there unless NPU_FA_SLOW_ALL_CHIPS=1 crosses it fully).
"""
from __future__ import annotations

import itertools
import math
import os
import random
import re
import textwrap
from dataclasses import dataclass

import pytest
import torch

import npu_flash_attn
from npu_flash_attn import _C, problem
from npu_flash_attn.criterion import assert_close_fa, assert_stats_close
from npu_flash_attn.reference import FLT_MAX, flash_attention_lowprec, flash_attention_reference

op = torch.ops.npu.flash_attention
CHIPS = [c["name"] for c in _C.chips()]
SEQS = [(1, 1), (113, 203), (128, 217), (256, 512), (512, 256), (1023, 1024), (2048, 2048)]
DIMS = [(32, 32), (64, 64), (80, 80), (96, 96), (128, 128), (192, 192), (256, 256)]
SLOW_DIMS = DIMS + [(512, 512), (192, 128)]
HEADS = ["mha", "gqa", "mqa"]
DTYPES = ["fp16", "bf16"]
SPARSE = ["full", "causal_lu", "causal_rd", "band_win", "band_wide", "band_fut", "band_past"]
LAYOUTS = ["BSH", "SBH", "BSND", "BNSD", "TND"]
TORCH_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class Case:
    S1: int
    S2: int
    D: int
    Dv: int
    heads: str
    dtype: str
    sparse: str
    layout: str
    chip: str

    @property
    def big(self) -> bool:
        return self.S1 * self.S2 >= 1023 * 1024

    @property
    def batch(self) -> int:
        return 2 if self.S1 * self.S2 <= 128 * 217 else 1

    @property
    def n1_n2(self) -> tuple[int, int]:
        if self.big:
            return {"mha": (1, 1), "gqa": (4, 2), "mqa": (2, 1)}[self.heads]
        return {"mha": (2, 2), "gqa": (4, 2), "mqa": (3, 1)}[self.heads]

    def seqs(self) -> tuple[list[int], list[int]]:
        """TND: per-sequence lengths (the first sequence has the maximal lengths S1/S2)."""
        return [self.S1, max(1, self.S1 // 2)], [self.S2, max(1, (2 * self.S2) // 3)]

    def mask_args(self) -> dict:
        s1, s2 = self.S1, self.S2
        return {
            "full": dict(sparse_mode=0),
            "causal_lu": dict(sparse_mode=2),
            "causal_rd": dict(sparse_mode=3),
            "band_win": dict(sparse_mode=4, pre_tokens=64, next_tokens=0),
            "band_wide": dict(sparse_mode=4, pre_tokens=s1 // 3 + 7, next_tokens=s2 // 5 + 3),
            "band_fut": dict(sparse_mode=4, pre_tokens=-min(10, s1 - 1), next_tokens=50),
            "band_past": dict(sparse_mode=4, pre_tokens=100, next_tokens=-min(5, s2 - 1)),
        }[self.sparse]

    def cost(self) -> float:
        """Rough multiply-accumulates of the launch (visible fraction of the score matrix ignored)."""
        n1, _ = self.n1_n2
        rows = sum(a * b for a, b in zip(*self.seqs())) if self.layout == "TND" else self.batch * self.S1 * self.S2
        frac = 1.0 if self.sparse == "full" else 0.6
        return n1 * rows * (self.D + self.Dv) * frac

    def id(self) -> str:
        d = f"d{self.D}" if self.D == self.Dv else f"d{self.D}v{self.Dv}"
        return f"{self.S1}x{self.S2}-{d}-{self.heads}-{self.dtype}-{self.sparse}-{self.layout}-{self.chip}"


# ---------------------------------------------------------------------------------------------------------------
# pairwise covering subset (fixed selection; greedy, ties broken toward cheaper cases)
# ---------------------------------------------------------------------------------------------------------------
def pairwise_cases(axes: dict, make, candidates: int = 40, seed: int = 2024) -> list:
    names = list(axes)
    uncovered = {(a, i, b, j) for x, a in enumerate(names) for b in names[x + 1:]
                 for i in range(len(axes[a])) for j in range(len(axes[b]))}
    rng = random.Random(seed)  # selection of cases only; the data is random per run
    rows = []

    def covers(row):
        return {(a, row[a], b, row[b]) for x, a in enumerate(names) for b in names[x + 1:]} & uncovered

    while uncovered:
        best = None
        pool = sorted(uncovered)
        for _ in range(candidates):
            a, i, b, j = rng.choice(pool)
            row = {a: i, b: j}
            rest = [n for n in names if n not in row]
            rng.shuffle(rest)
            for n in rest:
                def gain(v):
                    return sum((m, row[m], n, v) in uncovered or (n, v, m, row[m]) in uncovered for m in row)
                vals = list(range(len(axes[n])))
                rng.shuffle(vals)
                row[n] = max(vals, key=gain)
            got = covers(row)
            key = (len(got), -make(row).cost())
            if best is None or key > best[0]:
                best = (key, row, got)
        rows.append(make(best[1]))
        uncovered -= best[2]
    return rows


def _make(axes):
    def make(row):
        (s1, s2), (d, dv) = axes["seq"][row["seq"]], axes["dim"][row["dim"]]
        return Case(s1, s2, d, dv, axes["heads"][row["heads"]], axes["dtype"][row["dtype"]],
                    axes["sparse"][row["sparse"]], axes["layout"][row["layout"]], axes["chip"][row["chip"]])
    return make


AXES = {"seq": SEQS, "dim": DIMS, "heads": HEADS, "dtype": DTYPES, "sparse": SPARSE, "layout": LAYOUTS,
        "chip": CHIPS}
DEFAULT_CASES = pairwise_cases(AXES, _make(AXES))


def slow_cases() -> list[Case]:
    all_chips = os.environ.get("NPU_FA_SLOW_ALL_CHIPS") == "1"
    out = []
    for idx, ((s1, s2), (d, dv), h, dt, sp, lay) in enumerate(
            itertools.product(SEQS, SLOW_DIMS, HEADS, DTYPES, SPARSE, LAYOUTS)):
        for chip in (CHIPS if all_chips else [CHIPS[idx % len(CHIPS)]]):
            out.append(Case(s1, s2, d, dv, h, dt, sp, lay, chip))
    return out


# ---------------------------------------------------------------------------------------------------------------
# running one case
# ---------------------------------------------------------------------------------------------------------------
def cumsum(lens):
    return list(itertools.accumulate(lens))


def make_qkv(gen, layout, B, N1, N2, S1, S2, D, Dv, dtype, q_lens=None, kv_lens=None, pad=(0, 0)):
    def rnd(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float32).to(dtype)
    if layout == "TND":
        T1, T2 = sum(q_lens) + pad[0], sum(kv_lens) + pad[1]
        return rnd(T1, N1, D), rnd(T2, N2, D), rnd(T2, N2, Dv)
    shape = {"BSH": lambda S, N, d: (B, S, N * d), "SBH": lambda S, N, d: (S, B, N * d),
             "BSND": lambda S, N, d: (B, S, N, d), "BNSD": lambda S, N, d: (B, N, S, d)}[layout]
    return rnd(*shape(S1, N1, D)), rnd(*shape(S2, N2, D)), rnd(*shape(S2, N2, Dv))


def run_and_check(q, k, v, head_num, layout, *, chip=None, label="", **kw):
    """Runs the op (on `chip` if given) and checks out / softmax_max / softmax_sum against the reference."""
    if chip is not None:
        npu_flash_attn.set_chip(chip)
    try:
        out, smax, ssum = op(q, k, v, head_num, layout, **kw)
        info = npu_flash_attn.last_launch_info()
    finally:
        if chip is not None:
            npu_flash_attn.set_chip(None)
    ref_kw = {n: kw[n] for n in ("scale", "sparse_mode", "pre_tokens", "next_tokens", "actual_seq_qlen",
                                 "actual_seq_kvlen", "atten_mask", "prefix") if n in kw}
    ref_o, ref_m, ref_s = flash_attention_reference(q, k, v, head_num, layout, **ref_kw)
    low = flash_attention_lowprec(q, k, v, head_num, layout, **ref_kw)
    assert out.dtype == q.dtype and tuple(out.shape) == tuple(ref_o.shape), (label, out.dtype, out.shape)
    err, bound = assert_close_fa(out, ref_o, low, what=f"attention_out [{label}]")
    # invalid rows are exactly zero (the reference is exactly 0 only there)
    zero = ref_o == 0
    assert bool((out[zero] == 0).all()), f"{label}: invalid rows of attention_out are not exactly 0"
    stats = assert_stats_close(smax, ssum, ref_m, ref_s)
    if chip is not None:
        assert info is not None and info["chip"] == chip, (label, info)
    return {"err": err, "bound": bound, **stats, "info": info}


def run_case(case: Case, gen):
    N1, N2 = case.n1_n2
    dtype = TORCH_DTYPES[case.dtype]
    kw = dict(scale=1.0 / math.sqrt(case.D), **case.mask_args())
    if case.layout == "TND":
        q_lens, kv_lens = case.seqs()
        q, k, v = make_qkv(gen, "TND", 0, N1, N2, 0, 0, case.D, case.Dv, dtype, q_lens, kv_lens, pad=(3, 2))
        kw.update(actual_seq_qlen=cumsum(q_lens), actual_seq_kvlen=cumsum(kv_lens))
    else:
        q, k, v = make_qkv(gen, case.layout, case.batch, N1, N2, case.S1, case.S2, case.D, case.Dv, dtype)
    return run_and_check(q, k, v, N1, case.layout, chip=case.chip, label=case.id(), **kw)


@pytest.mark.parametrize("case", DEFAULT_CASES, ids=[c.id() for c in DEFAULT_CASES])
def test_forward_pairwise(case, gen):
    run_case(case, gen)


@pytest.mark.slow
@pytest.mark.parametrize("case", slow_cases(), ids=lambda c: c.id())
def test_forward_full_grid(case, gen):
    run_case(case, gen)


def test_pairwise_selection_covers_every_pair():
    # a meta-test of the selection above (no kernel): each pair of axis values occurs in some default case
    fields = {"seq": lambda c: (c.S1, c.S2), "dim": lambda c: (c.D, c.Dv), "heads": lambda c: c.heads,
              "dtype": lambda c: c.dtype, "sparse": lambda c: c.sparse, "layout": lambda c: c.layout,
              "chip": lambda c: c.chip}
    names = list(fields)
    for x, a in enumerate(names):
        for b in names[x + 1:]:
            seen = {(fields[a](c), fields[b](c)) for c in DEFAULT_CASES}
            assert seen == set(itertools.product(AXES[a], AXES[b])), (a, b)
    for case in DEFAULT_CASES:  # each band variant reaches the matrix (else the op would reject the case)
        args = case.mask_args()
        if args["sparse_mode"] == 4:
            q, k = (torch.empty(1, 1, s, 16, dtype=torch.float16, device="meta") for s in (case.S1, case.S2))
            problem.validate_flash_attention(q, k, k, 1, "BNSD", sparse_mode=4, pre_tokens=args["pre_tokens"],
                                         next_tokens=args["next_tokens"])


# ---------------------------------------------------------------------------------------------------------------
# varlen
# ---------------------------------------------------------------------------------------------------------------
def random_lengths(gen, n, hi):
    """n lengths in [0, hi] including at least one 0 and one 1."""
    lens = torch.randint(0, hi + 1, (n,), generator=gen).tolist()
    pos = torch.randperm(n, generator=gen).tolist()
    lens[pos[0]], lens[pos[1]] = 0, 1
    return lens


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("mask", [dict(sparse_mode=0), dict(sparse_mode=2), dict(sparse_mode=3),
                                  dict(sparse_mode=4, pre_tokens=40, next_tokens=5),
                                  dict(sparse_mode=4, pre_tokens=7, next_tokens=-3)],
                         ids=["full", "causal_lu", "causal_rd", "band", "band_past"])
@pytest.mark.parametrize("heads", [(4, 4), (6, 2), (4, 1)], ids=["mha", "gqa", "mqa"])
def test_varlen_zero_and_one_length_sequences(gen, dtype, mask, heads):
    N1, N2 = heads
    D = [64, 128, 80][N1 % 3]
    q_lens, kv_lens = random_lengths(gen, 6, 300), random_lengths(gen, 6, 300)
    pad = tuple(torch.randint(0, 4, (2,), generator=gen).tolist())
    q, k, v = make_qkv(gen, "TND", 0, N1, N2, 0, 0, D, D, TORCH_DTYPES[dtype], q_lens, kv_lens, pad=pad)
    label = f"q_lens={q_lens} kv_lens={kv_lens} pad={pad}"
    run_and_check(q, k, v, N1, "TND", label=label, scale=D ** -0.5, actual_seq_qlen=cumsum(q_lens),
                  actual_seq_kvlen=cumsum(kv_lens), **mask)


def test_varlen_trailing_zeros_disable_batches(gen):
    q_lens, kv_lens = [37, 100, 5], [64, 90, 5]
    q, k, v = make_qkv(gen, "TND", 0, 4, 2, 0, 0, 64, 64, torch.bfloat16, q_lens + [11], kv_lens + [13])
    cu_q, cu_kv = cumsum(q_lens) + [0, 0], cumsum(kv_lens) + [0, 0]
    res = run_and_check(q, k, v, 4, "TND", label="trailing zeros", scale=0.125, sparse_mode=3,
                        actual_seq_qlen=cu_q, actual_seq_kvlen=cu_kv)
    assert res["invalid_rows"] >= 11 * 4  # the 11 tokens of the disabled tail


def test_varlen_nothing_to_compute_needs_no_launch(gen):
    q, k, v = make_qkv(gen, "TND", 0, 2, 2, 0, 0, 32, 32, torch.float16, [3, 4], [0, 0])
    before = npu_flash_attn.last_launch_info()
    out, m, s = op(q, k, v, 2, "TND", actual_seq_qlen=[3, 7], actual_seq_kvlen=[0, 0])
    assert npu_flash_attn.last_launch_info() == before
    assert torch.all(out == 0) and torch.all(m == -FLT_MAX) and torch.all(s == FLT_MAX)


@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_one_row_task_right_after_multi_step_tasks(gen, layout):
    # A 1-row task leaves the second AIV no rows: its steps only signal ProbsReady, right after the fold of an
    # earlier task's step, whose MTE2 read of the workspace slot the cube's next P*V overwrites (kernel/fwd_vector.h). More
    # tasks than cores, so cores run a multi-step task (3 key steps of 512) and then a 1-row one: S1 = 1 mod 128,
    # or sequences of 20 and 1 rows. (That read and the 1-row P*V cover different rows, so the set's pipe is not
    # observable here; test_twin_hazards.py checks the rule on the same pattern.)
    N1, D, S2 = 40, 64, 1100
    if layout == "TND":
        q_lens, kv_lens = [20, 1, 33, 1], [S2, S2, S2 - 97, 700]
        q, k, v = make_qkv(gen, layout, 0, N1, N1, 0, 0, D, D, torch.float16, q_lens, kv_lens)
        kw = dict(actual_seq_qlen=cumsum(q_lens), actual_seq_kvlen=cumsum(kv_lens))
    else:
        q, k, v = make_qkv(gen, layout, 1, N1, N1, 129, S2, D, D, torch.float16)
        kw = {}
    info = run_and_check(q, k, v, N1, layout, label=layout, scale=D ** -0.5, **kw)["info"]
    assert info["s1_block"] == 128 and info["s2_block"] == 512 and info["tasks"] > info["block_dim"], info


# ---------------------------------------------------------------------------------------------------------------
# shapes and options the grid does not cover
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("D,Dv", [(192, 128), (64, 40), (512, 512), (512, 64), (320, 320), (256, 200)])
@pytest.mark.parametrize("layout", ["BSH", "BNSD", "TND"])
def test_value_head_dim_and_large_d(gen, D, Dv, layout):
    kw = dict(scale=D ** -0.5, sparse_mode=3)
    if layout == "TND":
        q, k, v = make_qkv(gen, layout, 0, 2, 1, 0, 0, D, Dv, torch.bfloat16, [100, 31], [150, 7])
        kw.update(actual_seq_qlen=[100, 131], actual_seq_kvlen=[150, 157])
    else:
        q, k, v = make_qkv(gen, layout, 2, 2, 1, 100, 150, D, Dv, torch.bfloat16)
    run_and_check(q, k, v, 2, layout, label=f"D={D} Dv={Dv}", **kw)


# Row pitches whose 16-row band stride (BSH, 40 x 128: 81920 elements) or row pitch itself (SBH, 2 x 260 x 128:
# 66560) does not fit Nd2Nz's 16-bit fields: the cube loads Q/V band by band or row by row.
@pytest.mark.parametrize("layout,B,N,S1,S2", [("BSH", 1, 40, 200, 300), ("SBH", 2, 260, 40, 70)])
def test_large_row_pitch(gen, layout, B, N, S1, S2):
    q, k, v = make_qkv(gen, layout, B, N, N, S1, S2, 128, 128, torch.bfloat16)
    run_and_check(q, k, v, N, layout, label=f"{layout} N={N}", scale=128 ** -0.5, sparse_mode=3)


@pytest.mark.parametrize("D", [8, 40, 72, 130])
def test_unaligned_head_dims(gen, D):
    q, k, v = make_qkv(gen, "BSND", 1, 4, 2, 77, 145, D, D, torch.float16)
    run_and_check(q, k, v, 4, "BSND", label=f"D={D}", scale=D ** -0.5, sparse_mode=0)


@pytest.mark.parametrize("scale", [1.0, 0.3, -0.2, 0.0])
def test_scales(gen, scale):
    q, k, v = make_qkv(gen, "BNSD", 1, 2, 2, 64, 200, 64, 64, torch.float16)
    run_and_check(q, k, v, 2, "BNSD", label=f"scale={scale}", scale=scale, sparse_mode=2)


def test_sequence_longer_than_compressed_mask(gen):
    # causal masks over S > 2048 (the compressed mask tile is only 2048 wide)
    q, k, v = make_qkv(gen, "BNSD", 1, 1, 1, 2500, 2600, 64, 64, torch.bfloat16)
    run_and_check(q, k, v, 1, "BNSD", label="S>2048", scale=0.125, sparse_mode=3)


def test_non_contiguous_inputs(gen):
    base = torch.randn(2, 96, 8, 64, generator=gen).to(torch.float16)  # [B, S, N, D]
    q = base.transpose(1, 2)[:, :4]  # BNSD view, non-contiguous, 4 heads
    k = base.transpose(1, 2)[:, 4:6, :80]
    v = torch.randn(2, 80, 2, 128, generator=gen).to(torch.float16).transpose(1, 2)[..., ::2]
    assert not (q.is_contiguous() or k.is_contiguous() or v.is_contiguous())
    res = run_and_check(q, k, v, 4, "BNSD", label="non-contiguous", scale=0.125, sparse_mode=3)
    out = op(q.contiguous(), k.contiguous(), v.contiguous(), 4, "BNSD", scale=0.125, sparse_mode=3)[0]
    assert torch.equal(out, op(q, k, v, 4, "BNSD", scale=0.125, sparse_mode=3)[0]), res


def test_equivalent_spellings_give_identical_results(gen):
    q, k, v = make_qkv(gen, "BSH", 2, 4, 2, 130, 140, 64, 64, torch.bfloat16)
    triu = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    for mode, extra in ((2, {}), (3, {}), (4, dict(pre_tokens=20, next_tokens=3))):
        base = op(q, k, v, 4, "BSH", scale=0.125, sparse_mode=mode, **extra)
        for mask in (triu, triu.to(torch.uint8)):
            got = op(q, k, v, 4, "bsh", scale=0.125, sparse_mode=mode, atten_mask=mask, **extra)
            assert all(torch.equal(a, b) for a, b in zip(base, got)), mode
    full = op(q, k, v, 4, "BSH", scale=0.125)
    for kw in (dict(sparse_mode=1), dict(sparse_mode=0, pre_tokens=3, next_tokens=0), dict(inner_precise=1),
               dict(inner_precise=2), dict(seed=5, offset=7)):
        got = op(q, k, v, 4, "BSH", scale=0.125, **kw)
        assert all(torch.equal(a, b) for a, b in zip(full, got)), kw


def test_deterministic(gen):
    q, k, v = make_qkv(gen, "TND", 0, 4, 2, 0, 0, 128, 128, torch.float16, [300, 7], [260, 40])
    kw = dict(scale=0.09, sparse_mode=3, actual_seq_qlen=[300, 307], actual_seq_kvlen=[260, 300])
    a = op(q, k, v, 4, "TND", **kw)
    b = op(q, k, v, 4, "TND", **kw)
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_empty_problems_need_no_launch(gen):
    before = npu_flash_attn.last_launch_info()
    q, k, v = make_qkv(gen, "BSND", 2, 4, 2, 0, 9, 32, 32, torch.float16)  # S1 = 0
    out, m, s = op(q, k, v, 4, "BSND")
    assert out.shape == (2, 0, 4, 32) and m.shape == (2, 4, 0, 8)
    q, k, v = make_qkv(gen, "BSND", 2, 4, 2, 5, 0, 32, 16, torch.float16)  # S2 = 0: every row invalid
    out, m, s = op(q, k, v, 4, "BSND")
    assert out.shape == (2, 5, 4, 16) and torch.all(out == 0)
    assert torch.all(m == -FLT_MAX) and torch.all(s == FLT_MAX)
    assert npu_flash_attn.last_launch_info() == before


def test_torch_compile(gen):
    q, k, v = make_qkv(gen, "BSND", 1, 4, 2, 70, 90, 64, 64, torch.bfloat16)

    def f(q, k, v):
        out, m, s = torch.ops.npu.flash_attention(q, k, v, 4, "BSND", scale=0.125, sparse_mode=3)
        return out.float() * 2, m + s

    eager = f(q, k, v)
    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)(q, k, v)
    assert all(torch.equal(a, b) for a, b in zip(eager, compiled))


# ---------------------------------------------------------------------------------------------------------------
# chips and launch info
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("chip", CHIPS)
def test_every_chip(gen, chip):
    q, k, v = make_qkv(gen, "BNSD", 2, 8, 2, 257, 300, 128, 128, torch.float16)
    res = run_and_check(q, k, v, 8, "BNSD", chip=chip, label=chip, scale=128 ** -0.5, sparse_mode=3)
    info = res["info"]
    for key in ("chip", "block_dim", "s1_block", "s2_block", "tasks", "steps", "workspace_bytes"):
        assert key in info, key
    aic = next(c["aic_num"] for c in _C.chips() if c["name"] == chip)
    assert 1 <= info["block_dim"] <= aic


def test_chip_from_environment(gen, monkeypatch):
    chip = CHIPS[-1]
    monkeypatch.setenv("NPU_FA_CHIP", chip)
    npu_flash_attn.set_chip(None)
    q, k, v = make_qkv(gen, "BSND", 1, 2, 2, 40, 40, 64, 64, torch.float16)
    op(q, k, v, 2, "BSND")
    assert npu_flash_attn.last_launch_info()["chip"] == chip


# ---------------------------------------------------------------------------------------------------------------
# the C++ entry: errors are Python exceptions and leave the outputs untouched
# ---------------------------------------------------------------------------------------------------------------
def _entry_args(q, k, v, out, m, s, chip="Ascend910B2", **over):
    """The forward entry's arguments: the call (shapes and attributes, `over` replacing some) and the buffers."""
    def arg(shape, dtype="torch.float16"):
        return list(shape), [], dtype
    a = dict(query=arg(q.shape), key=arg(k.shape), value=arg(v.shape), head_num=2, input_layout="BNSD", scale=0.125,
             sparse_mode=3)
    a.update(over)
    return (_C.Call(**a), chip, q.data_ptr(), k.data_ptr(), v.data_ptr(), 0, 0, 0, 0, 0, 0, 0, out.data_ptr(),
            m.data_ptr(), s.data_ptr())  # no mask, no block map, no sink, no pse, no dropout mask


F32 = "torch.float32"


@pytest.mark.parametrize("bad", [
    dict(chip="Ascend999"), dict(input_layout="XYZ"), dict(sparse_mode=9),
    dict(key=([1, 3, 40, 64], [], "torch.float16"), value=([1, 3, 40, 64], [], "torch.float16")),
    dict(query=([1, 2, 33, 0], [], "torch.float16")), dict(value=([1, 1, 40, 65], [], "torch.float16")),
    dict(query=([1, 2, 33, 64], [], F32), key=([1, 1, 40, 64], [], F32), value=([1, 1, 40, 64], [], F32)),
    dict(sink=([2], [], F32)), dict(pse_type=2, pse=([2], [], F32)), dict(pse_type=5)],
    ids=["chip", "layout", "sparse_mode", "N2", "D", "Dv", "dtype", "sink", "alibi", "pse_type"])
# sink / alibi: the problem has sinks / ALiBi slopes, the buffer is null; pse_type=5: no such type
def test_entry_errors_leave_outputs_untouched(gen, bad):
    assert issubclass(_C.TwinError, RuntimeError)
    q, k, v = make_qkv(gen, "BNSD", 1, 2, 1, 33, 40, 64, 64, torch.float16)
    out = torch.full((1, 2, 33, 64), 7.0, dtype=torch.float16)
    m = torch.full((1, 2, 33, 8), 123.0)
    s = torch.full((1, 2, 33, 8), -5.0)
    with pytest.raises((ValueError, TypeError, RuntimeError)):
        _C.flash_attention_fwd(*_entry_args(q, k, v, out, m, s, **bad))
    assert torch.all(out == 7.0) and torch.all(m == 123.0) and torch.all(s == -5.0)
    # the same buffers work with good arguments
    _C.flash_attention_fwd(*_entry_args(q, k, v, out, m, s))
    ref = flash_attention_reference(q, k, v, 2, "BNSD", scale=0.125, sparse_mode=3)
    assert_close_fa(out, ref[0], flash_attention_lowprec(q, k, v, 2, "BNSD", scale=0.125, sparse_mode=3))


# ---------------------------------------------------------------------------------------------------------------
# command line demo
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [["--seq", "200", "--chip", CHIPS[0]],
                                  ["--layout", "TND", "--batch", "2", "--seq", "150", "--seq-kv", "90",
                                   "--dtype", "fp16", "--sparse-mode", "4", "--pre-tokens", "30", "--next-tokens",
                                   "2"]], ids=["bsnd", "tnd-band"])
def test_cli_demo(args):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "npu_flash_attn", "demo", *args], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for word in ("tiling", "block_dim=", "cores", "max|out - ref64|", "low-precision torch", "wall", "PASS (twin)"):
        assert word in r.stdout, word
    # plain torch on the same problem (not for TND: SDPA has no varlen form), with an error of the dtype's order
    sdpa = re.search(r"scaled_dot_product_attention .*: ([0-9.]+) s, max\|out - ref64\| = ([0-9.e+-]+)", r.stdout)
    assert (sdpa is None) == ("TND" in args)
    if sdpa:
        assert 0 < float(sdpa.group(2)) < 0.05
    snippet = r.stdout.split("your own tensors")[1].split("\n", 1)[1]
    compile(textwrap.dedent(snippet), "snippet", "exec")  # the copy-paste snippet is valid Python
