// Cube (AIC) half of the backward kernel. Per step: Q, dO, K, V tiles GM -> L1 Nz (the task's side once per task,
// the other side per step, l1Slots slots each), S = Q K^T and dP = dO V^T to the workspace (fp32; in the
// high-performance mode rounded to the input dtype by Fixpipe, S as the forward's: problem.bwdLowScores); after the
// AIVs' P and dS come back, the pass's products, summed in L0C over the task's steps: dQ pass dS K; dKV pass P^T dO
// and dS^T Q (the transposed A operand is loaded with a per-fractal transpose, LoadData2D ifTranspose). At the
// task's last step the sums leave through Fixpipe once. Order per core (lag 2): S(0), S(1), S(2), products(0),
// S(3), products(1), ... so the vector cores' P/dS of step j overlap the cube's S/dP of steps j+1 and j+2 (lag 3,
// the resident dQ pass: j+1 to j+3).
// Stored tiles (tiling storeTiles): the dQ pass's products read dS where the AIVs stored it for the dK/dV pass, and
// the dK/dV pass computes no S or dP: its steps load Q, dO and the stored P and dS (l1Slots slots each, K and V
// unneeded) and multiply them, the same lag apart, with no hand-over to the vector cores.
//
// L1 hand-overs: a step's loads wait (MTE1_MTE2) only for the LoadData reads of the step l1Slots before it, whose
// slots they reuse (released after its products, two event IDs by step parity), so the loads of step c run while
// MTE1 feeds steps c-1 ... c-3; MTE1 waits (MTE2_MTE1) for a group of loads just before it reads them.
//
// L0A (dQ pass, tiling dqChunkQ != 0; bwd_tiling.h BwdDqResident): the task's Q and dO are loaded once, at its first
// step, into FaCubeMatmul's resident region (Q then dO) and read by every step's S and dP Mmads; dS streams through
// the halves left beside them. The region is released after the task's last S/dP Mmads (M_MTE1), so the next
// task's Q and dO wait only for those, not for the products still queued behind them. Else Q and dO take the L0A
// halves per step, as every other A operand.
//
// L0C (two 64 KB halves): half 0 holds the task's sums (dQ [s1Block, dPad], or dK [s2Block, dPad] then dV
// [s2Block, dvPad]; the stored-tile dK/dV pass, which computes no S or dP, lets them run into half 1); half 1 holds S
// and dP of one step, 32 KB each. FIX_M event 0 guards the sums, 1 and 2 S and dP:
// a region is written again only after Fixpipe has read it out.
#ifndef NPU_FA_KERNEL_BWD_CUBE_H
#define NPU_FA_KERNEL_BWD_CUBE_H

#include "bwd_common.h"
#include "../common/gm_args.h"
#include "../common/step_ring.h"
#include "../tile/matmul.h"

