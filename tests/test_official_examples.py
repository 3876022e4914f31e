"""scripts/run_official_examples.py: running asc-devkit's basic-API example programs (.asc kernels + host main())
unchanged on the twin through AscendC::AscCPUKernelLaunch and the ACL stand-in.

The harness machinery is checked on a miniature example of our own (tests/kernels/official_examples/mini_example).
With ASCDK pointing at an asc-devkit checkout, a few official examples are run as well (ASCDK_EXAMPLES: an
fnmatch pattern, or "all"); without it those tests are skipped.
"""
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from npu_flash_attn import twin

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
import run_official_examples as R  # noqa: E402

MINI_ROOT = REPO / "tests" / "kernels" / "official_examples"
MINI = MINI_ROOT / "mini_example"
# Official examples that ran and matched their golden output once the twin had the APIs they use.
KNOWN_GOOD = ["03_basic_api/01_memory_vector_compute/brcb", "03_basic_api/03_matrix_compute/mmad_gemv",
              "03_basic_api/04_memory_management/list_tensor_desc_input"]


def test_rewrite_launches():
    src = ('k<T, A<int>>  <<<n, nullptr, s>>>(x, f(y, z));\n'
           '// c<<<1, 0, s>>>(x);\n'
           'ns::plain\n    <<<2, 0, s>>>(\n  a);\n'
           'noargs<<<1, 0, s>>>();\n'
           'const char* t = "q<<<1, 0, s>>>(x)";\n')
    out, names = R.rewrite_launches(src)
    assert names == ["k", "plain", "noargs"]
    assert 'AscendC::AscCPUKernelLaunch(n, nullptr, s, "k", k<T, A<int>>, x, f(y, z));' in out
    assert 'AscendC::AscCPUKernelLaunch(2, 0, s, "plain", ns::plain, a);' in out
    assert 'AscendC::AscCPUKernelLaunch(1, 0, s, "noargs", noargs);' in out
    assert "// c<<<1, 0, s>>>(x);" in out and '"q<<<1, 0, s>>>(x)"' in out  # comments and strings untouched


def test_launch_without_stream_gets_the_default_one():
    out, names = R.rewrite_launches("add<T, 8><<<numBlocks, 0>>>(x, y);\n")
    assert names == ["add"]
    assert 'AscendC::AscCPUKernelLaunch(numBlocks, 0, nullptr, "add", add<T, 8>, x, y);' in out


