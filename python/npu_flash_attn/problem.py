"""The validated attention problem of `npu::flash_attention` and its grad: the Python-side checks (Python types,
devices, data: NaN/Inf scans, the compressed mask's content, the scale overflow) around the extension's problem
module (op_host/problem: every shape and attribute rule, ValueError / TypeError / NotImplementedError naming the
argument, the value and the rule, before anything is allocated), and `FAProblem`, what the backends run. The op
semantics are documented in `npu_flash_attn.ops`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch
from torch.fx.experimental.symbolic_shapes import optimization_hint

from . import dropout, native
from .dispatch import is_fake
from .layouts import to_bnsd
from .masks import check_compressed_mask
from .varlen import as_int

__all__ = ["FAProblem", "PseArgs", "DropArgs", "validate_flash_attention", "validate_grad", "check_input_values",
           "check_finite", "in_place_device", "sequence_shapes", "LAYOUTS", "FLT_MAX", "INT32_MAX"]

FLT_MAX = 3.4028234663852886e38  # float32 max; invalid rows: softmax_max = -FLT_MAX, softmax_sum = +FLT_MAX
FP16_MAX = 65504.0  # float16 max: the high-performance mode's scores (unscaled q.k) must not exceed it
INT32_MAX = 2147483647

LAYOUTS = ("BSH", "SBH", "BSND", "BNSD", "TND")


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
    high_performance: bool = False  # inner_precise bit 0: scores (backward: S, dP) may leave the cube 16-bit
    out_residual: bool = False  # the forward writes attention_out_residual / the backward reads it (issue 26)
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


def _as_float(name: str, v: Any, what: str = "a float") -> float:
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise TypeError(f"{name} must be {what}, got {type(v).__name__}")
    return float(v)


def _int_list(name: str, seq: Any) -> Optional[list[int]]:
    if seq is None:
        return None
    if name == "prefix":
        for b, x in enumerate(seq):
            if isinstance(x, bool) or not isinstance(x, (int, torch.SymInt)):
                raise TypeError(f"prefix[{b}] must be an int, got {type(x).__name__} {x!r}")
    if name in ("q_start_idx", "kv_start_idx") and not isinstance(seq, (list, tuple)):
        raise ValueError(f"{name}={seq!r} must be a non-empty list of ints (only element 0 is used, as the built-in)")
    return [_int(f"{name}[{i}]", x) for i, x in enumerate(seq)]


def _hint(n: Any) -> int:
    """A size as a plain int: symbolic sizes (torch.compile dynamic=True) by their hint, so validation adds no
    guards and specializes nothing."""
    return n if isinstance(n, int) else optimization_hint(n)


def _int(name: str, v: Any) -> int:
    """An int argument; a symbolic one (the SymInt arguments of the schema under torch.compile or torch.export) by
    its hint, like the sizes, or 0 when it has none (a value read from a tensor while tracing, e.g. flash_attn's
    cu_seqlens: 0 keeps any TND list valid): the op checks the actual values when it runs."""
    return as_int(name, optimization_hint(v, fallback=0) if isinstance(v, torch.SymInt) else v)


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
                             pse_type=1, q_start_idx=None, kv_start_idx=None, dropout_mask=None,
                             dropout_origin=None, *,
                             check_values: bool = True, grad: Optional[dict] = None,
                             drop_mask_device: str = "", partial_keys: bool = False,
                             out_residual: bool = False) -> FAProblem:
    """Checks every argument of npu::flash_attention (raising ValueError/TypeError naming the argument, the value and
    the rule, or NotImplementedError for features not built yet) and returns the validated problem. Python checks
    the Python types and the devices; the shape and attribute rules are the extension's problem module's, the one
    every backend runs. Reads no tensor data except a compressed `atten_mask` of modes 2-4/6-8 (compared with the
    built-in's compressed mask, on its device; skipped when check_values is False, as in the fake kernel). `grad`:
    the backward's dy/attention_in/softmax_max/softmax_sum, checked against the forward's shapes.
    `drop_mask_device`: a device that reads a user dropout mask in place (no repacking). `partial_keys`: the grad
    op's flag (the call holds part of each row's keys). `out_residual`: the forward also writes attention_out's
    rounding error (the grad's is set by its attention_in_residual)."""
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
    ints = {n: _int(n, v) for n, v in (("head_num", head_num), ("inner_precise", inner_precise),
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
                                             ("kv_start_idx", kv_start_idx), ("dropout_origin", dropout_origin))}
    tensors = {n: _tensor_arg(t) for n, t in (("query", query), ("key", key), ("value", value), ("pse", pse),
                                              ("padding_mask", padding_mask), ("atten_mask", atten_mask),
                                              ("sink", sink), ("dropout_mask", dropout_mask), *(grad or {}).items())}
    call = native.ext().Call(**tensors, **ints, **lists, input_layout=input_layout, scale=scale, keep_prob=keep_prob,
                             softcap=softcap, grad=grad is not None, partial_keys=partial_keys,
                             out_residual=out_residual or (grad or {}).get("attention_in_residual") is not None,
                             drop_mask_device=drop_mask_device)
    info = native.ext().flash_attention_problem(call)
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
                     drop=drop, high_performance=info["high_performance"], out_residual=info["out_residual"],
                     post=info)


