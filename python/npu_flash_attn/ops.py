"""`torch.ops.npu.flash_attention`: registration, argument validation and the CPU (twin) implementation.

Schema (compatible in spirit with `torch_npu.npu_fusion_attention`, spelled `pre_tokens`/`next_tokens`)::

    npu::flash_attention(Tensor query, Tensor key, Tensor value, int head_num, str input_layout,
        Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, float scale=1.0,
        float keep_prob=1.0, int pre_tokens=2147483647, int next_tokens=2147483647, int inner_precise=0,
        int[]? prefix=None, int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None,
        int sparse_mode=0, int seed=0, int offset=0, Tensor? sink=None, float? softcap=None, int pse_type=1,
        int[]? q_start_idx=None, int[]? kv_start_idx=None, Tensor? dropout_mask=None)
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
  sequence, or [sum Sq, sum Skv] read at global positions), mode 0 also with the top-left band [i - pre_tokens,
  i + next_tokens]; without a mask modes 0/1 compute full attention. 2 = left-up causal (j <= i); 3 = right-down
  causal (j <= i + S2 - S1); 4 = band j in [i + d - pre_tokens, i + d + next_tokens], d = S2 - S1; 5 = dense mask and
  (right-down causal or j < prefix[b]); 6 = right-down causal or j < prefix[b]; 7/8 (TND) = right-down / left-up
  causal per sequence, the last / first sequence with queries a band. Modes 2/3/4/7/8 take None or the compressed
  [2048, 2048] mask, mode 6 None or the compressed [3072, 2048] one (their content is checked, never read); **unlike
  the built-in, modes 2-8 apply even when atten_mask is None** (`npu_flash_attn.npu_fusion_attention`, the drop-in,
  follows the built-in: full attention without a mask). A dense mask is read in place (broadcast dimensions
  with stride 0); a block-map pre-pass kernel classifies its tiles (cached per mask tensor, see
  `precompute_block_mask`) so fully masked tiles are skipped and fully visible ones are not masked.
* Invalid rows (a query row that sees no key: e.g. sparse_mode 3 with S1 > S2, a band with negative pre/next, a
  zero-length key sequence) give output 0, softmax_max = -FLT_MAX and softmax_sum = +FLT_MAX, for every
  `inner_precise` (0, 1 and 2 are accepted and all behave like the built-in's inner_precise=2).
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
  per sequence, 1 = keep; needs keep_prob < 1).
* `padding_mask` is reserved (also unsupported by the built-in): passing one raises ValueError. The built-in's
  1024-row ALiBi-compressed pse and an outer pse with TND raise NotImplementedError (the first as ValueError naming
  the shapes).

Devices: CPU tensors run the Ascend C kernel on the CPU twin (label results "twin"); the emulated chip is chosen by
`set_chip(name)`, else the environment variable NPU_FA_CHIP, else "Ascend910B2". `last_launch_info()` returns the
tiling facts of the last CPU kernel launch. NPU tensors run the CANN operators through the torch_npu adapter's
PrivateUse1 kernel when `npu.py` loaded it (not yet run on hardware), else raise RuntimeError naming what is
missing. Every check above runs before dispatch, for both devices (`check_call`, `dispatch.py`).
The autograd formula (through `torch.ops.npu.flash_attention_grad`) is registered in `npu_flash_attn.backward`.
"""
from __future__ import annotations

import logging
import operator
import os
import threading
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch
from torch.fx.experimental.symbolic_shapes import optimization_hint

from .dispatch import bind_arguments, check_before_dispatch, define_op, is_fake, require_device, value_checks
from . import dropout, progress
from .masks import build_block_map, check_compressed_mask

__all__ = [
    "flash_attention", "FAProblem", "validate_flash_attention", "set_chip", "get_chip", "available_chips",
    "last_launch_info", "LAYOUTS", "FLT_MAX", "INT32_MAX", "DEFAULT_CHIP", "SCHEMA", "set_op_counting",
]