namespace npu_fa {

template <typename T>
class FaBwdCube {
public:
    __aicore__ inline void Init(const FlashAttentionGradTilingData* t, const FaBwdGmArgs& gm, AscendC::TPipe* pipe) {
        t_ = t;
        p_ = &t->problem;
        core_ = (uint32_t)AscendC::GetBlockIdx();
        qkv_.Init(gm.in);
        dyGm_.SetGlobalBuffer((__gm__ T*)gm.dy);
        seqInfo_ = gm.in.seqInfo;
        blockMap_ = gm.in.blockMap;
        ws_.Init(gm.workspace, t, core_);
        m16_ = AlignUp(t->s1Block, 16);
        w_ = t->s2Block;
        // One L1 buffer, carved: Q [m16, dPad], dO [m16, dvPad], K [w, dPad], V [w, dvPad] l1Slots slots each, then
        // P and dS [m16, w] two slots each (step parity). The stored-tile dK/dV pass: no K and V, P and dS l1Slots
        // slots each (they load with the step's Q and dO). The dQ pass with Q and dO resident in L0A: one Q and dO
        // (their L0A load reads them once per task), no P (bwd_tiling.h BwdDqResidentL1Bytes).
        storedKv_ = t->storeTiles != 0 && t->pass == kBwdPassDkv;
        resident_ = t->pass == kBwdPassDq && t->dqChunkQ != 0;
        const uint32_t kvRows = storedKv_ ? 0 : w_;
        const uint32_t sizes[kTiles] = {m16_ * p_->dPad, m16_ * p_->dvPad, kvRows * p_->dPad, kvRows * p_->dvPad,
                                        resident_ ? 0 : m16_ * w_, m16_ * w_};
        uint32_t off = 0;
        for (int32_t i = 0; i < kTiles; ++i) {
            offs_[i] = off;
            sizes_[i] = sizes[i];
            slots_[i] = resident_ && (i == kQ || i == kDo) ? 1 : i < kSlotted || storedKv_ ? t->l1Slots : 2;
            off += slots_[i] * sizes[i];
            slot_[i] = slots_[i] - 1;
        }
        pipe->InitBuffer(l1_, off * sizeof(T));
        // The dK/dV pass's columns of each gradient; dV's sum follows dK's in the sums region (fractal rows of
        // s2Block, as Mmad leaves them).
        BwdSumColumns(t, kBwdPartDk, dkCol0_, dkCols_);
        BwdSumColumns(t, kBwdPartDv, dvCol0_, dvCols_);
        dvOffset_ = (t->kvParts & kBwdPartDk) ? AlignUp(w_, 16) * p_->dPad : 0;
        mm_.Init(pipe, 0, kL0cHalfBytes, resident_ ? m16_ * (p_->dPad + p_->dvPad) * (uint32_t)sizeof(T) : 0);
        // (Init sets FIX_M 0 and 1: the sums and S regions start free.)
        if (resident_) AscendC::SetFlag<AscendC::HardEvent::MTE1_MTE2>(kEvQuerySideRead);
        AscendC::SetFlag<AscendC::HardEvent::FIX_M>(kEvDp);
        // Tile rows/columns past a step's extent are never loaded; zero them once so that padding is finite (a
        // one-row tile runs a 16-row Mmad: m = 1 would switch the cube to GEMV mode). Only needed where some tile's
        // extent is not a multiple of 16 (varlen, or sequence lengths off the 16 grid): the fill of the whole buffer
        // would otherwise hold up the first loads by about 21 000 cycles (S = 8K, D = 128).
        if (p_->varlen != 0 || p_->s1 % 16 != 0 || p_->s2 % 16 != 0) {
            AscendC::Fill(l1_.Get<T>(), AscendC::InitConstValueParams<T>(1, (uint16_t)(off * sizeof(T) / 32), 0, (T)0.0f));
            // The tile loads overwrite the filled bytes on the same pipe (MTE2): the PipeBarrier page requires a barrier.
            AscendC::PipeBarrier<PIPE_MTE2>();
        }
    }

