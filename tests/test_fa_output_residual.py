"""The forward's output residual (issue 26): npu::flash_attention_fwd(output_residual=True) also returns
attention_out's rounding error, the autograd keeps it when it records the call, and the backward takes
D = rowsum(dO * (O + residual)). What it buys is tested in test_fa_degenerate_rows.py (rows with one dominant key);
here: the residual's value, where it is zero, when it is kept, and the grad op's checks of it."""
import math

import pytest
import torch

import npu_flash_attn as nfa
from npu_flash_attn.reference import flash_attention_reference

fwd = torch.ops.npu.flash_attention_fwd.default


@pytest.fixture(autouse=True)
def _residual_on():
    yield
    nfa.set_output_residual(True)


def _assert_rounding_error(out, res):
    """out + res (exactly, in float64) rounds to out: |res| is at most half of out's spacing, and the sum rounds
    back except where res itself rounded onto the tie; res is not all zero."""
    dt = out.dtype
    whole, a = out.double() + res.double(), out.abs()
    up = torch.nextafter(a, torch.tensor(float("inf"), dtype=dt)).double() - a.double()  # out's spacing above and below
    down = a.double() - torch.nextafter(a, torch.tensor(0.0, dtype=dt)).double()
    half = res.double().abs() * 2
    assert bool((half <= torch.maximum(up, down)).all())
    assert bool(((whole.to(dt) == out) | (half == up) | (half == down)).all())
    assert res.abs().max() > 0


@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", ["BNSD", "BSH", "TND"])
def test_residual_is_the_outputs_rounding_error(gen, dt, layout):
    """out is the kernel's fp32 output rounded to the input dtype and residual that rounding's error: out + residual
    rounds back to out (|residual| is at most half a unit in out's last place), it is not zero, and the pair is
    closer to float64 on average than out alone (P's own rounding for the cube bounds how much closer)."""
    N, D = 2, 72
    if layout == "TND":
        cu = [37, 37, 150]  # an empty sequence between two others
        shapes = [(cu[-1] + 5, N, D)] * 3  # 5 padding tokens past the last sequence
        kw = dict(actual_seq_qlen=cu, actual_seq_kvlen=cu, sparse_mode=3)
    else:
        S = 141
        shapes = [(1, N, S, D)] * 3 if layout == "BNSD" else [(1, S, N * D)] * 3
        kw = dict(sparse_mode=2)
    q, k, v = (torch.randn(*s, generator=gen).to(dt) for s in shapes)
    kw.update(scale=1 / math.sqrt(D))
    out, _, _, res = fwd(q, k, v, N, layout, **kw, output_residual=True)
    assert res.shape == out.shape and res.dtype == out.dtype
    _assert_rounding_error(out, res)
    whole = out.double() + res.double()
    ref = flash_attention_reference(q.double(), k.double(), v.double(), N, layout, **kw)[0]
    assert (whole - ref).abs().mean() < (out.double() - ref).abs().mean()
    if layout == "TND":
        assert res[cu[-1]:].abs().max() == 0  # padding tokens: no kernel writes them, zero like out
    # the output itself is the same with or without the residual
    plain = fwd(q, k, v, N, layout, **kw)
    assert torch.equal(plain[0], out) and plain[3].numel() == 0


@pytest.mark.parametrize("D,in_probs", [(128, True), (512, False)])
def test_both_residual_buffers(gen, D, in_probs):
    """The residual waits for its copy out beside the output rows where UB allows it at the chosen blocks, else in
    the partial-output buffer (D = 512): the blocks are the same as without it, and both give the rounding error."""
    q, k, v = (torch.randn(1, 2, 97, D, generator=gen).bfloat16() for _ in range(3))
    kw = dict(scale=D ** -0.5, sparse_mode=3)
    plain = fwd(q, k, v, 2, "BNSD", **kw)
    blocks = {n: nfa.last_launch_info()[n] for n in ("s1_block", "s2_block", "vec_rows")}
    out, _, _, res = fwd(q, k, v, 2, "BNSD", **kw, output_residual=True)
    info = nfa.last_launch_info()
    assert info["residual_in_probs"] is in_probs and {n: info[n] for n in blocks} == blocks
    assert torch.equal(out, plain[0])
    _assert_rounding_error(out, res)