FLT_MAX = 3.4028234663852886e38  # float32 max; invalid rows: softmax_max = -FLT_MAX, softmax_sum = +FLT_MAX
INT32_MAX = 2147483647
DEFAULT_CHIP = "Ascend910B2"
LAYOUTS = ("BSH", "SBH", "BSND", "BNSD", "TND")

SCHEMA = (
    "(Tensor query, Tensor key, Tensor value, int head_num, str input_layout, Tensor? pse=None, "
    "Tensor? padding_mask=None, Tensor? atten_mask=None, float scale=1.0, float keep_prob=1.0, "
    "int pre_tokens=2147483647, int next_tokens=2147483647, int inner_precise=0, int[]? prefix=None, "
    "int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, int seed=0, int offset=0, "
    "Tensor? sink=None, float? softcap=None, int pse_type=1, int[]? q_start_idx=None, int[]? kv_start_idx=None, "
    "Tensor? dropout_mask=None) -> (Tensor attention_out, Tensor softmax_max, Tensor softmax_sum)"
)


# ----------------------------------------------------------------------------------------------------------------
# chip selection and launch info
# ----------------------------------------------------------------------------------------------------------------
_state_lock = threading.Lock()
_chip_override: Optional[str] = None
_last_info: Optional[dict] = None
_log = logging.getLogger("npu_flash_attn")
_logged_chips: set[tuple[str, str]] = set()


def _ext():
    """The compiled extension (imported lazily so validation/reference work without a build)."""
    try:
        from . import _C
    except ImportError as e:  # pragma: no cover - depends on the build
        raise ImportError(f"npu_flash_attn._C is not built ({e}); run `pip install -e .` in the repository") from e
    return _C


def available_chips() -> list[str]:
    """Names of the chips the twin can emulate (from `_C.chips()`)."""
    return [c["name"] for c in _ext().chips()]


def _check_chip(name: Any, source: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"{source} must be a chip name string, got {type(name).__name__}")
    names = available_chips()
    if name not in names:
        raise ValueError(f"{source}={name!r} is not an emulated chip; choose one of {names}")
    return name


def set_chip(name: Optional[str]) -> None:
    """Select the chip the CPU twin emulates for following launches; None restores the default (env NPU_FA_CHIP,
    else Ascend910B2). Raises ValueError for names not in `_C.chips()`."""
    global _chip_override
    checked = None if name is None else _check_chip(name, "chip")
    with _state_lock:
        _chip_override = checked


def get_chip() -> str:
    """The chip used by the next CPU launch: set_chip(...) > $NPU_FA_CHIP > Ascend910B2."""
    with _state_lock:
        override = _chip_override
    if override is not None:
        return _note_chip(override, "set_chip")
    env = os.environ.get("NPU_FA_CHIP")
    if env:
        return _note_chip(_check_chip(env, "environment variable NPU_FA_CHIP"), "NPU_FA_CHIP")
    return _note_chip(DEFAULT_CHIP, "the default")


def _note_chip(chip: str, source: str) -> str:
    """Logs (INFO, once per chip and source) which chip the CPU twin emulates and why."""
    if (chip, source) not in _logged_chips:
        _logged_chips.add((chip, source))
        _log.info("CPU twin emulates %s (chosen by %s)", chip, source)
    return chip


def record_launch(info: dict) -> None:
    """Makes `info` what `last_launch_info()` returns (called after every kernel launch of the package's ops)."""
    global _last_info
    with _state_lock:
        _last_info = dict(info)


def last_launch_info() -> Optional[dict]:
    """A copy of the info dict (tiling facts: chip, block_dim, s1_block, s2_block, ...) returned by the last kernel
    launch of this process, or None before the first launch. Calls rejected by validation or answered without a
    launch (empty problems) leave it unchanged."""
    with _state_lock:
        return None if _last_info is None else dict(_last_info)


