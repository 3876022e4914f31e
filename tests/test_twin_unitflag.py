"""L0C unit flags on the twin (Mmad计算关键特性说明/UnitFlag.md, the unitFlag rows of the Mmad and Fixpipe pages):
with unitFlag 2/3 on both sides, a Fixpipe may drain L0C while the Mmad still writes it, ordered by a flag per 512 B
block instead of SetFlag/WaitFlag between PIPE_M and PIPE_FIX. The twin accepts that ordering and reports every
way of breaking it: a Fixpipe waiting on a block no Mmad with unitFlag 3 completed, a missing flag on one side, an
Mmad waiting on a block no Fixpipe with unitFlag 3 drained.

Kernel: tests/kernels/cube/unitflag.cpp (one compile; int64 parameters choose the flags).
"""
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KSRC = Path(__file__).parent / "kernels" / "cube" / "unitflag.cpp"
P_M, P_N, P_K, P_ROUNDS, P_MMAD_LAST, P_MMAD_OTHER, P_FIX, P_FLAGS, P_FIX_FIRST = range(9)
SYNC_M_FIX, TWICE, SPLIT_N, ONLY_FIRST, RESET, SYNC_FIX_M, SECOND_PLAIN, READ_TWICE = 1, 2, 4, 8, 16, 32, 64, 128
M, N, K, ROUNDS = 32, 48, 64, 2


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KSRC, flags=["-O0"])


def run(lib, rng, mmad=(2, 3), fix=3, flags=0, fix_first=3, M=M):
    a = rng.integers(-4, 5, (M, K)).astype(np.float16)
    b = rng.integers(-4, 5, (N, K)).astype(np.float16)
    p = np.zeros(16, np.int64)
    p[[P_M, P_N, P_K, P_ROUNDS, P_MMAD_OTHER, P_MMAD_LAST, P_FIX, P_FLAGS, P_FIX_FIRST]] = (
        M, N, K, ROUNDS, mmad[0], mmad[1], fix, flags, fix_first)
    c = np.full(2 * M * N, np.nan, np.float32)
    lib.launch("unitflag_matmul", 1, a, b, c, p, kernel_type="aic")
    ref = (a.astype(np.float64) @ b.T.astype(np.float64)).astype(np.float32)
    return ref, c.reshape(2, M, N)


@pytest.mark.parametrize("flags", [0, TWICE, SPLIT_N, TWICE | SPLIT_N, SYNC_M_FIX])
def test_unit_flags_order_mmad_and_fixpipe(lib, rng, flags):
    """2 on the non-final Mmads, 3 on the last, 3 on each Fixpipe: no M <-> FIX flags needed, results exact."""
    ref, c = run(lib, rng, flags=flags)
    np.testing.assert_array_equal(c[0], ref)
    if flags & TWICE:  # the second round re-fills the tile the first Fixpipe drained
        np.testing.assert_array_equal(c[1], ref)


def test_tail_rows_drain_whole_fractals(lib, rng):
    """m = 20: the Fixpipe reads 4 rows of the second row of fractals and still frees all of it for the next Mmad."""
    ref, c = run(lib, rng, flags=TWICE, M=20)
    np.testing.assert_array_equal(c[0], ref)
    np.testing.assert_array_equal(c[1], ref)


def test_two_fixpipes_of_one_block_keep_then_clear(lib, rng):
    """Several Fixpipes reading one tile: 2 keeps it readable, the last one's 3 frees it for the next Mmad."""
    ref, c = run(lib, rng, flags=READ_TWICE, fix_first=2)
    np.testing.assert_array_equal(c[0], ref)
    np.testing.assert_array_equal(c[1], ref)  # the extra Fixpipe's copy
    # 3 on the first reader already frees the blocks: the second Fixpipe's wait cannot be met.
    with pytest.raises(twin.TwinError, match=r"unitFlag 3 reads L0C block 0 .* no Mmad with unitFlag 3 has set"):
        run(lib, rng, flags=READ_TWICE, fix_first=3)


def test_without_unit_flags_or_m_fix_sync_is_a_pipe_hazard(lib, rng):
    with pytest.raises(twin.TwinError, match=r"Fixpipe\(L0C->GM\): pipe hazard: .* reads L0C .* Mmad \(pipe M, bytes .*\) wrote"):
        run(lib, rng, mmad=(0, 0), fix=0)
    ref, c = run(lib, rng, mmad=(0, 0), fix=0, flags=SYNC_M_FIX)  # control: the usual flags
    np.testing.assert_array_equal(c[0], ref)


