"""On-core memory starts every launch holding poison (NaN in half, bfloat16_t and float); a launch that leaves poison,
or a value computed from it, in GM is reported (a TwinWarning: only the host knows which GM bytes it reads; the op's
launches refuse it), naming the core, the storing API, the GM element and the poison's origin. Storing redundant
data that is overwritten later stays silent, and so do real NaN/inf in user data."""
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

KERNEL = Path(__file__).parent / "kernels" / "memory" / "poison.cpp"
N = 64
CORE = r"^\[AIV 0 \(block 0, sub 0\)\] "


@pytest.fixture(scope="module")
def lib():
    return twin.compile_kernel(KERNEL)


def run(lib, case, x, kernel="poison_vec", y=None, clean=True):
    """Runs a case; with `clean` a TwinWarning is an error."""
    y = np.zeros(N, np.float32) if y is None else y
    with warnings.catch_warnings():
        if clean:
            warnings.simplefilter("error", twin.TwinWarning)
        lib.launch(kernel, 1, np.array([case, 0, 0, 0, 0, 0, 0, 0], np.int32), x, y,
                   kernel_type="aiv" if kernel == "poison_vec" else "aic")
    return y


def refused(lib, case, x, pattern, **kw):
    with pytest.warns(twin.TwinWarning) as rec:
        run(lib, case, x, clean=False, **kw)
    msgs = [str(w.message) for w in rec]
    assert any(re.search(pattern, m) for m in msgs), msgs


def test_computed_results_pass(lib, rng):
    x = rng.standard_normal(N).astype(np.float32)
    np.testing.assert_array_equal(run(lib, 0, x), x + np.float32(1))


def test_arithmetic_on_never_written_ub_is_reported(lib, rng):
    x = rng.standard_normal(N).astype(np.float32)
    refused(lib, 1, x, CORE + r"DataCopy: stored poison to GM buffer 'argument 2' byte 128 \(element 32 of the copy "
                              r"from UB byte \d+, a 4-byte 0xffffffff\) and nothing overwrote it by the launch end "
                              r"\(128 bytes of GM hold poison in all\): it is the twin's never-written poison")


@pytest.mark.parametrize("case,bits", [(2, "0xffffe000"), (3, "0xffff0000")], ids=["half", "bf16"])
def test_poison_survives_a_cast(lib, rng, case, bits):
    v = rng.standard_normal(2 * N).astype(np.float32)  # 2N halves / bfloat16s; the kernel loads N of them
    x = (v.astype(np.float16).view(np.uint16) if case == 2 else (v.view(np.uint32) >> 16).astype(np.uint16)).view(np.float32)
    refused(lib, case, x, CORE + r"DataCopy: stored poison to GM buffer 'argument 2' byte 128 .* a 4-byte " + bits +
            r"\).*: it is a value computed from never-written poison")


def test_real_nan_and_inf_in_user_data_pass(lib, rng):
    x = rng.standard_normal(N).astype(np.float32)
    x[:4] = [np.nan, -np.nan, np.inf, -np.inf]
    with np.errstate(invalid="ignore"):
        x[4] = np.float32(0) * np.float32(np.inf)  # the default NaN x86 computes
    y = run(lib, 4, x)
    assert np.array_equal(y, x, equal_nan=True)


def test_user_data_with_the_poison_bits_is_not_reported(lib, rng):
    x = rng.standard_normal(N).astype(np.float32)
    x.view(np.uint32)[7] = 0xFFFFFFFF  # the very pattern: the launch cannot tell, so it reports nothing
    y = run(lib, 4, x)
    assert y.view(np.uint32)[7] == 0xFFFFFFFF


def test_float_data_whose_low_halves_look_like_poison_keeps_reports_on(lib, rng):
    # Floats are judged as floats: low 16 bits of 0xffff (one float in 2048 of random data) make no poison.
    x = rng.standard_normal(N).astype(np.float32)
    x.view(np.uint32)[:] |= 0xFFFF
    refused(lib, 1, x, CORE + r"DataCopy: stored poison to GM buffer 'argument 2' byte 128 .*never-written poison")


