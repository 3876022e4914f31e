"""The op's `dropout_origin` [row, col, head, heads]: a call that is a sub-block of a larger problem draws that
problem's keep bits (context parallelism). A sub-block's forward and backward with dropout_origin must equal,
bitwise, the same call given those bits as a user dropout_mask (cut from the host generator's mask of the whole
problem, `dropout.keep_mask`); bad origins are refused naming the rule."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import npu_flash_attn  # noqa: F401
from npu_flash_attn import dropout as drop

fwd = torch.ops.npu.flash_attention
grad_op = torch.ops.npu.flash_attention_grad


def _bits(keep: list[torch.Tensor]) -> torch.Tensor:
    """Bool keep tensors (one [N1, Sq, Skv] per sequence) -> the op's dropout_mask (bits little-endian)."""
    flat = np.concatenate([k.numpy().reshape(-1) for k in keep]).astype(np.uint8)
    return torch.from_numpy(np.packbits(flat, bitorder="little"))


def _run(q, k, v, dy, n1, layout, **kw):
    out, smax, ssum = fwd(q, k, v, n1, layout, **kw)
    g = grad_op(q, k, v, dy, n1, layout, softmax_max=smax, softmax_sum=ssum, attention_in=out, **kw)
    return (out,) + tuple(g[:3])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_bnsd_sub_block_draws_the_whole_problems_bits(dtype, gen):
    b, heads, s1, s2, d = 2, 6, 150, 210, 64
    r0, c0, h0 = 37, 82, 2  # the call: rows [37, 37 + 61), columns [82, 82 + 93), query heads [2, 6) with GQA 2:1
    lq, lk, n1, n2 = 61, 93, 4, 2
    seed, offset, kp = int(torch.randint(0, 2 ** 62, (1,), generator=gen)), 5, 0.8
    q = torch.randn(b, n1, lq, d, generator=gen).to(dtype)
    k, v = (torch.randn(b, n2, lk, d, generator=gen).to(dtype) for _ in range(2))
    dy = torch.randn(b, n1, lq, d, generator=gen).to(dtype)
    common = dict(scale=d ** -0.5, keep_prob=kp, seed=seed, offset=offset)
    keep = [drop.keep_mask(seed, offset, kp, heads, bb, range(h0, h0 + n1), r0 + lq, c0 + lk)[:, r0:, c0:]
            for bb in range(b)]
    assert s1 >= r0 + lq and s2 >= c0 + lk
    got = _run(q, k, v, dy, n1, "BNSD", dropout_origin=[r0, c0, h0, heads], **common)
    want = _run(q, k, v, dy, n1, "BNSD", dropout_mask=_bits(keep), **common)
    for name, a, w in zip(("out", "dq", "dk", "dv"), got, want):
        assert torch.equal(a, w), name
    plain = _run(q, k, v, dy, n1, "BNSD", **common)[0]  # without the origin: the call's own bits, not these
    assert not torch.equal(plain, got[0])


def test_tnd_call_of_one_sequence(gen):
    """A TND call holding the whole problem's second sequence (rows and columns from an offset): its batch index is
    0 in the call, so the origin's head carries the sequence: 1 * heads + 0."""
    n1, d, lq, lk, r0, c0 = 2, 32, 40, 70, 24, 10
    seed, kp = 99, 0.7
    q = torch.randn(lq, n1, d, generator=gen).to(torch.bfloat16)
    k, v = (torch.randn(lk, n1, d, generator=gen).to(torch.bfloat16) for _ in range(2))
    dy = torch.randn(lq, n1, d, generator=gen).to(torch.bfloat16)
    common = dict(scale=d ** -0.5, keep_prob=kp, seed=seed, actual_seq_qlen=[lq], actual_seq_kvlen=[lk],
                  sparse_mode=4, pre_tokens=30, next_tokens=5)
    keep = [drop.keep_mask(seed, 0, kp, n1, 1, range(n1), r0 + lq, c0 + lk)[:, r0:, c0:]]
    got = _run(q, k, v, dy, n1, "TND", dropout_origin=[r0, c0, n1, n1], **common)
    want = _run(q, k, v, dy, n1, "TND", dropout_mask=_bits(keep), **common)
    for name, a, w in zip(("out", "dq", "dk", "dv"), got, want):
        assert torch.equal(a, w), name


@pytest.mark.parametrize("kw,text", [
    (dict(dropout_origin=[0, 0, 0, 2]), r"only used by generated dropout \(keep_prob < 1"),
    (dict(keep_prob=0.9, dropout_origin=[0, 0, 0]), "must be 4 ints"),
    (dict(keep_prob=0.9, dropout_origin=[0, 3, 0, 2]), "col must be even"),
    (dict(keep_prob=0.9, dropout_origin=[0, 0, 0, 1]), r"heads must be at least the call's query heads \(head_num=2\)"),
    (dict(keep_prob=0.9, dropout_origin=[-1, 0, 0, 2]), r"every entry must be in \[0, 2\^32\)"),
    (dict(keep_prob=0.9, dropout_origin=[2 ** 32 - 8, 0, 0, 2]), "must stay below 2\\^32"),
])
def test_bad_origins_name_the_rule(kw, text):
    q = torch.randn(1, 2, 16, 32).to(torch.float16)
    with pytest.raises(ValueError, match=r"^dropout_origin=.*" + text):
        fwd(q, q, q, 2, "BNSD", **kw)