# ----------------------------------------------------------------------------------------------------------------
# validation: Python's own checks (types, devices, data), then the extension's problem module (op_host/problem)
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PseArgs:
    """What the pse arguments ask of the kernel: in-kernel ALiBi (pse_type 2/3) or an outer bias tensor (0/1)."""
    alibi_mode: int = 0         # the pse_type (2 or 3) with slopes in `pse`, else 0
    alibi_per_batch: bool = False
    alibi_delta: int = 0        # kv_start_idx[0] - q_start_idx[0]
    outer_mode: int = 0         # outer pse: 1 = pse_type 0 (added after the scale), 2 = pse_type 1 (scaled), else 0
    outer_per_batch: bool = False  # pse [B, ...] (else [1, ...])
    outer_per_row: bool = False    # pse [..., S1, S2] (else [..., 1, S2]: the same bias for every query row)


@dataclass(frozen=True)
class DropArgs:
    """Dropout of the probabilities (keep_prob < 1): generated from (seed, offset), or a user `dropout_mask`."""
    mode: int = 0              # 0 none, 1 generated in the kernel, 2 the user's mask
    keep_prob: float = 1.0
    seed: int = 0
    offset: int = 0
    mask_pitch: int = 0        # mode 2: bytes per row of the mask as the kernels read it
    mask_repack: bool = False  # mode 2: the user's mask is repacked into those rows (TND or S2 % 8 != 0)


@dataclass(frozen=True)
class FAProblem:
    """A validated problem (the extension's verdict on `call`): the facts the kernels and the post-processing need.
    Sizes are the size hints under torch.compile with dynamic shapes; out_shape/stats_shape are symbolic there."""
    call: Any                  # the _C.Call every kernel binding takes
    layout: str
    dtype: torch.dtype
    B: int
    N1: int
    N2: int
    S1: int
    S2: int
    D: int
    Dv: int
    T1: int
    T2: int
    scale: float
    sparse_mode: int           # the mode applied: 0 = full attention when there is no dense mask
    pre_tokens: int            # INT32_MAX where the mode ignores them
    next_tokens: int
    cu_seqlens_q: tuple        # TND: enabled batches only (trailing disabled entries removed); else ()
    cu_seqlens_kv: tuple
    out_shape: tuple
    stats_shape: tuple
    prefix: tuple = ()         # sparse_mode 5/6: per batch
    dense_mask: bool = False   # a dense atten_mask is read (sparse_mode 0, 1, 5 with a mask)
    mask_tnd_global: bool = False  # TND dense mask [sum Sq, sum Skv] read at global token positions
    mask_view: Optional[dict] = None  # dense masks: how the kernels read the mask in place (narrow/widen/copy)
    sink: bool = False         # per-query-head sink logits (float32 [N1]) join every softmax row
    softcap: Optional[float] = None  # > 0: logit soft-capping of the scaled scores
    pse: PseArgs = PseArgs()   # in-kernel ALiBi or an outer bias tensor
    drop: DropArgs = DropArgs()
    post: Optional[dict] = None  # what every backend does around the kernels (has_work, padding, row groups, dpse)

    def flops(self) -> float:
        """4 * scores * D: the forward's matmul FLOPs without masks (progress estimates)."""
        return 4.0 * float(dropout.mask_elements(sequence_shapes(self), self.N1)) * self.D

    def has_work(self) -> bool:
        """False when no query row sees any key, so no kernel launch is needed."""
        return bool(self.post["has_work"])


def sequence_shapes(p: FAProblem) -> list[tuple[int, int]]:
    """(Sq, Skv) of every sequence (the problem's: TND lengths, else B times (S1, S2))."""
    return [tuple(s) for s in p.post["sequences"]]


def _as_int(name: str, v: Any) -> int:
    if isinstance(v, bool):
        raise TypeError(f"{name} must be an int, got bool {v!r}")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}") from None


def _as_float(name: str, v: Any, what: str = "a float") -> float:
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise TypeError(f"{name} must be {what}, got {type(v).__name__}")
    return float(v)


