"""More dav-2201 vector APIs of the twin against numpy models of their documented semantics: Copy (UB -> UB with
mask / repeats / CopyRepeatParams, incl. Copy's own counter mode), CreateVecIndex (incl. the half rounding of the
implementation's chain of Adds and the mask register it leaves), Axpy / FusedMulAdd / MulAddDst / MulAddRelu /
FusedMulAddRelu / AddRelu / SubRelu / LeakyRelu (same type and half -> float), And / Or / Not / ShiftLeft /
ShiftRight, the CMPMASK register (Compare without dst, GetCmpMask, SetCmpMask, Select without a selMask tensor),
SetPadValue with DataCopyPad, the strict checks, the trace and the hazard detector on the new operands.

Kernels: tests/kernels/vector/vector_more.cpp (a GM parameter block selects API, form and numbers; three UB regions
src0 / src1 / dst, dst preloaded with random data so masked-off elements are checked; operand tensors are sized to
exactly the documented footprint).
"""
import numpy as np
import pytest

from npu_flash_attn import twin
from vector_harness import (BF16, COUNTER_FORMS, F16, F32, FIELDS, REGION, S16, S32, U16, U32, assert_misuse_reported,
                            bits_of, case_params, compile_vector_kernel, host, index, launch, lenbits, params,
                            poison_unchecked, random_mask, region, scalar_bits, selection, setp, size_of, span)

KERNEL = {F32: "more_f32", F16: "more_f16", BF16: "more_bf16", S16: "more_s16", U16: "more_u16", S32: "more_s32",
          U32: "more_u32"}


@pytest.fixture(scope="module")
def lib():
    return compile_vector_kernel("vector_more.cpp")


