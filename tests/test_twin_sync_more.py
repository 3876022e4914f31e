"""GM-word synchronisation on the twin (IBSet/IBWait, software SyncAll, InitDetermineComputeWorkspace/WaitPreBlock/
NotifyNextBlock), SuperKernel task sync, GM atomics add/max/min per documented type, reserved event IDs,
consecutive cross-core sets and the cross-core flag IDs the runtime uses. Expected values come from numpy models of
the documented semantics."""
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "sync" / "gm_sync.cpp"
L, LA = 72, 96
CASE = {"ib_chain": 1, "ib_never_set": 2, "ib_bad_idx": 3, "soft_sync": 4, "soft_sync_mix": 5, "ordered": 6,
        "task_sync": 7, "atomic": 8, "reserved_id": 9, "misuse": 10,
        "group_barrier": 11}


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNEL)


def prm(case, p1=0, p2=0, p3=0):
    return np.array([CASE[case], p1, p2, p3, 0, 0, 0, 0], dtype=np.int32)


def launch(lib, case, blocks, x, ws, out, kernel_type="mix_aiv_1_0", trace=False, **p):
    lib.launch("gm_sync_case", blocks, prm(case, **p), x, ws, out, kernel_type=kernel_type, trace=trace)


def test_ib_chain_orders_blocks_and_rounds(lib, rng):
    # 7 AIV-only blocks: more than this machine's cores, yet all resident on the chip (each on its own thread).
    for blocks, rounds, kt in [(3, 2, "mix_aiv_1_0"), (2, 3, "aiv"), (7, 2, "aiv")]:
        x = rng.standard_normal((blocks, L)).astype(np.float32)
        ws = np.zeros(128, np.int32)
        out = np.full((rounds * blocks, L), np.nan, np.float32)
        launch(lib, "ib_chain", blocks, x, ws, out, kernel_type=kt, p1=rounds)
        # Row (r, i) = row before it + x[i]: a running sum over the rows in (round, block) order.
        want = np.cumsum(np.tile(x, (rounds, 1)), axis=0, dtype=np.float64)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
        # Every flag word was set by IBSet and reset by its IBWait.
        assert not ws.any()


def test_ib_chain_without_waits_is_a_gm_race(lib, rng):
    x = rng.standard_normal((3, L)).astype(np.float32)
    with pytest.raises(twin.TwinError, match=r"pipe hazard: DataCopy \(pipe MTE[23]\) .* GM buffer 'argument 3'"):
        launch(lib, "ib_chain", 3, x, np.zeros(128, np.int32), np.zeros((3, L), np.float32), p1=1, p2=1)


def test_ib_wait_never_set_is_a_deadlock(lib):
    z = np.zeros(L, np.float32)
    with pytest.raises(twin.TwinError, match=r"\[AIV 1 \(block 1, sub 0\)\] IBWait: deadlock: every live core is "
                                             r"blocked:\n  AIV 1 \(block 1, sub 0\) waits for IBWait\(blockIdx 1, "
                                             r"eventID 3\): GM flag word 1"):
        launch(lib, "ib_never_set", 2, z, np.zeros(128, np.int32), z)


def test_ib_arguments_are_checked(lib):
    z = np.zeros(L, np.float32)
    with pytest.raises(twin.TwinError, match=r"\[AIV \d .*\] IBSet: blockIdx 3 is outside \[0, 2\]"):
        launch(lib, "ib_bad_idx", 3, z, np.zeros(128, np.int32), z, p1=3)
    # The flag word of (blockIdx 2, eventID 0) runs past a 20-word workspace (a view inside its allocation, so
    # aclrtMalloc's padding does not follow it).
    with pytest.raises(twin.TwinError, match=r"IBSet: GM access of 32 bytes at byte 64 of buffer 'argument 2' "
                                             r"\(length 80 bytes\) runs 16 bytes past its end"):
        launch(lib, "ib_bad_idx", 3, z, np.zeros(64, np.int32)[:20], z, p1=2)


def test_gm_sync_needs_resident_cores(lib):
    z = np.zeros(L, np.float32)
    with pytest.raises(twin.TwinError, match=r"IBSet: numBlocks 49 exceeds the 48 vector cores of Ascend910B2"):
        launch(lib, "ib_bad_idx", 49, z, np.zeros(49 * 8, np.int32), z, kernel_type="aiv", p1=0)


def soft_sync_model(x, used):
    work = 2.0 * x[:used].astype(np.float64)
    acc = work.sum(axis=0)
    return np.tile(used * acc, (used, 1))


