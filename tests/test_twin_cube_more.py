"""Register-driven cube APIs of the twin (dav-2201), against numpy models written from the API pages:

- DataCopy L0C -> GM / L1 with DataCopyCO12DstParams and the Fixpipe registers (SetFixpipeNz2ndFlag,
  SetFixpipePreQuantFlag, SetFixPipeConfig with quantisation words copied L1 -> Fixpipe Buffer), L1 -> GM copies;
- LoadData with LoadData3DParamsV2 (img2col) and SetFmatrix / SetLoadDataPaddingValue / SetLoadDataBoundary /
  SetLoadDataRepeat;
- the strict checks around them (each with the message it must raise).

Kernels: tests/kernels/cube/cube_more.cpp (one compile; int64 parameter buffers pick shapes and modes).
"""
import struct
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KSRC = Path(__file__).parent / "kernels" / "cube" / "cube_more.cpp"

# co12 parameter slots and flags (cube_more.cpp)
P_M, P_N, P_K, P_QUANT, P_RELU, P_ND2, P_SPLIT, P_FLAGS, P_NSIZE, P_DSTSTRIDE, P_WORD = range(11)
P_NDNUM, P_SRCND, P_DSTND, P_FBOFF, P_UNIT, P_CLIP, P_CLEN, P_L1GAP = range(11, 19)
SET_ND, SET_QUANT, SET_FPC, FIXPIPE_FIRST, TO_L1, L1_PARAMS, FPC_FROM_L0C, FB_TWO_TENSOR, COUNT_TO_FB = (
    1, 2, 4, 8, 16, 32, 64, 128, 256)
# QuantMode_t
NOQUANT, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, VQF322B8_PRE, REQ8, VREQ8 = range(9)


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KSRC, flags=["-O0"])  # small shapes: compile time dominates


def quant_word(scale, offset=0, signed=True):
    """QUANT_PRE word (2201 table): M1 float bits [31:0] (used as 1-8-10), offset [45:37], sign [46]."""
    w = struct.unpack("<I", struct.pack("<f", scale))[0]
    return w | ((offset & 0x1FF) << 37) | (int(signed) << 46)


def requant(x, scale, offset, relu):
    """(V)REQ8 / (V)QF322B8_PRE to int8: scale (ReLU first), round half to even, add the offset, saturate."""
    v = (np.maximum(x, 0) if relu else x) * scale
    return np.clip(np.round(np.clip(v, -256, 255)) + offset, -128, 127).astype(np.int8)


def co12(lib, kernel, rng, M, N, K, quant=NOQUANT, relu=0, nd=False, split=False, flags=0, nsize=None, dst_stride=None,
         word=0, nd_para=(1, 0, 0), fb_off=0, unit=0, clip=0, clen=None, out_dtype=np.float32, words=None, l1_gap=0,
         fill=0):
    int_in = kernel.startswith("co12_b")
    if int_in:
        a = rng.integers(-6, 7, (M, K)).astype(np.int8)
        b = rng.integers(-6, 7, (N, K)).astype(np.int8)
    else:
        a = rng.integers(-4, 5, (M, K)).astype(np.float16)
        b = rng.integers(-4, 5, (N, K)).astype(np.float16)
    c = a.astype(np.int64) @ b.T.astype(np.int64)  # exact in fp32 / int32
    p = np.zeros(24, np.int64)
    p[[P_M, P_N, P_K, P_QUANT, P_RELU, P_ND2, P_SPLIT, P_FLAGS]] = M, N, K, quant, relu, int(nd), int(split), flags
    p[P_NSIZE] = N if nsize is None else nsize
    p[P_DSTSTRIDE] = (N if nd else M) if dst_stride is None else dst_stride
    p[P_WORD] = np.uint64(word).view(np.int64)
    p[[P_NDNUM, P_SRCND, P_DSTND]] = nd_para
    p[[P_FBOFF, P_UNIT, P_CLIP, P_L1GAP]] = fb_off, unit, clip, l1_gap
    n_out = M * N if clen is None else clen
    p[P_CLEN] = n_out
    out = np.full(n_out, fill, out_dtype)
    w = np.zeros(256, np.uint64) if words is None else words
    lib.launch(kernel, 1, a, b, w, out, p, kernel_type="aic")
    return c, out


