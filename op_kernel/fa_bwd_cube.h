// Cube (AIC) half of the backward kernel. Per step: Q, dO, K, V tiles GM -> L1 Nz (the task's side once per task,
// the other side per step, two slots each), S = Q K^T and dP = dO V^T to the workspace (fp32, two slots); after the
// AIVs' P and dS come back, the pass's products: dQ pass dS K; dKV pass P^T dO and dS^T Q (the transposed A operand
// is loaded with a per-fractal transpose, LoadData2D ifTranspose; fast mode adds dS K atomically into the fp32 dQ
// accumulator). Order per core: S(0), S(1), products(0), S(2), products(1), ... so the cube's S/dP of step j+1
// overlaps the vector cores' P/dS of step j.
#ifndef NPU_FA_FA_BWD_CUBE_H
#define NPU_FA_FA_BWD_CUBE_H

#include "fa_bwd_common.h"
#include "fa_matmul.h"

namespace npu_fa {

template <typename T>
class FaBwdCube {
public:
    __aicore__ inline void Init(const FlashAttentionGradTilingData* t, GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR dy,
                                GM_ADDR blockMap, GM_ADDR seqInfo, GM_ADDR workspace, AscendC::TPipe* pipe) {
        t_ = t;
        core_ = (uint32_t)AscendC::GetBlockIdx();
        qGm_.SetGlobalBuffer((__gm__ T*)q);
        kGm_.SetGlobalBuffer((__gm__ T*)k);
        vGm_.SetGlobalBuffer((__gm__ T*)v);
        dyGm_.SetGlobalBuffer((__gm__ T*)dy);
        seqInfo_ = (__gm__ int64_t*)seqInfo;
        blockMap_ = (__gm__ uint8_t*)blockMap;
        ws_.Init(workspace, t, core_);
        m16_ = AlignUp(t->s1Block, 16);
        w_ = t->s2Block;
        // One L1 buffer, carved: Q [m16, dPad], dO [m16, dvPad], K [w, dPad], V [w, dvPad] two slots each, then
        // P and dS [m16, w].
        const uint32_t sizes[kTiles] = {m16_ * t->dPad, m16_ * t->dvPad, w_ * t->dPad, w_ * t->dvPad, m16_ * w_, m16_ * w_};
        uint32_t off = 0;
        for (int32_t i = 0; i < kTiles; ++i) {
            offs_[i] = off;
            sizes_[i] = sizes[i];
            off += (i < kSlotted ? 2 : 1) * sizes[i];
        }
        pipe->InitBuffer(l1_, off * sizeof(T));
        mm_.Init(pipe);
        // Tile rows/columns past a step's extent are never loaded; zero them once so that padding is finite (a
        // one-row tile runs a 16-row Mmad: m = 1 would switch the cube to GEMV mode).
        AscendC::Fill(l1_.Get<T>(), AscendC::InitConstValueParams<T>(1, (uint16_t)(off * sizeof(T) / 32), 0, (T)0.0f));
        // The tile loads overwrite the filled bytes on the same pipe (MTE2): the PipeBarrier page requires a barrier.
        AscendC::PipeBarrier<PIPE_MTE2>();
    }

    __aicore__ inline void Process() {
        FaGradTaskIterator it;
        it.Init(t_, seqInfo_, blockMap_, core_);
        FaGradTask task;
        Pending prev;
        prev.valid = false;
        uint32_t step = 0;
        const bool dq = t_->pass == kGradPassDq;
        while (it.Next(task)) {
            const int64_t steps = FaGradTaskIterator::StepCount(task);
            bool first = true;
            for (int64_t i = 0; i < steps; ++i) {
                Pending cur;
                cur.valid = true;
                cur.task = task;
                cur.s = FaGradTaskIterator::StepOf(t_, task, i);
                if (it.TileState(task, cur.s) == kTileMasked) continue;  // the block map: nothing to compute
                cur.step = step++;
                if (first || !dq) LoadQuerySide(cur);
                if (first || dq) LoadKeySide(cur);
                first = false;
                for (int32_t id = 0; id < kSlotted; ++id) cur.slot[id] = slot_[id];
                ScoresStep(cur);
                if (prev.valid) ProductStep(prev);
                prev = cur;
            }
        }
        if (prev.valid) ProductStep(prev);
        mm_.End();
    }

private:
    // L1 tiles; their index is also their MTE2_MTE1 / MTE1_MTE2 event ID (0-5: 6 and 7 are reserved).
    static constexpr int32_t kQ = 0, kDo = 1, kK = 2, kV = 3, kP = 4, kDs = 5, kTiles = 6;
    static constexpr int32_t kSlotted = 4;  // Q, dO, K, V have two slots: the next step loads while this one multiplies

