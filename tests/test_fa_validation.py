"""npu::flash_attention argument validation (raised before any kernel launch), fake/meta shape propagation and the
chip selection helpers. None of these tests needs the compiled forward kernel."""
import math

import pytest
import torch

import npu_flash_attn
from npu_flash_attn.problem import FLT_MAX, INT32_MAX, validate_flash_attention

op = torch.ops.npu.flash_attention
F16 = torch.float16
TRIU = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)


def qkv(layout="BSND", B=2, N1=4, N2=2, S1=5, S2=7, D=16, Dv=None, dtype=F16, T=None):
    Dv = D if Dv is None else Dv
    if layout == "TND":
        T1, T2 = T if T is not None else (S1, S2)
        shapes = [(T1, N1, D), (T2, N2, D), (T2, N2, Dv)]
    else:
        make = {"BSH": lambda S, N, d: (B, S, N * d), "SBH": lambda S, N, d: (S, B, N * d),
                "BSND": lambda S, N, d: (B, S, N, d), "BNSD": lambda S, N, d: (B, N, S, d)}[layout]
        shapes = [make(S1, N1, D), make(S2, N2, D), make(S2, N2, Dv)]
    return [torch.randn(*s).to(dtype) for s in shapes]


def check_raises(exc, pattern, *args, **kwargs):
    """The op raises `exc` matching `pattern`, and no kernel ran (last_launch_info unchanged)."""
    before = npu_flash_attn.last_launch_info()
    with pytest.raises(exc, match=pattern):
        op(*args, **kwargs)
    assert npu_flash_attn.last_launch_info() == before


# ---------------------------------------------------------------------------------------------------------------
# schema and registration
# ---------------------------------------------------------------------------------------------------------------
def test_schema_is_the_public_contract():
    s = str(op.default._schema)
    assert s == (
        "npu::flash_attention(Tensor query, Tensor key, Tensor value, SymInt head_num, str input_layout, "
        "Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, float scale=1., float keep_prob=1., "
        "int pre_tokens=2147483647, int next_tokens=2147483647, int inner_precise=0, SymInt[]? prefix=None, "
        "SymInt[]? actual_seq_qlen=None, SymInt[]? actual_seq_kvlen=None, int sparse_mode=0, int seed=0, int offset=0, "
        "Tensor? sink=None, float? softcap=None, int pse_type=1, SymInt[]? q_start_idx=None, SymInt[]? kv_start_idx=None, "
        "Tensor? dropout_mask=None, SymInt[]? dropout_origin=None) -> (Tensor attention_out, Tensor softmax_max, Tensor softmax_sum)")


# ---------------------------------------------------------------------------------------------------------------
# layout / rank / shapes
# ---------------------------------------------------------------------------------------------------------------
def test_unknown_layout():
    q, k, v = qkv()
    check_raises(ValueError, r"input_layout='BSDN'.*BSH", q, k, v, 4, "BSDN")


def test_layout_is_case_insensitive():
    q, k, v = qkv("BNSD")
    assert validate_flash_attention(q, k, v, 4, "bnsd").layout == "BNSD"


@pytest.mark.parametrize("layout,bad", [("BSND", "query"), ("BNSD", "key"), ("BSH", "value"), ("SBH", "query"),
                                        ("TND", "key")])
def test_rank_vs_layout(layout, bad):
    q, k, v = qkv(layout)
    t = {"query": q, "key": k, "value": v}
    t[bad] = t[bad].unsqueeze(0)
    rank = 4 if layout in ("BSND", "BNSD") else 3
    check_raises(ValueError, rf"{bad} must be {rank}-D for input_layout='{layout}'", t["query"], t["key"],
                 t["value"], 4, layout)


@pytest.mark.parametrize("head_num", [0, -3])
def test_head_num_positive(head_num):
    q, k, v = qkv()
    check_raises(ValueError, rf"head_num={head_num} must be >= 1", q, k, v, head_num, "BSND")


