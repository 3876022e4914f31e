"""A transformers attention backend: `register()`, then `from_pretrained(..., attn_implementation="npu_flash_attn")`.

`register()` puts two functions under one name (transformers >= 5): the attention function
(`transformers.AttentionInterface`) and the mask function (`transformers.masking_utils.AttentionMaskInterface`).
Without the mask function transformers builds no mask for an unknown name, so padded batches would silently attend
to padding.

* The mask function returns what flash_attention_2's does when the layer's pattern is plain causal / sliding window
  (transformers then allows skipping a causal mask): None without padding, else the 2-D padding mask [B, kv_len].
  For any other pattern (packed sequences, or/and mask overlays, a static cache while decoding) it returns SDPA's
  exact 4-D boolean mask instead, and so it does under torch.compile: flash_attention_2's mask function
  (transformers 5.25.0, masking_utils.flash_attention_mask) decides "no padding" with `attention_mask.all()`, a
  branch on data that torch.compile(fullgraph=True) cannot trace, while SDPA's skips its data checks when tracing.
  A compiled model therefore runs padded batches on the op's dense-mask path, with no branch on data
  (docs/torch_compile.md).
* The attention function (transformers' [B, N, S, D] tensors in, [B, S, N, D] out):
  - no mask: our op in BNSD, causal bottom-right aligned (so cached decoding works), sliding window as
    flash_attention_2 (keys j in [i + Sk - Sq - (window - 1), i + Sk - Sq]);
  - a 2-D padding mask: the real tokens are gathered into TND varlen (per-sequence lengths from the mask, the
    queries from its last q_len columns), attended as above per sequence, and scattered back; padding query rows
    give 0 (as flash_attention_2);
  - precomputed varlen lengths (`cu_seq_lens_q/k` with `max_length_q/k`, padding-free training with B = 1):
    TND directly;
  - a 4-D boolean mask: the SDPA interface's dense-mask path (the mask is the whole pattern).
  GQA goes to the op's grouped heads; `s_aux` (attention sinks, e.g. gpt-oss) to its `sink`; `softcap` and
  `dropout` as given; gradients flow through all paths.
* transformers treats every implementation whose name contains "flash" as a flash-attention kernel to import at
  model load; `register()` therefore also makes that loader hand out our `flash_attn_func`/`flash_attn_varlen_func`
  for this name (a wrapper around transformers' private `_lazy_imports`; other names are untouched).
Inputs must be fp16/bf16 (the op's dtypes): load the model in one of them.
"""
from __future__ import annotations

from typing import Optional

import torch

from ..interfaces import flash_attn as fa
from ..interfaces import sdpa

__all__ = ["NAME", "register", "attention_forward", "attention_mask"]

NAME = "npu_flash_attn"


def register() -> None:
    """Registers the attention and mask functions under `NAME` with transformers (idempotent)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    AttentionInterface.register(NAME, attention_forward)
    AttentionMaskInterface.register(NAME, attention_mask)
    _serve_flash_loader()


def _serve_flash_loader() -> None:
    from transformers import modeling_flash_attention_utils as mfa

    original = getattr(mfa, "_lazy_imports", None)
    if original is None or getattr(original, "_npu_flash_attn", False):
        return

    def lazy_imports(implementation, *args, **kwargs):
        if implementation == NAME:
            return fa.flash_attn_func, fa.flash_attn_varlen_func, None, mfa._pad_input, mfa._unpad_input
        return original(implementation, *args, **kwargs)

    lazy_imports._npu_flash_attn = True
    mfa._lazy_imports = lazy_imports


def attention_mask(batch_size: int, q_length: int, kv_length: int, q_offset: int = 0, kv_offset: int = 0,
                   mask_function=None, attention_mask: Optional[torch.Tensor] = None,
                   allow_is_causal_skip: bool = True, **kwargs):
    """transformers' mask-interface function for this backend (see the module docstring)."""
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

    shared = dict(batch_size=batch_size, q_length=q_length, kv_length=kv_length, q_offset=q_offset,
                  kv_offset=kv_offset, mask_function=mask_function, attention_mask=attention_mask)
    if allow_is_causal_skip and not torch.compiler.is_compiling():
        return ALL_MASK_ATTENTION_FUNCTIONS["flash_attention_2"](**shared, **kwargs)
    return ALL_MASK_ATTENTION_FUNCTIONS["sdpa"](**shared, allow_is_causal_skip=allow_is_causal_skip, **kwargs)


def _window(sliding_window: Optional[int], key_length: int) -> tuple[int, int]:
    if sliding_window is None or key_length <= sliding_window:
        return (-1, -1)
    return (sliding_window - 1, sliding_window - 1)  # flash_attention_2's convention; causal sets right = 0


def attention_forward(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      attention_mask: Optional[torch.Tensor], dropout: float = 0.0, scaling: Optional[float] = None,
                      sliding_window: Optional[int] = None, softcap: Optional[float] = None,
                      is_causal: Optional[bool] = None, s_aux: Optional[torch.Tensor] = None, **kwargs):
    """transformers' attention-interface function for this backend: returns (output [B, Sq, N, Dv], None)."""
    causal = bool(module.is_causal if is_causal is None else is_causal)
    sink = None if s_aux is None else s_aux.float()
    b, _, q_len, _ = query.shape
    kv_len = key.shape[2]
    if attention_mask is not None and attention_mask.dim() == 4:
        out = sdpa.attention(query, key, value, attention_mask, dropout, False, scaling, True, sink=sink)
        return out.transpose(1, 2), None
    shared = dict(dropout_p=dropout, softmax_scale=scaling, causal=causal,
                  window_size=_window(sliding_window, kv_len), softcap=softcap or 0.0, sink=sink)
    q, k, v = (t.transpose(1, 2) for t in (query, key, value))  # [B, S, N, D]
    if attention_mask is None and kwargs.get("cu_seq_lens_q") is not None:
        cu_q = fa.cumulative_lengths("cu_seq_lens_q", kwargs["cu_seq_lens_q"].to(torch.int32))
        cu_k = fa.cumulative_lengths("cu_seq_lens_k", kwargs["cu_seq_lens_k"].to(torch.int32))
        flat = [t.reshape(-1, *t.shape[2:]) for t in (q, k, v)]
        out = fa.attention(*flat, "TND", cu_q=cu_q, cu_k=cu_k, **shared)[0]
        return out.view(b, q_len, *out.shape[1:]), None
    if attention_mask is None:
        return fa.attention(q, k, v, "BSND", **shared)[0], None
    keep = attention_mask.bool()
    keep_q, keep_k = keep[:, -q_len:].reshape(-1), keep[:, -kv_len:].reshape(-1)
    idx_q, idx_k = keep_q.nonzero().squeeze(1), keep_k.nonzero().squeeze(1)
    cu_q = keep[:, -q_len:].sum(1).cumsum(0).tolist()
    cu_k = keep[:, -kv_len:].sum(1).cumsum(0).tolist()
    q_t = q.reshape(b * q_len, *q.shape[2:]).index_select(0, idx_q)
    k_t, v_t = (t.reshape(b * kv_len, *t.shape[2:]).index_select(0, idx_k) for t in (k, v))
    out_t = fa.attention(q_t, k_t, v_t, "TND", cu_q=cu_q, cu_k=cu_k, **shared)[0]
    out = out_t.new_zeros(b * q_len, *out_t.shape[1:]).index_copy(0, idx_q, out_t)
    return out.view(b, q_len, *out.shape[1:]), None
