// Cube (AIC) half of the inference kernel: a task's packed query rows stay in L1; each step takes s2Block keys of
// the task's split, K and V loaded through the block table run by run (FaKvCache) into L1 Nz tiles (ping-pong),
// S = Q * K^T and, kInferStepSlots - 1 steps later, O_part = P * V, both through L0 into the GM workspace as fp32,
// so the vector cores' softmax of step j overlaps the cube's scores of steps j + 1 and j + 2. Over an int8 cache
// (kernel/infer_int8.h) both products run int8 x int8 -> int32 on the int8 pages as they are, against the vector
// cores' int8 split query and probability rows.
#ifndef NPU_FA_KERNEL_INFER_CUBE_H
#define NPU_FA_KERNEL_INFER_CUBE_H

#include "infer_common.h"
#include "../common/step_ring.h"
#include "../tile/matmul.h"

namespace npu_fa {

constexpr uint32_t kInferStepLag = kInferStepSlots - 1;
static_assert(kFlagRing >= kInferStepSlots, "each in-flight step needs its own flag ID");

template <typename T>
class FaInferCube {
public:
    __aicore__ inline void Init(const FaInferTilingData* t, const FaInferGmArgs& gm, AscendC::TPipe* pipe) {
        t_ = t;
        p_ = &t->problem;
        core_ = (uint32_t)AscendC::GetBlockIdx();
        q_.SetGlobalBuffer((__gm__ T*)gm.query);
        k_.SetGlobalBuffer((__gm__ T*)gm.key);
        v_.SetGlobalBuffer((__gm__ T*)gm.value);
        k8_.SetGlobalBuffer((__gm__ int8_t*)gm.key);
        v8_.SetGlobalBuffer((__gm__ int8_t*)gm.value);
        kv_.Init(t, gm.blockTable);
        seqInfo_ = gm.seqInfo;
        ws_.Init(gm.workspace, t, core_);
        w_ = t->s2Block;
        int8_ = t->kvQuant != 0;
        parts_ = int8_ ? t->quantParts : 1;
        probParts_ = int8_ ? t->probParts : 1;
        m16_ = AlignUp(parts_ * t->mBlock, 16);
        qElems_ = m16_ * p_->dPad;
        kElems_ = w_ * p_->dPad;
        vElems_ = w_ * p_->dvPad;
        pElems_ = m16_ * w_;
        const uint32_t bytes = int8_ ? 1 : sizeof(T);  // of an element in L1
        pipe->InitBuffer(qL1_, qElems_ * bytes);
        pipe->InitBuffer(kL1_, 2 * kElems_ * bytes);
        pipe->InitBuffer(vL1_, 2 * vElems_ * bytes);
        pipe->InitBuffer(pL1_, 2 * pElems_ * bytes);
        if (int8_) {
            mm8_.Init(pipe);
        } else {
            mm_.Init(pipe);
        }
        // Rows past a task's end up to the next 16-row boundary are never loaded: zero them once so that a task of
        // fewer than 16 rows (decode: the group's heads) runs a 16-row Mmad (see FaFwdCube::Init).
        const T zero = (T)0.0f;  // zero bytes, whatever the tiles' element type
        AscendC::Fill(qL1_.Get<T>(), AscendC::InitConstValueParams<T>(1, (uint16_t)(qElems_ * bytes / 32), 0, zero));
        AscendC::Fill(pL1_.Get<T>(), AscendC::InitConstValueParams<T>(1, (uint16_t)(2 * pElems_ * bytes / 32), 0, zero));
        AscendC::PipeBarrier<PIPE_MTE2>();
        for (int32_t id = 0; id < kFreeIds; ++id) AscendC::SetFlag<AscendC::HardEvent::MTE1_MTE2>(id);
    }

    __aicore__ inline void Process() {
        FaInferTaskIterator it;
        it.Init(t_, seqInfo_, t_->coreTaskStart[core_], t_->coreTaskStart[core_ + 1]);
        FaInferTask task;
        FaStepRing<Pending, kInferStepLag> ring;  // steps whose P*V is still to do
        ring.Init(kInferStepLag);
        uint32_t step = 0;
        while (it.Next(task, t_->splits)) {
            if (task.keyFirst >= task.keyLast) continue;  // no key: the vector cores write the empty rows
            if (!int8_) LoadQ(task, step);
            for (int64_t c0 = task.keyFirst; c0 < task.keyLast; c0 += w_) {
                const Pending cur{task, c0, (uint32_t)FaMin(task.keyLast - c0, (int64_t)w_), step};
                const bool first = c0 == task.keyFirst, last = c0 + w_ >= task.keyLast;
                Scores(cur, first);
                if (last) AscendC::SetFlag<AscendC::HardEvent::MTE1_MTE2>(kIdQ);
                AscendC::CrossCoreSetFlag<2, PIPE_FIX>(FlagOf(kFwdFlagScores, step));
                if (ring.Full()) Values(ring.Oldest());
                ring.Push(cur);
                ++step;
            }
        }
        for (uint32_t i = 0; i < ring.Count(); ++i) Values(ring.FromOldest(i));
        for (int32_t id = 0; id < kFreeIds; ++id) AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(id);
        if (int8_) {
            mm8_.End();
        } else {
            mm_.End();
        }
    }

private:
    // L1 event IDs (0-5; 6 and 7 are reserved): MTE2_MTE1 "ready" and MTE1_MTE2 "free" of Q, K x2, V x2 (V's also
    // frees the P slot of the same parity), and P's ready (set and waited back to back).
    static constexpr int32_t kIdQ = 0, kIdK = 1, kIdV = 3, kIdPReady = 5, kFreeIds = 5;

