// Vector (AIV) half of the forward kernel: each of the two AIVs owns half of a task's query rows. Per step it
// walks its rows in chunks of vecRows (the next chunk's scores load while this one computes): scales (and
// soft-caps) and masks the scores, runs the online-softmax update in fp32 (running max/sum, rescale factor) and hands P back to the
// cube in the input precision; then it folds the cube's P*V into its running output. The division by the row
// sum is deferred to the end of the task. In the high-performance mode (lowScores) the scores arrive in the input
// dtype (FaSoftmaxIo stages them). With the tiling's halfSoftmax (fp16, no per-score features, a scale exact in
// fp16), chunks without a dense mask or key tail, where no band edge but the right one cuts, run the scale, the
// right edge's mask, row max, subtraction and exp in half (128 lanes per repeat) and take P straight from the Exp;
// the row sums of P as the cube gets it go through fp32 (begun in half: kHalfChainHalfSums).
// Other chunks are widened by one Cast and take the fp32 path. With the tiling's outResidual, a task's end also
// writes attention_out's rounding error (fp32 out - out in T, rounded to T; opart is its fp32 scratch; it waits
// for its copy out after the output rows in the probability buffers, or where UB is short in opart) for the
// backward's D (issue 26). With the tiling's lazy rescale P is taken against a per-row reference max (in both
// paths: the fp16 chain subtracts the reference in half), each step sends a flush word to the cube, and a P*V
// arrives only where a word asked for a flush and at the task's end.
#ifndef NPU_FA_KERNEL_FWD_VECTOR_H
#define NPU_FA_KERNEL_FWD_VECTOR_H

#include "fwd_common.h"
#include "softmax_io.h"
#include "../tiling/ub_budget.h"
#include "../common/gm_args.h"
#include "../common/step_ring.h"
#include "../common/type_traits.h"
#include "../tile/score_prologue.h"
#include "../tile/dropout.h"
#include "../tile/online_softmax.h"
#include "../tile/row_ops.h"

