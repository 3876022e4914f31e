"""DataCopy / DataCopyPad layouts on the twin against numpy models written from the API documentation.

One kernel source runs every case on several cores (each core its own GM slice); a GM parameter buffer selects the
mode and its numbers. GM->UB cases prefill UB from a `fill` buffer and dump the whole UB region afterwards, so the
bytes a copy must not touch are checked too. UB->GM cases start from a sentinel-filled destination.
"""
import numpy as np
import pytest

from npu_flash_attn import twin

SRC = r'''
#include "kernel_operator.h"
using namespace AscendC;

template <HardEvent E>
__aicore__ inline void Sync() {
    SetFlag<E>(EVENT_ID0);
    WaitFlag<E>(EVENT_ID0);
}

template <typename T>
__aicore__ inline void RunCase(GM_ADDR params, GM_ADDR src, GM_ADDR fill, GM_ADDR dst) {
    GlobalTensor<int64_t> pg;
    pg.SetGlobalBuffer((__gm__ int64_t*)params, 16);
    GlobalTensor<T> padg;
    padg.SetGlobalBuffer((__gm__ T*)(params + 9 * sizeof(int64_t)), 1);
    const int64_t mode = pg.GetValue(0);
    const uint32_t count = (uint32_t)pg.GetValue(1);
    const uint32_t bc = (uint32_t)pg.GetValue(2), bl = (uint32_t)pg.GetValue(3);
    const uint32_t ss = (uint32_t)pg.GetValue(4), ds = (uint32_t)pg.GetValue(5);
    const bool isPad = pg.GetValue(6) != 0;
    const uint8_t lp = (uint8_t)pg.GetValue(7), rp = (uint8_t)pg.GetValue(8);
    const uint32_t ubElems = (uint32_t)pg.GetValue(10);
    const uint64_t per = (uint64_t)pg.GetValue(11);
    const bool legacy = pg.GetValue(12) != 0;

    GlobalTensor<T> sg, fg, dg;
    sg.SetGlobalBuffer((__gm__ T*)src + GetBlockIdx() * per, per);
    fg.SetGlobalBuffer((__gm__ T*)fill, ubElems);
    dg.SetGlobalBuffer((__gm__ T*)dst + GetBlockIdx() * per, per);
    LocalTensor<T> ub(TPosition::VECIN, 0, ubElems);
    LocalTensor<T> ub2(TPosition::VECOUT, ubElems * sizeof(T), ubElems);
    const DataCopyParams p((uint16_t)bc, (uint16_t)bl, (uint16_t)ss, (uint16_t)ds);

    if (mode == 1 || mode == 3 || mode == 7) {  // GM -> UB: prefill, copy, dump
        DataCopy(ub, fg, ubElems);
        PipeBarrier<PIPE_MTE2>();  // the copy below overwrites part of the prefill on the same pipe
        if (mode == 1) {
            DataCopy(ub, sg, count);
        } else if (mode == 3) {
            DataCopy(ub, sg, p);
        } else if (legacy) {
            DataCopyPad(ub, sg, p, DataCopyPadParams(isPad, lp, rp, (uint64_t)pg.GetValue(9)));
        } else {
            DataCopyPad(ub, sg, DataCopyExtParams((uint16_t)bc, bl, ss, ds, 0),
                        DataCopyPadExtParams<T>(isPad, lp, rp, padg.GetValue(0)));
        }
        Sync<HardEvent::MTE2_MTE3>();
        DataCopy(dg, ub, ubElems);
    } else if (mode == 2 || mode == 4 || mode == 8) {  // UB -> GM: load, copy out
        DataCopy(ub, sg, ubElems);
        Sync<HardEvent::MTE2_MTE3>();
        if (mode == 2) {
            DataCopy(dg, ub, count);
        } else if (mode == 4) {
            DataCopy(dg, ub, p);
        } else if (legacy) {
            DataCopyPad(dg, ub, p);
        } else {
            DataCopyPad(dg, ub, DataCopyExtParams((uint16_t)bc, bl, ss, ds, 0));
        }
    } else if (mode == 5 || mode == 6) {  // UB -> UB on PIPE_V
        DataCopy(ub, sg, ubElems);
        DataCopy(ub2, fg, ubElems);
        Sync<HardEvent::MTE2_V>();
        if (mode == 5) {
            DataCopy(ub2, ub, p);
        } else {
            DataCopy(ub2, ub, count);
        }
        Sync<HardEvent::V_MTE3>();
        DataCopy(dg, ub2, ubElems);
    }
}

extern "C" __global__ __aicore__ void copy_f32(GM_ADDR params, GM_ADDR src, GM_ADDR fill, GM_ADDR dst) {
    RunCase<float>(params, src, fill, dst);
}
extern "C" __global__ __aicore__ void copy_f16(GM_ADDR params, GM_ADDR src, GM_ADDR fill, GM_ADDR dst) {
    RunCase<half>(params, src, fill, dst);
}
'''

