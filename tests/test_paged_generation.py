"""Greedy generation over our paged KV cache (integrations/paged_generation.py) in tiny randomly initialised
transformers models, Llama (GQA) and Qwen2 (GQA, q/k/v biases), fp16, batches of prompts of different lengths:
the tokens equal transformers' `generate` with SDPA (each prompt alone, so no padding), except at a near-tie. Every
step's logits are judged against the float64 model on the same tokens with the FlashAttention criterion (twice
fp16 SDPA's own error); where the tokens first differ, the two tokens' float64 logits must lie within that bound of
each other (a near-tie) and the comparison of that sequence stops there (the histories diverge)."""
from __future__ import annotations

import copy

import pytest
import torch

transformers = pytest.importorskip("transformers")

from npu_flash_attn import last_launch_info  # noqa: E402
from npu_flash_attn.integrations import paged_generation as pg  # noqa: E402

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
             vocab_size=128, intermediate_size=128, initializer_range=0.2)
MODELS = {"llama": ("LlamaConfig", "LlamaForCausalLM"), "qwen2": ("Qwen2Config", "Qwen2ForCausalLM")}


def _models(name: str, seed: int):
    """The model in fp16 (SDPA; the loop switches it to the paged backend while it runs) and in float64."""
    cfg_name, cls_name = MODELS[name]
    cfg = getattr(transformers, cfg_name)(**SMALL)
    cls = getattr(transformers, cls_name)
    torch.manual_seed(seed)
    ref = cls._from_config(copy.deepcopy(cfg), attn_implementation="sdpa", dtype=torch.float64)
    low = cls._from_config(copy.deepcopy(cfg), attn_implementation="sdpa", dtype=torch.float16)
    low.load_state_dict({k: v.to(torch.float16) for k, v in ref.state_dict().items()})
    return low, ref


def _logits(model, prompt, tokens):
    """The model's logits [len(tokens), vocab] for each generated token, from one forward over prompt + tokens."""
    ids = torch.tensor([list(prompt) + list(tokens)])
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=False).logits[0].double()
    return out[len(prompt) - 1:len(prompt) - 1 + len(tokens)]


def _check(low, ref, prompts, result, new_tokens):
    for b, prompt in enumerate(prompts):
        ours = result.tokens[b]
        ids = torch.tensor([prompt])  # the mask given: generate would take token 0 (pad_token_id) for padding
        theirs = low.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens, do_sample=False,
                              eos_token_id=None, pad_token_id=0)[0, len(prompt):].tolist()
        assert len(ours) == len(theirs) == new_tokens
        ref_logits, sdpa_logits = _logits(ref, prompt, ours), _logits(low, prompt, ours)
        bound = 2 * (sdpa_logits - ref_logits).abs().max().item() + 1e-5
        err = (result.logits[b].double() - ref_logits).abs().max().item()
        assert err <= bound, f"prompt {b}: logits differ from float64 by {err:.3g} > {bound:.3g}"
        for i, (a, t) in enumerate(zip(ours, theirs)):
            if a != t:  # must be a near-tie; the histories diverge after it
                gap = abs(ref_logits[i, a] - ref_logits[i, t]).item()
                assert gap <= 2 * bound, f"prompt {b} step {i}: token {a} vs generate's {t}, float64 gap {gap:.3g}"
                break


@pytest.mark.parametrize("name", ["llama", "qwen2"])
def test_greedy_tokens_equal_generate(name):
    low, ref = _models(name, seed=7)
    gen = torch.Generator().manual_seed(11)
    prompts = [torch.randint(0, 128, (n,), generator=gen).tolist() for n in (3, 17, 40)]
    result = pg.generate_greedy(low, prompts, 10, block_size=16, return_logits=True)  # 1 to 4 pages a sequence
    assert low.config._attn_implementation == "sdpa"  # restored
    _check(low, ref, prompts, result, 10)


def test_split_keys_decode():
    """A long prompt beside a short one: the decode steps split the long sequence's keys (the combine pass)."""
    low, ref = _models("llama", seed=3)
    gen = torch.Generator().manual_seed(5)
    prompts = [torch.randint(0, 128, (n,), generator=gen).tolist() for n in (150, 7)]
    result = pg.generate_greedy(low, prompts, 4, block_size=64, return_logits=True)
    assert last_launch_info()["splits"] > 1
    _check(low, ref, prompts, result, 4)


def test_eos_leaves_the_batch_and_frees_its_pages():
    low, _ = _models("llama", seed=7)
    gen = torch.Generator().manual_seed(11)
    prompts = [torch.randint(0, 128, (n,), generator=gen).tolist() for n in (3, 17, 40)]
    full = pg.generate_greedy(low, prompts, 6, block_size=16)
    eos = full.tokens[1][2]
    stop = full.tokens[1].index(eos)
    cut = pg.generate_greedy(low, prompts, 6, block_size=16, eos_token_id=eos)
    assert cut.tokens[1] == full.tokens[1][:stop + 1]
    for b in (0, 2):  # the others go on (up to their own eos)
        want = full.tokens[b][:full.tokens[b].index(eos) + 1] if eos in full.tokens[b] else full.tokens[b]
        assert cut.tokens[b] == want


def test_cache_pages_are_reused_and_bounded():
    cache = pg.PagedKVCache(num_layers=1, num_kv_heads=1, head_dim=16, batch=2, max_tokens=40, block_size=16,
                            num_blocks=4)
    cache.reserve(0, 33)  # 3 pages
    assert cache.block_table[0, :3].tolist() == [3, 2, 1]
    with pytest.raises(ValueError, match="cannot hold 20 tokens of sequence 1: 3 blocks per sequence, 1 free of 4"):
        cache.reserve(1, 20)
    cache.release(0)
    cache.reserve(1, 48)
    assert sorted(cache.block_table[1].tolist()) == [1, 2, 3]
    with pytest.raises(ValueError, match="cannot hold 49 tokens"):
        cache.reserve(1, 49)


def test_errors():
    low, _ = _models("llama", seed=1)
    with pytest.raises(ValueError, match="max_new_tokens must be an int >= 1, got 0"):
        pg.generate_greedy(low, [[1, 2]], 0)
    with pytest.raises(ValueError, match=r"non-empty token lists, got lengths \[2, 0\]"):
        pg.generate_greedy(low, [[1, 2], []], 3)
    with pytest.raises(TypeError, match="the model's dtype torch.float32 is not supported"):
        pg.generate_greedy(low.float(), [[1, 2]], 3)
    pg.register()
    low.half().set_attn_implementation(pg.NAME)
    with pytest.raises(RuntimeError, match="runs only inside .*generate_greedy"):
        low(input_ids=torch.tensor([[1, 2]]), use_cache=False)
