"""The grad op's `partial_keys`: a call that holds only part of each row's keys, given the whole rows' statistics and
output (as context parallelism calls it). The keys are cut into parts, each part's grad call gets the forward's
softmax_max / softmax_sum / attention_in of the whole problem, and the summed dq (and the concatenated dk / dv) must
meet the FlashAttention criterion against float64 autograd on the whole problem. Parts of at most one key block
make every dQ task a single step, the case where the op without the flag takes a task to hold all of its rows' keys
(it then misses by far, which the last test shows)."""
from __future__ import annotations

import pytest
import torch

from npu_flash_attn import _C
from npu_flash_attn.criterion import assert_close_fa
from npu_flash_attn.reference import flash_attention_lowprec, flash_attention_reference

fwd = torch.ops.npu.flash_attention
grad_op = torch.ops.npu.flash_attention_grad


def _problem(gen, dt, b=2, n1=4, n2=2, s1=45, s2=113, d=64):
    q = torch.randn(b, n1, s1, d, generator=gen).to(dt)
    k = torch.randn(b, n2, s2, d, generator=gen).to(dt)
    v = torch.randn(b, n2, s2, d, generator=gen).to(dt)
    dy = torch.randn(b, n1, s1, d, generator=gen).to(dt)
    return q, k, v, dy


def _grads_in_parts(q, k, v, dy, cuts, partial_keys, **kw):
    """dq summed over the key parts [cuts[i], cuts[i + 1]) and dk / dv concatenated, each part's grad call given
    the whole problem's statistics and output."""
    out, smax, ssum = fwd(q, k, v, q.shape[1], "BNSD", **kw)
    dq = torch.zeros(q.shape, dtype=torch.float32)
    dks, dvs = [], []
    for c0, c1 in zip(cuts[:-1], cuts[1:]):
        g = grad_op(q, k[:, :, c0:c1], v[:, :, c0:c1], dy, q.shape[1], "BNSD", softmax_max=smax, softmax_sum=ssum,
                    attention_in=out, partial_keys=partial_keys, **kw)
        dq += g[0].float()
        dks.append(g[1])
        dvs.append(g[2])
    return dq, torch.cat(dks, dim=2), torch.cat(dvs, dim=2)


def _reference_grads(q, k, v, dy, **kw):
    """(float64 grads, plain-torch low-precision grads) of the whole problem."""
    ref = [t.double().requires_grad_() for t in (q, k, v)]
    flash_attention_reference(*ref, q.shape[1], "BNSD", **kw)[0].backward(dy.double())
    low = [t.clone().requires_grad_() for t in (q, k, v)]
    (flash_attention_lowprec(*low, q.shape[1], "BNSD", **kw).double() * dy.double()).sum().backward()
    return [t.grad for t in ref], [t.grad for t in low]


@pytest.mark.parametrize("dtype,cuts,softcap", [
    (torch.bfloat16, (0, 40, 64, 113), None),   # parts of one key block each
    (torch.float16, (0, 57, 113), 6.0),         # softcap
    (torch.bfloat16, (0, 113), None),           # one part holding every key: the flag costs no accuracy
], ids=["bf16-three-parts", "fp16-softcap", "bf16-whole"])
def test_parts_sum_to_the_whole_gradient(dtype, cuts, softcap, gen):
    q, k, v, dy = _problem(gen, dtype)
    kw = dict(scale=0.125) if softcap is None else dict(scale=0.125, softcap=softcap)
    got = _grads_in_parts(q, k, v, dy, cuts, True, **kw)
    ref, low = _reference_grads(q, k, v, dy, **kw)
    for name, g, r, lo in zip(("dq", "dk", "dv"), got, ref, low):
        assert_close_fa(g, r, lo, factor=3.0, what=name)


def test_without_the_flag_one_step_parts_are_wrong(gen):
    """The same cut without partial_keys: each one-step task makes D exact from its own keys only."""
    q, k, v, dy = _problem(gen, torch.bfloat16)
    got = _grads_in_parts(q, k, v, dy, (0, 40, 64, 113), False, scale=0.125)
    ref, low = _reference_grads(q, k, v, dy, scale=0.125)
    dq_err = (got[0].double() - ref[0]).abs().max().item()
    bound = 3 * (low[0].double() - ref[0]).abs().max().item() + 1e-5
    assert dq_err > 3 * bound, (dq_err, bound)


def test_partial_keys_belongs_to_the_grad_op():
    t = ((1, 2, 16, 64), [], "torch.float16")
    with pytest.raises(ValueError, match="^partial_keys is an argument of flash_attention_grad only$"):
        _C.flash_attention_problem(_C.Call(t, t, t, 2, "BNSD", partial_keys=True))