@pytest.mark.parametrize("mmad", [(2, 2), (0, 0)])
def test_fixpipe_waits_on_a_block_no_mmad_completed(lib, rng, mmad):
    """The final Mmad without 3 (all 2, or none at all): the Fixpipe's wait cannot be met."""
    with pytest.raises(twin.TwinError, match=r"Fixpipe\(L0C->GM\): unitFlag 3 reads L0C block 0 .* whose unit flag "
                                             r"no Mmad with unitFlag 3 has set"):
        run(lib, rng, mmad=mmad)


def test_fixpipe_released_by_an_earlier_mmad_races_the_last(lib, rng):
    """3 on the first Mmad, none on the last: the flags say readable before the last (flag-blind) Mmad wrote."""
    with pytest.raises(twin.TwinError, match=r"pipe hazard: Fixpipe\(L0C->GM\) \(pipe FIX\) reads L0C .* Mmad \(pipe M, "
                                             r"bytes .*\) wrote"):
        run(lib, rng, mmad=(3, 0))


def test_mmad_flags_without_fixpipe_flag_is_a_pipe_hazard(lib, rng):
    """Mmad 2/3 but Fixpipe 0: the Fixpipe does not wait, so it races the Mmad's writes."""
    with pytest.raises(twin.TwinError, match=r"pipe hazard: Fixpipe\(L0C->GM\) \(pipe FIX\) reads L0C"):
        run(lib, rng, fix=0)


def test_mmad_waits_on_a_block_no_fixpipe_drained(lib, rng):
    """The first round's Fixpipe with 2 (keep) leaves the tile readable; the next Mmad with unit flags waits forever."""
    with pytest.raises(twin.TwinError, match=r"Mmad: unitFlag 2: L0C block 0 .* still has its unit flag set by Mmad"):
        run(lib, rng, fix=2, flags=TWICE)
    # Only part of the tile drained (UnitFlag.md: Mmad and Fixpipe should cover the same data) ...
    with pytest.raises(twin.TwinError, match=r"Mmad: unitFlag 2: L0C block 8 .* still has its unit flag set"):
        run(lib, rng, flags=TWICE | SPLIT_N | ONLY_FIRST)
    # ... unless SetFixPipeConfig(..., isUnitFlag = true) resets the flags, as the page says.
    ref, c = run(lib, rng, flags=TWICE | SPLIT_N | ONLY_FIRST | RESET)
    np.testing.assert_array_equal(c[1], ref)


def test_plain_mmad_after_unit_flag_fixpipe_needs_fix_m_sync(lib, rng):
    """An Mmad without unit flags does not wait for the Fixpipe's read: write-after-read unless FIX_M orders it."""
    with pytest.raises(twin.TwinError, match=r"pipe hazard: Mmad \(pipe M\) writes L0C .* Fixpipe\(L0C->GM\) \(pipe FIX, "
                                             r"bytes .*\) may still be reading"):
        run(lib, rng, flags=TWICE | SECOND_PLAIN | SYNC_M_FIX)  # M_FIX orders the second Fixpipe, nothing the Mmad
    ref, c = run(lib, rng, flags=TWICE | SECOND_PLAIN | SYNC_M_FIX | SYNC_FIX_M)
    np.testing.assert_array_equal(c[1], ref)


def test_unit_flag_value_is_checked(lib, rng):
    with pytest.raises(twin.TwinError, match=r"Mmad: unitFlag 1 is not 0 \(off\), 2 \(keep the unit flags\) or 3"):
        run(lib, rng, mmad=(1, 3))


def test_data_copy_l0c_to_gm_waits_on_unit_flags_too(rng):
    """DataCopy(L0C->GM, DataCopyCO12DstParams) is the raw Fixpipe: with unitFlag 3 after an Mmad without unit flags
    it would wait forever (cube_more.cpp's co12 kernel, whose Mmad sets none)."""
    from test_twin_cube_more import KSRC as MORE_SRC, SET_ND, co12
    more = twin.compile_kernel(MORE_SRC, flags=["-O0"])
    with pytest.raises(twin.TwinError, match=r"DataCopy\(L0C->GM\): unitFlag 3 reads L0C block 0 .* no Mmad with "
                                             r"unitFlag 3 has set"):
        co12(more, "co12_h_f", rng, 16, 32, 16, nd=True, flags=SET_ND, unit=3)
    c, out = co12(more, "co12_h_f", rng, 16, 32, 16, nd=True, flags=SET_ND)  # control: no unit flags, M_FIX orders it
    np.testing.assert_array_equal(out.reshape(c.shape), c)
