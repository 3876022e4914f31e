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
import math
import operator
import os
import threading
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch

from .dispatch import bind_arguments, check_before_dispatch, define_op, require_device, value_checks
from . import dropout, progress
from .masks import build_block_map, check_masks, mask_view

__all__ = [
    "flash_attention", "FAProblem", "validate_flash_attention", "set_chip", "get_chip", "available_chips",
    "last_launch_info", "LAYOUTS", "FLT_MAX", "INT32_MAX", "DEFAULT_CHIP", "SCHEMA", "problem_dict", "set_op_counting",
]

FLT_MAX = 3.4028234663852886e38  # float32 max; invalid rows: softmax_max = -FLT_MAX, softmax_sum = +FLT_MAX
INT32_MAX = 2147483647
INT32_MIN = -2147483648
DEFAULT_CHIP = "Ascend910B2"
MAX_HEAD_DIM = 512
# Largest problem accepted: what the largest supported chip's HBM holds (910B1/B2/B3/910_93: 64 GB). Bigger
# requests (e.g. an expand()ed tensor with a huge logical shape) are refused before anything is allocated.
MAX_PROBLEM_BYTES = 64 * 1024 ** 3
LAYOUTS = ("BSH", "SBH", "BSND", "BNSD", "TND")
_LAYOUT_SHAPES = {
    "BSH": "query [B,S1,N1*D], key [B,S2,N2*D], value [B,S2,N2*Dv]",
    "SBH": "query [S1,B,N1*D], key [S2,B,N2*D], value [S2,B,N2*Dv]",
    "BSND": "query [B,S1,N1,D], key [B,S2,N2,D], value [B,S2,N2,Dv]",
    "BNSD": "query [B,N1,S1,D], key [B,N2,S2,D], value [B,N2,S2,Dv]",
    "TND": "query [T1,N1,D], key [T2,N2,D], value [T2,N2,Dv]",
}
_DTYPES = {torch.float16: "fp16", torch.bfloat16: "bf16"}

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
# validation
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


@dataclass(frozen=True)
class FAProblem:
    """A validated forward problem: the facts the kernel entry needs."""
    layout: str
    dtype: torch.dtype
    B: Any  # int (or SymInt under torch.compile with dynamic shapes)
    N1: Any
    N2: Any
    S1: Any
    S2: Any
    D: Any
    Dv: Any
    T1: Any
    T2: Any
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
    sink: bool = False         # per-query-head sink logits (float32 [N1]) join every softmax row
    softcap: Optional[float] = None  # > 0: logit soft-capping of the scaled scores
    pse: PseArgs = PseArgs()   # in-kernel ALiBi or an outer bias tensor
    drop: DropArgs = DropArgs()

    @property
    def dtype_name(self) -> str:
        return _DTYPES[self.dtype]

    def flops(self) -> float:
        """4 * scores * D: the forward's matmul FLOPs without masks (progress estimates)."""
        shapes = _sequence_shapes(self.layout, self.B, self.S1, self.S2, self.cu_seqlens_q, self.cu_seqlens_kv)
        return 4.0 * float(dropout.mask_elements(shapes, self.N1)) * self.D

    def has_work(self) -> bool:
        """False when no query row sees any key, so no kernel launch is needed."""
        if self.layout == "TND":
            return self.B > 0 and max(_lengths(self.cu_seqlens_q)) > 0 and max(_lengths(self.cu_seqlens_kv)) > 0
        return self.B > 0 and self.S1 > 0 and self.S2 > 0


def _lengths(cu: Sequence[int]) -> list[int]:
    prev, out = 0, []
    for c in cu:
        out.append(c - prev)
        prev = c
    return out


def _as_int(name: str, v: Any) -> int:
    if isinstance(v, bool):
        raise TypeError(f"{name} must be an int, got bool {v!r}")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}") from None