namespace npu_fa {

template <typename T>
class FaFwdVector {
public:
    __aicore__ inline void Init(const FlashAttentionTilingData* t, const FaFwdGmArgs& gm, AscendC::TPipe* pipe) {
        t_ = t;
        p_ = &t->problem;
        core_ = (uint32_t)(AscendC::GetBlockIdx() / AscendC::GetTaskRatio());
        sub_ = (uint32_t)AscendC::GetSubBlockIdx();
        seqInfo_ = gm.in.seqInfo;
        blockMap_ = gm.in.blockMap;
        outGm_.SetGlobalBuffer((__gm__ T*)gm.attentionOut);
        maxGm_.SetGlobalBuffer((__gm__ float*)gm.softmaxMax);
        sumGm_.SetGlobalBuffer((__gm__ float*)gm.softmaxSum);
        if (p_->sinkMode != 0) sinkGm_.SetGlobalBuffer((__gm__ float*)gm.in.sink);
        residual_ = p_->outResidual != 0;
        if (residual_) residualGm_.SetGlobalBuffer((__gm__ T*)gm.attentionOutResidual);
        ws_.Init(gm.workspace, t, core_);
        w_ = t->s2Block;
        dvPad_ = p_->dvPad;
        rowsMax_ = CeilDiv(t->s1Block, 2);
        chunk_ = t->vecRows;
        halfChain_ = FaIsHalf<T>::kValue && t->halfSoftmax != kHalfChainOff;
        halfSums_ = t->halfSoftmax == kHalfChainHalfSums;
        FaVecFeatures features = TilingVecFeatures(*p_, t->bandTiles != 0);
        features.residual = t->residualInProbs != 0;
        lazy_ = t->lazyRescale != 0;
        features.lazy = lazy_;
        const FaFwdUbSizes u = FwdUbSizes(rowsMax_, chunk_, w_, dvPad_, features);
        statElems_ = u.stat / sizeof(float);
        pipe->InitBuffer(sBuf_, u.s);
        if (u.dmat != 0) pipe->InitBuffer(dmatBuf_, u.dmat);
        if (u.bias != 0) pipe->InitBuffer(biasBuf_, u.bias);
        if (u.pse != 0) {
            pipe->InitBuffer(pseBuf_, u.pse);
            prologue_.OuterPse().Init(p_, w_, gm.in.pse, pseBuf_.Get<T>(), biasBuf_.Get<float>(), kIdPse);
        }
        if (u.bits != 0) pipe->InitBuffer(bitsBuf_, u.bits);
        dropping_ = p_->drop.mode != kDropNone;
        if (dropping_) {
            pipe->InitBuffer(dropBuf_, u.drop);
            drop_.Init(p_, w_, gm.in.dropoutMask, dropBuf_.Get<uint8_t>(), kIdDrop);
        }
        pipe->InitBuffer(foldBuf_, u.fold);
        pipe->InitBuffer(pBuf_, u.p);
        pipe->InitBuffer(opartBuf_, u.opart);
        pipe->InitBuffer(accBuf_, u.acc);
        pipe->InitBuffer(statBuf_, u.stat * kFwdStatBuffers);
        pipe->InitBuffer(rowBuf_, u.row);
        pipe->InitBuffer(statBitsBuf_, u.row);
        softmax_.Init(statBuf_.Get<float>(), statElems_, foldBuf_.Get<float>(), rowBuf_.Get<float>(), w_);
        if (u.mask != 0) pipe->InitBuffer(maskBuf_, u.mask);
        if (lazy_) InitLazy(pipe, u.stat);
        halfPattern_ = u.dmat != 0 && !features.alibi;  // ALiBi reads the pattern as fp32 values
        if (u.dmat != 0) BuildDiagonalPattern();
        // Dense-mask bytes live in opart (filled by OutputStep's MTE2, free in between: both wait and set the
        // kIdOutput event) unless opart is too small for a tile of them. Without bands or a dense mask the masker
        // only pads columns past the sequence end and never touches its pattern/bit buffers (fold stands in).
        // Without ALiBi or an outer pse the prologue never touches its bias buffers (fold stands in).
        const AscendC::LocalTensor<float> dmat = u.dmat != 0 ? dmatBuf_.Get<float>() : foldBuf_.Get<float>();
        prologue_.Init(p_, w_, gm.in.alibiSlopes, Stat(kStatRed), dmat,
                       u.bias != 0 ? biasBuf_.Get<float>() : foldBuf_.Get<float>());
        prologue_.TileMask().Init(p_, w_, gm.in.attenMask, chunk_, dmat, halfPattern_,
                                  u.bits != 0 ? bitsBuf_.Get<uint8_t>() : foldBuf_.Get<uint8_t>(), foldBuf_.Get<half>(),
                                  u.mask != 0 ? maskBuf_.Get<uint8_t>() : opartBuf_.Get<uint8_t>(), kIdOutput);
        io_.Init(sBuf_.Get<float>(), pBuf_.Get<T>(), opartBuf_.Get<float>(), chunk_, w_, t->lowScores != 0);
    }

