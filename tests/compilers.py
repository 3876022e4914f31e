"""The C++ compilers installed here, and compile_kernel with one of them chosen (tests that build a kernel with each)."""
import os
import shutil

from npu_flash_attn import twin

COMPILERS = [c for c in ("g++", "clang++") if shutil.which(c)]


def compile_with(cxx, source, **kw):
    """twin.compile_kernel(source, **kw) with $CXX set to `cxx` for the call only."""
    saved = os.environ.get("CXX")
    os.environ["CXX"] = cxx
    try:
        return twin.compile_kernel(source, **kw)
    finally:
        if saved is None:
            del os.environ["CXX"]
        else:
            os.environ["CXX"] = saved
