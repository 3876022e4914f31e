"""Independent float64 reference of `torch.ops.npu.flash_attention` (forward); the test criterion is in `criterion`.

`flash_attention_reference(query, key, value, head_num, input_layout, *, scale, sparse_mode, pre_tokens,
next_tokens, actual_seq_qlen, actual_seq_kvlen, atten_mask, prefix, sink, softcap)` returns float64 `(out, softmax_max,
softmax_sum)` in exactly the op's layouts and shapes:

* scores s[i, j] = scale * q_i . k_j (float64), query head n uses key/value head n // (N1 / N2) (GQA/MQA); with
  `softcap`, s = softcap * tanh(s / softcap) (before masking); with pse_type 2/3 and ALiBi slopes `pse` ([N1] or
  [B, N1]), s += -slope * |(j + kv_start_idx[0]) - (i + q_start_idx[0])| (type 3: its square root), after the cap;
  an outer `pse` [B or 1, N1, S1 or 1, S2] is added after the cap as it is (pse_type 0) or times scale (pse_type 1);
  `sink` [N1] logits join every row's softmax;
* visible keys per sparse_mode (per sequence for TND; i, j positions inside the sequence, d = S2 - S1 of that
  sequence, m = atten_mask, nonzero / True = masked out); docs/masks.md is the user-facing table:
  0 without a mask: all; with a mask: m == 0 and i - pre_tokens <= j <= i + next_tokens (top-left origin);
  1 m == 0 (all without a mask); 2 j <= i (left-up causal); 3 j <= i + d (right-down causal);
  4 i + d - pre_tokens <= j <= i + d + next_tokens (band, bottom-right origin);
  5 m == 0 and (j <= i + d or j < prefix[b]); 6 j <= i + d or j < prefix[b];
  7 (TND) mode 3, but the band of mode 4 for the last sequence with Sq > 0; 8 (TND) mode 2, but the band of mode 4
  for the first sequence with Sq > 0 (`band_sequence_index`). Modes 2, 3, 4, 6, 7, 8 never read atten_mask (the
  built-in's compressed masks carry no information beyond the mode) and also apply without one (mode 5 without
  a mask is mode 6);
* atten_mask (bool or uint8): non-TND any shape broadcastable to [B, N1, S1, S2] (torch rules; never expanded: it
  is sliced per batch and head chunk); TND a 2-D [R, C] mask, R >= max Sq, C >= max Skv, read at [i, j] of each
  sequence (the built-in's [maxSq, maxSkv] convention);
* softmax_max = max_j s over visible j, softmax_sum = sum_j exp(s - max) over visible j, out = sum_j exp(s - max) v_j / sum;
  softmax_max / softmax_sum are `[B, N1, S1, 8]` (TND `[T1, N1, 8]` in the batch-major physical order: row (b, n, s)
  at flat offset (cu_q[b-1]*N1 + n*Sq_b + s)*8), each value repeated 8 times;
* **invalid rows** (a query row with no visible key: right-down causal with S1 > S2, bands with negative pre/next,
  fully masked rows, zero-length key sequences, TND padding tokens after the last sequence) give out = 0,
  softmax_max = -FLT_MAX (-3.4028234663852886e38) and softmax_sum = +FLT_MAX. This is the built-in's
  inner_precise=2 convention: the row's LSE = max + ln(sum) is about -FLT_MAX, so it has zero weight when partial
  results are merged, and a backward that recomputes P = exp(s - max) / sum gets 0 for it (autograd through the
  float64 path gives such rows zero gradient);
* TND lists are cumulative; trailing zeros after a positive value disable the remaining batches, a batch disabled
  in either list is disabled, and its (and any padding) query tokens are invalid rows.

`flash_attention_lowprec(...)` computes the same attention the way a plain torch program does in the input dtype
(fp16/bf16): every op accumulates in fp32 and rounds its result to the input dtype (scores = q @ k^T, scaled
scores, softmax probabilities, probabilities @ v): the baseline of the FlashAttention criterion (`criterion`).
"""
from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

import torch

from . import dropout
from .layouts import from_bnsd, to_bnsd

__all__ = ["flash_attention_reference", "flash_attention_lowprec", "fused_infer_reference", "fused_infer_lowprec", "dequantize_kv_cache", "visible_mask", "enabled_sequences", "band_sequence_index", "FLT_MAX"]

FLT_MAX = 3.4028234663852886e38
_INT32_MAX = 2147483647
_CHUNK_ELEMS = 1 << 24  # score elements per head chunk (bounds memory of the float64 path)
_MASKED_MODES = (0, 1, 5)  # the modes whose atten_mask is a dense, per-element mask


def _mask_bool(mask: torch.Tensor) -> torch.Tensor:
    """bool view of a bool / uint8 mask (nonzero = masked out)."""
    if mask.dtype == torch.bool:
        return mask
    if mask.dtype == torch.uint8:
        return mask != 0
    raise TypeError(f"reference: atten_mask dtype {mask.dtype} is not bool or uint8")


