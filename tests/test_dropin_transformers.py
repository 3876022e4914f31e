"""The transformers backend (`attn_implementation="npu_flash_attn"`) in tiny randomly initialised models: Llama
(GQA), Mistral (sliding window), Qwen2 (a sliding and a full layer); padded batches: logits and gradients against
the same model under SDPA in float64, within the FlashAttention criterion set by SDPA in the model's low precision;
greedy `generate` on left-padded prompts identical to SDPA's. Sinks: the attention function on a gpt-oss attention
layer against gpt-oss's own eager attention (gpt-oss pins its flash kernels, see the backend's docstring)."""
from __future__ import annotations

import copy

import pytest
import torch

transformers = pytest.importorskip("transformers")

from npu_flash_attn.integrations import transformers as backend  # noqa: E402
from npu_flash_attn.criterion import assert_close_fa  # noqa: E402

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
             vocab_size=128, intermediate_size=128, initializer_range=0.2)
MODELS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(sliding_window=9)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(use_sliding_window=True, sliding_window=7, max_window_layers=1,
                                                      layer_types=["sliding_attention", "full_attention"])),
}


@pytest.fixture(scope="module", autouse=True)
def _registered():
    backend.register()


def _models(name: str, dtype: torch.dtype, seed: int):
    """(ours in dtype, the reference implementation in dtype, the reference in float64), equal weights."""
    cfg_name, cls_name, extra = MODELS[name]
    ref_impl = "sdpa"
    cfg = getattr(transformers, cfg_name)(**dict(SMALL, **extra))
    cls = getattr(transformers, cls_name)
    torch.manual_seed(seed)
    base = cls._from_config(copy.deepcopy(cfg), attn_implementation=ref_impl, dtype=torch.float64)
    state = {k: v for k, v in base.state_dict().items()}
    out = []
    for impl, dt in ((backend.NAME, dtype), (ref_impl, dtype), (ref_impl, torch.float64)):
        m = cls._from_config(copy.deepcopy(cfg), attn_implementation=impl, dtype=dt)
        m.load_state_dict({k: v.to(dt) for k, v in state.items()})
        out.append(m)
    assert out[0].config._attn_implementation == backend.NAME and out[1].config._attn_implementation == ref_impl
    return out


def _padded(gen, lengths, side: str, vocab=128):
    s = max(lengths)
    ids = torch.randint(0, vocab, (len(lengths), s), generator=gen)
    pos, n = torch.arange(s).view(1, -1), torch.tensor(lengths).view(-1, 1)
    mask = (pos < n) if side == "right" else (pos >= s - n)
    return ids, mask.long()


# right padding is the training layout; with causal attention only left padding makes the padding mask matter
@pytest.mark.parametrize("name,side", [("llama", "right"), ("llama", "left"), ("mistral", "right"),
                                       ("mistral", "left"), ("qwen2", "right")])
def test_padded_training_step_matches_reference(name, side, gen, fa_seed):
    ours, low, ref = _models(name, torch.bfloat16, fa_seed)
    ids, mask = _padded(gen, [41, 29, 35], side)
    labels = ids.masked_fill(mask == 0, -100)
    results = []
    for m in (ours, low, ref):
        m.train()
        out = m(input_ids=ids, attention_mask=mask, labels=labels)
        out.loss.backward()
        results.append((out.logits, {n: p.grad for n, p in m.named_parameters() if p.grad is not None}))
    valid = mask.bool()
    assert_close_fa(results[0][0][valid], results[2][0][valid].double(), results[1][0][valid], what="logits")
    assert results[0][1].keys() == results[2][1].keys()
    for n, g64 in results[2][1].items():
        err = (results[0][1][n].double() - g64).abs().max().item()
        base = (results[1][1][n].double() - g64).abs().max().item()
        assert err <= 3 * base + 1e-5, f"grad {n}: {err:.3e} > 3 * {base:.3e} + 1e-5"


