// npu_flash_attn._C.Call (a call as shapes, dtypes and attributes: what every op binding takes) and
// flash_attention_problem (the problem module's verdict: the problem, output shapes, mask view and post-processing).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "problem.h"

namespace py = pybind11;

namespace {

using twin_bindings::IntList;
using twin_bindings::TensorArg;

npu_fa::FaCall MakeCall(const py::object& query, const py::object& key, const py::object& value, int64_t headNum,
                        const std::string& inputLayout, const py::object& pse, const py::object& paddingMask,
                        const py::object& attenMask, double scale, double keepProb, int64_t preTokens,
                        int64_t nextTokens, int64_t innerPrecise, const py::object& prefix,
                        const py::object& actualSeqQlen, const py::object& actualSeqKvlen, int64_t sparseMode,
                        uint64_t seed, uint64_t offset, const py::object& sink, const py::object& softcap,
                        int64_t pseType, const py::object& qStartIdx, const py::object& kvStartIdx,
                        const py::object& dropoutMask, const py::object& dropoutOrigin, const py::object& dy, const py::object& attentionIn,
                        const py::object& softmaxMax, const py::object& softmaxSum, bool grad, bool partialKeys,
                        bool outResidual, const py::object& attentionInResidual,
                        const std::string& dropMaskInPlaceDevice, uint32_t forceS1Block, uint32_t forceS2Block,
                        bool maskIsKernelView, bool contiguousMask) {
    npu_fa::FaCall c;
    c.query = TensorArg(query), c.key = TensorArg(key), c.value = TensorArg(value);
    c.pse = TensorArg(pse), c.paddingMask = TensorArg(paddingMask), c.attenMask = TensorArg(attenMask);
    c.sink = TensorArg(sink), c.dropoutMask = TensorArg(dropoutMask);
    npu_fa::FaAttrs& a = c.attrs;
    a.headNum = headNum, a.inputLayout = inputLayout, a.scale = scale, a.keepProb = keepProb;
    a.preTokens = preTokens, a.nextTokens = nextTokens, a.innerPrecise = innerPrecise;
    a.prefix = IntList(prefix), a.actualSeqQlen = IntList(actualSeqQlen), a.actualSeqKvlen = IntList(actualSeqKvlen);
    a.sparseMode = sparseMode, a.seed = seed, a.offset = offset;
    a.hasSoftcap = !softcap.is_none();
    a.softcap = a.hasSoftcap ? softcap.cast<double>() : 0.0;
    a.pseType = pseType, a.qStartIdx = IntList(qStartIdx), a.kvStartIdx = IntList(kvStartIdx);
    a.dropoutOrigin = IntList(dropoutOrigin);
    c.grad = grad;
    c.partialKeys = partialKeys;
    c.outResidual = outResidual, c.attentionInResidual = TensorArg(attentionInResidual);
    c.dy = TensorArg(dy), c.attentionIn = TensorArg(attentionIn), c.softmaxMax = TensorArg(softmaxMax);
    c.softmaxSum = TensorArg(softmaxSum);
    c.dropMaskInPlaceDevice = dropMaskInPlaceDevice;
    c.forceS1Block = forceS1Block, c.forceS2Block = forceS2Block;
    c.maskIsKernelView = maskIsKernelView, c.contiguousMask = contiguousMask;
    return c;
}

py::list Dims(const std::vector<npu_fa::FaDim>& dims) {
    py::list out;
    for (const npu_fa::FaDim& d : dims) {
        py::list mul, div;
        for (const npu_fa::FaDimRef& r : d.mul) mul.append(py::make_tuple(r.tensor, r.axis));
        for (const npu_fa::FaDimRef& r : d.div) div.append(py::make_tuple(r.tensor, r.axis));
        out.append(py::make_tuple(d.constant, mul, div));
    }
    return out;
}

py::dict Problem(const npu_fa::FaCall& call) {
    const npu_fa::FaProblemInfo o = twin_bindings::Solve(call);
    const npu_fa::FaProblem& p = o.p;
    py::dict d;
    d["layout"] = o.layoutName;
    d["B"] = p.batch, d["N1"] = p.n1, d["N2"] = p.n2, d["S1"] = p.s1, d["S2"] = p.s2, d["D"] = p.d, d["Dv"] = p.dv;
    d["T1"] = p.t1, d["T2"] = p.t2;
    d["scale"] = o.scale;
    d["sparse_mode"] = p.sparseMode, d["pre_tokens"] = p.preTokens, d["next_tokens"] = p.nextTokens;
    d["cu_seqlens_q"] = py::tuple(py::cast(p.cuSeqQ)), d["cu_seqlens_kv"] = py::tuple(py::cast(p.cuSeqKv));
    d["prefix"] = py::tuple(py::cast(p.prefix));
    d["dense_mask"] = p.denseMask, d["mask_tnd_global"] = p.maskTndGlobal, d["sink"] = p.sink;
    d["high_performance"] = p.highPerformance;
    d["out_residual"] = p.outResidual;
    d["softcap"] = call.attrs.hasSoftcap ? py::object(py::float_(call.attrs.softcap)) : py::object(py::none());
    d["alibi_mode"] = p.alibiMode, d["alibi_per_batch"] = p.alibiPerBatch, d["alibi_delta"] = p.alibiDelta;
    d["outer_mode"] = p.pseMode, d["outer_per_batch"] = p.pseStrideB != 0, d["outer_per_row"] = p.pseStrideS != 0;
    d["drop_mode"] = p.dropMode, d["drop_mask_pitch"] = p.dropMaskPitch, d["drop_mask_repack"] = o.dropMaskRepack;
    d["compressed_mask"] = o.compressedMask;
    d["out_shape"] = py::tuple(py::cast(o.outShape)), d["stats_shape"] = py::tuple(py::cast(o.statsShape));
    d["out_dims"] = Dims(o.outDims), d["stats_dims"] = Dims(o.statsDims);
    if (p.denseMask) {
        const npu_fa::FaMaskView& v = o.mask;
        py::dict m;
        m["narrow"] = v.narrow, m["widen"] = v.widen, m["copy"] = v.copy, m["shape"] = v.shape;
        m["extent"] = v.extent, m["stride_b"] = v.strideB, m["stride_n"] = v.strideN, m["stride_s"] = v.strideS;
        m["col_step"] = v.colStep, m["per_batch"] = v.perBatch, m["per_head"] = v.perHead;
        d["mask_view"] = m;
    } else {
        d["mask_view"] = py::none();
    }
    const npu_fa::FaPostProcess& post = o.post;
    py::list groups;
    for (const npu_fa::FaRowGroup& g : post.rowGroups) groups.append(py::make_tuple(g.firstRow, g.seqs, g.tokens));
    d["has_work"] = post.hasWork, d["tnd"] = post.tnd, d["pad_q_from"] = post.padQFrom;
    d["pad_kv_from"] = post.padKvFrom, d["row_groups"] = groups;
    d["dpse_rows_shape"] = post.dpseRowsShape, d["dpse_sum_dims"] = post.dpseSumDims;
    d["dpse_factor"] = post.dpseFactor;
    d["sequences"] = o.sequences;
    return d;
}

}  // namespace

