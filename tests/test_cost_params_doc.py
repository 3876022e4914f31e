"""docs/cost_model.md's parameter table is the model's own (scripts/cost_params_doc.py), every row has a source and
a confidence, and a row's plausible range contains its value."""
import subprocess
import sys
from pathlib import Path

from npu_flash_attn import _C

ROOT = Path(__file__).resolve().parents[1]


def test_doc_table_is_current():
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "cost_params_doc.py"), "--check"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_rows_have_source_confidence_and_range():
    for chip in ("Ascend910B2", "Ascend910B4"):
        for r in _C.cost_params(chip):
            assert r["source"] and r["confidence"] in {"measured", "fitted", "derived", "assumed"}, r
            assert r["lo"] <= r["value"] <= r["hi"], r
