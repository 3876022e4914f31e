"""The validated attention problem: every argument rule of `npu::flash_attention` and its grad (ValueError /
TypeError / NotImplementedError naming the argument, the value and the rule, before anything is allocated), the
data checks made before a launch, and `FAProblem`, what the backends run. The op semantics are documented in
`npu_flash_attn.ops`."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch

from . import dropout
from .layouts import to_bnsd
from .masks import check_masks
from .varlen import as_int, lengths, normalize_cumulative, sequence_shapes

__all__ = ["FAProblem", "PseArgs", "DropArgs", "validate_flash_attention", "validate_grad", "check_input_values",
           "check_finite", "check_drop_mask_device", "LAYOUTS", "FLT_MAX", "INT32_MAX", "INT32_MIN", "MAX_HEAD_DIM"]

FLT_MAX = 3.4028234663852886e38  # float32 max; invalid rows: softmax_max = -FLT_MAX, softmax_sum = +FLT_MAX
INT32_MAX = 2147483647
INT32_MIN = -2147483648

MAX_HEAD_DIM = 512

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
        shapes = sequence_shapes(self.layout, self.B, self.S1, self.S2, self.cu_seqlens_q, self.cu_seqlens_kv)
        return 4.0 * float(dropout.mask_elements(shapes, self.N1)) * self.D

    def has_work(self) -> bool:
        """False when no query row sees any key, so no kernel launch is needed."""
        if self.layout == "TND":
            return self.B > 0 and max(lengths(self.cu_seqlens_q)) > 0 and max(lengths(self.cu_seqlens_kv)) > 0
        return self.B > 0 and self.S1 > 0 and self.S2 > 0


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
    group = p.N1 // p.N2
    if p.layout == "TND":  # sequences: token ranges of the cumulative lists -> [N, S, D] each
        bounds = zip((0,) + p.cu_seqlens_q[:-1], p.cu_seqlens_q, (0,) + p.cu_seqlens_kv[:-1], p.cu_seqlens_kv)
        pairs = [(query[q0:q1].transpose(0, 1), key[k0:k1].transpose(0, 1)) for q0, q1, k0, k1 in bounds]
    else:
        q, k = to_bnsd(query, p.layout, p.N1), to_bnsd(key, p.layout, p.N2)
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
    v = as_int(name, x[0])
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
    head_num = as_int("head_num", head_num)
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
    inner_precise = as_int("inner_precise", inner_precise)
    if inner_precise not in (0, 1, 2):
        raise ValueError(f"inner_precise={inner_precise} must be 0, 1 or 2 (all give zero output for invalid rows)")
    sparse_mode = as_int("sparse_mode", sparse_mode)
    if not (0 <= sparse_mode <= 8):
        raise ValueError(f"sparse_mode={sparse_mode} must be in [0, 8]")
    pre_tokens = as_int("pre_tokens", pre_tokens)
    next_tokens = as_int("next_tokens", next_tokens)
    for name, v in (("pre_tokens", pre_tokens), ("next_tokens", next_tokens)):
        if not (INT32_MIN <= v <= INT32_MAX):
            raise ValueError(f"{name}={v} must fit in int32 [{INT32_MIN}, {INT32_MAX}]")
    pse_type = as_int("pse_type", pse_type)
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
        cu_q = normalize_cumulative("actual_seq_qlen", actual_seq_qlen)
        cu_kv = normalize_cumulative("actual_seq_kvlen", actual_seq_kvlen)
        nb = min(len(cu_q), len(cu_kv))  # a batch disabled in either list is disabled
        cu_q, cu_kv = cu_q[:nb], cu_kv[:nb]
        if cu_q and cu_q[-1] > T1:
            raise ValueError(f"actual_seq_qlen total {cu_q[-1]} exceeds query T1={T1} (TND query shape "
                             f"{tuple(query.shape)}); the last cumulative length must be <= T1")
        if cu_kv and cu_kv[-1] > T2:
            raise ValueError(f"actual_seq_kvlen total {cu_kv[-1]} exceeds key/value T2={T2} (TND key shape "
                             f"{tuple(key.shape)}); the last cumulative length must be <= T2")
        B = nb
        S1 = max(lengths(cu_q), default=0)
        S2 = max(lengths(cu_kv), default=0)
    else:
        for name, x in (("actual_seq_qlen", actual_seq_qlen), ("actual_seq_kvlen", actual_seq_kvlen)):
            if x is not None:
                raise ValueError(f"{name} is only valid with input_layout='TND', got input_layout={input_layout!r}")
    # features of later issues
    pse_args = _check_pse(pse, pse_type, q_start_idx, kv_start_idx, layout, query,
                          len(actual_seq_qlen) if layout == "TND" else B, B, N1, S1, S2)
    drop = _check_dropout(keep_prob, as_int("seed", seed), as_int("offset", offset), dropout_mask, query, layout,
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
        dropout.check_mask(dropout_mask, dropout.mask_elements(sequence_shapes(layout, B, S1, S2, cu_q, cu_kv), N1))
    if keep_prob >= 1.0:
        return DropArgs()
    return DropArgs(mode=1 if dropout_mask is None else 2, keep_prob=keep_prob, seed=seed, offset=offset)


def check_drop_mask_device(p: FAProblem, device: torch.device) -> None:
    """On the NPU a user dropout mask is read in place only: rows of S2 / 8 whole bytes (the CPU path repacks)."""
    if p.drop.mode == 2 and device.type != "cpu" and (p.layout == "TND" or p.S2 % 8 != 0):
        raise NotImplementedError(f"dropout_mask on {device} needs a non-TND layout and S2 % 8 == 0 (got "
                                  f"input_layout={p.layout!r}, S2={p.S2}): the NPU path reads the bits in place and "
                                  "does not repack them yet; the CPU (twin) path takes every form")


_GRAD_ONLY = ("dy", "softmax_max", "softmax_sum", "attention_in", "deterministic")


def validate_grad(a: dict, check_values: bool = True) -> FAProblem:
    """The forward's rules on the shared arguments (`a`: every argument by name) and the grad's own."""
    fwd = {n: v for n, v in a.items() if n not in _GRAD_ONLY}
    p = validate_flash_attention(**fwd, check_values=check_values)
    query, deterministic = a["query"], a["deterministic"]
    if not isinstance(deterministic, bool):
        raise TypeError(f"deterministic must be a bool, got {type(deterministic).__name__}")
    named = (("dy", p.out_shape, query.dtype, "the forward output's shape"),
             ("attention_in", p.out_shape, query.dtype, "the forward output's shape"),
             ("softmax_max", p.stats_shape, torch.float32, "the forward statistics' shape"),
             ("softmax_sum", p.stats_shape, torch.float32, "the forward statistics' shape"))
    for name, shape, dtype, what in named:
        t = a[name]
        if t is None:
            raise ValueError(f"{name} is required by flash_attention_grad (pass the forward's {name})"
                             if name != "dy" else "dy is required")
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if tuple(t.shape) != tuple(shape):
            raise ValueError(f"{name} shape {tuple(t.shape)} must be {tuple(shape)} ({what}, "
                             f"input_layout={p.layout!r})")
        if t.dtype != dtype:  # statistics: ValueError (the op contract); dy/attention_in: TypeError like key/value
            err = ValueError if dtype == torch.float32 else TypeError
            raise err(f"{name} dtype {t.dtype} must be {dtype}")
        if t.device != query.device:
            raise ValueError(f"{name} is on device {t.device} but query is on {query.device}; all tensors must be "
                             "on the same device")
    return p


def check_finite(op: str, **tensors) -> None:
    for name, t in tensors.items():
        bad = ~torch.isfinite(t)
        if bool(bad.any()):
            idx = tuple(int(i) for i in bad.nonzero()[0])
            raise ValueError(f"{name} contains NaN or Inf (first at index {idx}); {op} requires "
                             f"finite {', '.join(tensors)}")
