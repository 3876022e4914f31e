"""flash_attn 2.x's functions (`flash_attn_func`, the packed and varlen variants) on our op.

Layouts: flash_attn's [B, S, N, D] is our BSND; its varlen [total, N, D] is our TND, with int32 `cu_seqlens`
tensors (leading 0) turned into our cumulative lists. Argument semantics are flash_attn's:
* `softmax_scale` defaults to 1/sqrt(D); `dropout_p` is the drop probability (keep_prob = 1 - dropout_p, a fresh seed
  from torch's default generator per call; the mask is our op's, not flash_attn's Philox stream).
* `causal` is aligned bottom-right (key j visible to query i iff j <= i + Sk - Sq, per sequence with varlen);
  `window_size=(left, right)`, -1 = unbounded, keeps j in [i + Sk - Sq - left, i + Sk - Sq + right] (causal sets
  right = 0): our sparse modes 3 and 4. Rows that see no key give 0 and LSE +inf, as flash_attn.
* `softcap` > 0 caps the scaled scores (0 = off); `alibi_slopes` (float32 [N] or [B, N]) adds
  -slope * |i + Sk - Sq - j|: our in-kernel ALiBi (pse_type 2) with q_start_idx = Sk - Sq. With varlen every sequence
  must then have the same Sk - Sq (one offset per call; NotImplementedError otherwise). The slopes get no gradient,
  as in flash_attn.
* `deterministic`: accepted; our backward is bitwise reproducible whatever it says.
* `return_attn_probs=True` returns (out, softmax_lse, S_dmask): softmax_lse float32 [B, N, Sq] (varlen [N, total_q]),
  the log-sum-exp of each row of the scaled scores, and S_dmask an empty tensor. (flash_attn fills S_dmask only with
  dropout, for its tests; we never form P.) The LSE carries no gradient, as in flash_attn.
Not supported: varlen `block_table` (paged KV, NotImplementedError); fp32 inputs (TypeError from the op).
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import torch

from .. import dropout
from ..problem import INT32_MAX
from ..varlen import lengths
from . import args, stats

__all__ = ["flash_attn_func", "flash_attn_qkvpacked_func", "flash_attn_kvpacked_func", "flash_attn_varlen_func",
           "flash_attn_varlen_qkvpacked_func", "flash_attn_varlen_kvpacked_func", "check_alibi_slopes",
           "alibi_op_args"]


def _band(causal: bool, window_size) -> dict:
    """Our op's sparse mode for flash_attn's causal flag and window (both bottom-right aligned)."""
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__} {causal!r}")
    if (not isinstance(window_size, (tuple, list)) or len(window_size) != 2
            or not all(isinstance(w, int) and not isinstance(w, bool) for w in window_size)):
        raise ValueError(f"window_size={window_size!r} must be a pair of ints (left, right), -1 = unbounded")
    left, right = window_size
    if left < -1 or right < -1:
        raise ValueError(f"window_size={tuple(window_size)} must hold ints >= -1 (-1 = unbounded)")
    if causal:
        right = 0
    if left == -1 and right == -1:
        return dict(sparse_mode=0)
    if left == -1 and right == 0:
        return dict(sparse_mode=3)
    return dict(sparse_mode=4, pre_tokens=INT32_MAX if left == -1 else left,
                next_tokens=INT32_MAX if right == -1 else right)


def check_alibi_slopes(alibi_slopes, q: torch.Tensor, heads: int) -> Optional[torch.Tensor]:
    """None, or flash_attn's `alibi_slopes` checked: float32 [heads] or [B, heads] on q's device, finite."""
    if args.optional_tensor("alibi_slopes", alibi_slopes, q, "q") is None:
        return None
    if alibi_slopes.dtype != torch.float32:
        raise TypeError(f"alibi_slopes dtype {alibi_slopes.dtype} must be torch.float32 (one slope per head)")
    if alibi_slopes.dim() not in (1, 2) or alibi_slopes.shape[-1] != heads:
        raise ValueError(f"alibi_slopes shape {tuple(alibi_slopes.shape)} must be [N] or [B, N] with N = {heads} "
                         "(q's heads)")
    args.check_finite_values("alibi_slopes", alibi_slopes, rule="; the slopes must be finite")
    return alibi_slopes


def alibi_op_args(slopes: torch.Tensor, q_position0: int, kv_position0: int) -> dict:
    """flash_attn's bias -slope * |i + Sk - Sq - j| as our in-kernel ALiBi (pse_type 2) for a call whose query row i
    sits at position q_position0 + i and key column j at kv_position0 + j of the bias' coordinates (one
    sequence: q_position0 = Sk - Sq, kv_position0 = 0)."""
    return dict(pse=slopes.detach(), pse_type=2, q_start_idx=[q_position0], kv_start_idx=[kv_position0])


def _alibi(alibi_slopes, q: torch.Tensor, seq_pairs: Sequence[tuple[int, int]]) -> dict:
    """Our in-kernel ALiBi for flash_attn's bottom-right aligned bias: query position i counts from Sk - Sq."""
    if check_alibi_slopes(alibi_slopes, q, q.shape[-2]) is None:
        return {}
    deltas = {sk - sq for sq, sk in seq_pairs if sq > 0 and sk > 0}
    if len(deltas) > 1:
        raise NotImplementedError(f"alibi_slopes with varlen sequences whose Sk - Sq differ ({sorted(deltas)}): the "
                                  "kernel takes one ALiBi offset per call; split the batch by Sk - Sq")
    return alibi_op_args(alibi_slopes, deltas.pop() if deltas else 0, 0)


