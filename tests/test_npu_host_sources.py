"""The real-NPU path's host sources (docs/npu.md) as far as they run without CANN:

* op_host/cann/fa_op_args.h (what the TilingFunc and the torch_npu adapter build from the op's shapes and
  attributes) gives the same problem, tiling struct and seq_info, byte for byte, as the twin path (ops.py's
  validation + problem_dict, the extension's ParseProblem), for every layout, the sparse modes and dense masks;
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

from npu_flash_attn import problem, twin_backend

ROOT = Path(__file__).resolve().parent.parent
INT32_MAX = 2147483647

# Reads one case (the twin's problem dict, then the op's shapes and attributes), builds the op's problem with
# fa_op_args.h and prints whether both give identical tiling bytes and seq_info, or what differs.
_CHECKER = r"""
#include <cstdio>
#include <cstring>
#include <iostream>
#include "cann/fa_op_args.h"
using namespace npu_fa;
template <typename T> T Get() { T v; std::cin >> v; return v; }
std::vector<int64_t> List() { std::vector<int64_t> v(Get<size_t>()); for (auto& x : v) x = Get<int64_t>(); return v; }
int main() {
    std::string tag;
    while (std::cin >> tag) {
        FaProblem t;  // the twin's problem (twin/bindings/problem.h reads the same dict)
        t.dtype = Get<std::string>() == "bf16" ? kBf16 : kFp16;
        op::ParseLayout(Get<std::string>(), t.layout);
        t.batch = Get<uint32_t>(); t.n1 = Get<uint32_t>(); t.n2 = Get<uint32_t>(); t.s1 = Get<uint32_t>();
        t.s2 = Get<uint32_t>(); t.d = Get<uint32_t>(); t.dv = Get<uint32_t>(); t.scale = Get<float>();
        t.sparseMode = Get<uint32_t>(); t.preTokens = Get<int64_t>(); t.nextTokens = Get<int64_t>();
        t.cuSeqQ = List(); t.cuSeqKv = List(); t.t1 = Get<uint64_t>(); t.t2 = Get<uint64_t>(); t.prefix = List();
        t.denseMask = Get<int>();
        if (t.denseMask) {
            t.maskPerBatch = Get<int>(); t.maskPerHead = Get<int>(); t.maskStrideB = Get<uint64_t>();
            t.maskStrideN = Get<uint64_t>(); t.maskStrideS = Get<uint64_t>(); t.maskColStep = Get<uint32_t>();
            t.maskTndGlobal = Get<int>();
        }
        op::FaOpShapes s;
        op::FaOpAttrs a;
        s.query = List(); s.key = List(); s.value = List();
        s.bf16 = Get<int>(); s.hasMask = Get<int>(); s.mask = List();
        a.headNum = Get<int64_t>(); a.inputLayout = Get<std::string>(); a.scale = Get<float>();
        a.preTokens = Get<int64_t>(); a.nextTokens = Get<int64_t>(); a.sparseMode = Get<int64_t>();
        a.prefix = List(); a.actualSeqQlen = List(); a.actualSeqKvlen = List();
        FaProblem p;
        const std::string err = op::BuildFaProblem(s, a, p);
        if (!err.empty()) { std::printf("%s ERROR %s\n", tag.c_str(), err.c_str()); continue; }
        const ChipSpec& chip = *FindChip("Ascend910B2");
        const ChipSpec plat = op::ChipFromSizes("platform", chip.aicNum, chip.aivNum, chip.ubSize, chip.l1Size,
                                                chip.l0aSize, chip.l0bSize, chip.l0cSize);
        FaTilingOut ot, op_;
        const std::string e1 = ComputeFlashAttentionTiling(t, chip, ot), e2 = ComputeFlashAttentionTiling(p, plat, op_);
        const bool same = e1 == e2 && std::memcmp(&ot.data, &op_.data, sizeof(ot.data)) == 0 &&
                          ot.seqInfo == op_.seqInfo && ot.mapBytes == op_.mapBytes &&
                          ot.workspaceBytes == op_.workspaceBytes;
        std::printf("%s %s dense=%d mode=%u work=%d seq=%zu map=%llu %s|%s\n", tag.c_str(), same ? "SAME" : "DIFF",
                    (int)p.denseMask, p.sparseMode, (int)op::HasWork(p), op_.seqInfo.size(),
                    (unsigned long long)op_.mapBytes, e1.c_str(), e2.c_str());
    }
}
"""


@pytest.fixture(scope="module")
def checker(tmp_path_factory):
    d = tmp_path_factory.mktemp("fa_op_args")
    (d / "check.cpp").write_text(_CHECKER)
    exe = d / "check"
    subprocess.run(["g++", "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'op_host'}",
                    f"-I{ROOT / 'op_kernel'}", str(d / "check.cpp"),
                    str(ROOT / "op_host" / "flash_attention_tiling_host.cpp"), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    return exe


def _ints(v):
    v = list(v or [])
    return [str(len(v))] + [str(int(x)) for x in v]


def _case_tokens(tag, q, k, v, head_num, layout, atten_mask=None, scale=1.0, pre=INT32_MAX, nxt=INT32_MAX,
                 prefix=None, cu_q=None, cu_kv=None, sparse_mode=0):
    """The twin's problem (as the extension gets it) and the op's call (as the adapter passes it)."""
    p = problem.validate_flash_attention(q, k, v, head_num, layout, atten_mask=atten_mask, scale=scale, pre_tokens=pre,
                                     next_tokens=nxt, prefix=prefix, actual_seq_qlen=cu_q, actual_seq_kvlen=cu_kv,
                                     sparse_mode=sparse_mode)
    view = twin_backend.mask_view(atten_mask, p.layout, p.S2, p.mask_tnd_global) if p.dense_mask else None
    d = twin_backend.problem_dict(p, view)
    tw = [tag, d["dtype"], d["layout"]] + [str(d[x]) for x in ("B", "N1", "N2", "S1", "S2", "D", "Dv")]
    tw += [repr(d["scale"]), str(d["sparse_mode"]), str(d["pre_tokens"]), str(d["next_tokens"])]
    tw += _ints(d["cu_seqlens_q"]) + _ints(d["cu_seqlens_kv"]) + [str(d["T1"]), str(d["T2"])] + _ints(d["prefix"])
    tw += [str(int(d["dense_mask"]))]
    if d["dense_mask"]:
        assert d["mask_col_step"] == 1  # the NPU path reads every mask with column stride 1
        tw += [str(int(d[x])) for x in ("mask_per_batch", "mask_per_head", "mask_stride_b", "mask_stride_n",
                                         "mask_stride_s", "mask_col_step", "mask_tnd_global")]
    # The op's mask: the adapter's kernel view (stride-0 dimensions narrowed to 1; TND 2-D as given).
    mshape = [] if atten_mask is None else (list(atten_mask.shape) if p.layout == "TND"
                                            else list(view.tensor.shape) if view is not None
                                            else list(atten_mask.shape))
    opt = _ints(q.shape) + _ints(k.shape) + _ints(v.shape) + [str(int(q.dtype == torch.bfloat16)),
                                                              str(int(atten_mask is not None))] + _ints(mshape)
    opt += [str(head_num), layout, repr(float(scale)), str(pre), str(nxt), str(sparse_mode)]
    opt += _ints(prefix) + _ints(cu_q) + _ints(cu_kv)
    return " ".join(tw + opt)


def _rand(gen, *shape, dtype=torch.float16):
    return torch.randn(*shape, generator=gen).to(dtype)


def test_op_problem_matches_twin_problem(checker, gen, rng):
    """BuildFaProblem (op shapes + attributes) == the twin's validated problem: identical tiling and seq_info."""
    r = lambda lo, hi: int(rng.integers(lo, hi))  # noqa: E731
    B, N2, G, S1, S2, D = r(2, 4), r(1, 3), r(1, 3), r(17, 200), r(17, 300), int(rng.choice([40, 64, 72, 128]))
    N1, Dv = N2 * G, D - 8 * r(0, 3)
    cases = []
    q, k, v = _rand(gen, B, S1, N1, D), _rand(gen, B, S2, N2, D), _rand(gen, B, S2, N2, Dv)
    mask = torch.rand(B, 1, S1, S2, generator=gen) > 0.6
    cases.append(_case_tokens("bsnd_mask_band", q, k, v, N1, "BSND", mask, 0.125, pre=r(20, 90), nxt=r(0, 40)))
    expanded = (torch.rand(1, N1, 1, S2, generator=gen) > 0.5).expand(B, N1, S1, S2)  # stride-0 dims
    cases.append(_case_tokens("bsnd_expanded_mask", q, k, v, N1, "bsnd", expanded, sparse_mode=1))
    cases.append(_case_tokens("bsnd_full_ignores_band", q, k, v, N1, "BSND", None, pre=5, nxt=3))
    prefix = [r(max(0, S2 - S1), S2 + 1) for _ in range(B)]  # the built-in's range for Sq <= Skv
    cases.append(_case_tokens("bsnd_prefix6", q, k, v, N1, "BSND", None, prefix=prefix, sparse_mode=6))
    qb, kb, vb = (x.permute(0, 2, 1, 3).contiguous() for x in (q, k, v))
    cases.append(_case_tokens("bnsd_causal3", qb, kb, vb, N1, "BNSD", None, pre=r(0, 50), nxt=r(0, 50),
                              sparse_mode=3))  # pre/next unused by mode 3
    qh, kh, vh = (x.reshape(x.shape[0], x.shape[1], -1).to(torch.bfloat16) for x in (q, k, v))
    cases.append(_case_tokens("bsh_2d_mask", qh, kh, vh, N1, "BSH", torch.rand(S1, S2, generator=gen) > 0.3,
                              sparse_mode=1))
    qs, ks, vs = (x.transpose(0, 1).contiguous() for x in (qh, kh, vh))
    cases.append(_case_tokens("sbh_band4", qs, ks, vs, N1, "SBH", None, pre=r(S1, S1 + 50), nxt=r(0, 30),
                              sparse_mode=4))
    lens_q, lens_kv = [r(1, 90) for _ in range(3)], [r(1, 120) for _ in range(3)]
    cu_q, cu_kv = list(torch.tensor(lens_q).cumsum(0).tolist()), list(torch.tensor(lens_kv).cumsum(0).tolist())
    T1, T2 = cu_q[-1] + r(0, 9), cu_kv[-1] + r(0, 9)
    qt, kt, vt = _rand(gen, T1, N1, D), _rand(gen, T2, N2, D), _rand(gen, T2, N2, Dv)
    cases.append(_case_tokens("tnd_trailing_zeros", qt, kt, vt, N1, "TND", None, cu_q=cu_q + [0, 0],
                              cu_kv=cu_kv + [0, 0], sparse_mode=2))
    glob = torch.rand(cu_q[-1], cu_kv[-1], generator=gen) > 0.5
    cases.append(_case_tokens("tnd_global_mask", qt, kt, vt, N1, "TND", glob, cu_q=cu_q, cu_kv=cu_kv))
    local = torch.rand(max(lens_q) + r(0, 5), max(lens_kv) + r(0, 5), generator=gen) > 0.5
    cases.append(_case_tokens("tnd_local_mask_band", qt, kt, vt, N1, "TND", local, pre=r(30, 60), nxt=r(0, 20),
                              cu_q=cu_q, cu_kv=cu_kv))
    out = subprocess.run([str(checker)], input="\n".join(cases) + "\n", capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert len(lines) == len(cases), out.stdout
    for line in lines:
        assert " SAME " in line, line
    dense = {l.split()[0]: "dense=1" in l for l in lines}
    assert dense == {"bsnd_mask_band": True, "bsnd_expanded_mask": True, "bsnd_full_ignores_band": False,
                     "bsnd_prefix6": False, "bnsd_causal3": False, "bsh_2d_mask": True, "sbh_band4": False,
                     "tnd_trailing_zeros": False, "tnd_global_mask": True, "tnd_local_mask_band": True}


def test_op_problem_refuses_bad_calls(checker):
    """What the TilingFunc refuses (GRAPH_FAILED with this message in the CANN log)."""
    q, kv = "4 2 33 4 64", "4 2 40 2 64"
    bad = {  # tag: (q, k, v, mask, head_num, layout, sparse, cu_q, cu_kv, message)
        "layout": (q, kv, kv, "0", 4, "BHSD", 0, "0", "0", "input_layout 'BHSD'"),
        "heads": (q, kv, kv, "0", 3, "BSND", 0, "0", "0", "head_num 3 must equal"),
        "mask_shape": (q, kv, kv, "4 3 1 33 40", 4, "BSND", 1, "0", "0", "not broadcastable"),
        "mask_cols": (q, kv, kv, "4 1 1 33 1", 4, "BSND", 1, "0", "0", "last dimension must equal S2"),
        "cu_order": ("3 50 4 64", "3 60 2 64", "3 60 2 64", "0", 4, "TND", 2, "2 20 10", "2 30 40",
                     "non-decreasing"),
        "mode7": (q, kv, kv, "0", 4, "BSND", 7, "0", "0", "sparse_mode 7/8 require input_layout TND"),
    }
    lines = []
    for tag, (qs, ks, vs, ms, hn, layout, mode, cq, ckv, _) in bad.items():
        twin = f"{tag} fp16 BSND 1 1 1 1 1 64 64 1.0 0 {INT32_MAX} {INT32_MAX} 0 0 0 0 0 0"
        has_mask = int(ms != "0")
        lines.append(f"{twin} {qs} {ks} {vs} 0 {has_mask} {ms} {hn} {layout} 1.0 {INT32_MAX} {INT32_MAX} {mode} 0 "
                     f"{cq} {ckv}")
    out = subprocess.run([str(checker)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    got = {l.split()[0]: l for l in out.stdout.splitlines()}
    for tag, case in bad.items():
        assert " ERROR " in got[tag] and case[-1] in got[tag], got[tag]


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


def test_check_host_script_needs_mirrors():
    env = {k: v for k, v in os.environ.items() if k != "CANN_MIRROR_ROOT"}
    r = subprocess.run(["bash", str(ROOT / "scripts" / "check_host.sh")], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 2 and ("CANN_MIRROR_ROOT" in r.stderr or "cann_host_check" in r.stderr)


@pytest.mark.skipif(not os.environ.get("CANN_MIRROR_ROOT"), reason="needs the CANN header mirrors (CANN_MIRROR_ROOT)")
def test_host_sources_pass_cann_host_check():
    """OpDefs, InferShape and TilingFuncs against the CANN 9.1.0 headers; with NPU_FA_CHECK_ADAPTER=1 and
    TORCH_NPU_WHEEL also the adapter (torch_npu 2.14.0 wheel headers, aclnn stand-in; about 20 s of torch headers)."""
    adapter = os.environ.get("NPU_FA_CHECK_ADAPTER") == "1" and os.environ.get("TORCH_NPU_WHEEL")
    args = [] if adapter else ["--no-adapter"]
    r = subprocess.run(["bash", str(ROOT / "scripts" / "check_host.sh")] + args, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for f in ("flash_attention_def.cpp", "flash_attention_infershape.cpp", "flash_attention_tiling_func.cpp"):
        assert f"OK   op_host/cann/{f}" in r.stdout
    if not args:
        assert "OK   csrc/npu_adapter.cpp [torch, prelude]" in r.stdout


def _camel(snake):
    head, *rest = snake.split("_")
    return head + "".join(w.capitalize() for w in rest)


def test_opdef_order_matches_kernel_entries():
    """The build passes inputs, then outputs, then workspace and tiling to the kernel entry by position: each
    OpDef's parameter order must be its entry's argument order."""
    src = (ROOT / "op_host" / "cann" / "flash_attention_def.cpp").read_text()
    entries = {"FlashAttentionNpuFa": "flash_attention_fwd.cpp", "FlashAttentionNpuFaBlockMap":
               "flash_attention_block_map.cpp", "FlashAttentionNpuFaGrad": "flash_attention_bwd.cpp"}
    for op, kernel in entries.items():
        body = re.search(r"class %s : public OpDef \{(.*?)\n\};" % op, src, re.S).group(1)
        names = []
        params_re = r'(?:Param|In)\(this->(?:Input|Output)\("(\w+)"\)|for \(const char\* \w+ : \{([^}]*)\}\)'
        for m in re.finditer(params_re, body):
            names += [m.group(1)] if m.group(1) else re.findall(r'"(\w+)"', m.group(2))
        assert f'"{kernel[:-4]}")' in body  # bound to this entry (opFile / opInterface)
        ksrc = (ROOT / "op_kernel" / kernel).read_text()
        sig = re.search(r'extern "C" __global__ __aicore__ void %s\((.*?)\)' % kernel[:-4], ksrc, re.S).group(1)
        params = [p.split()[-1] for p in sig.split(",")]
        assert [_camel(n) for n in names] + ["workspace", "tiling"] == params, (op, names, params)


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