    // A step whose S/dP are out and whose products are still to do.
    struct Pending {
        bool valid;
        FaGradTask task;
        FaGradStep s;
        uint32_t step;               // the core's step number: flag IDs GradFlag(., step), workspace slot step & 1
        uint8_t slot[kSlotted];      // the L1 slots of its Q, dO, K, V
    };

    using Operand = typename FaCubeMatmul<T>::Operand;

    __aicore__ inline AscendC::LocalTensor<T> Tile(int32_t i, uint32_t slot = 0) {
        return l1_.Get<T>()[offs_[i] + slot * sizes_[i]];
    }

    // GM (row-major, pitch `srcPitch` elements) -> L1 tile `id` in Nz with `c0Stride` rows per 16-column block,
    // once the earlier LoadData reads are done (a set/wait pair: loads and matmuls of the cube are issued in order).
    __aicore__ inline void LoadNz(int32_t id, const AscendC::GlobalTensor<T>& src, uint32_t rows, uint32_t cols,
                                  uint64_t srcPitch, uint32_t c0Stride) {
        if (id < kSlotted) slot_[id] ^= 1;  // a slotted tile loads into the slot its previous load did not use
        const AscendC::LocalTensor<T> dst = Tile(id, id < kSlotted ? slot_[id] : 0);
        AscendC::SetFlag<AscendC::HardEvent::MTE1_MTE2>(id);
        AscendC::WaitFlag<AscendC::HardEvent::MTE1_MTE2>(id);
        FaLoadNz(dst, src, rows, cols, srcPitch, c0Stride);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(id);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(id);
    }

    __aicore__ inline void LoadQuerySide(const Pending& p) {
        const uint32_t rows = (uint32_t)p.s.qRows;
        LoadNz(kQ, qGm_[GradQOffset(t_, p.task, p.s.qHead, p.s.q0)], rows, t_->d, t_->qStrideS, m16_);
        LoadNz(kDo, dyGm_[GradOOffset(t_, p.task, p.s.qHead, p.s.q0)], rows, t_->dv, t_->oStrideS, m16_);
    }

    __aicore__ inline void LoadKeySide(const Pending& p) {
        const uint32_t kvHead = p.s.qHead / t_->group;
        LoadNz(kK, kGm_[GradKOffset(t_, p.task, kvHead, p.s.k0)], (uint32_t)p.s.kRows, t_->d, t_->kStrideS, w_);
        LoadNz(kV, vGm_[GradVOffset(t_, p.task, kvHead, p.s.k0)], (uint32_t)p.s.kRows, t_->dv, t_->vStrideS, w_);
    }

    __aicore__ inline Operand Slotted(const Pending& p, int32_t id, bool transposed) {
        return Operand{Tile(id, p.slot[id]), id == kQ || id == kDo ? m16_ : w_, transposed};
    }

    // S = Q K^T and dP = dO V^T -> workspace slot step & 1, then tell the vector cores.
    __aicore__ inline void ScoresStep(const Pending& p) {
        const uint32_t qRows = (uint32_t)p.s.qRows, kRows = (uint32_t)p.s.kRows, ws = p.step & 1;
        Matmul(Slotted(p, kQ, false), Slotted(p, kK, false), qRows, t_->d, kRows, ws_.Scores(ws), w_);
        Matmul(Slotted(p, kDo, false), Slotted(p, kV, false), qRows, t_->dv, kRows, ws_.DScoresIn(ws), w_);
        AscendC::CrossCoreSetFlag<2, PIPE_FIX>(GradFlag(kGradFlagScores, p.step));
    }

