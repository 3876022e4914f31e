// Vector (AIV) half of the inference kernel: over an int8 cache, the AIVs split the query and the probabilities into
// int8 rows and recombine the cube's int32 products (kernel/infer_int8.h); each AIV owns half of a task's packed
// rows and walks them in chunks of vecRows per step:
// scale or soft-cap, the positional bias (ALiBi: one distance row per query token and one slope per head;
// pse_shift: one DMA per run of rows), the sequence's band (row r sees keys [token(r) + lo, token(r) + hi],
// BandOfMode), the dense mask (infer_mask.h) and the key tail masked, the online softmax (tile/online_softmax.h) in
// fp32, P back to the cube in the input dtype, then the cube's P*V folded into the running output. At the task's
// end: the output and softmax_lse (no split), or the split's normalised output and log-sum-exp as fp32 partials for
// the combine pass.
#ifndef NPU_FA_KERNEL_INFER_VECTOR_H
#define NPU_FA_KERNEL_INFER_VECTOR_H

#include "infer_common.h"
#include "infer_int8.h"
#include "infer_mask.h"
#include "softmax_io.h"
#include "../tiling/ub_budget.h"
#include "../common/step_ring.h"
#include "../tile/score_prologue.h"
#include "../tile/online_softmax.h"

namespace npu_fa {

template <typename T>
class FaInferVector {
public:
    __aicore__ inline void Init(const FaInferTilingData* t, const FaInferGmArgs& gm, AscendC::TPipe* pipe) {
        t_ = t;
        p_ = &t->problem;
        core_ = (uint32_t)(AscendC::GetBlockIdx() / AscendC::GetTaskRatio());
        sub_ = (uint32_t)AscendC::GetSubBlockIdx();
        seqInfo_ = gm.seqInfo;
        writer_.Init(t, gm.attentionOut, gm.softmaxLse);
        ws_.Init(gm.workspace, t, core_);
        w_ = t->s2Block;
        dvPad_ = p_->dvPad;
        chunk_ = t->vecRows;
        const FaInferUbSizes u = InferUbSizes(CeilDiv(t->mBlock, 2), chunk_, w_, dvPad_, TilingVecFeatures(*p_, false));
        pipe->InitBuffer(sBuf_, u.s);
        pipe->InitBuffer(foldBuf_, u.fold);
        pipe->InitBuffer(pBuf_, u.p);
        pipe->InitBuffer(opartBuf_, u.opart);
        pipe->InitBuffer(accBuf_, u.acc);
        pipe->InitBuffer(statBuf_, u.stat * Softmax::kBuffers);
        pipe->InitBuffer(rowBuf_, u.row);
        pipe->InitBuffer(validBuf_, u.row);
        softmax_.Init(statBuf_.Get<float>(), u.stat / sizeof(float), foldBuf_.Get<float>(), rowBuf_.Get<float>(), w_);
        io_.Init(sBuf_.Get<float>(), pBuf_.Get<T>(), opartBuf_.Get<float>(), chunk_, w_);
        if (p_->maskMode != 0) {
            pipe->InitBuffer(maskBytesBuf_, u.maskBytes);
            pipe->InitBuffer(maskHalfBuf_, u.maskHalf);
            pipe->InitBuffer(maskBitsBuf_, u.maskBits);
            mask_.Init(t, gm.attenMask, maskBytesBuf_.Get<uint8_t>(), maskHalfBuf_.Get<half>(),
                       maskBitsBuf_.Get<uint8_t>(), kIdMask);
        }
        // The soft-cap's numerator block is fold's first 32 B (fold is free until the softmax of the same chunk).
        // Without ALiBi or pse_shift the prologue never touches its pattern and bias buffers (fold stands in).
        if (u.dmat != 0) {
            pipe->InitBuffer(dmatBuf_, u.dmat);
            AscendC::LocalTensor<float> cols = dmatBuf_.Get<float>();
            for (uint32_t c = 0; c < w_; ++c) cols.SetValue(c, (float)c);
        }
        if (u.bias != 0) pipe->InitBuffer(biasBuf_, u.bias);
        prologue_.Init(p_, w_, gm.alibiSlopes, foldBuf_.Get<float>(),
                       u.dmat != 0 ? dmatBuf_.Get<float>() : foldBuf_.Get<float>(),
                       u.bias != 0 ? biasBuf_.Get<float>() : foldBuf_.Get<float>());
        if (u.pse != 0) {
            pipe->InitBuffer(pseBuf_, u.pse);
            prologue_.OuterPse().Init(p_, w_, gm.pseShift, pseBuf_.Get<T>(), biasBuf_.Get<float>(), kIdPse);
        }
        int8_ = t->kvQuant != 0;
        if (int8_) int8Io_.Init(t, gm, &ws_, pipe, CeilDiv(t->mBlock, 2), chunk_, w_, Io::kIdFree);
    }

