// What a dense mask's block map depends on besides the mask itself, as one list of integers: the blocks, the map's
// size, how the kernels read the mask (strides, column step, TND global, per batch/head) and the per-sequence table
// (lengths, bands, prefix, map rows, mask bases). Both block-map caches (the twin's in python/npu_flash_attn/masks.py
// and the torch_npu adapter's) key on it, so a map is reused exactly when the pre-pass would write the same bytes.
#pragma once
#include <cstdint>
#include <vector>

#include "plan/fa_launch_plan.h"

namespace npu_fa {

inline std::vector<int64_t> BlockMapKeyFields(const FaProblem& p, const FaBlockMapPass& m) {
    std::vector<int64_t> k = {m.tiling.s1Block, m.tiling.s2Block, m.tiling.mapRows, (int64_t)m.bytes,
                              (int64_t)p.layout, p.n1, p.sparseMode, (int64_t)p.maskStrideB, (int64_t)p.maskStrideN,
                              (int64_t)p.maskStrideS, p.maskColStep, p.maskTndGlobal, p.maskPerBatch, p.maskPerHead};
    k.insert(k.end(), m.seqInfo.begin(), m.seqInfo.end());
    return k;
}

}  // namespace npu_fa
