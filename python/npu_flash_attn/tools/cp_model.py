"""Modeled context-parallel time on 910B: the cost model's kernel time of exactly the calls the context-parallel
planner (npu_flash_attn.distributed.plan) issues on each rank at each step, combined with a link model of the
Atlas 800T A2 fabric. Numbers are "modeled (<chip>)", not measurements.

Link model (parameters, ranges and sources in LINK_PARAMS, the one place they live; docs/context_parallel.md):
  * a node holds NODE_NPUS NPUs joined by HCCS as a full mesh: every pair has its own link, so a rank's transfers to
    different peers run in parallel and a ring step uses one link per direction;
  * ranks in different nodes talk over RoCE, one NIC per NPU, shared by all of the rank's inter-node peers;
  * a transfer of n bytes over one link takes latency + n / bandwidth; ranks r and r' share a node when
    r // NODE_NPUS == r' // NODE_NPUS.
Algorithms, as the code in npu_flash_attn.distributed runs them:
  * ring: step t computes (local queries, K/V of rank r - t) while the next K/V travel (posted before the step's
    kernels, waited after: ring.py), so a step takes max(compute, transfer) on its slowest rank and link; the
    backward's steps also carry the previous step's fp32 dK/dV, and the last dK/dV hop is exposed;
  * ulysses: all-to-alls of q, k, v before and of the output after the local attention (not overlapped), the
    backward the same four in reverse (dout; dq, dk, dv);
  * hybrid: Ulysses all-to-alls inside groups of `ulysses_degree` consecutive ranks, a ring across the groups;
  * allgather: K and V gathered before the local calls (not overlapped), their gradients reduce-scattered after.
Not modeled: the fp32 merge of partial results (vector work outside the kernel), kernel launch gaps between calls
beyond the cost model's launch overhead, link contention from other traffic (data-parallel gradients), and the
cost model's own error bars (docs/cost_model.md): the low/high columns move the link parameters only."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from ..distributed.plan import Visibility, plan_calls
from ..distributed.sharding import Sharding

__all__ = ["LinkParam", "LINK_PARAMS", "NODE_NPUS", "CORNERS", "link_values", "same_node", "transfer_us",
           "ring_transfer_us", "all_to_all_us", "all_gather_us", "ring_step", "CallShape", "CpProblem",
           "model_algorithm", "kernel_time", "check_problem", "cp_report"]

NODE_NPUS = 8  # Atlas 800T A2 / Atlas 900 A2 PoD node: 8 NPUs (shared/research/peers_and_anchors.md sec. 6)


@dataclass(frozen=True)
class LinkParam:
    value: float
    low: float  # the end that makes communication slower (bandwidth low, latency high) is taken at the slow corner
    high: float
    unit: str
    source: str


LINK_PARAMS = {
    "hccs.gbps": LinkParam(
        56.0, 16.0, 56.0, "GB/s per direction, one HCCS peer link",
        "56 GB/s per peer, 392 GB/s = 7 x 56 aggregate for 8 x A2 over HCCS (shared/research/peers_and_anchors.md "
        "sec. 6, from ArthurChiao's 910B notes); low end: a user's HCCL all_gather measured 38 GB/s on 2 and 64 GB/s "
        "on 4 cards (same section, limulidae README), i.e. 19 and 16 GB/s per peer link"),
    "hccs.latency_us": LinkParam(
        10.0, 5.0, 30.0, "us per transfer (launch to completion of a small message)",
        "estimate, no primary number found: HCCL's send/recv and all-to-all are stream tasks with a notify "
        "handshake; 5-30 us brackets what NCCL-class libraries show for small messages"),
    "roce.gbps": LinkParam(
        25.0, 12.5, 25.0, "GB/s per direction, one NPU's RoCE port",
        "Atlas 800T A2: one network port per NPU, 8 per node (MindCluster deployer guide, 'NPU网口' configuration); "
        "200GE per port [unverified: from product listings], low end a 100GE fabric"),
    "roce.latency_us": LinkParam(
        20.0, 10.0, 50.0, "us per transfer",
        "estimate, no primary number found: RoCE adds switch hops and NIC processing to the HCCS path"),
}
CORNERS = ("value", "low", "high")  # "low": communication at its slowest (efficiency low)


def link_values(corner: str = "value", overrides: Optional[dict] = None) -> dict:
    """{name: number} at a corner of the ranges: "value", "low" (slowest links: low bandwidth, high latency) or
    "high" (fastest links); `overrides` replace entries at every corner."""
    if corner not in CORNERS:
        raise ValueError(f"corner={corner!r} must be one of {CORNERS}")
    out = {}
    for name, p in LINK_PARAMS.items():
        if corner == "value":
            out[name] = p.value
        else:
            slow = corner == "low"
            bandwidth = name.endswith("gbps")
            out[name] = (p.low if bandwidth else p.high) if slow else (p.high if bandwidth else p.low)
    for name, v in (overrides or {}).items():
        if name not in LINK_PARAMS:
            raise ValueError(f"link parameter {name!r} is not one of {sorted(LINK_PARAMS)}")
        out[name] = float(v)
    return out


def same_node(a: int, b: int) -> bool:
    return a // NODE_NPUS == b // NODE_NPUS


def _kind(a: int, b: int) -> str:
    return "hccs" if same_node(a, b) else "roce"


def transfer_us(nbytes: float, src: int, dst: int, p: dict) -> float:
    """One transfer of nbytes from rank src to rank dst (GB/s = 1e3 bytes per us)."""
    k = _kind(src, dst)
    return p[f"{k}.latency_us"] + nbytes / (p[f"{k}.gbps"] * 1e3)


def ring_transfer_us(nbytes: float, ranks: Sequence[int], p: dict) -> float:
    """Every member of the ring `ranks` sends nbytes to the next at once: the slowest hop (0 for one member)."""
    n = len(ranks)
    if n < 2:
        return 0.0
    return max(transfer_us(nbytes, ranks[i], ranks[(i + 1) % n], p) for i in range(n))


def all_to_all_us(nbytes: float, ranks: Sequence[int], p: dict) -> float:
    """Every member holds nbytes and sends nbytes / len(ranks) to each other member: peers in its node over their
    own HCCS links in parallel, peers in other nodes one after the other through its RoCE port. The slowest
    member's time (0 for one member)."""
    n = len(ranks)
    if n < 2:
        return 0.0
    share, worst = nbytes / n, 0.0
    for r in ranks:
        intra = sum(1 for o in ranks if o != r and same_node(r, o))
        inter = n - 1 - intra
        t = 0.0
        if intra:
            t = max(t, p["hccs.latency_us"] + share / (p["hccs.gbps"] * 1e3))
        if inter:
            t = max(t, p["roce.latency_us"] + inter * share / (p["roce.gbps"] * 1e3))
        worst = max(worst, t)
    return worst


