// Dequantisation of an int8 K/V cache (tiling kvQuant) on the vector cores: each step, the two AIVs of a core split
// the step's keys, read their int8 rows through the block table (FaKvCache), widen them exactly (int8 -> half), add
// the offset and (per token) multiply by the scale (fp16 queries: in half, the output's own precision; bf16: in fp32,
// which bf16 is rounded from), and write them in the input dtype to the core's K/V slot of the step in the
// workspace; the cube reads that slot as it reads a 16-bit cache, after the kInferFlagKv signal. Per-channel scales
// are folded out of the stream, as value = s o (x + o) allows: S = Q.(s o (k + o)) = (Q o s).(k + o), so on a
// task's first step each AIV writes its query rows times K's scales (ScaleQueryRows, fp32, rounded once to the
// input dtype) for the cube to load in place of Q; and sum_j P_j s o (v_j + o) = s o (P.v + l o), so V's integers go
// to the cube as they are (exact in fp16 and bf16) and FoldValueChannels scales the task's fp32 output.
//
// Why the vector cores: dav-2201's cube multiplies like types only (fp16/bf16 pairs or int8 x int8), so int8 K
// against a 16-bit query needs a widened copy either way. The cube route (int8 K times an int8 identity, the Fixpipe
// dequantising int32 -> fp16 into L1) costs keys x keys x D MACs a step (128 keys: 8x the scores of 16 packed rows;
// estimated, not modeled), has no bf16 output and takes one scale per output column with no fractional offset, so
// per-token scales and offsets would still need the vector; the vector route is the one built.
//
// What the model allows it (910B2, B 8, N 32:8, KV 4K, D 128, paged, per channel with offsets; bf16 cache 91.5 us):
// the widened copy goes AIV -> GM -> cube (A2 has no other AIV -> AIC path), so every K/V element moves 1 B (int8
// read) + 2 B (written) + 2 B (read by the cube): 353 MB of GM traffic with the scores and partials, 50.4 us at the
// 7 TB/s L2 rate, 56.5 us with the 6.1 us launch = 0.62x the bf16 time, so issue 30's 0.6x is out of reach on this
// route. Reached: fp16 79.7 us (0.87x; aiv.MTE2 65 us binds: per step and AIV four latency-bound DMAs), bf16
// 121.7 us (1.33x; aiv.V 96 us binds: with the scales folded out, K still takes four passes and V three (int8 ->
// half -> fp32 -> bf16: A2's Cast has no half -> bf16), and the busiest cores run 3 of the 64 tasks, 2.67 a core
// on average). Before: 116.8 and 171.6 us. Left: an fp16 cube for bf16 queries (one pass per element, but Q o s
// needs a per-row power of two to stay in fp16's range), or int8 x int8 scores (Q split into int8 high and low rows
// in the 16-row tile: no round trip for K).
#ifndef NPU_FA_KERNEL_INFER_DEQUANT_H
#define NPU_FA_KERNEL_INFER_DEQUANT_H

#include "infer_common.h"
#include "../tiling/ub_budget.h"
#include "../tile/row_ops.h"

