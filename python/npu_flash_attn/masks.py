"""Attention masks of `npu::flash_attention`: the sparse-mode, atten_mask, band and prefix rules, and the built-in's
compressed masks. (How the twin reads a dense mask in place and caches its block map: `twin_backend`.)

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

from dataclasses import dataclass
from typing import Sequence

import torch

from .dispatch import is_fake
from .varlen import lengths

__all__ = ["COMPRESSED_MASK_SIZE", "PREFIX_MASK_SHAPE", "MaskRules", "check_masks", "compressed_causal_mask",
           "compressed_prefix_mask"]

COMPRESSED_MASK_SIZE = 2048

PREFIX_MASK_SHAPE = (3072, 2048)

_MASK_DTYPES = (torch.bool, torch.uint8)

_MODE_NAMES = {0: "mask with pre/next band", 1: "arbitrary mask", 2: "left-up causal", 3: "right-down causal",
               4: "band", 5: "prefix, uncompressed mask", 6: "prefix, compressed mask",
               7: "varlen split, right-down causal", 8: "varlen split, left-up causal"}

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


@dataclass(frozen=True)
class MaskRules:
    """What validation decided: the mode the kernel applies, its band parameters, and whether a dense mask is read."""
    sparse_mode: int
    pre_tokens: int
    next_tokens: int
    prefix: tuple
    dense: bool
    tnd_global: bool = False  # a TND mask [sum Sq, sum Skv] read at global token positions


def check_masks(atten_mask, sparse_mode: int, pre_tokens: int, next_tokens: int, prefix, layout: str, B, N1, S1, S2,
                cu_q: Sequence[int], cu_kv: Sequence[int], check_values: bool) -> MaskRules:
    """Applies the sparse-mode / mask / prefix / pre-next rules; raises ValueError or TypeError naming the argument,
    the value and the rule. `cu_q`/`cu_kv` are the enabled TND lists (empty otherwise); B/S1/S2 for TND are the
    sequence count and the longest lengths."""
    tnd = layout == "TND"
    if tnd and sparse_mode == 5:
        raise ValueError("sparse_mode=5 (prefix with an uncompressed mask) is not supported for input_layout='TND' "
                         "(as in the built-in); use sparse_mode=6 with the compressed [3072, 2048] prefix mask")
    if not tnd and sparse_mode in (7, 8):
        raise ValueError(f"sparse_mode={sparse_mode} ({_MODE_NAMES[sparse_mode]}) requires input_layout='TND', got "
                         f"{layout!r}")
    if atten_mask is not None:
        if not isinstance(atten_mask, torch.Tensor):
            raise TypeError(f"atten_mask must be a torch.Tensor or None, got {type(atten_mask).__name__}")
        if atten_mask.dtype not in _MASK_DTYPES:
            raise TypeError(f"atten_mask dtype {atten_mask.dtype} is not supported; use torch.bool or torch.uint8 "
                            "(True/1 = masked out)")
    if sparse_mode in (0, 1) and atten_mask is None:  # full attention, pre/next/prefix unused
        _check_prefix_unused(prefix, sparse_mode)
        return MaskRules(0, 2147483647, 2147483647, (), False)
    seq_pairs = (list(zip(lengths(cu_q), lengths(cu_kv))) if tnd else [(S1, S2)] * int(B))
    dense = sparse_mode in (0, 1, 5) and atten_mask is not None
    tnd_global = False
    if dense:
        tnd_global = _check_dense_shape(atten_mask, sparse_mode, layout, B, N1, S1, S2, cu_q, cu_kv)
    elif atten_mask is not None:
        _check_compressed(atten_mask, sparse_mode, check_values)
    pre, nxt = (pre_tokens, next_tokens) if sparse_mode in (0, 4, 7, 8) else (2147483647, 2147483647)
    if sparse_mode == 0:
        _check_band_mode0(pre, nxt, S1, S2)
    if sparse_mode == 4:
        _check_band_mode4(pre, nxt, layout, seq_pairs, B, S1, S2)
    if sparse_mode in (7, 8):
        _check_split_modes(sparse_mode, pre, nxt, seq_pairs)
    if sparse_mode in (5, 6):
        pref = _check_prefix(prefix, sparse_mode, seq_pairs, B)
    else:
        _check_prefix_unused(prefix, sparse_mode)
        pref = ()
    return MaskRules(sparse_mode, pre, nxt, pref, dense, tnd_global)


def _check_prefix_unused(prefix, sparse_mode: int) -> None:
    if prefix is not None:
        raise ValueError(f"prefix={list(prefix)} is only used by sparse_mode 5 and 6, got sparse_mode={sparse_mode}; "
                         "pass prefix=None")


def _check_dense_shape(m: torch.Tensor, mode: int, layout: str, B, N1, S1, S2, cu_q, cu_kv) -> bool:
    """Raises unless the dense mask's shape is accepted; returns True for the TND global form [sum Sq, sum Skv]."""
    shape = tuple(m.shape)
    if layout == "TND":
        total = (cu_q[-1] if cu_q else 0, cu_kv[-1] if cu_kv else 0)
        if m.dim() == 2 and len(cu_q) > 1 and shape == total:
            return True
        if m.dim() != 2 or shape[0] < S1 or shape[1] < S2:
            raise ValueError(f"atten_mask shape {shape} is not supported for input_layout='TND' with "
                             f"sparse_mode={mode}: pass a 2-D [R, C] mask with R >= the longest query sequence ({S1}) "
                             f"and C >= the longest key sequence ({S2}), read at the positions inside each sequence, "
                             f"or [sum Sq, sum Skv] = {list(total)} read at the global token positions")
        return False
    target = (B, N1, S1, S2)
    if m.dim() > 4 or any(s not in (1, t) for s, t in zip(reversed(shape), reversed(target))):
        raise ValueError(f"atten_mask shape {shape} is not broadcastable to [B, N1, S1, S2] = {list(target)} "
                         f"(sparse_mode={mode}): each of its trailing dimensions must be 1 or equal the target's")
    return False