def make_case(rng, sizes, form, n_src, broadcast=False, count=None):
    """Random call: mask, repeats and strides (dst never overlaps itself). sizes = element sizes (dst, src...)."""
    perrep = 256 // max(sizes)
    if form in COUNTER_FORMS:
        m0 = m1 = 0
        repeat = 0
        cnt = int(count if count is not None else rng.integers(1, perrep * 12))
    else:
        m0, m1 = random_mask(rng, perrep, form)
        repeat, cnt = int(rng.integers(1, 9)), 0
        if form in (4, 5):
            cnt = int(rng.integers(1, perrep * 6))
    if form in (0, 8):
        blk, rep = [1] * (n_src + 1), [8 * s // max(sizes) for s in sizes]
    else:
        dblk = int(rng.choice([1, 1, 2]))
        blk = [dblk] + [int(rng.choice([1, 2, 3, 0])) for _ in range(n_src)]
        rep = [int(rng.choice([8 * dblk, 8 * dblk + 1, 8 * dblk + 5]))] + [int(rng.choice([8, 9, 16, 4, 0]))
                                                                            for _ in range(n_src)]
        if broadcast:
            blk[-1], rep[-1] = 0, 1
    off = [int(rng.integers(0, 4)) * (32 // s) for s in sizes]
    return dict(form=form, mask0=m0, mask1=m1, repeat=repeat, count=cnt, blk=blk, rep=rep, off=off, sizes=sizes)


def assert_bits_equal(out, ref, what):
    o, r = out.view(np.uint8), ref.view(np.uint8)
    if not np.array_equal(o, r):
        bad = np.nonzero(out.view(np.dtype(f"u{out.itemsize}")) != ref.view(np.dtype(f"u{ref.itemsize}")))[0][:8]
        raise AssertionError(f"{what}: mismatch at {bad.tolist()}: got {out[bad].tolist()} want {ref[bad].tolist()}")


# ---------------------------------------------------------------------------------------------------------------
# Copy
@pytest.mark.parametrize("dt", [F32, F16, BF16, S16, U16, S32, U32],
                         ids=["f32", "f16", "bf16", "s16", "u16", "s32", "u32"])
def test_copy(lib, rng, dt):
    size = size_of(dt)
    perrep, epb = 256 // size, 32 // size
    cases = [make_case(rng, [size, size], form, 1) for form in (1, 2, 3, 6, 1, 2)]
    wide = make_case(rng, [size, size], 1, 1)  # block / repeat strides beyond uint8_t
    wide.update(repeat=3, blk=[3, 20], rep=[24, 300])
    cases.append(wide)
    for form in (4, 5):  # Copy's counter mode: count elements per repeat, repeatTime applies
        for _ in range(2):
            cnt = int(rng.integers(1, 3 * perrep))
            nb = -(-cnt // epb)
            dblk = int(rng.choice([1, 2]))
            c = dict(form=form, mask0=0, mask1=0, repeat=int(rng.integers(1, 5)), count=cnt,
                     blk=[dblk, int(rng.choice([0, 1, 2]))], rep=[nb * dblk + int(rng.integers(0, 3)),
                                                               int(rng.integers(0, 2 * nb + 1))],
                     off=[int(rng.integers(0, 4)) * epb, int(rng.integers(0, 4)) * epb], sizes=[size, size])
            cases.append(c)
    for c in cases:
        if c["form"] in (4, 5):
            r = np.repeat(np.arange(c["repeat"]), c["count"])
            e = np.tile(np.arange(c["count"]), c["repeat"])
            di, si = (c["off"][k] + index(r, e, size, c["blk"][k], c["rep"][k]) for k in range(2))
            p = params(form=c["form"], count=c["count"], repeat=c["repeat"], dstBlk=c["blk"][0], s0Blk=c["blk"][1],
                       dstRep=c["rep"][0], s0Rep=c["rep"][1], offD=c["off"][0], offA=c["off"][1],
                       lenD=span(di - c["off"][0]), lenA=span(si - c["off"][1]), lenB=8)
        else:
            p, (di, si) = case_params(c, lenB=8)
        a, d = region(rng, dt, -1000, 1000), region(rng, dt, -1000, 1000)
        ref = d.copy()
        ref[di] = a[si]
        out = launch(lib, KERNEL[dt], setp(p, op=0), a, region(rng, dt), d)
        assert_bits_equal(out, ref, f"Copy {dt} {c}")


def test_copy_documented_scenarios(lib, rng):
    """The doc's [18, 64] -> [18, 8] int32 examples: continuous mask 8 x 18 repeats, and counter mode 144 / repeat."""
    a = region(rng, S32, -10 ** 6, 10 ** 6)
    want = a[:18 * 64].reshape(18, 64)[:, :8].reshape(-1)
    p = params(form=2, mask0=8, repeat=18, dstBlk=1, s0Blk=1, dstRep=1, s0Rep=8, lenD=144, lenA=18 * 64, lenB=8)
    d = region(rng, S32)
    out = launch(lib, "more_s32", setp(p, op=0), a, region(rng, S32), d.copy())
    assert np.array_equal(out[:144], want) and np.array_equal(out[144:], d[144:])
    p = params(form=4, count=144, repeat=1, dstBlk=1, s0Blk=8, dstRep=8, s0Rep=8, lenD=144, lenA=17 * 64 + 8, lenB=8)
    out = launch(lib, "more_s32", setp(p, op=0), a, region(rng, S32), d.copy())
    assert np.array_equal(out[:144], want) and np.array_equal(out[144:], d[144:])


# ---------------------------------------------------------------------------------------------------------------
# CreateVecIndex
def index_model(dt, first, form, count=0, repeat=0, mask0=0, mask1=0):
    """Values by (repeat, element) as the dav-2201 implementation builds them (scalar first block / repeat, then
    single-repeat Adds of one block's / one repeat's element count)."""
    size = np.dtype(dt).itemsize
    E, epb = 256 // size, 32 // size

    def scal(i):
        if dt in (F16, F32):
            return dt(np.float32(first) + np.float32(i))
        return np.array([int(first) + i], np.int64).astype(dt)[0]

    def add(v, k):
        if dt in (F16, F32):
            return dt(np.float32(v) + np.float32(k))
        return np.array([int(v) + k], np.int64).astype(dt)[0]

    vals = {}
    if form == 0:
        for i in range(count):
            vals[(i // E, i % E)] = scal(i) if i < epb else (add(vals[(0, i - epb)], epb) if i < E else
                                                             add(vals[(i // E - 1, i % E)], E))
        return vals
    act = bits_of(mask0, mask1, E) if form == 1 else np.arange(E) < mask0
    for r in range(repeat):
        for e in np.nonzero(act)[0]:
            e = int(e)
            if r > 0:
                vals[(r, e)] = add(vals[(r - 1, e)], E)
            elif form == 1 or e < epb:
                vals[(r, e)] = scal(e)
            else:
                vals[(r, e)] = add(vals[(0, e - epb)], epb)
    return vals


def index_register(dt, form, count=0, repeat=0, mask0=0, mask1=0, before=((1 << 64) - 1, (1 << 64) - 1)):
    """(low, high) mask register after the call: the mask of the implementation's last internal Adds."""
    size = np.dtype(dt).itemsize
    E, epb = 256 // size, 32 // size
    last = None
    if form == 1:
        if repeat > 1:
            last = (mask0, mask1)
    elif form == 2:
        if repeat > 0 and mask0 > 0:
            if mask0 // epb > 1:
                last = lenbits(epb)
            if mask0 % epb:
                last = lenbits(mask0 % epb)
        if repeat > 1:
            last = lenbits(mask0)
    elif count > epb:
        inrep = min(count, E)
        if inrep // epb > 1:
            last = lenbits(epb)
        if inrep % epb:
            last = lenbits(inrep % epb)
        if count // E > 1:
            last = lenbits(E)
        if count > E and count % E:
            last = lenbits(count % E)
    return last if last is not None else before


@pytest.mark.usefixtures("poison_unchecked")
@pytest.mark.parametrize("dt", [S16, S32, F16, F32], ids=["s16", "s32", "f16", "f32"])
def test_create_vec_index(lib, rng, dt):
    size = size_of(dt)
    E, epb = 256 // size, 32 // size
    firsts = {S16: [0, -5, 32700], S32: [0, 123456, -(2 ** 31) + 5], F16: [0.0, -3.5, 1900.0], F32: [0.0, 0.25, 1.6e7]}
    cases = [dict(form=0, count=n) for n in (1, epb, epb + 3, E - 1, E, 3 * E, 3 * E + 5,
                                             int(rng.integers(1, 20 * E)))]
    for form in (1, 2, 1, 2):
        m0, m1 = random_mask(rng, E, 1) if form == 1 else (int(rng.choice([epb, epb + 1, E, E - 3, 64, 2 * epb])), 0)
        if form == 2:
            m0 = min(m0, E)
        dblk = int(rng.choice([1, 2]))
        cases.append(dict(form=form, repeat=int(rng.integers(1, 7)), mask0=m0, mask1=m1, blk=dblk,
                          rep=int(rng.choice([8 * dblk, 8 * dblk + 3]))))
    cases.append(dict(form=2, repeat=3, mask0=0, mask1=0, blk=1, rep=8))  # mask 0: no-op, register 0
    for c in cases:
        first = dt(rng.choice(firsts[dt]))
        form, cnt, R = c["form"], c.get("count", 0), c.get("repeat", 0)
        blk, rep = c.get("blk", 1), c.get("rep", 8)
        vals = index_model(dt, first, form, cnt, R, c.get("mask0", 0), c.get("mask1", 0))
        keys = list(vals)
        r = np.array([k[0] for k in keys], np.int64)
        e = np.array([k[1] for k in keys], np.int64)
        off = int(rng.integers(0, 3)) * epb
        di = index(r, e, size, blk, rep)
        p = params(op=1, form=form, count=cnt, repeat=R, mask0=c.get("mask0", 0), mask1=c.get("mask1", 0),
                   dstBlk=blk, dstRep=rep, offD=off, lenD=span(di), lenA=8, lenB=8, scalarBits=scalar_bits(first, dt))
        d = region(rng, dt, -100, 100)
        ref = d.copy()
        if keys:
            ref[off + di] = np.array([vals[k] for k in keys], dt)
        out = launch(lib, KERNEL[dt], p, region(rng, dt), region(rng, dt), d)
        assert_bits_equal(out, ref, f"CreateVecIndex {np.dtype(dt).name} first {first} {c}")
        if dt in (S16, S32) and form == 0:  # model-independent: integer indices are exact (wrapping)
            assert np.array_equal(out[off:off + cnt], (int(first) + np.arange(cnt, dtype=np.int64)).astype(dt))
        # the mask register the call leaves (dumped into region D)
        p2 = setp(p.copy(), extra3=1)
        out = launch(lib, KERNEL[dt], p2, region(rng, dt), region(rng, dt), region(rng, dt, -100, 100))
        lo, hi, cm = (int(x) for x in out.view(np.uint64)[:3])
        assert (lo, hi, cm) == (*index_register(dt, form, cnt, R, c.get("mask0", 0), c.get("mask1", 0)), 0), c


def test_create_vec_index_half_rounds_like_the_adds_chain(lib):
    """Past 32768 the half grid spacing is 32, so each +16 Adds step is a tie that rounds to even: the chain of Adds
    the implementation runs differs from rounding firstValue + i once."""
    n = 1024
    vals = index_model(F16, F16(32000.0), 0, count=n)
    want = np.array([vals[(i // 128, i % 128)] for i in range(n)], F16)
    direct = (np.float32(32000) + np.arange(n, dtype=np.float32)).astype(F16)
    assert not np.array_equal(want, direct)  # the model differs from a one-step rounding here
    p = params(op=1, form=0, count=n, lenD=n, lenA=8, lenB=8, scalarBits=scalar_bits(F16(32000.0), F16))
    out = launch(lib, "more_f16", p, np.zeros(REGION // 2, F16), np.zeros(REGION // 2, F16),
                 np.zeros(REGION // 2, F16))
    assert_bits_equal(out[:n], want, "CreateVecIndex half chain")


# ---------------------------------------------------------------------------------------------------------------
# Compound arithmetic
def f32(x):
    return np.asarray(x).astype(np.float32) if not (isinstance(x, np.ndarray) and x.dtype == np.uint16) else \
        (x.astype(np.uint32) << 16).view(np.float32)


def mad(x, y, z, dt):
    """x * y + z rounded once to float (exact product in float64), then to dt."""
    r = (x.astype(np.float64) * y.astype(np.float64) + z.astype(np.float64)).astype(np.float32)
    with np.errstate(over="ignore"):
        return r.astype(dt)


def relu(v):
    return np.where(v > 0, v, np.zeros_like(v))


FUSED = {2: "Axpy", 3: "FusedMulAdd", 4: "MulAddDst", 5: "AddRelu", 6: "SubRelu", 7: "MulAddRelu",
         8: "FusedMulAddRelu", 9: "LeakyRelu"}


def fused_ref(op, dt, d, a, b, s):
    """dst values of op given old dst d, src0 a, src1 b (arrays of the dst/src types) and scalar s."""
    fa, fb, fd = a.astype(np.float32), b.astype(np.float32), d.astype(np.float32)
    if op == 2:
        return mad(np.full_like(fa, np.float32(s)), fa, fd, dt)
    if op == 3:
        return mad(fa, fd, fb, dt)
    if op == 4:
        return mad(fa, fb, fd, dt)
    if op in (7, 8):
        return relu(mad(fa, fd, fb, dt))
    if op in (5, 6):
        if dt is S16:
            w = (a.astype(np.int64) + (b.astype(np.int64) if op == 5 else -b.astype(np.int64)))
            return relu(w.astype(np.int16))
        return relu(((fa + fb) if op == 5 else (fa - fb)).astype(dt))
    if op == 9:
        return np.where(fa >= 0, fa, fa * np.float32(s)).astype(dt)
    raise AssertionError(op)


@pytest.mark.parametrize("dt", [F32, F16, S16], ids=["f32", "f16", "s16"])
def test_compound_arithmetic(lib, rng, dt):
    size = size_of(dt)
    ops = [5, 6] if dt is S16 else [2, 3, 4, 5, 6, 7, 8, 9]
    for op in ops:
        scalar_op = op in (2, 9)
        forms = (0, 1, 2, 3, 4, 5, 6) + ((8,) if op == 9 else ())
        for form in forms:
            c = make_case(rng, [size] * (2 if scalar_op else 3), form, 1 if scalar_op else 2,
                          broadcast=(form == 1 and not scalar_op))
            s = dt(rng.uniform(-2, 2)) if dt is not S16 else dt(0)
            p, idx = case_params(c, op=op, scalarBits=scalar_bits(s, dt))
            if scalar_op:
                p = setp(p, lenB=8)
            lo, hi = (-30000, 30000) if dt is S16 else (-4, 4)
            a, b, d = region(rng, dt, lo, hi), region(rng, dt, lo, hi), region(rng, dt, lo, hi)
            ref = d.copy()
            di, ai = idx[0], idx[1]
            bi = idx[2] if not scalar_op else ai
            ref[di] = fused_ref(op, dt, d[di], a[ai], b[bi], s)
            out = launch(lib, KERNEL[dt], p, a, b, d)
            assert_bits_equal(out, ref, f"{FUSED[op]} {np.dtype(dt).name} form {form} {c}")


def test_compound_against_float64(lib, rng):
    """The twin's Axpy / FusedMulAdd in float agree with an exact float64 evaluation to 1 ulp (model-independent)."""
    n = 3000
    a, b, d = (rng.normal(0, 3, REGION // 4).astype(F32) for _ in range(3))
    for op in (2, 3):
        s = F32(rng.uniform(-2, 2))
        p = params(op=op, form=0, count=n, dstRep=8, s0Rep=8, s1Rep=8, lenD=n, lenA=n, lenB=n,
                   scalarBits=scalar_bits(s, F32))
        out = launch(lib, "more_f32", p, a, b, d.copy())[:n].astype(np.float64)
        x, y, z = a[:n].astype(np.float64), b[:n].astype(np.float64), d[:n].astype(np.float64)
        exact = s * x + z if op == 2 else x * z + y
        assert np.all(np.abs(out - exact) <= np.spacing(np.abs(exact).astype(F32)).astype(np.float64))


def test_mixed_precision_half_to_float(lib, rng):
    """Axpy<float, half> and MulAddDst<float, half>: 64 elements per repeat, sources in their own 32 B blocks."""
    for op in (2, 4):
        for form in (0, 1, 2, 3, 4, 5, 6):
            n_src = 1 if op == 2 else 2
            c = make_case(rng, [4] + [2] * n_src, form, n_src)
            s = F16(rng.uniform(-2, 2))
            p, idx = case_params(c, op=op, scalarBits=scalar_bits(s, F16))
            if op == 2:
                p = setp(p, lenB=16)
            a, b = region(rng, F16), region(rng, F16)
            d = region(rng, F32)
            ref = d.copy()
            di, ai = idx[0], idx[1]
            bi = idx[2] if op == 4 else ai
            fa = a[ai].astype(np.float32)
            ref[di] = mad(np.full_like(fa, np.float32(s)), fa, d[di], F32) if op == 2 else \
                mad(fa, b[bi].astype(np.float32), d[di], F32)
            out = launch(lib, "mixed_f32_f16", p, a, b, d)
            assert_bits_equal(out, ref, f"{FUSED[op]}<float, half> form {form} {c}")
    p = params(op=5, count=64, lenA=128, lenB=16, lenD=64)
    with pytest.raises(twin.TwinError, match=r"Axpy: dst \(UB byte \d+, 4-byte elements\) and src \(UB byte \d+, 2-byte elements\) partially overlap"):
        launch(lib, "mixed_f32_f16", p, region(rng, F16), region(rng, F16), region(rng, F32))


@pytest.mark.parametrize("op", [2, 3, 5, 9], ids=["Axpy", "FusedMulAdd", "AddRelu", "LeakyRelu"])
def test_bf16_compound_is_rejected(lib, rng, op):
    p = params(op=op, form=0, count=64, dstRep=8, s0Rep=8, s1Rep=8, lenD=64, lenA=64, lenB=64)
    with pytest.raises(twin.TwinError, match="bfloat16_t arithmetic is not supported"):
        launch(lib, "more_bf16", p, region(rng, BF16), region(rng, BF16), region(rng, BF16))


# ---------------------------------------------------------------------------------------------------------------
# Bitwise
def shl(a, n, dt):
    bits = np.dtype(dt).itemsize * 8
    u = a.view(np.dtype(f"u{bits // 8}")).astype(np.uint64)
    full = (1 << bits) - 1
    body = (u << np.uint64(n)) & np.uint64(full) if n < bits else np.zeros_like(u)
    if np.issubdtype(dt, np.signedinteger):
        sign = np.uint64(1 << (bits - 1))
        body = (u & sign) | (body & ~sign & np.uint64(full))
    return body.astype(np.dtype(f"u{bits // 8}")).view(dt)


def shr(a, n, dt, rnd):
    bits = np.dtype(dt).itemsize * 8
    if np.issubdtype(dt, np.signedinteger):
        v = a.astype(np.int64)
        r = (v >> min(n, 63)) if n < bits else np.where(v < 0, -1, 0)
        if rnd and n > 0:
            r = r + ((v >> (n - 1)) & 1)
        return r.astype(dt)
    return (a.astype(np.uint64) >> np.uint64(n)).astype(dt) if n < bits else np.zeros_like(a)


@pytest.mark.parametrize("dt", [S16, U16], ids=["s16", "u16"])
def test_and_or_not(lib, rng, dt):
    info = np.iinfo(dt)
    for op, name in ((10, "And"), (11, "Or"), (12, "Not")):
        for form in (0, 1, 2, 3, 4, 5, 6):
            n_src = 1 if op == 12 else 2
            c = make_case(rng, [2] * (n_src + 1), form, n_src)
            p, idx = case_params(c, op=op)
            if op == 12:
                p = setp(p, lenB=16)
            a, b, d = (region(rng, dt, info.min, info.max) for _ in range(3))
            ref = d.copy()
            x = a[idx[1]]
            ref[idx[0]] = ~x if op == 12 else ((x & b[idx[2]]) if op == 10 else (x | b[idx[2]]))
            out = launch(lib, KERNEL[dt], p, a, b, d)
            assert_bits_equal(out, ref, f"{name} {np.dtype(dt).name} form {form} {c}")


@pytest.mark.parametrize("dt", [S32, U32], ids=["s32", "u32"])
def test_and_or_count_on_32_bit_counts_16_bit_halves(lib, rng, dt):
    """The count form of And / Or on 32-bit data runs on int16 halves: count = 2 * n covers n elements."""
    info = np.iinfo(dt)
    for op in (10, 11):
        for n in (37, 64, 1000):
            a, b, d = (region(rng, dt, info.min, info.max) for _ in range(3))
            p = params(op=op, form=0, count=n, lenD=n, lenA=n, lenB=n)
            ref = d.copy()
            h = n // 2  # n int16 halves = n / 2 elements (plus the low half of the next one when n is odd)
            ref[:h] = (a[:h] & b[:h]) if op == 10 else (a[:h] | b[:h])
            if n % 2:
                lo = ((a.view(np.uint16)[n - 1] & b.view(np.uint16)[n - 1]) if op == 10
                      else (a.view(np.uint16)[n - 1] | b.view(np.uint16)[n - 1]))
                ref.view(np.uint16)[n - 1] = lo
            out = launch(lib, KERNEL[dt], p, a, b, d)
            assert_bits_equal(out, ref, f"op {op} count {n}")


@pytest.mark.parametrize("dt", [S16, U16, S32, U32], ids=["s16", "u16", "s32", "u32"])
def test_shifts(lib, rng, dt):
    info = np.iinfo(dt)
    bits = np.dtype(dt).itemsize * 8
    size = size_of(dt)
    for op in (13, 14):
        for form in (0, 1, 2, 3, 4, 5, 6) + ((8,) if op == 13 else ()):
            for rnd in ((0, 1) if op == 14 and form not in COUNTER_FORMS[:1] else (0,)):
                n = int(rng.choice([0, 1, 3, bits - 1, bits, int(rng.integers(0, bits + 1))]))
                c = make_case(rng, [size, size], form, 1)
                p, (di, ai) = case_params(c, op=op, extra=rnd, scalarBits=scalar_bits(n, dt))
                p = setp(p, lenB=8)
                a, d = region(rng, dt, info.min, info.max), region(rng, dt, info.min, info.max)
                a[:8] = np.array([info.min, info.max, -1 if info.min else 1, 0, 17, 16, 31, 32], np.int64).astype(dt)
                ref = d.copy()
                ref[di] = shl(a[ai], n, dt) if op == 13 else shr(a[ai], n, dt, rnd and form != 0)
                out = launch(lib, KERNEL[dt], p, a, region(rng, dt), d)
                assert_bits_equal(out, ref, f"{'ShiftLeft' if op == 13 else 'ShiftRight'} {np.dtype(dt).name} "
                                            f"by {n} round {rnd} form {form}")


def test_shift_documented_examples(lib):
    """int16 0b1010101010101010 << 1 = 0b1101010101010100, << 3 = 0b1101010101010000; >> 1 arithmetic =
    0b1101010101010101, >> 3 = 0b1111010101010101; uint16 >> 1 = 0b0101010101010101; round: 17 >> 5 = 1."""
    cases = [(S16, 13, 1, 0b1010101010101010, 0b1101010101010100), (S16, 13, 3, 0b1010101010101010, 0b1101010101010000),
             (S16, 14, 1, 0b1010101010101010, 0b1101010101010101), (S16, 14, 3, 0b1010101010101010, 0b1111010101010101),
             (U16, 14, 1, 0b1010101010101010, 0b0101010101010101), (U16, 13, 1, 0b1010101010101010, 0b0101010101010100)]
    for dt, op, n, x, want in cases:
        a = np.full(REGION // 2, x, np.uint16).view(dt)
        p = params(op=op, form=0, count=128, lenD=128, lenA=128, lenB=8, scalarBits=n)
        out = launch(lib, KERNEL[dt], p, a, np.zeros(REGION // 2, dt), np.zeros(REGION // 2, dt))
        assert int(out.view(np.uint16)[0]) == want and int(out.view(np.uint16)[127]) == want
    a = np.full(REGION // 2, 17, S16)
    p = params(op=14, form=2, mask0=128, repeat=1, dstBlk=1, s0Blk=1, dstRep=8, s0Rep=8, lenD=128, lenA=128, lenB=8,
               extra=1, scalarBits=5)
    out = launch(lib, "more_s16", p, a, np.zeros(REGION // 2, S16), np.zeros(REGION // 2, S16))
    assert (out[:128] == 1).all()


# ---------------------------------------------------------------------------------------------------------------
# CMPMASK register
CMP = {0: np.less, 1: np.greater, 2: np.equal, 3: np.less_equal, 4: np.greater_equal, 5: np.not_equal}


def pack_bits(b):
    return np.packbits(np.asarray(b, np.uint8), bitorder="little")


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_compare_to_cmpmask_and_get(lib, rng, dt):
    size = size_of(dt)
    E = 256 // size
    kern = "cmpmask_f32" if dt is F32 else "cmpmask_f16"
    for mode in range(6):
        for form in (1, 2, 3):
            m0, m1 = random_mask(rng, E, 1 if form == 3 else form)
            sb0, sb1 = int(rng.choice([1, 2, 0])), int(rng.choice([1, 3]))
            act = bits_of(m0, m1, E) if form in (1, 3) else np.arange(E) < min(m0, E)
            e = np.arange(E)
            ia, ib = index(0, e, size, sb0, 8), index(0, e, size, sb1, 8)
            a = np.round(region(rng, dt, -3, 3)).astype(dt)  # small integers: many ties for EQ / LE / GE
            offB = 4096 // size
            p = params(op=0, form=form, mask0=m0, mask1=m1, s0Blk=sb0, s1Blk=sb1, dstRep=8, s0Rep=8, s1Rep=8,
                       lenD=128, lenA=span(ia[act]) if act.any() else 8, lenB=8, extra=mode, extra2=offB,
                       extra3=max(span(ib[act]), 8))
            d = rng.integers(0, 256, REGION, dtype=np.uint8)
            res = CMP[mode](a[ia].astype(np.float32), a[offB + ib].astype(np.float32)) & act
            ref = d.copy()
            ref[:16] = 0
            ref[:E // 8] = pack_bits(res)
            out = launch(lib, kern, p, a, np.zeros(REGION, np.uint8), d)
            assert np.array_equal(out, ref), f"Compare->CMPMASK mode {mode} form {form}"


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_select_from_cmpmask_register(lib, rng, dt):
    """op 1: SetCmpMask(bits) + Select<T, VSEL_CMPMASK_SPR>; op 2: SetCmpMask(selMask address, as a pointer or a UB
    byte address) + Select<T, VSEL_TENSOR_TENSOR_MODE>; op 3: SetCmpMask(scalar) + Select(dst, selMask, src0) (mode
    1); op 5: Compare (CMPMASK form) + Select<T, VSEL_CMPMASK_SPR>. Mask register forms: 3 bits, 4 counter, 6 length."""
    size = size_of(dt)
    E = 256 // size
    kern = "cmpmask_f32" if dt is F32 else "cmpmask_f16"
    offB = 20000 // size  # src1 = region A from here
    for op in (1, 2, 3, 5):
        for form in (3, 4, 6):
            for addr_form in ((0, 1) if op == 2 else (0,)):
                c = make_case(rng, [size] * 3, form, 2)
                if form == 4:
                    c["count"] = int(rng.integers(1, E * 5))
                c["off"][2] = 0  # src1 = region A from offB (extra2); region B holds the selection bits
                p, (di, ai, bi) = case_params(c)
                r, e = selection(E, form, c["count"], c["repeat"], c["mask0"], c["mask1"])
                logical = r * E + e
                a = np.round(region(rng, dt, -3, 3)).astype(dt)  # small integers: ties for the comparisons
                d = region(rng, dt)
                selb = rng.integers(0, 256, REGION, dtype=np.uint8)
                src1 = a[offB + bi]
                len_a, len_s1, len_sel = int(p[FIELDS.index("lenA")]), max(span(bi), 64), 16
                if op == 1:
                    pick = np.unpackbits(selb[:16], bitorder="little")[logical % E].astype(bool)
                elif op == 2:
                    pick = np.unpackbits(selb[64:], bitorder="little")[logical].astype(bool)
                elif op == 3:
                    pick = np.unpackbits(selb, bitorder="little")[logical].astype(bool)
                    src1 = np.full(len(di), a[offB], dt)
                    len_sel = max(span(logical) // 8 + 1, 16)
                else:
                    mode = int(rng.integers(0, 6))
                    p = setp(p, extra=mode)
                    ea = index(0, np.arange(E), size, c["blk"][1], 8)
                    eb = index(0, np.arange(E), size, c["blk"][2], 8)
                    res = CMP[mode](a[c["off"][1] + ea].astype(np.float32), a[offB + eb].astype(np.float32))
                    pick = res[logical % E]
                    len_a, len_s1 = max(len_a, span(ea)), max(len_s1, span(eb))
                if op == 2:
                    p = setp(p, extra=addr_form)
                p = setp(p, offB=0, lenA=len_a, lenB=len_sel, extra2=offB, extra3=len_s1)
                ref = d.copy()
                ref[di] = np.where(pick, a[ai], src1)
                out = launch(lib, kern, setp(p, op=op), a, selb, d)
                assert_bits_equal(out, ref, f"Select register op {op} form {form} addr {addr_form} {c}")


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_tensor_select_leaves_cmpmask(lib, rng, dt):
    """Select with a selMask tensor loads CMPMASK first (mode 0: the first 16 selMask bytes; mode 1: the scalar
    repeated; mode 2: the selMask's UB address repeated), as GetCmpMask shows."""
    size = size_of(dt)
    kern = "cmpmask_f32" if dt is F32 else "cmpmask_f16"
    sel = rng.integers(0, 256, REGION, dtype=np.uint8)
    for mode in (0, 1, 2):
        s = dt(rng.uniform(-5, 5))
        p = params(op=4, mask0=(1 << 64) - 1, mask1=(1 << 64) - 1, dstBlk=1, s0Blk=1, s1Blk=1, dstRep=8, s0Rep=8,
                   s1Rep=8, lenD=128, lenA=256 // size, lenB=64, count=8192 // size, extra=mode, extra2=1024 // size,
                   extra3=256 // size, scalarBits=scalar_bits(s, dt))
        out = launch(lib, kern, p, region(rng, dt), sel, rng.integers(0, 256, REGION, dtype=np.uint8))
        if mode == 0:
            assert np.array_equal(out[:16], sel[:16])
        elif mode == 1:
            assert np.array_equal(out[:16].view(host(dt)), np.full(16 // size, s, dt).view(host(dt)))
        else:
            addr = out[:16].view(np.uint32)
            assert (addr == addr[0]).all() and addr[0] % 32 == 0 and addr[0] < 192 * 1024


CMPMASK_MISUSE = [
    (6, "GetCmpMask: reads the CMPMASK register, which no Compare"),
    (7, "Select: reads the CMPMASK register"),
    (8, "does nothing on the NPU; mode 1 takes the Select\\(dst, selMask, src0"),
    (9, "SetCmpMask: src address .* is not 16-byte aligned"),
    (0, "GetCmpMask: dst has 96 bytes; the documented minimum is 128 bytes"),  # Compare + GetCmpMask, lenD 96
]


@pytest.mark.parametrize("op,msg", CMPMASK_MISUSE, ids=[str(m[0]) for m in CMPMASK_MISUSE])
def test_cmpmask_misuse(lib, rng, op, msg):
    p = params(op=op, form=3, mask0=(1 << 64) - 1, mask1=(1 << 64) - 1, repeat=1, dstBlk=1, s0Blk=1, s1Blk=1,
               dstRep=8, s0Rep=8, s1Rep=8, lenD=256 if op else 96, lenA=64, lenB=64, extra2=1024, extra3=64)
    with pytest.raises(twin.TwinError, match=msg):
        launch(lib, "cmpmask_f32", p, region(rng, F32), rng.integers(0, 256, REGION, dtype=np.uint8),
               region(rng, F32))


@pytest.mark.usefixtures("poison_unchecked")
# ---------------------------------------------------------------------------------------------------------------
# SetPadValue + DataCopyPad
@pytest.mark.parametrize("dt", [F16, F32, np.int8], ids=["f16", "f32", "s8"])
def test_set_pad_value(lib, rng, dt):
    size = np.dtype(dt).itemsize
    kern = {F16: "pad_f16", F32: "pad_f32", np.int8: "pad_s8"}[dt]
    epb = 32 // size
    for extra in (1, 2, 0):
        for lp, rp in ((0, 3), (2, 1), (1, 0), (0, 0)):
            if lp * size > 32 or rp * size > 32:
                continue
            n_rows = int(rng.integers(1, 6))
            blen = int(rng.integers(1, 3 * epb)) * size
            gap = int(rng.integers(0, 3)) * size
            dst_stride = int(rng.integers(0, 2))
            src = (rng.uniform(-50, 50, 4096).astype(dt) if dt is not np.int8
                   else rng.integers(-100, 100, 4096, dtype=np.int8))
            v = dt(7) if dt is np.int8 else dt(rng.uniform(-9, 9))
            row = -(-(lp * size + blen + rp * size) // 32) * 32
            step = row + dst_stride * 32
            out_bytes = -(-((n_rows - 1) * step + row) // 32) * 32
            p = params(count=n_rows, repeat=blen, dstRep=dst_stride, s0Rep=gap, mask0=lp, mask1=rp, extra=extra,
                       scalarBits=scalar_bits(v, dt), gA=src.nbytes, gD=out_bytes)
            out = np.zeros(out_bytes // size, dt)
            lib.launch(kern, 1, p, src, out)
            for r in range(n_rows):
                got = out.view(np.uint8)[r * step:r * step + row].view(dt)
                data = src.view(np.uint8)[r * (blen + gap):r * (blen + gap) + blen].view(dt)
                assert np.array_equal(got[lp:lp + len(data)], data)
                fill = np.concatenate([got[:lp], got[lp + len(data):]])
                if lp == 0 and rp == 0:
                    assert (fill == data[0]).all()  # dummy fill: the row's first element
                elif extra == 0:
                    assert (fill.view(np.uint8) == 0xFF).all()  # undefined on the NPU: the twin poisons
                else:
                    assert (fill == v).all(), (extra, lp, rp, fill, v)


def test_set_pad_value_is_a_no_op_on_the_cube_core(lib):
    p = params(extra2=1, scalarBits=1)
    lib.launch("pad_f32", 1, p, np.zeros(64, F32), np.zeros(64, F32), kernel_type="mix")


# ---------------------------------------------------------------------------------------------------------------
# strictness, trace, hazards
MISUSE = [
    (1, "Copy: src address 12 in UB is not 32-byte aligned", {}),
    (2, "Copy: dstRepeatSize 8 / srcRepeatSize 4096 outside \\[0, 4095\\]", {}),
    (3, "Copy: src: the instruction reaches byte 1024 .* but the tensor has 1020 bytes", dict(lenA=255)),
    (4, "Copy: dstStride = 0 with active elements in more than one block", {}),
    (5, "CreateVecIndex: continuous mask 5 is below one 32 B block", {}),
    (6, "CreateVecIndex: continuous mask 100 exceeds the 64 elements of one repeat", {}),
    (7, "ShiftLeft: scalarValue 17 is outside \\[0, 16\\]", {}),
    (8, "ShiftRight: scalarValue -1 is outside \\[0, 16\\]", {}),
    (9, "FusedMulAdd: src1: the instruction reaches byte 512 .* but the tensor has 508 bytes", dict(lenB=127)),
    (10, "Copy: dstStride = 0 with 100 elements per repeat", {}),
    (11, "Compare: src1: the instruction reaches byte 256 .* but the tensor has 252 bytes", dict(lenB=63)),
]


@pytest.mark.parametrize("op,msg,kw", MISUSE, ids=[str(m[0]) for m in MISUSE])
def test_misuse_is_reported(lib, rng, op, msg, kw):
    assert_misuse_reported(lib, "more_misuse", rng, op, msg, kw)


def test_create_vec_index_in_counter_mode_is_reported(lib, rng):
    p = params(op=1, form=0, count=100, lenD=100, lenA=8, lenB=8, extra2=1)
    with pytest.raises(twin.TwinError, match="CreateVecIndex: called in counter mode"):
        launch(lib, "more_f32", p, region(rng, F32), region(rng, F32), region(rng, F32))


def test_added_api_on_cube_core_fails(lib, rng):
    with pytest.raises(twin.TwinError, match="AIC 0.*FusedMulAdd: vector/UB API called on the cube core"):
        lib.launch("more_misuse", 1, params(op=0), region(rng, F32), region(rng, F32), region(rng, F32),
                   kernel_type="mix")


TRACED = [  # (kernel, params, API)
    ("more_f32", dict(op=0, form=2, mask0=64, repeat=3, dstBlk=1, s0Blk=1, dstRep=8, s0Rep=8, lenD=192, lenA=192,
                      lenB=8), "Copy", 192, 3),
    ("more_f32", dict(op=1, form=0, count=1000, lenD=1000, lenA=8, lenB=8), "CreateVecIndex", 1000, 16),
    ("more_f32", dict(op=3, form=0, count=1000, dstRep=8, s0Rep=8, s1Rep=8, lenD=1000, lenA=1000, lenB=1000),
     "FusedMulAdd", 1000, 16),
    ("more_s16", dict(op=10, form=0, count=1000, lenD=1000, lenA=1000, lenB=1000), "And", 1000, 8),
    ("more_s32", dict(op=13, form=0, count=100, lenD=100, lenA=100, lenB=8, scalarBits=3), "ShiftLeft", 100, 2),
    ("mixed_f32_f16", dict(op=4, form=0, count=100, lenD=100, lenA=100, lenB=100), "MulAddDst", 100, 2),
]


@pytest.mark.parametrize("kernel,kw,api,elems,reps", TRACED, ids=[t[2] for t in TRACED])
def test_trace_one_record_per_call(lib, rng, kernel, kw, api, elems, reps):
    dt = {"more_f32": F32, "more_s16": S16, "more_s32": S32, "mixed_f32_f16": F16}[kernel]
    a, b = region(rng, dt), region(rng, dt)
    d = region(rng, F32 if kernel == "mixed_f32_f16" else dt)
    p = setp(params(**kw), gA=a.nbytes, gB=b.nbytes, gD=d.nbytes)
    lib.launch(kernel, 1, p, a, b, d, trace=True)
    recs = [r for r in lib.last_trace()[0]["records"] if r["op"] == api]
    assert len(recs) == 1
    assert recs[0]["pipe"] == "V" and recs[0]["elems"] == elems and recs[0]["repeats"] == reps


HAZARD = ["Copy", "CreateVecIndex", "FusedMulAdd", "Compare", "SetCmpMask", "And"]


@pytest.mark.parametrize("api", HAZARD)
def test_hazard_detector_sees_the_operands(lib, rng, api):
    """Without the MTE2 -> V flag, the API's read (or write) of the block DataCopy just filled is reported."""
    p = params(op=HAZARD.index(api))
    with pytest.raises(twin.TwinError, match=f"{api}: pipe hazard: {api} \\(pipe V\\)"):
        lib.launch("no_sync", 1, p, region(rng, F32))


# ---------------------------------------------------------------------------------------------------------------
# Gather / GatherMask
GATHER = {F16: "gather_f16", F32: "gather_f32", BF16: "gather_bf16"}


def tail_words(out, dt):
    return [int(x) for x in out.view(np.uint8)[-32:].view(np.uint64)]


@pytest.mark.usefixtures("poison_unchecked")
@pytest.mark.parametrize("dt", [F16, F32, BF16], ids=["f16", "f32", "bf16"])
def test_gather(lib, rng, dt):
    size = size_of(dt)
    E, epb = 256 // size, 32 // size
    for form in (0, 1, 2, 0, 1, 2):
        if form == 0:
            cnt = int(rng.choice([int(rng.integers(1, E)), E, 3 * E, int(rng.integers(E, 9 * E))]))
            r, e = np.arange(cnt) // E, np.arange(cnt) % E
            R, m0, m1, drep = 0, 0, 0, 8
        else:
            cnt = 0
            m0, m1 = random_mask(rng, E, form)
            R = int(rng.integers(1, 7))
            drep = int(rng.choice([8, 9, 12, 0 if R == 1 else 8]))
            r, e = selection(E, form, 0, R, m0, m1)
        base = int(rng.integers(0, 8)) * size
        len_src = 3000
        n_off = int((r * E + e).max()) + 1 if r.size else 1
        offs = (rng.integers(0, (len_src * size - base) // size, n_off) * size).astype(np.uint32)
        offA, offD = int(rng.integers(0, 3)) * epb, int(rng.integers(0, 3)) * epb
        di = offD + index(r, e, size, 1, drep)
        src = region(rng, dt, -100, 100)
        bregion = np.zeros(REGION, np.uint8)
        bregion[:offs.nbytes] = offs.view(np.uint8)
        d = region(rng, dt, -100, 100)
        ref = d.copy()
        ref[di] = src[offA + (base + offs[r * E + e].astype(np.int64)) // size]
        p = params(op=0, form=form, count=cnt, repeat=R, mask0=m0, mask1=m1, dstRep=drep, offD=offD, offA=offA,
                   lenD=span(di - offD), lenA=len_src, lenB=4 * n_off, extra=base)
        out = launch(lib, GATHER[dt], p, src, bregion, d)
        body = out.view(np.uint8)[:-32]
        assert np.array_equal(body, ref.view(np.uint8)[:-32]), f"Gather form {form} R {R} drep {drep} base {base}"
        if form == 0:
            assert tail_words(out, dt)[1:4] == [*lenbits(cnt % E if cnt % E else E), 0]


def gather_mask_model(src, offA, size, pattern, bits, reduce, mask, R, blk, rep, s1rep):
    E, epb = 256 // size, 32 // size
    per = mask if reduce else E
    picked, touched = [], []
    for r in range(R):
        for e in range(per):
            i = offA + (r * rep * 32 + (e // epb) * blk * 32 + (e % epb) * size) // size
            touched.append(i)
            if bits is not None:
                byte = bits[r * s1rep * 32 + e // 8]
                take = (byte >> (e % 8)) & 1
            else:
                take = {1: e % 2 == 0, 2: e % 2 == 1, 3: e % 4 == 0, 4: e % 4 == 1, 5: e % 4 == 2, 6: e % 4 == 3,
                        7: True}[pattern]
            if take:
                picked.append(i)
    return np.array(picked, np.int64), (max(touched) - offA + 1 if touched else 0)


@pytest.mark.parametrize("dt", [F16, F32, BF16], ids=["f16", "f32", "bf16"])
def test_gather_mask(lib, rng, dt):
    size = size_of(dt)
    E, epb = 256 // size, 32 // size
    for op in (1, 2):
        for reduce in (0, 1):
            for _ in range(3):
                pattern = int(rng.integers(1, 8)) if op == 2 else 0
                mask = int(rng.integers(1, 3 * E)) if reduce else int(rng.choice([0, 5]))
                R = int(rng.integers(1, 6))
                blk = int(rng.choice([1, 1, 2]))
                per = mask if reduce else E
                nb = -(-per // epb)
                rep = int(rng.choice([nb * blk, nb * blk + 2, 8]))
                s1rep = int(rng.choice([0, 1, 2]))
                src = region(rng, dt, -100, 100)
                bits = rng.integers(0, 256, REGION, dtype=np.uint8)
                offA = int(rng.integers(0, 3)) * epb
                picked, len_a = gather_mask_model(src, offA, size, pattern, bits if op == 1 else None, reduce, mask,
                                                  R, blk, rep, s1rep)
                need_b = (R - 1) * s1rep * 32 + -(-per // 8)
                d = region(rng, dt, -100, 100)
                ref = d.copy()
                ref[:len(picked)] = src[picked]
                p = params(op=op, repeat=R, mask0=mask, s0Blk=blk, s0Rep=rep, s1Rep=s1rep, offA=offA,
                           lenD=len(picked), lenA=len_a, lenB=-(-need_b // 4) * 4, extra=pattern, extra2=reduce)
                out = launch(lib, GATHER[dt], p, src, bits, d)
                what = f"GatherMask op {op} pattern {pattern} reduce {reduce} mask {mask} R {R} blk {blk} rep {rep}"
                assert np.array_equal(out.view(np.uint8)[:-32], ref.view(np.uint8)[:-32]), what
                # rsvdCnt; the mask register as the NPU implementation leaves it: {high 0, low mask}, normal mode
                assert tail_words(out, dt) == [len(picked), mask, 0, 0], what


GATHER_MISUSE = [
    (dict(op=0, form=2, mask0=64, repeat=1, dstRep=8, lenD=64, lenA=64, lenB=256), "off_misaligned",
     "Gather: srcOffset\\[0\\] = 2 bytes is not a multiple of sizeof\\(T\\) = 4"),
    (dict(op=0, form=2, mask0=64, repeat=1, dstRep=8, lenD=64, lenA=64, lenB=256), "off_past",
     "Gather: srcOffset\\[0\\] = 256 bytes \\(\\+ srcBaseOffset 0\\) reads past the src tensor's 256 bytes"),
    (dict(op=0, form=2, mask0=64, repeat=1, dstRep=8, lenD=64, lenA=64, lenB=256, extra=2), "zeros",
     "Gather: srcBaseOffset 2 is not a multiple of sizeof\\(T\\) = 4"),
    (dict(op=0, form=0, count=64 * 256, lenD=64, lenA=64, lenB=256), "zeros",
     "Gather: count 16384 needs 256 full repeats"),
    (dict(op=2, repeat=1, mask0=0, extra=9, lenD=64, lenA=64, lenB=16), "zeros",
     "GatherMask: src1Pattern 9 is outside \\[1, 7\\]"),
    (dict(op=2, repeat=1, mask0=0, extra=2, extra2=1, lenD=64, lenA=64, lenB=16), "zeros",
     "GatherMask: mask 0 with reduceMode = true"),
    (dict(op=1, repeat=2, mask0=0, s1Rep=1, lenD=128, lenA=128, lenB=39), "zeros",
     "GatherMask: src1Pattern: the instruction reaches byte 40 but the tensor has 39 bytes"),
    (dict(op=2, repeat=2, mask0=0, s0Blk=1, s0Rep=8, extra=7, lenD=127, lenA=128, lenB=16), "zeros",
     "GatherMask: dst: the instruction reaches byte 512 but the tensor has 508 bytes"),
]


@pytest.mark.parametrize("kw,offs,msg", GATHER_MISUSE, ids=[str(i) for i in range(len(GATHER_MISUSE))])
def test_gather_misuse(lib, rng, kw, offs, msg):
    b = np.zeros(REGION // 4, np.uint32)
    if offs == "off_misaligned":
        b[0] = 2
    elif offs == "off_past":
        b[0] = 256
    with pytest.raises(twin.TwinError, match=msg):
        launch(lib, "gather_f32", params(**kw), region(rng, F32), b.view(np.uint8), region(rng, F32))


def test_indices_above_threshold_composition(lib, rng):
    """CreateVecIndex + Compares + GatherMask (counter mode over the whole row, tensor pattern) = np.nonzero(x > t)."""
    for n in (64, 640, 4096):
        x = rng.normal(0, 1, n).astype(F32)
        t = F32(rng.uniform(-0.5, 1.0))
        out = np.full(n + 8, -1, np.int32)
        lib.launch("indices_above", 1, params(count=n, scalarBits=scalar_bits(t, F32)), x, out)
        want = np.nonzero(x > t)[0]
        assert out[0] == len(want)
        assert np.array_equal(out[8:8 + len(want)], want)


@pytest.mark.usefixtures("poison_unchecked")
def test_gather_trace_one_record_per_call(lib, rng):
    zeros = np.zeros(REGION, np.uint8)
    for kw, api, elems, reps in ((dict(op=0, form=2, mask0=64, repeat=2, dstRep=8, lenD=128, lenA=128, lenB=512),
                                  "Gather", 128, 2),
                                 (dict(op=0, form=0, count=200, lenD=200, lenA=128, lenB=800), "Gather", 200, 4),
                                 (dict(op=2, repeat=2, extra=7, lenD=128, lenA=128, lenB=16), "GatherMask", 128, 2)):
        a, d = region(rng, F32), region(rng, F32)
        p = setp(params(**kw), gA=a.nbytes, gB=zeros.nbytes, gD=d.nbytes)
        lib.launch("gather_f32", 1, p, a, zeros, d, trace=True)
        recs = [r for r in lib.last_trace()[0]["records"] if r["op"] == api]
        assert len(recs) == 1 and recs[0]["pipe"] == "V" and recs[0]["elems"] == elems and recs[0]["repeats"] == reps