@pytest.mark.parametrize("blocks,used", [(4, 0), (5, 3)])
def test_software_sync_all(lib, rng, blocks, used):
    x = rng.standard_normal((blocks, L)).astype(np.float32)
    ws = np.zeros(128, np.int32)
    out = np.full((2 * blocks, L), np.nan, np.float32)
    launch(lib, "soft_sync", blocks, x, ws, out, p1=used)
    n = used or blocks
    np.testing.assert_allclose(out[:n], soft_sync_model(x, n), rtol=1e-4, atol=1e-4)
    assert np.isnan(out[n:blocks]).all()  # cores past usedCores take no part
    # The documented workspace protocol: each taking-part core's counter counts its SyncAll calls.
    np.testing.assert_array_equal(ws[:8 * n:8], 3)


def test_software_sync_all_checks(lib, rng):
    x = rng.standard_normal((4, L)).astype(np.float32)
    out = np.zeros((8, L), np.float32)
    with pytest.raises(twin.TwinError, match=r"pipe hazard"):  # work rows overwritten while others still read them
        launch(lib, "soft_sync", 4, x, np.zeros(128, np.int32), out, p2=1)
    with pytest.raises(twin.TwinError, match=r"usedCores 5 is outside \[0, 4\] \(GetBlockNum\(\) \* GetTaskRatio\(\)\)"):
        launch(lib, "soft_sync", 4, x, np.zeros(128, np.int32), out, p1=5)
    with pytest.raises(twin.TwinError, match=r"ubWorkspace holds 64 bytes; this call needs 128"):
        launch(lib, "soft_sync", 4, x, np.zeros(128, np.int32), out, p3=64)
    ws = np.zeros(128, np.int32)
    ws[16] = 7
    with pytest.raises(twin.TwinError, match=r"\[AIV 2 .*gmWorkspace word 16 holds 7 at this core's first SyncAll: "
                                             r"the workspace must be initialised to 0"):
        launch(lib, "soft_sync", 4, x, ws, out)
    with pytest.raises(twin.TwinError, match=r"the software SyncAll supports only isAIVOnly = true"):
        launch(lib, "soft_sync_mix", 2, x, np.zeros(128, np.int32), out)


def test_ordered_blocks_accumulate_deterministically(lib, rng):
    blocks, tiles = 4, 3
    x = rng.standard_normal((tiles, blocks, L)).astype(np.float32)
    ws = rng.integers(2, 1000, 128).astype(np.int32)  # need not be initialised
    init = rng.standard_normal((tiles, L)).astype(np.float32)
    out = init.copy()
    launch(lib, "ordered", blocks, x, ws, out, p1=tiles)
    want = init.copy()
    for b in range(blocks):  # block order 0, 1, ..., in float32: bit-exact whatever the thread timing
        want = want + x[:, b]
    np.testing.assert_array_equal(out, want)


def test_ordered_blocks_checks(lib, rng):
    x = rng.standard_normal((1, 2, L)).astype(np.float32)
    out = np.zeros((1, L), np.float32)
    with pytest.raises(twin.TwinError, match=r"NotifyNextBlock: no WaitPreBlock before it on this core"):
        launch(lib, "ordered", 2, x, np.zeros(128, np.int32), out, p1=1, p2=1)
    with pytest.raises(twin.TwinError, match=r"WaitPreBlock: the repeat counter ubWorkspace\[16\] holds -1: call "
                                             r"InitDetermineComputeWorkspace first"):
        launch(lib, "ordered", 2, x, np.zeros(128, np.int32), out, p1=1, p2=2)


def test_task_sync_is_once_per_core(lib):
    z = np.zeros(L, np.float32)
    launch(lib, "task_sync", 2, z, np.zeros(8, np.int32), z, kernel_type="aiv", trace=True, p1=1)
    trace = lib.last_trace()
    ops = [r["op"] for r in trace[0]["records"]]
    assert ops.count("WaitPreTaskEnd") == 1 and ops.count("SetNextTaskStart") == 1
    with pytest.raises(twin.TwinError, match=r"WaitPreTaskEnd: called 2 times on this core; the docs allow one"):
        launch(lib, "task_sync", 2, z, np.zeros(8, np.int32), z, kernel_type="aiv", p1=2)


ATOMIC_TYPES = [np.float32, np.float16, np.int32, np.int16, np.int8, "bf16"]


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x):  # round to nearest even, as the twin's bfloat16_t does
    b = x.astype(np.float32).view(np.uint32)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


