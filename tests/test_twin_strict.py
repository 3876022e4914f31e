"""The twin refuses what the NPU would silently get wrong, with a TwinError naming the core, the API and the numbers.

One kernel source holds every case; a GM parameter buffer picks the case and its numbers, and which block misbehaves
(the other blocks run a normal copy), so the error must name that core.
"""
import re

import numpy as np
import pytest

from npu_flash_attn import twin

SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t N = 64;  // floats each core copies in the normal case

__aicore__ inline void NormalCopy(GM_ADDR a, GM_ADDR b) {
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    GlobalTensor<float> ag, bg;
    ag.SetGlobalBuffer((__gm__ float*)a + GetBlockIdx() * N, N);
    bg.SetGlobalBuffer((__gm__ float*)b + GetBlockIdx() * N, N);
    pipe.InitBuffer(q, 2, N * sizeof(float));
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, ag, N);
    q.EnQue(t);
    t = q.DeQue<float>();
    DataCopy(bg, t, N);
    q.FreeTensor(t);
}

extern "C" __global__ __aicore__ void strict_case(GM_ADDR params, GM_ADDR a, GM_ADDR b) {
    GlobalTensor<int64_t> pg;
    pg.SetGlobalBuffer((__gm__ int64_t*)params, 8);
    int64_t which = pg.GetValue(0);
    const int64_t p1 = pg.GetValue(1), p2 = pg.GetValue(2), onBlock = pg.GetValue(3);
    if (onBlock >= 0 && GetBlockIdx() != onBlock) which = g_coreType == AIV ? 0 : -1;  // others: a normal copy
    GlobalTensor<float> ag, bg;
    ag.SetGlobalBuffer((__gm__ float*)a, 1024);
    bg.SetGlobalBuffer((__gm__ float*)b + GetBlockIdx() * N, N);
    switch (which) {
        case 0: NormalCopy(a, b); break;
        case 1: {  // UB capacity: one TBuf of p1 bytes
            TPipe pipe;
            TBuf<TPosition::VECCALC> buf;
            pipe.InitBuffer(buf, (uint32_t)p1);
            break;
        }
        case 2: {  // UB capacity through a queue: two buffers of p1 bytes
            TPipe pipe;
            TQue<TPosition::VECIN, 1> q;
            pipe.InitBuffer(q, 2, (uint32_t)p1);
            break;
        }
        case 3: {  // DataCopy into a tensor at element offset p1 (not 32 B aligned)
            TPipe pipe;
            TBuf<TPosition::VECCALC> buf;
            pipe.InitBuffer(buf, 1024);
            LocalTensor<float> t = buf.Get<float>();
            DataCopy(t[(uint32_t)p1], ag, 64);
            break;
        }
        case 4: {  // LocalTensor at a misaligned explicit address
            LocalTensor<float> t(TPosition::VECCALC, (uint32_t)p1, 64);
            DataCopy(t, ag, 64);
            break;
        }
        case 5: {  // DataCopy count past the LocalTensor (TBuf of 256 B)
            TPipe pipe;
            TBuf<TPosition::VECCALC> buf;
            pipe.InitBuffer(buf, 256);
            LocalTensor<float> t = buf.Get<float>();
            DataCopy(t, ag, (uint32_t)p1);
            break;
        }
        case 6: {  // DataCopy count past the GlobalTensor's declared size p2
            TPipe pipe;
            TBuf<TPosition::VECCALC> buf;
            pipe.InitBuffer(buf, 4096);
            GlobalTensor<float> small;
            small.SetGlobalBuffer((__gm__ float*)a, (uint64_t)p2);
            DataCopy(buf.Get<float>(), small, (uint32_t)p1);
            break;
        }
        case 7: {  // GM read through an unsized GlobalTensor at element offset p1 (past the launch buffer)
            TPipe pipe;
            TBuf<TPosition::VECCALC> buf;
            pipe.InitBuffer(buf, 1024);
            GlobalTensor<float> any;
            any.SetGlobalBuffer((__gm__ float*)a);
            DataCopy(buf.Get<float>(), any[(uint64_t)p1], 64);
            break;
        }
        case 8: {  // scalar GM read far outside every launch buffer
            GlobalTensor<float> any;
            any.SetGlobalBuffer((__gm__ float*)a);
            float v = any.GetValue((uint64_t)p1);
            (void)v;
            break;
        }
        case 9: {  // DeQue on an empty queue
            TPipe pipe;
            TQue<TPosition::VECIN, 1> q;
            pipe.InitBuffer(q, 1, 256);
            LocalTensor<float> t = q.DeQue<float>();
            (void)t;
            break;
        }
        case 10: {  // EnQue past the queue depth (depth 1, two buffers)
            TPipe pipe;
            TQue<TPosition::VECIN, 1> q;
            pipe.InitBuffer(q, 2, 256);
            LocalTensor<float> t0 = q.AllocTensor<float>();
            LocalTensor<float> t1 = q.AllocTensor<float>();
            q.EnQue(t0);
            q.EnQue(t1);
            break;
        }
        case 11: {  // FreeTensor twice
            TPipe pipe;
            TQue<TPosition::VECIN, 1> q;
            pipe.InitBuffer(q, 1, 256);
            LocalTensor<float> t = q.AllocTensor<float>();
            DataCopy(t, ag, 64);
            q.EnQue(t);
            t = q.DeQue<float>();
            q.FreeTensor(t);
            q.FreeTensor(t);
            break;
        }
        case 12: {  // AllocTensor while the only buffer is still in use
            TPipe pipe;
            TQue<TPosition::VECOUT, 1> q;
            pipe.InitBuffer(q, 1, 256);
            LocalTensor<float> t0 = q.AllocTensor<float>();
            LocalTensor<float> t1 = q.AllocTensor<float>();
            (void)t0; (void)t1;
            break;
        }
        case 13: {  // p1 buffers in flight on HardEvent::MTE2_V (one queue of depth 16)
            TPipe pipe;
            TQue<TPosition::VECIN, 16> q;
            pipe.InitBuffer(q, (uint8_t)p1, 256);
            for (int64_t i = 0; i < p1; ++i) {
                LocalTensor<float> t = q.AllocTensor<float>();
                DataCopy(t, ag, 64);
                q.EnQue(t);
            }
            for (int64_t i = 0; i < p1; ++i) {
                LocalTensor<float> t = q.DeQue<float>();
                q.FreeTensor(t);
            }
            break;
        }
        case 14: {  // p1 AllocEventID of one HardEvent
            TPipe pipe;
            for (int64_t i = 0; i < p1; ++i) pipe.AllocEventID<HardEvent::V_MTE3>();
            break;
        }
        case 15: SetFlag<HardEvent::MTE2_V>((int32_t)p1); break;  // no WaitFlag before the kernel ends
        case 16: WaitFlag<HardEvent::V_MTE2>((int32_t)p1); break;  // never set
        case 17:  // set twice
            SetFlag<HardEvent::V_MTE3>((int32_t)p1);
            SetFlag<HardEvent::V_MTE3>((int32_t)p1);
            break;
        case 18:  // a cube-core event on a vector core, or a vector-core event on the cube core
            if (p1 == 0) {
                SetFlag<HardEvent::MTE1_M>(0);
                WaitFlag<HardEvent::MTE1_M>(0);
            } else {
                SetFlag<HardEvent::MTE2_V>(0);
                WaitFlag<HardEvent::MTE2_V>(0);
            }
            break;
        case 19: {  // event ID outside [0, 7]
            SetFlag<HardEvent::MTE2_V>((int32_t)p1);
            WaitFlag<HardEvent::MTE2_V>((int32_t)p1);
            break;
        }
        case 20: {  // copy never-written UB to GM: float (p1 == 0) or half (p1 == 1)
            TPipe pipe;
            TBuf<TPosition::VECCALC> buf;
            pipe.InitBuffer(buf, N * sizeof(float));
            if (p1 == 0) {
                DataCopy(bg, buf.Get<float>(), N);
            } else {
                GlobalTensor<half> hg;
                hg.SetGlobalBuffer((__gm__ half*)b + GetBlockIdx() * 2 * N, 2 * N);
                DataCopy(hg, buf.Get<half>(), 2 * N);
            }
            break;
        }
        case 21: {  // scalar read past the tensor
            TPipe pipe;
            TBuf<TPosition::VECCALC> buf;
            pipe.InitBuffer(buf, 256);
            float v = buf.Get<float>().GetValue((uint32_t)p1);
            (void)v;
            break;
        }
        case 22: {  // UB -> GM from a misaligned source
            TPipe pipe;
            TBuf<TPosition::VECCALC> buf;
            pipe.InitBuffer(buf, 1024);
            DataCopy(bg, buf.Get<float>()[(uint32_t)p1], 8);
            break;
        }
        case 23: {  // UB -> GM past the destination GlobalTensor's declared size
            TPipe pipe;
            TBuf<TPosition::VECCALC> buf;
            pipe.InitBuffer(buf, 4096);
            DataCopy(bg, buf.Get<float>(), (uint32_t)p1);
            break;
        }
        case 24: {  // more than 64 buffers in one queue
            TPipe pipe;
            TQue<TPosition::VECIN, 1> q;
            pipe.InitBuffer(q, (uint8_t)p1, 32);
            break;
        }
        case 25: {  // a second live TPipe
            TPipe pipe1;
            TPipe pipe2;
            break;
        }
        case 26: {  // vector-core API on the cube core (allocating UB there is only addresses, and allowed)
            TPipe pipe;
            TBuf<TPosition::VECCALC> buf;
            pipe.InitBuffer(buf, 256);
            Duplicate(buf.Get<float>(), 1.0f, 64);
            break;
        }
        case 27: {  // 64 floats read from p1 floats after the start of the launch buffer (p1 < 0: before it)
            TPipe pipe;
            TBuf<TPosition::VECCALC> buf;
            pipe.InitBuffer(buf, 1024);
            GlobalTensor<float> any;
            any.SetGlobalBuffer((__gm__ float*)a + p1);
            DataCopy(buf.Get<float>(), any, 64);
            break;
        }
        default: break;
    }
}
'''


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(SRC)


def run(lib, case, p1=0, p2=0, on_block=-1, blocks=1, kernel_type="aiv", a=None, b=None):
    params = np.array([case, p1, p2, on_block, 0, 0, 0, 0], dtype=np.int64)
    if a is None:
        a = np.random.default_rng().standard_normal(1024).astype(np.float32)
    if b is None:
        b = np.zeros(64 * max(blocks, 4), dtype=np.float32)
    lib.launch("strict_case", blocks, params, a, b, kernel_type=kernel_type)
    return a, b


def expect(lib, pattern, case, **kw):
    with pytest.raises(twin.TwinError) as ei:
        run(lib, case, **kw)
    msg = str(ei.value)
    assert re.search(pattern, msg), f"message {msg!r} does not match {pattern!r}"
    return msg


CORE0 = r"^\[AIV 0 \(block 0, sub 0\)\] "


def test_normal_copy_multicore(lib):
    a, b = run(lib, 0, blocks=4)
    np.testing.assert_array_equal(b, a[:256])


def test_ub_capacity_exact_fit_and_overflow(lib):
    run(lib, 1, p1=196608)  # all 192 KB (as CANN's own CPU checks allow): fits exactly
    expect(lib, CORE0 + r"TPipe::InitBuffer: UB exhausted: 1 x 196640 bytes requested at offset 0, usable capacity 196608",
           1, p1=196640)
    # Two buffers of 98304 B fit; 98336 each do not.
    run(lib, 2, p1=98304)
    expect(lib, CORE0 + r"TPipe::InitBuffer: UB exhausted: 2 x 98336 bytes .*usable capacity 196608", 2, p1=98336)


def test_error_names_the_failing_core(lib):
    msg = expect(lib, r"^\[AIV 2 \(block 2, sub 0\)\] TPipe::InitBuffer: UB exhausted", 1, p1=200000, on_block=2,
                 blocks=4)
    assert "AIV 0" not in msg and "AIV 1" not in msg


def test_misaligned_datacopy_destination(lib):
    expect(lib, CORE0 + r"DataCopy: dst address 12 in UB is not 32-byte aligned", 3, p1=3)
    run(lib, 3, p1=8)  # 8 floats = 32 B: aligned


def test_misaligned_explicit_local_tensor(lib):
    expect(lib, CORE0 + r"LocalTensor\(TPosition, addr, tileSize\): addr 16 is not 32-byte aligned", 4, p1=16)
    run(lib, 4, p1=64)


def test_misaligned_ub_to_gm_source(lib):
    expect(lib, CORE0 + r"DataCopy: src address 4 in UB is not 32-byte aligned", 22, p1=1)


def test_copy_past_local_tensor(lib):
    expect(lib, CORE0 + r"DataCopy: dst: access of 512 bytes at byte 0 is past the tensor's 256 bytes", 5, p1=128)
    run(lib, 5, p1=64)


def test_copy_past_global_tensor_size(lib):
    expect(lib, CORE0 + r"DataCopy: access of 128 elements at element 0 is outside the GlobalTensor's declared size 100",
           6, p1=128, p2=100)
    expect(lib, CORE0 + r"DataCopy: access of 72 elements at element 0 is outside the GlobalTensor's declared size 64",
           23, p1=72)


def test_gm_outside_launch_buffers(lib):
    # a holds 1024 floats (4096 bytes; aclrtMalloc pads that to 4128); 64 floats from element 1000 run 128 bytes past.
    expect(lib, CORE0 + r"DataCopy: GM access of 256 bytes at byte 4000 of buffer 'argument 1' \(length 4128 bytes\) "
                        r"runs 128 bytes past its end \(the length counts aclrtMalloc's padding", 7, p1=1000)
    expect(lib, CORE0 + r"GlobalTensor::GetValue: GM access of 4 bytes at 0x[0-9a-f]+ is outside every buffer passed",
           8, p1=1 << 40)


def test_gm_access_before_a_launch_buffer(lib):
    """An access that starts before a buffer says how many bytes before, in the words of the past-the-end one."""
    expect(lib, CORE0 + r"DataCopy: GM access of 256 bytes starts 32 bytes before the start of buffer 'argument 1' "
                        r"\(length 4128 bytes\)$", 27, p1=-8)
    for p1 in (0, 960, 968):  # the first and the last 64 floats, and 32 bytes into aclrtMalloc's padding
        run(lib, 27, p1=p1)


def test_queue_misuse(lib):
    expect(lib, CORE0 + r"TQue::DeQue: DeQue on an empty queue", 9)
    expect(lib, CORE0 + r"TQue::EnQue: queue depth 1 exceeded: 1 tensors already enqueued", 10)
    expect(lib, CORE0 + r"TQue::FreeTensor: tensor freed twice", 11)
    expect(lib, CORE0 + r"TQue::AllocTensor: buffer 0 of 1 in this queue is still in use", 12)
    expect(lib, CORE0 + r"TPipe::InitBuffer: buffer number 65 is outside \[1, 64\]", 24, p1=65)


def test_event_id_exhaustion(lib):
    run(lib, 13, p1=8)  # eight buffers in flight on MTE2_V: fine
    expect(lib, CORE0 + r"TQue::EnQue: all 8 event IDs of HardEvent::MTE2_V are in use", 13, p1=9)
    run(lib, 14, p1=8)
    expect(lib, CORE0 + r"TPipe::AllocEventID: all 8 event IDs of HardEvent::V_MTE3 are in use", 14, p1=9)


def test_unpaired_flags(lib):
    expect(lib, CORE0 + r"kernel end: SetFlag<HardEvent::MTE2_V>\(3\) has no matching WaitFlag", 15, p1=3)
    expect(lib, CORE0 + r"WaitFlag: HardEvent::V_MTE2 ID 5 was never set", 16, p1=5)
    expect(lib, CORE0 + r"SetFlag: HardEvent::V_MTE3 ID 2 is set twice without a WaitFlag", 17, p1=2)
    expect(lib, CORE0 + r"SetFlag: event ID 8 of HardEvent::MTE2_V is outside \[0, 7\]", 19, p1=8)
    run(lib, 19, p1=7)


def test_event_of_the_other_core(lib):
    expect(lib, CORE0 + r"SetFlag: HardEvent::MTE1_M does not exist on the vector core \(AIV\)", 18, p1=0)
    expect(lib, r"^\[AIC 0\] SetFlag: HardEvent::MTE2_V does not exist on the cube core \(AIC\)", 18, p1=1,
           kernel_type="aic")


def test_vector_api_on_cube_core(lib):
    expect(lib, r"^\[AIC 1\] Duplicate.*: vector/UB API called on the cube core \(AIC\)", 26, on_block=1, blocks=2,
           kernel_type="aic")


def test_second_tpipe(lib):
    expect(lib, CORE0 + r"TPipe: a second TPipe is live on this core", 25)


def test_scalar_read_past_tensor(lib):
    expect(lib, CORE0 + r"LocalTensor::GetValue: index 64 is past the tensor's 64 elements", 21, p1=64)
    run(lib, 21, p1=63)  # reading unwritten UB is allowed (it is NaN poison)


def test_unwritten_ub_reads_back_as_nan(lib, monkeypatch):
    # Storing it is reported (test_twin_poison.py); with that check off the poison shows in GM.
    with pytest.warns(twin.TwinWarning, match=CORE0 + r"DataCopy: stored poison to GM buffer 'argument 2' byte 0 .* "
                                              r"never-written poison"):
        run(lib, 20, p1=0)
    monkeypatch.setenv("NPU_TWIN_POISON_CHECK", "0")
    # A launch that fills UB first must not leak into the next launch's memory.
    run(lib, 0, blocks=2)
    _, b = run(lib, 20, p1=0, blocks=2, b=np.zeros(128, dtype=np.float32))
    assert np.isnan(b).all()
    bh = np.zeros(256, dtype=np.float16)
    run(lib, 20, p1=1, blocks=2, b=bh)
    assert np.isnan(bh).all()


def test_process_survives_errors(lib):
    for case, p1 in ((1, 999999), (9, 0), (15, 1), (16, 0), (8, 1 << 40)):
        with pytest.raises(twin.TwinError):
            run(lib, case, p1=p1, blocks=3)
    a, b = run(lib, 0, blocks=4)
    np.testing.assert_array_equal(b, a[:256])