def attention(q, k, v, layout: str, *, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
              softcap=0.0, alibi_slopes=None, deterministic=False, cu_q: Optional[Sequence[int]] = None,
              cu_k: Optional[Sequence[int]] = None, sink: Optional[torch.Tensor] = None):
    """flash_attn semantics on our op for layout "BSND" or "TND" (cu_q/cu_k: cumulative lists without the leading
    0). Returns (out, softmax_max, softmax_sum). `sink` (float32 [N1], torch_npu's attention sinks) is for the
    integrations; flash_attn 2.x has none."""
    args.flag("deterministic", deterministic)
    dropout_p = args.real("dropout_p", dropout_p)
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p={dropout_p} must be a float in [0, 1)")
    softcap = args.real("softcap", softcap)
    if softcap < 0.0:
        raise ValueError(f"softcap={softcap} must be >= 0 (0 = off)")
    check_qkv(q, k, v, 3 if layout == "TND" else 4)
    scale = 1.0 / math.sqrt(q.shape[-1]) if softmax_scale is None else args.real("softmax_scale", softmax_scale)
    seqs = list(zip(lengths(cu_q), lengths(cu_k))) if layout == "TND" else [(q.shape[1], k.shape[1])]
    keep_prob = 1.0 - dropout_p
    return torch.ops.npu.flash_attention(
        q, k, v, q.shape[-2], layout, scale=scale, keep_prob=keep_prob,
        seed=dropout.draw_seed() if keep_prob < 1.0 else 0, softcap=float(softcap) if softcap > 0 else None,
        actual_seq_qlen=cu_q, actual_seq_kvlen=cu_k, sink=sink, **_band(causal, window_size),
        **_alibi(alibi_slopes, q, seqs))


def check_qkv(q, k, v, dims: int) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != dims:
            raise ValueError(f"{name} must be a {dims}-D tensor ({'[total, N, D]' if dims == 3 else '[B, S, N, D]'}), "
                             f"got {tuple(t.shape)}")


def _result(out, smax, ssum, return_attn_probs: bool, cu_q=None):
    if not return_attn_probs:
        return out
    lse = stats.lse(smax, ssum)  # [B, N, S]; TND: one [N, Sq_b] block per sequence, then the padding tokens
    if cu_q is not None:
        lse = torch.cat(list(stats.sequence_blocks(lse.unsqueeze(-1), cu_q)), dim=1).squeeze(-1)
    return out, lse, out.new_empty(0)


