"""The package's argument checks run before the device kernel, for CPU and NPU tensors alike.

The CPU (twin) kernels are Python (`define_op`); the NPU kernels are the adapter's C++ PrivateUse1
kernels (`npu.py`). So that both get the same checks with the same messages, each op also has a kernel at the
BackendSelect dispatch key, which the dispatcher runs after autograd and before any backend kernel, in every grad
mode (inference mode included): it binds the arguments by the schema, runs the op's check (which raises
ValueError / TypeError / NotImplementedError naming the argument, the value and the rule, or RuntimeError when an
NPU call has no adapter) and redispatches to the backend. Fake and meta tensors skip it: the fake kernels check
the same rules without reading data.

Checks that read tensor contents (finite q/k/v/dy, the scale overflow bound, a compressed mask's content) run
for CPU tensors always, and for NPU tensors only with `NPU_FA_CHECK_VALUES=1`: on the device each costs extra
kernels and a host sync per call, which a training step should not pay (the built-in does not check either).
"""
from __future__ import annotations

import numbers
import os
from typing import Any, Callable

import torch

from . import npu

_UINT64 = 1 << 64

__all__ = ["define_op", "define_composite", "define_schema", "bind_arguments", "check_scalar_types", "describe",
           "seed_value", "seed_words", "require_device", "check_before_dispatch", "value_checks", "is_fake"]

_libs: dict[str, torch.library.Library] = {}  # kept alive: dropping a Library removes its registrations


def _lib(ns: str) -> torch.library.Library:
    lib = _libs.get(ns)
    if lib is None:
        lib = _libs[ns] = torch.library.Library(ns, "FRAGMENT")
    return lib


def define_op(qualname: str, schema: str, cpu_kernel: Callable[..., Any], fake_kernel: Callable[..., Any],
              doc: str) -> None:
    """Defines `qualname` ("ns::name") with `schema`, its CPU kernel, its fake kernel and `doc` (what
    help(torch.ops.ns.name) shows); the autograd formula is registered with torch.library.register_autograd. Unlike torch.library.custom_op, the CPU kernel is registered
    as it is: custom_op wraps it in torch._disable_dynamo, whose first call imports torch._dynamo (about 2 s); our
    kernels launch C++ code that dynamo never traces, and torch.compile treats the op as opaque either way."""
    ns, name = qualname.split("::")
    lib = _lib(ns)
    lib.define(name + schema)
    lib.impl(name, cpu_kernel, "CPU")
    torch.library.register_fake(qualname, fake_kernel, lib=lib)
    packet = getattr(getattr(torch.ops, ns), name)
    packet.__doc__ = packet.default.__doc__ = doc


def define_composite(qualname: str, schema: str, kernel: Callable[..., Any], doc: str) -> None:
    """Defines `qualname` with `schema` as a composite of other ops (`kernel` calls them): it runs above autograd
    for every device and mode, and the ops it calls carry the autograd formula, the checks and the kernels."""
    ns, name = qualname.split("::")
    lib = _lib(ns)
    lib.define(name + schema)
    lib.impl(name, kernel, "CompositeImplicitAutograd")
    packet = getattr(getattr(torch.ops, ns), name)
    packet.__doc__ = packet.default.__doc__ = doc


def define_schema(qualname: str, schema: str, doc: str) -> None:
    """Defines `qualname` ("ns::name") with `schema` and no kernel of ours: an op only a backend library implements
    (the NPU adapter's), idempotent."""
    ns, name = qualname.split("::")
    if hasattr(getattr(torch.ops, ns), name):
        return
    _lib(ns).define(name + schema)
    getattr(getattr(torch.ops, ns), name).__doc__ = doc


def bind_arguments(schema: torch._C.FunctionSchema, args: tuple, kwargs: dict) -> dict[str, Any]:
    """{argument name: value} for a call as the dispatcher hands it over (trailing defaults may be left out)."""
    out = {}
    for i, a in enumerate(schema.arguments):
        if i < len(args):
            out[a.name] = args[i]
        elif a.name in kwargs:
            out[a.name] = kwargs[a.name]
        else:
            out[a.name] = a.default_value
    return out


