"""tests/npu: the twin test grid on NPU tensors and comparisons with torch_npu's built-in op (not yet run on
hardware). Every module skips with the reason from npu_env.skip_reason() when there is no NPU. The twin tests'
helpers are imported from tests/ (test_fa_forward, test_fa_backward, test_fa_backward_masks)."""
import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent.parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