    __aicore__ inline void Process() {
        FaBwdTaskIterator it;
        it.Init(t_, seqInfo_, blockMap_, core_);
        FaBwdTask task;
        const uint32_t lag = t_->l1Slots - 2;
        FaStepRing<Pending, kBwdMaxLag> ring;  // steps whose S/dP are out and whose products are still to do
        ring.Init(lag);
        uint32_t step = 0;
        const bool dq = t_->pass == kBwdPassDq;
        while (it.Next(task)) {
            const int64_t steps = FaBwdTaskIterator::StepCount(task);
            bool first = true;
            for (int64_t i = NextComputed(it, task, 0, steps); i < steps; first = false) {
                const int64_t next = NextComputed(it, task, i + 1, steps);
                Pending cur;
                cur.task = task;
                cur.s = FaBwdTaskIterator::StepOf(t_, task, i);
                cur.step = step++;
                cur.first = first;
                cur.last = next == steps;  // the task's last computed step flushes its sums
                AcquireSlots(cur.step);
                if (cur.first || !dq) LoadQuerySide(cur);
                if ((cur.first || dq) && !storedKv_) LoadKeySide(cur);
                if (storedKv_) LoadStoredTiles(cur);
                LoadsDone(kEvLoads);
                for (int32_t id = 0; id < kTiles; ++id) cur.slot[id] = slot_[id];
                if (resident_ && cur.first) LoadResident(cur);
                if (!storedKv_) ScoresStep(cur);
                if (resident_ && cur.last) mm_.ReleaseResident();
                if (ring.Full()) ProductStep(ring.Oldest());
                ring.Push(cur);
                i = next;
            }
        }
        for (uint32_t i = 0; i < ring.Count(); ++i) {
            const Pending& p = ring.FromOldest(i);
            AcquireSlots(p.step + lag);  // no step p.step + lag loads: its wait still guards this step's P/dS slot
            ProductStep(p);
        }
        for (int32_t id = 0; id < 2; ++id) {
            if (released_[id]) AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(id);
        }
        if (resident_) AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(kEvQuerySideRead);
        if (storedKv_ && sumsOut_ > 0) AscendC::CrossCoreWaitFlag(FlagOf(kBwdFlagSumsRead, sumsOut_ - 1));
        AscendC::WaitFlag<AscendC::HardEvent::FIX_M>(kEvDp);
        mm_.End();
    }

private:
    static constexpr int32_t kQ = 0, kDo = 1, kK = 2, kV = 3, kP = 4, kDs = 5, kTiles = 6;  // L1 tiles
    static constexpr int32_t kSlotted = 4;  // Q, dO, K, V have l1Slots slots: later steps load while this one multiplies
    // MTE1_MTE2 IDs 0-1: released slots (step parity), 2: the resident dQ pass's Q and dO read into L0A; MTE2_MTE1
    // IDs: a step's loads, a step's P/dS loads.
    static constexpr int32_t kEvLoads = 0, kEvProbsLoads = 1, kEvQuerySideRead = 2;
    // L0C regions (byte offsets) and their FIX_M / M_FIX event IDs.
    static constexpr uint32_t kL0cSums = 0, kL0cS = kL0cHalfBytes, kL0cDp = kL0cHalfBytes + kL0cHalfBytes / 2;
    static constexpr int32_t kEvSums = 0, kEvS = 1, kEvDp = 2;

    // A step whose S/dP are out and whose products are still to do.
    struct Pending {
        FaBwdTask task;
        FaBwdStep s;
        uint32_t step;               // the core's step number: flag IDs BwdStepFlag(., step), workspace slot step % kBwdSlots
        bool first, last;            // the task's first / last computed step: starts / flushes the sums
        uint8_t slot[kTiles];        // the L1 slots of its Q, dO, K, V (and the stored P and dS; else step parity)
    };

    using Operand = typename FaCubeMatmul<T>::Operand;

    __aicore__ inline AscendC::LocalTensor<T> Tile(int32_t i, uint32_t slot = 0) {
        return l1_.Get<T>()[offs_[i] + slot * sizes_[i]];
    }

    // GM (row-major, pitch `srcPitch` elements) -> L1 tile `id` (slot `slot`) in Nz with `c0Stride` rows per
    // 16-column block. The caller has acquired the slot (AcquireSlots) and hands the loads to MTE1 (LoadsDone).
    __aicore__ inline void LoadNz(int32_t id, uint32_t slot, const AscendC::GlobalTensor<T>& src, uint32_t rows,
                                  uint32_t cols, uint64_t srcPitch, uint32_t c0Stride) {
        FaLoadNz(Tile(id, slot), src, rows, cols, srcPitch, c0Stride);
    }
    __aicore__ inline uint32_t NextSlot(int32_t id) {
        slot_[id] = (slot_[id] + 1) % slots_[id];  // the slot after its previous load's
        return slot_[id];
    }
    __aicore__ inline static void LoadsDone(int32_t ev) {
        AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(ev);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(ev);
    }

    // Step j's LoadData reads are done with its slots (after its products): MTE1_MTE2 event j % 2. Step j - 2's set
    // of that ID has been waited by then (AcquireSlots(j + lag) comes before ProductStep(j)).
    __aicore__ inline void ReleaseSlots(uint32_t j) {
        const int32_t id = (int32_t)(j % 2);
        AscendC::SetFlag<AscendC::HardEvent::MTE1_MTE2>(id);
        released_[id] = true;
    }
    // Before step c loads: its slots were step c - l1Slots's (P/dS slots: step c - lag - 2's, released earlier).
    __aicore__ inline void AcquireSlots(uint32_t c) {
        if (c < t_->l1Slots) return;
        const int32_t id = (int32_t)((c - t_->l1Slots) % 2);
        if (!released_[id]) return;
        AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(id);
        released_[id] = false;
    }

