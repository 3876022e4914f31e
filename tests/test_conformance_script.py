"""scripts/check_conformance.sh needs asc-devkit, which CI lacks: without it the script must say so and exit 2
(the full check runs locally: `scripts/check_conformance.sh`)."""
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_conformance_script_reports_missing_ascdk(tmp_path):
    env = dict(os.environ, ASCDK=str(tmp_path / "no-asc-devkit"))
    r = subprocess.run(["bash", str(ROOT / "scripts" / "check_conformance.sh")], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 2
    assert "no asc-devkit at ASCDK=" in r.stderr and "no-asc-devkit" in r.stderr
