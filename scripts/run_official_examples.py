#!/usr/bin/env python3
"""Run the official Ascend C examples (asc-devkit examples/01_simd_cpp_api, every directory) on the CPU twin.

    python scripts/run_official_examples.py --ascdk /path/to/asc-devkit [--only PATTERN] [--json OUT] [--markdown OUT]

Each example is a `.asc` file holding its kernels and a host main() that reads inputs with data_utils.h, calls the
ACL runtime and launches with `kernel<<<numBlocks, l2ctrl, stream>>>(args)`. The harness does what CANN's compiler
does for CPU mode: it rewrites every `<<<...>>>` launch into AscendC::AscCPUKernelLaunch (twin/launch/cpu_launch.h),
registers each kernel's mode from its execution-space qualifier (`__vector__`, `__cube__`, `__mix__(cube, vec)`) or
its KERNEL_TASK_TYPE_DEFAULT, and compiles the file with npu_flash_attn.twin.compile_kernel against a small ACL
stand-in (scripts/official_examples/acl/acl.h). main() itself then runs unchanged, in a child process inside a temp
directory prepared by the example's scripts/gen_data.py, and the result is judged by the example's own
scripts/verify_result.py, both called with the arguments its README gives. Every scenario (SCENARIO_NUM) the README
/ CMakeLists / source name is run; examples and scenarios not built for dav-2201 (Atlas A2/A3) are listed as skipped,
and so are examples that need what the twin deliberately lacks (OUT_OF_REACH: the high-level API library, framework
operators).
Nothing from asc-devkit is copied: the examples are read from --ascdk at run time.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import ctypes
import datetime
import fnmatch
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHIM_DIR = REPO / "scripts" / "official_examples"
EXAMPLES_SUBDIR = Path("examples/01_simd_cpp_api")
TARGET_ARCH = "dav-2201"
RUN_TIMEOUT_S = 600
# Short diagnostics, so the first errors survive compile_kernel's truncation of the compiler output.
# ASC_ARCHITECTURES: what the examples' CMakeLists define from CMAKE_ASC_ARCHITECTURES (dav-2201 -> 2201).
COMPILE_FLAGS = ["-Dmain=twin_example_main", "-DASC_ARCHITECTURES=2201", "-w", "-ftemplate-backtrace-limit=1"]
DIAG_FLAGS = {"clang": ["-fno-caret-diagnostics", "-ferror-limit=40"],
              "gcc": ["-fno-diagnostics-show-caret", "-fmax-errors=40"]}
KERNEL_MODES = {"vector": "KERNEL_TYPE_AIV_ONLY", "cube": "KERNEL_TYPE_AIC_ONLY", (1, 0): "KERNEL_TYPE_MIX_AIC_1_0",
                (0, 1): "KERNEL_TYPE_MIX_AIV_1_0", (1, 1): "KERNEL_TYPE_MIX_AIC_1_1", (1, 2): "KERNEL_TYPE_MIX_AIC_1_2"}

sys.path.insert(0, str(REPO / "python"))

# Examples that do what a documented rule forbids: the twin's error there is the rule, not a twin gap. Listed in the
# report when the case fails with an error naming the rule (`marker`).
RULE_BREAKS = {
    "03_basic_api/05_sync_control/cross_core_set_wait_flag [2]": (
        "partially overlap",
        "the AIV part casts uint8_t -> half with source and destination at the same UB address (aAddr = castAAddr = 0, "
        "bAddr = castBAddr): operands of different widths cannot overlap 100%, and partial overlap is unsupported "
        "(docs/zh/api/SIMD-API/通用说明和约束.md, 通用地址重叠约束; Cast.md adds that narrow-to-wide conversions over "
        "overlapping addresses may give wrong results). On the NPU the result depends on the order in which the "
        "vector unit reads and writes the blocks."),
}
_HARD_SYNC_ALL = (
    "cross-core sync does not work in KERNEL_TYPE_AIV_ONLY",
    "the kernel is declared __vector__ and calls the hardware SyncAll(); the SyncAll page's constraints require a "
    "pure vector kernel that uses the hardware form to be declared __mix__(0, 1) instead of __vector__: with "
    "KERNEL_TYPE_AIV_ONLY the hardware does not start the scheduling unit that carries cross-core flags "
    "(CrossCoreSetFlag(ISASI).md, 约束说明), so on the NPU the cores would wait forever")
RULE_BREAKS.update({name: _HARD_SYNC_ALL for name in (
    "03_basic_api/05_sync_control/sync_all", "03_basic_api/05_sync_control/group_barrier",
    "03_basic_api/06_atomic/data_movement_with_atomic_operations [1]",
    "03_basic_api/06_atomic/data_movement_with_atomic_operations [2]")})
RULE_BREAKS.update({
    "03_basic_api/01_memory_vector_compute/compare [2]": (
        "GetCmpMask: dst has 32 bytes",
        "GetCmpMask into a 32-byte tensor: its page (Memory矢量计算/比较与选择/GetCmpMask(ISASI).md) requires at least "
        "128 bytes for dst; on the NPU the other 96 bytes of the mask register land past the tensor"),
    "03_basic_api/03_matrix_compute/mmad [2]": (
        "with no PipeBarrier<PIPE_M>",
        "K-loop Mmads accumulate into one L0C tile with m x n below the threshold and no PipeBarrier(PIPE_M) between "
        "them, which the Mmad page (Mmad计算/Mmad.md, 注意事项) requires below that threshold"),
})
RULE_BREAKS.update({f"05_best_practices/04_memory_access/data_copy [{i}]": (
    "with no PipeBarrier<PIPE_MTE2>",
    "the benchmark loop copies GM into the same UB bytes again with no PipeBarrier<PIPE_MTE2> between the copies, "
    "which the PipeBarrier page (同步控制/核内同步/PipeBarrier(ISASI).md) requires when MTE2 destinations overlap; "
    "on the NPU the copies may complete out of order") for i in range(1, 9)})

# Failing cases whose cause is not settled yet: the note goes into the report with the case.
OPEN_QUESTIONS = {
    "05_best_practices/03_fusion_compute/matmul_gelu_high_performance [1]":
        "stops on the MTE2 rule of the data_copy cases; not yet checked whether the example orders those copies in "
        "a way the twin misses",
}

# Examples whose README shows the run ending in this error: the twin raising it is the documented result.
EXPECTED_ERRORS = {
    "01_utilities/09_log": ("Assertion `M < 100",
                            "the log example launches with M = 256 to show a device assert firing (its README's output)"),
}

# Examples built on what the twin deliberately does not model, found by a directory prefix or a source pattern: the
# twin implements the basic (SIMD) API of kernel_operator.h and runs standalone programs.
OUT_OF_REACH = [
    (re.compile(r"^04_advanced_api/"), None,
     "high-level API library (lib/: Matmul, activation, normalization, math, ...): the twin models the basic API"),
    (None, re.compile(r'#include\s*"lib/matmul_intf\.h"'), "high-level Matmul class (lib/matmul_intf.h)"),
    (None, re.compile(r'#include\s*"tiling/tiling_api\.h"'),
     "CANN's host tiling library (tiling/tiling_api.h: MatmulApiTiling, ...)"),
    (None, re.compile(r'#include\s*[<"](?:torch/extension\.h|pybind11/|graph/custom_op\.h|torch_npu/)'),
     "framework operator (PyTorch / GE extension module, not a standalone program)"),
]


@dataclass
class Result:
    example: str
    scenario: str | None
    soc: str
    skipped: str | None = None
    compiles: bool | None = None
    runs: bool | None = None
    matches: bool | None = None     # None: not reached, or the example has no golden check
    error: str = ""
    missing: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.example + (f" [{self.scenario}]" if self.scenario is not None else "")


# ---------------------------------------------------------------------------------------------- reading an example
def read(p: Path) -> str:
    return p.read_text(errors="replace") if p.is_file() else ""


def example_dirs(root: Path) -> list[Path]:
    return sorted({p.parent for p in root.rglob("*.asc")})


PRODUCTS = {"Ascend 950": "950", "Atlas A3": "A3", "Atlas A2 训练": "A2", "Atlas 200I/500 A2": "310B",
            "Atlas 推理": "310P", "Atlas 训练": "910"}


def arch_info(d: Path) -> tuple[str, bool]:
    """(SoC restriction text, built for dav-2201?): the CMake default architecture and the README product table."""
    m = re.search(r'set\s*\(\s*CMAKE_ASC_ARCHITECTURES\s+"?(dav-\d{4})', read(d / "CMakeLists.txt"))
    default = m.group(1) if m else "?"
    table = re.search(r"支持的产品.*?(?=\n## )", read(d / "README.md"), re.S)
    products = [short for key, short in PRODUCTS.items() if table and key in table.group(0)]
    ok = default == TARGET_ARCH or "A2" in products or "A3" in products
    return f"{default}; {'/'.join(products) or '?'}", ok


def _numbers(text: str) -> list[int]:
    out = []
    for a, b in re.findall(r"(\d+)\s*-\s*(\d+)", text):
        out += range(int(a), int(b) + 1)
    return out + [int(x) for x in re.findall(r"(?<![\d-])(\d+)(?![\d-])", text)]


def scenarios(d: Path, sources: list[str]) -> tuple[list[int], dict[int, str]]:
    """Scenario numbers of an example and, per scenario, why it is not for dav-2201 (empty list: no scenarios)."""
    cmake, readme = read(d / "CMakeLists.txt"), read(d / "README.md")
    found: set[int] = set()
    for row in re.findall(r"\|\s*`?SCENARIO_NUM`?\s*\|([^|\n]*)\|", readme):
        found.update(_numbers(row))
    for m in re.finditer(r"set\s*\(\s*(?:SCENARIO_NUM|VALID_SCENARIOS)\b([^)]*)\)", cmake):
        found.update(_numbers(m.group(1)))
    for m in re.finditer(r'SCENARIO_NUM MATCHES "\^\[(\d)-(\d)\]\$"', cmake):
        found.update(range(int(m.group(1)), int(m.group(2)) + 1))
    for m in re.finditer(r"SCENARIO_NUM=(\d+)\s*#[^\n]*[（(]取值为([^)）]*)", readme):
        found.update(_numbers(m.group(2)))
    for s in sources:
        found.update(int(x) for x in re.findall(r"SCENARIO_NUM\s*==\s*(\d+)", s))
    if not found and ("SCENARIO_NUM" in cmake or any("SCENARIO_NUM" in s for s in sources)):
        found.update(int(x) for x in re.findall(r"SCENARIO_NUM=(\d+)", readme)[:1])
    excluded: dict[int, str] = {}
    for cond in re.findall(r"if\s*\(([^\n]*SCENARIO_NUM[^\n]*)\)", cmake):
        against_2201 = re.search(r'(?<!NOT )CMAKE_ASC_ARCHITECTURES STREQUAL "dav-2201"', cond) or \
            re.search(r'NOT CMAKE_ASC_ARCHITECTURES STREQUAL "dav-3510"', cond)
        if against_2201:
            for n in re.findall(r'SCENARIO_NUM (?:EQUAL|STREQUAL) "?(\d+)"?', cond):
                excluded[int(n)] = "CMakeLists: dav-3510 only"
    for line in readme.splitlines():
        if not re.search(r"仅支持[^。，,]*dav-3510|only supports? [^.]*dav-3510", line):
            continue
        m = (re.match(r"\s*<tr><td>(\d+)</td>", line) or re.search(r"场景(\d+)仅支持", line) or
             re.search(r"SCENARIO_NUM`?\s*设置为\s*`?(\d+)", line))
        if m:
            excluded[int(m.group(1))] = "README: dav-3510 only"
    return sorted(found), excluded


def readme_args(d: Path, script: str, scenario: int | None) -> list[str] | None:
    """Arguments the README passes to scripts/<script> (None: the README does not call it)."""
    m = re.search(rf"python3?\s+\.\./scripts/{script}\b([^#\n;]*)", read(d / "README.md"))
    if m is None:
        return None
    # Shell variables the README's command block sets (SCENARIO_NUM=1 COPY_DST=UB ...), the scenario's own number
    # and the dav-2201 architecture taking precedence.
    shell = dict(re.findall(r"(?:^|\s)([A-Z_]+)=([\w.-]+)", read(d / "README.md")))
    shell.update({"ASC_ARCH": TARGET_ARCH, "SCENARIO_NUM": str(scenario)})
    return [re.sub(r"\$\{?([A-Z_]+)\}?", lambda v: shell.get(v.group(1), v.group(0)), a) for a in m.group(1).split()]


# ---------------------------------------------------------------------------------------------- source rewriting
def _skip_ws_back(s: str, i: int) -> int:
    while i > 0 and s[i - 1].isspace():
        i -= 1
    return i


def _balanced(s: str, i: int, open_: str, close: str) -> int:
    """Index just past the bracket closing the one at s[i]."""
    depth = 0
    for j in range(i, len(s)):
        depth += (s[j] == open_) - (s[j] == close)
        if depth == 0:
            return j + 1
    raise ValueError(f"unbalanced {open_}{close} at offset {i}")


def _mask_comments(src: str) -> str:
    """src with comments and string literals blanked out (same length), so only code is searched."""
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', lambda m: re.sub(r"[^\n]", " ", m.group(0)), src,
                  flags=re.S)


def _split_top(s: str) -> list[str]:
    """s split at its commas outside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        depth += (ch in "([{<") - (ch in ")]}>")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