    __aicore__ inline void Process() {
        FaFwdTaskIterator it;
        it.Init(t_, seqInfo_, blockMap_, core_);
        FaFwdTask task;
        FaStepRing<Pending, kFwdStepLag> ring;  // steps whose output fold is still to do
        ring.Init(kFwdStepLag);
        uint32_t step = 0, taskSlot = 0;
        while (it.Next(task)) {
            const FaAivRows mine = AivRowsOf(task.rows, sub_);
            int64_t j = it.NextStep(task, task.stepFirst);
            if (j >= task.stepLast) {
                WriteEmptyRows(task, mine);
                continue;
            }
            bool first = true;
            while (j < task.stepLast) {
                const int64_t following = it.NextStep(task, j + 1);
                SoftmaxStep(task, mine, j, it.TileState(task, j), step, taskSlot, first,
                            ring.Full() ? &ring.Oldest() : nullptr);
                if (ring.Full()) OutputStep(ring.Oldest());
                ring.Push(Pending{task, mine, step, taskSlot, first, following >= task.stepLast, false, false});
                ++step;
                first = false;
                j = following;
            }
            taskSlot = (taskSlot + 1) % kFwdStepSlots;  // a task's statistics live until its last output fold
        }
        for (uint32_t i = 0; i < ring.Count(); ++i) OutputStep(ring.FromOldest(i));
        if (lazy_) AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdWord);
        io_.End();
    }

private:
    // Event IDs: FaSoftmaxIo's (score and probability chunks, partial output, statistics), then the owner's.
    using Io = FaSoftmaxIo<T>;
    static constexpr int32_t kIdOutput = Io::kIdOutput, kIdStats = Io::kIdStats;
    static constexpr int32_t kIdPse = Io::kIdFree;   // V_MTE2 / MTE2_V pairs around an outer pse tile's load
    static constexpr int32_t kIdDrop = kIdPse + 1;   // V_MTE2 / MTE2_V pairs around a user dropout mask's load
    static_assert(kIdDrop < 8, "V_MTE2 event IDs overlap");
    static constexpr int32_t kIdResidual = Io::kIdFree;  // MTE3_V: a residual copied out of opart has left it
    static constexpr int32_t kIdWord = Io::kIdFree + 1;  // V_MTE3 / MTE3_V around a lazy-rescale flush word's copy out
    static_assert(kIdWord < 8, "V_MTE3 event IDs overlap");
    // Statistic buffers inside statBuf_ (FaOnlineSoftmax's, kFwdStepSlots tasks and steps in flight until their
    // output fold).
    using Softmax = FaOnlineSoftmax<kFwdStepSlots>;
    static constexpr uint32_t kStatMax = Softmax::kMax, kStatSum = Softmax::kSum, kStatBcast = Softmax::kBcast,
                              kStatRed = Softmax::kRed, kStatMaxOut = Softmax::kMaxOut, kStatSumOut = Softmax::kSumOut;
    static_assert(Softmax::kBuffers == kFwdStatBuffers, "the statistic buffers differ from kFwdStatBuffers");

    // Band-cut chunks take the fp16 chain only where each row sees this many keys in all: its half s - max loses
    // up to u |s - max| per probability, which a row of few keys does not average out (a row of 104 keys came to
    // 2.05x plain torch's error, D = 128, q 3x k); causal S = 8K leaves the rows below 1024 to the fp32 path.
    static constexpr int64_t kHalfBandMinKeys = 1024;

    struct Pending {
        FaFwdTask task;
        FaAivRows mine;
        uint32_t step;  // the core's step number: workspace slot FwdSlot(step), flag IDs FlagOf(., step)
        uint32_t taskSlot;
        bool first;
        bool last;
        bool waited;   // lazy rescale: its P*V flag is waited and its flush decision read (LookAhead)
        bool flushed;  // lazy rescale: the cube shipped O before its P*V
    };

    __aicore__ inline AscendC::LocalTensor<float> Stat(uint32_t i) { return softmax_.Stat(i); }

    // dmat[r][c] = c - r: a band test against it masks a whole tile with one Compares + Select. In half where
    // nothing needs its fp32 values (halfPattern_): the compares go twice as fast and the fp16 chain can use it.
    __aicore__ inline void BuildDiagonalPattern() {
        if (halfPattern_) {
            BuildPattern(foldBuf_.Get<half>(), dmatBuf_.Get<half>());
        } else {
            BuildPattern(foldBuf_.Get<float>(), dmatBuf_.Get<float>());
        }
    }
    template <typename U>
    __aicore__ inline void BuildPattern(const AscendC::LocalTensor<U>& idx, const AscendC::LocalTensor<U>& dmat) {
        for (uint32_t c = 0; c < w_; ++c) idx.SetValue(c, (U)(float)c);
        for (uint32_t r = 0; r < chunk_; ++r) AscendC::Adds(dmat[r * w_], idx, (U)(-(float)r), (int32_t)w_);
    }