def all_gather_us(nbytes: float, ranks: Sequence[int], p: dict) -> float:
    """Every member's nbytes to every other member: an all-to-all of len(ranks) x nbytes (each peer gets nbytes);
    the reduce-scatter of the gradients moves the same bytes the other way."""
    return all_to_all_us(nbytes * len(ranks), ranks, p)


def ring_step(compute_us: float, transfer: float) -> tuple[float, float]:
    """(step time, exposed communication) of a ring step whose transfer overlaps its compute."""
    return max(compute_us, transfer), max(0.0, transfer - compute_us)


@dataclass(frozen=True)
class CallShape:
    """What the cost model needs of one call: B, heads, query rows, key columns, the band (pre_tokens,
    next_tokens; None = full), the direction and whether the call holds only part of its rows' keys."""
    batch: int
    heads: int
    kv_heads: int
    lq: int
    lk: int
    band: Optional[tuple[int, int]]
    backward: bool
    partial_keys: bool


@dataclass(frozen=True)
class CpProblem:
    world: int
    algo: str
    batch: int
    heads: int
    kv_heads: int
    seqlen: int  # the whole sequence, world * tokens per rank
    head_dim: int
    dtype_bytes: int = 2
    causal: bool = True
    ulysses_degree: Optional[int] = None

    @property
    def tokens_per_rank(self) -> int:
        return self.seqlen // self.world


def _plan_shapes(problem: CpProblem, q_part, kv_part, heads: int, kv_heads: int, backward: bool,
                 partial_keys: bool) -> list[CallShape]:
    vis = Visibility.of((problem.seqlen,), (problem.seqlen,), problem.causal, None)
    out = []
    for c in plan_calls(q_part, kv_part, vis, False):
        band = None if c.sparse_mode == 0 else (c.pre_tokens, c.next_tokens)
        out.append(CallShape(problem.batch, heads, kv_heads, sum(s.lq for s in c.subs), sum(s.lk for s in c.subs),
                             band, backward, partial_keys))
    return out


