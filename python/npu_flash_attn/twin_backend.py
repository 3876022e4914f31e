"""The CPU twin backend of the ops: the only module that launches the extension's (`_C`) kernels. It runs a
validated problem's launches (forward; backward) through the problem's `Call`, keeps the launch facts
`last_launch_info()` reports, reads a dense mask through the problem's view (`kernel_mask`) and owns the block-map
cache (a dense mask's tile classes, built once per mask tensor by the pre-pass kernel and reused, keyed by the
extension's block_map_key rule, the NPU adapter's too). Results are "twin": the Ascend C kernels emulated on the
CPU."""
from __future__ import annotations

import logging
import math
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional

import torch

from . import dropout, postprocess, progress
from .native import ext
from .problem import FAProblem, sequence_shapes

__all__ = ["TwinError", "ext", "forward", "backward", "infer", "last_launch_info", "record_launch", "set_op_counting", "set_infer_split_override",
           "infer_split_override",
           "set_block_override", "set_score_override", "set_lazy_rescale_override", "set_bwd_store_limit", "kernel_mask", "BlockMaskInfo", "build_block_map", "block_mask_cache_info",
           "clear_block_mask_cache"]

try:
    from ._C import TwinError
except ImportError:  # pragma: no cover - source tree without a built extension
    class TwinError(RuntimeError):
        pass
TwinError.__doc__ = ("A kernel did something the NPU would silently get wrong (or hang on); the message names the "
                     "core, the Ascend C API and the numbers (a RuntimeError; the process survives it).")

_log = logging.getLogger("npu_flash_attn")
_lock = threading.Lock()
_last_info: Optional[dict] = None


def record_launch(info: dict) -> None:
    """Makes `info` what `last_launch_info()` returns (called after every kernel launch of the package's ops) and
    logs the launch's decisions at DEBUG."""
    global _last_info
    with _lock:
        _last_info = dict(info)
    if _log.isEnabledFor(logging.DEBUG):
        facts = ", ".join(f"{k}={info[k]}" for k in ("chip", "s1_block", "s2_block", "block_dim", "block_dim_dq",
                                                    "tasks", "launches", "workspace_bytes") if k in info)
        _log.debug("%s (twin): %s", info.get("op", "flash_attention"), facts)


def last_launch_info() -> Optional[dict]:
    """A copy of the info dict (tiling facts: chip, block_dim, s1_block, s2_block, ...) returned by the last kernel
    launch of this process, or None before the first launch. Calls rejected by validation or answered without a
    launch (empty problems) leave it unchanged."""
    with _lock:
        return None if _last_info is None else dict(_last_info)


_block_override = None


def set_block_override(s1_block: Optional[int] = None, s2_block: Optional[int] = None) -> None:
    """Tuning knob: run the forward with these query/key block sizes instead of the tiling's choice (both or neither;
    multiples of 16 and 64). With a dense atten_mask the tiling refuses (ValueError) blocks whose block-map pre-pass
    overflows the chip's UB (s1_block * s2_block at most 23552 with 192 KB of UB); the twin refuses other buffers
    that overflow UB or L1."""
    global _block_override
    if (s1_block is None) != (s2_block is None):
        raise ValueError("set_block_override: give both s1_block and s2_block, or neither")
    _block_override = None if s1_block is None else (int(s1_block), int(s2_block))


_count_ops = False


def set_op_counting(enabled: bool) -> None:
    """When enabled, `last_launch_info()["op_counts"]` gives the twin's instruction counts of the forward kernel per
    core kind ({"aic": {op: n}, "aiv": {op: n}}), from its trace (slower; for tests and profiling)."""
    global _count_ops
    _count_ops = bool(enabled)


_score_override = -1


def set_score_override(low: Optional[bool] = None) -> None:
    """Tuning / test knob: the forward's scores leave the cube in the input dtype (True) or in float32 (False),
    whatever inner_precise and the tiling's rule say; None restores the tiling's choice."""
    global _score_override
    _score_override = -1 if low is None else int(bool(low))


_lazy_override = (-1, float("-inf"))


