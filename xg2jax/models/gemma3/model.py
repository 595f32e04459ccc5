"""The Gemma 3 text transformer in Flax, with a fixed-size KV cache, as a ``constrained_sample`` step.

Architecture (Gemma 3 technical report; the GGUF tensors map one to one):

    x = embed[tokens] * sqrt(embed_dim)
    per layer (lax.scan over stacked weights):
        h = attention(rms_norm(x))   # q/k RMS-normed per head, rotate-half RoPE, grouped KV heads,
        x = x + rms_norm(h)          # sliding window (local layers) or full causal (global layers)
        h = geglu(rms_norm(x))       # down(gelu_tanh(gate(x)) * up(x))
        x = x + rms_norm(h)
    logits = rms_norm(x) @ embed.T   # tied head, no soft-capping

RMS-norm scales are used as stored in GGUF files, i.e. already ``1 + w``.

The KV cache is ``{"k", "v"}: float[layers, B, max_len, kv_heads, head_dim]``. A forward pass writes the
keys and values of its tokens at their ``positions`` (per row, so right-padded prompts of different
lengths work) and a query at position p attends to slots ``s <= p`` (and ``s > p - sliding_window`` in
local layers). Slots past a row's length may hold a longer padded prompt's leftovers; they are never read
before being overwritten. The cache never grows, so a decode loop compiles once.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from xg2jax.models.gemma3.config import Gemma3Config

__all__ = ["Gemma3", "Gemma3Step", "init_cache"]


def init_cache(config: Gemma3Config, batch: int, max_len: int, dtype=jnp.float32) -> dict[str, jax.Array]:
    """A zeroed KV cache: ``k``/``v`` float[layers, batch, max_len, kv_heads, head_dim]."""
    if batch < 1 or max_len < 1:
        raise ValueError(f"init_cache: need batch >= 1 and max_len >= 1, got {batch}, {max_len}")
    shape = (config.num_layers, batch, max_len, config.num_kv_heads, config.head_dim)
    return {"k": jnp.zeros(shape, dtype), "v": jnp.zeros(shape, dtype)}


class RMSNorm(nn.Module):
    """RMS normalisation over the last axis; ``scale`` is the full multiplier (GGUF's ``1 + w``)."""

    eps: float

    @nn.compact
    def __call__(self, x):
        scale = self.param("scale", nn.initializers.ones, (x.shape[-1],))
        x32 = x.astype(jnp.float32)
        x32 = x32 * jax.lax.rsqrt(jnp.mean(jnp.square(x32), axis=-1, keepdims=True) + self.eps)
        return (x32 * scale.astype(jnp.float32)).astype(x.dtype)


def _rope(x, positions, base):
    """Rotate-half rotary embedding. x: [B, T, H, D]; positions: int32[B, T]; base: scalar."""
    half = x.shape[-1] // 2
    inv_freq = base ** (-jnp.arange(half, dtype=jnp.float32) * 2.0 / x.shape[-1])  # [D/2]
    angles = positions.astype(jnp.float32)[:, :, None] * inv_freq  # [B, T, D/2]
    sin = jnp.sin(angles)[:, :, None, :].astype(x.dtype)
    cos = jnp.cos(angles)[:, :, None, :].astype(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


class _Attention(nn.Module):
    config: Gemma3Config

    @nn.compact
    def __call__(self, x, k_cache, v_cache, positions, is_global):
        c = self.config
        dense = lambda heads, name: nn.DenseGeneral((heads, c.head_dim), use_bias=False, name=name)
        q = RMSNorm(c.rms_norm_eps, name="q_norm")(dense(c.num_heads, "q")(x))  # [B, T, H, D]
        k = RMSNorm(c.rms_norm_eps, name="k_norm")(dense(c.num_kv_heads, "k")(x))  # [B, T, K, D]
        v = dense(c.num_kv_heads, "v")(x)
        base = jnp.where(is_global, c.rope_global_base, c.rope_local_base)
        q = _rope(q, positions, base) * (c.query_pre_attn_scalar ** -0.5)
        k = _rope(k, positions, base)

        rows = jnp.arange(x.shape[0])[:, None]
        k_cache = k_cache.at[rows, positions].set(k.astype(k_cache.dtype))  # [B, L, K, D]
        v_cache = v_cache.at[rows, positions].set(v.astype(v_cache.dtype))

        b, t = positions.shape
        group = c.num_heads // c.num_kv_heads
        qg = q.reshape(b, t, c.num_kv_heads, group, c.head_dim)
        scores = jnp.einsum("btkgd,blkd->bkgtl", qg, k_cache.astype(q.dtype)).astype(jnp.float32)
        slots = jnp.arange(k_cache.shape[1])[None, None, :]  # [1, 1, L]
        pos = positions[:, :, None]  # [B, T, 1]
        visible = (slots <= pos) & (is_global | (slots > pos - c.sliding_window))  # [B, T, L]
        scores = jnp.where(visible[:, None, None], scores, -jnp.inf)
        probs = jax.nn.softmax(scores, axis=-1).astype(v_cache.dtype)
        out = jnp.einsum("bkgtl,blkd->btkgd", probs, v_cache).reshape(b, t, c.num_heads, c.head_dim)
        out = nn.DenseGeneral(c.embed_dim, axis=(-2, -1), use_bias=False, name="o")(out.astype(x.dtype))
        return out, k_cache, v_cache


class _Block(nn.Module):
    config: Gemma3Config

    @nn.compact
    def __call__(self, x, k_cache, v_cache, is_global, positions):
        """One decoder layer, shaped for ``nn.scan``: carry x; per layer k_cache, v_cache, is_global."""
        c = self.config
        h, k_cache, v_cache = _Attention(c, name="attn")(
            RMSNorm(c.rms_norm_eps, name="pre_attn_norm")(x), k_cache, v_cache, positions, is_global)
        x = x + RMSNorm(c.rms_norm_eps, name="post_attn_norm")(h)
        h = RMSNorm(c.rms_norm_eps, name="pre_ffw_norm")(x)
        gate = nn.Dense(c.hidden_dim, use_bias=False, name="gate")(h)
        up = nn.Dense(c.hidden_dim, use_bias=False, name="up")(h)
        h = nn.Dense(c.embed_dim, use_bias=False, name="down")(jax.nn.gelu(gate, approximate=True) * up)
        x = x + RMSNorm(c.rms_norm_eps, name="post_ffw_norm")(h)
        return x, (k_cache, v_cache)


class Gemma3(nn.Module):
    """Gemma 3 decoder. ``__call__(tokens int32[B, T], cache, positions int32[B, T], last=None)``.

    Returns ``(logits, cache)``: logits float[B, T, V], or float[B, V] at the indices ``last`` int32[B]
    when given (a prefill then never materialises [B, T, V]).
    """

    config: Gemma3Config

    @nn.compact
    def __call__(self, tokens, cache, positions, last=None):
        c = self.config
        embedder = nn.Embed(c.vocab_size, c.embed_dim, name="embedder")
        x = embedder(tokens) * jnp.asarray(math.sqrt(c.embed_dim), embedder.embedding.dtype)
        is_global = jnp.asarray([i in c.global_layers for i in range(c.num_layers)])
        layers = nn.scan(_Block, variable_axes={"params": 0}, split_rngs={"params": True},
                         in_axes=(0, 0, 0, nn.broadcast), length=c.num_layers)(c, name="layers")
        x, (k, v) = layers(x, cache["k"], cache["v"], is_global, positions)
        if last is not None:
            x = jnp.take_along_axis(x, last[:, None, None].astype(jnp.int32), axis=1)[:, 0]  # [B, E]
        x = RMSNorm(c.rms_norm_eps, name="final_norm")(x)
        return embedder.attend(x).astype(jnp.float32), {"k": k, "v": v}


@dataclasses.dataclass(frozen=True)
class Gemma3Step:
    """Gemma 3 as the hashable ``step_fn`` of :func:`xg2jax.jax.constrained_sample`.

    ``step(params, tokens, cache, positions) -> (logits float[B, T, V], cache)`` and
    ``step.prefill(params, tokens, cache, positions, lengths) -> (logits float[B, V], cache)`` (the logits
    after each row's last prompt token only: at V = 262,144 a full [B, P, V] prefill would not fit).
    """

    config: Gemma3Config

    def init(self, rng: jax.Array, *, batch: int = 1, max_len: int = 8) -> Any:
        """Random parameters (for tests of the architecture; real weights come from :func:`load_params`)."""
        tokens = jnp.zeros((batch, 1), jnp.int32)
        return Gemma3(self.config).init(rng, tokens, init_cache(self.config, batch, max_len), tokens)["params"]

    def __call__(self, params, tokens, cache, positions):
        return Gemma3(self.config).apply({"params": params}, tokens, cache, positions)

    def prefill(self, params, tokens, cache, positions, lengths):
        return Gemma3(self.config).apply({"params": params}, tokens, cache, positions, lengths - 1)
