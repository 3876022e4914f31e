"""torch_npu's `npu_fused_infer_attention_score` (FIA) on our inference kernel: the same keyword names and defaults
as torch_npu 2.14, outputs `(attention_out, softmax_lse)`.

Supported (the problem module, `op_host/problem/fa_infer_problem.cpp`, holds every rule and its message):
* layouts BSH, BSND, BNSD, BNSD_BSND (BNSD in, BSND out) and TND (`actual_seq_lengths` cumulative, required);
  GQA/MQA through `num_key_value_heads` (0 = num_heads, ratio at most 64); D up to 512;
* `actual_seq_lengths` / `actual_seq_lengths_kv`: one value for every batch or at least B values (TND: cumulative,
  except `actual_seq_lengths_kv` with a block table, which holds each batch's length); a key length of 0 is allowed;
* page attention: `block_table` int32 [B, max blocks] with `block_size` (a multiple of 16, at most 512) over a cache
  (blocks, block_size, N2*D) or, for BNSD/BNSD_BSND/TND queries, (blocks, N2, block_size, D);
  `actual_seq_lengths_kv` is then required;
* `sparse_mode`, per batch of Sq query and Skv key tokens, query token i (every query head of it) seeing key j when:
  0 without a mask: always (`pre_tokens`/`next_tokens` ignored; TND included: full attention);
  0 with a dense mask: where the mask is 0 and i - pre_tokens <= j <= i + next_tokens; 1: where the mask is 0;
  2: j <= i (causal, top-left); 3: j <= i + Skv - Sq (causal, bottom-right);
  4: i + Skv - Sq - pre_tokens <= j <= i + Skv - Sq + next_tokens (band, bottom-right; pre + next >= 0 and the band
  must reach some batch's matrix);
  modes 2-4 take no mask or the compressed causal mask ((2048, 2048), (1, 2048, 2048) or (1, 1, 2048, 2048), its
  content checked); the kernel applies the band itself. With one query token the mode is ignored, as the built-in
  (a dense mask still applies, without a band);
* a dense `atten_mask` (modes 0 and 1; bool, int8 or uint8, nonzero = masked out) in any shape broadcastable to
  [B, N1, S1, S2], a 3-D one read as [B, S1, S2] (the documented [B, 1, S1, S2], [B, S1, S2], [1, S1, S2], [S1, S2], key padding [B, 1, 1, S2],
  [1, 1, 1, S2] at any width, per head [B, N1, S1, S2]), S2 the key dimension (a paged cache: block_table columns x
  block_size); TND: a 2-D [R, C] mask read at the positions inside each sequence (R, C at least the longest query
  and key lengths), or [sum Sq, sum Skv] at global token positions. The kernel reads it in place through its
  strides (a column-broadcast mask is widened once); each packed GQA row reads its query token's mask row;
* `pse_shift` [B or 1, N1, Q_S, KV_S] in the query's dtype (Q_S at least S1, KV_S at least the key S; with a block
  table, its columns x block_size), added to the scaled scores; not with TND;
* `inner_precise` 0-3: rows without a visible key are always corrected here (output 0); the high-performance bit
  (1, 3: vLLM-ascend's default) is accepted and the kernel keeps float32 scores anyway (decode is bound by HBM, where
  16-bit scores save nothing), so 1 and 3 give the results of 0 and 2;
* `softmax_lse_flag`: softmax_lse float32 [B, N1, S1, 1] (TND [T, N1, 1]), +inf for rows without a key; else a
  one-element zero tensor;
* an int8 cache (key and value int8, D a multiple of 32): value = scale * (int8 + offset), read as int8 by the cube
  (int8 x int8 against int8 splits of the query and the probabilities, op_kernel/kernel/infer_int8.h), from `antiquant_scale`/`antiquant_offset` (K at index 0, V at 1) with `antiquant_mode`, or the separate
  `key_/value_antiquant_scale/offset` with `key_/value_antiquant_mode`: mode 0 per channel (or per tensor) in the
  query's dtype, mode 1 per token float32 [B, S] (key 0 with value 1 too), for any query length, layout and cache;
  modes 2-5 raise NotImplementedError (antiquant_params gives the kernel's fp32 form).
Rows past `actual_seq_lengths`, and rows whose band misses every key, give 0 (and lse +inf). Every other argument
given a non-default value raises NotImplementedError naming it (quantisation, shared prefix, rope,
padding sizes: the next stage). Runs on CPU tensors (the twin; results are "twin") and on NPU tensors through the
torch_npu adapter (csrc/npu/npu_infer_adapter.cpp, the CANN operators FlashAttentionNpuFaInfer and its combine pass;
not yet run on hardware): both devices get the same checks and messages, then NPU tensors dispatch to
`torch.ops.npu.fused_infer_attention`, the adapter's op, with every argument the twin takes (the checks that read
tensor contents, the compressed mask's and the block table's, run on NPU only with NPU_FA_CHECK_VALUES=1).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional

import torch

from .. import twin_backend
from ..chip import get_chip
from ..dispatch import define_schema, require_device, value_checks
from ..masks import check_compressed_mask
from ..native import ext
from ..problem import INT32_MAX
from . import args

__all__ = ["npu_fused_infer_attention_score"]

# The arguments of later stages, by torch_npu's names: given (not None / not 0), the problem module refuses them.
_LATER_TENSORS = ("dequant_scale1", "quant_scale1", "dequant_scale2", "quant_scale2", "quant_offset2",
                  "query_padding_size", "kv_padding_size", "key_shared_prefix", "value_shared_prefix",
                  "actual_shared_prefix_len", "query_rope", "key_rope", "key_rope_antiquant_scale")
_ANTIQUANT = ("antiquant_scale", "antiquant_offset", "key_antiquant_scale", "key_antiquant_offset",
              "value_antiquant_scale", "value_antiquant_offset")
_ANTIQUANT_MODES = ("antiquant_mode", "key_antiquant_mode", "value_antiquant_mode")

# The NPU entry: the arguments the kernels take, by torch_npu's names (flash_attn's window and softcap by the
# problem module's), and `antiquant`, an int8 cache's scales and offsets in the kernel's fp32 form (antiquant_params;
# the antiquant tensors themselves describe the call to the operators). Only the adapter implements it
# (PrivateUse1); CPU calls run the twin directly, below.
NPU_OP_SCHEMA = (
    "(Tensor query, Tensor key, Tensor value, Tensor? block_table=None, Tensor? atten_mask=None, "
    "Tensor? pse_shift=None, Tensor? alibi_slopes=None, Tensor? antiquant_scale=None, Tensor? antiquant_offset=None, "
    "Tensor? key_antiquant_scale=None, Tensor? key_antiquant_offset=None, Tensor? value_antiquant_scale=None, "
    "Tensor? value_antiquant_offset=None, Tensor? antiquant=None, "
    "int[]? actual_seq_lengths=None, int[]? actual_seq_lengths_kv=None, int num_heads=1, float scale=1.0, "
    "int pre_tokens=2147483647, int next_tokens=2147483647, str input_layout=\"BSH\", int num_key_value_heads=0, "
    "int sparse_mode=0, int inner_precise=0, int block_size=0, bool softmax_lse_flag=False, int window_left=-1, "
    "int window_right=-1, float softcap=0.0, int antiquant_mode=0, int key_antiquant_mode=0, "
    "int value_antiquant_mode=0) -> (Tensor attention_out, Tensor softmax_lse)")

define_schema("npu::fused_infer_attention", NPU_OP_SCHEMA,
              "npu_fused_infer_attention_score's NPU kernel (the torch_npu adapter); call the function instead")


def _lengths(name: str, v: Any) -> Optional[list[int]]:
    if v is None:
        return None
    if isinstance(v, torch.Tensor):
        v = v.tolist()
    if not isinstance(v, (list, tuple)):
        raise TypeError(f"{name} must be a list of ints or None, got {type(v).__name__} {v!r}")
    return [args.integer(f"{name}[{i}]", x) for i, x in enumerate(v)]


def _desc(t: Optional[torch.Tensor]):
    return None if t is None else (tuple(t.shape), tuple(t.stride()), str(t.dtype))


def npu_fused_infer_attention_score(
        query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *, pse_shift=None, atten_mask=None,
        actual_seq_lengths=None, actual_seq_lengths_kv=None, dequant_scale1=None, quant_scale1=None,
        dequant_scale2=None, quant_scale2=None, quant_offset2=None, antiquant_scale=None, antiquant_offset=None,
        block_table=None, query_padding_size=None, kv_padding_size=None, key_antiquant_scale=None,
        key_antiquant_offset=None, value_antiquant_scale=None, value_antiquant_offset=None, key_shared_prefix=None,
        value_shared_prefix=None, actual_shared_prefix_len=None, query_rope=None, key_rope=None,
        key_rope_antiquant_scale=None, num_heads: int = 1, scale: float = 1.0, pre_tokens: int = INT32_MAX,
        next_tokens: int = INT32_MAX, input_layout: str = "BSH", num_key_value_heads: int = 0,
        sparse_mode: int = 0, inner_precise: int = 0, block_size: int = 0, antiquant_mode: int = 0,
        softmax_lse_flag: bool = False, key_antiquant_mode: int = 0, value_antiquant_mode: int = 0):
    """torch_npu.npu_fused_infer_attention_score (see the module docstring): returns (attention_out, softmax_lse)."""
    given = locals()
    later = [name for name in _LATER_TENSORS if given[name] is not None]
    return run(query, key, value, later, pse_shift=pse_shift, atten_mask=atten_mask,
               actual_seq_lengths=actual_seq_lengths, actual_seq_lengths_kv=actual_seq_lengths_kv,
               block_table=block_table, num_heads=num_heads, scale=scale, pre_tokens=pre_tokens,
               next_tokens=next_tokens, input_layout=input_layout, num_key_value_heads=num_key_value_heads,
               sparse_mode=sparse_mode, inner_precise=inner_precise, block_size=block_size,
               softmax_lse_flag=softmax_lse_flag,
               antiquant={name: given[name] for name in _ANTIQUANT + _ANTIQUANT_MODES})


def run(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, later: list, *, pse_shift=None,
        atten_mask=None, actual_seq_lengths=None, actual_seq_lengths_kv=None, block_table=None, num_heads: int = 1,
        scale: float = 1.0, pre_tokens: int = INT32_MAX, next_tokens: int = INT32_MAX, input_layout: str = "BSH",
        num_key_value_heads: int = 0, sparse_mode: int = 0, inner_precise: int = 0, block_size: int = 0,
        softmax_lse_flag: bool = False, window_size=(-1, -1), softcap: float = 0.0,
        alibi_slopes: Optional[torch.Tensor] = None, antiquant: Optional[dict] = None,
        on_valid: Optional[Callable[[], None]] = None):
    """One call of the inference kernel: FIA's arguments (`later`: the refused ones it was given; `antiquant`: its
    antiquant tensors and modes by name) and flash_attn_with_kvcache's window_size, softcap and alibi_slopes (its
    drop-in's; the problem module checks them all). `on_valid` runs once every rule has passed, before the kernel
    reads its inputs (the kvcache drop-in appends its new keys there, so that a refused call writes nothing)."""
    quant = dict.fromkeys(_ANTIQUANT) | dict.fromkeys(_ANTIQUANT_MODES, 0) | (antiquant or {})
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    require_device(query.device, "npu_fused_infer_attention_score")
    for name, t in (("key", key), ("value", value), ("block_table", block_table), ("atten_mask", atten_mask),
                    ("pse_shift", pse_shift), ("alibi_slopes", alibi_slopes), *((n, quant[n]) for n in _ANTIQUANT)):
        args.optional_tensor(name, t, query, "query")
    if not isinstance(input_layout, str):
        raise TypeError(f"input_layout must be a str, got {type(input_layout).__name__} {input_layout!r}")
    left, right = (args.integer(f"window_size[{i}]", w) for i, w in enumerate(window_size))
    attrs = dict(
        actual_seq_lengths=_lengths("actual_seq_lengths", actual_seq_lengths),
        actual_seq_lengths_kv=_lengths("actual_seq_lengths_kv", actual_seq_lengths_kv),
        num_heads=args.integer("num_heads", num_heads), scale=args.real("scale", scale),
        pre_tokens=args.integer("pre_tokens", pre_tokens), next_tokens=args.integer("next_tokens", next_tokens),
        input_layout=input_layout, num_key_value_heads=args.integer("num_key_value_heads", num_key_value_heads),
        sparse_mode=args.integer("sparse_mode", sparse_mode),
        inner_precise=args.integer("inner_precise", inner_precise), block_size=args.integer("block_size", block_size),
        softmax_lse_flag=args.flag("softmax_lse_flag", softmax_lse_flag), window_left=left, window_right=right,
        softcap=args.real("softcap", softcap), **{name: args.integer(name, quant[name]) for name in _ANTIQUANT_MODES})
    call = ext().InferCall(
        _desc(query), _desc(key), _desc(value), block_table=_desc(block_table), atten_mask=_desc(atten_mask),
        pse_shift=_desc(pse_shift), alibi_slopes=_desc(alibi_slopes), force_splits=twin_backend.infer_split_override(),
        later_args=later, **attrs, **{name: _desc(quant[name]) for name in _ANTIQUANT})
    p = ext().flash_attention_infer_problem(call)
    if value_checks(query.device):
        if p["compressed_mask"]:
            check_compressed_mask(atten_mask.reshape(2048, 2048), sparse_mode)
        if block_table is not None:
            _check_block_ids(block_table, p)
    if on_valid is not None:
        on_valid()
    params = None if p["antiquant"] is None else antiquant_params(p, **{n: quant[n] for n in _ANTIQUANT})
    if query.device.type == "npu":
        return torch.ops.npu.fused_infer_attention(query, key, value, block_table, atten_mask, pse_shift, alibi_slopes,
                                                   *(quant[n] for n in _ANTIQUANT), params, **attrs)
    out = torch.zeros(p["out_shape"], dtype=query.dtype)
    lse = torch.full(p["lse_shape"], math.inf if softmax_lse_flag else 0.0, dtype=torch.float32)
    work = sum(a * b for a, b in zip(p["q_lens"], p["kv_lens"]))
    if work > 0:
        q, k, v = (t.detach().contiguous() for t in (query, key, value))
        table = None if block_table is None else block_table.detach().contiguous()
        view = p["mask_view"]
        mask = None if view is None else twin_backend.mask_bytes_view(atten_mask, view, p["layout"], batch_major3=True)
        pse, slopes = (None if t is None else t.detach().contiguous() for t in (pse_shift, alibi_slopes))
        twin_backend.infer(call, get_chip(), q, k, v, table, mask, pse, slopes, out, lse,
                           4.0 * p["N1"] * p["D"] * work, params)
    return out, lse


def antiquant_params(p: dict, antiquant_scale=None, antiquant_offset=None, key_antiquant_scale=None,
                     key_antiquant_offset=None, value_antiquant_scale=None, value_antiquant_offset=None) -> torch.Tensor:
    """An int8 cache's validated antiquant arguments as the kernel reads them: fp32 [K's | V's], each per channel
    [N2, 2, D] (scales, offsets; a per-tensor value repeated) or per token [B, S, 2] ((scale, offset) per key); absent
    offsets are zeros. The widening to fp32 is exact for every documented dtype."""
    q = p["antiquant"]
    n = p["N2"] * p["D"]
    parts = []
    for i, (mode, scale, offset) in enumerate(((q["key_mode"], key_antiquant_scale, key_antiquant_offset),
                                               (q["value_mode"], value_antiquant_scale, value_antiquant_offset))):
        if antiquant_scale is not None:
            scale = antiquant_scale[i]
            offset = None if antiquant_offset is None else antiquant_offset[i]
        else:
            scale = scale[0]
            offset = None if offset is None else offset[0]
        pair = []
        for t in (scale, offset):
            flat = (torch.zeros_like(scale) if t is None else t).detach().float().reshape(-1)
            pair.append(flat.expand(n).reshape(p["N2"], p["D"]) if mode == 0 else flat.reshape(p["B"], -1))
        parts.append(torch.stack(pair, 1 if mode == 0 else -1).reshape(-1))
    return torch.cat(parts).contiguous()


def _check_block_ids(block_table: torch.Tensor, p: dict) -> None:
    """The blocks each batch reads (ceil(kv length / block_size) per row) must name blocks of the cache."""
    blocks, size = p["num_blocks"], p["block_size"]
    for b, n in enumerate(p["kv_lens"]):
        used = block_table[b, :(n + size - 1) // size]
        bad = (used < 0) | (used >= blocks)
        if bool(bad.any()):
            j = int(bad.nonzero()[0, 0])
            raise ValueError(f"block_table[{b}, {j}]={int(used[j])} must name a block of the cache, in [0, {blocks})")
