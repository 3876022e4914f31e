"""Run any Ascend C kernel source on the CPU twin.

    from npu_flash_attn import twin
    lib = twin.compile_kernel("my_kernel.cpp")                 # against the twin's kernel_operator.h
    lib.launch("my_kernel", 8, x, y, z, kernel_type="aiv")     # numpy arrays / CPU torch tensors are GM buffers

A kernel is an `extern "C" __global__ __aicore__ void name(GM_ADDR ...)` function (at most 32 arguments), as in
CANN's CPU debug flow. Errors the NPU would not report (overflow, misalignment, unpaired flags, ...) raise
`TwinError` naming the core, the API and the numbers; what the NPU does harmlessly but the kernel likely did not
mean is a `TwinWarning` (also in `last_warnings()`). The kernel sees every GM buffer at an address with the
alignment aclrtMalloc gives (512 bytes) and followed by aclrtMalloc's padding, whatever the caller's allocator did.
Each kernel is built once per core type, as CANN's compiler builds it (compile_kernel).
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import operator
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any, NamedTuple, Sequence

import numpy as np

__all__ = ["TwinError", "TwinWarning", "KernelLibrary", "compile_kernel", "compiler", "include_dirs", "KERNEL_TYPES",
           "DEFAULT_CHIP", "GM_ALIGN", "acl_malloc_bytes", "gm_empty"]


# KernelMetaType values, with short aliases.
KERNEL_TYPES = {
    "KERNEL_TYPE_AIV_ONLY": 0, "aiv": 0, "aiv_only": 0,
    "KERNEL_TYPE_AIC_ONLY": 1, "aic": 1, "aic_only": 1,
    "KERNEL_TYPE_MIX_AIV_1_0": 2, "mix_aiv_1_0": 2,
    "KERNEL_TYPE_MIX_AIC_1_0": 3, "mix_aic_1_0": 3,
    "KERNEL_TYPE_MIX_AIC_1_1": 4, "mix_aic_1_1": 4,
    "KERNEL_TYPE_MIX_AIC_1_2": 5, "mix_aic_1_2": 5, "mix": 5,
}


from .chip import DEFAULT_CHIP
from .twin_backend import TwinError  # one exception class for standalone kernels and for the ops


class TwinWarning(UserWarning):
    """A kernel did something the NPU does harmlessly and the docs do not forbid, but it likely did not mean."""


GM_ALIGN = 512  # aclrtMalloc's alignment: the start of every device allocation on the NPU
ACL_MALLOC_ROUND = 32  # aclrtMalloc rounds sizes up to this and adds as much again (acl_malloc_bytes)


def _resource_root() -> Path:
    here = Path(__file__).resolve().parent
    packaged = here / "_twin_src"
    if packaged.is_dir():
        return packaged
    repo = here.parent.parent  # editable install / source checkout: python/npu_flash_attn -> repo root
    if (repo / "twin" / "include" / "kernel_operator.h").is_file():
        return repo
    raise RuntimeError(f"twin headers not found next to {here} (expected _twin_src/ or a source checkout)")


def include_dirs() -> list[str]:
    """Include directories that make `#include "kernel_operator.h"` resolve to the twin."""
    root = _resource_root()
    return [str(root / "twin" / "include"), str(root / "chip")]


def _cache_dir() -> Path:
    d = Path(os.environ.get("NPU_TWIN_CACHE", Path.home() / ".cache" / "npu_flash_attn" / "kernels"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _headers_digest() -> str:
    h = hashlib.sha256()
    root = _resource_root()
    for d in ("twin/include", "twin/src", "chip"):
        for p in sorted((root / d).rglob("*")):
            if p.is_file() and p.suffix in (".h", ".inc", ".hpp"):
                h.update(p.name.encode())
                h.update(p.read_bytes())
    return h.hexdigest()


def compiler() -> str:
    """The C++ compiler kernels are built with: $CXX, else clang++ when installed (CANN's compiler is clang-based and
    accepts what g++ rejects, e.g. explicit specialisations in class scope, as catlass writes them), else g++."""
    return os.environ.get("CXX") or ("clang++" if shutil.which("clang++") else "g++")


@functools.lru_cache(maxsize=None)
def _compiler_identity(cxx: str) -> str:
    r = subprocess.run([cxx, "--version"], capture_output=True, text=True)
    return r.stdout.splitlines()[0] if r.returncode == 0 and r.stdout else cxx


@functools.lru_cache(maxsize=None)
def _native_flags(cxx: str) -> tuple[str, ...]:
    """-march=native when the compiler takes it: kernels are built on the machine that runs them, and F16C/AVX make
    half/bfloat16 emulation several times faster. NPU_FA_PORTABLE=1 turns it off."""
    if os.environ.get("NPU_FA_PORTABLE"):
        return ()
    with tempfile.TemporaryDirectory() as td:
        src = Path(td) / "t.cpp"
        src.write_text("int main() { return 0; }\n")
        r = subprocess.run([cxx, "-march=native", str(src), "-o", str(Path(td) / "t")], capture_output=True)
    return ("-march=native",) if r.returncode == 0 else ()


def _user_headers_digest(dirs: Sequence[str]) -> str:
    """Digest of the headers next to the kernel and in its include directories, so editing one recompiles."""
    h = hashlib.sha256()
    for d in dirs:
        for p in sorted(Path(d).glob("*")):
            if p.is_file() and p.suffix in (".h", ".hpp", ".inc"):
                h.update(str(p).encode())
                h.update(p.read_bytes())
    return h.hexdigest()


_compile_lock = threading.Lock()

# The two builds of every kernel, as CANN's compiler makes them (twin/include/twin/launch/core_builds.h): the cube
# build runs on AIC cores, the vector build on AIV cores.
CORE_BUILDS = (("aic", "-D__DAV_CUBE__"), ("aiv", "-D__DAV_VEC__"))


def _build(cxx: str, unit: Path, td: Path, key: str, cmd_tail: list[str]) -> Path:
    """Compiles `unit` once per core type (in parallel) and links the cube build and the vector build, which loads it
    (core_builds.h says why two libraries). Linker flags among `cmd_tail` (-l, -L, -Wl,) go to both links. Returns the
    vector build's library, in `td`."""
    objs, procs = {}, []
    for core, macro in CORE_BUILDS:
        objs[core] = td / f"{core}.o"
        cmd = [cxx, "-c", str(unit), "-o", str(objs[core]), macro, f'-DTWIN_CORE_BUILD_ID="{key}"', *cmd_tail]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    errors = [p.communicate()[1] for p in procs]
    for (core, _), p, err in zip(CORE_BUILDS, procs, errors):
        if p.returncode != 0:
            raise RuntimeError(f"compiling the kernel against the twin failed ({core} build, {cxx}):\n{err[-6000:]}")
    aic, aiv = td / f"kernel_{key}.aic.so", td / f"kernel_{key}.aiv.so"
    user = [f for f in cmd_tail if f.startswith(("-l", "-L", "-Wl,"))]
    for obj, out, extra in ((objs["aic"], aic, [f"-Wl,-soname,{aic.name}"]),
                            (objs["aiv"], aiv, ["-Wl,--no-as-needed", str(aic), "-Wl,--as-needed", "-Wl,-rpath,$ORIGIN"])):
        cmd = [cxx, "-shared", "-pthread", "-Wl,-Bsymbolic-functions", str(obj), "-o", str(out), *extra, *user, "-ldl"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"linking the kernel failed:\n{r.stderr[-6000:]}")
    return aiv


