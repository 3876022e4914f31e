"""Symbolic sizes through torch.compile(dynamic=True) and torch.export (docs/torch_compile.md): the op, its
backward and the drop-ins add no guard on B, S1/S2, N or the TND token counts, so one graph serves every size and
torch.export accepts Dims on them. Every compiled or exported result is compared with the eager call on the same
inputs (bitwise: the same kernels run)."""
from __future__ import annotations

import itertools

import pytest
import torch
from torch._dynamo.utils import counters
from torch.export import Dim

import npu_flash_attn
from npu_flash_attn import (flash_attn_func, flash_attn_varlen_func, npu_fusion_attention,
                            scaled_dot_product_attention)

BF16 = torch.bfloat16


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    counters.clear()
    yield
    torch._dynamo.reset()


def _rand(gen, *shape, grad=False):
    return torch.randn(*shape, generator=gen).to(BF16).requires_grad_(grad)


def _cu(lengths):
    return list(itertools.accumulate(lengths))


def _equal(a, b):
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return a == b


def _graphs(fn, calls, fullgraph=True):
    """Compiles fn with dynamic=True (aot_eager: autograd included), runs it on every argument tuple of `calls`
    (sizes all distinct, so that duck sizing merges nothing) comparing with eager fn, and returns the number of
    graphs compiled so far after each call (a fresh count)."""
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(fn, backend="aot_eager", dynamic=True, fullgraph=fullgraph)
    counts = []
    for args in calls:
        assert _equal(compiled(*args), fn(*args))
        counts.append(counters["stats"]["unique_graphs"])
    return counts


# ---------------------------------------------------------------------------------------------------------------
# torch.compile(dynamic=True): one graph across sizes
# ---------------------------------------------------------------------------------------------------------------
def test_op_one_graph_across_batch_sequence_and_heads(gen):
    """BSND with B, S1, S2 and N varying together (head_num from the shape: a SymInt argument), BNSD over S."""
    def bsnd(q, k, v):
        return npu_flash_attn.flash_attention(q, k, v, q.shape[2], "BSND", scale=0.125, sparse_mode=3)

    sizes = [(3, 33, 41, 2), (5, 47, 70, 4), (7, 61, 52, 6)]  # B, S1, S2, N
    assert _graphs(bsnd, [(_rand(gen, b, s1, n, 32), _rand(gen, b, s2, n, 32), _rand(gen, b, s2, n, 32))
                          for b, s1, s2, n in sizes]) == [1, 1, 1]

    def bnsd(q, k, v):
        return npu_flash_attn.flash_attention(q, k, v, 2, "BNSD", scale=0.125)[0]

    assert _graphs(bnsd, [(_rand(gen, 3, 2, s, 32), _rand(gen, 3, 2, s + 5, 32), _rand(gen, 3, 2, s + 5, 32))
                          for s in (33, 47, 61)]) == [1, 1, 1]


def test_op_tnd_one_graph_across_token_counts_and_lengths(gen):
    """TND: T1/T2 and the cumulative lists (SymInt[] in the schema) change from call to call, the padding too."""
    def tnd(q, k, v, cu_q, cu_kv):
        return npu_flash_attn.flash_attention(q, k, v, 2, "TND", scale=0.125, sparse_mode=3, actual_seq_qlen=cu_q,
                                              actual_seq_kvlen=cu_kv)

    calls = []
    for q_lens, kv_lens, pad in (([10, 23], [12, 30], 3), ([17, 30], [19, 44], 5), ([5, 9], [6, 13], 7)):
        t1, t2 = sum(q_lens) + pad, sum(kv_lens)
        calls.append((_rand(gen, t1, 2, 32), _rand(gen, t2, 2, 32), _rand(gen, t2, 2, 32), _cu(q_lens),
                      _cu(kv_lens)))
    assert _graphs(tnd, calls) == [1, 1, 1]
    q, k, v, cu_q, cu_kv = calls[0]
    compiled = torch.compile(tnd, backend="aot_eager", dynamic=True, fullgraph=True)
    with pytest.raises(ValueError, match=r"actual_seq_qlen total 40 exceeds query T1=36"):  # checked when it runs
        compiled(q, k, v, [17, 40], cu_kv)


