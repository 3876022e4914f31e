"""Model-only launches (twin::LaunchOptions::modelOnly): the kernels' control flow and trace without the arithmetic.
The trace digest (every record, addresses as buffer + offset) of a model-only launch equals the full launch's on random
problems, forward and backward, with masks, bands, GQA and odd sizes; the digest does see a different problem; a
block-sampled model agrees with the full model on a balanced launch; bad settings are refused."""
import math

import pytest
import torch

from npu_flash_attn import _C, ops, twin_backend
from npu_flash_attn.tools import profiler


def _run(model_only, fwd_args, fwd_kw, grad=None):
    _C.set_cost_model(True, 1, 0, {}, model_only)
    try:
        out = ops.flash_attention(*fwd_args, **fwd_kw)
        info = twin_backend.last_launch_info()
        rec = [(info["trace_digest"], info["cost_model"]["cycles"])]
        if grad is not None:
            dy, deterministic, (o, smax, ssum) = grad
            torch.ops.npu.flash_attention_grad(*fwd_args[:3], dy, *fwd_args[3:], softmax_max=smax, softmax_sum=ssum,
                                               attention_in=o, deterministic=deterministic, **fwd_kw)
            info = twin_backend.last_launch_info()
            rec.append((info["trace_digests"], [m["cycles"] for m in info["cost_model_launches"]]))
    finally:
        _C.set_cost_model(False)
    return out, rec


def _problem(gen):
    r = lambda lo, hi: int(torch.randint(lo, hi + 1, (1,), generator=gen))  # noqa: E731
    n2 = r(1, 2)
    n1 = n2 * r(1, 3)
    b, s1, s2, d = r(1, 2), r(40, 300), r(40, 300), (64, 128, 96)[r(0, 2)]
    dt = (torch.float16, torch.bfloat16)[r(0, 1)]
    q = torch.randn(b, n1, s1, d, generator=gen).to(dt)
    k = torch.randn(b, n2, s2, d, generator=gen).to(dt)
    v = torch.randn(b, n2, s2, d, generator=gen).to(dt)
    kw = dict(scale=1 / math.sqrt(d))
    case = r(0, 3)
    if case == 1:
        kw.update(sparse_mode=3)
    elif case == 2:
        kw.update(sparse_mode=4, pre_tokens=r(0, 120), next_tokens=r(0, 120))
    elif case == 3:
        kw.update(sparse_mode=0, atten_mask=torch.rand(b, 1, s1, s2, generator=gen) > 0.6)
    return (q, k, v, n1, "BNSD"), kw


@pytest.mark.parametrize("rep", range(3))
def test_model_only_trace_equals_full(gen, rep):
    args, kw = _problem(gen)
    full_out, _ = _run(False, args, {**kw})
    o, smax, ssum = full_out
    dy = torch.randn(o.shape, generator=gen).to(o.dtype)
    deterministic = bool(torch.randint(0, 2, (1,), generator=gen))
    _, full = _run(False, args, kw, (dy, deterministic, full_out))
    model_out, quick = _run(True, args, kw, (dy, deterministic, full_out))
    assert quick == full  # the same digests and the same modeled cycles, launch by launch
    assert not torch.equal(model_out[0], o)  # the arithmetic was skipped: the output is not computed


def test_model_only_equals_full_with_resident_dq_pass():
    # the draw that found L0A and L0B loads told apart by host addresses in the cost model: the backward's dQ pass
    # with Q and dO resident in L0A (64 x 128 tiles, D = 64) leaves wide gaps between L0A's load targets, and full and
    # model-only launches, whose buffers lie apart differently, modeled different cycles
    test_model_only_trace_equals_full(torch.Generator().manual_seed(150534554), 0)


def test_digest_sees_a_different_problem(gen):
    args, kw = _problem(gen)
    kw.pop("atten_mask", None)
    _, a = _run(True, args, {**kw, "sparse_mode": 0, "pre_tokens": 2**31 - 1, "next_tokens": 2**31 - 1})
    _, b = _run(True, args, {**kw, "sparse_mode": 4, "pre_tokens": 8, "next_tokens": 0})
    assert a[0][0] != b[0][0]


def test_sampled_blocks_match_full_model():
    # 6 heads x 16 query blocks: four equal tasks per AI core. Sampled cores stand for the others in the bandwidth
    # shares; their first touches of a head's K/V, shared through L2 in the full launch, make a small overestimate
    full = profiler.profile(heads=6, seqlen=2048, head_dim=128, model_only=True, bins=0)
    for k in (1, 3):
        part = profiler.profile(heads=6, seqlen=2048, head_dim=128, model_only=True, sample_blocks=k, bins=0)
        assert part["model"]["sampled_blocks"] == k and part["model"]["num_blocks"] == full["block_dim"]
        # 12.9 % at S=2K (4.8 % at S=8K, N=8): the forward is DMA/L2-bound, so the sampled cores' first K/V reads,
        # HBM traffic where the full launch shares them through L2, show in the time
        assert full["modeled_time_us"] <= part["modeled_time_us"] <= 1.15 * full["modeled_time_us"]
        assert part["cube_macs"] == pytest.approx(full["cube_macs"], rel=1e-6)
        assert len(part["cores"]) == 3 * k
    kw = dict(heads=12, seqlen=1024, head_dim=128, model_only=True, backward=True, bins=0)  # 8 and 4 tasks per core
    back, back_part = profiler.profile(**kw), profiler.profile(**kw, sample_blocks=2)
    # 6 % over: the dK/dV pass reads the P/dS tiles the dQ pass stored (48 MB here), from L2 in the full model; the
    # sampled cores read tiles that unsampled cores wrote, which the model then takes from HBM
    assert back["modeled_time_us"] <= back_part["modeled_time_us"] <= 1.10 * back["modeled_time_us"]


def test_bad_settings():
    with pytest.raises(ValueError, match="sample_blocks needs model_only=True"):
        _C.set_cost_model(True, 1, 0, {}, False, 2)
    with pytest.raises(ValueError, match="sample_blocks must be >= 0"):
        _C.set_cost_model(True, 1, 0, {}, True, -1)
    with pytest.raises(ValueError, match="sample_blocks needs model_only=True"):
        profiler.profile(heads=2, seqlen=128, sample_blocks=2)


def test_modeled_time_ignores_host_placement(gen):
    # The L2 model counts 512-B lines; a host buffer may start anywhere, an NPU one on a 512-B boundary. The model
    # places the launch buffers as the NPU would, so the same problem at other host offsets models the same HBM
    # traffic and time (the workspace is a fresh host allocation every launch: unplaced, the modeled time varied).
    args, kw = _problem(gen)

    def shifted(t, elems):
        base = torch.empty(t.numel() + elems, dtype=t.dtype)
        out = base[elems:].view(t.shape)
        out.copy_(t)
        return out

    def model(a):
        _C.set_cost_model(True, 1, 0, {}, True)
        try:
            ops.flash_attention(*a, **kw)
            m = twin_backend.last_launch_info()["cost_model"]
        finally:
            _C.set_cost_model(False)
        return m["cycles"], m["hbm_bytes"], m["l2_hit_bytes"]

    ref = model(args)
    for elems in (1, 32, 160):  # 2, 64 and 320 bytes past a torch allocation's start
        moved = (shifted(args[0], elems), shifted(args[1], 3 * elems), shifted(args[2], 5 * elems), *args[3:])
        assert model(moved) == ref
