// Launching a vector kernel on the twin from plain C++ (no Python): twin::LaunchKernel over 4 AIV cores, then a
// strict-twin error caught as twin::TwinError. Prints "ok" on success; the pytest wrapper builds and runs it.
#include <cstdio>
#include <vector>

#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void scale_rows(GM_ADDR x, GM_ADDR y, GM_ADDR len) {
    GlobalTensor<uint32_t> n;
    n.SetGlobalBuffer((__gm__ uint32_t*)len, 8);
    const uint32_t count = n.GetValue(0);
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * count, count);
    gy.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * count, count);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> qin;
    TQue<TPosition::VECOUT, 1> qout;
    pipe.InitBuffer(qin, 1, count * sizeof(float));
    pipe.InitBuffer(qout, 1, count * sizeof(float));
    LocalTensor<float> a = qin.AllocTensor<float>();
    DataCopy(a, gx, count);
    qin.EnQue(a);
    a = qin.DeQue<float>();
    LocalTensor<float> b = qout.AllocTensor<float>();
    Muls(b, a, (float)(GetBlockIdx() + 1), count);
    qout.EnQue(b);
    qin.FreeTensor(a);
    b = qout.DeQue<float>();
    DataCopy(gy, b, count);
    qout.FreeTensor(b);
}

int main() {
    const uint32_t cores = 4, count = 64;
    std::vector<float> x(cores * count), y(cores * count, 0.0f);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * (float)i - 3.0f;
    std::vector<uint32_t> len(8, 0);
    len[0] = count;
    twin::LaunchOptions o;
    o.kernelType = KERNEL_TYPE_AIV_ONLY;
    o.numBlocks = cores;
    o.gm = {{(const uint8_t*)x.data(), x.size() * 4, "x"},
            {(const uint8_t*)y.data(), y.size() * 4, "y"},
            {(const uint8_t*)len.data(), len.size() * 4, "len"}};
    twin::LaunchKernel(&scale_rows, o, (uint8_t*)x.data(), (uint8_t*)y.data(), (uint8_t*)len.data());
    for (size_t i = 0; i < x.size(); ++i) {
        if (y[i] != x[i] * (float)(i / count + 1)) {
            std::printf("mismatch at %zu: %f\n", i, y[i]);
            return 1;
        }
    }
    len[0] = 100000;  // 400 KB per core: more UB than exists
    try {
        twin::LaunchKernel(&scale_rows, o, (uint8_t*)x.data(), (uint8_t*)y.data(), (uint8_t*)len.data());
        std::printf("no error for an oversized UB request\n");
        return 1;
    } catch (const twin::TwinError& e) {
        if (std::string(e.what()).find("UB exhausted") == std::string::npos) {
            std::printf("unexpected error: %s\n", e.what());
            return 1;
        }
    }
    std::printf("ok\n");
    return 0;
}