def _shape_dims(query, key, value, head_num: int, layout: str):
    """Returns (B, N1, N2, S1, S2, D, Dv, T1, T2) from the tensor shapes, or raises ValueError."""
    rank = 4 if layout in ("BSND", "BNSD") else 3
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.dim() != rank:
            raise ValueError(f"{name} must be {rank}-D for input_layout={layout!r} ({_LAYOUT_SHAPES[layout]}), "
                             f"got shape {tuple(t.shape)}")
    q, k, v = tuple(query.shape), tuple(key.shape), tuple(value.shape)
    T1 = T2 = 0
    if layout in ("BSH", "SBH"):
        if layout == "BSH":
            (B, S1, H1), (Bk, S2, H2), (Bv, S2v, H3) = q, k, v
        else:
            (S1, B, H1), (S2, Bk, H2), (S2v, Bv, H3) = q, k, v
        N1 = head_num
        if H1 == 0 or H1 % head_num != 0:
            raise ValueError(f"query hidden size H1={H1} must be a positive multiple of head_num={head_num} "
                             f"({layout}: D = H1 / head_num), query shape {q}")
        D = H1 // head_num
        if H2 == 0 or H2 % D != 0:
            raise ValueError(f"key hidden size H2={H2} must be a positive multiple of D={D} "
                             f"(H1={H1} / head_num={head_num}; {layout}: N2 = H2 / D), key shape {k}")
        N2 = H2 // D
        if H3 == 0 or H3 % N2 != 0:
            raise ValueError(f"value hidden size H3={H3} must be a positive multiple of N2={N2} "
                             f"({layout}: Dv = H3 / N2), value shape {v}")
        Dv = H3 // N2
        Dk, N2v = D, N2
    elif layout == "BSND":
        (B, S1, N1, D), (Bk, S2, N2, Dk), (Bv, S2v, N2v, Dv) = q, k, v
    elif layout == "BNSD":
        (B, N1, S1, D), (Bk, N2, S2, Dk), (Bv, N2v, S2v, Dv) = q, k, v
    else:  # TND
        (T1, N1, D), (T2, N2, Dk), (T2v, N2v, Dv) = q, k, v
        B = S1 = S2 = 0
        Bk = Bv = 0
        S2v = S2
        if T2v != T2:
            raise ValueError(f"value T2={T2v} must equal key T2={T2} (TND), key shape {k}, value shape {v}")
    if N1 != head_num:
        raise ValueError(f"head_num={head_num} must equal the query's head dimension N1={N1} "
                         f"({layout}: {_LAYOUT_SHAPES[layout]}), query shape {q}")
    if layout != "TND":
        if Bk != B or Bv != B:
            raise ValueError(f"batch sizes must match: query B={B}, key B={Bk}, value B={Bv} ({layout})")
        if S2v != S2:
            raise ValueError(f"key and value sequence lengths must match: key S2={S2}, value S2={S2v} ({layout})")
    if Dk != D:
        raise ValueError(f"key head dim {Dk} must equal query head dim D={D} ({layout}), "
                         f"query shape {q}, key shape {k}")
    if N2v != N2:
        raise ValueError(f"value head count {N2v} must equal key head count N2={N2} ({layout}), "
                         f"key shape {k}, value shape {v}")
    if N2 < 1:
        raise ValueError(f"key/value head count N2={N2} must be >= 1 ({layout}), key shape {k}")
    if N1 % N2 != 0:
        raise ValueError(f"query heads N1={N1} must be a multiple of key/value heads N2={N2} (GQA/MQA groups)")
    if not (1 <= D <= MAX_HEAD_DIM):
        raise ValueError(f"head dim D={D} must be in [1, {MAX_HEAD_DIM}] ({layout}), query shape {q}")
    if not (1 <= Dv <= D):
        raise ValueError(f"value head dim Dv={Dv} must be in [1, D={D}] (Dv <= D), value shape {v}")
    return B, N1, N2, S1, S2, D, Dv, T1, T2


def _normalize_cu(name: str, seq: Sequence[Any]) -> list[int]:
    """Checks one cumulative list; returns its enabled prefix (trailing zeros after a positive value dropped)."""
    vals = [_as_int(f"{name}[{i}]", x) for i, x in enumerate(seq)]
    if not vals:
        raise ValueError(f"{name} must not be empty for input_layout='TND' (one cumulative entry per batch)")
    last_pos = max((i for i, x in enumerate(vals) if x > 0), default=None)
    enabled = vals if last_pos is None else vals[:last_pos + 1]
    tail = vals[len(enabled):]
    if any(x != 0 for x in tail):  # cannot happen by construction; kept as a guard
        raise ValueError(f"{name}={vals}: only zeros may follow the last sequence (disabled batches)")
    prev = 0
    for i, x in enumerate(enabled):
        if x < 0:
            raise ValueError(f"{name}={vals}: entry {i} is {x}; cumulative lengths must be >= 0")
        if x < prev:
            raise ValueError(f"{name}={vals}: entry {i} ({x}) is smaller than entry {i - 1} ({prev}); the list must be "
                             "cumulative (non-decreasing), with trailing zeros only to disable the last batches")
        prev = x
    return enabled


