"""Baselines under the same cycle model as the op: a multi-core GEMM (tools/kernels/gemm.cpp) and the naive, unfused
attention an eager framework runs (S = Q K^T to GM, a 3-pass row softmax kernel, O = P V), and for decode over a
paged cache the same after two page gathers (tools/kernels/gather_pages.cpp), each launch on the CPU twin and
modelled; the naive time is the sum of the launches, each with its launch overhead, as profiler._combine adds the
backward's. Numbers are "modeled (<chip>)"."""
from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Optional

import numpy as np

from .. import twin, twin_backend
from . import profiler

KERNELS = Path(__file__).resolve().parent / "kernels"  # package data
GEMM_MAX_ROW = 65535  # elements in a stored row of A or B: gemm.cpp's Nd2Nz srcDValue is 16-bit


@functools.lru_cache(maxsize=None)
def _lib(name: str) -> "twin.KernelLibrary":
    return twin.compile_kernel(KERNELS / name)


def sampled(num_blocks: int, k: int) -> list[int]:
    """k evenly spaced blocks of num_blocks, the first and the last included (all when k is 0 or >= num_blocks), as
    the op bindings sample them."""
    if k <= 0 or k >= num_blocks:
        return []
    return [0] if k == 1 else [i * (num_blocks - 1) // (k - 1) for i in range(k)]


def _launch(lib, kernel: str, blocks: int, *bufs, kernel_type: str, chip: str, model: bool, model_only: bool,
            sample_blocks: int, flops: float, overrides: Optional[dict], bins: int, ranges=False) -> Optional[dict]:
    """One launch; with model=True its modelled summary (profiler._summarize), the sampled blocks standing for all;
    ranges as profiler.profile's (the error bars)."""
    sample = sampled(blocks, sample_blocks) if model_only else []
    lib.launch(kernel, blocks, *bufs, kernel_type=kernel_type, chip=chip, trace=model, model_only=model_only,
               sample_blocks=sample)
    if not model:
        return None
    scale = blocks / len(sample) if sample else 1.0
    cm = twin_backend.ext().cost_model_trace(lib.trace_refs(), chip, overrides or {}, 1, bins, scale, ranges)
    return profiler._summarize(cm, chip, flops)


def gemm(a: np.ndarray, b: np.ndarray, *, a_trans: bool = False, b_trans: bool = False, out_dtype=np.float32,
         chip: str = "Ascend910B2", blocks: Optional[int] = None, model: bool = False, model_only: bool = False,
         sample_blocks: int = 0, overrides: Optional[dict] = None, bins: int = 0, ranges=False):
    """C = op(A) op(B) for fp16 A [batch, M, K] (a_trans: [batch, K, M]; or 2-D) and B [batch, K, N] (b_trans:
    [batch, N, K]), fp32 accumulation, fp32 or fp16 C (op: transposed when *_trans). Runs gemm.cpp over `blocks` AI
    cores (default: all of the chip's). Returns C, or (C, modelled summary) with model=True. model_only: the trace
    without the arithmetic (C undefined); sample_blocks=k (model-only): k evenly spaced cores stand for all; ranges
    (model=True): the error bars, as profiler.profile's."""
    a3, b3 = (x if x.ndim == 3 else x[None] for x in (a, b))
    for name, x in (("a", a3), ("b", b3)):
        if x.dtype != np.float16 or x.ndim != 3:
            raise ValueError(f"{name} must be a 2-D or 3-D float16 array, got {x.dtype} with shape {x.shape}")
    batch, M, K = (a3.shape[0], a3.shape[2], a3.shape[1]) if a_trans else a3.shape
    N = b3.shape[1] if b_trans else b3.shape[2]
    if b3.shape != ((batch, N, K) if b_trans else (batch, K, N)):
        raise ValueError(f"b has shape {b.shape}, which does not fit a {a.shape} "
                         f"(a_trans={a_trans}, b_trans={b_trans})")
    for name, x, trans in (("a", a3, a_trans), ("b", b3, b_trans)):
        if x.shape[2] > GEMM_MAX_ROW:
            raise ValueError(f"{name} is stored with rows of {x.shape[2]} elements ({name}_trans={trans}); gemm.cpp "
                             f"loads rows of at most {GEMM_MAX_ROW} (Nd2Nz srcDValue)")
    out_dtype = np.dtype(out_dtype)
    if out_dtype not in (np.float16, np.float32):
        raise ValueError(f"out_dtype must be float16 or float32, got {out_dtype}")
    c = np.zeros((batch, M, N), out_dtype)
    prm = np.array([M, N, K, batch, int(b_trans), int(out_dtype == np.float16), int(a_trans)], np.int32)
    blocks = blocks or profiler._chip_row(chip)["aic_num"]
    rep = _launch(_lib("gemm.cpp"), "gemm", blocks, np.ascontiguousarray(a3), np.ascontiguousarray(b3), c, prm,
                  kernel_type="aic", chip=chip, model=model, model_only=model_only, sample_blocks=sample_blocks,
                  flops=2.0 * batch * M * N * K, overrides=overrides, bins=bins, ranges=ranges)
    c = c if a.ndim == 3 else c[0]
    return (c, rep) if model else c


def causal_fraction(s1: int, s2: int) -> float:
    """Visible fraction of the S1 x S2 score matrix under right-down causal masking."""
    return sum(min(s2, max(0, s2 - s1 + i + 1)) for i in range(s1)) / (s1 * s2)


def naive_peak_bytes(b: int, n: int, s1: int, s2: int, d: int, backward: bool = False, elem: int = 2) -> int:
    """Peak device memory of the naive path (fp16): forward Q, K, V, O plus S and P (both held while the softmax runs;
    S is dropped before P V). Backward (P kept from the forward): Q, K, V, O, dO, P, dP, dS and dV, all held while the
    softmax gradient runs (dP is dropped before dQ and dK)."""
    qo, kv, ss = b * n * s1 * d, b * n * s2 * d, b * n * s1 * s2
    if backward:
        return elem * (3 * qo + 3 * kv + 3 * ss)
    return elem * (2 * qo + 2 * kv + 2 * ss)


def _check(q, k, v, causal):
    B, N, S1, D = q.shape
    S2 = k.shape[2]
    if k.shape != (B, N, S2, D) or v.shape != (B, N, S2, D):
        raise ValueError(f"k and v must be [B, N, S2, D] = [{B}, {N}, S2, {D}], got {k.shape} and {v.shape}")
    if S2 % 16:
        raise ValueError(f"S2 must be a multiple of 16 (32 B DataCopy rows of fp16 scores), got {S2}")
    if causal and S1 > S2:
        raise ValueError(f"causal needs S1 <= S2 (every row sees a key), got S1={S1}, S2={S2}")
    return B, N, S1, S2, D


def _rows(kernel: str, rows: int, s1: int, s2: int, causal: bool, scale: float, *bufs, kw: dict):
    """One launch of a row kernel of naive_attention_softmax.cpp over every vector core."""
    prm = np.zeros(5, np.int32)
    prm[:4] = [rows, s1, s2, int(causal)]
    prm[4:5] = np.array([scale], np.float32).view(np.int32)
    return _launch(_lib("naive_attention_softmax.cpp"), kernel, profiler._chip_row(kw["chip"])["aiv_num"], prm, *bufs,
                   kernel_type="aiv", flops=0.0, bins=0, **kw)


def _gemm_step(reports: list, *args, kw: dict, **kwargs) -> np.ndarray:
    """gemm(...) with fp16 output; its summary (model=True) is appended to `reports`."""
    c = gemm(*args, out_dtype=np.float16, **kwargs, **kw)
    if kw["model"]:
        c, rep = c
        reports.append(rep)
    return c


def _probs(qs, ks, s1, s2, causal, scale, kw, reports):
    """P = softmax(scale Q K^T [+ mask]) as the two launches gemm and naive_softmax; qs rows are s1 query positions
    each (repeated when query heads are packed as rows), which the causal mask reads."""
    s = _gemm_step(reports, qs, ks, b_trans=True, kw=kw)
    p = np.zeros(s.shape, s.dtype)  # calloc: pages a model-only launch never writes stay unmapped
    r = _rows("naive_softmax", s.shape[0] * s.shape[1], s1, s2, causal, scale, s, p, kw=kw)
    if kw["model"]:
        reports.append(r)
    return p


def _report(parts: list, names: list, chip: str, flops: float, peak: int) -> dict:
    keys = sorted(set().union(*(r["pipe_busy"] for r in parts)))  # AIC-only and AIV-only launches: 0 for the other
    for r in parts:
        r["pipe_busy"] = {k: r["pipe_busy"].get(k, 0.0) for k in keys}
    rep = profiler._combine(parts, chip, flops)
    rep.update(launch_names=names, peak_bytes=peak)
    return rep


def naive_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, scale: Optional[float] = None,
                    causal: bool = False, chip: str = "Ascend910B2", model: bool = False, model_only: bool = False,
                    sample_blocks: int = 0, overrides: Optional[dict] = None, ranges=False):
    """softmax(scale Q K^T [+ causal mask]) V for fp16 BNSD q [B, N, S1, D], k, v [B, N, S2, D] as three launches:
    gemm (S = Q K^T, fp16), naive_softmax (P, fp16), gemm (O = P V, fp16). Returns O, or (O, report) with
    model=True: the launches combined (times and bounds add; TFLOPS over the op's own FLOP count 4*B*N*S1*S2*D, times
    the visible fraction for causal, so the figure compares with profiler.profile's), `launches` each one's summary,
    `peak_bytes` (naive_peak_bytes). ranges: the error bars of each launch, added up (profiler.profile's)."""
    B, N, S1, S2, D = _check(q, k, v, causal)
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    kw = dict(chip=chip, model=model, model_only=model_only, sample_blocks=sample_blocks, overrides=overrides,
              ranges=ranges)
    qs, ks, vs = (np.ascontiguousarray(x.reshape(B * N, -1, D)) for x in (q, k, v))
    parts: list = []
    p = _probs(qs, ks, S1, S2, causal, scale, kw, parts)
    o = _gemm_step(parts, p, vs, kw=kw).reshape(B, N, S1, D)
    if not model:
        return o
    flops = 4.0 * B * N * S1 * S2 * D * (causal_fraction(S1, S2) if causal else 1.0)
    return o, _report(parts, ["gemm Q K^T", "softmax", "gemm P V"], chip, flops, naive_peak_bytes(B, N, S1, S2, D))


