"""Forward npu::flash_attention on NPU tensors (the adapter and the CANN operators; not yet run on hardware): the
twin's pairwise grid (layouts x dtypes x head dims x MHA/GQA/MQA x sparse modes x sequence lengths, TND included),
dense masks of every shape, varlen, against the float64 reference with the FlashAttention criterion, exactly as
tests/test_fa_forward.py judges the twin."""
from __future__ import annotations

import math

import pytest
import torch

from npu_env import mask_case, npu_kwargs, requires_npu, to_cpu, to_npu
from npu_flash_attn.criterion import assert_close_fa, assert_stats_close
from npu_flash_attn.reference import flash_attention_lowprec, flash_attention_reference
from test_fa_backward_masks import B, N1, N2, S1, S2, SHAPES
from test_fa_forward import DEFAULT_CASES, TORCH_DTYPES, cumsum, make_qkv, random_lengths

pytestmark = requires_npu
op = torch.ops.npu.flash_attention
REF_ARGS = ("scale", "sparse_mode", "pre_tokens", "next_tokens", "actual_seq_qlen", "actual_seq_kvlen", "atten_mask",
            "prefix")
# The chip axis of the twin grid is the emulated chip; on the NPU it is the real one: one case per remaining row.
CASES = list({c.id().rsplit("-", 1)[0]: c for c in DEFAULT_CASES}.values())


def check_on_npu(q, k, v, head_num, layout, label="", **kw):
    """Runs the op on the NPU and checks out / softmax_max / softmax_sum on the CPU against the reference."""
    out, smax, ssum = to_cpu(*op(*to_npu(q, k, v), head_num, layout, **npu_kwargs(kw)))
    ref_kw = {n: kw[n] for n in REF_ARGS if n in kw}
    ref_o, ref_m, ref_s = flash_attention_reference(q, k, v, head_num, layout, **ref_kw)
    low = flash_attention_lowprec(q, k, v, head_num, layout, **ref_kw)
    assert out.dtype == q.dtype and tuple(out.shape) == tuple(ref_o.shape), label
    assert_close_fa(out, ref_o, low, what=f"attention_out [{label}] (NPU)")
    assert bool((out[ref_o == 0] == 0).all()), f"{label}: invalid rows of attention_out are not exactly 0"
    assert_stats_close(smax, ssum, ref_m, ref_s)
    return out, smax, ssum


def case_inputs(case, gen):
    """q, k, v and keyword arguments of a twin grid case (as tests/test_fa_forward.py run_case builds them)."""
    n1, n2 = case.n1_n2
    dtype = TORCH_DTYPES[case.dtype]
    kw = dict(scale=1.0 / math.sqrt(case.D), **case.mask_args())
    if case.layout == "TND":
        q_lens, kv_lens = case.seqs()
        q, k, v = make_qkv(gen, "TND", 0, n1, n2, 0, 0, case.D, case.Dv, dtype, q_lens, kv_lens, pad=(3, 2))
        kw.update(actual_seq_qlen=cumsum(q_lens), actual_seq_kvlen=cumsum(kv_lens))
    else:
        q, k, v = make_qkv(gen, case.layout, case.batch, n1, n2, case.S1, case.S2, case.D, case.Dv, dtype)
    return q, k, v, n1, kw


@pytest.mark.parametrize("case", CASES, ids=[c.id().rsplit("-", 1)[0] for c in CASES])
def test_forward_grid_on_npu(case, gen):
    q, k, v, n1, kw = case_inputs(case, gen)
    check_on_npu(q, k, v, n1, case.layout, case.id(), **kw)


@pytest.mark.parametrize("name", list(SHAPES))
def test_dense_masks_on_npu(gen, name):
    # query_pad ([B, 1, S1, 1]) takes the column-broadcast path: 128-byte rows read with column step 0
    layout, dtype = mask_case(SHAPES, name)
    q, k, v = make_qkv(gen, layout, B, N1, N2, S1, S2, 64, 64, dtype)
    m = torch.rand(SHAPES[name], generator=gen) < 0.4
    for mode, extra in ((1, {}), (0, dict(pre_tokens=60, next_tokens=10))):
        check_on_npu(q, k, v, N1, layout, f"{name} mode {mode}", scale=0.125, sparse_mode=mode, atten_mask=m,
                     **extra)