    // `due`: the step whose output fold follows this softmax (lazy rescale reads its flush decision early).
    __aicore__ inline void SoftmaxStep(const FaFwdTask& task, const FaAivRows& mine, int64_t j, uint8_t tileState,
                                       uint32_t step, uint32_t taskSlot, bool first, Pending* due) {
        const uint32_t slot = FwdSlot(step);
        AscendC::CrossCoreWaitFlag(FlagOf(kFwdFlagScores, step));
        if (mine.count == 0) {
            // Nothing to write: the set only certifies that the last OutputStep's MTE2 read of the workspace slot the
            // cube's P*V of this step overwrites is done. A set reports once the earlier work of its own pipe is
            // complete (CrossCoreSetFlag(ISASI).md), so it goes on MTE2; an MTE3 set would not cover that read.
            AscendC::CrossCoreSetFlag<2, PIPE_MTE2>(FlagOf(kFwdFlagProbs, step));
            return;
        }
        Chunk c;
        c.c0 = j * w_;
        c.cols = StepCols(task, c.c0, w_);
        c.state = tileState;
        c.slot = slot;
        c.taskSlot = taskSlot;
        c.first = first;
        c.slope = prologue_.AlibiSlope(task.batch, task.head);
        const uint32_t chunks = CeilDiv(mine.count, chunk_);
        LoadScores(mine, 0, slot);
        for (uint32_t i = 0; i < chunks; ++i) {
            if (i + 1 < chunks) LoadScores(mine, (i + 1) * chunk_, slot);
            c.r0 = i * chunk_;
            c.rows = FaMin((int64_t)(mine.count - c.r0), (int64_t)chunk_);
            SoftmaxRows(task, mine, c);
            if (i == 0 && lazy_ && due != nullptr) LookAhead(*due);
        }
        if (lazy_ && !first) SendFlushWord(mine.count, step);
        // On MTE3 after the last P store, which waited (V_MTE3) for the vector work that had waited (MTE2_V) for every
        // earlier workspace read of this AIV: the set covers the reads as well.
        AscendC::CrossCoreSetFlag<2, PIPE_MTE3>(FlagOf(kFwdFlagProbs, step));
    }

    // One chunk of an AIV's rows in a step: rows [r0, r0 + rows) of its half, key columns [c0, c0 + cols).
    struct Chunk {
        int64_t c0;
        uint32_t cols, r0, rows, slot, taskSlot;
        uint8_t state;
        bool first;
        float slope;  // ALiBi slope of the task's head
    };

    // Scores of the chunk at row r0 of this AIV's half -> the next score buffer.
    __aicore__ inline void LoadScores(const FaAivRows& mine, uint32_t r0, uint32_t slot) {
        const uint32_t rows = (uint32_t)FaMin((int64_t)(mine.count - r0), (int64_t)chunk_);
        if (t_->lowScores != 0) {
            io_.LoadScores(ws_.template Scores<T>(slot), mine.first + r0, rows);
        } else {
            io_.LoadScores(ws_.template Scores<float>(slot), mine.first + r0, rows);
        }
    }

