"""The inference op's CANN side (docs/npu.md, "The inference op") as far as it runs without CANN:

* the op's reading of a call (fa_infer_op_context.h: shapes and dtypes only, no strides; the combine pass reads the
  main pass's tensors from shape attributes, the mask as bytes) gives the problem module the same problem and plan
  as the twin's call of the same contiguous tensors, for the layouts, both cache layouts, masks and split-KV;
* the OpDefs declare their attributes in the order the TilingFuncs read them by index (fa_infer_op_args.h);
* the adapter launches the combine pass exactly when the plan says so, with the main pass's workspace.
The compile checks against the CANN and torch_npu headers are in tests/test_npu_host_sources.py.
"""
import re
from pathlib import Path

import pytest
import torch

from npu_flash_attn import native

ROOT = Path(__file__).resolve().parent.parent
CHIP = "Ascend910B2"


def _twin(t):
    return None if t is None else (list(t.shape), list(t.stride()), str(t.dtype))


def _op(t, dtype=None):
    """A tensor as the TilingFunc reads it: shape and dtype, no strides."""
    return None if t is None else (list(t.shape), [], dtype or str(t.dtype))


def _rand(gen, *shape):
    return torch.randn(*shape, generator=gen).to(torch.float16)


def _cases(gen, rng):
    r = lambda lo, hi: int(rng.integers(lo, hi))  # noqa: E731
    B, N2, G, D = r(2, 4), r(1, 3), int(rng.choice([1, 4, 8])), int(rng.choice([64, 128]))
    N1, page, pages = N2 * G, int(rng.choice([16, 64, 128])), r(3, 6)
    blocks = B * pages + r(0, 4)
    table = torch.randperm(blocks, generator=gen)[:B * pages].reshape(B, pages).to(torch.int32)
    kv_lens = [r(0, pages * page + 1) for _ in range(B)]
    cases = {}
    cache = _rand(gen, blocks, page, N2 * D)
    cases["decode_bsh_paged"] = dict(query=_rand(gen, B, 1, N1 * D), key=cache, value=cache, block_table=table,
                                      num_heads=N1, num_key_value_heads=N2, input_layout="BSH", block_size=page,
                                      actual_seq_lengths_kv=kv_lens, softmax_lse_flag=True)
    long = _rand(gen, 1, 1000, N2 * D)  # one sequence, few (batch, KV head) units: the keys split
    cases["decode_split_kv"] = dict(query=_rand(gen, 1, 1, N1 * D), key=long, value=long, num_heads=N1,
                                    num_key_value_heads=N2, input_layout="BSH", actual_seq_lengths_kv=[r(300, 1001)])
    many = _rand(gen, 48, 20, N2 * D)  # 48 sequences: enough units for every core, no split
    cases["decode_many_sequences"] = dict(query=_rand(gen, 48, 1, N1 * D), key=many, value=many, num_heads=N1,
                                          num_key_value_heads=N2, input_layout="BSH", softmax_lse_flag=True)
    nz = _rand(gen, blocks, N2, page, D)
    S1 = r(2, 40)
    cases["prefill_bnsd_nz_cache_causal"] = dict(query=_rand(gen, B, N1, S1, D), key=nz, value=nz, block_table=table,
                                                  num_heads=N1, num_key_value_heads=N2, input_layout="BNSD",
                                                  block_size=page, sparse_mode=3,
                                                  actual_seq_lengths_kv=[max(S1, n) for n in kv_lens])
    S2 = r(50, 300)
    k = _rand(gen, B, S2, N2, D)
    mask = torch.rand(B, 1, S1, S2, generator=gen) > 0.7
    cases["bsnd_dense_mask"] = dict(query=_rand(gen, B, S1, N1, D), key=k, value=k, atten_mask=mask, num_heads=N1,
                                    num_key_value_heads=N2, input_layout="BSND", pre_tokens=r(5, 60),
                                    next_tokens=r(0, 20))
    lens = [r(1, 9) for _ in range(B)]
    cu = torch.tensor(lens).cumsum(0).tolist()
    cases["tnd_paged"] = dict(query=_rand(gen, cu[-1], N1, D), key=cache, value=cache, block_table=table,
                              num_heads=N1, num_key_value_heads=N2, input_layout="TND", block_size=page,
                              actual_seq_lengths=cu, actual_seq_lengths_kv=[max(q, n) for q, n in zip(lens, kv_lens)],
                              sparse_mode=3, softmax_lse_flag=True)
    return cases