def set_lazy_rescale_override(slots: Optional[int] = None, threshold: Optional[float] = None) -> None:
    """Tuning / test knob: the forward's lazy rescale (P*V kept in L0C across a task's steps, O flushed only when a
    row's running max passes its reference by more than the threshold) off (slots=0), or on with 1 or 2 score tiles
    beside O in L0C, where the problem allows it (last_launch_info()["lazy_rescale"] says whether it ran);
    `threshold` replaces the default (negative: every step flushes; huge: none after the first). None, None
    restores the tiling's choice."""
    global _lazy_override
    if slots is not None and (isinstance(slots, bool) or slots not in (0, 1, 2)):
        raise ValueError(f"set_lazy_rescale_override: slots must be 0, 1, 2 or None, got {slots!r}")
    if threshold is not None and not (isinstance(threshold, (int, float)) and math.isfinite(threshold)):
        raise ValueError(f"set_lazy_rescale_override: threshold must be a finite number or None, got {threshold!r}")
    _lazy_override = (-1 if slots is None else slots, float("-inf") if threshold is None else float(threshold))


_bwd_store_limit = 0


def set_bwd_store_limit(limit_bytes: Optional[int] = None) -> None:
    """Tuning / test knob: the backward's stored P and dS tiles may take at most this many bytes of workspace per
    chunk of kv heads (op_kernel/tiling/bwd_tiling.h; smaller means more chunks, and where one kv head's tiles do
    not fit, the dK/dV pass recomputes them); None restores the default (kBwdStoreLimitBytes)."""
    global _bwd_store_limit
    if limit_bytes is not None and (not isinstance(limit_bytes, int) or limit_bytes < 1):
        raise ValueError(f"set_bwd_store_limit: limit_bytes must be a positive int or None, got {limit_bytes!r}")
    _bwd_store_limit = 0 if limit_bytes is None else limit_bytes


def _with_blocks(p: FAProblem):
    """The problem's call with the tuning knobs of set_block_override / set_score_override /
    set_lazy_rescale_override / set_bwd_store_limit."""
    p.call.force_s1_block, p.call.force_s2_block = _block_override or (0, 0)
    p.call.force_low_scores = _score_override
    p.call.force_lazy, p.call.lazy_threshold = _lazy_override
    p.call.bwd_store_limit = _bwd_store_limit
    return p.call