def test_head_num_must_match_shape():
    q, k, v = qkv("BSND", N1=4)
    check_raises(ValueError, r"head_num=2 must equal the query's head dimension N1=4", q, k, v, 2, "BSND")
    q, k, v = qkv("TND", N1=4)
    check_raises(ValueError, r"head_num=3 .* N1=4", q, k, v, 3, "TND", actual_seq_qlen=[5], actual_seq_kvlen=[7])


@pytest.mark.parametrize("layout", ["BSH", "SBH"])
def test_hidden_sizes(layout):
    q, k, v = qkv(layout, N1=4, N2=2, D=16)  # H1 = 64, H2 = 32
    check_raises(ValueError, r"H1=64 must be a positive multiple of head_num=5", q, k, v, 5, layout)
    # head_num=8 -> D=8, N2 = 32/8 = 4 -> N1 % N2 ok; head_num=16 -> D = 4, N2 = 8, ok; make H2 not divisible
    k2 = k[..., :24]
    v2 = v[..., :24]
    check_raises(ValueError, r"key hidden size H2=24 must be a positive multiple of D=16", q, k2, v2, 4, layout)
    check_raises(ValueError, r"value hidden size H3=31 must be a positive multiple of N2=2", q, k, v[..., :31], 4,
                 layout)
    # Dv != D via H3 = N2 * Dv is fine
    p = validate_flash_attention(q, k, v[..., :16], 4, layout)
    assert (p.N1, p.N2, p.D, p.Dv) == (4, 2, 16, 8)
    assert p.out_shape[-1] == 4 * 8


@pytest.mark.parametrize("layout", ["BSND", "BNSD"])
def test_key_value_consistency(layout):
    q, k, v = qkv(layout, B=2, N1=4, N2=2, S2=7, D=16)
    _, kb, vb = qkv(layout, B=3, N1=4, N2=2, S2=7, D=16)
    check_raises(ValueError, r"batch sizes must match: query B=2, key B=3", q, kb, vb, 4, layout)
    check_raises(ValueError, r"batch sizes must match: .* value B=3", q, k, vb, 4, layout)
    _, _, vs = qkv(layout, B=2, N1=4, N2=2, S2=6, D=16)
    check_raises(ValueError, r"key and value sequence lengths must match: key S2=7, value S2=6", q, k, vs, 4, layout)
    _, kd, _ = qkv(layout, N1=4, N2=2, S2=7, D=8)
    check_raises(ValueError, r"key head dim 8 must equal query head dim D=16", q, kd, v, 4, layout)
    _, _, vn = qkv(layout, N1=4, N2=1, S2=7, D=16)
    check_raises(ValueError, r"value head count 1 must equal key head count N2=2", q, k, vn, 4, layout)


def test_gqa_divisibility():
    q, k, v = qkv("BNSD", N1=4, N2=3)
    check_raises(ValueError, r"N1=4 must be a multiple of key/value heads N2=3", q, k, v, 4, "BNSD")


def test_head_dim_limits():
    q, k, v = qkv("BSND", N1=1, N2=1, D=520, S1=2, S2=2)
    check_raises(ValueError, r"head dim D=520 must be in \[1, 512\]", q, k, v, 1, "BSND")
    q, k, v = qkv("BSND", D=16, Dv=32)
    check_raises(ValueError, r"value head dim Dv=32 must be in \[1, D=16\]", q, k, v, 4, "BSND")
    p = validate_flash_attention(*qkv("BSND", N1=1, N2=1, D=512, Dv=128), 1, "BSND")
    assert (p.D, p.Dv) == (512, 128)


def test_dtypes():
    q, k, v = qkv(dtype=torch.float32)
    check_raises(TypeError, r"query dtype torch.float32 is not supported; use torch.float16 or torch.bfloat16",
                 q, k, v, 4, "BSND")
    q, k, v = qkv()
    check_raises(TypeError, r"key dtype torch.bfloat16 must equal query dtype torch.float16", q,
                 k.to(torch.bfloat16), v, 4, "BSND")
    check_raises(TypeError, r"value dtype torch.float32 must equal", q, k, v.float(), 4, "BSND")


