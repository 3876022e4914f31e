"""`torch.ops.npu.flash_attention_grad` and the autograd formula of `torch.ops.npu.flash_attention`.

Schema (semantics of torch_npu's `npu_fusion_attention_grad`)::

    npu::flash_attention_grad(Tensor query, Tensor key, Tensor value, Tensor dy, SymInt head_num, str input_layout,
        Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, Tensor? softmax_max=None,
        Tensor? softmax_sum=None, Tensor? attention_in=None, float scale=1.0, float keep_prob=1.0,
        int pre_tokens=2147483647, int next_tokens=2147483647, int inner_precise=0, SymInt[]? prefix=None,
        SymInt[]? actual_seq_qlen=None, SymInt[]? actual_seq_kvlen=None, int sparse_mode=0, int seed=0, int offset=0,
        Tensor? sink=None, bool deterministic=False, float? softcap=None, int pse_type=1,
        SymInt[]? q_start_idx=None, SymInt[]? kv_start_idx=None, Tensor? dropout_mask=None,
        SymInt[]? dropout_origin=None, bool partial_keys=False, Tensor? attention_in_residual=None)
      -> (Tensor dq, Tensor dk, Tensor dv, Tensor dpse, Tensor dsink)

* The shared arguments are checked by `problem.validate_flash_attention` (same rules, same messages); every mask the
  forward takes works here too (dense masks of any broadcastable shape, sparse modes 0-8, prefix, TND; the
  forward's block-map pre-pass runs for the backward's blocks, so fully masked tiles are skipped). `softmax_max`/`softmax_sum`
  (the forward's float32 `[B, N1, S1, 8]` / TND `[T1, N1, 8]` statistics) and `attention_in` (the forward output)
  are required; `dy` has the forward output's shape and the query's dtype.
* dq/dk/dv have the shapes and dtype of query/key/value; dpse as below. P is
  recomputed from the saved statistics (P = exp(scale * S - max) / sum), D = rowsum(dy * attention_in),
  dS = P * (dP - D); every sum accumulates in fp32, P and dS enter the cube's products in the input dtype.
  `attention_in_residual` (not in the built-in; attention_in's shape and dtype): the forward's
  attention_out_residual (`npu::flash_attention_fwd` with output_residual=True), its output's rounding error;
  D is then rowsum(dy * (attention_in + attention_in_residual)) in fp32, the unrounded output's to about 2^-16.
  In a row whose exact gradient vanishes (one dominant key) dS is about P (dP - D) with dP - D near 0, so the
  rounding of attention_in would be the whole result there (docs/performance.md, "Rows whose exact gradient
  vanishes"); the autograd passes it whenever the forward kept it (`set_output_residual`). Rows
  that see no key (softmax_max = -FLT_MAX) get P = 0, so zero dq and no contribution to dk/dv. `inner_precise`
  as in the forward: with bit 0 (high performance) S and dP leave the cube in the input dtype exactly where the
  forward's tiling takes its scores in it (`last_launch_info()["score_dtype"]`), so that P is recomputed from the
  same rounded S the forward's statistics came from (float32 S against them missed the gradient criterion on
  about 0.4 % of random draws); the float16 range rule applies as in the forward.
* Two kernel passes (dQ, then dK/dV), every output element written by exactly one core in a fixed order (no
  atomics), so results are bitwise reproducible run to run and for any core count whatever `deterministic` says;
  the flag is accepted for the built-in's signature and the autograd passes
  `torch.are_deterministic_algorithms_enabled()`.
* Sinks: the forward's statistics already hold each row's sink term, so dq/dk/dv of a forward with `sink` need
  only them; passing the forward's `sink` also returns dsink (float32 [N1]; empty without a sink):
  dsink_h = -sum_i ps_i * sum_j P_ij dP_ij over the head's rows, ps = exp(sink - max) / sum the sink's probability.
  The kernel's dQ pass forms sum_j P_ij dP_ij as rowsum(dS) + D (1 - ps), so the rounding of attention_in, which
  enters D, cancels; each row's term goes to a buffer in the statistics' layout and is summed per head in a fixed
  order (bitwise reproducible). The autograd passes the sink only when it requires grad.
* softcap: the forward's `softcap`; dS is taken through the cap (times 1 - (y / softcap)^2 at the capped score y).
* ALiBi (pse_type 2/3, slopes in `pse`): the forward's bias recomputed per tile; the slopes get no gradient (dpse
  empty). An outer pse (pse_type 0/1): recomputed per tile, and dpse (pse's shape and dtype) = dS (times scale for
  pse_type 1) summed over what pse broadcasts: the dQ pass writes dS in fp32 ([B, N1, S1, S2], or column sums of
  row chunks for a [.., 1, S2] pse) and the host reduces it. padding_mask -> ValueError (reserved).
* Dropout (keep_prob < 1): the forward's keep bits again, regenerated from (seed, offset) (or re-read from the same
  `dropout_mask`): dP_ij of a dropped probability is 0, of a kept one dP_ij / keep_prob, dS = P * (dP - D) with
  D = rowsum(dy * attention_in) as without dropout, and dV = (the dropped P)^T dy / keep_prob. The forward's
  (seed, offset, keep_prob, dropout_mask, dropout_origin) must be passed unchanged (the autograd does).
  Head dims up to 512 like the forward: when the dK and dV sums of a key block do not both fit half of the cube's
  L0C (D + Dv > 256), a dV pass and a dK pass run instead, each in passes of at most 256 columns.
* `partial_keys` (not in the built-in): the call sees only part of each row's keys; softmax_max/sum and
  attention_in are the full rows' (context parallelism: `npu_flash_attn.distributed` sums the calls' dq/dk/dv).
  Without it the dQ pass takes a one-step task to hold all of its rows' keys and makes their D exact from them;
  with it only a step holding at least 1 - 2^-12 of a row's probability (from the full rows' statistics) does.
  dsink of such a call counts D (1 - ps) once per call (the caller corrects the sum).

Autograd: `torch.ops.npu.flash_attention` is a composite of `torch.ops.npu.flash_attention_fwd`, which gets a
backward through this op (saving query, key, value, the output, the two statistics and, when the forward kept it,
the output's residual; never P); softmax_max/softmax_sum and the residual are not differentiable. The same registration serves
NPU tensors, whose kernels come from the torch_npu adapter (`npu.py`); the checks run before dispatch on both.
"""
from __future__ import annotations

