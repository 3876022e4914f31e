"""The CPU twin backend of the ops: the only module that calls the extension (`_C`). It turns a validated problem
into the twin's launches (forward; backward), keeps the launch facts `last_launch_info()` reports, reads a dense mask
in place (`MaskView`) and owns the block-map cache (a dense mask's tile classes, built once per mask tensor by the
pre-pass kernel and reused). Results are "twin": the Ascend C kernels emulated on the CPU."""
from __future__ import annotations

import logging
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional

import torch

from . import dropout, postprocess, progress
from .problem import FAProblem
from .varlen import sequence_shapes

__all__ = ["TwinError", "ext", "forward", "backward", "last_launch_info", "record_launch", "set_op_counting", "set_block_override",
           "MaskView", "mask_view", "BlockMaskInfo", "build_block_map", "block_mask_cache_info",
           "clear_block_mask_cache", "COLUMN_BROADCAST_WIDTH"]

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


def ext():
    """The compiled extension (imported lazily so validation/reference work without a build)."""
    try:
        from . import _C
    except ImportError as e:  # pragma: no cover - depends on the build
        raise ImportError(f"npu_flash_attn._C is not built ({e}); run `pip install -e .` in the repository") from e
    return _C


def record_launch(info: dict) -> None:
    """Makes `info` what `last_launch_info()` returns (called after every kernel launch of the package's ops)."""
    global _last_info
    with _lock:
        _last_info = dict(info)


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


def problem_dict(p: FAProblem, view=None, drop_pitch: int = 0) -> dict:
    """The validated problem as the extension's tiling reads it (`view`: the dense mask's MaskView, if any;
    `drop_pitch`: a user dropout mask's row pitch in bytes)."""
    d = {"dtype": p.dtype_name, "layout": p.layout, "B": int(p.B), "N1": int(p.N1), "N2": int(p.N2),
         "S1": int(p.S1), "S2": int(p.S2), "D": int(p.D), "Dv": int(p.Dv), "scale": float(p.scale),
         "sparse_mode": int(p.sparse_mode), "pre_tokens": int(p.pre_tokens), "next_tokens": int(p.next_tokens),
         "cu_seqlens_q": list(p.cu_seqlens_q), "cu_seqlens_kv": list(p.cu_seqlens_kv), "T1": int(p.T1),
         "T2": int(p.T2), "prefix": list(p.prefix), "dense_mask": False, "sink": bool(p.sink),
         "softcap": p.softcap, "alibi_mode": p.pse.alibi_mode, "alibi_per_batch": p.pse.alibi_per_batch,
         "alibi_delta": p.pse.alibi_delta, "pse_mode": p.pse.outer_mode, "pse_stride_b": 0, "pse_stride_n": 0,
         "pse_stride_s": 0}
    if p.drop.mode:
        d.update(drop_mode=p.drop.mode, keep_prob=p.drop.keep_prob, seed=p.drop.seed, offset=p.drop.offset,
                 drop_mask_pitch=drop_pitch)
    if p.pse.outer_mode:  # element strides of the contiguous [B or 1, N1, S1 or 1, S2] bias (0: broadcast)
        rows = p.S1 if p.pse.outer_per_row else 1
        d.update(pse_stride_b=p.N1 * rows * p.S2 if p.pse.outer_per_batch else 0, pse_stride_n=rows * p.S2,
                 pse_stride_s=p.S2 if p.pse.outer_per_row else 0)
    if view is not None:
        d.update(view.problem_fields())
    if _block_override is not None:
        d["force_s1_block"], d["force_s2_block"] = _block_override
    return d