def test_op_reading_gives_the_twin_problem_and_plan(gen, rng):
    ext = native.ext()
    tensors = ("query", "key", "value", "block_table", "atten_mask")
    splits = {}
    for tag, case in _cases(gen, rng).items():
        attrs = {k: v for k, v in case.items() if k not in tensors}
        got = {t: case.get(t) for t in tensors}
        twin = ext.InferCall(*(_twin(got[t]) for t in tensors[:3]), block_table=_twin(got["block_table"]),
                             atten_mask=_twin(got["atten_mask"]), **attrs)
        op = ext.InferCall(*(_op(got[t]) for t in tensors[:3]), block_table=_op(got["block_table"]),
                           atten_mask=_op(got["atten_mask"]), **attrs)
        # the combine pass: the mask as bytes (its shape attribute), the table as int32
        combine = ext.InferCall(*(_op(got[t]) for t in tensors[:3]), block_table=_op(got["block_table"], "torch.int32"),
                                atten_mask=_op(got["atten_mask"], "torch.uint8"), **attrs)
        want_problem, want_plan = ext.flash_attention_infer_problem(twin), ext.flash_attention_infer_plan(twin, CHIP)
        for reading in (op, combine):
            assert ext.flash_attention_infer_problem(reading) == want_problem, tag
            assert ext.flash_attention_infer_plan(reading, CHIP) == want_plan, tag
        splits[tag] = want_plan["splits"]
    assert splits["decode_split_kv"] > 1 and splits["decode_many_sequences"] == 1, splits  # both passes' plans


def test_op_reading_refuses_what_the_problem_module_refuses():
    """What the TilingFunc refuses (GRAPH_FAILED with this message in the CANN log): the problem module's rules."""
    ext = native.ext()
    half = "torch.float16"
    q, cache, table = ([2, 1, 256], [], half), ([8, 128, 256], [], half), ([2, 4], [], "torch.int32")
    bad = {
        "layout": (dict(input_layout="SBH"), ValueError, "input_layout"),
        "table_dtype": (dict(block_table=([2, 4], [], "torch.int64"), block_size=128, actual_seq_lengths_kv=[5, 5]),
                        TypeError, "block_table dtype torch.int64 must be torch.int32"),
        "block_size": (dict(block_table=table, block_size=100, actual_seq_lengths_kv=[5, 5]), ValueError,
                       "block_size"),
        "no_kv_lengths": (dict(block_table=table, block_size=128), ValueError, "actual_seq_lengths_kv"),
    }
    for tag, (kw, error, message) in bad.items():
        args = dict(num_heads=2, num_key_value_heads=2, input_layout="BSH")
        args.update(kw)
        with pytest.raises(error, match=re.escape(message)):
            ext.flash_attention_infer_problem(ext.InferCall(q, cache, cache, **args))


def test_attr_order_matches_indices():
    """The TilingFuncs read attributes by index (fa_infer_op_args.h): the OpDefs declare them in that order."""
    src = (ROOT / "op_host" / "cann" / "flash_attention_infer_def.cpp").read_text()
    hdr = (ROOT / "op_host" / "cann" / "fa_infer_op_args.h").read_text()

    def enum(name, prefix):
        body = re.search(r"enum %s : uint32_t \{(.*?)\};" % name, hdr, re.S).group(1)
        names = [e.split("=")[0].strip() for e in body.split(",") if e.strip()]
        return [n[len(prefix):] for n in names if n != "kInferAttrs"]

    pascal = lambda n: "".join(w.capitalize() for w in n.split("_"))  # noqa: E731
    common = re.findall(r'Attr\("(\w+)"\)', re.search(r"void InferAttrs\(OpDef& def\) \{(.*?)\n\}", src, re.S).group(1))
    assert [pascal(a) for a in common] == enum("InferAttr", "kInferAttr")
    body = re.search(r"class FlashAttentionNpuFaInferCombine : public OpDef \{(.*?)\n\};", src, re.S).group(1)
    assert [pascal(a) for a in re.findall(r'Attr\("(\w+)"\)', body)] == enum("CombineAttr", "kCombineAttr")


def test_adapter_runs_the_combine_pass_when_the_plan_splits():
    src = (ROOT / "csrc" / "npu" / "npu_infer_adapter.cpp").read_text()
    assert "if (plan.combine)" in src
    combine = src[src.index("if (plan.combine)"):]
    # the same workspace buffer, never grown: it holds the main pass's partials
    assert re.search(r"aclnnFlashAttentionNpuFaInferCombine, workspace, query, false\)", combine)
    func = (ROOT / "op_host" / "cann" / "flash_attention_infer_tiling_func.cpp").read_text()
    assert "if (!c.plan.combine)" in func and "t.combineCores" in func


def test_npu_schema_matches_the_adapter_kernel():
    """torch.ops.npu.fused_infer_attention (defined in Python, implemented only by the adapter): its arguments, in
    order, are the adapter kernel's parameters."""
    schema = torch.ops.npu.fused_infer_attention.default._schema
    src = (ROOT / "csrc" / "npu" / "npu_infer_adapter.cpp").read_text()
    params = re.search(r"FusedInferAttentionNpu\((.*?)\) \{", src, re.S).group(1)
    names = [p.split()[-1] for p in params.split(",")]
    assert names == [a.name for a in schema.arguments]
    assert 'm.impl("fused_infer_attention"' in src


def test_other_devices_are_refused_naming_the_device():
    from npu_flash_attn import npu_fused_infer_attention_score
    q = torch.empty(1, 1, 64, dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="query is on device meta; npu_fused_infer_attention_score runs on CPU "
                                         r"tensors \(CPU twin\) or NPU tensors"):
        npu_fused_infer_attention_score(q, q, q)
