"""`npu_fusion_attention` / `npu_fusion_attention_grad` with torch_npu 2.14's signatures and outputs, on our op.

A script written for torch_npu switches with one line per function::

    torch_npu.npu_fusion_attention = npu_flash_attn.npu_fusion_attention
    torch_npu.npu_fusion_attention_grad = npu_flash_attn.npu_fusion_attention_grad

Arguments keep the built-in's names (`pre_tockens`, `next_tockens`, the grad's keyword-only `scale_value`, ...), order
and defaults. The forward returns the built-in's 7 values: attention_out, softmax_max, softmax_sum (float32,
`[B, N1, S1, 8]`, TND `[T1, N1, 8]`), softmax_out (an empty tensor of the query's dtype, reserved as in the built-in),
and the ints seed, offset (what dropout used: pass them to the grad) and numels (N1 * sum of Sq * Skv over the
sequences, the size of the dropout mask). `out.backward()` works through the forward (our op's autograd).

Where our op and the built-in differ, these functions follow the built-in:
* Without `atten_mask` the built-in ignores sparse_mode, pre_tockens/next_tockens and prefix and computes full
  attention; so do these (our op applies modes 2-8 even without a mask). The mode's range is still checked.
* Dropout (0 < keep_prob < 1, no `dropout_mask`) with seed = offset = 0 (the defaults) draws a fresh seed from torch's
  default generator, as the built-in draws from the NPU generator; the seed and offset used are returned. The keep
  bits are our op's counter-based hash (`npu_flash_attn.dropout`), not the built-in's Philox stream: the same seed
  gives another (equally distributed) mask than torch_npu. With keep_prob = 1 seed and offset are returned as given.
* `softmax_layout="TND"` (TND only) returns and takes the statistics token-major; "" keeps the default order.
* `gen_mask_parallel` / `sync` schedule the built-in's separate mask-generation stream; our kernels generate the bits
  in place, so both are accepted (bools) and have no effect.
Not supported (NotImplementedError naming the argument): `padding_mask` (the built-in does not support it either)
and a non-empty `softmax_in`; float32 inputs raise TypeError (the op takes fp16/bf16 only). The grad regenerates
dropout from (seed, offset) like the built-in's, which has no `dropout_mask` argument: a forward that used a
`dropout_mask` gets its gradient through autograd (`out.backward()`).
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch

from .. import dropout
from ..layouts import batch_and_seq
from ..problem import INT32_MAX, LAYOUTS, FAProblem, sequence_shapes, validate_flash_attention
from . import args, stats

__all__ = ["npu_fusion_attention", "npu_fusion_attention_grad"]


def _check_unsupported(padding_mask, gen_mask_parallel, sync) -> None:
    if padding_mask is not None:
        raise NotImplementedError("padding_mask is not supported (torch_npu.npu_fusion_attention reserves it too); "
                                  "pass None and express padding through atten_mask or TND actual_seq_qlen/kvlen")
    args.flag("gen_mask_parallel", gen_mask_parallel)
    args.flag("sync", sync)


def _scalars(scale_name: str, scale, keep_prob, seed, offset, head_num, pre_tockens, next_tockens,
             inner_precise) -> tuple:
    """The built-in's scalar arguments checked by their names (the op's messages would say `scale`, `pre_tokens`);
    returns (scale, keep_prob, seed, offset) with the seed and offset as the op's signed 64-bit ints."""
    for name, v in (("head_num", head_num), ("pre_tockens", pre_tockens), ("next_tockens", next_tockens),
                    ("inner_precise", inner_precise)):
        args.integer(name, v)
    keep_prob = args.real("keep_prob", keep_prob)
    if not 0.0 < keep_prob <= 1.0:
        raise ValueError(f"keep_prob={keep_prob} must be in (0, 1]")
    return (args.real(scale_name, scale), keep_prob, args.seed_value("seed", seed),
            args.seed_value("offset", offset))


def _tnd_stats(softmax_layout, input_layout) -> bool:
    """True when the statistics are token-major (softmax_layout="TND")."""
    if softmax_layout not in ("", "TND"):
        raise ValueError(f"softmax_layout={softmax_layout!r} must be '' (default order) or 'TND'")
    if softmax_layout == "TND" and str(input_layout).upper() != "TND":
        raise ValueError(f"softmax_layout='TND' needs input_layout='TND' (got {input_layout!r})")
    return softmax_layout == "TND"


