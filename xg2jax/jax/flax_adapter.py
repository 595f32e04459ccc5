"""Drop grammar constraints into a Gemma-style sampler.

Gemma's sampler keeps a typed ``flax.struct.dataclass`` loop state and, at each step, turns logits into
the next tokens (``sampling.get_next_tokens(logits, rng)``). :class:`GrammarConstraint` is the piece to
add to that state; it changes the step in exactly two places::

    logits = constraint.mask_logits(logits)           # 1. just before sampling: forbidden -> -inf
    next_tokens = sampling.get_next_tokens(logits, rng)
    constraint = constraint.advance(next_tokens, done) # 2. right after: one fused grammar step

``advance`` runs the custom call (advance each row's matcher, write the next mask); rows that are done
pass -1 and stay as they are. ``constraint.terminated`` tells which rows have accepted a stop token.
See ``examples/flax_gemma_style_sampler.py`` for a complete sampler over a small Flax transformer.
"""

from __future__ import annotations

import flax.struct
import jax
import jax.numpy as jnp

from xg2jax.jax.ops import Path, apply_token_bitmask, next_token_mask
from xg2jax.jax.state import GrammarState, StepStatus

__all__ = ["GrammarConstraint", "constrain_sampling_fn"]


@flax.struct.dataclass
class GrammarConstraint:
    """The grammar part of a sampling loop state.

    Attributes
    ----------
    grammar : GrammarState
        Matcher handles int32[B] (-1: unconstrained row) and the last step's status bits int32[B].
    mask : int32[B, W]
        Packed bitmask of the next token.
    path : str
        Static: the grammar-step implementation ("auto", "ffi" or "callback").
    """

    grammar: GrammarState
    mask: jax.Array
    path: str = flax.struct.field(pytree_node=False, default="auto")

    @classmethod
    def start(cls, grammar: GrammarState, *, path: Path = "auto") -> "GrammarConstraint":
        """The constraint before the first sampled token (computes the first mask; no matcher moves)."""
        mask, grammar = next_token_mask(grammar, jnp.full(grammar.handles.shape, -1, jnp.int32), path=path)
        return cls(grammar=grammar, mask=mask, path=path)

    def mask_logits(self, logits: jax.Array) -> jax.Array:
        """float[B, V] logits with the tokens the grammar forbids set to -inf (rows without a grammar
        untouched). Call once, just before sampling."""
        return apply_token_bitmask(logits, self.mask, constrained=self.grammar.handles >= 0)

    def advance(self, tokens: jax.Array, done: jax.Array | None = None) -> "GrammarConstraint":
        """Feed the sampled int32[B] tokens (rows where ``done`` is True are left as they are) and
        compute the next mask."""
        feed = tokens.astype(jnp.int32) if done is None else jnp.where(done, -1, tokens.astype(jnp.int32))
        mask, grammar = next_token_mask(self.grammar, feed, path=self.path)
        return self.replace(grammar=grammar, mask=mask)

    @property
    def terminated(self) -> jax.Array:
        """bool[B]: the row's matcher has accepted a stop token."""
        return (self.grammar.status & StepStatus.TERMINATED) != 0


def constrain_sampling_fn(get_next_tokens):
    """Wrap a Gemma-style ``get_next_tokens(logits, rng) -> tokens`` so it samples only what the grammar
    allows: ``fn(constraint, logits, rng, done) -> (tokens, constraint)``."""

    def constrained(constraint: GrammarConstraint, logits: jax.Array, rng: jax.Array, done: jax.Array | None = None):
        tokens = get_next_tokens(constraint.mask_logits(logits), rng)
        return tokens, constraint.advance(tokens, done)

    return constrained
