"""The twin's launcher is usable from plain C++: build tests/cpp/launch_from_cpp.cpp with g++ and run it."""
import os
import subprocess
from pathlib import Path

from npu_flash_attn import twin


def test_launch_from_cpp(tmp_path: Path):
    src = Path(__file__).parent / "cpp" / "launch_from_cpp.cpp"
    exe = tmp_path / "launch_from_cpp"
    cmd = [os.environ.get("CXX", "g++"), "-std=c++17", "-O1", "-pthread", str(src), "-o", str(exe),
           *[f"-I{d}" for d in twin.include_dirs()]]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "ok"
