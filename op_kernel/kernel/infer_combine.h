// The split-KV combine pass of the inference kernel (vector cores only): for every packed row, the splits' partial
// outputs O_i (normalised) and log-sum-exps lse_i merge as O = sum_i w_i O_i / sum_i w_i with w_i = exp(lse_i - L),
// L = max_i lse_i, and lse = L + ln(sum_i w_i). Splits that saw no key carry lse = kMaskValue (weight 0 next to any
// split that did); a row no split saw keeps L = kMaskValue: output 0, lse +inf. Each AIV takes whole
// (batch, KV head, query tile) units, round robin, in chunks of combineRows rows.
#ifndef NPU_FA_KERNEL_INFER_COMBINE_H
#define NPU_FA_KERNEL_INFER_COMBINE_H

#include "infer_common.h"
#include "../tiling/ub_budget.h"
#include "../tile/mask.h"
#include "../tile/row_ops.h"

namespace npu_fa {

template <typename T>
class FaInferCombine {
public:
    __aicore__ inline void Init(const FaInferTilingData* t, const FaInferGmArgs& gm, AscendC::TPipe* pipe) {
        t_ = t;
        aiv_ = (uint32_t)AscendC::GetBlockIdx();
        aivs_ = (uint32_t)AscendC::GetBlockNum();
        seqInfo_ = gm.seqInfo;
        writer_.Init(t, gm.attentionOut, gm.softmaxLse);
        ws_.Init(gm.workspace, t, 0);
        dvPad_ = t->problem.dvPad;
        rows_ = t->combineRows;
        const FaCombineUbSizes u = CombineUbSizes(rows_, t->splits, dvPad_);
        pipe->InitBuffer(lseBuf_, u.lse);
        pipe->InitBuffer(statBuf_, u.stat * kStats);
        pipe->InitBuffer(partBuf_, u.part);
        pipe->InitBuffer(accBuf_, u.acc);
        pipe->InitBuffer(outBuf_, u.out);
        pipe->InitBuffer(validBuf_, u.valid);
        statElems_ = u.stat / sizeof(float);
    }

    __aicore__ inline void Process() {
        FaInferTaskIterator it;
        it.Init(t_, seqInfo_, 0, 0);
        const uint32_t units = t_->taskTotal / t_->splits;
        for (uint32_t unit = aiv_; unit < units; unit += aivs_) {
            FaInferTask task;
            it.At(unit * t_->splits, task);
            for (uint32_t r0 = 0; r0 < task.rows; r0 += rows_) {
                Chunk(task, task.row0 + r0, (uint32_t)FaMin((int64_t)(task.rows - r0), (int64_t)rows_));
            }
        }
    }

private:
    static constexpr uint32_t kStatMax = 0, kStatWeight = 1, kStatSum = 2, kStats = 3;
    static constexpr int32_t kId = 0;

    __aicore__ inline AscendC::LocalTensor<float> Stat(uint32_t i) { return statBuf_.Get<float>()[i * statElems_]; }

    // MTE2 -> V, V -> MTE3 and MTE3 -> V in order: each chunk's work waits for the one before.
    template <AscendC::HardEvent kEvent>
    __aicore__ inline void Order() {
        AscendC::SetFlag<kEvent>(kId);
        AscendC::WaitFlag<kEvent>(kId);
    }

    __aicore__ inline void Chunk(const FaInferTask& task, int64_t row, uint32_t n) {
        const uint32_t splits = t_->splits, statN = AlignUp(n, 8) * 8, elems = n * dvPad_;
        AscendC::LocalTensor<float> lse = lseBuf_.Get<float>();
        for (uint32_t i = 0; i < splits; ++i) {
            AscendC::GlobalTensor<float> part;
            part.SetGlobalBuffer(ws_.PartLse(ws_.PartRow(task, i, row)));
            AscendC::DataCopy(lse[i * statN], part, n * 8);
        }
        Order<AscendC::HardEvent::MTE2_V>();
        AscendC::LocalTensor<float> top = Stat(kStatMax), weight = Stat(kStatWeight), sum = Stat(kStatSum);
        AscendC::DataCopy(top, lse, statN);
        for (uint32_t i = 1; i < splits; ++i) AscendC::Max(top, top, lse[i * statN], (int32_t)statN);
        AscendC::LocalTensor<float> acc = accBuf_.Get<float>(), part = partBuf_.Get<float>();
        for (uint32_t i = 0; i < splits; ++i) {
            AscendC::GlobalTensor<float> partGm;
            partGm.SetGlobalBuffer(ws_.PartOut(ws_.PartRow(task, i, row)));
            AscendC::DataCopy(part, partGm, elems);
            AscendC::Sub(weight, lse[i * statN], top, (int32_t)statN);
            AscendC::Exp(weight, weight, (int32_t)statN);
            if (i == 0) {
                AscendC::DataCopy(sum, weight, statN);
            } else {
                AscendC::Add(sum, sum, weight, (int32_t)statN);
            }
            Order<AscendC::HardEvent::MTE2_V>();
            RowMul(part, weight, n, dvPad_);
            if (i == 0) {
                AscendC::DataCopy(acc, part, elems);
            } else {
                AscendC::Add(acc, acc, part, (int32_t)elems);
            }
            Order<AscendC::HardEvent::V_MTE2>();  // part is loaded again
        }
        RowDiv(acc, sum, n, dvPad_);
        // lse = L + ln(sum); rows with L = kMaskValue saw no key.
        AscendC::LocalTensor<uint8_t> valid = validBuf_.Get<uint8_t>();
        AscendC::Compares(valid, top, kMaskValue, AscendC::CMPMODE::NE, statN);
        AscendC::Ln(sum, sum, (int32_t)statN);
        AscendC::Add(sum, sum, top, (int32_t)statN);
        AscendC::Select(sum, valid, sum, __builtin_huge_valf(), AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, statN);
        AscendC::LocalTensor<T> out = outBuf_.Get<T>();
        AscendC::Cast(out, acc, AscendC::RoundMode::CAST_RINT, elems);
        Order<AscendC::HardEvent::V_MTE3>();
        writer_.Out(out, task, row, n);
        writer_.Lse(sum, task, row, n);
        Order<AscendC::HardEvent::MTE3_V>();  // out and sum are written again by the next chunk
    }

    const FaInferTilingData* t_ = nullptr;
    uint32_t aiv_ = 0, aivs_ = 1, dvPad_ = 0, rows_ = 0, statElems_ = 0;
    GM_ADDR seqInfo_ = nullptr;
    FaInferRowWriter<T> writer_;
    FaInferWorkspace ws_;
    AscendC::TBuf<AscendC::TPosition::VECIN> lseBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> statBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> partBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> accBuf_;
    AscendC::TBuf<AscendC::TPosition::VECOUT> outBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> validBuf_;
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_INFER_COMBINE_H
