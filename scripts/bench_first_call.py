"""First-use latency: in fresh processes, the time of `import npu_flash_attn` and of the op's first small call
(after `import torch`, which is torch's own cost), and of a second call. Not a timed test: a benchmark to run by
hand (`python scripts/bench_first_call.py [--runs 5]`); the target is import + first call under 0.5 s."""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CHILD = r"""
import json, time
import torch
t0 = time.perf_counter()
import npu_flash_attn
t1 = time.perf_counter()
q = torch.randn(1, 64, 2, 64, dtype=torch.float16)
npu_flash_attn.flash_attention(q, q, q, 2, "BSND", scale=0.125)
t2 = time.perf_counter()
npu_flash_attn.flash_attention(q, q, q, 2, "BSND", scale=0.125)
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "first_call": t2 - t1, "second_call": t3 - t2}))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5, help="fresh processes (default 5); the medians are reported")
    a = ap.parse_args(argv)
    runs = []
    for _ in range(a.runs):
        r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    total = med["import"] + med["first_call"]
    print(f"median of {a.runs} fresh processes: import npu_flash_attn {med['import']:.3f} s, first call "
          f"{med['first_call']:.3f} s (import + first call {total:.3f} s; target < 0.5 s), second call "
          f"{med['second_call'] * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
