"""Masks on the CPU twin: wall time and peak memory of the forward at long sequence length (not NPU figures).

    python scripts/bench_masks.py [--seq 8192] [--batch 2] [--heads 8] [--chip Ascend910B2] [--markdown FILE]

Rows: no mask, causal (sparse_mode 3, no mask tensor), a [B,1,1,S2] key-padding mask with 50 % padding, and a
random block-sparse [B,1,S1,S2] mask with 90 % of its 128x128 tiles fully masked (the rest mixed). Each row runs in
a fresh subprocess so that its peak RSS (VmHWM) is its own; "extra" is the peak above the same process after the
inputs were allocated (q/k/v, the mask tensor and the outputs), i.e. what the op itself needs on top (the twin's
workspace and per-core state dominate it); "op's mask copies + block map" is what the op allocates for the mask:
a copy only when its last dimension is strided or broadcast, plus the block map. A [B,N1,S1,S2] expansion of the
mask would be B*N1*S1*S2 bytes. Computed tiles come from the block map (tiles_computed / all tiles in the band) and the
steps the kernels ran. "modeled" is the forward kernel's time on the cycle model (model-only, 2 sampled AI cores,
labelled with the chip) with its error bars [low - high] (docs/cost_model.md); the block-map pre-pass is not in it
(its map is cached across calls with the same mask).
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROWS = ["no mask", "causal", "key padding 50%", "block-sparse 90%"]


def _vm_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak() -> None:
    """Restarts VmHWM from the current RSS (Linux: clear_refs 5), so the mask's construction does not count."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def run_row(name: str, seq: int, batch: int, heads: int, d: int, chip: str) -> dict:
    import torch

    import npu_flash_attn

    npu_flash_attn.set_chip(chip)
    warm = torch.randn(1, 64, 1, d, dtype=torch.bfloat16)
    torch.ops.npu.flash_attention(warm, warm, warm, 1, "BSND")  # first launch of the process pays one-time setup
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(batch, seq, heads, d, generator=g, dtype=torch.float32).to(torch.bfloat16)
               for _ in range(3))
    kw = dict(scale=d ** -0.5)
    mask_bytes = 0
    if name == "causal":
        kw["sparse_mode"] = 3
    elif name == "key padding 50%":
        lengths = torch.full((batch,), seq // 2)
        kw.update(sparse_mode=1, atten_mask=(torch.arange(seq).view(1, 1, 1, seq) >= lengths.view(batch, 1, 1, 1)))
    elif name == "block-sparse 90%":
        tiles = -(-seq // 128)
        dense_tiles = torch.rand(batch, 1, tiles, tiles, generator=g) < 0.1
        m = torch.ones(batch, 1, seq, seq, dtype=torch.bool)
        blocks = m.view(batch, 1, tiles, 128, tiles, 128)
        mixed = torch.randint(0, 2, (batch, 1, tiles, 128, tiles, 128), generator=g, dtype=torch.uint8).bool()
        blocks.copy_(torch.where(dense_tiles.view(batch, 1, tiles, 1, tiles, 1), mixed, True))
        del mixed
        kw.update(sparse_mode=1, atten_mask=m)
    if "atten_mask" in kw:
        mask_bytes = kw["atten_mask"].numel()
    out = torch.zeros(batch, seq, heads, d, dtype=torch.bfloat16)  # as large as the op's own output
    _reset_peak()
    base_kib = _vm_kib("VmRSS")
    del out
    t = time.perf_counter()
    torch.ops.npu.flash_attention(q, k, v, heads, "BSND", **kw)
    wall = time.perf_counter() - t
    info = npu_flash_attn.last_launch_info()
    peak = _vm_kib("VmHWM")
    from npu_flash_attn import _C
    _C.set_cost_model(True, 0, 0, {}, True, 2, True)
    try:
        torch.ops.npu.flash_attention(q, k, v, heads, "BSND", **kw)
        model = npu_flash_attn.last_launch_info()["cost_model"]
    finally:
        _C.set_cost_model(False)
    row = {"row": name, "twin_seconds": wall, "peak_rss_mib": peak / 1024, "extra_mib": max(0, peak - base_kib) / 1024,
           "mask_mib": mask_bytes / 2 ** 20, "steps_in_band": info["steps"], "block_dim": info["block_dim"],
           "modeled_us": model["total_us"], "modeled_us_low": model["range"]["total_us_low"],
           "modeled_us_high": model["range"]["total_us_high"]}
    if "tiles_mixed" in info:
        row.update(tiles_masked=info["tiles_masked"], tiles_mixed=info["tiles_mixed"],
                   tiles_visible=info["tiles_visible"],
                   mask_path_kib=(info["mask_copy_bytes"] + info["block_map_bytes"]) / 1024)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--chip", default="Ascend910B2")
    ap.add_argument("--markdown", help="also write the table to this file")
    ap.add_argument("--row", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.row:  # child: one row, JSON on stdout
        print(json.dumps(run_row(a.row, a.seq, a.batch, a.heads, a.dim, a.chip)))
        return
    env = dict(os.environ)
    print(f"forward on the twin (CPU emulation of {a.chip}), bf16 BSND, B={a.batch} N={a.heads} S={a.seq} D={a.dim}; "
          f"hazard checks {'off' if env.get('NPU_TWIN_HAZARDS') == '0' else 'on'}")
    lines = [f"| row | modeled ({a.chip}) µs | twin wall (s) | peak RSS (MiB) | extra over inputs (MiB) | mask tensor "
             "(MiB) | op's mask copies + block map (KiB) | tiles masked / mixed / visible | steps in band |",
             "|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)  # the header, then each row as it is measured
    for name in ROWS:
        r = subprocess.run([sys.executable, __file__, "--row", name, "--seq", str(a.seq), "--batch", str(a.batch),
                            "--heads", str(a.heads), "--dim", str(a.dim), "--chip", a.chip],
                           capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise SystemExit(f"{name}: {r.stderr}")
        row = json.loads(r.stdout.strip().splitlines()[-1])
        tiles = (f"{row['tiles_masked']} / {row['tiles_mixed']} / {row['tiles_visible']}" if "tiles_mixed" in row
                 else "-")
        path = f"{row['mask_path_kib']:.1f}" if "mask_path_kib" in row else "-"
        lines.append(f"| {name} | {row['modeled_us']:.0f} [{row['modeled_us_low']:.0f} - {row['modeled_us_high']:.0f}] | {row['twin_seconds']:.2f} | {row['peak_rss_mib']:.0f} | {row['extra_mib']:.0f} | "
                     f"{row['mask_mib']:.2f} | {path} | {tiles} | {row['steps_in_band']} |")
        print(lines[-1], flush=True)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
