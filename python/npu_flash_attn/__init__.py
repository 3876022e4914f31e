"""npu-flash-attn: FlashAttention for Ascend NPUs, with a CPU twin of Ascend C for development without hardware.

`import npu_flash_attn` registers `torch.ops.npu.flash_attention` (see `npu_flash_attn.ops`); CPU tensors run the
Ascend C kernel on the CPU twin (results labelled "twin"). When torch_npu is importable, it also loads the torch_npu
adapter library for NPU tensors (`npu_flash_attn.npu`; not yet run on hardware). Drop-in interfaces
(`npu_flash_attn.interfaces`): `npu_fusion_attention` (+ `_grad`) as torch_npu's, flash_attn 2.x's `flash_attn_*func`
and `scaled_dot_product_attention` as torch's; `npu_flash_attn.integrations.transformers.register()` adds a
transformers attention backend.
"""
from . import twin  # noqa: F401
from . import ops  # noqa: F401  (registers torch.ops.npu.flash_attention)
from . import backward  # noqa: F401  (registers torch.ops.npu.flash_attention_grad and the autograd)
from .ops import flash_attention, get_chip, last_launch_info, set_chip  # noqa: F401
from .masks import block_mask_cache_info, clear_block_mask_cache, precompute_block_mask  # noqa: F401
from .twin import TwinError, TwinWarning  # noqa: F401
from .interfaces import (flash_attn_func, flash_attn_kvpacked_func, flash_attn_qkvpacked_func,  # noqa: F401
                         flash_attn_varlen_func, flash_attn_varlen_kvpacked_func, flash_attn_varlen_qkvpacked_func,
                         npu_fusion_attention, npu_fusion_attention_grad, scaled_dot_product_attention)
from . import npu  # noqa: F401

npu.status()  # after the schemas exist: loads the NPU adapter library when torch_npu and the library are there

__version__ = "0.1.0"