def _mask_args(atten_mask, sparse_mode, pre_tockens, next_tockens, prefix, input_layout) -> dict:
    """Our op's mask arguments for the built-in's: without atten_mask the built-in computes full attention."""
    layout = str(input_layout).upper()
    if isinstance(sparse_mode, bool) or not isinstance(sparse_mode, int):
        raise TypeError(f"sparse_mode must be an int, got {type(sparse_mode).__name__} {sparse_mode!r}")
    valid = (0, 1, 2, 3, 4, 6, 7, 8) if layout == "TND" else (0, 1, 2, 3, 4, 5, 6)
    if sparse_mode not in valid:
        raise ValueError(f"sparse_mode={sparse_mode} is not valid with input_layout={input_layout!r}; use one of "
                         f"{list(valid)}")
    if atten_mask is None:
        return dict(sparse_mode=0)
    return dict(atten_mask=atten_mask, sparse_mode=sparse_mode, pre_tokens=pre_tockens, next_tokens=next_tockens,
                prefix=prefix)


def _problem(query, key, value, head_num, input_layout, actual_seq_qlen, actual_seq_kvlen) -> FAProblem:
    validate = validate_flash_attention
    if torch.compiler.is_compiling():  # a host call torch.compile cannot trace: run it outside the graph
        validate = torch.compiler.disable(validate)  # (not at import: that would import torch._dynamo)
    return validate(query, key, value, head_num, input_layout, actual_seq_qlen=actual_seq_qlen,
                    actual_seq_kvlen=actual_seq_kvlen, check_values=False)


def _sequences(query, key, value, head_num, input_layout, actual_seq_qlen, actual_seq_kvlen) -> tuple:
    """(numels, cu_q): N1 * sum of Sq * Skv over the sequences (the built-in's dropout-mask length) and, for TND,
    the cumulative query lengths of the enabled sequences (else None). BSH/SBH/BSND/BNSD take the sizes from the
    shapes, so numels stays symbolic under torch.compile and torch.export; TND asks the problem module (under
    torch.compile a graph break)."""
    layout = str(input_layout).upper()
    if layout in LAYOUTS and layout != "TND":
        (b, s1), (_, s2) = batch_and_seq(query, layout), batch_and_seq(key, layout)
        return head_num * b * s1 * s2, None
    p = _problem(query, key, value, head_num, input_layout, actual_seq_qlen, actual_seq_kvlen)
    return dropout.mask_elements(sequence_shapes(p), p.N1), p.cu_seqlens_q


def npu_fusion_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, head_num: int,
                         input_layout: str, pse: Optional[torch.Tensor] = None,
                         padding_mask: Optional[torch.Tensor] = None, atten_mask: Optional[torch.Tensor] = None,
                         scale: float = 1.0, keep_prob: float = 1.0, pre_tockens: int = INT32_MAX,
                         next_tockens: int = INT32_MAX, inner_precise: int = 0,
                         prefix: Optional[Sequence[int]] = None, actual_seq_qlen: Optional[Sequence[int]] = None,
                         actual_seq_kvlen: Optional[Sequence[int]] = None, sparse_mode: int = 0,
                         gen_mask_parallel: bool = True, sync: bool = False, softmax_layout: str = "",
                         sink: Optional[torch.Tensor] = None, dropout_mask: Optional[torch.Tensor] = None,
                         seed: int = 0, offset: int = 0):
    """torch_npu.npu_fusion_attention (2.14) on npu_flash_attn (see the module docstring for the differences).

    Returns (attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels)."""
    _check_unsupported(padding_mask, gen_mask_parallel, sync)
    scale, keep_prob, op_seed, op_offset = _scalars("scale", scale, keep_prob, seed, offset, head_num, pre_tockens,
                                                    next_tockens, inner_precise)
    token_major = _tnd_stats(softmax_layout, input_layout)
    masks = _mask_args(atten_mask, sparse_mode, pre_tockens, next_tockens, prefix, input_layout)
    if keep_prob < 1.0 and dropout_mask is None and seed == 0 and offset == 0:
        seed = op_seed = dropout.draw_seed()
    out, smax, ssum = torch.ops.npu.flash_attention(
        query, key, value, head_num, input_layout, pse=pse, scale=scale, keep_prob=keep_prob,
        inner_precise=inner_precise, actual_seq_qlen=actual_seq_qlen, actual_seq_kvlen=actual_seq_kvlen, seed=op_seed,
        offset=op_offset, sink=sink, dropout_mask=dropout_mask, **masks)
    numels, cu_q = _sequences(query, key, value, head_num, input_layout, actual_seq_qlen, actual_seq_kvlen)
    if token_major:
        smax, ssum = stats.ntd_to_tnd(smax, cu_q), stats.ntd_to_tnd(ssum, cu_q)
    return out, smax, ssum, query.new_empty(0), seed, offset, numels


