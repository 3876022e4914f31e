"""The scalar data cache (DCache) on the twin: GlobalTensor::GetValue/SetValue go through a per-core cache of 64-byte
lines; a missing DataCacheCleanAndInvalid / DataSyncBarrier is reported, not silently turned into stale data. Models
follow the DataCacheCleanAndInvalid, GetValue/SetValue, WriteGmByPassDCache and gm_by_dcache example pages."""
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "sync" / "dcache.cpp"
L = 40
CASE = {"poll": 1, "false_share": 2, "own_dma": 3, "dirty_dma": 4, "bypass": 5, "partial": 6, "miss_cost": 7}


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNEL)


def run(lib, case, blocks, variant=0, x=None, work=None, flags=None, out=None, kernel_type="mix_aiv_1_0", trace=False):
    x = np.zeros(blocks * L, np.float32) if x is None else x
    work = np.zeros(blocks * L, np.float32) if work is None else work
    flags = np.zeros(blocks * 16, np.int32) if flags is None else flags
    out = np.zeros(L, np.float32) if out is None else out
    p = np.array([CASE[case], variant, 0, 0, 0, 0, 0, 0], np.int32)
    lib.launch("dcache_case", blocks, p, x, work, flags, out, kernel_type=kernel_type, trace=trace)
    return x, work, flags, out


