"""NPU tensors in the Python package (npu_flash_attn/npu.py, dispatch.py) as far as they run without torch_npu:

* the adapter loader's decisions (torch_npu missing or failing to import, NPU_FA_ADAPTER_LIB naming a missing file,
  no library in the package directory, a library that fails to load, a library found either way);
* NPU tensors without the adapter get a RuntimeError naming what is missing; other devices a ValueError;
* the registrations: the Python kernels are CPU-only (so NPU tensors reach the adapter's PrivateUse1 kernels), and
  the checks run at BackendSelect, i.e. before any backend kernel, in every grad mode.
"""
from types import SimpleNamespace

import pytest
import torch

import npu_flash_attn
from npu_flash_attn import dispatch, npu

OPS = ("npu::flash_attention", "npu::flash_attention_grad")
KERNEL_OPS = ("npu::flash_attention_fwd", "npu::flash_attention_grad")  # npu::flash_attention is their composite


class _Recorder:
    def __init__(self, fail=None):
        self.calls, self.fail = [], fail

    def __call__(self, arg):
        self.calls.append(arg)
        if self.fail:
            raise self.fail


def _load(tmp_path, environ=None, importable=True, import_error=None, load_error=None):
    imported, loaded = _Recorder(import_error), _Recorder(load_error)
    st = npu.load_adapter(environ=environ or {}, package_dir=tmp_path, torch_npu_importable=lambda: importable,
                          import_module=imported, load_library=loaded)
    return st, imported.calls, loaded.calls


def test_no_torch_npu_is_a_clear_reason(tmp_path):
    (tmp_path / npu.ADAPTER_FILE).write_bytes(b"")  # even with a library there: without torch_npu nothing loads
    st, imported, loaded = _load(tmp_path, importable=False)
    assert not st.loaded and st.path is None and imported == [] and loaded == []
    assert "torch_npu is not installed" in st.reason and "torch_npu 2.14.0" in st.reason
    assert "pip install --no-build-isolation" in st.reason and npu.ADAPTER_ENV in st.reason


def test_torch_npu_import_failure_is_reported(tmp_path):
    st, imported, loaded = _load(tmp_path, import_error=ImportError("libascendcl.so: cannot open shared object"))
    assert not st.loaded and imported == ["torch_npu"] and loaded == []
    assert "`import torch_npu` failed" in st.reason and "libascendcl.so" in st.reason


def test_env_var_naming_a_missing_file(tmp_path):
    (tmp_path / npu.ADAPTER_FILE).write_bytes(b"")  # the package copy is not used when the variable is set
    missing = tmp_path / "nowhere" / "lib.so"
    st, _, loaded = _load(tmp_path, environ={npu.ADAPTER_ENV: str(missing)})
    assert not st.loaded and loaded == []
    assert f"{npu.ADAPTER_ENV}={missing} does not name an existing file" in st.reason


def test_no_library_anywhere_names_the_env_var_and_the_build(tmp_path):
    st, _, loaded = _load(tmp_path)
    assert not st.loaded and loaded == []
    assert npu.ADAPTER_FILE in st.reason and str(tmp_path) in st.reason
    assert f"{npu.ADAPTER_ENV} is not set" in st.reason and "scripts/build_npu.sh --adapter" in st.reason


def test_env_var_first_then_package_directory(tmp_path):
    lib = tmp_path / "custom.so"
    lib.write_bytes(b"")
    (tmp_path / npu.ADAPTER_FILE).write_bytes(b"")
    st, imported, loaded = _load(tmp_path, environ={npu.ADAPTER_ENV: str(lib)})
    assert st.loaded and st.path == str(lib) and loaded == [str(lib)] and imported == ["torch_npu"]
    st, _, loaded = _load(tmp_path)
    assert st.loaded and loaded == [str(tmp_path / npu.ADAPTER_FILE)] and st.reason == ""


def test_library_that_fails_to_load(tmp_path):
    (tmp_path / npu.ADAPTER_FILE).write_bytes(b"")
    st, _, loaded = _load(tmp_path, load_error=OSError("undefined symbol: aclnnFlashAttentionNpuFa"))
    assert not st.loaded and len(loaded) == 1
    assert "failed" in st.reason and "aclnnFlashAttentionNpuFa" in st.reason


def test_this_machine_has_no_adapter():
    st = npu.status()
    assert not st.loaded and st.reason  # no torch_npu here (CI and development machines)


def test_npu_tensors_without_adapter_raise_naming_what_is_missing(monkeypatch):
    monkeypatch.setattr(npu, "_status", npu.AdapterStatus(False, None, "torch_npu is not installed (...)"))
    for op in OPS:
        with pytest.raises(RuntimeError, match=rf"{op} on NPU tensors needs the torch_npu adapter library, which is "
                                               r"not loaded: torch_npu is not installed"):
            dispatch.require_device(SimpleNamespace(type="npu"), op)
    monkeypatch.setattr(npu, "_status", npu.AdapterStatus(True, "/x/lib.so", ""))
    dispatch.require_device(SimpleNamespace(type="npu"), OPS[0])  # loaded: the adapter's kernel runs
    dispatch.require_device(torch.device("cpu"), OPS[0])
    with pytest.raises(ValueError, match=r"query is on device xpu:0; npu::flash_attention runs on CPU tensors"):
        dispatch.require_device(_Dev("xpu:0"), OPS[0])


