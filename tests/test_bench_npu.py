"""scripts/bench_npu.py without an NPU: a clear message naming what is missing, exit status 2, nothing written;
its FLOP count is scripts/bench.py's."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import bench_npu  # noqa: E402


def test_without_npu_exits_with_a_clear_message(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_npu.py"), "--quick", "--out",
                        str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "bench_npu.py: no NPU to benchmark on: torch_npu is not installed" in r.stderr
    assert "scripts/bench.py" in r.stderr and not (tmp_path / "out").exists()


def test_flop_count():
    assert bench_npu.flops(1024, 128, 8, False, False) == 4 * 8 * 1024 * 1024 * 128
    assert bench_npu.flops(1024, 128, 8, True, True) == 4 * 8 * 1024 * 1024 * 128 * (1025 / 2048) * 2.5