def rewrite_launches(src: str) -> tuple[str, list[str]]:
    """`f<T...><<<cfg>>>(args)` -> `AscendC::AscCPUKernelLaunch(cfg, "f", f<T...>, args)`, as CANN's CPU mode does."""
    out, pos, names = [], 0, []
    code = _mask_comments(src)
    while (i := code.find("<<<", pos)) >= 0:
        j = code.index(">>>", i)
        start = _skip_ws_back(code, i)
        if code[start - 1] == ">":  # template arguments: walk back to the matching '<'
            depth, k = 0, start - 1
            while True:
                depth += (code[k] == ">") - (code[k] == "<")
                if depth == 0:
                    break
                k -= 1
            start = _skip_ws_back(code, k)
        m = re.search(r"[A-Za-z_][\w:]*$", code[:start])
        name_start = m.start()
        a = j + 3
        while code[a].isspace():
            a += 1
        if code[a] != "(":
            raise ValueError(f"launch of {m.group(0)}: no argument list after >>>")
        b = _balanced(code, a, "(", ")")
        callee, args = src[name_start:i].strip(), src[a + 1:b - 1].strip()
        base = m.group(0).split("::")[-1]
        names.append(base)
        out.append(src[pos:name_start])
        cfg = src[i + 3:j].strip()
        if len(_split_top(cfg)) == 2:  # <<<numBlocks, l2ctrl>>>: the default stream
            cfg += ", nullptr"
        out.append(f'AscendC::AscCPUKernelLaunch({cfg}, "{base}", {callee}' +
                   (f", {args})" if args else ")"))
        pos = b
    out.append(src[pos:])
    return "".join(out), names