    using Operand = typename FaCubeMatmul<T>::Operand;
    using Operand8 = typename FaCubeMatmul<int8_t>::Operand;

    struct Pending {
        FaInferTask task;
        int64_t c0;
        uint32_t cols;
        uint32_t step;  // the core's step number: workspace slot InferSlot(step), flag IDs FlagOf(., step)
    };

    // The task's packed rows -> L1 Nz (m16 rows per 16-column block), one DMA per query token (MHA: one for all);
    // over an int8 cache, the vector cores' int8 split of them (quantParts x rows rows) in one DMA.
    __aicore__ inline void LoadQ(const FaInferTask& task, uint32_t step) {
        AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(kIdQ);
        if (int8_) {
            AscendC::GlobalTensor<int8_t> rows;
            rows.SetGlobalBuffer(ws_.QuantQuery(step));
            FaLoadNz(qL1_.Get<int8_t>(), rows, parts_ * task.rows, p_->d, p_->d, m16_);
            AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(kIdQ);
            return;
        }
        FaInferRuns runs(task.row0, task.rows, p_->group, task.kvHead, true);
        FaInferRun run;
        bool more = false;
        while (runs.Next(run)) {
            if (more) AscendC::PipeBarrier<PIPE_MTE2>();  // the runs' 32 B pieces interleave in the Nz tile
            const uint64_t off = InferTokenOffset(p_->qStride, task.batch, task.seq, run.token, run.head);
            FaLoadNz(qL1_.Get<T>()[run.tileRow * 16], q_[off], run.count, p_->d,
                     run.Stride(p_->qStride.s, p_->qStride.n), m16_);
            more = true;
        }
        AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(kIdQ);
    }

    // Keys [c0, c0 + cols) of the task's KV head (K: which 0, V: 1), run by run, from `k` or `v` (the 16-bit
    // operands, or an int8 cache's pages as they are) -> an L1 Nz tile of w_ rows per 32 B column block.
    template <typename E>
    __aicore__ inline void LoadKeys(const AscendC::LocalTensor<E>& dst, uint32_t which, const Pending& s,
                                    const AscendC::GlobalTensor<E>& k, const AscendC::GlobalTensor<E>& v) {
        const uint32_t dim = which == 0 ? p_->d : p_->dv;
        const FaStrides& st = which == 0 ? p_->kStride : p_->vStride;
        for (uint32_t r = 0; r < s.cols;) {
            uint32_t run = 0;
            const uint64_t off = kv_.Offset(st, s.task, s.c0 + r, s.cols - r, run);
            if (r > 0) AscendC::PipeBarrier<PIPE_MTE2>();  // the runs' 32 B pieces interleave in the Nz tile
            FaLoadNz(dst[r * (32 / sizeof(E))], (which == 0 ? k : v)[off], run, dim, st.s, w_);
            r += run;
        }
    }

    __aicore__ inline void Scores(const Pending& s, bool first) {
        if (int8_) {
            Scores8(s, first);
            return;
        }
        const uint32_t slot = kLoads_++ & 1;
        const AscendC::LocalTensor<T> kTile = kL1_.Get<T>()[slot * kElems_];
        AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(kIdK + slot);
        LoadKeys(kTile, 0, s, k_, v_);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(kIdK + slot);
        if (first) AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(kIdQ);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(kIdK + slot);
        Operand a{qL1_.Get<T>(), m16_, false, 0};
        Operand b{kTile, w_, false, 0};
        mm_.Run(a, b, s.task.rows, p_->d, s.cols, t_->kChunkQK, t_->nChunkQK, ws_.Scores(InferSlot(s.step)), w_);
        AscendC::SetFlag<AscendC::HardEvent::MTE1_MTE2>(kIdK + slot);
    }

    // An int8 cache: S = Q8 * K8^T as int32 rows (quantParts x rows), the K page read as int8.
    __aicore__ inline void Scores8(const Pending& s, bool first) {
        const uint32_t slot = kLoads_++ & 1;
        const AscendC::LocalTensor<int8_t> kTile = kL1_.Get<int8_t>()[slot * kElems_];
        AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(kIdK + slot);
        LoadKeys(kTile, 0, s, k8_, v8_);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(kIdK + slot);
        if (first) {
            AscendC::CrossCoreWaitFlag(kInferFlagKv);  // the task's query rows, split into int8 rows
            LoadQ(s.task, s.step);
            AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(kIdQ);
        }
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(kIdK + slot);
        Operand8 a{qL1_.Get<int8_t>(), m16_, false, 0};
        Operand8 b{kTile, w_, false, 0};
        mm8_.Run(a, b, parts_ * s.task.rows, p_->d, s.cols, t_->kChunkQK, t_->nChunkQK,
                 ws_.template Scores<int32_t>(InferSlot(s.step)), w_);
        AscendC::SetFlag<AscendC::HardEvent::MTE1_MTE2>(kIdK + slot);
    }

