"""The forward's lazy rescale (issue 28 item 1): P*V stays in L0C across a task's steps, the probabilities taken
against a per-row reference max, and O leaves the cube only when some row's running max passed its reference by
more than the threshold (kernel/fwd_cube.h, fwd_vector.h). Forced on (twin_backend.set_lazy_rescale_override) with
one or two score tiles beside O, with the default threshold, a negative one (every step flushes) and a huge one
(no flush past a task's first step), against the float64 reference with the FlashAttention criterion: random
inputs of the feature problems, keys sorted so that the rows' max rises by more than the threshold at every step
(rows of one vector core only, of both, alternating), the features, fp16 and bf16, shapes off the block grid; the
flush count of last_launch_info() against the steps; the gradients from the lazy forward's statistics; the same for
the high-performance mode's fp16 softmax chain (P against the references in half); the tiling's rule and the knob's
argument checks."""
from __future__ import annotations

import math

import pytest
import torch

import npu_flash_attn
from npu_flash_attn import problem as problem_module, twin_backend
from npu_flash_attn.native import ext
from feature_problems import CASES, DT, case_id, check_forward, check_grads, problem
from test_fa_high_performance import HALF_CHAIN, check_hp_forward, half_chain_problem

THRESHOLDS = {"default": None, "every": -1.0, "never": 1e30}


@pytest.fixture
def lazy():
    def force(slots, threshold=None):
        twin_backend.set_lazy_rescale_override(slots, threshold)
    yield force
    twin_backend.set_lazy_rescale_override(None, None)