    __aicore__ inline void Process() {
        FaInferTaskIterator it;
        it.Init(t_, seqInfo_, t_->coreTaskStart[core_], t_->coreTaskStart[core_ + 1]);
        FaInferTask task, next;
        FaStepRing<Pending, kInferStepSlots - 1> ring;  // steps whose output fold is still to do
        ring.Init(kInferStepSlots - 1);
        uint32_t step = 0, taskSlot = 0, querySet = 0;
        bool more = it.Next(task, t_->splits), split = false;  // split: the task's query rows are already split
        while (more) {
            const bool hasNext = it.Next(next, t_->splits);
            const FaAivRows mine = AivRowsOf(task.rows, sub_);
            if (task.keyFirst >= task.keyLast) {
                WriteEmptyRows(task, mine);
            } else {
                if (int8_ && !split) int8Io_.Query(task, mine, step, querySet);
                split = false;
                const uint32_t nextStep = step + (uint32_t)CeilDiv(task.keyLast - task.keyFirst, (int64_t)w_);
                for (int64_t c0 = task.keyFirst; c0 < task.keyLast; c0 += w_) {
                    const bool first = c0 == task.keyFirst, last = c0 + w_ >= task.keyLast;
                    Advance(Pending{task, mine, c0, step, taskSlot, querySet, first, last}, ring);
                    ++step;
                    // The next task's query split, once the cube has read this task's (its first scores are in):
                    // at a task's start the cube would otherwise wait for it with the K and V loads stopped.
                    if (int8_ && first && hasNext && next.keyFirst < next.keyLast) {
                        int8Io_.Query(next, AivRowsOf(next.rows, sub_), nextStep, querySet ^ 1);
                        split = true;
                    }
                }
                taskSlot = (taskSlot + 1) % kInferStepSlots;  // a task's statistics live until its last output fold
                querySet ^= 1;
            }
            task = next;
            more = hasNext;
        }
        for (uint32_t i = 0; i < ring.Count(); ++i) OutputStep(ring.FromOldest(i));
        io_.End();
        if (int8_) int8Io_.End();
    }

private:
    using Io = FaSoftmaxIo<T>;
    static constexpr int32_t kIdOutput = Io::kIdOutput, kIdStats = Io::kIdStats;
    static constexpr int32_t kIdMask = Io::kIdFree + 1;  // the dense mask's V_MTE2 / MTE2_V pairs
    static constexpr int32_t kIdPse = Io::kIdFree + 2;   // pse_shift's
    using Softmax = FaOnlineSoftmax<kInferStepSlots>;

    struct Pending {
        FaInferTask task;
        FaAivRows mine;
        int64_t c0;
        uint32_t step;
        uint32_t taskSlot;
        uint32_t querySet;  // an int8 cache: the set of row scales of the task's split query (FaInferInt8)
        bool first;
        bool last;
    };

    // A step's softmax, then the oldest pending output fold once kInferStepSlots - 1 are pending.
    __aicore__ inline void Advance(const Pending& s, FaStepRing<Pending, kInferStepSlots - 1>& ring) {
        SoftmaxStep(s.task, s.mine, s.c0, s.step, s.taskSlot, s.querySet, s.first);
        if (ring.Full()) OutputStep(ring.Oldest());
        ring.Push(s);
    }

