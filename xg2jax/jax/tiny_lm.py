"""A small decoder-only Flax transformer with an explicit KV cache, for tests, examples and smoke runs.

It has the interface :func:`xg2jax.jax.constrained_sample` expects from any model:
``TinyLMStep(config)(params, tokens int32[B, T], cache, positions int32[B, T]) -> (logits[B, T, V], cache)``.
The cache is written at ``positions`` (per row, so right-padded prompts of different lengths work) and
attention is causal by position: a query at position p sees cache slots 0..p only, so whatever a
longer padded prompt left in slots past a row's length is never read before it is overwritten.
Weights are random unless you train them; the architecture is a plain pre-norm transformer with
learned positions, tied embeddings and an output bias.
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp

__all__ = ["TinyLMConfig", "TinyLM", "TinyLMStep", "init_cache"]


@dataclasses.dataclass(frozen=True)
class TinyLMConfig:
    vocab_size: int
    d_model: int = 32
    num_heads: int = 2
    num_layers: int = 2
    max_len: int = 128  #: cache slots (prompt + generated tokens)
    logit_scale: float = 4.0  #: spreads the random logits so greedy choices are far from ties


def init_cache(config: TinyLMConfig, batch: int) -> dict[str, jax.Array]:
    """Zeroed KV cache: ``k``/``v`` float32[layers, B, max_len, heads, head_dim]."""
    shape = (config.num_layers, batch, config.max_len, config.num_heads, config.d_model // config.num_heads)
    return {"k": jnp.zeros(shape, jnp.float32), "v": jnp.zeros(shape, jnp.float32)}


class _Block(nn.Module):
    config: TinyLMConfig

    @nn.compact
    def __call__(self, x, k_cache, v_cache, positions):
        c = self.config
        hd = c.d_model // c.num_heads
        h = nn.RMSNorm()(x)
        q, k, v = (nn.DenseGeneral((c.num_heads, hd), name=n)(h) for n in ("q", "k", "v"))  # [B, T, H, hd]
        rows = jnp.arange(x.shape[0])[:, None]
        k_cache = k_cache.at[rows, positions].set(k)  # [B, L, H, hd]
        v_cache = v_cache.at[rows, positions].set(v)
        scores = jnp.einsum("bthd,blhd->bhtl", q, k_cache) / jnp.sqrt(hd)
        visible = jnp.arange(c.max_len)[None, None, None, :] <= positions[:, None, :, None]
        attn = jax.nn.softmax(jnp.where(visible, scores, -1e30), axis=-1)
        out = jnp.einsum("bhtl,blhd->bthd", attn, v_cache)
        x = x + nn.DenseGeneral(c.d_model, axis=(-2, -1), name="o")(out)
        h = nn.RMSNorm()(x)
        x = x + nn.Dense(c.d_model)(nn.gelu(nn.Dense(4 * c.d_model)(h)))
        return x, k_cache, v_cache


class TinyLM(nn.Module):
    config: TinyLMConfig

    @nn.compact
    def __call__(self, tokens, cache, positions):
        c = self.config
        embed = nn.Embed(c.vocab_size, c.d_model, name="embed")
        x = embed(tokens) + nn.Embed(c.max_len, c.d_model, name="pos")(positions)
        ks, vs = [], []
        for i in range(c.num_layers):
            x, k, v = _Block(c, name=f"block{i}")(x, cache["k"][i], cache["v"][i], positions)
            ks.append(k)
            vs.append(v)
        x = nn.RMSNorm()(x)
        bias = self.param("out_bias", nn.initializers.zeros, (c.vocab_size,))
        logits = embed.attend(x) * c.logit_scale + bias
        return logits, {"k": jnp.stack(ks), "v": jnp.stack(vs)}


@dataclasses.dataclass(frozen=True)
class TinyLMStep:
    """The model as a hashable step function (a static argument of ``constrained_sample``)."""

    config: TinyLMConfig

    def init(self, rng: jax.Array, batch: int = 1):
        """Random parameters."""
        tokens = jnp.zeros((batch, 1), jnp.int32)
        return TinyLM(self.config).init(rng, tokens, init_cache(self.config, batch), tokens)["params"]

    def __call__(self, params, tokens, cache, positions):
        return TinyLM(self.config).apply({"params": params}, tokens, cache, positions)
