"""Source/destination address overlap of the vector APIs (docs/zh/api/SIMD-API/通用说明和约束.md, 通用地址重叠约束;
Cast.md): within one repeat a source may share bytes with the destination only by covering exactly the same bytes
(100% overlap, so same-width operands), or as a narrowing Cast starting at its source's address; a repeat's destination must not overlap a later repeat's source, except dst
and src1 of Add/Sub/Mul/Max/Min/AddRelu/SubRelu (half, int32_t, float) with src1RepStride or dstRepStride 0."""
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "vector" / "overlap.cpp"
CORE0 = r"\[AIV 0 \(block 0, sub 0\)\] "


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNEL)


def run(lib, rng, kase, n=0, off=0, rep=0, x=None):
    x = rng.standard_normal(512).astype(np.float32) if x is None else x
    y = rng.standard_normal(512).astype(np.float32)
    z = np.zeros(512, np.float32)
    lib.launch("overlap", 1, x, y, z, np.array([kase, n, off, rep, 0, 0, 0, 0], np.int32), kernel_type="aiv")
    return x, y, z


@pytest.mark.parametrize("kase", [0, 1], ids=["dst_is_src0", "dst_is_src1"])
def test_in_place_add_is_allowed(lib, rng, kase):
    x, y, z = run(lib, rng, kase, n=256)
    np.testing.assert_array_equal(z[:256], x[:256] + y[:256])
    np.testing.assert_array_equal(z[256:], x[256:])


@pytest.mark.parametrize("off", [8, 16, 56])
def test_partial_overlap_within_a_repeat_is_refused(lib, rng, off):
    with pytest.raises(twin.TwinError, match=CORE0 + rf"Add: dst \(UB byte {4 * off}, 4-byte elements\) and src0 "
                       rf"\(UB byte 0, 4-byte elements\) partially overlap in repeat 0 "
                       rf"\(dst bytes \[{4 * off}, {4 * off + 256}\), src0 bytes \[0, 256\)\)"):
        run(lib, rng, 2, n=256, off=off)


def test_destination_feeding_a_later_repeat_is_refused(lib, rng):
    # Exp(t[64], t, 128): repeat 0 writes bytes [256, 512), which repeat 1 reads as its source.
    with pytest.raises(twin.TwinError, match=CORE0 + r"Exp: dst of repeat 0 writes UB byte 256, which src \(UB byte 0\) "
                       r"reads in the later repeat 1"):
        run(lib, rng, 3, n=128, off=64)


def test_destination_behind_the_source_is_allowed(lib, rng):
    # Exp(t, t[64], 128): every repeat reads bytes no earlier repeat wrote.
    x, _, z = run(lib, rng, 9, n=128, off=64)
    np.testing.assert_allclose(z[:128], np.exp(x[64:192]), rtol=1e-6)
    np.testing.assert_array_equal(z[128:], x[128:])


def test_cast_u8_to_half_onto_its_own_bytes_is_refused(lib, rng):
    # The official cross_core_set_wait_flag example (scenario 2) does this; Cast.md warns that narrow -> wide
    # conversions over overlapping addresses give wrong results.
    with pytest.raises(twin.TwinError, match=CORE0 + r"Cast: dst \(UB byte 0, 2-byte elements\) and src \(UB byte 0, "
                       r"1-byte elements\) partially overlap in repeat 0 \(dst bytes \[0, 256\), src bytes \[0, 128\)\)"):
        run(lib, rng, 4, n=256)


def test_cast_u8_to_half_apart_is_allowed(lib, rng):
    x = rng.integers(0, 256, 2048, dtype=np.uint8).view(np.float32)
    _, _, z = run(lib, rng, 5, n=256, x=x)
    np.testing.assert_array_equal(z[:256], x.view(np.uint8)[:256].astype(np.float32))


def test_cast_float_to_half_in_place_is_allowed(lib, rng):
    # Cast.md (约束说明) warns only of narrow -> wide overlap, and the general page lets an API's own page decide:
    # each repeat writes bytes its own or an earlier repeat has read (catlass's epilogues cast in place this way).
    n = 64 * int(rng.integers(1, 9))  # up to the 512 floats x fills
    x, _, z = run(lib, rng, 6, n=n)
    np.testing.assert_array_equal(z.view(np.float16)[:n], x[:n].astype(np.float16))
    np.testing.assert_array_equal(z[n // 2:], x[n // 2:])


def test_cast_float_to_half_shifted_onto_its_source_is_refused(lib, rng):
    with pytest.raises(twin.TwinError, match=CORE0 + r"Cast: dst \(UB byte 64, 2-byte elements\) and src \(UB byte 0, "
                       r"4-byte elements\) partially overlap in repeat 0"):
        run(lib, rng, 10, n=128, off=32)


def test_add_accumulating_into_src1_across_repeats_is_allowed(lib, rng):
    reps = int(rng.integers(2, 9))
    x, y, z = run(lib, rng, 7, rep=reps)
    acc = y[:64].copy()
    for r in range(reps):
        acc = x[r * 64:(r + 1) * 64] + acc
    np.testing.assert_array_equal(z[:64], acc)
    np.testing.assert_array_equal(z[64:], y[64:])


def test_div_accumulating_into_src1_across_repeats_is_refused(lib, rng):
    # Div is not among the APIs the exemption names.
    with pytest.raises(twin.TwinError, match=CORE0 + r"Div: dst of repeat 0 writes UB byte 4096, which src1 \(UB byte "
                       r"4096\) reads in the later repeat 2"):
        run(lib, rng, 8, rep=3)
