"""`torch.ops.npu.flash_attention`: registration, argument validation and the CPU (twin) implementation.

Schema (compatible in spirit with `torch_npu.npu_fusion_attention`, spelled `pre_tokens`/`next_tokens`)::

    npu::flash_attention(Tensor query, Tensor key, Tensor value, SymInt head_num, str input_layout,
        Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, float scale=1.0,
        float keep_prob=1.0, int pre_tokens=2147483647, int next_tokens=2147483647, int inner_precise=0,
        SymInt[]? prefix=None, SymInt[]? actual_seq_qlen=None, SymInt[]? actual_seq_kvlen=None,
        int sparse_mode=0, int seed=0, int offset=0, Tensor? sink=None, float? softcap=None, int pse_type=1,
        SymInt[]? q_start_idx=None, SymInt[]? kv_start_idx=None, Tensor? dropout_mask=None,
        SymInt[]? dropout_origin=None)
      -> (Tensor attention_out, Tensor softmax_max, Tensor softmax_sum)

Semantics (see also `npu_flash_attn.reference`, the float64 model of exactly this):

* Layouts BSH/SBH (3-D, H1 = head_num*D, N2 = H2/D, Dv = H3/N2), BSND/BNSD (4-D), TND (3-D, varlen, requires
  `actual_seq_qlen`/`actual_seq_kvlen`). The layout string is case-insensitive. `scale` multiplies QK^T (default 1.0,
  not 1/sqrt(D)). GQA/MQA: query head n uses key/value head n // (N1/N2). 1 <= D <= 512, Dv <= D. fp16/bf16 only.
* `attention_out` has the query's shape with D replaced by Dv and the query's dtype. `softmax_max`/`softmax_sum` are
  float32 `[B, N1, S1, 8]` (TND: `[T1, N1, 8]` stored batch-major: sequence b, then head, then token, i.e. row
  (b, n, s) at flat offset (cu_q[b-1]*N1 + n*Sq_b + s)*8), each value replicated 8 times. softmax_max is the row max
  of the scaled, masked scores, softmax_sum = sum(exp(s - max)).
* Masks (`npu_flash_attn.masks`, docs/masks.md; True/1 = masked out): sparse_mode 0/1 with a dense bool/uint8
  `atten_mask` of any shape broadcastable to [B, N1, S1, S2] (TND: 2-D [>= max Sq, >= max Skv] read inside each
  sequence, or [sum Sq, sum Skv] read at global positions; [T1, T2] with padding tokens is refused as ambiguous),
  mode 0 also with the top-left band [i - pre_tokens, i + next_tokens]; without a mask modes 0/1 compute full
  attention. 2 = left-up causal (j <= i); 3 = right-down causal (j <= i + S2 - S1); 4 = band j in
  [i + d - pre_tokens, i + d + next_tokens], d = S2 - S1; 5 = dense mask and (right-down causal or j < prefix[b]);
  6 = right-down causal or j < prefix[b]; 7/8 (TND) = right-down / left-up causal per sequence, the last / first
  sequence with queries a band. Modes 2/3/4/7/8 take None or the compressed
  [2048, 2048] mask, mode 6 None or the compressed [3072, 2048] one (their content is checked, never read); **unlike
  the built-in, modes 2-8 apply even when atten_mask is None** (`npu_flash_attn.npu_fusion_attention`, the drop-in,
  follows the built-in: full attention without a mask). A dense mask is read in place (broadcast dimensions
  with stride 0); a block-map pre-pass kernel classifies its tiles (cached per mask tensor, see
  `precompute_block_mask`) so fully masked tiles are skipped and fully visible ones are not masked.
* Invalid rows (a query row that sees no key: e.g. sparse_mode 3 with S1 > S2, a band with negative pre/next, a
  zero-length key sequence) give output 0, softmax_max = -FLT_MAX and softmax_sum = +FLT_MAX, for every
  `inner_precise` (the built-in's bit 1, invalid-row correction, is always on).
* `inner_precise` (0-3; the convention of the built-in's prompt/incremental kernels): bit 0 = 1 selects the
  high-performance mode, which lets the forward take the scores q.k out of the cube rounded to float16 instead of
  float32 (half the bytes through Fixpipe and L2; scaling, masks and the softmax stay in float32). The tiling does
  so where the cost model shows a gain: float16 inputs with head dim >= 192 today (`last_launch_info()
  ["score_dtype"]` says which); bfloat16 keeps float32 scores, as the built-in does. The error stays within the
  FlashAttention criterion (plain torch rounds the scores to the input dtype too); softmax_max/sum then carry the
  scores' rounding (relative ~2^-11). With float16 inputs the mode needs every unscaled |q.k| <= 65504 (ValueError
  naming inner_precise otherwise). The backward follows the forward: where the forward's scores leave the cube in
  float16, the backward's S and dP do too (so its P comes from the same rounded scores as the saved statistics),
  under the same range rule.
* Training: when autograd records the call (grad mode on and query/key/value/pse/sink requiring grad), the op
  runs `npu::flash_attention_fwd(..., output_residual=True)`, which also returns attention_out's rounding error
  (attention_out_residual: the output's shape and dtype, fp32 output minus the rounded one), and the autograd
  saves it for the backward's D (`backward`): one more output-sized tensor per call, which makes the gradients
  exact in rows with one dominant key. `set_output_residual(False)` turns it off (D from the rounded output, as in
  flash_attn and the built-in).
* TND varlen: the lists are cumulative (lengths 2,3,4 -> [2,5,9]), equal length (= number of batches), start >= 0,
  non-decreasing, last value <= T1 (resp. T2). Repeated values are zero-length sequences. Trailing zeros after a
  positive value disable the remaining batches (built-in convention: [2,5,9,0,0] = 3 batches); a batch disabled in
  either list is disabled. Query tokens past the last enabled sequence (padding, T1 > total) are invalid rows:
  output 0, softmax_max -FLT_MAX, softmax_sum +FLT_MAX.
* Empty problems (no query rows, or no key tokens at all) are answered without a kernel launch (all rows invalid).
* Refused before anything is allocated (ValueError naming the argument): a dimension above 2**31 - 1 (the kernel's
  32-bit size fields), a problem whose inputs and outputs exceed 64 GiB (the largest supported chip's HBM; e.g. an
  expand()ed tensor of huge logical shape), NaN/Inf anywhere in query/key/value (the cube is never fed non-finite
  values; the message names the tensor and the first bad index), and a `scale` for which scale * q.k of some
  (query, key) pair of a head would exceed FLT_MAX / 2 (the online softmax's max-subtraction would overflow).
* `sink` (float32 `[N1]`, torch_npu's attention sinks): one logit per query head that joins the softmax of every
  row of that head and attends no value: out = sum_j exp(s_j - m) v_j / (sum_j exp(s_j - m) + exp(sink - m)),
  softmax_max = m = max(max_j s_j, sink), softmax_sum includes the sink's term. Rows that see no key then have
  out = 0, softmax_max = sink, softmax_sum = 1 (TND padding tokens past the last sequence stay invalid rows).
  The backward returns dsink (`backward`).
* `softcap` (flash_attn's logit soft-capping, Gemma 2; None = off, else a finite value > 0): the scaled scores
  x = scale * q.k become softcap * tanh(x / softcap) before the masks and the softmax (softmax_max is the max of the
  capped scores).
* ALiBi (`pse_type` 2 or 3, the built-in's in-kernel bias): `pse` holds float32 slopes, [N1] or [B, N1] (TND: B =
  the number of sequences given); score (i, j) of head h gets -slope_h * |(j + kv_start_idx[0]) -
  (i + q_start_idx[0])| (type 3: its square root), i and j positions inside the sequence, after `scale` and
  `softcap` and before the masks; no bias tensor is formed. Unlike the built-in, S1 != S2 is allowed (the formula
  as written, top-left positions). `q_start_idx`/`kv_start_idx` are refused with other pse types.
* An outer bias tensor (`pse` with pse_type 0 or 1, the query's dtype, [B or 1, N1, S1 or 1, S2]; not TND): added
  after `scale` and `softcap`, before the masks, as it is (0) or times `scale` (1: softmax(scale * (q.k + pse))
  without a cap); read tile by tile in place. The backward returns dpse in pse's shape and dtype.
* Dropout (keep_prob < 1, `npu_flash_attn.dropout`): P after the softmax is zeroed where the keep bit is 0 and the
  kept values count 1 / keep_prob; softmax_max/softmax_sum are of the softmax before dropout. The bits come from a
  counter-based hash of (seed, offset, sequence, head, row, column), the same on every chip and core count and
  regenerated by the backward, or from `dropout_mask` (the built-in's bit-packed uint8 over [B, N1, S1, S2], TND
  per sequence, 1 = keep; needs keep_prob < 1). `dropout_origin=[row, col, head, heads]` (not in the built-in;
  generated bits only): the call is a sub-block of a larger problem with `heads` query heads and draws its bits,
  element (b, n, i, j) those of row row + i, column col + j (col even) and head index b * heads + head + n
  (context parallelism, `npu_flash_attn.distributed`).
* `padding_mask` is reserved (also unsupported by the built-in): passing one raises ValueError. The built-in's
  1024-row ALiBi-compressed pse and an outer pse with TND raise NotImplementedError (the first as ValueError naming
  the shapes).

torch.compile / torch.export (docs/torch_compile.md): the fake kernel runs the same rules on size hints and adds
no guard on the sizes (B, S1, S2, N, TND T1/T2); head_num and the int lists are SymInt, so symbolic values pass
through; the actual values are checked when the op runs.

Argument types: called as `torch.ops.npu.flash_attention`, the dispatcher converts scalars by the schema before any
check sees them (True -> 1.0 for a float, a 0-d tensor -> float; an int outside int64 is refused by torch itself);
`npu_flash_attn.flash_attention` and the drop-ins refuse a string, bool or tensor where a number belongs.

Devices: CPU tensors run the Ascend C kernel on the CPU twin (label results "twin"); the emulated chip is chosen by
`set_chip(name)`, else the environment variable NPU_FA_CHIP, else "Ascend910B2". `last_launch_info()` returns the
tiling facts of the last CPU kernel launch. NPU tensors run the CANN operators through the torch_npu adapter's
PrivateUse1 kernel when `npu.py` loaded it (not yet run on hardware), else raise RuntimeError naming what is
missing. Every check above runs before dispatch, for both devices (`check_call`, `dispatch.py`); the rules live in
`npu_flash_attn.problem`, the twin launch in `npu_flash_attn.twin_backend`.
The autograd formula (through `torch.ops.npu.flash_attention_grad`) is registered in `npu_flash_attn.backward`.
"""
from __future__ import annotations

