"""`scaled_dot_product_attention` with torch.nn.functional's signature and semantics, on our op (layout BNSD).

* query [B, N1, L, E], key [B, N2, S, E], value [B, N2, S, Ev] -> [B, N1, L, Ev]; fp16/bf16 (the op's dtypes).
* `scale` defaults to 1/sqrt(E); `dropout_p` drops probabilities (a fresh seed from torch's default generator per call;
  the mask is our op's hash, not torch's RNG stream).
* `is_causal` is top-left aligned (key j visible to query i iff j <= i, torch's convention; our sparse_mode 2); with an
  `attn_mask` too it raises RuntimeError, as torch documents.
* A bool `attn_mask` (True = take part, torch's convention) of any shape broadcastable to [B, N1, L, S] goes to the
  op's dense-mask path inverted (the op's True = masked out), broadcast dimensions kept at stride 0, so a key-padding
  mask [B, 1, 1, S] costs O(B * S). A float `attn_mask` is an additive bias: its -inf entries become that dense mask
  and the finite rest the op's outer bias (pse_type 0), in the query's dtype, expanded to [B or 1, N1, L or 1, S]
  (a copy of that size); its gradient is returned when it requires grad. Rows that see no key give 0, as torch.
* Heads: without `enable_gqa` key/value must have N1 heads or 1 (broadcast); with it N1 % N2 == 0. Otherwise a
  RuntimeError, as torch raises.
"""
from __future__ import annotations

import math
from typing import Optional

import torch

from .. import dropout
from . import args

__all__ = ["scaled_dot_product_attention"]


def _keep_broadcast(t: torch.Tensor, fn) -> torch.Tensor:
    """fn applied to the distinct elements of `t` only, broadcast back to t's shape (stride-0 dimensions stay so)."""
    base = t[tuple(slice(0, 1) if st == 0 and n > 1 else slice(None) for n, st in zip(t.shape, t.stride()))]
    return fn(base).expand(t.shape)


def _as_4d(name: str, mask: torch.Tensor, shape: tuple) -> torch.Tensor:
    if mask.dim() > 4:
        raise ValueError(f"{name} has {mask.dim()} dims; it must be broadcastable to [B, N1, L, S] = {list(shape)}")
    m = mask.view((1,) * (4 - mask.dim()) + tuple(mask.shape))
    if any(a not in (1, b) for a, b in zip(m.shape, shape)):
        raise ValueError(f"{name} shape {tuple(mask.shape)} is not broadcastable to [B, N1, L, S] = {list(shape)}")
    return m


def mask_arguments(attn_mask: Optional[torch.Tensor], is_causal: bool, query: torch.Tensor,
                   shape: tuple) -> dict:
    """Our op's mask/bias arguments for SDPA's `attn_mask` and `is_causal` (shape = [B, N1, L, S])."""
    args.flag("is_causal", is_causal)
    if args.optional_tensor("attn_mask", attn_mask, query, "query") is None:
        return dict(sparse_mode=2) if is_causal else {}
    if is_causal:
        raise RuntimeError("attn_mask and is_causal=True were both given; pass one (fold the causal mask into "
                           "attn_mask), as torch.nn.functional.scaled_dot_product_attention requires")
    m = _as_4d("attn_mask", attn_mask, shape)
    if m.dtype == torch.bool:
        dense, bias = _keep_broadcast(m, torch.logical_not), None
    elif m.is_floating_point():
        args.check_finite_values("attn_mask", attn_mask.detach(), allow_neg_inf=True,
                                 rule="; a float attn_mask is an additive bias: finite values, or -inf to mask out")
        neg = _keep_broadcast(m.detach(), torch.isneginf)
        dense = neg if bool(neg.any()) else None
        bias = m if dense is None else m.masked_fill(neg, 0.0)
        if not (bias.requires_grad or bool((bias != 0).any())):
            bias = None
    else:
        raise TypeError(f"attn_mask dtype {attn_mask.dtype} must be torch.bool (True = attend) or floating point "
                        "(an additive bias)")
    op_args = {} if dense is None else dict(atten_mask=dense, sparse_mode=1)
    if bias is not None:
        op_args.update(pse=bias.to(query.dtype).expand(bias.shape[0], shape[1], bias.shape[2], shape[3]), pse_type=0)
    return op_args


def check_heads(n1: int, n2: int, enable_gqa: bool) -> None:
    if n1 == n2 or (n2 == 1 and not enable_gqa):
        return
    if not enable_gqa:
        raise RuntimeError(f"key/value have {n2} heads and query {n1}: pass enable_gqa=True for grouped-query "
                           "attention (without it the head counts must be equal or key/value's 1)")
    if n2 == 0 or n1 % n2:
        raise RuntimeError(f"enable_gqa=True needs the number of key/value heads ({n2}) to divide the number of "
                           f"query heads ({n1})")


def scaled_dot_product_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                                 attn_mask: Optional[torch.Tensor] = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: Optional[float] = None,
                                 enable_gqa: bool = False) -> torch.Tensor:
    """torch.nn.functional.scaled_dot_product_attention on npu_flash_attn (see the module docstring)."""
    return attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False,
              sink: Optional[torch.Tensor] = None) -> torch.Tensor:
    """scaled_dot_product_attention plus torch_npu's attention sinks (`sink`, float32 [N1]) for the integrations."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise ValueError(f"{name} must be a 4-D [B, N, S, E] tensor, got {tuple(t.shape)}")
    dropout_p = args.real("dropout_p", dropout_p)
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p={dropout_p} must be a float in [0, 1)")
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else args.real("scale", scale)
    n1, n2 = query.shape[1], key.shape[1]
    check_heads(n1, n2, args.flag("enable_gqa", enable_gqa))
    shape = (query.shape[0], n1, query.shape[2], key.shape[2])
    keep_prob = 1.0 - dropout_p
    out, _, _ = torch.ops.npu.flash_attention(
        query, key, value, n1, "BNSD", scale=scale,
        keep_prob=keep_prob, seed=dropout.draw_seed() if keep_prob < 1.0 else 0, sink=sink,
        **mask_arguments(attn_mask, is_causal, query, shape))
    return out