@pytest.mark.parametrize("op", [1, 2, 3])
@pytest.mark.parametrize("ti", range(6))
def test_atomic_max_min_per_type(lib, rng, ti, op):
    blocks = 3
    t = ATOMIC_TYPES[ti]
    if t == "bf16":
        vals = rng.standard_normal((blocks + 1, LA)).astype(np.float32)
        raw = f32_to_bf16(vals)
        x, out = raw[:blocks].copy(), raw[blocks].copy()
        xv, iv = bf16_to_f32(x), bf16_to_f32(out)
    elif np.issubdtype(t, np.integer):
        info = np.iinfo(t)
        raw = rng.integers(info.min, info.max, (blocks + 1, LA), endpoint=True).astype(t)
        x, out = raw[:blocks].copy(), raw[blocks].copy()
        xv, iv = x, out
    else:
        raw = rng.standard_normal((blocks + 1, LA)).astype(t)
        x, out = raw[:blocks].copy(), raw[blocks].copy()
        xv, iv = x, out
    init = out.copy()
    lib.launch("gm_sync_case", blocks, prm("atomic", ti, op), x, np.zeros(8, np.int32), out, kernel_type="aiv")
    red = np.maximum if op == 1 else np.minimum
    want = red(iv, red.reduce(xv, axis=0))
    got = bf16_to_f32(out) if t == "bf16" else out
    np.testing.assert_array_equal(got, want)
    assert out.dtype == init.dtype


def test_atomic_max_min_special_values(lib, rng):
    x = rng.standard_normal((2, LA)).astype(np.float32)
    out = rng.standard_normal(LA).astype(np.float32)
    x[1, 0] = np.nan           # NaN wins (INF/NAN mode)
    out[1], x[:, 1] = -0.0, 0.0  # max(-0, +0) = +0
    lib.launch("gm_sync_case", 2, prm("atomic", 0, 1), x, np.zeros(8, np.int32), out, kernel_type="aiv")
    assert np.isnan(out[0]) and out[1] == 0 and not np.signbit(out[1])
    out2 = rng.standard_normal(LA).astype(np.float32)
    out2[1], x[:, 1] = 0.0, -0.0  # min(+0, -0) = -0
    lib.launch("gm_sync_case", 2, prm("atomic", 0, 2), x, np.zeros(8, np.int32), out2, kernel_type="aiv")
    assert np.isnan(out2[0]) and np.signbit(out2[1])


def test_atomic_add_int8_and_float(lib, rng):
    blocks = 3
    x = rng.integers(-128, 127, (blocks, LA), endpoint=True).astype(np.int8)
    out = rng.integers(-128, 127, LA, endpoint=True).astype(np.int8)
    want = (out.astype(np.int64) + x.astype(np.int64).sum(axis=0)).astype(np.int8)  # wraps like int8 adds
    lib.launch("gm_sync_case", blocks, prm("atomic", 4, 0), x, np.zeros(8, np.int32), out, kernel_type="aiv")
    np.testing.assert_array_equal(out, want)
    xf = rng.standard_normal((blocks, LA)).astype(np.float32)
    of = rng.standard_normal(LA).astype(np.float32)
    want = of.astype(np.float64) + xf.astype(np.float64).sum(axis=0)
    lib.launch("gm_sync_case", blocks, prm("atomic", 0, 0), xf, np.zeros(8, np.int32), of, kernel_type="aiv")
    np.testing.assert_allclose(of, want, rtol=1e-5, atol=1e-5)


def test_reserved_event_ids_with_a_live_tpipe(lib):
    z = np.zeros(L, np.float32)
    run = lambda p1, p2=0: lib.launch("gm_sync_case", 1, prm("reserved_id", p1, p2), z, np.zeros(8, np.int32), z,
                                      kernel_type="aiv")
    run(5)
    for eid in (6, 7):
        with pytest.raises(twin.TwinError, match=rf"SetFlag: event ID {eid} of HardEvent::MTE2_V is reserved while a "
                                                 r"TPipe is alive \(6: system, 7: TPipe automatic sync\)"):
            run(eid)
    run(7, 1)  # handed out by AllocEventID: allowed


def test_same_cross_core_flag_twice_in_a_row(lib):
    # Legal: each flagId is a counter of pending sets (CrossCoreSetFlag page), so a second set before the wait is
    # counted and the AIVs' two waits both pass. The 16th pending set is refused (the hardware would hang).
    run = lambda v: lib.launch("cross_twice", 1, np.array([v] + [0] * 7, np.int32), kernel_type="mix")
    run(0)  # set 0, wait 1, set 0
    run(1)  # set 0, set 0
    run(2)  # set 0, set 1
    with pytest.raises(twin.TwinError, match=r"\[AIC 0\] CrossCoreSetFlag: cross-core flag 0 of AIV [01] \(block 0, "
                                             r"sub [01]\) saturates at 15 pending sets"):
        run(3)