def rising(layout, dt, b, s1, s2, n1, n2, d, gen, rows="second", rise=40.0, block=128, scale=None):
    """q, k, v whose scores q.k * scale grow linearly along the keys by `rise` in all (about 15 per 512-key step at
    s2 = 1300) for the rows picked by `rows` ("second": the second half of each task of `block` rows, which the
    second vector core owns; "all"; "alternate": every other row), and fall for the others; with noise. `scale`:
    1 / sqrt(d) by default."""
    u = torch.randn(d, generator=gen)
    u /= u.norm()
    pos = torch.arange(s1)
    task_rows = torch.clamp(s1 - pos // block * block, max=block)
    second = pos % block >= (task_rows + 1) // 2
    sign = {"second": second, "all": torch.ones(s1, dtype=torch.bool), "alternate": pos % 2 == 1}[rows]
    sign = sign.double() * 2 - 1
    scale = scale or 1 / math.sqrt(d)
    q = 0.3 * torch.randn(b, n1, s1, d, generator=gen) + sign[None, None, :, None] * math.sqrt(abs(rise)) * u
    ramp = torch.arange(s2, dtype=torch.float64) / s2 * math.copysign(math.sqrt(abs(rise)), rise) / scale
    k = 0.3 * torch.randn(b, n2, s2, d, generator=gen) + ramp[None, None, :, None] * u
    v = torch.randn(b, n2, s2, d, generator=gen)
    t = {"BNSD": lambda x: x, "BSND": lambda x: x.transpose(1, 2).contiguous()}[layout]
    return (t(q).to(DT[dt]), t(k).to(DT[dt]), t(v).to(DT[dt]), n1, layout), dict(scale=scale)


def flush_facts():
    info = npu_flash_attn.last_launch_info()
    return info["lazy_rescale"], info.get("lazy_flushes"), info["steps"], info["tasks"]


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
@pytest.mark.parametrize("threshold", list(THRESHOLDS))
def test_lazy_forward_cases(case, threshold, gen, lazy):
    lazy(1 + CASES.index(case) % 2, THRESHOLDS[threshold])
    args, kw = problem(case, gen)
    check_forward(args, kw)
    on, flushes, steps, tasks = flush_facts()
    assert on
    if threshold == "never":
        assert flushes == 0
    if threshold == "every" and not kw.get("sparse_mode") and "atten_mask" not in kw and case[0] != "TND":
        assert flushes == steps - tasks  # every step but a task's first (every task sees keys here)


@pytest.mark.parametrize("rows", ["second", "all", "alternate"])
@pytest.mark.parametrize("dt,d,slots", [("bf16", 128, 2), ("fp16", 72, 1), ("bf16", 256, 1), ("fp16", 128, 2)])
def test_rising_max_flushes(rows, dt, d, slots, gen, lazy):
    lazy(slots)
    block = _plan(150, d, s2=1300)["s1_block"]
    args, kw = rising("BNSD", dt, 1, 150, 1300, 2, 2, d, gen, rows=rows, block=block)
    check_forward(args, kw)
    on, flushes, steps, tasks = flush_facts()
    assert on and flushes == steps - tasks  # each step's max passes the reference by about 15 > 8
    # the same inputs without the lazy rescale give the same outputs up to the order of the fp32 sums
    lazy(0)
    check_forward(args, kw)
    assert not npu_flash_attn.last_launch_info()["lazy_rescale"]


def test_falling_max_never_flushes(gen, lazy):
    # every row's max is taken on the first step and never passed: no flush, and P <= 1 throughout
    lazy(2)
    args, kw = rising("BSND", "bf16", 2, 200, 1500, 4, 2, 128, gen, rows="all", rise=-30.0)
    check_forward(args, kw)
    on, flushes, _, _ = flush_facts()
    assert on and flushes == 0


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
def test_lazy_features(dt, gen, lazy):
    # sink, softcap, ALiBi, dropout, band and causal modes on rising scores, off the block grid; the UB rule may keep
    # the plain path for a feature whose buffers leave no room (reported by last_launch_info)
    args, kw = rising("BSND", dt, 2, 150, 1100, 4, 2, 96, gen, rows="alternate")
    n1 = 4
    feats = [dict(sink=torch.randn(n1, generator=gen)), dict(softcap=30.0),
             dict(pse=torch.rand(n1, generator=gen) * 0.3, pse_type=2),
             dict(keep_prob=0.8, seed=int(torch.randint(0, 2 ** 31, (1,), generator=gen)), offset=5),
             dict(sparse_mode=3), dict(sparse_mode=4, pre_tokens=700, next_tokens=100)]
    ran = 0
    for f in feats:
        for slots, threshold in ((2, None), (1, -1.0)):
            lazy(slots, threshold)
            check_forward(args, dict(kw, **f))
            ran += npu_flash_attn.last_launch_info()["lazy_rescale"]
    assert ran >= 8


def test_lazy_tnd_and_dense_mask(gen, lazy):
    lazy(2, -1.0)
    case = ("TND", "fp16", 3, 0, 0, 4, 2, 128, dict(actual_seq_qlen=[40, 170, 300], actual_seq_kvlen=[900, 1000, 1000],
                                                    sparse_mode=3))
    check_forward(*problem(case, gen))
    assert flush_facts()[0]
    case = ("BNSD", "bf16", 2, 140, 700, 2, 2, 128, dict(atten_mask="dense"))
    check_forward(*problem(case, gen))
    assert flush_facts()[0]


def test_lazy_gradients(gen, lazy):
    # the backward reads the lazy forward's statistics (moved back to the running max at each task's end)
    lazy(2)
    args, kw = rising("BNSD", "bf16", 1, 150, 1300, 2, 2, 64, gen, rows="alternate")
    check_grads(args, kw, gen)
    lazy(1, -1.0)
    check_grads(*problem(("BSND", "fp16", 1, 96, 700, 2, 1, 128, dict(sparse_mode=2)), gen), gen)


# The high-performance mode's fp16 softmax chain under the lazy rescale (fp16, inner_precise 1, a scale exact in
# fp16): fully visible chunks take P against the references in half, masked, band-cut and tail chunks the widened
# fp32 path, in the same rows and tasks (test_fa_high_performance's cases: causal, band, masks, TND).
def check_half_lazy(args, kw):
    check_hp_forward(args, kw)
    info = npu_flash_attn.last_launch_info()
    assert info["half_softmax"] and info["lazy_rescale"]


@pytest.mark.parametrize("case", HALF_CHAIN, ids=case_id)
@pytest.mark.parametrize("threshold", list(THRESHOLDS))
def test_half_chain_lazy_cases(case, threshold, gen, lazy):
    if threshold == "never" and "pre_tokens" in case[8]:
        # a band row's first step may see a few keys only: a reference that never moves then lets a later max pass
        # it by more than ln(65504) = 11.1 and P overflow fp16 (seed 11000110; past ln(65504 / 16) = 8.3 the half
        # row sums of 16 such P at D > 64), which the threshold is there to stop
        pytest.skip("a band with references that never move overflows fp16 P by design")
    lazy(1 + HALF_CHAIN.index(case) % 2, THRESHOLDS[threshold])
    args, kw = half_chain_problem(case, gen)
    check_half_lazy(args, kw)
    on, flushes, steps, tasks = flush_facts()
    if threshold == "never":
        assert flushes == 0
    if threshold == "every" and case[0] != "TND" and not kw.get("sparse_mode") and "atten_mask" not in kw:
        assert flushes == steps - tasks


@pytest.mark.parametrize("rows", ["second", "all", "alternate"])
@pytest.mark.parametrize("d,slots,scale", [(128, 2, 2.0 ** -4), (64, 1, 2.0 ** -3), (256, 1, 2.0 ** -4)])
def test_half_chain_rising_max_flushes(rows, d, slots, scale, gen, lazy):
    # each step's max passes the reference by about 15: every step flushes, P = exp(s - ref) stays <= e^8 in half
    lazy(slots)
    block = _plan(150, d, s2=1300)["s1_block"]
    args, kw = rising("BNSD", "fp16", 1, 150, 1300, 2, 2, d, gen, rows=rows, block=block, scale=scale)
    check_half_lazy(args, kw)
    on, flushes, steps, tasks = flush_facts()
    assert flushes == steps - tasks
    lazy(0)  # the plain fp16 chain on the same inputs
    check_hp_forward(args, kw)
    assert not npu_flash_attn.last_launch_info()["lazy_rescale"]


@pytest.mark.parametrize("d", [128, 64])
def test_half_row_sums_near_the_threshold(d, gen, lazy):
    # every step's scores flat at 7.85 above the last one: rows keep their reference for one step (P = e^7.85 on
    # every key), move it on the next (one flush per task); at D > 64 the fp16 chain begins its row sums in half,
    # where sums of 16 such P reach 41 000 of fp16's 65 504 (at D = 64 they are fp32)
    lazy(2 if d == 128 else 1)
    s1, s2, alpha, scale = 200, 1900, 4.0, 2.0 ** -4
    u = torch.randn(d, generator=gen)
    u /= u.norm()
    level = 7.85 * torch.div(torch.arange(s2), 512, rounding_mode="floor").double()
    q = alpha * u + 0.005 * torch.randn(1, 2, s1, d, generator=gen, dtype=torch.float64)
    k = (level / (scale * alpha))[:, None] * u + 0.02 * torch.randn(1, 2, s2, d, generator=gen, dtype=torch.float64)
    v = torch.randn(1, 2, s2, d, generator=gen)
    args, kw = (q.half(), k.half(), v.half(), 2, "BNSD"), dict(scale=scale)
    check_half_lazy(args, kw)
    assert npu_flash_attn.last_launch_info()["half_row_sums"] == (d > 64)
    on, flushes, steps, tasks = flush_facts()
    assert flushes == tasks


def test_half_chain_falling_max_never_flushes(gen, lazy):
    lazy(2)
    args, kw = rising("BSND", "fp16", 2, 200, 1500, 4, 2, 128, gen, rows="all", rise=-30.0, scale=2.0 ** -4)
    check_half_lazy(args, kw)
    assert flush_facts()[1] == 0


def test_half_chain_lazy_gradients(gen, lazy):
    # the backward (in the mode: 16-bit S and dP) reads the statistics the lazy fp16 chain moved to the running max
    lazy(2)
    args, kw = rising("BNSD", "fp16", 1, 150, 1300, 2, 2, 128, gen, rows="alternate", scale=2.0 ** -4)
    check_grads(args, kw, gen, op_kw=dict(inner_precise=1))
    lazy(1, -1.0)
    args, kw = problem(("BSND", "fp16", 1, 96, 700, 2, 1, 64, dict(sparse_mode=3)), gen, q_gain=2.0)
    check_grads(args, kw, gen, op_kw=dict(inner_precise=1))


def _plan(s, d, s2=None, dtype=torch.bfloat16, **kw):
    q = torch.zeros(1, 1, s, d, dtype=dtype)
    k = torch.zeros(1, 1, s2 or s, d, dtype=dtype)
    p = problem_module.validate_flash_attention(q, k, k, 1, "BNSD", **{"scale": d ** -0.5, **kw})
    return ext().flash_attention_plan(twin_backend._with_blocks(p), "Ascend910B2")


def test_tiling_rule():
    # where the model shows it faster (op_host/flash_attention_tiling_host.cpp LazySlotsThatPay)
    on = _plan(8192, 128)
    assert on["lazy_rescale"] and on["lazy_threshold"] == 8.0 and on["n_chunk_qk"] == 64  # two 64-column S slots
    assert _plan(8192, 256)["lazy_rescale"] and _plan(2048, 256)["lazy_rescale"]
    for off in (_plan(8192, 128, sparse_mode=3), _plan(2048, 128), _plan(8192, 64)):
        assert not off["lazy_rescale"]
    # with the fp16 softmax chain: from 16 steps at D = 128, and at D = 256
    hp = dict(dtype=torch.float16, inner_precise=1)
    for s, d, scale, want in ((8192, 128, 0.125, True), (4096, 128, 0.125, False), (8192, 256, 0.0625, True),
                              (8192, 64, 0.125, False), (8192, 128, 128 ** -0.5, True)):
        plan = _plan(s, d, scale=scale, **hp)
        assert plan["lazy_rescale"] == want and plan["half_softmax"] == (scale != 128 ** -0.5), (s, d, scale)
    assert not _plan(16384, 128, scale=0.125, sparse_mode=3, **hp)["lazy_rescale"]


def test_override_arguments():
    for bad in (3, -1, True, "2"):
        with pytest.raises(ValueError, match="slots must be 0, 1, 2 or None"):
            twin_backend.set_lazy_rescale_override(bad)
    for bad in (float("nan"), float("inf"), "1"):
        with pytest.raises(ValueError, match="threshold must be a finite number"):
            twin_backend.set_lazy_rescale_override(1, bad)
