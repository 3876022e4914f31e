"""Multi-process harness of the context-parallel tests: spawns `world` gloo processes on 127.0.0.1 (a free port,
a deadline, every process ended), runs a list of cases in each and returns rank 0's verdicts. A case is a dict
(see `run_case`); every rank builds the same global problem from the case's seed, shards it, runs
context_parallel_attention (and its backward), unshards, and rank 0 checks the result against float64 attention
over the whole sequence (npu_flash_attn.reference, the FlashAttention criterion)."""
from __future__ import annotations

import os
import socket
import traceback

import torch
import torch.multiprocessing as mp

INT32_MAX = 2147483647


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, cases: list, results):
    import torch.distributed as dist
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        for case in cases:
            try:
                verdict = run_case(case, rank, world)
            except Exception:  # reported, the other cases still run (ranks fail together: same inputs)
                verdict = ("error", traceback.format_exc(limit=6))
            if rank == 0:
                results.put((case["id"], verdict))
    finally:
        dist.destroy_process_group()


def spawn(cases: list, world: int, timeout: float = 240.0) -> dict:
    """{case id: verdict} from rank 0; raises if a process hangs or dies."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_worker, args=(r, world, port, cases, results), daemon=True) for r in range(world)]
    for p in procs:
        p.start()
    out = {}
    try:
        import queue
        import time
        deadline = time.monotonic() + timeout
        while len(out) < len(cases):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"context-parallel workers did not finish in {timeout} s (got {sorted(out)})")
            try:
                cid, verdict = results.get(timeout=min(left, 5.0))
                out[cid] = verdict
            except queue.Empty:
                if any(p.exitcode not in (None, 0) for p in procs):
                    raise RuntimeError(f"a worker died: exit codes {[p.exitcode for p in procs]}")
        for p in procs:
            p.join(timeout=30)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
    return out


def _shapes(case, world):
    layout, n1, n2, d = case["layout"], case["n1"], case["n2"], case["d"]
    pieces = 2 * world if case.get("load_balance", "zigzag") == "zigzag" else world
    if layout == "TND":
        cu = [0]
        for m in case["seq_chunks"]:  # each sequence m chunks long
            cu.append(cu[-1] + m * pieces)
        t = cu[-1]
        return [(t, n1, d), (t, n2, d), (t, n2, d)], 0, cu
    s = case["s_chunks"] * pieces
    b = case.get("b", 2)
    if layout == "BSND":
        return [(b, s, n1, d), (b, s, n2, d), (b, s, n2, d)], 1, None
    if layout == "BSH":
        return [(b, s, n1 * d), (b, s, n2 * d), (b, s, n2 * d)], 1, None
    return [(b, n1, s, d), (b, n2, s, d), (b, n2, s, d)], 2, None


def _slopes(case, gen, batches: int) -> torch.Tensor:
    """BLOOM's geometric ALiBi slopes 2^(-8 (h + 1) / N1), jittered so that a head or batch mix-up shows; per head,
    or per (batch, head) when case["alibi"] == "batch"."""
    n1 = case["n1"]
    base = torch.tensor([2 ** (-8 * (h + 1) / n1) for h in range(n1)])
    shape = (batches, n1) if case["alibi"] == "batch" else (n1,)
    return (base * torch.empty(shape).uniform_(0.5, 1.5, generator=gen)).float()


def _ref_kwargs(case, d, cu):
    """The single-device op's arguments (the float64 model's) for the case's global mask."""
    kw = dict(scale=d ** -0.5)
    if cu is not None:
        kw.update(actual_seq_qlen=cu[1:], actual_seq_kvlen=cu[1:])
    left, right = case.get("window") or (-1, -1)
    if case.get("causal"):
        right = 0 if right < 0 else min(right, 0)
    if left >= 0 or right >= 0:
        kw.update(sparse_mode=4, pre_tokens=left if left >= 0 else INT32_MAX,
                  next_tokens=right if right >= 0 else INT32_MAX)
    if case.get("softcap"):
        kw["softcap"] = case["softcap"]
    if case.get("keep_prob", 1.0) < 1.0:  # one device's dropout: the same elements must be dropped
        kw.update(keep_prob=case["keep_prob"], seed=case["seed"])
    return kw


