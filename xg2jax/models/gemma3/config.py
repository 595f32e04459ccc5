"""Gemma 3 text-model hyperparameters, read from a GGUF file's metadata (``gemma3.*`` keys)."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Mapping, Sequence

__all__ = ["Gemma3Config"]


@dataclasses.dataclass(frozen=True)
class Gemma3Config:
    """The architecture of a Gemma 3 text model (defaults: Gemma 3 270M).

    Every ``sliding_window_pattern``-th layer (1-based) attends globally with RoPE base ``rope_global_base``;
    the others attend to the last ``sliding_window`` positions with RoPE base ``rope_local_base``.
    Frozen and hashable: it is a static argument of the jitted step.
    """

    vocab_size: int = 262_144
    embed_dim: int = 640
    num_layers: int = 18
    num_heads: int = 4
    num_kv_heads: int = 1
    head_dim: int = 256
    hidden_dim: int = 2048  #: GeGLU width
    sliding_window: int = 512
    sliding_window_pattern: int = 6
    rope_local_base: float = 10_000.0
    rope_global_base: float = 1_000_000.0
    query_pre_attn_scalar: float = 256.0  #: queries are scaled by its inverse square root
    rms_norm_eps: float = 1e-6

    def __post_init__(self):
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"Gemma3Config: num_heads {self.num_heads} is not a multiple of num_kv_heads "
                             f"{self.num_kv_heads}")

    @property
    def global_layers(self) -> tuple[int, ...]:
        """0-based indices of the global-attention layers."""
        p = self.sliding_window_pattern
        return tuple(i for i in range(self.num_layers) if (i + 1) % p == 0)

    @classmethod
    def from_gguf_metadata(cls, meta: Mapping[str, Any]) -> "Gemma3Config":
        """The config a GGUF file describes (``general.architecture`` must be ``gemma3``)."""
        arch = meta.get("general.architecture")
        if arch != "gemma3":
            raise ValueError(f"Gemma3Config: the GGUF file holds a {arch!r} model, not 'gemma3'")

        def key(name, default=None):
            value = meta.get(f"gemma3.{name}", default)
            if value is None:
                raise ValueError(f"Gemma3Config: the GGUF file has no gemma3.{name}")
            return value

        head_dim = int(key("attention.key_length"))
        if int(key("attention.value_length", head_dim)) != head_dim:
            raise ValueError("Gemma3Config: key_length != value_length is not supported")
        tokens = meta.get("tokenizer.ggml.tokens")
        return cls(
            vocab_size=len(tokens) if tokens is not None else cls.vocab_size,
            embed_dim=int(key("embedding_length")),
            num_layers=int(key("block_count")),
            num_heads=int(key("attention.head_count")),
            num_kv_heads=int(key("attention.head_count_kv")),
            head_dim=head_dim,
            hidden_dim=int(key("feed_forward_length")),
            sliding_window=int(key("attention.sliding_window")),
            rope_global_base=float(key("rope.freq_base")),
            # llama.cpp's gemma3 converter does not store these; they are fixed by the architecture.
            rope_local_base=10_000.0,
            sliding_window_pattern=6,
            query_pre_attn_scalar=float(head_dim),
            rms_norm_eps=float(key("attention.layer_norm_rms_epsilon")),
        )

    @classmethod
    def from_gguf(cls, path: str | os.PathLike | Sequence[str | os.PathLike]) -> "Gemma3Config":
        """Read the config from a GGUF file (only its metadata is read)."""
        from xg2jax.tokenizer_loaders import read_gguf_metadata

        return cls.from_gguf_metadata(read_gguf_metadata(path))
