// Vector (AIV) half of the backward kernel. Each AIV takes half of a tile's query rows for P and dS, and half of
// the task's owned rows for the result:
//   dQ pass:  at task start D = rowsum(dO * O) (fp32; with outResidual O + the forward's residual, so that D is
//             the unrounded output's); per step P = exp(scale * S - max) / sum, dS = P * (dP - D)
//             -> workspace (with softcap, y = cap tanh(scale S / cap) replaces scale * S and dS is multiplied by the
//             cap's slope 1 - (y / cap)^2), D made exact for rows whose keys all lie in the step (ExactRowD); at the
//             end the cube's sum dS K -> dq = scale * sum, and D stored to the workspace for the dKV pass.
//   dKV pass: per step the statistics of the tile's query rows (max, sum from the forward, D from the dQ pass),
//             P and dS as above; at the end the cube's sums -> dk = scale * sum dS^T Q, dv = sum P^T dO.
// Stored tiles (tiling storeTiles): the dQ pass writes each step's P (dropped, for dV) and final dS to the tile's
// place in the workspace, where the cube reads dS for dQ and the dK/dV pass reads both; that pass's AIVs then only
// write the task's sums.
// High-performance mode (problem.bwdLowScores): S and dP arrive in the input dtype and are widened to fp32
// first; the rest is the same.
// Masked entries (band, key columns past the sequence end) get P = 0 and dS = 0; so do rows that see no key
// (max = -FLT_MAX). A step's rows go in two chunks with their own buffers and events, so one chunk's loads and
// stores (and the next step's first loads) overlap the other's vector work; the task-level work (D, the sums, the
// outputs) hands over with set/wait pairs.
#ifndef NPU_FA_KERNEL_BWD_VECTOR_H
#define NPU_FA_KERNEL_BWD_VECTOR_H

#include "bwd_common.h"
#include "../tiling/ub_budget.h"
#include "../common/gm_args.h"
#include "../tile/score_prologue.h"
#include "../tile/dropout.h"
#include "../tile/row_ops.h"