    __aicore__ inline void SoftmaxRows(const FaFwdTask& task, const FaAivRows& mine, const Chunk& c) {
        const uint32_t n = c.rows * w_;
        const int64_t r0 = task.row0 + mine.first + c.r0;
        // A step the band's right edge narrowed (StepCols) keeps the chain: that edge's mask covers its columns
        // past cols, whose scores the cube did not write. Key tails take the fp32 path.
        if (halfChain_ && c.c0 + w_ <= task.seq.s2 && (p_->maskMode == 0 || c.state == kTileVisible)) {
            const bool visible = c.cols == w_ && BlockFullyVisible(task.band, r0, r0 + c.rows, c.c0, c.c0 + c.cols);
            if (visible || (halfPattern_ && OnlyRightEdgeCuts(task.band, r0, r0 + c.rows, c.c0) &&
                            BandKeysOfRow(task.band, r0, task.seq.s2) >= kHalfBandMinKeys)) {
                HalfSoftmaxRows(mine, c, visible ? nullptr : &task.band, r0);
                return;
            }
        }
        AscendC::LocalTensor<float> s = io_.NextScores();

        const FaScoreTile tile{task.batch, task.head, r0, c.rows, c.c0, c.cols, task.band, task.maskBase, c.state,
                               StatRow(*p_, task.batch, task.seq, task.head, r0)};
        prologue_.Scale(s, n);
        prologue_.AddBias(s, tile, c.slope);
        prologue_.ApplyMask(s, tile);

        // The chunk's rows of each statistic start at row r0 (a multiple of 8: whole 32 B blocks).
        if (lazy_) {
            softmax_.ExponentiateLazy(s, c.rows, c.r0, c.taskSlot, c.slot, c.first, LazyRefs(c.taskSlot));
        } else {
            softmax_.Exponentiate(s, c.rows, c.r0, c.taskSlot, c.slot, c.first);
        }

        // The row sums are of the probabilities before dropout; dropout then zeroes P where a keep bit is 0.
        if (dropping_) {
            softmax_.AddRowSums(s, c.rows, c.r0, c.taskSlot, c.slot, c.first);
            drop_.Bits(tile);
            drop_.Apply(s, c.rows);
        }

        // P goes back to the cube in the input precision.
        io_.StoreProbs(s, ws_.template Probs<T>(c.slot), mine.first + c.r0, n);
        if (!dropping_) softmax_.AddRowSums(s, c.rows, c.r0, c.taskSlot, c.slot, c.first);
        io_.ReleaseScores();
    }

    // The fp16 chain of a chunk (see the file comment): staged half scores -> scale (-> the band's right edge, where
    // `cut` gives it: a causal diagonal, rows r0 on) -> FaOnlineSoftmax's ExponentiateHalf (P in the probability
    // buffer) -> P out to the cube -> row sums of P.
    __aicore__ inline void HalfSoftmaxRows(const FaAivRows& mine, const Chunk& c, const FaBand* cut, int64_t r0) {
        const uint32_t n = c.rows * w_;
        const AscendC::LocalTensor<half> s = io_.NextStaged().template ReinterpretCast<half>();
        const AscendC::LocalTensor<half> p = io_.ProbsBuffer().template ReinterpretCast<half>();
        AscendC::Muls(s, s, (half)p_->scale, (int32_t)n);
        if (cut != nullptr) prologue_.TileMask().RightEdgeHalf(s, *cut, r0, c.rows, c.c0);
        if (lazy_) {
            const FaLazyRefs lazy = LazyRefs(c.taskSlot);
            softmax_.ExponentiateHalf(s, p, c.rows, c.r0, c.taskSlot, c.slot, c.first, &lazy);
        } else {
            softmax_.ExponentiateHalf(s, p, c.rows, c.r0, c.taskSlot, c.slot, c.first);
        }
        io_.ReleaseStaged();
        io_.SendProbs(ws_.template Probs<T>(c.slot), mine.first + c.r0, n);
        if (halfSums_) {
            softmax_.AddRowSumsHalf(p, c.rows, c.r0, c.taskSlot, c.slot, c.first);
            return;
        }
        const AscendC::LocalTensor<float> pf = io_.Work();
        AscendC::Cast(pf, p, AscendC::RoundMode::CAST_NONE, n);
        softmax_.AddRowSums(pf, c.rows, c.r0, c.taskSlot, c.slot, c.first);
    }

    __aicore__ inline void OutputStep(const Pending& s) {
        const uint32_t slot = FwdSlot(s.step);
        if (!s.waited) AscendC::CrossCoreWaitFlag(FlagOf(kFwdFlagOutput, s.step));
        if (s.mine.count == 0) return;
        if (lazy_) {
            LazyOutputStep(s);
            return;
        }
        const AscendC::LocalTensor<float> opart =
            io_.LoadOutput(ws_.Output(slot), (uint64_t)s.mine.first * dvPad_, s.mine.count * dvPad_);
        softmax_.Fold(accBuf_.Get<float>(), opart, slot, s.mine.count, dvPad_, s.first);
        if (!(s.last && residual_)) io_.ReleaseOutput();  // else Finalize borrows opart as scratch and releases it
        if (s.last) Finalize(s);
    }