    // Once the vector cores' P and dS are in: the pass's products -> workspace (fast mode: also dQ, atomically).
    __aicore__ inline void ProductStep(const Pending& p) {
        const uint32_t qRows = (uint32_t)p.s.qRows, kRows = (uint32_t)p.s.kRows;
        AscendC::CrossCoreWaitFlag(GradFlag(kGradFlagProbs, p.step));
        AscendC::GlobalTensor<T> ds;
        ds.SetGlobalBuffer(ws_.template DScores<T>());
        LoadNz(kDs, ds, qRows, w_, w_, m16_);
        const Operand dsTile{Tile(kDs), m16_, false};
        if (t_->pass == kGradPassDq) {
            Matmul(dsTile, Slotted(p, kK, true), qRows, kRows, t_->d, ws_.PartA(), t_->dPad);
        } else {
            AscendC::GlobalTensor<T> probs;
            probs.SetGlobalBuffer(ws_.template Probs<T>());
            if (t_->kvParts & kGradPartDv) {
                LoadNz(kP, probs, qRows, w_, w_, m16_);
                Matmul(Operand{Tile(kP), m16_, true}, Slotted(p, kDo, true), kRows, qRows, t_->dv, ws_.PartB(),
                       t_->dvPad);
            }
            if (t_->kvParts & kGradPartDk) {
                Matmul(Operand{Tile(kDs), m16_, true}, Slotted(p, kQ, true), kRows, qRows, t_->d, ws_.PartA(),
                       t_->dPad);
            }
            if (t_->fusedDq != 0) {  // dQ rows += dS K (fp32 atomic add; several kv tasks add to the same rows)
                AscendC::SetAtomicAdd<float>();
                Matmul(dsTile, Slotted(p, kK, true), qRows, kRows, t_->d,
                       ws_.DqAcc() + GradStatRow(t_, p.task, p.s.qHead, p.s.q0) * t_->dPad, t_->dPad);
                AscendC::DisableDmaAtomic();
            }
        }
        AscendC::CrossCoreSetFlag<2, PIPE_FIX>(GradFlag(kGradFlagPart, p.step));
    }

    // C[m, n] = A[m, k] * B[k, n] in the largest chunks that fit L0, written as fp32 rows of pitch `ldc` to GM.
    __aicore__ inline void Matmul(const Operand& a, const Operand& b, uint32_t m, uint32_t k, uint32_t n,
                                  __gm__ float* dst, uint32_t ldc) {
        uint32_t kChunk, nChunk;
        FaMatmulChunks(a.transposed ? w_ : m16_, k, n, kChunk, nChunk);
        mm_.Run(a, b, m, k, n, kChunk, nChunk, dst, ldc);
    }

    const FlashAttentionGradTilingData* t_ = nullptr;
    uint32_t core_ = 0;
    AscendC::GlobalTensor<T> qGm_, kGm_, vGm_, dyGm_;
    __gm__ int64_t* seqInfo_ = nullptr;
    __gm__ uint8_t* blockMap_ = nullptr;
    FaGradWorkspace ws_;
    uint32_t m16_ = 0, w_ = 0;
    uint32_t offs_[kTiles] = {0, 0, 0, 0, 0, 0};
    uint32_t sizes_[kTiles] = {0, 0, 0, 0, 0, 0};
    uint32_t slot_[kSlotted] = {1, 1, 1, 1};  // slot of each slotted tile's latest load (the first goes to 0)
    AscendC::TBuf<AscendC::TPosition::A1> l1_;
    FaCubeMatmul<T> mm_;
};

}  // namespace npu_fa

#endif  // NPU_FA_FA_BWD_CUBE_H