def kernel_modes(texts: list[str]) -> dict[str, str]:
    """Kernel name -> KernelMetaType name, from each __global__ function's qualifiers or KERNEL_TASK_TYPE_DEFAULT."""
    modes: dict[str, str] = {}
    for s in map(_mask_comments, texts):
        for m in re.finditer(r"\bvoid\s+(\w+)\s*\(", s):
            head = s[max(0, m.start() - 300):m.start()]
            head = re.split(r"[;{}]|\n\s*#", head)[-1]
            if "__global__" not in head:
                continue
            mode = None
            if mix := re.search(r"__mix__\s*\(\s*(\d)\s*,\s*(\d)\s*\)", head):
                mode = KERNEL_MODES.get((int(mix.group(1)), int(mix.group(2))))
            elif "__cube__" in head:
                mode = KERNEL_MODES["cube"]
            elif "__vector__" in head:
                mode = KERNEL_MODES["vector"]
            else:
                body_at = s.find("{", m.end())
                body = s[body_at:_balanced(s, body_at, "{", "}")] if body_at >= 0 else ""
                if t := re.search(r"KERNEL_TASK_TYPE_DEFAULT\s*\(\s*(?:AscendC::)?(\w+)\s*\)", body):
                    mode = t.group(1)
            if mode:
                modes[m.group(1)] = mode
    return modes


