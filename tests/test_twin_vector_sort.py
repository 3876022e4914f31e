"""Sort32, MrgSort / GetMrgSortResult and the reduction special registers of the twin against numpy models written
from the API pages (docs/zh/api/SIMD-API/基础API/Memory矢量计算/排序组合（ISASI）/ and 归约计算辅助配置接口/), plus the
strict checks of those pages and the unary type / ReduceSum work-buffer rules.

Kernels: tests/kernels/vector/sort_reduce.cpp (region_harness.h: src0 in region A, raw bytes in B, dst in D)."""
import numpy as np
import pytest

from npu_flash_attn import twin
from vector_harness import KDIR, F16, F32, REGION, U32, launch, params, poison_unchecked, region, setp

KERNEL = {F32: "sort_f32", F16: "sort_f16"}
TAIL = REGION // 4 - 8  # first of the 8 result words at the end of region D


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KDIR / "sort_reduce.cpp", opt="-O0")  # tiny cases: compile time dominates


def words(d):
    return d.view(np.uint32)[TAIL:TAIL + 4]


def proposals(scores, idx, dt):
    """The documented 8-byte proposals: score in the low bytes (half: bytes 2..3 reserved, 0 here), index high."""
    out = np.zeros((len(scores), 8), np.uint8)
    out[:, :np.dtype(dt).itemsize] = np.asarray(scores, dt).view(np.uint8).reshape(len(scores), -1)
    out[:, 4:] = np.asarray(idx, np.uint32).view(np.uint8).reshape(len(idx), 4)
    return out.reshape(-1)


def tied_scores(rng, n, dt):
    """Scores with many ties (so the documented tie rule matters) and both signs."""
    return (rng.integers(-6, 7, n) * 0.75).astype(dt)