def _check_sizes(query, key, value, layout, B, N1, S1, Dv, T1) -> None:
    """Refuses shapes the kernel cannot address (its tiling holds dimensions as 32-bit fields) and problems no chip
    could hold, naming the tensor. Skipped for symbolic (torch.compile dynamic) sizes."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        for axis, n in enumerate(t.shape):
            if isinstance(n, int) and n > INT32_MAX:
                raise ValueError(f"{name} dimension {axis} is {n}; every dimension must be <= {INT32_MAX} (the kernel's "
                                 f"tiling holds sizes as 32-bit fields), shape {tuple(t.shape)}")
    rows = T1 if layout == "TND" else B * S1
    sizes = [("query", query.numel() * query.element_size()), ("key", key.numel() * key.element_size()),
             ("value", value.numel() * value.element_size())]
    if not all(isinstance(b, int) for _, b in sizes) or not isinstance(rows * N1 * Dv, int):
        return
    sizes += [("attention_out", rows * N1 * Dv * query.element_size()), ("softmax_max/softmax_sum", 2 * rows * N1 * 32)]
    total = sum(b for _, b in sizes)
    if total > MAX_PROBLEM_BYTES:
        name, big = max(sizes, key=lambda nb: nb[1])
        detail = ", ".join(f"{n} {b / 1024 ** 3:.3g} GiB" for n, b in sizes)
        raise ValueError(f"the problem needs {total / 1024 ** 3:.4g} GiB of device memory ({detail}), more than the "
                         f"{MAX_PROBLEM_BYTES // 1024 ** 3} GiB HBM of the largest supported chip; the largest part is "
                         f"{name} ({big} bytes)")


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


def _start_index(name: str, x: Any) -> int:
    if not isinstance(x, (list, tuple)) or len(x) == 0:
        raise ValueError(f"{name}={x!r} must be a non-empty list of ints (only element 0 is used, as the built-in)")
    v = _as_int(name, x[0])
    if not (INT32_MIN <= v <= INT32_MAX):
        raise ValueError(f"{name}[0]={v} must fit in int32")
    return v


def _check_outer_pse(pse, pse_type: int, layout: str, query, B: int, N1: int, S1: int, S2: int) -> PseArgs:
    if pse.dtype != query.dtype:
        raise TypeError(f"pse dtype {pse.dtype} must equal query dtype {query.dtype} for pse_type={pse_type} (an outer "
                        "bias tensor)")
    if layout == "TND":
        raise NotImplementedError("an outer pse tensor with input_layout='TND' is not implemented yet in "
                                  "npu_flash_attn (ALiBi from slopes, pse_type 2/3, works with TND)")
    shape = tuple(pse.shape)
    ok = len(shape) == 4 and shape[0] in (1, B) and shape[1] == N1 and shape[2] in (1, S1) and shape[3] == S2
    if not ok:
        raise ValueError(f"pse shape {shape} must be [B or 1, N1, S1 or 1, S2] = [{B} or 1, {N1}, {S1} or 1, {S2}] "
                         f"for pse_type={pse_type} (the built-in's 1024-row ALiBi compression is not supported: pass "
                         "pse_type 2/3 with slopes instead)")
    return PseArgs(outer_mode=1 if pse_type == 0 else 2, outer_per_batch=shape[0] == B and B > 1,
                   outer_per_row=shape[2] == S1 and S1 > 1)


def _check_pse(pse, pse_type: int, q_start_idx, kv_start_idx, layout: str, query, batches: int, B: int, N1: int,
               S1: int, S2: int) -> PseArgs:
    """What the pse arguments ask for, or raises naming the argument (type and device were checked before)."""
    if pse_type in (0, 1):
        for name, x in (("q_start_idx", q_start_idx), ("kv_start_idx", kv_start_idx)):
            if x is not None:
                raise ValueError(f"{name} is only used by the in-kernel ALiBi of pse_type 2 and 3, got "
                                 f"pse_type={pse_type}")
        return PseArgs() if pse is None else _check_outer_pse(pse, pse_type, layout, query, B, N1, S1, S2)
    if pse is None:
        raise ValueError(f"pse_type={pse_type} needs `pse`: the ALiBi slopes, float32 [N1] or [B, N1]")
    if pse.dtype != torch.float32:
        raise TypeError(f"pse dtype {pse.dtype} must be torch.float32 for pse_type={pse_type} (the ALiBi slopes)")
    if tuple(pse.shape) not in ((N1,), (batches, N1)):
        raise ValueError(f"pse shape {tuple(pse.shape)} must be ({N1},) or ({batches}, {N1}) for pse_type={pse_type}: "
                         "one ALiBi slope per query head (per batch)")
    q0 = 0 if q_start_idx is None else _start_index("q_start_idx", q_start_idx)
    k0 = 0 if kv_start_idx is None else _start_index("kv_start_idx", kv_start_idx)
    return PseArgs(alibi_mode=pse_type, alibi_per_batch=pse.dim() == 2, alibi_delta=k0 - q0)


def validate_flash_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None,
                             atten_mask=None, scale=1.0, keep_prob=1.0, pre_tokens=INT32_MAX,
                             next_tokens=INT32_MAX, inner_precise=0, prefix=None, actual_seq_qlen=None,
                             actual_seq_kvlen=None, sparse_mode=0, seed=0, offset=0, sink=None, softcap=None,
                             pse_type=1, q_start_idx=None, kv_start_idx=None, dropout_mask=None, *,
                             check_values: bool = True) -> FAProblem:
    """Checks every argument of npu::flash_attention (raising ValueError/TypeError naming the argument, the value and
    the rule, or NotImplementedError for features not built yet) and returns the validated problem. Reads no
    tensor data except a compressed `atten_mask` of modes 2-4/6-8 (compared with the built-in's compressed mask, on
    its device; skipped when check_values is False, as in the fake kernel); touches nothing."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not isinstance(input_layout, str):
        raise TypeError(f"input_layout must be a str, got {type(input_layout).__name__}")
    layout = input_layout.upper()
    if layout not in LAYOUTS:
        raise ValueError(f"input_layout={input_layout!r} is not supported; use one of {list(LAYOUTS)}")
    if padding_mask is not None:
        raise ValueError("padding_mask is reserved and not supported (as in torch_npu.npu_fusion_attention); pass None")
    # dtypes (TypeError) and devices
    if query.dtype not in _DTYPES:
        raise TypeError(f"query dtype {query.dtype} is not supported; use torch.float16 or torch.bfloat16")
    for name, t in (("key", key), ("value", value)):
        if t.dtype != query.dtype:
            raise TypeError(f"{name} dtype {t.dtype} must equal query dtype {query.dtype}")
    for name, t in (("atten_mask", atten_mask), ("sink", sink), ("pse", pse)):
        if t is not None and not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor or None, got {type(t).__name__}")
    for name, t in (("key", key), ("value", value), ("atten_mask", atten_mask), ("sink", sink), ("pse", pse)):
        if t is not None and t.device != query.device:
            raise ValueError(f"{name} is on device {t.device} but query is on {query.device}; all tensors must "
                             "be on the same device")
    head_num = _as_int("head_num", head_num)
    if head_num < 1:
        raise ValueError(f"head_num={head_num} must be >= 1")
    B, N1, N2, S1, S2, D, Dv, T1, T2 = _shape_dims(query, key, value, head_num, layout)
    _check_sizes(query, key, value, layout, B, N1, S1, Dv, T1)
    # scalars
    if not isinstance(scale, (int, float)) or isinstance(scale, bool):
        raise TypeError(f"scale must be a float, got {type(scale).__name__}")
    scale = float(scale)
    if not math.isfinite(scale):
        raise ValueError(f"scale={scale} must be finite")
    if not isinstance(keep_prob, (int, float)) or isinstance(keep_prob, bool):
        raise TypeError(f"keep_prob must be a float, got {type(keep_prob).__name__}")
    keep_prob = float(keep_prob)
    if not (0.0 < keep_prob <= 1.0):
        raise ValueError(f"keep_prob={keep_prob} must be in (0, 1]")
    inner_precise = _as_int("inner_precise", inner_precise)
    if inner_precise not in (0, 1, 2):
        raise ValueError(f"inner_precise={inner_precise} must be 0, 1 or 2 (all give zero output for invalid rows)")
    sparse_mode = _as_int("sparse_mode", sparse_mode)
    if not (0 <= sparse_mode <= 8):
        raise ValueError(f"sparse_mode={sparse_mode} must be in [0, 8]")
    pre_tokens = _as_int("pre_tokens", pre_tokens)
    next_tokens = _as_int("next_tokens", next_tokens)
    for name, v in (("pre_tokens", pre_tokens), ("next_tokens", next_tokens)):
        if not (INT32_MIN <= v <= INT32_MAX):
            raise ValueError(f"{name}={v} must fit in int32 [{INT32_MIN}, {INT32_MAX}]")
    pse_type = _as_int("pse_type", pse_type)
    if not (0 <= pse_type <= 3):
        raise ValueError(f"pse_type={pse_type} must be 0, 1, 2 or 3")
    if softcap is not None:
        if not isinstance(softcap, (int, float)) or isinstance(softcap, bool):
            raise TypeError(f"softcap must be a float or None, got {type(softcap).__name__}")
        softcap = float(softcap)
        if not (math.isfinite(softcap) and softcap > 0.0):
            raise ValueError(f"softcap={softcap} must be finite and > 0 (None turns soft-capping off)")
    # varlen lists
    cu_q: list[int] = []
    cu_kv: list[int] = []
    if layout == "TND":
        if actual_seq_qlen is None or actual_seq_kvlen is None:
            missing = [n for n, x in (("actual_seq_qlen", actual_seq_qlen), ("actual_seq_kvlen", actual_seq_kvlen))
                       if x is None]
            raise ValueError(f"input_layout='TND' requires {' and '.join(missing)} (cumulative sequence lengths)")
        if len(actual_seq_qlen) != len(actual_seq_kvlen):
            raise ValueError(f"actual_seq_qlen (length {len(actual_seq_qlen)}) and actual_seq_kvlen (length "
                             f"{len(actual_seq_kvlen)}) must have the same length (the number of batches)")
        cu_q = _normalize_cu("actual_seq_qlen", actual_seq_qlen)
        cu_kv = _normalize_cu("actual_seq_kvlen", actual_seq_kvlen)
        nb = min(len(cu_q), len(cu_kv))  # a batch disabled in either list is disabled
        cu_q, cu_kv = cu_q[:nb], cu_kv[:nb]
        if cu_q and cu_q[-1] > T1:
            raise ValueError(f"actual_seq_qlen total {cu_q[-1]} exceeds query T1={T1} (TND query shape "
                             f"{tuple(query.shape)}); the last cumulative length must be <= T1")
        if cu_kv and cu_kv[-1] > T2:
            raise ValueError(f"actual_seq_kvlen total {cu_kv[-1]} exceeds key/value T2={T2} (TND key shape "
                             f"{tuple(key.shape)}); the last cumulative length must be <= T2")
        B = nb
        S1 = max(_lengths(cu_q), default=0)
        S2 = max(_lengths(cu_kv), default=0)
    else:
        for name, x in (("actual_seq_qlen", actual_seq_qlen), ("actual_seq_kvlen", actual_seq_kvlen)):
            if x is not None:
                raise ValueError(f"{name} is only valid with input_layout='TND', got input_layout={input_layout!r}")
    # features of later issues
    pse_args = _check_pse(pse, pse_type, q_start_idx, kv_start_idx, layout, query,
                          len(actual_seq_qlen) if layout == "TND" else B, B, N1, S1, S2)
    drop = _check_dropout(keep_prob, _as_int("seed", seed), _as_int("offset", offset), dropout_mask, query, layout,
                          B, N1, S1, S2, cu_q, cu_kv)
    if sink is not None:
        if sink.dtype != torch.float32:
            raise TypeError(f"sink dtype {sink.dtype} must be torch.float32 (one logit per query head, as the "
                            "built-in's sink)")
        if tuple(sink.shape) != (N1,):
            raise ValueError(f"sink shape {tuple(sink.shape)} must be ({N1},): one logit per query head "
                             f"(head_num={N1})")
    # masks, sparse modes, prefix
    rules = check_masks(atten_mask, sparse_mode, pre_tokens, next_tokens, prefix, layout, B, N1, S1, S2, cu_q, cu_kv,
                        check_values)
    # output shapes
    if layout == "BSH":
        out_shape = (B, S1, N1 * Dv)
    elif layout == "SBH":
        out_shape = (S1, B, N1 * Dv)
    elif layout == "BSND":
        out_shape = (B, S1, N1, Dv)
    elif layout == "BNSD":
        out_shape = (B, N1, S1, Dv)
    else:
        out_shape = (T1, N1, Dv)
    stats_shape = (T1, N1, 8) if layout == "TND" else (B, N1, S1, 8)
    return FAProblem(layout=layout, dtype=query.dtype, B=B, N1=N1, N2=N2, S1=S1, S2=S2, D=D, Dv=Dv, T1=T1, T2=T2,
                     scale=scale, sparse_mode=rules.sparse_mode, pre_tokens=rules.pre_tokens,
                     next_tokens=rules.next_tokens, cu_seqlens_q=tuple(cu_q), cu_seqlens_kv=tuple(cu_kv),
                     out_shape=out_shape, stats_shape=stats_shape, prefix=rules.prefix, dense_mask=rules.dense,
                     mask_tnd_global=rules.tnd_global, sink=sink is not None, softcap=softcap, pse=pse_args,
                     drop=drop)


