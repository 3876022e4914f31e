"""Backends for other libraries, imported on demand (each needs its library): `integrations.transformers` (the
attention backend) and `integrations.paged_generation` (greedy generation for transformers models over a paged KV
cache through the inference op)."""
