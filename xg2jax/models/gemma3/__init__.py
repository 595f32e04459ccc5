"""Gemma 3 in Flax, from a GGUF file, ready for :func:`xg2jax.jax.constrained_sample`.

Usage order::

    from xg2jax.models import gemma3
    config, params = gemma3.load_params()              # Gemma 3 270M; dequantised once, cached on disk
    text = gemma3.Gemma3Tokenizer.from_gguf(path)      # prompts -> ids, ids -> text
    step = gemma3.Gemma3Step(config)                   # the hashable step_fn (with a .prefill)
    cache = gemma3.init_cache(config, batch, max_len)  # fixed-size KV cache
    out = constrained_sample(step, params, cache, prompts, lengths, grammar_state, ...)

Pieces: :class:`Gemma3Config` (hyperparameters from the file's metadata), :class:`Gemma3` (the Flax
module), :class:`Gemma3Step`, :func:`init_cache`, :func:`load_params`, :class:`Gemma3Tokenizer`.
"""

from xg2jax.models.gemma3.config import Gemma3Config
from xg2jax.models.gemma3.model import Gemma3, Gemma3Step, init_cache
from xg2jax.models.gemma3.tokenizer import Gemma3Tokenizer
from xg2jax.models.gemma3.weights import default_cache_dir, load_params

__all__ = ["Gemma3Config", "Gemma3", "Gemma3Step", "init_cache", "Gemma3Tokenizer", "load_params",
           "default_cache_dir"]
