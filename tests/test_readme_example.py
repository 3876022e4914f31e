"""The README's "Run your own Ascend C kernel on the CPU twin" example runs as written."""
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _blocks(lang):
    return re.findall(r"```" + lang + r"\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_twin_example(tmp_path, monkeypatch):
    kernels = [b for b in _blocks("cpp") if 'void axpy(' in b]
    scripts = [b for b in _blocks("python") if 'compile_kernel("axpy.cpp")' in b]
    assert len(kernels) == 1 and len(scripts) == 1
    (tmp_path / "axpy.cpp").write_text(kernels[0])
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(scripts[0], "README.md", "exec"), namespace)  # ends with its own assert on the result
    z, x, y = namespace["z"], namespace["x"], namespace["y"]
    assert (z == (2.5 * x).astype(x.dtype) + y).all()  # Muls then Add: each rounded to float32, as numpy does


def test_readme_flash_attention_examples_run_in_order():
    # the forward, masks and backward snippets continue one another (q, k, v, B, S, N1, D from the first)
    scripts = [b for b in _blocks("python") if "torch.ops.npu.flash_attention" in b]
    assert len(scripts) == 3, len(scripts)
    namespace = {}
    import torch
    try:
        exec(compile("\n".join(scripts), "README.md", "exec"), namespace)
    finally:
        torch.use_deterministic_algorithms(False)  # the backward snippet switches it on
    q, k, v = namespace["q"], namespace["k"], namespace["v"]
    assert q.grad is not None and k.grad is not None and v.grad is not None
    assert namespace["info"].tiles_masked > 0  # the key padding leaves tiles fully masked
