"""Attention masks of `npu::flash_attention`: the sparse-mode and atten_mask rules, the in-place view the kernel reads
a dense mask through, and the block map (which tiles a dense mask lets through) with its cache.

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

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch

from .dispatch import is_fake

__all__ = ["COMPRESSED_MASK_SIZE", "PREFIX_MASK_SHAPE", "MaskView", "BlockMaskInfo", "compressed_causal_mask",
           "compressed_prefix_mask", "precompute_block_mask", "block_mask_cache_info", "clear_block_mask_cache"]

COMPRESSED_MASK_SIZE = 2048
PREFIX_MASK_SHAPE = (3072, 2048)
COLUMN_BROADCAST_WIDTH = 128  # >= every s2 block: a column-broadcast mask row is stored with this many equal bytes
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


def _lengths(cu: Sequence[int]) -> list[int]:
    prev, out = 0, []
    for c in cu:
        out.append(c - prev)
        prev = c
    return out


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
    seq_pairs = (list(zip(_lengths(cu_q), _lengths(cu_kv))) if tnd else [(S1, S2)] * int(B))
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


# ----------------------------------------------------------------------------------------------------------------
# the in-place view the kernel reads
# ----------------------------------------------------------------------------------------------------------------
@dataclass
class MaskView:
    """A dense mask as the kernel reads it: `tensor` (kept alive for the launch) holds the bytes; element
    (b, n, r, c) sits at data_ptr + b*stride_b + n*stride_n + r*stride_s + c*col_step."""
    tensor: torch.Tensor
    extent: int          # bytes from data_ptr the kernel may touch
    stride_b: int
    stride_n: int
    stride_s: int
    col_step: int
    per_batch: bool
    per_head: bool
    tnd_global: bool = False

    def problem_fields(self) -> dict:
        return {"dense_mask": True, "mask_per_batch": self.per_batch, "mask_per_head": self.per_head,
                "mask_stride_b": self.stride_b, "mask_stride_n": self.stride_n, "mask_stride_s": self.stride_s,
                "mask_col_step": self.col_step, "mask_tnd_global": self.tnd_global}


def mask_view(m: torch.Tensor, layout: str, S2, tnd_global: bool = False) -> MaskView:
    """The kernel's view of a validated dense mask. Copies nothing unless the last dimension is strided (one copy
    in the mask's own unbroadcast shape) or broadcast (rows of COLUMN_BROADCAST_WIDTH bytes)."""
    m = m.detach()
    if m.dtype == torch.bool:
        m = m.view(torch.uint8)
    if layout == "TND":
        m = m.view(1, 1, *m.shape)
    while m.dim() < 4:
        m = m.unsqueeze(0)
    for d in range(4):  # stride-0 (expanded) dimensions are broadcasts: read one slice
        if m.shape[d] > 1 and m.stride(d) == 0:
            m = m.narrow(d, 0, 1)
    if m.shape[3] == 1 and S2 > 1:
        m = m.expand(*m.shape[:3], COLUMN_BROADCAST_WIDTH).contiguous()
        col_step = 0
    else:
        if m.shape[3] > 1 and m.stride(3) != 1:
            m = m.contiguous()
        col_step = 1
    size, st = m.shape, m.stride()
    strides = [st[d] if size[d] > 1 else 0 for d in range(4)]
    extent = 1 + sum((size[d] - 1) * st[d] for d in range(4))
    return MaskView(tensor=m, extent=int(extent), stride_b=strides[0], stride_n=strides[1], stride_s=strides[2],
                    col_step=col_step, per_batch=size[0] > 1, per_head=size[1] > 1, tnd_global=tnd_global)


# ----------------------------------------------------------------------------------------------------------------
# block map: built once per mask, reused
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BlockMaskInfo:
    """What the block-map pre-pass found for a dense mask (twin). `block_map` is the kernel's buffer: one state
    byte per tile (0 masked, 1 mixed, 2 visible), then int32 computed-tile counts per map row."""
    block_map: torch.Tensor
    s1_block: int
    s2_block: int
    tiles_masked: int
    tiles_mixed: int
    tiles_visible: int
    map_rows: int

    @property
    def tiles_computed(self) -> int:
        return self.tiles_mixed + self.tiles_visible


