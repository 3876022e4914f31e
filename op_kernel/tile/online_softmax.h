// The online softmax of an AIV over the score tiles of its query rows, shared by the forward and the inference
// kernels: per row a running max m and sum l in fp32 (one 32 B block per row, per task slot), the rescale factor
// alpha = exp(m_old - m_new) of each step in flight (per step slot), and the running output's fold. The owner
// allocates the buffers (its UB budget counts them) and hands them over.
#ifndef NPU_FA_TILE_ONLINE_SOFTMAX_H
#define NPU_FA_TILE_ONLINE_SOFTMAX_H

#include "kernel_operator.h"
#include "../tiling/base.h"
#include "mask.h"
#include "row_ops.h"

namespace npu_fa {

// The lazy rescale's per-row references (the forward's): the reference max of the chunk's task slot, the rows' rise
// ref_old - m of the step, one compare bit per statistic element, and the threshold past which a row moves its
// reference.
struct FaLazyRefs {
    AscendC::LocalTensor<float> refs, rise;
    AscendC::LocalTensor<uint8_t> bits;
    float threshold;
};

// kSlots: tasks (and steps) in flight, each with its own statistics until its last output fold.
template <uint32_t kSlots>
class FaOnlineSoftmax {
public:
    // Statistic buffers of `stats`: running max and sum per task slot, rescale per step slot, then scratch
    // (broadcast row statistic, block-reduce results) and two outputs.
    static constexpr uint32_t kMax = 0, kSum = kSlots, kAlpha = 2 * kSlots, kBcast = 3 * kSlots, kRed = kBcast + 1,
                              kMaxOut = kBcast + 2, kSumOut = kBcast + 3, kBuffers = kBcast + 4;

    // `stats`: kBuffers buffers of `statElems` floats; `fold`: [rows, 64] fp32 reduction scratch; `row`: one float
    // per row; `w`: the score tiles' width.
    __aicore__ inline void Init(const AscendC::LocalTensor<float>& stats, uint32_t statElems,
                                const AscendC::LocalTensor<float>& fold, const AscendC::LocalTensor<float>& row,
                                uint32_t w) {
        stats_ = stats;
        statElems_ = statElems;
        fold_ = fold;
        row_ = row;
        w_ = w;
    }

    __aicore__ inline AscendC::LocalTensor<float> Stat(uint32_t i) const { return stats_[i * statElems_]; }