def _check_dropout(keep_prob: float, seed: int, offset: int, dropout_mask, query, layout: str, B, N1, S1, S2,
                   cu_q: Sequence[int], cu_kv: Sequence[int]) -> DropArgs:
    """keep_prob < 1 turns dropout on: the kernel's generator keyed by (seed, offset), or the user's mask."""
    for name, v in (("seed", seed), ("offset", offset)):
        if not (-(1 << 63) <= v < (1 << 64)):
            raise ValueError(f"{name}={v} must fit in 64 bits")
    if dropout_mask is not None:
        if not isinstance(dropout_mask, torch.Tensor):
            raise TypeError(f"dropout_mask must be a torch.Tensor or None, got {type(dropout_mask).__name__}")
        if dropout_mask.device != query.device:
            raise ValueError(f"dropout_mask is on device {dropout_mask.device} but query is on {query.device}; all "
                             "tensors must be on the same device")
        if keep_prob >= 1.0:
            raise ValueError("dropout_mask is given but keep_prob=1.0: the mask is only applied with keep_prob < 1 "
                             "(its kept values are scaled by 1 / keep_prob); pass keep_prob < 1 or no mask")
        dropout.check_mask(dropout_mask, dropout.mask_elements(_sequence_shapes(layout, B, S1, S2, cu_q, cu_kv), N1))
    if keep_prob >= 1.0:
        return DropArgs()
    return DropArgs(mode=1 if dropout_mask is None else 2, keep_prob=keep_prob, seed=seed, offset=offset)


