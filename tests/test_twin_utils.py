"""Debug and utility APIs on the twin: printf / PRINTF (documented conversions, per-core prefix, output back in
Python), assert / ascendc_assert (a failure is a TwinError naming core, expression and message), DumpTensor,
DivCeil / IsSameType / Conditional, GetTPipePtr, GlobalTensor::SetL2CacheHint and ListTensorDesc. Expected text and
values come from the documented semantics (C printf conversions, the documented dump layout and list layout)."""
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "utils" / "utils.cpp"
M64 = (1 << 64) - 1


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNEL)


def _gm(a):
    """`a` in GM memory the launch passes in place, so addresses the kernel prints are the array's."""
    g = twin.gm_empty(a.shape, a.dtype)
    g[...] = a
    return g


def _inputs(rng):
    i = _gm(rng.integers(-2**31, 2**31, 4096).astype(np.int32))
    f = (rng.standard_normal(4096) * 100).astype(np.float32)
    h = _gm((rng.standard_normal(4096) * 10).astype(np.float16))
    return i, f, h, np.zeros(4096, np.uint32)


def _run(lib, case, blocks, i, f, h, o, *p, on_block=-1, **kw):
    params = np.array([case, on_block, *p] + [0] * (6 - len(p)), dtype=np.int64)
    lib.launch("utils_case", blocks, params, i, f, h, o, kernel_type=kw.pop("kernel_type", "aiv"), **kw)


def _lines_by_core(text):
    """{prefix: [line, ...]} in each core's order; every line must carry a core prefix."""
    out = {}
    for line in text.splitlines():
        assert line.startswith("[AIV Block ") or line.startswith("[AIC Block "), line
        pre, rest = line.split("] ", 1)
        out.setdefault(pre + "]", []).append(rest)
    return out


def test_printf_conversions_and_prefix(lib, rng, capsys):
    i, f, h, o = _inputs(rng)
    blocks = 5
    _run(lib, 1, blocks, i, f, h, o)
    got = _lines_by_core(lib.last_output())
    assert capsys.readouterr().out.endswith(lib.last_output())  # echoed to sys.stdout
    assert sorted(got) == sorted(f"[AIV Block {b}/{blocks}]" for b in range(blocks))
    for b in range(blocks):
        v = int(i[b])
        big = v * 100003
        u = int(i[b + 8]) & 0xFFFFFFFF
        s8 = (v & 0xFF) - 256 * ((v & 0xFF) >= 128)
        want = [
            f"d={v} i={v} ld={big} lli={big} s8={s8}",
            f"u={u} lu={u} llu={big & M64} x={u:x} lx={big & M64:x} llx={v & M64:x} u16={v & 0xFFFF}",
            "f=%f F=%F h=%f s=twin p=0x%x" % (float(f[b]), float(f[b + 8]), float(h[b]), i.ctypes.data),
            f"half a line, the rest {b}",
            "next line",
            f"unqualified {v}",
        ]
        assert got[f"[AIV Block {b}/{blocks}]"] == want


def test_printf_prefix_mix_and_clear_between_launches(lib, rng):
    i, f, h, o = _inputs(rng)
    _run(lib, 1, 2, i, f, h, o, kernel_type="mix")  # AIC cores print too (block index over AICs)
    got = _lines_by_core(lib.last_output())
    assert sorted(got) == sorted(["[AIC Block 0/2]", "[AIC Block 1/2]"] + [f"[AIV Block {b}/4]" for b in range(4)])
    _run(lib, 5, 1, i, f, h, o)
    assert lib.last_output() == ""


@pytest.mark.parametrize("case, match", [
    (10, r"printf: format specifier '%5' at offset 0 is not supported"),
    (11, r"printf: format string has the control character 0x09 at offset 3"),
    (12, r"printf: argument 1 for '%d' is a floating-point value, expected an integer"),
    (13, r"printf: format specifier 2 \('%d'\) has no argument \(1 given\)"),
    (14, r"printf: 2 arguments given but the format string uses 1"),
    (15, r"printf: one call prints more than the 30720-byte print limit"),
    (16, r"printf: argument 1 for '%s' is a signed integer, expected a string"),
    (19, r"printf: format specifier '%%' at offset 3 is not supported"),
    (20, r"printf: format string is a null pointer"),
])
def test_printf_misuse(lib, rng, case, match):
    i, f, h, o = _inputs(rng)
    if case == 15:
        h = np.full(31000, ord("a"), np.uint8)
        h[-1] = 0
    with pytest.raises(twin.TwinError, match=r"\[AIV 2 \(block 2, sub 0\)\] " + match):
        _run(lib, case, 3, i, f, h, o, on_block=2)