def test_device_consistency():
    q, k, v = qkv()
    check_raises(ValueError, r"key is on device meta but query is on cpu", q, k.to("meta"), v, 4, "BSND")


def test_non_tensor_inputs():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="value must be a torch.Tensor"):
        validate_flash_attention(q, k, [1.0], 4, "BSND")
    with pytest.raises(TypeError, match="input_layout must be a str"):
        validate_flash_attention(q, k, v, 4, 7)


# ---------------------------------------------------------------------------------------------------------------
# varlen lists
# ---------------------------------------------------------------------------------------------------------------
def test_tnd_requires_lists():
    q, k, v = qkv("TND", T=(10, 12))
    check_raises(ValueError, r"input_layout='TND' requires actual_seq_qlen and actual_seq_kvlen", q, k, v, 4, "TND")
    check_raises(ValueError, r"requires actual_seq_kvlen", q, k, v, 4, "TND", actual_seq_qlen=[10])
    check_raises(ValueError, r"actual_seq_qlen must not be empty", q, k, v, 4, "TND", actual_seq_qlen=[],
                 actual_seq_kvlen=[])


def test_lists_only_for_tnd():
    q, k, v = qkv("BSND")
    check_raises(ValueError, r"actual_seq_qlen is only valid with input_layout='TND'", q, k, v, 4, "BSND",
                 actual_seq_qlen=[5, 10])
    check_raises(ValueError, r"actual_seq_kvlen is only valid with input_layout='TND'", q, k, v, 4, "BSND",
                 actual_seq_kvlen=[7, 14])


@pytest.mark.parametrize("cu_q,cu_kv,pattern", [
    ([3, 10], [12], r"actual_seq_qlen \(length 2\) and actual_seq_kvlen \(length 1\) must have the same length"),
    ([5, 3], [4, 12], r"actual_seq_qlen=\[5, 3\]: entry 1 \(3\) is smaller than entry 0 \(5\)"),
    ([-1, 3], [4, 12], r"actual_seq_qlen=\[-1, 3\]: entry 0 is -1; cumulative lengths must be >= 0"),
    ([3, 11], [4, 12], r"actual_seq_qlen total 11 exceeds query T1=10"),
    ([3, 10], [4, 13], r"actual_seq_kvlen total 13 exceeds key/value T2=12"),
    ([2, 5, 0, 7], [4, 8, 9, 12], r"actual_seq_qlen=\[2, 5, 0, 7\]: entry 2 \(0\) is smaller"),
])
def test_bad_cumulative_lists(cu_q, cu_kv, pattern):
    q, k, v = qkv("TND", T=(10, 12))
    check_raises(ValueError, pattern, q, k, v, 4, "TND", actual_seq_qlen=cu_q, actual_seq_kvlen=cu_kv)


def test_good_cumulative_lists():
    q, k, v = qkv("TND", T=(10, 12))
    # zero-length and length-1 sequences, padding after the last sequence
    p = validate_flash_attention(q, k, v, 4, "TND", actual_seq_qlen=[0, 1, 1, 9], actual_seq_kvlen=[3, 3, 4, 12])
    assert (p.B, p.S1, p.S2, p.T1, p.T2) == (4, 8, 8, 10, 12)
    assert p.cu_seqlens_q == (0, 1, 1, 9) and p.cu_seqlens_kv == (3, 3, 4, 12)
    assert p.stats_shape == (10, 4, 8) and p.out_shape == (10, 4, 16)
    # trailing zeros disable batches; a batch disabled in either list is disabled
    p = validate_flash_attention(q, k, v, 4, "TND", actual_seq_qlen=[2, 5, 9, 0, 0], actual_seq_kvlen=[3, 6, 9, 12, 12])
    assert p.B == 3 and p.cu_seqlens_q == (2, 5, 9) and p.cu_seqlens_kv == (3, 6, 9)
    p = validate_flash_attention(q, k, v, 4, "TND", actual_seq_qlen=[2, 5, 9], actual_seq_kvlen=[3, 6, 0])
    assert p.B == 2
    # all zeros: zero-length sequences, nothing to compute
    p = validate_flash_attention(q, k, v, 4, "TND", actual_seq_qlen=[0, 0], actual_seq_kvlen=[0, 0])
    assert p.B == 2 and not p.has_work()