def _sequence_shapes(layout: str, B, S1, S2, cu_q: Sequence[int], cu_kv: Sequence[int]) -> list[tuple[int, int]]:
    """(Sq, Skv) of every sequence: the TND lengths, else B times (S1, S2)."""
    return list(zip(_lengths(cu_q), _lengths(cu_kv))) if layout == "TND" else [(S1, S2)] * B


def check_drop_mask_device(p: FAProblem, device: torch.device) -> None:
    """On the NPU a user dropout mask is read in place only: rows of S2 / 8 whole bytes (the CPU path repacks)."""
    if p.drop.mode == 2 and device.type != "cpu" and (p.layout == "TND" or p.S2 % 8 != 0):
        raise NotImplementedError(f"dropout_mask on {device} needs a non-TND layout and S2 % 8 == 0 (got "
                                  f"input_layout={p.layout!r}, S2={p.S2}): the NPU path reads the bits in place and "
                                  "does not repack them yet; the CPU (twin) path takes every form")


def drop_mask_input(p: FAProblem, mask: Optional[torch.Tensor]) -> tuple[Optional[torch.Tensor], int]:
    """The user dropout mask as the kernels read it (rows of bytes in the statistics' order, repacked when needed)
    and its row pitch; (None, 0) without one."""
    if p.drop.mode != 2:
        return None, 0
    shapes = _sequence_shapes(p.layout, p.B, p.S1, p.S2, p.cu_seqlens_q, p.cu_seqlens_kv)
    rows, pitch = dropout.kernel_rows(mask.detach(), p.N1, shapes, p.S2, p.layout == "TND")
    if rows.data_ptr() != mask.data_ptr():
        _log.debug("dropout_mask repacked into rows of %d bytes (TND or S2 %% 8 != 0)", pitch)
    return rows.contiguous(), pitch