def _dump_text(desc, addr, dtype, pos, values, fmt):
    body = ", ".join(fmt(v) for v in values)
    return f"DumpTensor: desc={desc}, addr=0x{addr:x}, data_type={dtype}, position={pos}, dump_size={len(values)}\n[{body}]\n"


def test_dump_tensor_ub_and_gm(lib, rng):
    i, f, h, o = _inputs(rng)
    n, nh = int(rng.integers(1, 512)), int(rng.integers(1, 300))
    _run(lib, 2, 1, i, f, h, o, n, nh, trace=True)
    line = next(k for k, s in enumerate(KERNEL.read_text().splitlines(), 1) if "DumpTensor(it, (uint32_t)__LINE__" in s)
    want = (_dump_text(5, 0, "float32", "UB", f[:n], lambda v: "%f" % float(v))
            + _dump_text(7, h.ctypes.data + 6, "float16", "GM", h[3:3 + nh], lambda v: "%f" % float(v))
            + _dump_text(line, 4096, "int32", "UB", i[:n], str))
    assert lib.last_output() == want
    ops = [r["op"] for r in lib.last_trace()[0]["records"]]
    k = ops.index("DumpTensor")
    assert ops[k - 1] == ops[k + 1] == "PipeBarrier"  # dav-2201 dumps between two PIPE_ALL barriers
    assert ops.count("DumpTensor") == 3


def test_dump_tensor_cube_buffers(lib, rng):
    _, f, _, _ = _inputs(rng)
    lib.launch("dump_cube", 1, np.zeros(8, np.int64), f, kernel_type="aic")
    assert lib.last_output() == (_dump_text(11, 0, "float32", "L1", f[:24], lambda v: "%f" % float(v))
                                 + _dump_text(12, 0, "float32", "L0C", [], str))
    with pytest.raises(twin.TwinError, match=r"\[AIC 0\] DumpTensor: a tensor at position A2 \(L0A\) cannot be dumped"):
        lib.launch("dump_cube", 1, np.ones(8, np.int64), f, kernel_type="aic")


@pytest.mark.parametrize("case, p2, p3, match", [
    (17, 300, 1024, r"DumpTensor: dumpSize 300 elements is past the tensor's 256 elements"),
    (17, 7700, 40000, r"DumpTensor: dump of 7700 elements \(30816 bytes\) exceeds the 30720-byte print limit"),
    (18, 5000, 0, r"DumpTensor: access of 5000 elements at element 0 is outside the GlobalTensor's declared size 4096"),
    (21, 0, 0, r"DumpTensor: tensor is not allocated"),
    (22, 3, 0, r"DumpTensor: tensor address \d+ in UB is not 32-byte aligned"),
])
def test_dump_tensor_misuse(lib, rng, case, p2, p3, match):
    i, f, h, o = _inputs(rng)
    with pytest.raises(twin.TwinError, match=r"\[AIV 1 \(block 1, sub 0\)\] " + match):
        _run(lib, case, 2, i, f, h, o, p2, p3, on_block=1)


def test_ascendc_assert_fails_as_twin_error(lib, rng):
    i, f, h, o = _inputs(rng)
    bad = int(rng.integers(0, 4))
    with pytest.raises(twin.TwinError) as e:
        _run(lib, 3, 4, i, f, h, o, bad)
    msg = str(e.value)
    want = "value %d on block %d is %f" % (int(i[bad]), bad, float(f[bad]))
    assert msg.startswith(f"[AIV {bad} (block {bad}, sub 0)] assert: Assertion `b != p2' failed at ")
    assert msg.endswith(want)
    out = lib.last_output()
    assert out.startswith("[ASSERT] ") and out.endswith(f"Assertion `b != p2' {want}\n")
    _run(lib, 3, 4, i, f, h, o, 99)  # holding assertions print nothing, and the process lives on
    assert lib.last_output() == ""


def test_plain_assert(lib, rng):
    i, f, h, o = _inputs(rng)
    i[0] = i[1] - 3
    with pytest.raises(twin.TwinError, match=r"\[AIV 0 \(block 0, sub 0\)\] assert: Assertion "
                                             r"`ig.GetValue\(0\) == ig.GetValue\(1\) \+ 1' failed at .*:\d+$"):
        _run(lib, 4, 1, i, f, h, o)