from typing import Any

import torch

from . import twin_backend
from .chip import get_chip
from .dispatch import (bind_arguments, check_before_dispatch, check_scalar_types, define_composite, define_op,
                       require_device, seed_words, value_checks)
from .problem import FAProblem, check_input_values, in_place_device, validate_flash_attention

__all__ = ["flash_attention", "precompute_block_mask", "set_output_residual", "SCHEMA", "FWD_SCHEMA"]

_ARGS = (
    "(Tensor query, Tensor key, Tensor value, SymInt head_num, str input_layout, Tensor? pse=None, "
    "Tensor? padding_mask=None, Tensor? atten_mask=None, float scale=1.0, float keep_prob=1.0, "
    "int pre_tokens=2147483647, int next_tokens=2147483647, int inner_precise=0, SymInt[]? prefix=None, "
    "SymInt[]? actual_seq_qlen=None, SymInt[]? actual_seq_kvlen=None, int sparse_mode=0, int seed=0, "
    "int offset=0, Tensor? sink=None, float? softcap=None, int pse_type=1, SymInt[]? q_start_idx=None, "
    "SymInt[]? kv_start_idx=None, Tensor? dropout_mask=None, SymInt[]? dropout_origin=None"
)
SCHEMA = _ARGS + ") -> (Tensor attention_out, Tensor softmax_max, Tensor softmax_sum)"
# The kernel op behind it: the same arguments, and the output's rounding error when output_residual is set.
FWD_SCHEMA = (_ARGS + ", bool output_residual=False) -> (Tensor attention_out, Tensor softmax_max, "
              "Tensor softmax_sum, Tensor attention_out_residual)")