_NOT_A_NUMBER = (bool, str, bytes, torch.Tensor)


def check_scalar_types(schema: torch._C.FunctionSchema, values: dict[str, Any]) -> None:
    """TypeError naming the argument for a bool, int or float argument of the wrong Python type. The dispatcher
    would convert quietly (1 -> True for a bool, a 0-d tensor -> float, True -> 1.0); the package's Python functions
    refuse, as their drop-ins do. Skipped while torch.compile traces (the check reads the schema, which would break
    the graph; the op's own checks still run on the traced call)."""
    if torch.compiler.is_compiling():
        return
    for a in schema.arguments:
        if a.name not in values:
            continue
        v, t = values[a.name], a.type
        if isinstance(t, torch._C.OptionalType):
            if v is None:
                continue
            t = t.getElementType()
        kind = t.kind()
        wrong = ((kind == "BoolType" and not isinstance(v, (bool, torch.SymBool)))
                 or (kind in ("IntType", "SymIntType") and isinstance(v, _NOT_A_NUMBER + (float,)))
                 or (kind == "FloatType" and isinstance(v, _NOT_A_NUMBER)))
        if wrong:
            want = {"BoolType": "a bool", "FloatType": "a float"}.get(kind, "an int")
            raise TypeError(f"{a.name} must be {want}, got {describe(v)}")


def describe(v: Any) -> str:
    """A wrong argument as a message shows it: a tensor by its shape, anything else by type and value."""
    if isinstance(v, torch.Tensor):
        return f"a tensor of shape {tuple(v.shape)}"
    return f"{type(v).__name__} {v!r}"


def seed_value(name: str, v: Any) -> int:
    """A dropout seed or offset: any unsigned or signed 64-bit value. The op's schema int is signed, so values of
    2**63 and above travel as their two's complement (the kernels use the same 64 bits)."""
    if isinstance(v, torch.SymInt):
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {describe(v)}")
    x = int(v)
    if not -(1 << 63) <= x < _UINT64:
        raise ValueError(f"{name}={x} must fit in 64 bits: [-2**63, 2**64 - 1]")
    return x - _UINT64 if x >= (1 << 63) else x


def seed_words(kwargs: dict[str, Any]) -> dict[str, Any]:
    """`kwargs` with `seed` and `offset` (where given) as the schema's signed 64-bit ints (seed_value)."""
    return {k: seed_value(k, v) if k in ("seed", "offset") else v for k, v in kwargs.items()}


def require_device(device: torch.device, op: str) -> None:
    """CPU runs the twin; NPU needs the adapter (RuntimeError naming what is missing); anything else is refused."""
    if device.type == "cpu":
        return
    if device.type == "npu":
        npu.require_adapter(op)
        return
    raise ValueError(f"query is on device {device}; {op} runs on CPU tensors (CPU twin) or NPU tensors (torch_npu "
                     "adapter)")


def value_checks(device: torch.device) -> bool:
    """Whether the checks that read tensor contents run for tensors on `device` (see the module docstring)."""
    return device.type == "cpu" or os.environ.get("NPU_FA_CHECK_VALUES") == "1"


def is_fake(t: Any) -> bool:
    """Fake (tracing) or meta tensors: checks that read data skip them."""
    from torch._subclasses.fake_tensor import FakeTensor
    return isinstance(t, FakeTensor) or (isinstance(t, torch.Tensor) and t.device.type == "meta")


def check_before_dispatch(qualname: str, check: Callable[..., Any]) -> None:
    """Registers `check(**arguments)` to run before the backend kernel of `qualname` ("ns::name")."""
    ns, name = qualname.split("::")
    op = getattr(getattr(torch.ops, ns), name).default
    schema = op._schema
    first = schema.arguments[0].name

    def kernel(keyset, *args, **kwargs):
        bound = bind_arguments(schema, args, kwargs)
        if not is_fake(bound[first]):
            check(**bound)
        return op.redispatch(keyset.remove(torch._C.DispatchKey.BackendSelect), *args, **kwargs)

    _lib(ns).impl(name, kernel, "BackendSelect", with_keyset=True)
