// Dequantisation of an int8 K/V cache (tiling kvQuant) on the vector cores: each step, the two AIVs of a core split
// the step's keys, read their int8 rows through the block table (FaKvCache), widen them exactly (int8 -> half ->
// fp32), apply value = scale * (x + offset) per channel or per token in fp32, round to the input dtype and write them
// to the core's K/V slot of the step in the workspace; the cube reads that slot as it reads a 16-bit cache, after
// the kInferFlagKv signal.
//
// Why the vector cores: dav-2201's cube multiplies like types only (fp16/bf16 pairs or int8 x int8), so int8 K
// against a 16-bit query needs a widened copy either way. The cube route (int8 K times an int8 identity, the Fixpipe
// dequantising int32 -> fp16 into L1) costs keys x keys x D MACs a step (128 keys: 8x the scores of 16 packed rows)
// and takes one scale per output column with no fractional offset, so per-token scales and offsets would still need
// the vector. Here it is five vector passes over a step's elements, spread over both AIVs and double-buffered
// against their int8 reads; the modeled decode (docs/performance.md) shows the cube waiting on HBM, not on them.
#ifndef NPU_FA_KERNEL_INFER_DEQUANT_H
#define NPU_FA_KERNEL_INFER_DEQUANT_H

#include "infer_common.h"
#include "../tiling/ub_budget.h"
#include "../tile/row_ops.h"

namespace npu_fa {

template <typename T>
class FaInferDequant {
public:
    __aicore__ inline void Init(const FaInferTilingData* t, const FaInferGmArgs& gm, const FaInferWorkspace* ws,
                                uint32_t sub, AscendC::TPipe* pipe) {
        t_ = t;
        p_ = &t->problem;
        ws_ = ws;
        sub_ = sub;
        kv_.Init(t, gm.blockTable);
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
        pipe->InitBuffer(bcastBuf_, u.bcast);
        inElems_ = u.in;
        halfElems_ = u.half / 2;
        paramElems_ = u.param / 8;  // each of scale and offset
        const uint64_t perChannel = (uint64_t)p_->n2 * d_, perToken = (uint64_t)p_->batch * t->quantTokens;
        const uint64_t kSec = t->keyQuantMode == 0 ? perChannel : perToken;
        const uint64_t vSec = t->valueQuantMode == 0 ? perChannel : perToken;
        section_[0] = 0;          // K scale, then K offset
        section_[1] = 2 * kSec;   // V scale, then V offset
        sectionLen_[0] = kSec;
        sectionLen_[1] = vSec;
        for (int32_t b = 0; b < 2; ++b) {
            AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIds[b]);
            AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIds[b]);
        }
    }

    // This AIV's share of keys [c0, c0 + cols) of a step, K then V, into the step's slots; then the cube's signal
    // (both AIVs set it, with or without keys: the cube's mode-2 wait takes one from each).
    __aicore__ inline void Step(const FaInferTask& task, int64_t c0, uint32_t cols, uint32_t step) {
        const uint32_t half = FaMin(AlignUp(CeilDiv(cols, 2), 8), cols);
        const uint32_t first = sub_ == 0 ? 0 : half, end = sub_ == 0 ? half : cols;
        const uint32_t slot = InferSlot(step);
        for (uint32_t which = 0; which < 2; ++which) {
            AscendC::GlobalTensor<T> dst;
            dst.SetGlobalBuffer(ws_->template Dequantized<T>(which, slot));
            for (uint32_t r = first; r < end; r += rows_) {
                Chunk(which, task, c0 + r, FaMin(end - r, rows_), dst[(uint64_t)r * d_]);
            }
        }
        AscendC::CrossCoreSetFlag<2, PIPE_MTE3>(kInferFlagKv);
    }

    __aicore__ inline void End() {
        for (int32_t b = 0; b < 2; ++b) {
            AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIds[b]);
            AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIds[b]);
        }
    }

