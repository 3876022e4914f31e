"""The kernels' instruction traces on 21 fixed problems (every layout and feature, forward and backward, and the
output residual) equal the recorded digests (scripts/trace_digests.py): a refactor must not change what the kernels
do. An intended kernel change re-records them with `python scripts/trace_digests.py --write`."""
import importlib.util
import pathlib

_SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "trace_digests.py"


def _load():
    spec = importlib.util.spec_from_file_location("trace_digests", _SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_traces_equal_the_recorded_digests(capsys):
    assert _load().main(["--check"]) == 0, capsys.readouterr().out