def test_divceil_issametype_conditional(lib, rng):
    i, f, h, o = _inputs(rng)
    a = rng.integers(0, 2**31, 16)
    b = rng.integers(1, 5000, 16)
    i[:16], i[16:32] = a, b
    _run(lib, 5, 1, i, f, h, o)
    assert list(o[:16]) == [(int(x) + int(y) - 1) // int(y) for x, y in zip(a, b)]
    assert o[16] == 1 and o[17] == 8
    with pytest.raises(twin.TwinError, match=r"\[AIV 0 \(block 0, sub 0\)\] DivCeil: divisor is 0 \(a = 77\)"):
        _run(lib, 6, 1, i, f, h, o, 77, 0)


@pytest.mark.parametrize("hints", [0, 1])
def test_get_tpipe_ptr_and_l2_cache_hint(lib, rng, hints):
    i, f, h, o = _inputs(rng)
    n = int(rng.integers(1, 200)) * 8
    _run(lib, 7, 1, i, f, h, o, hints, n, trace=True)
    assert o[0] == 1
    assert np.array_equal(o[64:64 + n].view(np.float32), f[:n])  # hints never change a result
    hint = [(r["arg"]) for r in lib.last_trace()[0]["records"] if r["op"] == "GlobalTensor::SetL2CacheHint"]
    assert hint == ([0, 1] if hints else [])  # CACHE_MODE_DISABLE = 0, CACHE_MODE_NORMAL = 1


@pytest.mark.parametrize("case, p2, match", [
    (8, 0, r"GetTPipePtr: no TPipe is live on this core"),
    (9, 4, r"GlobalTensor::SetL2CacheHint: CacheMode 4 is not supported on dav-2201"),
    (9, 2, r"GlobalTensor::SetL2CacheHint: CacheMode 2 is not supported on dav-2201"),
])
def test_pipe_ptr_and_cache_hint_misuse(lib, rng, case, p2, match):
    i, f, h, o = _inputs(rng)
    with pytest.raises(twin.TwinError, match=r"\[AIV 1 \(block 1, sub 0\)\] " + match):
        _run(lib, case, 2, i, f, h, o, p2, on_block=1)


def _list_buffer(tensors, dim):
    """A ListTensorDesc in GM as documented, followed by the tensors' data in the same buffer.

    Returns (buffer as uint64 words, byte offset of each tensor's data)."""
    count = len(tensors)
    desc_words = 2 if dim == 0 else 1 + dim
    head = 1 + count * desc_words if dim else 3
    ptr_offset = 8 * head
    data_start = ptr_offset + 8 * count
    sizes = [(t.nbytes + 7) // 8 * 8 for t in tensors]
    buf = _gm(np.zeros((data_start + sum(sizes)) // 8, np.uint64))  # holds its own addresses: passed in place
    buf[0] = ptr_offset
    if dim == 0:
        buf[1] = count << 32
        buf[2] = 0xFFFFFFFF
    for k, t in enumerate(tensors):
        if dim:
            buf[1 + k * desc_words] = dim | (k << 32)
            buf[2 + k * desc_words: 2 + k * desc_words + dim] = t.shape
    offs, at = [], data_start
    for t, s in zip(tensors, sizes):
        buf.view(np.uint8)[at:at + t.nbytes] = t.view(np.uint8).ravel()
        offs.append(at)
        at += s
    base = buf.ctypes.data
    buf[head:head + count] = [base + x for x in offs]
    return buf, offs


def test_list_tensor_desc_example_addn(lib, rng):
    blocks = 4
    rows, cols = blocks, 16 * int(rng.integers(10, 100))  # halves of a row stay 32 B multiples
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    y = rng.standard_normal((rows, cols)).astype(np.float32)
    lst, offs = _list_buffer([x, y], 2)
    z = np.zeros_like(x)
    lib.launch("list_addn", blocks, lst, z, kernel_type="aiv")
    assert np.array_equal(z, x + y)


@pytest.mark.parametrize("dim", [0, 1, 3])
def test_list_tensor_desc_decode(lib, rng, dim):
    count = int(rng.integers(1, 6))
    if dim == 0:
        tensors = [rng.integers(-1000, 1000, int(rng.integers(1, 40))).astype(np.int32) for _ in range(count)]
    else:
        shape = tuple(int(s) for s in rng.integers(1, 6, dim))
        tensors = [rng.integers(-1000, 1000, shape).astype(np.int32) for _ in range(count)]
    lst, offs = _list_buffer(tensors, dim)
    out = np.zeros(512, np.uint64)
    lib.launch("list_case", 1, np.array([0, dim, 0, 0], np.int64), lst, out)
    want = [count]
    for k, t in enumerate(tensors):
        if dim:
            want += [k, dim, *t.shape, 1, t.size, int(t.ravel()[-1]) & M64]
        want.append(lst.ctypes.data + offs[k])
    assert [int(v) for v in out[:len(want)]] == want


def test_list_tensor_desc_length_check(lib, rng):
    tensors = [np.arange(6, dtype=np.int32).reshape(2, 3)] * 3
    lst, offs = _list_buffer(tensors, 2)
    total = offs[0]  # the descriptor and pointer array end where the data starts
    out = np.zeros(512, np.uint64)
    lib.launch("list_case", 1, np.array([4, total, 3], np.int64), lst, out)
    assert out[0] == 3
    with pytest.raises(twin.TwinError, match=r"ListTensorDesc::Init: length 64 / shapeSize 3 do not match the list: "
                                             rf"{total} bytes holding 3 tensors"):
        lib.launch("list_case", 1, np.array([4, 64, 3], np.int64), lst, out)


@pytest.mark.parametrize("case, p1, corrupt, match", [
    (1, 3, None, r"ListTensorDesc::GetDataPtr: index 3 is not below the list's 3 tensors"),
    (2, 5, None, r"ListTensorDesc::GetDesc: index 5 is not below the list's 3 tensors"),
    (3, 2, None, r"TensorDesc::GetShape: offset 2 is not below the tensor's dim 2"),
    (5, 0, None, r"ListTensorDesc::GetDesc: call TensorDesc::SetShapeAddr before GetDesc"),
    (6, 0, None, r"TensorDesc::SetShapeAddr: shapePtr is a null pointer"),
    (7, 0, None, r"ListTensorDesc::GetSize: ListTensorDesc used before Init"),
    (0, 2, (0, 8000), r"ListTensorDesc::Init: GM access of 8 bytes at 0x[0-9a-f]+ is outside every buffer passed"),
    (0, 2, (0, 40), r"ListTensorDesc::Init: ptrOffset 40 bytes is not 8 \+ a whole number of 24-byte descriptors"),
    (0, 2, (4, 3), r"ListTensorDesc::Init: descriptor 1 has dim 3, descriptor 0 dim 2"),
    (0, 2, (7, 5 << 32 | 2), r"ListTensorDesc::Init: the descriptors give 6 tensors but ptrOffset 80 holds 3"),
])
def test_list_tensor_desc_misuse(lib, rng, case, p1, corrupt, match):
    tensors = [rng.integers(0, 9, (2, 3)).astype(np.int32) for _ in range(3)]
    lst, _ = _list_buffer(tensors, 2)
    if corrupt:
        lst[corrupt[0]] = corrupt[1]
    with pytest.raises(twin.TwinError, match=r"\[AIV 0 \(block 0, sub 0\)\] " + match):
        lib.launch("list_case", 1, np.array([case, p1, 0], np.int64), lst, np.zeros(512, np.uint64))


def test_list_tensor_desc_dim0_layout_check(lib):
    lst, _ = _list_buffer([np.zeros(4, np.int32)], 0)
    lst[2] = 7
    with pytest.raises(twin.TwinError, match=r"ListTensorDesc::Init: a list with dim 0 has one descriptor"):
        lib.launch("list_case", 1, np.zeros(3, np.int64), lst, np.zeros(512, np.uint64))


def test_list_tensor_desc_null_and_pointer_only_list(lib):
    with pytest.raises(twin.TwinError, match=r"ListTensorDesc::Init: data is a null pointer"):
        lib.launch("list_case", 1, np.zeros(3, np.int64), None, np.zeros(512, np.uint64))
    lst, _ = _list_buffer([np.zeros(4, np.int32)] * 2, 0)
    with pytest.raises(twin.TwinError, match=r"ListTensorDesc::GetDesc: the list holds data pointers only \(dim 0\)"):
        lib.launch("list_case", 1, np.array([2, 0, 0], np.int64), lst, np.zeros(512, np.uint64))