    // O_part = P * V of a step whose probabilities the vector cores write; V loads before the wait for P.
    __aicore__ inline void Values(const Pending& s) {
        if (int8_) {
            Values8(s);
            return;
        }
        const uint32_t slot = vLoads_++ & 1;
        const AscendC::LocalTensor<T> vTile = vL1_.Get<T>()[slot * vElems_];
        const AscendC::LocalTensor<T> pTile = pL1_.Get<T>()[slot * pElems_];
        AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(kIdV + slot);
        LoadKeys(vTile, 1, s, k_, v_);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(kIdV + slot);
        AscendC::CrossCoreWaitFlag(FlagOf(kFwdFlagProbs, s.step));
        AscendC::GlobalTensor<T> probs;
        probs.SetGlobalBuffer(ws_.template Probs<T>(InferSlot(s.step)));
        FaLoadZz(pTile, probs, s.task.rows, s.cols, w_, w_);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(kIdPReady);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(kIdPReady);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(kIdV + slot);
        Operand a{pTile, m16_, false, w_};
        Operand b{vTile, w_, true, 0};  // V [keys, dv] holds B itself
        mm_.Run(a, b, s.task.rows, s.cols, p_->dv, t_->kChunkPV, t_->nChunkPV, ws_.Output(InferSlot(s.step)),
                p_->dvPad);
        AscendC::SetFlag<AscendC::HardEvent::MTE1_MTE2>(kIdV + slot);
        AscendC::CrossCoreSetFlag<2, PIPE_FIX>(FlagOf(kFwdFlagOutput, s.step));
    }

    // An int8 cache: O_part = P8 * V8 as int32 rows (quantParts x rows), V's int8 page as B itself.
    __aicore__ inline void Values8(const Pending& s) {
        const uint32_t slot = vLoads_++ & 1;
        const AscendC::LocalTensor<int8_t> vTile = vL1_.Get<int8_t>()[slot * vElems_];
        const AscendC::LocalTensor<int8_t> pTile = pL1_.Get<int8_t>()[slot * pElems_];
        AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(kIdV + slot);
        LoadKeys(vTile, 1, s, k8_, v8_);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(kIdV + slot);
        AscendC::CrossCoreWaitFlag(FlagOf(kFwdFlagProbs, s.step));
        AscendC::GlobalTensor<int8_t> probs;
        probs.SetGlobalBuffer(ws_.template Probs<int8_t>(InferSlot(s.step)));
        FaLoadNz(pTile, probs, probParts_ * s.task.rows, s.cols, w_, m16_);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(kIdPReady);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(kIdPReady);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(kIdV + slot);
        Operand8 a{pTile, m16_, false, 0};
        Operand8 b{vTile, w_, true, 0};  // V [keys, dv] holds B itself
        mm8_.Run(a, b, probParts_ * s.task.rows, s.cols, p_->dv, t_->kChunkPV, t_->nChunkPV,
                 (__gm__ int32_t*)ws_.Output(InferSlot(s.step)), p_->dvPad);
        AscendC::SetFlag<AscendC::HardEvent::MTE1_MTE2>(kIdV + slot);
        AscendC::CrossCoreSetFlag<2, PIPE_FIX>(FlagOf(kFwdFlagOutput, s.step));
    }

    const FaInferTilingData* t_ = nullptr;
    const FaProblemTiling* p_ = nullptr;
    uint32_t core_ = 0;
    AscendC::GlobalTensor<T> q_, k_, v_;
    AscendC::GlobalTensor<int8_t> k8_, v8_;  // an int8 cache
    bool int8_ = false;
    uint32_t parts_ = 1;  // rows per packed row in the cube's tiles: quantParts over an int8 cache
    uint32_t probParts_ = 1;  // of them, P's (probParts)
    FaKvCache kv_;
    GM_ADDR seqInfo_ = nullptr;
    FaInferWorkspace ws_;
    uint32_t w_ = 0, m16_ = 0, qElems_ = 0, kElems_ = 0, vElems_ = 0, pElems_ = 0;
    uint32_t kLoads_ = 0, vLoads_ = 0;  // K / V+P loads so far: their parity picks the L1 slot
    AscendC::TBuf<AscendC::TPosition::A1> qL1_;
    AscendC::TBuf<AscendC::TPosition::B1> kL1_;
    AscendC::TBuf<AscendC::TPosition::B1> vL1_;
    AscendC::TBuf<AscendC::TPosition::A1> pL1_;
    FaCubeMatmul<T> mm_;
    FaCubeMatmul<int8_t> mm8_;
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_INFER_CUBE_H
