"""More data movement of the twin (dav-2201), against numpy models written from the API pages:

- DataCopy with SliceInfo (GM <-> UB multi-dimensional slices), including the documented example;
- DataCopyPad GM -> UB with 64-bit data (paddingValue must be 0 when isPad is set);
- DataCopy L1 -> GM (count form rounding down to 32 B, DataCopyParams with gaps in 32 B blocks);
- the strict checks around them.

Kernels: tests/kernels/datacopy/datacopy_more.cpp (one compile).
"""
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KSRC = Path(__file__).parent / "kernels" / "datacopy" / "datacopy_more.cpp"


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KSRC, flags=["-O0"])  # small shapes: compile time dominates


def selected(info, esize):
    """Flat element indices a SliceInfo list picks, in the order pieces are paired (highest dimension outermost).
    Dimension 0 pieces are burstLen x 32 B, higher ones single indices; `stride` elements between pieces."""
    per_dim = []
    for i, (st, en, stv, bl, _) in enumerate(info):
        piece = bl * 32 // esize if i == 0 else 1
        n = (en - st + 1 + stv) // (piece + stv)
        per_dim.append(np.array([st + q * (piece + stv) + e for q in range(n) for e in range(piece)]))
    pitch = np.cumprod([1] + [d[4] for d in info[:-1]])
    grids = np.meshgrid(*per_dim[::-1], indexing="ij")
    return sum(g * pitch[len(info) - 1 - j] for j, g in enumerate(grids)).reshape(-1)


def run_slice(lib, dtype, src, dst, back, n_in, n_ub, n_out, rng):
    dims = len(src)
    p = np.zeros(160, np.int32)
    p[0], p[1] = dims, n_ub
    for l, lst in enumerate((src, dst, back)):
        for i, s in enumerate(lst):
            o = 2 + (l * dims + i) * 5
            p[o : o + 5] = s
    x = rng.integers(-1000, 1000, n_in).astype(dtype)
    ub = np.zeros(n_ub, dtype)
    out = np.full(n_out, 5, dtype)
    kernel = {np.float32: "slice_f32", np.float16: "slice_f16"}[dtype]
    lib.launch(kernel, 1, p, x, ub, out, kernel_type="aiv")
    return x, ub, out


# The example of the DataCopy (GM <-> UB slice) page: float, a 3 x 87 source, four pieces into a 2 x 48 destination.
DOC_SRC = [(16, 70, 7, 3, 87), (0, 2, 1, 1, 3)]
DOC_DST = [(0, 47, 0, 3, 48), (0, 1, 0, 1, 2)]


def test_slice_documented_example(lib, rng):
    x, ub, out = run_slice(lib, np.float32, DOC_SRC, DOC_DST, DOC_DST, 3 * 87, 96, 96, rng)
    want = np.full(96, -1, np.float32)
    want[selected(DOC_DST, 4)] = x[selected(DOC_SRC, 4)]
    assert np.array_equal(ub, want)
    assert np.array_equal(out, want)  # copied back with the destination layout on both sides
    # rows 0 and 2 of the source, elements 16..39 and 47..70 of each
    assert np.array_equal(ub[:24], x[16:40]) and np.array_equal(ub[72:], x[174 + 47 : 174 + 71])


def test_slice_three_dims_half_with_gaps(lib, rng):
    src = [(3, 71, 5, 2, 80), (1, 3, 1, 1, 5), (0, 3, 2, 1, 4)]  # GM 4 x 5 x 80: rows 1, 3 of blocks 0, 3
    dst = [(0, 79, 16, 2, 80), (0, 1, 0, 1, 2), (0, 1, 0, 1, 2)]  # UB 2 x 2 x 80, 32 B holes between pieces
    back = [(7, 73, 3, 2, 90), (0, 2, 1, 1, 3), (1, 2, 0, 1, 3)]  # GM 3 x 3 x 90
    x, ub, out = run_slice(lib, np.float16, src, dst, back, 4 * 5 * 80, 320, 810, rng)
    want_ub = np.full(320, -1, np.float16)
    want_ub[selected(dst, 2)] = x[selected(src, 2)]
    assert np.array_equal(ub, want_ub)
    want_out = np.full(810, 5, np.float16)
    want_out[selected(back, 2)] = ub[selected(dst, 2)]
    assert np.array_equal(out, want_out)
    assert np.all(ub[32:48] == -1), "the UB stride between pieces is skipped"


SLICE_MISUSE = [  # (id, src list, dst list, message)
    ("piece_count_differs", DOC_SRC, [DOC_DST[0], (0, 2, 0, 1, 3)],
     r"DataCopy\(GM->UB, SliceInfo\): dimension 1: the source has 2 pieces but the destination 3"),
    ("burst_above_dim0", [DOC_SRC[0], (0, 2, 1, 2, 3)], DOC_DST, r"srcSliceInfo\[1\].burstLen is 2: above dimension 0 it must be 1"),
    ("burst_differs", DOC_SRC, [(0, 63, 0, 4, 64), DOC_DST[1]], r"srcSliceInfo burstLen 3 differs from dstSliceInfo burstLen 4"),
    ("formula", [(16, 71, 7, 3, 87), DOC_SRC[1]], DOC_DST,
     r"srcSliceInfo\[0\]: endIndex - startIndex \+ 1 = 56 is not \(N - 1\) x stride 7 \+ N x 24 elements"),
    ("end_past_shape", [(16, 70, 7, 3, 60), DOC_SRC[1]], DOC_DST,
     r"srcSliceInfo\[0\]: startIndex 16, endIndex 70, shapeValue 60 break startIndex < endIndex <= shapeValue"),
    ("ub_stride_unaligned", DOC_SRC, [(0, 52, 5, 3, 53), DOC_DST[1]], r"UB-side stride 5 elements \(20 bytes\) is not a multiple of 32"),
    ("ub_piece_unaligned", DOC_SRC, [(4, 51, 0, 3, 52), DOC_DST[1]], r"UB piece at element 4 \(byte 16\) is not 32-byte aligned"),
]