def visible_mask(sq: int, skv: int, sparse_mode: int, pre_tokens: int = _INT32_MAX,
                 next_tokens: int = _INT32_MAX, *, atten_mask: Optional[torch.Tensor] = None,
                 prefix: Optional[int] = None, band: bool = False) -> torch.Tensor:
    """Bool [..., sq, skv]: True where query row i may attend key j, for one sequence (d = skv - sq).

    atten_mask: this sequence's dense mask (True / nonzero = masked out), broadcastable against [sq, skv] (e.g. a
    [N, sq, skv] or [1, 1, skv] slice; the result takes the broadcast shape); read by modes 0, 1 and 5 only.
    prefix: this sequence's prefix N (modes 5 and 6). band: modes 7 / 8, this is the band sequence
    (`band_sequence_index`); the others are right-down (7) / left-up (8) causal."""
    i = torch.arange(sq, dtype=torch.int64).unsqueeze(1)
    j = torch.arange(skv, dtype=torch.int64).unsqueeze(0)
    d = skv - sq
    if sparse_mode == 0:
        if atten_mask is None:
            return torch.ones(sq, skv, dtype=torch.bool)
        vis = (j >= i - pre_tokens) & (j <= i + next_tokens)
    elif sparse_mode == 1:
        vis = torch.ones(sq, skv, dtype=torch.bool)
    elif sparse_mode == 2 or (sparse_mode == 8 and not band):
        vis = j <= i
    elif sparse_mode == 3 or (sparse_mode == 7 and not band):
        vis = j <= i + d
    elif sparse_mode in (4, 7, 8):
        vis = (j >= i + d - pre_tokens) & (j <= i + d + next_tokens)
    elif sparse_mode in (5, 6):
        if prefix is None:
            raise ValueError(f"reference: sparse_mode={sparse_mode} needs prefix")
        vis = (j <= i + d) | (j < int(prefix))
    else:
        raise ValueError(f"reference: sparse_mode={sparse_mode} is not modelled (0-8 only)")
    if atten_mask is not None and sparse_mode in _MASKED_MODES:
        vis = vis & ~_mask_bool(atten_mask)
    return vis


