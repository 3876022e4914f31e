"""The twin's pipe-hazard detector: pipes of one core are ordered only by SetFlag/WaitFlag (or queues / PIPE_ALL);
an access another pipe has not been ordered against raises, naming both instructions."""
import os
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "hazard" / "hazards.cpp"


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNEL)


def run(lib, case):
    x = np.random.uniform(-2, 2, 256).astype(np.float16)
    z = np.zeros_like(x)
    out = np.zeros(256, dtype=np.float32)
    params = np.array([case] + [0] * 7, dtype=np.int32)
    lib.launch("hazard_case", 1, x, z, out, params, kernel_type="mix")
    return x, z, out


@pytest.mark.parametrize("case", [0, 4, 5])
def test_synced_vector_pipelines_run(lib, case):
    x, z, _ = run(lib, case)
    np.testing.assert_array_equal(z, (x.astype(np.float32) * 2).astype(np.float16))


def test_synced_cube_pipeline_runs(lib):
    x, _, out = run(lib, 10)
    a = x.astype(np.float32).reshape(16, 16)
    # The same Nz tile feeds L0A (Zz) and L0B (Zn), so the product is A * A^T.
    np.testing.assert_allclose(out.reshape(16, 16), a @ a.T, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("case, pattern", [
    (1, r"Muls \(pipe V\) (reads|writes) UB bytes \[0, 512\) that DataCopy \(pipe MTE2, bytes \[0, 512\)\) wrote"),
    (2, r"DataCopy \(pipe MTE3\) reads UB bytes \[0, 512\) that Muls \(pipe V, bytes \[0, 512\)\) wrote"),
    (3, r"DataCopy \(pipe MTE2\) writes UB bytes \[0, 512\) that DataCopy \(pipe MTE3, bytes \[0, 512\)\) may still be reading"),
    (11, r"LoadData\(L1->L0\) \(pipe MTE1\) reads L1 bytes \[0, 512\) that DataCopy\(GM->L1, Nd2NzParams\) \(pipe MTE2, bytes \[0, 512\)\) wrote"),
    (12, r"Mmad \(pipe M\) reads L0A bytes \[0, 512\) that LoadData\(L1->L0\) \(pipe MTE1, bytes \[0, 512\)\) wrote"),
    (13, r"Fixpipe\(L0C->GM\) \(pipe FIX\) reads L0C bytes \[0, 1024\) that Mmad \(pipe M, bytes \[0, 1024\)\) wrote"),
])
def test_missing_ordering_is_reported(lib, case, pattern):
    with pytest.raises(twin.TwinError, match=r"pipe hazard: " + pattern):
        run(lib, case)
    # The process survives and the next launch works.
    run(lib, 0)


def test_cross_core_gm_hand_over_needs_the_flag_on_the_writing_pipe(lib):
    x, z, out = run(lib, 20)
    np.testing.assert_array_equal(z, x)
    np.testing.assert_array_equal(out.view(np.float16)[:256], x)
    # A mode-1 flag issued on PIPE_V does not wait for AIV 0's MTE3 write of z: AIV 1's read races with it.
    with pytest.raises(twin.TwinError, match=r"AIV 1 \(block 0, sub 1\)\] DataCopy: pipe hazard: DataCopy \(pipe MTE2\) "
                       r"reads GM buffer 'argument 1' bytes \[0, 512\) that DataCopy on AIV 0 \(block 0, sub 0\) "
                       r"\(pipe MTE3, bytes \[0, 512\)\) wrote"):
        run(lib, 21)


def test_cross_core_set_orders_only_its_own_pipe(lib):
    # Both AIVs read `out` on MTE2 and signal the AIC with CrossCoreSetFlag<2, PIPE_MTE3>; the AIC's Fixpipe then
    # overwrites `out`. The MTE3 set does not wait for the MTE2 read: a write-after-read naming both accesses.
    with pytest.raises(twin.TwinError, match=r"\[AIC 0\] Fixpipe\(L0C->GM\): pipe hazard: Fixpipe\(L0C->GM\) \(pipe FIX\) "
                       r"writes GM buffer 'argument 2' bytes \[0, 64\) that DataCopy on AIV [01] \(block 0, sub [01]\) "
                       r"\(pipe MTE2, bytes \[0, 1024\)\) may still be reading .*; a CrossCoreSetFlag orders only the "
                       r"earlier work of the pipe it is issued on and what that pipe waited for: set it on PIPE_MTE2"):
        run(lib, 22)
    # Legal: the set on the reading pipe, or MTE3 ordered after MTE2 (a flag, or a PIPE_ALL barrier) before the set.
    for case in (23, 24, 25):
        x, _, out = run(lib, case)
        a = x.astype(np.float32).reshape(16, 16)
        np.testing.assert_allclose(out.reshape(16, 16), a @ a.T, rtol=1e-3, atol=1e-3)


def test_hazard_checks_can_be_switched_off(lib, monkeypatch):
    monkeypatch.setenv("NPU_TWIN_HAZARDS", "0")
    run(lib, 1)  # unordered, but not checked
    monkeypatch.setenv("NPU_TWIN_HAZARDS", "1")
    with pytest.raises(twin.TwinError, match="pipe hazard"):
        run(lib, 1)


def test_m_mte1_ids_kept_by_tpipe_are_refused(lib):
    with pytest.raises(twin.TwinError, match=r"\[AIC 0\] SetFlag: HardEvent::M_MTE1 ID 1 is reserved by TPipe"):
        lib.launch("reserved_event_id", 1, np.zeros(8, dtype=np.float32), kernel_type="mix")