_output_residual = True


def set_output_residual(enabled: bool) -> None:
    """Whether a forward that autograd records keeps attention_out's rounding error for the backward (default on):
    one more tensor of attention_out's shape and dtype saved per call, which makes the gradients exact in rows whose
    exact gradient vanishes (one dominant key, docs/performance.md "Rows whose exact gradient vanishes"). Off: the
    backward takes D from the rounded output, as flash_attn and the built-in do."""
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool, got {type(enabled).__name__}")
    global _output_residual
    _output_residual = enabled


def _bind(args: tuple, kwargs: dict) -> dict[str, Any]:
    """The op's arguments by name, as the dispatcher passes them (trailing defaults may be left out)."""
    return bind_arguments(_op_schema(), args, kwargs)


def _op_schema() -> torch._C.FunctionSchema:
    return torch.ops.npu.flash_attention.default._schema


def _bind_fwd(args: tuple, kwargs: dict) -> dict[str, Any]:
    return bind_arguments(torch.ops.npu.flash_attention_fwd.default._schema, args, kwargs)


def check_call(query, key, value, head_num, input_layout, output_residual=False, **kwargs) -> FAProblem:
    """Every check of a call on real tensors, run before dispatch on every device (`dispatch.py`): the argument and
    mask rules, the device (CPU, or NPU with the adapter loaded), and the data checks (finite q/k/v, scale; on NPU
    only with NPU_FA_CHECK_VALUES=1, see dispatch.value_checks)."""
    values = value_checks(query.device)
    p = validate_flash_attention(query, key, value, head_num, input_layout, **kwargs, check_values=values,
                                 drop_mask_device=in_place_device(query.device), out_residual=output_residual)
    require_device(query.device, "npu::flash_attention")
    sink, pse = kwargs.get("sink"), kwargs.get("pse")
    if values:
        check_input_values(p, query, key, value)
        if sink is not None and not bool(torch.isfinite(sink).all()):
            bad = int((~torch.isfinite(sink)).nonzero()[0])
            raise ValueError(f"sink contains NaN or Inf (first at index {bad}: {sink[bad].item()}); the sink logits "
                             "must be finite")
        if pse is not None and not bool(torch.isfinite(pse).all()):
            bad = tuple(int(i) for i in (~torch.isfinite(pse)).nonzero()[0])
            raise ValueError(f"pse contains NaN or Inf (first at index {bad}); the bias (or ALiBi slopes) must be "
                             "finite")
    return p


