// The op bindings' hook into the cycle model (cost_model.cpp): while _C.set_cost_model(True, ...) is in effect the
// forward and backward launches record their traces (model-only launches skip the arithmetic) and each launch's
// modeled time is added to the launch info.
#pragma once
#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

#include "kernel_operator.h"  // the twin: twin::LaunchResult, npu_fa::ChipSpec

bool CostModelOn();
bool CostModelOnly();  // the launches run model-only (twin::LaunchOptions::modelOnly), modeled or not
// The blocks a model-only launch of numBlocks runs: all (empty) unless set_cost_model(sample_blocks=k) asked for k
// evenly spaced ones, the first and the last included.
std::vector<uint32_t> SampledBlocks(uint32_t numBlocks);
// gm: the launch buffers (LaunchOptions::gm), placed as on the NPU (twin::cost::Options::gm).
void AddCostModel(const twin::LaunchResult& r, const std::vector<twin::GmRange>& gm, const npu_fa::ChipSpec& chip,
                  pybind11::dict& info);
