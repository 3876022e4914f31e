"""int4b_t on the twin: two signed 4-bit elements per byte, element 2k in the low nibble of byte k and 2k+1 in its
high nibble (LocalTensor/GlobalTensor GetValue/SetValue of the dav-2201 headers), element counts at 4 bits each, and
the twin's refusals where the NPU would silently misbehave (odd offsets are halved to the even neighbour; DataCopy
and DataCopyPad do not list int4b_t for Atlas A2) or where the twin does not model b4 data (LoadData, Nd2Nz).

One kernel source (kernels/memory/int4.cpp), params[0] picks the case.
"""
import re
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "memory" / "int4.cpp"
NB, NV, NSET = 160, 512, 37
E = 2 * NB
CORE0 = r"^\[AIV 0 \(block 0, sub 0\)\] "


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNEL)


def unpack(b):
    """Packed bytes -> signed int4 values: low nibble first, two's complement."""
    n = np.stack([b & 0xF, b >> 4], axis=1).reshape(-1).astype(np.int32)
    return np.where(n >= 8, n - 16, n)


def pack(vals):
    u = (np.asarray(vals, dtype=np.int64) & 0xF).astype(np.uint8)
    return (u[0::2] | (u[1::2] << 4)).astype(np.uint8)


def run(lib, case, p1=0, p2=0, a=None, v=None, gset=None, kernel_type="aiv"):
    rng = np.random.default_rng()
    a = rng.integers(0, 256, NB, dtype=np.uint8) if a is None else a
    v = rng.integers(-8, 8, E).astype(np.int32) if v is None else v
    gset = rng.integers(0, 256, NB, dtype=np.uint8) if gset is None else gset
    packed = np.zeros(NB, np.uint8)
    res = np.zeros(NV, np.int32)
    params = np.array([case, p1, p2, 0, 0, 0, 0, 0], np.int32)
    lib.launch("int4_case", 1, params, a, v, packed, res, gset, kernel_type=kernel_type)
    return packed, res, gset


def test_int4_tensors_match_the_packed_nibble_model(lib, rng):
    a = rng.integers(0, 256, NB, dtype=np.uint8)
    v = rng.integers(-8, 8, E).astype(np.int32)
    g0 = rng.integers(0, 256, NB, dtype=np.uint8)
    off = int(rng.integers(1, (E - NSET) // 2)) * 2  # even element offset
    w = int(rng.integers(-60, 61))
    packed, res, gset = run(lib, 0, off, w, a=a, v=v, gset=g0.copy())

    ref = unpack(a)
    np.testing.assert_array_equal(res[:E], ref)  # LocalTensor::GetValue
    wrapped = ((w + 8) % 16) - 8
    cmp_bits = 1 + 2 + 4 + 0 + 16 + 0  # -3<2, 7>-8, 5==-11 (same nibble), not -1<=-2, -8>=-8, not 3!=3
    expect = [E, E, NB, E, NB, E - off, ref[off + 1], ref[off + 1], ref[off + 1], wrapped, w & 0xF, -3, cmp_bits,
              E - 64, NB - 32, 128, 64, ref[64 + 3], 192, 96]
    np.testing.assert_array_equal(res[E:E + 20], expect)
    np.testing.assert_array_equal(packed, pack(v))  # LocalTensor::SetValue, both nibble orders

    want = unpack(g0)
    want[off:off + NSET] = v[off:off + NSET]  # GlobalTensor::SetValue through operator[]
    np.testing.assert_array_equal(gset, pack(want))


ODD = r"is odd: int4b_t elements are packed two per byte, so it must be even"
NOT_A2 = r"int4b_t is not a supported dtype on dav-2201 \(Atlas A2: int8_t to double\)"

NEGATIVE = [
    (1, 7, r"LocalTensor::operator\[\]: offset 7 " + ODD),
    (2, 5, r"GlobalTensor::operator\[\]: offset 5 " + ODD),
    (3, 3, r"LocalTensor::GetPhyAddr: offset 3 " + ODD),
    (4, 9, r"GlobalTensor::GetPhyAddr: offset 9 " + ODD),
    (5, 101, r"LocalTensor::SetSize: size 101 " + ODD),
    (6, 65, r"TBuf::Get: len 65 " + ODD),
    (7, 33, r"TBuf::GetWithOffset: size 33 " + ODD),
    (8, E, rf"LocalTensor::GetValue: index {E} is past the tensor's {E} elements"),
    (9, E + 1, rf"LocalTensor::SetValue: index {E + 1} is past the tensor's {E} elements"),
    (10, E, rf"GlobalTensor::GetValue: access of 1 elements at element {E} is outside the GlobalTensor's declared "
            rf"size {E}"),
    (11, 4, r"GlobalTensor::operator\(\): int4b_t elements are packed two per byte; use GetValue/SetValue"),
    (12, 65, r"LocalTensor\(TPosition, addr, tileSize\): tensor length 33 bytes is not a positive multiple of 32"),
    (13, 64, r"DataCopy: " + NOT_A2),
    (13, 10, r"DataCopy: " + NOT_A2),  # rounds down to 0 bytes: still refused
    (14, 128, r"DataCopy: " + NOT_A2),
    (15, 0, r"DataCopy: " + NOT_A2),
    (16, 0, r"DataCopy: " + NOT_A2),
    (17, 0, r"DataCopy\(UB->UB\): " + NOT_A2),
    (18, 40, r"DataCopyPad\(GM->UB\): " + NOT_A2),
    (19, 40, r"DataCopyPad\(UB->GM\): " + NOT_A2),
    (20, 0, r"DataCopy\(GM->UB, SliceInfo\): dst is an int4b_t tensor, which the twin does not model for this API"),
]

# The docs list b4 (int4b_t) for Nd2Nz and LoadData L1 -> L0A/L0B only (the cube path: tests/test_twin_cube_apis.py);
# GM -> L0 is refused, and a transposed square of four fractals does not fit a 1 KB L0B tensor.
NEGATIVE_AIC = [
    (30, r"DataCopy\(GM->L1\): " + NOT_A2),
    (31, r"DataCopy\(L1->GM\): " + NOT_A2),
    (34, r"LoadData\(GM->L0/L1\): int4b_t \(b4\) data is not supported or not modelled on this path"),
    (35, r"LoadDataWithTranspose: dst: iteration 0 writes fractal 2, past the tensor's 2 fractals"),
]


def test_int4_misuse_is_refused(lib):
    for case, p1, pattern in NEGATIVE:
        with pytest.raises(twin.TwinError) as ei:
            run(lib, case, p1)
        assert re.search(CORE0 + pattern, str(ei.value)), (case, str(ei.value))
    for case, pattern in NEGATIVE_AIC:
        with pytest.raises(twin.TwinError) as ei:
            run(lib, case, kernel_type="aic")
        assert re.search(r"^\[AIC 0\] " + pattern, str(ei.value)), (case, str(ei.value))


def test_int4_cube_loads_pass(lib):
    for case in (32, 33):  # ND2NZ as bytes, one 16 x 64 fractal L1 -> L0A
        run(lib, case, kernel_type="aic")


def test_int4_even_offsets_and_in_range_indices_pass(lib):
    # The boundary values next to each refusal above run cleanly.
    for case, p1 in [(1, 8), (2, 6), (3, 4), (4, 10), (5, 100), (6, 64), (7, 32), (8, E - 1), (9, E - 1),
                     (10, E - 1), (12, 64)]:
        run(lib, case, p1)
