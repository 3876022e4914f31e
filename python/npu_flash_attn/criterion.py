"""The FlashAttention test criterion: the op's output against the float64 reference within a multiple of plain
torch's error at the input precision (`assert_close_fa`), and the fp32 softmax statistics against the reference
(`assert_stats_close`). Used by the tests, the NPU grid and the demo."""
from __future__ import annotations

import torch

from .reference import FLT_MAX

__all__ = ["assert_close_fa", "assert_stats_close"]


def assert_close_fa(out: torch.Tensor, ref64: torch.Tensor, out_lowprec: torch.Tensor, *, factor: float = 2.0,
                    atol: float = 1e-5, what: str = "attention_out") -> tuple[float, float]:
    """FlashAttention criterion: max|out - ref64| <= factor * max|out_lowprec - ref64| + atol.

    Returns (error, bound); raises AssertionError (with both errors) otherwise, or on shape mismatch / NaN."""
    if tuple(out.shape) != tuple(ref64.shape) or tuple(out_lowprec.shape) != tuple(ref64.shape):
        raise AssertionError(f"{what}: shape {tuple(out.shape)} vs reference {tuple(ref64.shape)} / low-precision "
                             f"{tuple(out_lowprec.shape)}")
    if out.numel() == 0:
        return 0.0, atol
    o = out.double()
    if not bool(torch.isfinite(o).all()):
        bad = (~torch.isfinite(o)).nonzero()[0].tolist()
        raise AssertionError(f"{what}: non-finite value {o[tuple(bad)].item()} at index {bad}")
    diff = (o - ref64.double()).abs()
    err = diff.max().item()
    base = (out_lowprec.double() - ref64.double()).abs().max().item()
    bound = factor * base + atol
    if not err <= bound:
        idx = tuple(int(i) for i in (diff == diff.max()).nonzero()[0].tolist())
        raise AssertionError(f"{what}: max|out - ref64| = {err:.3e} > {factor}*max|lowprec - ref64| + {atol} = "
                             f"{bound:.3e} (low-precision error {base:.3e}); worst at index {idx}: out "
                             f"{o[idx].item()!r}, ref {ref64[idx].item()!r}")
    return err, bound


def assert_stats_close(softmax_max: torch.Tensor, softmax_sum: torch.Tensor, ref_max: torch.Tensor,
                       ref_sum: torch.Tensor, *, max_tol: float = 1e-4, sum_rtol: float = 2e-4) -> dict:
    """Checks fp32 softmax statistics against the float64 reference.

    * dtype float32, shapes equal, the 8 copies of each row identical;
    * invalid rows (reference max == -FLT_MAX) exactly -FLT_MAX / +FLT_MAX, and no other row uses those sentinels;
    * valid rows: |max - ref| <= max_tol * (1 + |ref|), |sum - ref| <= sum_rtol * ref.
      (The statistics come from fp32 scores of low-precision inputs accumulated in fp32, so the reference - computed
      from the same rounded inputs - differs only by fp32 rounding: ~1e-6 relative. The defaults leave a wide margin
      while still catching a wrong scale, a wrong mask element near the row max, or a lost rescale.)
    Returns {"max_err": ..., "sum_rel_err": ..., "invalid_rows": ...}."""
    for name, t in (("softmax_max", softmax_max), ("softmax_sum", softmax_sum)):
        if t.dtype != torch.float32:
            raise AssertionError(f"{name} dtype {t.dtype} must be torch.float32")
        if tuple(t.shape) != tuple(ref_max.shape):
            raise AssertionError(f"{name} shape {tuple(t.shape)} != reference {tuple(ref_max.shape)}")
    if softmax_max.numel() == 0:
        return {"max_err": 0.0, "sum_rel_err": 0.0, "invalid_rows": 0}
    for name, t in (("softmax_max", softmax_max), ("softmax_sum", softmax_sum)):
        if not bool((t == t[..., :1]).all()):
            raise AssertionError(f"{name}: the 8 copies of a row differ")
    m, s = softmax_max[..., 0].double(), softmax_sum[..., 0].double()
    rm, rs = ref_max[..., 0].double(), ref_sum[..., 0].double()
    invalid = rm == -FLT_MAX
    n_inv = int(invalid.sum())
    if n_inv:
        if not bool((m[invalid] == -FLT_MAX).all()) or not bool((s[invalid] == FLT_MAX).all()):
            idx = (invalid & ((m != -FLT_MAX) | (s != FLT_MAX))).nonzero()[0].tolist()
            raise AssertionError(f"invalid row at {idx}: softmax_max {m[tuple(idx)].item()!r} / softmax_sum "
                                 f"{s[tuple(idx)].item()!r}, expected -FLT_MAX / +FLT_MAX")
    valid = ~invalid
    if not bool(valid.any()):
        return {"max_err": 0.0, "sum_rel_err": 0.0, "invalid_rows": n_inv}
    mv, sv, rmv, rsv = m[valid], s[valid], rm[valid], rs[valid]
    if not bool(torch.isfinite(mv).all() and torch.isfinite(sv).all()):
        raise AssertionError("softmax_max/softmax_sum: non-finite value (or sentinel) on a row that has visible keys")
    max_err = (mv - rmv).abs()
    sum_rel = (sv - rsv).abs() / rsv
    if not bool((max_err <= max_tol * (1 + rmv.abs())).all()):
        i = int(torch.argmax(max_err / (1 + rmv.abs())))
        raise AssertionError(f"softmax_max: |max - ref| = {max_err[i].item():.3e} > {max_tol} * (1 + |{rmv[i].item():.6g}|)"
                             f" (got {mv[i].item()!r}, ref {rmv[i].item()!r})")
    if not bool((sum_rel <= sum_rtol).all()):
        i = int(torch.argmax(sum_rel))
        raise AssertionError(f"softmax_sum: relative error {sum_rel[i].item():.3e} > {sum_rtol} "
                             f"(got {sv[i].item()!r}, ref {rsv[i].item()!r})")
    return {"max_err": max_err.max().item(), "sum_rel_err": sum_rel.max().item(), "invalid_rows": n_inv}