@pytest.mark.parametrize("name,side", [("llama", "right"), ("mistral", "left")])
def test_fullgraph_compiled_training_step_on_a_padded_batch(name, side, gen, fa_seed):
    """torch.compile(fullgraph=True) of the whole model on a batch with padding, a training step and an inference
    forward: each one graph calling our op in every layer (no data-dependent branch on our path), logits and
    gradients within the criterion against float64 SDPA."""
    from torch._dynamo.backends.registry import lookup_backend

    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return lookup_backend("aot_eager")(gm, example_inputs)

    ours, low, ref = _models(name, torch.bfloat16, fa_seed)
    ids, mask = _padded(gen, [27, 19, 23], side)
    labels = ids.masked_fill(mask == 0, -100)
    compiled = torch.compile(ours, fullgraph=True, backend=backend)
    results = []
    for call, m in ((compiled, ours), (low, low), (ref, ref)):
        m.train()
        out = call(input_ids=ids, attention_mask=mask, labels=labels)
        out.loss.backward()
        results.append((out.logits, {n: p.grad for n, p in m.named_parameters() if p.grad is not None}))
    with torch.no_grad():  # inference: a graph of its own, again whole
        results.append((compiled(input_ids=ids, attention_mask=mask).logits, None))
    assert len(graphs) == 2
    for g in graphs:
        calls = [n for n in g.graph.nodes if n.op == "call_function" and "npu.flash_attention" in str(n.target)]
        assert len(calls) == SMALL["num_hidden_layers"]
    valid = mask.bool()
    for logits in (results[0][0], results[3][0]):
        assert_close_fa(logits[valid], results[2][0][valid].double(), results[1][0][valid], what="logits")
    assert results[0][1].keys() == results[2][1].keys()
    for n, g64 in results[2][1].items():
        err = (results[0][1][n].double() - g64).abs().max().item()
        base = (results[1][1][n].double() - g64).abs().max().item()
        assert err <= 3 * base + 1e-5, f"grad {n}: {err:.3e} > 3 * {base:.3e} + 1e-5"


@pytest.mark.parametrize("name", list(MODELS))
def test_greedy_generate_matches_sdpa(name, gen, fa_seed):
    ours, sdpa_model, ref = _models(name, torch.float16, fa_seed)
    ids, mask = _padded(gen, [23, 15, 30], "left")
    s = ids.shape[1]
    kw = dict(input_ids=ids, attention_mask=mask, max_new_tokens=5, do_sample=False, pad_token_id=0)
    a = sdpa_model.generate(**kw)
    b = ours.generate(**kw)
    for r in range(ids.shape[0]):
        diff = (a[r, s:] != b[r, s:]).nonzero()
        if not len(diff):
            continue
        # The sequences may part only at a near-tie: where the float64 model's logits of the two tokens differ by
        # no more than fp16 SDPA's own error there (then neither choice is wrong at this precision).
        t = s + int(diff[0])
        prefix = a[r:r + 1, :t]
        pmask = torch.cat([mask[r:r + 1], torch.ones(1, t - s, dtype=mask.dtype)], dim=1)
        l64 = ref(input_ids=prefix, attention_mask=pmask).logits[0, -1]
        l16 = sdpa_model(input_ids=prefix, attention_mask=pmask).logits[0, -1].double()
        gap = (l64[a[r, t]] - l64[b[r, t]]).abs().item()
        noise = (l16 - l64).abs().max().item()
        assert gap <= 2 * noise + 1e-5, (f"row {r} parts at step {t - s}: ours {b[r, s:].tolist()} vs sdpa "
                                         f"{a[r, s:].tolist()}, float64 logit gap {gap:.3e} > 2 * fp16 error "
                                         f"{noise:.3e}")


def test_mask_function_falls_back_to_the_exact_mask(gen):
    from transformers.masking_utils import causal_mask_function

    pad = torch.tensor([[True] * 10, [False] * 3 + [True] * 7])
    skip = backend.attention_mask(2, 10, 10, mask_function=causal_mask_function, attention_mask=pad)
    assert torch.equal(skip, pad)  # flash_attention_2's contract: the 2-D padding mask
    assert backend.attention_mask(2, 10, 10, mask_function=causal_mask_function, attention_mask=pad[:1]) is None
    dense = backend.attention_mask(2, 10, 10, mask_function=causal_mask_function, attention_mask=pad,
                                   allow_is_causal_skip=False)
    expect = torch.ones(10, 10, dtype=torch.bool).tril().view(1, 1, 10, 10) & pad.view(2, 1, 1, 10)
    assert torch.equal(dense, expect)


