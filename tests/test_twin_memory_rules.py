"""Memory rules where the twin once was stricter than Huawei's own kernels (twin/include/twin/memory/core_mem.h,
cube/data_copy.h Nd2NzRuns), and the small APIs LocalTensor::SetAddr and SetSyncBaseAddr.

- Allocating a buffer is address arithmetic: every core may allocate every memory (catlass's Arch::Resource, the
  official matmul + GELU example); reading or writing a memory the core lacks is refused.
- Capacities: a TPipe may hand out all 512 KB of L1 and 7 KB of Fixpipe Buffer addresses (CANN's own TPipe bound);
  only the documented 2 KB of Fixpipe Buffer can be accessed, and touching the top 256 B of UB or L1, which the
  framework keeps in a Cube+Vector kernel (NPU架构版本2201.md, "各存储单元的参数规格"), is a warning.
- ND -> NZ copies are judged by the 32 B rows they write, strided copies by their blocks, so copies whose spans
  interleave are legal.
"""
import re
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "memory" / "core_rules.cpp"
N = 256
L1, FB_ALLOC, FB = 512 * 1024, 7 * 1024, 2048


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNEL)


def prm(*v):
    p = np.zeros(8, np.int32)
    p[:len(v)] = v
    return p


def halves(rng, n):
    return rng.standard_normal(n).astype(np.float16)


def test_every_core_allocates_every_memory_and_uses_its_own(lib, rng):
    x = halves(rng, N)
    y = np.full(3 * N, np.nan, np.float16)
    lib.launch("both_kinds", 1, x, y, prm(0), kernel_type="mix")
    np.testing.assert_array_equal(y, np.tile(x, 3))  # the AIC's L1 copy and both AIVs' UB copies


@pytest.mark.parametrize("kase,msg", [
    (1, r"\[AIV \d \(block 0, sub \d\)\] DataCopy\(GM->L1\): cube/L1/L0 API called on a vector core"),
    (2, r"\[AIC 0\] DataCopy: vector/UB API called on the cube core"),
])
def test_access_to_a_memory_the_core_lacks_is_refused(lib, rng, kase, msg):
    with pytest.raises(twin.TwinError, match=msg):
        lib.launch("both_kinds", 1, halves(rng, N), np.zeros(3 * N, np.float16), prm(kase), kernel_type="mix")


CAPACITY = [  # (memory index in `capacity`, bytes a TPipe may hand out, name in the message)
    (0, L1, "L1"), (1, 64 * 1024, "L0A"), (2, 64 * 1024, "L0B"), (3, 128 * 1024, "L0C"), (4, 1024, "BT"),
    (5, FB_ALLOC, "FB"), (6, 192 * 1024, "UB"),
]


@pytest.mark.parametrize("m,cap,name", CAPACITY, ids=[c[2] for c in CAPACITY])
def test_capacity_at_the_limit(lib, m, cap, name):
    lib.launch("capacity", 1, prm(m, cap), kernel_type="mix")  # exactly the capacity, on all three cores
    with pytest.raises(twin.TwinError, match=rf"TPipe::InitBuffer: {name} exhausted: 1 x {cap + 32} bytes requested "
                       rf"at offset 0, usable capacity {cap} bytes"):
        lib.launch("capacity", 1, prm(m, cap + 1), kernel_type="mix")  # one byte more (32 B after alignment)