    // Lazy rescale: the cube shipped O before this step's P*V when either AIV's flush word asked for it (both read
    // the same words: they agree), and ships the task's O after its last step.
    __aicore__ inline void LazyOutputStep(const Pending& s) {
        const uint32_t slot = FwdSlot(s.step);
        const uint64_t offset = (uint64_t)s.mine.first * dvPad_;
        const uint32_t n = s.mine.count * dvPad_;
        const AscendC::LocalTensor<float> acc = accBuf_.Get<float>();
        if (s.first) accLive_ = false;
        if (s.waited ? s.flushed : !s.first && FlushRequested(flushGm_, s.step, t_->lazyThreshold,
                                                              AivRowsOf(s.task.rows, 1).count != 0)) {
            softmax_.FoldFlushed(acc, io_.LoadOutput(ws_.Output(slot), offset, n), slot, s.mine.count, dvPad_,
                                 !accLive_);
            accLive_ = true;
            io_.ReleaseOutput();
        }
        if (!s.last) return;
        const AscendC::LocalTensor<float> opart = io_.LoadOutput(ws_.Output(slot + kFwdStepSlots), offset, n);
        if (accLive_) {
            AscendC::Add(acc, acc, opart, (int32_t)n);
        } else {
            AscendC::DataCopy(acc, opart, n);
        }
        if (!residual_) io_.ReleaseOutput();  // else Finalize borrows opart as scratch and releases it
        softmax_.LeaveReference(acc, Refs(s.taskSlot), s.taskSlot, s.mine.count, dvPad_);
        Finalize(s);
    }

    // Lazy rescale: the due step's P*V flag and flush decision, taken after the first chunk of the next softmax is
    // issued, so that the scalar read's DCache miss overlaps that chunk's vector work rather than stalling the AIV
    // between steps (the cube sets the flag about when it sets this step's scores flag).
    __aicore__ inline void LookAhead(Pending& due) {
        AscendC::CrossCoreWaitFlag(FlagOf(kFwdFlagOutput, due.step));
        due.waited = true;
        due.flushed = due.mine.count != 0 && !due.first &&
                      FlushRequested(flushGm_, due.step, t_->lazyThreshold, AivRowsOf(due.task.rows, 1).count != 0);
    }

