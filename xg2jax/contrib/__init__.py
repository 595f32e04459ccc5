"""Integrations with other libraries (imported on demand): :mod:`xg2jax.contrib.hf` (transformers)."""
