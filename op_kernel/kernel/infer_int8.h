// An int8 K/V cache (tiling kvQuant; value = s o (x + o), per channel or per token): the vector cores' part of the
// int8 cube route. dav-2201's cube multiplies int8 x int8 -> int32, so it reads the int8 pages as they are
// (kernel/infer_cube.h Scores8/Values8) against int8 splits of the query and of the probabilities; nothing of K or V
// goes through the vector cores.
//
// Why: the route it replaces widened K and V on the vector cores and sent that copy through GM to the cube (A2 has
// no other AIV -> AIC path), so every K/V element moved 1 B + 2 B + 2 B: at best 0.62x the bf16 cache's time in
// the model (B 8, N 32:8, KV 4K), reached 0.87x (fp16 queries) and 1.29x (bf16: int8 -> half -> fp32 -> bf16). Here
// the cube reads 1 B per element once (docs/performance.md, "int8 cache").
//
// Per-channel K and V (value = s o (x + o)):
// - Scores: Q.(s o (k + o)) = (Q o s).k + (Q o s).o. On a task's first step each AIV takes its packed rows of the
//   query, q' = Q o s in fp32, and splits each row into quantParts int8 rows with a row scale r = max|q'| / 127:
//   q' / r = sum_p h_p / 254^p (each part rounds the previous one's residue, within +-0.5, times 254), written to
//   GM for the cube (rows of part p at p * rows). The cube's int32 products of the parts are exact (|h.k| <= 127 *
//   128 * D < 2^24, so exact in fp32 too); the AIV recombines S = r * sum_p S_p / 254^p + q'.o (the row's offset
//   term, kept so that the lse, soft-capping and any bias see the true scores).
// - P * V: P is in [0, 1] after the max subtraction; 127 P splits the same way into probParts int8 rows (no row
//   scale), the cube's int32 parts recombine as O = sum_p O_p / 254^p / 127, and V's scales and offsets fold into
//   the task's output at its end (FaValueChannelFold).
// Per-token K and V (a scale s_j and offset o_j per key, fp32 pairs): the query is split unscaled and the per-key
// parameters apply per column on the AIV, each step's pairs loaded and de-interleaved (GatherMask) once per AIV:
// S_j = s_j (Q.k_j + o_j sum(Q)); O = sum_j (P_j s_j) v_j + sum_j P_j s_j o_j, so P's columns take s_j before the
// split (scaled by 127 / max_j s_j of the step instead of 127) and the row constant sum_j P_j s_j o_j is added to
// the step's P*V.
// The query's three parts keep about 23 bits of each row's largest value, P's two about 15 bits of 1 (tiling/
// infer_tiling.h: why two suffice for P). Rows are cheap on the cube: decode packs the group's heads times the parts
// into one tile (3 to 24 rows for groups 1 to 8) and the kernel is bound by HBM; the vector cores' split and
// recombination of them is what costs.
#ifndef NPU_FA_KERNEL_INFER_INT8_H
#define NPU_FA_KERNEL_INFER_INT8_H

#include "infer_common.h"
#include "../tiling/ub_budget.h"

