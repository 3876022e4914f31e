// The problem of a call for the twin bindings: the one C++ problem module (op_host/problem), its refusals raised as
// the Python exceptions they name.
#pragma once
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "problem/fa_problem_build.h"

namespace twin_bindings {

namespace py = pybind11;

// ValueError / TypeError / NotImplementedError with the rule's message.
[[noreturn]] inline void Raise(const npu_fa::FaError& e) {
    PyObject* type = e.kind == npu_fa::FaErrorKind::kType             ? PyExc_TypeError
                     : e.kind == npu_fa::FaErrorKind::kNotImplemented ? PyExc_NotImplementedError
                                                                      : PyExc_ValueError;
    PyErr_SetString(type, e.message.c_str());
    throw py::error_already_set();
}

// A tensor argument from Python: None or (shape, strides, dtype name).
inline npu_fa::FaTensorArg TensorArg(const py::object& o) {
    npu_fa::FaTensorArg t;
    if (o.is_none()) return t;
    const py::tuple d = o.cast<py::tuple>();
    t.present = true;
    t.shape = d[0].cast<std::vector<int64_t>>();
    t.strides = d[1].cast<std::vector<int64_t>>();
    t.dtype = d[2].cast<std::string>();
    return t;
}

// An int[]? attribute from Python: None or a sequence of ints.
inline npu_fa::FaIntList IntList(const py::object& o) {
    npu_fa::FaIntList l;
    if (o.is_none()) return l;
    l.present = true;
    l.values = o.cast<std::vector<int64_t>>();
    return l;
}

inline npu_fa::FaProblemInfo Solve(const npu_fa::FaCall& call) {
    npu_fa::FaProblemInfo info;
    const npu_fa::FaError e = npu_fa::BuildProblem(call, info);
    if (e) Raise(e);
    return info;
}

}  // namespace twin_bindings
