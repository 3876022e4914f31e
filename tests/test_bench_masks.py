"""scripts/bench_masks.py prints its table as a table: the header row and the separator first, then one row per
measurement as it arrives, the same lines it writes with --markdown. The row processes are stubbed (each real one
runs a forward on the twin); the measured values are not the point here."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_masks.py"


def _load():
    spec = importlib.util.spec_from_file_location("bench_masks", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_header_row_comes_before_the_rows(monkeypatch, capsys, tmp_path):
    mod = _load()
    row = dict(modeled_us=1.0, modeled_us_low=0.9, modeled_us_high=1.2, twin_seconds=0.5, peak_rss_mib=300, extra_mib=2,
               mask_mib=0.0, steps_in_band=1)

    def fake_run(cmd, **kwargs):
        assert cmd[:3] == [sys.executable, str(SCRIPT), "--row"]
        return subprocess.CompletedProcess(cmd, 0, stdout=json.dumps(row) + "\n", stderr="")

    monkeypatch.setattr(mod.subprocess, "run", fake_run)
    md = tmp_path / "table.md"
    monkeypatch.setattr(sys, "argv", ["bench_masks.py", "--seq", "128", "--markdown", str(md)])
    mod.main()
    out = capsys.readouterr().out.splitlines()
    table = [line for line in out if line.startswith("|")]
    assert table[0].startswith("| row | modeled (Ascend910B2) µs |") and table[1].startswith("|---|")
    assert [line.split("|")[1].strip() for line in table[2:]] == mod.ROWS
    assert all(line.count("|") == table[0].count("|") for line in table)
    assert md.read_text().splitlines() == table