def test_redundant_data_overwritten_later_passes(lib, rng):
    x = rng.standard_normal(N).astype(np.float32)
    y = run(lib, 5, x)
    np.testing.assert_array_equal(y[:N // 2], x[:N // 2] + np.float32(1))
    assert (y[N // 2:] == 2).all()


def test_atomic_add_of_poison_is_reported(lib):
    refused(lib, 6, np.zeros(N, np.float32), CORE + r"DataCopy: stored poison to GM buffer 'argument 2' byte 128 ")


def test_datacopypad_of_a_poison_tail_is_reported(lib, rng):
    x = rng.standard_normal(N).astype(np.float32)
    refused(lib, 7, x, CORE + r"DataCopyPad\(UB->GM\): stored poison to GM buffer 'argument 2' byte 128 .*"
                              r"\(12 bytes of GM hold poison in all\)")


def test_l1_to_gm_of_never_loaded_bytes_is_reported(lib, rng):
    x = rng.standard_normal(N).astype(np.float32)  # 2N halves of bits
    x.view(np.float16)[:] = rng.standard_normal(2 * N)
    y = run(lib, 0, x, kernel="poison_cube", y=np.zeros(N, np.float32))
    assert np.array_equal(y.view(np.float16), x.view(np.float16))
    refused(lib, 1, x, r"^\[AIC 0\] DataCopy\(L1->GM\): stored poison to GM buffer 'argument 2' byte 128 .*from L1 "
                       r"byte 0, a 2-byte 0xffff", kernel="poison_cube")


@pytest.mark.parametrize("fill,word", [("nan", 0x7FC07FC0), ("stale", 0x3C003C00)])
def test_local_fill_knob_models_an_earlier_kernels_leftovers(lib, rng, monkeypatch, fill, word):
    """NPU_TWIN_LOCAL_FILL=nan|stale: on-core memory holds an earlier kernel's NaN results or finite data instead of
    poison, which the rule does not report: the kernel's output then shows what it depends on."""
    monkeypatch.setenv("NPU_TWIN_LOCAL_FILL", fill)
    x = rng.standard_normal(N).astype(np.float32)
    y = run(lib, 1, x)
    np.testing.assert_array_equal(y[:N // 2], x[:N // 2] + np.float32(1))
    want = (np.array([word], np.uint32).view(np.float32) + np.float32(1))
    assert np.array_equal(y[N // 2:], np.repeat(want, N // 2), equal_nan=True)
    monkeypatch.setenv("NPU_TWIN_LOCAL_FILL", "zeros")
    with pytest.raises(twin.TwinError, match="NPU_TWIN_LOCAL_FILL=zeros is not one of poison, nan, stale"):
        run(lib, 0, x)


# A Fixpipe that stores L0C columns the last Mmad into the tile did not compute, as catlass's FA example stores its
# key-tail QK tile (tests/kernels/cube/fixpipe_stale.cpp): the Fixpipe and Mmad pages set no rule against it, so the
# poison (12 columns no Mmad wrote) is stored with its signature and reported at the launch end.
STALE = Path(__file__).parent / "kernels" / "cube" / "fixpipe_stale.cpp"
ROWS, PITCH = 30, 64


@pytest.fixture(scope="module")
def stale_lib():
    return twin.compile_kernel(STALE)


def run_stale(lib, rng, case, clean=True):
    a = rng.integers(-2, 3, (32, 16)).astype(np.float16)
    b = rng.integers(-2, 3, (80, 16)).astype(np.float16)
    out = np.zeros(ROWS * PITCH, np.float32)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("error" if clean else "always", twin.TwinWarning)
        lib.launch("fixpipe_stale", 1, np.array([case, 0, 0, 0, 0, 0, 0, 0], np.int32), a, b, out, kernel_type="aic")
    c = a.astype(np.float64) @ b.T.astype(np.float64)
    return c[:ROWS, :48], c[:ROWS, 48:68], out, [str(w.message) for w in rec]


def test_fixpipe_of_computed_columns_passes(stale_lib, rng):
    _, c2, out, _ = run_stale(stale_lib, rng, 0)
    o = out.reshape(ROWS, PITCH)
    np.testing.assert_array_equal(o[:, :20], c2)
    assert (o[:, 20:] == 0).all()


def test_fixpipe_of_columns_no_mmad_wrote_stores_poison_reported_at_the_end(stale_lib, rng):
    c1, c2, out, msgs = run_stale(stale_lib, rng, 1, clean=False)
    o = out.reshape(ROWS, PITCH)
    np.testing.assert_array_equal(o[:, :20], c2)
    np.testing.assert_array_equal(o[:, 32:40], c1[:, 32:40])  # the first Mmad's stale columns, as on the NPU
    assert (o.view(np.uint32)[:, 48:60] == 0xFFFFFFFF).all()  # the poison itself, signature kept
    assert any(re.search(r"^\[AIC 0\] Fixpipe\(L0C->GM\): stored poison to GM buffer 'argument 3' byte 192 \(element 48 "
                         r"of the copy from L0C byte 0, a 4-byte 0xffffffff\).*never-written poison", m) for m in msgs), msgs


def test_fixpipe_poison_overwritten_by_the_next_tile_passes(stale_lib, rng):
    c1, c2, out, _ = run_stale(stale_lib, rng, 2)
    o = out.reshape(ROWS, PITCH)
    np.testing.assert_array_equal(o[:, :20], c2)
    np.testing.assert_array_equal(o[:, 20:60], c1[:, :40])


def test_fixpipe_poison_keeps_its_signature_in_half(stale_lib, rng):
    _, c2, out, msgs = run_stale(stale_lib, rng, 3, clean=False)
    o = out.view(np.float16)[: ROWS * PITCH].reshape(ROWS, PITCH)
    np.testing.assert_array_equal(o[:, :20], c2)
    assert (o.view(np.uint16)[:, 48:60] == 0xFFFF).all()
    assert any(re.search(r"Fixpipe\(L0C->GM\): stored poison .* a 2-byte 0xffff\)", m) for m in msgs), msgs


def test_fixpipe_poison_into_int8_warns_at_the_read(stale_lib, rng):
    _, c2, out, msgs = run_stale(stale_lib, rng, 4, clean=False)
    o = out.view(np.int8)[: ROWS * PITCH].reshape(ROWS, PITCH)
    np.testing.assert_array_equal(o[:, :20], c2)
    assert any(re.search(r"^\[AIC 0\] Fixpipe\(L0C->GM\): reads L0C element \(row 0, column 48\) that no Mmad wrote "
                         r"\(never-written poison; nSize 60, mSize 30, srcStride 32\) into a int8_t output", m)
               for m in msgs), msgs