def pse_input(p: FAProblem, pse: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """The contiguous pse the kernel reads (ALiBi slopes or the outer bias), else None."""
    return pse.detach().contiguous() if p.pse.alibi_mode or p.pse.outer_mode else None


def drop_mask_input(p: FAProblem, mask: Optional[torch.Tensor]) -> tuple[Optional[torch.Tensor], int]:
    """The user dropout mask as the kernels read it (rows of bytes in the statistics' order, repacked when needed)
    and its row pitch; (None, 0) without one."""
    if p.drop.mode != 2:
        return None, 0
    shapes = sequence_shapes(p.layout, p.B, p.S1, p.S2, p.cu_seqlens_q, p.cu_seqlens_kv)
    rows, pitch = dropout.kernel_rows(mask.detach(), p.N1, shapes, p.S2, p.layout == "TND")
    if rows.data_ptr() != mask.data_ptr():
        _log.debug("dropout_mask repacked into rows of %d bytes (TND or S2 %% 8 != 0)", pitch)
    return rows.contiguous(), pitch


def forward(p: FAProblem, a: dict, chip: str):
    """Runs the forward kernel for the validated problem `p` (`a`: the op's arguments by name) on the twin of
    `chip`; returns (attention_out, softmax_max, softmax_sum)."""
    query, sink = a["query"], a["sink"]
    out = torch.empty(p.out_shape, dtype=query.dtype)
    smax = torch.empty(p.stats_shape, dtype=torch.float32)
    ssum = torch.empty(p.stats_shape, dtype=torch.float32)
    if not p.has_work():
        # No query row sees a key (or there are no rows): every row is invalid (with sinks: the sink is the only
        # term of its softmax, max = sink, sum = 1); no launch needed.
        _log.debug("flash_attention: no query row sees a key; answered without a kernel launch")
        out.zero_()
        postprocess.fill_rows_without_keys(p, sink, smax, ssum)
        if p.layout == "TND":
            postprocess.fill_invalid_tail(p, out, smax, ssum)
        return out, smax, ssum
    # contiguous copies keep the pointers valid for the duration of the call
    q, k, v = (a[n].detach().contiguous() for n in ("query", "key", "value"))
    sk = None if sink is None else sink.detach().contiguous()
    info = _launch(p, chip, q, k, v, a["atten_mask"], sk, pse_input(p, a["pse"]), a["dropout_mask"], out, smax, ssum)
    if p.layout == "TND":
        postprocess.fill_invalid_tail(p, out, smax, ssum)
    record_launch(info)
    return out, smax, ssum


def _launch(p: FAProblem, chip: str, q, k, v, atten_mask, sink, pse, drop_mask, out, smax, ssum) -> dict:
    e = ext()
    if not hasattr(e, "flash_attention_plan"):
        raise RuntimeError("npu_flash_attn._C has no flash_attention_plan (stale build?): rebuild with "
                           "`pip install -e .`")
    view = mask_view(atten_mask, p.layout, p.S2, p.mask_tnd_global) if p.dense_mask else None
    drop_rows, drop_pitch = drop_mask_input(p, drop_mask)
    problem = problem_dict(p, view, drop_pitch)
    mask_ptr = mask_bytes = map_ptr = map_bytes = 0
    block = None
    if view is not None:
        block = build_block_map(atten_mask, view, problem, chip)
        mask_ptr, mask_bytes = view.tensor.data_ptr(), view.extent
        map_ptr, map_bytes = block.block_map.data_ptr(), block.block_map.numel()
    with progress.launch(f"twin forward launch on {chip}", p.flops(), "forward"):
        info = dict(e.flash_attention_fwd(problem, chip, q.data_ptr(), k.data_ptr(), v.data_ptr(), mask_ptr,
                                            mask_bytes, map_ptr, map_bytes, 0 if sink is None else sink.data_ptr(),
                                            0 if pse is None else pse.data_ptr(),
                                            0 if drop_rows is None else drop_rows.data_ptr(), out.data_ptr(),
                                            smax.data_ptr(), ssum.data_ptr(), _count_ops))
    if block is not None:
        shared = view.tensor.untyped_storage().data_ptr() == atten_mask.untyped_storage().data_ptr()
        info.update(tiles_masked=block.tiles_masked, tiles_mixed=block.tiles_mixed, tiles_visible=block.tiles_visible,
                    mask_copy_bytes=0 if shared else view.tensor.numel())
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
    entry = getattr(ext(), "flash_attention_grad", None)
    if entry is None:
        raise RuntimeError("npu_flash_attn._C has no flash_attention_grad (stale build?): rebuild with "
                           "`pip install -e .`")
    atten_mask = a["atten_mask"]
    view = mask_view(atten_mask, p.layout, p.S2, p.mask_tnd_global) if p.dense_mask else None
    mask_ptr, mask_bytes = (view.tensor.data_ptr(), view.extent) if view is not None else (0, 0)
    drop_rows, drop_pitch = drop_mask_input(p, a["dropout_mask"])
    with progress.launch(f"twin backward launches on {chip}", 2.5 * p.flops(), "backward"):
        info = entry(problem_dict(p, view, drop_pitch), chip, bool(a["deterministic"]), q.data_ptr(),
                     k.data_ptr(), v.data_ptr(), do.data_ptr(), o.data_ptr(), smax.data_ptr(), ssum.data_ptr(),
                     mask_ptr, mask_bytes, 0 if sk is None else sk.data_ptr(), 0 if pse is None else pse.data_ptr(),
                     0 if drop_rows is None else drop_rows.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(),
                     0 if dsink_rows is None else dsink_rows.data_ptr(),
                     0 if dpse_rows is None else dpse_rows.data_ptr())
    if p.layout == "TND":
        postprocess.zero_tnd_tails(p, dq, dk, dv)
    record_launch(dict(info, op="flash_attention_grad"))
    dsink = empty.clone() if sink is None else -postprocess.sum_rows_per_head(p, dsink_rows)
    dpse = empty if dpse_rows is None else postprocess.dpse(p, a["pse"], dpse_rows)
    return dq, dk, dv, dpse, dsink

# ----------------------------------------------------------------------------------------------------------------
# a dense mask read in place, and its block map
# ----------------------------------------------------------------------------------------------------------------


COLUMN_BROADCAST_WIDTH = 128  # >= every s2 block: a column-broadcast mask row is stored with this many equal bytes


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
    e = ext()
    plan = e.flash_attention_plan(problem, chip)
    buf = torch.zeros(int(plan["block_map_bytes"]), dtype=torch.uint8)
    e.flash_attention_block_map(problem, chip, view.tensor.data_ptr(), view.extent, buf.data_ptr(), buf.numel())
    entries = int(plan["block_map_entries"])
    states = buf[:entries]
    info = BlockMaskInfo(block_map=buf, s1_block=int(plan["s1_block"]), s2_block=int(plan["s2_block"]),
                         tiles_masked=int((states == 0).sum()), tiles_mixed=int((states == 1).sum()),
                         tiles_visible=int((states == 2).sum()), map_rows=int(plan["block_map_rows"]))
    _cache.put(mask, problem, chip, info)
    return info
