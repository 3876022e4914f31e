"""First use: `--version`, help() of the ops and the public functions, py.typed, the first call not importing
torch._dynamo (what made it take seconds), logging of the package's own decisions, progress lines, and (slow) a
built wheel installed into a fresh virtual environment."""
from __future__ import annotations

import importlib.metadata
import inspect
import io
import logging
import os
import pydoc
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import npu_flash_attn
from npu_flash_attn import progress

ROOT = Path(__file__).resolve().parents[1]


def _run(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def test_version_cli_names_the_package_torch_and_the_adapter():
    r = _run("-m", "npu_flash_attn", "--version")
    assert r.returncode == 0, r.stderr
    m = re.fullmatch(r"npu-flash-attn (\S+) \(torch (\S+), torch_npu ([^,]+), NPU adapter (loaded from \S+|not loaded);"
                     r" CPU twin chips: (.+)\)\n", r.stdout)
    assert m, r.stdout
    assert m.group(1) == npu_flash_attn.__version__ == importlib.metadata.version("npu-flash-attn")
    assert m.group(2) == torch.__version__
    assert m.group(5).split(", ") == npu_flash_attn.available_chips()


@pytest.mark.parametrize("obj, words", [
    (lambda: torch.ops.npu.flash_attention, ("input_layout", "sparse_mode", "actual_seq_qlen", "softmax_max", "sink")),
    (lambda: torch.ops.npu.flash_attention.default, ("input_layout", "keep_prob", "dropout_mask")),
    (lambda: torch.ops.npu.flash_attention_grad, ("dy", "softmax_sum", "attention_in", "deterministic", "dsink")),
    (lambda: npu_flash_attn.flash_attention, ("torch.ops.npu.flash_attention", "sparse_mode", "TND")),
    (lambda: npu_flash_attn.backward.flash_attention_grad, ("torch.ops.npu.flash_attention_grad", "dpse")),
])
def test_help_shows_the_schema_and_the_semantics(obj, words):
    text = pydoc.render_doc(obj(), renderer=pydoc.plaintext)
    for w in words:
        assert w in text, w


def test_public_functions_and_modules_have_docstrings():
    for name in dir(npu_flash_attn):
        x = getattr(npu_flash_attn, name)
        if name.startswith("_") or not (inspect.isfunction(x) or inspect.ismodule(x) or inspect.isclass(x)):
            continue
        if inspect.ismodule(x) and not x.__name__.startswith("npu_flash_attn"):
            continue
        assert (x.__doc__ or "").strip(), f"npu_flash_attn.{name} has no docstring"


def test_package_is_typed():
    assert (Path(npu_flash_attn.__file__).parent / "py.typed").is_file()
    assert 'npu_flash_attn = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()  # shipped in wheels too


def test_first_call_does_not_import_dynamo():
    """torch.library.custom_op wraps CPU kernels in torch._disable_dynamo, whose first call imports torch._dynamo
    (seconds); the ops are defined without it, forward and backward."""
    code = ("import sys, torch, npu_flash_attn\n"
            "q = torch.randn(1, 40, 2, 32, dtype=torch.float16, requires_grad=True)\n"
            "npu_flash_attn.flash_attention(q, q, q, 2, 'BSND', scale=0.2)[0].sum().backward()\n"
            "print('torch._dynamo' in sys.modules)\n")
    r = _run("-c", code)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stdout + r.stderr


def test_double_backward_is_refused_clearly():
    q = torch.randn(1, 40, 2, 32, dtype=torch.float16, requires_grad=True)
    g, = torch.autograd.grad(npu_flash_attn.flash_attention(q, q, q, 2, "BSND", scale=0.2)[0].sum(), q,
                             create_graph=True)
    with pytest.raises(NotImplementedError, match="double backward"):
        g.sum().backward()


def test_logging_says_which_chip_the_twin_emulates_and_why(caplog, monkeypatch):
    monkeypatch.setattr(npu_flash_attn.chip, "_logged_chips", set())
    q = torch.randn(1, 40, 2, 32, dtype=torch.float16)
    with caplog.at_level(logging.INFO, logger="npu_flash_attn"):
        npu_flash_attn.set_chip("Ascend910B4")
        try:
            npu_flash_attn.flash_attention(q, q, q, 2, "BSND", scale=0.2)
            npu_flash_attn.flash_attention(q, q, q, 2, "BSND", scale=0.2)
        finally:
            npu_flash_attn.set_chip(None)
        monkeypatch.setenv("NPU_FA_CHIP", "Ascend910B3")
        npu_flash_attn.flash_attention(q, q, q, 2, "BSND", scale=0.2)
    msgs = [r.getMessage() for r in caplog.records if r.name == "npu_flash_attn"]
    assert msgs.count("CPU twin emulates Ascend910B4 (chosen by set_chip)") == 1  # once, not per call
    assert "CPU twin emulates Ascend910B3 (chosen by NPU_FA_CHIP)" in msgs


def test_adapter_decision_is_logged():
    r = _run("-c", "import logging; logging.basicConfig(level=logging.INFO); import npu_flash_attn")
    assert re.search(r"INFO:npu_flash_attn:NPU adapter (loaded from \S+|not loaded \(.*\): .+)", r.stderr), r.stderr


def test_progress_line_format():
    assert progress.line("bench", 12.04, done=3, total=10, left=28.1, what="fwd S=1024") == \
        "[npu_flash_attn] bench 3/10 (30 %): 12.0 s elapsed, ETA 28.1 s: fwd S=1024"
    assert progress.line("twin forward launch", 700.0, left=1300.0, estimate=True) == \
        "[npu_flash_attn] twin forward launch: 11.7 min elapsed, about 21.7 min left (estimate)"


def test_sweep_prints_count_and_eta(monkeypatch):
    monkeypatch.setenv("NPU_FA_PROGRESS", "1")
    out = io.StringIO()
    sweep = progress.Sweep(3, "grid", stream=out)
    for i in range(3):
        time.sleep(0.01)
        sweep.step(f"case {i}")
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    for i, ln in enumerate(lines):
        m = re.fullmatch(rf"\[npu_flash_attn\] grid {i + 1}/3 \(\d+ %\): ([0-9.]+) s elapsed, ETA ([0-9.]+) s: case {i}",
                         ln)
        assert m, ln
    assert float(re.search(r"ETA ([0-9.]+)", lines[-1]).group(1)) == 0.0
    monkeypatch.setenv("NPU_FA_PROGRESS", "0")
    quiet = io.StringIO()
    progress.Sweep(2, "grid", stream=quiet).step()
    assert quiet.getvalue() == ""


def test_long_launch_prints_heartbeats_with_an_estimate(monkeypatch):
    monkeypatch.setenv("NPU_FA_PROGRESS", "1")
    monkeypatch.setattr(progress, "_twin_flops_per_s", {})
    out = io.StringIO()
    with progress.launch("twin forward launch", 1e9, "forward", first=0.05, every=0.05, stream=out):
        time.sleep(0.3)  # no earlier launch of this kind: no estimate yet
    first = out.getvalue().splitlines()
    assert first and all(re.fullmatch(r"\[npu_flash_attn\] twin forward launch: [0-9.]+ s elapsed", ln) for ln in first)
    out = io.StringIO()
    with progress.launch("twin forward launch", 1e9, "forward", first=0.05, every=0.05, stream=out):
        time.sleep(0.2)  # the rate of the first launch (1e9 FLOP in ~0.3 s) predicts ~0.3 s
    lines = out.getvalue().splitlines()
    assert lines and all(re.fullmatch(r"\[npu_flash_attn\] twin forward launch: [0-9.]+ s elapsed, about [0-9.]+ s "
                                      r"left \(estimate\)", ln) for ln in lines), lines


def test_portable_build_by_default():
    text = (ROOT / "setup.py").read_text()
    assert 'os.environ.get("NPU_FA_NATIVE") != "1"' in text and "ParallelCompile" in text


@pytest.mark.slow
def test_wheel_installs_into_a_fresh_venv_and_runs(tmp_path):
    """pip wheel -> a new venv (torch from this environment's site-packages) -> the demo and the README's
    standalone-kernel example run from the installed wheel, outside the checkout."""
    wheels = tmp_path / "wheels"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels),
                        str(ROOT)], capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    wheel, = wheels.glob("npu_flash_attn-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    r = subprocess.run([py, "-m", "pip", "install", "--no-deps", "--force-reinstall", str(wheel)], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([py, "-c", "import npu_flash_attn; print(npu_flash_attn.__file__)"], capture_output=True,
                       text=True, cwd=tmp_path, env=env)
    assert str(venv) in r.stdout, r.stdout + r.stderr
    r = subprocess.run([py, "-m", "npu_flash_attn", "demo", "--seq", "128"], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=600)
    assert r.returncode == 0 and "PASS (twin)" in r.stdout, r.stdout + r.stderr
    readme = (ROOT / "README.md").read_text()
    kernel = next(b for b in re.findall(r"```cpp\n(.*?)```", readme, flags=re.S) if "void axpy(" in b)
    script = next(b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S) if 'compile_kernel("axpy.cpp")' in b)
    (tmp_path / "axpy.cpp").write_text(kernel)
    (tmp_path / "example.py").write_text(script)
    script = tmp_path / "example.py"
    r = subprocess.run([py, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def test_debug_log_tells_each_launch_decisions(caplog):
    """README: DEBUG adds per-call decisions - every twin launch logs its chip, blocks, cores and tasks."""
    q = torch.randn(1, 40, 2, 32).bfloat16()
    with caplog.at_level(logging.DEBUG, logger="npu_flash_attn"):
        out = npu_flash_attn.flash_attention(q.requires_grad_(), q, q, 2, "BSND")[0]
        out.sum().backward()
    lines = [r.getMessage() for r in caplog.records if "(twin):" in r.getMessage()]
    assert any(m.startswith("flash_attention (twin): chip=") and "s1_block=" in m and "block_dim=" in m
               for m in lines), lines
    assert any(m.startswith("flash_attention_grad (twin): chip=") for m in lines), lines


def test_profile_json_says_when_the_picture_is_skipped(tmp_path, capsys, monkeypatch):
    import builtins
    from npu_flash_attn.tools.cli import main
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert main(["profile", "--heads", "1", "--seqlen", "128", "--model-only", "--json", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "skipped: timeline_png (needs matplotlib" in err
    assert (tmp_path / "trace.json").is_file() and not (tmp_path / "timeline.png").exists()