def compile_kernel(source: str | os.PathLike, *, flags: Sequence[str] = (), include: Sequence[str] = (),
                   opt: str = "-O2") -> "KernelLibrary":
    """Compile an Ascend C kernel file (a path, or source text containing a newline) against the twin.

    Builds it as CANN's compiler does, once per core type (`__DAV_CUBE__` for the AIC cores, `__DAV_VEC__` for the
    AIV cores, so `g_coreType` is a constant and `if ASCEND_IS_AIC` an if-constexpr), with `compiler()` (CXX, else
    clang++ when installed, else g++), `opt` plus -march=native where supported (NPU_FA_PORTABLE=1: without) and
    -ffp-contract=off (every operation rounds, as on the NPU, whichever compiler). `include` adds include
    directories, `flags` extra compiler flags (e.g. "-DMY_TILE=64"). Results are cached by content (the source, the
    twin, the headers next to the source and in `include`, the compiler) under ~/.cache/npu_flash_attn/kernels
    (override with NPU_TWIN_CACHE).
    """
    text_given = isinstance(source, str) and "\n" in source
    if text_given:
        src_text, src_dir = source, None
    else:
        path = Path(source).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"kernel source {path} does not exist")
        src_text, src_dir = path.read_text(), path.parent
    inc = include_dirs() + [str(Path(i).resolve()) for i in include] + ([str(src_dir)] if src_dir else [])
    abi = _resource_root() / "twin" / "src" / "kernel_abi.inc"
    cxx = compiler()
    cmd_tail = ["-std=c++17", opt, *_native_flags(cxx), "-ffp-contract=off", "-fPIC", "-pthread", *flags,
                *[f"-I{i}" for i in inc]]
    key = hashlib.sha256("\0".join([src_text, _headers_digest(), _user_headers_digest(inc[2:]),
                                    _compiler_identity(cxx), *cmd_tail]).encode()).hexdigest()[:24]
    out = _cache_dir() / f"kernel_{key}.aiv.so"
    with _compile_lock:
        if not out.exists():
            with tempfile.TemporaryDirectory() as td:
                unit = Path(td) / "unit.cpp"
                user = Path(td) / "user_kernel.cpp"
                user.write_text(src_text)
                # The Ascend C headers come first, as CANN's compiler has them: libraries such as catlass include
                # kernel_operator.h only under __CCE__, which that compiler defines (the twin cannot: the same guard
                # selects its device-only syntax).
                unit.write_text(f'#include "kernel_operator.h"\n#include "{user}"\n#include "{abi}"\n')
                aiv = _build(cxx, unit, Path(td), key, cmd_tail)
                aic = aiv.with_name(f"kernel_{key}.aic.so")
                os.replace(aic, out.with_name(aic.name))  # the cube build first: the vector build's file marks both done
                os.replace(aiv, out)
    return KernelLibrary(out)


