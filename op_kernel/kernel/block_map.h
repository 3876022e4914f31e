// Block-map pre-pass of the kernels with a dense atten_mask (vector cores only). It classifies every (mask group,
// head, s1 block, s2 block) tile inside the band as fully masked, fully visible or mixed, and counts per block-map
// row the tiles the main kernel will compute. The main kernels skip masked tiles, skip the mask load for visible
// ones, and (the forward) split work across cores by the counts. The result depends only on the mask and the
// tiling, so the host may keep it for later calls with the same mask.
#ifndef NPU_FA_KERNEL_BLOCK_MAP_H
#define NPU_FA_KERNEL_BLOCK_MAP_H

#include "kernel_operator.h"
#include "../tiling/fwd_tiling.h"
#include "../tiling/seq_table.h"
#include "../tiling/ub_budget.h"
#include "../common/gm_args.h"

namespace npu_fa {

class FaBlockMapPass {
public:
    __aicore__ inline void Init(const FlashAttentionTilingData* t, const FaBlockMapGmArgs& gm, AscendC::TPipe* pipe) {
        t_ = t;
        seqInfo_ = (__gm__ int64_t*)gm.seqInfo;
        maskGm_.SetGlobalBuffer((__gm__ uint8_t*)gm.attenMask);
        mapGm_.SetGlobalBuffer((__gm__ uint8_t*)gm.blockMap);
        countGm_.SetGlobalBuffer((__gm__ int32_t*)((__gm__ uint8_t*)gm.blockMap + t->mapCountsOffset));
        const FaMapUbSizes u = MapUbSizes(t->s1Block, t->s2Block);  // the tiling checked that they fit UB
        pipe->InitBuffer(bytesBuf_, u.bytes);
        pipe->InitBuffer(halfBuf_, u.halfs);
        pipe->InitBuffer(floatBuf_, u.floats);
        // ReduceSum (count form) leaves one partial per 64-float repeat in dst before the total: room for all.
        pipe->InitBuffer(workBuf_, u.work);
        pipe->InitBuffer(sumBuf_, u.sum);
        pipe->InitBuffer(statesBuf_, u.states);
        pipe->InitBuffer(countsBuf_, u.counts);
        const uint32_t core = (uint32_t)AscendC::GetBlockIdx();
        const uint64_t rows = t->mapRows, cores = t->mapCores;
        rowBegin_ = rows * core / cores;
        rowEnd_ = rows * (core + 1) / cores;
    }

    __aicore__ inline void Process() {
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdTile);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_S>(kIdStates);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_S>(kIdCounts);
        uint32_t group = 0, pending = 0;
        uint64_t countsFrom = rowBegin_;
        for (uint64_t row = rowBegin_; row < rowEnd_; ++row) {
            while (group + 1 < t_->mapGroups && Seq(group + 1, kSeqMapRow0) <= (int64_t)row) ++group;
            if (pending == 0) AscendC::WaitFlag<AscendC::HardEvent::MTE3_S>(kIdCounts);
            countsBuf_.Get<int32_t>().SetValue(pending++, ClassifyRow(group, row));
            if (pending == kChunk || row + 1 == rowEnd_) {
                Flush(countGm_[countsFrom], countsBuf_.Get<int32_t>(), pending, kIdCounts);
                countsFrom += pending;
                pending = 0;
            }
        }
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIdTile);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_S>(kIdStates);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_S>(kIdCounts);
    }