@pytest.mark.parametrize("src,dst,msg", [m[1:] for m in SLICE_MISUSE], ids=[m[0] for m in SLICE_MISUSE])
def test_slice_misuse_raises(lib, rng, src, dst, msg):
    with pytest.raises(twin.TwinError, match=msg):
        run_slice(lib, np.float32, src, dst, dst, 3 * 87, 128, 128, rng)


def test_slice_dim_value_limit(lib, rng):
    info = [(0, 7, 0, 1, 8)] + [(0, 1, 0, 1, 2)] * 8
    with pytest.raises(twin.TwinError, match=r"\[AIV 0 \(block 0, sub 0\)\] DataCopy\(GM->UB, SliceInfo\): dimValue 9 is outside \[1, 8\]"):
        run_slice(lib, np.float32, info, info, info, 4096, 128, 128, rng)


# ---- DataCopyPad with 64-bit data ----
def run_pad(lib, kernel, rows, elems, right, is_pad, value, params_form, rng):
    dtype = np.int64 if kernel == "pad_i64" else np.float64
    x = rng.integers(-10**6, 10**6, rows * elems).astype(dtype)
    row = -(-(elems + right) * 8 // 32) * 32 // 8
    out = np.zeros(rows * row, dtype)
    p = np.array([rows, elems * 8, right, int(is_pad), value, int(params_form), 0, 0], np.int64)
    lib.launch(kernel, 1, p, x, out, kernel_type="aiv")
    return x.reshape(rows, elems), out.reshape(rows, row)


@pytest.mark.parametrize("kernel,params_form", [("pad_i64", False), ("pad_f64", True)], ids=["i64_ext", "f64_params"])
def test_pad_64bit_zero_value(lib, rng, kernel, params_form):
    x, out = run_pad(lib, kernel, 3, 3, 1, True, 0, params_form, rng)
    assert np.array_equal(out[:, :3], x)
    assert np.all(out[:, 3] == 0)


def test_pad_64bit_value_ignored_without_is_pad(lib, rng):
    """paddingValue only matters with isPad = true, so a non-zero value there is no error."""
    x, out = run_pad(lib, "pad_i64", 2, 5, 3, False, 9, False, rng)
    assert np.array_equal(out[:, :5], x)


@pytest.mark.parametrize("kernel,params_form", [("pad_i64", False), ("pad_f64", True)], ids=["i64_ext", "f64_params"])
def test_pad_64bit_nonzero_value_raises(lib, rng, kernel, params_form):
    with pytest.raises(twin.TwinError, match=r"DataCopyPad\(GM->UB\): paddingValue bits 0x7: for 64-bit types paddingValue can only be 0"):
        run_pad(lib, kernel, 2, 3, 1, True, 7, params_form, rng)


# ---- L1 -> GM ----
def run_l1_gm(lib, rng, offset, params_form, a, b=0, c=0, d=0, n_out=64):
    x = rng.standard_normal(256)
    out = np.full(n_out, 9.0)
    p = np.array([256, offset, int(params_form), a, b, c, d, 0], np.int64)
    lib.launch("l1_gm", 1, p, x, out, kernel_type="aic")
    return x, out


def test_l1_to_gm_count_rounds_down_to_32_bytes(lib, rng):
    x, out = run_l1_gm(lib, rng, 8, False, 21)  # 21 doubles = 168 B -> 160 B
    assert np.array_equal(out[:20], x[8:28])
    assert np.all(out[20:] == 9.0)


def test_l1_to_gm_params_gaps(lib, rng):
    x, out = run_l1_gm(lib, rng, 4, True, 3, 2, 1, 2)  # 3 blocks of 64 B, srcGap 32 B, dstGap 64 B
    want = np.full(64, 9.0)
    for blk in range(3):
        want[blk * 16 : blk * 16 + 8] = x[4 + blk * 12 : 4 + blk * 12 + 8]
    assert np.array_equal(out, want)


@pytest.mark.parametrize("offset,form,a,msg", [
    (2, False, 8, r"\[AIC 0\] DataCopy\(L1->GM\): src address 16 in L1 is not 32-byte aligned"),
    (0, True, 4096, r"DataCopy\(L1->GM\): blockCount 4096 is outside \[0, 4095\]"),
], ids=["misaligned_src", "block_count"])
def test_l1_to_gm_misuse_raises(lib, rng, offset, form, a, msg):
    with pytest.raises(twin.TwinError, match=msg):
        run_l1_gm(lib, rng, offset, form, a, 1, 0, 0)
