"""Wall time of the FlashAttention kernels on the CPU twin (not NPU time).

    python scripts/bench_fa_forward.py [--chip Ascend910B2] [--repeat 2] [--backward]

Runs the demo problem and a few long-sequence problems through torch.ops.npu.flash_attention on CPU tensors and
prints the twin's wall time (best of --repeat) next to the tiling it chose; with --backward also the backward
(`out.backward()`, the default fast schedule and the deterministic one). Modeled NPU time comes with the cost
model; nothing here is a hardware figure.
"""
import argparse
import time

import torch

import npu_flash_attn

PROBLEMS = [
    # name, B, N1, N2, S, D, sparse_mode
    ("demo (causal)", 1, 8, 2, 1024, 128, 3),
    ("S=4096 N=8 D=128 full", 1, 8, 8, 4096, 128, 0),
    ("S=4096 N=8 D=128 causal", 1, 8, 8, 4096, 128, 3),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", default="Ascend910B2")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--backward", action="store_true", help="also time the backward (fast and deterministic)")
    a = ap.parse_args()
    npu_flash_attn.set_chip(a.chip)
    print(f"forward FlashAttention on the twin (CPU emulation of {a.chip}), bf16, BSND, best of {a.repeat}")
    for name, b, n1, n2, s, d, mode in PROBLEMS:
        q = torch.randn(b, s, n1, d, dtype=torch.bfloat16)
        k = torch.randn(b, s, n2, d, dtype=torch.bfloat16)
        v = torch.randn(b, s, n2, d, dtype=torch.bfloat16)
        best = float("inf")
        for _ in range(a.repeat):
            t = time.perf_counter()
            torch.ops.npu.flash_attention(q, k, v, n1, "BSND", scale=d ** -0.5, sparse_mode=mode)
            best = min(best, time.perf_counter() - t)
        info = npu_flash_attn.last_launch_info()
        line = (f"{name:28s} twin wall {best:7.3f} s  (block_dim {info['block_dim']}, "
                f"s1_block {info['s1_block']}, s2_block {info['s2_block']}, steps {info['steps']})")
        if a.backward:
            for deterministic in (False, True):
                torch.use_deterministic_algorithms(deterministic)
                leaves = [t.clone().requires_grad_() for t in (q, k, v)]
                out = torch.ops.npu.flash_attention(*leaves, n1, "BSND", scale=d ** -0.5, sparse_mode=mode)[0]
                dy = torch.randn_like(out)
                bwd = float("inf")
                for _ in range(a.repeat):
                    t = time.perf_counter()
                    out.backward(dy, retain_graph=True)
                    bwd = min(bwd, time.perf_counter() - t)
                torch.use_deterministic_algorithms(False)
                line += f"; backward {'deterministic' if deterministic else 'fast'} {bwd:7.3f} s"
        print(line, flush=True)


if __name__ == "__main__":
    main()