def test_block_map_reused_for_the_same_mask(gen):
    # the adapter's block-map cache: a second call with the same (unchanged) mask, then an in-place change
    q, k, v = make_qkv(gen, "BSND", B, N1, N2, S1, S2, 64, 64, torch.bfloat16)
    m = (torch.rand(B, 1, S1, S2, generator=gen) < 0.5).to("npu:0")
    args = to_npu(q, k, v)
    first = op(*args, N1, "BSND", scale=0.125, sparse_mode=1, atten_mask=m)[0].cpu()
    again = op(*args, N1, "BSND", scale=0.125, sparse_mode=1, atten_mask=m)[0].cpu()
    assert torch.equal(first, again)
    m[:, :, :, : S2 // 2] = True  # in place: the cached map must not be reused
    check_on_npu(q, k, v, N1, "BSND", "after in-place change", scale=0.125, sparse_mode=1, atten_mask=m.cpu())


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("mask", [dict(sparse_mode=0), dict(sparse_mode=3),
                                  dict(sparse_mode=4, pre_tokens=40, next_tokens=5)], ids=["full", "causal", "band"])
def test_varlen_on_npu(gen, dtype, mask):
    q_lens, kv_lens = random_lengths(gen, 6, 300), random_lengths(gen, 6, 300)
    q, k, v = make_qkv(gen, "TND", 0, 6, 2, 0, 0, 128, 128, TORCH_DTYPES[dtype], q_lens, kv_lens, pad=(2, 3))
    check_on_npu(q, k, v, 6, "TND", f"q_lens={q_lens} kv_lens={kv_lens}", scale=128 ** -0.5,
                 actual_seq_qlen=cumsum(q_lens), actual_seq_kvlen=cumsum(kv_lens), **mask)


def test_python_checks_run_for_npu_tensors(gen):
    q, k, v = to_npu(*make_qkv(gen, "BSND", 1, 2, 1, 20, 30, 64, 64, torch.float16))
    q[0, 3, 1, 5] = float("nan")
    with pytest.raises(ValueError, match=r"query contains NaN or Inf \(first at index \(0, 3, 1, 5\)"):
        op(q, k, v, 2, "BSND")
    with pytest.raises(ValueError, match=r"head_num=3 must equal"):
        op(q.nan_to_num(0.0), k, v, 3, "BSND")


@pytest.mark.parametrize("layout,mode", [("BNSD", 0), ("BSH", 3), ("TND", 3)])
def test_sink_on_npu(gen, layout, mode):
    q, k, v = make_qkv(gen, layout, 2, 4, 2, 150, 230, 64, 64, torch.bfloat16, [70, 0, 80], [90, 40, 230])
    kw = dict(scale=0.125, sparse_mode=mode)
    if layout == "TND":
        kw.update(actual_seq_qlen=cumsum([70, 0, 80]), actual_seq_kvlen=cumsum([90, 40, 230]))
    sink = math.log(230) + torch.randn(4, generator=gen)
    out, smax, ssum = to_cpu(*op(*to_npu(q, k, v), 4, layout, sink=sink.npu(), **npu_kwargs(kw)))
    ref_o, ref_m, ref_s = flash_attention_reference(q, k, v, 4, layout, sink=sink.double(), **kw)
    assert_close_fa(out, ref_o, flash_attention_lowprec(q, k, v, 4, layout, sink=sink, **kw), what="sink (NPU)")
    assert_stats_close(smax, ssum, ref_m, ref_s)


@pytest.mark.parametrize("layout,mode", [("BNSD", 0), ("TND", 3)])
def test_softcap_on_npu(gen, layout, mode):
    q, k, v = make_qkv(gen, layout, 2, 4, 2, 150, 230, 64, 64, torch.bfloat16, [70, 0, 80], [90, 40, 230])
    q = (q.float() * 4).to(q.dtype)  # scores of several units: the cap bends them
    kw = dict(scale=0.125, sparse_mode=mode, softcap=2.5)
    if layout == "TND":
        kw.update(actual_seq_qlen=cumsum([70, 0, 80]), actual_seq_kvlen=cumsum([90, 40, 230]))
    out, smax, ssum = to_cpu(*op(*to_npu(q, k, v), 4, layout, **npu_kwargs(kw)))
    ref_o, ref_m, ref_s = flash_attention_reference(q, k, v, 4, layout, **kw)
    assert_close_fa(out, ref_o, flash_attention_lowprec(q, k, v, 4, layout, **kw), what="softcap (NPU)")
    assert_stats_close(smax, ssum, ref_m, ref_s)


@pytest.mark.parametrize("layout,pse_type", [("BNSD", 2), ("TND", 3)])
def test_alibi_on_npu(gen, layout, pse_type):
    q, k, v = make_qkv(gen, layout, 2, 4, 2, 150, 230, 64, 64, torch.bfloat16, [70, 0, 80], [90, 40, 230])
    slopes = torch.tensor([2 ** (-8 * (i + 1) / 4) for i in range(4)])
    kw = dict(scale=0.125, sparse_mode=3, pse_type=pse_type, q_start_idx=[3], kv_start_idx=[11])
    if layout == "TND":
        kw.update(actual_seq_qlen=cumsum([70, 0, 80]), actual_seq_kvlen=cumsum([90, 40, 230]))
    out, smax, ssum = to_cpu(*op(*to_npu(q, k, v), 4, layout, **npu_kwargs(dict(kw, pse=slopes))))
    ref_o, ref_m, ref_s = flash_attention_reference(q, k, v, 4, layout, pse=slopes, **kw)
    assert_close_fa(out, ref_o, flash_attention_lowprec(q, k, v, 4, layout, pse=slopes, **kw), what="ALiBi (NPU)")
    assert_stats_close(smax, ssum, ref_m, ref_s)


@pytest.mark.parametrize("pse_shape,pse_type", [((2, 4, 150, 230), 1), ((1, 4, 1, 230), 0)])
def test_outer_pse_on_npu(gen, pse_shape, pse_type):
    q, k, v = make_qkv(gen, "BNSD", 2, 4, 2, 150, 230, 64, 64, torch.bfloat16)
    pse = torch.randn(pse_shape, generator=gen).to(torch.bfloat16)
    kw = dict(scale=0.125, sparse_mode=3, pse=pse, pse_type=pse_type)
    out, smax, ssum = to_cpu(*op(*to_npu(q, k, v), 4, "BNSD", **npu_kwargs(kw)))
    ref_o, ref_m, ref_s = flash_attention_reference(q, k, v, 4, "BNSD", **kw)
    assert_close_fa(out, ref_o, flash_attention_lowprec(q, k, v, 4, "BNSD", **kw), what="outer pse (NPU)")
    assert_stats_close(smax, ssum, ref_m, ref_s)


@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_dropout_keep_bits_on_npu_equal_the_host_generator(gen, layout):
    """The NPU kernel's keep bits (read out through q = 0, v = I) equal dropout.keep_mask's, and so the twin's,
    bitwise."""
    from test_fa_dropout import keep_bits_problem
    q, k, v, kw, check = keep_bits_problem(layout, 3, 192, gen)
    check(to_cpu(op(*to_npu(q, k, v), 3, layout, **kw)[0])[0], "NPU")


def test_dropout_on_npu_vs_float64(gen):
    """Generated keep bits and a user dropout_mask (S2 % 8 == 0, the in-place form the adapter reads): the output
    against float64 with the same mask; a TND user mask is refused on NPU tensors."""
    q, k, v = make_qkv(gen, "BSND", 2, 4, 2, 150, 232, 64, 64, torch.bfloat16)
    base = dict(scale=0.125, sparse_mode=3, keep_prob=0.8, seed=17, offset=3)
    user = torch.randint(0, 256, ((2 * 4 * 150 * 232 + 7) // 8,), dtype=torch.uint8, generator=gen)
    for kw in (base, dict(base, dropout_mask=user)):
        out = to_cpu(*op(*to_npu(q, k, v), 4, "BSND", **npu_kwargs(kw)))[0]
        ref = flash_attention_reference(q.double(), k.double(), v.double(), 4, "BSND", **kw)[0]
        assert_close_fa(out, ref, flash_attention_lowprec(q, k, v, 4, "BSND", **kw), what="dropout (NPU)")
    qt, kt, vt = make_qkv(gen, "TND", 2, 4, 2, 0, 0, 64, 64, torch.bfloat16, [70, 80], [96, 104])
    with pytest.raises(NotImplementedError, match="dropout_mask"):
        op(*to_npu(qt, kt, vt), 4, "TND", actual_seq_qlen=[70, 150], actual_seq_kvlen=[96, 200], keep_prob=0.8,
           dropout_mask=torch.zeros(4 * (70 * 96 + 80 * 104) // 8 + 1, dtype=torch.uint8).npu())