namespace npu_fa {

// Per-channel V folded out of the stream: the cube's P * V ran on the integers, so before the division by the row
// sums l, acc[r] = (acc[r] + l_r * offset) o scale (sum_j P_rj s o (v_j + o) = s o (P v + l o)).
// Holds V's [scale d | offset d] fp32 of the last KV head folded (the antiquant argument's [N2, 2, D] V section).
class FaValueChannelFold {
public:
    __aicore__ inline void Init(AscendC::TPipe* pipe, const AscendC::GlobalTensor<float>& params, uint64_t section,
                                uint32_t d, bool offset, int32_t id) {
        pipe->InitBuffer(buf_, 2 * d * 4);
        params_ = params;
        section_ = section;
        d_ = d;
        offset_ = offset;
        id_ = id;
    }
    // `sums` is one 32 B block per row, `scratch` [rows, dvPad] fp32 is free.
    __aicore__ inline void Fold(const AscendC::LocalTensor<float>& acc, const AscendC::LocalTensor<float>& sums,
                                const AscendC::LocalTensor<float>& scratch, uint32_t head, uint32_t rows,
                                uint32_t dvPad) {
        const AscendC::LocalTensor<float> ch = buf_.Get<float>();
        if (head != head_) {
            head_ = head;
            AscendC::PipeBarrier<PIPE_ALL>();  // the previous task's fold is done with them
            AscendC::DataCopy(ch, params_[section_ + (uint64_t)head * 2 * d_], 2 * d_);
            AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(id_);
            AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(id_);
        }
        const uint8_t rowBlocks = (uint8_t)(dvPad / 8);
        for (uint32_t c = 0; c < d_; c += 64) {
            const uint64_t lanes = FaMin(d_ - c, 64u);
            if (offset_) {  // scratch[r][c] = offset[c] * l_r, then added
                AscendC::Mul(scratch[c], ch[d_ + c], sums, lanes, (uint8_t)rows,
                             AscendC::BinaryRepeatParams(1, 1, 0, rowBlocks, 0, 1));
                AscendC::Add(acc[c], acc[c], scratch[c], lanes, (uint8_t)rows,
                             AscendC::BinaryRepeatParams(1, 1, 1, rowBlocks, rowBlocks, rowBlocks));
            }
            AscendC::Mul(acc[c], acc[c], ch[c], lanes, (uint8_t)rows,
                         AscendC::BinaryRepeatParams(1, 1, 1, rowBlocks, rowBlocks, 0));
        }
    }

private:
    AscendC::TBuf<AscendC::TPosition::VECIN> buf_;
    AscendC::GlobalTensor<float> params_;
    uint64_t section_ = 0;
    uint32_t d_ = 0, head_ = 0xFFFFFFFFu;
    bool offset_ = false;
    int32_t id_ = 0;
};


template <typename T>
class FaInferInt8 {
public:
    // `rows`: the most packed rows an AIV owns; `chunk` rows per score chunk of w keys. `id`: this class's event ID
    // of every pair it uses (V_MTE2, MTE2_V, MTE3_V, V_MTE3, V_S): each transfer waits for its predecessor.
    __aicore__ inline void Init(const FaInferTilingData* t, const FaInferGmArgs& gm, const FaInferWorkspace* ws,
                                AscendC::TPipe* pipe, uint32_t rows, uint32_t chunk, uint32_t w, int32_t id) {
        t_ = t;
        p_ = &t->problem;
        ws_ = ws;
        id_ = id;
        parts_ = t->quantParts;
        probParts_ = t->probParts;
        d_ = p_->d;
        w_ = w;
        keyTokens_ = t->keyQuantMode != 0;
        valueTokens_ = t->valueQuantMode != 0;
        offset_ = t->quantOffset != 0;
        query_.SetGlobalBuffer((__gm__ T*)gm.query);
        params_.SetGlobalBuffer((__gm__ float*)gm.antiquant);
        section_[1] = keyTokens_ ? (uint64_t)p_->batch * t->quantTokens * 2 : (uint64_t)p_->n2 * d_ * 2;
        const FaInt8UbSizes u = Int8UbSizes(rows, chunk, w, d_, p_->dvPad, parts_, keyTokens_ || valueTokens_);
        pipe->InitBuffer(inBuf_, u.in);
        pipe->InitBuffer(xBuf_, u.x);
        pipe->InitBuffer(hBuf_, u.h);
        pipe->InitBuffer(outBuf_, u.out);
        pipe->InitBuffer(channelBuf_, u.channel);
        pipe->InitBuffer(redBuf_, u.red);
        if (keyTokens_ || valueTokens_) {
            pipe->InitBuffer(pairBuf_, u.pairs);
            pipe->InitBuffer(columnBuf_, u.columns);
        }
        if (!valueTokens_) valueFold_.Init(pipe, params_, section_[1], d_, offset_, id_);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(id_);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(id_);
    }

    __aicore__ inline void End() {
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(id_);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(id_);
    }