# ---------------------------------------------------------------------------------------------------------------
# scalars and features
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [math.nan, math.inf, -math.inf])
def test_scale_finite(scale):
    q, k, v = qkv()
    check_raises(ValueError, rf"scale={scale} must be finite", q, k, v, 4, "BSND", scale=scale)


@pytest.mark.parametrize("keep_prob", [0.0, -0.5, 1.5, math.nan])
def test_keep_prob_range(keep_prob):
    q, k, v = qkv()
    check_raises(ValueError, rf"keep_prob={keep_prob} must be in \(0, 1\]", q, k, v, 4, "BSND", keep_prob=keep_prob)


def test_dropout_mask_rules():
    q, k, v = qkv()
    check_raises(ValueError, r"^dropout_mask must be uint8", q, k, v, 4, "BSND", keep_prob=0.5,
                 dropout_mask=torch.ones(2, 4, 5, 7, dtype=torch.bool))
    check_raises(ValueError, r"^dropout_mask is given but keep_prob=1.0", q, k, v, 4, "BSND",
                 dropout_mask=torch.ones(100, dtype=torch.uint8))


def test_pse_argument_rules():
    q, k, v = qkv()
    check_raises(ValueError, r"^pse_type=2 needs `pse`", q, k, v, 4, "BSND", pse_type=2)
    check_raises(ValueError, r"^q_start_idx is only used by the in-kernel ALiBi", q, k, v, 4, "BSND", q_start_idx=[3])
    check_raises(ValueError, r"^pse_type=4 must be 0, 1, 2 or 3", q, k, v, 4, "BSND", pse_type=4)


@pytest.mark.parametrize("mode", [-1, 9, 100])
def test_sparse_mode_range(mode):
    q, k, v = qkv()
    check_raises(ValueError, rf"sparse_mode={mode} must be in \[0, 8\]", q, k, v, 4, "BSND", sparse_mode=mode)


def test_pse_prefix_padding_mask():
    q, k, v = qkv()
    check_raises(ValueError, r"^pse shape \(2, 4, 5, 6\) must be", q, k, v, 4, "BSND", pse=torch.zeros(2, 4, 5, 6, dtype=F16))
    check_raises(TypeError, r"^sink dtype torch.float16 must be torch.float32", q, k, v, 4, "BSND",
                 sink=torch.zeros(4, dtype=F16))
    check_raises(ValueError, r"^sink shape \(3,\) must be \(4,\)", q, k, v, 4, "BSND", sink=torch.zeros(3))
    check_raises(ValueError, r"^sink contains NaN or Inf \(first at index 2", q, k, v, 4, "BSND",
                 sink=torch.tensor([0.0, 1.0, float("inf"), 2.0]))
    check_raises(ValueError, r"^prefix=\[3, 4\] is only used by sparse_mode 5 and 6, got sparse_mode=0", q, k, v, 4,
                 "BSND", prefix=[3, 4])
    check_raises(ValueError, r"^padding_mask is reserved and not supported", q, k, v, 4, "BSND",
                 padding_mask=torch.zeros(2, 4, 5, 7, dtype=F16))


@pytest.mark.parametrize("ip", [-1, 4])
def test_inner_precise(ip):
    q, k, v = qkv()
    check_raises(ValueError, rf"inner_precise={ip} must be 0-3", q, k, v, 4, "BSND", inner_precise=ip)
    for ok in (0, 1, 2, 3):
        validate_flash_attention(q, k, v, 4, "BSND", inner_precise=ok)