void RegisterProblem(py::module_& m) {
    py::class_<npu_fa::FaCall>(m, "Call", "One call of the ops: tensors as None or (shape, strides, dtype name), and "
                                          "the attributes of the torch schema")
        .def(py::init(&MakeCall), py::arg("query"), py::arg("key"), py::arg("value"), py::arg("head_num"),
             py::arg("input_layout"), py::arg("pse") = py::none(), py::arg("padding_mask") = py::none(),
             py::arg("atten_mask") = py::none(), py::arg("scale") = 1.0, py::arg("keep_prob") = 1.0,
             py::arg("pre_tokens") = npu_fa::kInt32Max, py::arg("next_tokens") = npu_fa::kInt32Max,
             py::arg("inner_precise") = 0, py::arg("prefix") = py::none(), py::arg("actual_seq_qlen") = py::none(),
             py::arg("actual_seq_kvlen") = py::none(), py::arg("sparse_mode") = 0, py::arg("seed") = 0,
             py::arg("offset") = 0, py::arg("sink") = py::none(), py::arg("softcap") = py::none(),
             py::arg("pse_type") = 1, py::arg("q_start_idx") = py::none(), py::arg("kv_start_idx") = py::none(),
             py::arg("dropout_mask") = py::none(), py::arg("dropout_origin") = py::none(), py::arg("dy") = py::none(), py::arg("attention_in") = py::none(),
             py::arg("softmax_max") = py::none(), py::arg("softmax_sum") = py::none(), py::arg("grad") = false,
             py::arg("partial_keys") = false, py::arg("out_residual") = false,
             py::arg("attention_in_residual") = py::none(), py::arg("drop_mask_device") = "", py::arg("force_s1_block") = 0,
             py::arg("force_s2_block") = 0, py::arg("mask_is_kernel_view") = false,
             py::arg("contiguous_mask") = false)
        .def_readwrite("force_s1_block", &npu_fa::FaCall::forceS1Block)
        .def_readwrite("force_s2_block", &npu_fa::FaCall::forceS2Block)
        .def_readwrite("force_low_scores", &npu_fa::FaCall::forceLowScores)
        .def_readwrite("force_lazy", &npu_fa::FaCall::forceLazy)
        .def_readwrite("lazy_threshold", &npu_fa::FaCall::lazyThreshold)
        .def_readwrite("bwd_store_limit", &npu_fa::FaCall::bwdStoreLimit);
    m.def("flash_attention_problem", &Problem, py::arg("call"),
          "The problem of a call (ValueError / TypeError / NotImplementedError naming the rule it breaks)");
}