def _wants_residual(a: dict) -> bool:
    """Autograd will record this call (grad mode on, a differentiable input requires grad) and the residual is on."""
    if not (_output_residual and torch.is_grad_enabled()):
        return False
    return any(isinstance(a[n], torch.Tensor) and a[n].requires_grad for n in ("query", "key", "value", "pse", "sink"))


def _flash_attention_composite(*args, **kwargs):
    """npu::flash_attention: npu::flash_attention_fwd, with the residual when autograd records the call."""
    out, smax, ssum, _ = torch.ops.npu.flash_attention_fwd(*args, **kwargs,
                                                           output_residual=_wants_residual(_bind(args, kwargs)))
    return out, smax, ssum


def _flash_attention_impl(*args, **kwargs):
    """The CPU (twin) kernel of npu::flash_attention_fwd. `check_call` ran before dispatch; this re-derives the
    problem without the data checks."""
    a = _bind_fwd(args, kwargs)
    residual = a.pop("output_residual")
    p = validate_flash_attention(**a, check_values=False, out_residual=residual)
    return twin_backend.forward(p, a, get_chip())


def _flash_attention_fake(*args, **kwargs):
    a = _bind_fwd(args, kwargs)
    residual = a.pop("output_residual")
    p = validate_flash_attention(**a, check_values=False, out_residual=residual)
    query = a["query"]
    out = query.new_empty(p.out_shape)
    smax = query.new_empty(p.stats_shape, dtype=torch.float32)
    ssum = query.new_empty(p.stats_shape, dtype=torch.float32)
    return out, smax, ssum, query.new_empty(p.out_shape if residual else (0,))


def _register():
    try:
        existing = torch.ops.npu.flash_attention  # noqa: F841 - already registered (module reloaded)
        return
    except (AttributeError, RuntimeError):
        pass
    # CPU only: NPU tensors dispatch to the adapter's PrivateUse1 kernel (npu.py); both are checked first.
    define_op("npu::flash_attention_fwd", FWD_SCHEMA, _flash_attention_impl, _flash_attention_fake,
              "npu::flash_attention with `output_residual`: also returns attention_out's rounding error "
              "(attention_out_residual, the output's shape and dtype; empty when off), which the backward takes "
              "as attention_in_residual.\n\n" + __doc__)
    check_before_dispatch("npu::flash_attention_fwd", check_call)
    define_composite("npu::flash_attention", SCHEMA, _flash_attention_composite, __doc__)


_register()


def flash_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, head_num: int, input_layout: str,
                    **kwargs: Any):
    check_scalar_types(_op_schema(), dict(kwargs, head_num=head_num))
    return torch.ops.npu.flash_attention(query, key, value, head_num, input_layout, **seed_words(kwargs))


flash_attention.__doc__ = ("`torch.ops.npu.flash_attention(query, key, value, head_num, input_layout, **kwargs)`, "
                           "the keyword arguments as in the schema.\n\n" + __doc__)


def precompute_block_mask(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, head_num: int,
                          input_layout: str, atten_mask: torch.Tensor, *, sparse_mode: int = 0,
                          pre_tokens: int = 2147483647, next_tokens: int = 2147483647, prefix=None,
                          actual_seq_qlen=None, actual_seq_kvlen=None) -> twin_backend.BlockMaskInfo:
    """Builds (or fetches) the block map of a dense `atten_mask` for this problem, like FlexAttention's block mask:
    call it once per batch; every later `flash_attention` call with the same mask tensor object (unchanged in
    place), geometry, mode and chip reuses it -- e.g. all layers of a model. Returns the tile statistics.
    Tiles outside the sparse mode's band count as masked (they are never computed)."""
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
    return twin_backend.build_block_map(atten_mask, twin_backend.kernel_mask(p, atten_mask), p, get_chip())
