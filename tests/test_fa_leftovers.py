"""The kernels must not depend on what an earlier kernel left in on-core memory (L1, L0A/B/C, UB). With
NPU_TWIN_LOCAL_FILL=nan every on-core byte starts as an earlier kernel's NaN (not the twin's poison, so the store rule
stays quiet and only the results tell), with =stale as finite data. Key lengths that are not multiples of 16 leave
the K/V tail rows of the last fractal unloaded: the cube passes the exact k (P*V) and n (Q*K^T) to Mmad, whose page
says the invalid data of a partial fractal takes no part in the computation, so those rows must not matter; the twin's
Mmad refuses NaN inside its m x k / k x n range, and the results are checked against the float64 reference. With
every length on the 16 grid (no varlen) the cubes skip their zero fill of L1: no tile then has padding rows."""
import math

import pytest
import torch

from test_fa_backward import Case, _forward_and_grad, _grads64, _lowprec_grads, _assert_grads, _shape, DT
from test_fa_forward import cumsum, make_qkv, run_and_check

FILLS = ["nan", "stale"]


@pytest.fixture(params=FILLS)
def leftovers(request, monkeypatch):
    monkeypatch.setenv("NPU_TWIN_LOCAL_FILL", request.param)
    return request.param


@pytest.mark.parametrize("layout,dtype,S1,S2,D", [("BSND", torch.float16, 33, 17, 64),
                                                  ("BNSD", torch.bfloat16, 40, 77, 72)])
def test_forward_key_tails_ignore_leftovers(leftovers, gen, layout, dtype, S1, S2, D):
    q, k, v = make_qkv(gen, layout, 2, 2, 1, S1, S2, D, D, dtype)
    run_and_check(q, k, v, 2, layout, scale=1 / math.sqrt(D), label=f"{leftovers} {layout} {S1}x{S2}")


def test_forward_tnd_odd_lengths_ignore_leftovers(leftovers, gen):
    q_lens, kv_lens = [5, 19, 1], [17, 3, 29]
    q, k, v = make_qkv(gen, "TND", 0, 2, 2, 0, 0, 64, 64, torch.float16, q_lens, kv_lens)
    run_and_check(q, k, v, 2, "TND", scale=0.125, actual_seq_qlen=cumsum(q_lens), actual_seq_kvlen=cumsum(kv_lens),
                  label=f"{leftovers} TND")


@pytest.mark.parametrize("case", [Case("BSND", "fp16", 1, 33, 17, 2, 2, 64, 64, "full"),
                                  Case("BSH", "bf16", 1, 40, 77, 2, 1, 72, 72, "causal_rd"),
                                  # lengths on the 16 grid: the cube skips its L1 zero fill (head dims off it)
                                  Case("BNSD", "fp16", 1, 48, 208, 2, 2, 72, 40, "full"),
                                  Case("BSND", "bf16", 2, 144, 96, 2, 1, 88, 88, "causal_rd")], ids=str)
def test_backward_key_tails_ignore_leftovers(leftovers, gen, case):
    c, dt = case, DT[case.dtype]
    q, k, v, dy = (torch.randn(_shape(c.layout, c.B, s, n, d), generator=gen).to(dt)
                   for s, n, d in ((c.S1, c.N1, c.D), (c.S2, c.N2, c.D), (c.S2, c.N2, c.Dv), (c.S1, c.N1, c.Dv)))
    scale = 1 / math.sqrt(c.D)
    _, got = _forward_and_grad(q, k, v, dy, c.N1, c.layout, scale, c.sparse)
    ref = _grads64(q, k, v, dy, c.N1, c.layout, scale, c.sparse)
    _assert_grads(got, ref, _lowprec_grads(q, k, v, dy, c.N1, c.layout, scale, c.sparse), f"{leftovers} {c}")


def test_backward_tnd_odd_lengths_ignore_leftovers(leftovers, gen):
    q_lens, kv_lens = [5, 19, 1], [17, 3, 29]
    cu_q, cu_kv = cumsum(q_lens), cumsum(kv_lens)
    q, k, v = make_qkv(gen, "TND", 0, 2, 1, 0, 0, 64, 64, torch.bfloat16, q_lens, kv_lens)
    dy = torch.randn(q.shape, generator=gen).to(q.dtype)
    _, got = _forward_and_grad(q, k, v, dy, 2, "TND", 0.125, "full", cu_q, cu_kv)
    ref = _grads64(q, k, v, dy, 2, "TND", 0.125, "full", cu_q, cu_kv)
    _assert_grads(got, ref, _lowprec_grads(q, k, v, dy, 2, "TND", 0.125, "full", cu_q, cu_kv), f"{leftovers} TND")
