"""The context-parallel link model (npu_flash_attn.tools.cp_model) against numbers computed by hand, its composition
with the planner's calls (a fake kernel time), and the `profile --cp-world` command line's JSON fields."""
from __future__ import annotations

import json

import pytest

from npu_flash_attn.tools import cli, cp_model as m

# easy numbers: HCCS 1 GB/s = 1000 bytes per us, no latency; RoCE 0.5 GB/s, 3 us
EASY = {"hccs.gbps": 1.0, "hccs.latency_us": 0.0, "roce.gbps": 0.5, "roce.latency_us": 3.0}


def test_transfer_within_and_across_nodes():
    p = m.link_values("value")
    assert m.transfer_us(64e6, 0, 7, p) == pytest.approx(p["hccs.latency_us"] + 64e6 / (p["hccs.gbps"] * 1e3))
    p = m.link_values(overrides=EASY)
    assert m.transfer_us(2000, 3, 4, p) == pytest.approx(2.0)  # same node (NPUs 0-7)
    assert m.transfer_us(2000, 7, 8, p) == pytest.approx(3.0 + 4.0)  # RoCE: 2000 B at 500 B/us
    # a 16-rank ring: its hops 7 -> 8 and 15 -> 0 cross nodes and set the step
    assert m.ring_transfer_us(2000, list(range(16)), p) == pytest.approx(7.0)
    assert m.ring_transfer_us(2000, list(range(8)), p) == pytest.approx(2.0)


def test_ring_step_compute_bound_and_link_bound():
    p = m.link_values(overrides={"hccs.gbps": 56.0, "hccs.latency_us": 10.0})
    kv = 2 * 8192 * 16 * 128 * 2  # K and V of 8K tokens, 16 heads, D = 128, bf16: 67.1 MB
    link = m.transfer_us(kv, 0, 1, p)
    assert link == pytest.approx(10.0 + 67108864 / 56e3)  # 1208.4 us
    assert m.ring_step(1500.0, link) == pytest.approx((1500.0, 0.0))  # compute-bound: the transfer hides
    assert m.ring_step(1000.0, link) == pytest.approx((link, link - 1000.0))  # link-bound: 208.4 us exposed


def test_all_to_all_volume():
    p = m.link_values(overrides=EASY)
    # 8 ranks in one node: each sends nbytes / 8 to each of 7 peers over its own link, all at once
    assert m.all_to_all_us(8000, list(range(8)), p) == pytest.approx(1.0)
    # 16 ranks: 7 peers over HCCS (1000 B each, 1 us), 8 through the one RoCE port (8 x 1000 B at 500 B/us + 3 us)
    assert m.all_to_all_us(16000, list(range(16)), p) == pytest.approx(3.0 + 16.0)
    # all-gather: every peer gets the whole 1000 B
    assert m.all_gather_us(1000, list(range(4)), p) == pytest.approx(1.0)
    assert m.all_to_all_us(8000, [5], p) == 0.0


def test_corners_move_the_link_the_right_way():
    lo, mid, hi = (m.link_values(c) for c in m.CORNERS[1:2] + m.CORNERS[:1] + m.CORNERS[2:])
    for ranks in (list(range(8)), list(range(16))):
        t = [m.all_to_all_us(1e8, ranks, p) for p in (lo, mid, hi)]
        assert t[0] >= t[1] >= t[2] and t[0] > t[2]
    with pytest.raises(ValueError, match="link parameter 'nvlink.gbps' is not one of"):
        m.link_values(overrides={"nvlink.gbps": 1.0})


def _problem(algo, world=2, **kw):
    base = dict(world=world, algo=algo, batch=1, heads=2, kv_heads=1, seqlen=16, head_dim=16, causal=True)
    base.update(kw)
    return m.CpProblem(**base)


