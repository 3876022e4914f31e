// Pieces shared by the cube (AIC) and vector (AIV) halves of the backward kernel: the task/step stream both sides
// walk in the same order and the workspace regions they exchange.
//
// One step = one (query head, s1 block, s2 block) tile. The cube computes S = Q K^T and dP = dO V^T; the AIVs turn
// them into P = exp(scale * S - max) / sum (saved forward statistics) and dS = P * (dP - D); the cube multiplies
// them into the pass's sums (dQ: dS K; dKV: P^T dO and dS^T Q), kept in L0C over the task's steps; at the task's
// end the sums leave once and the AIVs scale, convert and write them.
#ifndef NPU_FA_KERNEL_BWD_COMMON_H
#define NPU_FA_KERNEL_BWD_COMMON_H

#include "kernel_operator.h"
#include "../tiling/bwd_tiling.h"
#include "../common/flags.h"
#include "../common/gm_layout.h"
#include "../common/tasks.h"
#include "../common/workspace.h"

namespace npu_fa {

static_assert(kBwdFlagRing >= kBwdSlots, "each in-flight step needs its own flag ID");

// One task of the current pass and where its steps run.
struct FaBwdTask {
    uint32_t batch;
    uint32_t head;     // dQ pass: query head; dKV pass: kv head
    int64_t first;     // first owned row (dQ: query row, dKV: key row) inside the sequence
    int64_t rows;      // owned rows
    FaSeq seq;
    FaBand band;
    int64_t outer;     // dKV: query heads of the group to walk (dQ: 1)
    int64_t blkFirst;  // the other side's block range [blkFirst, blkLast)
    int64_t blkLast;
    int64_t maskBase;  // dense masks: byte offset of the sequence's mask (head 0, row 0, column 0)
    int64_t mapEntry0; // dense masks: block-map entry of the sequence's (mask head 0, s1 block 0, s2 block 0)
    int64_t qBlocks;   // s1 and s2 blocks of the sequence (the block map's rows per head and columns)
    int64_t kBlocks;
    int64_t qSlots;    // the sequence's s1 blocks in the launch's query chunk window (qBlkCount at most)
    int64_t tileBase;  // stored tiles: the sequence's first, per query head of the launch
};

// One tile: query rows [q0, q0 + qRows) of query head qHead against key rows [k0, k0 + kRows).
struct FaBwdStep {
    uint32_t qHead;
    int64_t q0, qRows;
    int64_t k0, kRows;
};

class FaBwdTaskIterator {
public:
    __aicore__ inline void Init(const FlashAttentionGradTilingData* t, GM_ADDR seqInfo, GM_ADDR blockMap,
                                uint32_t core) {
        t_ = t;
        cursor_.Init(&t->problem, seqInfo, blockMap, kBwdSeqFields,
                     t->pass == kBwdPassDq ? kBwdSeqFirstDqTask : kBwdSeqFirstKvTask);
        cursor_.SetRange(t->coreTaskStart[core], t->coreTaskStart[core + 1]);
    }