# ----------------------------------------------------------------------------------------------------------------
# implementations
# ----------------------------------------------------------------------------------------------------------------
def _fill_invalid_tail(p: FAProblem, out: torch.Tensor, smax: torch.Tensor, ssum: torch.Tensor) -> None:
    """TND: query tokens after the last enabled sequence (padding) are invalid rows."""
    used = p.cu_seqlens_q[-1] if p.cu_seqlens_q else 0
    if used >= p.T1:
        return
    out[used:].zero_()
    smax.view(-1)[used * p.N1 * 8:].fill_(-FLT_MAX)
    ssum.view(-1)[used * p.N1 * 8:].fill_(FLT_MAX)


def fill_rows_without_keys(p: FAProblem, sink: Optional[torch.Tensor], smax: torch.Tensor, ssum: torch.Tensor) -> None:
    """Statistics of rows that see no key: max -FLT_MAX, sum FLT_MAX; with sink logits max = the head's sink, sum 1."""
    if sink is None:
        smax.fill_(-FLT_MAX)
        ssum.fill_(FLT_MAX)
        return
    z = sink.detach().to(smax.device)
    ssum.fill_(1.0)
    if p.layout != "TND":
        smax.copy_(z.view(1, -1, 1, 1).expand(smax.shape))
        return
    # TND statistics are batch-major: sequence b's rows are [head][token] from cu_q[b-1] * N1 (module docstring)
    rows = smax.view(-1, 8)
    for q0, q1 in zip((0,) + tuple(p.cu_seqlens_q[:-1]), p.cu_seqlens_q):
        rows[q0 * p.N1:q1 * p.N1] = z.view(-1, 1, 1).expand(p.N1, q1 - q0, 8).reshape(-1, 8)


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
    if not hasattr(ext, "flash_attention_plan"):
        raise RuntimeError("npu_flash_attn._C has no flash_attention_plan (stale build?): rebuild with "
                           "`pip install -e .`")
    chip = get_chip()
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
        info = dict(ext.flash_attention_fwd(problem, chip, q.data_ptr(), k.data_ptr(), v.data_ptr(), mask_ptr,
                                            mask_bytes, map_ptr, map_bytes, 0 if sink is None else sink.data_ptr(),
                                            0 if pse is None else pse.data_ptr(),
                                            0 if drop_rows is None else drop_rows.data_ptr(), out.data_ptr(),
                                            smax.data_ptr(), ssum.data_ptr(), _count_ops))
    if block is not None:
        shared = view.tensor.untyped_storage().data_ptr() == atten_mask.untyped_storage().data_ptr()
        info.update(tiles_masked=block.tiles_masked, tiles_mixed=block.tiles_mixed, tiles_visible=block.tiles_visible,
                    mask_copy_bytes=0 if shared else view.tensor.numel())
    return info