@pytest.mark.parametrize("name", ["pre_tokens", "next_tokens"])
def test_pre_next_int32(name):
    q, k, v = qkv()
    check_raises(ValueError, rf"{name}=2147483648 must fit in int32", q, k, v, 4, "BSND", sparse_mode=4,
                 **{name: 2 ** 31})
    check_raises(ValueError, rf"{name}=-2147483649 must fit in int32", q, k, v, 4, "BSND", **{name: -2 ** 31 - 1})


# ---------------------------------------------------------------------------------------------------------------
# masks
# ---------------------------------------------------------------------------------------------------------------
def test_atten_mask_dtype():
    q, k, v = qkv()
    check_raises(TypeError, r"atten_mask dtype torch.float16 is not supported; use torch.bool or torch.uint8", q, k,
                 v, 4, "BSND", atten_mask=TRIU.to(F16), sparse_mode=2)


@pytest.mark.parametrize("mode", [2, 3, 4])
def test_compressed_mask(mode):
    q, k, v = qkv()
    kw = dict(sparse_mode=mode, pre_tokens=3, next_tokens=1)
    check_raises(ValueError, rf"atten_mask shape \(5, 7\) is not supported for sparse_mode={mode}", q, k, v, 4,
                 "BSND", atten_mask=torch.ones(5, 7, dtype=torch.bool).triu(1), **kw)
    check_raises(ValueError, r"atten_mask shape \(1, 2048, 2048\)", q, k, v, 4, "BSND",
                 atten_mask=TRIU.unsqueeze(0), **kw)
    check_raises(ValueError, rf"atten_mask for sparse_mode={mode} must equal the compressed mask", q, k, v, 4,
                 "BSND", atten_mask=TRIU.T.contiguous(), **kw)
    wrong = TRIU.to(torch.uint8)
    wrong[100, 1500] = 2  # nonzero but not 1
    check_raises(ValueError, r"must equal the compressed mask", q, k, v, 4, "BSND", atten_mask=wrong, **kw)
    off = TRIU.clone()
    off[2047, 2047] = True
    check_raises(ValueError, r"must equal the compressed mask", q, k, v, 4, "BSND", atten_mask=off, **kw)
    for m in (TRIU, TRIU.to(torch.uint8)):
        assert validate_flash_attention(q, k, v, 4, "BSND", atten_mask=m, **kw).sparse_mode == mode


def test_band_without_visible_keys():
    q, k, v = qkv("BSND", S1=8, S2=8)
    check_raises(ValueError, r"pre_tokens=3 \+ next_tokens=-4 < 0", q, k, v, 4, "BSND", sparse_mode=4, pre_tokens=3,
                 next_tokens=-4)
    check_raises(ValueError, r"misses the attention matrix \(S1=8, S2=8\)", q, k, v, 4, "BSND", sparse_mode=4,
                 pre_tokens=-8, next_tokens=20)
    check_raises(ValueError, r"misses the attention matrix", q, k, v, 4, "BSND", sparse_mode=4, pre_tokens=20,
                 next_tokens=-8)
    # just touching the matrix is fine: row 7 sees key 0 (pre=7... next=-7)
    validate_flash_attention(q, k, v, 4, "BSND", sparse_mode=4, pre_tokens=7, next_tokens=-7)
    validate_flash_attention(q, k, v, 4, "BSND", sparse_mode=4, pre_tokens=-7, next_tokens=7)
    # pre/next are ignored by the other modes
    validate_flash_attention(q, k, v, 4, "BSND", sparse_mode=3, pre_tokens=3, next_tokens=-4)
    # TND: the band must reach some row of some non-empty sequence
    q, k, v = qkv("TND", T=(12, 12))
    check_raises(ValueError, r"misses the attention matrix \(every sequence\)", q, k, v, 4, "TND", sparse_mode=4,
                 pre_tokens=30, next_tokens=-6, actual_seq_qlen=[2, 5, 12], actual_seq_kvlen=[5, 5, 10])
    validate_flash_attention(q, k, v, 4, "TND", sparse_mode=4, pre_tokens=30, next_tokens=-5,
                             actual_seq_qlen=[2, 5, 12], actual_seq_kvlen=[5, 5, 11])