from typing import Any, Optional

import torch

from . import ops, twin_backend
from .chip import get_chip
from .dispatch import (bind_arguments, check_before_dispatch, check_scalar_types, define_op, require_device,
                       seed_words, value_checks)
from .problem import check_finite, check_input_values, in_place_device, validate_grad

__all__ = ["flash_attention_grad", "GRAD_SCHEMA"]

GRAD_SCHEMA = (
    "(Tensor query, Tensor key, Tensor value, Tensor dy, SymInt head_num, str input_layout, Tensor? pse=None, "
    "Tensor? padding_mask=None, Tensor? atten_mask=None, Tensor? softmax_max=None, Tensor? softmax_sum=None, "
    "Tensor? attention_in=None, float scale=1.0, float keep_prob=1.0, int pre_tokens=2147483647, "
    "int next_tokens=2147483647, int inner_precise=0, SymInt[]? prefix=None, SymInt[]? actual_seq_qlen=None, "
    "SymInt[]? actual_seq_kvlen=None, int sparse_mode=0, int seed=0, int offset=0, Tensor? sink=None, "
    "bool deterministic=False, float? softcap=None, int pse_type=1, SymInt[]? q_start_idx=None, "
    "SymInt[]? kv_start_idx=None, Tensor? dropout_mask=None, SymInt[]? dropout_origin=None, "
    "bool partial_keys=False, Tensor? attention_in_residual=None) -> (Tensor dq, Tensor dk, Tensor dv, "
    "Tensor dpse, Tensor dsink)"
)


def _bind(args: tuple, kwargs: dict) -> dict[str, Any]:
    return bind_arguments(torch.ops.npu.flash_attention_grad.default._schema, args, kwargs)


def _check_call(**a):
    """Every check of a call on real tensors, run before dispatch on every device (`dispatch.py`; the data checks on
    NPU only with NPU_FA_CHECK_VALUES=1)."""
    query = a["query"]
    values = value_checks(query.device)
    p = validate_grad(a, check_values=values, drop_mask_device=in_place_device(query.device))
    require_device(query.device, "npu::flash_attention_grad")
    if values:
        check_input_values(p, query, a["key"], a["value"])
        extra = {} if a["attention_in_residual"] is None else {"attention_in_residual": a["attention_in_residual"]}
        check_finite("flash_attention_grad", dy=a["dy"], attention_in=a["attention_in"], **extra)


def _grad_impl(*args, **kwargs):
    """The CPU (twin) kernel. `_check_call` ran before dispatch; this re-derives the problem without the data
    checks."""
    a = _bind(args, kwargs)
    p = validate_grad(a, check_values=False)
    query, key, value = a["query"], a["key"], a["value"]
    if not p.has_work():  # no row sees a key: P = 0 everywhere, and every sink's probability is 1 (dsink = 0)
        empty = torch.empty(0, dtype=query.dtype)
        zeros = tuple(t.new_zeros(t.shape) for t in (query, key, value))
        return zeros + (empty, empty.clone() if a["sink"] is None else torch.zeros(p.N1))
    return twin_backend.backward(p, a, get_chip())


def _grad_fake(*args, **kwargs):
    a = _bind(args, kwargs)
    p = validate_grad(a, check_values=False)
    query, key, value = a["query"], a["key"], a["value"]
    dsink = query.new_empty((0,)) if a["sink"] is None else a["sink"].new_empty(a["sink"].shape)
    dpse = a["pse"].new_empty(a["pse"].shape) if p.pse.outer_mode else query.new_empty((0,))
    return (query.new_empty(query.shape), key.new_empty(key.shape), value.new_empty(value.shape), dpse, dsink)