class _Dev:
    def __init__(self, name):
        self.type, self._name = name.split(":")[0], name

    def __str__(self):
        return self._name


@pytest.mark.parametrize("op", KERNEL_OPS)
def test_python_kernels_are_cpu_only_and_checks_run_at_backend_select(op):
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    assert has(op, "CPU") and has(op, "BackendSelect") and has(op, "Autograd") and has(op, "Meta")
    # no catch-all kernel that would take NPU tensors away from the adapter's PrivateUse1 kernel
    assert not has(op, "CompositeExplicitAutograd") and not has(op, "CompositeImplicitAutograd")
    assert not has(op, "PrivateUse1")  # the adapter is not loaded here


def test_public_forward_is_a_composite_of_the_kernel_op():
    """npu::flash_attention has no kernel of its own: every device reaches npu::flash_attention_fwd's (the
    adapter registers that one), with its checks and autograd."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    op = "npu::flash_attention"
    assert has(op, "CompositeImplicitAutograd")
    assert not any(has(op, k) for k in ("CPU", "BackendSelect", "PrivateUse1", "CompositeExplicitAutograd"))


def _qkv(gen, S1=19, S2=23):
    return (torch.randn(1, S, n, 16, generator=gen).to(torch.float16) for S, n in ((S1, 2), (S2, 1), (S2, 1)))


@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference"])
def test_value_checks_run_before_the_cpu_kernel_in_every_grad_mode(gen, mode):
    # The CPU kernel itself skips the data checks (they ran before dispatch): a NaN reaching it would not raise.
    q, k, v = _qkv(gen)
    q[0, 3, 1, 5] = float("nan")
    if mode == "grad":
        q.requires_grad_()
    ctx = {"grad": torch.enable_grad, "no_grad": torch.no_grad, "inference": torch.inference_mode}[mode]
    before = npu_flash_attn.last_launch_info()
    with ctx():
        with pytest.raises(ValueError, match=r"query contains NaN or Inf \(first at index \(0, 3, 1, 5\)"):
            torch.ops.npu.flash_attention(q, k, v, 2, "BSND")
        with pytest.raises(ValueError, match=r"scale=1e\+38 times the largest"):
            torch.ops.npu.flash_attention(q.detach().nan_to_num(0.0), k, v, 2, "BSND", scale=1e38)
    assert npu_flash_attn.last_launch_info() == before  # nothing launched


def test_grad_value_checks_run_before_the_cpu_kernel(gen):
    q, k, v = _qkv(gen)
    out, smax, ssum = torch.ops.npu.flash_attention(q, k, v, 2, "BSND")
    dy = torch.randn_like(out)
    dy[0, 0, 0, 0] = float("inf")
    with torch.inference_mode(), pytest.raises(ValueError, match=r"dy contains NaN or Inf"):
        torch.ops.npu.flash_attention_grad(q, k, v, dy, 2, "BSND", softmax_max=smax, softmax_sum=ssum,
                                           attention_in=out)


def test_compressed_mask_content_checked_before_dispatch(gen):
    q, k, v = _qkv(gen)
    wrong = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=2)
    with torch.inference_mode(), pytest.raises(ValueError, match=r"atten_mask for sparse_mode=3 must equal"):
        torch.ops.npu.flash_attention(q, k, v, 2, "BSND", atten_mask=wrong, sparse_mode=3)


def test_bind_arguments_fills_defaults_by_schema():
    schema = torch.ops.npu.flash_attention.default._schema
    q = torch.zeros(1)
    got = dispatch.bind_arguments(schema, (q, q, q, 2, "BSND"), {"sparse_mode": 3})
    assert got["head_num"] == 2 and got["sparse_mode"] == 3 and got["scale"] == 1.0 and got["atten_mask"] is None
    assert list(got) == [a.name for a in schema.arguments]


def test_value_checks_are_opt_in_on_npu(monkeypatch):
    from types import SimpleNamespace

    from npu_flash_attn.dispatch import value_checks
    cpu, npu_dev = torch.device("cpu"), SimpleNamespace(type="npu")
    monkeypatch.delenv("NPU_FA_CHECK_VALUES", raising=False)
    assert value_checks(cpu) and not value_checks(npu_dev)
    monkeypatch.setenv("NPU_FA_CHECK_VALUES", "1")
    assert value_checks(cpu) and value_checks(npu_dev)
    monkeypatch.setenv("NPU_FA_CHECK_VALUES", "0")
    assert not value_checks(npu_dev)