UB_BYTES = 1024
BLOCKS = 3
SENTINEL = -7.0


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(SRC)


def launch(lib, dtype, mode, count=0, bc=0, bl=0, ss=0, ds=0, is_pad=False, lp=0, rp=0, pad=0.0, legacy=False):
    """Runs one case on BLOCKS cores; returns (src, fill, dst) with per-core rows."""
    isz = np.dtype(dtype).itemsize
    ub = UB_BYTES // isz
    per = 2 * ub
    rng = np.random.default_rng()
    src = rng.uniform(1.0, 2.0, size=(BLOCKS, per)).astype(dtype)
    fill = rng.uniform(-2.0, -1.0, size=ub).astype(dtype)
    dst = np.full((BLOCKS, per), SENTINEL, dtype=dtype)
    params = np.zeros(16, dtype=np.int64)
    params[[0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12]] = [mode, count, bc, bl, ss, ds, int(is_pad), lp, rp, ub, per,
                                                        int(legacy)]
    params.view(np.uint8)[9 * 8:9 * 8 + isz] = np.array([pad], dtype=dtype).view(np.uint8)
    lib.launch("copy_f32" if dtype == np.float32 else "copy_f16", BLOCKS, params, src, fill, dst)
    return src, fill, dst


def ceil32(n):
    return (n + 31) // 32 * 32


DTYPES = [np.float32, np.float16]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("count_bytes", [1024, 1000, 100, 30, 64])
def test_count_form_rounds_down_to_32_bytes(lib, dtype, count_bytes):
    isz = np.dtype(dtype).itemsize
    count = count_bytes // isz
    n = count * isz // 32 * 32 // isz  # silently rounded down
    ub = UB_BYTES // isz
    src, fill, dst = launch(lib, dtype, 1, count=count)
    for c in range(BLOCKS):
        want = fill.copy()
        want[:n] = src[c, :n]
        np.testing.assert_array_equal(dst[c, :ub], want)
        assert (dst[c, ub:] == SENTINEL).all()
    src, _, dst = launch(lib, dtype, 2, count=count)
    for c in range(BLOCKS):
        want = np.full(2 * ub, SENTINEL, dtype=dtype)
        want[:n] = src[c, :n]
        np.testing.assert_array_equal(dst[c], want)


def ref_blocks(out, inp, bc, bl_bytes, in_step, out_step):
    """Copies bc blocks of bl_bytes; steps in bytes, on uint8 views."""
    o, i = out.view(np.uint8), inp.view(np.uint8)
    for b in range(bc):
        o[b * out_step:b * out_step + bl_bytes] = i[b * in_step:b * in_step + bl_bytes]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bc,bl,ss,ds", [(3, 2, 1, 1), (1, 4, 0, 0), (4, 1, 3, 0), (2, 3, 0, 5), (0, 4, 0, 0),
                                         (5, 0, 1, 1)])