# ---------------------------------------------------------------------------------------------------------------
# Sort32
@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_sort32_sorts_each_group_of_32_descending_and_stable(lib, rng, dt):
    for _ in range(3):
        R = int(rng.integers(1, 10))
        a = region(rng, dt)
        a[:32 * R] = tied_scores(rng, 32 * R, dt)
        b = region(rng, U32, 0, 2**31)
        d = region(rng, dt)
        ref = d.view(np.uint8).copy()
        for r in range(R):
            s, ix = a[32 * r:32 * r + 32], b[32 * r:32 * r + 32]
            order = np.argsort(-s.astype(np.float64), kind="stable")  # ties: the lower input position first
            ref[256 * r:256 * r + 256] = proposals(s[order], ix[order], dt)
        p = params(op=0, repeat=R, lenA=32 * R, lenB=128 * R, lenD=256 * R // np.dtype(dt).itemsize)
        out = launch(lib, KERNEL[dt], p, a, b, d)
        assert np.array_equal(out.view(np.uint8), ref), f"Sort32 {dt.__name__} R={R}"


SORT32_MISUSE = [
    ("src0 address \\d+ in UB is not 128-byte aligned", dict(offA=8, lenA=64)),
    ("src1 address \\d+ in UB is not 128-byte aligned", dict(offB=64, lenB=128)),
    ("dst address \\d+ in UB is not 256-byte aligned", dict(offD=8, lenD=64)),
    ("repeatTime 256 is outside \\[0, 255\\]", dict(repeat=256)),
    ("dst: the instruction reaches byte 512 but the tensor has 508 bytes", dict(repeat=2, lenD=127)),
]


@pytest.mark.parametrize("msg,kw", SORT32_MISUSE, ids=[m[0].split()[0] + str(i) for i, m in enumerate(SORT32_MISUSE)])
def test_sort32_misuse_is_reported(lib, rng, msg, kw):
    p = params(op=0, repeat=1, lenA=64, lenB=256, lenD=128)
    setp(p, **kw)
    with pytest.raises(twin.TwinError, match="Sort32: " + msg):
        launch(lib, "sort_f32", p, region(rng, F32), region(rng, U32), region(rng, F32))


# ---------------------------------------------------------------------------------------------------------------
# MrgSort
def sorted_list(rng, n, dt, base):
    s = np.sort(tied_scores(rng, n, dt).astype(np.float64))[::-1].astype(dt)
    return s, np.arange(base, base + n, dtype=np.uint32)


def merge(lists, suspend):
    """The documented merge: repeatedly take the largest head (ties: the lower-numbered list); with suspension stop
    as soon as one list is used up. Returns the (list, position) picks and the numbers taken per list."""
    taken = [0] * len(lists)
    picks = []
    while True:
        if suspend and any(t == len(s) for t, (s, _) in zip(taken, lists)):
            break
        heads = [(-float(s[t]), k) for k, ((s, _), t) in enumerate(zip(lists, taken)) if t < len(s)]
        if not heads:
            break
        k = min(heads)[1]
        picks.append((k, taken[k]))
        taken[k] += 1
    return picks, taken


def mrg_case(rng, dt, lens, valid, suspend, repeat=1, contiguous=False):
    per = 8 // np.dtype(dt).itemsize  # elements per proposal
    a = region(rng, dt)
    offs, lists, at = [], [], 0
    for k in range(4):
        if not contiguous:
            at += int(rng.integers(0, 5)) * per  # gaps keep the 8 B alignment only
        offs.append(at)
        at += lens[k] * per * (4 * (repeat - 1) + 1 if contiguous and k == 3 else 1)
    for r in range(repeat):
        for k in range(4):
            s, ix = sorted_list(rng, lens[k], dt, 1000 * k + 100 * r)
            start = offs[k] + r * 4 * lens[k] * per
            a.view(np.uint8)[start * 8 // per:(start + lens[k] * per) * 8 // per] = proposals(s, ix, dt)
            lists.append((r, k, s, ix))
    m0 = sum(n << (16 * k) for k, n in enumerate(lens))
    m1 = sum(o << (16 * k) for k, o in enumerate(offs))
    nl = {3: 2, 7: 3, 15: 4}[valid]
    total = sum(lens[:nl]) * repeat
    p = params(op=1, repeat=repeat, mask0=m0, mask1=m1, extra=valid, extra2=int(suspend), lenA=REGION // 8,
               lenD=max(total * per, 1))
    return p, a, lists, nl


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
@pytest.mark.parametrize("suspend", [False, True], ids=["run", "suspend"])
def test_mrgsort_merges_lists_by_score(lib, rng, dt, suspend):
    for valid in (3, 7, 15):
        lens = [int(x) for x in rng.integers(1, 40, 4)]
        p, a, lists, nl = mrg_case(rng, dt, lens, valid, suspend)
        d = region(rng, dt)
        ref = d.view(np.uint8).copy()
        srcs = [(s, ix) for (_, k, s, ix) in lists[:nl]]
        picks, taken = merge(srcs, suspend)
        got = [proposals(srcs[k][0][i:i + 1], srcs[k][1][i:i + 1], dt) for k, i in picks]
        ref[:8 * len(picks)] = np.concatenate(got)
        if suspend:
            ref.view(np.uint32)[TAIL:TAIL + 4] = taken + [0] * (4 - nl)
        out = launch(lib, KERNEL[dt], p, a, region(rng, U32), d)
        assert np.array_equal(out.view(np.uint8), ref), f"MrgSort {dt.__name__} validBit {valid} lens {lens}"


def test_mrgsort_repeats_merge_consecutive_groups_of_four(lib, rng):
    L, R = int(rng.integers(3, 20)), int(rng.integers(2, 5))
    p, a, lists, _ = mrg_case(rng, F32, [L] * 4, 15, False, repeat=R, contiguous=True)
    d = region(rng, F32)
    ref = d.view(np.uint8).copy()
    for r in range(R):
        srcs = [(s, ix) for (rr, _, s, ix) in lists if rr == r]
        picks, _ = merge(srcs, False)
        ref[r * 32 * L:(r + 1) * 32 * L] = np.concatenate(
            [proposals(srcs[k][0][i:i + 1], srcs[k][1][i:i + 1], F32) for k, i in picks])
    out = launch(lib, "sort_f32", p, a, region(rng, U32), d)
    assert np.array_equal(out.view(np.uint8), ref)


MRG_MISUSE = [
    ("validBit 5 is not one of 3, 7, 15", dict(extra=5)),
    ("elementLengths\\[1\\] = 4096 is outside \\[0, 4095\\]", dict(mask0=8 | (4096 << 16))),
    ("repeatTimes 2 needs 4 lists .* stored one after another", dict(repeat=2, mask1=sum((20 * k) << (16 * k) for k in range(4)))),
    ("dst overlaps source list 1", dict(op=3, offD=8, lenD=64)),
    ("src.src2 address \\d*4 in UB is not 8-byte aligned", dict(mask1=1 << 16)),
]


@pytest.mark.parametrize("msg,kw", MRG_MISUSE, ids=[str(i) for i in range(len(MRG_MISUSE))])
def test_mrgsort_misuse_is_reported(lib, rng, msg, kw):
    p = params(op=1, repeat=1, mask0=sum(8 << (16 * k) for k in range(4)),
               mask1=sum((16 * k) << (16 * k) for k in range(4)), extra=15, lenA=4096, lenD=64)
    setp(p, **kw)
    with pytest.raises(twin.TwinError, match="MrgSort: " + msg):
        launch(lib, "sort_f32", p, region(rng, F32), region(rng, U32), region(rng, F32))


@pytest.mark.parametrize("case", ["none", "no-suspension"])
def test_get_mrgsort_result_needs_a_suspending_mrgsort(lib, rng, case):
    if case == "none":
        p, msg = params(op=2), "no MrgSort ran on this core"
    else:
        p, _, _, _ = mrg_case(rng, F32, [5, 6, 7, 8], 15, False)
        setp(p, extra3=1)
        msg = "the last MrgSort ran with ifExhaustedSuspension = false"
    with pytest.raises(twin.TwinError, match="GetMrgSortResult: " + msg):
        launch(lib, "sort_f32", p, region(rng, F32), region(rng, U32), region(rng, F32))


# ---------------------------------------------------------------------------------------------------------------
# Reduction special registers
def bits_of(v, dt):
    return int(np.asarray([v], dt).view(np.uint16 if dt is F16 else np.uint32)[0])


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_max_min_register_after_reduce_repeat(lib, rng, dt):
    perrep = 256 // np.dtype(dt).itemsize
    for form in (1, 2):
        for ismin in (0, 1):
            R = int(rng.integers(1, 9))
            a = region(rng, dt)
            a[:perrep * R] = tied_scores(rng, perrep * R, dt)
            if form == 2:
                m0, m1 = int(rng.integers(1, perrep + 1)), 0
                act = np.arange(perrep) < m0
            else:
                m0, m1 = int(rng.integers(1, 1 << 63)), int(rng.integers(0, 1 << 63))
                bits = [(m0 >> i) & 1 for i in range(64)] + [(m1 >> i) & 1 for i in range(64)]
                act = np.array(bits[:perrep], bool)
            v = a[:perrep * R].reshape(R, perrep).astype(np.float64)
            flat = np.where(np.tile(act, (R, 1)), v, np.inf if ismin else -np.inf).reshape(-1)
            i = int(np.argmin(flat) if ismin else np.argmax(flat))  # the first extreme: global index r * E + e
            p = params(op=10, form=form, repeat=R, mask0=m0, mask1=m1, s0Blk=1, s0Rep=8, lenA=perrep * R,
                       lenD=2 * R * 8 // np.dtype(dt).itemsize, extra3=ismin)
            out = launch(lib, KERNEL[dt], p, a, region(rng, U32), region(rng, dt))
            assert list(words(out)[:2]) == [bits_of(flat[i], dt), i], f"form {form} min {ismin} R {R}"


@pytest.mark.usefixtures("poison_unchecked")  # the index word is undefined: the twin stores poison there
@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_max_min_register_after_reduce_max_min_holds_the_value(lib, rng, dt):
    for ismin in (0, 1):
        n = int(rng.integers(1, 3000))
        a = region(rng, dt)
        p = params(op=11, count=n, lenA=n, lenB=REGION, lenD=16, extra3=ismin)  # lenB: bytes
        out = launch(lib, KERNEL[dt], p, a, region(rng, U32), region(rng, dt))
        want = a[:n].min() if ismin else a[:n].max()
        inexact = 0xFFFF if dt is F16 else 0xFFFFFFFF  # the page: the index is not accurate here
        assert list(words(out)[:2]) == [bits_of(want, dt), inexact]
        assert out[0] == want


def tree(v, dt):
    """The documented binary tree of adjacent pairs inside one repeat, rounded to dt at every level."""
    v = v.astype(dt)
    while v.size > 1:
        v = (v[0::2].astype(np.float32) + v[1::2].astype(np.float32)).astype(dt)
    return v[0]


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_acc_register_after_reduce_sum_count_form(lib, rng, dt):
    perrep = 256 // np.dtype(dt).itemsize
    n = int(rng.integers(1, 40 * perrep))
    a = region(rng, dt, -1, 1)
    pad = np.zeros(-(-n // perrep) * perrep, dt)
    pad[:n] = a[:n]
    acc = None
    for part in pad.reshape(-1, perrep):  # A2 count form ("method one"): repeats accumulated in order
        t = tree(part, dt)
        acc = t if acc is None else dt(np.float32(acc) + np.float32(t))
    p = params(op=12, count=n, lenA=n, lenB=1, lenD=-(-n // perrep) + 16)  # the work buffer is not used
    out = launch(lib, KERNEL[dt], p, a, region(rng, U32), region(rng, dt))
    assert words(out)[0] == bits_of(acc, dt)
    assert bits_of(out[0], dt) == bits_of(acc, dt)


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_reduce_sum_mask_form_work_buffer_minimum(lib, rng, dt):
    perblk = 32 // np.dtype(dt).itemsize
    R = int(rng.integers(perblk + 1, 6 * perblk))
    need = -(-R // perblk) * perblk  # the A2 rule ("method two"): first-round results rounded up to 32 B
    p = params(op=13, repeat=R, mask0=256 // np.dtype(dt).itemsize, s0Rep=8, lenA=R * 256 // np.dtype(dt).itemsize,
               lenB=need * np.dtype(dt).itemsize, lenD=16)  # lenB: bytes
    launch(lib, KERNEL[dt], p, region(rng, dt), region(rng, U32), region(rng, dt))
    setp(p, lenB=(need - 1) * np.dtype(dt).itemsize)
    with pytest.raises(twin.TwinError, match=f"ReduceSum: sharedTmpBuffer needs {need} elements"):
        launch(lib, KERNEL[dt], p, region(rng, dt), region(rng, U32), region(rng, dt))


SPR_MISUSE = [
    ("GetReduceRepeatMaxMinSpr: the register is undefined: the last max/min reduction ran in counter mode",
     dict(op=10, form=4, count=100, s0Blk=1, s0Rep=8, lenA=256, lenD=64)),
    ("GetReduceRepeatMaxMinSpr: the register is undefined: the last max/min reduction was not contiguous",
     dict(op=10, form=2, repeat=2, mask0=64, s0Blk=1, s0Rep=16, lenA=256, lenD=64)),
    ("GetReduceRepeatMaxMinSpr: T has 2 bytes but the reduction that wrote the register used a 4-byte type",
     dict(op=15, repeat=1, mask0=64, lenA=64, lenD=64)),
    ("GetReduceRepeatSumSpr: the register is undefined: no ReduceSum count form ran on this core", dict(op=16)),
    ("GetReduceRepeatSumSpr: the register is undefined: the last sum reduction was WholeReduceSum",
     dict(op=14, repeat=1, mask0=64, lenA=64, lenD=64)),
    ("GetReduceRepeatSumSpr: the register is undefined: the last sum reduction was ReduceSum \\(mask form\\)",
     dict(op=13, repeat=1, mask0=64, s0Rep=8, lenA=64, lenB=32, lenD=64, extra2=1)),
]


@pytest.mark.parametrize("msg,kw", SPR_MISUSE, ids=[str(i) for i in range(len(SPR_MISUSE))])
def test_register_reads_outside_the_documented_cases_are_reported(lib, rng, msg, kw):
    with pytest.raises(twin.TwinError, match=msg):
        launch(lib, "sort_f32", params(**kw), region(rng, F32), region(rng, U32), region(rng, F32))


# ---------------------------------------------------------------------------------------------------------------
# Unary rules
@pytest.mark.parametrize("dt,mask", [(F32, 129), (F16, 200)], ids=["f32-129", "f16-200"])
def test_continuous_mask_above_one_repeat_counts_as_a_full_repeat(lib, rng, dt, mask):
    """掩码.md: in continuous mode a mask beyond the type's range is computed as the maximum (64 / 128)."""
    perrep = 256 // np.dtype(dt).itemsize
    a, d = region(rng, dt, -2, 2), region(rng, dt)
    ref = d.copy()
    ref[:perrep] = np.exp(a[:perrep].astype(np.float64)).astype(dt)
    out = launch(lib, KERNEL[dt], params(op=17, repeat=1, mask0=mask, lenA=perrep, lenD=2 * perrep), a,
                 region(rng, U32), d)
    np.testing.assert_allclose(out[:perrep].astype(np.float64), ref[:perrep].astype(np.float64), rtol=2e-3)
    assert np.array_equal(out[perrep:], ref[perrep:])


@pytest.mark.parametrize("op,name", [(0, "Exp"), (1, "Ln")])
def test_bf16_exp_ln_are_rejected(lib, rng, op, name):
    bf = (rng.uniform(1, 2, REGION // 2).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    with pytest.raises(twin.TwinError, match=f"{name}: bfloat16_t arithmetic is not supported"):
        launch(lib, "unary_bf16", params(op=op, count=64, lenA=64, lenD=64), bf, bf.copy(), bf.copy())