    // Row max or sum of s[rows, w] broadcast to one 32 B block per row in Stat(kBcast). Tiles of 256 or 512 columns
    // take one BlockReduce over the whole tile (1 cycle per repeat) -> [rows, w / 8] block results, then one of each
    // row's w / 64 result repeats (mask w / 8) -> w / 64 values in the row's 8-slot block, then one over those slots
    // (bit mask: the first w / 64 of each block) -> one value per row: three dependent instructions, where folding
    // the 64-column chunks first takes w / 64 - 1 dependent Max/Adds (2 cycles per repeat) before two BlockReduces
    // (prefill over a cache, 256 keys: 0.82 -> 0.92 of the forward's utilisation at worst, docs/performance.md).
    // 128 columns keep their one fold: the other way has as many dependent instructions.
    template <bool kIsMax>
    __aicore__ inline void RowReduce(const AscendC::LocalTensor<float>& s, uint32_t rows) {
        AscendC::LocalTensor<float> red = Stat(kRed);
        const uint32_t rows8 = AlignUp(rows, 8);
        if (w_ >= 256) {
            const uint32_t reps = w_ / 64, rowsPerCall = 255 / reps;  // repeats <= 255
            for (uint32_t r = 0; r < rows; r += rowsPerCall) {
                const int32_t rep = (int32_t)(FaMin((int64_t)(rows - r), (int64_t)rowsPerCall) * reps);
                if (kIsMax) {
                    AscendC::BlockReduceMax(fold_[r * reps * 8], s[r * w_], rep, 64, 1, 1, 8);
                } else {
                    AscendC::BlockReduceSum(fold_[r * reps * 8], s[r * w_], rep, 64, 1, 1, 8);
                }
            }
            // Slots past a row's w / 64 values are left unwritten (blocks without active lanes) and masked out next.
            uint64_t firstSlots[2] = {((1ULL << reps) - 1) * 0x0101010101010101ULL, 0};
            if (kIsMax) {
                AscendC::BlockReduceMax(red, fold_, (int32_t)rows, (int32_t)(reps * 8), 1, 1, (int32_t)reps);
                AscendC::BlockReduceMax(row_, red, (int32_t)(rows8 / 8), firstSlots, 1, 1, 8);
            } else {
                AscendC::BlockReduceSum(red, fold_, (int32_t)rows, (int32_t)(reps * 8), 1, 1, (int32_t)reps);
                AscendC::BlockReduceSum(row_, red, (int32_t)(rows8 / 8), firstSlots, 1, 1, 8);
            }
        } else {
            const uint8_t wBlocks = (uint8_t)(w_ / 8);
            AscendC::LocalTensor<float> src = s;
            uint8_t srcRep = wBlocks;
            if (w_ > 64) {  // fold the 64-column chunks of each row into one
                AscendC::BinaryRepeatParams first(1, 1, 1, 8, wBlocks, wBlocks);
                AscendC::BinaryRepeatParams more(1, 1, 1, 8, 8, wBlocks);
                for (uint32_t c = 64; c < w_; c += 64) {
                    const AscendC::LocalTensor<float>& lhs = c == 64 ? s : fold_;
                    const AscendC::BinaryRepeatParams& p = c == 64 ? first : more;
                    if (kIsMax) {
                        AscendC::Max(fold_, lhs, s[c], (uint64_t)64, (uint8_t)rows, p);
                    } else {
                        AscendC::Add(fold_, lhs, s[c], (uint64_t)64, (uint8_t)rows, p);
                    }
                }
                src = fold_;
                srcRep = 8;
            }
            if (kIsMax) {
                AscendC::BlockReduceMax(red, src, (int32_t)rows, 64, 1, 1, srcRep);
                AscendC::BlockReduceMax(row_, red, (int32_t)(rows8 / 8), 64, 1, 1, 8);
            } else {
                AscendC::BlockReduceSum(red, src, (int32_t)rows, 64, 1, 1, srcRep);
                AscendC::BlockReduceSum(row_, red, (int32_t)(rows8 / 8), 64, 1, 1, 8);
            }
        }
        AscendC::Brcb(Stat(kBcast), row_, (uint8_t)(rows8 / 8), AscendC::BrcbRepeatParams(1, 8));
    }

    // Rows [r0, r0 + rows) (r0 a multiple of 8: whole 32 B blocks) of a step's scores s[rows, w] become
    // p = exp(s - m_new): running max m_new = max(m_old, rowmax(s)) and alpha = exp(m_old - m_new) (not on the
    // task's first step).
    __aicore__ inline void Exponentiate(const AscendC::LocalTensor<float>& s, uint32_t rows, uint32_t r0,
                                        uint32_t taskSlot, uint32_t stepSlot, bool first) {
        const uint32_t statN = AlignUp(rows, 8) * 8;
        AscendC::LocalTensor<float> mRun = Stat(kMax + taskSlot)[r0 * 8];
        AscendC::LocalTensor<float> alpha = Stat(kAlpha + stepSlot)[r0 * 8];
        AscendC::LocalTensor<float> bcast = Stat(kBcast);
        RowReduce<true>(s, rows);
        if (!first) {
            AscendC::Max(bcast, bcast, mRun, (int32_t)statN);
            AscendC::Sub(alpha, mRun, bcast, (int32_t)statN);
            AscendC::Exp(alpha, alpha, (int32_t)statN);
        }
        AscendC::DataCopy(mRun, bcast, statN);
        RowSubPerRow(s, bcast, rows, w_);
        AscendC::Exp(s, s, (int32_t)(rows * w_));
    }

    // Exponentiate against a per-row reference max (the forward's lazy rescale): the running max m as above, then a
    // row whose m passed its reference by more than the threshold takes m as its reference from then on, alpha =
    // exp(ref_old - ref_new) (1 where the reference stays), and p = exp(s - ref) <= exp(threshold). The rise receives
    // ref_old - m per row (<= 0; the task's first step: 0).
    __aicore__ inline void ExponentiateLazy(const AscendC::LocalTensor<float>& s, uint32_t rows, uint32_t r0,
                                            uint32_t taskSlot, uint32_t stepSlot, bool first, const FaLazyRefs& lazy) {
        const uint32_t statN = AlignUp(rows, 8) * 8;
        AscendC::LocalTensor<float> mRun = Stat(kMax + taskSlot)[r0 * 8];
        AscendC::LocalTensor<float> bcast = Stat(kBcast);
        const AscendC::LocalTensor<float> ref = lazy.refs[r0 * 8];
        RowReduce<true>(s, rows);
        if (!first) AscendC::Max(bcast, bcast, mRun, (int32_t)statN);
        MoveReferences(lazy, r0, stepSlot, statN, first);
        AscendC::DataCopy(mRun, bcast, statN);
        RowSubPerRow(s, ref, rows, w_);
        AscendC::Exp(s, s, (int32_t)(rows * w_));
    }

