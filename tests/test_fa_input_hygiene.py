"""Inputs the kernel cannot take are refused before anything is allocated or launched, naming the argument: shapes
past the kernel's 32-bit size fields or beyond any chip's memory, a scale whose product with the scores leaves
float32, and non-finite query/key/value (refused rather than fed to the cube)."""
import math

import pytest
import torch

import npu_flash_attn  # noqa: F401  (registers torch.ops.npu.flash_attention)
from npu_flash_attn.problem import FLT_MAX


def fa(q, k, v, heads, layout="BSND", **kw):
    return torch.ops.npu.flash_attention(q, k, v, heads, layout, **kw)


def rand(gen, *shape, dtype=torch.bfloat16):
    return torch.randn(*shape, generator=gen).to(dtype)


def test_huge_logical_shape_is_refused_before_allocating(gen):
    small = rand(gen, 1, 1, 1, 128)
    q = small.expand(4096, 65536, 8, 128)            # 2^38 elements: 512 GiB if materialised
    k = v = small.expand(4096, 65536, 8, 128)
    with pytest.raises(ValueError, match=r"the problem needs \d+(\.\d+)? GiB of device memory \(query 512 GiB, .*more "
                                         r"than the 64 GiB HBM of the largest supported chip; the largest part is query"):
        fa(q, k, v, 8)


def test_dimension_past_32_bits_is_refused(gen):
    small = rand(gen, 1, 1, 1, 1)
    q = small.expand(1, 2 ** 31, 1, 1)
    with pytest.raises(ValueError, match=r"query dimension 1 is 2147483648; every dimension must be <= 2147483647"):
        fa(q, q, q, 1)


def test_scale_overflowing_float32_is_refused(gen):
    q, k, v = (rand(gen, 1, 37, 2, 64) for _ in range(3))
    peak = float((q[0].transpose(0, 1).double() @ k[0].transpose(0, 1).double().transpose(1, 2)).abs().max())
    scale = 0.75 * FLT_MAX / peak  # scale * peak > FLT_MAX / 2
    with pytest.raises(ValueError, match=r"scale=.* times the largest \|q\.k\| .* beyond float32"):
        fa(q, k, v, 2, scale=scale)


def test_large_scale_accepted_when_the_scores_stay_in_range(gen):
    # Rows of q and k live in orthogonal halves of the head dim: the Cauchy-Schwarz bound overflows, the real
    # scores do not, so the exact check lets it run.
    q, k, v = (rand(gen, 1, 29, 2, 64) for _ in range(3))
    q[..., 32:] = 0
    k[..., :32] = 0
    k[..., 0] = 2 ** -20  # tiny overlap so the scores are not all zero
    qn = q.float().norm(dim=-1).max().item()
    kn = k.float().norm(dim=-1).max().item()
    scale = FLT_MAX / (qn * kn)  # bound = FLT_MAX > FLT_MAX / 2
    out, smax, _ = fa(q, k, v, 2, scale=scale)
    assert torch.isfinite(out).all() and torch.isfinite(smax).all()


@pytest.mark.parametrize("name", ["query", "key", "value"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_inputs_name_the_tensor(gen, name, bad):
    t = {n: rand(gen, 2, 19, 2, 40) for n in ("query", "key", "value")}
    t[name][1, 7, 1, 3] = bad
    with pytest.raises(ValueError, match=rf"{name} contains NaN or Inf \(first at index \(1, 7, 1, 3\): "):
        fa(t["query"], t["key"], t["value"], 2)