def test_kernel_mode_mapping():
    q, k, v = qkv()
    p = validate_flash_attention(q, k, v, 4, "BSND", sparse_mode=1, pre_tokens=3, next_tokens=0)
    assert p.sparse_mode == 0 and p.pre_tokens == INT32_MAX and p.next_tokens == INT32_MAX
    p = validate_flash_attention(q, k, v, 4, "BSND", sparse_mode=4, pre_tokens=3, next_tokens=0)
    assert (p.sparse_mode, p.pre_tokens, p.next_tokens) == (4, 3, 0)


# ---------------------------------------------------------------------------------------------------------------
# fake / meta kernels: shape propagation without running anything
# ---------------------------------------------------------------------------------------------------------------
CASES = [  # layout, dims, expected out shape, expected stats shape
    ("BSH", dict(B=2, N1=4, N2=2, S1=5, S2=7, D=16, Dv=8), (2, 5, 32), (2, 4, 5, 8)),
    ("SBH", dict(B=2, N1=4, N2=1, S1=5, S2=7, D=16), (5, 2, 64), (2, 4, 5, 8)),
    ("BSND", dict(B=3, N1=6, N2=3, S1=9, S2=4, D=32, Dv=24), (3, 9, 6, 24), (3, 6, 9, 8)),
    ("BNSD", dict(B=1, N1=2, N2=2, S1=1, S2=1, D=8), (1, 2, 1, 8), (1, 2, 1, 8)),
    ("TND", dict(N1=4, N2=2, D=16, Dv=16, T=(11, 13)), (11, 4, 16), (11, 4, 8)),
]


