// Cube (AIC) half of the forward kernel: Q stays in L1 for a task; a step covers s2Block keys, streamed through
// L1 in sub-blocks of kvSub keys (K, V and P ping-pong). Both matmuls go L1 -> L0A/L0B -> L0C and leave through
// Fixpipe into the GM workspace: S once per sub-block (fp32, or rounded to the input dtype in the high-performance
// mode: half the bytes out of Fixpipe and through L2), P*V (fp32) accumulated in L0C over the step's sub-blocks
// and written once per step (in an S slot, or in its own tile when it is larger than half of L0C: the tiling's
// L0C plan). Step order per core: S(0), S(1), S(2), PV(0), S(3), PV(1), ... (kFwdStepLag = 2) so the vector cores'
// softmax of step j overlaps the cube's work on steps j+1 and j+2; with P*V in its own tile, S(j+2) and PV(j)
// interleave by load group. With the tiling's lazy rescale P*V stays in its own tile across a task's steps and
// leaves only at the task's end and where the vector cores' flush words ask for it (a row moved its reference max).
#ifndef NPU_FA_KERNEL_FWD_CUBE_H
#define NPU_FA_KERNEL_FWD_CUBE_H

#include "fwd_common.h"
#include "../common/gm_args.h"
#include "../common/step_ring.h"
#include "../tile/matmul.h"

namespace npu_fa {

template <typename T>
class FaFwdCube {
public:
    __aicore__ inline void Init(const FlashAttentionTilingData* t, const FaFwdGmArgs& gm, AscendC::TPipe* pipe) {
        t_ = t;
        p_ = &t->problem;
        core_ = (uint32_t)AscendC::GetBlockIdx();
        qkv_.Init(gm.in);
        seqInfo_ = gm.in.seqInfo;
        blockMap_ = gm.in.blockMap;
        ws_.Init(gm.workspace, t, core_);
        m16_ = AlignUp(t->s1Block, 16);
        qElems_ = m16_ * p_->dPad;
        sub_ = t->kvSub;
        group_ = t->kvGroup;
        kElems_ = sub_ * p_->dPad;
        vElems_ = sub_ * p_->dvPad;
        pElems_ = m16_ * sub_;
        pipe->InitBuffer(qL1_, qElems_ * sizeof(T));
        pipe->InitBuffer(kL1_, 2 * group_ * kElems_ * sizeof(T));
        pipe->InitBuffer(vL1_, 2 * group_ * vElems_ * sizeof(T));
        pipe->InitBuffer(pL1_, 2 * group_ * pElems_ * sizeof(T));
        mm_.Init(pipe, t->l0cSlot0, t->l0cSlotBytes);
        ownOut_ = t->l0cOut != kFaL0cRing;
        lazy_ = t->lazyRescale != 0;  // the tiling sets it only with P*V in its own tile
        if (lazy_) flushGm_.SetGlobalBuffer(ws_.template At<float>(t->wsOffsetFlush), kFwdFlushBytes / sizeof(float));
        // Rows past a task's end up to its next 16-row boundary are never loaded; zero them once so a one-row task can
        // run a 16-row Mmad (m = 1 would switch the cube to GEMV mode, which reads L1 as a plain row). Only needed when
        // some task's row count is not a multiple of 16 (s1Block is one): the fill of Q and P (160 KB at D = 128)
        // would otherwise hold up the first loads by about 9000 cycles.
        if (p_->varlen != 0 || p_->s1 % 16 != 0) {
            AscendC::Fill(qL1_.Get<T>(), AscendC::InitConstValueParams<T>(1, (uint16_t)(qElems_ * sizeof(T) / 32), 0, (T)0.0f));
            AscendC::Fill(pL1_.Get<T>(), AscendC::InitConstValueParams<T>(1, (uint16_t)(2 * group_ * pElems_ * sizeof(T) / 32), 0, (T)0.0f));
            // The Q/P loads overwrite the filled bytes on the same pipe (MTE2): the PipeBarrier page requires a barrier.
            AscendC::PipeBarrier<PIPE_MTE2>();
        }
        // K/V rows past `cols` up to the next 16-row boundary are never written and hold whatever an earlier kernel
        // left in L1 (NaN possibly). They need no fill: LoadData moves them along as padding of the last fractal, but
        // Q*K^T gets the exact n and P*V the exact k (FaCubeMatmul::MmaColumns), and the Mmad page (SIMD-API/基础API/
        // 矩阵计算（ISASI）/Mmad计算/Mmad.md, M=30 K=70 N=40 example) says such padding takes no part in the
        // computation, so they are never an Mmad input (tests/test_fa_leftovers.py runs with NaN leftovers).
        // Every buffer starts free: its "free" event is set once here and waited once at the end.
        for (int32_t id = 0; id < kFreeIds; ++id) AscendC::SetFlag<AscendC::HardEvent::MTE1_MTE2>(id);
        if (ownOut_) AscendC::SetFlag<AscendC::HardEvent::FIX_M>(kIdOut);
    }