def test_rows_without_keys_have_zero_residual(gen):
    """sparse_mode 3 with S1 > S2: the first rows see no key (output 0, so residual 0)."""
    q = torch.randn(1, 2, 40, 32, generator=gen).bfloat16()
    k, v = (torch.randn(1, 2, 25, 32, generator=gen).bfloat16() for _ in range(2))
    out, _, _, res = fwd(q, k, v, 2, "BNSD", scale=0.2, sparse_mode=3, output_residual=True)
    assert out[:, :, :15].abs().max() == 0 and res[:, :, :15].abs().max() == 0
    assert res[:, :, 15:].abs().max() > 0


def test_kept_only_when_autograd_records_the_call(gen):
    q, k, v = (torch.randn(1, 2, 30, 16, generator=gen).half() for _ in range(3))
    nfa.flash_attention(q, k, v, 2, "BNSD", scale=0.25)
    assert nfa.last_launch_info()["out_residual"] is False  # nothing requires grad
    qg = q.clone().requires_grad_()
    out = nfa.flash_attention(qg, k, v, 2, "BNSD", scale=0.25)[0]
    assert nfa.last_launch_info()["out_residual"] is True
    out.sum().backward()
    assert nfa.last_launch_info()["out_residual"] is True  # the grad launch read it
    with torch.no_grad():
        nfa.flash_attention(qg, k, v, 2, "BNSD", scale=0.25)
    assert nfa.last_launch_info()["out_residual"] is False
    nfa.set_output_residual(False)
    out = nfa.flash_attention(qg, k, v, 2, "BNSD", scale=0.25)[0]
    assert nfa.last_launch_info()["out_residual"] is False
    out.sum().backward()
    assert nfa.last_launch_info()["out_residual"] is False
    with pytest.raises(TypeError, match="enabled must be a bool, got int"):
        nfa.set_output_residual(1)


def test_grad_op_checks_the_residual(gen):
    q, k, v = (torch.randn(1, 2, 30, 16, generator=gen).half() for _ in range(3))
    out, smax, ssum, res = fwd(q, k, v, 2, "BNSD", scale=0.25, output_residual=True)
    dy = torch.randn_like(out)
    saved = dict(softmax_max=smax, softmax_sum=ssum, attention_in=out, scale=0.25)
    grad = torch.ops.npu.flash_attention_grad
    with pytest.raises(ValueError, match=r"attention_in_residual shape \(1, 2, 29, 16\) must be \(1, 2, 30, 16\)"):
        grad(q, k, v, dy, 2, "BNSD", **saved, attention_in_residual=res[:, :, :29])
    with pytest.raises(TypeError, match=r"attention_in_residual dtype torch.bfloat16 must be torch.float16"):
        grad(q, k, v, dy, 2, "BNSD", **saved, attention_in_residual=res.bfloat16())
    bad = res.clone()
    bad[0, 1, 3, 2] = float("nan")
    with pytest.raises(ValueError, match="attention_in_residual"):
        grad(q, k, v, dy, 2, "BNSD", **saved, attention_in_residual=bad)
    with_res = grad(q, k, v, dy, 2, "BNSD", **saved, attention_in_residual=res)
    without = grad(q, k, v, dy, 2, "BNSD", **saved)
    assert all(a.shape == b.shape for a, b in zip(with_res[:3], without[:3]))


def test_opcheck_forward_kernel_op(gen):
    q, k, v = (torch.randn(1, 2, 21, 16, generator=gen).bfloat16().requires_grad_() for _ in range(3))
    torch.library.opcheck(fwd, (q, k, v, 2, "BNSD"), dict(scale=0.25, sparse_mode=2, output_residual=True),
                          test_utils=("test_schema", "test_autograd_registration", "test_faketensor",
                                      "test_aot_dispatch_dynamic"))