def test_ring_composition_by_hand():
    """2 ranks, 8 tokens each, N2 = 1, D = 16, bf16: K+V = 512 B, fp32 dK+dV = 1024 B, at 1000 B/us. Every call
    takes 0.3 us; causal zigzag gives one call per rank and step (own chunks: one causal call; the other rank's:
    the visible chunk pairs in one call)."""
    calls = []

    def time_of(s):
        calls.append(s)
        return 0.3
    r = m.model_algorithm(_problem("ring"), time_of, m.link_values(overrides=EASY))
    f, b = r["forward"], r["backward"]
    assert f["compute_us"] == pytest.approx(0.6) and f["exposed_comm_us"] == pytest.approx(0.512 - 0.3)
    # backward step 0: K/V 0.512 us; step 1: the step-0 dK/dV 1.024 us; then the last dK/dV hop, exposed
    assert b["compute_us"] == pytest.approx(0.6)
    assert b["exposed_comm_us"] == pytest.approx((0.512 - 0.3) + (1.024 - 0.3) + 1.024)
    assert b["efficiency"] == pytest.approx(0.6 / (0.6 + 0.212 + 0.724 + 1.024))
    assert r["step"]["efficiency"] == pytest.approx(1.2 / (1.2 + 0.212 + 1.96))
    assert f["link_bound_steps"] == 1 and f["ring_steps"] == 2
    # 2 ranks x 2 steps x 2 directions; the diagonal call is the causal band of the rank's 8 x 8 rows
    assert len(calls) == 8 and all(c.lq * c.lk in (64, 32) for c in calls)
    assert {c.partial_keys for c in calls if c.backward} == {True}


def test_ulysses_and_allgather_exposed_terms_by_hand():
    p = m.link_values(overrides=EASY)
    r = m.model_algorithm(_problem("ulysses", world=8, heads=8, kv_heads=8, seqlen=128), lambda s: 1.0, p)
    # q and out: 16 tokens x 8 heads x 16 x 2 B = 4096 B each, k and v the same: 4 all-to-alls of 4096 B / 8 per peer
    assert r["forward"]["exposed_by_term"] == {"all-to-all": pytest.approx(4 * 512 / 1000)}
    assert r["forward"]["compute_us"] == pytest.approx(1.0)  # one call over the whole sequence
    r = m.model_algorithm(_problem("allgather", world=4, kv_heads=2, seqlen=64), lambda s: 1.0, p)
    # K and V: 16 tokens x 2 heads x 16 x 2 B = 1024 B each, gathered to every peer
    assert r["forward"]["exposed_by_term"] == {"all-gather K/V": pytest.approx(2 * 1.024)}
    assert r["backward"]["exposed_by_term"] == {"reduce-scatter dK/dV": pytest.approx(2 * 1.024)}


def test_problem_rules():
    with pytest.raises(ValueError, match="heads 2 and kv heads 1 must both be divisible by the Ulysses degree 2"):
        m.check_problem(_problem("ulysses"))
    with pytest.raises(ValueError, match="needs ulysses_degree, a divisor of the world size 4, got 3"):
        m.check_problem(_problem("hybrid", world=4, seqlen=32, ulysses_degree=3))
    with pytest.raises(ValueError, match="seqlen 12 must be a positive multiple of 2 \\* world = 8"):
        m.check_problem(_problem("ring", world=4, seqlen=12))


def test_cli_json_fields(capsys):
    rc = cli.main(["profile", "--cp-world", "2", "--cp-algo", "hybrid", "--ulysses-degree", "2", "--seqlen", "512",
                   "--heads", "2", "--head-dim", "64", "--causal", "--json"])
    assert rc == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["label"] == "modeled (Ascend910B2)" and rep["algo"] == "hybrid"
    assert rep["problem"]["tokens_per_rank"] == 256 and rep["problem"]["ulysses_degree"] == 2
    assert set(rep["link"]) == set(m.CORNERS)
    for d in ("forward", "backward", "step"):
        r = rep[d]
        assert r["compute_us"] > 0 and r["total_us"] == pytest.approx(r["compute_us"] + r["exposed_comm_us"])
        assert r["efficiency"] == pytest.approx(r["compute_us"] / r["total_us"])
        assert 0 < r["efficiency_low"] <= r["efficiency"] <= r["efficiency_high"] <= 1
    assert rep["forward"]["exposed_by_term"]["all-to-all"] > 0  # one ring member: the all-to-alls are all there is
    rc = cli.main(["profile", "--cp-world", "2", "--cp-algo", "ring", "--seqlen", "510", "--json"])
    assert rc == 2 and "seqlen 510 must be a positive multiple of 2 * world = 4" in capsys.readouterr().err
