"""Drop-in interfaces on `torch.ops.npu.flash_attention`: torch_npu's `npu_fusion_attention` (+ grad), flash_attn
2.x's functions and torch's `scaled_dot_product_attention`, each with its original's signature and semantics
(`docs/migration.md` lists what differs); and on the inference kernel: torch_npu's
`npu_fused_infer_attention_score` and flash_attn's `flash_attn_with_kvcache`."""
from .fusion_attention import npu_fusion_attention, npu_fusion_attention_grad
from .flash_attn import (flash_attn_func, flash_attn_kvpacked_func, flash_attn_qkvpacked_func, flash_attn_varlen_func,
                         flash_attn_varlen_kvpacked_func, flash_attn_varlen_qkvpacked_func)
from .sdpa import scaled_dot_product_attention
from .fused_infer import npu_fused_infer_attention_score
from .flash_attn_kvcache import flash_attn_with_kvcache

__all__ = ["npu_fusion_attention", "npu_fusion_attention_grad", "flash_attn_func", "flash_attn_qkvpacked_func",
           "flash_attn_kvpacked_func", "flash_attn_varlen_func", "flash_attn_varlen_qkvpacked_func",
           "flash_attn_varlen_kvpacked_func", "scaled_dot_product_attention", "npu_fused_infer_attention_score",
           "flash_attn_with_kvcache"]