namespace npu_fa {

template <typename T>
class FaBwdVector {
public:
    __aicore__ inline void Init(const FlashAttentionGradTilingData* t, const FaBwdGmArgs& gm, AscendC::TPipe* pipe) {
        t_ = t;
        p_ = &t->problem;
        core_ = (uint32_t)(AscendC::GetBlockIdx() / AscendC::GetTaskRatio());
        sub_ = (uint32_t)AscendC::GetSubBlockIdx();
        dyGm_.SetGlobalBuffer((__gm__ T*)gm.dy);
        oGm_.SetGlobalBuffer((__gm__ T*)gm.attentionIn);
        residual_ = p_->outResidual != 0;
        if (residual_) residualGm_.SetGlobalBuffer((__gm__ T*)gm.attentionInResidual);
        maxGm_.SetGlobalBuffer((__gm__ float*)gm.softmaxMax);
        sumGm_.SetGlobalBuffer((__gm__ float*)gm.softmaxSum);
        dqGm_.SetGlobalBuffer((__gm__ T*)gm.dq);
        dkGm_.SetGlobalBuffer((__gm__ T*)gm.dk);
        dvGm_.SetGlobalBuffer((__gm__ T*)gm.dv);
        sinkRows_ = p_->sinkMode != 0 && t->pass == kBwdPassDq;
        if (sinkRows_) {
            sinkGm_.SetGlobalBuffer((__gm__ float*)gm.in.sink);
            dsinkGm_.SetGlobalBuffer((__gm__ float*)gm.dsinkRows);
        }
        seqInfo_ = gm.in.seqInfo;
        blockMap_ = gm.in.blockMap;
        ws_.Init(gm.workspace, t, core_);
        dGm_.SetGlobalBuffer(ws_.D());
        w_ = t->s2Block;
        rowsMax_ = CeilDiv(t->s1Block, 2);
        chunk_ = BwdChunkRows(rowsMax_);
        // The band pattern is always built here (the dQ and dK/dV tiles cut bands anywhere).
        const FaBwdUbSizes u = BwdUbSizes(rowsMax_, w_, CeilDiv(w_, 2), p_->dPad, p_->dvPad, t->kvParts,
                                          TilingVecFeatures(*p_, false));
        statElems_ = u.stat / sizeof(float);
        scoreElems_ = u.score / sizeof(float);
        pipe->InitBuffer(scoreBuf_, u.score);
        pipe->InitBuffer(dpBuf_, u.dp);
        pipe->InitBuffer(dmatBuf_, u.dmat);
        pipe->InitBuffer(bitsBuf_, u.bits);
        pipe->InitBuffer(halfBuf_, u.half);
        pipe->InitBuffer(maskHalfBuf_, u.maskHalf);
        pipe->InitBuffer(statBuf_, 2 * kBwdStatBuffers * u.stat);
        pipe->InitBuffer(partBuf_, u.part);
        pipe->InitBuffer(accBuf_, u.acc);
        pipe->InitBuffer(outBuf_, u.out);
        pipe->InitBuffer(rowBuf_, u.row);
        if (u.bias != 0) pipe->InitBuffer(biasBuf_, u.bias);
        if (u.pse != 0) {
            pipe->InitBuffer(pseBuf_, u.pse);
            // set/wait pairs: the hand-over ID
            prologue_.OuterPse().Init(p_, w_, gm.in.pse, pseBuf_.Get<T>(), biasBuf_.Get<float>(), 0);
        }
        dropping_ = p_->drop.mode != kDropNone;
        if (dropping_) {
            pipe->InitBuffer(dropBuf_, u.drop);
            drop_.Init(p_, w_, gm.in.dropoutMask, dropBuf_.Get<uint8_t>(), 0);  // set/wait pairs: the hand-over ID
        }
        // the grad op returns dpse for every outer pse, as the built-in
        pseGrad_ = p_->pseMode != kPseNone && t->pass == kBwdPassDq;
        if (pseGrad_) dpseGm_.SetGlobalBuffer((__gm__ float*)gm.dpseRows);
        accKvOffset_ = (t->kvParts & kBwdPartDk) ? CeilDiv(w_, 2) * p_->dPad : 0;  // dV after dK (if both)
        if (u.mask != 0) pipe->InitBuffer(maskBuf_, u.mask);
        BuildDiagonalPattern();
        // Without ALiBi or an outer pse the prologue never touches its bias buffer (the band pattern stands in).
        prologue_.Init(p_, w_, gm.in.alibiSlopes, rowBuf_.Get<float>(), dmatBuf_.Get<float>(),
                       u.bias != 0 ? biasBuf_.Get<float>() : dmatBuf_.Get<float>());
        const AscendC::LocalTensor<uint8_t> bits = bitsBuf_.Get<uint8_t>();
        prologue_.TileMask().Init(p_, w_, gm.in.attenMask, chunk_, dmatBuf_.Get<float>(), false, bits, maskHalfBuf_.Get<half>(),
                                  u.mask != 0 ? maskBuf_.Get<uint8_t>() : bits, kIdMaskFree);
        if (p_->maskMode != 0) AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdMaskFree);
        for (int32_t i = 0; i < 2; ++i) {  // every chunk buffer and statistic set starts free
            AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdChunk + i);
            AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIdChunk + i);
            AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdStats + i);
        }
    }

    __aicore__ inline void Process() {
        FaBwdTaskIterator it;
        it.Init(t_, seqInfo_, blockMap_, core_);
        FaBwdTask task;
        uint32_t step = 0, sumsIn = 0;
        const bool dq = t_->pass == kBwdPassDq;
        while (it.Next(task)) {
            if (!dq && FaBwdTaskIterator::Finished(t_, task)) continue;  // an earlier query chunk wrote its rows
            const FaAivRows own = AivRowsOf(task.rows, sub_);
            if (dq) TaskStatistics(task, own);
            if (sinkRows_ && own.count != 0) AscendC::Duplicate(SinkSums(), 0.0f, (int32_t)(own.count * 64));
            const int64_t steps = FaBwdTaskIterator::StepCount(task);
            exactAll_ = steps == 1 && p_->partialKeys == 0;  // partial keys: other calls hold the rest
            bool any = false;
            const bool storedKv = !dq && t_->storeTiles != 0;  // the cube multiplies the dQ pass's tiles alone
            for (int64_t i = 0; i < steps; ++i) {
                const FaBwdStep s = FaBwdTaskIterator::StepOf(t_, task, i);
                const uint8_t state = it.TileState(task, s);
                if (state == kTileMasked) continue;  // the block map: nothing to compute (the cube skips it too)
                any = true;
                if (storedKv) continue;
                const FaAivRows q = AivRowsOf(s.qRows, sub_);
                if (!dq) StepStatistics(task, s, q, step);
                ScoreStep(task, s, q, step++, state);
            }
            if (dq) StoreD(task, own);
            if (any) {
                LoadSums(own, sumsIn);
                // the stored-tile dK/dV pass's cube waits for it before the next task's sums
                if (storedKv) AscendC::CrossCoreSetFlag<2, PIPE_MTE2>(FlagOf(kBwdFlagSumsRead, sumsIn));
                ++sumsIn;
            }
            if (dq || FoldChunks(task, own, any)) WriteTask(task, own, any || !FaBwdTaskIterator::FirstChunk(t_));
            if (sinkRows_) SinkRows(task, own);
        }
        if (p_->maskMode != 0) AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIdMaskFree);
        for (int32_t i = 0; i < 2; ++i) {
            AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIdChunk + i);
            AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdChunk + i);
            AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIdStats + i);
        }
    }