    __aicore__ inline void LoadQuerySide(const Pending& p) {
        const uint32_t rows = (uint32_t)p.s.qRows;
        const uint64_t q0 = TokenOffset(*p_, kGmQuery, p.task.batch, p.task.seq, p.s.qHead, p.s.q0);
        const uint64_t dy0 = TokenOffset(*p_, kGmOut, p.task.batch, p.task.seq, p.s.qHead, p.s.q0);
        if (resident_) AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(kEvQuerySideRead);  // one Q and dO in L1
        LoadNz(kQ, NextSlot(kQ), qkv_.q[q0], rows, p_->d, p_->qStride.s, m16_);
        LoadNz(kDo, NextSlot(kDo), dyGm_[dy0], rows, p_->dv, p_->oStride.s, m16_);
    }

    __aicore__ inline void LoadKeySide(const Pending& p) {
        const uint32_t kvHead = p.s.qHead / p_->group;
        const uint32_t rows = (uint32_t)p.s.kRows;
        const uint64_t k0 = TokenOffset(*p_, kGmKey, p.task.batch, p.task.seq, kvHead, p.s.k0);
        const uint64_t v0 = TokenOffset(*p_, kGmValue, p.task.batch, p.task.seq, kvHead, p.s.k0);
        LoadNz(kK, NextSlot(kK), qkv_.k[k0], rows, p_->d, p_->kStride.s, w_);
        LoadNz(kV, NextSlot(kV), qkv_.v[v0], rows, p_->dv, p_->vStride.s, w_);
    }

    // The stored-tile dK/dV pass: the step's P and dS as the dQ pass left them.
    __aicore__ inline void LoadStoredTiles(const Pending& p) {
        const uint32_t rows = (uint32_t)p.s.qRows;
        if (t_->kvParts & kBwdPartDv) LoadNz(kP, NextSlot(kP), Gm(ws_.template StoredProbs<T>(p.task, p.s)), rows, w_, w_, m16_);
        LoadNz(kDs, NextSlot(kDs), Gm(ws_.template StoredDScores<T>(p.task, p.s)), rows, w_, w_, m16_);
    }
    __aicore__ inline static AscendC::GlobalTensor<T> Gm(__gm__ T* ptr) {
        AscendC::GlobalTensor<T> g;
        g.SetGlobalBuffer(ptr);
        return g;
    }

    __aicore__ inline Operand Slotted(const Pending& p, int32_t id, bool transposed) {
        return Operand{Tile(id, p.slot[id]), id == kQ || id == kDo ? m16_ : w_, transposed, 0};
    }

    // The first step at or after i whose tile the block map does not mask (steps if none).
    __aicore__ inline int64_t NextComputed(const FaBwdTaskIterator& it, const FaBwdTask& task, int64_t i,
                                           int64_t steps) const {
        while (i < steps && it.TileState(task, FaBwdTaskIterator::StepOf(t_, task, i)) == kTileMasked) ++i;
        return i;
    }

    // The task's Q and dO -> L0A's resident region, once the previous task's S/dP Mmads are done with it.
    __aicore__ inline void LoadResident(const Pending& p) {
        mm_.AcquireResident();
        const uint32_t rows = (uint32_t)p.s.qRows;
        qRes_ = mm_.LoadResident(Slotted(p, kQ, false), rows, p_->d, t_->dqChunkQ, 0);
        doRes_ = mm_.LoadResident(Slotted(p, kDo, false), rows, p_->dv, t_->dqChunkDo, m16_ * p_->dPad);
        AscendC::SetFlag<AscendC::HardEvent::MTE1_MTE2>(kEvQuerySideRead);
    }