def test_cross_core_flags_the_runtime_uses(lib):
    run = lambda v: lib.launch("reserved_cross", 1, np.array([v] + [0] * 7, np.int32), kernel_type="mix")
    run(0)  # 12 by hand without the hardware SyncAll, as the official cross_core_set_wait_flag example does
    run(4)  # 10 by hand next to SyncAll
    # The core threads race: the rule is reported by SyncAll when a core reaches it after another used flag 12 by
    # hand, or by the flag call of a core that reaches flag 12 after another entered SyncAll.
    either = (r"(SyncAll: the hardware SyncAll uses cross-core flags 11-14, which this kernel also uses by hand "
              r"\(CrossCore(Set|Wait)Flag\(12\) on (AIC 0|AIV [01])|CrossCore(Set|Wait)Flag: cross-core flag 12 is "
              r"used by the hardware SyncAll this kernel also calls)")
    with pytest.raises(twin.TwinError, match=either):
        run(1)
    with pytest.raises(twin.TwinError, match=either):
        run(2)
    with pytest.raises(twin.TwinError, match=r"CrossCore(Set|Wait)Flag: cross-core flag 15 is used by CANN's kernel "
                                             r"wrapper of a mix kernel"):
        run(3)


@pytest.mark.parametrize("p1,blocks,kt,pattern", [
    (0, 2, "aiv", r"IBSet: eventID -1 is negative"),
    (1, 3, "mix_aiv_1_0", r"\[AIV 2 .*SyncAll\(gmWorkspace, ubWorkspace, usedCores\): core 2 calls it but only cores "
                          r"0\.\.1 take part \(usedCores 2\)"),
    (2, 1, "aiv", r"DataCacheCleanAndInvalid: DcciDst::CACHELINE_UB is reserved \(not supported\) for a GlobalTensor"),
    (3, 1, "aiv", r"DataCacheCleanAndInvalid: the LocalTensor is not allocated"),
    (4, 1, "aiv", r"WaitPreBlock: ubWorkspace is not allocated"),
    (5, 1, "mix", r"\[AIV 1 .*InitDetermineComputeWorkspace: GetBlockIdx\(\) 1 >= GetBlockNum\(\) 1: the ordered-block "
                  r"APIs need one AIV per block"),
])
def test_misuse_is_reported(lib, p1, blocks, kt, pattern):
    z = np.zeros(L, np.float32)
    with pytest.raises(twin.TwinError, match=pattern):
        launch(lib, "misuse", blocks, z, np.zeros(128, np.int32), z, kernel_type=kt, p1=p1)


def barrier_ws():
    """A zeroed 4 KB workspace (as int32 words); the launch hands it to the kernel 512-byte aligned."""
    return np.zeros(1024, np.int32)


def run_barrier(lib, arrivers, waiters, rounds, x, out, ws, skip=0, offset=0, blocks=None):
    p = np.array([CASE["group_barrier"], arrivers, waiters, rounds, skip, offset, 0, 0], np.int32)
    lib.launch("gm_sync_case", blocks or arrivers + waiters, p, x, ws, out, kernel_type="mix_aiv_1_0")


@pytest.mark.parametrize("arrivers,waiters,rounds", [(2, 3, 2), (3, 1, 3)])
def test_group_barrier_releases_the_wait_group(lib, rng, arrivers, waiters, rounds):
    x = rng.standard_normal((rounds * arrivers, L)).astype(np.float32)
    out = np.zeros((rounds + waiters * rounds, L), np.float32)
    ws = barrier_ws()
    run_barrier(lib, arrivers, waiters, rounds, x, out, ws)
    acc = x.reshape(rounds, arrivers, L).astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(out[:rounds], acc, rtol=1e-5, atol=1e-5)
    for w in range(waiters):  # every waiter saw each round's complete sum
        np.testing.assert_allclose(out[rounds + w * rounds:rounds + (w + 1) * rounds], acc, rtol=1e-5, atol=1e-5)
    slots = max(arrivers, waiters)
    counters = ws.reshape(-1, 128)[:slots]  # one 512-byte slot per index: [arrive counter, ..., wait counter at 64 B]
    np.testing.assert_array_equal(counters[:, 0], rounds * arrivers)
    np.testing.assert_array_equal(counters[:, 16], rounds * waiters)


def test_group_barrier_checks(lib, rng):
    x = rng.standard_normal((4, L)).astype(np.float32)
    out = np.zeros((8, L), np.float32)
    with pytest.raises(twin.TwinError, match=r"(?s)GroupBarrier::Wait: deadlock: every live core is blocked:.*"
                                             r"waits for GroupBarrier::Wait\(0\): arrive counter 4"):
        run_barrier(lib, 2, 1, 2, x, out, barrier_ws(), skip=1)
    with pytest.raises(twin.TwinError, match=r"GroupBarrier: groupWorkspace 0x[0-9a-f]+ is not 512-byte aligned"):
        run_barrier(lib, 2, 1, 1, x, out, barrier_ws(), offset=64)
    with pytest.raises(twin.TwinError, match=r"GroupBarrier: arriveSize 4 and waitSize 1 must lie in \[1, GetBlockNum\(\) = 3\]"):
        run_barrier(lib, 4, 1, 1, x, out, barrier_ws(), blocks=3)