    __aicore__ inline void SoftmaxStep(const FaInferTask& task, const FaAivRows& mine, int64_t c0, uint32_t step,
                                       uint32_t taskSlot, uint32_t querySet, bool first) {
        const uint32_t slot = InferSlot(step);
        AscendC::CrossCoreWaitFlag(FlagOf(kFwdFlagScores, step));
        if (mine.count == 0) {
            // Nothing to write: the set certifies that this AIV's earlier reads of the slot are done (see
            // FaFwdVector::SoftmaxStep: on MTE2, after its last workspace read).
            AscendC::CrossCoreSetFlag<2, PIPE_MTE2>(FlagOf(kFwdFlagProbs, step));
            return;
        }
        const uint32_t cols = (uint32_t)FaMin(task.keyLast - c0, (int64_t)w_);
        const uint32_t chunks = CeilDiv(mine.count, chunk_);
        if (int8_) int8Io_.StepKeys(task, c0, cols, slot);
        if (!int8_) LoadScores(mine, 0, slot);
        for (uint32_t i = 0; i < chunks; ++i) {
            if (!int8_ && i + 1 < chunks) LoadScores(mine, (i + 1) * chunk_, slot);
            const uint32_t r0 = i * chunk_;
            const uint32_t rows = (uint32_t)FaMin((int64_t)(mine.count - r0), (int64_t)chunk_);
            SoftmaxRows(task, task.row0 + mine.first + r0, rows, r0, c0, cols, slot, taskSlot, querySet, first, mine);
        }
        AscendC::CrossCoreSetFlag<2, PIPE_MTE3>(FlagOf(kFwdFlagProbs, step));
    }

    __aicore__ inline void LoadScores(const FaAivRows& mine, uint32_t r0, uint32_t slot) {
        io_.LoadScores(ws_.Scores(slot), mine.first + r0, (uint32_t)FaMin((int64_t)(mine.count - r0), (int64_t)chunk_));
    }

    // Chunk rows [r0, r0 + rows) of this AIV's half (packed rows from `row`) against keys [c0, c0 + cols).
    __aicore__ inline void SoftmaxRows(const FaInferTask& task, int64_t row, uint32_t rows, uint32_t r0, int64_t c0,
                                       uint32_t cols, uint32_t slot, uint32_t taskSlot, uint32_t querySet,
                                       bool first, const FaAivRows& mine) {
        const uint32_t n = rows * w_;
        AscendC::LocalTensor<float> s =
            int8_ ? int8Io_.Scores(ws_.template Scores<int32_t>(slot), task.rows, mine.first + r0, mine.first, rows,
                                         querySet)
                  : io_.NextScores();
        prologue_.Scale(s, n);
        if (p_->alibiMode != kAlibiNone) AddAlibiRows(s, task, row, rows, c0);
        if (p_->pseMode != kPseNone) AddPseRows(s, task, row, rows, c0, cols);
        FaMaskColumnsFrom(s, cols, rows, w_);
        // The band (its origin is the row's query token): rows whose first or last visible key falls inside this
        // step.
        for (uint32_t r = 0; r < rows; ++r) {
            const int64_t token = (row + r) / p_->group;
            const int64_t end = token + task.band.hi + 1 - c0, begin = token + task.band.lo - c0;
            if (end < (int64_t)cols) FaMaskColumnsFrom(s[r * w_], (uint32_t)FaMax(end, 0), 1, w_);
            if (begin > 0) FaMaskColumnsBelow(s[r * w_], (uint32_t)FaMin(begin, (int64_t)cols), 1, w_);
        }
        if (p_->maskMode != 0) mask_.Apply(s, task, row, rows, c0, cols);
        softmax_.Exponentiate(s, rows, r0, taskSlot, slot, first);
        if (int8_) {
            int8Io_.StoreProbs(s, ws_.template Probs<int8_t>(slot), task.rows, mine.first + r0, mine.first, rows, slot);
        } else {
            io_.StoreProbs(s, ws_.template Probs<T>(slot), mine.first + r0, n);
        }
        softmax_.AddRowSums(s, rows, r0, taskSlot, slot, first);
        if (!int8_) io_.ReleaseScores();
    }