def program_files(asc: Path) -> list[Path]:
    """The files one program is built from: the .asc alone, or, where the example keeps main() in a .cpp (the
    separate / library compilation examples), every .asc and .cpp of its directory in one unit."""
    cpps = [c for c in sorted(asc.parent.glob("*.cpp")) if re.search(r"\bmain\s*\(", _mask_comments(read(c)))]
    return sorted(asc.parent.glob("*.asc")) + cpps if cpps else [asc]


def build_source(asc: Path) -> tuple[str, list[str]]:
    parts, launched = [], []
    for f in program_files(asc):
        text, names = rewrite_launches(read(f))
        parts.append(f'#line 1 "{f.name}"\n{text}')
        launched += names
    src = "\n".join(parts)
    headers = [read(h) for h in asc.parent.glob("*.h")]
    modes = kernel_modes([src, *headers])
    regs = "".join(f'static const bool twin_example_mode_{k} = twin::RegisterKernelMode("{k}", AscendC::{v});\n'
                   for k, v in sorted(modes.items()))
    unknown = sorted(set(launched) - set(modes))
    return f'{src}\n#include "entry.inc"\n{regs}', unknown


# ---------------------------------------------------------------------------------------------- diagnostics
# Compiler messages naming something the twin lacks, and how to spell the name from the groups.
_MISSING_PATTERNS = [
    (r"'([\w:]+)' in namespace '([\w:]+)' does not name a (?:template )?type", "{1}::{0}"),
    (r"'([\w:]+)' is not a member of '([\w:]+)'", "{1}::{0}"),
    (r"'(?:struct|class) ([\w:]+)' has no member named '(\w+)'", "{0}::{1}"),
    (r"'([\w:]+)' was not declared in this scope", "{0}"),
    (r"'([\w:]+)' has not been declared", "{0}"),
    (r"'([\w:]+)' does not name a type", "{0}"),
    (r"'([\w:]+)' is not a type", "{0}"),
    (r"no matching function for call to '([\w:]+)", "{0}"),
    (r"there are no arguments to '(\w+)' that depend on a template parameter", "{0}"),
    (r"fatal error: ([\w./]+): No such file", "{0}"),
    # clang++'s wording
    (r"no (?:member|type|template) named '(\w+)' in (?:namespace )?'([\w:]+)'", "{1}::{0}"),
    (r"use of undeclared identifier '([\w:]+)'", "{0}"),
    (r"unknown type name '([\w:]+)'", "{0}"),
    (r"fatal error: '([\w./]+)' file not found", "{0}"),
]