def nz_blocks(out, M, N, c0, stride_bytes, esize, odd_tail=False):
    """Reads an NZ result: column block j (c0 columns; a last 16-wide block for an odd b8 tail) at j*stride_bytes."""
    raw = out.view(np.uint8)
    cols = []
    for j in range((N + c0 - 1) // c0):
        w = 16 if (odd_tail and (j + 1) * c0 > N) else c0
        blk = raw[j * stride_bytes : j * stride_bytes + M * w * esize].view(out.dtype).reshape(M, w)
        cols.append(blk)
    return np.concatenate(cols, axis=1)


def test_co12_nz2nd_scalar_dequant_relu(lib, rng):
    M, N, K = 37, 45, 64  # int8 x int8 -> int32 -> half, NZ2ND with rows of 45
    c, out = co12(lib, "co12_b_h", rng, M, N, K, quant=DEQF16, relu=1, nd=True, flags=SET_ND | SET_QUANT,
                  word=quant_word(0.375), out_dtype=np.float16)
    want = (np.maximum(c, 0) * 0.375).astype(np.float32).astype(np.float16)
    assert np.array_equal(out.reshape(M, N), want)
    assert (c < 0).any() and (out == 0).any()


def test_co12_multiple_nd_matrices_from_register(lib, rng):
    """ndNum = 3 via SetFixpipeNz2ndFlag: the three 16-column blocks of C become 3 ND matrices dstNdStride apart."""
    M, N, K = 21, 48, 32
    src_nd, dst_nd = (M + 15) // 16, M * 16 + 7  # srcNdStride in 1 KB (one 16-column block), dstNdStride in elements
    c, out = co12(lib, "co12_h_f", rng, M, N, K, nd=True, flags=SET_ND, nsize=16, dst_stride=16,
                  nd_para=(3, src_nd, dst_nd), clen=2 * dst_nd + M * 16, fill=-1.0)
    for n in range(3):
        got = out[n * dst_nd : n * dst_nd + M * 16].reshape(M, 16)
        assert np.array_equal(got, c[:, n * 16 : (n + 1) * 16].astype(np.float32))
        if n < 2:
            assert np.all(out[n * dst_nd + M * 16 : (n + 1) * dst_nd] == -1.0), "gap between ND matrices untouched"


def test_co12_vector_requant_nz_channel_merge(lib, rng):
    """VREQ8 with words in the Fixpipe Buffer; NZ int8 output of N = 48 = 3 x 16: two 16-column blocks merge into one
    32-wide block, the odd last 16 columns stay a 16-wide block."""
    M, N, K = 19, 48, 64
    scales = rng.choice([0.25, 0.5, 0.75, 1.5], N).astype(np.float32)
    offs = rng.integers(-30, 30, N)
    words = np.zeros(256, np.uint64)
    words[:N] = [quant_word(float(s), int(o)) for s, o in zip(scales, offs)]
    stride = M  # 32 B units between column blocks: M rows x 32 B
    c, out = co12(lib, "co12_b_s8", rng, M, N, K, quant=VREQ8, flags=SET_FPC, words=words, fb_off=256,
                  dst_stride=stride, clen=M * 32 + M * 16, out_dtype=np.int8)
    got = nz_blocks(out, M, N, 32, stride * 32, 1, odd_tail=True)
    assert np.array_equal(got, requant(c, scales, offs, False))


def test_co12_scalar_quant_float_to_int8_two_tensor_config(lib, rng):
    M, N, K = 33, 32, 48
    c, out = co12(lib, "co12_h_s8", rng, M, N, K, quant=QF322B8_PRE, nd=True, relu=1, flags=SET_ND | SET_QUANT,
                  word=quant_word(1.5, -3), out_dtype=np.int8)
    assert np.array_equal(out.reshape(M, N), requant(c, 1.5, -3, True))


def test_co12_vector_dequant_two_tensor_setfixpipeconfig(lib, rng):
    M, N, K = 24, 40, 64
    scales = rng.choice([0.25, 0.5, 2.0], N).astype(np.float32)
    words = np.zeros(256, np.uint64)
    words[:N] = [quant_word(float(s)) for s in scales]
    c, out = co12(lib, "co12_b_h", rng, M, N, K, quant=VDEQF16, nd=True, flags=SET_ND | SET_FPC | FB_TWO_TENSOR,
                  words=words, fb_off=1024, out_dtype=np.float16)
    assert np.array_equal(out.reshape(M, N), (c * scales).astype(np.float32).astype(np.float16))


def test_co12_f32_channel_split(lib, rng):
    """float NZ output with channelSplit: 16 x 8 blocks (8 columns each, M rows x 32 B), nSize a multiple of 8."""
    M, N, K = 20, 40, 32
    c, out = co12(lib, "co12_h_f", rng, M, N, K, split=True, dst_stride=M, clen=(N // 8) * M * 8)
    assert np.array_equal(nz_blocks(out, M, N, 8, M * 32, 4), c.astype(np.float32))


def test_co12_uses_registers_written_by_fixpipe(lib, rng):
    """The Fixpipe API programs ND_PARA and QUANT_PRE itself; a later raw DataCopy may rely on them."""
    M, N, K = 18, 30, 32
    c, out = co12(lib, "co12_b_h", rng, M, N, K, quant=DEQF16, nd=True, flags=FIXPIPE_FIRST, word=quant_word(0.5),
                  out_dtype=np.float16)
    assert np.array_equal(out.reshape(M, N), (c * 0.5).astype(np.float32).astype(np.float16))


def test_co12_to_l1_then_l1_to_gm(lib, rng):
    """L0C -> L1 (NZ half), then L1 -> GM: the count form copies L1 as is; DataCopyParams leaves dstGap blocks."""
    M, N, K = 26, 48, 32
    c, out = co12(lib, "co12_h_h", rng, M, N, K, quant=F322F16, flags=TO_L1, dst_stride=M, clen=3 * M * 16,
                  out_dtype=np.float16)
    want = c.astype(np.float32).astype(np.float16)
    assert np.array_equal(nz_blocks(out, M, N, 16, M * 32, 2), want)
    gap = 2  # 32 B blocks between the column blocks in GM
    c, out = co12(lib, "co12_h_h", rng, M, N, K, quant=F322F16, flags=L1_PARAMS, dst_stride=M, l1_gap=gap,
                  clen=3 * M * 16 + 2 * gap * 16, out_dtype=np.float16, fill=7.0)
    want = c.astype(np.float32).astype(np.float16)
    assert np.array_equal(nz_blocks(out, M, N, 16, (M + gap) * 32, 2), want)
    for j in range(2):
        hole = out[(j * (M + gap) + M) * 16 : (j + 1) * (M + gap) * 16]
        assert np.all(hole == 7.0), "dstGap blocks must stay untouched"


CO12_MISUSE = [  # (id, kernel, co12 kwargs, message)
    ("nz2nd_without_nd_para", "co12_h_f", dict(nd=True), r"\[AIC 0\] DataCopy\(L0C->GM\): nz2ndEn needs the ND_PARA register"),
    ("scalar_quant_without_quant_pre", "co12_b_h", dict(quant=DEQF16, nd=True, flags=SET_ND, out_dtype=np.float16),
     r"quantPre DEQF16 reads the QUANT_PRE register: call SetFixpipePreQuantFlag"),
    ("vector_quant_without_fpc", "co12_b_h", dict(quant=VDEQF16, nd=True, flags=SET_ND, out_dtype=np.float16),
     r"VDEQF16 reads per-column words at the FPC address, which is not valid: SetFixPipeConfig was never called"),
    ("fpc_pointed_at_l0c", "co12_b_h", dict(quant=VDEQF16, nd=True, flags=SET_ND | SET_FPC | FPC_FROM_L0C, out_dtype=np.float16),
     r"not valid: the last SetFixPipeConfig passed an L0C tensor"),
    ("fpc_clobbered_by_fixpipe", "co12_b_h",
     dict(quant=VDEQF16, nd=True, flags=SET_ND | SET_FPC | FIXPIPE_FIRST, out_dtype=np.float16),
     r"not valid: a Fixpipe with per-column quantisation re-pointed FPC"),
    ("fb_tensor_misaligned", "co12_b_h", dict(quant=VDEQF16, nd=True, flags=SET_ND | SET_FPC, fb_off=64, out_dtype=np.float16),
     r"DataCopy\(L1->FB\): dst address 64 in FB is not 128-byte aligned"),
    ("count_form_into_fb_counts_128B_units", "co12_b_h",
     dict(quant=VDEQF16, nd=True, flags=SET_ND | SET_FPC | COUNT_TO_FB, fb_off=1024, out_dtype=np.float16),
     r"DataCopy\(L1->FB\): dst: access of 1536 bytes at byte 0 is past the tensor's 1024 bytes"),
    ("clip_relu_not_on_2201", "co12_b_h", dict(quant=DEQF16, flags=SET_QUANT, clip=1, out_dtype=np.float16),
     r"clipReluPre 1 / eltWiseOp 0: ClipReLU and element-wise operations exist only on Atlas 200I/500 A2"),
    ("nd_num_zero", "co12_h_f", dict(nd=True, flags=SET_ND, nd_para=(0, 0, 0)), r"SetFixpipeNz2ndFlag: ndNum 0 is outside \[1, 65535\]"),
    ("nd_strides_zero_with_ndnum_2", "co12_h_f", dict(nd=True, flags=SET_ND, nd_para=(2, 0, 9)),
     r"with ndNum 2, srcNdStride 0 must lie in \[1, 512\]"),
    ("nz_nsize_not_16", "co12_h_h", dict(quant=F322F16, nsize=40, out_dtype=np.float16),
     r"with NZ output nSize 40 must be a multiple of 16"),
    ("split_nsize_not_8", "co12_h_f", dict(split=True, nsize=36), r"with isChannelSplit nSize 36 must be a multiple of 8"),
    ("split_with_unit_flag", "co12_h_f", dict(split=True, unit=2), r"isChannelSplit cannot be combined with unitFlag 2"),
    ("l0c_to_l1_nz2nd", "co12_h_h", dict(quant=F322F16, nd=True, flags=TO_L1 | SET_ND, out_dtype=np.float16),
     r"DataCopy\(L0C->L1\): nz2ndEn: L0C -> L1 writes NZ only"),
    ("relu_pre_2", "co12_h_f", dict(relu=2, nd=True, flags=SET_ND), r"reluPre 2 is not 0 \(off\) or 1"),
]


@pytest.mark.parametrize("kernel,kw,msg", [m[1:] for m in CO12_MISUSE], ids=[m[0] for m in CO12_MISUSE])
def test_co12_misuse_raises(lib, rng, kernel, kw, msg):
    M, N, K = 20, 48, 32
    kw = dict(kw)
    kw.setdefault("clen", 4096)
    with pytest.raises(twin.TwinError, match=msg):
        co12(lib, kernel, rng, M, N, K, **kw)


@pytest.mark.parametrize("which,msg", [(0, r"SetFixPipeClipRelu: not supported on Atlas A2/A3"),
                                       (1, r"SetFixPipeAddr: not supported on Atlas A2/A3")])
def test_fixpipe_200i_only_setters_raise(lib, which, msg):
    with pytest.raises(twin.TwinError, match=msg):
        lib.launch("fixpipe_unsupported", 1, np.array([which], np.int64), kernel_type="aic")


# ---------------------------------------------------------------------------------------------------------------
# LoadData with LoadData3DParamsV2
Q = dict(H=0, W=1, CH=2, KEXT=3, MEXT=4, KST=5, MST=6, SW=7, SH=8, FW=9, FH=10, DW=11, DH=12, PAD=13, TRANS=17, TOB=18,
         PADV=19, FLAGS=20, FMOFF=21, BOUND=22, FMLEN=23, RPT=24, IDN=25, CHK=26)
MANUAL, NO_FMATRIX, NO_PADDING, BOUNDARY, REPEAT, RIGHT_FM = 1, 2, 4, 8, 16, 32
DT = {"f16": (np.float16, np.float32, 16), "f32": (np.float32, np.float32, 8), "s8": (np.int8, np.int32, 32)}


def img2col(fm, pads, padv, fh, fw, sh, sw, dh, dw):
    """The documented img2col: rows m = ho*Wo + wo, columns k = ((c1*Hk + kh)*Wk + kw)*C0 + c0."""
    C1, H, W, C0 = fm.shape
    l, r, t, b = pads
    P = np.full((C1, H + t + b, W + l + r, C0), padv, np.float64)
    P[:, t : t + H, l : l + W] = fm
    Ho = (H + t + b - ((fh - 1) * dh + 1)) // sh + 1
    Wo = (W + l + r - ((fw - 1) * dw + 1)) // sw + 1
    X = np.zeros((Ho, Wo, C1, fh, fw, C0))
    for kh in range(fh):
        for kw in range(fw):
            X[:, :, :, kh, kw, :] = P[:, kh * dh : kh * dh + (Ho - 1) * sh + 1 : sh, kw * dw : kw * dw + (Wo - 1) * sw + 1 : sw, :].transpose(1, 2, 0, 3)
    return X.reshape(Ho * Wo, C1 * fh * fw * C0)


def zn_eye(n, k0):
    """L0B Zn image of the n x n identity (K = n rows in fractals of k0, N padded to 16)."""
    K1, N1 = -(-n // k0), -(-n // 16)
    e = np.zeros((K1 * k0, N1 * 16))
    e[np.arange(n), np.arange(n)] = 1
    return e.reshape(K1, k0, N1, 16).transpose(0, 2, 3, 1).reshape(-1)


def zz_eye(n, k0):
    """L0A Zz image of the n x n identity."""
    M1, K1 = -(-n // 16), -(-n // k0)
    e = np.zeros((M1 * 16, K1 * k0))
    e[np.arange(n), np.arange(n)] = 1
    return e.reshape(M1, 16, K1, k0).transpose(0, 2, 1, 3).reshape(-1)


def load3d(lib, rng, dt, C, H, W, f=(1, 1), s=(1, 1), d=(1, 1), pads=(0, 0, 0, 0), padv=0, win=None, trans=False,
           to_b=False, flags=0, fm_off=0, bound=0, rpt=1, ch=None):
    """Runs load3d_<dt>; returns (got, want) where want is the documented window (transposed for enTranspose)."""
    T, Tacc, c0 = DT[dt]
    C1 = C // c0
    if T == np.int8:
        fm = rng.integers(-100, 100, (C1, H, W, c0)).astype(T)
    else:
        fm = rng.integers(-500, 500, (C1, H, W, c0)).astype(T)
    X = img2col(fm.astype(np.float64), pads, padv, f[0], f[1], s[0], s[1], d[0], d[1])
    mst, mext, kst, kext = win if win else (0, X.shape[0], 0, X.shape[1])
    window = X[mst : mst + mext, kst : kst + kext]
    want = window.T if trans else window
    rows, cols = want.shape
    eye = zz_eye(rows, c0) if to_b else zn_eye(cols, c0)
    p = np.zeros(32, np.int64)
    for key, v in dict(H=H, W=W, CH=C if ch is None else ch, KEXT=kext, MEXT=mext, KST=kst, MST=mst, SW=s[1], SH=s[0],
                       FW=f[1], FH=f[0], DW=d[1], DH=d[0], TRANS=int(trans), TOB=int(to_b), PADV=padv, FLAGS=flags,
                       FMOFF=fm_off, BOUND=bound, FMLEN=fm.size, RPT=rpt, IDN=eye.size, CHK=rows * cols).items():
        p[Q[key]] = v
    p[Q["PAD"] : Q["PAD"] + 4] = pads
    out = np.zeros((rows, cols), Tacc)
    lib.launch(f"load3d_{dt}", 1, fm.reshape(-1), eye.astype(T), out, p, kernel_type="aic")
    return out.astype(np.float64), want


CONV = dict(C=32, H=6, W=7, f=(3, 2), s=(1, 2), d=(1, 2), pads=(1, 2, 1, 0), padv=3)  # Ho 5, Wo 4: M 20, K 192


def test_load3d_l0a_img2col_window(lib, rng):
    got, want = load3d(lib, rng, "f16", **CONV, win=(3, 17, 32, 128))  # window reaching the last row: 17 rows allowed
    assert np.array_equal(got, want)
    assert (want == 3).any(), "padding positions were exercised"


def test_load3d_registers_instead_of_params(lib, rng):
    """isSetFMatrix / isSetPadding = false: l1H, l1W, padList and padValue come from SetFmatrix and
    SetLoadDataPaddingValue (the kernel passes dummies in the struct)."""
    got, want = load3d(lib, rng, "f16", **CONV, win=(0, 16, 16, 96), flags=MANUAL)
    assert np.array_equal(got, want)


def test_load3d_boundary_wraps_to_l1_start(lib, rng):
    """SetLoadDataBoundary(4096): the feature map (2688 B) starts at L1 byte 3072; reads past 4096 wrap to byte 0."""
    got, want = load3d(lib, rng, "f16", **CONV, win=(4, 16, 0, 128), flags=BOUNDARY, fm_off=3072, bound=4096)
    assert np.array_equal(got, want)


def test_load3d_l0a_transposed_b32(lib, rng):
    got, want = load3d(lib, rng, "f32", C=16, H=4, W=5, f=(2, 2), pads=(0, 1, 1, 0), padv=-2, win=(2, 16, 8, 40),
                       trans=True)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("dt,kw", [
    ("f16", dict(C=16, H=5, W=4, f=(1, 3), s=(2, 1), pads=(1, 1, 0, 0), padv=5)),
    ("f32", dict(C=8, H=4, W=4, f=(2, 2), win=(0, 9, 8, 24))),
], ids=["b16", "b32"])
def test_load3d_l0b(lib, rng, dt, kw):
    got, want = load3d(lib, rng, dt, **kw, to_b=True)
    assert np.array_equal(got, want)


def test_load3d_int8_l0a(lib, rng):
    got, want = load3d(lib, rng, "s8", C=64, H=3, W=5, f=(2, 2), d=(1, 2), pads=(1, 0, 0, 1), padv=-3, win=(0, 12, 64, 128))
    assert np.array_equal(got, want)


LOAD3D_MISUSE = [  # (id, dtype, load3d kwargs on CONV, message)
    ("no_fmatrix", "f16", dict(flags=NO_FMATRIX), r"the FMATRIX register was never set in this kernel \(isSetFMatrix = false"),
    ("no_padding", "f16", dict(flags=NO_PADDING), r"reads padding, but the PADDING register was never set"),
    ("fmatrix_right", "f16", dict(flags=RIGHT_FM), r"SetFmatrix: FMATRIX_RIGHT is not supported"),
    ("repeat_time_2", "f16", dict(flags=REPEAT, rpt=2), r"repeatTime 2 > 1 is not modelled"),
    ("boundary_undefined", "f16", dict(flags=BOUNDARY, bound=512, fm_off=8192), r"SetLoadDataBoundary: boundaryValue 512 bytes"),
    ("boundary_below_src", "f16", dict(flags=BOUNDARY, bound=4096, fm_off=4096), r"at or past the SetLoadDataBoundary of 4096"),
    ("channel_not_allowed", "f16", dict(ch=12), r"channelSize 12 is not allowed for half"),
    ("channel_small_layout", "f16", dict(ch=40), r"channelSize 40 is allowed but not a multiple of C0 = 16"),
    ("kstart_unaligned", "f16", dict(win=(0, 16, 8, 32)), r"kStartPt 8 and kExtension 32 must be multiples of 16"),
    ("window_past_matrix", "f16", dict(win=(16, 16, 0, 32)), r"window rows \[16, 32\) x columns \[0, 32\) reach past the img2col matrix of 20 x 192"),
    ("mext_not_16", "f16", dict(win=(0, 12, 0, 32)), r"mExtension 12 must be a multiple of 16 unless the window reaches the last row"),
    ("stride_zero", "f16", dict(s=(0, 1)), r"strideW 1 / strideH 0 must lie in \[1, 63\]"),
]


@pytest.mark.parametrize("dt,kw,msg", [m[1:] for m in LOAD3D_MISUSE], ids=[m[0] for m in LOAD3D_MISUSE])
def test_load3d_misuse_raises(lib, rng, dt, kw, msg):
    args = dict(CONV, win=(0, 16, 0, 32))
    args.update(kw)
    if args["s"][0] == 0:  # the numpy model cannot build the window for stride 0: give the kernel a valid shape
        with pytest.raises(twin.TwinError, match=msg):
            _launch_raw_stride0(lib, rng)
        return
    with pytest.raises(twin.TwinError, match=msg):
        load3d(lib, rng, dt, **args)


def _launch_raw_stride0(lib, rng):
    p = np.zeros(32, np.int64)
    fm = rng.integers(-5, 5, 2 * 6 * 7 * 16).astype(np.float16)
    eye = zn_eye(32, 16).astype(np.float16)
    for key, v in dict(H=6, W=7, CH=32, KEXT=32, MEXT=16, SW=1, SH=0, FW=1, FH=1, DW=1, DH=1, FMLEN=fm.size,
                       IDN=eye.size, CHK=16 * 32).items():
        p[Q[key]] = v
    lib.launch("load3d_f16", 1, fm, eye, np.zeros((16, 32), np.float32), p, kernel_type="aic")


def test_load3d_b8_into_l0b_raises(lib, rng):
    with pytest.raises(twin.TwinError, match=r"b8 data \(int8_t\) cannot go to L0B or be transposed"):
        load3d(lib, rng, "s8", C=64, H=3, W=5, win=(0, 15, 0, 64), to_b=True)