def test_packed_varlen_kwargs_match_separate_sequences(gen):
    ours, _, _ = _models("llama", torch.bfloat16, 0)
    attn = ours.model.layers[0].self_attn
    q = torch.randn(1, 4, 50, 16, generator=gen).bfloat16()
    k = torch.randn(1, 2, 50, 16, generator=gen).bfloat16()
    cu = torch.tensor([0, 20, 50], dtype=torch.int32)
    packed, _ = backend.attention_forward(attn, q, k, k, None, scaling=0.25, cu_seq_lens_q=cu, cu_seq_lens_k=cu,
                                          max_length_q=30, max_length_k=30)
    parts = [backend.attention_forward(attn, q[:, :, a:b], k[:, :, a:b], k[:, :, a:b], None, scaling=0.25)[0]
             for a, b in ((0, 20), (20, 50))]
    assert torch.equal(packed, torch.cat(parts, dim=1))


@pytest.mark.parametrize("sliding", [None, 6], ids=["full", "sliding"])
def test_sinks_with_padding_match_gpt_oss_eager(sliding, gen):
    from transformers.models.gpt_oss import modeling_gpt_oss as gpt_oss
    from transformers.masking_utils import sdpa_mask, causal_mask_function, sliding_window_causal_mask_function

    cfg = transformers.GptOssConfig(**dict(SMALL, sliding_window=8, num_local_experts=4, num_experts_per_tok=2))
    layer = gpt_oss.GptOssAttention(cfg, layer_idx=0)
    with torch.no_grad():
        layer.sinks.copy_(torch.randn(4, generator=gen))
    b, s = 3, 37
    q = torch.randn(b, 4, s, 16, generator=gen).bfloat16()
    k = torch.randn(b, 2, s, 16, generator=gen).bfloat16()
    v = torch.randn(b, 2, s, 16, generator=gen).bfloat16()
    pad = torch.arange(s).view(1, -1) < torch.tensor([37, 20, 31]).view(-1, 1)  # right padding
    fn = causal_mask_function if sliding is None else sliding_window_causal_mask_function(sliding)
    keep = sdpa_mask(b, s, s, mask_function=fn, attention_mask=pad, allow_is_causal_skip=False)
    valid = pad.view(b, s, 1, 1).expand(b, s, 4, 16)

    def eager(layer_, q, k, v, sinks):
        layer_.sinks = sinks
        bias = torch.zeros(keep.shape, dtype=q.dtype).masked_fill(~keep, torch.finfo(q.dtype).min)
        return gpt_oss.eager_attention_forward(layer_, q, k, v, bias, scaling=0.25)[0]
    runs = []
    for dt, f in ((torch.bfloat16, "ours"), (torch.bfloat16, "eager"), (torch.float64, "eager")):
        ts = [t.detach().to(dt).requires_grad_() for t in (q, k, v)]
        sinks = torch.nn.Parameter(layer.sinks.detach().to(dt if f == "eager" else torch.bfloat16))
        if f == "ours":
            layer.sinks = sinks
            out = backend.attention_forward(layer, *ts, pad, scaling=0.25, sliding_window=sliding,
                                            s_aux=layer.sinks)[0]
        else:
            out = eager(copy.copy(layer), *ts, sinks)
        runs.append((out, ts + [sinks]))
    dy = torch.randn(runs[0][0].shape, generator=gen)
    for out, _ in runs:
        out.backward(dy.to(out.dtype).masked_fill(~valid, 0))
    assert_close_fa(runs[0][0][valid], runs[2][0][valid], runs[1][0][valid])
    for i, name in enumerate(("dq", "dk", "dv", "dsinks")):
        err = (runs[0][1][i].grad.double() - runs[2][1][i].grad).abs().max().item()
        base = (runs[1][1][i].grad.double() - runs[2][1][i].grad).abs().max().item()
        assert err <= 3 * base + 1e-5, f"{name}: {err:.3e} > 3 * {base:.3e} + 1e-5"