private:
    static constexpr uint32_t kChunk = kFaMapChunk;  // map entries / counts staged in UB per DMA
    static constexpr int32_t kIdTile = 0, kIdStates = 0, kIdCounts = 1;

    __aicore__ inline int64_t Seq(uint32_t b, uint32_t f) const { return seqInfo_[(uint64_t)b * kSeqInfoFields + f]; }

    // Writes the states of one block-map row and returns how many of its tiles the main kernel computes.
    __aicore__ inline int32_t ClassifyRow(uint32_t group, uint64_t row) {
        const int64_t s1 = Seq(group, kSeqS1), s2 = Seq(group, kSeqS2);
        const int64_t blocks = (s1 + t_->s1Block - 1) / t_->s1Block, cols = (s2 + t_->s2Block - 1) / t_->s2Block;
        const int64_t local = (int64_t)row - Seq(group, kSeqMapRow0);
        const uint32_t head = (uint32_t)(local / blocks);
        const int64_t r0 = (local % blocks) * t_->s1Block, r1 = FaMin(s1, r0 + t_->s1Block);
        FaBand band;
        band.lo = Seq(group, kSeqBandLo);
        band.hi = Seq(group, kSeqBandHi);
        band.prefix = Seq(group, kSeqPrefix);
        const FaStepRange steps = StepsOf(band, r0, r1, s2, t_->s2Block);
        const uint64_t entry0 = (uint64_t)(Seq(group, kSeqMapEntry0) + local * cols);
        const FaProblemTiling& p = t_->problem;
        const uint64_t maskRow =
            (uint64_t)Seq(group, kSeqMaskBase) + head * p.maskStrideN + (uint64_t)r0 * p.maskStrideS;
        AscendC::LocalTensor<uint8_t> states = statesBuf_.Get<uint8_t>();
        int32_t computed = 0;
        for (int64_t j0 = 0; j0 < cols; j0 += kChunk) {
            const uint32_t n = (uint32_t)FaMin(cols - j0, (int64_t)kChunk);
            AscendC::WaitFlag<AscendC::HardEvent::MTE3_S>(kIdStates);
            for (uint32_t k = 0; k < n; ++k) {
                const int64_t j = j0 + k;
                uint8_t state = kTileMasked;
                if (j >= steps.first && j < steps.last) {
                    const int64_t c0 = j * t_->s2Block;
                    state = ClassifyTile(maskRow + (p.maskColStep != 0 ? (uint64_t)c0 : 0), (uint32_t)(r1 - r0),
                                         (uint32_t)FaMin(s2 - c0, (int64_t)t_->s2Block));
                }
                computed += state != kTileMasked ? 1 : 0;
                states.SetValue(k, state);
            }
            Flush(mapGm_[entry0 + j0], states, n, kIdStates);
        }
        return computed;
    }

    // Masked elements of a [rows, cols] tile (bytes at `off`, row pitch maskStrideS; 0 = one row for all) -> state.
    __aicore__ inline uint8_t ClassifyTile(uint64_t off, uint32_t rows, uint32_t cols) {
        const bool sameRows = t_->problem.maskStrideS == 0;
        const uint32_t loadRows = sameRows ? 1 : rows;
        const uint32_t pitch = AlignUp(cols, 32);
        const uint32_t n = loadRows * pitch;
        AscendC::LocalTensor<uint8_t> bytes = bytesBuf_.Get<uint8_t>();
        AscendC::LocalTensor<half> h = halfBuf_.Get<half>();
        AscendC::LocalTensor<float> f = floatBuf_.Get<float>();
        AscendC::LocalTensor<float> sum = sumBuf_.Get<float>();
        // Each row lands 32 B aligned, its padding zero (= visible: neutral for the count below).
        const uint32_t srcGap = sameRows ? 0 : (uint32_t)(t_->problem.maskStrideS - cols);
        AscendC::DataCopyExtParams cp((uint16_t)loadRows, cols, srcGap, 0, 0);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIdTile);
        AscendC::DataCopyPad(bytes, maskGm_[off], cp,
                             AscendC::DataCopyPadExtParams<uint8_t>(true, 0, (uint8_t)(pitch - cols), 0));
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(kIdTile);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(kIdTile);
        AscendC::Cast(h, bytes, AscendC::RoundMode::CAST_NONE, n);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdTile);
        AscendC::Mins(h, h, (half)1.0f, (int32_t)n);  // nonzero byte -> 1
        AscendC::Cast(f, h, AscendC::RoundMode::CAST_NONE, n);
        AscendC::ReduceSum(sum, f, workBuf_.Get<float>(), (int32_t)n);  // exact: integers below 2^24
        AscendC::SetFlag<AscendC::HardEvent::V_S>(kIdTile);
        AscendC::WaitFlag<AscendC::HardEvent::V_S>(kIdTile);
        const uint64_t masked = (uint64_t)sum.GetValue(0) * (sameRows ? rows : 1);
        if (masked == 0) return kTileVisible;
        return masked == (uint64_t)rows * cols ? kTileMasked : kTileMixed;
    }

    // n values staged in UB by scalar writes -> GM.
    template <typename V>
    __aicore__ inline void Flush(const AscendC::GlobalTensor<V>& dst, const AscendC::LocalTensor<V>& src, uint32_t n,
                                 int32_t id) {
        AscendC::SetFlag<AscendC::HardEvent::S_MTE3>(id);
        AscendC::WaitFlag<AscendC::HardEvent::S_MTE3>(id);
        AscendC::DataCopyPad(dst, src, AscendC::DataCopyExtParams(1, n * (uint32_t)sizeof(V), 0, 0, 0));
        AscendC::SetFlag<AscendC::HardEvent::MTE3_S>(id);
    }

    const FlashAttentionTilingData* t_ = nullptr;
    __gm__ int64_t* seqInfo_ = nullptr;
    AscendC::GlobalTensor<uint8_t> maskGm_, mapGm_;
    AscendC::GlobalTensor<int32_t> countGm_;
    uint64_t rowBegin_ = 0, rowEnd_ = 0;
    AscendC::TBuf<AscendC::TPosition::VECIN> bytesBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> halfBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> floatBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> workBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> sumBuf_;
    AscendC::TBuf<AscendC::TPosition::VECOUT> statesBuf_;
    AscendC::TBuf<AscendC::TPosition::VECOUT> countsBuf_;
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_BLOCK_MAP_H
