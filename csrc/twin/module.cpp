// npu_flash_attn._C: the twin runtime compiled together with our kernels; exposes the chip table and the ops.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "kernel_operator.h"

namespace py = pybind11;

void RegisterFlashAttention(py::module_& m);
void RegisterFlashAttentionGrad(py::module_& m);
void RegisterFlashAttentionInfer(py::module_& m);
void RegisterCostModel(py::module_& m);
void RegisterProblem(py::module_& m);

PYBIND11_MODULE(_C, m) {
    m.doc() = "CPU twin of Ascend C (dav-2201) with the npu-flash-attn kernels";
    py::register_exception<twin::TwinError>(m, "TwinError", PyExc_RuntimeError);
    RegisterProblem(m);
    RegisterFlashAttention(m);
    RegisterFlashAttentionGrad(m);
    RegisterFlashAttentionInfer(m);
    RegisterCostModel(m);
    m.def("chips", []() {
        py::list out;
        for (uint32_t i = 0; i < npu_fa::kNumChips; ++i) {
            const npu_fa::ChipSpec& c = npu_fa::kChips[i];
            py::dict d;
            d["name"] = c.name;
            d["aic_num"] = c.aicNum;
            d["aiv_num"] = c.aivNum;
            d["ub_size"] = c.ubSize;
            d["l1_size"] = c.l1Size;
            d["l0a_size"] = c.l0aSize;
            d["l0b_size"] = c.l0bSize;
            d["l0c_size"] = c.l0cSize;
            d["ub_usable"] = npu_fa::UsableUb(c);
            d["l1_usable"] = npu_fa::UsableL1(c);
            d["cube_freq_mhz"] = c.cubeFreqMHz;
            d["hbm_gbps"] = c.hbmGBps;
            out.append(d);
        }
        return out;
    });
    m.attr("default_chip") = npu_fa::kDefaultChip;
}
