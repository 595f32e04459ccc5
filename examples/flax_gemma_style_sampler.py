"""A Gemma-style sampler with grammar constraints, over a small Flax transformer.

The shape follows Gemma's sampler: a typed ``flax.struct.dataclass`` loop state with shapes in the
annotations, a jit-able sampler object whose configuration is static, fixed buffer sizes (nothing
recompiles between requests of the same shapes), and the mask applied at one clear point just before
sampling (``GrammarConstraint.mask_logits``), followed by one fused grammar step
(``GrammarConstraint.advance``).

Run: ``python examples/flax_gemma_style_sampler.py`` (needs the ``flax`` and ``vocabs`` extras; uses the
GPT-2 vocabulary and random weights, so the text is gibberish that always fits its grammar).
"""

from __future__ import annotations

import dataclasses
import functools

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

import xg2jax
import xg2jax.jax as xj
from xg2jax import vocab_packages
from xg2jax.jax.flax_adapter import GrammarConstraint
from xg2jax.jax.tiny_lm import TinyLMConfig, TinyLMStep, init_cache


@flax.struct.dataclass
class SamplingState:
    step: jax.Array  # int32[]
    tokens: jax.Array  # int32[B, max_new_tokens]
    logits: jax.Array  # float32[B, V], for the next token
    cache: dict  # the model's KV cache, k/v float32[layers, B, max_len, heads, head_dim]
    done: jax.Array  # bool[B]
    constraint: GrammarConstraint  # grammar handles, status and next mask


@dataclasses.dataclass(frozen=True)
class GemmaStyleSampler:
    """Greedy constrained sampler; every field is static (part of the compiled program)."""

    model: TinyLMStep
    max_new_tokens: int
    eos_id: int

    @functools.partial(jax.jit, static_argnums=0)
    def __call__(self, params, prompt: jax.Array, grammar: xj.GrammarState) -> jax.Array:
        """prompt int32[B, P] (every row P tokens) -> tokens int32[B, max_new_tokens], eos after the end."""
        batch, plen = prompt.shape
        positions = jnp.broadcast_to(jnp.arange(plen, dtype=jnp.int32), (batch, plen))
        logits, cache = self.model(params, prompt, init_cache(self.model.config, batch), positions)
        state = SamplingState(step=jnp.int32(0), tokens=jnp.full((batch, self.max_new_tokens), self.eos_id, jnp.int32),
                              logits=logits[:, -1], cache=cache, done=jnp.zeros((batch,), bool),
                              constraint=GrammarConstraint.start(grammar))
        unconstrained = grammar.handles < 0

        def step(s: SamplingState) -> SamplingState:
            logits = s.constraint.mask_logits(s.logits)  # the one masking point
            token = jnp.where(s.done, self.eos_id, jnp.argmax(logits, axis=-1).astype(jnp.int32))
            constraint = s.constraint.advance(token, s.done)
            done = s.done | constraint.terminated | (unconstrained & (token == self.eos_id))
            position = jnp.full((batch, 1), plen + s.step, jnp.int32)
            logits, cache = self.model(params, token[:, None], s.cache, position)
            return s.replace(step=s.step + 1, tokens=s.tokens.at[:, s.step].set(token), logits=logits[:, 0],
                             cache=cache, done=done | (s.step + 1 >= self.max_new_tokens), constraint=constraint)

        return jax.lax.while_loop(lambda s: ~jnp.all(s.done), step, state).tokens


def main() -> None:
    tok = xg2jax.TokenizerInfo.from_loaded_vocab(vocab_packages.gpt2())
    compiler = xg2jax.GrammarCompiler(tok)
    grammars = [
        compiler.compile_grammar('root ::= "{\\"answer\\": " ("true" | "false") "}"'),
        compiler.compile_grammar('root ::= [0-9]{1,3} ("." [0-9]{1,2})?'),
        None,  # an unconstrained row
    ]
    model = TinyLMStep(TinyLMConfig(vocab_size=tok.vocab_size, max_len=64))
    params = model.init(jax.random.key(0))
    sampler = GemmaStyleSampler(model, max_new_tokens=16, eos_id=tok.stop_token_ids[0])
    prompt = jnp.asarray(np.random.RandomState(0).randint(0, 50000, size=(3, 5)), jnp.int32)
    with xj.GrammarState.create(grammars) as grammar:
        tokens = np.asarray(sampler(params, prompt, grammar))
    vocab = tok.decoded_vocab
    eos = tok.stop_token_ids[0]
    for row, ids in enumerate(tokens.tolist()):
        ids = ids[: ids.index(eos) + 1] if eos in ids else ids
        text = b"".join(vocab[t] for t in ids)
        print(f"row {row} ({'free' if grammars[row] is None else 'grammar'}): {text!r}")


if __name__ == "__main__":
    main()
