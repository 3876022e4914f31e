"""Checks shared by the drop-in interface tests: plain-torch attention math (float64 = the reference, the input's
low precision = the FlashAttention criterion's baseline) and the forward/backward comparison."""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch

from npu_flash_attn.criterion import assert_close_fa


def math_attention(q, k, v, scale: float, visible: Optional[torch.Tensor] = None, bias=None,
                   softcap: Optional[float] = None):
    """softmax(cap(scale * q k^T) + bias, masked by `visible`) v in the inputs' dtype, [..., Sq, D] tensors with
    broadcastable leading dims (GQA: repeat k/v first). Rows that see no key give 0. Returns (out, lse)."""
    s = (q @ k.transpose(-1, -2)) * scale
    if softcap is not None:
        s = softcap * torch.tanh(s / softcap)
    if bias is not None:
        s = s + bias
    if visible is not None:
        s = s.masked_fill(~visible, float("-inf"))
    m = s.detach().amax(dim=-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(s - m)
    den = e.sum(dim=-1, keepdim=True)
    p = e / torch.where(den > 0, den, torch.ones_like(den))
    inf = torch.full(den.shape, float("inf"), dtype=torch.float64)
    lse = torch.where(den > 0, m.double() + torch.log(den.double()), inf)
    return p @ v, lse.squeeze(-1).detach()


def repeat_heads(t: torch.Tensor, n1: int, dim: int) -> torch.Tensor:
    return t.repeat_interleave(n1 // t.shape[dim], dim=dim)


def check_fwd_bwd(ours: Callable, ref: Callable, inputs: Sequence[torch.Tensor], gen: torch.Generator,
                  low: Optional[Callable] = None, grads: bool = True) -> dict:
    """ours(*inputs) against ref(*float64 inputs) with the FA criterion (baseline: low(*inputs), default ref run in
    the inputs' dtype); with grads, every input's gradient within 3x the low-precision program's error."""
    low = ref if low is None else low
    leaves = [t.detach().clone().requires_grad_(grads and t.is_floating_point()) for t in inputs]
    out = ours(*leaves)
    r_in = [t.detach().double().requires_grad_(grads) if t.is_floating_point() else t for t in inputs]
    r_out = ref(*r_in)
    l_in = [t.detach().clone().requires_grad_(grads and t.is_floating_point()) for t in inputs]
    l_out = low(*l_in)
    err, bound = assert_close_fa(out, r_out, l_out)
    report = {"out": (err, bound)}
    if not grads:
        return report
    dy = torch.randn(out.shape, generator=gen).to(out.dtype)
    out.backward(dy)
    r_out.backward(dy.double())
    l_out.backward(dy)
    for i, (g, r, lo) in enumerate(zip(leaves, r_in, l_in)):
        if not g.is_floating_point():
            continue
        e = (g.grad.double() - r.grad).abs().max().item()
        base = (lo.grad.double() - r.grad).abs().max().item()
        assert e <= 3 * base + 1e-5, f"grad of input {i}: max|g - g64| = {e:.3e} > 3 * {base:.3e} + 1e-5"
        report[f"d{i}"] = (e, 3 * base + 1e-5)
    return report