def _ascii_quotes(text: str) -> str:
    return text.replace("\u2018", "'").replace("\u2019", "'")  # g++ quotes names with ‘’ under UTF-8 locales


def missing_names(stderr: str) -> list[str]:
    names: list[str] = []
    for line in _ascii_quotes(stderr).splitlines():
        for pat, spell in _MISSING_PATTERNS:
            if m := re.search(pat, line):
                name = spell.format(*m.groups())
                if name not in names:
                    names.append(name)
                break
    return names


def first_error(text: str) -> str:
    text = _ascii_quotes(text)
    for line in text.splitlines():
        if " error: " in line or line.startswith("error:"):
            return re.sub(r"^.*?error: ", "", line).strip()[:200]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return (lines[0] if lines else "")[:200]


# ---------------------------------------------------------------------------------------------- running one case
def _call_main(lib_path: str | os.PathLike, argv: list[str]) -> tuple[int, str]:
    """(main()'s return value, error message of a launch the twin rejected) of a compiled example."""
    lib = ctypes.CDLL(str(lib_path))
    err = ctypes.create_string_buffer(1 << 16)
    args = [a.encode() for a in argv]
    c_argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)
    rc = lib.twin_example_run(len(args), c_argv, err, len(err))
    return rc, err.value.decode(errors="replace")


def run_main(lib_path: str | os.PathLike, argv: list[str]) -> int:
    """Run a compiled example's main() in this process; a launch the twin rejects raises twin.TwinError."""
    rc, err = _call_main(lib_path, argv)
    if err:
        from npu_flash_attn import twin
        raise twin.TwinError(err)
    return rc


# main() runs in a child process, so that a crash or hang in one example cannot take the harness down. It skips
# importing npu_flash_attn (and torch): only the compiled library is needed.
_RUNNER = f"""
import sys
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
import run_official_examples as R
rc, err = R._call_main(sys.argv[1], ["demo"])
sys.stdout.flush()
if err:
    sys.stderr.write("TwinError: " + err)
    sys.exit(3)
sys.exit(rc & 0xFF)
"""


def _script(d: Path, name: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(d / "scripts" / name), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_S)


_CMAKE_CMD = re.compile(r"^\s*(if|elseif|else|endif|set|target_compile_definitions)\s*\(([^)]*)\)", re.M | re.I)


def _cmake_cond(cond: str, var: dict[str, str]) -> bool:
    """The simple if() conditions of the examples' CMakeLists (STREQUAL, EQUAL, MATCHES, NOT, AND, OR); anything
    else counts as false."""
    def value(tok: str) -> str:
        tok = re.sub(r"\$\{(\w+)\}", lambda m: var.get(m.group(1), ""), tok.strip('"'))
        return var.get(tok, tok)

    def atom(m: re.Match) -> str:
        a, op, b = value(m.group(1)), m.group(2).upper(), m.group(3).strip('"')
        ok = (a == value(b) if op == "STREQUAL" else
              a.strip().lstrip("-").isdigit() and value(b).isdigit() and int(a) == int(value(b)) if op == "EQUAL" else
              re.search(b, a) is not None)
        return " True " if ok else " False "

    expr = re.sub(r'("?[\w${}.-]+"?)\s+(STREQUAL|EQUAL|MATCHES)\s+("[^"]*"|[\w${}.-]+)', atom, cond)
    expr = re.sub(r"\bNOT\b", " not ", re.sub(r"\bAND\b", " and ", re.sub(r"\bOR\b", " or ", expr)))
    if re.fullmatch(r"[\sTrueFalsnotadr()]*", expr) is None:
        return False
    try:
        return bool(eval(expr, {"__builtins__": {}}))
    except SyntaxError:
        return False