def _int_list(name: str, seq: Any) -> Optional[list[int]]:
    if seq is None:
        return None
    if name == "prefix":
        for b, x in enumerate(seq):
            if isinstance(x, bool) or not isinstance(x, int):
                raise TypeError(f"prefix[{b}] must be an int, got {type(x).__name__} {x!r}")
    if name in ("q_start_idx", "kv_start_idx") and not isinstance(seq, (list, tuple)):
        raise ValueError(f"{name}={seq!r} must be a non-empty list of ints (only element 0 is used, as the built-in)")
    return [_as_int(f"{name}[{i}]", x) for i, x in enumerate(seq)]


def _hint(n: Any) -> int:
    """A size as a plain int: symbolic sizes (torch.compile dynamic=True) by their hint, so validation adds no
    guards and specializes nothing."""
    return n if isinstance(n, int) else optimization_hint(n)


def _tensor_arg(t: Optional[torch.Tensor]):
    """A tensor as the extension's Call takes it: (shape, strides, dtype name), or None."""
    if t is None:
        return None
    return [_hint(n) for n in t.shape], [_hint(s) for s in t.stride()], str(t.dtype)


def _dims(dims: Sequence, sizes: Sequence[Sequence[Any]]) -> tuple:
    """Output dimensions from the extension's (constant, mul, div) references to input dimensions (sizes: query's,
    key's and value's shapes), so symbolic sizes stay symbolic."""
    out = []
    for const, mul, div in dims:
        n = const
        for t, axis in mul:
            n = n * sizes[t][axis]
        for t, axis in div:
            n = n // sizes[t][axis]
        out.append(n)
    return tuple(out)