def test_fixpipe_buffer_access_stops_at_2kb(lib, rng):
    w = rng.integers(0, 2**62, 256, dtype=np.uint64)
    lib.launch("fb_copy", 1, w, prm(0), kernel_type="mix")  # 2048 bytes at FB byte 0: the whole buffer
    at = 128 * int(rng.integers(1, (FB_ALLOC - FB) // 128 + 1))
    with pytest.raises(twin.TwinError, match=rf"\[AIC 0\] DataCopy\(L1->FB\): writes FB bytes \[{at}, {at + FB}\), "
                       rf"past the {FB} bytes an instruction may touch"):
        lib.launch("fb_copy", 1, w, prm(at), kernel_type="mix")


def test_top_of_l1_in_a_cube_vector_kernel_warns(lib, rng):
    x = halves(rng, N)
    y = np.zeros(N, np.float16)
    lib.launch("l1_at", 1, x, y, prm(L1 - 256 - 2 * N), kernel_type="mix")  # ends where the reserve starts
    np.testing.assert_array_equal(y, x)
    assert lib.last_warnings() == []
    with pytest.warns(twin.TwinWarning):
        lib.launch("l1_at", 1, x, y, prm(L1 - 2 * N), kernel_type="mix")
    np.testing.assert_array_equal(y, x)
    tail = rf"the top 256 B of L1, bytes \[{L1 - 256}, {L1}\), which the Ascend C framework keeps in Cube\+Vector"
    got = lib.last_warnings()
    assert len(got) == 2 and re.match(r"\[AIC 0\] DataCopy\(GM->L1\): writes " + tail, got[0]), got
    assert re.match(r"\[AIC 0\] DataCopy\(L1->GM\): reads " + tail, got[1]), got
    lib.launch("l1_at", 1, x, y, prm(L1 - 2 * N), kernel_type="aic")  # a cube-only kernel has all of L1
    assert lib.last_warnings() == []


def nz(x):
    """The 32 x 32 ND matrix as one NZ tile: column block c (16 columns), row r at 32-byte unit c * 32 + r."""
    return x.reshape(32, 2, 16).transpose(1, 0, 2).reshape(-1)


def test_nd2nz_copies_with_interleaved_spans_and_disjoint_bytes(lib, rng):
    x = halves(rng, 32 * 32)
    y = np.zeros(32 * 32, np.float16)
    lib.launch("nd2nz", 1, x, y, prm(0), kernel_type="aic")  # even rows, then odd rows, into one tile
    np.testing.assert_array_equal(y, nz(x))


def test_nd2nz_copies_onto_the_same_bytes_are_a_hazard(lib, rng):
    with pytest.raises(twin.TwinError, match=r"DataCopy\(GM->L1, Nd2NzParams\): pipe hazard: .* writes L1 bytes "
                       r"\[0, 32\) .*no PipeBarrier<PIPE_MTE2>"):
        lib.launch("nd2nz", 1, halves(rng, 32 * 32), np.zeros(32 * 32, np.float16), prm(1), kernel_type="aic")


def test_nd2nz_column_blocks_interleaved_row_by_row(lib, rng):
    x = halves(rng, 32 * 32)
    y = np.zeros(32 * 32, np.float16)
    lib.launch("nd2nz", 1, x, y, prm(2), kernel_type="aic")
    np.testing.assert_array_equal(y, x)  # unit 2r + c holds row r, block c: the ND rows themselves


def test_nd2nz_rows_of_one_copy_on_the_same_bytes_are_refused(lib, rng):
    with pytest.raises(twin.TwinError, match=r"two destination rows overlap at dst byte 768 .*dstNzC0Stride 24"):
        lib.launch("nd2nz", 1, halves(rng, 32 * 32), np.zeros(32 * 32, np.float16), prm(3), kernel_type="aic")


def test_interval_copies_judged_by_their_blocks(lib, rng):
    x = halves(rng, 16 * 32)
    y = np.zeros(16 * 32, np.float16)
    lib.launch("interval_rows", 1, x, y, prm(0), kernel_type="aic")
    np.testing.assert_array_equal(y, x.reshape(16, 2, 16).transpose(1, 0, 2).reshape(-1))
    with pytest.raises(twin.TwinError, match=r"DataCopy\(GM->L1\): pipe hazard: .* writes L1 bytes \[0, 32\) .*"
                       r"no PipeBarrier<PIPE_MTE2>"):
        lib.launch("interval_rows", 1, x, y, prm(1), kernel_type="aic")


def test_set_addr_takes_another_tensors_place(lib, rng):
    x = rng.standard_normal(64).astype(np.float32)
    at = 32 * int(rng.integers(0, 8192 // 32 - 8))
    for kase in (0, 1):  # a tensor's address_, and a TBuffAddr filled by hand
        y = np.zeros(64, np.float32)
        lib.launch("set_addr", 1, x, y, prm(kase, at), kernel_type="aiv")
        np.testing.assert_array_equal(y, x)


def test_set_addr_past_ub_is_refused(lib, rng):
    with pytest.raises(twin.TwinError, match=r"LocalTensor::SetAddr: bufferAddr 196480 \+ dataLen 256 bytes runs past "
                       r"the 196608 bytes of UB"):
        lib.launch("set_addr", 1, np.zeros(64, np.float32), np.zeros(64, np.float32), prm(1, 192 * 1024 - 128),
                   kernel_type="aiv")


def test_set_addr_keeps_the_queue_buffer_lifetime(lib):
    with pytest.raises(twin.TwinError, match=r"tensor of queue buffer \d+ used after its TQue::FreeTensor"):
        lib.launch("set_addr", 1, np.zeros(64, np.float32), np.zeros(64, np.float32), prm(2, 0), kernel_type="aiv")


def test_set_sync_base_addr_is_traced_on_every_core(lib):
    lib.launch("sync_base", 1, np.zeros(8, np.uint64), kernel_type="mix", trace=True)
    cores = lib.last_trace()
    assert len(cores) == 3
    for c in cores:
        assert c["records"][0]["op"] == "SetSyncBaseAddr" and c["records"][0]["pipe"] == "S", c["core"]