    __aicore__ inline void Process() {
        FaFwdTaskIterator it;
        it.Init(t_, seqInfo_, blockMap_, core_);
        FaFwdTask task;
        FaStepRing<Pending, kFwdStepLag> ring;  // steps whose P*V is still to do
        ring.Init(kFwdStepLag);
        uint32_t step = 0;
        while (it.Next(task)) {
            int64_t j = it.NextStep(task, task.stepFirst);
            if (j >= task.stepLast) continue;  // no visible key: the vector cores write zeros
            LoadQ(task);
            bool first = true;
            while (j < task.stepLast) {  // the s2 blocks the band and the block map let through
                const int64_t following = it.NextStep(task, j + 1);
                const int64_t c0 = j * t_->s2Block;
                const uint32_t cols = StepCols(task, c0, t_->s2Block);
                const Pending cur{task, c0, cols, step, first, following >= task.stepLast};
                Step(cur, ring.Full() ? &ring.Oldest() : nullptr);
                ring.Push(cur);
                ++step;
                first = false;
                j = following;
            }
        }
        for (uint32_t i = 0; i < ring.Count(); ++i) ValuesFrom(ring.FromOldest(i), 0);
        for (int32_t id = 0; id < kFreeIds; ++id) AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(id);
        if (ownOut_) AscendC::WaitFlag<AscendC::HardEvent::FIX_M>(kIdOut);
        mm_.End();
        if (lazy_) {  // the launch facts report it (last_launch_info()["lazy_flushes"])
            AscendC::GlobalTensor<uint32_t> count;
            count.SetGlobalBuffer(ws_.template At<uint32_t>(t_->wsOffsetFlush + kFwdFlushCount), 1);
            count.SetValue(0, flushes_);
            AscendC::DataCacheCleanAndInvalid<uint32_t, AscendC::CacheLine::SINGLE_CACHE_LINE,
                                              AscendC::DcciDst::CACHELINE_OUT>(count);
        }
    }

private:
    // L1 buffer event IDs, 0-5 only (6 and 7 of MTE2_MTE1 / MTE1_MTE2 are reserved). MTE2_MTE1 "ready": Q, K x2,
    // V x2, and P (set and waited back to back). MTE1_MTE2 "free": Q, K x2, and V x2, where V's also frees the P
    // slot of the same load group (both are released by its P*V, and P's load follows V's on MTE2). K and V/P slots
    // alternate by load group of kvGroup sub-blocks (kLoads_, vLoads_).
    static constexpr int32_t kIdQ = 0, kIdK = 1, kIdV = 3, kIdPReady = 5, kFreeIds = 5;
    // FIX_M / M_FIX ID of P*V's own L0C tile (l0cOut); 0 and 1 are the S slots' (FaCubeMatmul::Run).
    static constexpr int32_t kIdOut = 2;
    static_assert(kIdK + 2 <= kIdV && kIdV + 2 <= kIdPReady && kIdPReady <= 5 && kFreeIds == kIdV + 2,
                  "L1 event IDs overlap or reach the reserved IDs 6-7");

    using Operand = typename FaCubeMatmul<T>::Operand;

    struct Pending {
        FaFwdTask task;
        int64_t c0;
        uint32_t cols;
        uint32_t step;  // the core's step number: workspace slot FwdSlot(step), flag IDs FlagOf(., step)
        bool first, last;  // of its task
    };

    // `rows` GM rows -> consecutive L1 Nz tiles of `tileRows` rows each (what loading them tile by tile gives), in one
    // DMA when the ND-matrix strides fit their 16-bit fields.
    __aicore__ inline void LoadNzTiles(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src,
                                       uint32_t rows, uint32_t cols, uint64_t srcPitch, uint32_t tileRows) {
        const uint32_t full = rows / tileRows, rest = rows % tileRows;
        const uint64_t tileElems = (uint64_t)tileRows * AlignUp(cols, 16), srcStride = (uint64_t)tileRows * srcPitch;
        uint32_t done = 0;
        if (full > 1 && srcStride <= 65535 && tileElems <= 16384) {  // the Nd2NzParams field ranges
            AscendC::Nd2NzParams p((uint16_t)full, (uint16_t)tileRows, (uint16_t)cols, (uint16_t)srcStride,
                                   (uint16_t)srcPitch, (uint16_t)tileRows, 1, (uint16_t)tileElems);
            AscendC::DataCopy(dst, src, p);
            done = full;
        }
        for (uint32_t i = done; i < full + (rest != 0 ? 1 : 0); ++i) {
            FaLoadNz(dst[i * tileElems], src[i * srcStride], i < full ? tileRows : rest, cols, srcPitch, tileRows);
        }
    }

