"""docs/performance.md's decode table (scripts/decode_table.py): the committed block parses into the script's grid,
each row is consistent with itself (the HBM figure recomputed by hand from the problem's bytes and the modeled
time, the ranges around their central values, the naive/ours ratio) and the target lines follow from the rows.
Re-modelling the grid takes about 15 minutes: that check is marked slow."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import decode_table  # noqa: E402

from npu_flash_attn.tools import baseline, profiler  # noqa: E402

NUM = r"([\d.]+)"
ROW = re.compile(rf"\| (\d+) \| (\d+)K \| (\d+):(\d+) \| (\d+) \| {NUM} µs \({NUM} - {NUM}\) \| {NUM} % \({NUM} - "
                 rf"{NUM}\) \| (?:{NUM} µs \| {NUM}x|n/a \| n/a) \|")


def _block() -> str:
    text = (ROOT / "docs" / "performance.md").read_text()
    return text[text.index(decode_table.BEGIN) + len(decode_table.BEGIN):text.index(decode_table.END)]


def _rows() -> list:
    return [ROW.fullmatch(line) for line in _block().splitlines() if re.match(r"\| \d", line)]


def test_block_covers_the_grid():
    rows = _rows()
    assert all(rows), [line for line, m in zip(_block().splitlines(), rows) if not m]
    got = [(int(m[1]), int(m[2]) * 1024, int(m[3]) // int(m[4])) for m in rows]
    assert got == [(b, kv, g) for b, kv in decode_table.CASES for g in decode_table.GROUPS]


def test_rows_are_consistent():
    bw = next(c for c in profiler.twin_backend.ext().chips() if c["name"] == decode_table.CHIP)["hbm_gbps"] * 1e9
    D, block = decode_table.HEAD_DIM, decode_table.BLOCK
    for m in _rows():
        b, kv, n1, n2, splits = int(m[1]), int(m[2]) * 1024, int(m[3]), int(m[4]), int(m[5])
        t, tlo, thi, pct, plo, phi = (float(m[i]) for i in range(6, 12))
        # q and out (bf16), K and V pages (bf16), the block table (int32)
        required = 2 * b * n1 * D * 2 + 2 * b * n2 * kv * D * 2 + b * (kv // block) * 4

        def hbm_pct(us):  # with the slack of the table's rounding (0.05 us, 0.05 %)
            exact = 100 * required / (us * 1e-6 * bw)
            return exact, 0.05 + exact * 0.05 / us + 1e-9
        for shown, us in ((pct, t), (plo, thi), (phi, tlo)):
            exact, slack = hbm_pct(us)
            assert abs(shown - exact) <= slack, (m[0], shown, exact)
        assert tlo <= t <= thi and splits >= 1
        # the naive decode is modeled wherever gemm.cpp can load P's rows (KV elements long)
        assert (m[12] is None) == (kv > baseline.GEMM_MAX_ROW), m[0]
        if m[12] is not None:
            naive, ratio = float(m[12]), float(m[13])
            assert abs(ratio - naive / t) <= 0.005 + 0.05 / t + 0.05 * naive / t ** 2, m[0]


def test_target_lines_follow_from_the_rows():
    block = _block()
    rows = [(int(m[1]), int(m[2]) * 1024, int(m[4]), float(m[9]), float(m[10])) for m in _rows()]
    for floor, pick, label in ((80, lambda b, kv, n2: b * n2 >= 48 and kv >= 4096, "B·N2 >= 48"),
                               (60, lambda b, kv, n2: b == 1 and kv == 32768, "B = 1, N2 = 8")):
        sel = [r for r in rows if pick(*r[:3])]
        assert sel
        line = next(x for x in block.splitlines() if x.startswith(f"- {label}"))
        below = [r[3] for r in sel if r[3] < floor]
        near = all(floor - x <= 0.05 for x in below)  # a rounded figure just under the floor may be met unrounded
        assert ("met (" in line) == (not below) or near, line
        assert f"lowest {min(r[3] for r in sel):.1f} %" in line


INT8_ROW = re.compile(rf"\| int8 \| (\d+) \| (\d+)K \| (\d+):(\d+) \| (\d+) \| {NUM} µs \({NUM} - {NUM}\) \| {NUM} % "
                      rf"\({NUM} - {NUM}\) \| {NUM} µs \| {NUM}x \|")


def test_int8_rows_are_consistent():
    """The int8 rows: the target's grid, the HBM figure from int8 K/V bytes (plus per-channel scales and offsets)
    by hand, the bf16 time equal to the bf16 table's row of the same problem, the ratio and the target line."""
    block = _block()
    lines = [x for x in block.splitlines() if x.startswith("| int8 |")]
    rows = [INT8_ROW.fullmatch(x) for x in lines]
    assert rows and all(rows), lines
    assert [(int(m[1]), int(m[2]) * 1024, int(m[3]) // int(m[4])) for m in rows] == \
        [(b, kv, g) for b, kv in decode_table.int8_cases() for g in decode_table.GROUPS]
    bf16 = {(int(m[1]), int(m[2]), int(m[3])): float(m[6]) for m in _rows()}
    bw = next(c for c in profiler.twin_backend.ext().chips() if c["name"] == decode_table.CHIP)["hbm_gbps"] * 1e9
    D, block_size = decode_table.HEAD_DIM, decode_table.BLOCK
    ratios = []
    for m in rows:
        b, kv, n1, n2 = int(m[1]), int(m[2]) * 1024, int(m[3]), int(m[4])
        t, pct, ref, ratio = float(m[6]), float(m[9]), float(m[12]), float(m[13])
        required = 2 * b * n1 * D * 2 + 2 * b * n2 * kv * D + b * (kv // block_size) * 4 + 2 * 2 * n2 * D * 2
        exact = 100 * required / (t * 1e-6 * bw)
        assert abs(pct - exact) <= 0.05 + exact * 0.05 / t + 1e-9, (m[0], pct, exact)
        assert ref == bf16[(b, int(m[2]), n1)], m[0]
        assert abs(ratio - t / ref) <= 0.005 + 0.05 / ref + 0.05 * t / ref ** 2, m[0]
        ratios.append(ratio)
    line = next(x for x in block.splitlines() if x.startswith("- int8 KV cache"))
    assert ("met (" in line) == all(x <= decode_table.INT8_RATIO for x in ratios), line
    assert f"highest {max(ratios):.2f}x" in line


@pytest.mark.slow
def test_block_is_up_to_date():
    assert subprocess.run([sys.executable, str(ROOT / "scripts" / "decode_table.py"), "--check"]).returncode == 0
