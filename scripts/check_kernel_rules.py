#!/usr/bin/env python3
"""Scan Ascend C kernel sources for what the device compiler (or the device itself) rejects.

    python scripts/check_kernel_rules.py [op_kernel/] [more files or dirs]   # exit 1 on violations

Device code (op_kernel/ and every project header it includes) follows Ascend C practice:

  include       only "kernel_operator.h", Ascend C's "lib/..." advanced-API headers and project headers
                (found next to the file or in op_kernel/ / op_host/); no <...> system or STL headers
  stl           no std:: anything
  heap          no new / delete / malloc / calloc / realloc / free (`= delete` on functions is fine)
  exceptions    no try / catch / throw
  virtual       no virtual functions
  rtti          no dynamic_cast / typeid
  io            no printf / puts / cout / fopen / ...; AscendC::printf, PRINTF and DumpTensor exist on the device
                but write to a debug dump buffer and slow the kernel, so committed kernels may not use them either
  static-local  no static variables inside functions (they need guard variables or global storage the device does
                not have); `static constexpr` and `static const` of a fundamental type are fine
  thread-local  no thread_local

Not checked: recursion (needs a call graph across templates; the device stack is tiny, so keep kernels
non-recursive by review), the semantics of the API (that is the CPU twin's job) and API signatures (that is
scripts/check_conformance.sh's job).

Code that only the host or the CPU twin compiles may sit in a preprocessor block guarded by `!defined(__CCE__)`,
`defined(ASCEND_TWIN)`, `defined(__CCE_KT_TEST__)`, `defined(ASCENDC_CPU_DEBUG)` or `defined(__NPU_HOST__)` (and
the #else of `defined(__CCE__)`); such blocks are skipped. A single line can opt out of one rule with a trailing
comment `// kernel-rules: allow(<rule>)`.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

RULES = ("include", "stl", "heap", "exceptions", "virtual", "rtti", "io", "static-local", "thread-local")

KERNEL_SUFFIXES = (".cpp", ".cc", ".cxx", ".h", ".hpp", ".hh", ".inc")
ALLOWED_SYSTEM_HEADERS = ("kernel_operator.h",)
ALLOWED_PREFIXES = ("lib/",)  # Ascend C advanced API (matmul, softmax, ...)

DEVICE_MACROS = ("__CCE__", "__NPU_DEVICE__", "__ASCC_DEVICE__")
HOST_MACROS = ("__NPU_HOST__", "__ASCC_HOST__", "__ASC_NPU_HOST__", "ASCEND_TWIN", "__CCE_KT_TEST__",
               "ASCENDC_CPU_DEBUG")

FUNDAMENTAL = {"bool", "char", "signed", "unsigned", "short", "int", "long", "float", "double", "half", "bfloat16_t",
               "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "size_t"}

PATTERNS = [
    ("stl", re.compile(r"\bstd\s*::"), "STL is not available on the device (std::)"),
    ("heap", re.compile(r"(?<![.>:])\b(malloc|calloc|realloc|aligned_alloc|free)\s*\("), "no heap on the device ({0})"),
    ("heap", re.compile(r"\bnew\b"), "no heap on the device (new)"),
    ("heap", re.compile(r"\bdelete\b"), "no heap on the device (delete)"),
    ("exceptions", re.compile(r"\b(try|catch|throw)\b"), "no exceptions on the device ({0})"),
    ("virtual", re.compile(r"\bvirtual\b"), "no virtual functions on the device"),
    ("rtti", re.compile(r"\b(dynamic_cast|typeid)\b"), "no RTTI on the device ({0})"),
    ("io", re.compile(r"\b(printf|fprintf|sprintf|snprintf|vprintf|puts|putchar|fputs|scanf|fopen|fclose|fread|"
                      r"fwrite|perror|cout|cerr|clog|cin|PRINTF|DumpTensor|DumpAccChkPoint)\b"),
     "no I/O in committed kernels ({0}; AscendC::printf/DumpTensor are debug-only)"),
    ("thread-local", re.compile(r"\bthread_local\b"), "no thread_local on the device"),
]

WAIVER = re.compile(r"kernel-rules:\s*allow\(([\w\-,\s]+)\)")


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: [{self.rule}] {self.message}"


def strip_comments_and_strings(text: str) -> str:
    """Blanks comments and the contents of string/char literals, keeping every newline and column."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^()\\\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            end = n if end < 0 else end + len(m.group(1)) + 2
            out.append('"' + "".join(ch if ch == "\n" else " " for ch in text[i + 1:end - 1]) + '"')
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * max(0, j - i - 2) + (c if j - i >= 2 else ""))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _conjuncts(cond: str) -> list[str] | None:
    cond = re.sub(r"\s+", "", cond)
    while cond.startswith("(") and cond.endswith(")") and _balanced(cond[1:-1]):
        cond = cond[1:-1]
    if "||" in cond:
        return None
    return [c.strip("()") if _balanced(c.strip("()")) else c for c in cond.split("&&")]


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


