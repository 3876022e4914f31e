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
