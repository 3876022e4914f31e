// Pieces shared by the inference kernel's cube and vector halves and its combine pass: the task stream, the packed
// query rows and their runs in GM, the KV cache's addressing through the block table, and the workspace.
//
// Why this shape: decode has one query token per sequence, so a task of the forward (one query head) would hand the
// cube one row. Here a task is (batch b, KV head n2, query tile, KV split): its rows are the group = N1 / N2 query
// heads that share the KV head, times the query tokens, packed s-major (row r = token r / group, head
// n2 * group + r % group) into one cube tile of up to mBlock rows, so K and V are read once for the whole group.
// A token's group heads are adjacent in BSH/BSND/TND (and, with one query token, in BNSD), so a tile's query rows
// load in one DMA per token. K and V stream block by block through the block table (paged cache, either layout)
// or from a contiguous cache: one address function, whose "page" is the batch without a table. When B * N2 leaves
// cores idle, the host splits each sequence's keys over cores (flash-decoding); every split writes its rows'
// normalised output and log-sum-exp to the workspace and a vector-only combine pass merges them.
#ifndef NPU_FA_KERNEL_INFER_COMMON_H
#define NPU_FA_KERNEL_INFER_COMMON_H

#include "kernel_operator.h"
#include "../tiling/infer_tiling.h"
#include "../tiling/seq_table.h"
#include "../common/flags.h"
#include "../common/tasks.h"
#include "../common/workspace.h"

namespace npu_fa {

__aicore__ inline uint32_t InferSlot(uint32_t step) { return step % kInferStepSlots; }

// GM arguments of the inference entry (fa_kernel_args.h NPU_FA_INFER_*).
struct FaInferGmArgs {
    GM_ADDR query;
    GM_ADDR key;
    GM_ADDR value;
    GM_ADDR blockTable;   // int32 [B, maxPages], paged caches only
    GM_ADDR attenMask;    // bytes, a dense mask only (maskMode 1)
    GM_ADDR pseShift;     // the input dtype [B or 1, N1, S1, S2] (pseMode kPseAdd only)
    GM_ADDR alibiSlopes;  // fp32 [N1] or [B, N1] (alibiMode only)
    GM_ADDR antiquant;    // fp32 scales and offsets, an int8 cache only (kvQuant)
    GM_ADDR seqInfo;      // the seq table: q/kv lengths, first tasks, bands
    GM_ADDR attentionOut;
    GM_ADDR softmaxLse;   // fp32, lseFlag only
    GM_ADDR workspace;    // the user part (past the system workspace)
};

// One task: packed rows [row0, row0 + rows) of (batch, kvHead), against keys [keyFirst, keyLast) of its split
// (already cut to the band of the tile's rows, InferTaskKeys).
struct FaInferTask {
    uint32_t batch;
    uint32_t kvHead;
    uint32_t split;
    int64_t row0;
    uint32_t rows;
    FaSeq seq;
    FaBand band;
    int64_t maskBase;  // a dense mask's byte offset of the batch's (head 0, token 0, key 0)
    int64_t keyFirst;
    int64_t keyLast;
};

// Walks the tasks of one core in order: batch, KV head, query tile, split; At() finds any task of the stream (the
// combine pass takes each (batch, KV head, tile) unit by its first split's task).
class FaInferTaskIterator {
public:
    __aicore__ inline void Init(const FaInferTilingData* t, GM_ADDR seqInfo, uint32_t next, uint32_t end) {
        t_ = t;
        cursor_.Init(&t->problem, seqInfo, nullptr, kSeqInfoFields, kSeqFirstTask);
        cursor_.SetRange(next, end);
    }

    __aicore__ inline bool Next(FaInferTask& task, uint32_t splits) {
        uint32_t batch;
        int64_t local;
        if (!cursor_.Next(0, batch, local)) return false;
        Describe(batch, local, splits, task);
        return true;
    }

    // Task `index` of the whole stream (the combine pass: index = unit * splits).
    __aicore__ inline void At(uint32_t index, FaInferTask& task) const {
        uint32_t batch = 0;
        while (batch + 1 < t_->problem.batch && cursor_.Field(batch + 1, kSeqFirstTask) <= (int64_t)index) ++batch;
        Describe(batch, (int64_t)index - cursor_.Field(batch, kSeqFirstTask), t_->splits, task);
    }

