"""Old API names and edge forms of the vector unit on the twin, against numpy models written from the pages:
RepeatReduceSum (= ReduceRepeat<SUM> with repeatTime first and a dead dstBlkStride, 附录/接口变更说明.md), CompareScalar
(= Compares, same page), Cast half <-> int4b_t (Cast.md, A2 table),
InitOutput (kernel_operator_common_intf.h), printf of a UB address through %lu / %llu / %x, and the operand
overlaps that Sort32, ReduceSum (sharedTmpBuffer) and Transpose (sharedTmpBuffer) leave unsupported.

Kernel: tests/kernels/vector/renamed_and_edge.cpp (case number in p[0]; 64 KB of input bytes x, output bytes y)."""
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "vector" / "renamed_and_edge.cpp"
CMP = {"LT": np.less, "GT": np.greater, "EQ": np.equal, "LE": np.less_equal, "GE": np.greater_equal,
       "NE": np.not_equal}
MODE = {name: i for i, name in enumerate(["LT", "GT", "EQ", "LE", "GE", "NE"])}
ROUND = {"CAST_NONE": 0, "CAST_RINT": 1, "CAST_FLOOR": 2, "CAST_CEIL": 3, "CAST_ROUND": 4, "CAST_TRUNC": 5}


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNEL, opt="-O1")


def run(lib, case, x, n=0, a=0, b=0, c=0, y=None):
    """Runs one case on one vector core; returns the 64 KB output (y's initial bytes where the kernel wrote none)."""
    xb = np.zeros(65536, np.uint8)
    raw = np.ascontiguousarray(x).view(np.uint8)
    xb[:raw.size] = raw
    yb = np.zeros(65536, np.uint8) if y is None else y
    lib.launch("edge_case", 1, np.array([case, n, a, b, c, 0], np.int64), xb, yb, kernel_type="aiv")
    return yb


def tree(v, dt):
    """The binary tree of adjacent pairs of one repeat (ReduceRepeat page), rounded to dt at every level."""
    v = v.astype(dt)
    while v.size > 1:
        v = (v[0::2].astype(np.float32) + v[1::2].astype(np.float32)).astype(dt)
    return v[0]


