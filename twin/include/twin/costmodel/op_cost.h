// Cost of one trace record on dav-2201: which of the core's in-order pipes runs it and for how long, from the
// parameter table (params.h). Records are classified once per distinct op name (names are string literals).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "twin/costmodel/params.h"
#include "twin/launch/launch.h"

namespace twin::cost {

// The modelled pipes; AIC uses S, M, MTE1, MTE2, MTE3, FIX, AIV uses S, V, MTE2, MTE3.
enum Pipe : uint8_t { kS, kV, kM, kMte1, kMte2, kMte3, kFix, kPipes };
inline const char* PipeName(int p) {
    static const char* n[] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"};
    return n[p];
}
// pipe_t of a trace record -> modelled pipe (-1: PIPE_ALL or unknown).
inline int PipeOf(uint8_t p) {
    switch (p) {
        case PIPE_S: return kS;
        case PIPE_V: return kV;
        case PIPE_M: return kM;
        case PIPE_MTE1: return kMte1;
        case PIPE_MTE2: return kMte2;
        case PIPE_MTE3: return kMte3;
        case PIPE_FIX: return kFix;
        default: return -1;
    }
}

// How an instruction is costed.
enum class Family : uint8_t {
    Scalar, VecBinary, VecScalar, VecExp, VecDiv, VecCast, VecCmp, VecWReduce, VecBReduce, VecBrcb, VecOther, UbCopy,
    Mmad, L1ToL0, L1ToSmall, GmToUb, GmToL1, L1Fill, UbToGm, UbToL1, L1ToGm, FixToGm, FixToL1, COUNT
};
// Which side of a DMA is GM (for the HBM estimate).
enum class GmSide : uint8_t { None, Src, Dst };

struct VecCoef {
    double slope, slope16, head, tail;
};

// Per-family constants, resolved from the table once.
struct Rates {
    VecCoef vec[(int)Family::COUNT] = {};
    double ubcopyBw, ubcopyLat, cubeHead, cubeFractal, l0aBw, l0bBw, mte1Lat, smallBw, gmUbBw, gmUbLat, gmL1Bw, gmL1Lat,
        fillBw, ubGmBw, ubGmLat, ubL1Bw, l1GmBw, fixGmBw, fixGmB16, fixGmLat, fixL1Bw, smallLat, scalarIssue, scalarOp, dcacheMiss, burstSmall;
    double burstBw[3];  // bursts below 64, 128, 256 B
    double issue[(int)Family::COUNT] = {};  // scalar-unit cycles to issue one instruction of the family
    explicit Rates(const Params& P) {
        auto v = [&](Family f, const char* k) {
            const std::string b = std::string("vec.") + k + ".";
            VecCoef& c = vec[(int)f];
            c.slope = P[(b + "slope").c_str()];
            c.slope16 = f == Family::VecDiv ? P["vec.div.slope16"] : c.slope;
            c.head = P[(b + "head").c_str()];
            c.tail = P[(b + "tail").c_str()];
        };
        v(Family::VecBinary, "binary");
        v(Family::VecScalar, "scalar");
        v(Family::VecExp, "exp");
        v(Family::VecDiv, "div");
        v(Family::VecCast, "cast");
        v(Family::VecCmp, "cmp");
        v(Family::VecWReduce, "wreduce");
        v(Family::VecBReduce, "breduce");
        v(Family::VecBrcb, "brcb");
        v(Family::VecOther, "other");
        ubcopyBw = P["vec.ubcopy.bw"], ubcopyLat = P["vec.ubcopy.lat"];
        vec[(int)Family::UbCopy] = {0, 0, ubcopyLat, 0};
        cubeHead = P["cube.head"], cubeFractal = P["cube.fractal"];
        l0aBw = P["mte1.l0a.bw"], l0bBw = P["mte1.l0b.bw"], mte1Lat = P["mte1.lat"], smallBw = P["mte1.small.bw"];
        gmUbBw = P["mte2.gm_ub.bw"], gmUbLat = P["mte2.gm_ub.lat"], gmL1Bw = P["mte2.gm_l1.bw"];
        gmL1Lat = P["mte2.gm_l1.lat"], fillBw = P["mte2.fill.bw"];
        ubGmBw = P["mte3.ub_gm.bw"], ubGmLat = P["mte3.ub_gm.lat"], ubL1Bw = P["mte3.ub_l1.bw"], l1GmBw = P["mte3.l1_gm.bw"];
        fixGmBw = P["fix.l0c_gm.bw"], fixGmB16 = P["fix.l0c_gm.b16"], fixGmLat = P["fix.l0c_gm.lat"], fixL1Bw = P["fix.l0c_l1.bw"];
        smallLat = P["dma.small.lat"], scalarIssue = P["scalar.issue"], scalarOp = P["scalar.op"];
        dcacheMiss = P["scalar.dcache.miss"];
        burstSmall = P["dma.burst.small"];
        burstBw[0] = P["dma.burst.lt64.bw"], burstBw[1] = P["dma.burst.lt128.bw"], burstBw[2] = P["dma.burst.lt256.bw"];
        for (int f = 0; f < (int)Family::COUNT; ++f) {
            const Family F = (Family)f;
            issue[f] = F == Family::Scalar ? 0
                       : F <= Family::UbCopy ? P["scalar.issue.vec"]
                       : (F == Family::Mmad || F == Family::L1ToL0 || F == Family::L1ToSmall) ? P["scalar.issue.cube"]
                       : (F == Family::FixToGm || F == Family::FixToL1) ? P["scalar.issue.fix"]
                                                                      : P["scalar.issue.dma"];
        }
    }
};

inline bool Has(const char* s, const char* sub) { return std::strstr(s, sub) != nullptr; }

inline Family VectorFamily(const char* op) {
    struct Name { const char* n; Family f; };
    static const Name names[] = {
        {"Add", Family::VecBinary}, {"Sub", Family::VecBinary}, {"Mul", Family::VecBinary}, {"Max", Family::VecBinary},
        {"Min", Family::VecBinary}, {"And", Family::VecBinary}, {"Or", Family::VecBinary}, {"AddRelu", Family::VecBinary},
        {"SubRelu", Family::VecBinary}, {"Axpy", Family::VecBinary}, {"FusedMulAdd", Family::VecBinary},
        {"MulAddDst", Family::VecBinary}, {"Adds", Family::VecScalar}, {"Muls", Family::VecScalar},
        {"Maxs", Family::VecScalar}, {"Mins", Family::VecScalar}, {"Relu", Family::VecScalar},
        {"LeakyRelu", Family::VecScalar}, {"Abs", Family::VecScalar}, {"Not", Family::VecScalar},
        {"Rsqrt", Family::VecScalar}, {"ShiftLeft", Family::VecScalar}, {"ShiftRight", Family::VecScalar},
        {"Duplicate", Family::VecScalar}, {"Copy", Family::VecScalar}, {"Exp", Family::VecExp}, {"Ln", Family::VecExp},
        {"Sqrt", Family::VecExp}, {"Div", Family::VecDiv}, {"Cast", Family::VecCast}, {"CastDeq", Family::VecCast},
        {"Compare", Family::VecCmp}, {"Compares", Family::VecCmp}, {"Select", Family::VecCmp},
        {"ReduceSum", Family::VecWReduce}, {"ReduceMax", Family::VecWReduce}, {"ReduceMin", Family::VecWReduce},
        {"RepeatReduceSum", Family::VecWReduce}, {"PairReduceSum", Family::VecBReduce}, {"Brcb", Family::VecBrcb},
    };
    for (const Name& n : names) {
        if (std::strcmp(op, n.n) == 0) return n.f;
    }
    if (std::strncmp(op, "WholeReduce", 11) == 0) return Family::VecWReduce;
    if (std::strncmp(op, "BlockReduce", 11) == 0) return Family::VecBReduce;
    if (std::strncmp(op, "DataCopy", 8) == 0) return Family::UbCopy;
    return Family::VecOther;
}

// Family of an instruction record on pipe p (modelled index) of a core of kind aic.
inline Family Classify(const char* op, int p, bool aic) {
    switch (p) {
        case kV: return VectorFamily(op);
        case kM: return Family::Mmad;
        case kMte1: return (Has(op, "->FB") || Has(op, "->BT")) ? Family::L1ToSmall : Family::L1ToL0;
        case kMte2:
            if (std::strcmp(op, "Fill") == 0 || Has(op, "InitConstValue")) return Family::L1Fill;
            return aic ? Family::GmToL1 : Family::GmToUb;
        case kMte3:
            if (Has(op, "L1->GM")) return Family::L1ToGm;
            if (Has(op, "local->local") || Has(op, "UB->L1")) return Family::UbToL1;
            return Family::UbToGm;
        case kFix: return Has(op, "L0C->L1") ? Family::FixToL1 : Family::FixToGm;
        default: return Family::Scalar;
    }
}

inline GmSide GmSideOf(Family f) {
    switch (f) {
        case Family::GmToUb: case Family::GmToL1: return GmSide::Src;
        case Family::UbToGm: case Family::L1ToGm: case Family::FixToGm: return GmSide::Dst;
        default: return GmSide::None;
    }
}

inline bool IsVector(Family f) { return f >= Family::VecBinary && f <= Family::UbCopy; }

// Rate of a GM transfer (the part the HBM and L2 shares stretch): its path's rate, or the small-burst band's when
// its bursts (bytes / block count: DataCopy blocks, Nd2Nz rows, Fixpipe rows) are shorter than dma.burst.small.
inline double PathBw(const Rates& R, Family f, const TraceRec& r) {
    double bw = 0;
    switch (f) {
        case Family::GmToUb: bw = R.gmUbBw; break;
        case Family::GmToL1: bw = R.gmL1Bw; break;
        case Family::UbToGm: bw = R.ubGmBw; break;
        case Family::L1ToGm: bw = R.l1GmBw; break;
        case Family::FixToGm: bw = R.fixGmBw; break;
        default: return 0;
    }
    const double burst = (double)r.bytes / std::max<uint32_t>(1, r.repeats);
    if (burst >= R.burstSmall) return bw;
    return std::min(bw, R.burstBw[burst < 64 ? 0 : burst < 128 ? 1 : 2]);
}

// Occupancy of the pipe (cycles) for one instruction, without the vector head/tail and without HBM slowdown;
// `l0b`: an L1->L0 load whose destination is L0B.
inline double BodyCycles(const Rates& R, Family f, const TraceRec& r, bool l0b) {
    const double b = (double)r.bytes;
    switch (f) {
        case Family::Scalar: return R.scalarOp;
        case Family::UbCopy: return b / R.ubcopyBw;
        case Family::VecDiv: {
            // Div traces 3 operands of sizeof(T) per element.
            const bool b16 = r.elems != 0 && r.bytes <= r.elems * 6;
            return (b16 ? R.vec[(int)f].slope16 : R.vec[(int)f].slope) * r.repeats;
        }
        case Family::Mmad: return R.cubeFractal * r.repeats;  // repeats: fractals (M1 * N1 * K1)
        case Family::L1ToL0: return R.mte1Lat + b / (l0b ? R.l0bBw : R.l0aBw);
        case Family::L1ToSmall: return R.mte1Lat + b / R.smallBw;
        case Family::GmToUb: return R.gmUbLat + b / PathBw(R, f, r);
        case Family::GmToL1: return R.gmL1Lat + b / PathBw(R, f, r);
        case Family::L1Fill: return R.smallLat + b / R.fillBw;
        case Family::UbToGm: return R.ubGmLat + b / PathBw(R, f, r);
        case Family::UbToL1: return R.smallLat + b / R.ubL1Bw;
        case Family::L1ToGm: return R.ubGmLat + b / PathBw(R, f, r);
        case Family::FixToGm: {
            // The rate is per fp32 output byte; a 16-bit output element costs fix.l0c_gm.b16 of an fp32 one.
            const bool b16 = r.elems != 0 && r.bytes == 2 * r.elems;
            return R.fixGmLat + (b16 ? 2 * b * R.fixGmB16 : b) / PathBw(R, f, r);
        }
        case Family::FixToL1: return R.smallLat + b / R.fixL1Bw;
        default: return R.vec[(int)f].slope * r.repeats;  // vector families
    }
}


inline const char* FamilyName(Family f) {
    static const char* n[] = {"scalar", "vec.binary", "vec.scalar", "vec.exp", "vec.div", "vec.cast", "vec.cmp",
                              "vec.wreduce", "vec.breduce", "vec.brcb", "vec.other", "vec.ubcopy", "cube.mmad",
                              "mte1.l1_l0", "mte1.l1_small", "mte2.gm_ub", "mte2.gm_l1", "mte2.fill", "mte3.ub_gm",
                              "mte3.ub_l1", "mte3.l1_gm", "fix.l0c_gm", "fix.l0c_l1"};
    return n[(int)f];
}

}  // namespace twin::cost
