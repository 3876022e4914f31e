"""Cube APIs that catlass and the dav-2201 examples use, against numpy models written from their pages:

- SetHF32Mode / SetHF32TransMode (HF32.md: float x float Mmads round both inputs to 11 mantissa bits first) and the
  Mmad order setters SetMMRowMajor / SetMMColumnMajor / SetMMLayoutTransform (timing only);
- LoadDataWithSparse + MmadWithSparse (4:2 structured sparsity, LoadDataWithSparse.md / MmadWithSparse.md);
- LoadData with LoadData3DParamsV2Pro after Load3DSetFMatrixCal (LoadData_3D.md, table 5), and the zero sizes
  CANN's debug checks reject;
- LoadData2DParamsV2, which dav-2201 lacks (LoadData_2D_V2.md), and Fill / InitConstValue footprints (Fill.md).

Kernels: tests/kernels/cube/cube_apis.cpp; the img2col cases reuse tests/kernels/cube/cube_more.cpp.
"""
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin
from test_twin_cube_more import CONV, KSRC as MORE_SRC, load3d

KSRC = Path(__file__).parent / "kernels" / "cube" / "cube_apis.cpp"
P_M, P_N, P_K, P_FLAGS, P_REP, P_BLK, P_GAP, P_LEN = range(8)
HF32, TOWARD_ZERO, BOOL_FORMS, ROW_MAJOR, OFF_AGAIN = 1, 2, 4, 8, 16
V2PRO = 64  # cube_more.cpp load3d flag


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KSRC, flags=["-O0"])


@pytest.fixture(scope="module")
def more():
    return twin.compile_kernel(MORE_SRC, flags=["-O0"])


def params(**kw):
    p = np.zeros(16, np.int64)
    for k, v in kw.items():
        p[globals()["P_" + k]] = v
    return p


def hf32(x, toward_zero):
    """HF32.md: drop 12 of float32's 23 mantissa bits, to nearest; ties to even, or to the smaller magnitude."""
    b = np.asarray(x, np.float32).view(np.uint32)
    low, keep = b & 0xFFF, b & ~np.uint32(0xFFF)
    tie_up = np.zeros_like(low, bool) if toward_zero else (keep & 0x1000) != 0
    up = (low > 0x800) | ((low == 0x800) & tie_up)
    return (keep + up.astype(np.uint32) * np.uint32(0x1000)).view(np.float32)


def matmul(lib, a, b, flags):
    M, K = a.shape
    N = b.shape[0]
    c = np.full((M, N), np.nan, np.float32)
    lib.launch("hf32_matmul", 1, a, b, c, params(M=M, N=N, K=K, FLAGS=flags), kernel_type="aic")
    return c


@pytest.mark.parametrize("flags", [HF32, HF32 | TOWARD_ZERO, HF32 | BOOL_FORMS, HF32 | TOWARD_ZERO | BOOL_FORMS | ROW_MAJOR])
def test_hf32_rounds_mmad_inputs(lib, rng, flags):
    a = rng.standard_normal((20, 24)).astype(np.float32)
    b = rng.standard_normal((40, 24)).astype(np.float32)
    c = matmul(lib, a, b, flags)
    tz = bool(flags & TOWARD_ZERO)
    want = hf32(a, tz).astype(np.float64) @ hf32(b, tz).astype(np.float64).T
    exact = a.astype(np.float64) @ b.astype(np.float64).T
    err, drift = np.abs(c - want).max(), np.abs(want - exact).max()
    assert err < 1e-5 and drift > 20 * err, (err, drift)


@pytest.mark.parametrize("flags", [0, ROW_MAJOR, ROW_MAJOR | BOOL_FORMS, HF32 | OFF_AGAIN])
def test_without_hf32_the_mmad_is_plain_float(lib, rng, flags):
    """No HF32 (or switched off again); the layout setters change the order of work, not the result."""
    a = rng.standard_normal((20, 24)).astype(np.float32)
    b = rng.standard_normal((40, 24)).astype(np.float32)
    c = matmul(lib, a, b, flags)
    assert np.abs(c - a.astype(np.float64) @ b.astype(np.float64).T).max() < 1e-5