def cumulative_lengths(name: str, cu: torch.Tensor, tokens: Optional[int] = None, tokens_of: str = "") -> list[int]:
    """flash_attn's int32 cumulative lengths (leading 0, non-decreasing, at most `tokens`, the token count of the
    tensor `tokens_of`) -> our cumulative list."""
    if not isinstance(cu, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor (int32, [batch + 1]), got {type(cu).__name__}")
    if cu.dtype != torch.int32 or cu.dim() != 1 or cu.numel() < 2:
        raise ValueError(f"{name} must be a 1-D torch.int32 tensor [batch + 1] of cumulative lengths starting at 0, "
                         f"got a {cu.dtype} tensor of shape {tuple(cu.shape)}")
    if cu.device.type == "meta":
        raise ValueError(f"{name} is on the meta device without data: the cumulative lengths are read on the host; "
                         "pass a CPU tensor or one on q's device")
    # While torch.export traces (or torch.compile with capture_scalar_outputs), the values are symbols: each rule
    # then becomes a run-time assertion of the graph.
    values = cu.tolist()
    args.require(values[0] == 0, f"{name}[0] must be 0",
                 lambda: f"{name}[0]={values[0]} must be 0 (flash_attn's cumulative lengths start at 0)")
    for i in range(1, len(values)):
        args.require(values[i] >= values[i - 1], f"{name} must be non-decreasing",
                     lambda: f"{name}={values}: entry {i} ({values[i]}) is smaller than entry {i - 1} "
                             f"({values[i - 1]}); cumulative lengths must be non-decreasing")
    if tokens is not None:
        args.require(values[-1] <= tokens, f"{name}[-1] must be <= {tokens_of}.shape[0]",
                     lambda: f"{name}={values} ends at {values[-1]} but {tokens_of} holds {tokens} tokens "
                             f"({tokens_of}.shape[0]); the last entry must be <= that")
    return values[1:]


def _check_max(name: str, max_seqlen, lengths: Sequence[int]) -> None:
    if isinstance(max_seqlen, bool) or not isinstance(max_seqlen, int):
        raise TypeError(f"{name} must be an int, got {type(max_seqlen).__name__} {max_seqlen!r}")
    for n in lengths:
        args.require(max_seqlen >= n, f"{name} must be >= every sequence length",
                     lambda: f"{name}={max_seqlen} is below the longest sequence ({max(lengths)}) of the cumulative "
                             "lengths; pass the maximum sequence length")


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash_attn.flash_attn_func: q [B, Sq, N, D], k/v [B, Sk, Nk, D] (N % Nk == 0) -> out [B, Sq, N, Dv]
    (with return_attn_probs: (out, softmax_lse [B, N, Sq] float32, empty S_dmask))."""
    out, smax, ssum = attention(q, k, v, "BSND", dropout_p=dropout_p, softmax_scale=softmax_scale, causal=causal,
                                window_size=window_size, softcap=softcap, alibi_slopes=alibi_slopes,
                                deterministic=deterministic)
    return _result(out, smax, ssum, return_attn_probs)


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                              softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash_attn_func on qkv [B, S, 3, N, D]."""
    _check_packed("qkv", qkv, 5, 3)
    q, k, v = qkv.unbind(2)
    return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                           deterministic, return_attn_probs)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                             softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash_attn_func on q [B, Sq, N, D] and kv [B, Sk, 2, Nk, D]."""
    _check_packed("kv", kv, 5, 2)
    k, v = kv.unbind(2)
    return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                           deterministic, return_attn_probs)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None):
    """flash_attn.flash_attn_varlen_func: q [total_q, N, D], k/v [total_k, Nk, D], int32 cu_seqlens [batch + 1]
    -> out [total_q, N, Dv] (with return_attn_probs: (out, softmax_lse [N, total_q] float32, empty S_dmask))."""
    if block_table is not None:
        raise NotImplementedError("block_table (paged KV cache) is not supported by npu_flash_attn's "
                                  "flash_attn_varlen_func; pass contiguous k/v")
    check_qkv(q, k, v, 3)
    cu_q = cumulative_lengths("cu_seqlens_q", cu_seqlens_q, q.shape[0], "q")
    cu_k = cumulative_lengths("cu_seqlens_k", cu_seqlens_k, k.shape[0], "k")
    if len(cu_q) != len(cu_k):
        raise ValueError(f"cu_seqlens_q ({len(cu_q) + 1} entries) and cu_seqlens_k ({len(cu_k) + 1}) must describe "
                         "the same number of sequences")
    _check_max("max_seqlen_q", max_seqlen_q, lengths(cu_q))
    _check_max("max_seqlen_k", max_seqlen_k, lengths(cu_k))
    out, smax, ssum = attention(q, k, v, "TND", dropout_p=dropout_p, softmax_scale=softmax_scale, causal=causal,
                                window_size=window_size, softcap=softcap, alibi_slopes=alibi_slopes,
                                deterministic=deterministic, cu_q=cu_q, cu_k=cu_k)
    return _result(out, smax, ssum, return_attn_probs, cu_q)


def flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p=0.0, softmax_scale=None, causal=False,
                                     window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                                     return_attn_probs=False):
    """flash_attn_varlen_func on qkv [total, 3, N, D] (the same lengths for queries and keys)."""
    _check_packed("qkv", qkv, 4, 3)
    q, k, v = qkv.unbind(1)
    return flash_attn_varlen_func(q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen, dropout_p, softmax_scale,
                                  causal, window_size, softcap, alibi_slopes, deterministic, return_attn_probs)


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                                    softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash_attn_varlen_func on q [total_q, N, D] and kv [total_k, 2, Nk, D]."""
    _check_packed("kv", kv, 4, 2)
    k, v = kv.unbind(1)
    return flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                                  softmax_scale, causal, window_size, softcap, alibi_slopes, deterministic,
                                  return_attn_probs)


def _check_packed(name: str, t, dims: int, parts: int) -> None:
    axis = dims - 3
    if not isinstance(t, torch.Tensor) or t.dim() != dims or t.shape[axis] != parts:
        shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
        raise ValueError(f"{name} must have {dims} dims with size {parts} at dim {axis}, got {shape}")