@pytest.mark.parametrize("layout,dims,out_shape,stats_shape", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fake_tensor_shapes(layout, dims, out_shape, stats_shape, dtype):
    from torch._subclasses.fake_tensor import FakeTensorMode
    kw = dict(actual_seq_qlen=[4, 4, 11], actual_seq_kvlen=[5, 9, 13]) if layout == "TND" else {}
    with FakeTensorMode():
        q, k, v = qkv(layout, dtype=dtype, **dims)
        out, m, s = op(q, k, v, dims["N1"], layout, scale=0.1, sparse_mode=3, **kw)
    assert tuple(out.shape) == out_shape and out.dtype == dtype
    assert tuple(m.shape) == stats_shape and m.dtype == torch.float32
    assert tuple(s.shape) == stats_shape and s.dtype == torch.float32
    # meta tensors dispatch to the same fake kernel
    q, k, v = (t.to("meta") for t in qkv(layout, dtype=dtype, **dims))
    out, m, s = op(q, k, v, dims["N1"], layout, **kw)
    assert out.device.type == "meta" and tuple(out.shape) == out_shape and tuple(m.shape) == stats_shape


def test_fake_kernel_validates_too():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        q, k, v = qkv("BSND", N1=4, N2=3)
        with pytest.raises(ValueError, match="multiple of key/value heads"):
            op(q, k, v, 4, "BSND")
        q, k, v = qkv("BSND")
        with pytest.raises(ValueError, match="keep_prob"):
            op(q, k, v, 4, "BSND", keep_prob=1.5)
        # the compressed mask's values cannot be read in fake mode; shape/dtype still are checked
        out = op(q, k, v, 4, "BSND", sparse_mode=2, atten_mask=torch.empty(2048, 2048, dtype=torch.bool))[0]
        assert out.shape == q.shape
        with pytest.raises(ValueError, match="atten_mask shape"):
            op(q, k, v, 4, "BSND", sparse_mode=2, atten_mask=torch.empty(2048, 2047, dtype=torch.bool))


class _Attn(torch.nn.Module):
    def forward(self, q, k, v):
        out, m, s = torch.ops.npu.flash_attention(q, k, v, 4, "BNSD", scale=0.25, sparse_mode=3)
        return out * 2, m, s


def test_torch_export_shape_propagation():
    q, k, v = qkv("BNSD", B=2, N1=4, N2=2, S1=48, S2=40, D=16, Dv=8)
    s1 = torch.export.Dim("s1", min=2, max=4096)
    ep = torch.export.export(_Attn(), (q, k, v), dynamic_shapes=({2: s1}, None, None), strict=False)
    nodes = [n for n in ep.graph.nodes if n.op == "call_function" and "flash_attention" in str(n.target)]
    assert len(nodes) == 1
    out_val, m_val, s_val = nodes[0].meta["val"]
    assert out_val.dtype == F16 and m_val.dtype == torch.float32
    q_val = next(n for n in ep.graph.nodes if n.op == "placeholder").meta["val"]
    assert isinstance(q_val.shape[2], torch.SymInt)  # S1 stayed symbolic through the fake kernel
    assert str(out_val.shape[2]) == str(q_val.shape[2]) and str(m_val.shape[2]) == str(q_val.shape[2])
    assert tuple(out_val.shape[:2]) == (2, 4) and out_val.shape[3] == 8 and m_val.shape[3] == 8


# ---------------------------------------------------------------------------------------------------------------
# chip selection
# ---------------------------------------------------------------------------------------------------------------
def test_chip_selection(monkeypatch):
    names = npu_flash_attn.available_chips()
    assert "Ascend910B2" in names
    monkeypatch.delenv("NPU_FA_CHIP", raising=False)
    try:
        npu_flash_attn.set_chip(None)
        assert npu_flash_attn.get_chip() == "Ascend910B2"
        monkeypatch.setenv("NPU_FA_CHIP", names[-1])
        assert npu_flash_attn.get_chip() == names[-1]
        monkeypatch.setenv("NPU_FA_CHIP", "Ascend310P")
        with pytest.raises(ValueError, match=r"environment variable NPU_FA_CHIP='Ascend310P' is not an emulated chip"):
            npu_flash_attn.get_chip()
        npu_flash_attn.set_chip(names[0])  # the setter wins over the environment
        assert npu_flash_attn.get_chip() == names[0]
        with pytest.raises(ValueError, match=r"chip='Ascend999' is not an emulated chip; choose one of"):
            npu_flash_attn.set_chip("Ascend999")
        assert npu_flash_attn.get_chip() == names[0]  # unchanged after a rejected name
        with pytest.raises(TypeError):
            npu_flash_attn.set_chip(910)
    finally:
        npu_flash_attn.set_chip(None)


def test_constants():
    assert FLT_MAX == float(torch.finfo(torch.float32).max)


# ---------------------------------------------------------------------------------------------------------------
# command line (no kernel needed)
# ---------------------------------------------------------------------------------------------------------------
def _cli(*args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "npu_flash_attn", *args], capture_output=True, text=True,
                          timeout=300)


def test_cli_help():
    r = _cli("--help")
    assert r.returncode == 0 and "demo" in r.stdout and "chips" in r.stdout
    r = _cli("demo", "--help")
    assert r.returncode == 0
    for opt in ("--chip", "--layout", "--seq", "--dtype", "--sparse-mode", "--heads", "--kv-heads", "--dim"):
        assert opt in r.stdout, opt


def test_cli_rejects_bad_arguments():
    r = _cli("demo", "--chip", "Ascend999")
    assert r.returncode == 2 and "chip='Ascend999' is not an emulated chip" in r.stderr
    r = _cli("demo", "--layout", "BSDN")
    assert r.returncode == 2 and "invalid choice" in r.stderr
    r = _cli("demo", "--heads", "6", "--kv-heads", "4", "--seq", "8")
    assert r.returncode == 2 and "N1=6 must be a multiple of key/value heads N2=4" in r.stderr


def test_cli_chips():
    r = _cli("chips")
    assert r.returncode == 0
    for name in npu_flash_attn.available_chips():
        assert name in r.stdout
