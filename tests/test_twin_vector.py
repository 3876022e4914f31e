"""The twin's vector unit (AscendC vector APIs on the AIV, operands in UB) against numpy models of the documented
dav-2201 semantics: masks (bitwise incl. the high word for 16-bit types, continuous incl. clamping, the mask register,
counter mode), repeats, block/repeat strides incl. stride-0 broadcast, tails, dtypes, and the strict checks.

The kernels live in tests/kernels/vector/vector_api.cpp: a GM parameter block selects API, call form and numbers;
UB holds three regions (src0, src1, dst), dst is preloaded with random data so masked-off elements are checked too.
Operand tensors are sized to exactly the footprint the documented addressing gives, so an over-strict footprint
check would fail these tests as well as a missing one.
"""
import numpy as np
import pytest

from npu_flash_attn import twin
from vector_harness import (BF16, F16, F32, KDIR, REGION, S16, S32, U16, U32, assert_misuse_reported, case_params,
                            compile_vector_kernel, index, launch, params, random_mask, region, scalar_bits, selection,
                            setp, size_of, span)


@pytest.fixture(scope="module")
def lib():
    return compile_vector_kernel("vector_api.cpp")


def l0_case(rng, size, form, n_src=2, broadcast=False):
    """Random level-0 call: mask, repeats and strides; dst never overlaps itself across blocks/repeats."""
    perrep = 256 // size
    epb = 32 // size
    m0, m1 = random_mask(rng, perrep, form, more=(perrep + 5,))
    repeat = int(rng.integers(1, 9))
    count = int(rng.integers(1, perrep * 6)) if form in (4, 5) else 0
    dblk = int(rng.choice([1, 1, 2]))
    drep = int(rng.choice([8 * dblk, 8 * dblk + 1, 8 * dblk + 5]))
    sblk = [int(rng.choice([1, 2, 3, 0])) for _ in range(n_src)]
    srep = [int(rng.choice([8, 9, 16, 4, 0])) for _ in range(n_src)]
    if broadcast:  # FA style: one 32 B block per repeat, re-read by every block
        sblk[-1], srep[-1] = 0, 1
    offs = [int(rng.integers(0, 4)) * epb for _ in range(n_src + 1)]
    return dict(form=form, mask0=m0, mask1=m1, repeat=repeat, count=count, blk=[dblk] + sblk, rep=[drep] + srep,
                off=offs)


def count_case(rng, size, count=None):
    perrep = 256 // size
    n = int(count if count is not None else rng.integers(1, perrep * 20))
    epb = 32 // size
    offs = [int(rng.integers(0, 4)) * epb for _ in range(3)]
    return dict(form=0, mask0=0, mask1=0, repeat=0, count=n, blk=[1, 1, 1], rep=[8, 8, 8], off=offs)


# ---- arithmetic ----
BINARY = {0: "add", 1: "sub", 2: "mul", 3: "div", 4: "max", 5: "min"}
SCALAR = {10: "add", 11: "mul", 12: "max", 13: "min"}
KERNEL = {F32: "arith_f32", F16: "arith_f16", S16: "arith_s16", S32: "arith_s32", BF16: "arith_bf16",
          U16: "arith_u16", U32: "arith_u32"}


def ref_binary(name, dt, x, y):
    if dt in (F32, F16):
        x, y = x.astype(np.float32), y.astype(np.float32)
    with np.errstate(over="ignore"):
        r = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
             "min": np.minimum}[name](x, y)
    return r.astype(dt)


def check_close(out, ref, dt, what, rtol=0.0):
    if rtol == 0.0:
        if dt in (F32, F16):
            ok = np.array_equal(out.view(np.uint32 if dt is F32 else np.uint16),
                                ref.view(np.uint32 if dt is F32 else np.uint16))
        else:
            ok = np.array_equal(out, ref)
        if not ok:
            bad = np.nonzero(out != ref)[0][:8]
            raise AssertionError(f"{what}: mismatch at {bad.tolist()}: got {out[bad].tolist()} want {ref[bad].tolist()}")
    else:
        np.testing.assert_allclose(out.astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=0, err_msg=what)


@pytest.mark.parametrize("dt", [F32, F16, S16, S32], ids=["f32", "f16", "s16", "s32"])
def test_binary_ops(lib, rng, dt):
    size = size_of(dt)
    ops = [0, 1, 2, 4, 5] + ([3] if dt in (F32, F16) else [])
    lo, hi = (-4, 4) if dt in (F32, F16) else ((-30000, 30000) if dt is S16 else (-(2 ** 31), 2 ** 31 - 1))
    cases = []
    for form in (0, 1, 2, 3, 4, 5, 6):
        cases.append(count_case(rng, size) if form == 0 else l0_case(rng, size, form))
    cases.append(count_case(rng, size, count=4000 if size == 4 else 8000))  # long contiguous run (fast path)
    cases.append(l0_case(rng, size, 1, broadcast=True))
    for op in ops:
        for c in cases:
            a, b, d = region(rng, dt, lo, hi), region(rng, dt, lo, hi), region(rng, dt, lo, hi)
            if op == 3:  # keep divisors away from zero
                b = (np.sign(b.astype(np.float32)) * (np.abs(b.astype(np.float32)) + 0.5)).astype(dt)
            p, (di, ai, bi) = case_params(c, [size] * 3, op=op)
            ref = d.copy()
            ref[di] = ref_binary(BINARY[op], dt, a[ai], b[bi])
            out = launch(lib, KERNEL[dt], p, a, b, d)
            check_close(out, ref, dt, f"{BINARY[op]} {np.dtype(dt).name} form {c['form']} {c}")


