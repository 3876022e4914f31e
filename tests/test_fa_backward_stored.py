"""The backward's stored tiles (op_kernel/tiling/bwd_tiling.h): the dQ pass stores P and dS and the dK/dV pass
multiplies them, in chunks of kv heads whose tiles fit a workspace limit; where one kv head's tiles do not fit, in
chunks of one kv head and of query blocks (dK/dV summed over the chunks in the workspace); where not even those fit,
the dK/dV pass recomputes them. The rest of the suite runs the default (every problem there fits in one chunk); here
the limit is lowered (twin_backend.set_bwd_store_limit) to run the chunked and the recompute schedules against
float64 (FA criterion, 3x for gradients), the head-chunked one bitwise against one chunk and the query-chunked one
bitwise across core counts."""
from __future__ import annotations

import math

import pytest
import torch

import npu_flash_attn
from npu_flash_attn import twin_backend
from feature_problems import CASES, case_id, check_grads, fwd, problem

grad_op = torch.ops.npu.flash_attention_grad


def _stored_bytes_per_kv_head(args, kw, info, blocks=None) -> int:
    """P and dS of every s1 x s2 block of every sequence (of its first `blocks` s1 blocks: one query chunk), per
    query head of one kv head's group (512 B aligned)."""
    q, k, _, n1, layout = args
    s1b, s2b = info["s1_block"], info["s2_block"]
    if layout == "TND":
        cq, ck = kw["actual_seq_qlen"], kw["actual_seq_kvlen"]
        lens = [(a - b, c - d) for a, b, c, d in zip(cq, [0] + cq[:-1], ck, [0] + ck[:-1])]
        n2 = k.shape[1]
    else:
        axis = {"BSH": 1, "SBH": 0, "BSND": 1, "BNSD": 2}[layout]
        batch = q.shape[1] if layout == "SBH" else q.shape[0]
        lens = [(q.shape[axis], k.shape[axis])] * batch
        n2 = k.shape[2] // (q.shape[2] // n1) if layout in ("BSH", "SBH") else k.shape[{"BSND": 2, "BNSD": 1}[layout]]
    tiles = sum(min(-(-a // s1b), blocks or a) * -(-b // s2b) for a, b in lens)
    tile_bytes = -(-s1b * s2b * 2 // 512) * 512
    return tiles * (n1 // n2) * 2 * tile_bytes, n2


@pytest.fixture
def store_limit():
    yield twin_backend.set_bwd_store_limit
    twin_backend.set_bwd_store_limit(None)


def _run_modes(args, kw, gen, store_limit, train=()):
    check_grads(args, kw, gen, train=train)  # the default: one chunk of every head
    info = twin_backend.last_launch_info()
    assert info["stored_tiles"]
    one_chunk = info["launches"]
    per_head, n2 = _stored_bytes_per_kv_head(args, kw, info)
    store_limit(per_head)  # exactly one kv head's tiles: a chunk per kv head
    check_grads(args, kw, gen, train=train)
    info = twin_backend.last_launch_info()
    assert info["stored_tiles"] and info["head_chunk"] == 1 and info["launches"] == n2 * one_chunk
    store_limit(1)  # no kv head's tiles fit: the dK/dV pass recomputes S and dP
    check_grads(args, kw, gen, train=train)
    info = twin_backend.last_launch_info()
    assert not info["stored_tiles"] and info["launches"] == one_chunk


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_chunked_and_recomputed_grads_match_float64(case, gen, store_limit):
    args, kw = problem(case, gen)
    _run_modes(args, kw, gen, store_limit)


def test_chunked_and_recomputed_with_softcap_sink_gqa(gen, store_limit):
    args, kw = problem(("BSND", "bf16", 2, 150, 333, 6, 2, 72, dict(sparse_mode=3)), gen, q_gain=4.0)
    kw.update(softcap=20.0 + 10.0 * torch.rand((), generator=gen).item(), sink=1.0 + torch.randn(6, generator=gen))
    _run_modes(args, kw, gen, store_limit, train=("sink",))


def test_chunks_match_one_chunk_bitwise(gen, store_limit):
    # the same tiles and sums in the same order, only launched per kv head
    B, S1, S2, N1, N2, D = 2, 200, 270, 6, 3, 64
    q = torch.randn(B, S1, N1, D, generator=gen).to(torch.float16)
    k, v = (torch.randn(B, S2, N2, D, generator=gen).to(torch.float16) for _ in range(2))
    kw = dict(scale=1 / math.sqrt(D), sparse_mode=4, pre_tokens=120, next_tokens=10)
    out, smax, ssum = fwd(q, k, v, N1, "BSND", **kw)
    dy = torch.randn(out.shape, generator=gen).to(out.dtype)

    def run():
        return grad_op(q, k, v, dy, N1, "BSND", softmax_max=smax, softmax_sum=ssum, attention_in=out, **kw)[:3]
    whole = run()
    info = twin_backend.last_launch_info()
    assert info["stored_tiles"] and info["head_chunk"] == N2
    store_limit(_stored_bytes_per_kv_head((q, k, v, N1, "BSND"), kw, info)[0])
    chunked = run()
    info = twin_backend.last_launch_info()
    assert info["stored_tiles"] and info["head_chunk"] == 1 and info["launches"] == 2 * N2
    assert all(torch.equal(a, b) for a, b in zip(whole, chunked)), "chunked and one-chunk gradients differ"


@pytest.mark.parametrize("bad", [0, -5, 1.5, "1"])
def test_store_limit_rejects_bad_values(bad):
    with pytest.raises(ValueError, match="limit_bytes must be a positive int"):
        twin_backend.set_bwd_store_limit(bad)


@pytest.mark.parametrize("case, limit, resident", [
    (("BNSD", "bf16", 1, 140, 300, 2, 2, 128, {}), None, True),          # 64 x 128 tiles: Q, dO 16 KB each
    (("BSND", "fp16", 2, 70, 150, 2, 1, 64, dict(sparse_mode=3)), None, True),  # 8 KB each, the halves 24 KB
    (("BNSD", "bf16", 1, 140, 300, 2, 2, 128, {}), 1, False),           # recompute: 128 x 64 tiles, 64 KB
    (("BSND", "fp16", 1, 96, 150, 2, 2, 256, {}), None, False),         # 64 x 64 tiles, D = 256: 64 KB
], ids=["d128", "d64-causal", "d128-recompute", "d256"])
def test_dq_pass_resident_query_side(case, limit, resident, gen, store_limit):
    # The dQ pass keeps a task's Q and dO in L0A over its steps where they leave room for two dS tiles
    # (bwd_tiling.h BwdDqResident), else reloads them per step; both against float64.
    if limit is not None:
        store_limit(limit)
    args, kw = problem(case, gen)
    check_grads(args, kw, gen)
    assert twin_backend.last_launch_info()["dq_resident"] is resident


def _seed_offset(gen):
    return int(torch.randint(0, 2 ** 62, (1,), generator=gen)), int(torch.randint(0, 2 ** 31, (1,), generator=gen))


# (case, s1 blocks whose tiles the limit admits, extra kwargs, trained keyword tensors); the tiling then takes chunks
# of at most that many blocks (bwd_tiling.h kBwdMinChunkSteps, QueryChunkBlocks).
QUERY_CHUNK_CASES = [
    # GQA, causal from the top left with S1 > S2, a trained sink: chunks of 4, 4, 3 blocks
    (("BSND", "fp16", 1, 700, 300, 4, 2, 128, dict(sparse_mode=2)), 4, {}, ("sink",)),
    # TND: a one-block sequence done in the first chunk, a five-block one done in the second, an eight-block one
    (("TND", "bf16", 3, 0, 0, 8, 2, 64, dict(actual_seq_qlen=[300, 340, 800], actual_seq_kvlen=[200, 290, 600],
                                              sparse_mode=3)), 3, {}, ()),
    # a dense mask with dropout, MHA (8 blocks a chunk: kBwdMinChunkSteps), D = 96
    (("BNSD", "fp16", 1, 650, 190, 2, 2, 96, dict(atten_mask="dense")), 8, "dropout", ()),
    # a band with softcap, ALiBi
    (("SBH", "bf16", 2, 600, 400, 4, 4, 64, dict(sparse_mode=4, pre_tokens=200, next_tokens=30)), 9, "softcap", ()),
]


@pytest.mark.parametrize("case, blocks, extra, train", QUERY_CHUNK_CASES,
                         ids=["gqa-causal-sink", "tnd", "dense-dropout", "band-softcap-alibi"])
def test_query_chunks_match_float64(case, blocks, extra, train, gen, store_limit):
    args, kw = problem(case, gen)
    if extra == "dropout":
        seed, offset = _seed_offset(gen)
        kw.update(keep_prob=0.8, seed=seed, offset=offset)
    elif extra == "softcap":
        kw.update(softcap=30.0, pse=torch.rand(case[5], generator=gen) * 0.1, pse_type=2)
    if "sink" in train:
        kw["sink"] = 1.0 + torch.randn(case[5], generator=gen)
    check_grads(args, kw, gen, train=train)
    info = twin_backend.last_launch_info()
    assert info["stored_tiles"] and info["query_chunk_rows"] == 0
    per_chunk, n2 = _stored_bytes_per_kv_head(args, kw, info, blocks)
    store_limit(per_chunk)
    check_grads(args, kw, gen, train=train)
    info = twin_backend.last_launch_info()
    rows = info["query_chunk_rows"]
    assert info["stored_tiles"] and info["head_chunk"] == 1 and 0 < rows <= blocks * info["s1_block"]
    longest = max(b - a for a, b in zip([0] + kw["actual_seq_qlen"][:-1], kw["actual_seq_qlen"])) \
        if case[0] == "TND" else case[3]
    chunks = -(-longest // rows)
    assert chunks >= 2 and info["launches"] == 2 * n2 * chunks


def test_query_chunks_bitwise_across_core_counts(gen, store_limit):
    # the earlier chunks' fp32 sums are added in chunk order, each row by one task: no dependence on the split
    B, S1, S2, N1, N2, D = 2, 700, 1600, 8, 2, 128  # 24 or more tasks in each pass of a chunk
    q = torch.randn(B, S1, N1, D, generator=gen).to(torch.bfloat16)
    k, v = (torch.randn(B, S2, N2, D, generator=gen).to(torch.bfloat16) for _ in range(2))
    kw = dict(scale=1 / math.sqrt(D), sparse_mode=3)
    out, smax, ssum = fwd(q, k, v, N1, "BSND", **kw)
    dy = torch.randn(out.shape, generator=gen).to(out.dtype)

    def run():
        return grad_op(q, k, v, dy, N1, "BSND", softmax_max=smax, softmax_sum=ssum, attention_in=out,
                       deterministic=True, **kw)[:3]
    whole = run()
    store_limit(_stored_bytes_per_kv_head((q, k, v, N1, "BSND"), kw, twin_backend.last_launch_info(), 4)[0])
    try:
        npu_flash_attn.set_chip("Ascend910B2")
        first = run()
        info = twin_backend.last_launch_info()
        assert info["block_dim_dq"] == info["block_dim_dkv"] == 24 and info["query_chunk_rows"] > 0
        assert info["launches"] >= 6
        npu_flash_attn.set_chip("Ascend910B4")
        other = run()
        info = twin_backend.last_launch_info()
        assert info["block_dim_dq"] == 20 and info["block_dim_dkv"] == 20
    finally:
        npu_flash_attn.set_chip(None)
    assert all(torch.equal(a, b) for a, b in zip(first, other)), "24-core and 20-core results differ bitwise"
    # against one chunk: the same products, summed over the chunks in fp32 (not bitwise)
    for a, b in zip(first, whole):
        assert (a.double() - b.double()).abs().max() <= 2 * torch.finfo(torch.bfloat16).eps * b.double().abs().max()