namespace npu_fa {

// Per-channel V folded out of the stream (both int8 routes): the cube's P * V ran on the integers, so before the
// division by the row sums l, acc[r] = (acc[r] + l_r * offset) o scale (sum_j P_rj s o (v_j + o) = s o (P v + l o)).
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
                                const AscendC::LocalTensor<float>& scratch, uint32_t head, uint32_t rows, uint32_t dvPad) {
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

// The dtype the dequantisation computes in: the output's for fp16, fp32 for bf16 (no bf16 vector arithmetic).
template <typename T>
struct FaDequantCalc {
    using Type = float;
};
template <>
struct FaDequantCalc<half> {
    using Type = half;
};

template <typename T>
class FaInferDequant {
    using Calc = typename FaDequantCalc<T>::Type;

public:
    __aicore__ inline void Init(const FaInferTilingData* t, const FaInferGmArgs& gm, const FaInferWorkspace* ws,
                                uint32_t sub, AscendC::TPipe* pipe, int32_t id0, int32_t id1) {
        t_ = t;
        ids_[0] = id0, ids_[1] = id1;
        p_ = &t->problem;
        ws_ = ws;
        sub_ = sub;
        kv_.Init(t, gm.blockTable);
        query_.SetGlobalBuffer((__gm__ T*)gm.query);
        k_.SetGlobalBuffer((__gm__ int8_t*)gm.key);
        v_.SetGlobalBuffer((__gm__ int8_t*)gm.value);
        params_.SetGlobalBuffer((__gm__ float*)gm.antiquant);
        rows_ = t->quantRows;
        d_ = p_->d;
        const FaDequantUbSizes u = DequantUbSizes(rows_, d_);
        pipe->InitBuffer(inBuf_, 2 * u.in);
        pipe->InitBuffer(halfBuf_, 2 * u.half);
        pipe->InitBuffer(floatBuf_, u.f32);
        pipe->InitBuffer(paramBuf_, 2 * u.param);
        pipe->InitBuffer(calcBuf_, u.calc);
        pipe->InitBuffer(channelBuf_, u.channel);
        inElems_ = u.in;
        halfElems_ = u.half / 2;
        paramElems_ = u.param / 4;
        const uint64_t perChannel = (uint64_t)p_->n2 * d_ * 2, perToken = (uint64_t)p_->batch * t->quantTokens * 2;
        section_[1] = t->keyQuantMode == 0 ? perChannel : perToken;
        valueFold_.Init(pipe, params_, section_[1], d_, t->quantOffset != 0, ids_[0]);
        for (int32_t b = 0; b < 2; ++b) {
            AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(ids_[b]);
            AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(ids_[b]);
        }
    }

    // This AIV's share of keys [c0, c0 + cols) of a step, K then V, into the step's slots (on a task's first step
    // with per-channel K, first its rows `mine` of the query times K's scales); then the cube's signal (both AIVs
    // set it, with or without keys: the cube's mode-2 wait takes one from each).
    __aicore__ inline void Step(const FaInferTask& task, const FaAivRows& mine, int64_t c0, uint32_t cols,
                                uint32_t step, bool taskStart) {
        if (task.kvHead != channelHead_) LoadChannels(task.kvHead);
        if (taskStart && t_->keyQuantMode == 0) {
            AscendC::GlobalTensor<T> dst;
            dst.SetGlobalBuffer(ws_->template ScaledQuery<T>(step));
            const uint32_t piece = FaMax(rows_ / 2, 1u);  // query rows of T fit in the int8 buffer
            for (uint32_t r = 0; r < mine.count; r += piece) {
                const uint32_t row = mine.first + r;
                ScaleQueryRows(task, row, FaMin(mine.count - r, piece), dst[(uint64_t)row * d_]);
            }
        }
        const uint32_t half = FaMin(AlignUp(CeilDiv(cols, 2), 8), cols);
        const uint32_t first = sub_ == 0 ? 0 : half, end = sub_ == 0 ? half : cols;
        for (uint32_t which = 0; which < 2; ++which) {
            AscendC::GlobalTensor<T> dst;
            dst.SetGlobalBuffer(ws_->template Dequantized<T>(which, step));
            for (uint32_t r = first; r < end; r += rows_) {
                Chunk(which, task, c0 + r, FaMin(end - r, rows_), dst[(uint64_t)r * d_]);
            }
        }
        AscendC::CrossCoreSetFlag<2, PIPE_MTE3>(kInferFlagKv);
    }

    // Per-channel V, folded out of the stream (FaValueChannelFold).
    __aicore__ inline void FoldValueChannels(const AscendC::LocalTensor<float>& acc,
                                             const AscendC::LocalTensor<float>& sums,
                                             const AscendC::LocalTensor<float>& scratch, uint32_t head, uint32_t rows,
                                             uint32_t dvPad) {
        valueFold_.Fold(acc, sums, scratch, head, rows, dvPad);
    }

    __aicore__ inline void End() {
        for (int32_t b = 0; b < 2; ++b) {
            AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(ids_[b]);
            AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(ids_[b]);
        }
    }

private:
    // V_MTE2 / MTE2_V / V_MTE3 / MTE3_V IDs of the two chunk buffers, from the owner (0-5 only are free of TPipe's).
    int32_t ids_[2] = {0, 0};
    static constexpr uint32_t kNoHead = 0xFFFFFFFFu;

    // K's per-channel scales and offsets of KV head `head` ([scale d | offset d], fp32 rows of the antiquant
    // argument's [N2, 2, D] section), kept while the tasks stay on that head.
    __aicore__ inline void LoadChannels(uint32_t head) {
        channelHead_ = head;
        if (t_->keyQuantMode != 0) return;
        AscendC::PipeBarrier<PIPE_ALL>();  // every chunk is done with the previous head's
        const AscendC::LocalTensor<float> f = channelBuf_.Get<float>();
        AscendC::DataCopy(f, params_[section_[0] + (uint64_t)head * 2 * d_], 2 * d_);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(ids_[0]);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(ids_[0]);
        Calc* calc = nullptr;
        channel_ = InCalc(f, channelBuf_.Get<half>()[4 * d_], 2 * d_, calc);
    }

    // Packed query rows [row, row + n) of the task (at most rows_ / 2) times K's per-channel scales, in fp32, -> `dst`
    // rows of d elements in the input dtype, through the chunk buffers (the int8 one holds the rows as loaded).
    __aicore__ inline void ScaleQueryRows(const FaInferTask& task, uint32_t row, uint32_t n,
                                          const AscendC::GlobalTensor<T>& dst) {
        const uint32_t b = chunks_++ & 1, elems = n * d_;
        const AscendC::LocalTensor<T> in = inBuf_.Get<int8_t>()[b * inElems_].template ReinterpretCast<T>();
        const AscendC::LocalTensor<T> out = halfBuf_.Get<half>()[b * halfElems_].template ReinterpretCast<T>();
        const AscendC::LocalTensor<float> x = floatBuf_.Get<float>();
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(ids_[b]);
        FaInferRuns runs(task.row0 + row, n, p_->group, task.kvHead, true);
        FaInferRun run;
        while (runs.Next(run)) {
            const uint64_t stride = run.Stride(p_->qStride.s, p_->qStride.n);
            const AscendC::DataCopyExtParams cp((uint16_t)run.count, d_ * (uint32_t)sizeof(T),
                                                (uint32_t)((stride - d_) * sizeof(T)), 0, 0);
            AscendC::DataCopyPad(in[run.tileRow * d_], query_[InferTokenOffset(p_->qStride, task.batch, task.seq,
                                                                                run.token, run.head)],
                                 cp, AscendC::DataCopyPadExtParams<T>(false, 0, 0, 0));
        }
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(ids_[b]);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(ids_[b]);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(ids_[b]);
        AscendC::Cast(x, in, AscendC::RoundMode::CAST_NONE, elems);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(ids_[b]);
        Apply<FaRowOp::kMul>(x, channelBuf_.Get<float>(), n, false);
        AscendC::Cast(out, x, AscendC::RoundMode::CAST_RINT, elems);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(ids_[b]);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(ids_[b]);
        AscendC::DataCopy(dst, out, elems);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(ids_[b]);
    }

    // Keys [key, key + n) of K (which 0) or V (1) -> `dst` rows of d elements.
    __aicore__ inline void Chunk(uint32_t which, const FaInferTask& task, int64_t key, uint32_t n,
                                 const AscendC::GlobalTensor<T>& dst) {
        const uint32_t b = chunks_++ & 1, elems = n * d_;
        const bool perToken = (which == 0 ? t_->keyQuantMode : t_->valueQuantMode) != 0;
        const AscendC::LocalTensor<int8_t> in = inBuf_.Get<int8_t>()[b * inElems_];
        const AscendC::LocalTensor<half> wide = halfBuf_.Get<half>()[b * halfElems_];
        const AscendC::LocalTensor<float> tokens = paramBuf_.Get<float>()[b * paramElems_];
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(ids_[b]);
        LoadRows(which == 0 ? k_ : v_, which == 0 ? p_->kStride : p_->vStride, task, key, n, in);
        if (perToken) {  // the n keys' (scale, offset) pairs, padded to a 32 B block
            const uint64_t at = section_[which] + ((uint64_t)task.batch * t_->quantTokens + (uint64_t)key) * 2;
            const AscendC::DataCopyExtParams cp(1, n * 2 * 4, 0, 0, 0);
            const AscendC::DataCopyPadExtParams<float> pad(true, 0, (uint8_t)(AlignUp(2 * n, 8) - 2 * n), 0.0f);
            AscendC::DataCopyPad(tokens, params_[at], cp, pad);
        }
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(ids_[b]);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(ids_[b]);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(ids_[b]);
        AscendC::Cast(wide, in, AscendC::RoundMode::CAST_NONE, elems);
        Calc* calc = nullptr;  // picks the overloads of Working and InCalc
        const AscendC::LocalTensor<Calc> x = Working(wide, floatBuf_.Get<float>(), elems, calc);
        AscendC::LocalTensor<Calc> p;
        uint32_t offsetAt = d_;  // per channel: the scale row, then the offset row
        if (!perToken) {
            p = channel_;
        } else {  // one 32 B block per value: scale and offset blocks alternate, a pair per key
            const AscendC::LocalTensor<Calc> blocks = calcBuf_.Get<Calc>();
            const AscendC::LocalTensor<Calc> pairs = InCalc(tokens, calcBuf_.Get<half>()[rows_ * 32], 2 * n, calc);
            AscendC::Brcb(blocks, pairs, (uint8_t)(AlignUp(2 * n, 8) / 8), AscendC::BrcbRepeatParams(1, 8));
            p = blocks;
            offsetAt = 32 / sizeof(Calc);
        }
        // Per-channel scales are folded out: K's into the query rows (ScaleQueryRows), V's into the output
        // (FoldValueChannels); V's offset too.
        if (t_->quantOffset != 0 && (perToken || which == 0)) Apply<FaRowOp::kAdd>(x, p[offsetAt], n, perToken);
        if (perToken) Apply<FaRowOp::kMul>(x, p, n, perToken);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(ids_[b]);  // the int8 rows and the parameters are read
        const AscendC::LocalTensor<T> out = wide.template ReinterpretCast<T>();
        Narrow(out, x, elems);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(ids_[b]);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(ids_[b]);
        AscendC::DataCopy(dst, out, elems);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(ids_[b]);
    }

    // The int8 rows of keys [key, key + n) of the task's KV head, run by run through the block table.
    __aicore__ inline void LoadRows(const AscendC::GlobalTensor<int8_t>& src, const FaStrides& st,
                                    const FaInferTask& task, int64_t key, uint32_t n,
                                    const AscendC::LocalTensor<int8_t>& in) {
        for (uint32_t i = 0; i < n;) {
            uint32_t run = 0;
            const uint64_t off = kv_.Offset(st, task, key + i, n - i, run);
            // Rows at pitch d (a (blocks, N2, block_size, D) page, BNSD, TND) move as one burst.
            const bool packed = st.s == d_;
            AscendC::DataCopyExtParams cp(packed ? 1 : (uint16_t)run, packed ? run * d_ : d_,
                                          packed ? 0 : (uint32_t)(st.s - d_), 0, 0);
            AscendC::DataCopyPad(in[i * d_], src[off], cp, AscendC::DataCopyPadExtParams<int8_t>(false, 0, 0, 0));
            i += run;
        }
    }

    // The rows in the dtype of the arithmetic: half as widened, or fp32 (`f`).
    __aicore__ inline AscendC::LocalTensor<half> Working(const AscendC::LocalTensor<half>& wide,
                                                         const AscendC::LocalTensor<float>&, uint32_t, half*) {
        return wide;
    }
    __aicore__ inline AscendC::LocalTensor<float> Working(const AscendC::LocalTensor<half>& wide,
                                                          const AscendC::LocalTensor<float>& f, uint32_t elems, float*) {
        AscendC::Cast(f, wide, AscendC::RoundMode::CAST_NONE, elems);
        return f;
    }
    // The result in the input dtype (fp16: already there, in place).
    __aicore__ inline void Narrow(const AscendC::LocalTensor<half>&, const AscendC::LocalTensor<half>&, uint32_t) {}
    __aicore__ inline void Narrow(const AscendC::LocalTensor<bfloat16_t>& out, const AscendC::LocalTensor<float>& x,
                                  uint32_t elems) {
        AscendC::Cast(out, x, AscendC::RoundMode::CAST_RINT, elems);
    }
    // `count` fp32 parameters in the dtype of the arithmetic: as they are, or rounded to half into `h`.
    __aicore__ inline AscendC::LocalTensor<float> InCalc(const AscendC::LocalTensor<float>& p,
                                                         const AscendC::LocalTensor<half>&, uint32_t, float*) {
        return p;
    }
    __aicore__ inline AscendC::LocalTensor<half> InCalc(const AscendC::LocalTensor<float>& p,
                                                        const AscendC::LocalTensor<half>& h, uint32_t count, half*) {
        AscendC::Cast(h, p, AscendC::RoundMode::CAST_RINT, AlignUp(count, 8));
        return h;
    }

    // x[r][c] op= p[c] (per channel) or the block of row r (per token: every other 32 B block, from p), one call per
    // 256 B of columns with a repeat per row.
    template <FaRowOp kOp, typename E>
    __aicore__ inline void Apply(const AscendC::LocalTensor<E>& x, const AscendC::LocalTensor<E>& p, uint32_t n,
                                 bool perToken) {
        const uint32_t lanes = 256 / sizeof(E);
        const uint8_t rowBlocks = (uint8_t)(d_ * sizeof(E) / 32);
        const AscendC::BinaryRepeatParams rp(1, 1, perToken ? 0 : 1, rowBlocks, rowBlocks, perToken ? 2 : 0);
        for (uint32_t c = 0; c < d_; c += lanes) {
            FaRowApply<kOp>(x[c], perToken ? p : p[c], (uint64_t)FaMin(d_ - c, lanes), (uint8_t)n, rp);
        }
    }

    const FaInferTilingData* t_ = nullptr;
    const FaProblemTiling* p_ = nullptr;
    const FaInferWorkspace* ws_ = nullptr;
    uint32_t sub_ = 0, rows_ = 0, d_ = 0, inElems_ = 0, halfElems_ = 0, paramElems_ = 0, chunks_ = 0;
    uint32_t channelHead_ = kNoHead;
    uint64_t section_[2] = {0, 0};  // element offsets of K's and V's parameters
    FaKvCache kv_;
    AscendC::GlobalTensor<T> query_;
    AscendC::GlobalTensor<int8_t> k_, v_;
    AscendC::GlobalTensor<float> params_;
    AscendC::LocalTensor<Calc> channel_;  // K's [scale d | offset d] of channelHead_, in Calc
    AscendC::TBuf<AscendC::TPosition::VECIN> inBuf_;
    AscendC::TBuf<AscendC::TPosition::VECOUT> halfBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> floatBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> paramBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> calcBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> channelBuf_;
    FaValueChannelFold valueFold_;
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_INFER_DEQUANT_H