class _Timeline:
    """Compute and exposed communication of one direction, term by term."""

    def __init__(self):
        self.compute = 0.0
        self.exposed: dict[str, float] = {}
        self.link_bound_steps = 0
        self.steps = 0

    def comm(self, term: str, us: float) -> None:
        self.exposed[term] = self.exposed.get(term, 0.0) + us

    def step(self, compute: float, transfer: float, term: str) -> None:
        _, exposed = ring_step(compute, transfer)
        self.compute += compute
        self.comm(term, exposed)
        self.steps += 1
        self.link_bound_steps += exposed > 0

    def report(self) -> dict:
        exposed = sum(self.exposed.values())
        total = self.compute + exposed
        return {"compute_us": self.compute, "exposed_comm_us": exposed, "total_us": total,
                "efficiency": self.compute / total if total > 0 else 1.0, "exposed_by_term": dict(self.exposed),
                "ring_steps": self.steps, "link_bound_steps": self.link_bound_steps}


def _ring(problem: CpProblem, time_of: Callable[[CallShape], float], p: dict, parts, rings, heads: int,
          kv_heads: int, fwd: _Timeline, bwd: _Timeline) -> None:
    """The ring over members holding `parts` (chunks per member), run by every ring in `rings` (global ranks of
    each ring's members, all rings in step); compute per step is the slowest member's."""
    m = len(parts)
    tokens = sum(c.length for c in parts[0])
    kv = 2 * problem.batch * tokens * kv_heads * problem.head_dim * problem.dtype_bytes
    dkv = 2 * problem.batch * tokens * kv_heads * problem.head_dim * 4  # fp32 dK/dV travel (ring.py)

    def link(nbytes: float) -> float:
        return max(ring_transfer_us(nbytes, r, p) for r in rings) if nbytes > 0 else 0.0

    for t in range(m):
        for backward, line in ((False, fwd), (True, bwd)):
            compute = max(sum(time_of(s) for s in _plan_shapes(problem, parts[r], parts[(r - t) % m], heads,
                                                               kv_heads, backward, backward)) for r in range(m))
            nbytes = (kv if t < m - 1 else 0) + (dkv if backward and t >= 1 else 0)
            line.step(compute, link(nbytes), "ring K/V" + (" + dK/dV" if backward else ""))
    if m > 1:
        bwd.comm("last dK/dV hop", link(dkv))


def _whole_rows(problem: CpProblem, time_of, q_parts, kv_part, heads: int, kv_heads: int, fwd: _Timeline,
                bwd: _Timeline) -> None:
    """Calls holding all of their rows' keys (Ulysses, all-gather): the slowest rank's."""
    for backward, line in ((False, fwd), (True, bwd)):
        line.compute += max(sum(time_of(s) for s in _plan_shapes(problem, q, kv_part, heads, kv_heads, backward,
                                                                  False)) for q in q_parts)


