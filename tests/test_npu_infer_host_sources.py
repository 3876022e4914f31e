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
from npu_flash_attn.interfaces.fused_infer import antiquant_params

ROOT = Path(__file__).resolve().parent.parent
CHIP = "Ascend910B2"
TENSORS = ("query", "key", "value", "block_table", "atten_mask", "pse_shift", "alibi_slopes", "antiquant_scale",
           "antiquant_offset", "key_antiquant_scale", "key_antiquant_offset", "value_antiquant_scale",
           "value_antiquant_offset")


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
    pse = _rand(gen, 1, N1, S1 + r(0, 5), S2 + r(0, 9))
    cases["bsnd_pse_shift_causal"] = dict(query=_rand(gen, B, S1, N1, D), key=k, value=k, pse_shift=pse,
                                          num_heads=N1, num_key_value_heads=N2, input_layout="BSND", sparse_mode=3)
    kc = _rand(gen, B, S2, N2, D)
    cases["bsnd_window_softcap_alibi"] = dict(query=_rand(gen, B, S1, N1, D), key=kc, value=kc,
                                              alibi_slopes=torch.rand(B, N1, generator=gen), num_heads=N1,
                                              num_key_value_heads=N2, input_layout="BSND", window_left=r(0, 40),
                                              window_right=0, softcap=30.0, actual_seq_lengths_kv=[r(0, S2 + 1) for _ in range(B)])
    page8 = int(rng.choice([32, 64, 128]))  # an int8 cache's block_size: a multiple of 32
    i8 = torch.randint(-128, 128, (blocks, page8, N2 * D), generator=gen, dtype=torch.int8)
    lens8 = [r(0, pages * page8 + 1) for _ in range(B)]
    cases["decode_int8_per_channel"] = dict(query=_rand(gen, B, 1, N1 * D), key=i8, value=i8, block_table=table,
                                            antiquant_scale=_rand(gen, 2, N2, D), antiquant_offset=_rand(gen, 2, N2, D),
                                            num_heads=N1, num_key_value_heads=N2, input_layout="BSH",
                                            block_size=page8, actual_seq_lengths_kv=lens8)
    per_token = torch.rand(1, B, pages * page8, generator=gen)
    cases["decode_int8_key_channel_value_token"] = dict(
        query=_rand(gen, B, 1, N1 * D), key=i8, value=i8, block_table=table, key_antiquant_scale=_rand(gen, 1, N2 * D),
        value_antiquant_scale=per_token, value_antiquant_mode=1, num_heads=N1, num_key_value_heads=N2,
        input_layout="BSH", block_size=page8, actual_seq_lengths_kv=lens8)
    lens = [r(1, 9) for _ in range(B)]
    cu = torch.tensor(lens).cumsum(0).tolist()
    cases["tnd_paged"] = dict(query=_rand(gen, cu[-1], N1, D), key=cache, value=cache, block_table=table,
                              num_heads=N1, num_key_value_heads=N2, input_layout="TND", block_size=page,
                              actual_seq_lengths=cu, actual_seq_lengths_kv=[max(q, n) for q, n in zip(lens, kv_lens)],
                              sparse_mode=3, softmax_lse_flag=True)
    return cases


def test_op_reading_gives_the_twin_problem_and_plan(gen, rng):
    """The main pass reads its tensors as inputs (pse_shift, alibi_slopes included) and the antiquant tensors from
    their shape and dtype attributes; the combine pass reads every tensor from attributes, pse_shift in the query's
    dtype and alibi_slopes float32."""
    ext = native.ext()
    splits = {}
    for tag, case in _cases(gen, rng).items():
        attrs = {k: v for k, v in case.items() if k not in TENSORS}
        got = {t: case.get(t) for t in TENSORS}
        named = lambda read: {t: read(got[t]) for t in TENSORS[3:]}  # noqa: E731
        twin = ext.InferCall(*(_twin(got[t]) for t in TENSORS[:3]), **named(_twin), **attrs)
        op = ext.InferCall(*(_op(got[t]) for t in TENSORS[:3]), **named(_op), **attrs)
        q_dtype = str(got["query"].dtype)
        as_attrs = dict(named(_op), block_table=_op(got["block_table"], "torch.int32"),
                        atten_mask=_op(got["atten_mask"], "torch.uint8"), pse_shift=_op(got["pse_shift"], q_dtype),
                        alibi_slopes=_op(got["alibi_slopes"], "torch.float32"))
        combine = ext.InferCall(*(_op(got[t]) for t in TENSORS[:3]), **as_attrs, **attrs)
        want_problem, want_plan = ext.flash_attention_infer_problem(twin), ext.flash_attention_infer_plan(twin, CHIP)
        for reading in (op, combine):
            assert ext.flash_attention_infer_problem(reading) == want_problem, tag
            assert ext.flash_attention_infer_plan(reading, CHIP) == want_plan, tag
        splits[tag] = want_plan["splits"]
        quant = want_problem["antiquant"]
        assert (quant is not None) == tag.startswith("decode_int8"), tag
        if quant is not None:  # the antiquant input's size, which the TilingFunc and the adapter check
            packed = antiquant_params(want_problem, **{n: got[n] for n in TENSORS if "antiquant" in n})
            assert packed.dtype == torch.float32 and packed.numel() == quant["elems"], tag
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