def naive_attention_backward(q: np.ndarray, k: np.ndarray, v: np.ndarray, do: np.ndarray, *,
                             scale: Optional[float] = None, causal: bool = False, chip: str = "Ascend910B2",
                             model: bool = False, model_only: bool = False, sample_blocks: int = 0,
                             overrides: Optional[dict] = None, ranges=False):
    """Gradients (dQ, dK, dV) of naive_attention for the output gradient do [B, N, S1, D], as an eager autograd runs
    them with P kept from the forward (recomputed here by the forward's first two launches, not modelled): dV = P^T dO,
    dP = dO V^T, dS = scale P (dP - rowsum(P dP)) (naive_softmax_grad), dQ = dS K, dK = dS^T Q; fp16 throughout. With
    model=True also the report of those five launches (FLOPs 2.5x the forward's, as profiler.profile counts; ranges as
    naive_attention's)."""
    B, N, S1, S2, D = _check(q, k, v, causal)
    if do.shape != q.shape:
        raise ValueError(f"do must have the query's shape {q.shape}, got {do.shape}")
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    kw = dict(chip=chip, model=model, model_only=model_only, sample_blocks=sample_blocks, overrides=overrides,
              ranges=ranges)
    qs, ks, vs, dos = (np.ascontiguousarray(x.reshape(B * N, -1, D)) for x in (q, k, v, do))
    p = _probs(qs, ks, S1, S2, causal, scale, dict(kw, model=False), [])
    parts: list = []
    dv = _gemm_step(parts, p, dos, a_trans=True, kw=kw)
    dp = _gemm_step(parts, dos, vs, b_trans=True, kw=kw)
    ds = np.zeros(dp.shape, dp.dtype)
    r = _rows("naive_softmax_grad", B * N * S1, S1, S2, causal, scale, p, dp, ds, kw=kw)
    if model:
        parts.insert(2, r)
    del dp
    dq = _gemm_step(parts, ds, ks, kw=kw)
    dk = _gemm_step(parts, ds, qs, a_trans=True, kw=kw)
    grads = tuple(x.reshape(B, N, -1, D) for x in (dq, dk, dv))
    if not model:
        return grads
    flops = 2.5 * 4.0 * B * N * S1 * S2 * D * (causal_fraction(S1, S2) if causal else 1.0)
    names = ["gemm dV = P^T dO", "gemm dP = dO V^T", "softmax grad", "gemm dQ = dS K", "gemm dK = dS^T Q"]
    return grads, _report(parts, names, chip, flops, naive_peak_bytes(B, N, S1, S2, D, backward=True))


