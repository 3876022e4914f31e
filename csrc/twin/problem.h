// The problem of a call for the twin bindings: the one C++ problem module (op_host/problem), its refusals raised as
// the Python exceptions they name.
#pragma once
#include <pybind11/pybind11.h>

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

inline npu_fa::FaProblemInfo Solve(const npu_fa::FaCall& call) {
    npu_fa::FaProblemInfo info;
    const npu_fa::FaError e = npu_fa::BuildProblem(call, info);
    if (e) Raise(e);
    return info;
}

}  // namespace twin_bindings
