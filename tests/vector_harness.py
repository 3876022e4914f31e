"""Host side of the vector test kernels (tests/kernels/vector/region_harness.h, used by vector_api.cpp and
vector_more.cpp): the GM parameter block, the three 60 KB UB regions (src0, src1, dst), dtype helpers and the
documented element selection / addressing of the vector APIs, shared by test_twin_vector.py and
test_twin_vector_more.py."""
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KDIR = Path(__file__).resolve().parent / "kernels" / "vector"
REGION = 60 * 1024  # bytes per UB region (kRegion)

FIELDS = ["op", "form", "count", "repeat", "mask0", "mask1", "dstBlk", "s0Blk", "s1Blk", "dstRep", "s0Rep", "s1Rep",
          "offD", "offA", "offB", "lenD", "lenA", "lenB", "gD", "gA", "gB", "extra", "extra2", "scalarBits", "extra3"]

F32, F16, S16, S32, U16, U32 = np.float32, np.float16, np.int16, np.int32, np.uint16, np.uint32
BF16 = "bf16"  # raw uint16 bits on the host

# call forms (struct Prm's form) that select elements by count: 0 count, 4 register counter mode, 5 counter mode
# with mask[] = {count, 0}, 8 count form under counter mode
COUNTER_FORMS = (0, 4, 5, 8)


def compile_vector_kernel(name):
    """Compiles KDIR/name (which includes region_harness.h) against the twin."""
    return twin.compile_kernel(KDIR / name, opt="-O1")


def host(dt):
    return np.uint16 if dt is BF16 else dt


def size_of(dt):
    return np.dtype(host(dt)).itemsize


def _int64(v):
    return np.array([int(v) & ((1 << 64) - 1)], np.uint64).view(np.int64)[0]


def params(**kw):
    """The parameter block: FIELDS by name, 0 for the others; values are taken modulo 2**64."""
    vals = [_int64(kw.pop(f, 0)) for f in FIELDS]
    assert not kw, f"unknown fields {kw}"
    return np.array(vals, np.int64)


def setp(p, **kw):
    """Sets fields of the parameter block p in place; returns p."""
    for k, v in kw.items():
        p[FIELDS.index(k)] = _int64(v)
    return p


def scalar_bits(v, dt):
    a = np.array([v], host(dt))
    return int(a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])[0])


def region(rng, dt, lo=-4.0, hi=4.0):
    """Random contents of one UB region (REGION bytes) of type dt, values in [lo, hi]."""
    n = REGION // size_of(dt)
    if dt in (F32, F16):
        return rng.uniform(lo, hi, n).astype(dt)
    if dt is BF16:
        return (rng.uniform(lo, hi, n).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, int(lo)), min(info.max, int(hi)) + 1, n, dtype=dt)


@pytest.fixture
def poison_unchecked(monkeypatch):
    """For cases that store UB bytes the API under test left unwritten, to show it left them: the poison rule
    (test_twin_poison.py) would refuse that store."""
    monkeypatch.setenv("NPU_TWIN_POISON_CHECK", "0")


def launch(lib, kernel, p, a, b, d, **kw):
    """Runs one case; a, b, d are the three UB regions' contents (REGION bytes each); returns d after the call."""
    p = setp(p.copy(), gA=a.nbytes, gB=b.nbytes, gD=d.nbytes)
    lib.launch(kernel, 1, p, a, b, d, **kw)
    return d


def assert_misuse_reported(lib, kernel, rng, op, msg, fields):
    """Runs misuse case `op` of `kernel` on float regions with 4096-element operands (`fields` set or override
    fields) and checks that the twin reports `msg` on AIV 0."""
    kw = dict(op=op, lenA=4096, lenB=4096, lenD=4096)
    kw.update(fields)
    with pytest.raises(twin.TwinError, match=msg) as ei:
        launch(lib, kernel, params(**kw), region(rng, F32), region(rng, F32), region(rng, F32))
    assert "AIV 0" in str(ei.value)


# ---- the documented element selection and addressing ----
def bits_of(m0, m1, perrep):
    """The bitwise mask {mask1, mask0} as a bool per element of a repeat."""
    return np.array([((m0 >> e) if e < 64 else (m1 >> (e - 64))) & 1 for e in range(perrep)], bool)


def lenbits(n):
    """(low, high) words of a mask with the first n bits set."""
    lo = (1 << 64) - 1 if n >= 64 else (1 << n) - 1
    hi = (1 << 64) - 1 if n >= 128 else ((1 << (n - 64)) - 1 if n > 64 else 0)
    return lo, hi


def selection(perrep, form, count=0, repeat=0, mask0=0, mask1=0):
    """(repeat, element) index arrays of the elements a call processes."""
    if form in COUNTER_FORMS:
        i = np.arange(count)
        return i // perrep, i % perrep
    if form in (1, 3):
        bits = bits_of(mask0, mask1, perrep)
    else:  # continuous: the first `mask` elements, clamped to a repeat
        bits = np.arange(perrep) < min(mask0, perrep)
    e = np.nonzero(bits)[0]
    return np.repeat(np.arange(repeat), len(e)), np.tile(e, repeat)


def index(r, e, size, blk, rep):
    """Element index (relative to the operand start) of element e of repeat r."""
    epb = 32 // size
    return (r * rep * 32 + (e // epb) * blk * 32 + (e % epb) * size) // size


def span(idx):
    return int(idx.max()) + 1 if idx.size else 0


def random_mask(rng, perrep, form, more=()):
    """Random mask for a form: bitwise (forms 1, 3; the high word must be ignored for 32-bit types) or continuous,
    often one of a few edge values (plus `more`)."""
    if form in (1, 3):
        m0 = int(rng.integers(0, 1 << 63)) * 2 + int(rng.integers(0, 2))
        m1 = int(rng.integers(0, 1 << 63)) * 2 + int(rng.integers(0, 2))
        if rng.random() < 0.2:
            m0 = m1 = (1 << 64) - 1
        return m0, m1
    choices = [1, 7, perrep - 3, perrep, 64, 100, 200, *more]
    return int(rng.choice(choices) if rng.random() < 0.6 else rng.integers(1, perrep + 1)), 0


def case_params(c, sizes=None, **fields):
    """Parameter block and the (dst, src...) element indices (inside their regions) of a case c: form, count, repeat,
    mask0, mask1 and per operand (dst, src...) lists blk, rep, off. sizes = element sizes of the operands (default
    c["sizes"]); `fields` set or override fields of the block."""
    sizes = sizes or c["sizes"]
    n = len(sizes)
    perrep = 256 // max(sizes)
    r, e = selection(perrep, c["form"], c["count"], c["repeat"], c["mask0"], c["mask1"])
    idx = [index(r, e, sizes[k], c["blk"][k], c["rep"][k]) for k in range(n)]
    blk, rep, off = c["blk"] + [1] * (3 - n), c["rep"] + [8] * (3 - n), c["off"] + [0] * (3 - n)
    lens = [span(i) for i in idx] + [0] * (3 - n)
    kw = dict(form=c["form"], count=c["count"], repeat=c["repeat"], mask0=c["mask0"], mask1=c["mask1"],
              dstBlk=blk[0], s0Blk=blk[1], s1Blk=blk[2], dstRep=rep[0], s0Rep=rep[1], s1Rep=rep[2], offD=off[0],
              offA=off[1], offB=off[2], lenD=lens[0], lenA=lens[1], lenB=lens[2])
    kw.update(fields)
    return params(**kw), [off[k] + idx[k] for k in range(n)]