    __aicore__ inline void LoadQ(const FaFwdTask& task) {
        AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(kIdQ);
        const uint64_t q0 = TokenOffset(*p_, kGmQuery, task.batch, task.seq, task.head, task.row0);
        FaLoadZz(qL1_.Get<T>(), qkv_.q[q0], (uint32_t)task.rows, p_->d, p_->qStride.s, p_->dPad);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(kIdQ);
    }

    // One step: S = Q * K^T of step `cur`, and O_part = P * V of the oldest pending step (`old`, if any). With P*V
    // in its own L0C tile the two go load group by load group, so M has P*V work while Fixpipe drains an S tile;
    // with P*V in an S slot its accumulation must not be split by S tiles (FaCubeMatmul::Run), so it follows.
    __aicore__ inline void Step(const Pending& cur, const Pending* old) {
        if (cur.first) AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(kIdQ);
        const uint32_t keys = group_ * sub_;
        const uint32_t nS = CeilDiv(cur.cols, keys), nV = old != nullptr ? CeilDiv(old->cols, keys) : 0;
        const uint32_t together = ownOut_ ? FaMin(nS, nV) : 0;
        for (uint32_t i = 0; i < together; ++i) {
            ScoresGroup(cur, i * keys);
            ValuesGroup(*old, i * keys);
        }
        for (uint32_t i = together; i < nS; ++i) ScoresGroup(cur, i * keys);
        if (cur.last) AscendC::SetFlag<AscendC::HardEvent::MTE1_MTE2>(kIdQ);
        AscendC::CrossCoreSetFlag<2, PIPE_FIX>(FlagOf(kFwdFlagScores, cur.step));
        if (together < nV) ValuesFrom(*old, together * keys);
    }

    // The P*V load groups of a step from key g0 on.
    __aicore__ inline void ValuesFrom(const Pending& s, uint32_t g0) {
        for (; g0 < s.cols; g0 += group_ * sub_) ValuesGroup(s, g0);
    }

    // S of the sub-block group at key g0 of a step -> workspace (one K load).
    __aicore__ inline void ScoresGroup(const Pending& s, uint32_t g0) {
        const uint32_t slot = kLoads_++ & 1;
        const AscendC::LocalTensor<T> kTiles = kL1_.Get<T>()[slot * group_ * kElems_];
        const uint32_t keys = FaMin(s.cols - g0, group_ * sub_);
        AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(kIdK + slot);
        const uint64_t k0 = TokenOffset(*p_, kGmKey, s.task.batch, s.task.seq, s.task.head / p_->group, s.c0 + g0);
        LoadNzTiles(kTiles, qkv_.k[k0], keys, p_->d, p_->kStride.s, sub_);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(kIdK + slot);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(kIdK + slot);
        for (uint32_t s0 = 0; s0 < keys; s0 += sub_) {
            Operand a{qL1_.Get<T>(), m16_, false, p_->dPad};
            Operand b{kTiles[(s0 / sub_) * kElems_], sub_, false, 0};
            const uint32_t n = FaMin(keys - s0, sub_);
            if (t_->lowScores != 0) {
                mm_.Run(a, b, (uint32_t)s.task.rows, p_->d, n, t_->kChunkQK, t_->nChunkQK,
                        ws_.template Scores<T>(FwdSlot(s.step)) + g0 + s0, t_->s2Block);
            } else {
                mm_.Run(a, b, (uint32_t)s.task.rows, p_->d, n, t_->kChunkQK, t_->nChunkQK,
                        ws_.template Scores<float>(FwdSlot(s.step)) + g0 + s0, t_->s2Block);
            }
        }
        AscendC::SetFlag<AscendC::HardEvent::MTE1_MTE2>(kIdK + slot);
    }