    // S = Q K^T and dP = dO V^T -> workspace slot step % kBwdSlots (fp32, or rounded to T by Fixpipe in the
    // high-performance mode), then tell the vector cores.
    __aicore__ inline void ScoresStep(const Pending& p) {
        if (p_->bwdLowScores != 0) {
            ScoresTo<T>(p);
        } else {
            ScoresTo<float>(p);
        }
        AscendC::CrossCoreSetFlag<2, PIPE_FIX>(BwdStepFlag(kBwdFlagScores, p.step));
    }
    template <typename O>
    __aicore__ inline void ScoresTo(const Pending& p) {
        const uint32_t qRows = (uint32_t)p.s.qRows, kRows = (uint32_t)p.s.kRows, ws = p.step % kBwdSlots;
        const Operand k = Slotted(p, kK, false), v = Slotted(p, kV, false);
        __gm__ O* s = ws_.template Scores<O>(ws);
        __gm__ O* dp = ws_.template DScoresIn<O>(ws);
        if (resident_) {
            ScoreTile(qRes_, k, p_->d, kL0cS, kEvS, qRows, kRows, s, qRes_.kChunk, BwdScoreNChunk(m16_, w_, qRes_.kChunk));
            ScoreTile(doRes_, v, p_->dv, kL0cDp, kEvDp, qRows, kRows, dp, doRes_.kChunk,
                      BwdScoreNChunk(m16_, w_, doRes_.kChunk));
            return;
        }
        uint32_t kChunk, nChunk;
        if (p_->bwdLowScores != 0) {
            BwdLowScoreChunks(*p_, m16_, w_, kChunk, nChunk);
        } else {
            FaMatmulChunks(m16_, p_->d, kRows, kChunk, nChunk);
        }
        ScoreTile(Slotted(p, kQ, false), k, p_->d, kL0cS, kEvS, qRows, kRows, s, kChunk, nChunk);
        FaMatmulChunks(m16_, p_->dv, kRows, kChunk, nChunk);
        ScoreTile(Slotted(p, kDo, false), v, p_->dv, kL0cDp, kEvDp, qRows, kRows, dp, kChunk, nChunk);
    }

    // A: Q or dO, streamed or resident; the chunks: the high-performance mode's Q*K^T chunks are the forward's, so
    // that a 16-bit S rounds the same sums.
    template <typename A, typename O>
    __aicore__ inline void ScoreTile(const A& a, const Operand& b, uint32_t k, uint32_t region, int32_t ev,
                                     uint32_t qRows, uint32_t kRows, __gm__ O* dst, uint32_t kChunk, uint32_t nChunk) {
        const AscendC::LocalTensor<float> c = mm_.L0c(region);
        AscendC::WaitFlag<AscendC::HardEvent::FIX_M>(ev);
        mm_.Accumulate(a, b, qRows, k, 0, kRows, kChunk, nChunk, c, true);
        mm_.Store(c, qRows, kRows, dst, w_, ev);
        AscendC::SetFlag<AscendC::HardEvent::FIX_M>(ev);
    }