def test_training_step_one_graph_across_sequence_lengths(gen):
    """Forward and backward compiled once for three (S1, S2): gradients equal the eager ones."""
    def step(q, k, v):
        out = npu_flash_attn.flash_attention(q, k, v, 2, "BSND", scale=0.125, sparse_mode=3)[0]
        return (out.float() ** 2).sum()

    compiled = torch.compile(step, backend="aot_eager", dynamic=True, fullgraph=True)
    for s1, s2 in ((33, 40), (47, 58), (61, 75)):
        inputs = [_rand(gen, 3, s, 2, 32, grad=True) for s in (s1, s2, s2)]
        compiled(*inputs).backward()
        got = [t.grad for t in inputs]
        for t in inputs:
            t.grad = None
        step(*inputs).backward()
        assert all(torch.equal(a, t.grad) for a, t in zip(got, inputs))
    assert counters["stats"]["unique_graphs"] == 1


def test_drop_ins_one_graph_across_sizes(gen):
    """flash_attn_func (B, S, N), SDPA (S) and npu_fusion_attention (BNSD: S1, S2, N; its numels output stays
    symbolic and equals eager's)."""
    sizes = [(3, 33, 41, 2), (5, 47, 70, 4), (7, 61, 52, 6)]
    fa = [(_rand(gen, b, s1, n, 32), _rand(gen, b, s2, n, 32), _rand(gen, b, s2, n, 32)) for b, s1, s2, n in sizes]
    assert _graphs(lambda q, k, v: flash_attn_func(q, k, v, causal=True), fa) == [1, 1, 1]
    sdpa = [(_rand(gen, 3, 2, s, 32), _rand(gen, 3, 2, s, 32), _rand(gen, 3, 2, s, 32)) for s in (33, 47, 61)]
    assert _graphs(lambda q, k, v: scaled_dot_product_attention(q, k, v, is_causal=True), sdpa) == [1, 1, 1]
    fusion = [(_rand(gen, b, n, s1, 32), _rand(gen, b, n, s2, 32), _rand(gen, b, n, s2, 32)) for b, s1, s2, n in sizes]
    assert _graphs(lambda q, k, v: npu_fusion_attention(q, k, v, q.shape[1], "BNSD", scale=0.125),
                   fusion) == [1, 1, 1]


def _varlen_calls(gen):
    calls = []
    for lengths in ((10, 23), (17, 30), (5, 9)):
        cu = torch.tensor([0, *_cu(lengths)], dtype=torch.int32)
        t = sum(lengths)
        calls.append((_rand(gen, t, 2, 32), _rand(gen, t, 2, 32), _rand(gen, t, 2, 32), cu))
    return calls


def test_varlen_drop_ins_compile_once(gen):
    """The cumulative lengths are host values: flash_attn_varlen_func reads its cu_seqlens tensors (one graph with
    capture_scalar_outputs, else graph breaks), npu_fusion_attention's TND bookkeeping asks the problem module (a
    graph break); either way the graphs of the first call serve every later length."""
    def varlen(q, k, v, cu):
        return flash_attn_varlen_func(q, k, v, cu, cu, 64, 64, causal=True)

    calls = _varlen_calls(gen)
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        assert _graphs(varlen, calls) == [1, 1, 1]
    first, *rest = _graphs(varlen, calls, fullgraph=False)
    assert first > 1 and rest == [first, first]

    def fusion(q, k, v, cu):
        return npu_fusion_attention(q, k, v, 2, "TND", scale=0.125, sparse_mode=3, actual_seq_qlen=cu,
                                    actual_seq_kvlen=cu, softmax_layout="TND")

    first, *rest = _graphs(fusion, [(q, k, v, cu[1:].tolist()) for q, k, v, cu in calls], fullgraph=False)
    assert first > 1 and rest == [first, first]


