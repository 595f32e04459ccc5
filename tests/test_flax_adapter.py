"""The Flax/Gemma adapter: the Gemma-style sampler of examples/flax_gemma_style_sampler.py produces
grammar-valid, terminated rows and the same greedy tokens as constrained_sample."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from absl.testing import absltest

import xg2jax.jax as xj
from jax_helpers import batch8_fixture
from xg2jax.jax.flax_adapter import GrammarConstraint, constrain_sampling_fn
from xg2jax.jax.tiny_lm import init_cache
from xg2jax.testing import GrammarTestCase

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "flax_gemma_style_sampler.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("flax_gemma_style_sampler", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    return module


class FlaxAdapterTest(GrammarTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        batch8_fixture(cls)

    def test_gemma_style_sampler_matches_constrained_sample(self):
        example = _load_example()
        eos = self.tok.stop_token_ids[0]
        sampler = example.GemmaStyleSampler(self.step_fn, max_new_tokens=40, eos_id=eos)
        prompt = np.random.RandomState(1).randint(0, 50000, size=(8, 5)).astype(np.int32)
        with xj.GrammarState.create(self.rows) as grammar:
            tokens = np.asarray(sampler(self.params, jnp.asarray(prompt), grammar))
        with xj.GrammarState.create(self.rows) as grammar:
            ref = xj.constrained_sample(self.step_fn, self.params, init_cache(self.config, 8), prompt,
                                        np.full(8, 5, np.int32), grammar, max_new_tokens=40, stop_token_ids=[eos])
        lengths = np.asarray(ref.lengths)
        for r, g in enumerate(self.rows):
            np.testing.assert_array_equal(tokens[r, :lengths[r]], np.asarray(ref.tokens)[r, :lengths[r]])
            if g is not None:
                self.assertTokensAccepted(g, tokens[r, :lengths[r]])

    def test_constrain_sampling_fn_wraps_a_sampling_function(self):
        get_next_tokens = lambda logits, rng: jnp.argmax(logits, axis=-1).astype(jnp.int32)  # noqa: E731
        constrained = jax.jit(constrain_sampling_fn(get_next_tokens))
        logits = jnp.zeros((2, self.tok.vocab_size)).at[:, ord("z")].set(5.0)  # an unconstrained model says "z"
        with xj.GrammarState.create([self.grammars["yes_no"], None]) as grammar:
            constraint = GrammarConstraint.start(grammar)
            tokens, constraint = constrained(constraint, logits, jax.random.key(0))
            vocab = self.tok.decoded_vocab
            self.assertIn(vocab[int(tokens[0])][:1], (b"y", b"n"))
            self.assertEqual(int(tokens[1]), int(jnp.argmax(logits[1])))  # the unconstrained row is untouched
            self.assertEqual(np.asarray(constraint.grammar.status)[0], xj.StepStatus.ADVANCED)
            self.assertFalse(bool(constraint.terminated[0]))


if __name__ == "__main__":
    absltest.main()