def check_input_values(p: FAProblem, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> None:
    """Data checks made before a launch (not in the fake kernel): q/k/v must be finite (the cube is not fed NaN/Inf:
    ValueError naming the tensor and the first bad index), and scale * q.k must stay inside float32 for every
    (query row, key row) pair of a head, else the online softmax would compute inf - inf (ValueError naming scale);
    in the high-performance mode with float16 inputs the unscaled q.k must also fit float16, the type the scores
    leave the cube in (ValueError naming inner_precise)."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        bad = ~torch.isfinite(t)
        if bool(bad.any()):
            idx = tuple(int(i) for i in bad.nonzero()[0])
            raise ValueError(f"{name} contains NaN or Inf (first at index {idx}: {t[idx].item()}); "
                             "npu::flash_attention requires finite query/key/value")
    # Cauchy-Schwarz bound first (one pass over q and k); the exact maximum only when the bound could overflow.
    qn = float(query.float().norm(dim=-1).max()) if query.numel() else 0.0
    kn = float(key.float().norm(dim=-1).max()) if key.numel() else 0.0
    if p.high_performance and p.dtype == torch.float16 and qn * kn > FP16_MAX:
        peak = _max_abs_score(p, query, key)
        if peak > FP16_MAX:
            raise ValueError(f"inner_precise selects the high-performance mode (bit 0 set), which rounds the unscaled "
                             f"scores q.k to float16, but the largest |q.k| is {peak:.6g} > {FP16_MAX:g} (float16's "
                             "largest value); use inner_precise=0 or 2 (scores in float32)")
    if p.scale == 0.0:
        return
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


_GRAD_ONLY = ("dy", "softmax_max", "softmax_sum", "attention_in", "attention_in_residual", "deterministic",
              "partial_keys")


def validate_grad(a: dict, check_values: bool = True, drop_mask_device: str = "") -> FAProblem:
    """The forward's rules on the shared arguments (`a`: every argument by name) and the grad's own (the saved
    tensors must have the forward's output and statistics shapes and dtypes)."""
    fwd = {n: v for n, v in a.items() if n not in _GRAD_ONLY}
    for flag in ("deterministic", "partial_keys"):
        if not isinstance(a[flag], bool):
            raise TypeError(f"{flag} must be a bool, got {type(a[flag]).__name__}")
    saved = {n: a[n] for n in ("dy", "attention_in", "softmax_max", "softmax_sum", "attention_in_residual")}
    return validate_flash_attention(**fwd, check_values=check_values, grad=saved, drop_mask_device=drop_mask_device,
                                    partial_keys=a["partial_keys"])


def in_place_device(device: torch.device) -> str:
    """The device name when it reads a user dropout mask in place only (the NPU path), else "" (the CPU twin
    repacks it)."""
    return "" if device.type == "cpu" else str(device)


def check_finite(op: str, **tensors) -> None:
    for name, t in tensors.items():
        bad = ~torch.isfinite(t)
        if bool(bad.any()):
            idx = tuple(int(i) for i in bad.nonzero()[0])
            raise ValueError(f"{name} contains NaN or Inf (first at index {idx}); {op} requires "
                             f"finite {', '.join(tensors)}")
