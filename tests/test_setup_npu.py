"""setup.py's NPU step (setup_npu.py): the adapter library is built only with CANN (ASCEND_HOME_PATH) and an
importable torch_npu, else the install is the CPU twin only with a one-line reason (the CI install takes that
branch); when built, scripts/build_npu.sh --adapter runs and the library lands in the package directory."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("setup_npu", ROOT / "setup_npu.py")
setup_npu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(setup_npu)


def _yes(name):
    return name == "torch_npu"


def _no(name):
    return False


@pytest.mark.parametrize("env,importable,words", [
    ({}, _yes, ["ASCEND_HOME_PATH is not set", "set_env.sh"]),
    ({"ASCEND_HOME_PATH": "/usr/local/Ascend/cann"}, _no, ["torch_npu is not importable", "--no-build-isolation"]),
    ({"ASCEND_HOME_PATH": "/usr/local/Ascend/cann", "NPU_FA_SKIP_ADAPTER": "1"}, _yes, ["NPU_FA_SKIP_ADAPTER=1"]),
], ids=["no_cann", "no_torch_npu", "skip_requested"])
def test_adapter_skipped_with_one_line_reason(env, importable, words):
    build, why = setup_npu.adapter_decision(env, importable)
    assert build is False and "\n" not in why
    assert why.startswith("NPU adapter skipped: ") and why.endswith("installing the CPU twin only")
    for w in words:
        assert w in why, why


def test_adapter_built_with_cann_and_torch_npu():
    assert setup_npu.adapter_decision({"ASCEND_HOME_PATH": "/opt/cann"}, _yes) == (True, "")


def test_this_machine_takes_the_skipped_branch():
    # what the CI install prints (no CANN on development and CI machines); the real importability check
    env = {"PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-c", "import setup_npu as s; print(s.adapter_decision()[1])"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("NPU adapter skipped: ASCEND_HOME_PATH is not set"), r.stderr


@pytest.mark.parametrize("install,tail", [(None, []), ("/opt/npu_fa_opp", ["--install", "/opt/npu_fa_opp"]),
                                          ("default", ["--install"])])
def test_build_runs_build_npu_and_copies_the_library(tmp_path, install, tail):
    build, pkg, calls = tmp_path / "build", tmp_path / "pkg" / "npu_flash_attn", []

    def run(cmd, check, cwd):
        calls.append(cmd)
        build.mkdir(parents=True, exist_ok=True)
        (build / setup_npu.ADAPTER_FILE).write_bytes(b"\x7fELF adapter")

    env = {"NPU_FA_OPP_INSTALL": install} if install else {}
    dest = setup_npu.build_adapter(pkg, env, run=run, build=build)
    assert calls == [["bash", str(ROOT / "scripts" / "build_npu.sh"), "--build-dir", str(build), "--adapter"] + tail]
    assert dest == pkg / setup_npu.ADAPTER_FILE and dest.read_bytes() == b"\x7fELF adapter"


def test_file_names_agree():
    from npu_flash_attn import npu
    assert setup_npu.ADAPTER_FILE == npu.ADAPTER_FILE
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert "add_library(npu_flash_attn_npu SHARED" in cmake  # lib<target>.so