def validate_flash_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None,
                             atten_mask=None, scale=1.0, keep_prob=1.0, pre_tokens=INT32_MAX,
                             next_tokens=INT32_MAX, inner_precise=0, prefix=None, actual_seq_qlen=None,
                             actual_seq_kvlen=None, sparse_mode=0, seed=0, offset=0, sink=None, softcap=None,
                             pse_type=1, q_start_idx=None, kv_start_idx=None, dropout_mask=None, *,
                             check_values: bool = True, grad: Optional[dict] = None,
                             drop_mask_device: str = "") -> FAProblem:
    """Checks every argument of npu::flash_attention (raising ValueError/TypeError naming the argument, the value and
    the rule, or NotImplementedError for features not built yet) and returns the validated problem. Python checks
    the Python types and the devices; the shape and attribute rules are the extension's problem module's, the one
    every backend runs. Reads no tensor data except a compressed `atten_mask` of modes 2-4/6-8 (compared with the
    built-in's compressed mask, on its device; skipped when check_values is False, as in the fake kernel). `grad`:
    the backward's dy/attention_in/softmax_max/softmax_sum, checked against the forward's shapes.
    `drop_mask_device`: a device that reads a user dropout mask in place (no repacking)."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not isinstance(input_layout, str):
        raise TypeError(f"input_layout must be a str, got {type(input_layout).__name__}")
    optional = {"atten_mask": atten_mask, "sink": sink, "pse": pse, "dropout_mask": dropout_mask}
    optional.update(grad or {})
    for name, t in optional.items():
        if t is not None and not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor or None, got {type(t).__name__}")
    for name, t in (("key", key), ("value", value), *optional.items()):
        if t is not None and t.device != query.device:
            raise ValueError(f"{name} is on device {t.device} but query is on {query.device}; all tensors must "
                             "be on the same device")
    ints = {n: _as_int(n, v) for n, v in (("head_num", head_num), ("inner_precise", inner_precise),
                                            ("sparse_mode", sparse_mode), ("pre_tokens", pre_tokens),
                                            ("next_tokens", next_tokens), ("pse_type", pse_type), ("seed", seed),
                                            ("offset", offset))}
    for name in ("seed", "offset"):
        if not (-(1 << 63) <= ints[name] < (1 << 64)):
            raise ValueError(f"{name}={ints[name]} must fit in 64 bits")
        ints[name] &= (1 << 64) - 1
    for name in ("pre_tokens", "next_tokens"):  # beyond int64 is beyond int32 too: the problem module says so
        ints[name] = max(min(ints[name], (1 << 63) - 1), -(1 << 63))
    scale = _as_float("scale", scale)
    keep_prob = _as_float("keep_prob", keep_prob)
    softcap = None if softcap is None else _as_float("softcap", softcap, "a float or None")
    lists = {n: _int_list(n, v) for n, v in (("prefix", prefix), ("actual_seq_qlen", actual_seq_qlen),
                                             ("actual_seq_kvlen", actual_seq_kvlen), ("q_start_idx", q_start_idx),
                                             ("kv_start_idx", kv_start_idx))}
    tensors = {n: _tensor_arg(t) for n, t in (("query", query), ("key", key), ("value", value), ("pse", pse),
                                              ("padding_mask", padding_mask), ("atten_mask", atten_mask),
                                              ("sink", sink), ("dropout_mask", dropout_mask), *(grad or {}).items())}
    block = _block_override or (0, 0)
    call = _ext().Call(**tensors, **ints, **lists, input_layout=input_layout, scale=scale, keep_prob=keep_prob,
                       softcap=softcap, grad=grad is not None, drop_mask_device=drop_mask_device,
                       force_s1_block=block[0], force_s2_block=block[1])
    info = _ext().flash_attention_problem(call)
    if info["compressed_mask"] and check_values and not is_fake(atten_mask):
        check_compressed_mask(atten_mask, ints["sparse_mode"])
    sizes = (query.shape, key.shape, value.shape)
    pse_args = PseArgs(alibi_mode=info["alibi_mode"], alibi_per_batch=info["alibi_per_batch"],
                       alibi_delta=info["alibi_delta"], outer_mode=info["outer_mode"],
                       outer_per_batch=info["outer_per_batch"], outer_per_row=info["outer_per_row"])
    drop = DropArgs() if not info["drop_mode"] else DropArgs(
        mode=info["drop_mode"], keep_prob=keep_prob, seed=ints["seed"], offset=ints["offset"],
        mask_pitch=info["drop_mask_pitch"], mask_repack=info["drop_mask_repack"])
    return FAProblem(call=call, layout=info["layout"], dtype=query.dtype, B=info["B"], N1=info["N1"], N2=info["N2"],
                     S1=info["S1"], S2=info["S2"], D=info["D"], Dv=info["Dv"], T1=info["T1"], T2=info["T2"],
                     scale=scale, sparse_mode=info["sparse_mode"], pre_tokens=info["pre_tokens"],
                     next_tokens=info["next_tokens"], cu_seqlens_q=info["cu_seqlens_q"],
                     cu_seqlens_kv=info["cu_seqlens_kv"], out_shape=_dims(info["out_dims"], sizes),
                     stats_shape=_dims(info["stats_dims"], sizes), prefix=info["prefix"],
                     dense_mask=info["dense_mask"], mask_tnd_global=info["mask_tnd_global"],
                     mask_view=info["mask_view"], sink=info["sink"], softcap=info["softcap"], pse=pse_args,
                     drop=drop, post=info)


def check_input_values(p: FAProblem, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> None:
    """Data checks made before a launch (not in the fake kernel): q/k/v must be finite (the cube is not fed NaN/Inf:
    ValueError naming the tensor and the first bad index), and scale * q.k must stay inside float32 for every
    (query row, key row) pair of a head, else the online softmax would compute inf - inf (ValueError naming scale)."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        bad = ~torch.isfinite(t)
        if bool(bad.any()):
            idx = tuple(int(i) for i in bad.nonzero()[0])
            raise ValueError(f"{name} contains NaN or Inf (first at index {idx}: {t[idx].item()}); "
                             "npu::flash_attention requires finite query/key/value")
    if p.scale == 0.0:
        return
    # Cauchy-Schwarz bound first (one pass over q and k); the exact maximum only when the bound could overflow.
    qn = float(query.float().norm(dim=-1).max()) if query.numel() else 0.0
    kn = float(key.float().norm(dim=-1).max()) if key.numel() else 0.0
    if abs(p.scale) * qn * kn <= FLT_MAX / 2:
        return
    peak = _max_abs_score(p, query, key)
    if abs(p.scale) * peak > FLT_MAX / 2:
        raise ValueError(f"scale={p.scale} times the largest |q.k| ({peak:.6g}) is {abs(p.scale) * peak:.6g}, beyond "
                         f"float32 (the scaled scores must stay below {FLT_MAX / 2:.6g} so that the softmax's "
                         "max-subtraction cannot overflow); use a smaller scale")


