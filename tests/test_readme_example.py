"""Every Python block of README.md runs as written on a CPU machine, in the order a reader meets them (later blocks
use what earlier ones defined: q, k, v, B, S, N1, D). Lines that need torch_npu or an NPU are comments."""
import re
from pathlib import Path

import numpy as np
import torch

import npu_flash_attn

README = Path(__file__).resolve().parent.parent / "README.md"


def _blocks(lang):
    return re.findall(r"```" + lang + r"\n(.*?)```", README.read_text(), flags=re.S)


def test_no_block_needs_torch_npu():
    for block in _blocks("python"):
        code = [line.split("#")[0].strip() for line in block.splitlines()]
        assert not any("torch_npu" in line for line in code), block


def test_every_python_block_runs_in_order(tmp_path, monkeypatch):
    kernels = [b for b in _blocks("cpp") if "void axpy(" in b]
    assert len(kernels) == 1
    (tmp_path / "axpy.cpp").write_text(kernels[0])  # the C++ block the standalone-kernel example compiles
    monkeypatch.chdir(tmp_path)
    blocks = _blocks("python")
    assert len(blocks) >= 5
    namespace = {}
    try:
        for i, block in enumerate(blocks):
            exec(compile(block, f"README.md, Python block {i + 1}", "exec"), namespace)
    finally:
        torch.use_deterministic_algorithms(False)  # the backward block switches it on
    q, k, v = namespace["q"], namespace["k"], namespace["v"]
    assert q.grad is not None and k.grad is not None and v.grad is not None  # the backward block
    assert namespace["info"].tiles_masked > 0  # the masks block: its key padding leaves tiles fully masked
    assert namespace["npu_fusion_attention"] is npu_flash_attn.npu_fusion_attention  # the drop-in block
    z, x, y = namespace["z"], namespace["x"], namespace["y"]  # the standalone kernel, Muls then Add in float32
    assert (z == (np.float32(2.5) * x).astype(x.dtype) + y).all()
