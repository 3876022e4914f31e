"""Developer tools on the CPU twin (not needed to run the ops): the cycle-model profiler (`profiler`), the GEMM and
naive-attention baselines under the same model (`baseline`, kernels in `tools/kernels/` as package data), the
modeled context-parallel scaling (`cp_model`: the planner's calls under the cost model plus a link model of the 910B
fabric) and the command line (`cli`, run as `python -m npu_flash_attn`)."""