class TraceRecord(ctypes.Structure):
    _fields_ = [("op", ctypes.c_char_p), ("pipe", ctypes.c_uint8), ("kind", ctypes.c_uint8), ("arg", ctypes.c_uint16),
                ("repeats", ctypes.c_uint32), ("elems", ctypes.c_uint64), ("bytes", ctypes.c_uint64),
                ("dst", ctypes.c_uint64), ("src", ctypes.c_uint64), ("acc", ctypes.c_uint32), ("nacc", ctypes.c_uint32),
                ("dc_miss", ctypes.c_bool)]


PIPE_NAMES = {0: "S", 1: "V", 2: "M", 3: "MTE1", 4: "MTE2", 5: "MTE3", 6: "ALL", 10: "FIX"}
TRACE_KINDS = ["instr", "set_flag", "wait_flag", "barrier", "cross_set", "cross_wait", "atomic"]


class _Buffer(NamedTuple):
    """A GM argument: its bytes [addr, addr + size), the allocation it is a view of [origin, end), and how far the
    memory behind that allocation is known to reach (`backing`, >= end)."""
    addr: int
    size: int
    keep: Any
    origin: int
    end: int
    backing: int


def acl_malloc_bytes(n: int) -> int:
    """The bytes aclrtMalloc(n) gives: n rounded up to a multiple of 32, plus 32 (the aclrtMalloc page of the CANN
    runtime API, 功能说明; aclrtMallocAlign32's page: "与aclrtMalloc接口相比 ... 不会再多加32字节"). Kernels may rely on
    the padding (catlass's FlashAttention example reads one block-table entry past its end)."""
    return -(-n // ACL_MALLOC_ROUND) * ACL_MALLOC_ROUND + ACL_MALLOC_ROUND


def _as_buffer(a: Any) -> _Buffer:
    """The _Buffer of a numpy array or CPU torch tensor used as a GM buffer."""
    if a is None:
        return _Buffer(0, 0, None, 0, 0, 0)
    if isinstance(a, (bytes, bytearray)):
        a = np.frombuffer(bytearray(a), dtype=np.uint8)
    if isinstance(a, np.ndarray):
        if not a.flags["C_CONTIGUOUS"]:
            raise ValueError("GM buffers must be C-contiguous numpy arrays")
        root = a
        while isinstance(root.base, np.ndarray):
            root = root.base
        origin, end = root.ctypes.data, root.ctypes.data + root.nbytes
        backing = end
        if isinstance(root.base, ctypes.Array):  # gm_empty: the ctypes buffer it was cut from
            backing = ctypes.addressof(root.base) + ctypes.sizeof(root.base)
        return _Buffer(a.ctypes.data, a.nbytes, a, origin, end, backing)
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is optional for the twin
        torch = None
    if torch is not None and isinstance(a, torch.Tensor):
        if a.device.type != "cpu":
            raise ValueError(f"twin GM buffers must be CPU tensors, got device {a.device}")
        if not a.is_contiguous():
            raise ValueError("GM buffers must be contiguous tensors")
        st = a.untyped_storage()
        end = st.data_ptr() + st.nbytes()
        return _Buffer(a.data_ptr(), a.numel() * a.element_size(), a, st.data_ptr(), end, end)
    raise TypeError(f"GM buffer must be a numpy array or CPU torch tensor, got {type(a).__name__}")


def gm_empty(shape: int | Sequence[int], dtype: Any) -> np.ndarray:
    """An uninitialised array whose memory starts GM_ALIGN-aligned and is followed by aclrtMalloc's padding, as
    aclrtMalloc's is. A launch passes it in place, so the kernel sees the array's own address: use it for data that
    holds GM addresses (a ListTensorDesc, pointer tables) or when the kernel's view of an address matters (printf %p,
    DumpTensor)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    n = count * dtype.itemsize
    raw = (ctypes.c_uint8 * (acl_malloc_bytes(n) + GM_ALIGN))()
    return np.frombuffer(raw, dtype, count, (-ctypes.addressof(raw)) % GM_ALIGN).reshape(shape)


def _host_bytes(addr: int, n: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(addr)) if n else np.empty(0, np.uint8)


class _DeviceView:
    """The launch's GM as the NPU would hold it: each allocation the buffers are views of starts at a GM_ALIGN-aligned
    address and is followed by aclrtMalloc's padding (acl_malloc_bytes); buffers of one allocation, or overlapping
    ones, keep their relative layout. A buffer that reaches the end of its allocation may be read and written up to
    the end of the padding (`sizes`): the aclrtMalloc page sizes the allocation that way, and asks the same of every
    segment of memory an application carves up itself, so those bytes belong to no one else. The padding holds
    0xFF bytes (NaN, or -1 as an index) and what the kernel writes there is dropped.
    Allocations the caller already aligned, with the padding's memory behind them (gm_empty), are used in place; the
    others are staged in an aligned copy, and whatever the kernel changed is copied back by `finish` (also after an
    error, as the NPU's memory would keep a failed kernel's writes)."""

    def __init__(self, bufs: list[_Buffer]):
        # Accessible end of each buffer: the allocation's padded end when the buffer reaches the allocation's end.
        self.sizes = [(b.origin + acl_malloc_bytes(b.end - b.origin) if b.addr + b.size == b.end else b.addr + b.size)
                      - b.addr if b.addr else 0 for b in bufs]
        groups: list[list[int]] = []  # [origin, lo, hi (the buffers' own end), padded hi, backing]
        for b, size in zip(bufs, self.sizes):
            if not b.addr:
                continue
            g = [b.origin, b.addr, b.addr + b.size, b.addr + size, b.backing]
            while True:
                same = [o for o in groups if o[0] == g[0] or (o[1] < g[2] and g[1] < o[2])]
                if not same:
                    break
                for o in same:
                    groups.remove(o)
                    g = [min(g[0], o[0]), min(g[1], o[1]), max(g[2], o[2]), max(g[3], o[3]), max(g[4], o[4])]
            groups.append(g)
        self._staged = []  # (host lo, staging array, device lo, bytes to copy back)
        shift = {}
        for origin, lo, hi, padded, backing in groups:
            if origin % GM_ALIGN == 0 and backing >= padded:
                ctypes.memset(hi, 0xFF, padded - hi)
                continue
            st = np.empty(padded - lo + 2 * GM_ALIGN, np.uint8)
            dev = -(-st.ctypes.data // GM_ALIGN) * GM_ALIGN + (lo - origin) % GM_ALIGN
            ctypes.memmove(dev, lo, hi - lo)
            ctypes.memset(dev + hi - lo, 0xFF, padded - hi)
            self._staged.append((lo, st, dev, hi - lo))
            shift[(lo, padded)] = dev - lo
        self.addrs = []
        for b in bufs:
            d = next((s for (lo, hi), s in shift.items() if lo <= b.addr and b.addr + b.size <= hi), 0) if b.addr else 0
            self.addrs.append(b.addr + d if b.addr else 0)

    def finish(self) -> None:
        for lo, _, dev, n in self._staged:
            host, kern = _host_bytes(lo, n), _host_bytes(dev, n)
            if not np.array_equal(host, kern):  # leave untouched (maybe read-only) inputs alone
                host[:] = kern


class KernelLibrary:
    """A compiled kernel source; `launch` runs one of its kernels on the twin."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lib = ctypes.CDLL(str(self.path))
        self._lib.twin_launch.restype = ctypes.c_int
        self._lib.twin_launch.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_char_p,
                                          ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                                          ctypes.POINTER(ctypes.c_uint64), ctypes.c_int, ctypes.c_int,
                                          ctypes.c_char_p, ctypes.c_size_t]
        self._lib.twin_launch_v2.restype = ctypes.c_int
        self._lib.twin_launch_v2.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_char_p,
                                             ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                                             ctypes.POINTER(ctypes.c_uint64), ctypes.c_int, ctypes.c_int,
                                             ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t]
        self._lib.twin_launch_v3.restype = ctypes.c_int
        self._lib.twin_launch_v3.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_char_p,
                                             ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                                             ctypes.POINTER(ctypes.c_uint64), ctypes.c_int, ctypes.c_int,
                                             ctypes.c_uint64, ctypes.c_int, ctypes.POINTER(ctypes.c_uint32),
                                             ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
        self._lib.twin_trace_cores.restype = ctypes.c_int
        self._lib.twin_trace_core_name.restype = ctypes.c_char_p
        self._lib.twin_trace_core_name.argtypes = [ctypes.c_int]
        self._lib.twin_trace_len.restype = ctypes.c_uint64
        self._lib.twin_trace_len.argtypes = [ctypes.c_int]
        self._lib.twin_trace_data.restype = ctypes.POINTER(TraceRecord)
        self._lib.twin_trace_data.argtypes = [ctypes.c_int]
        self._lib.twin_trace_acc_data.restype = ctypes.c_void_p
        self._lib.twin_trace_acc_data.argtypes = [ctypes.c_int]
        self._lib.twin_print_output.restype = ctypes.c_char_p
        self._lib.twin_warnings.restype = ctypes.c_char_p
        self._launch_lock = threading.Lock()
        self._output = ""
        self._warnings: list[str] = []

    def launch(self, kernel: str, block_dim: int, *buffers: Any, kernel_type: str | int = "aiv",
               chip: str = DEFAULT_CHIP, check_gm: bool = True, trace: bool = False, tiling_key: int = 0,
               model_only: bool = False, sample_blocks: Sequence[int] = ()) -> None:
        """Run `kernel` over `block_dim` blocks. Buffers are passed as the kernel's GM_ADDR arguments, in order.

        With check_gm, any GM access outside the passed buffers raises TwinError. `tiling_key` is the value
        TILING_KEY_IS(k) compares against (g_tilingKey), as the host's SetTilingKey sets it.
        model_only=True runs the control flow, data moves and trace without the vector/cube arithmetic (outputs
        undefined, no hazard checks; twin::LaunchOptions::modelOnly). sample_blocks (model-only): the ascending block
        indices to run instead of all; the kernel still sees block_dim.
        """
        try:
            fn = ctypes.cast(getattr(self._lib, kernel), ctypes.c_void_p).value
        except AttributeError:
            raise ValueError(f"kernel '{kernel}' is not an extern \"C\" symbol of {self.path.name}") from None
        kt = KERNEL_TYPES.get(kernel_type, None) if isinstance(kernel_type, str) else int(kernel_type)
        if kt is None:
            raise ValueError(f"kernel_type {kernel_type!r} is not one of {sorted(KERNEL_TYPES)}")
        if not isinstance(block_dim, int) or block_dim < 1:
            raise ValueError(f"block_dim must be a positive int, got {block_dim!r}")
        try:
            tiling_key = operator.index(tiling_key)
        except TypeError:
            raise TypeError(f"tiling_key must be an int, got {type(tiling_key).__name__}") from None
        if not 0 <= tiling_key < 2**64:
            raise ValueError(f"tiling_key must be in [0, 2**64), got {tiling_key}")
        sample = [operator.index(b) for b in sample_blocks]  # the launch checks them (model-only, ascending)
        bufs = [_as_buffer(b) for b in buffers]
        n = len(bufs)
        gm = _DeviceView(bufs)
        args = (ctypes.c_void_p * max(n, 1))(*[a or None for a in gm.addrs])
        sizes = (ctypes.c_uint64 * max(n, 1))(*gm.sizes)
        err = ctypes.create_string_buffer(4096)
        with self._launch_lock:
            self._lib.twin_print_clear()
            blocks = (ctypes.c_uint32 * max(len(sample), 1))(*sample)
            try:
                rc = self._lib.twin_launch_v3(fn, kt, block_dim, chip.encode(), n, args, sizes, int(check_gm),
                                              int(trace), tiling_key, int(model_only), blocks, len(sample), err, len(err))
            finally:
                gm.finish()
            self._output = self._lib.twin_print_output().decode(errors="replace")
            self._warnings = self._lib.twin_warnings().decode(errors="replace").splitlines() if rc == 0 else []
        if self._output:  # printf / DumpTensor / assert output, shown as the device's would be
            sys.stdout.write(self._output)
        if rc != 0:
            raise TwinError(err.value.decode(errors="replace"))
        for w in self._warnings:
            warnings.warn(w, TwinWarning, stacklevel=2)

    def last_warnings(self) -> list[str]:
        """The TwinWarning messages of the last launch ("[<core>] <api>: ..."), each distinct one once."""
        return list(self._warnings)

    def last_output(self) -> str:
        """What the last launch printed (AscendC::printf, PRINTF, DumpTensor, failed asserts), all cores."""
        return self._output

    def trace_refs(self) -> list[tuple]:
        """Where the last trace=True launch's per-core traces live, as the cycle model takes them
        (`_C.cost_model_trace`): [(core name, address of its records, record count, address of its accesses)]."""
        out = []
        for i in range(self._lib.twin_trace_cores()):
            addr = ctypes.cast(self._lib.twin_trace_data(i), ctypes.c_void_p).value or 0
            out.append((self._lib.twin_trace_core_name(i).decode(), addr, int(self._lib.twin_trace_len(i)),
                        self._lib.twin_trace_acc_data(i) or 0))
        return out

    def last_trace(self) -> list[dict]:
        """Per-core trace of the last launch made with trace=True: [{core, records: [...]}, ...]."""
        out = []
        for i in range(self._lib.twin_trace_cores()):
            n = self._lib.twin_trace_len(i)
            data = self._lib.twin_trace_data(i)
            recs = []
            for j in range(n):
                r = data[j]
                recs.append({"op": r.op.decode(), "pipe": PIPE_NAMES.get(r.pipe, str(r.pipe)), "kind": TRACE_KINDS[r.kind],
                             "arg": r.arg, "repeats": r.repeats, "elems": r.elems, "bytes": r.bytes,
                             "dc_miss": bool(r.dc_miss)})
            out.append({"core": self._lib.twin_trace_core_name(i).decode(), "records": recs})
        return out