class _BlockMapCache:
    """Block maps keyed by the mask tensor object (weakly: an entry dies with its mask), its version counter (any
    in-place change invalidates) and everything the map depends on (geometry, mode, band, prefix, chip)."""

    def __init__(self, capacity: int = 32):
        self._lock = threading.Lock()
        self._entries: OrderedDict = OrderedDict()
        self.capacity = capacity
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _key(mask: torch.Tensor, problem: dict, chip: str):
        geometry = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in problem.items()
                                if k not in ("scale", "dtype", "keep_prob", "seed", "offset", "drop_mask_pitch")))
        return (id(mask), mask._version, mask.data_ptr(), tuple(mask.shape), tuple(mask.stride()), mask.dtype,
                geometry, chip)

    def get(self, mask: torch.Tensor, problem: dict, chip: str) -> Optional[BlockMaskInfo]:
        key = self._key(mask, problem, chip)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0]() is mask:
                self._entries.move_to_end(key)
                self.hits += 1
                return hit[1]
            self.misses += 1
            return None

    def put(self, mask: torch.Tensor, problem: dict, chip: str, info: BlockMaskInfo) -> None:
        key = self._key(mask, problem, chip)

        def drop(_ref, key=key, cache=self):
            with cache._lock:
                cache._entries.pop(key, None)

        with self._lock:
            self._entries[key] = (weakref.ref(mask, drop), info)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0


_cache = _BlockMapCache()


def block_mask_cache_info() -> dict:
    """{"hits", "misses", "entries", "capacity"} of the block-map cache."""
    with _cache._lock:
        return {"hits": _cache.hits, "misses": _cache.misses, "entries": len(_cache._entries),
                "capacity": _cache.capacity}


def clear_block_mask_cache() -> None:
    """Drops every cached block map (`block_mask_cache_info` then reports an empty cache)."""
    _cache.clear()


def build_block_map(mask: torch.Tensor, view: MaskView, problem: dict, chip: str) -> BlockMaskInfo:
    """The block map of `mask` for `problem` from the cache, else from the pre-pass kernel (twin)."""
    hit = _cache.get(mask, problem, chip)
    if hit is not None:
        return hit
    from .ops import _ext
    ext = _ext()
    plan = ext.flash_attention_plan(problem, chip)
    buf = torch.zeros(int(plan["block_map_bytes"]), dtype=torch.uint8)
    ext.flash_attention_block_map(problem, chip, view.tensor.data_ptr(), view.extent, buf.data_ptr(), buf.numel())
    entries = int(plan["block_map_entries"])
    states = buf[:entries]
    info = BlockMaskInfo(block_map=buf, s1_block=int(plan["s1_block"]), s2_block=int(plan["s2_block"]),
                         tiles_masked=int((states == 0).sum()), tiles_mixed=int((states == 1).sum()),
                         tiles_visible=int((states == 2).sum()), map_rows=int(plan["block_map_rows"]))
    _cache.put(mask, problem, chip, info)
    return info


def precompute_block_mask(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, head_num: int,
                          input_layout: str, atten_mask: torch.Tensor, *, sparse_mode: int = 0,
                          pre_tokens: int = 2147483647, next_tokens: int = 2147483647, prefix=None,
                          actual_seq_qlen=None, actual_seq_kvlen=None) -> BlockMaskInfo:
    """Builds (or fetches) the block map of a dense `atten_mask` for this problem, like FlexAttention's block mask:
    call it once per batch; every later `flash_attention` call with the same mask tensor object (unchanged in
    place), geometry, mode and chip reuses it -- e.g. all layers of a model. Returns the tile statistics.
    Tiles outside the sparse mode's band count as masked (they are never computed)."""
    from .ops import get_chip, problem_dict, validate_flash_attention
    p = validate_flash_attention(query, key, value, head_num, input_layout, atten_mask=atten_mask,
                                 pre_tokens=pre_tokens, next_tokens=next_tokens, prefix=prefix,
                                 actual_seq_qlen=actual_seq_qlen, actual_seq_kvlen=actual_seq_kvlen,
                                 sparse_mode=sparse_mode)
    if not p.dense_mask:
        raise ValueError(f"precompute_block_mask: sparse_mode={sparse_mode} with this atten_mask reads no dense mask "
                         "(only sparse_mode 0, 1 and 5 with a mask do)")
    if atten_mask.device.type != "cpu":
        raise NotImplementedError(f"precompute_block_mask takes CPU (twin) masks, got one on {atten_mask.device}; on "
                                  "the NPU the adapter builds and caches block maps itself at the first call")
    view = mask_view(atten_mask, p.layout, p.S2, p.mask_tnd_global)
    return build_block_map(atten_mask, view, problem_dict(p, view), get_chip())