    // dQ tasks are task slots (sequence, query head, s1 block of the query chunk window); a slot past the
    // sequence's s1 blocks (in a chunk sized for a longer sequence) holds no task and is passed over.
    __aicore__ inline bool Next(FaBwdTask& task) {
        const FlashAttentionGradTilingData* t = t_;
        const FaProblemTiling& p = t->problem;
        const bool dq = t->pass == kBwdPassDq;
        const int64_t ownBlock = dq ? t->s1Block : t->s2Block;
        const uint32_t heads = dq ? t->headCount * p.group : t->headCount;  // the launch's heads of this pass's kind
        const uint32_t perSeq =
            heads * (dq ? (uint32_t)FaMin(t->qBlkCount, CeilDiv(p.s1, t->s1Block)) : CeilDiv(p.s2, t->s2Block));
        uint32_t batch;
        int64_t local;
        do {
            if (!cursor_.Next(perSeq, batch, local)) return false;
            ReadSeqRow(cursor_.Row(batch), task.seq, task.band);
            task.qBlocks = (task.seq.s1 + t->s1Block - 1) / t->s1Block;
            task.qSlots = FaMin(task.qBlocks, (int64_t)t->qBlkCount);
        } while (dq && t->qBlkFirst + local % task.qSlots >= task.qBlocks);
        task.maskBase = cursor_.Field(batch, kSeqMaskBase);
        task.mapEntry0 = cursor_.Field(batch, kSeqMapEntry0);
        task.kBlocks = (task.seq.s2 + t->s2Block - 1) / t->s2Block;
        task.tileBase = cursor_.Field(batch, kBwdSeqTileBase);
        const int64_t ownLen = dq ? task.seq.s1 : task.seq.s2;
        const int64_t blocks = dq ? task.qSlots : task.kBlocks;
        task.batch = batch;
        task.head = (dq ? t->headFirst * p.group : t->headFirst) + (uint32_t)(local / blocks);
        task.first = ((dq ? t->qBlkFirst : 0) + local % blocks) * ownBlock;
        task.rows = FaMin(ownLen - task.first, ownBlock);
        const int64_t end = task.first + task.rows;
        FaStepRange r = dq ? StepsOf(task.band, task.first, end, task.seq.s2, t->s2Block)
                           : QueryBlocksOf(task.band, task.first, end, task.seq.s1, t->s1Block);
        if (!dq) {  // the query chunk's blocks only
            r.first = FaMax(r.first, (int64_t)t->qBlkFirst);
            r.last = FaMin(r.last, (int64_t)t->qBlkFirst + t->qBlkCount);
        }
        task.blkFirst = r.first;
        task.blkLast = r.last;
        task.outer = dq ? 1 : p.group;
        return true;
    }

    // dK/dV pass over query chunks: the chunk holds the sequence's first / last query blocks (both when unchunked);
    // a sequence with no block in it (not the first chunk) was finished by an earlier chunk.
    __aicore__ inline static bool FirstChunk(const FlashAttentionGradTilingData* t) { return t->qBlkFirst == 0; }
    __aicore__ inline static bool LastChunk(const FlashAttentionGradTilingData* t, const FaBwdTask& task) {
        return t->qBlkFirst + t->qBlkCount >= task.qBlocks;
    }
    __aicore__ inline static bool Finished(const FlashAttentionGradTilingData* t, const FaBwdTask& task) {
        return t->qBlkFirst != 0 && t->qBlkFirst >= task.qBlocks;
    }

    // The block map's verdict on a step's tile (kTileMixed without a dense mask: the band logic decides). Both core
    // kinds skip the steps it calls masked.
    __aicore__ inline uint8_t TileState(const FaBwdTask& task, const FaBwdStep& s) const {
        const int64_t row = BlockMapRow(t_->problem, s.qHead, task.qBlocks, s.q0 / t_->s1Block);
        return cursor_.TileState(task.mapEntry0 + row * task.kBlocks + s.k0 / t_->s2Block);
    }