def test_cmake_definitions(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text(
        'set(SCENARIO_NUM 0 CACHE STRING "case")\nset(COPY_DST "UB" CACHE STRING "dst")\n'
        'if(CMAKE_ASC_ARCHITECTURES STREQUAL "dav-2201")\n    set(NPU_ARCH_ID 2201)\n'
        'elseif(CMAKE_ASC_ARCHITECTURES STREQUAL "dav-3510")\n    set(NPU_ARCH_ID 3510)\nendif()\n'
        'if(COPY_DST STREQUAL "L1")\n    target_compile_definitions(demo PRIVATE COPY_DST_L1=1)\n'
        'else()\n    target_compile_definitions(demo PRIVATE COPY_DST_UB=1)\nendif()\n'
        'if(NOT SCENARIO_NUM EQUAL 3 AND CMAKE_ASC_ARCHITECTURES STREQUAL "dav-2201")  # a comment (with parens)\n'
        '    target_compile_definitions(demo PRIVATE NOT_THREE=1)\nendif()\n'
        'target_compile_definitions(demo PRIVATE\n    SCENARIO=${SCENARIO_NUM}\n    NPU_ARCH=${NPU_ARCH_ID}\n)\n')
    assert R.cmake_definitions(tmp_path, 2) == ["-DCOPY_DST_UB=1", "-DNOT_THREE=1", "-DSCENARIO=2", "-DNPU_ARCH=2201"]
    assert R.cmake_definitions(tmp_path, 3) == ["-DCOPY_DST_UB=1", "-DSCENARIO=3", "-DNPU_ARCH=2201"]


def test_out_of_reach():
    assert "high-level API library" in R.out_of_reach("04_advanced_api/10_math/exp", [""])
    assert "Matmul class" in R.out_of_reach("00_introduction/x", ['#include "lib/matmul_intf.h"'])
    assert "framework operator" in R.out_of_reach("02_features/y", ["#include <torch/extension.h>"])
    assert R.out_of_reach("03_basic_api/z", ['#include "kernel_operator.h"']) is None


def test_kernel_modes():
    src = """
    template <int N>
    __global__ __vector__ void a(GM_ADDR x) {}
    extern "C" __cube__ __global__ void b(GM_ADDR x) {}
    __global__ __mix__(1, 2) __aicore__ void c(GM_ADDR x) {}
    __mix__(1,1) __global__ void d() {}
    __global__ __mix__(0, 1) void e() {}
    __global__ __aicore__ void f(GM_ADDR x) { KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_0); }
    __global__ __aicore__ void g(GM_ADDR x) {}
    __aicore__ inline void h() {}   // __global__ __vector__ in a comment is not a qualifier
    """
    assert R.kernel_modes([src]) == {"a": "KERNEL_TYPE_AIV_ONLY", "b": "KERNEL_TYPE_AIC_ONLY",
                                     "c": "KERNEL_TYPE_MIX_AIC_1_2", "d": "KERNEL_TYPE_MIX_AIC_1_1",
                                     "e": "KERNEL_TYPE_MIX_AIV_1_0", "f": "KERNEL_TYPE_MIX_AIC_1_0"}


def test_missing_names():
    stderr = ("x.asc:3:5: error: \u2018Sort32\u2019 is not a member of \u2018AscendC\u2019\n"
              "x.asc:4:5: error: \u2018GetTPipePtr\u2019 was not declared in this scope\n"
              "x.asc:5:5: error: \u2018SliceInfo\u2019 in namespace \u2018AscendC\u2019 does not name a type\n"
              "x.asc:6:5: error: \u2018Sort32\u2019 is not a member of \u2018AscendC\u2019\n")
    assert R.missing_names(stderr) == ["AscendC::Sort32", "GetTPipePtr", "AscendC::SliceInfo"]
    assert R.first_error(stderr) == "'Sort32' is not a member of 'AscendC'"


def test_mini_example_end_to_end():
    (res,) = R.run_all(MINI_ROOT, None, 1)
    assert (res.example, res.soc, res.skipped) == ("mini_example", "dav-2201; ?", None)
    assert (res.compiles, res.runs, res.matches, res.error) == (True, True, True, "")


@pytest.fixture(scope="module")
def mini_lib():
    lib, unknown = R.compile_example(MINI / "mini_example.asc", None)
    assert unknown == ["mini_unqualified"]  # launched, but declared without an execution-space qualifier
    return lib


def _inputs(cwd: Path, rng) -> np.ndarray:
    (cwd / "input").mkdir()
    (cwd / "output").mkdir()
    x = rng.uniform(-3, 3, 3 * 72).astype(np.float32)
    x.tofile(cwd / "input" / "input_x.bin")
    return x


def test_mini_example_results(mini_lib, tmp_path, monkeypatch, rng):
    monkeypatch.chdir(tmp_path)
    x = _inputs(tmp_path, rng)
    assert R.run_main(mini_lib.path, ["demo"]) == 0
    y = np.fromfile(tmp_path / "output" / "output.bin", dtype=np.float32)
    np.testing.assert_allclose(y, x * np.float32(1.5) + np.float32(2.0), rtol=1e-6, atol=1e-6)
    ids = np.fromfile(tmp_path / "output" / "ids.bin", dtype=np.int32)[::16]  # one 64-byte slot per core
    assert ids.tolist() == [
        i * 100 + i % 2 for i in range(6)] + [1000, 1001, 1002, 4242]


@pytest.mark.parametrize("fault, message", [
    ("oob", r"DataCopy.*GM access of 1152 bytes at byte 0 of buffer 'device buffer \d+ \(864 bytes\)' \(length \d+ bytes\) "
            r"runs \d+ bytes past its end"),
    ("nomode", r"launch: kernel 'mini_unqualified' has no registered kernel mode"),
])
def test_mini_example_faulty_launch(mini_lib, tmp_path, monkeypatch, rng, fault, message):
    monkeypatch.chdir(tmp_path)
    _inputs(tmp_path, rng)
    with pytest.raises(twin.TwinError, match=message):
        R.run_main(mini_lib.path, ["demo", fault])


needs_ascdk = pytest.mark.skipif(not os.environ.get("ASCDK"),
                                 reason="ASCDK (an asc-devkit checkout with the official examples) is not set")


def _official_root() -> Path:
    root = Path(os.environ["ASCDK"]) / R.EXAMPLES_SUBDIR
    if not root.is_dir():
        pytest.skip(f"ASCDK={os.environ['ASCDK']} has no {R.EXAMPLES_SUBDIR}")
    return root


def test_summary_names_documented_rule_breaks():
    name = next(iter(R.RULE_BREAKS))
    example, scenario = name.rsplit(" [", 1)
    marker = R.RULE_BREAKS[name][0]
    broke = R.Result(example, scenario.rstrip("]"), "dav-2201", compiles=True, runs=False,
                     error=f"TwinError: [AIV 0] Cast: dst ... {marker} in repeat 0")
    assert f"- {name}: " in R.summary([broke])
    other = R.Result(example, scenario.rstrip("]"), "dav-2201", compiles=True, runs=False, error="TwinError: deadlock")
    assert "documented rule" not in R.summary([other])  # only when the failure is the rule's error
    assert f"The other failing cases (the reason is their first error in the table):\n- {name}" in R.summary([other])


def test_summary_lists_every_failing_case_once_with_its_open_question():
    name = next(iter(R.OPEN_QUESTIONS))
    example, scenario = name.rsplit(" [", 1)
    case = R.Result(example, scenario.rstrip("]"), "dav-2201", compiles=True, runs=False, error="TwinError: hazard")
    passing = R.Result("a/b", None, "dav-2201", compiles=True, runs=True, matches=True)
    no_golden = R.Result("a/c", None, "dav-2201", compiles=True, runs=True)
    lacking = R.Result("a/d", None, "dav-2201", compiles=False, missing=["aclrtEvent"])
    text = R.summary([case, passing, no_golden, lacking])
    assert text.count(name) == 1 and f"- {name}: {R.OPEN_QUESTIONS[name]}" in text
    assert "a/b" not in text and "a/c" not in text and "a/d" not in text  # a/d is counted under the missing names


@needs_ascdk
def test_official_targets_are_classified():
    all_cases = R.cases(_official_root(), None)
    assert all_cases, "no .asc examples found"
    for d, asc, n, res in all_cases:
        if d.name.startswith("reg_") or "02_reg_vector_compute" in str(d):
            assert res.skipped, f"{res.name} is a dav-3510 RegBase example and should be skipped"


@needs_ascdk
def test_official_examples_run():
    pattern = os.environ.get("ASCDK_EXAMPLES")
    root = _official_root()
    if pattern == "all":
        results = R.run_all(root, None, os.cpu_count() or 1)
    else:
        names = [pattern] if pattern else KNOWN_GOOD
        results = [r for n in names for r in R.run_all(root, n, os.cpu_count() or 1)]
    print("\n" + R.table(results) + "\n" + R.summary(results))
    ran = [r for r in results if not r.skipped]
    assert ran, "nothing to run"
    assert not [r.name for r in ran if r.error.startswith("harness:")], "harness failed on some examples"
    if not pattern:
        assert [r.name for r in ran if not r.matches] == []