def _bind(args: tuple, kwargs: dict) -> dict[str, Any]:
    """The op's arguments by name, as the dispatcher passes them (trailing defaults may be left out)."""
    return bind_arguments(_op_schema(), args, kwargs)


def _op_schema() -> torch._C.FunctionSchema:
    return torch.ops.npu.flash_attention.default._schema


def check_call(query, key, value, head_num, input_layout, **kwargs) -> FAProblem:
    """Every check of a call on real tensors, run before dispatch on every device (`dispatch.py`): the argument and
    mask rules, the device (CPU, or NPU with the adapter loaded), and the data checks (finite q/k/v, scale; on NPU
    only with NPU_FA_CHECK_VALUES=1, see dispatch.value_checks)."""
    values = value_checks(query.device)
    p = validate_flash_attention(query, key, value, head_num, input_layout, **kwargs, check_values=values)
    require_device(query.device, "npu::flash_attention")
    check_drop_mask_device(p, query.device)
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
        if p.layout == "TND":
            _fill_invalid_tail(p, out, smax, ssum)
        return out, smax, ssum
    # contiguous copies keep the pointers valid for the duration of the call
    q, k, v = (a[n].detach().contiguous() for n in ("query", "key", "value"))
    sk = None if sink is None else sink.detach().contiguous()
    info = _launch(p, q, k, v, a["atten_mask"], sk, pse_input(p, a["pse"]), a["dropout_mask"], out, smax, ssum)
    if p.layout == "TND":
        _fill_invalid_tail(p, out, smax, ssum)
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