# ----------------------------------------------------------------------------------------------------------------
# autograd of npu::flash_attention_fwd (npu::flash_attention is its composite)
# ----------------------------------------------------------------------------------------------------------------


def _forward_arg_names() -> list[str]:
    """Argument names of the forward schema, in order (the autograd reads `inputs` by these positions)."""
    schema = torch._C.parse_schema("npu::flash_attention_fwd" + ops.FWD_SCHEMA)
    return [a.name for a in schema.arguments]


_FWD_NAMES = _forward_arg_names()

_NON_TENSOR = ("head_num", "input_layout", "scale", "keep_prob", "pre_tokens", "next_tokens", "inner_precise",
               "prefix", "actual_seq_qlen", "actual_seq_kvlen", "sparse_mode", "seed", "offset", "softcap",
               "pse_type", "q_start_idx", "kv_start_idx", "dropout_origin")


def _setup_context(ctx, inputs, output):
    args = dict(zip(_FWD_NAMES, inputs))
    out, smax, ssum, residual = output
    kept = bool(args.get("output_residual", False))
    ctx.save_for_backward(args["query"], args["key"], args["value"], out, smax, ssum, args["atten_mask"], args["sink"],
                          args["pse"], args["dropout_mask"], residual if kept else None)
    ctx.fwd_args = {n: args[n] for n in _NON_TENSOR}
    ctx.num_inputs = len(inputs)
    ctx.mark_non_differentiable(smax, ssum, residual)


def _backward(ctx, d_out, _d_max, _d_sum, _d_residual):
    query, key, value, out, smax, ssum, atten_mask, sink, pse, dropout_mask, residual = ctx.saved_tensors
    if d_out is None:
        d_out = torch.zeros_like(out)
    a = ctx.fwd_args
    pse_at = _FWD_NAMES.index("pse")
    want_dpse = pse is not None and ctx.needs_input_grad[pse_at]
    if want_dpse and a["pse_type"] in (2, 3):
        raise NotImplementedError("the gradient of ALiBi slopes (pse with pse_type 2/3) is not computed by "
                                  "npu_flash_attn (the built-in returns none either); pass them detached, e.g. "
                                  "pse.detach()")
    sink_at = _FWD_NAMES.index("sink")
    want_dsink = sink is not None and ctx.needs_input_grad[sink_at]
    shared = {n: v for n, v in a.items() if n not in ("head_num", "input_layout")}
    # dq/dk/dv need only the statistics (which hold the sink's term): the sink goes in only when dsink is wanted
    dq, dk, dv, dpse, dsink = torch.ops.npu.flash_attention_grad(
        query, key, value, d_out, a["head_num"], a["input_layout"], atten_mask=atten_mask, softmax_max=smax,
        softmax_sum=ssum, attention_in=out, sink=sink if want_dsink else None, pse=pse, dropout_mask=dropout_mask,
        deterministic=torch.are_deterministic_algorithms_enabled(), attention_in_residual=residual, **shared)
    grads = [dq, dk, dv] + [None] * (ctx.num_inputs - 3)
    if want_dsink:
        grads[sink_at] = dsink
    if want_dpse:
        grads[pse_at] = dpse
    return tuple(grads)


def _no_double_backward(ctx, *grads):
    raise NotImplementedError("the gradient of npu::flash_attention_grad (double backward through attention) is "
                              "not built")


def _register():
    try:
        torch.ops.npu.flash_attention_grad  # noqa: B018 - already registered (module reloaded)
        return None
    except (AttributeError, RuntimeError):
        pass
    # CPU only: NPU tensors dispatch to the adapter's PrivateUse1 kernel (npu.py); both are checked first.
    define_op("npu::flash_attention_grad", GRAD_SCHEMA, _grad_impl, _grad_fake, __doc__)
    check_before_dispatch("npu::flash_attention_grad", _check_call)
    torch.library.register_autograd("npu::flash_attention_fwd", _backward, setup_context=_setup_context)
    torch.library.register_autograd("npu::flash_attention_grad", _no_double_backward)


_register()


def flash_attention_grad(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, dy: torch.Tensor,
                         head_num: int, input_layout: str, softmax_max: Optional[torch.Tensor] = None,
                         softmax_sum: Optional[torch.Tensor] = None, attention_in: Optional[torch.Tensor] = None,
                         **kwargs: Any):
    check_scalar_types(torch.ops.npu.flash_attention_grad.default._schema, dict(kwargs, head_num=head_num))
    return torch.ops.npu.flash_attention_grad(query, key, value, dy, head_num, input_layout, softmax_max=softmax_max,
                                              softmax_sum=softmax_sum, attention_in=attention_in,
                                              **seed_words(kwargs))


flash_attention_grad.__doc__ = ("`torch.ops.npu.flash_attention_grad(query, key, value, dy, head_num, input_layout, "
                                "**kwargs)`, the keyword arguments as in the schema.\n\n" + __doc__)