def cmake_definitions(d: Path, scenario: int | None) -> list[str]:
    """-D flags of the example's target_compile_definitions as its CMakeLists gives them for dav-2201 and this
    scenario (cache defaults for the other options), e.g. NPU_ARCH=2201, SCENARIO=3, COPY_DST_UB=1."""
    var = {"CMAKE_ASC_ARCHITECTURES": TARGET_ARCH}
    text = re.sub(r"#[^\n]*", "", read(d / "CMakeLists.txt"))
    for m in re.finditer(r"set\s*\(\s*(\w+)\s+\"?([^\s\")]*)\"?\s+CACHE", text):
        var.setdefault(m.group(1), m.group(2))
    if scenario is not None:
        var["SCENARIO_NUM"] = str(scenario)
    defs: list[str] = []
    stack: list[list[bool]] = []  # per open if: [this branch active, some branch taken]
    for m in _CMAKE_CMD.finditer(text):
        cmd, args = m.group(1).lower(), m.group(2).strip()
        live = all(f[0] for f in stack)
        if cmd == "if":
            ok = live and _cmake_cond(args, var)
            stack.append([ok, ok])
        elif cmd in ("elseif", "else") and stack:
            outer = all(f[0] for f in stack[:-1])
            ok = outer and not stack[-1][1] and (cmd == "else" or _cmake_cond(args, var))
            stack[-1] = [ok, stack[-1][1] or ok]
        elif cmd == "endif" and stack:
            stack.pop()
        elif not live:
            continue
        elif cmd == "set" and "CACHE" not in args:
            name, *vals = args.split()
            var[name] = " ".join(vals).strip('"')
        elif cmd == "target_compile_definitions":
            for tok in args.split()[1:]:
                if tok.upper() not in ("PRIVATE", "PUBLIC", "INTERFACE"):
                    defs.append("-D" + re.sub(r"\$\{(\w+)\}", lambda v: var.get(v.group(1), ""), tok))
    return defs


def compile_example(asc: Path, scenario: int | None):
    """(KernelLibrary, launched kernels without a kernel mode) for one .asc file and scenario."""
    from npu_flash_attn import twin

    family = "clang" if "clang" in Path(twin.compiler()).name else "gcc"
    flags = COMPILE_FLAGS + DIAG_FLAGS[family] + ([f"-DSCENARIO_NUM={scenario}"] if scenario is not None else [])
    flags += [f for f in cmake_definitions(asc.parent, scenario) if f not in flags]
    source, unknown = build_source(asc)
    # -O1: the examples are small, and compile time dominates a run over all of them
    return twin.compile_kernel(source, include=[str(asc.parent), str(SHIM_DIR)], flags=flags, opt="-O1"), unknown


def run_case(d: Path, asc: Path, scenario: int | None, res: Result) -> Result:
    try:
        _run_case(d, asc, scenario, res)
    except Exception as e:  # a harness limitation on this example must not stop the others
        res.error = f"harness: {type(e).__name__}: {e}"[:300]
    if res.name in EXPECTED_ERRORS and res.runs is False and EXPECTED_ERRORS[res.name][0] in res.error:
        res.runs, res.matches, res.error = True, True, "expected error: " + EXPECTED_ERRORS[res.name][1]
    res.error = res.error.replace(f"{d}/", "")  # messages name the example's files relative to it
    return res