def npu_fusion_attention_grad(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, dy: torch.Tensor,
                              head_num: int, input_layout: str, *, pse: Optional[torch.Tensor] = None,
                              padding_mask: Optional[torch.Tensor] = None,
                              atten_mask: Optional[torch.Tensor] = None,
                              softmax_max: Optional[torch.Tensor] = None,
                              softmax_sum: Optional[torch.Tensor] = None,
                              softmax_in: Optional[torch.Tensor] = None,
                              attention_in: Optional[torch.Tensor] = None, scale_value: float = 1.0,
                              keep_prob: float = 1.0, pre_tockens: int = INT32_MAX, next_tockens: int = INT32_MAX,
                              inner_precise: int = 0, seed: int = 0, offset: int = 0, numels: int = 0,
                              prefix: Optional[Sequence[int]] = None,
                              actual_seq_qlen: Optional[Sequence[int]] = None,
                              actual_seq_kvlen: Optional[Sequence[int]] = None, sparse_mode: int = 0,
                              gen_mask_parallel: bool = True, sync: bool = False, softmax_layout: str = "",
                              sink: Optional[torch.Tensor] = None):
    """torch_npu.npu_fusion_attention_grad (2.14) on npu_flash_attn: returns (dq, dk, dv, dpse, dsink).

    Pass the forward's softmax_max/softmax_sum/attention_out and its seed/offset/numels; dsink is float32 [N1] when
    `sink` is given, else empty."""
    _check_unsupported(padding_mask, gen_mask_parallel, sync)
    scale_value, keep_prob, seed, offset = _scalars("scale_value", scale_value, keep_prob, seed, offset, head_num,
                                                    pre_tockens, next_tockens, inner_precise)
    args.integer("numels", numels)
    if softmax_in is not None and softmax_in.numel() != 0:
        raise NotImplementedError(f"softmax_in with {softmax_in.numel()} elements is not supported: the built-in "
                                  "reserves it (its forward returns it empty); pass None or the forward's softmax_out")
    token_major = _tnd_stats(softmax_layout, input_layout)
    masks = _mask_args(atten_mask, sparse_mode, pre_tockens, next_tockens, prefix, input_layout)
    expected, cu_q = _sequences(query, key, value, head_num, input_layout, actual_seq_qlen, actual_seq_kvlen)
    if keep_prob < 1.0 and numels != expected:
        raise ValueError(f"numels={numels} must be the forward's {expected} (N1 * sum of Sq * Skv) with "
                         f"keep_prob={keep_prob} < 1: pass the forward's seed, offset and numels")
    if token_major:
        softmax_max, softmax_sum = (None if t is None else stats.tnd_to_ntd(t, cu_q)
                                    for t in (softmax_max, softmax_sum))
    return torch.ops.npu.flash_attention_grad(
        query, key, value, dy, head_num, input_layout, pse=pse, softmax_max=softmax_max, softmax_sum=softmax_sum,
        attention_in=attention_in, scale=scale_value, keep_prob=keep_prob, inner_precise=inner_precise, seed=seed,
        offset=offset, actual_seq_qlen=actual_seq_qlen, actual_seq_kvlen=actual_seq_kvlen, sink=sink,
        deterministic=torch.are_deterministic_algorithms_enabled(), **masks)