def _antiquant_tensors(hdr):
    """(name, Name, member) of each antiquant tensor (fa_infer_op_args.h's NPU_FA_INFER_ANTIQUANT_TENSORS)."""
    body = re.search(r"#define NPU_FA_INFER_ANTIQUANT_TENSORS\(X\)(.*?)\n\n", hdr, re.S).group(1)
    return re.findall(r"X\((\w+), (\w+), (\w+)\)", body)


def _infer_attrs(hdr):
    """The InferAttr enumerators' suffixes in order, NPU_FA_INFER_ANTIQUANT_TENSORS expanded (<Name>Shape,
    <Name>Dtype each)."""
    body = re.search(r"enum InferAttr : uint32_t \{(.*?)\};", hdr, re.S).group(1)
    quant = [f"kInferAttr{Name}{part}" for _, Name, _ in _antiquant_tensors(hdr) for part in ("Shape", "Dtype")]
    body = body.replace("NPU_FA_INFER_ANTIQUANT_TENSORS(NPU_FA_ANTIQUANT_ATTR_POSITIONS)", ", ".join(quant) + ",")
    names = [e.split("=")[0].strip() for e in body.split(",") if e.strip()]
    return [n[len("kInferAttr"):] for n in names if n != "kInferAttrs"]


def test_attr_order_matches_indices():
    """The TilingFuncs read attributes by index (fa_infer_op_args.h): the OpDefs declare them in that order."""
    src = (ROOT / "op_host" / "cann" / "flash_attention_infer_def.cpp").read_text()
    hdr = (ROOT / "op_host" / "cann" / "fa_infer_op_args.h").read_text()
    pascal = lambda n: "".join(w.capitalize() for w in n.split("_"))  # noqa: E731
    body = re.search(r"void InferAttrs\(OpDef& def\) \{(.*?)\n\}", src, re.S).group(1)
    declared = re.findall(r'Attr\("(\w+)"\)', body)
    assert "NPU_FA_INFER_ANTIQUANT_TENSORS(NPU_FA_ANTIQUANT_ATTRS)" in body
    assert re.search(r'Attr\(#name "_shape"\).*ListInt.*\n.*Attr\(#name "_dtype"\)', body)
    declared += [f"{name}_{part}" for name, _, _ in _antiquant_tensors(hdr) for part in ("shape", "dtype")]
    assert [pascal(a) for a in declared] == _infer_attrs(hdr)
    combine = re.search(r"enum CombineAttr : uint32_t \{(.*?)\};", hdr, re.S).group(1)
    enum = [e.split("=")[0].strip()[len("kCombineAttr"):] for e in combine.split(",") if e.strip()]
    body = re.search(r"class FlashAttentionNpuFaInferCombine : public OpDef \{(.*?)\n\};", src, re.S).group(1)
    assert [pascal(a) for a in re.findall(r'Attr\("(\w+)"\)', body)] == enum


def test_aclnn_attribute_order_is_the_opdef_order():
    """The adapter passes the attributes positionally, and the aclnn stand-in declares them: both in InferAttr order
    (same-typed neighbours swapped would still compile)."""
    hdr = (ROOT / "op_host" / "cann" / "fa_infer_op_args.h").read_text()
    want = [n[0].lower() + n[1:] for n in _infer_attrs(hdr)]
    quant = [f"{member}{part}" for _, _, member in _antiquant_tensors(hdr) for part in ("Shape", "Dtype")]
    adapter = (ROOT / "csrc" / "npu" / "npu_infer_adapter.cpp").read_text()
    body = re.search(r"#define NPU_FA_ACL_INFER_ATTRS\(c, layout\)(.*?)\n\n", adapter, re.S).group(1)
    body = body.replace("&layout[0]", "c.inputLayout").replace(
        "NPU_FA_INFER_ANTIQUANT_TENSORS(NPU_FA_ACL_ANTIQUANT_ATTRS)", ", ".join(f"c.{m}" for m in quant))
    assert re.findall(r"c\.(\w+)", body) == want
    standin = (ROOT / "op_host" / "cann" / "aclnn_standin.h").read_text()
    body = re.search(r"#define NPU_FA_STANDIN_INFER_ATTRS(.*?)\n\n", standin, re.S).group(1)
    body = body.replace("NPU_FA_INFER_ANTIQUANT_TENSORS(NPU_FA_STANDIN_ANTIQUANT_ATTRS)",
                        ", ".join(f"x {m}" for m in quant))
    params = [p for p in body.replace("\\", " ").split(",") if p.strip()]
    names = [p.split()[-1].lstrip("*").removesuffix("Optional") for p in params]
    assert names == want


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