def _check_compressed(m: torch.Tensor, mode: int, check_values: bool) -> None:
    if mode == 6:
        shape, ref, what = PREFIX_MASK_SHAPE, compressed_prefix_mask, (
            "the compressed prefix mask (rows 0-2047: torch.triu(ones(2048, 2048), 1); rows 2048-3071: columns "
            "0-1023 False, 1024-2047 True)")
    else:
        shape, ref, what = (COMPRESSED_MASK_SIZE,) * 2, compressed_causal_mask, (
            "the compressed mask torch.triu(torch.ones(2048, 2048), diagonal=1) (True/1 above the diagonal)")
    if tuple(m.shape) != shape:
        raise ValueError(f"atten_mask shape {tuple(m.shape)} is not supported for sparse_mode={mode} "
                         f"({_MODE_NAMES[mode]}): pass None or the compressed {list(shape)} mask, {what}")
    if check_values and not is_fake(m):
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


def _check_band_mode0(pre: int, nxt: int, S1, S2) -> None:
    """The built-in's band checks (its tiling): the band j in [i - pre, i + next] must reach the matrix."""
    if pre < 0 and nxt < 0:
        raise ValueError(f"sparse_mode=0: pre_tokens={pre} and next_tokens={nxt} are both negative: there is no "
                         "valid data block (at most one may be negative)")
    if nxt < 0 and not (pre >= -nxt and -nxt < S1):
        raise ValueError(f"sparse_mode=0: next_tokens={nxt} < 0 needs pre_tokens >= {-nxt} (got {pre}) and "
                         f"|next_tokens| < S1={S1} (else no row sees a key)")
    if pre < 0 and not (nxt >= -pre and -pre < S2):
        raise ValueError(f"sparse_mode=0: pre_tokens={pre} < 0 needs next_tokens >= {-pre} (got {nxt}) and "
                         f"|pre_tokens| < S2={S2} (else no row sees a key)")


def _band_has_visible_key(sq: int, skv: int, pre: int, nxt: int) -> bool:
    """sparse_mode 4 (right-down origin): does any row i < sq see some j < skv in [i+d-pre, i+d+nxt]?"""
    return pre + nxt >= 0 and pre >= 1 - sq and nxt >= 1 - skv


def _check_band_mode4(pre: int, nxt: int, layout: str, seq_pairs, B, S1, S2) -> None:
    if pre + nxt < 0:
        raise ValueError(f"sparse_mode=4: pre_tokens={pre} + next_tokens={nxt} < 0, so no query row can see any key "
                         "(the band is empty)")
    pairs = [(q, k) for q, k in seq_pairs if q > 0 and k > 0]
    if pairs and not any(_band_has_visible_key(q, k, pre, nxt) for q, k in pairs):
        where = "every sequence" if layout == "TND" else f"S1={S1}, S2={S2}"
        raise ValueError(f"sparse_mode=4: the band [i + (S2-S1) - pre_tokens, i + (S2-S1) + next_tokens] with "
                         f"pre_tokens={pre}, next_tokens={nxt} misses the attention matrix ({where}): no row sees any "
                         "key")


def _check_split_modes(mode: int, pre: int, nxt: int, seq_pairs) -> None:
    """Modes 7/8: the band sequence (the last / first with Sq > 0) continues a causal split, so its band must keep
    every key on the pre side (pre_tokens >= its Skv) and, for mode 7, end on or left of its diagonal."""
    nonempty = [i for i, (q, _) in enumerate(seq_pairs) if q > 0]
    if not nonempty:
        return
    b = nonempty[-1] if mode == 7 else nonempty[0]
    sq, skv = seq_pairs[b]
    role = "last" if mode == 7 else "first"
    if pre < skv:
        raise ValueError(f"sparse_mode={mode}: pre_tokens={pre} must be >= Skv={skv} of the {role} sequence with "
                         f"queries (batch {b}), whose band [i + (Skv-Sq) - pre_tokens, i + (Skv-Sq) + next_tokens] "
                         "continues a causal split")
    if mode == 7 and nxt > 0:
        raise ValueError(f"sparse_mode=7: next_tokens={nxt} must be <= 0 (the last sequence's band ends on or left of "
                         f"its right-down diagonal)")


def _check_prefix(prefix, mode: int, seq_pairs, B) -> tuple:
    if prefix is None:
        raise ValueError(f"sparse_mode={mode} (prefix attention) requires prefix: one prefix length per batch")
    vals = list(prefix)
    if len(vals) != int(B):
        raise ValueError(f"prefix has {len(vals)} entries but there are B={B} batches; sparse_mode={mode} needs one "
                         "prefix length per batch")
    out = []
    for b, (x, (sq, skv)) in enumerate(zip(vals, seq_pairs)):
        if isinstance(x, bool) or not isinstance(x, int):
            raise TypeError(f"prefix[{b}] must be an int, got {type(x).__name__} {x!r}")
        lo = 0 if sq > skv else skv - sq
        if sq > 0 and not (lo <= x <= skv):  # a sequence without queries uses no prefix
            raise ValueError(f"prefix[{b}]={x} is out of range [{lo}, {skv}] for batch {b} (Sq={sq}, Skv={skv}: "
                             f"{'Sq > Skv gives [0, Skv]' if sq > skv else 'Sq <= Skv gives [Skv - Sq, Skv]'})")
        out.append(x)
    return tuple(out)