def run_case(case: dict, rank: int, world: int):
    """("ok", details) / ("fail", message) / ("raised", type name, message) for `expect_error` cases."""
    from npu_flash_attn.distributed import context_parallel_attention, shard_sequence, unshard_sequence
    from npu_flash_attn.reference import flash_attention_lowprec, flash_attention_reference

    gen = torch.Generator().manual_seed(case["seed"])
    dt = torch.bfloat16 if case.get("dtype", "bf16") == "bf16" else torch.float16
    shapes, seq_dim, cu = _shapes(case, world)
    q, k, v = (torch.randn(s, generator=gen).to(dt) for s in shapes)
    dy = torch.randn(shapes[0][:-1] + (shapes[2][-1],), generator=gen).to(dt)
    sink = torch.randn(case["n1"], generator=gen) if case.get("sink") else None
    alibi = _slopes(case, gen, len(cu) - 1 if cu is not None else shapes[0][0]) if case.get("alibi") else None
    lb = case.get("load_balance", "zigzag")
    cp_cu = case.get("cp_cu_seqlens", cu)

    def shard(x):
        r = shard_sequence(x, seq_dim=seq_dim, load_balance=lb, cu_seqlens=cu)
        return r[0] if cu is not None else r

    local = [shard(x) for x in (q, k, v)]
    leaves = [t.clone().requires_grad_() for t in local]
    sink_leaf = None if sink is None else sink.clone().requires_grad_()
    kwargs = dict(algo=case["algo"], load_balance=lb, causal=case.get("causal", False),
                  window_size=case.get("window"), cu_seqlens=cp_cu, sink=sink_leaf, softcap=case.get("softcap"),
                  ulysses_degree=case.get("ulysses_degree"), keep_prob=case.get("keep_prob", 1.0), seed=case["seed"],
                  alibi_slopes=alibi, deterministic=case.get("deterministic", False))
    if case.get("bad_sink"):
        kwargs["sink"] = torch.zeros(3)  # three logits for four heads
    if case.get("bad_alibi"):
        kwargs["alibi_slopes"] = torch.ones(3, shapes[0][0], 4)  # 3-D slopes
    if case.get("bad_alibi_batches"):
        kwargs["alibi_slopes"] = torch.ones(alibi.shape[0] + 1, case["n1"])  # one row too many
    if case.get("uneven") and rank == 1:  # a rank whose part is not from the same sharding as the others'
        leaves = [t.narrow(seq_dim, 0, t.shape[seq_dim] - 2) for t in leaves]
    if "expect_error" in case:
        try:
            context_parallel_attention(*leaves, case["n1"], case["layout"], **kwargs)
        except Exception as e:  # noqa: BLE001 - the test compares type and message
            return ("raised", type(e).__name__, str(e))
        return ("fail", "no exception")
    out = context_parallel_attention(*leaves, case["n1"], case["layout"], **kwargs)
    grad = case.get("grad", False) or case.get("repeat", False)
    if grad:
        out.backward(shard(dy))
    if case.get("repeat"):  # determinism: a second run, bitwise compared
        again = [t.detach().clone().requires_grad_() for t in local]
        s2 = None if sink is None else sink.clone().requires_grad_()
        out2 = context_parallel_attention(*again, case["n1"], case["layout"], **dict(kwargs, sink=s2))
        out2.backward(shard(dy))
        same = torch.equal(out, out2) and all(torch.equal(a.grad, b.grad) for a, b in zip(leaves, again))
        if s2 is not None:
            same = same and torch.equal(sink_leaf.grad, s2.grad)
        return ("ok", "bitwise equal") if same else ("fail", "two runs differ")
    out_full = unshard_sequence(out.detach(), seq_dim=seq_dim, load_balance=lb, cu_seqlens=cu)
    grads = [unshard_sequence(t.grad, seq_dim=seq_dim, load_balance=lb, cu_seqlens=cu) for t in leaves] if grad else []
    if rank != 0:
        return None
    n1, layout = case["n1"], case["layout"]
    kw = _ref_kwargs(case, shapes[0][-1] if layout != "BSH" else shapes[0][-1] // n1, cu)
    if sink is not None:
        kw["sink"] = sink
    if alibi is not None:  # -slope * |i - j| over the whole sequence's positions
        kw.update(pse=alibi, pse_type=2, q_start_idx=[0], kv_start_idx=[0])
    d64 = {n: (x.double() if isinstance(x, torch.Tensor) else x) for n, x in kw.items()}
    ref = [t.double().requires_grad_() for t in (q, k, v)]
    if sink is not None:
        d64["sink"] = sink.double().requires_grad_()
    ro = flash_attention_reference(*ref, n1, layout, **d64)[0]
    low_leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    kw_low = dict(kw)
    if sink is not None:
        kw_low["sink"] = sink.clone().requires_grad_()
    lo = flash_attention_lowprec(*low_leaves, n1, layout, **kw_low)
    report = []
    err, base = (out_full.double() - ro).abs().max().item(), (lo.double() - ro).abs().max().item()
    if not err <= 2 * base + 1e-5:
        return ("fail", f"out: max|out - ref64| = {err:.3e} > 2 * {base:.3e} + 1e-5")
    report.append(f"out {err:.2e}<={2 * base + 1e-5:.2e}")
    if ((ro == 0).all(dim=-1) & ~(out_full == 0).all(dim=-1)).any():
        return ("fail", "a row that sees no key is not exactly zero")
    if grad:
        ro.backward(dy.double())
        (lo.double() * dy.double()).sum().backward()
        pairs = list(zip(("dq", "dk", "dv"), grads, ref, low_leaves))
        if sink is not None:
            pairs.append(("dsink", sink_leaf.grad, d64["sink"], kw_low["sink"]))
        for name, g, r, l in pairs:
            err = (g.double() - r.grad).abs().max().item()
            base = (l.grad.double() - r.grad).abs().max().item()
            if not err <= 3 * base + 1e-5:
                return ("fail", f"{name}: max|g - g64| = {err:.3e} > 3 * {base:.3e} + 1e-5")
            report.append(f"{name} {err:.2e}<={3 * base + 1e-5:.2e}")
    return ("ok", ", ".join(report))