@pytest.mark.parametrize("variant", [0, 4])
def test_gm_flag_polling(lib, rng, variant):
    blocks = 3
    x = np.zeros(blocks * L, np.float32)
    x[:] = rng.standard_normal(blocks * L)
    _, work, flags, out = run(lib, "poll", blocks, variant, x=x)
    rows = 3.0 * x.reshape(blocks, L).astype(np.float64)
    np.testing.assert_allclose(out, rows.sum(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(flags.reshape(blocks, 16)[:, 0], np.arange(1, blocks + 1))


def test_polling_without_invalidate_is_reported(lib, rng):
    with pytest.raises(twin.TwinError, match=r"\[AIV 0 \(block 0, sub 0\)\] GlobalTensor::GetValue: GM buffer "
                                             r"'argument 3' byte (64|128) changed in GM \(another core or a DMA wrote "
                                             r"it\) since this core's DCache cached its line.*call "
                                             r"DataCacheCleanAndInvalid"):
        run(lib, "poll", 3, 1)


def test_writer_that_never_cleans_is_reported(lib, monkeypatch):
    monkeypatch.setenv("NPU_TWIN_DCACHE_SPIN_S", "0.3")
    with pytest.raises(twin.TwinError, match=r"\[AIV 0 \(block 0, sub 0\)\] GlobalTensor::GetValue: has read GM "
                                             r"buffer 'argument 3' byte 64 for 0\.\d s while AIV 1 \(block 1, sub 0\) "
                                             r"holds it dirty in its DCache.*DataCacheCleanAndInvalid after the SetValue"):
        run(lib, "poll", 3, 2)


def test_flag_set_before_the_dma_finished_is_a_hazard(lib, rng):
    # The writer's scalar pipe never waited for its MTE3 copy, so seeing the flag does not order the reader's read.
    x = np.zeros(3 * L, np.float32)
    x[:] = rng.standard_normal(3 * L)
    with pytest.raises(twin.TwinError, match=r"\[AIV 0 .*DataCopy: pipe hazard: DataCopy \(pipe MTE2\) reads GM "
                                             r"buffer 'argument 2' .* that DataCopy on AIV [12] .*\(pipe MTE3, bytes \[\d+, \d+\)\) wrote"):
        run(lib, "poll", 3, 3, x=x)


def test_false_sharing_of_a_line(lib):
    with pytest.raises(twin.TwinError, match=r"DataCacheCleanAndInvalid: writing this core's dirty DCache line back "
                                             r"would overwrite GM buffer 'argument 3' byte [04], which another core"):
        run(lib, "false_share", 2, 0)
    flags = run(lib, "false_share", 2, 1)[2]  # 64 bytes apart
    assert flags[0] == 100 and flags[16] == 101
    flags = run(lib, "false_share", 2, 2)[2]  # WriteGmByPassDCache writes 4 bytes, not the line
    assert flags[0] == 100 and flags[1] == 101


def test_stale_line_after_own_dma(lib, rng):
    x = np.zeros(L, np.float32)
    x[:] = rng.standard_normal(L)
    work = np.zeros(L, np.float32)
    work[:] = rng.standard_normal(L)
    w0 = work[0]
    with pytest.raises(twin.TwinError, match=r"GlobalTensor::GetValue: GM buffer 'argument 2' byte 0 changed in GM"):
        run(lib, "own_dma", 1, 0, x=x, work=work.copy(), kernel_type="aiv")
    out = run(lib, "own_dma", 1, 1, x=x, work=work, kernel_type="aiv")[3]
    assert out[0] == w0 and out[1] == x[0]


def test_dma_into_a_dirty_line(lib):
    with pytest.raises(twin.TwinError, match=r"DataCopy/Fixpipe to GM: writes GM buffer 'argument 2' byte 32, which "
                                             r"this core holds in a dirty DCache line"):
        run(lib, "dirty_dma", 1, 0, kernel_type="aiv")
    work = run(lib, "dirty_dma", 1, 1, kernel_type="aiv")[1]
    assert work[3] == -1.0


def test_bypass_writes_and_reads(lib, rng):
    with pytest.raises(twin.TwinError, match=r"WriteGmByPassDCache: writes GM buffer 'argument 2' byte 4, which this "
                                             r"core holds in a dirty DCache line"):
        run(lib, "bypass", 1, 0, kernel_type="aiv")
    with pytest.raises(twin.TwinError, match=r"WriteGmByPassDCache: GM buffer 'argument 2' byte 4: its DCache line "
                                             r"was written back by DataCacheCleanAndInvalid with no "
                                             r"DataSyncBarrier<MemDsbT::DDR> since"):
        run(lib, "bypass", 1, 1, kernel_type="aiv")
    w = run(lib, "bypass", 1, 2, kernel_type="aiv")[1].view(np.int32)
    assert w[0] == 7 and w[1] == 9
    x = np.zeros(L, np.float32)
    x[:] = rng.standard_normal(L)
    out = run(lib, "bypass", 1, 3, x=x, kernel_type="aiv")[3]  # the bypass read sees the DMA's bytes
    assert out[0] == np.float32(x.view(np.int32)[0])


def test_partial_line_clean(lib):
    # SINGLE_CACHE_LINE from an address 32 bytes into a line cleans only up to the line end.
    with pytest.raises(twin.TwinError, match=r"DataCopy/Fixpipe to GM: writes GM buffer 'argument 2' byte 96, which "
                                             r"this core holds in a dirty DCache line"):
        run(lib, "partial", 1, 0, kernel_type="aiv")
    work = run(lib, "partial", 1, 1, kernel_type="aiv")[1]
    np.testing.assert_array_equal(work[8:24].view(np.uint64), 1000 + np.arange(8))


def test_scalar_reads_that_miss_pay_the_miss_latency(lib, rng):
    # The twin marks a GetValue whose line was not cached (first touch, or after DataCacheCleanAndInvalid) and the
    # cost model charges it scalar.dcache.miss on top of scalar.op; a hit on the same line pays scalar.op alone.
    from npu_flash_attn import _C
    from npu_flash_attn.tools import profiler
    work = rng.standard_normal(L).astype(np.float32)
    _, _, _, out = run(lib, "miss_cost", 1, work=work.copy(), trace=True)
    np.testing.assert_array_equal(out[:3], [work[0], work[1], work[0]])
    reads = [r for r in lib.last_trace()[0]["records"] if r["op"] == "GlobalTensor::GetValue"]
    # prm[0] (miss), prm[1] (hit), work[0] (miss), work[1] (hit), work[0] after the invalidate (miss)
    assert [r["dc_miss"] for r in reads] == [True, False, True, False, True]
    miss = {r["key"]: r["value"] for r in _C.cost_params("Ascend910B2")}["scalar.dcache.miss"]
    base = profiler.model_trace(lib, "Ascend910B2")
    slow = profiler.model_trace(lib, "Ascend910B2", overrides={"scalar.dcache.miss": miss + 1000})
    assert slow["cycles"] - base["cycles"] == pytest.approx(3 * 1000)
