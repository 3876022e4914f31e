"""Greedy generation for transformers decoder models over a paged KV cache, attention through the inference op.

transformers 5.25's public API has no place for a paged decode kernel of a new backend: its continuous batching
(`generate_batch`) reads the paged cache through a block table only with flash_attention_2/3 on CUDA or XPU
(`generation/continuous_batching/initialization.py`, `ensure_decode_fast_path_is_available`); for any other
implementation it gathers each request's keys into contiguous tensors before calling the attention function. So
this module is a generation loop of its own, on transformers' public pieces (`AttentionInterface`,
`AttentionMaskInterface`, `model.set_attn_implementation`, the model's forward with `position_ids`):

* `PagedKVCache` keeps, per layer, K and V pages `[num_blocks, block_size, N2, D]` (flash_attn's paged layout;
  viewed as FIA's `(num_blocks, block_size, N2 * D)` without a copy), one int32 block table `[B, max blocks]` for
  all layers and each sequence's length; pages are handed out from a free list as sequences grow.
* `generate_greedy(model, prompts, max_new_tokens)` runs the prompts of different lengths as one packed prefill
  (one row of all tokens, positions restarting per prompt): each layer writes its new K/V into the pages and
  attends with `npu_fused_infer_attention_score` in TND over the paged cache (causal, bottom-right). Then each
  decode step feeds the B last tokens as a [B, 1] batch: `flash_attn_with_kvcache` appends each layer's K/V at the
  sequence's length and attends over the pages. Sequences that emit `eos_token_id` leave the batch (their pages are
  freed); the others go on until `max_new_tokens`.

The model runs with `use_cache=False` (the pages are the cache) under the attention name `NAME`, registered by
`register()` (and restored to the model's own implementation afterwards); its mask function returns None: the
loop's causality is the op's `sparse_mode=3` / `causal=True`. Models whose layers need sliding windows, attention
sinks or soft-capping are refused (NotImplementedError). Inputs must be fp16/bf16 (load the model in one of them).
Results on CPU tensors are the twin's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch

from ..interfaces.flash_attn_kvcache import flash_attn_with_kvcache
from ..interfaces.fused_infer import npu_fused_infer_attention_score

__all__ = ["NAME", "register", "PagedKVCache", "GenerationResult", "generate_greedy"]

NAME = "npu_paged_infer"  # no "flash" in it: transformers would look for flash-attention kernels for such a name


def register() -> None:
    """Registers the attention and mask functions under `NAME` with transformers (idempotent)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    AttentionInterface.register(NAME, paged_attention_forward)
    AttentionMaskInterface.register(NAME, _no_mask)


def _no_mask(*args, **kwargs) -> None:
    return None


