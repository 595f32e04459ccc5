"""constrained_sample with a small random Flax transformer on the real GPT-2 vocabulary: a batch of 8
with mixed grammars (EBNF, builtin JSON) and unconstrained rows. Checks host acceptance and termination,
token-for-token equality with a host reference loop, handler call counts, the HLO of the loop, the
io_callback path, samplers, and that requests of the same shapes never recompile."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
from absl.testing import absltest, parameterized

import xg2jax.jax as xj
from jax_helpers import batch8_fixture, prompts, reference_decode
from xg2jax import _core
from xg2jax.jax import sampling
from xg2jax.jax.tiny_lm import init_cache
from xg2jax.testing import GrammarTestCase

MAX_NEW = 40


class ConstrainedSampleTest(GrammarTestCase, parameterized.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        batch8_fixture(cls)
        cls.prompt_tokens, cls.prompt_lengths = prompts(8, 6, cls.tok.vocab_size)

    def _sample(self, **kw):
        kw.setdefault("max_new_tokens", MAX_NEW)
        kw.setdefault("stop_token_ids", self.tok.stop_token_ids)
        state = xj.GrammarState.create(self.rows)
        self.addCleanup(state.release)
        out = xj.constrained_sample(self.step_fn, self.params, init_cache(self.config, 8), self.prompt_tokens,
                                    self.prompt_lengths, state, **kw)
        return out, state

    def test_batch8_mixed_grammars_accepted_terminated_and_equal_to_host_reference(self):
        before = _core.step_call_count("cpu_ffi")
        out, state = self._sample()
        tokens, lengths = np.asarray(out.tokens), np.asarray(out.lengths)
        calls = _core.step_call_count("cpu_ffi") - before
        self.assertEqual(calls, 1 + int(lengths.max()), "one grammar step before the loop, one per iteration")
        for r, g in enumerate(self.rows):
            if g is None:
                continue
            self.assertTokensAccepted(g, tokens[r, :lengths[r]])  # accepted by a fresh matcher, ends with stop
            self.assertEqual(int(out.finish_reason[r]), xj.FinishReason.STOP)
            self.assertTrue(np.asarray(out.grammar_state.status)[r] & xj.StepStatus.TERMINATED)
            self.assertTrue(state.matcher(r).is_terminated())
        ref_tokens, ref_lengths = reference_decode(
            self.step_fn, self.params, init_cache(self.config, 8), self.prompt_tokens, self.prompt_lengths,
            self.rows, max_new_tokens=MAX_NEW, stop_token_ids=self.tok.stop_token_ids)
        np.testing.assert_array_equal(lengths, ref_lengths)
        np.testing.assert_array_equal(tokens, ref_tokens)

    def test_io_callback_path_gives_identical_tokens(self):
        ffi, _ = self._sample(path="ffi")
        before = _core.step_call_count("host")
        cb, _ = self._sample(path="callback")
        np.testing.assert_array_equal(np.asarray(cb.tokens), np.asarray(ffi.tokens))
        np.testing.assert_array_equal(np.asarray(cb.lengths), np.asarray(ffi.lengths))
        self.assertEqual(_core.step_call_count("host") - before, 1 + int(np.asarray(cb.lengths).max()))

    def test_hlo_has_the_custom_call_once_per_loop_iteration(self):
        state = xj.GrammarState.create(self.rows)
        self.addCleanup(state.release)
        lowered = sampling._sample_jit.lower(
            self.params, init_cache(self.config, 8), jnp.asarray(self.prompt_tokens), jnp.asarray(self.prompt_lengths),
            state, None, step_fn=self.step_fn, max_new_tokens=MAX_NEW, sampler=xj.Sampler(), stop_token_ids=(50256,),
            pad_id=0, path="ffi", mesh=None, batch_axis=None, max_threads=8)
        calls = [line for line in lowered.as_text().splitlines() if "xg2jax_grammar_step" in line]
        self.assertLen(calls, 2, "one call after prefill, one in the loop body")
        self.assertTrue(all("has_side_effect = true" in c for c in calls))
        # After XLA's optimisations the call is still inside the while body (not hoisted, CSE'd or DCE'd).
        hlo = lowered.compile().as_text()
        body = re.search(r"while\(.*?body=%?([\w.\-]+)", hlo).group(1)
        body_text = re.search(r"\n%?" + re.escape(body) + r" .*?\n}\n", hlo, re.S).group(0)
        self.assertEqual(body_text.count('custom_call_target="xg2jax_grammar_step"'), 1)
        self.assertIn("custom_call_has_side_effect=true", body_text)
        self.assertEqual(hlo.count('custom_call_target="xg2jax_grammar_step"'), 2)

    @parameterized.named_parameters(
        ("temperature", xj.Sampler(temperature=1.0)),
        ("top_k", xj.Sampler(temperature=0.8, top_k=5)),
        ("top_p", xj.Sampler(temperature=1.0, top_p=0.9)),
    )
    def test_samplers_respect_the_grammar(self, sampler):
        out, _ = self._sample(sampler=sampler, rng=jax.random.key(3))
        tokens, lengths = np.asarray(out.tokens), np.asarray(out.lengths)
        for r, g in enumerate(self.rows):
            if g is not None:
                finished = int(out.finish_reason[r]) == xj.FinishReason.STOP
                self.assertTokensAccepted(g, tokens[r, :lengths[r]], require_termination=finished)

    def test_same_shapes_never_recompile(self):
        self._sample()
        size = sampling._sample_jit._cache_size()
        # Different grammars per row, different prompts: same shapes, same executable.
        rows = [self.grammars["yes_no"]] * 4 + [None] * 4
        with xj.GrammarState.create(rows, vocab_size=self.tok.vocab_size) as state:
            p, lengths = prompts(8, 6, self.tok.vocab_size, seed=7)
            xj.constrained_sample(self.step_fn, self.params, init_cache(self.config, 8), p, lengths, state,
                                  max_new_tokens=MAX_NEW, stop_token_ids=self.tok.stop_token_ids)
        self.assertEqual(sampling._sample_jit._cache_size(), size)

    def test_bad_arguments(self):
        state = xj.GrammarState.create(self.rows)
        self.addCleanup(state.release)
        call = lambda **kw: xj.constrained_sample(  # noqa: E731
            self.step_fn, self.params, init_cache(self.config, 8), kw.pop("p", self.prompt_tokens),
            kw.pop("l", self.prompt_lengths), kw.pop("s", state), max_new_tokens=kw.pop("n", 4), **kw)
        with self.assertRaisesRegex(TypeError, r"prompt_tokens must be int32\[B, P\], got float32"):
            call(p=self.prompt_tokens.astype(np.float32))
        with self.assertRaisesRegex(TypeError, r"prompt_lengths must be int32\[8\]"):
            call(l=self.prompt_lengths[:3])
        with self.assertRaisesRegex(ValueError, "max_new_tokens must be >= 1, got 0"):
            call(n=0)
        with self.assertRaisesRegex(ValueError, "a sampling temperature > 0 needs rng"):
            call(sampler=xj.Sampler(temperature=1.0))
        with self.assertRaisesRegex(ValueError, "give both mesh and batch_axis"):
            call(batch_axis="b")
        with self.assertRaisesRegex(ValueError, "top_k >= 0"):
            xj.Sampler(top_k=-1)


if __name__ == "__main__":
    absltest.main()
