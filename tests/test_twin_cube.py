"""The twin's cube unit (AIC): GM -> L1 (Nd2Nz), L1 -> L0A/L0B (LoadData, LoadDataWithTranspose), Mmad, Fixpipe.

Results are checked against numpy float64 references built from the same rounded inputs. The kernels live in
tests/kernels/cube/ and take their shapes and modes from an int32 GM parameter buffer, so each source compiles once.
"""
import re
import struct
import time
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KDIR = Path(__file__).parent / "kernels" / "cube"

# Fault-injection flags of gemm.cpp.
SKIP_TRANSPOSE, MISALIGN_L0A, HUGE_M, L1_OVERFLOW, ACCUMULATE_FIRST, NZ_OUTPUT, GEMV_A = 1, 2, 4, 8, 16, 32, 64


@pytest.fixture(scope="module")
def gemm():
    return twin.compile_kernel(KDIR / "gemm.cpp")


@pytest.fixture(scope="module")
def sample():
    return twin.compile_kernel(KDIR / "official_style.cpp")


@pytest.fixture(scope="module")
def probe():
    return twin.compile_kernel(KDIR / "load_probe.cpp")


# ---- bf16 helpers (numpy has no bfloat16): values are carried as uint16 bit patterns ----
def to_bf16_bits(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # round to nearest even
    return u.astype(np.uint16)


def bf16_to_f64(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def make_input(rng, shape, dtype):
    """(GM array, float64 view of the values the kernel sees)."""
    x = rng.standard_normal(shape).astype(np.float32)
    if dtype == "f16":
        h = x.astype(np.float16)
        return h, h.astype(np.float64)
    if dtype == "bf16":
        b = to_bf16_bits(x)
        return b, bf16_to_f64(b)
    return x, x.astype(np.float64)


def params(*vals, n=8):
    p = np.zeros(n, np.int32)
    p[: len(vals)] = vals
    return p


def run_gemm(lib, rng, dtype, M, N, K, b_trans, out=0, k_tile=64, flags=0):
    a, a64 = make_input(rng, (M, K), dtype)
    b, b64 = make_input(rng, (N, K) if b_trans else (K, N), dtype)
    ref = a64 @ (b64.T if b_trans else b64)
    c = np.zeros((M, N), {0: np.float32, 1: np.float16, 2: np.uint16}[out])
    lib.launch(f"gemm_{dtype}", 1, a, b, c, params(M, N, K, int(b_trans), out, k_tile, flags), kernel_type="aic")
    got = bf16_to_f64(c) if out == 2 else c.astype(np.float64)
    # fp32 accumulation error bound plus the output rounding (half 2^-11, bf16 2^-8 relative).
    bound = 1e-5 * (np.abs(a64) @ np.abs(b64.T if b_trans else b64)) + {0: 0.0, 1: 2.0**-11, 2: 2.0**-8}[out] * np.abs(ref)
    return got, ref, bound + 1e-6


SHAPES = [(64, 48, 128), (37, 53, 100), (128, 128, 160), (16, 200, 48)]


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
@pytest.mark.parametrize("b_trans", [True, False], ids=["A_BT", "A_B"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_fp32_out(gemm, rng, dtype, b_trans, shape):
    M, N, K = shape
    k_tile = 32 if dtype == "f32" else 64  # several K steps accumulating in L0C, last one unaligned when K % tile
    got, ref, bound = run_gemm(gemm, rng, dtype, M, N, K, b_trans, out=0, k_tile=k_tile)
    assert np.all(np.abs(got - ref) <= bound), f"max err {np.abs(got - ref).max()}"


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
@pytest.mark.parametrize("out", [1, 2], ids=["F322F16", "F322BF16"])
@pytest.mark.parametrize("b_trans", [True, False], ids=["A_BT", "A_B"])
def test_gemm_lowp_out(gemm, rng, dtype, out, b_trans):
    got, ref, bound = run_gemm(gemm, rng, dtype, 45, 70, 90, b_trans, out=out, k_tile=32)
    assert np.all(np.abs(got - ref) <= bound), f"max err {np.abs(got - ref).max()}"


def test_fixpipe_rounds_to_nearest_even(gemm):
    # A = I (16 x 16), so C = B^T exactly in fp32 and F322F16 / F322BF16 is the only rounding.
    # Exact ties for half (1 + 2^-11, 1 + 3*2^-11) and bf16 (1 + 2^-8, 1 + 3*2^-8), near-ties, overflow, underflow.
    vals = np.array([1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-9, -(1 + 2**-11), 65519.0,
                     65520.0, 2**-25, 3 * 2**-26, -(1 + 3 * 2**-8)], np.float32)
    b = np.resize(vals, (16, 16)).astype(np.float32)
    a = np.eye(16, dtype=np.float32)
    c16 = np.zeros((16, 16), np.float16)
    gemm.launch("gemm_f32", 1, a, b, c16, params(16, 16, 16, 1, 1, 32, 0), kernel_type="aic")
    with np.errstate(over="ignore"):
        want16 = b.T.astype(np.float16)  # numpy rounds to nearest even; 65520 -> inf
    assert np.array_equal(c16.view(np.uint16), want16.view(np.uint16))
    cb = np.zeros((16, 16), np.uint16)
    gemm.launch("gemm_f32", 1, a, b, cb, params(16, 16, 16, 1, 2, 32, 0), kernel_type="aic")
    assert np.array_equal(cb, to_bf16_bits(b.T))


def test_nz_output_layout(gemm, rng):
    M, N, K = 40, 50, 64
    a, a64 = make_input(rng, (M, K), "f16")
    b, b64 = make_input(rng, (N, K), "f16")
    M16, N16 = 48, 64
    c = np.empty((N16 // 16, M16, 16), np.float32)
    c[...] = 7.0
    gemm.launch("gemm_f16", 1, a, b, c, params(M, N, K, 1, 0, 64, NZ_OUTPUT), kernel_type="aic")
    nd = c.transpose(1, 0, 2).reshape(M16, N16)
    ref = a64 @ b64.T
    assert np.abs(nd[:M, :N] - ref).max() < 1e-3
    assert np.all(nd[M:, :] == 7.0), "rows past mSize must not be written"


def test_gemv_mode_reads_nd_row(gemm, rng):
    """m == 1 runs Mmad in GEMV mode: A must sit in L0A as one ND row; the Zz staging only works for k <= 16."""
    M, N, K = 1, 40, 100
    got, ref, bound = run_gemm(gemm, rng, "f16", M, N, K, True, flags=GEMV_A)
    assert np.all(np.abs(got - ref) <= bound)
    with pytest.warns(twin.TwinWarning) as rec:  # the unloaded part of the row is poison: the Mmad warns, and the
        run_gemm(gemm, rng, "f16", M, N, K, True)  # launch end reports the poison stored to C
    msgs = [str(w.message) for w in rec]
    assert any(re.search(r"Mmad: fm \(L0A\) holds the twin's never-written poison .*GEMV mode", m) for m in msgs), msgs
    assert any(re.search(r"Fixpipe\(L0C->GM\): stored poison to GM buffer 'argument 2'", m) for m in msgs), msgs


def test_missing_transpose_gives_wrong_numbers(gemm, rng):
    # Aligned shape: every fractal is fully written, so skipping the per-fractal transpose reads valid but wrongly
    # placed data -> silent wrong result, as on the NPU.
    got, ref, bound = run_gemm(gemm, rng, "f16", 32, 48, 64, False, flags=SKIP_TRANSPOSE)
    assert np.isfinite(got).all()
    assert np.abs(got - ref).max() > 1.0


GEMM_MISUSE = [  # (id, gemm.cpp flag, what the twin reports)
    ("accumulate_onto_unwritten_l0c", ACCUMULATE_FIRST, r"never written.*cmatrixInitVal = true"),
    ("l0a_misalignment", MISALIGN_L0A, r"LoadData\(L1->L0\): dst address 256 in L0A is not 512-byte aligned"),
    ("mmad_dimension_limit", HUGE_M, r"Mmad: m = 4096, n = 32, k = 64: each must lie in \[0, 4095\]"),
    ("l1_capacity", L1_OVERFLOW, r"\[AIC 0\] TPipe::InitBuffer: L1 exhausted.*usable capacity 524288"),
]


@pytest.mark.parametrize("flag,msg", [m[1:] for m in GEMM_MISUSE], ids=[m[0] for m in GEMM_MISUSE])
def test_gemm_misuse_raises(gemm, rng, flag, msg):
    with pytest.raises(twin.TwinError, match=msg):
        run_gemm(gemm, rng, "f16", 32, 32, 64, True, flags=flag)


def test_l0_capacity_raises():
    src = """
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void too_big(GM_ADDR p) {
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)p, 2);
    TPipe pipe;
    TQue<TPosition::A2, 1> qa;
    TQue<TPosition::CO1, 1> qc;
    if (g.GetValue(0) == 0) pipe.InitBuffer(qa, 2, 32 * 1024 + 512);  // 2 x 32.5 KB > 64 KB L0A
    else pipe.InitBuffer(qc, 1, 129 * 1024);                          // > 128 KB L0C
}
"""
    lib = twin.compile_kernel(src)
    with pytest.raises(twin.TwinError, match=r"L0A exhausted: 2 x 33280 bytes.*usable capacity 65536"):
        lib.launch("too_big", 1, params(0), kernel_type="aic")
    with pytest.raises(twin.TwinError, match=r"L0C exhausted: 1 x 132096 bytes.*usable capacity 131072"):
        lib.launch("too_big", 1, params(1), kernel_type="aic")


def test_cube_api_on_vector_core_raises(gemm):
    with pytest.raises(twin.TwinError, match=r"\[AIV 0 \(block 0, sub 0\)\] LoadData\(L1->L0\): cube/L1/L0 API called on a vector core"):
        gemm.launch("cube_on_aiv", 1, np.zeros(16, np.float32), kernel_type="aiv")


def test_vector_datacopy_on_cube_core_raises(gemm):
    with pytest.raises(twin.TwinError, match=r"\[AIC 0\].*(UB does not exist on the cube core|cube core \(AIC\))"):
        gemm.launch("ub_copy_on_aic", 1, np.zeros(64, np.float32), kernel_type="aic")


def test_mmad_speed_and_fill(gemm):
    """Fill sets L0A/L0B; 128x128x128 Mmads accumulate reps * k * 0.5 * 2 exactly. Reports the twin's GFLOP/s."""
    M = N = K = 128
    reps = 40
    for dt in ("f16", "f32"):
        c = np.zeros((M, N), np.float32)
        p = params(M, N, K, reps)
        dt_s = 1e9
        for _ in range(3):  # best of three: the machine may be shared
            t0 = time.perf_counter()
            gemm.launch(f"mmad_bench_{dt}", 1, c, p, kernel_type="aic")
            dt_s = min(dt_s, time.perf_counter() - t0)
            assert np.all(c == reps * K * 1.0)
        gflops = 2.0 * M * N * K * reps / dt_s / 1e9
        print(f"twin Mmad {dt} 128x128x128: {gflops:.2f} GFLOP/s per thread")
        assert gflops > 0.2  # loose floor: several GFLOP/s expected, CI machines vary


def test_trace_records_cube_pipes(gemm, rng):
    M, N, K = 32, 32, 96
    a, _ = make_input(rng, (M, K), "f16")
    b, _ = make_input(rng, (N, K), "f16")
    c = np.zeros((M, N), np.float32)
    gemm.launch("gemm_f16", 1, a, b, c, params(M, N, K, 1, 0, 64, 0), kernel_type="aic", trace=True)
    (core,) = gemm.last_trace()
    instr = [r for r in core["records"] if r["kind"] == "instr"]
    pipes = {r["op"]: r["pipe"] for r in instr}
    assert pipes["DataCopy(GM->L1, Nd2NzParams)"] == "MTE2"
    assert pipes["LoadData(L1->L0)"] == "MTE1"
    assert pipes["Mmad"] == "M"
    assert pipes["Fixpipe(L0C->GM)"] == "FIX"
    mm = [r for r in instr if r["op"] == "Mmad"]
    assert [r["elems"] for r in mm] == [M * N * 64, M * N * 32]  # MACs per K step
    fx = [r for r in instr if r["op"].startswith("Fixpipe")]
    assert fx[0]["elems"] == M * N and fx[0]["bytes"] == M * N * 4


# ---- official-sample-style kernel ----
def test_sample_half_b_kn_nz_output(sample, rng):
    m, k, n = 40, 70, 50
    a, a64 = make_input(rng, (m, k), "f16")
    b, b64 = make_input(rng, (k, n), "f16")
    N1 = -(-n // 16)
    c = np.empty((N1, m, 16), np.float16)
    sample.launch("matmul_sample", 1, a, b, None, c, params(1, m, k, n), kernel_type="aic")
    got = c.transpose(1, 0, 2).reshape(m, N1 * 16)[:, :n].astype(np.float64)
    ref = a64 @ b64
    assert np.all(np.abs(got - ref) <= 2.0**-10 * np.abs(ref) + 1e-4 * (np.abs(a64) @ np.abs(b64)))


def test_sample_float_transposed_a_kdirection_align(sample, rng):
    m, k, n = 40, 70, 50
    at, at64 = make_input(rng, (k, m), "f32")
    b, b64 = make_input(rng, (k, n), "f32")
    c = np.zeros((m, n), np.float32)
    sample.launch("matmul_sample", 1, at, b, None, c, params(2, m, k, n), kernel_type="aic")
    ref = at64.T @ b64
    assert np.abs(c - ref).max() <= 1e-5 * (np.abs(at64.T) @ np.abs(b64)).max()
    # Without kDirectionAlign the cube walks L0A with an 8-aligned k stride and lands in unwritten fractals: the
    # Mmad warns (poison inside the m x k it computes), and the poisoned results it stores are reported too.
    with pytest.warns(twin.TwinWarning) as rec:
        sample.launch("matmul_sample", 1, at, b, None, c, params(2, m, k, n, 0, 0, 1), kernel_type="aic")
    msgs = [str(w.message) for w in rec]
    assert any(re.search(r"Mmad: fm \(L0A\) holds the twin's never-written poison", x) for x in msgs), msgs
    assert any("stored poison to GM" in x for x in msgs), msgs
    assert np.isnan(c).any()


def test_sample_fixpipe_to_l1_feeds_second_matmul(sample, rng):
    m, k, n = 32, 64, 48
    a, a64 = make_input(rng, (m, k), "f16")
    b, b64 = make_input(rng, (n, k), "f16")
    d, d64 = make_input(rng, (m, n), "f16")
    c = np.zeros((m, m), np.float32)
    sample.launch("matmul_sample", 1, a, b, d, c, params(3, m, k, n), kernel_type="aic")
    c1 = (a64 @ b64.T).astype(np.float16).astype(np.float64)  # F322F16 into L1
    ref = c1 @ d64.T
    # The fp32 sum of the first Mmad may round to the neighbouring half of the float64 reference: allow one half ulp
    # per element of C1 (a layout error would be off by O(1)).
    bound = 2.0**-10 * (np.abs(c1) @ np.abs(d64.T)) + 1e-5 * (np.abs(c1) @ np.abs(d64.T)).max()
    assert np.all(np.abs(c - ref) <= bound)


def test_sample_quant_int8_with_relu(sample, rng):
    m, k, n = 37, 64, 45
    # Small integers keep C exact in fp32, so scale * C hits exact .5 ties: round-half-even is checked too.
    a = rng.integers(-4, 5, (m, k)).astype(np.float16)
    b = rng.integers(-4, 5, (n, k)).astype(np.float16)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    scale = 1.5
    word = struct.unpack("<I", struct.pack("<f", scale))[0] | (1 << 46)  # sign bit: int8 result
    c = np.zeros((m, n), np.int8)
    lo = np.uint32(word & 0xFFFFFFFF).view(np.int32)
    sample.launch("matmul_sample", 1, a, b, None, c, params(4, m, k, n, lo, word >> 32), kernel_type="aic")
    cf = a64 @ b64.T
    q = np.clip(np.round(np.clip(np.maximum(cf, 0) * scale, -256, 255)), -128, 127).astype(np.int8)
    assert np.array_equal(c, q)
    assert (c > 0).any() and (c == 0).any() and (c == 127).any()  # ReLU and saturation both exercised
    assert (np.abs(np.maximum(cf, 0) * scale % 1 - 0.5) < 1e-12).any()  # and exact ties


def test_sample_bias_table(sample, rng):
    m, k, n = 40, 64, 50
    a, a64 = make_input(rng, (m, k), "f16")
    b, b64 = make_input(rng, (n, k), "f16")
    bias = np.zeros(64, np.float32)  # GM -> L1 copies whole 32 B blocks: pad to 16 floats
    bias[:n] = rng.standard_normal(n)
    c = np.zeros((m, n), np.float32)
    sample.launch("matmul_sample", 1, a, b, bias, c, params(6, m, k, n), kernel_type="aic")
    ref = a64 @ b64.T + bias[:n]
    assert np.abs(c - ref).max() <= 1e-5 * ((np.abs(a64) @ np.abs(b64.T)).max() + 1)


def test_sample_per_column_quant_from_l1(sample, rng):
    m, k, n = 32, 64, 48
    a = rng.integers(-4, 5, (m, k)).astype(np.float16)
    b = rng.integers(-4, 5, (n, k)).astype(np.float16)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    scales = rng.choice([0.25, 0.5, 1.0, 2.0, 0.75], n).astype(np.float32)  # exact in the (1, 8, 10) format
    offsets = rng.integers(-20, 20, n)
    words = scales.view(np.uint32).astype(np.uint64) | ((offsets.astype(np.uint64) & 0x1FF) << 37) | (1 << 46)
    c = np.zeros((m, n), np.int8)
    sample.launch("matmul_sample", 1, a, b, words, c, params(7, m, k, n), kernel_type="aic")
    cf = a64 @ b64.T
    q = np.clip(np.round(np.clip(cf * scales, -256, 255)) + offsets, -128, 127).astype(np.int8)
    assert np.array_equal(c, q)


def test_sample_int8_int32(sample, rng):
    m, k, n = 33, 96, 40
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (n, k)).astype(np.int8)
    c = np.zeros((m, n), np.int32)
    sample.launch("matmul_sample", 1, a, b, None, c, params(5, m, k, n), kernel_type="aic")
    assert np.array_equal(c, a.astype(np.int64) @ b.T.astype(np.int64))


# ---- LoadData / LoadDataWithTranspose semantics, read back through Mmad with an identity ----
def zn_identity(K, K0):
    """L0B Zn image of the K x K identity."""
    N1, K1 = K // 16, K // K0
    img = np.zeros((K1, N1, 16, K0), np.float64)
    for k1 in range(K1):
        for n1 in range(N1):
            for n0 in range(16):
                for k0 in range(K0):
                    img[k1, n1, n0, k0] = float(k1 * K0 + k0 == n1 * 16 + n0)
    return img.reshape(-1)


def l0a_image_from_c(c, M1, K1, K0):
    """Inverse of the Zz map: the flat L0A contents that Mmad saw as A = C."""
    return c.reshape(M1, 16, K1, K0).transpose(0, 2, 1, 3).reshape(-1)


def model_load2d(src, n_dst, frac, start, rep, stride, gap, transpose, addr_mode, dst_off=0):
    dst = np.zeros(n_dst, src.dtype)
    for i in range(rep):
        s = start + (i * stride if addr_mode == 0 else -i * stride)
        f = src[s * frac : (s + 1) * frac]
        if transpose:
            f = f.reshape(16, 16).T.reshape(-1)
        d = dst_off + i * (gap + 1) * frac
        dst[d : d + frac] = f
    return dst


def model_transpose_b8(src, n_dst, start, rep, stride, gap, frac_gap):
    dst = np.zeros(n_dst, src.dtype)
    for i in range(rep):
        s = (start + i * stride) * 1024
        sq = src[s : s + 1024].reshape(32, 32).T.reshape(-1)
        d0 = i * (gap + 1) * 512
        d1 = d0 + (1 + frac_gap) * 512
        dst[d0 : d0 + 512] = sq[:512]
        dst[d1 : d1 + 512] = sq[512:]
    return dst


def run_probe(lib, kind, mode, start, rep, stride, gap, tr, addr, frac_gap, M1, K1, src, dst_off=0, fill=(0, 0, 0, 0),
              copy=(0, 0, 0, 0)):
    K0 = 16 if kind == "b16" else 32
    M, K = M1 * 16, K1 * K0
    eye = zn_identity(K, K0).astype(np.float16 if kind == "b16" else np.int8)
    out = np.zeros((M, K), np.float32 if kind == "b16" else np.int32)
    p = params(mode, start, rep, stride, gap, int(tr), addr, frac_gap, M1, K1, src.size, dst_off, *fill, *copy, n=20)
    lib.launch(f"probe_{kind}", 1, src, eye, out, p, kernel_type="aic")
    return l0a_image_from_c(out, M1, K1, K0)


@pytest.mark.parametrize(
    "start,rep,stride,gap,tr,addr",
    [(1, 3, 2, 1, False, 0), (0, 4, 1, 0, True, 0), (2, 3, 0, 0, False, 0), (5, 3, 2, 0, True, 1), (0, 8, 3, 0, False, 0)],
    ids=["strided", "transpose", "srcStride0", "addrMode1", "stride3"],
)
def test_loaddata_2d_semantics(probe, rng, start, rep, stride, gap, tr, addr):
    src = rng.integers(-1000, 1000, 32 * 256).astype(np.float16)  # 32 fractals of distinct-ish values
    M1, K1 = 2, 4  # L0A seen as 32 x 64 (8 fractals)
    got = run_probe(probe, "b16", 0, start, rep, stride, gap, tr, addr, 0, M1, K1, src)
    want = model_load2d(src.astype(np.float64), M1 * K1 * 256, 256, start, rep, stride, gap, tr, addr)
    assert np.array_equal(got, want)


def test_fill_l1_blocks_then_load(probe, rng):
    """Fill on L1 works in 32 B blocks: repeatTimes x (blockNum blocks written, dstGap blocks skipped)."""
    src = rng.integers(-1000, 1000, 16 * 256).astype(np.float16)
    rep, blocks, gap, value = 3, 5, 7, 0x3C00  # 0x3C00 is half 1.0
    got = run_probe(probe, "b16", 0, 0, 8, 1, 0, False, 0, 0, 2, 4, src, fill=(rep, blocks, gap, value))
    l1 = src.copy()
    for r in range(rep):
        s0 = r * (blocks + gap) * 16
        l1[s0 : s0 + blocks * 16] = 1.0
    want = model_load2d(l1.astype(np.float64), 8 * 256, 256, 0, 8, 1, 0, False, 0)
    assert np.array_equal(got, want)
    with pytest.raises(twin.TwinError, match=r"Fill: blockNum is 0"):
        run_probe(probe, "b16", 0, 0, 8, 1, 0, False, 0, 0, 2, 4, src, fill=(2, 0, 0, 1))


def test_datacopy_gm_to_l1_with_params(probe, rng):
    """DataCopyParams GM -> L1: blockLen, srcGap and dstGap all in 32 B blocks (16 halves)."""
    src = rng.integers(-1000, 1000, 16 * 256).astype(np.float16)
    count, length, sgap, dgap = 5, 12, 3, 4
    got = run_probe(probe, "b16", 0, 0, 8, 1, 0, False, 0, 0, 2, 4, src, copy=(count, length, sgap, dgap))
    l1 = np.zeros(8 * 256, np.float64)
    for i in range(count):
        s0, d0 = i * (length + sgap) * 16, i * (length + dgap) * 16
        l1[d0 : d0 + length * 16] = src[s0 : s0 + length * 16]
    assert np.array_equal(got, l1)


def test_loaddata_with_transpose_b16(probe, rng):
    src = rng.integers(-1000, 1000, 16 * 256).astype(np.float16)
    got = run_probe(probe, "b16", 1, 1, 4, 2, 1, False, 0, 0, 2, 4, src)
    want = model_load2d(src.astype(np.float64), 8 * 256, 256, 1, 4, 2, 1, True, 0)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("gap,frac_gap", [(1, 0), (0, 2)])
def test_loaddata_with_transpose_b8(probe, rng, gap, frac_gap):
    src = rng.integers(-128, 128, 8 * 512).astype(np.int8)
    M1, K1 = 2, 3  # L0A seen as 32 x 96 int8 (6 fractals of 16 x 32)
    got = run_probe(probe, "b8", 1, 1, 2, 1, gap, False, 0, frac_gap, M1, K1, src)
    want = model_transpose_b8(src.astype(np.int64), M1 * K1 * 512, 1, 2, 1, gap, frac_gap)
    assert np.array_equal(got, want)


def test_load_errors(probe, rng):
    b16 = rng.integers(-100, 100, 16 * 256).astype(np.float16)
    b8 = rng.integers(-100, 100, 8 * 512).astype(np.int8)
    with pytest.raises(twin.TwinError, match=r"ifTranspose works only for b16 data.*int8_t"):
        run_probe(probe, "b8", 0, 0, 2, 1, 0, True, 0, 0, 2, 2, b8)
    with pytest.raises(twin.TwinError, match=r"LoadDataWithTranspose: dst fractal 1 is written twice"):
        run_probe(probe, "b8", 1, 0, 2, 1, 0, False, 0, 0, 2, 2, b8)
    with pytest.raises(twin.TwinError, match=r"addrMode 1 \(decrement\) walks below the source start"):
        run_probe(probe, "b16", 0, 1, 3, 1, 0, False, 1, 0, 2, 2, b16)
    with pytest.raises(twin.TwinError, match=r"src: fractal 600 .* past the tensor's 262144 bytes"):
        run_probe(probe, "b16", 0, 600, 1, 1, 0, False, 0, 0, 2, 2, b16)  # the L1 tensor holds 512 fractals
    with pytest.raises(twin.TwinError, match=r"not 512-byte aligned"):
        run_probe(probe, "b16", 0, 0, 1, 1, 0, False, 0, 0, 2, 2, b16, dst_off=32)


MISUSE_SRC = r"""
#include "kernel_operator.h"
using namespace AscendC;
// One 32 x 32 half matmul into L0C, then a Fixpipe (or another call) that p[0] picks.
extern "C" __global__ __aicore__ void misuse(GM_ADDR a, GM_ADDR out, GM_ADDR prm) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 4);
    const int32_t which = P.GetValue(0);
    GlobalTensor<half> aG;
    aG.SetGlobalBuffer((__gm__ half*)a, 32 * 32);
    LocalTensor<half> a1(TPosition::A1, 0, 1024), b1(TPosition::B1, 4096, 1024);
    LocalTensor<half> a2(TPosition::A2, 0, 1024), b2(TPosition::B2, 0, 1024);
    LocalTensor<float> c(TPosition::CO1, 0, 64 * 64);
    if (which == 1) {  // DataCopyPad into L1 does not exist on dav-2201
        DataCopyPad(a1, aG, DataCopyExtParams(1, 64, 0, 0, 0), DataCopyPadExtParams<half>(false, 0, 0, half(0.0f)));
        return;
    }
    DataCopy(a1, aG, Nd2NzParams(1, 32, 32, 0, 32, 32, 1, 0));
    DataCopy(b1, aG, Nd2NzParams(1, 32, 32, 0, 32, 32, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    LoadData(a2[0], a1[0], LoadData2DParams(0, 2, 2, 0, 0, false, 0));
    LoadData(a2[512], a1[256], LoadData2DParams(0, 2, 2, 0, 0, false, 0));
    LoadData(b2, b1, LoadData2DParams(0, 4, 1, 0, 0, false, 0));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    Mmad(c, a2, b2, MmadParams(32, 32, 32, 0, false, true));
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    GlobalTensor<float> oF;
    oF.SetGlobalBuffer((__gm__ float*)out, 64 * 64);
    GlobalTensor<half> oH;
    oH.SetGlobalBuffer((__gm__ half*)out, 64 * 64);
    LocalTensor<half> l1Out(TPosition::C1, 65536, 4096);
    switch (which) {
        case 2: Fixpipe(oH, c, FixpipeParamsV220(32, 32, 32, 32, false)); break;            // half out, NoQuant
        case 3: Fixpipe<float, float, CFG_NZ>(oF, c, FixpipeParamsV220(24, 32, 32, 64, false)); break;  // nSize 24
        case 4: Fixpipe(oF, c, FixpipeParamsV220(64, 32, 32, 64, false)); break;            // columns 32..63: unwritten
        case 5: {  // L0C -> L1 with the default (ROW_MAJOR) config
            FixpipeParamsV220 fp(32, 32, 32, 32, false);
            fp.quantPre = QuantMode_t::F322F16;
            Fixpipe(l1Out, c, fp);
            break;
        }
        case 6: Fixpipe(oF, c, FixpipeParamsV220(32, 32, 16, 32, false)); break;            // srcStride < mSize
        case 7: {  // atomic type does not match the output type
            SetAtomicAdd<half>();
            Fixpipe(oF, c, FixpipeParamsV220(32, 32, 32, 32, false));
            break;
        }
        case 8: Fixpipe(oF, c, FixpipeParamsV220(32, 32, 32, 16, false)); break;            // ND rows overlap
        case 9: {  // two ND matrices: column blocks 0 and 1 of C, 2 KB apart in L0C, 512 elements apart in GM
            FixpipeParamsV220 fp(16, 32, 32, 16, false);
            fp.ndNum = 2;
            fp.srcNdStride = 2;
            fp.dstNdStride = 512;
            Fixpipe(oF, c, fp);
            break;
        }
        case 10: Fixpipe(oF, c, FixpipeParamsV220(32, 32, 32, 32, true)); break;            // ReLU, no quant
        case 11: SetFlag<HardEvent::M_MTE1>(EVENT_ID3);   // the first Mmad has read L0A (IDs 0-2: TPipe's)
                 WaitFlag<HardEvent::M_MTE1>(EVENT_ID3);
                 InitConstValue(a2, InitConstValueParams<half>(1, 4, 0, half(2.0f)));   // A := 2 everywhere (MTE1)
                 SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
                 WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
                 Mmad(c, a2, b2, MmadParams(32, 32, 32, 0, false, true));
                 SetFlag<HardEvent::M_FIX>(EVENT_ID0);
                 WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
                 Fixpipe(oF, c, FixpipeParamsV220(32, 32, 32, 32, false));
                 break;
        default: Fixpipe(oF, c, FixpipeParamsV220(32, 32, 32, 32, false)); break;
    }
}
"""


@pytest.mark.parametrize(
    "which,pattern",
    [
        (1, r"DataCopyPad\(GM->L1\): not supported on Atlas A2/A3"),
        (2, r"float -> half needs quantPre F322F16, got NoQuant"),
        (3, r"with NZ output nSize 24 must be a multiple of 16"),
        (5, r"L0C -> L1 writes NZ only on dav-2201: pass CFG_NZ"),
        (6, r"srcStride 16 .* is smaller than mSize 32"),
        (7, r"SetAtomicAdd type .* does not match the float output"),
        (8, r"dstStride 16 \(ND row pitch in elements\) is smaller than nSize 32"),
    ],
)
def test_fixpipe_and_copy_misuse_raises(which, pattern):
    lib = twin.compile_kernel(MISUSE_SRC)
    a = np.ones((32, 32), np.float16)
    out = np.zeros((64, 64), np.float32)
    with pytest.raises(twin.TwinError, match=pattern):
        lib.launch("misuse", 1, a, out, params(which, n=4), kernel_type="aic")


def test_fixpipe_of_unwritten_l0c_stores_poison_reported_at_the_end():
    """Columns 32..63 no Mmad wrote: no page forbids reading them, so the poison reaches GM and the launch end reports
    it (memory/poison.h; tests/test_twin_poison.py has the catlass-style case)."""
    lib = twin.compile_kernel(MISUSE_SRC)
    out = np.zeros((64, 64), np.float32)
    with pytest.warns(twin.TwinWarning, match=r"Fixpipe\(L0C->GM\): stored poison to GM buffer 'argument 1' byte 128 "):
        lib.launch("misuse", 1, np.ones((32, 32), np.float16), out, params(4, n=4), kernel_type="aic")
    assert (out.reshape(-1)[:32 * 64].reshape(32, 64)[:, 32:].view(np.uint32) == 0xFFFFFFFF).all()


def test_fixpipe_nd_num_relu_and_init_const(rng):
    lib = twin.compile_kernel(MISUSE_SRC)
    a = rng.integers(-3, 4, (32, 32)).astype(np.float16)
    c = a.astype(np.float64) @ a.T.astype(np.float64)  # B is loaded from the same buffer: C = A A^T
    out = np.zeros((64, 64), np.float32)
    lib.launch("misuse", 1, a, out, params(9, n=4), kernel_type="aic")
    flat = out.reshape(-1)
    assert np.array_equal(flat[:512].reshape(32, 16), c[:, :16])
    assert np.array_equal(flat[512:1024].reshape(32, 16), c[:, 16:])
    out[:] = 0
    lib.launch("misuse", 1, a, out, params(10, n=4), kernel_type="aic")
    assert np.array_equal(out.reshape(-1)[:1024].reshape(32, 32), np.maximum(c, 0))
    assert (c < 0).any()
    lib.launch("misuse", 1, a, out, params(11, n=4), kernel_type="aic")
    assert np.array_equal(out.reshape(-1)[:1024].reshape(32, 32), 2.0 * np.tile(a.astype(np.float64).sum(1), (32, 1)))


def test_fixpipe_misuse_baseline_runs():
    lib = twin.compile_kernel(MISUSE_SRC)
    a = np.ones((32, 32), np.float16)
    out = np.zeros((64, 64), np.float32)
    lib.launch("misuse", 1, a, out, params(0, n=4), kernel_type="aic")
    assert np.all(out.reshape(-1)[: 32 * 32] == 32.0)