    // Task `local` of a batch (units of `splits` splits each).
    __aicore__ inline void Describe(uint32_t batch, int64_t local, uint32_t splits, FaInferTask& task) const {
        const FaProblemTiling& p = t_->problem;
        ReadSeqRow(cursor_.Row(batch), task.seq, task.band);
        const uint32_t tiles = InferTilesOf(task.seq.s1, p.group, t_->mBlock);
        const int64_t unit = local / splits;
        task.batch = batch;
        task.maskBase = cursor_.Field(batch, kSeqMaskBase);
        task.split = (uint32_t)(local % splits);
        task.kvHead = (uint32_t)(unit / tiles);
        task.row0 = (unit % tiles) * t_->mBlock;
        task.rows = (uint32_t)FaMin(task.seq.s1 * p.group - task.row0, (int64_t)t_->mBlock);
        const FaKeyRange keys =
            InferTaskKeys(task.seq.s2, task.split, t_->splits, t_->s2Block, task.band, task.row0, task.rows, p.group);
        task.keyFirst = keys.first;
        task.keyLast = keys.last;
    }

private:
    const FaInferTilingData* t_ = nullptr;
    FaTaskCursor cursor_;
};

// A run of packed rows that sit at one stride in GM: the heads [head0, head0 + count) of one query token, or, with
// one query head per KV head (tokens runs), the tokens [token, token + count) of head `head`.
struct FaInferRun {
    uint32_t tileRow;  // first row of the run inside the rows walked
    int64_t token;     // (first) query token inside the sequence
    uint32_t head;     // (first) query head
    uint32_t count;
    bool tokens;       // the rows are consecutive tokens (GM stride: the token's), else consecutive heads
    __aicore__ inline uint64_t Stride(uint64_t tokenStride, uint64_t headStride) const {
        return tokens ? tokenStride : headStride;
    }
};

// The runs of packed rows [r0, r0 + n) of KV head kvHead, in order. With `tokenRuns` and a group of 1 (MHA) the
// rows' consecutive tokens make one run (one DMA for all of them); else each token's heads do.
class FaInferRuns {
public:
    __aicore__ inline FaInferRuns(int64_t r0, uint32_t n, uint32_t group, uint32_t kvHead, bool tokenRuns = false)
        : r_(r0), end_(r0 + n), r0_(r0), group_(group), kvHead_(kvHead), tokenRuns_(tokenRuns && group == 1) {}
    __aicore__ inline bool Next(FaInferRun& run) {
        if (r_ >= end_) return false;
        const int64_t token = r_ / group_, g = r_ % group_;
        run.tileRow = (uint32_t)(r_ - r0_);
        run.token = token;
        run.head = kvHead_ * group_ + (uint32_t)g;
        run.count = (uint32_t)(tokenRuns_ ? end_ - r_ : FaMin(end_ - r_, (int64_t)group_ - g));
        run.tokens = tokenRuns_;
        r_ += run.count;
        return true;
    }

private:
    int64_t r_, end_, r0_;
    uint32_t group_, kvHead_;
    bool tokenRuns_;
};

// Element offset of (batch, query token, head) in a tensor of q/out strides (TND: tokens counted from qTok, no
// batch stride).
__aicore__ inline uint64_t InferTokenOffset(const FaStrides& st, uint32_t batch, const FaSeq& seq, int64_t token,
                                            uint32_t head) {
    return batch * st.b + (uint64_t)(seq.qTok + token) * st.s + head * st.n;
}

// Where key `t` of a batch sits in a K or V cache: through the block table (page = table[b][t / pageSize], then
// head and row inside the page by the cache's strides), or in a contiguous cache (the batch's rows from kvTok).
// `run` receives how many keys from t on (up to `want`) follow at the row stride.
class FaKvCache {
public:
    __aicore__ inline void Init(const FaInferTilingData* t, GM_ADDR blockTable) {
        t_ = t;
        table_ = (__gm__ int32_t*)blockTable;
    }
    __aicore__ inline uint64_t Offset(const FaStrides& st, const FaInferTask& task, int64_t key, uint32_t want,
                                      uint32_t& run) const {
        const uint32_t ps = t_->pageSize;
        if (ps == 0) {
            run = want;
            return task.batch * st.b + (uint64_t)(task.seq.kvTok + key) * st.s + task.kvHead * st.n;
        }
        const int64_t page = table_[(uint64_t)task.batch * t_->maxPages + (uint64_t)(key / ps)];
        const uint32_t inPage = (uint32_t)(key % ps);
        run = (uint32_t)FaMin((int64_t)want, (int64_t)(ps - inPage));
        return (uint64_t)page * st.b + task.kvHead * st.n + (uint64_t)inPage * st.s;
    }

private:
    const FaInferTilingData* t_ = nullptr;
    __gm__ int32_t* table_ = nullptr;
};

// The workspace: per core, the step slots of S, P and P*V (FaStepSlots, mBlock rows; an int8 cache: quantParts times
// as many) and, over an int8 cache, of the int8 split query rows; shared, the split partials
// (packed row R of (batch, KV head) at (batch * n2 + kvHead) * group * s1 + R).
class FaInferWorkspace : public FaStepSlots {
public:
    __aicore__ inline void Init(GM_ADDR workspace, const FaInferTilingData* t, uint32_t core) {
        const uint32_t parts = t->quantParts == 0 ? 1 : t->quantParts;  // an int8 cache's rows per packed row
        FaStepSlots::Init(workspace, t->wsPerCore, core, t->wsOffsetS, t->wsOffsetP, t->wsOffsetO, parts * t->mBlock,
                          t->s2Block, t->problem.dvPad);
        kv_.Init(workspace, 0, t->wsPerCore, core);
        t_ = t;
    }
    // An int8 cache: the task's int8 split query rows, [quantParts * mBlock, d], in the slot of the task's first step.
    __aicore__ inline __gm__ int8_t* QuantQuery(uint32_t step) const {
        return kv_.Slot<int8_t>(t_->wsOffsetQuery, step % kInferStepSlots,
                                (uint64_t)t_->quantParts * t_->mBlock * t_->problem.d);
    }
    __aicore__ inline uint64_t PartRow(const FaInferTask& task, uint32_t split, int64_t row) const {
        const FaProblemTiling& p = t_->problem;
        return (uint64_t)split * t_->partRows + ((uint64_t)task.batch * p.n2 + task.kvHead) * p.group * p.s1 +
               (uint64_t)row;
    }
    __aicore__ inline __gm__ float* PartOut(uint64_t partRow) const {
        return Shared<float>(t_->wsPartO) + partRow * t_->problem.dvPad;
    }
    __aicore__ inline __gm__ float* PartLse(uint64_t partRow) const { return Shared<float>(t_->wsPartLse) + partRow * 8; }

private:
    const FaInferTilingData* t_ = nullptr;
    FaCoreWorkspace kv_;
};

// Writes packed rows to attention_out (the input dtype, [rows, dvPad] in UB) and softmax_lse (one fp32 per row as
// the first of a 32 B block, [rows, 8] in UB), run by run. The caller orders UB work before these (V_MTE3).
template <typename T>
class FaInferRowWriter {
public:
    __aicore__ inline void Init(const FaInferTilingData* t, GM_ADDR out, GM_ADDR lse) {
        t_ = t;
        outGm_.SetGlobalBuffer((__gm__ T*)out);
        if (t->lseFlag != 0) lseGm_.SetGlobalBuffer((__gm__ float*)lse);
    }
    __aicore__ inline void Out(const AscendC::LocalTensor<T>& rows, const FaInferTask& task, int64_t r0, uint32_t n) {
        const FaProblemTiling& p = t_->problem;
        FaInferRuns runs(r0, n, p.group, task.kvHead, true);
        FaInferRun run;
        while (runs.Next(run)) {
            AscendC::DataCopyExtParams cp((uint16_t)run.count, p.dv * (uint32_t)sizeof(T), 0,
                                          (uint32_t)((run.Stride(p.oStride.s, p.oStride.n) - p.dv) * sizeof(T)), 0);
            const uint64_t off = InferTokenOffset(p.oStride, task.batch, task.seq, run.token, run.head);
            AscendC::DataCopyPad(outGm_[off], rows[run.tileRow * p.dvPad], cp);
        }
    }
    __aicore__ inline void Lse(const AscendC::LocalTensor<float>& stat, const FaInferTask& task, int64_t r0,
                               uint32_t n) {
        if (t_->lseFlag == 0) return;
        const FaProblemTiling& p = t_->problem;
        FaInferRuns runs(r0, n, p.group, task.kvHead, true);
        FaInferRun run;
        while (runs.Next(run)) {
            const uint64_t stride = run.Stride(t_->lseStrideS, t_->lseStrideN);
            AscendC::DataCopyExtParams cp((uint16_t)run.count, 4, 0, (uint32_t)((stride - 1) * 4), 0);
            const uint64_t off = task.batch * t_->lseStrideB + (uint64_t)(task.seq.qTok + run.token) * t_->lseStrideS +
                                 run.head * t_->lseStrideN;
            AscendC::DataCopyPad(lseGm_[off], stat[run.tileRow * 8], cp);
        }
    }

private:
    const FaInferTilingData* t_ = nullptr;
    AscendC::GlobalTensor<T> outGm_;
    AscendC::GlobalTensor<float> lseGm_;
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_INFER_COMMON_H