def _max_abs_score(p: FAProblem, query: torch.Tensor, key: torch.Tensor) -> float:
    """max |q_i . k_j| over every head's (query token, key token) pairs of each sequence, in float64."""
    from .reference import _to_bnsd

    group = p.N1 // p.N2
    if p.layout == "TND":  # sequences: token ranges of the cumulative lists -> [N, S, D] each
        bounds = zip((0,) + p.cu_seqlens_q[:-1], p.cu_seqlens_q, (0,) + p.cu_seqlens_kv[:-1], p.cu_seqlens_kv)
        pairs = [(query[q0:q1].transpose(0, 1), key[k0:k1].transpose(0, 1)) for q0, q1, k0, k1 in bounds]
    else:
        q, k = _to_bnsd(query, p.layout, p.N1), _to_bnsd(key, p.layout, p.N2)
        pairs = [(q[b], k[b]) for b in range(q.shape[0])]
    peak = 0.0
    for qs, ks in pairs:
        for n in range(p.N1):
            sc = qs[n].double() @ ks[n // group].double().T
            if sc.numel():
                peak = max(peak, float(sc.abs().max()))
    return peak


def drop_mask_input(p: FAProblem, mask: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """The user dropout mask as the kernels read it: rows of p.drop.mask_pitch bytes in the statistics' order
    (repacked when the problem says so); None without one."""
    if p.drop.mode != 2:
        return None
    if not p.drop.mask_repack:
        return mask.detach().contiguous().view(-1)
    _log.debug("dropout_mask repacked into rows of %d bytes (TND or S2 %% 8 != 0)", p.drop.mask_pitch)
    return dropout.kernel_rows(mask.detach(), p.N1, sequence_shapes(p), p.drop.mask_pitch)


def kernel_mask(p: FAProblem, mask: torch.Tensor) -> torch.Tensor:
    """A dense mask as the kernels read it (p.mask_view, the extension's rule): broadcast dimensions narrowed to one
    slice, a column-broadcast mask widened to rows of equal bytes, a strided last dimension copied once."""
    view = p.mask_view
    m = mask.detach()
    if m.dtype == torch.bool:
        m = m.view(torch.uint8)
    if p.layout == "TND":
        m = m.view(1, 1, *m.shape)
    while m.dim() < 4:
        m = m.unsqueeze(0)
    for d in view["narrow"]:
        m = m.narrow(d, 0, 1)
    if view["widen"]:
        m = m.expand(*view["shape"])
    return m.contiguous() if view["copy"] else m


# ----------------------------------------------------------------------------------------------------------------
# implementations: the post-processing the problem describes (p.post), then the launch
# ----------------------------------------------------------------------------------------------------------------
def fill_padding(p: FAProblem, out: Optional[torch.Tensor], smax: torch.Tensor, ssum: torch.Tensor) -> None:
    """TND: query tokens after the last enabled sequence (padding) are invalid rows."""
    used = p.post["pad_q_from"]
    if not p.post["tnd"] or used >= p.T1:
        return
    if out is not None:
        out[used:].zero_()
    smax.view(-1)[used * p.N1 * 8:].fill_(-FLT_MAX)
    ssum.view(-1)[used * p.N1 * 8:].fill_(FLT_MAX)


def _row_groups(p: FAProblem, rows: torch.Tensor):
    """Each run of sequences' statistics rows (first copy of the 8) as [seqs, N1, tokens]."""
    flat = rows.reshape(-1, 8)
    for first, seqs, tokens in p.post["row_groups"]:
        yield flat[first:first + seqs * p.N1 * tokens], (seqs, p.N1, tokens)


def fill_rows_without_keys(p: FAProblem, sink: Optional[torch.Tensor], smax: torch.Tensor, ssum: torch.Tensor) -> None:
    """Statistics of rows that see no key: max -FLT_MAX, sum FLT_MAX; with sink logits max = the head's sink, sum 1."""
    if sink is None:
        smax.fill_(-FLT_MAX)
        ssum.fill_(FLT_MAX)
        return
    z = sink.detach().to(smax.device)
    ssum.fill_(1.0)
    for rows, (seqs, heads, tokens) in _row_groups(p, smax):
        rows.copy_(z.view(1, -1, 1, 1).expand(seqs, heads, tokens, 8).reshape(-1, 8))


def sum_rows_per_head(p: FAProblem, rows: torch.Tensor) -> torch.Tensor:
    """Per query head, the sum of a per-row quantity stored in the statistics' layout (one of the 8 copies)."""
    out = torch.zeros(p.N1, dtype=rows.dtype, device=rows.device)
    for group, shape in _row_groups(p, rows):
        out += group[:, 0].reshape(shape).sum(dim=(0, 2))
    return out


def dpse_rows(p: FAProblem) -> Optional[torch.Tensor]:
    """The backward kernel's dS output for an outer pse (fp32, zeroed: tiles no step reaches have dS = 0)."""
    shape = p.post["dpse_rows_shape"]
    return torch.zeros(*shape, dtype=torch.float32) if shape else None


def dpse_of_rows(p: FAProblem, pse: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """dpse in pse's shape and dtype from the kernel's rows: summed over what pse broadcasts, times the scale for
    pse_type 1 (whose bias enters as scale * pse)."""
    g = rows
    for d in p.post["dpse_sum_dims"]:
        g = g.sum(dim=d, keepdim=True)
    if p.post["dpse_factor"] != 1.0:
        g = g * p.post["dpse_factor"]
    return g.to(pse.dtype)


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


def _launch(p: FAProblem, q, k, v, atten_mask, sink, pse, drop_mask, out, smax, ssum) -> dict:
    ext = _ext()
    chip = get_chip()
    view = kernel_mask(p, atten_mask) if p.dense_mask else None
    drop_rows = drop_mask_input(p, drop_mask)
    mask_ptr = mask_bytes = map_ptr = map_bytes = 0
    block = None
    if view is not None:
        block = build_block_map(atten_mask, view, p, chip)
        mask_ptr, mask_bytes = view.data_ptr(), p.mask_view["extent"]
        map_ptr, map_bytes = block.block_map.data_ptr(), block.block_map.numel()
    with progress.launch(f"twin forward launch on {chip}", p.flops(), "forward"):
        info = dict(ext.flash_attention_fwd(p.call, chip, q.data_ptr(), k.data_ptr(), v.data_ptr(), mask_ptr,
                                            mask_bytes, map_ptr, map_bytes, 0 if sink is None else sink.data_ptr(),
                                            0 if pse is None else pse.data_ptr(),
                                            0 if drop_rows is None else drop_rows.data_ptr(), out.data_ptr(),
                                            smax.data_ptr(), ssum.data_ptr(), _count_ops))
    if block is not None:
        shared = view.untyped_storage().data_ptr() == atten_mask.untyped_storage().data_ptr()
        info.update(tiles_masked=block.tiles_masked, tiles_mixed=block.tiles_mixed, tiles_visible=block.tiles_visible,
                    mask_copy_bytes=0 if shared else view.numel())
    return info


def _bind(args: tuple, kwargs: dict) -> dict[str, Any]:
    """The op's arguments by name, as the dispatcher passes them (trailing defaults may be left out)."""
    return bind_arguments(_op_schema(), args, kwargs)


def _op_schema() -> torch._C.FunctionSchema:
    return torch.ops.npu.flash_attention.default._schema


def in_place_device(device: torch.device) -> str:
    """The device name when it reads a user dropout mask in place only (the NPU path), else "" (the CPU twin
    repacks it)."""
    return "" if device.type == "cpu" else str(device)


def check_call(query, key, value, head_num, input_layout, **kwargs) -> FAProblem:
    """Every check of a call on real tensors, run before dispatch on every device (`dispatch.py`): the argument and
    mask rules, the device (CPU, or NPU with the adapter loaded), and the data checks (finite q/k/v, scale; on NPU
    only with NPU_FA_CHECK_VALUES=1, see dispatch.value_checks)."""
    values = value_checks(query.device)
    p = validate_flash_attention(query, key, value, head_num, input_layout, **kwargs, check_values=values,
                                 drop_mask_device=in_place_device(query.device))
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


def _flash_attention_impl(*args, **kwargs):
    """The CPU (twin) kernel. `check_call` ran before dispatch; this re-derives the problem without the data
    checks."""
    a = _bind(args, kwargs)
    p = validate_flash_attention(**a, check_values=False)
    query, sink = a["query"], a["sink"]
    out = torch.empty(p.out_shape, dtype=query.dtype)
    smax = torch.empty(p.stats_shape, dtype=torch.float32)
    ssum = torch.empty(p.stats_shape, dtype=torch.float32)
    if not p.has_work():
        # No query row sees a key (or there are no rows): every row is invalid (with sinks: the sink is the only
        # term of its softmax, max = sink, sum = 1); no launch needed.
        _log.debug("flash_attention: no query row sees a key; answered without a kernel launch")
        out.zero_()
        fill_rows_without_keys(p, sink, smax, ssum)
        fill_padding(p, out, smax, ssum)
        return out, smax, ssum
    # contiguous copies keep the pointers valid for the duration of the call
    q, k, v = (a[n].detach().contiguous() for n in ("query", "key", "value"))
    sk = None if sink is None else sink.detach().contiguous()
    info = _launch(p, q, k, v, a["atten_mask"], sk, pse_input(p, a["pse"]), a["dropout_mask"], out, smax, ssum)
    fill_padding(p, out, smax, ssum)
    record_launch(info)
    return out, smax, ssum


def pse_input(p: FAProblem, pse: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """The contiguous pse the kernel reads (ALiBi slopes or the outer bias), else None."""
    return pse.detach().contiguous() if p.pse.alibi_mode or p.pse.outer_mode else None


def _flash_attention_fake(*args, **kwargs):
    a = _bind(args, kwargs)
    p = validate_flash_attention(**a, check_values=False)
    query = a["query"]
    out = query.new_empty(p.out_shape)
    smax = query.new_empty(p.stats_shape, dtype=torch.float32)
    ssum = query.new_empty(p.stats_shape, dtype=torch.float32)
    return out, smax, ssum


def _register():
    ns_op = "npu::flash_attention"
    try:
        existing = torch.ops.npu.flash_attention  # noqa: F841 - already registered (module reloaded)
        return
    except (AttributeError, RuntimeError):
        pass
    # CPU only: NPU tensors dispatch to the adapter's PrivateUse1 kernel (npu.py); both are checked first.
    define_op(ns_op, SCHEMA, _flash_attention_impl, _flash_attention_fake, __doc__)
    check_before_dispatch(ns_op, check_call)


_register()


def flash_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, head_num: int, input_layout: str,
                    **kwargs: Any):
    return torch.ops.npu.flash_attention(query, key, value, head_num, input_layout, **kwargs)


flash_attention.__doc__ = ("`torch.ops.npu.flash_attention(query, key, value, head_num, input_layout, **kwargs)`, "
                           "the keyword arguments as in the schema.\n\n" + __doc__)