    // A task's query: this AIV's packed rows `mine` times K's scales, split into int8 rows in the QuantQuery slot of
    // the task's first step `step`, with each row's scale and offset term kept for Scores in set `set` (0 or 1: the
    // next task's split may run while this one's steps do); then the cube's signal (both AIVs set it, with or
    // without rows).
    __aicore__ inline void Query(const FaInferTask& task, const FaAivRows& mine, uint32_t step, uint32_t set) {
        if (mine.count > 0) QuantizeQuery(task, mine, step, set);
        AscendC::CrossCoreSetFlag<2, PIPE_MTE3>(kInferFlagKv);
    }

    // Per-token parameters: the step's keys [c0, c0 + cols) of the task's batch, K's scales and offsets and V's
    // scales and scale x offset as columns, and the largest V scale (step slot `slot`). Before the step's Scores.
    __aicore__ inline void StepKeys(const FaInferTask& task, int64_t c0, uint32_t cols, uint32_t slot) {
        if (!keyTokens_ && !valueTokens_) return;
        const AscendC::LocalTensor<float> pairs = pairBuf_.Get<float>(), col = columnBuf_.Get<float>();
        const uint32_t stride = AlignUp(2 * w_, 8);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(id_);
        for (uint32_t which = 0; which < 2; ++which) {
            if (!(which == 0 ? keyTokens_ : valueTokens_)) continue;
            const uint64_t at = section_[which] + ((uint64_t)task.batch * t_->quantTokens + (uint64_t)c0) * 2;
            const AscendC::DataCopyExtParams cp(1, cols * 2 * 4, 0, 0, 0);
            AscendC::DataCopyPad(pairs[which * stride], params_[at], cp,
                                 AscendC::DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
        }
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(id_);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(id_);
        uint64_t kept = 0;
        for (uint32_t which = 0; which < 2; ++which) {
            if (!(which == 0 ? keyTokens_ : valueTokens_)) continue;
            // Counter mode: 2 * cols elements, the even ones (scales) then the odd ones (offsets).
            const AscendC::GatherMaskParams gp(1, 1, 8, 0);
            AscendC::GatherMask(col[(2 * which) * w_], pairs[which * stride], (uint8_t)1, true, 2 * cols, gp, kept);
            AscendC::GatherMask(col[(2 * which + 1) * w_], pairs[which * stride], (uint8_t)2, true, 2 * cols, gp, kept);
        }
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(id_);
        if (!valueTokens_) return;
        if (offset_) AscendC::Mul(col[3 * w_], col[3 * w_], col[2 * w_], (int32_t)cols);  // V's s_j o_j
        const AscendC::LocalTensor<float> red = redBuf_.Get<float>();
        AscendC::ReduceMax(red, col[2 * w_], red[8], (int32_t)cols);
        AscendC::SetFlag<AscendC::HardEvent::V_S>(id_);
        AscendC::WaitFlag<AscendC::HardEvent::V_S>(id_);
        valueScale_[slot] = red.GetValue(0);
        cols_ = cols;
    }

    // Rows [row, row + n) of a step's int32 score parts (a task of `rows` rows) -> the fp32 scores, [n, w] at the
    // start of the work buffer; `first` is the AIV's first row and `set` the task's (the rows' scales and offset
    // terms). Each pass runs over all rows before the next one, which reads its result (a row's instructions in a
    // row would each wait for the previous one's end).
    __aicore__ inline AscendC::LocalTensor<float> Scores(__gm__ int32_t* slot, uint32_t rows, uint32_t row,
                                                         uint32_t first, uint32_t n, uint32_t set) {
        const AscendC::LocalTensor<float> x = Combine(slot + (uint64_t)row * w_, rows, n, w_, parts_);
        const float* scale = rowScale_[set] + (row - first);
        const float* offset = rowOffset_[set] + (row - first);
        for (uint32_t r = 0; r < n; ++r) AscendC::Muls(x[r * w_], x[r * w_], scale[r], (int32_t)w_);
        if (!keyTokens_) {
            if (offset_) {
                for (uint32_t r = 0; r < n; ++r) AscendC::Adds(x[r * w_], x[r * w_], offset[r], (int32_t)w_);
            }
            return x;
        }
        const AscendC::LocalTensor<float> col = columnBuf_.Get<float>();
        if (offset_) {  // + o_j sum(Q)
            for (uint32_t r = 0; r < n; ++r) AscendC::Axpy(x[r * w_], col[w_], offset[r], (int32_t)cols_);
        }
        for (uint32_t r = 0; r < n; ++r) AscendC::Mul(x[r * w_], x[r * w_], col, (int32_t)cols_);
        return x;
    }

    // The probabilities `s` (fp32 [n, w] at the start of the work buffer, kept) -> rows [row, row + n) of the step's
    // int8 parts (step slot `slot`).
    __aicore__ inline void StoreProbs(const AscendC::LocalTensor<float>& s, __gm__ int8_t* gm, uint32_t rows,
                                      uint32_t row, uint32_t first, uint32_t n, uint32_t slot) {
        const uint32_t elems = n * w_;
        const AscendC::LocalTensor<float> x = xBuf_.Get<float>()[elems], tmp = xBuf_.Get<float>()[2 * elems];
        if (!valueTokens_) {
            AscendC::Muls(x, s, 127.0f, (int32_t)elems);
        } else {  // P_j s_j, scaled by 127 / max_j s_j; the row constants sum_j P_j s_j o_j
            const AscendC::LocalTensor<float> col = columnBuf_.Get<float>(), red = redBuf_.Get<float>();
            const float largest = valueScale_[slot];
            AscendC::Muls(x, s, largest > 0.0f ? 127.0f / largest : 0.0f, (int32_t)elems);
            for (uint32_t r = 0; r < n; ++r) {
                AscendC::Mul(x[r * w_], x[r * w_], col[2 * w_], (int32_t)cols_);
                if (!offset_) continue;
                AscendC::Mul(tmp, s[r * w_], col[3 * w_], (int32_t)cols_);
                AscendC::ReduceSum(red[r * 16], tmp, red[n * 16], (int32_t)cols_);
            }
            if (offset_) {
                AscendC::SetFlag<AscendC::HardEvent::V_S>(id_);
                AscendC::WaitFlag<AscendC::HardEvent::V_S>(id_);
                for (uint32_t r = 0; r < n; ++r) rowConst_[slot][row - first + r] = red.GetValue(r * 16);
            }
        }
        Split(x, tmp, elems, probParts_);
        Send(gm + (uint64_t)row * w_, rows, n, w_, probParts_);
    }

    // Rows [first, first + n) of a step's int32 P*V parts (step slot `slot`) -> `opart` (fp32 [n, dvPad]).
    __aicore__ inline void Output(__gm__ int32_t* gm, uint32_t rows, uint32_t first, uint32_t n, uint32_t slot,
                                  const AscendC::LocalTensor<float>& opart) {
        const uint32_t dvPad = p_->dvPad;
        const AscendC::LocalTensor<float> x = Combine(gm + (uint64_t)first * dvPad, rows, n, dvPad, probParts_);
        AscendC::Muls(opart, x, (valueTokens_ ? valueScale_[slot] : 1.0f) / 127.0f, (int32_t)(n * dvPad));
        if (!valueTokens_ || !offset_) return;
        for (uint32_t r = 0; r < n; ++r) {
            AscendC::Adds(opart[r * dvPad], opart[r * dvPad], rowConst_[slot][r], (int32_t)dvPad);
        }
    }

    __aicore__ inline void FoldValueChannels(const AscendC::LocalTensor<float>& acc,
                                             const AscendC::LocalTensor<float>& sums,
                                             const AscendC::LocalTensor<float>& scratch, uint32_t head, uint32_t rows,
                                             uint32_t dvPad) {
        valueFold_.Fold(acc, sums, scratch, head, rows, dvPad);
    }

private:
    static constexpr uint32_t kMaxRows = 64;  // packed rows an AIV owns (mBlock <= 128 / quantParts, halved)

    __aicore__ inline void QuantizeQuery(const FaInferTask& task, const FaAivRows& mine, uint32_t step,
                                         uint32_t set) {
        const uint32_t n = mine.count, elems = n * d_;
        const AscendC::LocalTensor<float> ch = channelBuf_.Get<float>();
        const AscendC::LocalTensor<T> in = inBuf_.Get<T>();
        const AscendC::LocalTensor<float> q = xBuf_.Get<float>(), tmp = q[elems];
        const AscendC::LocalTensor<float> red = redBuf_.Get<float>(), work = red[n * 16];
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(id_);
        if (!keyTokens_ && task.kvHead != head_) {  // K's [scale d | offset d] of the head
            head_ = task.kvHead;
            AscendC::DataCopy(ch, params_[(uint64_t)head_ * 2 * d_], 2 * d_);
        }
        FaInferRuns runs(task.row0 + mine.first, n, p_->group, task.kvHead, true);
        FaInferRun run;
        while (runs.Next(run)) {
            const uint64_t stride = run.Stride(p_->qStride.s, p_->qStride.n);
            const AscendC::DataCopyExtParams cp((uint16_t)run.count, d_ * (uint32_t)sizeof(T),
                                                (uint32_t)((stride - d_) * sizeof(T)), 0, 0);
            AscendC::DataCopyPad(in[run.tileRow * d_],
                                 query_[InferTokenOffset(p_->qStride, task.batch, task.seq, run.token, run.head)], cp,
                                 AscendC::DataCopyPadExtParams<T>(false, 0, 0, 0));
        }
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(id_);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(id_);
        AscendC::Cast(q, in, AscendC::RoundMode::CAST_NONE, elems);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(id_);
        for (uint32_t r = 0; r < n; ++r) {
            const AscendC::LocalTensor<float> row = q[r * d_];
            if (keyTokens_) {  // the offset term's sum(Q)
                if (offset_) AscendC::ReduceSum(red[r * 16], row, work, (int32_t)d_);
            } else {
                AscendC::Mul(row, row, ch, (int32_t)d_);
                if (offset_) {
                    AscendC::Mul(tmp, row, ch[d_], (int32_t)d_);
                    AscendC::ReduceSum(red[r * 16], tmp, work, (int32_t)d_);
                }
            }
            AscendC::Abs(tmp, row, (int32_t)d_);
            AscendC::ReduceMax(red[r * 16 + 8], tmp, work, (int32_t)d_);
        }
        AscendC::SetFlag<AscendC::HardEvent::V_S>(id_);
        AscendC::WaitFlag<AscendC::HardEvent::V_S>(id_);
        for (uint32_t r = 0; r < n; ++r) {
            const float largest = red.GetValue(r * 16 + 8);
            rowScale_[set][r] = largest / 127.0f;
            rowOffset_[set][r] = offset_ ? red.GetValue(r * 16) : 0.0f;
            // A zero row stays zero (its parts all 0), whatever the scale.
            AscendC::Muls(q[r * d_], q[r * d_], largest > 0.0f ? 127.0f / largest : 0.0f, (int32_t)d_);
        }
        Split(q, tmp, elems, parts_);
        Send(ws_->QuantQuery(step) + (uint64_t)mine.first * d_, task.rows, n, d_, parts_);
    }

    // `x` (elems fp32 within +-127, consumed) -> `parts` int8 parts [parts][elems] in the out buffer: h = rint(x)
    // (fp32 -> fp32, in `h`), through half (exact) to int8; x = (x - h) * 254 for the next part. Waits for the out
    // buffer's previous copy.
    __aicore__ inline void Split(const AscendC::LocalTensor<float>& x, const AscendC::LocalTensor<float>& h,
                                 uint32_t elems, uint32_t parts) {
        const AscendC::LocalTensor<half> h16 = hBuf_.Get<half>();
        const AscendC::LocalTensor<int8_t> out = outBuf_.Get<int8_t>();
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(id_);
        for (uint32_t p = 0; p < parts; ++p) {
            AscendC::Cast(h, x, AscendC::RoundMode::CAST_RINT, elems);
            AscendC::Cast(h16, h, AscendC::RoundMode::CAST_NONE, elems);
            AscendC::Cast(out[p * elems], h16, AscendC::RoundMode::CAST_NONE, elems);
            if (p + 1 == parts) break;
            AscendC::Sub(x, x, h, (int32_t)elems);
            AscendC::Muls(x, x, kInferInt8Radix, (int32_t)elems);
        }
    }

    // The out buffer's `parts` parts ([parts][n][cols] int8) -> rows at `dst` (part p at p * rows rows further on).
    __aicore__ inline void Send(__gm__ int8_t* dst, uint32_t rows, uint32_t n, uint32_t cols, uint32_t parts) {
        AscendC::GlobalTensor<int8_t> gm;
        gm.SetGlobalBuffer(dst);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(id_);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(id_);
        AscendC::DataCopy(gm, outBuf_.Get<int8_t>(),
                          AscendC::DataCopyParams((uint16_t)parts, (uint16_t)(n * cols / 32), 0,
                                                  (uint16_t)((rows - n) * cols / 32)));
        AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(id_);
    }

    // n rows of `cols` int32 at `src` in each of `parts` parts (part p at p * rows rows further on) -> fp32
    // sum_p x_p / 254^p, [n, cols] at the start of the work buffer.
    __aicore__ inline AscendC::LocalTensor<float> Combine(__gm__ int32_t* src, uint32_t rows, uint32_t n,
                                                          uint32_t cols, uint32_t parts) {
        const uint32_t elems = n * cols;
        AscendC::GlobalTensor<int32_t> gm;
        gm.SetGlobalBuffer(src);
        const AscendC::LocalTensor<int32_t> in = inBuf_.Get<int32_t>();
        const AscendC::LocalTensor<float> x = xBuf_.Get<float>();
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(id_);
        AscendC::DataCopy(in, gm,
                          AscendC::DataCopyParams((uint16_t)parts, (uint16_t)(elems * 4 / 32),
                                                  (uint16_t)((rows - n) * cols * 4 / 32), 0));
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(id_);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(id_);
        AscendC::Cast(x, in, AscendC::RoundMode::CAST_NONE, parts * elems);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(id_);
        for (uint32_t p = parts - 1; p > 0; --p) {  // the smallest parts first
            AscendC::Axpy(x[(p - 1) * elems], x[p * elems], 1.0f / kInferInt8Radix, (int32_t)elems);
        }
        return x;
    }

    const FaInferTilingData* t_ = nullptr;
    const FaProblemTiling* p_ = nullptr;
    const FaInferWorkspace* ws_ = nullptr;
    int32_t id_ = 0;
    uint32_t parts_ = 0, probParts_ = 0, d_ = 0, w_ = 0, head_ = 0xFFFFFFFFu;
    float rowScale_[2][kMaxRows];   // the AIV's rows of a task (two sets): r = max|q'| / 127
    float rowOffset_[2][kMaxRows];  // and q'.o (per-token K: sum(Q); 0 without offsets)
    float rowConst_[kInferStepSlots][kMaxRows];  // per-token V: sum_j P_j s_j o_j of the step in each slot
    float valueScale_[kInferStepSlots] = {};     // per-token V: the step's largest scale
    bool keyTokens_ = false, valueTokens_ = false, offset_ = false;
    uint32_t cols_ = 0;        // per-token: keys of the current step
    uint64_t section_[2] = {0, 0};  // element offsets of K's and V's parameters
    AscendC::GlobalTensor<T> query_;
    AscendC::GlobalTensor<float> params_;
    AscendC::TBuf<AscendC::TPosition::VECIN> inBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> xBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> hBuf_;
    AscendC::TBuf<AscendC::TPosition::VECOUT> outBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> channelBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> redBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> pairBuf_;       // per token: K's and V's (scale, offset) pairs of a step
    AscendC::TBuf<AscendC::TPosition::VECCALC> columnBuf_;   // K's scales, offsets, V's scales, s o, [4][w] fp32
    FaValueChannelFold valueFold_;
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_INFER_INT8_H
