"""npu-flash-attn: FlashAttention for Ascend NPUs, with a CPU twin of Ascend C for development without hardware.

`import npu_flash_attn` registers `torch.ops.npu.flash_attention` and `torch.ops.npu.flash_attention_grad` with
their autograd; CPU tensors run the Ascend C kernels on the CPU twin (results labelled "twin"). When torch_npu is
importable, it also loads the torch_npu adapter library for NPU tensors (`npu`; not yet run on hardware).

Modules, by concern (docs/architecture.md is the map):
  ops, backward     the op registrations (schemas, CPU and fake kernels, autograd) and their documented semantics
  problem           the validated problem (`FAProblem`): the Python-side checks around the extension's problem module
                    (op_host/problem: every shape and attribute rule); masks, varlen, dropout, layouts hold the
                    compressed masks, int arguments, the dropout format and layout conversions
  native            the compiled extension `_C` (the problem module and the twin)
  chip              which chip the twin emulates
  twin_backend      the CPU twin launches (the only one launching the extension's kernels), launch facts, the
                    block-map cache
  postprocess       what the CPU path does with the kernels' outputs (the problem's post-processing data)
  dispatch, npu     the checks before dispatch, the NPU adapter loader
  interfaces        drop-ins: torch_npu's npu_fusion_attention (+ grad), flash_attn 2.x, torch's SDPA; inference:
                    torch_npu's npu_fused_infer_attention_score, flash_attn's flash_attn_with_kvcache
  integrations      the transformers attention backend (`integrations.transformers.register()`) and greedy
                    generation over a paged KV cache (`integrations.paged_generation.generate_greedy`)
  distributed       context parallelism over torch.distributed (ring, Ulysses, hybrid, all-gather; imported on
                    demand: `from npu_flash_attn.distributed import context_parallel_attention`)
  twin              any Ascend C kernel source on the CPU twin (compile_kernel)
  tools             profiler, baselines, modeled context-parallel scaling, the command line
                    (`python -m npu_flash_attn`)
  reference         the float64 model the tests compare with (never imported by the ops)
  criterion         the FlashAttention test criterion against that model
"""
from . import twin  # noqa: F401
from . import ops  # noqa: F401  (registers torch.ops.npu.flash_attention)
from . import backward  # noqa: F401  (registers torch.ops.npu.flash_attention_grad and the autograd)
from .backward import flash_attention_grad
from .chip import available_chips, get_chip, set_chip
from .ops import flash_attention, precompute_block_mask, set_output_residual
from .twin import TwinError, TwinWarning
from .twin_backend import block_mask_cache_info, clear_block_mask_cache, last_launch_info
from .interfaces import (flash_attn_func, flash_attn_kvpacked_func, flash_attn_qkvpacked_func,
                         flash_attn_varlen_func, flash_attn_varlen_kvpacked_func, flash_attn_varlen_qkvpacked_func,
                         flash_attn_with_kvcache, npu_fused_infer_attention_score, npu_fusion_attention,
                         npu_fusion_attention_grad, scaled_dot_product_attention)
from . import npu

npu.status()  # after the schemas exist: loads the NPU adapter library when torch_npu and the library are there

__version__ = "0.1.0"
__all__ = ["flash_attention", "flash_attention_grad", "precompute_block_mask", "set_output_residual",
           "block_mask_cache_info",
           "clear_block_mask_cache", "set_chip", "get_chip", "available_chips", "last_launch_info", "TwinError",
           "TwinWarning", "npu_fusion_attention", "npu_fusion_attention_grad", "flash_attn_func",
           "flash_attn_kvpacked_func", "flash_attn_qkvpacked_func", "flash_attn_varlen_func",
           "flash_attn_varlen_kvpacked_func", "flash_attn_varlen_qkvpacked_func", "scaled_dot_product_attention",
           "npu_fused_infer_attention_score", "flash_attn_with_kvcache"]
