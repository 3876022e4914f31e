"""Context parallelism: one sequence sharded across the ranks of a torch.distributed group (any backend: gloo on
CPU tensors, HCCL on NPU tensors), attention computed by the op over the whole sequence.

Modules, one concept each:
  sharding   how a sequence is cut (zigzag / contiguous, TND per sequence); shard_sequence, unshard_sequence
  plan       which kernel calls cover the visible part of (query chunks, key chunks) under the global mask
  rows       query rows across layouts; the softmax statistics between the op's layouts and per-row fp32
  merge      combining partial outputs by their statistics in fp32 (the sink counted once per row)
  blocks     running planned calls: forward into a merge, backward with the merged statistics
  comm       ring send/receive, all-to-all, all-gather, sums over ranks in a fixed order
  ring, ulysses, hybrid, allgather   the four algorithms
  api        context_parallel_attention and its argument rules
"""
from .api import ALGOS, context_parallel_attention
from .sharding import shard_sequence, unshard_sequence

__all__ = ["ALGOS", "context_parallel_attention", "shard_sequence", "unshard_sequence"]