    // Number of steps of a task and its `i`-th step, in the order both core kinds walk them.
    __aicore__ inline static int64_t StepCount(const FaBwdTask& task) {
        return task.blkLast > task.blkFirst ? task.outer * (task.blkLast - task.blkFirst) : 0;
    }
    __aicore__ inline static FaBwdStep StepOf(const FlashAttentionGradTilingData* t, const FaBwdTask& task, int64_t i) {
        FaBwdStep s;
        const int64_t per = task.blkLast - task.blkFirst;
        const int64_t blk = task.blkFirst + i % per;
        if (t->pass == kBwdPassDq) {
            s.qHead = task.head;
            s.q0 = task.first;
            s.qRows = task.rows;
            s.k0 = blk * t->s2Block;
            s.kRows = FaMin(task.seq.s2 - s.k0, (int64_t)t->s2Block);
        } else {
            s.qHead = task.head * t->problem.group + (uint32_t)(i / per);
            s.q0 = blk * t->s1Block;
            s.qRows = FaMin(task.seq.s1 - s.q0, (int64_t)t->s1Block);
            s.k0 = task.first;
            s.kRows = task.rows;
        }
        return s;
    }

private:
    const FlashAttentionGradTilingData* t_ = nullptr;
    FaTaskCursor cursor_;
};

// The backward's workspace: D for every query row and the stored tiles (shared by the cores), and per core S and dP
// (fp32 or the input dtype), P and dS (input dtype) in slot step % kBwdSlots, and a task's sums.
class FaBwdWorkspace {
public:
    __aicore__ inline void Init(GM_ADDR workspace, const FlashAttentionGradTilingData* t, uint32_t core) {
        ws_.Init(workspace, t->wsOffsetCore, t->wsPerCore, core);
        t_ = t;
    }
    __aicore__ inline __gm__ float* D() const { return ws_.Shared<float>(t_->wsOffsetD); }
    // The cube writes later steps' S and dP while the AIVs read these, and loads a step's P and dS while the AIVs
    // write later steps'. S and dP are fp32, or the input dtype in the high-performance mode (bwd_tiling.h).
    template <typename S>
    __aicore__ inline __gm__ S* Scores(uint32_t slot) const { return ws_.Slot<S>(t_->wsOffsetS, slot, Tile()); }
    template <typename S>
    __aicore__ inline __gm__ S* DScoresIn(uint32_t slot) const { return ws_.Slot<S>(t_->wsOffsetDp, slot, Tile()); }
    template <typename T>
    __aicore__ inline __gm__ T* Probs(uint32_t slot) const { return ws_.Slot<T>(t_->wsOffsetP, slot, Tile()); }
    template <typename T>
    __aicore__ inline __gm__ T* DScores(uint32_t slot) const { return ws_.Slot<T>(t_->wsOffsetDs, slot, Tile()); }
    // Stored tiles (storeTiles): step s's P [s1Block, s2Block], followed by its dS, written by the dQ pass and read
    // by the dK/dV pass of the same chunk of heads and query blocks. Sequence-major, then query head of the chunk,
    // s1 block of the query chunk, s2 block.
    template <typename T>
    __aicore__ inline __gm__ T* StoredProbs(const FaBwdTask& task, const FaBwdStep& s) const {
        const uint64_t qHeads = (uint64_t)t_->headCount * t_->problem.group;
        const uint64_t head = s.qHead - (uint64_t)t_->headFirst * t_->problem.group;
        const uint64_t tile = (uint64_t)task.tileBase * qHeads +
                              (head * task.qSlots + s.q0 / t_->s1Block - t_->qBlkFirst) * task.kBlocks +
                              s.k0 / t_->s2Block;
        return ws_.Shared<T>(t_->wsOffsetTiles + tile * 2 * t_->tileBytes);
    }
    template <typename T>
    __aicore__ inline __gm__ T* StoredDScores(const FaBwdTask& task, const FaBwdStep& s) const {
        return StoredProbs<T>(task, s) + t_->tileBytes / sizeof(T);
    }
    // A task's sums: dQ pass sum dS K [qRows, dPad]; dKV pass sum dS^T Q [kRows, dPad].
    __aicore__ inline __gm__ float* SumA() const { return ws_.At<float>(t_->wsOffsetSumA); }
    // dKV pass: sum P^T dO [kRows, dvPad].
    __aicore__ inline __gm__ float* SumB() const { return ws_.At<float>(t_->wsOffsetSumB); }
    // Query chunks: the earlier chunks' sums of output i (0: dK, pitch dPad; 1: dV, pitch dvPad) from key row `row`
    // of the task's sequence and kv head on.
    __aicore__ inline __gm__ float* ChunkSums(uint32_t i, const FaBwdTask& task, int64_t row) const {
        const FaProblemTiling& p = t_->problem;
        const uint64_t heads = t_->headCount, keys = t_->chunkKeys;
        const uint64_t key = (p.varlen ? (uint64_t)task.seq.kvTok : (uint64_t)task.batch * p.s2) + (uint64_t)row;
        const uint64_t pitch = i == 0 ? p.dPad : p.dvPad;
        const uint64_t base = t_->wsOffsetChunkSums + (i == 0 ? 0 : heads * keys * p.dPad * 4);
        return ws_.Shared<float>(base + (((uint64_t)task.head - t_->headFirst) * keys + key) * pitch * 4);
    }

private:
    __aicore__ inline uint64_t Tile() const { return (uint64_t)t_->s1Block * t_->s2Block; }
    FaCoreWorkspace ws_;
    const FlashAttentionGradTilingData* t_ = nullptr;
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_BWD_COMMON_H