@pytest.mark.parametrize("dt", [F32, F16, S16, S32], ids=["f32", "f16", "s16", "s32"])
def test_scalar_ops(lib, rng, dt):
    size = size_of(dt)
    lo, hi = (-4, 4) if dt in (F32, F16) else (-30000, 30000)
    for op, name in SCALAR.items():
        for form in (0, 1, 2, 3, 4, 5, 6, 8):
            c = count_case(rng, size) if form in (0, 8) else l0_case(rng, size, form, n_src=1)
            if form == 8:
                c["form"] = 8
            s = dt(rng.uniform(-3, 3)) if dt in (F32, F16) else dt(rng.integers(-300, 300))
            a, d = region(rng, dt, lo, hi), region(rng, dt, lo, hi)
            p, (di, ai) = case_params(c, [size] * 2, op=op, scalarBits=scalar_bits(s, dt))
            ref = d.copy()
            ref[di] = ref_binary(name, dt, a[ai], np.full(ai.shape, s, dt))
            out = launch(lib, KERNEL[dt], p, a, region(rng, dt), d)
            check_close(out, ref, dt, f"{name}s {np.dtype(dt).name} form {form} {c}")


UNARY = {20: ("exp", np.exp, -6, 6), 21: ("ln", np.log, 0.05, 20), 22: ("abs", np.abs, -4, 4),
         23: ("sqrt", np.sqrt, 0, 20), 24: ("rsqrt", lambda x: np.float32(1) / np.sqrt(x), 0.05, 20),
         25: ("reciprocal", lambda x: np.float32(1) / x, 0.25, 4), 26: ("relu", lambda x: np.maximum(x, 0), -4, 4)}


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_unary_ops(lib, rng, dt):
    size = size_of(dt)
    for op, (name, f, lo, hi) in UNARY.items():
        for form in (0, 1, 2, 4, 6):
            c = count_case(rng, size) if form == 0 else l0_case(rng, size, form, n_src=1)
            a, d = region(rng, dt, lo, hi), region(rng, dt)
            if name == "reciprocal":
                a = (a.astype(np.float32) * rng.choice([-1, 1], a.size)).astype(dt)
            p, (di, ai) = case_params(c, [size] * 2, op=op)
            ref = d.copy()
            ref[di] = f(a[ai].astype(np.float32)).astype(dt)
            out = launch(lib, KERNEL[dt], p, a, region(rng, dt), d)
            rtol = 0.0
            if name in ("exp", "ln"):  # own float exp (<= 2 ulp) and libm log vs numpy's
                rtol = 1e-3 if dt is F16 else 5e-7
            check_close(out, ref, dt, f"{name} {np.dtype(dt).name} form {form} {c}", rtol)


