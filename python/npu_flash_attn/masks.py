"""Attention masks of `npu::flash_attention`: the built-in's compressed masks (and the check of a given one's content),
and the block map (which tiles a dense mask lets through) with its cache. The shape and mode rules below and the
in-place view the kernels read a dense mask through are the extension's problem module's (op_host/problem).

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
from typing import Optional

import torch

__all__ = ["COMPRESSED_MASK_SIZE", "PREFIX_MASK_SHAPE", "BlockMaskInfo", "compressed_causal_mask",
           "compressed_prefix_mask", "check_compressed_mask", "precompute_block_mask", "block_mask_cache_info",
           "clear_block_mask_cache"]

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
    in-place change invalidates), the chip and everything else the map depends on (`map_key`: the extension's
    block_map_key, the rule the NPU adapter's cache keys on too)."""

    def __init__(self, capacity: int = 32):
        self._lock = threading.Lock()
        self._entries: OrderedDict = OrderedDict()
        self.capacity = capacity
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _key(mask: torch.Tensor, map_key: tuple, chip: str):
        return (id(mask), mask._version, mask.data_ptr(), tuple(mask.shape), tuple(mask.stride()), mask.dtype,
                map_key, chip)

    def get(self, mask: torch.Tensor, map_key: tuple, chip: str) -> Optional[BlockMaskInfo]:
        key = self._key(mask, map_key, chip)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0]() is mask:
                self._entries.move_to_end(key)
                self.hits += 1
                return hit[1]
            self.misses += 1
            return None

    def put(self, mask: torch.Tensor, map_key: tuple, chip: str, info: BlockMaskInfo) -> None:
        key = self._key(mask, map_key, chip)

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


def build_block_map(mask: torch.Tensor, view: torch.Tensor, p, chip: str) -> BlockMaskInfo:
    """The block map of `mask` (read through `view`, ops.kernel_mask) for problem `p` from the cache, else from the
    pre-pass kernel (twin)."""
    from .ops import _ext
    ext = _ext()
    plan = ext.flash_attention_plan(p.call, chip)
    map_key = tuple(plan["block_map_key"])
    hit = _cache.get(mask, map_key, chip)
    if hit is not None:
        return hit
    buf = torch.zeros(int(plan["block_map_bytes"]), dtype=torch.uint8)
    ext.flash_attention_block_map(p.call, chip, view.data_ptr(), p.mask_view["extent"], buf.data_ptr(), buf.numel())
    entries = int(plan["block_map_entries"])
    states = buf[:entries]
    info = BlockMaskInfo(block_map=buf, s1_block=int(plan["s1_block"]), s2_block=int(plan["s2_block"]),
                         tiles_masked=int((states == 0).sum()), tiles_mixed=int((states == 1).sum()),
                         tiles_visible=int((states == 2).sum()), map_rows=int(plan["block_map_rows"]))
    _cache.put(mask, map_key, chip, info)
    return info


def precompute_block_mask(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, head_num: int,
                          input_layout: str, atten_mask: torch.Tensor, *, sparse_mode: int = 0,
                          pre_tokens: int = 2147483647, next_tokens: int = 2147483647, prefix=None,
                          actual_seq_qlen=None, actual_seq_kvlen=None) -> BlockMaskInfo:
    """Builds (or fetches) the block map of a dense `atten_mask` for this problem, like FlexAttention's block mask:
    call it once per batch; every later `flash_attention` call with the same mask tensor object (unchanged in
    place), geometry, mode and chip reuses it -- e.g. all layers of a model. Returns the tile statistics.
    Tiles outside the sparse mode's band count as masked (they are never computed)."""
    from .ops import get_chip, kernel_mask, validate_flash_attention
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
    return build_block_map(atten_mask, kernel_mask(p, atten_mask), p, get_chip())