    // O_part of the sub-block group at key g0 of a step whose probabilities the vector cores write: the groups
    // accumulate in one L0C tile, written once after the last; the vector cores are told then. The first group's
    // V loads before the wait for P.
    __aicore__ inline void ValuesGroup(const Pending& s, uint32_t g0) {
        const uint32_t rows = (uint32_t)s.task.rows;
        const uint32_t slot = vLoads_++ & 1;
        const uint32_t keys = FaMin(s.cols - g0, group_ * sub_);
        AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(kIdV + slot);
        const uint64_t v0 = TokenOffset(*p_, kGmValue, s.task.batch, s.task.seq, s.task.head / p_->group, s.c0 + g0);
        FaLoadZz(vL1_.Get<T>()[slot * group_ * vElems_], qkv_.v[v0], keys, p_->dv, p_->vStride.s, p_->dvPad);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(kIdV + slot);
        if (g0 == 0) AscendC::CrossCoreWaitFlag(FlagOf(kFwdFlagProbs, s.step));
        AscendC::GlobalTensor<T> probs;
        probs.SetGlobalBuffer(ws_.template Probs<T>(FwdSlot(s.step)));
        const AscendC::LocalTensor<T> pTiles = pL1_.Get<T>()[slot * group_ * pElems_];
        for (uint32_t s0 = 0; s0 < keys; s0 += sub_) {
            FaLoadZz(pTiles[(s0 / sub_) * pElems_], probs[g0 + s0], rows, FaMin(keys - s0, sub_), t_->s2Block, sub_);
        }
        // Lazy rescale: the flush words are read while P loads (the read misses the DCache: an L2 round trip).
        const bool restart = lazy_ && g0 == 0 && !s.first &&
                             FlushRequested(flushGm_, s.step, t_->lazyThreshold, AivRowsOf(s.task.rows, 1).count != 0);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(kIdPReady);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(kIdPReady);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(kIdV + slot);
        for (uint32_t s0 = 0; s0 < keys; s0 += sub_) {
            Operand a{pTiles[(s0 / sub_) * pElems_], m16_, false, sub_};
            Operand b{vL1_.Get<T>()[(slot * group_ + s0 / sub_) * vElems_], sub_, true, p_->dvPad};  // V [s2, dv] holds B
            const bool stepStart = g0 + s0 == 0, stepEnd = g0 + s0 + sub_ >= s.cols;
            // Without lazy rescale O starts and leaves with each step; with it, with the task and at flushes.
            const bool init = stepStart && (!lazy_ || s.first || restart), flush = stepEnd && (!lazy_ || s.last);
            const uint32_t k = FaMin(keys - s0, sub_);
            if (!ownOut_) {
                mm_.Run(a, b, rows, k, p_->dv, t_->kChunkPV, t_->nChunkPV, ws_.Output(FwdSlot(s.step)), p_->dvPad,
                        init, flush);
                continue;
            }
            const AscendC::LocalTensor<float> c = mm_.L0c(t_->l0cOut);
            if (stepStart && restart) {  // O so far (against the references before this step) leaves first
                mm_.Store(c, rows, p_->dv, ws_.Output(FwdSlot(s.step)), p_->dvPad, kIdOut);
                AscendC::SetFlag<AscendC::HardEvent::FIX_M>(kIdOut);
                ++flushes_;
            }
            if (init) AscendC::WaitFlag<AscendC::HardEvent::FIX_M>(kIdOut);
            mm_.Accumulate(a, b, rows, k, 0, p_->dv, t_->kChunkPV, t_->nChunkPV, c, init);
            if (!flush) continue;
            mm_.Store(c, rows, p_->dv, ws_.Output(FwdSlot(s.step) + (lazy_ ? kFwdStepSlots : 0)), p_->dvPad, kIdOut);
            AscendC::SetFlag<AscendC::HardEvent::FIX_M>(kIdOut);
        }
        AscendC::SetFlag<AscendC::HardEvent::MTE1_MTE2>(kIdV + slot);
        if (g0 + group_ * sub_ >= s.cols) AscendC::CrossCoreSetFlag<2, PIPE_FIX>(FlagOf(kFwdFlagOutput, s.step));
    }

    const FlashAttentionTilingData* t_ = nullptr;
    const FaProblemTiling* p_ = nullptr;
    uint32_t core_ = 0;
    FaQkvTensors<T> qkv_;
    GM_ADDR seqInfo_ = nullptr;
    GM_ADDR blockMap_ = nullptr;
    FaFwdWorkspace ws_;
    uint32_t m16_ = 0, sub_ = 0, group_ = 1, qElems_ = 0, kElems_ = 0, vElems_ = 0, pElems_ = 0;
    uint32_t kLoads_ = 0, vLoads_ = 0;  // K / V+P group loads so far: their parity picks the L1 slot
    bool ownOut_ = false;               // P*V accumulates in its own L0C tile (l0cOut), not in an S slot
    bool lazy_ = false;                 // the tiling's lazyRescale
    uint32_t flushes_ = 0;              // lazy rescale: O flushes before a step's P*V so far
    AscendC::GlobalTensor<float> flushGm_;
    AscendC::TBuf<AscendC::TPosition::A1> qL1_;
    AscendC::TBuf<AscendC::TPosition::B1> kL1_;
    AscendC::TBuf<AscendC::TPosition::B1> vL1_;
    AscendC::TBuf<AscendC::TPosition::A1> pL1_;
    FaCubeMatmul<T> mm_;
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_FWD_CUBE_H
