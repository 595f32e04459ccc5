"""constrained_sample over a TagDispatch grammar (free text with tool calls) inside jax.jit: a tiny random Flax
model on the byte vocabulary, sampled with temperature so rows wander through free text, triggers and calls.
Every row's output is accepted by a fresh host matcher, and equals the host reference loop's under greedy."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from absl.testing import absltest

import xg2jax as xgr
import xg2jax.jax as xj
from jax_helpers import byte_tokenizer, prompts, reference_decode, tiny_model
from xg2jax.jax.tiny_lm import init_cache
from xg2jax.testing import GrammarTestCase

GRAMMAR = ('root ::= TagDispatch(("@c", call), ("@t", think), excludes=("!!"), loop_after_dispatch=true) "!!"\n'
           'call ::= "{" [a-c]{0,3} "}"\nthink ::= ">" [x-z]* "<"')


# Logits flattened onto the grammar's own bytes (the random model's favourite bytes dominate otherwise), so
# sampled rows reach triggers and calls; the model step still runs and feeds the loop.
_BIAS = np.full(257, -60.0, np.float32)
_BIAS[list(b"@ct{ab}xyz<> !")] = 0.0
_BIAS[list(b"@")] = 2.0


@dataclasses.dataclass(frozen=True)
class BiasedStep:
    base: Any

    def __call__(self, params, tokens, cache, positions):
        logits, cache = self.base(params, tokens, cache, positions)
        return logits * 0.0 + jnp.asarray(_BIAS), cache


class TagDispatchSampleTest(GrammarTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tok = byte_tokenizer()
        cls.compiled = xgr.GrammarCompiler(cls.tok).compile_grammar(GRAMMAR)
        base, cls.params, cls.config = tiny_model(cls.tok)
        cls.step_fn = BiasedStep(base)
        cls.prompt_tokens, cls.prompt_lengths = prompts(4, 5, 256)

    def _sample(self, sampler, max_new=48):
        state = xj.GrammarState.create([self.compiled] * 4)
        self.addCleanup(state.release)
        return xj.constrained_sample(self.step_fn, self.params, init_cache(self.config, 4), self.prompt_tokens,
                                     self.prompt_lengths, state, max_new_tokens=max_new, sampler=sampler,
                                     rng=jax.random.PRNGKey(3), stop_token_ids=self.tok.stop_token_ids)

    def test_sampled_rows_stay_in_the_language(self):
        out = self._sample(xj.Sampler(temperature=1.0))
        tokens, lengths = np.asarray(out.tokens), np.asarray(out.lengths)
        texts = []
        for r in range(4):
            row = tokens[r, :lengths[r]].tolist()
            matcher = xgr.GrammarMatcher(self.compiled)
            for t in row:
                self.assertTrue(matcher.accept_token(t), f"row {r}: {row!r}")
            texts.append(bytes(t for t in row if t < 256))
        calls = sum(t.count(b"@c{") + t.count(b"@t>") for t in texts)
        self.assertGreaterEqual(calls, 2, texts)  # the rows went through dispatches, not only free text

    def test_greedy_equals_the_host_reference(self):
        out = self._sample(xj.Sampler(temperature=0.0), max_new=32)
        ref_tokens, ref_lengths = reference_decode(
            self.step_fn, self.params, init_cache(self.config, 4), self.prompt_tokens, self.prompt_lengths,
            [self.compiled] * 4, max_new_tokens=32, stop_token_ids=self.tok.stop_token_ids)
        np.testing.assert_array_equal(np.asarray(out.lengths), ref_lengths)
        np.testing.assert_array_equal(np.asarray(out.tokens), ref_tokens)


if __name__ == "__main__":
    absltest.main()