@pytest.mark.parametrize("toward_zero", [False, True])
def test_hf32_ties(lib, rng, toward_zero):
    """Values exactly halfway between two HF32 numbers, times the identity: the tie rule shows in C itself."""
    a = rng.standard_normal((16, 16)).astype(np.float32)
    bits = (a.view(np.uint32) & ~np.uint32(0xFFF)) | np.uint32(0x800)  # low 12 bits = exactly half an HF32 step
    a = bits.view(np.float32)
    c = matmul(lib, a, np.eye(16, dtype=np.float32), HF32 | (TOWARD_ZERO if toward_zero else 0))
    np.testing.assert_array_equal(c, hf32(a, toward_zero))
    assert (np.abs(c) > np.abs(a)).any() != toward_zero  # ties to even round some magnitudes up; toward zero none


def sparse_case(rng, M, N, K):
    """A int8 [M, K]; B int8 [N, K] with at most 2 nonzeros per group of 4 along K; the dense B' and 2-bit index
    fractals as the pages lay them out (Zn: fractal (k1, n1) of 16 n x 32 k, index fractal 16 n x 8 bytes)."""
    a = rng.integers(-9, 10, (M, K)).astype(np.int8)
    b = np.zeros((N, K), np.int8)
    dense = np.zeros((N, K // 2), np.int8)
    index = np.zeros((N, K // 2), np.uint8)
    for n in range(N):
        for g in range(K // 4):
            p0, p1 = sorted(rng.choice(4, 2, replace=False))
            b[n, 4 * g + p0], b[n, 4 * g + p1] = rng.integers(-9, 10, 2)  # a value may be 0: fewer nonzeros
            dense[n, 2 * g : 2 * g + 2] = b[n, 4 * g + p0], b[n, 4 * g + p1]
            index[n, 2 * g : 2 * g + 2] = p0, p1 - 1  # first among elements 0..2, second among 1..3
    N1, Kd1 = -(-N // 16), -(-(K // 2) // 32)
    dz = np.zeros((Kd1 * 32, N1 * 16), np.int8)
    dz[: K // 2, :N] = dense.T
    dense_frac = dz.reshape(Kd1, 32, N1, 16).transpose(0, 2, 3, 1).reshape(-1)
    iz = np.zeros((N1 * 16, Kd1 * 32), np.uint8)
    iz[:N, : K // 2] = index
    packed = (iz[:, 0::4] | iz[:, 1::4] << 2 | iz[:, 2::4] << 4 | iz[:, 3::4] << 6).astype(np.uint8)
    idx_frac = packed.reshape(N1, 16, Kd1, 8).transpose(2, 0, 1, 3).reshape(-1)
    return a, b, dense_frac, idx_frac


def test_sparse_matmul(lib, rng):
    M, N, K = 32, 32, 128
    a, b, dense, idx = sparse_case(rng, M, N, K)
    c = np.zeros((M, N), np.int32)
    lib.launch("sparse_matmul", 1, a, dense, idx, c, params(M=M, N=N, K=K, REP=dense.size // 512), kernel_type="aic")
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64).T)


def test_sparse_matmul_without_index_raises(lib, rng):
    M, N, K = 16, 16, 64
    a, b, dense, idx = sparse_case(rng, M, N, K)
    with pytest.raises(twin.TwinError, match=r"MmadWithSparse: index of dense B element \(row 0, column 0\) is 3 "
                                             r"\(invalid\) or was never loaded"):
        lib.launch("sparse_matmul", 1, a, dense, idx, np.zeros((M, N), np.int32), params(M=M, N=N, K=K, REP=0),
                   kernel_type="aic")


def test_load3d_v2pro_after_load3d_set_fmatrix_cal(more, rng):
    """The packed form reads l1H / l1W / padList from Load3DSetFMatrixCal and the pad value from its register."""
    got, want = load3d(more, rng, "f16", **CONV, win=(3, 17, 32, 128), flags=V2PRO)
    assert np.array_equal(got, want) and (want == 3).any()
    got, want = load3d(more, rng, "f32", C=8, H=4, W=4, f=(2, 2), win=(0, 9, 8, 24), to_b=True, flags=V2PRO)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("kw,flags", [(dict(win=(0, 0, 0, 32)), 0), (dict(win=(0, 16, 0, 0)), V2PRO),
                                      (dict(ch=0), 0)], ids=["mExtension_0", "kExtension_0_v2pro", "channelSize_0"])
def test_load3d_zero_size_raises(more, rng, kw, flags):
    args = dict(CONV, win=(0, 16, 0, 32))
    args.update(kw)
    with pytest.raises(twin.TwinError, match=r"a zero size loads nothing \(a NOP per LoadData_3D.md, rejected by CANN"):
        load3d(more, rng, "f16", **args, flags=flags)


def test_load_data_2d_params_v2_is_not_on_dav_2201(lib):
    with pytest.raises(twin.TwinError, match=r"LoadData\(LoadData2DParamsV2\): not supported on Atlas A2/A3"):
        lib.launch("load2d_v2", 1, np.zeros(8, np.int64), kernel_type="aic")


def test_fill_l1_writes_runs_and_keeps_gaps(lib, rng):
    x = rng.standard_normal(2048).astype(np.float16)
    y = np.full_like(x, np.nan)
    lib.launch("fill_probe", 1, x, y, params(REP=4, BLK=8, GAP=8, LEN=x.nbytes), kernel_type="aic")
    want = x.copy()
    for r in range(4):  # runs of 8 x 32 B = 128 halves, 16 blocks = 256 halves apart
        want[r * 256 : r * 256 + 128] = 7
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("where,kw,span", [("L1", dict(REP=4, BLK=8, GAP=8, LEN=1024), 1792),
                                           ("L0A", dict(REP=3, BLK=2, GAP=0, LEN=2048, FLAGS=1), 3072)])
def test_fill_past_its_tensor_raises(lib, rng, where, kw, span):
    x = np.zeros(kw["LEN"] // 2, np.float16)
    with pytest.raises(twin.TwinError, match=rf"Fill: .* write bytes \[0, {span}\), past the {where} tensor's "
                                             rf"{kw['LEN']} bytes"):
        lib.launch("fill_probe", 1, x, x.copy(), params(**kw), kernel_type="aic")
    kw = dict(kw, REP=kw["REP"] - 1 if where == "L0A" else 2)  # control: the footprint fits
    lib.launch("fill_probe", 1, x, x.copy(), params(**kw), kernel_type="aic")


def pack_int4(x):
    """int values in [-8, 7] -> bytes, element 2i in the low nibble of byte i."""
    u = (x.astype(np.int16) & 0xF).astype(np.uint8).reshape(x.shape[0], -1, 2)
    return np.ascontiguousarray(u[..., 0] | (u[..., 1] << 4), np.uint8)


def test_int4_mmad(lib, rng):
    """Mmad.md table 7: int4b_t x int4b_t -> int32_t; ND2NZ moves b4 as b8 (parameters in bytes)."""
    M, N, K = 20, 24, 128
    a = rng.integers(-8, 8, (M, K))
    b = rng.integers(-8, 8, (N, K))
    c = np.zeros((M, N), np.int32)
    lib.launch("int4_matmul", 1, pack_int4(a), pack_int4(b), c, params(M=M, N=N, K=K), kernel_type="aic")
    np.testing.assert_array_equal(c, a @ b.T)


def test_int4_transposed_into_l0b(lib, rng):
    """LoadDataWithTranspose.md: int4b_t squares of four 16 x 64 fractals, transposed into L0B (B given as [K, N])."""
    M, N, K = 16, 128, 128
    a = rng.integers(-8, 8, (M, K))
    b = rng.integers(-8, 8, (K, N))
    c = np.zeros((M, N), np.int32)
    lib.launch("int4_matmul", 1, pack_int4(a), pack_int4(b), c, params(M=M, N=N, K=K, FLAGS=1), kernel_type="aic")
    np.testing.assert_array_equal(c, a @ b)


def test_int4_img2col_into_l0a(lib, rng):
    """LoadData3DParamsV2 with int4b_t (LoadData_3D.md: b4 into L0A, C0 = 64, kExtension a multiple of 64)."""
    from test_twin_cube_more import img2col
    C, H, W, pad, padv = 64, 3, 5, 1, -3
    fm = rng.integers(-8, 8, (C // 64, H, W, 64))
    X = img2col(fm.astype(np.float64), (pad,) * 4, padv, 1, 1, 1, 1, 1, 1)  # 35 x 64
    M, K = 32, 64
    eye = np.zeros((K, K), np.int64)  # Zn image of the K x K identity: fractal (k1, n1) of 16 n x 64 k
    eye[np.arange(K), np.arange(K)] = 1
    zn = eye.reshape(1, 64, K // 16, 16).transpose(0, 2, 3, 1).reshape(-1, 64)
    c = np.zeros((M, K), np.int32)
    lib.launch("int4_img2col", 1, pack_int4(fm.reshape(-1, 64)), pack_int4(zn), c,
               params(M=M, K=K, N=H, REP=W, FLAGS=C, GAP=pad, BLK=padv), kernel_type="aic")
    np.testing.assert_array_equal(c, X[:M, :K])
    assert (X[:M, :K] == padv).any()
