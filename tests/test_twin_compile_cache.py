"""compile_kernel caches by content: the kernel source, the twin, and the headers the kernel includes from its own
directory or from `include=` directories. Editing any of them recompiles."""
import numpy as np

from npu_flash_attn import twin

KERNEL = """
#include "kernel_operator.h"
#include "scale.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void scaled(GM_ADDR x, GM_ADDR y) {
    TPipe pipe;
    TQue<TPosition::VECIN, 1> qin;
    TQue<TPosition::VECOUT, 1> qout;
    pipe.InitBuffer(qin, 1, 64 * sizeof(float));
    pipe.InitBuffer(qout, 1, 64 * sizeof(float));
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    gy.SetGlobalBuffer((__gm__ float*)y, 64);
    LocalTensor<float> a = qin.AllocTensor<float>();
    DataCopy(a, gx, 64);
    qin.EnQue(a);
    a = qin.DeQue<float>();
    LocalTensor<float> b = qout.AllocTensor<float>();
    Muls(b, a, kScale, 64);
    qout.EnQue(b);
    qin.FreeTensor(a);
    b = qout.DeQue<float>();
    DataCopy(gy, b, 64);
    qout.FreeTensor(b);
}
"""


def run(lib):
    x = np.random.uniform(-1, 1, 64).astype(np.float32)
    y = np.zeros_like(x)
    lib.launch("scaled", 1, x, y)
    return x, y


def test_editing_an_included_header_recompiles(tmp_path, monkeypatch):
    monkeypatch.setenv("NPU_TWIN_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "k.cpp"
    src.write_text(KERNEL)
    (tmp_path / "scale.h").write_text("constexpr float kScale = 2.0f;\n")
    first = twin.compile_kernel(src)
    x, y = run(first)
    np.testing.assert_array_equal(y, x * 2)
    assert twin.compile_kernel(src).path == first.path  # unchanged: cached
    (tmp_path / "scale.h").write_text("constexpr float kScale = 3.0f;\n")
    second = twin.compile_kernel(src)
    assert second.path != first.path
    x, y = run(second)
    np.testing.assert_array_equal(y, x * 3)