def _run_case(d: Path, asc: Path, scenario: int | None, res: Result) -> Result:
    try:
        lib, unknown = compile_example(asc, scenario)
    except RuntimeError as e:
        res.compiles = False
        res.missing = missing_names(str(e))
        res.error = first_error(str(e))
        return res
    res.compiles = True
    with tempfile.TemporaryDirectory(prefix="twin_example_") as td:
        cwd = Path(td)
        (cwd / "input").mkdir()
        (cwd / "output").mkdir()
        gen_args = readme_args(d, "gen_data.py", scenario)
        if (d / "scripts" / "gen_data.py").is_file():
            g = _script(d, "gen_data.py", gen_args or [], cwd)
            if g.returncode != 0:
                res.runs = False
                res.error = "gen_data.py: " + (g.stderr.strip().splitlines() or ["failed"])[-1][:200]
                return res
        try:
            r = subprocess.run([sys.executable, "-c", _RUNNER, str(lib.path)], cwd=cwd, capture_output=True,
                               text=True, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            res.runs = False
            res.error = f"timeout after {RUN_TIMEOUT_S} s"
            return res
        if r.returncode < 0 or "TwinError:" in r.stderr or "Traceback" in r.stderr:  # rejected, crashed, runner failed
            msg = r.stderr[r.stderr.find("TwinError:"):] if "TwinError:" in r.stderr else r.stderr.strip()
            msg = msg or f"killed by signal {-r.returncode}"
            if unknown and "no registered kernel mode" in msg:
                msg += f" (no qualifier found for {', '.join(unknown)})"
            res.runs = False
            res.error = msg.splitlines()[0][:300] if msg.startswith("TwinError") else msg[-300:]
            return res
        if r.returncode != 0:  # main() ran to its end and reported a failed check
            res.runs, res.matches = True, False
            res.error = f"main() returned {r.returncode}: " + first_error(r.stdout)
            return res
        res.runs = True
        if (d / "scripts" / "verify_result.py").is_file():
            v_args = readme_args(d, "verify_result.py", scenario) or ["output/output.bin", "output/golden.bin"]
            v = _script(d, "verify_result.py", v_args, cwd)
            res.matches = v.returncode == 0
            if not res.matches:
                lines = v.stdout.strip().splitlines() or v.stderr.strip().splitlines()  # stderr: warnings, tracebacks
                res.error = "verify_result.py: " + " | ".join(lines[-2:])[:300]
        elif re.search(r"\b(pass|passed|success)\b", r.stdout, re.I):
            res.matches = True
    return res


def out_of_reach(rel: str, sources: list[str]) -> str | None:
    for path_re, src_re, why in OUT_OF_REACH:
        if (path_re and path_re.search(rel)) or (src_re and any(src_re.search(s) for s in sources)):
            return why
    return None


def cases(root: Path, only: str | None) -> list[tuple[Path, Path, int | None, Result]]:
    out = []
    for d in example_dirs(root):
        rel = str(d.relative_to(root))
        if only and not fnmatch.fnmatch(rel, f"*{only}*"):
            continue
        soc, ok = arch_info(d)
        ascs = sorted(d.glob("*.asc"))
        sources = [read(a) for a in ascs]
        lacks = out_of_reach(rel, sources + [read(h) for h in sorted(d.glob("*.h")) + sorted(d.glob("*.cpp"))])
        nums, excluded = scenarios(d, sources)
        for n in nums or [None]:
            # Examples with one .asc per scenario name it by suffix (..._scenario_2.asc).
            targets = [a for a in ascs if n is not None and a.stem.endswith(f"_{n}")] or ascs
            if len(program_files(ascs[0])) > 1:  # one program of several files
                targets = ascs[:1]
            for asc in targets:
                res = Result(rel if len(targets) == 1 else f"{rel}/{asc.name}", None if n is None else str(n), soc)
                if not ok:
                    res.skipped = f"not built for {TARGET_ARCH}"
                elif lacks:
                    res.skipped = lacks
                elif n in excluded:
                    res.skipped = excluded[n]
                out.append((d, asc, n, res))
    return out


def _run_packed(args):
    return run_case(*args)


def run_all(root: Path, only: str | None, jobs: int) -> list[Result]:
    todo = cases(root, only)
    runnable = [c for c in todo if c[3].skipped is None]
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, jobs)) as ex:
        done = dict(zip([id(c[3]) for c in runnable], ex.map(_run_packed, runnable)))
    return [done.get(id(c[3]), c[3]) for c in todo]


# ---------------------------------------------------------------------------------------------- reporting
def _mark(v: bool | None) -> str:
    return {True: "yes", False: "**no**", None: "–"}[v]