def test_duck_sizing_and_what_users_do(gen):
    """docs/torch_compile.md: with dynamic=True, S == D on the first call gives both one symbol and a later S
    compiles again (torch's own SDPA does the same); use_duck_shape = False, or marking only S dynamic, keeps one
    graph."""
    def fn(q, k, v):
        return npu_flash_attn.flash_attention(q, k, v, 2, "BSND", scale=0.125)[0]

    calls = [tuple(_rand(gen, 3, s, 2, 32) for _ in range(3)) for s in (32, 40, 48)]  # S == D = 32 first
    assert _graphs(fn, calls) == [1, 2, 2]
    with torch.fx.experimental._config.patch(use_duck_shape=False):
        assert _graphs(fn, calls) == [1, 1, 1]
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(fn, backend="aot_eager", fullgraph=True)  # dynamic only where marked
    for q, k, v in calls:
        for t in (q, k, v):
            torch._dynamo.mark_dynamic(t, 1)
        assert torch.equal(compiled(q, k, v), fn(q, k, v))
    assert counters["stats"]["unique_graphs"] == 1


# ---------------------------------------------------------------------------------------------------------------
# torch.export with Dims on the sequence lengths and token counts
# ---------------------------------------------------------------------------------------------------------------
class _Call(torch.nn.Module):
    """A module calling fn (torch.export takes modules); dynamic_shapes then has one entry, for *args."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _export_and_compare(fn, example, dynamic_shapes, other):
    """Exports fn on `example` with `dynamic_shapes`, then runs the program on `other` (other sizes) against eager."""
    ep = torch.export.export(_Call(fn), example, dynamic_shapes=(dynamic_shapes,), strict=False)
    assert _equal(ep.module()(*other), fn(*other))
    return ep


def _s(name):
    return Dim(name, min=2, max=8192)


def test_export_op_with_dims_on_sequence_lengths_and_tokens(gen):
    def bsnd(q, k, v):
        return npu_flash_attn.flash_attention(q, k, v, 2, "BSND", scale=0.125, sparse_mode=3)

    s1, s2 = _s("s1"), _s("s2")
    qkv = lambda a, b: (_rand(gen, 3, a, 2, 32), _rand(gen, 3, b, 2, 32), _rand(gen, 3, b, 2, 32))  # noqa: E731
    _export_and_compare(bsnd, qkv(33, 40), ({1: s1}, {1: s2}, {1: s2}), qkv(50, 70))

    def tnd(q, k, v):
        return npu_flash_attn.flash_attention(q, k, v, 2, "TND", scale=0.125, sparse_mode=3,
                                              actual_seq_qlen=[10, 20], actual_seq_kvlen=[12, 20])

    t1, t2 = Dim("t1", min=20, max=8192), Dim("t2", min=20, max=8192)
    tok = lambda a, b: (_rand(gen, a, 2, 32), _rand(gen, b, 2, 32), _rand(gen, b, 2, 32))  # noqa: E731
    _export_and_compare(tnd, tok(33, 40), ({0: t1}, {0: t2}, {0: t2}), tok(50, 70))


def test_export_training_step_and_grad_op(gen):
    """Backpropagating through the exported forward gives the eager gradients at other lengths; the grad op exports
    with Dims on T1/T2 itself."""
    def fwd(q, k, v):
        return npu_flash_attn.flash_attention(q, k, v, 2, "BSND", scale=0.125, sparse_mode=3)[0]

    s1, s2 = _s("s1"), _s("s2")
    ep = torch.export.export(_Call(fwd), tuple(_rand(gen, 3, s, 2, 32) for s in (33, 40, 40)),
                             dynamic_shapes=(({1: s1}, {1: s2}, {1: s2}),), strict=False)
    inputs = [_rand(gen, 3, s, 2, 32, grad=True) for s in (50, 70, 70)]
    (ep.module()(*inputs).float() ** 2).sum().backward()
    got = [t.grad for t in inputs]
    for t in inputs:
        t.grad = None
    (fwd(*inputs).float() ** 2).sum().backward()
    assert all(torch.equal(a, t.grad) for a, t in zip(got, inputs))

    lists = dict(actual_seq_qlen=[10, 20], actual_seq_kvlen=[12, 20], scale=0.125, sparse_mode=3)

    def grad(q, k, v, dy, out, smax, ssum):
        return npu_flash_attn.flash_attention_grad(q, k, v, dy, 2, "TND", softmax_max=smax, softmax_sum=ssum,
                                                   attention_in=out, **lists)[:3]

    def args(t1, t2):
        q, k, v = _rand(gen, t1, 2, 32), _rand(gen, t2, 2, 32), _rand(gen, t2, 2, 32)
        out, smax, ssum = npu_flash_attn.flash_attention(q, k, v, 2, "TND", **lists)
        return q, k, v, torch.randn_like(out), out, smax, ssum

    t1, t2 = Dim("t1", min=20, max=8192), Dim("t2", min=20, max=8192)
    _export_and_compare(grad, args(33, 40), ({0: t1}, {0: t2}, {0: t2}, {0: t1}, {0: t1}, {0: t1}, {0: t1}),
                        args(50, 70))


def test_export_drop_ins(gen):
    """flash_attn_func (Dims on B and S), SDPA (S), npu_fusion_attention (S1, S2: numels follows the sizes; TND: T1,
    T2) and flash_attn_varlen_func (T; its cu_seqlens values become symbols whose rules are run-time assertions)."""
    b, s1, s2 = Dim("b", min=1, max=64), _s("s1"), _s("s2")
    bsnd = lambda n, a, c: (_rand(gen, n, a, 2, 32), _rand(gen, n, c, 2, 32), _rand(gen, n, c, 2, 32))  # noqa: E731
    _export_and_compare(lambda q, k, v: flash_attn_func(q, k, v, causal=True), bsnd(3, 33, 40),
                        ({0: b, 1: s1}, {0: b, 1: s2}, {0: b, 1: s2}), bsnd(2, 50, 70))
    s = _s("s")
    bnsd = lambda a, c: (_rand(gen, 3, 2, a, 32), _rand(gen, 3, 2, c, 32), _rand(gen, 3, 2, c, 32))  # noqa: E731
    _export_and_compare(lambda q, k, v: scaled_dot_product_attention(q, k, v, is_causal=True), bnsd(33, 33),
                        ({2: s}, {2: s}, {2: s}), bnsd(50, 50))
    fusion = _export_and_compare(lambda q, k, v: npu_fusion_attention(q, k, v, 2, "BNSD", scale=0.125),
                                 bnsd(33, 40), ({2: s1}, {2: s2}, {2: s2}), bnsd(50, 70))
    assert fusion.module()(*bnsd(50, 70))[6] == 2 * 3 * 50 * 70
    t1, t2 = Dim("t1", min=20, max=8192), Dim("t2", min=20, max=8192)
    tok = lambda a, b: (_rand(gen, a, 2, 32), _rand(gen, b, 2, 32), _rand(gen, b, 2, 32))  # noqa: E731
    _export_and_compare(lambda q, k, v: npu_fusion_attention(q, k, v, 2, "TND", scale=0.125, actual_seq_qlen=[10, 20],
                                                             actual_seq_kvlen=[12, 20]),
                        tok(33, 40), ({0: t1}, {0: t2}, {0: t2}), tok(50, 70))

    t = _s("t")
    calls = _varlen_calls(gen)
    _export_and_compare(lambda q, k, v, cu: flash_attn_varlen_func(q, k, v, cu, cu, 64, 64, causal=True), calls[0],
                        ({0: t}, {0: t}, {0: t}, None), calls[1])