# ---------------------------------------------------------------------------------------------------- RepeatReduceSum
@pytest.mark.parametrize("dt,case", [(np.float32, 0), (np.float16, 1)], ids=["f32", "f16"])
def test_repeat_reduce_sum_is_reduce_repeat_sum(lib, rng, dt, case):
    per = 256 // np.dtype(dt).itemsize
    reps, mask, stride = int(rng.integers(1, 20)), int(rng.integers(1, per + 1)), int(rng.integers(8, 12))
    x = rng.uniform(-2, 2, reps * stride * 32 // np.dtype(dt).itemsize).astype(dt)
    out = run(lib, case, x, n=reps, a=mask, b=stride, c=int(rng.integers(0, 9))).view(dt)
    rows = x.reshape(reps, -1)[:, :per].copy()
    rows[:, mask:] = 0  # elements outside the mask do not take part
    want = np.array([tree(r, dt) for r in rows], dt)
    assert np.array_equal(out[:reps].view(np.uint8), want.view(np.uint8))
    np.testing.assert_allclose(out[:reps], rows.astype(np.float64).sum(axis=1), rtol=2e-2 if dt == np.float16 else 1e-5,
                               atol=2e-2 if dt == np.float16 else 1e-5)


def test_repeat_reduce_sum_limits(lib, rng):
    x = rng.uniform(-1, 1, 16384).astype(np.float32)
    run(lib, 0, x, n=255, a=64, b=0)  # control: the largest repeatTime, every repeat reading the first 256 B
    with pytest.raises(twin.TwinError, match=r"RepeatReduceSum: .*repeatTime 256"):
        run(lib, 0, x, n=256, a=64, b=0)
    # a continuous mask past the repeat counts as the maximum (SIMD计算说明/掩码.md): 65 floats sum like 64
    assert np.array_equal(run(lib, 0, x, n=3, a=65, b=8)[:12], run(lib, 0, x, n=3, a=64, b=8)[:12])


# ---------------------------------------------------------------------------------------------------- CompareScalar
@pytest.mark.parametrize("mode", list(MODE))
def test_compare_scalar_count_form_half(lib, rng, mode):
    n = 128 * int(rng.integers(1, 8))
    x = rng.integers(-4, 5, 128 + n).astype(np.float16)  # small integers: many ties with the scalar
    bits = run(lib, 2, x, n=n, a=MODE[mode])[:n // 8]
    assert np.array_equal(bits, np.packbits(CMP[mode](x[128:], x[0]), bitorder="little"))


@pytest.mark.parametrize("mode", ["LT", "GE", "NE"])
def test_compare_scalar_level0_float(lib, rng, mode):
    reps = int(rng.integers(1, 10))
    x = rng.standard_normal(64 + 64 * reps).astype(np.float32)
    bits = run(lib, 3, x, n=reps, a=MODE[mode])[:8 * reps]  # the mask is reserved on A2: all 64 per repeat
    assert np.array_equal(bits, np.packbits(CMP[mode](x[64:], x[0]), bitorder="little"))


def test_compare_scalar_int32_only_eq(lib, rng):
    x = rng.integers(0, 10, 64 + 64).astype(np.int32)
    bits = run(lib, 4, x, n=64, a=MODE["EQ"])[:8]  # control: EQ is the documented int32_t mode
    assert np.array_equal(bits, np.packbits(x[64:] == 7, bitorder="little"))
    with pytest.raises(twin.TwinError, match="CompareScalar: int32_t supports only CMPMODE::EQ"):
        run(lib, 4, x, n=64, a=MODE["GT"])
    with pytest.raises(twin.TwinError, match="CompareScalar: count 65 .* not a multiple of 256 B"):
        run(lib, 4, x, n=65, a=MODE["EQ"])


# ---------------------------------------------------------------------------------------------------- Cast int4b_t
def int4_ref(h, mode):
    f = {"CAST_RINT": np.rint, "CAST_NONE": np.rint, "CAST_FLOOR": np.floor, "CAST_CEIL": np.ceil,
         "CAST_TRUNC": np.trunc, "CAST_ROUND": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5)}[mode]
    return np.clip(f(h.astype(np.float64)), -8, 7).astype(np.int8)


def unpack_int4(b, n):
    nib = np.stack([b & 0xF, b >> 4], axis=1).reshape(-1)[:n].astype(np.int8)
    return np.where(nib >= 8, nib - 16, nib)


@pytest.mark.parametrize("mode", list(ROUND))
def test_cast_half_to_int4_count_form(lib, rng, mode):
    n = 128 * int(rng.integers(1, 6))
    h = (rng.uniform(-10, 10, n) * 4).round().astype(np.float16) / np.float16(4)  # quarters: every rounding case
    out = run(lib, 5, h, n=n, a=ROUND[mode])
    assert np.array_equal(unpack_int4(out[:n // 2], n), int4_ref(h, mode))
    assert not out[n // 2:].any()


def test_cast_half_to_int4_level0_masked(lib, rng):
    reps, mask = 4, int(rng.integers(1, 129))  # the official example's call: {1, 1, 2, 8}, CAST_CEIL
    h = rng.uniform(-9, 9, 128 * reps).astype(np.float16)
    y = rng.integers(0, 256, 65536).astype(np.uint8)
    before = y.copy()
    out = run(lib, 6, h, n=reps, a=mask, y=y)
    got = unpack_int4(out[:64 * reps], 128 * reps).reshape(reps, 128)
    keep = unpack_int4(before[:64 * reps], 128 * reps).reshape(reps, 128)
    want = int4_ref(h, "CAST_CEIL").reshape(reps, 128)
    assert np.array_equal(got[:, :mask], want[:, :mask])
    assert np.array_equal(got[:, mask:], keep[:, mask:])  # nibbles outside the mask keep their value


def test_cast_int4_to_half(lib, rng):
    n = 128 * int(rng.integers(1, 6))
    packed = rng.integers(0, 256, n // 2).astype(np.uint8)
    out = run(lib, 7, packed, n=n).view(np.float16)
    assert np.array_equal(out[:n], unpack_int4(packed, n).astype(np.float16))


def test_cast_int4_round_modes_follow_the_a2_table(lib):
    with pytest.raises(twin.TwinError, match="Cast half -> int4b_t does not support RoundMode::CAST_ODD"):
        run(lib, 5, np.zeros(128, np.float16), n=128, a=6)


# ---------------------------------------------------------------------------------------------------- InitOutput
def test_init_output_fills_gm(lib, rng):
    n, v = int(rng.integers(1, 16000)), int(rng.integers(-2**31, 2**31))
    y = rng.integers(0, 256, 65536).astype(np.uint8)
    before = y.copy()
    run(lib, 9, np.zeros(1, np.uint8), n=n, a=v, y=y)
    assert (y.view(np.int32)[:n] == v).all()
    assert np.array_equal(y[4 * n:], before[4 * n:])
    with pytest.raises(twin.TwinError, match="InitOutput"):
        run(lib, 9, np.zeros(1, np.uint8), n=16385, a=v)  # one element past the GlobalTensor


# ---------------------------------------------------------------------------------------------------- printf
def test_printf_prints_ub_addresses_as_integers(lib, rng):
    off = int(rng.integers(0, 1024))
    run(lib, 10, np.zeros(1, np.uint8), n=off)
    (line,) = lib.last_output().splitlines()
    # the two TBufs take UB bytes [0, 64 KB) and [64 KB, 128 KB)
    assert line == f"[AIV Block 0/1] in=0 out={65536 + off} x={65536 + 512:x}"


# ---------------------------------------------------------------------------------------------------- overlaps
def test_sort32_dst_apart_from_its_sources(lib, rng):
    reps = int(rng.integers(1, 5))
    x = np.zeros(16384, np.float32)
    x[:32 * reps] = rng.permutation(32 * reps).astype(np.float32)  # distinct scores
    x.view(np.uint32)[8192:8192 + 32 * reps] = np.arange(32 * reps)
    out = run(lib, 11, x, n=reps).view(np.float32)  # control: dst in out's second half
    got = out[8192:8192 + 64 * reps].reshape(reps, 32, 2)[:, :, 0]
    assert np.array_equal(got, -np.sort(-x[:32 * reps].reshape(reps, 32), axis=1))
    # the page states no overlap rule, so none is allowed (通用说明和约束.md): dst on the scores or the indices
    for at in (0, 32768):
        with pytest.raises(twin.TwinError, match="Sort32: dst overlaps src0 or src1"):
            run(lib, 11, x, n=reps, b=at, c=1)


def test_reduce_sum_tmp_apart_from_src(lib, rng):
    reps = int(rng.integers(2, 9))
    x = rng.uniform(-1, 1, 64 * reps).astype(np.float32)
    out = run(lib, 12, x, n=reps).view(np.float32)  # control: sharedTmpBuffer apart from src
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-5)
    run(lib, 12, x, n=reps, b=256 * reps, c=1)  # right after src: legal
    with pytest.raises(twin.TwinError, match=r"ReduceSum: sharedTmpBuffer \(UB bytes \[0, 32\)\) overlaps src"):
        run(lib, 12, x, n=reps, b=0, c=1)


def test_transpose_tmp_apart_from_operands(lib, rng):
    c = int(rng.integers(1, 8))
    x = rng.standard_normal(c * 16).astype(np.float32)
    out = run(lib, 13, x, n=c).view(np.float32)  # control
    assert np.array_equal(out[:16 * c], x.reshape(c, 16).T.reshape(-1))
    with pytest.raises(twin.TwinError, match="Transpose: sharedTmpBuffer overlaps src or dst"):
        run(lib, 13, x, n=c, b=0, c=1)