def _gather(cache: np.ndarray, table: np.ndarray, kw: dict, reports: list) -> np.ndarray:
    """cache[table] for a paged cache (blocks, N2, block, D) and table [B, pages]: [B * N2, pages * block, D], one
    launch of gather_pages.cpp over every vector core."""
    blocks, n2, block, d = cache.shape
    b, pages = table.shape
    out = np.zeros((b * n2, pages * block, d), cache.dtype)
    prm = np.array([b, n2, pages, block * d, blocks], np.int32)
    r = _launch(_lib("gather_pages.cpp"), "gather_pages", profiler._chip_row(kw["chip"])["aiv_num"], prm, cache,
                np.ascontiguousarray(table, np.int32), out, kernel_type="aiv", flops=0.0, bins=0, **kw)
    if kw["model"]:
        reports.append(r)
    return out


def naive_decode(q: np.ndarray, k_cache: np.ndarray, v_cache: np.ndarray, block_table: np.ndarray, *,
                 scale: Optional[float] = None, chip: str = "Ascend910B2", model: bool = False,
                 model_only: bool = False, sample_blocks: int = 0, overrides: Optional[dict] = None, ranges=False):
    """Attention of fp16 BNSD q [B, N1, S1, D] over a paged cache k_cache, v_cache (blocks, N2, block, D) with
    block_table [B, pages] (every batch attends to all pages * block keys; causal bottom-right when S1 > 1) the way an
    eager framework runs it: two page gathers (K, V made contiguous), then naive_attention's three launches with the
    G = N1 / N2 query heads of a KV head packed as rows of one matrix (K and V are not repeated per query head).
    Returns O, or (O, report) with model=True, as naive_attention's (FLOPs 4*B*N1*S1*S2*D times the causal fraction;
    peak_bytes: q, the gathered K and V, S, P and O, the cache not counted)."""
    B, N1, S1, D = q.shape
    _, N2, block, _ = k_cache.shape
    if v_cache.shape != k_cache.shape or k_cache.shape[3] != D or N1 % N2:
        raise ValueError(f"k_cache and v_cache must be (blocks, N2, block, {D}) with N2 dividing N1 = {N1}, got "
                         f"{k_cache.shape} and {v_cache.shape}")
    if block_table.ndim != 2 or block_table.shape[0] != B:
        raise ValueError(f"block_table must be [B, pages] = [{B}, pages], got {block_table.shape}")
    G, S2 = N1 // N2, block_table.shape[1] * block
    if S2 % 16 or S1 > S2:
        raise ValueError(f"the keys (pages * block = {S2}) must be a multiple of 16 and at least S1 = {S1}")
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    kw = dict(chip=chip, model=model, model_only=model_only, sample_blocks=sample_blocks, overrides=overrides,
              ranges=ranges)
    parts: list = []
    ks = _gather(k_cache, block_table, kw, parts)
    vs = _gather(v_cache, block_table, kw, parts)
    qs = np.ascontiguousarray(q.reshape(B * N2, G * S1, D))  # heads n2 * G + g: the rows g * S1 + s of KV head n2
    p = _probs(qs, ks, S1, S2, S1 > 1, scale, kw, parts)
    o = _gemm_step(parts, p, vs, kw=kw).reshape(B, N1, S1, D)
    if not model:
        return o
    flops = 4.0 * B * N1 * S1 * S2 * D * (causal_fraction(S1, S2) if S1 > 1 else 1.0)
    peak = 2 * (2 * B * N1 * S1 * D + 2 * B * N2 * S2 * D + 2 * B * N1 * S1 * S2)
    return o, _report(parts, ["gather K pages", "gather V pages", "gemm Q K^T", "softmax", "gemm P V"], chip, flops,
                      peak)
