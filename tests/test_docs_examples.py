"""Every Python block of the docs pages listed here runs as written on a CPU machine, in the order a reader meets
them (later blocks use what earlier ones defined), and none needs torch_npu (lines that would are comments)."""
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = ["inference.md"]


def _blocks(page: str) -> list:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), flags=re.S)


@pytest.mark.parametrize("page", PAGES)
def test_no_block_needs_torch_npu(page):
    for block in _blocks(page):
        code = [line.split("#")[0] for line in block.splitlines()]
        assert not any("torch_npu" in line for line in code), block


@pytest.mark.parametrize("page", PAGES)
def test_every_python_block_runs_in_order(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = _blocks(page)
    assert blocks
    namespace = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/{page}, Python block {i + 1}", "exec"), namespace)


def test_inference_blocks_check_what_they_show():
    # the blocks' own asserts are the checks: each page block above must keep at least one
    assert all("assert " in block for block in _blocks("inference.md"))