    // Lazy rescale at a task's end: l and the output rows acc[rows, dvPad] move from the reference to the running
    // max (factor exp(ref - m) <= 1), so that the statistics out are the usual (max, sum).
    __aicore__ inline void LeaveReference(const AscendC::LocalTensor<float>& acc, const AscendC::LocalTensor<float>& refs,
                                          uint32_t taskSlot, uint32_t rows, uint32_t dvPad) {
        const uint32_t statN = AlignUp(rows, 8) * 8;
        AscendC::LocalTensor<float> e = Stat(kBcast);
        AscendC::Sub(e, refs, Stat(kMax + taskSlot), (int32_t)statN);
        AscendC::Exp(e, e, (int32_t)statN);
        AscendC::Mul(Stat(kSum + taskSlot), Stat(kSum + taskSlot), e, (int32_t)statN);
        RowMul(acc, e, rows, dvPad);
    }

    // Exponentiate for half scores s[rows, w] (w a multiple of 128; the forward's high-performance chain): the row max
    // and the statistics as above in fp32, then s - x and p = exp(s - x) in half (128 lanes per repeat) into `p`, x
    // the running max, or with `lazy` the reference (ExponentiateLazy's; p <= e^threshold, in range of half). Both are
    // maxima of half values, so their half copies are exact.
    __aicore__ inline void ExponentiateHalf(const AscendC::LocalTensor<half>& s, const AscendC::LocalTensor<half>& p,
                                            uint32_t rows, uint32_t r0, uint32_t taskSlot, uint32_t stepSlot,
                                            bool first, const FaLazyRefs* lazy = nullptr) {
        const uint32_t rows8 = AlignUp(rows, 8), statN = rows8 * 8;
        AscendC::LocalTensor<float> mRun = Stat(kMax + taskSlot)[r0 * 8];
        AscendC::LocalTensor<float> alpha = Stat(kAlpha + stepSlot)[r0 * 8];
        AscendC::LocalTensor<float> bcast = Stat(kBcast);
        AscendC::LocalTensor<float> scratch = Stat(kRed);
        RowReduceHalf<true>(s, rows);
        if (!first) {  // the running max, one value per row (its 8 copies reduce to one), joins the chunk's
            AscendC::BlockReduceMax(scratch, mRun, (int32_t)(rows8 / 8), 64, 1, 1, 8);
            AscendC::Max(row_, row_, scratch, (int32_t)rows8);
        }
        AscendC::Brcb(bcast, row_, (uint8_t)(rows8 / 8), AscendC::BrcbRepeatParams(1, 8));
        if (lazy != nullptr) {
            MoveReferences(*lazy, r0, stepSlot, statN, first);
            // the references, one value per row, replace the running max in row_ (unchanged on the first step)
            if (!first) AscendC::BlockReduceMax(row_, lazy->refs[r0 * 8], (int32_t)(rows8 / 8), 64, 1, 1, 8);
        } else if (!first) {
            AscendC::Sub(alpha, mRun, bcast, (int32_t)statN);
            AscendC::Exp(alpha, alpha, (int32_t)statN);
        }
        AscendC::DataCopy(mRun, bcast, statN);
        AscendC::LocalTensor<half> rowH = fold_.ReinterpretCast<half>();
        AscendC::LocalTensor<half> bcastH = scratch.ReinterpretCast<half>();  // one 32 B block of 16 per row
        AscendC::Cast(rowH, row_, AscendC::RoundMode::CAST_RINT, rows8);
        AscendC::Brcb(bcastH, rowH, (uint8_t)(rows8 / 8), AscendC::BrcbRepeatParams(1, 8));
        const AscendC::BinaryRepeatParams sub(1, 1, 0, 8, 8, 0);
        for (uint32_t r = 0; r < rows; ++r) {  // one instruction per row: disjoint bytes, they pipeline
            AscendC::Sub(s[r * w_], s[r * w_], bcastH[r * 16], (uint64_t)128, (uint8_t)(w_ / 128), sub);
        }
        AscendC::Exp(p, s, (int32_t)(rows * w_));
    }

