"""GM buffers of a standalone launch behave like aclrtMalloc memory (twin.py _DeviceView): every allocation the
arguments are views of starts 512-byte aligned, views keep their offsets, and what the kernel writes reaches the
caller's arrays. So a documented GM alignment rule (Fixpipe NZ output: 32 bytes, Fixpipe（L0C到GM数据搬运）.md) is
checked against the kernel's own offsets, not against numpy's allocator. Each allocation is followed by aclrtMalloc's
padding (size rounded up to 32 bytes, plus 32), which kernels may read and write."""
import ctypes
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "memory" / "placement.cpp"


def misaligned(n_floats, rem):
    """A float32 array that owns its memory (no ndarray base) at an address = rem (mod 512)."""
    raw = (ctypes.c_uint8 * (4 * n_floats + 1024))()
    off = (rem - ctypes.addressof(raw)) % 512
    a = np.frombuffer(raw, np.float32, n_floats, off)
    assert a.ctypes.data % 512 == rem
    return a


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNEL)


def test_unaligned_allocation_is_seen_aligned_and_written_back(lib, rng):
    rem = int(rng.integers(1, 32)) * 16
    a, b = misaligned(64, rem), misaligned(64, (rem + 16) % 512)
    a[:] = rng.uniform(1, 2, 64).astype(np.float32)
    before = a.copy()
    out = np.zeros(3, np.uint64)
    lib.launch("gm_where", 1, a, b, out, kernel_type="aiv")
    assert out[0] == 0  # a separate allocation starts 512-byte aligned, like aclrtMalloc memory
    assert out[2] == np.uint64(before[0] * np.float32(1000.0))  # the kernel read the caller's data
    assert a[1] == 7.0 and np.array_equal(a[2:], before[2:])  # and its write came back


def test_views_of_one_allocation_keep_their_offsets(lib, rng):
    base = misaligned(1024, 48)
    i, j = sorted(int(v) for v in rng.choice(512, 2, replace=False))
    out = np.zeros(3, np.uint64)
    lib.launch("gm_where", 1, base[i:i + 64], base[j:j + 64], out, kernel_type="aiv")
    assert out[0] == (4 * i) % 512  # the allocation starts aligned; the view keeps its offset in it
    assert out[1] == 4 * (j - i)
    assert base[i + 1] == 7.0


def test_fixpipe_nz_alignment_follows_the_kernels_offsets(lib, rng):
    a, b = rng.integers(4, 17, 2).astype(np.float32) / 8  # few mantissa bits: every partial sum is exact
    p = np.zeros(8, np.int32)
    p[0] = 2
    p[4:6] = np.array([a, b], np.float32).view(np.int32)
    c = misaligned(256, 16)  # 16-byte aligned as numpy arrays often are: fine, the kernel sees aclrtMalloc memory
    with pytest.warns(twin.TwinWarning):  # the kernel's L0C tile overrun (test_twin_bounds.py)
        lib.launch("l0c_overrun", 1, c, p, kernel_type="aic")
    np.testing.assert_array_equal(c, np.full(256, 16 * a * b, np.float32))
    big = misaligned(256 + 4, 0)
    with pytest.raises(twin.TwinError, match=r"Fixpipe.*an NZ destination in GM must be 32-byte aligned"):
        lib.launch("l0c_overrun", 1, big[4:], p, kernel_type="aic")  # 16 bytes into an allocation: misaligned


def test_acl_malloc_padding_rule():
    # The aclrtMalloc page: the size is rounded up to a multiple of 32 bytes, then 32 bytes are added.
    assert [twin.acl_malloc_bytes(n) for n in (1, 32, 33, 60, 64)] == [64, 64, 96, 96, 96]


@pytest.mark.parametrize("in_place", [False, True])
def test_reads_in_the_padding_after_a_buffer_are_legal(lib, rng, in_place):
    n, extra = 60, 4  # aclrtMalloc(60) holds 96 bytes
    buf = twin.gm_empty(n, np.uint8) if in_place else np.empty(n, np.uint8)
    buf[:] = rng.integers(0, 255, n, dtype=np.uint8)
    out = np.zeros(n + extra, np.uint8)
    lib.launch("gm_past_end", 1, buf, np.array([n, extra, 0, 0], np.int32), out, kernel_type="aiv")
    np.testing.assert_array_equal(out[:n], buf)
    assert (out[n:] == 0xFF).all()  # the padding holds no data of the caller's


def test_reads_past_the_padding_fail(lib, rng):
    n = 60
    buf = rng.integers(0, 255, n, dtype=np.uint8)
    out = np.zeros(n + 40, np.uint8)
    with pytest.raises(twin.TwinError, match=r"DataCopyPad\(GM->UB\): GM access of 100 bytes at byte 0 of buffer 'argument 0' "
                                             r"\(length 96 bytes\) runs 4 bytes past its end"):
        lib.launch("gm_past_end", 1, buf, np.array([n, 40, 0, 0], np.int32), out, kernel_type="aiv")


def test_padding_belongs_to_its_allocation_only(lib, rng):
    base = rng.integers(0, 255, 256, dtype=np.uint8)
    out = np.zeros(64, np.uint8)
    with pytest.raises(twin.TwinError, match=r"\(length 60 bytes\) runs 4 bytes past its end"):  # a view: no padding
        lib.launch("gm_past_end", 1, base[:60], np.array([60, 4, 0, 0], np.int32), out, kernel_type="aiv")


def test_writes_into_the_padding_stay_in_the_padding(lib, rng):
    n, extra = 60, 4
    raw = (ctypes.c_uint8 * 1024)()
    host = np.frombuffer(raw, np.uint8)
    host[:] = rng.integers(0, 255, host.size, dtype=np.uint8) & 0x7F  # never 0xFF
    before = host.copy()
    off = (16 - ctypes.addressof(raw)) % 512  # 16 bytes past an aclrtMalloc boundary: staged
    buf = np.frombuffer(raw, np.uint8, n, off)  # an allocation of n bytes whose neighbours are the caller's
    out = np.zeros(n + extra, np.uint8)
    lib.launch("gm_past_end", 1, buf, np.array([n, extra, 1, 0], np.int32), out, kernel_type="aiv")
    assert (out[n:] == 0xFF).all()  # the kernel wrote the padding it read back into the padding: legal
    np.testing.assert_array_equal(host, before)  # and none of it reached the caller's bytes after the buffer