def table(results: list[Result]) -> str:
    """The results as a Markdown table; the scenarios of an example skipped for one reason share a row."""
    rows = ["| example | SoC restriction | compiles | runs | matches golden | first error |",
            "|---|---|---|---|---|---|"]
    skipped: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        if r.skipped:
            skipped.setdefault((r.example, r.skipped), []).append(r)
    for r in results:
        if r.skipped:
            group = skipped.pop((r.example, r.skipped), None)
            if group:
                scen = ", ".join(g.scenario for g in group if g.scenario is not None)
                rows.append(f"| {r.example}{f' [{scen}]' if scen else ''} | {r.soc} | skipped: {r.skipped} | | | |")
            continue
        err = r.error.replace("|", "\\|")
        if r.missing:
            err = "missing: " + ", ".join(f"`{m}`" for m in r.missing[:8]) + (" …" if len(r.missing) > 8 else "")
        matches = "no golden" if r.runs and r.matches is None else _mark(r.matches)
        rows.append(f"| {r.name} | {r.soc} | {_mark(r.compiles)} | {_mark(r.runs)} | {matches} | {err} |")
    return "\n".join(rows)


def summary(results: list[Result]) -> str:
    ran = [r for r in results if not r.skipped]
    n_pass = sum(1 for r in ran if r.matches)
    n_run = sum(1 for r in ran if r.runs)
    n_comp = sum(1 for r in ran if r.compiles)
    missing: dict[str, list[str]] = {}
    for r in ran:
        for m in r.missing:
            missing.setdefault(m, []).append(r.name)
    lines = [f"{len(ran)} dav-2201 cases ({len(results) - len(ran)} skipped): {n_comp} compile, {n_run} run, "
             f"{n_pass} match the golden output."]
    if missing:
        lines.append("Names the twin lacks (cases needing them): " +
                     "; ".join(f"`{m}` ({len(v)})" for m, v in sorted(missing.items(), key=lambda kv: -len(kv[1]))))
    breaks = [(r.name, RULE_BREAKS[r.name][1]) for r in ran
              if r.name in RULE_BREAKS and RULE_BREAKS[r.name][0] in r.error]
    if breaks:
        lines.append("\nCases that break a documented rule (the twin's error is the rule):\n" +
                     "\n".join(f"- {n}: {why}" for n, why in breaks))
    explained = {n for n, _ in breaks}
    others = [r for r in ran if (not r.runs or r.matches is False) and r.name not in explained and not r.missing]
    if others:
        lines.append("\nThe other failing cases (the reason is their first error in the table):\n" +
                     "\n".join(f"- {r.name}" + (f": {OPEN_QUESTIONS[r.name]}" if r.name in OPEN_QUESTIONS else "")
                               for r in others))
    return "\n".join(lines)


def ascdk_commit(root: Path, git_dir: str | None) -> str:
    for gd in ([git_dir] if git_dir else []) + [str(root / ".git")]:
        r = subprocess.run(["git", f"--git-dir={gd}", "rev-parse", "HEAD"], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.strip()
    return "unknown"


def write_markdown(path: Path, text: str, commit: str) -> None:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    path.write_text(
        "# Official Ascend C examples on the CPU twin\n\n"
        f"Generated by `scripts/run_official_examples.py --markdown` on {stamp} from asc-devkit commit `{commit}` "
        f"({EXAMPLES_SUBDIR}). Each `.asc` example's own main(), gen_data.py and verify_result.py run unchanged; "
        "its `<<<>>>` launches go to the twin (AscendC::AscCPUKernelLaunch). \"no golden\": the example prints its "
        "result instead of checking it.\n\n" + text + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ascdk", required=True, type=Path, help="asc-devkit checkout (holds examples/)")
    ap.add_argument("--only", help="run only examples whose path contains this (fnmatch pattern allowed)")
    ap.add_argument("--json", type=Path, help="write the results as JSON here")
    ap.add_argument("--markdown", type=Path, help="write the table as a Markdown page here")
    ap.add_argument("--ascdk-git-dir", help="git directory of the asc-devkit checkout, for the commit in --markdown")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="examples compiled and run at once")
    a = ap.parse_args(argv)
    root = a.ascdk / EXAMPLES_SUBDIR
    if not root.is_dir():
        ap.error(f"--ascdk {a.ascdk}: no {EXAMPLES_SUBDIR} inside")
    results = run_all(root, a.only, a.jobs)
    text = table(results) + "\n\n" + summary(results)
    print(text)
    if a.json:
        a.json.write_text(json.dumps([asdict(r) for r in results], indent=1, ensure_ascii=False))
    if a.markdown:
        write_markdown(a.markdown, text, ascdk_commit(a.ascdk, a.ascdk_git_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
