"""`profile --infer`: the inference op's launches modelled (with split keys, the combine pass after the kernel), and
hbm_utilization computed from the bytes the problem must move, by hand here."""
import json

from npu_flash_attn.tools import cli, profiler


def test_split_decode_models_both_launches_and_hbm_utilization():
    rep = profiler.profile_infer(batch=1, heads=4, kv_heads=1, kv_seqlen=1000, block_size=128, head_dim=64,
                                 model_only=True, bins=0)
    assert rep["splits"] > 1 and len(rep["launches"]) == 2  # kernel, then the combine pass
    assert rep["modeled_time_us"] == sum(x["modeled_time_us"] for x in rep["launches"])
    # q and out: 1 x 4 x 64 bf16 each; K and V: 1000 keys x 64 bf16 each; the table: 8 int32 pages
    required = 2 * 4 * 64 * 2 + 2 * 1000 * 64 * 2 + 8 * 4
    assert rep["hbm_bytes_required"] == required
    hbm = next(c for c in profiler.twin_backend.ext().chips() if c["name"] == rep["chip"])["hbm_gbps"]
    assert abs(rep["hbm_utilization"] - required / (rep["modeled_time_us"] * 1e-6 * hbm * 1e9)) < 1e-12
    assert 0 < rep["hbm_utilization"] < 1


def test_cli_infer_json(capsys):
    assert cli.main(["profile", "--infer", "--batch", "2", "--heads", "8", "--kv-heads", "2", "--kv-seqlen", "300",
                     "--head-dim", "64", "--model-only", "--no-range", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["problem"]["infer"] and rep["problem"]["seqlen"] == 1 and 0 < rep["hbm_utilization"] < 1


def test_int8_cache_counts_its_bytes(capsys):
    rep = profiler.profile_infer(batch=2, heads=8, kv_heads=2, kv_seqlen=300, block_size=128, head_dim=64,
                                 kv_dtype="int8", model_only=True, bins=0)
    # q and out: 2 x 8 x 64 bf16 each; K and V: 2 x 2 heads x 300 keys x 64 int8 each; the table: 2 x 3 int32;
    # antiquant_scale and antiquant_offset: (2, 2, 1, 64) bf16 each
    required = 2 * 2 * 8 * 64 * 2 + 2 * 2 * 2 * 300 * 64 + 2 * 3 * 4 + 2 * 2 * 2 * 64 * 2
    assert rep["hbm_bytes_required"] == required and rep["problem"]["kv_dtype"] == "int8"
    hbm = next(c for c in profiler.twin_backend.ext().chips() if c["name"] == rep["chip"])["hbm_gbps"]
    assert abs(rep["hbm_utilization"] - required / (rep["modeled_time_us"] * 1e-6 * hbm * 1e9)) < 1e-12
    assert cli.main(["profile", "--infer", "--kv-dtype", "int8", "--kv-seqlen", "256", "--model-only", "--no-range",
                     "--baseline"]) == 2
    assert "16-bit cache" in capsys.readouterr().err


def test_cli_infer_baseline_json(capsys):
    assert cli.main(["profile", "--infer", "--batch", "2", "--heads", "8", "--kv-heads", "2", "--kv-seqlen", "256",
                     "--head-dim", "64", "--model-only", "--no-range", "--baseline", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["baseline"]["launch_names"][-1] == "gemm P V"
    assert rep["speedup_vs_baseline"] == rep["baseline_time_us"] / rep["modeled_time_us"]
    assert cli.main(["profile", "--infer", "--kv-seqlen", "300", "--model-only", "--no-range", "--baseline"]) == 2
    assert "multiple of block_size" in capsys.readouterr().err
