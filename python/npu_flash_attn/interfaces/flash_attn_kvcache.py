"""flash_attn 2.x's `flash_attn_with_kvcache` on our inference kernel (through `npu_fused_infer_attention_score`).

Semantics are flash_attn's:
* q [B, Sq, N1, D]; k_cache / v_cache [B_cache, S_cache, N2, D], or with `block_table` (int32 [B, max blocks]) a paged
  cache [num_blocks, page_block_size, N2, D] (page_block_size a multiple of 16, at most 512 here);
* `k`, `v` [B, S_new, N2, D] (both or neither) are written into the cache in place at positions
  cache_seqlens[b] ... cache_seqlens[b] + S_new - 1 (through the block table when paged; at cache row
  cache_batch_idx[b] otherwise), then attention runs over the cache_seqlens[b] + S_new keys of each sequence;
  nothing is written when an argument is refused;
* `cache_seqlens`: an int or an int tensor [B] (None: the whole cache, S_cache or max blocks * page_block_size);
  `cache_batch_idx` (int tensor [B]) picks the cache rows of a non-paged cache;
* `softmax_scale` defaults to 1/sqrt(D); `causal` aligns the mask bottom-right (query i sees keys
  j <= i + Sk - Sq); rows that see no key give 0 (and LSE +inf);
* `window_size=(left, right)`: query i sees keys i + Sk - Sq - left ... i + Sk - Sq + right (a negative side is
  unbounded; with `causal`, right = 0), one query token included;
* `softcap` > 0: the scaled scores x become softcap * tanh(x / softcap) before the bias and the masks;
* `alibi_slopes` (float32 [N1] or [B, N1]): score (i, j) of head h gets -slope[h] * |i + Sk - Sq - j|;
* `return_softmax_lse=True` returns (out, softmax_lse float32 [B, N1, Sq]).
The problem module (`op_host/problem/fa_infer_problem.cpp`) checks window_size, softcap and alibi_slopes with
messages naming them. Runs on CPU tensors (the twin) and, through `npu_fused_infer_attention_score`, on NPU tensors
(the adapter).
"""
from __future__ import annotations

import math
from typing import Optional

import torch

from . import args
from . import fused_infer

__all__ = ["flash_attn_with_kvcache"]

_MAX_PAGE = 512
_MAX_HEADDIM = 512
_MAX_GROUP = 64  # query heads per KV head


def _ints(name: str, t: torch.Tensor, n: int) -> list[int]:
    if t.dtype not in (torch.int32, torch.int64) or t.dim() != 1 or t.shape[0] != n:
        raise ValueError(f"{name} must be an int32 tensor of shape ({n},), got dtype {t.dtype} shape {tuple(t.shape)}")
    return [int(x) for x in t.tolist()]


