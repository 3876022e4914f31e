"""Device-code rules for op_kernel/ (scripts/check_kernel_rules.py): the real sources pass, and the scanner catches
each rule on small bad samples while accepting the legitimate look-alikes."""
import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("check_kernel_rules", ROOT / "scripts" / "check_kernel_rules.py")
rules = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("check_kernel_rules", rules)
_spec.loader.exec_module(rules)

INCLUDE_DIRS = [ROOT / "op_kernel", ROOT / "op_host"]


def scan(src):
    violations, _ = rules.scan_source(textwrap.dedent(src), "<sample>", INCLUDE_DIRS)
    return [(v.line, v.rule) for v in violations]


def test_op_kernel_sources_follow_device_rules():
    files = rules.kernel_files([ROOT / "op_kernel"])
    violations, scanned = rules.scan_files(files, INCLUDE_DIRS)
    assert not violations, "device-code rule violations:\n" + "\n".join(map(str, violations))
    assert set(f.resolve() for f in files) <= set(scanned)  # every file was read, plus the headers they include


# Each sample breaks exactly one rule, on the line marked <-.
BAD = {
    "include-stl": ('#include "kernel_operator.h"\n#include <vector>  // <-\n', [(2, "include")]),
    "include-cstdint": ("#include <cstdint>  // <-\n", [(1, "include")]),
    "include-device-else": ("#if !defined(__CCE__)\n#include <cstdint>\n#else\n#include <vector>  // <-\n#endif\n",
                            [(4, "include")]),
    "include-unknown": ('#include "no_such_header_anywhere.h"  // <-\n', [(1, "include")]),
    "stl": ("""
        __aicore__ inline void F() {
            uint32_t n = std::min(1u, 2u);  // <-
        }
        """, [(3, "stl")]),
    "new": ("""
        __aicore__ inline void F() {
            float* p = new float[4];  // <-
        }
        """, [(3, "heap")]),
    "delete": ("""
        __aicore__ inline void F(float* p) {
            delete p;  // <-
        }
        """, [(3, "heap")]),
    "malloc": ("""
        __aicore__ inline void F() {
            void* p = malloc(64);  // <-
        }
        """, [(3, "heap")]),
    "free": ("__aicore__ inline void F(void* p) { free(p); }  // <-\n", [(1, "heap")]),
    "try": ("""
        __aicore__ inline void F() {
            try {  // <-
                G();
            } catch (...) {  // <-
            }
        }
        """, [(3, "exceptions"), (5, "exceptions")]),
    "throw": ("__aicore__ inline void F() { throw 1; }  // <-\n", [(1, "exceptions")]),
    "virtual": ("""
        class Base {
        public:
            virtual void Run();  // <-
        };
        """, [(4, "virtual")]),
    "rtti": ("__aicore__ inline void F(Base* b) { auto d = dynamic_cast<Derived*>(b); }  // <-\n", [(1, "rtti")]),
    "printf": ('__aicore__ inline void F(int x) { printf("%d", x); }  // <-\n', [(1, "io")]),
    "ascendc-printf": ('__aicore__ inline void F(int x) { AscendC::printf("%d", x); }  // <-\n', [(1, "io")]),
    "dump-tensor": ("__aicore__ inline void F(AscendC::LocalTensor<float> t) { AscendC::DumpTensor(t, 0, 8); }\n",
                    [(1, "io")]),
    "static-local": ("""
        __aicore__ inline uint32_t Counter() {
            static uint32_t calls = 0;  // <-
            return ++calls;
        }
        """, [(3, "static-local")]),
    "static-local-object": ("""
        template <typename T>
        __aicore__ inline void F() {
            if (true) {
                static AscendC::TPipe pipe;  // <-
            }
        }
        """, [(5, "static-local")]),
    "static-local-in-member": ("""
        class K {
        public:
            __aicore__ inline void Process() {
                static float table[4];  // <-
            }
        };
        """, [(5, "static-local")]),
    "thread-local": ("thread_local int g = 0;  // <-\n", [(1, "thread-local")]),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_scanner_catches(name):
    src, want = BAD[name]
    got = scan(src)
    assert got == want, f"{name}: got {got}, want {want}"
    assert all(rule in rules.RULES for _, rule in want)


def test_every_rule_has_a_bad_sample():
    covered = {rule for _, want in BAD.values() for _, rule in want}
    assert covered == set(rules.RULES)


GOOD = r'''
// A kernel may mention std::vector, new, delete, printf and virtual in comments. /* even malloc(3) here */
#include "kernel_operator.h"
#include "tiling/fwd_tiling.h"        // a project header
#include "lib/matmul_intf.h"          // an Ascend C advanced-API header
#if !defined(__CCE__) && !defined(ASCEND_TWIN)
#include <cstdint>                    // host-only block
#include <vector>
#endif
#ifdef ASCEND_TWIN
inline void TwinLog(int x) { printf("%d", x); }   // CPU-twin-only block
#endif
#ifdef __CCE__
#define DEMO_DEVICE 1
#else
#include <cstdio>                     // the #else of a device-only block is host code
#endif

namespace demo {
constexpr const char* kName = "printf std::cout new delete";  // strings are not code
static constexpr uint32_t kTile = 64;

struct Tiling {
    uint32_t n;
};

class Kernel {
public:
    Kernel(const Kernel&) = delete;
    Kernel& operator=(const Kernel&) = delete;
    static constexpr uint32_t kBuffers = 2;
    __aicore__ inline static uint32_t Align(uint32_t v) { return (v + 31) / 32 * 32; }
    __aicore__ inline void Process(uint32_t newValue, uint32_t tryCount) {
        static constexpr float kScale = 0.5f;
        static const uint32_t kLimit = 8;
        static_assert(kBuffers == 2, "two buffers");
        uint32_t renewed = static_cast<uint32_t>(newValue * kScale) + kLimit + tryCount;
        int table[3] = {1, 2, 3};
        for (int i = 0; i < 3; ++i) {
            renewed += table[i];
        }
        auto fn = [&](uint32_t x) { return x + renewed; };
        que.FreeTensor(t);
        (void)fn;
    }
};
}  // namespace demo

extern "C" __global__ __aicore__ void demo_kernel(GM_ADDR x) {
    demo::Kernel k;
    k.Process(1, 2);  // kernel-rules: allow(io) is only needed on lines that break a rule
}
'''


def test_scanner_accepts_legitimate_code():
    assert scan(GOOD) == []


def test_waiver_comment():
    assert scan('__aicore__ inline void F() { printf("x"); }  // kernel-rules: allow(io)\n') == []
    assert scan('__aicore__ inline void F() { printf("x"); }  // kernel-rules: allow(stl)\n') == [(1, "io")]


def test_command_line_exit_code(tmp_path, capsys):
    bad = tmp_path / "bad_kernel.cpp"
    bad.write_text('#include "kernel_operator.h"\n#include <string>\n')
    assert rules.main([str(bad)]) == 1
    assert "[include] system/STL header <string>" in capsys.readouterr().out
    good = tmp_path / "good_kernel.cpp"
    good.write_text('#include "kernel_operator.h"\nextern "C" __global__ __aicore__ void k(GM_ADDR x) {}\n')
    assert rules.main([str(good)]) == 0