    // Once the vector cores' P and dS are in (the stored-tile dK/dV pass loaded them with the step): the pass's
    // products into the L0C sums; at the task's last step the sums -> workspace, and the vector cores are told.
    __aicore__ inline void ProductStep(const Pending& p) {
        const uint32_t qRows = (uint32_t)p.s.qRows, kRows = (uint32_t)p.s.kRows, ws = p.step % kBwdSlots;
        const bool dv = t_->pass == kBwdPassDkv && (t_->kvParts & kBwdPartDv);
        uint32_t pSlot = p.slot[kP], dsSlot = p.slot[kDs];
        const bool dq = t_->pass == kBwdPassDq;
        if (!storedKv_) {
            pSlot = dsSlot = p.step % 2;
            AscendC::CrossCoreWaitFlag(BwdStepFlag(kBwdFlagProbs, p.step));
            const AscendC::GlobalTensor<T> ds =
                Gm(t_->storeTiles != 0 ? ws_.template StoredDScores<T>(p.task, p.s) : ws_.template DScores<T>(ws));
            // The dQ pass's dS is A as it is ([rows, keys]): in bands of 16 rows it reaches L0A in one LoadData.
            if (dq) {
                FaLoadZz(Tile(kDs, dsSlot), ds, qRows, w_, w_, w_);
            } else {
                LoadNz(kDs, dsSlot, ds, qRows, w_, w_, m16_);
            }
            if (dv) LoadNz(kP, pSlot, Gm(ws_.template Probs<T>(ws)), qRows, w_, w_, m16_);
            LoadsDone(kEvProbsLoads);
        }
        const Operand dsTile{Tile(kDs, dsSlot), m16_, false, w_}, dsT{Tile(kDs, dsSlot), m16_, true, 0};
        const AscendC::LocalTensor<float> sums = mm_.L0c(kL0cSums);
        if (p.first) AscendC::WaitFlag<AscendC::HardEvent::FIX_M>(kEvSums);  // the previous task's sums are out
        // The stored-tile dK/dV pass runs ahead of its vector cores: the previous task's sums must be read before
        // this one's overwrite them.
        if (p.last && storedKv_ && sumsOut_ > 0) AscendC::CrossCoreWaitFlag(FlagOf(kBwdFlagSumsRead, sumsOut_ - 1));
        if (dq) {
            Mma(dsTile, Slotted(p, kK, true), qRows, kRows, 0, p_->d, sums, p.first);
            if (p.last) mm_.Store(sums, qRows, p_->d, ws_.SumA(), p_->dPad, kEvSums);
        } else {
            if (dv) {
                const AscendC::LocalTensor<float> sumV = sums[dvOffset_];
                Mma(Operand{Tile(kP, pSlot), m16_, true, 0}, Slotted(p, kDo, true), kRows, qRows, dvCol0_, dvCols_, sumV,
                    p.first);
                if (p.last) mm_.Store(sumV, kRows, dvCols_, ws_.SumB(), AlignUp(dvCols_, 16), kEvSums);
            }
            if (t_->kvParts & kBwdPartDk) {
                Mma(dsT, Slotted(p, kQ, true), kRows, qRows, dkCol0_, dkCols_, sums, p.first);
                if (p.last) mm_.Store(sums, kRows, dkCols_, ws_.SumA(), AlignUp(dkCols_, 16), kEvSums);
            }
        }
        ReleaseSlots(p.step);
        if (p.last) {
            AscendC::SetFlag<AscendC::HardEvent::FIX_M>(kEvSums);
            AscendC::CrossCoreSetFlag<2, PIPE_FIX>(FlagOf(kBwdFlagSums, sumsOut_++));
        }
    }

    // C[m, n] (+)= A[m, k] * B[k, n0 : n0 + n] into the L0C tile `c`, in the largest chunks that fit L0.
    __aicore__ inline void Mma(const Operand& a, const Operand& b, uint32_t m, uint32_t k, uint32_t n0, uint32_t n,
                               const AscendC::LocalTensor<float>& c, bool init) {
        uint32_t kChunk, nChunk;
        FaMatmulChunks(a.transposed ? w_ : m16_, k, n, kChunk, nChunk, kL0cHalfBytes, mm_.AHalfBytes());
        mm_.Accumulate(a, b, m, k, n0, n, kChunk, nChunk, c, init);
    }

    const FlashAttentionGradTilingData* t_ = nullptr;
    const FaProblemTiling* p_ = nullptr;
    uint32_t core_ = 0;
    FaQkvTensors<T> qkv_;
    AscendC::GlobalTensor<T> dyGm_;
    GM_ADDR seqInfo_ = nullptr;
    GM_ADDR blockMap_ = nullptr;
    FaBwdWorkspace ws_;
    uint32_t m16_ = 0, w_ = 0;
    uint32_t offs_[kTiles] = {0, 0, 0, 0, 0, 0};
    uint32_t sizes_[kTiles] = {0, 0, 0, 0, 0, 0};
    uint32_t slots_[kTiles] = {0, 0, 0, 0, 0, 0};  // slots of each tile
    uint32_t slot_[kTiles] = {0, 0, 0, 0, 0, 0};   // slot of each tile's latest load (Init: the last, the first goes to 0)
    bool storedKv_ = false;                        // the stored-tile dK/dV pass
    bool resident_ = false;                        // the dQ pass with its task's Q and dO resident in L0A
    typename FaCubeMatmul<T>::ResidentA qRes_{0, 0, 0}, doRes_{0, 0, 0};
    bool released_[2] = {false, false};       // MTE1_MTE2 ID set by ReleaseSlots and not yet waited
    uint32_t dkCol0_ = 0, dkCols_ = 0, dvCol0_ = 0, dvCols_ = 0, dvOffset_ = 0;
    uint32_t sumsOut_ = 0;                     // tasks whose sums have left: the flag ID of the next
    AscendC::TBuf<AscendC::TPosition::A1> l1_;
    FaCubeMatmul<T> mm_;
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_BWD_CUBE_H