def _defined(term: str, macros: Sequence[str], negated: bool) -> bool:
    for m in macros:
        forms = [f"defined({m})", f"defined{m}", m]
        for f in forms:
            if term == ("!" + f if negated else f):
                return True
    return False


def classify_condition(directive: str, cond: str) -> tuple[bool, bool]:
    """(host_only, device_only) of a #if/#ifdef/#ifndef/#elif condition."""
    cond = cond.strip()
    if directive == "ifdef":
        return cond in HOST_MACROS, cond in DEVICE_MACROS
    if directive == "ifndef":
        return cond in DEVICE_MACROS, cond in HOST_MACROS
    terms = _conjuncts(cond)
    if not terms:
        return False, False
    host = any(_defined(t, DEVICE_MACROS, True) or _defined(t, HOST_MACROS, False) for t in terms)
    device = any(_defined(t, DEVICE_MACROS, False) or _defined(t, HOST_MACROS, True) for t in terms)
    return host, device


def _logical_lines(code: str) -> list[tuple[int, int, str]]:
    """(first line, last line, text) with backslash continuations joined, for preprocessor directives."""
    lines = code.split("\n")
    out, i = [], 0
    while i < len(lines):
        start, cur = i + 1, lines[i]
        while cur.endswith("\\") and i + 1 < len(lines):
            i += 1
            cur = cur[:-1] + " " + lines[i]
        out.append((start, i + 1, cur))
        i += 1
    return out