    // Running sum l = alpha * l + rowsum(p) of rows [r0, r0 + rows), in fp32.
    __aicore__ inline void AddRowSums(const AscendC::LocalTensor<float>& p, uint32_t rows, uint32_t r0,
                                      uint32_t taskSlot, uint32_t stepSlot, bool first) {
        RowReduce<false>(p, rows);
        AddReducedSums(rows, r0, taskSlot, stepSlot, first);
    }

    // AddRowSums for the fp16 chain's half P[rows, w]: sums of 16 in half (ReduceDataBlock's binary tree, each add
    // rounded to half), the rest in fp32 (RowReduceHalf). Against widening P first (Cast, then the fp32 reduction:
    // 64 lanes per repeat for both) it halves the chain's row-sum work, about a quarter of the chunk's vector time.
    // A 16-term sum is at most 16 e^threshold: the lazy threshold of 8 (the host tiling's kLazyThreshold) keeps it
    // below 47 700.
    __aicore__ inline void AddRowSumsHalf(const AscendC::LocalTensor<half>& p, uint32_t rows, uint32_t r0,
                                          uint32_t taskSlot, uint32_t stepSlot, bool first) {
        RowReduceHalf<false>(p, rows);
        AscendC::Brcb(Stat(kBcast), row_, (uint8_t)(AlignUp(rows, 8) / 8), AscendC::BrcbRepeatParams(1, 8));
        AddReducedSums(rows, r0, taskSlot, stepSlot, first);
    }

private:
    // l = alpha * l + the row sums broadcast in Stat(kBcast).
    __aicore__ inline void AddReducedSums(uint32_t rows, uint32_t r0, uint32_t taskSlot, uint32_t stepSlot, bool first) {
        const uint32_t statN = AlignUp(rows, 8) * 8;
        AscendC::LocalTensor<float> lRun = Stat(kSum + taskSlot)[r0 * 8];
        AscendC::LocalTensor<float> bcast = Stat(kBcast);
        if (first) {
            AscendC::DataCopy(lRun, bcast, statN);
        } else {
            AscendC::Mul(lRun, lRun, Stat(kAlpha + stepSlot)[r0 * 8], (int32_t)statN);
            AscendC::Add(lRun, lRun, bcast, (int32_t)statN);
        }
    }

public:
    // The running output acc[rows, dvPad] takes a step's P*V: acc = alpha * acc + opart (the task's first step: opart).
    __aicore__ inline void Fold(const AscendC::LocalTensor<float>& acc, const AscendC::LocalTensor<float>& opart,
                                uint32_t stepSlot, uint32_t rows, uint32_t dvPad, bool first) {
        const uint32_t n = rows * dvPad;
        if (first) {
            AscendC::DataCopy(acc, opart, n);
        } else {
            RowMul(acc, Stat(kAlpha + stepSlot), rows, dvPad);
            AscendC::Add(acc, acc, opart, (int32_t)n);
        }
    }

    // Lazy rescale: the running output acc[rows, dvPad] takes a flushed O (P*V since the last flush, against the
    // references before this step's): acc = alpha * (acc + opart), or alpha * opart for the task's first flush.
    __aicore__ inline void FoldFlushed(const AscendC::LocalTensor<float>& acc, const AscendC::LocalTensor<float>& opart,
                                       uint32_t stepSlot, uint32_t rows, uint32_t dvPad, bool first) {
        if (first) {
            AscendC::DataCopy(acc, opart, rows * dvPad);
        } else {
            AscendC::Add(acc, acc, opart, (int32_t)(rows * dvPad));
        }
        RowMul(acc, Stat(kAlpha + stepSlot), rows, dvPad);
    }