def model_algorithm(problem: CpProblem, time_of: Callable[[CallShape], float], p: dict) -> dict:
    """{forward, backward, step}: compute_us, exposed_comm_us (by term), total_us, efficiency = compute / total."""
    w, b, d, e = problem.world, problem.batch, problem.head_dim, problem.dtype_bytes
    sh = Sharding((problem.seqlen,), w, "zigzag")
    fwd, bwd = _Timeline(), _Timeline()
    q_bytes = b * problem.tokens_per_rank * problem.heads * d * e
    kv_bytes = b * problem.tokens_per_rank * problem.kv_heads * d * e
    if problem.algo == "ring":
        _ring(problem, time_of, p, [sh.part([r]) for r in range(w)], [list(range(w))], problem.heads,
              problem.kv_heads, fwd, bwd)
    elif problem.algo in ("ulysses", "hybrid"):
        u = w if problem.algo == "ulysses" else problem.ulysses_degree
        groups = [list(range(g * u, (g + 1) * u)) for g in range(w // u)]
        a2a = max(all_to_all_us(q_bytes, g, p) for g in groups), max(all_to_all_us(kv_bytes, g, p) for g in groups)
        for line in (fwd, bwd):  # q, k, v and the output (dout; dq, dk, dv): out and q have the same bytes
            line.comm("all-to-all", 2 * a2a[0] + 2 * a2a[1])
        heads, kv_heads = problem.heads // u, problem.kv_heads // u
        if problem.algo == "ulysses":
            nat = sh.natural()
            _whole_rows(problem, time_of, [nat], nat, heads, kv_heads, fwd, bwd)
        else:
            parts = [sh.part(range(g * u, (g + 1) * u)) for g in range(w // u)]
            _ring(problem, time_of, p, parts, [list(range(j, w, u)) for j in range(u)], heads, kv_heads, fwd, bwd)
    elif problem.algo == "allgather":
        gather = all_gather_us(kv_bytes, list(range(w)), p)
        fwd.comm("all-gather K/V", 2 * gather)
        bwd.comm("reduce-scatter dK/dV", 2 * gather)
        _whole_rows(problem, time_of, [sh.part([r]) for r in range(w)], sh.natural(), problem.heads,
                    problem.kv_heads, fwd, bwd)
    else:
        raise ValueError(f"algo={problem.algo!r} must be one of ring, ulysses, hybrid, allgather")
    f, g = fwd.report(), bwd.report()
    step = {"compute_us": f["compute_us"] + g["compute_us"], "exposed_comm_us": f["exposed_comm_us"] +
            g["exposed_comm_us"], "total_us": f["total_us"] + g["total_us"]}
    step["efficiency"] = step["compute_us"] / step["total_us"] if step["total_us"] > 0 else 1.0
    return {"forward": f, "backward": g, "step": step}


def kernel_time(chip: str, head_dim: int, dtype: str, sample_blocks: int = 2) -> Callable[[CallShape], float]:
    """modeled_time_us of a call from the profiler (model-only, `sample_blocks` sampled AI cores), memoized: the
    same shape recurs across ranks and steps."""
    from . import profiler  # here: the link model itself needs no extension
    memo: dict = {}

    def time_of(s: CallShape) -> float:
        if s not in memo:
            memo[s] = profiler.profile(chip=chip, batch=s.batch, heads=s.heads, kv_heads=s.kv_heads, seqlen=s.lq,
                                       seqlen_kv=s.lk, head_dim=head_dim, dtype=dtype, band=s.band,
                                       backward=s.backward, partial_keys=s.partial_keys, model_only=True,
                                       sample_blocks=sample_blocks, bins=0)["modeled_time_us"]
        return memo[s]
    return time_of


def check_problem(problem: CpProblem) -> None:
    """The rules context_parallel_attention applies, with its messages' substance."""
    w = problem.world
    if w < 1:
        raise ValueError(f"cp world size {w} must be >= 1")
    if problem.seqlen <= 0 or problem.seqlen % (2 * w):
        raise ValueError(f"seqlen {problem.seqlen} must be a positive multiple of 2 * world = {2 * w} (zigzag)")
    if problem.algo in ("ulysses", "hybrid"):
        u = w if problem.algo == "ulysses" else problem.ulysses_degree
        if u is None or u < 1 or w % u:
            raise ValueError(f"algo={problem.algo!r} needs ulysses_degree, a divisor of the world size {w}, got {u}")
        if problem.heads % u or problem.kv_heads % u:
            raise ValueError(f"algo={problem.algo!r}: heads {problem.heads} and kv heads {problem.kv_heads} must both "
                             f"be divisible by the Ulysses degree {u}")


def cp_report(problem: CpProblem, time_of: Callable[[CallShape], float], chip: str,
              overrides: Optional[dict] = None) -> dict:
    """The JSON report of one algorithm: the problem, the link parameters at each corner, and model_algorithm's
    result at the parameters' values with efficiency_low / efficiency_high (and total_us_low / high) from the slow
    and fast corners of the link ranges."""
    check_problem(problem)
    at = {c: model_algorithm(problem, time_of, link_values(c, overrides)) for c in CORNERS}
    rep = at["value"]
    for direction in ("forward", "backward", "step"):
        for corner, suffix in (("low", "_low"), ("high", "_high")):
            rep[direction]["efficiency" + suffix] = at[corner][direction]["efficiency"]
            rep[direction]["total_us" + suffix] = at[corner][direction]["total_us"]
    return {"label": f"modeled ({chip})", "chip": chip, "algo": problem.algo,
            "problem": dict(world=problem.world, ulysses_degree=problem.ulysses_degree, batch=problem.batch,
                            heads=problem.heads, kv_heads=problem.kv_heads, seqlen=problem.seqlen,
                            tokens_per_rank=problem.tokens_per_rank, head_dim=problem.head_dim,
                            causal=problem.causal, load_balance="zigzag"),
            "link": {c: link_values(c, overrides) for c in CORNERS}, "node_npus": NODE_NPUS, **rep}
