"""Gatherb, Transpose (16 x 16 and TransposeParamsExt) and TransDataTo5HD of the twin against numpy models written
from the API pages (docs/zh/api/SIMD-API/基础API/Memory矢量计算/离散与聚合/Gatherb(ISASI).md, 数据排布转换/), with the
pages' strict checks.

Kernels: tests/kernels/vector/layout.cpp (region_harness.h: src in region A, raw bytes in B, dst in D)."""
import numpy as np
import pytest

from npu_flash_attn import twin
from vector_harness import KDIR, F16, F32, REGION, U16, U32, launch, params, region, setp

S8 = np.int8
KERNEL = {U16: "layout_u16", U32: "layout_u32", F16: "layout_f16", F32: "layout_f32", S8: "layout_s8"}


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KDIR / "layout.cpp", opt="-O0")  # tiny cases: compile time dominates


def raw(values, dt=np.uint32):
    """Region B holding `values` (of type dt) at its start."""
    b = np.zeros(REGION, np.uint8)
    v = np.asarray(values, dt).view(np.uint8)
    b[:v.size] = v
    return b


def size_of(dt):
    return np.dtype(dt).itemsize


# ---------------------------------------------------------------------------------------------------------------
# Gatherb
@pytest.mark.parametrize("dt", [U16, U32], ids=["u16", "u32"])
def test_gatherb_copies_32_byte_blocks_by_offset(lib, rng, dt):
    for _ in range(3):
        R = int(rng.integers(1, 7))
        blk = int(rng.choice([0, 1, 2]))  # 0 counts as 1
        eff = max(blk, 1)
        rep = 8 * eff + int(rng.integers(0, 5))
        src_blocks = int(rng.integers(40, 300))
        offs = rng.integers(0, src_blocks, R * 8).astype(np.uint32) * 32
        a, d = region(rng, dt, 0, 60000), region(rng, dt, 0, 60000)
        ref = d.view(np.uint8).copy()
        for i, o in enumerate(offs):  # the page's pseudo code, in bytes
            at = (i // 8 * rep + i % 8 * eff) * 32
            ref[at:at + 32] = a.view(np.uint8)[o:o + 32]
        p = params(op=0, repeat=R, dstBlk=blk, dstRep=rep, lenA=src_blocks * 32 // size_of(dt), lenB=R * 32,
                   lenD=REGION // size_of(dt))
        out = launch(lib, KERNEL[dt], p, a, raw(offs), d)
        assert np.array_equal(out.view(np.uint8), ref), f"Gatherb R={R} blk={blk} rep={rep}"


GATHERB_MISUSE = [
    ("offset\\[3\\] = 48 bytes is not a multiple of 32", "u16", dict(op=0), {3: 48}),
    ("offset\\[5\\] = 3200 bytes: the block reaches past the src tensor's 3200 bytes", "u16", dict(op=0), {5: 3200}),
    ("offset: the instruction reaches byte 64 but the tensor has 60 bytes", "u16", dict(op=0, repeat=2, lenB=60), {}),
    ("data type of 2 bytes is not supported on dav-2201", "f16", dict(op=0), {}),
    ("dst overlaps the gathered src bytes", "u32", dict(op=1), {}),
]


@pytest.mark.parametrize("msg,kern,kw,bad", GATHERB_MISUSE, ids=[str(i) for i in range(len(GATHERB_MISUSE))])
def test_gatherb_misuse_is_reported(lib, rng, msg, kern, kw, bad):
    offs = np.arange(16, dtype=np.uint32) * 32
    for k, v in bad.items():
        offs[k] = v
    p = setp(params(repeat=1, dstBlk=1, dstRep=8, lenA=1600, lenB=64, lenD=1600), **kw)
    dt = {"u16": U16, "u32": U32, "f16": F16}[kern]
    with pytest.raises(twin.TwinError, match="Gatherb: " + msg):
        launch(lib, "layout_" + kern, p, region(rng, dt, 0, 9), raw(offs), region(rng, dt, 0, 9))


# ---------------------------------------------------------------------------------------------------------------
# Transpose
@pytest.mark.parametrize("dt", [F16, U16], ids=["f16", "u16"])
def test_transpose_16x16(lib, rng, dt):
    a, d = region(rng, dt, 0, 1000), region(rng, dt, 0, 1000)
    ref = d.copy()
    ref[:256] = a[:256].reshape(16, 16).T.reshape(-1)
    out = launch(lib, KERNEL[dt], params(op=10, lenA=256, lenD=256), a, raw([]), d)
    assert np.array_equal(out, ref)
    d = region(rng, dt, 0, 1000)
    ref = d.copy()
    ref[:256] = d[:256].reshape(16, 16).T.reshape(-1)
    out = launch(lib, KERNEL[dt], params(op=11, lenD=256), a, raw([]), d)  # dst == src is allowed
    assert np.array_equal(out, ref)


def ext(n, c, h, w, ttype, op=12, **kw):
    return params(op=op, extra=n, extra2=c, mask0=h, mask1=w, extra3=ttype, **kw)


NCHW2NHWC, NHWC2NCHW, ND2ND_B16 = 11, 12, 10


def tmp_bytes(dt, c, ttype):
    """The page's A2 table: (cSize + 2) resp. (2 cSize + 1) fractals of h0 x w0 elements."""
    h0, w0 = (32 if size_of(dt) == 1 else 16), 32 // size_of(dt)
    return (c + 2 if ttype == NCHW2NHWC else 2 * c + 1) * h0 * w0 * size_of(dt)


@pytest.mark.parametrize("dt", [F16, F32, S8, U32], ids=["f16", "f32", "s8", "u32"])
def test_transpose_nchw_nhwc_both_ways(lib, rng, dt):
    for ttype in (NCHW2NHWC, NHWC2NCHW):
        n, c, h = int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(rng.integers(1, 4))
        w = 32 // size_of(dt) * int(rng.integers(1, 3))  # h * w * sizeof(T) a multiple of 32 B
        total = n * c * h * w
        a, d = region(rng, dt, -100, 100), region(rng, dt, -100, 100)
        ref = d.copy()
        if ttype == NCHW2NHWC:
            ref[:total] = np.transpose(a[:total].reshape(n, c, h, w), (0, 2, 3, 1)).reshape(-1)
        else:
            ref[:total] = np.transpose(a[:total].reshape(n, h, w, c), (0, 3, 1, 2)).reshape(-1)
        p = ext(n, c, h, w, ttype, lenA=total, lenD=total, lenB=tmp_bytes(dt, c, ttype))
        out = launch(lib, KERNEL[dt], p, a, raw([]), d)
        assert np.array_equal(out, ref), f"type {ttype} {dt.__name__} n{n} c{c} h{h} w{w}"
        setp(p, lenB=tmp_bytes(dt, c, ttype) - 1)
        with pytest.raises(twin.TwinError, match=f"sharedTmpBuffer needs {tmp_bytes(dt, c, ttype)} bytes"):
            launch(lib, KERNEL[dt], p, a, raw([]), d)


def test_transpose_ext_nd2nd_b16_none_and_zero_sizes(lib, rng):
    a, d = region(rng, U16, 0, 1000), region(rng, U16, 0, 1000)
    ref = d.copy()
    ref[:256] = a[:256].reshape(16, 16).T.reshape(-1)
    out = launch(lib, "layout_u16", ext(0, 0, 16, 16, ND2ND_B16, lenA=256, lenD=256), a, raw([]), d)
    assert np.array_equal(out, ref)
    for p in (ext(2, 3, 1, 16, 0, lenA=96, lenD=96), ext(0, 3, 1, 16, NCHW2NHWC, lenA=96, lenD=96, lenB=2560)):
        d = region(rng, U16, 0, 1000)  # TRANSPOSE_TYPE_NONE and a zero size: nothing is written
        assert np.array_equal(launch(lib, "layout_u16", p, a, raw([]), d.copy()), d)


TRANSPOSE_MISUSE = [
    ("data type of 4 bytes is not supported", "f32", params(op=10, lenA=256, lenD=256)),
    ("dst: the instruction reaches byte 512 but the tensor has 510 bytes", "f16", params(op=10, lenA=256, lenD=255)),
    ("dst partially overlaps src", "f16", params(op=14, lenA=512)),
    ("TRANSPOSE_ND2ND_B16 needs hSize = wSize = 16, got 8 x 16", "u16", ext(0, 0, 8, 16, ND2ND_B16, lenA=256, lenD=256)),
    ("TRANSPOSE_ND2ND_B16 supports only uint16_t", "f16", ext(0, 0, 16, 16, ND2ND_B16, lenA=256, lenD=256)),
    ("transposeType 1 is not supported on dav-2201", "f16", ext(1, 1, 16, 16, 1)),
    ("hSize \\* wSize \\* sizeof\\(T\\) = 12 bytes is not a multiple of 32", "f32",
     ext(1, 2, 1, 3, NCHW2NHWC, lenA=6, lenD=6, lenB=4096)),
    ("cSize 4096 is outside \\[0, 4095\\]", "f16", ext(1, 4096, 1, 16, NHWC2NCHW, lenB=60000)),
    ("hSize \\* wSize = 4096 is outside \\[0, 4095\\]", "f16", ext(1, 2, 64, 64, NCHW2NHWC, lenB=60000)),
    ("dst overlaps src", "f16", ext(1, 2, 1, 16, NCHW2NHWC, op=13, lenA=512, lenB=4096)),
    ("src: the instruction reaches byte 192 but the tensor has 190 bytes", "f16",
     ext(2, 3, 1, 16, NCHW2NHWC, lenA=95, lenD=96, lenB=4096)),
]


@pytest.mark.parametrize("msg,kern,p", TRANSPOSE_MISUSE, ids=[str(i) for i in range(len(TRANSPOSE_MISUSE))])
def test_transpose_misuse_is_reported(lib, rng, msg, kern, p):
    dt = {"u16": U16, "f16": F16, "f32": F32}[kern]
    with pytest.raises(twin.TwinError, match="Transpose: " + msg):
        launch(lib, "layout_" + kern, p, region(rng, dt, 0, 9), raw([]), region(rng, dt, 0, 9))


# ---------------------------------------------------------------------------------------------------------------
# TransDataTo5HD
def nchwconv_model(a_bytes, d_bytes, size, gd, gs, R, drep, srep, dhi=False, shi=False):
    """The page's rules on bytes: 16 source blocks (entry j at j * gs blocks) -> 16 destination blocks (entry j at
    j * gd blocks); repeat r adds r * RepStride blocks (repeatTimes 1: RepStride once)."""
    d = d_bytes.copy()
    for r in range(R):
        so, do = (1 if R == 1 else r) * srep * 32, (1 if R == 1 else r) * drep * 32
        S = np.stack([a_bytes[j * gs * 32 + so:j * gs * 32 + so + 32] for j in range(16)])
        D = np.stack([d[j * gd * 32 + do:j * gd * 32 + do + 32] for j in range(16)])
        if size == 1:  # byte i of the chosen source half -> the chosen half of dst block i
            D[:, 16 * dhi:16 * dhi + 16] = S[:, 16 * shi:16 * shi + 16].T
        elif size == 2:  # element i of every source -> dst block i
            D[:] = S.view(np.uint16).T.copy().view(np.uint8)
        else:  # element i of sources 0..7 -> dst block 2i, of sources 8..15 -> dst block 2i + 1
            e = S.view(np.uint32)  # [16 sources, 8 elements]
            D[:] = np.stack([e[8 * (k % 2):8 * (k % 2) + 8, k // 2] for k in range(16)]).view(np.uint8)
        for j in range(16):
            d[j * gd * 32 + do:j * gd * 32 + do + 32] = D[j]
    return d


@pytest.mark.parametrize("dt", [F16, F32, S8], ids=["b16", "b32", "b8"])
@pytest.mark.parametrize("op", [20, 21, 22], ids=["tensors", "addresses", "address-tensors"])
def test_transdata_to_5hd_block_rules(lib, rng, dt, op):
    for _ in range(2):
        R = int(rng.integers(1, 6))
        gd, gs = int(rng.integers(1, 3)), int(rng.integers(1, 4))
        drep = 16 * gd + int(rng.integers(0, 3))
        srep = int(rng.integers(0, 20))
        dhi, shi = (bool(rng.integers(0, 2)), bool(rng.integers(0, 2))) if dt is S8 else (False, False)
        a, d = region(rng, dt, -100, 100), region(rng, dt, -100, 100)
        ref = nchwconv_model(a.view(np.uint8), d.view(np.uint8), size_of(dt), gd, gs, R, drep, srep, dhi, shi)
        p = params(op=op, repeat=R, dstBlk=gd, s0Blk=gs, dstRep=drep, s0Rep=srep, extra=int(dhi), extra2=int(shi),
                   lenA=REGION // size_of(dt), lenD=REGION // size_of(dt))
        out = launch(lib, KERNEL[dt], p, a, raw([]), d)
        assert np.array_equal(out.view(np.uint8), ref), f"R={R} gd={gd} gs={gs} drep={drep} srep={srep} hi={dhi},{shi}"


def test_transdata_to_5hd_nchw_to_nc1hwc0_as_documented(lib, rng):
    """The page's recipe for half (C0 = 16): srcList steps H * W elements, dstList one block, repeatTimes =
    H * W / 16, dstRepStride 16, srcRepStride 1; 16 channels [C, H * W] become [H * W, C0]."""
    hw = 16 * int(rng.integers(2, 9))
    a, d = region(rng, F16, -10, 10), region(rng, F16, -10, 10)
    ref = d.copy()
    ref[:16 * hw] = a[:16 * hw].reshape(16, hw).T.reshape(-1)
    p = params(op=21, repeat=hw // 16, dstBlk=1, s0Blk=hw // 16, dstRep=16, s0Rep=1, lenA=16 * hw, lenD=16 * hw)
    assert np.array_equal(launch(lib, "layout_f16", p, a, raw([]), d), ref)


TRANSDATA_MISUSE = [
    ("dstHighHalf / srcHighHalf = 1 / 0: the high-half selection exists only for int8_t / uint8_t", "f16",
     dict(op=20, extra=1)),
    ("dstList\\[0\\]: repeat 1 reaches byte 544 past its start but only 512 bytes are available", "f16",
     dict(op=20, repeat=2, dstRep=16, lenD=256)),
    ("dstList\\[3\\] = UB address \\d+ is not 32-byte aligned", "f32", dict(op=21, form=1, count=3)),
    ("address 0x[0-9a-f]+ is not inside this core's UB", "f16", dict(op=23)),
    ("data type of 2 bytes is not supported on dav-2201", "bf16_addr", dict(op=21, lenA=256, lenD=256)),
]


@pytest.mark.parametrize("msg,kern,kw", TRANSDATA_MISUSE, ids=[str(i) for i in range(len(TRANSDATA_MISUSE))])
def test_transdata_to_5hd_misuse_is_reported(lib, rng, msg, kern, kw):
    dt = {"f16": F16, "f32": F32, "bf16_addr": U16}[kern]
    p = params(repeat=1, dstBlk=1, s0Blk=1, lenA=4096, lenD=4096)
    setp(p, **kw)
    with pytest.raises(twin.TwinError, match="TransDataTo5HD: " + msg):
        launch(lib, "layout_" + kern, p, region(rng, dt, 0, 9), raw([]), region(rng, dt, 0, 9))


# ---------------------------------------------------------------------------------------------------------------
# Types the official headers reject at compile time
BAD_TYPES = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void bad_types(GM_ADDR x) {
    LocalTensor<bfloat16_t> b;
    LocalTensor<uint8_t> tmp;
    Transpose(b, b, tmp, TransposeParamsExt(1, 2, 1, 16, TransposeType::TRANSPOSE_NCHW2NHWC));
    LocalTensor<bfloat16_t> l[NCHW_CONV_ADDR_LIST_SIZE];
    TransDataTo5HD<bfloat16_t>(l, l, TransDataTo5HDParams());
    LocalTensor<int32_t> s;
    LocalTensor<uint32_t> u;
    Sort32(s, s, u, 1);
    MrgSort(s, MrgSortSrcList<int32_t>(s, s, s, s), MrgSort4Info());
}
"""


def test_unsupported_types_do_not_compile():
    with pytest.raises(RuntimeError) as e:
        twin.compile_kernel(BAD_TYPES)
    for msg in ("Transpose (TransposeParamsExt): data type not supported on dav-2201",
                "TransDataTo5HD: data type not supported on dav-2201", "Sort32: T must be half or float",
                "MrgSort: T must be half or float"):
        assert msg in str(e.value), msg