private:
    // Statistic buffers: the forward's max, made the log-sum-exp once loaded (FoldSumIntoMax); its sum, then ln(sum);
    // D.
    static constexpr uint32_t kStatLse = 0, kStatSum = 1, kStatD = 2;
    static constexpr int32_t kIdMaskFree = 1;  // V_MTE2: the mask-bytes buffer may be refilled (hand-overs use 0)
    // Chunk c's buffers: V_MTE2 / MTE2_V / V_MTE3 / MTE3_V kIdChunk + c. The dK/dV pass's statistic sets (step
    // parity): V_MTE2 kIdStats + set.
    static constexpr int32_t kIdChunk = 2, kIdStats = 4;
    static_assert(kIdMaskFree > 0 && kIdChunk > kIdMaskFree && kIdStats >= kIdChunk + 2 && kIdStats + 2 <= 8,
                  "V_MTE2 event IDs overlap (0 is the hand-over ID)");

    // Steps are serial: each hand-over between pipes is a set/wait pair on one event ID.
    template <AscendC::HardEvent kEvent>
    __aicore__ inline static void Handover() {
        AscendC::SetFlag<kEvent>(0);
        AscendC::WaitFlag<kEvent>(0);
    }

    // Statistic i of set `set` (the dQ pass uses set 0 for the task; the dK/dV pass one set per step, by parity).
    __aicore__ inline AscendC::LocalTensor<float> Stat(uint32_t i, uint32_t set = 0) {
        return statBuf_.Get<float>()[(set * kBwdStatBuffers + i) * statElems_];
    }

    // dmat[r][c] = c - r: one Compares + Select against it masks a tile to a band.
    __aicore__ inline void BuildDiagonalPattern() {
        AscendC::LocalTensor<float> idx = rowBuf_.Get<float>();
        AscendC::LocalTensor<float> dmat = dmatBuf_.Get<float>();
        for (uint32_t c = 0; c < 64; ++c) idx.SetValue(c, (float)c);
        // Columns in chunks of 64 (the row buffer holds at least 64 floats), shifted by the chunk start and the row.
        for (uint32_t r = 0; r < chunk_; ++r) {
            for (uint32_t c = 0; c < w_; c += 64) AscendC::Adds(dmat[r * w_ + c], idx, (float)c - (float)r, 64);
        }
    }

    // Loads `count` statistic rows (8 floats each) starting at statistic row `row` into Stat(slot).
    __aicore__ inline void LoadStat(uint32_t i, uint32_t set, const AscendC::GlobalTensor<float>& src, uint64_t row,
                                    uint32_t count) {
        AscendC::DataCopy(Stat(i, set), src[row * 8], count * 8);
    }

    // dQ pass, task start: D = rowsum(dO * O) of this AIV's rows (kept in Stat(kStatD) and stored for the dKV
    // pass), and the forward's max / sum of the rows. With the forward's residual O is attention_in + residual in
    // fp32: the residual loads first into dO's slot, and dO follows once O is summed.
    __aicore__ inline void TaskStatistics(const FaBwdTask& task, const FaAivRows& own) {
        if (own.count == 0) return;
        const uint32_t rows = own.count, dvPad = p_->dvPad;
        const int64_t row = task.first + own.first;
        const uint64_t stat = StatRow(*p_, task.batch, task.seq, task.head, row);
        AscendC::LocalTensor<T> dyT = outBuf_.Get<T>();
        AscendC::LocalTensor<T> oT = dyT[rows * dvPad];
        const uint8_t padElems = (uint8_t)(dvPad - p_->dv);
        AscendC::DataCopyExtParams cp((uint16_t)rows, p_->dv * (uint32_t)sizeof(T),
                                      (uint32_t)((p_->oStride.s - p_->dv) * sizeof(T)), 0, 0);
        AscendC::DataCopyPadExtParams<T> pad(padElems != 0, 0, padElems, (T)0.0f);
        Handover<AscendC::HardEvent::V_MTE2>();
        const uint64_t gmRow = TokenOffset(*p_, kGmOut, task.batch, task.seq, task.head, row);
        AscendC::DataCopyPad(dyT, residual_ ? residualGm_[gmRow] : dyGm_[gmRow], cp, pad);
        AscendC::DataCopyPad(oT, oGm_[gmRow], cp, pad);
        LoadStat(kStatLse, 0, maxGm_, stat, rows);
        LoadStat(kStatSum, 0, sumGm_, stat, rows);
        Handover<AscendC::HardEvent::MTE2_V>();
        FoldSumIntoMax(0, rows);
        AscendC::LocalTensor<float> prod = accBuf_.Get<float>();  // free until the task's end
        AscendC::LocalTensor<float> oF = partBuf_.Get<float>();
        const uint32_t n = rows * dvPad;
        if (residual_) {
            AscendC::Cast(oF, oT, AscendC::RoundMode::CAST_NONE, n);
            AscendC::Cast(prod, dyT, AscendC::RoundMode::CAST_NONE, n);
            AscendC::Add(oF, oF, prod, (int32_t)n);
            Handover<AscendC::HardEvent::V_MTE2>();
            AscendC::DataCopyPad(dyT, dyGm_[gmRow], cp, pad);
            Handover<AscendC::HardEvent::MTE2_V>();
            AscendC::Cast(prod, dyT, AscendC::RoundMode::CAST_NONE, n);
        } else {
            AscendC::Cast(prod, dyT, AscendC::RoundMode::CAST_NONE, n);
            AscendC::Cast(oF, oT, AscendC::RoundMode::CAST_NONE, n);
        }
        AscendC::Mul(prod, prod, oF, (int32_t)n);
        // Fold the 64-column chunks of each row into `fold` (O's buffer, free now: the step buffers may be loading),
        // then one sum per row, broadcast to 8 per row.
        AscendC::LocalTensor<float> fold = oF;
        const uint8_t rep = (uint8_t)(dvPad / 8);
        const uint64_t first = dvPad < 64 ? dvPad : 64;
        AscendC::Muls(fold, prod, 1.0f, first, (uint8_t)rows, AscendC::UnaryRepeatParams(1, 1, 8, rep));
        for (uint32_t c = 64; c < dvPad; c += 64) {
            const uint64_t mask = dvPad - c < 64 ? dvPad - c : 64;
            AscendC::Add(fold, fold, prod[c], mask, (uint8_t)rows, AscendC::BinaryRepeatParams(1, 1, 1, 8, 8, rep));
        }
        AscendC::LocalTensor<float> sums = rowBuf_.Get<float>();
        const uint32_t rows8 = AlignUp(rows, 8);
        AscendC::Duplicate(sums, 0.0f, (int32_t)rows8);
        AscendC::WholeReduceSum(sums, fold, (int32_t)first, (int32_t)rows, 1, 1, 8);
        AscendC::Brcb(Stat(kStatD), sums, (uint8_t)(rows8 / 8), AscendC::BrcbRepeatParams(1, 8));
    }

    // dQ pass, task end: D of this AIV's rows (made exact where ExactRowD could) -> workspace, for the dKV pass.
    __aicore__ inline void StoreD(const FaBwdTask& task, const FaAivRows& own) {
        if (own.count == 0) return;
        Handover<AscendC::HardEvent::V_MTE3>();
        AscendC::DataCopy(dGm_[StatRow(*p_, task.batch, task.seq, task.head, task.first + own.first) * 8],
                          Stat(kStatD), own.count * 8);
        Handover<AscendC::HardEvent::MTE3_V>();
    }

    // The forward's max of `rows` rows of statistic set `set` -> lse = max + ln(sum), so that P = exp(x - lse) needs
    // no division per score (the Div was a fifth of the dQ pass's vector time). The rounding of lse in fp32 moves P
    // by about 2^-24 |lse|, far below P's rounding to the input dtype. Rows that saw no key (max -FLT_MAX, sum
    // FLT_MAX) keep -FLT_MAX: every score of theirs is masked to it before the Exp.
    __aicore__ inline void FoldSumIntoMax(uint32_t set, uint32_t rows) {
        const int32_t n = (int32_t)(rows * 8);
        AscendC::Ln(Stat(kStatSum, set), Stat(kStatSum, set), n);
        AscendC::Add(Stat(kStatLse, set), Stat(kStatLse, set), Stat(kStatSum, set), n);
    }

    // dQ pass: D = rowsum(dO * O) carries the rounding of the stored output (amplified by 1 / keep_prob), which in a
    // row whose exact dS is about zero (one visible key, one dominant key) is the whole result. A row whose keys all
    // lie in this step (the whole task is one step of a call that holds all keys, or P sums to at least kExactMass
    // over the step's keys, so other steps add nothing) has the exact D' = sum_j P_j dP_j = rowsum(dS) + D * m
    // (m = sum_j P_j); its dS becomes P * (dP - D') = dS - P * (D' - D), and D' replaces D (later steps see P = 0
    // there; the dKV pass reads it). With partial keys (problem.partialKeys) only the mass test counts: P comes from
    // the whole rows' statistics, so m is the step's share of the whole row and the keys of other calls hold 1 - m.
    // Run only where such a row can exist: one-step tasks, dense masks, or a band that fits the step for some row
    // (SomeRowInsideBlock), so full attention over several key blocks pays nothing.
    // x: P; set 1 of the statistics is scratch (the dQ pass uses set 0 only).
    __aicore__ inline void ExactRowD(const AscendC::LocalTensor<float>& x, const AscendC::LocalTensor<float>& ds,
                                     uint32_t r0, uint32_t rows) {
        const AscendC::LocalTensor<float> sum = Stat(kStatLse, 1)[r0 * 8], part = sum[chunk_];
        const AscendC::LocalTensor<float> mass = Stat(kStatSum, 1)[r0 * 8], corr = Stat(kStatD, 1)[r0 * 8];
        const int32_t n8 = (int32_t)(rows * 8);
        const uint8_t blocks = (uint8_t)CeilDiv(rows, 8);
        RowSum(sum, x, part, rows, w_);
        AscendC::Brcb(mass, sum, blocks, AscendC::BrcbRepeatParams(1, 8));
        RowSum(sum, ds, part, rows, w_);
        AscendC::Brcb(corr, sum, blocks, AscendC::BrcbRepeatParams(1, 8));
        // corr = (rowsum(dS) + D (m - 1)) * g, gate g = clamp((m - threshold) * 2^30, 0, 1): 1 where the mass test
        // (or a one-step task) says the row is whole here, else 0
        const AscendC::LocalTensor<float> d = Stat(kStatD)[r0 * 8];
        AscendC::Adds(sum, mass, -1.0f, n8);  // the compact sums are spent: sum's chunk region holds [rows, 8]
        AscendC::Mul(sum, sum, d, n8);
        AscendC::Add(corr, corr, sum, n8);
        AscendC::Adds(mass, mass, exactAll_ ? 1.0f : -kExactMass, n8);
        AscendC::Muls(mass, mass, 1073741824.0f, n8);
        AscendC::Maxs(mass, mass, 0.0f, n8);
        AscendC::Mins(mass, mass, 1.0f, n8);
        AscendC::Mul(corr, corr, mass, n8);
        AscendC::Add(d, d, corr, n8);
        AscendC::Muls(corr, corr, -1.0f, n8);
        RowMulAdd(ds, x, corr, rows, w_);  // x (P) stays: the stored tiles keep it
    }

    // dKV pass: the statistics of this AIV's query rows of the step's tile, into set step % 2 once the step two
    // before is done with it (the chunk loads' MTE2_V hand-over then covers them).
    __aicore__ inline void StepStatistics(const FaBwdTask& task, const FaBwdStep& s, const FaAivRows& q,
                                          uint32_t step) {
        if (q.count == 0) return;
        const uint32_t set = step % 2;
        const uint64_t stat = StatRow(*p_, task.batch, task.seq, s.qHead, s.q0 + q.first);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIdStats + set);
        LoadStat(kStatLse, set, maxGm_, stat, q.count);
        LoadStat(kStatSum, set, sumGm_, stat, q.count);
        LoadStat(kStatD, set, dGm_, stat, q.count);
    }

    // Columns of a [rows, w] tile past the sequence's last key -> 0 (the cube wrote nothing there; P is 0 there
    // after masking).
    __aicore__ inline void ZeroTailColumns(const AscendC::LocalTensor<float>& x, uint32_t rows, uint32_t cols) {
        for (uint32_t c = (cols / 64) * 64; c < w_; c += 64) {
            const uint32_t keep = cols > c ? cols - c : 0;
            uint64_t mask[2] = {keep == 0 ? ~0ULL : (~0ULL << keep), 0};
            AscendC::Duplicate(x[c], 0.0f, mask, (uint8_t)rows, 1, (uint8_t)(w_ / 8));
        }
    }

    // One tile: P and dS of this AIV's query rows -> workspace, then tell the cube. Both chunks' loads are issued
    // first; each chunk then computes and stores on its own events.
    __aicore__ inline void ScoreStep(const FaBwdTask& task, const FaBwdStep& s, const FaAivRows& q, uint32_t step,
                                     uint8_t state) {
        AscendC::CrossCoreWaitFlag(BwdStepFlag(kBwdFlagScores, step));
        if (q.count == 0) {  // nothing to write: the set only certifies this AIV's earlier workspace reads (MTE2)
            AscendC::CrossCoreSetFlag<2, PIPE_MTE2>(BwdStepFlag(kBwdFlagProbs, step));
            return;
        }
        const uint32_t slot = step % kBwdSlots;
        const bool dkv = t_->pass == kBwdPassDkv;
        const bool stored = t_->storeTiles != 0;  // dQ pass: P and dS to the tile's stored place
        const bool keepP = dkv || stored;
        for (uint32_t c = 0; c < 2; ++c) {
            const uint32_t r0 = c * chunk_, rows = ChunkRows(q.count, c);
            if (rows == 0) continue;
            const uint64_t off = (uint64_t)(q.first + r0) * w_;
            AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIdChunk + c);
            if (p_->bwdLowScores != 0) {
                AscendC::DataCopy(Staged(scoreBuf_, c), Gm(ws_.template Scores<T>(slot) + off), rows * w_);
                AscendC::DataCopy(Staged(dpBuf_, c), Gm(ws_.template DScoresIn<T>(slot) + off), rows * w_);
            } else {
                AscendC::DataCopy(ChunkS(c), Gm(ws_.template Scores<float>(slot) + off), rows * w_);
                AscendC::DataCopy(ChunkDp(c), Gm(ws_.template DScoresIn<float>(slot) + off), rows * w_);
            }
            AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(kIdChunk + c);
        }
        const uint32_t set = dkv ? step % 2 : 0;
        const float alibiSlope = prologue_.AlibiSlope(task.batch, s.qHead);
        for (uint32_t c = 0; c < 2; ++c) {
            const uint32_t r0 = c * chunk_, rows = ChunkRows(q.count, c), n = rows * w_;
            if (rows == 0) continue;
            const AscendC::LocalTensor<T> hp = ChunkHalf(c, 0), hds = ChunkHalf(c, 1);
            AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(kIdChunk + c);
            if (dkv && c == 0) FoldSumIntoMax(set, q.count);  // StepStatistics' loads precede the chunks'
            const AscendC::LocalTensor<float> x = Widened(scoreBuf_, c, p_->bwdLowScores != 0, n);
            const AscendC::LocalTensor<float> dp = Widened(dpBuf_, c, p_->bwdLowScores != 0, n);
            const int64_t row0 = s.q0 + q.first + r0;
            const FaScoreTile tile{task.batch, s.qHead, row0, rows, s.k0, (uint32_t)s.kRows, task.band, task.maskBase,
                                   state, StatRow(*p_, task.batch, task.seq, s.qHead, row0)};
            const bool capped = p_->softcap > 0.0f;
            // With softcap, the cap's slope at each score waits in the chunk's half buffers (one fp32 [rows, w]),
            // which are free once their last store is done. Columns past the last key hold no score (the cube
            // wrote none): zeroed first, so that their slope is finite and their dS = 0 * slope stays 0.
            const AscendC::LocalTensor<float> slope = hp.template ReinterpretCast<float>();
            if (capped) {
                AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdChunk + c);
                ZeroTailColumns(x, rows, (uint32_t)s.kRows);
            }
            prologue_.Scale(x, n);
            if (capped) SoftCapSlope(slope, x, p_->softcap, n);
            prologue_.AddBias(x, tile, alibiSlope);
            RowSub(x, Stat(kStatLse, set)[r0 * 8], rows, w_);  // P = exp(x - max - ln(sum))
            prologue_.ApplyMask(x, tile);
            ZeroTailColumns(dp, rows, (uint32_t)s.kRows);
            AscendC::Exp(x, x, (int32_t)n);
            if (dropping_) {  // the forward's keep bits: dP of a dropped probability is 0, of a kept one / keep_prob
                drop_.Bits(tile);
                drop_.Apply(dp, rows);
                AscendC::Muls(dp, dp, p_->drop.keepInv, (int32_t)n);
            }
            RowSub(dp, Stat(kStatD, set)[r0 * 8], rows, w_);
            AscendC::Mul(dp, dp, x, (int32_t)n);
            if (!dkv && (exactAll_ || p_->maskMode != 0 ||
                         SomeRowInsideBlock(task.band, row0, row0 + rows, s.k0, s.k0 + s.kRows, task.seq.s2))) {
                ExactRowD(x, dp, r0, rows);
            }
            if (sinkRows_) AddSinkSums(dp, r0, rows);
            if (pseGrad_) StorePseGrad(dp, task, s, q.first + r0, rows, c);
            if (capped) {
                AscendC::Mul(dp, dp, slope, (int32_t)n);  // dS with respect to the uncapped scaled score
            } else {
                AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIdChunk + c);
            }
            if (keepP && dropping_) drop_.Apply(x, rows);  // dV = sum of the dropped P^T dO, / keep_prob at the end
            if (keepP) AscendC::Cast(hp, x, AscendC::RoundMode::CAST_RINT, n);
            AscendC::Cast(hds, dp, AscendC::RoundMode::CAST_RINT, n);
            AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdChunk + c);
            AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(kIdChunk + c);
            AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(kIdChunk + c);
            const uint64_t off = (uint64_t)(q.first + r0) * w_;
            __gm__ T* probs = stored ? ws_.template StoredProbs<T>(task, s) : ws_.template Probs<T>(slot);
            __gm__ T* dscores = stored ? ws_.template StoredDScores<T>(task, s) : ws_.template DScores<T>(slot);
            if (keepP) AscendC::DataCopy(Gm(probs + off), hp, n);
            AscendC::DataCopy(Gm(dscores + off), hds, n);
            AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIdChunk + c);
        }
        if (dkv) AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIdStats + set);
        AscendC::CrossCoreSetFlag<2, PIPE_MTE3>(BwdStepFlag(kBwdFlagProbs, step));
    }

    __aicore__ inline uint32_t ChunkRows(uint32_t rows, uint32_t c) const {
        const uint32_t first = rows < chunk_ ? rows : chunk_;
        return c == 0 ? first : rows - first;
    }
    __aicore__ inline AscendC::LocalTensor<float> ChunkS(uint32_t c) { return scoreBuf_.Get<float>()[c * chunk_ * w_]; }
    __aicore__ inline AscendC::LocalTensor<float> ChunkDp(uint32_t c) { return dpBuf_.Get<float>()[c * chunk_ * w_]; }
    // 16-bit S or dP (the high-performance mode): the bytes of a buffer's two fp32 chunks hold one fp32 work chunk,
    // which the chunks take in turn (only the vector pipe touches it), then a 16-bit staging chunk for each.
    __aicore__ inline AscendC::LocalTensor<T> Staged(AscendC::TBuf<AscendC::TPosition::VECIN>& buf, uint32_t c) {
        return buf.Get<T>()[(2 + c) * chunk_ * w_];
    }
    // Chunk c's n scores in fp32, once loaded: as loaded, or widened from 16 bits into the work chunk.
    __aicore__ inline AscendC::LocalTensor<float> Widened(AscendC::TBuf<AscendC::TPosition::VECIN>& buf, uint32_t c,
                                                           bool low, uint32_t n) {
        const AscendC::LocalTensor<float> chunk = buf.Get<float>()[(low ? 0 : c) * chunk_ * w_];
        if (low) AscendC::Cast(chunk, Staged(buf, c), AscendC::RoundMode::CAST_NONE, n);
        return chunk;
    }
    __aicore__ inline AscendC::LocalTensor<T> ChunkHalf(uint32_t c, uint32_t which) {
        return halfBuf_.Get<T>()[(2 * c + which) * chunk_ * w_];
    }
    template <typename U>
    __aicore__ inline static AscendC::GlobalTensor<U> Gm(__gm__ U* p) {
        AscendC::GlobalTensor<U> g;
        g.SetGlobalBuffer(p);
        return g;
    }

    // A task's sums from the cube (this AIV's owned rows) -> acc.
    __aicore__ inline void LoadSums(const FaAivRows& own, uint32_t task) {
        AscendC::CrossCoreWaitFlag(FlagOf(kBwdFlagSums, task));
        if (own.count == 0) return;
        AscendC::LocalTensor<float> acc = accBuf_.Get<float>();
        Handover<AscendC::HardEvent::V_MTE2>();
        for (uint32_t i = 0; i < 2; ++i) {
            const Output o = OutputOf(i);
            if (o.cols == 0) continue;
            AscendC::DataCopy(acc[o.accOffset], Gm(o.sum + (uint64_t)own.first * o.pitch), own.count * o.pitch);
        }
        Handover<AscendC::HardEvent::MTE2_V>();
    }

    // dK/dV pass over query chunks (bwd_tiling.h): acc (zero without steps in this chunk) plus the earlier chunks'
    // sums, which wait in the workspace in fp32; true where the chunk is the sequence's last and acc the whole sum,
    // else acc goes back to the workspace for the next chunk. One task per row and chunks in order: a fixed order.
    __aicore__ inline bool FoldChunks(const FaBwdTask& task, const FaAivRows& own, bool any) {
        const bool first = FaBwdTaskIterator::FirstChunk(t_), last = FaBwdTaskIterator::LastChunk(t_, task);
        if (first && last) return true;
        if (own.count == 0) return false;
        const int64_t row = task.first + own.first;
        AscendC::LocalTensor<float> acc = accBuf_.Get<float>();
        AscendC::LocalTensor<float> earlier = scoreBuf_.Get<float>();  // the dK/dV pass's S buffer, free here
        for (uint32_t i = 0; i < 2; ++i) {
            const Output o = OutputOf(i);
            if (o.cols == 0) continue;
            const AscendC::LocalTensor<float> a = acc[o.accOffset];
            if (!any) AscendC::Duplicate(a, 0.0f, (int32_t)(own.count * o.pitch));
            if (first) continue;
            const uint32_t piece = scoreElems_ / o.pitch;  // rows of earlier sums per load
            for (uint32_t r = 0; r < own.count; r += piece) {
                const uint32_t n = (own.count - r < piece ? own.count - r : piece) * o.pitch;
                Handover<AscendC::HardEvent::V_MTE2>();
                AscendC::DataCopy(earlier, Gm(ws_.ChunkSums(i, task, row + r)), n);
                Handover<AscendC::HardEvent::MTE2_V>();
                AscendC::Add(a[r * o.pitch], a[r * o.pitch], earlier, (int32_t)n);
            }
        }
        if (last) return true;
        Handover<AscendC::HardEvent::V_MTE3>();
        for (uint32_t i = 0; i < 2; ++i) {
            const Output o = OutputOf(i);
            if (o.cols != 0) AscendC::DataCopy(Gm(ws_.ChunkSums(i, task, row)), acc[o.accOffset], own.count * o.pitch);
        }
        Handover<AscendC::HardEvent::MTE3_V>();
        return false;
    }

    // Owned rows -> outputs: dQ pass dq = scale * sum; dKV pass dk = scale * sum, dv = sum (their columns of this
    // pass). A task without steps (no query row sees its rows) writes zeros.
    __aicore__ inline void WriteTask(const FaBwdTask& task, const FaAivRows& own, bool any) {
        if (own.count == 0) return;
        const int64_t row = task.first + own.first;
        AscendC::LocalTensor<float> acc = accBuf_.Get<float>();
        for (uint32_t i = 0; i < 2; ++i) {
            const Output o = OutputOf(i);
            if (o.cols == 0) continue;
            AscendC::GlobalTensor<T> dst;
            uint64_t pitch;
            if (t_->pass == kBwdPassDq) {
                dst = dqGm_[TokenOffset(*p_, kGmQuery, task.batch, task.seq, task.head, row)];
                pitch = p_->qStride.s;
            } else if (i == 0) {
                dst = dkGm_[TokenOffset(*p_, kGmKey, task.batch, task.seq, task.head, row) + o.col0];
                pitch = p_->kStride.s;
            } else {
                dst = dvGm_[TokenOffset(*p_, kGmValue, task.batch, task.seq, task.head, row) + o.col0];
                pitch = p_->vStride.s;
            }
            const float dvScale = dropping_ ? p_->drop.keepInv : 1.0f;
            WriteRows(acc[o.accOffset], dst, own.count, o.cols, o.pitch, pitch, i == 0 ? p_->scale : dvScale, any);
        }
    }

    // Output i of the pass (0: dq or dk, 1: dv; cols 0 = none): its workspace sum, place in acc and columns.
    struct Output {
        __gm__ float* sum;
        uint32_t accOffset, col0, cols, pitch;
    };
    __aicore__ inline Output OutputOf(uint32_t i) const {
        Output o{i == 0 ? ws_.SumA() : ws_.SumB(), i == 0 ? 0 : accKvOffset_, 0, 0, 0};
        if (t_->pass == kBwdPassDq) {
            o.cols = i == 0 ? p_->d : 0;
        } else {
            const uint32_t part = i == 0 ? kBwdPartDk : kBwdPartDv;
            if (t_->kvParts & part) BwdSumColumns(t_, part, o.col0, o.cols);
        }
        o.pitch = AlignUp(o.cols, 16);
        return o;
    }

    __aicore__ inline void WriteRows(const AscendC::LocalTensor<float>& acc, const AscendC::GlobalTensor<T>& dst,
                                     uint32_t rows, uint32_t cols, uint32_t pitch, uint64_t dstPitch, float scale,
                                     bool any) {
        const uint32_t n = rows * pitch;
        AscendC::LocalTensor<T> o = outBuf_.Get<T>();
        if (any) {
            if (scale != 1.0f) AscendC::Muls(acc, acc, scale, (int32_t)n);
            AscendC::Cast(o, acc, AscendC::RoundMode::CAST_RINT, n);
        } else {
            AscendC::Duplicate(o, (T)0.0f, (int32_t)n);
        }
        Handover<AscendC::HardEvent::V_MTE3>();
        AscendC::DataCopyExtParams op((uint16_t)rows, cols * (uint32_t)sizeof(T), 0,
                                      (uint32_t)((dstPitch - cols) * sizeof(T)), 0);
        AscendC::DataCopyPad(dst, o, op);
        Handover<AscendC::HardEvent::MTE3_V>();
    }

    // dQ pass with sinks. dL/dz of a head's sink z is -sum_i ps_i sum_j P_ij dP_ij over its rows, ps = exp(z - max)
    // / sum the sink's probability; sum_j P_ij dP_ij = rowsum(dS) + D (1 - ps) (the keys' P sum to 1 - ps), in which
    // the rounded output's error in D cancels. The steps add dS into a [rows, 64] fold (the O buffer, free between
    // task starts); the task's end writes c_i = ps_i (rowsum(dS) + D (1 - ps)) per row to dsinkRows in the
    // statistics' layout, and the host sums them per head (dsink = -sum c).
    __aicore__ inline AscendC::LocalTensor<float> SinkSums() { return partBuf_.Get<float>(); }

    // dQ pass with an outer pse: dL/dpse is dS (times the scale for pse_type 1, applied by the host). A [.., S1, S2]
    // pse gets the tile's dS rows in fp32 at dpseRows [B, N1, S1, S2]; a [.., 1, S2] one the column sums of each
    // chunk's rows at [B, N1, 4 * ceil(S1 / 16), S2], row (query block * 2 + AIV) * 2 + chunk (s1Block >= 16).
    // Rows no tile reaches stay as the host zeroed them; the host then sums over what the pse broadcasts.
    __aicore__ inline void StorePseGrad(const AscendC::LocalTensor<float>& ds, const FaBwdTask& task,
                                        const FaBwdStep& s, uint32_t r, uint32_t rows, uint32_t chunk) {
        const uint64_t head = (uint64_t)task.batch * p_->n1 + s.qHead, row = (uint64_t)(s.q0 + r);
        const uint32_t cols = (uint32_t)s.kRows;
        const uint32_t gap = (w_ * 4 - AlignUp(cols * 4, 32)) / 32;
        AscendC::LocalTensor<float> src = ds;
        uint64_t off;
        uint16_t count = (uint16_t)rows;
        if (p_->pseStrideS == 0) {
            AscendC::LocalTensor<float> sum = biasBuf_.Get<float>();  // the tile's pse was added already
            AscendC::DataCopy(sum, ds, w_);
            for (uint32_t i = 1; i < rows; ++i) AscendC::Add(sum, sum, ds[i * w_], (int32_t)w_);
            src = sum;
            count = 1;
            const uint64_t part = ((uint64_t)(s.q0 / t_->s1Block) * 2 + sub_) * 2 + chunk;
            off = (head * 4 * CeilDiv(p_->s1, 16) + part) * p_->s2 + s.k0;
        } else {
            off = (head * p_->s1 + row) * p_->s2 + s.k0;
        }
        Handover<AscendC::HardEvent::V_MTE3>();
        AscendC::DataCopyExtParams cp(count, cols * 4, gap, (uint32_t)((p_->s2 - cols) * 4), 0);
        AscendC::DataCopyPad(dpseGm_[off], src, cp);
        Handover<AscendC::HardEvent::MTE3_V>();
    }

    __aicore__ inline void AddSinkSums(const AscendC::LocalTensor<float>& ds, uint32_t r0, uint32_t rows) {
        const AscendC::LocalTensor<float> acc = SinkSums()[r0 * 64];
        const AscendC::BinaryRepeatParams p(1, 1, 1, 8, 8, (uint8_t)(w_ / 8));
        for (uint32_t c = 0; c < w_; c += 64) AscendC::Add(acc, acc, ds[c], (uint64_t)64, (uint8_t)rows, p);
    }

    __aicore__ inline void SinkRows(const FaBwdTask& task, const FaAivRows& own) {
        if (own.count == 0) return;
        const uint32_t rows = own.count, rows8 = AlignUp(rows, 8), statN = rows8 * 8;
        const float z = sinkGm_.GetValue(task.head);
        AscendC::LocalTensor<float> sums = rowBuf_.Get<float>();
        // set 1 of the statistics is free in the dQ pass
        AscendC::LocalTensor<float> ps = Stat(kStatLse, 1), c = Stat(kStatSum, 1), rs = Stat(kStatD, 1);
        AscendC::Duplicate(sums, 0.0f, (int32_t)rows8);
        AscendC::WholeReduceSum(sums, SinkSums(), 64, (int32_t)rows, 1, 1, 8);
        AscendC::Brcb(rs, sums, (uint8_t)(rows8 / 8), AscendC::BrcbRepeatParams(1, 8));
        AscendC::Muls(ps, Stat(kStatLse), -1.0f, (int32_t)statN);  // the sink's probability exp(z - lse)
        AscendC::Adds(ps, ps, z, (int32_t)statN);
        AscendC::Exp(ps, ps, (int32_t)statN);
        AscendC::Muls(c, ps, -1.0f, (int32_t)statN);
        AscendC::Adds(c, c, 1.0f, (int32_t)statN);
        AscendC::Mul(c, c, Stat(kStatD), (int32_t)statN);
        AscendC::Add(c, c, rs, (int32_t)statN);
        AscendC::Mul(c, c, ps, (int32_t)statN);
        Handover<AscendC::HardEvent::V_MTE3>();
        const uint64_t stat = StatRow(*p_, task.batch, task.seq, task.head, task.first + own.first);
        AscendC::DataCopy(dsinkGm_[stat * 8], c, rows * 8);
        Handover<AscendC::HardEvent::MTE3_V>();
    }

    const FlashAttentionGradTilingData* t_ = nullptr;
    const FaProblemTiling* p_ = nullptr;
    // P mass over a step's keys from which the row counts as whole there: the rest (< 2^-12) moves D by less than
    // the input dtype's rounding of dP.
    static constexpr float kExactMass = 1.0f - 1.0f / 4096.0f;
    bool sinkRows_ = false, pseGrad_ = false, dropping_ = false, exactAll_ = false;
    uint32_t core_ = 0, sub_ = 0;
    GM_ADDR seqInfo_ = nullptr;
    GM_ADDR blockMap_ = nullptr;
    FaScorePrologue<T> prologue_;
    FaDropout drop_;
    AscendC::GlobalTensor<T> dyGm_, oGm_, residualGm_, dqGm_, dkGm_, dvGm_;
    bool residual_ = false;  // the tiling's outResidual
    AscendC::GlobalTensor<float> maxGm_, sumGm_, dGm_, sinkGm_, dsinkGm_, dpseGm_;
    FaBwdWorkspace ws_;
    uint32_t w_ = 0, rowsMax_ = 0, chunk_ = 0, statElems_ = 0, scoreElems_ = 0, accKvOffset_ = 0;
    AscendC::TBuf<AscendC::TPosition::VECIN> scoreBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> dpBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> dmatBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> bitsBuf_;
    AscendC::TBuf<AscendC::TPosition::VECOUT> halfBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> maskHalfBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> statBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> partBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> accBuf_;
    AscendC::TBuf<AscendC::TPosition::VECOUT> outBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> rowBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> biasBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> pseBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> maskBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> dropBuf_;
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_BWD_VECTOR_H
