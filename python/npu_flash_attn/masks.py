"""Attention masks of `npu::flash_attention`: the built-in's compressed masks and the check of a given one's content.
The sparse-mode, atten_mask, band and prefix rules below, and the in-place view the kernels read a dense mask
through, are the extension's problem module's (op_host/problem); the twin's block-map cache is `twin_backend`'s.

Rules (True/1 = masked out; the built-in's semantics, see docs/masks.md):

* sparse_mode 0/1 take a dense `atten_mask` (bool or uint8) of any shape broadcastable to [B, N1, S1, S2]
  (non-TND; the built-in accepts only [B,N1,S1,S2], [B,1,S1,S2], [1,1,S1,S2] and [S1,S2]) or, for TND, a 2-D
  [R, C] mask with R >= max Sq and C >= max Skv read at the positions inside each sequence. Mode 0 also applies the
  band [i - pre_tokens, i + next_tokens] (top-left origin); mode 1 ignores pre/next. Without a mask both compute
  full attention (pre/next ignored).
* sparse_mode 2/3/4/7/8 take None or the compressed [2048, 2048] mask triu(ones, 1); mode 5 a dense mask like mode
  0/1 (non-TND only) and a per-batch `prefix`; mode 6 None or the compressed [3072, 2048] prefix mask and `prefix`.
  Unlike the built-in, modes 2-8 apply even when atten_mask is None.
* A dense mask is never expanded: broadcast dimensions are read with stride 0. A mask whose last dimension is not
  contiguous is copied once in its own (unbroadcast) shape; a column-broadcast mask ([..., S1, 1]) is stored as rows
  of 128 equal bytes. Peak extra memory is therefore O(size of the mask as given), e.g. O(B*S2) for key padding.
"""
from __future__ import annotations

import torch


__all__ = ["COMPRESSED_MASK_SIZE", "PREFIX_MASK_SHAPE", "compressed_causal_mask", "compressed_prefix_mask",
           "check_compressed_mask"]

COMPRESSED_MASK_SIZE = 2048

PREFIX_MASK_SHAPE = (3072, 2048)

_ref_cache: dict = {}


def compressed_causal_mask(dtype: torch.dtype = torch.bool) -> torch.Tensor:
    """The built-in's compressed mask of modes 2/3/4/7/8: [2048, 2048], True above the diagonal."""
    key = ("causal", dtype)
    if key not in _ref_cache:
        n = COMPRESSED_MASK_SIZE
        _ref_cache[key] = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1).to(dtype)
    return _ref_cache[key]


def compressed_prefix_mask(dtype: torch.dtype = torch.bool) -> torch.Tensor:
    """The built-in's compressed mask of mode 6: [3072, 2048], the causal triangle on top of a 1024-row block whose
    left half is visible (0) and right half masked (1)."""
    key = ("prefix", dtype)
    if key not in _ref_cache:
        n = COMPRESSED_MASK_SIZE
        bottom = torch.zeros(PREFIX_MASK_SHAPE[0] - n, n, dtype=torch.bool)
        bottom[:, n // 2:] = True
        _ref_cache[key] = torch.cat([compressed_causal_mask(torch.bool), bottom]).to(dtype)
    return _ref_cache[key]

# ----------------------------------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------------------------------


def check_compressed_mask(m: torch.Tensor, mode: int) -> None:
    """The content of a compressed mask (modes 2-4/6-8; its shape the problem module checked) must be the
    built-in's."""
    if mode == 6:
        ref, what = compressed_prefix_mask, ("the compressed prefix mask (rows 0-2047: torch.triu(ones(2048, 2048), "
                                             "1); rows 2048-3071: columns 0-1023 False, 1024-2047 True)")
    else:
        ref, what = compressed_causal_mask, ("the compressed mask torch.triu(torch.ones(2048, 2048), diagonal=1) "
                                             "(True/1 above the diagonal)")
    if not torch.equal(m, _on_device(ref(m.dtype), m.device)):
        raise ValueError(f"atten_mask for sparse_mode={mode} must equal {what}")


def _on_device(ref: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A compressed reference mask on `device` (copied once per device and dtype)."""
    if device.type == "cpu":
        return ref
    key = ("device", ref.data_ptr(), str(device))
    if key not in _ref_cache:
        _ref_cache[key] = ref.to(device)
    return _ref_cache[key]
