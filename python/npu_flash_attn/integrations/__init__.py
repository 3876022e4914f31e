"""Backends for other libraries, imported on demand (each needs its library): `integrations.transformers`."""