def _host_only_lines(code: str) -> set[int]:
    """Line numbers inside preprocessor blocks the device compiler never sees."""
    stack: list[list[bool]] = []  # [host_only, device_only, in_else]
    hidden: set[int] = set()
    for lineno, last, text in _logical_lines(code):
        m = re.match(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", text)
        if m:
            d, rest = m.group(1), m.group(2)
            if d in ("if", "ifdef", "ifndef"):
                h, dev = classify_condition(d, rest)
                stack.append([h, dev, False])
            elif d == "elif" and stack:
                h, dev = classify_condition("if", rest)
                stack[-1] = [h, dev, False]
            elif d == "else" and stack:
                stack[-1][2] = True
            elif d == "endif" and stack:
                stack.pop()
            continue
        if any((not e and h) or (e and dev) for h, dev, e in stack):
            hidden.update(range(lineno, last + 1))
    return hidden


def _scope_kinds(code: str) -> list[str]:
    """Per character, the kind of the innermost brace scope: 'ns', 'class', 'code' or 'init'."""
    kinds = [""] * len(code)
    stack = ["ns"]
    head_start = 0
    for i, ch in enumerate(code):
        kinds[i] = stack[-1]
        if ch in ";":
            head_start = i + 1
        elif ch == "{":
            head = code[head_start:i]
            head = re.sub(r"^\s*#.*$", "", head, flags=re.M)
            cur = stack[-1]
            if re.search(r"\bnamespace\b", head) or re.search(r'\bextern\s*"\s*"\s*$', head):
                kind = "ns"
            elif re.search(r"\benum\b", head):
                kind = "init"
            elif re.search(r"\b(class|struct|union)\b[^()=]*$", head.strip()) and cur != "code":
                kind = "class"
            elif cur in ("ns", "class"):
                kind = "code" if ")" in head else "init"
            elif cur == "code":
                kind = "init" if re.search(r"(=|\breturn\b|\w)\s*$", head.strip()) and not re.search(
                    r"(\belse|\bdo|\btry|\))\s*$", head.strip()) and head.strip() else "code"
            else:
                kind = "init"
            stack.append(kind)
            head_start = i + 1
        elif ch == "}":
            if len(stack) > 1:
                stack.pop()
            head_start = i + 1
    return kinds


def _line_of(code: str, pos: int) -> int:
    return code.count("\n", 0, pos) + 1


def _resolve_include(name: str, src_dir: Path | None, include_dirs: Sequence[Path]) -> Path | None:
    for d in ([src_dir] if src_dir else []) + list(include_dirs):
        p = d / name
        if p.is_file():
            return p
    return None


def scan_source(text: str, path: str = "<string>", include_dirs: Sequence[Path] = (),
                src_dir: Path | None = None) -> tuple[list[Violation], list[Path]]:
    """Violations in one source text, and the project headers it includes (for the caller to scan too)."""
    raw_lines = text.split("\n")
    waived: dict[int, set[str]] = {}
    for i, ln in enumerate(raw_lines, 1):
        m = WAIVER.search(ln)
        if m:
            waived[i] = {r.strip() for r in m.group(1).split(",")}
    code = strip_comments_and_strings(text)
    hidden = _host_only_lines(code)
    found: list[Violation] = []
    headers: list[Path] = []

    def add(line: int, rule: str, msg: str) -> None:
        if line in hidden or rule in waived.get(line, set()):
            return
        found.append(Violation(path, line, rule, msg))

    # Includes, from the raw text (the stripped one has blanked the quoted names).
    for lineno, _, ln in _logical_lines(re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text,
                                            flags=re.S)):
        m = re.match(r'\s*#\s*include\s*([<"])([^>"]+)[>"]', ln)
        if not m:
            continue
        kind, name = m.groups()
        if kind == "<":
            add(lineno, "include", f"system/STL header <{name}> is not available on the device")
        elif name in ALLOWED_SYSTEM_HEADERS or name.startswith(ALLOWED_PREFIXES):
            continue
        else:
            p = _resolve_include(name, src_dir, include_dirs)
            if p is None:
                add(lineno, "include", f'"{name}" is neither kernel_operator.h, an Ascend C lib/ header nor a '
                                       f"project header in {', '.join(str(d) for d in include_dirs) or 'the source folder'}")
            elif lineno not in hidden:
                headers.append(p)

    # Token rules on the stripped code (preprocessor lines blanked so macros are not matched twice).
    body = "\n".join(" " * len(ln) if ln.lstrip().startswith("#") else ln for ln in code.split("\n"))
    for rule, rx, msg in PATTERNS:
        for m in rx.finditer(body):
            if rule == "heap" and m.group(0).strip() == "delete":
                before = body[:m.start() + len(m.group(0)) - len("delete")].rstrip()
                if before.endswith("="):
                    continue
            add(_line_of(body, m.start()), rule, msg.format(m.group(1) if m.groups() else m.group(0)))

    kinds = _scope_kinds(body)
    for m in re.finditer(r"\bstatic\b", body):
        if kinds[m.start()] != "code":
            continue
        stmt = re.split(r"[;={(]", body[m.end():], maxsplit=1)[0]
        words = re.findall(r"[A-Za-z_]\w*", stmt)
        if "constexpr" in words:
            continue
        if "const" in words and all(w in FUNDAMENTAL or w in ("const", "inline", "volatile") for w in words[:-1]):
            continue
        add(_line_of(body, m.start()), "static-local",
            "static local variable (needs a guard or global storage the device lacks; use constexpr or a member)")
    found.sort(key=lambda v: (v.line, v.rule))
    return found, headers


def scan_files(files: Iterable[Path], include_dirs: Sequence[Path]) -> tuple[list[Violation], list[Path]]:
    """Scans the files and, transitively, every project header they include. Returns (violations, files scanned)."""
    todo = [Path(f).resolve() for f in files]
    seen: list[Path] = []
    out: list[Violation] = []
    while todo:
        f = todo.pop(0)
        if f in seen:
            continue
        seen.append(f)
        vs, headers = scan_source(f.read_text(errors="replace"), str(f), include_dirs, f.parent)
        out.extend(vs)
        todo.extend(h.resolve() for h in headers)
    return out, seen


def kernel_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files.extend(sorted(q for q in p.rglob("*") if q.is_file() and q.suffix in KERNEL_SUFFIXES))
        elif p.is_file():
            files.append(p)
    return files


def main(argv: Sequence[str] | None = None) -> int:
    root = Path(__file__).resolve().parent.parent
    args = list(sys.argv[1:] if argv is None else argv)
    targets = [Path(a) for a in args] or [root / "op_kernel"]
    include_dirs = [root / "op_kernel", root / "op_host"]
    violations, scanned = scan_files(kernel_files(targets), include_dirs)
    for v in violations:
        print(v)
    print(f"{len(scanned)} file(s) scanned, {len(violations)} violation(s)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