def enabled_sequences(actual_seq_qlen: Sequence[int], actual_seq_kvlen: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """[(q_start, q_end, kv_start, kv_end)] of the enabled TND sequences (trailing zeros disable batches)."""
    def n_enabled(cu):
        cu = [int(c) for c in cu]
        positive = [idx for idx, c in enumerate(cu) if c > 0]
        return len(cu) if not positive else positive[-1] + 1
    assert len(actual_seq_qlen) == len(actual_seq_kvlen), "reference: the two lists must have equal length"
    nb = min(n_enabled(actual_seq_qlen), n_enabled(actual_seq_kvlen))
    out, q0, k0 = [], 0, 0
    for b in range(nb):
        q1, k1 = int(actual_seq_qlen[b]), int(actual_seq_kvlen[b])
        assert q1 >= q0 and k1 >= k0, "reference: lists must be cumulative"
        out.append((q0, q1, k0, k1))
        q0, k0 = q1, k1
    return out


def band_sequence_index(actual_seq_qlen: Sequence[int], sparse_mode: int) -> Optional[int]:
    """Batch index of the band sequence of sparse_mode 7 (the last) / 8 (the first) sequence with Sq > 0.

    Sq_b = max(cu[b] - cu[b-1], 0), as the built-in's tiling reads the list: only the query length decides, so a
    sequence with Sq > 0 and Skv = 0 still takes the role (its rows are invalid). None for other modes or when every
    Sq is 0."""
    if sparse_mode not in (7, 8):
        return None
    cu = [int(c) for c in actual_seq_qlen]
    lens = [max(c - p, 0) for p, c in zip([0] + cu[:-1], cu)]
    nonempty = [b for b, n in enumerate(lens) if n > 0]
    if not nonempty:
        return None
    return nonempty[-1] if sparse_mode == 7 else nonempty[0]


def _head_counts(query, key, value, head_num: int, layout: str) -> tuple[int, int]:
    """(N2, D) for the layout (no validation beyond what the arithmetic needs)."""
    if layout in ("BSH", "SBH"):
        d = query.shape[-1] // head_num
        return key.shape[-1] // d, d
    if layout == "BNSD":
        return key.shape[1], query.shape[-1]
    if layout in ("BSND",):
        return key.shape[2], query.shape[-1]
    return key.shape[1], query.shape[-1]  # TND


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, vis_of: Callable[[int, int], torch.Tensor],
            scale: float, lowprec: Optional[torch.dtype], sink: Optional[torch.Tensor] = None,
            softcap: Optional[float] = None, bias_of: Optional[Callable[[int, int], torch.Tensor]] = None,
            keep: Optional[torch.Tensor] = None, keep_prob: float = 1.0):
    """One sequence: q [N1,Sq,D], k [N2,Skv,D], v [N2,Skv,Dv]; vis_of(h0, h1) is the visibility of query heads
    h0:h1, bool [Sq,Skv] or [h1-h0 or 1, Sq, Skv]. sink: [N1] logits that join every row's softmax (no value).
    softcap: the scaled scores x become softcap * tanh(x / softcap) before masking. bias_of(h0, h1): float64
    [h1-h0, Sq, Skv] added after the cap (ALiBi). keep: dropout's bool [N1, Sq, Skv] keep mask, the kept
    probabilities scaled by 1 / keep_prob (the statistics are of the softmax before dropout).

    Returns out [N1,Sq,Dv] and (float64 path only) max/sum [N1,Sq]."""
    n1, sq, _ = q.shape
    n2, skv, dv = v.shape
    group = n1 // n2
    if lowprec is None:
        out = torch.zeros(n1, sq, dv, dtype=torch.float64)
        mx = torch.full((n1, sq), -FLT_MAX, dtype=torch.float64)
        sm = torch.full((n1, sq), FLT_MAX, dtype=torch.float64)
    else:
        out = torch.zeros(n1, sq, dv, dtype=lowprec)
        mx = sm = None
    if sink is not None and lowprec is None:  # rows that see no key: the sink is their softmax's only term
        mx = sink.double().unsqueeze(1).expand(n1, sq).clone()
        sm = torch.ones(n1, sq, dtype=torch.float64)
    if sq == 0 or skv == 0:
        return out, mx, sm
    chunk = max(1, _CHUNK_ELEMS // max(1, sq * skv))
    for h0 in range(0, n1, chunk):
        h1 = min(n1, h0 + chunk)
        vis = vis_of(h0, h1)
        if vis.dim() == 2:
            vis = vis.unsqueeze(0)
        valid = vis.any(dim=2)  # [h or 1, Sq]
        if not bool(valid.any()):
            continue  # every row sees no key: out 0, statistics as initialised
        kv_idx = torch.arange(h0, h1) // group
        qh, kh, vh = q[h0:h1], k[kv_idx], v[kv_idx]
        if lowprec is None:
            s = scale * torch.matmul(qh.double(), kh.double().transpose(1, 2))
            if softcap is not None:
                s = softcap * torch.tanh(s / softcap)
            if bias_of is not None:
                s = s + bias_of(h0, h1)
            s = s.masked_fill(~vis, -math.inf)
            m = s.amax(dim=2)  # -inf on invalid rows
            if sink is not None:  # the sink is a term of every row: no row is invalid
                z = sink[h0:h1].double().view(-1, 1)
                m = torch.maximum(m, z)
                valid = torch.ones(m.shape, dtype=torch.bool)
            m_safe = torch.where(valid, m, torch.zeros_like(m))
            e = torch.where(vis, torch.exp(s - m_safe.unsqueeze(2)), torch.zeros((), dtype=torch.float64))
            l = e.sum(dim=2) if sink is None else e.sum(dim=2) + torch.exp(z - m_safe)
            l_safe = torch.where(valid, l, torch.ones_like(l))
            if keep is not None:
                e = torch.where(keep[h0:h1], e / keep_prob, torch.zeros((), dtype=torch.float64))
            o = torch.matmul(e, vh.double()) / l_safe.unsqueeze(2)
            out[h0:h1] = torch.where(valid.unsqueeze(2), o, torch.zeros((), dtype=torch.float64))
            mx[h0:h1] = torch.where(valid, m, torch.full_like(m, -FLT_MAX))
            sm[h0:h1] = torch.where(valid, l, torch.full_like(l, FLT_MAX))
        else:
            dt = lowprec
            s = torch.matmul(qh.float(), kh.float().transpose(1, 2)).to(dt)
            s = (s.float() * scale).to(dt)
            if softcap is not None:
                s = torch.tanh(s / softcap) * softcap
            if bias_of is not None:
                s = (s.float() + bias_of(h0, h1).float()).to(dt)
            s = s.float().masked_fill(~vis, -math.inf)
            if sink is not None:  # softmax over the keys and the sink column, which is then dropped
                z = sink[h0:h1].float().view(-1, 1, 1).expand(s.shape[0], sq, 1)
                p = torch.softmax(torch.cat([s, z], dim=2), dim=2)[..., :skv]
            else:
                p = torch.softmax(s, dim=2)
            p = torch.where(valid.unsqueeze(2), p, torch.zeros((), dtype=p.dtype)).to(dt)
            if keep is not None:
                p = torch.where(keep[h0:h1], (p.float() / keep_prob).to(dt), torch.zeros((), dtype=dt))
            o = torch.matmul(p.float(), vh.float()).to(dt)
            out[h0:h1] = o
    return out, mx, sm


def _dense_mask(atten_mask: Optional[torch.Tensor], sparse_mode: int, shape: tuple) -> Optional[torch.Tensor]:
    """The non-TND mask as a 4-D bool view broadcastable to `shape` = (B, N1, S1, S2), or None if the mode
    does not read it."""
    if atten_mask is None or sparse_mode not in _MASKED_MODES:
        return None
    m = _mask_bool(atten_mask)
    try:
        ok = m.dim() <= 4 and tuple(torch.broadcast_shapes(m.shape, shape)) == tuple(shape)
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(f"reference: atten_mask shape {tuple(m.shape)} does not broadcast to [B, N1, S1, S2] = "
                         f"{list(shape)}")
    return m.reshape((1,) * (4 - m.dim()) + tuple(m.shape))


def _tnd_mask(atten_mask: Optional[torch.Tensor], sparse_mode: int, seqs):
    """(the TND [R, C] mask as bool, whether it is the global form), or (None, False) if the mode does not read it.
    The global form [sum Sq, sum Skv] (more than one sequence) is read at global token positions, else [i, j]."""
    if atten_mask is None or sparse_mode not in _MASKED_MODES:
        return None, False
    m = _mask_bool(atten_mask)
    max_sq = max((q1 - q0 for q0, q1, _, _ in seqs), default=0)
    max_skv = max((k1 - k0 for _, _, k0, k1 in seqs), default=0)
    if len(seqs) > 1 and tuple(m.shape) == (seqs[-1][1], seqs[-1][3]):
        return m, True
    if m.dim() != 2 or m.shape[0] < max_sq or m.shape[1] < max_skv:
        raise ValueError(f"reference: TND atten_mask must be 2-D [R, C] with R >= max Sq = {max_sq} and "
                         f"C >= max Skv = {max_skv}, got {tuple(m.shape)}")
    return m, False


def _bias(pse_spec, b: int, sq: int, skv: int):
    """bias_of for _attend (float64 [h1-h0, Sq or 1, Skv] for query heads h0:h1 of sequence b), or None.

    pse_spec ("alibi", slopes [N1] or [B, N1], pse_type 2 or 3, q_start, kv_start): -slope * |(j + kv_start) -
    (i + q_start)| (type 3: its square root), positions inside the sequence; ("outer", pse [B or 1, N1, S1 or 1, S2],
    factor): factor * pse[b] (its first Sq rows and Skv columns when larger: the inference op's pse_shift)."""
    if pse_spec is None:
        return None
    if pse_spec[0] == "outer":
        _, pse, factor = pse_spec
        pb = pse[b if pse.shape[0] > 1 else 0].double()

        def outer_of(h0, h1):
            return factor * pb[h0:h1, :sq, :skv]
        return outer_of
    _, slopes, pse_type, q_start, kv_start = pse_spec
    sl = (slopes[b] if slopes.dim() == 2 else slopes).double()
    i = torch.arange(sq, dtype=torch.float64).view(-1, 1) + q_start
    j = torch.arange(skv, dtype=torch.float64).view(1, -1) + kv_start
    dist = (j - i).abs()
    if pse_type == 3:
        dist = dist.sqrt()

    def alibi_of(h0, h1):
        return -sl[h0:h1].view(-1, 1, 1) * dist
    return alibi_of


def _prefix_of(prefix, sparse_mode: int, b: int) -> Optional[int]:
    """prefix[b] for the prefix modes (5, 6), else None (prefix is not read)."""
    return int(prefix[b]) if prefix is not None and sparse_mode in (5, 6) else None


def _run(query, key, value, head_num, input_layout, scale, sparse_mode, pre_tokens, next_tokens,
         actual_seq_qlen, actual_seq_kvlen, atten_mask, prefix, lowprec: Optional[torch.dtype], sink=None,
         softcap=None, pse_spec=None, drop_spec=None):
    keep_of, keep_prob = drop_spec if drop_spec is not None else (lambda b, sq, skv: None, 1.0)
    layout = input_layout.upper()
    n1 = int(head_num)
    n2, _ = _head_counts(query, key, value, n1, layout)
    out_dtype = torch.float64 if lowprec is None else lowprec
    if layout == "TND":
        t1 = query.shape[0]
        dv = value.shape[2]
        out = torch.zeros(t1, n1, dv, dtype=out_dtype)
        smax = torch.full((t1 * n1 * 8,), -FLT_MAX, dtype=torch.float64)
        ssum = torch.full((t1 * n1 * 8,), FLT_MAX, dtype=torch.float64)
        seqs = enabled_sequences(actual_seq_qlen, actual_seq_kvlen)
        mask, global_form = _tnd_mask(atten_mask, sparse_mode, seqs)
        band_b = band_sequence_index(actual_seq_qlen, sparse_mode)
        for b, (q0, q1, k0, k1) in enumerate(seqs):
            sq, skv = q1 - q0, k1 - k0
            if sq == 0:
                continue
            vis = visible_mask(sq, skv, sparse_mode, pre_tokens, next_tokens,
                               atten_mask=None if mask is None else
                               (mask[q0:q1, k0:k1] if global_form else mask[:sq, :skv]),
                               prefix=_prefix_of(prefix, sparse_mode, b), band=b == band_b)
            o, m, l = _attend(query[q0:q1].transpose(0, 1), key[k0:k1].transpose(0, 1),
                              value[k0:k1].transpose(0, 1), lambda h0, h1, vis=vis: vis, scale, lowprec, sink,
                              softcap, _bias(pse_spec, b, sq, skv), keep_of(b, sq, skv), keep_prob)
            out[q0:q1] = o.transpose(0, 1)
            if lowprec is None:
                base = q0 * n1 * 8
                smax[base:base + n1 * sq * 8] = m.unsqueeze(2).expand(n1, sq, 8).reshape(-1)
                ssum[base:base + n1 * sq * 8] = l.unsqueeze(2).expand(n1, sq, 8).reshape(-1)
        return out, smax.view(t1, n1, 8), ssum.view(t1, n1, 8)
    if sparse_mode in (7, 8):
        raise ValueError(f"reference: sparse_mode={sparse_mode} is TND only")
    q = to_bnsd(query, layout, n1)
    k = to_bnsd(key, layout, n2)
    v = to_bnsd(value, layout, n2)
    b, _, s1, _ = q.shape
    s2 = k.shape[2]
    dv = v.shape[3]
    mask = _dense_mask(atten_mask, sparse_mode, (b, n1, s1, s2))
    out = torch.zeros(b, n1, s1, dv, dtype=out_dtype)
    smax = torch.empty(b, n1, s1, dtype=torch.float64)
    ssum = torch.empty(b, n1, s1, dtype=torch.float64)
    for bi in range(b):
        mb = None if mask is None else mask[bi if mask.shape[0] > 1 else 0]  # [N1 or 1, S1 or 1, S2 or 1]

        def vis_of(h0, h1, mb=mb, pfx=_prefix_of(prefix, sparse_mode, bi)):
            mh = None if mb is None else (mb[h0:h1] if mb.shape[0] > 1 else mb)
            return visible_mask(s1, s2, sparse_mode, pre_tokens, next_tokens, atten_mask=mh, prefix=pfx)
        o, m, l = _attend(q[bi], k[bi], v[bi], vis_of, scale, lowprec, sink, softcap,
                          _bias(pse_spec, bi, s1, s2), keep_of(bi, s1, s2), keep_prob)
        out[bi] = o
        if lowprec is None:
            smax[bi], ssum[bi] = m, l
    out = from_bnsd(out, layout)
    return (out, smax.unsqueeze(3).expand(b, n1, s1, 8).contiguous(),
            ssum.unsqueeze(3).expand(b, n1, s1, 8).contiguous())


def _pse_spec(pse, pse_type, q_start_idx, kv_start_idx, scale):
    """What _bias models: in-kernel ALiBi (pse_type 2/3), an outer bias (0: as it is, 1: times scale), or None."""
    if int(pse_type) in (2, 3):
        return ("alibi", pse, int(pse_type), int(q_start_idx[0]) if q_start_idx else 0,
                int(kv_start_idx[0]) if kv_start_idx else 0)
    if pse is not None:
        return ("outer", pse, float(scale) if int(pse_type) == 1 else 1.0)
    return None


def _drop_spec(keep_prob, seed, offset, dropout_mask, n1: int, layout: str, query, key, actual_seq_qlen,
               actual_seq_kvlen):
    """(keep_of(b, sq, skv) -> bool [N1, Sq, Skv] keep mask, keep_prob) of dropout, or None without it: the user's
    mask, else the generator's bits (npu_flash_attn.dropout)."""
    if float(keep_prob) >= 1.0:
        return None
    n1 = int(n1)
    if dropout_mask is None:
        return (lambda b, sq, skv: dropout.keep_mask(int(seed), int(offset), float(keep_prob), n1, b, range(n1), sq,
                                                     skv), float(keep_prob))
    if layout.upper() == "TND":
        shapes = [(q1 - q0, k1 - k0) for q0, q1, k0, k1 in enabled_sequences(actual_seq_qlen, actual_seq_kvlen)]
    else:
        q = to_bnsd(query, layout.upper(), n1)
        k = to_bnsd(key, layout.upper(), _head_counts(query, key, key, n1, layout.upper())[0])
        shapes = [(q.shape[2], k.shape[2])] * q.shape[0]
    masks = dropout.unpack_mask(dropout_mask, n1, shapes)
    return (lambda b, sq, skv: masks[b]), float(keep_prob)


def flash_attention_reference(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, head_num: int,
                              input_layout: str, *, scale: float = 1.0, sparse_mode: int = 0,
                              pre_tokens: int = _INT32_MAX, next_tokens: int = _INT32_MAX,
                              actual_seq_qlen: Optional[Sequence[int]] = None,
                              actual_seq_kvlen: Optional[Sequence[int]] = None,
                              atten_mask: Optional[torch.Tensor] = None, prefix: Optional[Sequence[int]] = None,
                              sink: Optional[torch.Tensor] = None, softcap: Optional[float] = None,
                              pse: Optional[torch.Tensor] = None, pse_type: int = 1,
                              q_start_idx: Optional[Sequence[int]] = None, kv_start_idx: Optional[Sequence[int]] = None,
                              keep_prob: float = 1.0, seed: int = 0, offset: int = 0,
                              dropout_mask: Optional[torch.Tensor] = None):
    """float64 (out, softmax_max, softmax_sum) in the op's layouts and shapes (see the module docstring).

    Differentiable with torch autograd for float64 inputs that require grad (the sink logits included). Inputs are
    not validated beyond what the arithmetic needs (mask dtype / shape, prefix present for modes 5 / 6); pass
    arguments the op accepts."""
    return _run(query, key, value, head_num, input_layout, float(scale), int(sparse_mode), int(pre_tokens),
                int(next_tokens), actual_seq_qlen, actual_seq_kvlen, atten_mask, prefix, None, sink, softcap,
                _pse_spec(pse, pse_type, q_start_idx, kv_start_idx, scale),
                _drop_spec(keep_prob, seed, offset, dropout_mask, head_num, input_layout, query, key,
                           actual_seq_qlen, actual_seq_kvlen))


def flash_attention_lowprec(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, head_num: int,
                            input_layout: str, *, scale: float = 1.0, sparse_mode: int = 0,
                            pre_tokens: int = _INT32_MAX, next_tokens: int = _INT32_MAX,
                            actual_seq_qlen: Optional[Sequence[int]] = None,
                            actual_seq_kvlen: Optional[Sequence[int]] = None,
                            atten_mask: Optional[torch.Tensor] = None,
                            prefix: Optional[Sequence[int]] = None,
                            sink: Optional[torch.Tensor] = None, softcap: Optional[float] = None,
                            pse: Optional[torch.Tensor] = None, pse_type: int = 1,
                            q_start_idx: Optional[Sequence[int]] = None,
                            kv_start_idx: Optional[Sequence[int]] = None, keep_prob: float = 1.0, seed: int = 0,
                            offset: int = 0, dropout_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Attention output computed like plain torch in the input dtype (fp32 accumulation, each op's result rounded
    to query.dtype): the baseline of the FlashAttention criterion. Invalid rows give 0."""
    dt = query.dtype
    if dt not in (torch.float16, torch.bfloat16):
        raise TypeError(f"flash_attention_lowprec: query dtype {dt} is not fp16/bf16")
    out, _, _ = _run(query, key, value, head_num, input_layout, float(scale), int(sparse_mode), int(pre_tokens),
                     int(next_tokens), actual_seq_qlen, actual_seq_kvlen, atten_mask, prefix, dt, sink, softcap,
                     _pse_spec(pse, pse_type, q_start_idx, kv_start_idx, scale),
                     _drop_spec(keep_prob, seed, offset, dropout_mask, head_num, input_layout, query, key,
                                actual_seq_qlen, actual_seq_kvlen))
    return out


def _infer_sequences(query, key, value, num_heads, input_layout, num_key_value_heads, actual_seq_lengths,
                     actual_seq_lengths_kv, block_table, block_size):
    """npu_fused_infer_attention_score's inputs as TND sequences: (q [T1, N1, D], k, v [T2, N2, D], cu_q, cu_kv,
    q positions [(b, first token, length)]). Keys are gathered from a paged cache block by block through the block
    table ((blocks, block_size, N2*D) or (blocks, N2, block_size, D)), else read from the layout's [B, S2, ...]."""
    n1 = num_heads
    n2 = num_key_value_heads or n1
    lay = input_layout
    if lay == "TND":
        cu = list(actual_seq_lengths)
        starts = [0] + cu[:-1]
        qs = [query[a:c] for a, c in zip(starts, cu)]
    else:
        q4 = {"BSH": lambda t: t.reshape(t.shape[0], t.shape[1], n1, -1), "BSND": lambda t: t}.get(
            lay, lambda t: t.transpose(1, 2))(query)  # [B, S1, N1, D]
        b, s1 = q4.shape[0], q4.shape[1]
        lens = [s1] * b if actual_seq_lengths is None or s1 == 1 else (
            [actual_seq_lengths[0]] * b if len(actual_seq_lengths) == 1 else list(actual_seq_lengths[:b]))
        qs = [q4[i, :lens[i]] for i in range(b)]
    b = len(qs)
    kvl = actual_seq_lengths_kv
    ks, vs = [], []
    for i in range(b):
        if block_table is not None:
            n = kvl[0] if len(kvl) == 1 else kvl[i]
            rows = []
            for cache in (key, value):
                toks = []
                for t in range(n):
                    page, r = int(block_table[i, t // block_size]), t % block_size
                    toks.append(cache[page, r].reshape(n2, -1) if cache.dim() == 3 else cache[page, :, r])
                rows.append(torch.stack(toks) if toks else cache.new_zeros((0, n2, query.shape[-1] if lay != "BSH"
                                                                             else query.shape[-1] // n1)))
            ks.append(rows[0])
            vs.append(rows[1])
            continue
        if lay == "TND":
            cu = list(kvl)
            a, c = ([0] + cu[:-1])[i], cu[i]
            ks.append(key[a:c])
            vs.append(value[a:c])
            continue
        k4 = {"BSH": lambda t: t.reshape(t.shape[0], t.shape[1], n2, -1), "BSND": lambda t: t}.get(
            lay, lambda t: t.transpose(1, 2))
        kk, vv = k4(key), k4(value)
        n = kk.shape[1] if kvl is None else (kvl[0] if len(kvl) == 1 else kvl[i])
        ks.append(kk[i, :n])
        vs.append(vv[i, :n])
    cu_q = torch.tensor([x.shape[0] for x in qs]).cumsum(0).tolist()
    cu_kv = torch.tensor([x.shape[0] for x in ks]).cumsum(0).tolist()
    return torch.cat(qs), torch.cat(ks), torch.cat(vs), cu_q, cu_kv, [x.shape[0] for x in qs]


def _infer_run(query, key, value, kw: dict, lowprec: bool):
    """(out, lse) of npu_fused_infer_attention_score in its layouts: out float64 (or the input dtype, `lowprec`),
    lse float64 [B, N1, S1, 1] (TND [T, N1, 1]); rows past actual_seq_lengths and rows that see no key give out 0
    and lse +inf."""
    n1, lay = kw["num_heads"], kw.get("input_layout", "BSH")
    q, k, v, cu_q, cu_kv, lens = _infer_sequences(
        query, key, value, n1, lay, kw.get("num_key_value_heads", 0), kw.get("actual_seq_lengths"),
        kw.get("actual_seq_lengths_kv"), kw.get("block_table"), kw.get("block_size", 0))
    # Sparse modes 2-4 are bands of each sequence (the training op's in TND); one query token ignores the mode and
    # mode 0 without a dense mask ignores pre/next.
    longest = max(lens, default=0) if lay == "TND" else query.shape[1 if lay in ("BSH", "BSND") else 2]
    mode = kw.get("sparse_mode", 0) if longest > 1 and kw.get("sparse_mode", 0) in (2, 3, 4) else 0
    band = dict(pre_tokens=kw.get("pre_tokens", _INT32_MAX), next_tokens=kw.get("next_tokens", _INT32_MAX)) \
        if mode == 4 else {}
    mask = kw.get("atten_mask")
    if mask is not None and kw.get("sparse_mode", 0) in (0, 1):
        o, lse_t = _infer_dense_mask(q, k, v, cu_q, cu_kv, mask, kw, lay, longest > 1, lowprec)
        res = o if lowprec else None
    else:
        ref = flash_attention_lowprec if lowprec else flash_attention_reference
        pse = kw.get("pse_shift")  # [B or 1, N1, >= Sq, >= Skv], added after the scale (an outer pse as it is)
        res = ref(q, k, v, n1, "TND", scale=kw.get("scale", 1.0), sparse_mode=mode, actual_seq_qlen=cu_q,
                  actual_seq_kvlen=cu_kv, pse=None if pse is None else pse.to(q.dtype), pse_type=0, **band)
    if res is None:
        pass
    elif lowprec:
        o = res
        lse_t = None
    else:
        o, smax, ssum = res
        m, l = smax[..., 0], ssum[..., 0]
        # TND statistics are batch-major, then head-major: batch i's rows are [N1, Sq_i] from cu_q[i - 1] * N1.
        flat = torch.where(m == -FLT_MAX, torch.full_like(m, math.inf), m + torch.log(l)).reshape(-1)
        lse_t = torch.cat([flat[a * n1:(a + n) * n1].view(n1, n).transpose(0, 1)
                           for a, n in zip([0] + cu_q[:-1], lens)])  # [T, N1]
    d = o.shape[-1]
    if lay == "TND":
        out = torch.zeros(query.shape[0], n1, d, dtype=o.dtype)
        out[:o.shape[0]] = o
        lse = torch.full((query.shape[0], n1, 1), math.inf, dtype=torch.float64)
        if lse_t is not None:
            lse[:o.shape[0], :, 0] = lse_t
        return out, lse
    b = len(lens)
    s1 = query.shape[1] if lay in ("BSH", "BSND") else query.shape[2]
    o4 = torch.zeros(b, s1, n1, d, dtype=o.dtype)
    lse = torch.full((b, n1, s1, 1), math.inf, dtype=torch.float64)
    start = 0
    for i, n in enumerate(lens):
        o4[i, :n] = o[start:start + n]
        if lse_t is not None:
            lse[i, :, :n, 0] = lse_t[start:start + n].transpose(0, 1)
        start += n
    if lay == "BSH":
        return o4.reshape(b, s1, n1 * d), lse
    if lay in ("BSND", "BNSD_BSND"):
        return o4, lse
    return o4.transpose(1, 2), lse


def _infer_dense_mask(q, k, v, cu_q, cu_kv, mask, kw: dict, lay: str, prefill: bool, lowprec: bool):
    """(out [T, N1, D], lse [T, N1] or None) of sequences cut as TND with a dense atten_mask (nonzero = masked):
    non-TND masks broadcast to [B, N1, S1, S2] (a 3-D one is [B, S1, S2]) and read at [b, h, i, j]; TND masks are 2-D, read at the positions
    inside each sequence, or at global token positions when shaped [sum Sq, sum Skv] with B > 1. Mode 0 adds its band
    j in [i - pre_tokens, i + next_tokens] (prefill only); mode 1 is the mask alone; kw's pse_shift is added after
    the scale. Computed in float64, or in the input dtype (`lowprec`: plain torch's baseline)."""
    n1, n2 = q.shape[1], k.shape[1]
    g = n1 // n2
    scale = kw.get("scale", 1.0)
    band = prefill and kw.get("sparse_mode", 0) == 0
    pre, nxt = kw.get("pre_tokens", _INT32_MAX), kw.get("next_tokens", _INT32_MAX)
    m = mask.bool()
    b = len(cu_q)
    glob = lay == "TND" and b > 1 and tuple(m.shape) == (cu_q[-1], cu_kv[-1])
    if lay != "TND":
        m = m.unsqueeze(1) if m.dim() == 3 else m.reshape((1,) * (4 - m.dim()) + tuple(m.shape))
    outs, lses = [], []
    for i, (q0, q1, k0, k1) in enumerate(zip([0] + cu_q[:-1], cu_q, [0] + cu_kv[:-1], cu_kv)):
        sq, skv = q1 - q0, k1 - k0
        if lay == "TND":
            mi = m[q0:q1, k0:k1] if glob else m[:sq, :skv]
            mi = mi.unsqueeze(0).expand(n1, sq, skv)
        else:
            mi = m[min(i, m.shape[0] - 1)].expand(n1, -1, -1)
            mi = mi[:, :sq] if mi.shape[1] > 1 else mi.expand(n1, sq, mi.shape[2])
            mi = mi[:, :, :skv] if mi.shape[2] > 1 else mi.expand(n1, sq, skv)
        hidden = mi.clone()
        if band:
            r = torch.arange(sq).view(-1, 1)
            c = torch.arange(skv).view(1, -1)
            hidden |= ((c < r - pre) | (c > r + nxt)).unsqueeze(0)
        qi = q[q0:q1].transpose(0, 1)  # [N1, Sq, D]
        ki = k[k0:k1].transpose(0, 1).repeat_interleave(g, 0)
        vi = v[k0:k1].transpose(0, 1).repeat_interleave(g, 0)
        s = (qi @ ki.transpose(1, 2)) * scale
        if kw.get("pse_shift") is not None:
            pse = kw["pse_shift"]
            s = s + pse[min(i, pse.shape[0] - 1), :, :sq, :skv].to(s.dtype)
        s = s.masked_fill(hidden, -math.inf)
        seen = ~hidden.all(-1, keepdim=True)  # [N1, Sq, 1]
        p = torch.softmax(torch.where(seen, s, torch.zeros_like(s)), -1) * seen
        outs.append((p.masked_fill(hidden, 0) @ vi).transpose(0, 1))
        if not lowprec:
            lse = torch.logsumexp(s, -1)  # -inf for rows without a key
            lses.append(torch.where(seen[..., 0], lse, torch.full_like(lse, math.inf)).transpose(0, 1))
    o = torch.cat(outs)
    return o, (None if lowprec else torch.cat(lses))


def kvcache_reference(q: torch.Tensor, keys: Sequence[torch.Tensor], values: Sequence[torch.Tensor], *,
                      causal: bool = False, window_size=(-1, -1), softcap: float = 0.0,
                      alibi_slopes: Optional[torch.Tensor] = None, lowprec: bool = False):
    """flash_attn_with_kvcache's attention, per sequence over its keys: q [B, Sq, N1, D], keys[b] / values[b]
    [Sk_b, N2, D] (the cache after the append). Bottom-right causal and window_size (left, right; negative:
    unbounded; causal makes right 0) as sparse_mode 4's band, softcap, and ALiBi -slope * |i + Sk - Sq - j| (pse_type
    2 with q_start = Sk - Sq). Returns (out [B, Sq, N1, D] float64, lse [B, N1, Sq] float64 with +inf for rows
    without a key), or with `lowprec` the output computed like plain torch in q's dtype (the criterion's baseline)."""
    b, sq, n1, d = q.shape
    left, right = window_size
    right = 0 if causal else right
    windowed = left >= 0 or right >= 0
    kw = dict(scale=1 / math.sqrt(d), sparse_mode=4 if windowed else 3 if causal else 0,
              pre_tokens=left if left >= 0 else _INT32_MAX, next_tokens=right if right >= 0 else _INT32_MAX,
              softcap=softcap or None)
    out = torch.zeros(b, sq, n1, d, dtype=q.dtype if lowprec else torch.float64)
    lse = torch.empty(b, n1, sq, dtype=torch.float64)
    for i in range(b):
        k, v = keys[i][None], values[i][None]
        if alibi_slopes is not None:
            kw.update(pse=alibi_slopes[i] if alibi_slopes.dim() == 2 else alibi_slopes, pse_type=2,
                      q_start_idx=[k.shape[1] - sq], kv_start_idx=[0])
        if lowprec:
            out[i] = flash_attention_lowprec(q[i:i + 1], k, v, n1, "BSND", **kw)[0]
            continue
        o, m, l = flash_attention_reference(q[i:i + 1].double(), k.double(), v.double(), n1, "BSND", **kw)
        out[i] = o[0]
        m, l = m[0, ..., 0], l[0, ..., 0]
        lse[i] = torch.where(m == -FLT_MAX, torch.full_like(m, math.inf), m + torch.log(l))
    return out if lowprec else (out, lse)


def fused_infer_reference(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, **kw):
    """float64 (attention_out, softmax_lse) of `npu_fused_infer_attention_score(query, key, value, **kw)` (the
    arguments of its first stage: num_heads, num_key_value_heads, input_layout, scale, actual_seq_lengths,
    actual_seq_lengths_kv, sparse_mode 0-4, atten_mask, pre_tokens/next_tokens, block_table, block_size, pse_shift;
    an int8 cache with its antiquant arguments, dequantised by dequantize_kv_cache), softmax_lse always in its flag's
    shape ([B, N1, S1, 1], TND [T, N1, 1]); rows that see no key (and rows past actual_seq_lengths) give 0 and +inf."""
    if key.dtype == torch.int8:
        key, value = dequantize_kv_cache(key, value, **kw)
    q, k, v = (t.double() for t in (query, key, value))
    return _infer_run(q, k, v, kw, False)


def fused_infer_lowprec(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, **kw) -> torch.Tensor:
    """attention_out of the same call computed like plain torch in the input dtype (an int8 cache dequantised in
    float64, then rounded to it): the criterion's baseline."""
    if key.dtype == torch.int8:
        key, value = (t.to(query.dtype) for t in dequantize_kv_cache(key, value, **kw))
    return _infer_run(query, key, value, kw, True)[0]


def dequantize_kv_cache(key: torch.Tensor, value: torch.Tensor, **kw) -> tuple:
    """float64 K and V of an int8 cache in its own shape, value = scale * (x + offset) (torch_npu's antiquant): from
    antiquant_scale/antiquant_offset (index 0 K, 1 V) with antiquant_mode, or key_/value_antiquant_scale/offset with
    key_/value_antiquant_mode; mode 0 per channel ([N2 * D] values, or one per tensor), mode 1 per token ([B, S]: key
    t of batch b, found through block_table when paged, TND at its cumulative position). Cache slots no sequence
    reaches keep x (they are never read)."""
    n1 = kw["num_heads"]
    n2 = kw.get("num_key_value_heads", 0) or n1
    lay, table = kw.get("input_layout", "BSH"), kw.get("block_table")
    out = []
    for i, name in enumerate(("key", "value")):
        if kw.get("antiquant_scale") is not None:
            mode, scale, offset = kw.get("antiquant_mode", 0), kw["antiquant_scale"][i], kw.get("antiquant_offset")
            offset = None if offset is None else offset[i]
        else:
            mode, scale = kw.get(f"{name}_antiquant_mode", 0), kw[f"{name}_antiquant_scale"][0]
            offset = kw.get(f"{name}_antiquant_offset")
            offset = None if offset is None else offset[0]
        x = (key, value)[i].double()
        scale = scale.double()
        offset = torch.zeros_like(scale) if offset is None else offset.double()
        # The cache as [pages or batches, tokens, N2, D] (a view of x's storage).
        if table is not None:
            rows = x.view(x.shape[0], x.shape[1], n2, -1) if x.dim() == 3 else x.transpose(1, 2)
        elif lay == "TND":
            rows = x.unsqueeze(0)
        elif lay == "BSH":
            rows = x.view(x.shape[0], x.shape[1], n2, -1)
        else:
            rows = x if lay == "BSND" else x.transpose(1, 2)
        d = rows.shape[-1]
        if mode == 0:
            s, o = (t.reshape(-1).expand(n2 * d) if t.numel() == 1 else t.reshape(-1) for t in (scale, offset))
            rows.copy_(s.view(n2, d) * (rows + o.view(n2, d)))
            out.append(x)
            continue
        scale, offset = scale.reshape(scale.shape[-2], -1), offset.reshape(offset.shape[-2], -1)  # [B, S]
        if table is None and lay != "TND":
            rows.copy_(scale[:, :rows.shape[1], None, None] * (rows + offset[:, :rows.shape[1], None, None]))
            out.append(x)
            continue
        lens = _per_batch(kw["actual_seq_lengths_kv"], scale.shape[0])
        starts = [0] * len(lens)
        if table is None:  # TND: cumulative key lengths
            cu = list(kw["actual_seq_lengths_kv"])
            lens, starts = [c - p for p, c in zip([0] + cu[:-1], cu)], [0] + cu[:-1]
        size = rows.shape[1]
        for b, n in enumerate(lens):
            for t in range(n):
                page, r = (int(table[b, t // size]), t % size) if table is not None else (0, starts[b] + t)
                rows[page, r] = scale[b, t] * (rows[page, r] + offset[b, t])
        out.append(x)
    return out[0], out[1]


def _per_batch(lengths, b: int) -> list:
    """A per-batch length list of the built-in: one value for every batch, or the first B values."""
    lengths = [int(v) for v in lengths]
    return lengths * b if len(lengths) == 1 else lengths[:b]