class PagedKVCache:
    """K/V pages of every layer, one block table and the sequences' lengths (see the module docstring)."""

    def __init__(self, num_layers: int, num_kv_heads: int, head_dim: int, batch: int, max_tokens: int,
                 block_size: int = 128, num_blocks: Optional[int] = None, dtype: torch.dtype = torch.float16,
                 device: torch.device | str = "cpu"):
        self.block_size = block_size
        self.max_blocks = -(-max_tokens // block_size)
        self.num_blocks = batch * self.max_blocks if num_blocks is None else num_blocks
        shape = (self.num_blocks, block_size, num_kv_heads, head_dim)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.block_table = torch.zeros(batch, self.max_blocks, dtype=torch.int32, device=device)
        self.lengths = [0] * batch
        self._blocks = [0] * batch  # pages each sequence owns
        self._free = list(range(self.num_blocks))  # pop() hands out the last first: tables are not the identity

    def reserve(self, seq: int, length: int) -> None:
        """Gives sequence `seq` pages for `length` tokens (ValueError when the cache or its table is full)."""
        need = -(-length // self.block_size)
        if need > self.max_blocks or need - self._blocks[seq] > len(self._free):
            raise ValueError(f"the paged cache cannot hold {length} tokens of sequence {seq}: {self.max_blocks} "
                             f"blocks per sequence, {len(self._free)} free of {self.num_blocks} (block_size "
                             f"{self.block_size})")
        while self._blocks[seq] < need:
            self.block_table[seq, self._blocks[seq]] = self._free.pop()
            self._blocks[seq] += 1

    def release(self, seq: int) -> None:
        """Returns a finished sequence's pages to the free list."""
        self._free += [int(b) for b in self.block_table[seq, :self._blocks[seq]].tolist()]
        self._blocks[seq] = 0
        self.lengths[seq] = 0

    def write(self, layer: int, seq: int, start: int, k: torch.Tensor, v: torch.Tensor) -> None:
        """Writes k/v [tokens, N2, D] of `seq` at positions start, start + 1, ... of layer `layer`'s pages."""
        pos = torch.arange(start, start + k.shape[0], device=k.device)
        blk = self.block_table[seq, pos // self.block_size].long()
        self.k[layer][blk, pos % self.block_size] = k
        self.v[layer][blk, pos % self.block_size] = v


@dataclass
class _Step:
    """What the attention function of every layer needs for one forward of the loop."""
    cache: PagedKVCache
    seqs: list[int]              # the sequences in this forward, in batch order
    prefill_lens: Optional[list[int]] = None  # packed prefill: each sequence's prompt length; None: one-token decode


def paged_attention_forward(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                            attention_mask: Optional[torch.Tensor], scaling: Optional[float] = None,
                            dropout: float = 0.0, sliding_window: Optional[int] = None, softcap=None,
                            s_aux=None, paged_step: Optional[_Step] = None, **kwargs):
    """transformers' attention-interface function for `NAME` (query [B, N1, S, D], key/value [B, N2, S, D] in,
    [B, S, N1, D] out), valid only inside `generate_greedy`, which passes `paged_step`."""
    if paged_step is None:
        raise RuntimeError(f"attention implementation {NAME!r} runs only inside npu_flash_attn.integrations."
                           "paged_generation.generate_greedy (it needs the loop's paged cache)")
    if sliding_window is not None or softcap is not None or s_aux is not None or dropout != 0.0:
        raise NotImplementedError(f"{NAME}: sliding_window={sliding_window}, softcap={softcap}, attention sinks "
                                  f"(s_aux) and dropout={dropout} are not supported by the paged generation loop")
    st, layer = paged_step, module.layer_idx
    cache = st.cache
    n1, n2, d = query.shape[1], key.shape[1], query.shape[-1]
    scale = d ** -0.5 if scaling is None else scaling
    if st.prefill_lens is None:  # decode: one new token per sequence, appended in place
        rows = torch.tensor(st.seqs, device=query.device)
        out = flash_attn_with_kvcache(
            query.transpose(1, 2), cache.k[layer], cache.v[layer], k=key.transpose(1, 2), v=value.transpose(1, 2),
            cache_seqlens=torch.tensor([cache.lengths[s] for s in st.seqs], dtype=torch.int32, device=query.device),
            block_table=cache.block_table[rows], softmax_scale=scale, causal=True)
        return out, None
    k, v = key[0].transpose(0, 1), value[0].transpose(0, 1)  # packed prefill: [T, N2, D]
    first, cum = 0, []
    for s, n in zip(st.seqs, st.prefill_lens):
        cache.write(layer, s, 0, k[first:first + n], v[first:first + n])
        first += n
        cum.append(first)
    blocks, size = cache.num_blocks, cache.block_size
    out, _ = npu_fused_infer_attention_score(
        query[0].transpose(0, 1), cache.k[layer].view(blocks, size, n2 * d), cache.v[layer].view(blocks, size, n2 * d),
        block_table=cache.block_table[torch.tensor(st.seqs, device=query.device)], block_size=size,
        actual_seq_lengths=cum, actual_seq_lengths_kv=list(st.prefill_lens), num_heads=n1, num_key_value_heads=n2,
        input_layout="TND", scale=scale, sparse_mode=3)
    return out.unsqueeze(0), None


@dataclass
class GenerationResult:
    """`tokens[b]`: the tokens generated for prompt b (without the prompt; ends at eos_token_id when it came);
    `logits[b]`: with return_logits, the float32 logits [len(tokens[b]), vocab] each token was chosen from."""
    tokens: list[list[int]]
    logits: list[torch.Tensor] = field(default_factory=list)


def _model_shape(model) -> tuple[int, int, int]:
    cfg = model.config
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return cfg.num_hidden_layers, getattr(cfg, "num_key_value_heads", None) or heads, head_dim


@torch.no_grad()
def generate_greedy(model, prompts: Sequence[Sequence[int]], max_new_tokens: int, *, block_size: int = 128,
                    num_blocks: Optional[int] = None, eos_token_id: Optional[int] = None,
                    return_logits: bool = False) -> GenerationResult:
    """Greedy decoding of each prompt (a list of token ids) for at most `max_new_tokens` tokens over a
    `PagedKVCache` of `block_size`-token pages (`num_blocks` pages in all; default: enough for every sequence).
    See the module docstring for the loop."""
    if not prompts or any(len(p) == 0 for p in prompts):
        raise ValueError(f"prompts must be a non-empty list of non-empty token lists, got lengths "
                         f"{[len(p) for p in prompts]}")
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an int >= 1, got {max_new_tokens!r}")
    register()
    layers, n2, d = _model_shape(model)
    param = next(model.parameters())
    if param.dtype not in (torch.float16, torch.bfloat16):
        raise TypeError(f"the model's dtype {param.dtype} is not supported; load it in torch.float16 or "
                        "torch.bfloat16")
    batch, device = len(prompts), param.device
    cache = PagedKVCache(layers, n2, d, batch, max(len(p) for p in prompts) + max_new_tokens, block_size,
                         num_blocks, param.dtype, device)
    result = GenerationResult([[] for _ in prompts], [[] for _ in prompts] if return_logits else [])
    previous = model.config._attn_implementation
    model.set_attn_implementation(NAME)
    try:
        lens = [len(p) for p in prompts]
        for s, n in enumerate(lens):
            cache.reserve(s, n)
        ids = torch.tensor([[t for p in prompts for t in p]], device=device)
        pos = torch.cat([torch.arange(n, device=device) for n in lens]).unsqueeze(0)
        step = _Step(cache, list(range(batch)), lens)
        logits = model(input_ids=ids, position_ids=pos, use_cache=False, paged_step=step).logits[0]
        last = logits[torch.tensor(lens, device=device).cumsum(0) - 1]
        for s, n in enumerate(lens):
            cache.lengths[s] = n
        active = list(range(batch))
        for i in range(max_new_tokens):
            nxt = last.argmax(-1)
            still = []
            for row, s in enumerate(active):
                token = int(nxt[row])
                result.tokens[s].append(token)
                if return_logits:
                    result.logits[s].append(last[row].float().cpu())
                if token == eos_token_id:
                    cache.release(s)
                else:
                    still.append((s, token))
            if i == max_new_tokens - 1 or not still:
                break
            active = [s for s, _ in still]
            for s in active:
                cache.reserve(s, cache.lengths[s] + 1)
            ids = torch.tensor([[t] for _, t in still], device=device)
            pos = torch.tensor([[cache.lengths[s]] for s in active], device=device)
            step = _Step(cache, active)
            last = model(input_ids=ids, position_ids=pos, use_cache=False, paged_step=step).logits[:, -1]
            for s in active:
                cache.lengths[s] += 1
    finally:
        model.set_attn_implementation(previous)
    if return_logits:
        result.logits = [torch.stack(x) for x in result.logits]
    return result