private:
    // V_MTE2 / MTE2_V / V_MTE3 / MTE3_V IDs of the two chunk buffers (FaInferVector's other transfers use 0-2 and 4).
    static constexpr int32_t kIds[2] = {3, 5};

    // Keys [key, key + n) of K (which 0) or V (1) -> `dst` rows of d elements.
    __aicore__ inline void Chunk(uint32_t which, const FaInferTask& task, int64_t key, uint32_t n,
                                 const AscendC::GlobalTensor<T>& dst) {
        const uint32_t b = chunks_++ & 1, elems = n * d_;
        const bool perToken = (which == 0 ? t_->keyQuantMode : t_->valueQuantMode) != 0;
        const AscendC::LocalTensor<int8_t> in = inBuf_.Get<int8_t>()[b * inElems_];
        const AscendC::LocalTensor<half> wide = halfBuf_.Get<half>()[b * halfElems_];
        const AscendC::LocalTensor<float> f = floatBuf_.Get<float>();
        const AscendC::LocalTensor<float> scale = paramBuf_.Get<float>()[b * 2 * paramElems_];
        const AscendC::LocalTensor<float> offset = scale[paramElems_];
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(kIds[b]);
        LoadRows(which == 0 ? k_ : v_, which == 0 ? p_->kStride : p_->vStride, task, key, n, in);
        LoadParams(which, task, key, n, perToken, scale, offset);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(kIds[b]);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(kIds[b]);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_V>(kIds[b]);
        AscendC::Cast(wide, in, AscendC::RoundMode::CAST_NONE, elems);
        AscendC::Cast(f, wide, AscendC::RoundMode::CAST_NONE, elems);
        AscendC::LocalTensor<float> s = scale, o = offset;
        if (perToken) {  // one 32 B block per key
            const uint8_t blocks = (uint8_t)(AlignUp(n, 8) / 8);
            s = bcastBuf_.Get<float>();
            o = s[rows_ * 8];
            AscendC::Brcb(s, scale, blocks, AscendC::BrcbRepeatParams(1, 8));
            if (t_->quantOffset != 0) AscendC::Brcb(o, offset, blocks, AscendC::BrcbRepeatParams(1, 8));
        }
        if (t_->quantOffset != 0) Apply<FaRowOp::kAdd>(f, o, n, perToken);
        Apply<FaRowOp::kMul>(f, s, n, perToken);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(kIds[b]);  // the int8 rows and the parameters are read
        const AscendC::LocalTensor<T> out = wide.template ReinterpretCast<T>();
        AscendC::Cast(out, f, AscendC::RoundMode::CAST_RINT, elems);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(kIds[b]);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(kIds[b]);
        AscendC::DataCopy(dst, out, elems);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_V>(kIds[b]);
    }

    // The int8 rows of keys [key, key + n) of the task's KV head, run by run through the block table.
    __aicore__ inline void LoadRows(const AscendC::GlobalTensor<int8_t>& src, const FaStrides& st,
                                    const FaInferTask& task, int64_t key, uint32_t n,
                                    const AscendC::LocalTensor<int8_t>& in) {
        for (uint32_t i = 0; i < n;) {
            uint32_t run = 0;
            const uint64_t off = kv_.Offset(st, task, key + i, n - i, run);
            AscendC::DataCopyExtParams cp((uint16_t)run, d_, (uint32_t)(st.s - d_), 0, 0);
            AscendC::DataCopyPad(in[i * d_], src[off], cp, AscendC::DataCopyPadExtParams<int8_t>(false, 0, 0, 0));
            i += run;
        }
    }

    // Per channel: the KV head's d scales (and offsets); per token: the n keys' ones, padded to a 32 B block.
    __aicore__ inline void LoadParams(uint32_t which, const FaInferTask& task, int64_t key, uint32_t n, bool perToken,
                                      const AscendC::LocalTensor<float>& scale,
                                      const AscendC::LocalTensor<float>& offset) {
        const uint64_t at = section_[which] + (perToken ? (uint64_t)task.batch * t_->quantTokens + (uint64_t)key
                                                        : (uint64_t)task.kvHead * d_);
        const uint32_t count = perToken ? n : d_;
        const AscendC::DataCopyExtParams cp(1, count * 4, 0, 0, 0);
        const AscendC::DataCopyPadExtParams<float> pad(true, 0, (uint8_t)(AlignUp(count, 8) - count), 0.0f);
        AscendC::DataCopyPad(scale, params_[at], cp, pad);
        if (t_->quantOffset != 0) AscendC::DataCopyPad(offset, params_[at + sectionLen_[which]], cp, pad);
    }

    // f[r][c] op= p[c] (per channel) or p[r] (per token, one block per row), one instruction per row: the rows touch
    // disjoint bytes and pipeline (see RowSubPerRow).
    template <FaRowOp kOp>
    __aicore__ inline void Apply(const AscendC::LocalTensor<float>& f, const AscendC::LocalTensor<float>& p,
                                 uint32_t n, bool perToken) {
        const AscendC::BinaryRepeatParams rp(1, 1, perToken ? 0 : 1, 8, 8, perToken ? 0 : 8);
        const uint32_t whole = d_ / 64 * 64, tail = d_ - whole;
        for (uint32_t r = 0; r < n; ++r) {
            const AscendC::LocalTensor<float> row = f[r * d_];
            const AscendC::LocalTensor<float> src = perToken ? p[r * 8] : p;
            if (whole > 0) FaRowApply<kOp>(row, src, 64, (uint8_t)(whole / 64), rp);
            if (tail > 0) FaRowApply<kOp>(row[whole], perToken ? src : src[whole], tail, 1, rp);
        }
    }

    const FaInferTilingData* t_ = nullptr;
    const FaProblemTiling* p_ = nullptr;
    const FaInferWorkspace* ws_ = nullptr;
    uint32_t sub_ = 0, rows_ = 0, d_ = 0, inElems_ = 0, halfElems_ = 0, paramElems_ = 0, chunks_ = 0;
    uint64_t section_[2] = {0, 0}, sectionLen_[2] = {0, 0};
    FaKvCache kv_;
    AscendC::GlobalTensor<int8_t> k_, v_;
    AscendC::GlobalTensor<float> params_;
    AscendC::TBuf<AscendC::TPosition::VECIN> inBuf_;
    AscendC::TBuf<AscendC::TPosition::VECOUT> halfBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> floatBuf_;
    AscendC::TBuf<AscendC::TPosition::VECIN> paramBuf_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> bcastBuf_;
};

}  // namespace npu_fa

#endif  // NPU_FA_KERNEL_INFER_DEQUANT_H