def test_datacopy_params_both_directions(lib, dtype, bc, bl, ss, ds):
    isz = np.dtype(dtype).itemsize
    ub = UB_BYTES // isz
    src, fill, dst = launch(lib, dtype, 3, bc=bc, bl=bl, ss=ss, ds=ds)  # GM -> UB: gaps in 32 B blocks both sides
    for c in range(BLOCKS):
        want = fill.copy()
        ref_blocks(want, src[c], bc, bl * 32, (bl + ss) * 32, (bl + ds) * 32)
        np.testing.assert_array_equal(dst[c, :ub], want)
    src, _, dst = launch(lib, dtype, 4, bc=bc, bl=bl, ss=ss, ds=ds)  # UB -> GM
    for c in range(BLOCKS):
        want = np.full(2 * ub, SENTINEL, dtype=dtype)
        ref_blocks(want, src[c, :ub].copy(), bc, bl * 32, (bl + ss) * 32, (bl + ds) * 32)
        np.testing.assert_array_equal(dst[c], want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bc,bl,ss,ds", [(3, 2, 1, 1), (2, 3, 0, 2), (1, 32, 0, 0)])
def test_ub_to_ub(lib, dtype, bc, bl, ss, ds):
    isz = np.dtype(dtype).itemsize
    ub = UB_BYTES // isz
    src, fill, dst = launch(lib, dtype, 5, bc=bc, bl=bl, ss=ss, ds=ds)
    for c in range(BLOCKS):
        want = fill.copy()
        ref_blocks(want, src[c, :ub].copy(), bc, bl * 32, (bl + ss) * 32, (bl + ds) * 32)
        np.testing.assert_array_equal(dst[c, :ub], want)
    count = 200 // isz  # 200 B -> 192 B copied
    src, fill, dst = launch(lib, dtype, 6, count=count)
    n = 192 // isz
    for c in range(BLOCKS):
        want = fill.copy()
        want[:n] = src[c, :n]
        np.testing.assert_array_equal(dst[c, :ub], want)


def ref_pad_gm2ub(src, fill, isz, bc, bl, ss, ds, is_pad, lp, rp, pad):
    """Expected UB bytes, and a mask of bytes whose value the documentation calls random."""
    out = fill.copy().view(np.uint8)
    rnd = np.zeros(out.size, dtype=bool)
    s = src.view(np.uint8)
    row = ceil32(lp * isz + bl + rp * isz)
    pad_bytes = np.array([pad], dtype=src.dtype).view(np.uint8)
    for b in range(bc if bl else 0):  # blockCount or blockLen 0: no-op
        d0 = b * (row + ds * 32)
        s0 = b * (bl + ss)
        out[d0 + lp * isz:d0 + lp * isz + bl] = s[s0:s0 + bl]
        holes = [e for e in range(row // isz) if not lp * isz <= e * isz < lp * isz + bl]
        for e in holes:
            where = slice(d0 + e * isz, d0 + (e + 1) * isz)
            if lp == 0 and rp == 0:
                out[where] = s[s0:s0 + isz]  # dummy = the block's first element
            elif is_pad:
                out[where] = pad_bytes
            else:
                rnd[where] = True
    return out.view(src.dtype), rnd.reshape(-1, isz)[:, 0]


PAD_CASES = [
    # bc, blockLen (B), srcStride (B), dstStride (blocks), isPad, left, right, padValue
    (3, 44, 4, 1, False, 0, 0, 0.0),     # rows of 44 B padded to 64 B with the first element
    (2, 20, 0, 0, True, 2, 1, 3.5),      # 2 + 5 + 1 floats = one 32 B row, padded with 3.5
    (2, 36, 8, 0, True, 1, 2, -1.25),    # 1 + 9 + 2 floats -> 64 B rows; padding and dummy = paddingValue
    (2, 24, 12, 2, False, 1, 0, 0.0),    # left padding without isPad: padding and dummy are random
    (3, 28, 0, 0, True, 0, 0, 9.0),      # no paddings: dummy repeats the first element even with isPad
    (4, 64, 6, 0, False, 0, 0, 0.0),     # 32 B multiple rows, GM stride not a multiple of the element size
    (1, 0, 0, 0, True, 1, 1, 1.0),       # blockLen 0: no-op
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", PAD_CASES)
@pytest.mark.parametrize("legacy", [False, True])
def test_datacopypad_gm_to_ub(lib, dtype, case, legacy, monkeypatch):
    bc, bl, ss, ds, is_pad, lp, rp, pad = case
    monkeypatch.setenv("NPU_TWIN_POISON_CHECK", "0")  # the kernel stores all of UB, the "random" padding included
    isz = np.dtype(dtype).itemsize
    if isz == 2:  # same byte geometry with 2-byte elements: double the element paddings (still <= 32 B)
        lp, rp = 2 * lp, 2 * rp
    ub = UB_BYTES // isz
    src, fill, dst = launch(lib, dtype, 7, bc=bc, bl=bl, ss=ss, ds=ds, is_pad=is_pad, lp=lp, rp=rp, pad=pad,
                            legacy=legacy)
    for c in range(BLOCKS):
        want, rnd = ref_pad_gm2ub(src[c], fill, isz, bc, bl, ss, ds, is_pad, lp, rp, pad)
        got = dst[c, :ub]
        np.testing.assert_array_equal(got[~rnd], want[~rnd])
        assert np.isnan(got[rnd]).all()  # the twin's "random" is NaN poison
        assert (dst[c, ub:] == SENTINEL).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bc,bl,ss,ds", [(3, 44, 1, 8), (2, 64, 0, 0), (4, 12, 0, 4), (2, 100, 2, 2), (0, 12, 0, 0)])
@pytest.mark.parametrize("legacy", [False, True])
def test_datacopypad_ub_to_gm(lib, dtype, bc, bl, ss, ds, legacy):
    isz = np.dtype(dtype).itemsize
    ub = UB_BYTES // isz
    src, _, dst = launch(lib, dtype, 8, bc=bc, bl=bl, ss=ss, ds=ds, legacy=legacy)
    for c in range(BLOCKS):
        want = np.full(2 * ub, SENTINEL, dtype=dtype)
        ref_blocks(want, src[c, :ub].copy(), bc, bl, ceil32(bl) + ss * 32, bl + ds)  # UB: blocks, GM: bytes
        np.testing.assert_array_equal(dst[c], want)


def test_datacopypad_padding_over_32_bytes_is_refused(lib):
    with pytest.raises(twin.TwinError, match=r"DataCopyPad\(GM->UB\): leftPadding 9 / rightPadding 0 elements exceed 32 bytes"):
        launch(lib, np.float32, 7, bc=1, bl=16, is_pad=True, lp=9)
    with pytest.raises(twin.TwinError, match=r"DataCopyPad\(GM->UB\): blockLen 6 bytes is not a multiple of sizeof\(T\) = 4"):
        launch(lib, np.float32, 7, bc=1, bl=6)