    // ALiBi of flash_attn (bottom-right): row r of query token i and head h gets -slope[h] * |j - (i + Skv - Sq)|.
    // The rows of one token share the distance row.
    __aicore__ inline void AddAlibiRows(const AscendC::LocalTensor<float>& s, const FaInferTask& task, int64_t row,
                                        uint32_t rows, int64_t c0) {
        AscendC::LocalTensor<float> dist = biasBuf_.Get<float>();
        const int64_t shift = task.seq.s2 - task.seq.s1;
        FaInferRuns runs(row, rows, p_->group, task.kvHead);
        FaInferRun run;
        while (runs.Next(run)) {
            AlibiDistance(dist, dmatBuf_.Get<float>(), p_->alibiMode, c0 - run.token - shift, w_);
            for (uint32_t i = 0; i < run.count; ++i) {
                const float slope = prologue_.AlibiSlope(task.batch, run.head + i);
                AscendC::Axpy(s[(run.tileRow + i) * w_], dist, -slope, (int32_t)w_);
            }
        }
    }

    // pse_shift [B or 1, N1, S1, S2] at (batch, head, token, key), a DMA per run of rows, added to the scaled scores.
    __aicore__ inline void AddPseRows(const AscendC::LocalTensor<float>& s, const FaInferTask& task, int64_t row,
                                      uint32_t rows, int64_t c0, uint32_t cols) {
        FaOuterPse<T>& pse = prologue_.OuterPse();
        const uint64_t base = task.batch * p_->pseStrideB + (uint64_t)c0;
        pse.BeginLoad();
        FaInferRuns runs(row, rows, p_->group, task.kvHead, true);
        FaInferRun run;
        while (runs.Next(run)) {
            pse.Load(base + run.head * p_->pseStrideN + (uint64_t)run.token * p_->pseStrideS, run.count,
                     run.Stride(p_->pseStrideS, p_->pseStrideN), cols, run.tileRow);
        }
        pse.EndLoad();
        pse.AddLoaded(s, rows, false);
    }

    __aicore__ inline void OutputStep(const Pending& s) {
        const uint32_t slot = InferSlot(s.step);
        AscendC::CrossCoreWaitFlag(FlagOf(kFwdFlagOutput, s.step));
        if (s.mine.count == 0) return;
        AscendC::LocalTensor<float> opart;
        if (int8_) {
            opart = io_.AcquireOutput();
            int8Io_.Output((__gm__ int32_t*)ws_.Output(slot), s.task.rows, s.mine.first, s.mine.count, slot, opart);
        } else {
            opart = io_.LoadOutput(ws_.Output(slot), (uint64_t)s.mine.first * dvPad_, s.mine.count * dvPad_);
        }
        softmax_.Fold(accBuf_.Get<float>(), opart, slot, s.mine.count, dvPad_, s.first);
        io_.ReleaseOutput();
        if (s.last) Finalize(s.task, s.mine, s.taskSlot);
    }

