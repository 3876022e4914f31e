"""The real-NPU path's host sources (docs/npu.md) as far as they run without CANN:

* the problem module (op_host/problem) reads a call as the CANN TilingFunc gets it (the mask input already in the
  kernels' view, contiguous; fa_op_context.h) into the same problem, tiling and seq_info as the twin path's call
  (the caller's mask with its strides), for every layout, the sparse modes and dense masks, and refuses bad calls
  with the rule's message; it compiles without pybind, torch or CANN headers;
* CMake refuses to configure without ASCEND_HOME_PATH, naming it; so does scripts/build_npu.sh;
* scripts/check_host.sh type-checks the host sources (and the adapter, with NPU_FA_CHECK_ADAPTER=1 and
  TORCH_NPU_WHEEL) against the CANN headers when the mirrors are there (CANN_MIRROR_ROOT); skipped otherwise.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from npu_flash_attn import native, problem, twin_backend

ROOT = Path(__file__).resolve().parent.parent
INT32_MAX = 2147483647
CHIP = "Ascend910B2"


def _arg(t):
    return None if t is None else (list(t.shape), list(t.stride()), str(t.dtype))


def _plans(q, k, v, head_num, layout, atten_mask=None, **kw):
    """The tiling facts of one call as the twin passes it and as the CANN op reads it (the op's mask input is the
    twin's kernel view, contiguous)."""
    p = problem.validate_flash_attention(q, k, v, head_num, layout, atten_mask=atten_mask, **kw)
    ext = native.ext()
    view = twin_backend.kernel_mask(p, atten_mask) if p.dense_mask else atten_mask
    if view is not None and p.layout == "TND":
        view = view.reshape(view.shape[-2:])
    op_call = ext.Call(_arg(q), _arg(k), _arg(v), head_num, layout, atten_mask=_arg(view), mask_is_kernel_view=True,
                       contiguous_mask=True, **kw)
    twin, op = ext.flash_attention_plan(p.call, CHIP), ext.flash_attention_plan(op_call, CHIP)
    return p, twin, op


def _rand(gen, *shape, dtype=torch.float16):
    return torch.randn(*shape, generator=gen).to(dtype)


def test_op_problem_matches_twin_problem(gen, rng):
    """The CANN op's reading of a call == the twin's: identical tiling, seq_info, block-map geometry and key."""
    r = lambda lo, hi: int(rng.integers(lo, hi))  # noqa: E731
    B, N2, G, S1, S2, D = r(2, 4), r(1, 3), r(1, 3), r(17, 200), r(17, 300), int(rng.choice([40, 64, 72, 128]))
    N1, Dv = N2 * G, D - 8 * r(0, 3)
    cases = {}
    q, k, v = _rand(gen, B, S1, N1, D), _rand(gen, B, S2, N2, D), _rand(gen, B, S2, N2, Dv)
    mask = torch.rand(B, 1, S1, S2, generator=gen) > 0.6
    cases["bsnd_mask_band"] = (q, k, v, N1, "BSND", mask, dict(scale=0.125, pre_tokens=r(20, 90),
                                                                 next_tokens=r(0, 40)))
    expanded = (torch.rand(1, N1, 1, S2, generator=gen) > 0.5).expand(B, N1, S1, S2)  # stride-0 dims
    cases["bsnd_expanded_mask"] = (q, k, v, N1, "bsnd", expanded, dict(sparse_mode=1))
    cases["bsnd_column_broadcast"] = (q, k, v, N1, "BSND", torch.rand(B, 1, S1, 1, generator=gen) > 0.5,
                                      dict(sparse_mode=1))
    cases["bsnd_full_ignores_band"] = (q, k, v, N1, "BSND", None, dict(pre_tokens=5, next_tokens=3))
    prefix = [r(max(0, S2 - S1), S2 + 1) for _ in range(B)]  # the built-in's range for Sq <= Skv
    cases["bsnd_prefix6"] = (q, k, v, N1, "BSND", None, dict(prefix=prefix, sparse_mode=6))
    qb, kb, vb = (x.permute(0, 2, 1, 3).contiguous() for x in (q, k, v))
    cases["bnsd_causal3"] = (qb, kb, vb, N1, "BNSD", None, dict(pre_tokens=r(0, 50), sparse_mode=3))
    qh, kh, vh = (x.reshape(x.shape[0], x.shape[1], -1).to(torch.bfloat16) for x in (q, k, v))
    cases["bsh_2d_mask"] = (qh, kh, vh, N1, "BSH", torch.rand(S1, S2, generator=gen) > 0.3, dict(sparse_mode=1))
    qs, ks, vs = (x.transpose(0, 1).contiguous() for x in (qh, kh, vh))
    cases["sbh_band4"] = (qs, ks, vs, N1, "SBH", None, dict(pre_tokens=r(S1, S1 + 50), next_tokens=r(0, 30),
                                                          sparse_mode=4))
    lens_q, lens_kv = [r(1, 90) for _ in range(3)], [r(1, 120) for _ in range(3)]
    cu_q, cu_kv = list(torch.tensor(lens_q).cumsum(0).tolist()), list(torch.tensor(lens_kv).cumsum(0).tolist())
    T1, T2 = cu_q[-1] + r(0, 9), cu_kv[-1] + r(0, 9)
    qt, kt, vt = _rand(gen, T1, N1, D), _rand(gen, T2, N2, D), _rand(gen, T2, N2, Dv)
    cases["tnd_trailing_zeros"] = (qt, kt, vt, N1, "TND", None, dict(actual_seq_qlen=cu_q + [0, 0],
                                                                      actual_seq_kvlen=cu_kv + [0, 0], sparse_mode=2))
    glob = torch.rand(cu_q[-1], cu_kv[-1], generator=gen) > 0.5
    cases["tnd_global_mask"] = (qt, kt, vt, N1, "TND", glob, dict(actual_seq_qlen=cu_q, actual_seq_kvlen=cu_kv))
    local = torch.rand(max(lens_q) + r(0, 5), max(lens_kv) + r(0, 5), generator=gen) > 0.5
    cases["tnd_local_mask_band"] = (qt, kt, vt, N1, "TND", local, dict(pre_tokens=r(30, 60), next_tokens=r(0, 20),
                                                                       actual_seq_qlen=cu_q, actual_seq_kvlen=cu_kv))
    dense = {}
    for tag, (q_, k_, v_, n, layout, m, kw) in cases.items():
        p, twin, op = _plans(q_, k_, v_, n, layout, m, **kw)
        assert twin == op, (tag, twin, op)
        dense[tag] = p.dense_mask
    assert dense == {"bsnd_mask_band": True, "bsnd_expanded_mask": True, "bsnd_column_broadcast": True,
                     "bsnd_full_ignores_band": False, "bsnd_prefix6": False, "bnsd_causal3": False,
                     "bsh_2d_mask": True, "sbh_band4": False, "tnd_trailing_zeros": False, "tnd_global_mask": True,
                     "tnd_local_mask_band": True}


def test_op_problem_refuses_bad_calls():
    """What the TilingFunc refuses (GRAPH_FAILED with this message in the CANN log): the op's own rules."""
    ext = native.ext()
    half = "torch.float16"
    q, kv = ([4, 33, 4, 64], [], half), ([4, 40, 2, 64], [], half)
    mask = lambda *s: (list(s), [], "torch.uint8")  # noqa: E731
    bad = {  # tag: (call arguments, message)
        "layout": (dict(input_layout="BHSD"), "input_layout='BHSD' is not supported"),
        "heads": (dict(head_num=3), "head_num=3 must equal the query's head dimension N1=4"),
        "mask_shape": (dict(atten_mask=mask(4, 3, 33, 40), sparse_mode=1), "is not broadcastable"),
        "mask_cols": (dict(atten_mask=mask(4, 1, 33, 1), sparse_mode=1), "last dimension must equal S2=40"),
        "cu_order": (dict(query=([50, 4, 64], [], half), key=([60, 2, 64], [], half), value=([60, 2, 64], [], half),
                          input_layout="TND", sparse_mode=2, actual_seq_qlen=[20, 10], actual_seq_kvlen=[30, 40]),
                     "non-decreasing"),
        "mode7": (dict(sparse_mode=7), "sparse_mode=7 (varlen split, right-down causal) requires input_layout='TND'"),
    }
    for tag, (kw, message) in bad.items():
        args = dict(query=q, key=kv, value=kv, head_num=4, input_layout="BSND", mask_is_kernel_view=True,
                    contiguous_mask=True)
        args.update(kw)
        with pytest.raises(ValueError, match=re.escape(message)):
            ext.flash_attention_problem(ext.Call(**args))


_STANDALONE = r"""
#include <cstdio>
#include "problem/fa_problem_build.h"
int main() {
    npu_fa::FaCall c;
    c.query = {true, {2, 5, 4, 64}, {}, "torch.float16"};
    c.key = c.value = {true, {2, 7, 2, 64}, {}, "torch.float16"};
    c.attrs.headNum = 4;
    c.attrs.inputLayout = "BSND";
    npu_fa::FaProblemInfo info;
    const npu_fa::FaError e = npu_fa::BuildProblem(c, info);
    c.attrs.headNum = 3;
    npu_fa::FaProblemInfo bad;
    const npu_fa::FaError refused = npu_fa::BuildProblem(c, bad);
    std::printf("%d %lld %lld|%s\n", (int)e.kind, (long long)info.outShape[1], (long long)info.statsShape[2],
                refused.message.c_str());
}
"""


def test_problem_module_stands_alone(tmp_path):
    """The problem module needs no pybind, torch or CANN header (the TilingFunc and the adapter link it too)."""
    (tmp_path / "m.cpp").write_text(_STANDALONE)
    exe = tmp_path / "m"
    subprocess.run(["g++", "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'chip'}",
                    f"-I{ROOT / 'op_host'}", f"-I{ROOT / 'op_kernel'}", str(tmp_path / "m.cpp"),
                    *map(str, sorted((ROOT / "op_host" / "problem").glob("*.cpp"))), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out.startswith("0 5 5|head_num=3 must equal the query's head dimension N1=4"), out


def _no_ascend_env():
    return {k: v for k, v in os.environ.items() if k != "ASCEND_HOME_PATH"}


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_cmake_configure_needs_ascend_home_path(tmp_path):
    r = subprocess.run(["cmake", "-S", str(ROOT), "-B", str(tmp_path / "b")], capture_output=True, text=True,
                       env=_no_ascend_env(), timeout=120)
    assert r.returncode != 0
    assert "ASCEND_HOME_PATH is not set" in r.stderr and "set_env.sh" in r.stderr


def test_build_script_needs_ascend_home_path():
    r = subprocess.run(["bash", str(ROOT / "scripts" / "build_npu.sh")], capture_output=True, text=True,
                       env=_no_ascend_env(), timeout=60)
    assert r.returncode == 1 and "ASCEND_HOME_PATH is not set" in r.stderr


def test_check_host_script_names_what_a_fresh_clone_lacks(tmp_path):
    """The checker is a shared tool outside the repository: the script says so, then asks for the mirrors."""
    env = {k: v for k, v in os.environ.items() if k != "CANN_MIRROR_ROOT"}
    script = str(ROOT / "scripts" / "check_host.sh")
    r = subprocess.run(["bash", script], capture_output=True, text=True, timeout=60,
                       env=dict(env, CANN_HOST_CHECK=str(tmp_path / "absent")))
    assert r.returncode == 2
    assert re.search(r"cann_host_check is missing: no .*absent/check_host\.py\. It is not part of this repository",
                     r.stderr) and "../shared/tools/cann_host_check" in r.stderr and "CANN_HOST_CHECK" in r.stderr
    (tmp_path / "check_host.py").write_text("raise SystemExit(1)\n")  # a tool that would fail: never reached
    r = subprocess.run(["bash", script], capture_output=True, text=True, timeout=60,
                       env=dict(env, CANN_HOST_CHECK=str(tmp_path)))
    assert r.returncode == 2 and "set CANN_MIRROR_ROOT" in r.stderr and "is missing" not in r.stderr


@pytest.mark.skipif(not os.environ.get("CANN_MIRROR_ROOT"), reason="needs the CANN header mirrors (CANN_MIRROR_ROOT)")
def test_host_sources_pass_cann_host_check():
    """OpDefs, InferShape and TilingFuncs against the CANN 9.1.0 headers; with NPU_FA_CHECK_ADAPTER=1 and
    TORCH_NPU_WHEEL also the adapter (torch_npu 2.14.0 wheel headers, aclnn stand-in; about 20 s of torch headers)."""
    adapter = os.environ.get("NPU_FA_CHECK_ADAPTER") == "1" and os.environ.get("TORCH_NPU_WHEEL")
    args = [] if adapter else ["--no-adapter"]
    r = subprocess.run(["bash", str(ROOT / "scripts" / "check_host.sh")] + args, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for f in ("flash_attention_def.cpp", "flash_attention_infershape.cpp", "flash_attention_tiling_func.cpp",
              "flash_attention_infer_def.cpp", "flash_attention_infer_infershape.cpp",
              "flash_attention_infer_tiling_func.cpp"):
        assert f"OK   op_host/cann/{f}" in r.stdout
    if not args:
        assert "OK   csrc/npu/npu_adapter.cpp [torch, prelude]" in r.stdout
        assert "OK   csrc/npu/npu_infer_adapter.cpp [torch, prelude]" in r.stdout


def _camel(snake):
    head, *rest = snake.split("_")
    return head + "".join(w.capitalize() for w in rest)


def _kernel_args(macro):
    """(name, Name) of each argument of one fa_kernel_args.h list, the lists it names expanded in place."""
    hdr = (ROOT / "op_host" / "fa_kernel_args.h").read_text()
    body = re.search(r"#define %s\(X\)(.*?)(?:\n\n|\n//|$)" % macro, hdr, re.S).group(1)
    out = []
    for m in re.finditer(r"X\((\w+), (\w+), \w+, (?:REQUIRED|OPTIONAL)\)|(NPU_FA_\w+)\(X\)", body):
        out += _kernel_args(m.group(3)) if m.group(3) else [(m.group(1), m.group(2))]
    return out


def test_kernel_argument_list_matches_kernel_entries():
    """The kernel argument list is declared once (op_host/fa_kernel_args.h): each entry's GM parameters in op_kernel/
    must be its inputs then outputs, then workspace and tiling; every user expands the list."""
    entries = {  # list prefix: (inputs, outputs, kernel)
        "FWD": ("FWD_INPUTS", "FWD_OUTPUTS", "flash_attention_fwd.cpp"),
        "MAP": ("MAP_INPUTS", "MAP_OUTPUTS", "flash_attention_block_map.cpp"),
        "GRAD": ("GRAD_INPUTS", "GRAD_OUTPUTS", "flash_attention_bwd.cpp"),
        "INFER": ("INFER_INPUTS", "INFER_OUTPUTS", "flash_attention_infer.cpp"),
        "INFER_COMBINE": ("INFER_COMBINE_INPUTS", "INFER_OUTPUTS", "flash_attention_infer_combine.cpp")}
    for inputs, outputs, kernel in entries.values():
        args = _kernel_args(f"NPU_FA_{inputs}") + _kernel_args(f"NPU_FA_{outputs}")
        assert all(_camel(name)[0].upper() + _camel(name)[1:] == Name for name, Name in args), args
        ksrc = (ROOT / "op_kernel" / kernel).read_text()
        sig = re.search(r'extern "C" __global__ __aicore__ void %s\((.*?)\)' % kernel[:-4], ksrc, re.S).group(1)
        params = [p.split()[-1] for p in sig.split(",")]
        assert [_camel(name) for name, _ in args] + ["workspace", "tiling"] == params, (kernel, args, params)
    training = {"op_host/cann/flash_attention_def.cpp": "_INPUTS(NPU_FA_OPDEF_INPUT)",
                "op_host/cann/fa_op_args.h": "_INPUTS(NPU_FA_POSITION_",
                "op_host/cann/aclnn_standin.h": "_INPUTS(NPU_FA_STANDIN_TENSOR)",
                "csrc/twin/kernel_entries.h": "_INPUTS(NPU_FA_GM_PARAM)",
                "csrc/npu/npu_adapter.cpp": "_INPUTS(NPU_FA_ACL_TENSOR)"}
    inference = {"op_host/cann/flash_attention_infer_def.cpp": "_INPUTS(NPU_FA_OPDEF_INPUT)",
                 "op_host/cann/fa_infer_op_args.h": "_INPUTS(NPU_FA_POSITION_",
                 "op_host/cann/aclnn_standin.h": "_INPUTS(NPU_FA_STANDIN_TENSOR)",
                 "csrc/twin/kernel_entries.h": "_INPUTS(NPU_FA_GM_PARAM)",
                 "csrc/npu/npu_infer_adapter.cpp": "_INPUTS(NPU_FA_ACL_TENSOR)"}
    for users, prefixes in ((training, ("FWD", "MAP", "GRAD")), (inference, ("INFER", "INFER_COMBINE"))):
        for path, use in users.items():
            src = (ROOT / path).read_text()
            for prefix in prefixes:
                assert f"NPU_FA_{prefix}{use}" in src, (path, prefix)


def test_attr_order_matches_indices():
    """The TilingFunc reads attributes by index (fa_op_args.h enums): the OpDefs must declare them in that order."""
    src = (ROOT / "op_host" / "cann" / "flash_attention_def.cpp").read_text()
    hdr = (ROOT / "op_host" / "cann" / "fa_op_args.h").read_text()

    def enum(name):
        body = re.search(r"enum %s : uint32_t \{(.*?)\};" % name, hdr, re.S).group(1)
        names = [e.split("=")[0].strip() for e in body.split(",") if e.strip()]
        return [n for n in names if n != "kCommonAttrs"]  # Attr's end marker

    def attrs(block):
        return re.findall(r'Attr\("(\w+)"\)', block)

    common = attrs(re.search(r"void CommonAttrs\(OpDef& def\) \{(.*?)\n\}", src, re.S).group(1))
    pascal = lambda n: "".join(w.capitalize() for w in n.split("_"))  # noqa: E731
    assert ["kAttr" + pascal(a) for a in common] == enum("Attr")
    for op, prefix, name in (("FlashAttentionNpuFaBlockMap", "kMapAttr", "MapAttr"),
                             ("FlashAttentionNpuFaGrad", "kGradAttr", "GradAttr")):
        body = re.search(r"class %s : public OpDef \{(.*?)\n\};" % op, src, re.S).group(1)
        assert [prefix + pascal(a) for a in attrs(body)] == enum(name)
