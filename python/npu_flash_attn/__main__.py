"""`python -m npu_flash_attn`: the command line (`npu_flash_attn.tools.cli`)."""
import sys

from .tools.cli import main

if __name__ == "__main__":
    sys.exit(main())