    // acc /= l at the task's end; rows that saw no key (max still kMaskValue) divide by +inf and get 0. `valid`
    // receives the rows' bits (max != kMaskValue); Stat(kBcast) holds the divisor afterwards.
    __aicore__ inline void Normalize(const AscendC::LocalTensor<float>& acc, const AscendC::LocalTensor<uint8_t>& valid,
                                     uint32_t taskSlot, uint32_t rows, uint32_t dvPad) {
        const uint32_t statN = AlignUp(rows, 8) * 8;
        AscendC::LocalTensor<float> divisor = Stat(kBcast);
        AscendC::Compares(valid, Stat(kMax + taskSlot), kMaskValue, AscendC::CMPMODE::NE, statN);
        AscendC::Select(divisor, valid, Stat(kSum + taskSlot), PositiveInfinity(),
                        AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, statN);
        RowDiv(acc, divisor, rows, dvPad);
    }

    __aicore__ inline static float PositiveInfinity() { return __builtin_huge_valf(); }

private:
    // Lazy rescale, rows [r0, r0 + rows) with their running max m in Stat(kBcast): the task's first step takes m as
    // the reference; later steps set rise = ref_old - m and move the rows with rise < -threshold to m, alpha =
    // exp(ref_old - ref_new).
    __aicore__ inline void MoveReferences(const FaLazyRefs& lazy, uint32_t r0, uint32_t stepSlot, uint32_t statN,
                                          bool first) {
        const AscendC::LocalTensor<float> m = Stat(kBcast), ref = lazy.refs[r0 * 8], rise = lazy.rise[r0 * 8];
        const AscendC::LocalTensor<float> alpha = Stat(kAlpha + stepSlot)[r0 * 8];
        if (first) {
            AscendC::DataCopy(ref, m, statN);
            return;
        }
        AscendC::Sub(rise, ref, m, (int32_t)statN);
        AscendC::Compares(lazy.bits, rise, -lazy.threshold, AscendC::CMPMODE::LT, statN);
        AscendC::Select(alpha, lazy.bits, rise, 0.0f, AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, statN);
        AscendC::Select(ref, lazy.bits, m, ref, AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, statN);
        AscendC::Exp(alpha, alpha, (int32_t)statN);
    }

    // Row maxima or sums of a half [rows, w] tile (w a multiple of 128) -> row_, one fp32 per row: block results in
    // half (one BlockReduce over the tile, w / 16 per row), widened, folded in halves down to one 32 B block per row,
    // then one value per row. `fold` must hold 3 * rows * w / 8 bytes (the half results, then their fp32 copy).
    template <bool kIsMax>
    __aicore__ inline void RowReduceHalf(const AscendC::LocalTensor<half>& s, uint32_t rows) {
        uint32_t width = w_ / 16;
        AscendC::LocalTensor<float> a = fold_[rows * width / 2];  // after the half block results
        AscendC::LocalTensor<float> other = fold_;                // their bytes, once widened
        if (kIsMax) {
            AscendC::BlockReduceMax(fold_.ReinterpretCast<half>(), s, (int32_t)(rows * w_ / 128), 128, 1, 1, 8);
        } else {
            AscendC::BlockReduceSum(fold_.ReinterpretCast<half>(), s, (int32_t)(rows * w_ / 128), 128, 1, 1, 8);
        }
        AscendC::Cast(a, fold_.ReinterpretCast<half>(), AscendC::RoundMode::CAST_NONE, rows * width);
        for (; width > 8; width /= 2) {  // each row's two halves; rows as repeats, strides in 32 B blocks
            const uint8_t halfRep = (uint8_t)(width / 16), fullRep = (uint8_t)(width / 8);
            const AscendC::BinaryRepeatParams params(1, 1, 1, halfRep, fullRep, fullRep);
            if (kIsMax) {
                AscendC::Max(other, a, a[width / 2], (uint64_t)(width / 2), (uint8_t)rows, params);
            } else {
                AscendC::Add(other, a, a[width / 2], (uint64_t)(width / 2), (uint8_t)rows, params);
            }
            const AscendC::LocalTensor<float> t = a;
            a = other;
            other = t;
        }
        if (kIsMax) {
            AscendC::BlockReduceMax(row_, a, (int32_t)(AlignUp(rows, 8) / 8), 64, 1, 1, 8);
        } else {
            AscendC::BlockReduceSum(row_, a, (int32_t)(AlignUp(rows, 8) / 8), 64, 1, 1, 8);
        }
    }

    AscendC::LocalTensor<float> stats_, fold_, row_;
    uint32_t statElems_ = 0, w_ = 0;
};

}  // namespace npu_fa

#endif  // NPU_FA_TILE_ONLINE_SOFTMAX_H