    // out = acc / l and lse = m + ln(l); rows that saw no key get out 0 and lse +inf (no split) or kMaskValue (a
    // split's partial: zero weight in the combine).
    __aicore__ inline void Finalize(const FaInferTask& task, const FaAivRows& mine, uint32_t taskSlot) {
        const uint32_t rows = mine.count, statN = AlignUp(rows, 8) * 8;
        AscendC::LocalTensor<float> acc = accBuf_.Get<float>();
        AscendC::LocalTensor<uint8_t> valid = validBuf_.Get<uint8_t>();
        if (int8_ && t_->valueQuantMode == 0) {  // opart is free between folds (kIdOutput)
            AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIdOutput);
            int8Io_.FoldValueChannels(acc, softmax_.Stat(Softmax::kSum + taskSlot), opartBuf_.Get<float>(),
                                      task.kvHead, rows, dvPad_);
            AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdOutput);
        }
        softmax_.Normalize(acc, valid, taskSlot, rows, dvPad_);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdStats);
        AscendC::LocalTensor<float> lse = softmax_.Stat(Softmax::kMaxOut);
        AscendC::Ln(lse, softmax_.Stat(Softmax::kSum + taskSlot), (int32_t)statN);
        AscendC::Add(lse, lse, softmax_.Stat(Softmax::kMax + taskSlot), (int32_t)statN);
        const float invalid = t_->splits > 1 ? kMaskValue : Softmax::PositiveInfinity();
        AscendC::Select(lse, valid, lse, invalid, AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, statN);
        WriteRows(task, mine, acc);
    }

    // Rows of a task that sees no key (kv length 0, a split past the keys, or causal rows above the first key). The
    // zero rows come from opart (free between folds: the kIdOutput event), not acc, which pending folds may hold.
    __aicore__ inline void WriteEmptyRows(const FaInferTask& task, const FaAivRows& mine) {
        if (mine.count == 0) return;
        const uint32_t statN = AlignUp(mine.count, 8) * 8;
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdStats);
        AscendC::Duplicate(softmax_.Stat(Softmax::kMaxOut), t_->splits > 1 ? kMaskValue : Softmax::PositiveInfinity(),
                           (int32_t)statN);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIdOutput);
        AscendC::LocalTensor<float> zeros = opartBuf_.Get<float>();
        AscendC::Duplicate(zeros, 0.0f, (int32_t)(mine.count * dvPad_));
        WriteRows(task, mine, zeros);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdOutput);
    }

    // The rows' output (fp32 `rows`) and lse (Stat(kMaxOut)) -> attention_out / softmax_lse, or the split's
    // partials. Expects the kIdStats MTE3_V event waited; `rows` is free again when it returns.
    __aicore__ inline void WriteRows(const FaInferTask& task, const FaAivRows& mine,
                                     const AscendC::LocalTensor<float>& rows) {
        const uint32_t n = mine.count * dvPad_;
        const int64_t row = task.row0 + mine.first;
        if (t_->splits > 1) {
            const uint64_t partRow = ws_.PartRow(task, task.split, row);
            AscendC::GlobalTensor<float> partOut, partLse;
            partOut.SetGlobalBuffer(ws_.PartOut(partRow));
            partLse.SetGlobalBuffer(ws_.PartLse(partRow));
            AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(kIdStats);
            AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(kIdStats);
            AscendC::DataCopy(partOut, rows, n);
            AscendC::DataCopy(partLse, softmax_.Stat(Softmax::kMaxOut), mine.count * 8);
            // Waited here: the caller reuses `rows` at once.
            AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIdStats);
            AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdStats);
            AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIdStats);
            return;
        }
        // The output rows take the space of both probability buffers.
        io_.WaitProbBuffers();
        AscendC::LocalTensor<T> o = pBuf_.Get<T>();
        AscendC::Cast(o, rows, AscendC::RoundMode::CAST_RINT, n);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(kIdStats);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(kIdStats);
        writer_.Out(o, task, row, mine.count);
        writer_.Lse(softmax_.Stat(Softmax::kMaxOut), task, row, mine.count);
        io_.ReleaseProbBuffers();
        AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIdStats);
    }

    const FaInferTilingData* t_ = nullptr;
    const FaProblemTiling* p_ = nullptr;
    uint32_t core_ = 0, sub_ = 0;
    GM_ADDR seqInfo_ = nullptr;
    FaInferRowWriter<T> writer_;
    FaInferWorkspace ws_;
    Softmax softmax_;
    Io io_;
    uint32_t w_ = 0, dvPad_ = 0, chunk_ = 0;
    AscendC::TBuf<AscendC::TPosition::VECIN> sBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> foldBuf_;
    AscendC::TBuf<AscendC::TPosition::VECOUT> pBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> opartBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> accBuf_;
    AscendC::TBuf<AscendC::TPosition::VECOUT> statBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> rowBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> validBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> maskBytesBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> maskHalfBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> maskBitsBuf_;
    FaInferMask mask_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> dmatBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> biasBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> pseBuf_;
    FaScorePrologue<T> prologue_;
    FaInferInt8<T> int8Io_;
    bool int8_ = false;  // an int8 cache (tiling kvQuant)
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_INFER_VECTOR_H