def flash_attn_with_kvcache(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                            k: Optional[torch.Tensor] = None, v: Optional[torch.Tensor] = None, cache_seqlens=None,
                            cache_batch_idx: Optional[torch.Tensor] = None, block_table: Optional[torch.Tensor] = None,
                            softmax_scale: Optional[float] = None, causal: bool = False, window_size=(-1, -1),
                            softcap: float = 0.0, alibi_slopes: Optional[torch.Tensor] = None,
                            return_softmax_lse: bool = False):
    """flash_attn.flash_attn_with_kvcache (see the module docstring): out [B, Sq, N1, D], and softmax_lse with
    return_softmax_lse."""
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise ValueError(f"{name} must be 4-D, got shape {tuple(t.shape)}")
    for name, t in (("k", k), ("v", v), ("cache_batch_idx", cache_batch_idx), ("block_table", block_table),
                    ("alibi_slopes", alibi_slopes)):
        args.optional_tensor(name, t, q, "q")
    causal = args.flag("causal", causal)
    return_softmax_lse = args.flag("return_softmax_lse", return_softmax_lse)
    if not isinstance(window_size, (tuple, list)) or len(window_size) != 2:
        raise TypeError(f"window_size must be a pair of ints (left, right), got {window_size!r}")
    left, right = (args.integer(f"window_size[{i}]", w) for i, w in enumerate(window_size))
    windowed = left >= 0 or right >= 0
    if causal and windowed:
        right = 0
    softcap = args.real("softcap", softcap)
    b, sq, n1, d = q.shape
    if q.dtype not in (torch.float16, torch.bfloat16):
        raise TypeError(f"q dtype {q.dtype} is not supported; use torch.float16 or torch.bfloat16")
    if not 1 <= d <= _MAX_HEADDIM:
        raise ValueError(f"headdim={d} (q's last dimension) must be in [1, {_MAX_HEADDIM}], q shape {tuple(q.shape)}")
    if tuple(v_cache.shape) != tuple(k_cache.shape):
        raise ValueError(f"v_cache shape {tuple(v_cache.shape)} must equal k_cache shape {tuple(k_cache.shape)}")
    n2 = k_cache.shape[2]
    if k_cache.shape[3] != d or n2 == 0 or n1 % n2 != 0 or n1 // n2 > _MAX_GROUP:
        raise ValueError(f"k_cache shape {tuple(k_cache.shape)} must hold nheads_k heads of headdim {d} with nheads "
                         f"{n1} a multiple of nheads_k of at most {_MAX_GROUP} times it (q shape {tuple(q.shape)})")
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if t.dtype != q.dtype:
            raise TypeError(f"{name} dtype {t.dtype} must equal q's dtype {q.dtype}")
    paged = block_table is not None
    page = k_cache.shape[1]
    if paged:
        if block_table.dtype != torch.int32 or block_table.dim() != 2 or block_table.shape[0] != b:
            raise ValueError(f"block_table must be an int32 tensor [batch_size={b}, max_num_blocks_per_seq], got dtype "
                             f"{block_table.dtype} shape {tuple(block_table.shape)}")
        if page % 16 != 0 or page > _MAX_PAGE:
            raise ValueError(f"k_cache page_block_size={page} (dim 1 with block_table) must be a multiple of 16 of at "
                             f"most {_MAX_PAGE}")
        if cache_batch_idx is not None:
            raise ValueError("cache_batch_idx cannot be used with block_table (a paged cache is indexed by the table)")
        capacity = block_table.shape[1] * page
    else:
        capacity = k_cache.shape[1]
    rows = list(range(b))
    if cache_batch_idx is not None:
        rows = _ints("cache_batch_idx", cache_batch_idx, b)
        bad = [r for r in rows if not 0 <= r < k_cache.shape[0]]
        if bad:
            raise ValueError(f"cache_batch_idx holds {bad[0]}; every index must be in [0, {k_cache.shape[0]})")
    elif not paged and k_cache.shape[0] < b:
        raise ValueError(f"k_cache holds {k_cache.shape[0]} sequences but q has batch_size={b}")
    if (k is None) != (v is None):
        raise ValueError("k and v must be given together (the new keys and values to append)")
    s_new = 0
    if k is not None:
        s_new = k.shape[1] if k.dim() == 4 else -1
        for name, t in (("k", k), ("v", v)):
            if tuple(t.shape) != (b, s_new, n2, d) or t.dtype != q.dtype:
                raise ValueError(f"{name} must be [batch_size={b}, seqlen_new, nheads_k={n2}, headdim={d}] of dtype "
                                 f"{q.dtype}, got shape {tuple(t.shape)} dtype {t.dtype}")
    if cache_seqlens is None:
        seqlens = [capacity - s_new] * b
    elif isinstance(cache_seqlens, torch.Tensor):
        seqlens = _ints("cache_seqlens", cache_seqlens, b)
    else:
        seqlens = [args.integer("cache_seqlens", cache_seqlens)] * b
    for i, n in enumerate(seqlens):
        if not 0 <= n <= capacity - s_new:
            raise ValueError(f"cache_seqlens[{i}]={n} must be in [0, {capacity - s_new}]: the cache holds {capacity} "
                             f"positions per sequence and {s_new} new keys follow")
    kv_lens = [n + s_new for n in seqlens]
    if paged:
        blocks = k_cache.shape[0]
        for i, n in enumerate(kv_lens):
            used = block_table[i, :(n + page - 1) // page]
            bad = (used < 0) | (used >= blocks)
            if bool(bad.any()):
                j = int(bad.nonzero()[0, 0])
                raise ValueError(f"block_table[{i}, {j}]={int(used[j])} must name a block of k_cache, in [0, {blocks})")
    scale = 1.0 / math.sqrt(d) if softmax_scale is None else args.real("softmax_scale", softmax_scale)
    if paged:
        key = k_cache.reshape(k_cache.shape[0], page, n2 * d)
        value = v_cache.reshape(k_cache.shape[0], page, n2 * d)
        extra = dict(block_table=block_table, block_size=page)
    else:
        key, value = k_cache[rows], v_cache[rows]  # a copy: the new keys go into it too
        extra = {}

    def append() -> None:
        _append(k_cache, v_cache, k, v, seqlens, rows, block_table)
        if not paged:
            _append(key, value, k, v, seqlens, list(range(b)), None)
    out, lse = fused_infer.run(
        q, key, value, [], num_heads=n1, num_key_value_heads=n2, input_layout="BSND", scale=scale,
        actual_seq_lengths_kv=kv_lens, sparse_mode=3 if causal and not windowed else 0,
        softmax_lse_flag=return_softmax_lse, window_size=(left, right), softcap=softcap, alibi_slopes=alibi_slopes,
        on_valid=None if k is None else append, **extra)
    return (out, lse[..., 0]) if return_softmax_lse else out


@torch.no_grad()
def _append(k_cache, v_cache, k, v, seqlens, rows, block_table) -> None:
    """Writes k/v [B, S_new, N2, D] into the caches at positions seqlens[b] + t, in place."""
    s_new = k.shape[1]
    for i, start in enumerate(seqlens):
        pos = torch.arange(start, start + s_new, device=k_cache.device)
        if block_table is None:
            k_cache[rows[i], pos] = k[i]
            v_cache[rows[i], pos] = v[i]
        else:
            page = k_cache.shape[1]
            blk = block_table[i, pos // page].long()
            k_cache[blk, pos % page] = k[i]
            v_cache[blk, pos % page] = v[i]
