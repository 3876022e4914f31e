// Parameters of the dav-2201 cycle model, one row each: value, unit, source, confidence. The per-core rows hold for
// every 2201 part (the per-core units are the same); the chip rows come from chip/chip_spec.h. Bandwidths that
// were measured in GiB/s at 1.85 GHz are stored as bytes per cycle, i.e. the model assumes they scale with the clock.
// docs/cost_model.md cites each source; shared/research/pto_isa_costmodel.md and update_2026_12.md hold the figures.
#pragma once
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "chip_spec.h"

namespace twin::cost {

struct ParamRow {
    const char* key;
    double value;
    const char* unit;
    const char* source;
    const char* confidence;  // measured | fitted | derived | assumed
    // Plausible range (docs/cost_model.md "Error bars"): the model is re-run with the row at each end. NaN: the row
    // is taken as exact (lo = hi = value).
    double lo = NAN, hi = NAN;
};

// Vector families: an isolated instruction costs head + slope * repeats + tail (256-B repeats); back to back on
// PIPE_V only the slope is paid (the head overlaps the previous instruction), the tail is paid where a pipe waits
// for the result (SetFlag / PipeBarrier / cross-core flag from PIPE_V, end of the core).
inline const ParamRow kCoreRows[] = {
    // Scalar-unit cycles per issued record: the intrinsics the API's dav_c220 implementation (asc-devkit
    // impl/basic_api/dav_c220) writes, at pto-isa's 1 cycle per sync/config intrinsic, plus operand setup. The
    // kernel's own loop and address arithmetic is not traced (the ranges allow for some of it).
    {"scalar.issue", 1, "cycle/instr", "pto-isa CCE mock: sync/config intrinsics 1 cycle (SetFlag, WaitFlag, PipeBarrier, cross-core flags)", "assumed", 1, 2},
    {"scalar.issue.vec", 4, "cycle/instr", "vector API: level 2 (count) writes set_mask_count, set_vector_mask, the instruction, set_mask_norm, set_vector_mask (5); level 0 set_vector_mask + the instruction (2)", "assumed", 2, 8},
    {"scalar.issue.dma", 2, "cycle/instr", "DataCopy/DataCopyPad: one copy intrinsic with packed burst operands (+ pad/config writes for DataCopyPad)", "assumed", 1, 6},
    {"scalar.issue.cube", 2, "cycle/instr", "Mmad / LoadData: one intrinsic with packed operands (+ set_fmatrix for 3D loads)", "assumed", 1, 4},
    {"scalar.issue.fix", 4, "cycle/instr", "Fixpipe: set_fpc, set_nd_para, set_quant_pre, the copy intrinsic", "assumed", 2, 8},
    {"scalar.op", 4, "cycle/instr", "scalar UB/GM access (GetValue/SetValue, tiling reads); no public figure", "assumed", 1, 10},
    {"scalar.dcache.miss", 300, "cycle", "scalar GM read that misses the core's DCache (GetValue after DataCacheCleanAndInvalid, or a line not yet cached): an L2 round trip, paid in full by the scalar unit (in-order issue); no public figure, several hundred cycles by analogy with mte2.gm_ub.lat", "assumed", 150, 600},
    {"queue.depth", 32, "instr", "ascendc_api_and_chips.md sec.10: MTE1 and MMAD queues 32 deep (used for every pipe); range: half that depth", "assumed", 16, 32},
    {"flag.latency", 2, "cycle", "intra-core set->wait; pto-isa: V->S->V round trip <= 10", "assumed", 1, 10},
    {"cross.latency", 200, "cycle", "CrossCoreSetFlag -> waiting core; none in pto-isa (perf-sim: 0), msopmodeling 1.0.9 (inter-core flags: 0) or the CANN ini; pto-isa FA fit implies <= 1000 per tile", "assumed", 0, 1000},
    {"syncall.latency", 500, "cycle", "SyncAll release after the last arrival; no figure in pto-isa, msopmodeling 1.0.9 or the CANN ini", "assumed", 100, 2000},
    {"launch.cycles", 10905, "cycle", "pto-isa fa_cost_model.py launch overhead (about 6 us)", "fitted", 7000, 18000},

    {"vec.binary.slope", 2, "cycle/repeat", "pto-isa 910B3 fit vadd 2.11r+24, vmax 2.01r+23, vmul 2.3r+25", "measured"},
    {"vec.binary.head", 10, "cycle", "pto-isa CCE mock vadd head 10 (head+tail = fit intercept 24)", "fitted"},
    {"vec.binary.tail", 14, "cycle", "pto-isa CCE mock vadd tail 14; range: on-device TADD f32 64x64 = 160 cycles needs 22", "fitted", 14, 22},
    {"vec.scalar.slope", 1, "cycle/repeat", "pto-isa 910B3 fit vmuls 1r+26, vmaxs 1r+23; msopmodeling VADDS/VMULS 1", "measured"},
    {"vec.scalar.head", 11, "cycle", "pto-isa CCE mock vmuls head 11", "fitted"},
    {"vec.scalar.tail", 14, "cycle", "pto-isa fit intercepts 23-26", "fitted"},
    {"vec.exp.slope", 2, "cycle/repeat", "pto-isa 910B3 fit vexp 2.00r+31 (fp32); TEXP f16 64x64 = 95 cycles", "measured"},
    {"vec.exp.head", 13, "cycle", "pto-isa CCE mock vexp head 13", "fitted"},
    {"vec.exp.tail", 18, "cycle", "pto-isa CCE mock vexp tail 18 (sum 31 = fit intercept)", "fitted"},
    {"vec.div.slope", 4, "cycle/repeat", "pto-isa 910B3 fit vdiv 4.03r+31 (fp32); msopmodeling VDIV FP32 4", "measured"},
    {"vec.div.slope16", 8.5, "cycle/repeat", "pto-isa TDIV f16 64x64 = 304 cycles (32 repeats); msopmodeling VDIV FP16 8", "measured"},
    {"vec.div.head", 11, "cycle", "pto-isa CCE mock vdiv head 11", "fitted"},
    {"vec.div.tail", 20, "cycle", "pto-isa fit intercept 31", "fitted"},
    {"vec.cast.slope", 2, "cycle/repeat", "pto-isa CCE mock vconv 2 (repeats of the wider type)", "fitted"},
    {"vec.cast.head", 14, "cycle", "pto-isa CCE mock vconv head 14", "fitted"},
    {"vec.cast.tail", 17, "cycle", "pto-isa TCVT 4x64 = 33 cycles", "measured"},
    {"vec.cmp.slope", 2, "cycle/repeat", "pto-isa CCE mock vcmpv/vsel 2; msopmodeling VSEL/VCMPV 2", "fitted"},
    {"vec.cmp.head", 14, "cycle", "pto-isa CCE mock vcmpv head 14", "fitted"},
    {"vec.cmp.tail", 22, "cycle", "pto-isa CCE mock vcmpv tail 22; range: on-device TSEL f32 4x64 = 67 cycles needs 45", "fitted", 22, 45},
    {"vec.wreduce.slope", 7, "cycle/repeat", "msopmodeling VCADD 7/repeat; pto-isa formula TROWMAX/TROWSUM 7 per row", "measured"},
    {"vec.wreduce.head", 14, "cycle", "msopmodeling VCADD head 14", "fitted"},
    {"vec.wreduce.tail", 32, "cycle", "msopmodeling VCADD interval 32; range: reductions are the least trusted vector rows (pto-isa's reduce model: 0.02-0.1 precision)", "fitted", 20, 44},
    {"vec.breduce.slope", 1, "cycle/repeat", "msopmodeling VCGADD/VCGMAX 1/repeat", "fitted"},
    {"vec.breduce.head", 14, "cycle", "msopmodeling VCGMAX head 14", "fitted"},
    {"vec.breduce.tail", 17, "cycle", "msopmodeling VCGMAX interval 17 (VCGADD 24: the range)", "fitted", 17, 24},
    {"vec.brcb.slope", 1, "cycle/repeat", "msopmodeling/pto-isa VBRCB are placeholders (0/0/18); 1 per repeat assumed", "assumed", 1, 2},
    {"vec.brcb.head", 0, "cycle", "msopmodeling VBRCB head 0", "assumed"},
    {"vec.brcb.tail", 18, "cycle", "msopmodeling VBRCB interval 18", "assumed", 10, 25},
    {"vec.other.slope", 2, "cycle/repeat", "unclassified vector instruction: binary-op cost", "assumed"},
    {"vec.other.head", 10, "cycle", "as vec.binary.head", "assumed"},
    {"vec.other.tail", 14, "cycle", "as vec.binary.tail", "assumed"},
    {"vec.ubcopy.bw", 32, "B/cycle", "pto-isa TMOV UB->UB f32 64x128 (32 KiB) measured 1029 cycles", "measured"},
    {"vec.ubcopy.lat", 5, "cycle", "same measurement (1029 - 32768/32)", "fitted"},

    {"cube.head", 6, "cycle", "pto-isa mmad stub; on-device TMATMUL tests match exactly", "measured"},
    {"cube.fractal", 1, "cycle/fractal", "16x16x16 b16 (16x32x16 int8) per cycle: TMATMUL tests, GEMM 6144^3 at 1.807 GHz", "measured"},

    {"mte1.l0a.bw", 256, "B/cycle", "msopmodeling L1->L0A 441 GiB/s at 1.85 GHz; ascendc notes 256 B/cycle", "measured"},
    {"mte1.l0b.bw", 128, "B/cycle", "msopmodeling L1->L0B 220.5 GiB/s at 1.85 GHz; ascendc notes 128 B/cycle", "measured"},
    {"mte1.lat", 30, "cycle", "per LoadData; GEMM-derived 20-40 (TEXTRACT/TMATMUL busy ratio)", "fitted", 20, 40},
    {"mte1.small.bw", 18.6, "B/cycle", "L1->BT / L1->FB 32 GiB/s (pto-isa flat table)", "measured"},
    {"mte2.gm_ub.bw", 128, "B/cycle", "pto-isa 910B3 TLOAD: 264 cycles + 1 per 128 B per DMA (single core)", "measured"},
    {"mte2.gm_ub.lat", 264, "cycle", "same fit (DMAs of one core serialise)", "measured"},
    {"mte2.gm_l1.bw", 78.4, "B/cycle", "msopmodeling GM->L1 135 GiB/s at 1.85 GHz (GEMM-derived 84-88 at 24 cores); range: up to the GEMM-derived 88", "measured", 78.4, 88},
    {"mte2.gm_l1.lat", 0, "cycle", "fitted to pto-isa's A3 GEMM (cube 86.7 % busy at 6144^3 needs back-to-back GM->L1 DMAs to overlap their latency); was 264 by analogy with GM->UB", "fitted", 0, 264},
    {"mte2.fill.bw", 18.6, "B/cycle", "L1 fill (create_cbuf_matrix) 32 GiB/s, pto-isa flat table", "measured"},
    {"mte3.ub_gm.bw", 109.4, "B/cycle", "msopmodeling UB->GM 1 core 188.46 GiB/s at 1.85 GHz", "measured"},
    {"mte3.ub_gm.lat", 185, "cycle", "msopmodeling 1.0.9 op_model/slice_v2.py: 1e-7 s head per MTE2/MTE3 transfer (185 cycles at 1.85 GHz); pto-isa Hill fit K/peak 107", "fitted", 107, 264},
    {"mte3.ub_l1.bw", 113.6, "B/cycle", "msopmodeling UB->SHM 196 GiB/s at 1.85 GHz", "measured"},
    {"mte3.l1_gm.bw", 18.6, "B/cycle", "pto-isa flat table L1->GM 32 GiB/s", "measured"},
    {"fix.l0c_gm.bw", 81.2, "B/cycle", "msopmodeling and pto-isa tables: L0C->GM 70 GiB/s at 1.85 GHz, which pto-isa counts as rows*cols*2 bytes whatever the dtype: 20.3 elements/cycle, 81.2 B/cycle of fp32 output (the byte reading, 40.6, is the low end: pto-isa's on-device FA tile needs >= 47); high end the engine's documented L0C->L1 rate", "derived", 40.6, 128},
    {"fix.l0c_gm.b16", 1.0, "x", "time of a 16-bit Fixpipe output element (F322F16 / F322BF16) to GM against an fp32 one: pto-isa's table charges rows*cols whatever the dtype (1, the element-bound reading); 0.5 if the path were bound by output bytes. No measurement either way", "assumed", 0.5, 1},
    {"fix.l0c_gm.lat", 200, "cycle", "no figure in msopmodeling 1.0.9 or the CANN ini; paid by every Fixpipe (0: back-to-back ones overlap it). pto-isa's Hill fit (K/peak about 1200) cannot be a per-transfer latency: its on-device FA tile (1728 cycles, 2 Fixpipes) leaves at most about 400", "assumed", 0, 400},
    {"fix.l0c_l1.bw", 128, "B/cycle", "ascendc notes: L0C->L1 128 B/cycle for f16/bf16 output", "measured"},
    {"dma.small.lat", 30, "cycle", "on-core DMA latency (UB->L1, L0C->L1, L1 fills)", "assumed", 10, 100},
    // Burst (contiguous GM run: DataCopy block, Nd2Nz row, Fixpipe row) below dma.burst.small moves at the band rate
    // (capped by the path's). msopmodeling's bands are 64/128/256 B; on-device 127-B and 254-B rows run at the full
    // rate, so by default only the lowest band applies (dma.burst.small=256 applies all three).
    {"dma.burst.small", 64, "B", "pto-isa 910B3 TLOAD on-device: 127-B and 254-B rows fit 264 + B/128 within 0.3 %", "fitted"},
    {"dma.burst.lt64.bw", 1.967, "B/cycle", "msopmodeling 1.0.9 910B1.yaml pkt_param 64B (a=0.295): 1/a GiB/s at 1.85 GHz", "fitted"},
    {"dma.burst.lt128.bw", 2.134, "B/cycle", "msopmodeling 1.0.9 910B1.yaml pkt_param 128B (a=0.272): 1/a GiB/s at 1.85 GHz", "fitted"},
    {"dma.burst.lt256.bw", 1.802, "B/cycle", "msopmodeling 1.0.9 910B1.yaml pkt_param 256B (a=0.322): 1/a GiB/s at 1.85 GHz", "fitted"},

    {"gm.line", 512, "B", "L2 line of the LRU capacity model (pto-isa perf-sim L2 default)", "assumed"},
    {"gm.bin", 500, "cycle", "time bin of the HBM and L2 fair-share fixed point", "assumed"},
};

// Aggregate L2 bandwidth of a 2201 die (chip_spec.h has only the per-core .ini rates).
constexpr double kL2GBps = 7000;

// The chip rows, derived from chip/chip_spec.h, then every per-core row.
inline std::vector<ParamRow> ChipRows(const npu_fa::ChipSpec& chip) {
    static const char* src = "chip/chip_spec.h (shared/research/update_2026_12.md sec.1)";
    std::vector<ParamRow> rows = {
        {"chip.clock_mhz", chip.cubeFreqMHz, "MHz", src, "measured"},
        {"chip.aic", (double)chip.aicNum, "cores", src, "measured"},
        {"chip.aiv", (double)chip.aivNum, "cores", src, "measured"},
        {"chip.cube_flop_per_cycle", 8192, "FLOP/cycle/AIC", "16x16x16 MAC per cycle (b16)", "measured"},
        {"chip.hbm_gbps", chip.hbmGBps, "GB/s", "chip/chip_spec.h; msopmodeling GM<->L2 1638 GiB/s, 48-core GM->UB 1617 GiB/s", "fitted"},
        {"chip.hbm_bytes_per_cycle", chip.hbmGBps * 1e3 / chip.cubeFreqMHz, "B/cycle", "chip.hbm_gbps / chip.clock_mhz; range: 0.9x to 1.1x (msopmodeling's GM<->L2 1638 GiB/s is 1.1x the 910B2's 1600 GB/s)", "derived",
         0.9 * chip.hbmGBps * 1e3 / chip.cubeFreqMHz, 1.1 * chip.hbmGBps * 1e3 / chip.cubeFreqMHz},
        {"l2.bytes", (double)chip.l2Size, "B", "chip/chip_spec.h l2Size: 192 MB on 910B1/B2/B3/910_93, 96 MB on B4 (update_2026_12.md sec.1)", "measured"},
        {"l2.gbps", kL2GBps, "GB/s", "asc-devkit docs/zh/guide, SIMD optimisation / memory access / L2 Cache split page: 192 MB L2, read/write mixed about 7 TB/s (GM 1.6 TB/s); B4 assumed the same", "measured"},
        {"l2.bytes_per_cycle", kL2GBps * 1e3 / chip.cubeFreqMHz, "B/cycle", "l2.gbps / chip.clock_mhz, shared by all cores", "derived",
         5000 * 1e3 / chip.cubeFreqMHz, kL2GBps * 1e3 / chip.cubeFreqMHz},
    };
    rows.insert(rows.end(), std::begin(kCoreRows), std::end(kCoreRows));
    for (ParamRow& r : rows) {
        if (std::isnan(r.lo)) r.lo = r.value;
        if (std::isnan(r.hi)) r.hi = r.value;
    }
    return rows;
}

// The table as the scheduler reads it (one lookup per key at construction).
struct Params {
    std::vector<ParamRow> rows;
    explicit Params(const npu_fa::ChipSpec& chip) : rows(ChipRows(chip)) {}
    double operator[](const char* key) const {
        for (const ParamRow& r : rows) {
            if (std::strcmp(r.key, key) == 0) return r.value;
        }
        throw std::invalid_argument(std::string("cost model: no parameter '") + key + "'");
    }
    void Set(const std::string& key, double v) {
        for (ParamRow& r : rows) {
            if (key == r.key) {
                r.value = v;
                r.confidence = "override";
                return;
            }
        }
        throw std::invalid_argument("cost model: no parameter '" + key + "'");
    }
};

}  // namespace twin::cost