    // The AIV's flush word of a step: min over its rows of ref_old - m (< -threshold: some row moved its
    // reference), to GM ahead of the step's "probabilities ready" flag (which then covers the copy, on MTE3 too).
    __aicore__ inline void SendFlushWord(uint32_t rows, uint32_t step) {
        const AscendC::LocalTensor<float> word = wordBuf_.Get<float>();
        AscendC::BlockReduceMin(rowBuf_.Get<float>(), Rise(), (int32_t)(AlignUp(rows, 8) / 8), 64, 1, 1, 8);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdWord);
        AscendC::WholeReduceMin(word, rowBuf_.Get<float>(), (int32_t)rows, 1, 1, 1, 8);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(kIdWord);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(kIdWord);
        AscendC::DataCopy(flushGm_[FlushWordOffset(step, sub_)], word, 8);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIdWord);
    }

    __aicore__ inline void InitLazy(AscendC::TPipe* pipe, uint32_t statBytes) {
        pipe->InitBuffer(refBuf_, kFwdStepSlots * statBytes);
        pipe->InitBuffer(riseBuf_, statBytes);
        pipe->InitBuffer(wordBuf_, 32);
        flushGm_.SetGlobalBuffer(ws_.template At<float>(t_->wsOffsetFlush), kFwdFlushBytes / sizeof(float));
        // The word's lanes past the minimum and its index go out with it: defined once.
        AscendC::Duplicate(wordBuf_.Get<float>(), 0.0f, 8);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIdWord);
    }
    __aicore__ inline AscendC::LocalTensor<float> Refs(uint32_t taskSlot) {
        return refBuf_.Get<float>()[taskSlot * statElems_];
    }
    __aicore__ inline AscendC::LocalTensor<float> Rise() { return riseBuf_.Get<float>(); }
    __aicore__ inline FaLazyRefs LazyRefs(uint32_t taskSlot) {
        return FaLazyRefs{Refs(taskSlot), Rise(), statBitsBuf_.Get<uint8_t>(), t_->lazyThreshold};
    }

    // out = acc / l; rows that saw no key keep max = -FLT_MAX and get out = 0, sum = FLT_MAX (zero LSE weight).
    // With a sink logit z the row's softmax also has exp(z - max'): max' = max(m, z), l' = l e + exp(z - max') and
    // acc' = acc e for e = exp(m - max'); a row that saw no key then has e = 0: out 0, max' = z, l' = 1.
    __aicore__ inline void Finalize(const Pending& s) {
        const uint32_t rows = s.mine.count;
        const uint32_t statN = AlignUp(rows, 8) * 8;
        AscendC::LocalTensor<float> mRun = Stat(kStatMax + s.taskSlot);
        AscendC::LocalTensor<float> lRun = Stat(kStatSum + s.taskSlot);
        AscendC::LocalTensor<float> acc = accBuf_.Get<float>();
        if (p_->sinkMode != 0) {
            AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdStats);  // the statistic outputs are free
            const float z = sinkGm_.GetValue(s.task.head);
            AscendC::LocalTensor<float> mOut = Stat(kStatMaxOut), lOut = Stat(kStatSumOut);
            AscendC::LocalTensor<float> e = Stat(kStatBcast), ez = Stat(kStatRed);
            AscendC::Maxs(mOut, mRun, z, (int32_t)statN);
            AscendC::Sub(e, mRun, mOut, (int32_t)statN);
            AscendC::Exp(e, e, (int32_t)statN);
            AscendC::Muls(ez, mOut, -1.0f, (int32_t)statN);
            AscendC::Adds(ez, ez, z, (int32_t)statN);
            AscendC::Exp(ez, ez, (int32_t)statN);
            AscendC::Mul(lOut, lRun, e, (int32_t)statN);
            AscendC::Add(lOut, lOut, ez, (int32_t)statN);
            RowMul(acc, e, rows, dvPad_);
            RowDiv(acc, lOut, rows, dvPad_);
        } else {
            AscendC::LocalTensor<uint8_t> valid = statBitsBuf_.Get<uint8_t>();
            softmax_.Normalize(acc, valid, s.taskSlot, rows, dvPad_);
            AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdStats);
            AscendC::DataCopy(Stat(kStatMaxOut), mRun, statN);
            AscendC::Select(Stat(kStatSumOut), valid, lRun, kFltMax, AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, statN);
        }
        if (dropping_) AscendC::Muls(acc, acc, p_->drop.keepInv, (int32_t)(rows * dvPad_));  // kept P count 1 / keep_prob
        AscendC::LocalTensor<T> o = pBuf_.Get<T>();
        io_.WaitProbBuffers();
        const int32_t n = (int32_t)(rows * dvPad_);
        AscendC::Cast(o, acc, AscendC::RoundMode::CAST_RINT, n);
        if (!residual_) {
            WriteRows(s.task, s.mine, o);
            return;
        }
        // residual = acc - out in fp32 (exact: out is acc rounded), then rounded to T
        const AscendC::LocalTensor<float> back = io_.OutputBuffer();
        AscendC::Cast(back, o, AscendC::RoundMode::CAST_NONE, n);
        AscendC::Sub(acc, acc, back, n);
        const bool inProbs = t_->residualInProbs != 0;
        if (inProbs) io_.ReleaseOutput();
        const AscendC::LocalTensor<T> r = inProbs ? o[rows * dvPad_] : back.template ReinterpretCast<T>();
        AscendC::Cast(r, acc, AscendC::RoundMode::CAST_RINT, n);
        WriteRows(s.task, s.mine, r);
        if (!inProbs) {  // opart is free once the residual has left it
            AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIdResidual);
            AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdResidual);
            io_.ReleaseOutput();
        }
    }

    // Rows of a task that sees no key at all: zero output, max = -FLT_MAX, sum = FLT_MAX; with a sink logit z
    // (the only term of their softmax) max = z, sum = 1.
    __aicore__ inline void WriteEmptyRows(const FaFwdTask& task, const FaAivRows& mine) {
        if (mine.count == 0) return;
        const uint32_t statN = AlignUp(mine.count, 8) * 8;
        const bool sink = p_->sinkMode != 0;
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdStats);
        AscendC::Duplicate(Stat(kStatMaxOut), sink ? sinkGm_.GetValue(task.head) : kMaskValue, (int32_t)statN);
        AscendC::Duplicate(Stat(kStatSumOut), sink ? 1.0f : kFltMax, (int32_t)statN);
        io_.WaitProbBuffers();
        AscendC::Duplicate(pBuf_.Get<T>(), (T)0.0f, (int32_t)(mine.count * dvPad_));
        WriteRows(task, mine, pBuf_.Get<T>());  // the residual of a zero row is zero
    }

    // Output rows (pBuf_), with outResidual their residual (`residual`), and statistics (kStatMaxOut/kStatSumOut)
    // -> GM. Expects io_.WaitProbBuffers() and the kIdStats MTE3_V event waited.
    __aicore__ inline void WriteRows(const FaFwdTask& task, const FaAivRows& mine,
                                     const AscendC::LocalTensor<T>& residual) {
        const int64_t row = task.row0 + mine.first;
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(Io::kIdProbs[0]);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(Io::kIdProbs[0]);
        AscendC::DataCopyExtParams op((uint16_t)mine.count, p_->dv * (uint32_t)sizeof(T), 0,
                                      (uint32_t)((p_->oStride.s - p_->dv) * sizeof(T)), 0);
        const uint64_t out0 = TokenOffset(*p_, kGmOut, task.batch, task.seq, task.head, row);
        AscendC::DataCopyPad(outGm_[out0], pBuf_.Get<T>(), op);
        if (residual_) AscendC::DataCopyPad(residualGm_[out0], residual, op);
        io_.ReleaseProbBuffers();
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(kIdStats);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(kIdStats);
        const uint64_t stat = StatRow(*p_, task.batch, task.seq, task.head, row) * 8;
        AscendC::DataCopy(maxGm_[stat], Stat(kStatMaxOut), mine.count * 8);
        AscendC::DataCopy(sumGm_[stat], Stat(kStatSumOut), mine.count * 8);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIdStats);
    }

    const FlashAttentionTilingData* t_ = nullptr;
    const FaProblemTiling* p_ = nullptr;
    uint32_t core_ = 0, sub_ = 0;
    GM_ADDR seqInfo_ = nullptr;
    GM_ADDR blockMap_ = nullptr;
    FaScorePrologue<T> prologue_;
    Softmax softmax_;
    Io io_;
    FaDropout drop_;
    bool dropping_ = false;
    bool halfChain_ = false;  // the tiling's halfSoftmax: plain chunks take HalfSoftmaxRows
    bool halfSums_ = false;   // ... and begin their row sums in half (kHalfChainHalfSums)
    bool halfPattern_ = false;  // the band pattern (dmat) is held in half
    bool residual_ = false;   // the tiling's outResidual
    bool lazy_ = false;       // the tiling's lazyRescale
    bool accLive_ = false;    // lazy rescale: acc holds a flushed O of the current task
    AscendC::GlobalTensor<float> flushGm_;
    AscendC::GlobalTensor<T> outGm_, residualGm_;
    AscendC::GlobalTensor<float> maxGm_, sumGm_, sinkGm_;
    FaFwdWorkspace ws_;
    uint32_t w_ = 0, dvPad_ = 0, rowsMax_ = 0, chunk_ = 0, statElems_ = 0;
    AscendC::TBuf<AscendC::TPosition::VECIN> sBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> dmatBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> biasBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> pseBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> bitsBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> foldBuf_;
    AscendC::TBuf<AscendC::TPosition::VECOUT> pBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> opartBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> accBuf_;
    AscendC::TBuf<AscendC::TPosition::VECOUT> statBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> rowBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> statBitsBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> maskBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> dropBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> refBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> riseBuf_;
    AscendC::TBuf<AscendC::TPosition::VECOUT> wordBuf_;
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_FWD_VECTOR_H