def test_relu_int32_and_integer_wraparound(lib, rng):
    c = count_case(rng, 4, 1000)
    a = region(rng, S32, -(2 ** 31), 2 ** 31 - 1)
    d = region(rng, S32, -100, 100)
    p, (di, ai) = case_params(c, [4, 4], op=26)
    ref = d.copy()
    ref[di] = np.maximum(a[ai], 0)
    check_close(launch(lib, "arith_s32", p, a, region(rng, S32), d), ref, S32, "relu s32")
    # int16 add wraps around
    c = count_case(rng, 2, 300)
    a = np.full(REGION // 2, 30000, S16)
    b = np.full(REGION // 2, 10000, S16)
    d = region(rng, S16)
    p, (di, _, _) = case_params(c, [2, 2, 2], op=0)
    out = launch(lib, "arith_s16", p, a, b, d)
    assert (out[di] == np.int16(40000 - 65536)).all()


@pytest.mark.parametrize("dt", [F32, F16, S16, S32, U16, U32, BF16], ids=["f32", "f16", "s16", "s32", "u16", "u32", "bf16"])
def test_duplicate(lib, rng, dt):
    size = size_of(dt)
    for form in (0, 1, 2, 3, 4, 6):
        c = count_case(rng, size) if form == 0 else l0_case(rng, size, form, n_src=0)
        s = region(rng, dt, 0, 1000)[:1][0]
        d = region(rng, dt, 0, 1000)
        p, (di,) = case_params(c, [size], op=30, scalarBits=scalar_bits(s, dt))
        ref = d.copy()
        ref[di] = s
        out = launch(lib, KERNEL[dt], p, region(rng, dt, 0, 9), region(rng, dt, 0, 9), d)
        assert np.array_equal(out.view(np.uint8), ref.view(np.uint8)), f"Duplicate {dt} form {form} {c}"


@pytest.mark.parametrize("op", [0, 3, 10, 20, 26, 2], ids=["Add", "Div", "Adds", "Exp", "Relu", "Mul"])
def test_bf16_arithmetic_is_rejected(lib, rng, op):
    c = count_case(rng, 2, 64)
    p, _ = case_params(c, [2, 2, 2], op=op)
    with pytest.raises(twin.TwinError, match="bfloat16_t arithmetic is not supported"):
        launch(lib, "arith_bf16", p, region(rng, BF16), region(rng, BF16), region(rng, BF16))


def test_counter_mode_continuous_mask_is_reported(lib, rng):
    c = l0_case(rng, 4, 2)
    c["form"], c["mask0"] = 7, 40
    p, _ = case_params(dict(c, form=2), [4, 4, 4], op=0)
    setp(p, form=7)
    with pytest.raises(twin.TwinError, match="counter mode reads as an element count"):
        launch(lib, "arith_f32", p, region(rng, F32), region(rng, F32), region(rng, F32))


def test_masked_off_and_nop_calls_keep_dst(lib, rng):
    # mask 0 and repeat 0 are no-ops
    for m0, rep in ((0, 4), (64, 0)):
        c = dict(form=2, mask0=m0, mask1=0, repeat=rep, count=0, blk=[1, 1, 1], rep=[8, 8, 8], off=[0, 0, 0])
        p, _ = case_params(c, [4, 4, 4], op=0)
        d = region(rng, F32)
        ref = d.copy()
        out = launch(lib, "arith_f32", p, region(rng, F32), region(rng, F32), d)
        assert np.array_equal(out, ref)


# ---- Cast ----
MODES = {0: "NONE", 1: "RINT", 2: "FLOOR", 3: "CEIL", 4: "ROUND", 5: "TRUNC", 6: "ODD"}
RFCAZ = [1, 2, 3, 4, 5]


def _float_bits(a, fmt):
    """Round-to-nearest-even magnitude bits of non-negative float64 values `a` in fmt, and their values."""
    if fmt == "f16":
        with np.errstate(over="ignore"):
            bits = a.astype(np.float16).view(np.uint16).astype(np.int64)
        val = lambda b: b.astype(np.uint16).view(np.float16).astype(np.float64)
    elif fmt == "bf16":
        x = a.astype(np.float32).view(np.uint32).astype(np.int64)
        bits = (x + 0x7FFF + ((x >> 16) & 1)) >> 16
        val = lambda b: (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    else:
        bits = a.astype(np.float32).view(np.uint32).astype(np.int64)
        val = lambda b: b.astype(np.uint32).view(np.float32).astype(np.float64)
    return bits, val


def ref_round_float(v, fmt, mode):
    """Exact values v (float64) rounded to fmt with a Cast round mode; returns raw bits (f16/bf16) or float32."""
    mode = 1 if mode == 0 else mode
    neg = np.signbit(v)
    a = np.abs(v)
    c, val = _float_bits(a, fmt)
    cv = val(c)
    up = cv > a
    lo, hi = np.where(up, c - 1, c), np.where(up, c, c + 1)
    with np.errstate(invalid="ignore"):
        nearer_hi = (val(hi) - a) <= (a - val(lo))
    pick = {1: c, 2: np.where(neg, hi, lo), 3: np.where(neg, lo, hi), 4: np.where(nearer_hi, hi, lo), 5: lo,
            6: np.where(lo & 1, lo, hi)}[mode]
    m = np.where(cv == a, c, pick)
    if fmt == "f32":
        return (m.astype(np.uint32).view(np.float32) * np.where(neg, -1, 1)).astype(np.float32)
    return (m | np.where(neg, 0x8000, 0)).astype(np.uint16)


def ref_round_int(v, mode):
    mode = 1 if mode == 0 else mode
    return {1: np.rint, 2: np.floor, 3: np.ceil, 4: lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), 5: np.trunc}[mode](v)


INT = {"s8": np.int8, "u8": np.uint8, "s16": S16, "s32": S32, "s64": np.int64}
FLT = {"f16": F16, "f32": F32, "bf16": BF16}


def ref_cast(src, sk, dk, mode, deq=None):
    if sk in FLT:
        v = (src.astype(np.uint32) << 16).view(np.float32).astype(np.float64) if sk == "bf16" else src.astype(np.float64)
    else:
        v = src.astype(np.float64)
    if dk in INT:
        t = INT[dk]
        if sk in INT:
            return np.clip(src.astype(np.int64), np.iinfo(t).min, np.iinfo(t).max).astype(t)
        return np.clip(ref_round_int(v, mode), np.iinfo(t).min, np.iinfo(t).max).astype(t)
    if dk == "f16" and sk == "s32":
        with np.errstate(over="ignore"):
            return (src.astype(np.float32) * np.float32(deq)).astype(F16)
    if dk == "f32" and sk == "f32":
        return ref_round_int(v, mode).astype(F32)
    r = ref_round_float(v, dk, mode)
    return r.view(F16) if dk == "f16" else r


CASTS = [  # kernel, dst, src, modes (dav-2201 table)
    ("cast_f16_f32", "f16", "f32", [0, 1, 2, 3, 4, 5, 6]), ("cast_f32_f16", "f32", "f16", [0]),
    ("cast_bf16_f32", "bf16", "f32", RFCAZ), ("cast_f32_bf16", "f32", "bf16", [0]),
    ("cast_s32_f32", "s32", "f32", RFCAZ), ("cast_f32_s32", "f32", "s32", [0] + RFCAZ),
    ("cast_f32_f32", "f32", "f32", RFCAZ), ("cast_s16_f32", "s16", "f32", RFCAZ),
    ("cast_s64_f32", "s64", "f32", RFCAZ), ("cast_f32_s64", "f32", "s64", RFCAZ),
    ("cast_s32_s64", "s32", "s64", [0]), ("cast_s64_s32", "s64", "s32", [0]), ("cast_s16_s32", "s16", "s32", [0]),
    ("cast_f16_s32", "f16", "s32", [0]), ("cast_s32_f16", "s32", "f16", RFCAZ), ("cast_s16_f16", "s16", "f16", RFCAZ),
    ("cast_s8_f16", "s8", "f16", [0] + RFCAZ), ("cast_u8_f16", "u8", "f16", [0] + RFCAZ),
    ("cast_f16_s16", "f16", "s16", [0] + RFCAZ), ("cast_f32_s16", "f32", "s16", [0]), ("cast_f16_s8", "f16", "s8", [0]),
    ("cast_f16_u8", "f16", "u8", [0]), ("cast_s32_bf16", "s32", "bf16", RFCAZ),
]


def kind_dtype(k):
    return {"f16": F16, "f32": F32, "bf16": BF16}.get(k) or INT[k]


def cast_source(rng, sk, dk, n):
    if sk == "f32":
        base = rng.uniform(-300, 300, n)
        ties = np.floor(rng.uniform(-300, 300, n)) + 0.5
        v = np.where(rng.random(n) < 0.3, ties, base)
        if dk == "f16":
            v = np.where(rng.random(n) < 0.2, rng.uniform(-1e-5, 1e-5, n), v)  # subnormal halves
            v = np.where(rng.random(n) < 0.05, rng.choice([-1, 1], n) * rng.uniform(6e4, 8e4, n), v)  # overflow
        if dk in ("s16", "s32"):
            v = np.where(rng.random(n) < 0.1, rng.choice([-1, 1], n) * 5e9, v)  # saturation
        return v.astype(np.float32)
    if sk == "f16":
        rngmax = {"s8": 200, "u8": 300, "s16": 6e4, "s32": 6e4}.get(dk, 100)
        v = np.where(rng.random(n) < 0.3, np.floor(rng.uniform(-rngmax, rngmax, n)) + 0.5, rng.uniform(-rngmax, rngmax, n))
        return v.astype(F16)
    if sk == "bf16":
        return (rng.uniform(-1e4, 1e4, n).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    t = INT[sk]
    lim = {"s8": 127, "u8": 255, "s16": 32767, "s32": 2 ** 31 - 1, "s64": 2 ** 40}[sk]
    if sk == "s32" and dk == "f16":
        lim = 60000
    lo = 0 if sk == "u8" else -lim
    v = rng.integers(lo, lim, n, dtype=np.int64)
    if sk == "s64" and dk == "s32":
        v = np.where(rng.random(n) < 0.2, v * 4096, v)  # saturation
    return v.astype(t)


@pytest.mark.parametrize("kernel,dk,sk,modes", CASTS, ids=[c[0] for c in CASTS])
def test_cast(lib, rng, kernel, dk, sk, modes):
    dsz, ssz = size_of(kind_dtype(dk)), size_of(kind_dtype(sk))
    wide = max(dsz, ssz)
    for mode in modes:
        for form in (0, 1, 2):
            if form == 0:
                c = count_case(rng, wide)
                c["rep"] = [8 * dsz // wide, 8 * ssz // wide, 8]
            else:
                c = l0_case(rng, wide, form, n_src=1)
            c["off"] = [int(rng.integers(0, 3)) * (32 // dsz), int(rng.integers(0, 3)) * (32 // ssz)]
            src = cast_source(rng, sk, dk, REGION // ssz)
            d = region(rng, kind_dtype(dk), 0, 100)
            scale = F16(rng.uniform(0.25, 2.0))
            p, (di, si) = case_params(c, [dsz, ssz], extra=mode, scalarBits=scalar_bits(scale, F16))
            ref = d.copy()
            ref[di] = ref_cast(src[si], sk, dk, mode, deq=scale)
            out = launch(lib, kernel, p, src, region(rng, F32), d)
            if not np.array_equal(out.view(np.uint8), ref.view(np.uint8)):
                bad = np.nonzero(out != ref)[0][:6]
                pos = [int(np.nonzero(di == b)[0][0]) for b in bad if (di == b).any()]
                raise AssertionError(f"Cast {sk}->{dk} {MODES[mode]} form {form}: at {bad.tolist()} src "
                                     f"{src[si][pos].tolist()} got {out[bad].tolist()} want {ref[bad].tolist()}")


def test_cast_documented_examples(lib):
    """The worked examples of the precision-conversion page."""
    def run(kernel, src, mode, dst_dt):
        n = REGION // src.itemsize
        a = np.zeros(n, src.dtype)
        a[:src.size] = src
        c = dict(form=0, count=src.size, mask0=0, mask1=0, repeat=0, blk=[1, 1, 1], off=[0, 0, 0],
                 rep=[8 * np.dtype(dst_dt).itemsize // max(np.dtype(dst_dt).itemsize, src.itemsize),
                      8 * src.itemsize // max(np.dtype(dst_dt).itemsize, src.itemsize), 8])
        p, _ = case_params(c, [np.dtype(dst_dt).itemsize, src.itemsize], extra=mode)
        d = np.zeros(REGION // np.dtype(dst_dt).itemsize, dst_dt)
        return launch(lib, kernel, p, a, np.zeros(REGION // 4, F32), d)[:src.size]

    x = np.array([0.5 + 2.0 ** -12], F32)  # float -> half
    got = [float(run("cast_f16_f32", x, m, F16)[0]) for m in (1, 2, 3, 4, 5, 6)]
    assert got == [0.5, 0.5, 0.5 + 2 ** -11, 0.5 + 2 ** -11, 0.5, 0.5 + 2 ** -11]
    x = np.array([2 ** 25 + 3], S32)  # int32 -> float
    got = [float(run("cast_f32_s32", x, m, F32)[0]) for m in (1, 2, 3, 4, 5)]
    assert got == [2 ** 25 + 4, 2 ** 25, 2 ** 25 + 4, 2 ** 25 + 4, 2 ** 25]
    x = np.array([2 ** 22 + 0.5], F32)  # float -> int32
    got = [int(run("cast_s32_f32", x, m, S32)[0]) for m in (1, 2, 3, 4, 5)]
    assert got == [2 ** 22, 2 ** 22, 2 ** 22 + 1, 2 ** 22 + 1, 2 ** 22]
    x = np.array([0.5 + 2.0 ** -9 + 2.0 ** -11], F32)  # float -> bf16
    got = run("cast_bf16_f32", x, 1, np.uint16)
    assert float((got.astype(np.uint32) << 16).view(np.float32)[0]) == 0.5 + 2 ** -8
    x = np.array([2 ** 22 + 0.5], F32)  # float -> int16 saturates
    assert int(run("cast_s16_f32", x, 1, S16)[0]) == 2 ** 15 - 1
    x = np.array([-1.5], F16)  # half -> int32
    got = [int(run("cast_s32_f16", x, m, S32)[0]) for m in (1, 2, 3, 4, 5)]
    assert got == [-2, -2, -1, -2, -1]
    x = np.array([0.5], F32)  # float -> float rounds to an integral value
    got = [float(run("cast_f32_f32", x, m, F32)[0]) for m in (1, 2, 3, 4, 5)]
    assert got == [0.0, 0.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize("kernel,mode", [("cast_bf16_f32", 0), ("cast_f32_f16", 1), ("cast_s32_f32", 6),
                                         ("cast_s16_f16", 0)])
def test_cast_rejects_unsupported_round_mode(lib, rng, kernel, mode):
    c = count_case(rng, 4, 64)
    p, _ = case_params(c, [4, 4], extra=mode)
    with pytest.raises(twin.TwinError, match="does not support RoundMode"):
        launch(lib, kernel, p, region(rng, F32), region(rng, F32), region(rng, F32))


# ---- Compare / Compares / Select ----
CMP = {0: np.less, 1: np.greater, 2: np.equal, 3: np.less_equal, 4: np.greater_equal, 5: np.not_equal}
CMPK = {F32: "cmpsel_f32", F16: "cmpsel_f16", S32: "cmpsel_s32"}


@pytest.mark.parametrize("dt", [F32, F16, S32], ids=["f32", "f16", "s32"])
def test_compare_and_compares(lib, rng, dt):
    size = size_of(dt)
    perrep = 256 // size
    modes = [2] if dt is S32 else list(CMP)
    for op in (0, 1):
        for mode in modes:
            for form in (0, 1, 2):
                if form == 0:
                    c = count_case(rng, size, perrep * int(rng.integers(1, 12)))
                    R = c["count"] // perrep
                else:
                    c = l0_case(rng, size, form, n_src=2)
                    c["blk"][1:] = [max(b, 1) if rng.random() < 0.7 else 0 for b in c["blk"][1:]]
                    R = c["repeat"]
                    c["mask0"] = 1  # the mask is reserved on A2: all elements are compared anyway
                a = region(rng, dt, -3, 3)
                b = region(rng, dt, -3, 3)
                s = a[5]
                b[::3] = a[::3]  # ties
                r = np.repeat(np.arange(R), perrep)
                e = np.tile(np.arange(perrep), R)
                ai = c["off"][1] + index(r, e, size, c["blk"][1], c["rep"][1])
                bi = c["off"][2] + index(r, e, size, c["blk"][2], c["rep"][2])
                cond = CMP[mode](a[ai], b[bi] if op == 0 else s)
                d = rng.integers(0, 256, REGION, dtype=np.uint8)
                ref = d.copy()
                nbytes = R * perrep // 8
                ob = c["off"][0] * size
                ref[ob:ob + nbytes] = np.packbits(cond, bitorder="little")
                p = params(op=op, form=form, count=c["count"], repeat=R, mask0=c["mask0"], mask1=c["mask1"],
                           dstBlk=1, s0Blk=c["blk"][1], s1Blk=c["blk"][2], dstRep=8, s0Rep=c["rep"][1],
                           s1Rep=c["rep"][2], offD=c["off"][0] * size, offA=c["off"][1], offB=c["off"][2],
                           lenD=nbytes, lenA=span(ai - c["off"][1]), lenB=span(bi - c["off"][2]) if op == 0 else 0,
                           extra=mode, scalarBits=scalar_bits(s, dt))
                out = launch(lib, CMPK[dt], p, a, b, d)
                assert np.array_equal(out, ref), f"{'Compare' if op == 0 else 'Compares'} {dt} mode {mode} form {form}"


def test_compare_rules(lib, rng):
    a = region(rng, F32)
    base = dict(op=0, form=0, count=100, lenA=1000, lenB=1000, lenD=1000, extra=0)
    with pytest.raises(twin.TwinError, match="multiple of 256 B"):
        launch(lib, "cmpsel_f32", params(**base), a, a.copy(), np.zeros(REGION, np.uint8))
    s = region(rng, S32, -5, 5)
    with pytest.raises(twin.TwinError, match="only CMPMODE::EQ"):
        launch(lib, "cmpsel_s32", params(**dict(base, count=64, extra=3)), s, s.copy(), np.zeros(REGION, np.uint8))
    with pytest.raises(twin.TwinError, match="dst: 2 repeats write 16 bytes"):  # result bits past dst
        launch(lib, "cmpsel_f32", params(**dict(base, count=128, lenD=15)), a, a.copy(), np.zeros(REGION, np.uint8))


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_select(lib, rng, dt):
    size = size_of(dt)
    perrep = 256 // size
    epb = 32 // size
    for op, selmodes in ((2, (0, 2)), (3, (1,))):
        for sm in selmodes:
            for form in (0, 1, 2):
                c = count_case(rng, size) if form == 0 else l0_case(rng, size, form, n_src=2)
                c["off"][2] = 0
                r, e = selection(perrep, form, c["count"], c["repeat"], c["mask0"], c["mask1"])
                di = c["off"][0] + index(r, e, size, c["blk"][0], c["rep"][0])
                ai = c["off"][1] + index(r, e, size, c["blk"][1], c["rep"][1])
                src1_off = (span(ai) + epb - 1) // epb * epb + epb  # src1 after src0 in region A
                bi = src1_off + index(r, e, size, c["blk"][2], c["rep"][2])
                logical = e if form == 0 else r * perrep + e
                if form == 0:
                    logical = np.arange(c["count"])
                selbytes = rng.integers(0, 256, REGION, dtype=np.uint8)
                bits = np.unpackbits(selbytes, bitorder="little")
                bit = bits[logical % perrep] if sm == 0 else bits[logical]
                A = region(rng, dt)
                s = dt(rng.uniform(-9, 9))
                d = region(rng, dt)
                ref = d.copy()
                other = A[bi] if op == 2 else np.full(ai.shape, s, dt)
                ref[di] = np.where(bit == 1, A[ai], other)
                nsel = (perrep // 8) if sm == 0 else (int(logical.max()) // 8 + 1 if logical.size else 0)
                p = params(op=op, form=form, count=c["count"], repeat=c["repeat"], mask0=c["mask0"], mask1=c["mask1"],
                           dstBlk=c["blk"][0], s0Blk=c["blk"][1], s1Blk=c["blk"][2], dstRep=c["rep"][0],
                           s0Rep=c["rep"][1], s1Rep=c["rep"][2], offD=c["off"][0], offA=c["off"][1], offB=0,
                           lenD=span(di - c["off"][0]), lenA=span(ai - c["off"][1]), lenB=nsel, extra=sm,
                           extra2=src1_off, extra3=span(bi - src1_off) if op == 2 else 0,
                           scalarBits=scalar_bits(s, dt))
                out = launch(lib, CMPK[dt], p, A, selbytes, d)
                check_close(out, ref, dt, f"Select mode {sm} op {op} form {form} {c}")


def test_select_mode_and_form_must_match(lib, rng):
    A = region(rng, F32)
    p = params(op=2, form=0, count=64, lenA=64, lenB=64, lenD=64, extra=1, extra2=64, extra3=64)
    with pytest.raises(twin.TwinError, match="VSEL_TENSOR_SCALAR_MODE needs a scalar"):
        launch(lib, "cmpsel_f32", p, A, np.zeros(REGION, np.uint8), region(rng, F32))


# ---- Brcb and reductions ----
RK = {F32: "reduce_f32", F16: "reduce_f16"}


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_brcb(lib, rng, dt):
    size = size_of(dt)
    epb = 32 // size
    for blk, rep, R in ((1, 8, 3), (2, 16, 5), (1, 9, 2), (3, 30, 4)):
        a, d = region(rng, dt), region(rng, dt)
        ref = d.copy()
        for r in range(R):
            for j in range(8):
                o = (r * rep + j * blk) * epb
                ref[o:o + epb] = a[r * 8 + j]
        lenD = ((R - 1) * rep + 7 * blk) * epb + epb
        p = params(op=4, repeat=R, dstBlk=blk, dstRep=rep, lenD=lenD, lenA=8 * R, lenB=8)
        check_close(launch(lib, RK[dt], p, a, region(rng, dt), d), ref, dt, f"Brcb {blk} {rep} {R}")
    with pytest.raises(twin.TwinError, match="dst: 2 repeats"):
        launch(lib, RK[dt], params(op=4, repeat=2, dstBlk=1, dstRep=8, lenD=16 * epb - 1, lenA=16), region(rng, dt),
               region(rng, dt), region(rng, dt))


def tree(v, dt):
    v = v.astype(np.float32)
    while v.shape[-1] > 1:
        with np.errstate(over="ignore"):  # half sums may overflow to inf, as on the NPU
            v = (v[..., 0::2] + v[..., 1::2]).astype(dt).astype(np.float32)
    return v[..., 0]


def reduce_case(rng, size, form):
    perrep = 256 // size
    m0, m1 = random_mask(rng, perrep, 1 if form == 3 else form, more=(perrep + 5,))
    if rng.random() < 0.25:
        m0, m1 = ((1 << 64) - 1, (1 << 64) - 1) if form != 2 else (perrep, 0)
    R = int(rng.integers(1, 7))
    sblk, srep = int(rng.choice([1, 1, 2, 0])), int(rng.choice([8, 8, 16, 12, 0]))
    return m0, m1, R, sblk, srep


def gather(a, size, perrep, form, m0, m1, R, sblk, srep, off):
    r, e = selection(perrep, 1 if form == 3 else form, 0, R, m0, m1)
    act = np.zeros((R, perrep), bool)
    act[r, e] = True
    rr, ee = np.meshgrid(np.arange(R), np.arange(perrep), indexing="ij")
    vals = a[off + index(rr, ee, size, sblk, srep)].astype(np.float32)
    return vals, act, span(index(r, e, size, sblk, srep))


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_reduce_repeat(lib, rng, dt):
    size = size_of(dt)
    perrep = 256 // size
    isz = 2 if size == 2 else 4
    for rtype in (0, 1, 2):  # MAX, MIN, SUM
        for old in (0, 1):
            for form in (1, 2, 3):
                if form == 3 and (old or rtype != 0):
                    continue
                for order in ((0, 1, 2, 3) if rtype < 2 else (0,)):
                    m0, m1, R, sblk, srep = reduce_case(rng, size, form)
                    a = region(rng, dt, -50, 50)
                    a[::7] = a[3]  # ties
                    off = int(rng.integers(0, 3)) * (32 // size)
                    vals, act, lenA = gather(a, size, perrep, form, m0, m1, R, sblk, srep, off)
                    unit = {0: 2 * size, 1: 2 * size, 2: size, 3: 4}[order] if rtype < 2 else size
                    dstrep = int(rng.choice([1, 2, 3]))
                    d = region(rng, dt)
                    ref = d.view(np.uint8).copy()
                    last = -1
                    for r in range(R):
                        if not act[r].any():
                            continue
                        last = r
                        o = r * dstrep * unit
                        if rtype == 2:
                            ref[o:o + size] = np.array([tree(np.where(act[r], vals[r], 0), dt)], dt).view(np.uint8)
                            continue
                        v = np.where(act[r], vals[r], -np.inf if rtype == 0 else np.inf)
                        i = int(np.argmax(v) if rtype == 0 else np.argmin(v))
                        vb = np.array([vals[r, i]], dt).view(np.uint8)
                        ib = np.array([i], np.uint16 if size == 2 else np.uint32).view(np.uint8)
                        if order == 0:
                            ref[o:o + size], ref[o + size:o + 2 * size] = vb, ib
                        elif order == 1:
                            ref[o:o + size], ref[o + size:o + 2 * size] = ib, vb
                        elif order == 2:
                            ref[o:o + size] = vb
                        else:
                            ref[o:o + 4] = np.array([i], np.uint32).view(np.uint8)
                    lenD = ((last * dstrep * unit + (unit if rtype < 2 else size)) + size - 1) // size if last >= 0 else 0
                    p = params(op=0, form=form, repeat=R, mask0=m0, mask1=m1, dstRep=dstrep, s0Blk=sblk, s0Rep=srep,
                               offA=off, lenA=lenA, lenB=8, lenD=lenD, extra=order, extra2=old, extra3=rtype)
                    out = launch(lib, RK[dt], p, a, region(rng, dt), d).view(np.uint8)
                    assert np.array_equal(out, ref), f"ReduceRepeat type {rtype} old {old} form {form} order {order}"


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_reduce_data_block_and_pair(lib, rng, dt):
    size = size_of(dt)
    perrep = 256 // size
    epb = 32 // size
    for rtype in (0, 1, 2):
        for old in (0, 1):
            for form in (1, 2):
                m0, m1, R, sblk, srep = reduce_case(rng, size, form)
                a = region(rng, dt, -50, 50)
                vals, act, lenA = gather(a, size, perrep, form, m0, m1, R, sblk, srep, 0)
                dstrep = int(rng.choice([1, 2]))
                d = region(rng, dt)
                ref = d.copy()
                lenD = 0
                for r in range(R):
                    for b in range(8):
                        sl = slice(b * epb, (b + 1) * epb)
                        if not act[r, sl].any():
                            continue
                        o = r * dstrep * 8 + b
                        lenD = o + 1
                        if rtype == 2:
                            ref[o] = tree(np.where(act[r, sl], vals[r, sl], 0), dt)
                        else:
                            v = vals[r, sl][act[r, sl]]
                            ref[o] = v.max() if rtype == 0 else v.min()
                p = params(op=1, form=form, repeat=R, mask0=m0, mask1=m1, dstRep=dstrep, s0Blk=sblk, s0Rep=srep,
                           lenA=lenA, lenB=8, lenD=lenD, extra2=old, extra3=rtype)
                check_close(launch(lib, RK[dt], p, a, region(rng, dt), d), ref, dt,
                            f"ReduceDataBlock type {rtype} old {old} form {form} mask {m0:x} {m1:x}")
    for old in (0, 1):  # ReducePairElem / PairReduceSum
        for form in (1, 2):
            m0, m1, R, sblk, srep = reduce_case(rng, size, form)
            a = region(rng, dt, -50, 50)
            vals, act, lenA = gather(a, size, perrep, form, m0, m1, R, sblk, srep, 0)
            dstrep = int(rng.choice([1, 2]))
            d = region(rng, dt)
            ref = d.copy()
            lenD = 0
            per_out = 128 // size
            for r in range(R):
                for k in range(perrep // 2):
                    if not (act[r, 2 * k] or act[r, 2 * k + 1]):
                        continue
                    o = r * dstrep * per_out + k
                    lenD = max(lenD, o + 1)
                    s = np.float32(vals[r, 2 * k] * act[r, 2 * k]) + np.float32(vals[r, 2 * k + 1] * act[r, 2 * k + 1])
                    ref[o] = dt(s)
            p = params(op=2, form=form, repeat=R, mask0=m0, mask1=m1, dstRep=dstrep, s0Blk=sblk, s0Rep=srep,
                       lenA=lenA, lenB=8, lenD=lenD, extra2=old)
            check_close(launch(lib, RK[dt], p, a, region(rng, dt), d), ref, dt, f"ReducePairElem old {old} form {form}")


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_reduce_max_min_sum(lib, rng, dt):
    size = size_of(dt)
    perrep = 256 // size
    epb = 32 // size
    for rtype in (0, 1, 2):
        for form in (0, 1, 2):
            for cal in ((0, 1) if rtype < 2 else (0,)):
                a = region(rng, dt, -50, 50)
                a[::11] = a[4]
                if form == 0:
                    n = int(rng.integers(1, min(60000 // size, 65535) // 2 * 2)) if rng.random() < 0.5 else \
                        int(rng.integers(1, 3 * perrep))
                    vals, act = a[:n].astype(np.float32)[None, :], np.ones((1, n), bool)
                    lenA, R, m0, m1, srep = n, (n + perrep - 1) // perrep, 0, 0, 8
                    first = max(1, n // perrep)
                else:
                    m0, m1, _, _, srep = reduce_case(rng, size, form)
                    R = int(rng.choice([3, 40, 300]))  # repeatTime is an int32 here: > 255 is allowed
                    srep = int(rng.choice([8, 8, 12])) if R * 12 * 32 < REGION else int(rng.choice([0, 1, 2]))
                    vals, act, lenA = gather(a, size, perrep, form, m0, m1, R, 1, srep, 0)
                    first = R
                    if not act.any():
                        continue
                flat_v = vals.reshape(-1)
                flat_a = act.reshape(-1)
                d = region(rng, dt)
                ref = d.copy()
                if rtype < 2:
                    it1 = first * 2
                    if cal:
                        s2 = -(-it1 // epb) * epb
                        o2 = -(-it1 // perrep) * 2
                        need = s2 + -(-o2 // epb) * epb
                        if o2 > 2:
                            need += -(-(-(-o2 // perrep) * 2) // epb) * epb
                    else:
                        need = -(-it1 // epb) * epb
                    v = np.where(flat_a, flat_v, -np.inf if rtype == 0 else np.inf)
                    i = int(np.argmax(v) if rtype == 0 else np.argmin(v))
                    if cal and size == 2 and i > 65535:
                        continue
                    ref[0] = flat_v[i]
                    lenD = 1
                    if cal:
                        ref.view(np.uint16 if size == 2 else np.uint32)[1] = i
                        lenD = 2
                    np.testing.assert_equal(float(ref[0]), float(v[i]))
                else:
                    sums = np.array([tree(np.where(act[r], vals[r], 0), dt) if vals.shape[1] == perrep else 0.0
                                     for r in range(vals.shape[0])], np.float32)
                    if form == 0:  # count form: per-repeat tree sums, accumulated in order; partials in dst
                        chunks = [a[k:min(k + perrep, n)].astype(np.float32) for k in range(0, n, perrep)]
                        parts = [tree(np.concatenate([c_, np.zeros(perrep - c_.size, np.float32)]), dt) for c_ in chunks]
                        ref[:len(parts)] = np.array(parts, np.float32).astype(dt)
                        acc = np.float32(parts[0])
                        for x in parts[1:]:
                            with np.errstate(over="ignore"):
                                acc = np.float32(dt(acc + np.float32(x)))
                        ref[0] = dt(acc)
                        lenD, need = len(parts), 0
                    else:  # trees over repeats, then trees over the partials
                        part = sums.astype(dt).astype(np.float32)
                        while part.size > 1:
                            g = -(-part.size // perrep)
                            pad = np.zeros(g * perrep, np.float32)
                            pad[:part.size] = part
                            part = tree(pad.reshape(g, perrep), dt).astype(np.float32)
                        ref[0] = dt(part[0])
                        lenD, need = 1, -(-R // epb) * epb
                    if dt is F32:  # the model against a plain float64 sum
                        np.testing.assert_allclose(float(ref[0]), float(np.sum(flat_v * flat_a, dtype=np.float64)),
                                                   rtol=1e-4, atol=1.0)
                p = params(op=3, form=form, count=lenA if form == 0 else 0, repeat=R, mask0=m0, mask1=m1, s0Rep=srep,
                           lenA=lenA, lenB=max(need, 1), lenD=lenD, extra=cal, extra3=rtype)
                out = launch(lib, RK[dt], p, a, region(rng, dt), d)
                check_close(out, ref, dt, f"Reduce type {rtype} form {form} calIndex {cal} R {R}")
                if rtype < 2 and need > 1:  # the documented sharedTmpBuffer size is the minimum
                    setp(p, lenB=need - 1)
                    with pytest.raises(twin.TwinError, match="sharedTmpBuffer needs"):
                        launch(lib, RK[dt], p, a, region(rng, dt), region(rng, dt))


def test_reduce_repeat_time_above_255_fails(lib, rng):
    p = params(op=0, form=2, repeat=256, mask0=64, s0Blk=1, s0Rep=8, lenA=15000, lenB=8, lenD=512, extra2=1,
               extra3=2)
    with pytest.raises(twin.TwinError, match="repeatTime 256 is outside"):
        launch(lib, "reduce_f32", p, region(rng, F32), region(rng, F32), region(rng, F32))


# ---- strictness ----
MISUSE = [
    (1, "src0 address 12 in UB is not 32-byte aligned", dict(lenA=200)),
    (2, "src0: the instruction reaches byte 256 .* but the tensor has 252 bytes", dict(lenA=63)),
    (3, "src1: the instruction reaches byte 1024 .*repStride 8.* but the tensor has 1020 bytes",
     dict(repeat=4, lenA=4096, lenB=255, lenD=4096)),
    (4, "src: the instruction reaches byte 992 .*blkStride 2.* but the tensor has 988 bytes", dict(lenA=247)),
    (5, "repeatTime 256 is outside \\[0, 255\\]", dict(lenA=60000 // 4)),
    (6, "src0 must be in UB", dict()),
    (7, "dstBlkStride = 0 with active elements in more than one block", dict()),
    (8, "int32_t supports only CMPMODE::EQ", dict()),
    (9, "count 100 x 4 B = 400 B is not a multiple of 256 B", dict()),
    (10, "Cast float -> bfloat16_t does not support RoundMode::CAST_NONE", dict()),
    (11, "dstBlkStride = 0 is undefined", dict()),
    (12, "sharedTmpBuffer needs 16 elements .* but has 60 bytes", dict(lenB=15)),
    (13, "count -5 is negative", dict()),
]


@pytest.mark.parametrize("op,msg,kw", MISUSE, ids=[str(m[0]) for m in MISUSE])
def test_misuse_is_reported(lib, rng, op, msg, kw):
    assert_misuse_reported(lib, "misuse", rng, op, msg, kw)


def test_footprint_exact_fit_passes(lib, rng):
    """The same strided call as misuse case 3 passes with one more element of src1."""
    p = params(op=3, repeat=4, lenA=4096, lenB=256, lenD=4096)
    launch(lib, "misuse", p, region(rng, F32), region(rng, F32), region(rng, F32))


def test_vector_api_on_cube_core_fails(lib, rng):
    with pytest.raises(twin.TwinError, match="AIC 0.*Add: vector/UB API called on the cube core"):
        lib.launch("misuse", 1, params(op=0), region(rng, F32), region(rng, F32), region(rng, F32), kernel_type="mix")


def test_trace_one_record_per_call(lib, rng):
    c = count_case(rng, 4, 1000)
    p, _ = case_params(c, [4, 4, 4], op=0)
    a, b, d = region(rng, F32), region(rng, F32), region(rng, F32)
    setp(p, gA=a.nbytes, gB=b.nbytes, gD=d.nbytes)
    lib.launch("arith_f32", 1, p, a, b, d, trace=True)
    recs = [r for r in lib.last_trace()[0]["records"] if r["op"] == "Add"]
    assert len(recs) == 1
    assert recs[0]["pipe"] == "V" and recs[0]["elems"] == 1000 and recs[0]["repeats"] == 16


# ---- example kernel: row softmax on several cores ----
@pytest.fixture(scope="module")
def softmax_lib():
    return twin.compile_kernel(KDIR / "softmax.cpp")


@pytest.mark.parametrize("kernel,dt,cols", [("softmax_rows_f32", F32, 333), ("softmax_rows_f16", F16, 100),
                                            ("softmax_tile_f32", F32, 100), ("softmax_tile_f32", F32, 333)])
def test_softmax_end_to_end(softmax_lib, rng, kernel, dt, cols):
    rows = int(rng.integers(37, 90))
    x = rng.normal(0, 3, (rows, cols)).astype(dt)
    y = np.full((rows, cols), np.nan, dt)
    softmax_lib.launch(kernel, 4, np.array([rows, cols], np.int64), x, y)
    x64 = x.astype(np.float64)
    ref = np.exp(x64 - x64.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    err = np.abs(y.astype(np.float64) - ref).max()
    tol = 2e-3 if dt is F16 else 2e-6
    assert err <= tol, f"max |y - ref| = {err}"