def pse_input(p: FAProblem, pse: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """The contiguous pse the kernel reads (ALiBi slopes or the outer bias), else None."""
    return pse.detach().contiguous() if p.pse.alibi_mode or p.pse.outer_mode else None


def drop_mask_input(p: FAProblem, mask: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """The user dropout mask as the kernels read it: rows of p.drop.mask_pitch bytes in the statistics' order
    (repacked when the problem says so); None without one."""
    if p.drop.mode != 2:
        return None
    if not p.drop.mask_repack:
        return mask.detach().contiguous().view(-1)
    _log.debug("dropout_mask repacked into rows of %d bytes (TND or S2 %% 8 != 0)", p.drop.mask_pitch)
    return dropout.kernel_rows(mask.detach(), p.N1, sequence_shapes(p), p.drop.mask_pitch)


def forward(p: FAProblem, a: dict, chip: str):
    """Runs the forward kernel for the validated problem `p` (`a`: the op's arguments by name) on the twin of
    `chip`; returns (attention_out, softmax_max, softmax_sum, attention_out_residual): the last empty unless
    p.out_residual, zero in rows no kernel writes."""
    query, sink = a["query"], a["sink"]
    out = torch.empty(p.out_shape, dtype=query.dtype)
    smax = torch.empty(p.stats_shape, dtype=torch.float32)
    ssum = torch.empty(p.stats_shape, dtype=torch.float32)
    residual = torch.zeros(p.out_shape if p.out_residual else (0,), dtype=query.dtype)
    if not p.has_work():
        # No query row sees a key (or there are no rows): every row is invalid (with sinks: the sink is the only
        # term of its softmax, max = sink, sum = 1); no launch needed.
        _log.debug("flash_attention: no query row sees a key; answered without a kernel launch")
        out.zero_()
        postprocess.fill_rows_without_keys(p, sink, smax, ssum)
        postprocess.fill_padding(p, out, smax, ssum)
        return out, smax, ssum, residual
    # contiguous copies keep the pointers valid for the duration of the call
    q, k, v = (a[n].detach().contiguous() for n in ("query", "key", "value"))
    sk = None if sink is None else sink.detach().contiguous()
    info = _launch(p, chip, q, k, v, a["atten_mask"], sk, pse_input(p, a["pse"]), a["dropout_mask"], out, smax, ssum,
                   residual)
    postprocess.fill_padding(p, out, smax, ssum)
    record_launch(info)
    return out, smax, ssum, residual


_infer_splits = 0


def set_infer_split_override(splits: int = 0) -> None:
    """Twin tuning: the following inference launches split each sequence's keys `splits` ways (1: no split) instead
    of the tiling's choice (0)."""
    global _infer_splits
    if isinstance(splits, bool) or not isinstance(splits, int) or splits < 0:
        raise ValueError(f"splits={splits!r} must be an int >= 0 (0 = the tiling's choice)")
    _infer_splits = splits


def infer_split_override() -> int:
    return _infer_splits


def infer(call, chip: str, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
          block_table: Optional[torch.Tensor], mask: Optional[torch.Tensor], pse_shift: Optional[torch.Tensor],
          alibi_slopes: Optional[torch.Tensor], out: torch.Tensor, lse: torch.Tensor, flops: float,
          antiquant: Optional[torch.Tensor] = None) -> dict:
    """Runs the inference kernel (and, with split keys, its combine pass) of a validated `_C.InferCall` on the twin of
    `chip`, writing `out` and (softmax_lse_flag) `lse` in place; the tensors are contiguous and stay alive. `flops`:
    the problem's matmul work (progress reports); `mask`: a dense mask's kernel view (mask_bytes_view);
    `antiquant`: an int8 cache's scales and offsets as the kernel reads them (fused_infer.antiquant_params)."""
    def ptr(t):
        return 0 if t is None else t.data_ptr()
    with progress.launch(f"twin inference launch on {chip}", flops, "forward"):
        info = dict(ext().flash_attention_infer(call, chip, query.data_ptr(), key.data_ptr(), value.data_ptr(),
                                                ptr(block_table), ptr(mask), ptr(pse_shift), ptr(alibi_slopes),
                                                ptr(antiquant), out.data_ptr(), lse.data_ptr()))
    info["op"] = "npu_fused_infer_attention_score"
    record_launch(info)
    return info


def _launch(p: FAProblem, chip: str, q, k, v, atten_mask, sink, pse, drop_mask, out, smax, ssum, residual) -> dict:
    call = _with_blocks(p)
    view = kernel_mask(p, atten_mask) if p.dense_mask else None
    drop_rows = drop_mask_input(p, drop_mask)
    mask_ptr = mask_bytes = map_ptr = map_bytes = 0
    block = None
    if view is not None:
        block = build_block_map(atten_mask, view, p, chip)
        mask_ptr, mask_bytes = view.data_ptr(), p.mask_view["extent"]
        map_ptr, map_bytes = block.block_map.data_ptr(), block.block_map.numel()
    with progress.launch(f"twin forward launch on {chip}", p.flops(), "forward"):
        info = dict(ext().flash_attention_fwd(call, chip, q.data_ptr(), k.data_ptr(), v.data_ptr(), mask_ptr,
                                              mask_bytes, map_ptr, map_bytes, 0 if sink is None else sink.data_ptr(),
                                              0 if pse is None else pse.data_ptr(),
                                              0 if drop_rows is None else drop_rows.data_ptr(), out.data_ptr(),
                                              smax.data_ptr(), ssum.data_ptr(), _count_ops,
                                              residual.data_ptr() if p.out_residual else 0))
    if block is not None:
        shared = view.untyped_storage().data_ptr() == atten_mask.untyped_storage().data_ptr()
        info.update(tiles_masked=block.tiles_masked, tiles_mixed=block.tiles_mixed, tiles_visible=block.tiles_visible,
                    mask_copy_bytes=0 if shared else view.numel())
    return info


def backward(p: FAProblem, a: dict, chip: str):
    """Runs the backward kernels for the validated problem `p` (`a`: the grad op's arguments by name) on the twin
    of `chip`; returns (dq, dk, dv, dpse, dsink)."""
    query, key, value = a["query"], a["key"], a["value"]
    empty = torch.empty(0, dtype=query.dtype)
    if not p.has_work():  # no row sees a key: P = 0 everywhere, and every sink's probability is 1 (dsink = 0)
        zeros = tuple(t.new_zeros(t.shape) for t in (query, key, value))
        return zeros + (empty, empty.clone() if a["sink"] is None else torch.zeros(p.N1))
    q, k, v = (t.detach().contiguous() for t in (query, key, value))
    do, o = a["dy"].detach().contiguous(), a["attention_in"].detach().contiguous()
    smax, ssum = a["softmax_max"].detach().contiguous(), a["softmax_sum"].detach().contiguous()
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    sink = a["sink"]
    sk = None if sink is None else sink.detach().contiguous()
    dsink_rows = None if sink is None else torch.zeros(p.stats_shape, dtype=torch.float32)  # rows of no task: 0
    pse = pse_input(p, a["pse"])
    dpse_rows = postprocess.dpse_rows(p)
    view = kernel_mask(p, a["atten_mask"]) if p.dense_mask else None
    mask_ptr, mask_bytes = (view.data_ptr(), p.mask_view["extent"]) if view is not None else (0, 0)
    drop_rows = drop_mask_input(p, a["dropout_mask"])
    res = a["attention_in_residual"].detach().contiguous() if p.out_residual else None
    with progress.launch(f"twin backward launches on {chip}", 2.5 * p.flops(), "backward"):
        info = ext().flash_attention_grad(
            _with_blocks(p), chip, bool(a["deterministic"]), q.data_ptr(), k.data_ptr(), v.data_ptr(), do.data_ptr(),
            o.data_ptr(), smax.data_ptr(), ssum.data_ptr(), mask_ptr, mask_bytes, 0 if sk is None else sk.data_ptr(),
            0 if pse is None else pse.data_ptr(), 0 if drop_rows is None else drop_rows.data_ptr(), dq.data_ptr(),
            dk.data_ptr(), dv.data_ptr(), 0 if dsink_rows is None else dsink_rows.data_ptr(),
            0 if dpse_rows is None else dpse_rows.data_ptr(), 0 if res is None else res.data_ptr())
    postprocess.zero_padding(p, dq, dk, dv)
    record_launch(dict(info, op="flash_attention_grad"))
    dsink = empty.clone() if sink is None else -postprocess.sum_rows_per_head(p, dsink_rows)
    dpse = empty if dpse_rows is None else postprocess.dpse_of_rows(p, a["pse"], dpse_rows)
    return dq, dk, dv, dpse, dsink


# ----------------------------------------------------------------------------------------------------------------
# a dense mask read in place, and its block map
# ----------------------------------------------------------------------------------------------------------------


def kernel_mask(p: FAProblem, mask: torch.Tensor) -> torch.Tensor:
    """A dense mask as the kernels read it (p.mask_view, the problem module's rule): broadcast dimensions narrowed to
    one slice, a column-broadcast mask widened to rows of equal bytes, a strided last dimension copied once."""
    return mask_bytes_view(mask, p.mask_view, p.layout)


def mask_bytes_view(mask: torch.Tensor, view: dict, layout: str, batch_major3: bool = False) -> torch.Tensor:
    """kernel_mask for any op: `view` is the problem module's mask_view, bool and int8 masks read as bytes;
    `batch_major3`: a 3-D mask is [B, S1, S2] (the inference op's), not [N1, S1, S2]."""
    m = mask.detach()
    if m.dtype in (torch.bool, torch.int8):
        m = m.view(torch.uint8)
    if batch_major3 and layout != "TND" and m.dim() == 3:
        m = m.unsqueeze(1)
    if layout == "TND":
        m = m.view(1, 1, *m.shape)
    while m.dim() < 4:
        m = m.unsqueeze(0)
    for d in view["narrow"]:
        m = m.narrow(d, 0, 1)
    if view["widen"]:
        m = m.expand(*view["shape"])
    return m.contiguous() if view["copy"] else m


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


def build_block_map(mask: torch.Tensor, view: torch.Tensor, p: FAProblem, chip: str) -> BlockMaskInfo:
    """The block map of `mask` (read through `view`, `kernel_mask`) for problem `p` from the cache, else from the
    pre-pass kernel (twin)."""
    e, call = ext(), _with_blocks(p)
    plan = e.flash_attention_plan(call, chip)
    map_key = tuple(plan["block_map_key"])
    hit = _cache.get(mask, map_key, chip)
    if hit is not None:
        return hit
    buf = torch.zeros(int(plan["block_map_bytes"]), dtype=torch.uint8)
    e.flash_attention_block_map(call, chip, view.data_ptr(), p.mask_view["extent"], buf.data_ptr(), buf.numel())
    entries = int(plan["block_map_entries"])
    states = buf[:entries]
    info = BlockMaskInfo(block_map=buf, s1_block=int(plan["s1_block"]), s2_block=int(plan["s2_block"]),
                         tiles_masked=int((states == 0).sum()), tiles_mixed=int((states == 1).sum()),
                         tiles_visible=int((states == 2).sum()), map_rows=int(plan["block_map_rows"]))
    _cache.put(mask, map_key, chip, info)
    return info
