"""npu-flash-attn: FlashAttention for Ascend NPUs, with a CPU twin of Ascend C for development without hardware."""
from . import twin  # noqa: F401

__version__ = "0.1.0"
