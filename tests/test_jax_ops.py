"""xg2jax.jax low-level ops: next_token_mask against host matchers, apply_token_bitmask against numpy,
the lowered HLO (custom call with the side-effect flag), the vmap policy, the io_callback path, and bad
input (every error leaves every matcher unchanged)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from absl.testing import absltest, parameterized

import xg2jax
import xg2jax.jax as xj
from jax_helpers import byte_tokenizer
from xg2jax import _core
from xg2jax.testing import GrammarTestCase

GRAMMAR = 'root ::= "ab" [0-9]+ "!"'
V = 257  # byte tokenizer: 256 bytes + <eos>


def _host_masks(matchers) -> np.ndarray:
    out = xg2jax.allocate_token_bitmask(len(matchers), V)
    for i, m in enumerate(matchers):
        if m is None:
            out[i] = -1
        else:  # a batch fill: a terminated row gets its stop tokens, as in the jitted step
            xg2jax.batch_fill_next_token_bitmask([m], out, [i])
    return out


class NextTokenMaskTest(GrammarTestCase, parameterized.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tok = byte_tokenizer()
        compiler = xg2jax.GrammarCompiler(cls.tok)
        cls.g = compiler.compile_grammar(GRAMMAR)
        cls.json = compiler.compile_builtin_json_grammar()

    def _masks_of(self, state):
        return _host_masks([state.matcher(r) for r in range(state.batch_size)])

    @parameterized.named_parameters(("ffi", "ffi"), ("callback", "callback"))
    def test_masks_equal_host_matchers_step_by_step(self, path):
        rows = [self.g, None, self.json, self.g]
        host = [None if g is None else xg2jax.GrammarMatcher(g) for g in rows]
        script = [b"ab12!", b"xyz", b'{"a": [1]}', b"ab9!"]
        step = jax.jit(lambda s, t: xj.next_token_mask(s, t, path=path))
        with xj.GrammarState.create(rows) as state:
            last = np.full(4, -1, np.int32)
            for t in range(max(len(s) for s in script) + 1):
                mask, state = step(state, jnp.asarray(last))
                self.assertBitmaskEqual(np.asarray(mask), _host_masks(host), V)
                last = np.full(4, -1, np.int32)
                for r, s in enumerate(script):
                    if t < len(s):
                        last[r] = s[t]
                    elif t == len(s) and host[r] is not None:
                        last[r] = 256  # the stop token
                    if last[r] >= 0 and host[r] is not None:
                        self.assertTrue(host[r].accept_token(int(last[r])))
            status = np.asarray(state.status)
            self.assertEqual(status[1], xj.StepStatus.UNCONSTRAINED)

    def test_status_bits(self):
        with xj.GrammarState.create([self.g]) as state:
            for b in b"ab1":
                _, state = xj.next_token_mask(state, jnp.asarray([b], jnp.int32))
            self.assertEqual(int(state.status[0]), xj.StepStatus.ADVANCED)
            _, state = xj.next_token_mask(state, jnp.asarray([ord("!")], jnp.int32))
            self.assertEqual(int(state.status[0]), xj.StepStatus.ADVANCED | xj.StepStatus.COMPLETED)
            mask, state = xj.next_token_mask(state, jnp.asarray([256], jnp.int32))
            self.assertEqual(int(state.status[0]),
                             xj.StepStatus.ADVANCED | xj.StepStatus.TERMINATED | xj.StepStatus.COMPLETED)
            np.testing.assert_array_equal(xg2jax.testing.bitmask_to_ids(np.asarray(mask)[0], V), [256])

    def test_lowered_hlo_has_one_side_effecting_custom_call(self):
        with xj.GrammarState.create([self.g, None]) as state:
            text = jax.jit(lambda s, t: xj.next_token_mask(s, t)).lower(state, jnp.zeros(2, jnp.int32)).as_text()
        calls = [line for line in text.splitlines() if "xg2jax_grammar_step" in line]
        self.assertLen(calls, 1)
        self.assertIn("has_side_effect = true", calls[0])

    def test_call_count_matches_steps(self):
        before = _core.step_call_count("cpu_ffi")
        with xj.GrammarState.create([self.g]) as state:
            step = jax.jit(lambda s, t: xj.next_token_mask(s, t, path="ffi"))
            for b in b"ab12":
                _, state = step(state, jnp.asarray([b], jnp.int32))
        self.assertEqual(_core.step_call_count("cpu_ffi") - before, 4)

    def test_vmap_over_states_flattens_into_one_call(self):
        with xj.GrammarState.create([self.g] * 6) as flat:
            handles = flat.handles.reshape(2, 3)
            state = xj.GrammarState(handles, jnp.zeros((2, 3), jnp.int32), flat.mask_words)
            before = _core.step_call_count("cpu_ffi")
            mask, out = jax.vmap(lambda s, t: xj.next_token_mask(s, t))(state, jnp.full((2, 3), ord("a"), jnp.int32))
            self.assertEqual(_core.step_call_count("cpu_ffi") - before, 1)
            self.assertEqual(mask.shape, (2, 3, flat.mask_words))
            self.assertTrue(np.all(np.asarray(out.status) == xj.StepStatus.ADVANCED))
            self.assertEqual(flat.matcher(5).fork().accept_string("b1!"), True)

    def test_vmap_over_tokens_only_raises(self):
        with xj.GrammarState.create([self.g] * 2) as state:
            with self.assertRaisesRegex(ValueError, "vmap over last_tokens with unbatched handles"):
                jax.vmap(lambda t: xj.next_token_mask(state, t), in_axes=0)(jnp.full((3, 2), 97, jnp.int32))

    def test_strict_rejection_raises_and_leaves_every_matcher_unchanged(self):
        with xj.GrammarState.create([self.g, self.g, self.g]) as state:
            _, state = xj.next_token_mask(state, jnp.asarray([ord("a")] * 3, jnp.int32))
            before = self._masks_of(state)
            # Row 0 is valid and would advance; row 2 is rejected: nothing may change.
            with self.assertRaisesRegex(jax.errors.JaxRuntimeError,
                                        r"row 2 \(grammar handle \d+\): token 120 \('x'\) is rejected by the grammar"):
                xj.next_token_mask(state, jnp.asarray([ord("b"), -1, ord("x")], jnp.int32))[0].block_until_ready()
            np.testing.assert_array_equal(self._masks_of(state), before)
            self.assertEqual([state.matcher(r)._handle.num_accepted_tokens for r in range(3)], [1, 1, 1])

    def test_rejected_token_inside_a_jitted_loop(self):
        script = jnp.asarray([[ord("a")] * 2, [ord("b")] * 2, [ord("1"), ord("x")], [ord("2")] * 2], jnp.int32)

        @jax.jit
        def loop(state):
            def body(i, carry):
                mask, state = carry
                return xj.next_token_mask(state, script[i])
            return jax.lax.fori_loop(0, 4, body, xj.next_token_mask(state, jnp.full((2,), -1, jnp.int32)))

        with xj.GrammarState.create([self.g, self.g]) as state:
            with self.assertRaisesRegex(jax.errors.JaxRuntimeError,
                                        r"row 1 \(grammar handle \d+\): token 120 \('x'\) is rejected"):
                jax.block_until_ready(loop(state))
            # Steps 0-1 committed; the failing step 2 changed neither row (row 0's '1' was rolled back).
            self.assertEqual([state.matcher(r)._handle.num_accepted_tokens for r in range(2)], [2, 2])
            self.assertTrue(state.matcher(0).fork().accept_string("1!"))

    def test_non_strict_rejection_is_a_status_bit(self):
        with xj.GrammarState.create([self.g, self.g]) as state:
            _, state = xj.next_token_mask(state, jnp.asarray([ord("a"), ord("x")], jnp.int32), strict=False)
            self.assertEqual(np.asarray(state.status).tolist(), [xj.StepStatus.ADVANCED, xj.StepStatus.REJECTED])
            self.assertEqual(state.matcher(1)._handle.num_accepted_tokens, 0)

    @parameterized.named_parameters(("ffi", "ffi"), ("callback", "callback"))
    def test_bad_runtime_input_names_the_row(self, path):
        step = jax.jit(lambda s, t: xj.next_token_mask(s, t, path=path))
        error = jax.errors.JaxRuntimeError if path == "ffi" else Exception
        with xj.GrammarState.create([self.g, self.g]) as state:
            cases = [
                ([ord("a"), V], r"row 1: token id 257 is out of range \[0, 257\)"),
                ([-5, ord("a")], r"row 0: token id -5 is negative"),
            ]
            for tokens, msg in cases:
                with self.assertRaisesRegex(error, msg):
                    step(state, jnp.asarray(tokens, jnp.int32))[0].block_until_ready()
            self.assertEqual([state.matcher(r)._handle.num_accepted_tokens for r in range(2)], [0, 0])
            dup = xj.GrammarState(jnp.stack([state.handles[0], state.handles[0]]), state.status, state.mask_words)
            with self.assertRaisesRegex(error, r"grammar handle \d+ is used by rows 0 and 1"):
                step(dup, jnp.asarray([-1, -1], jnp.int32))[0].block_until_ready()
            # A handle that another GrammarState created: an error naming the row, nothing advanced.
            with xj.GrammarState.create([self.g]) as other:
                mixed = xj.GrammarState(jnp.stack([state.handles[0], other.handles[0]]), state.status,
                                        state.mask_words)
                with self.assertRaisesRegex(
                        error, r"row 1: grammar handle \d+ belongs to a different GrammarState than row 0's"):
                    step(mixed, jnp.asarray([ord("a"), ord("a")], jnp.int32))[0].block_until_ready()
                self.assertEqual(other.matcher(0)._handle.num_accepted_tokens, 0)
            self.assertEqual(state.matcher(0)._handle.num_accepted_tokens, 0)
            narrow = xj.GrammarState(state.handles, state.status, 2)
            with self.assertRaisesRegex(error, "row 0: the bitmask row has 2 int32 words, but vocab_size 257 needs 9"):
                step(narrow, jnp.asarray([-1, -1], jnp.int32))[0].block_until_ready()
        # Freed and unknown handles.
        with self.assertRaisesRegex(error, r"row 0: grammar handle \d+ is unknown or already freed"):
            step(state, jnp.asarray([-1, -1], jnp.int32))[0].block_until_ready()
        bogus = xj.GrammarState(jnp.asarray([-7], jnp.int32), jnp.zeros(1, jnp.int32), 9)
        with self.assertRaisesRegex(error, "row 0: grammar handle -7 is invalid"):
            step(bogus, jnp.asarray([-1], jnp.int32))[0].block_until_ready()

    def test_trace_time_checks(self):
        with xj.GrammarState.create([self.g, self.g]) as state:
            with self.assertRaisesWithLiteralMatch(
                    TypeError, "next_token_mask: last_tokens must have dtype int32, got float32"):
                xj.next_token_mask(state, jnp.zeros(2, jnp.float32))
            with self.assertRaisesWithLiteralMatch(
                    ValueError, "next_token_mask: last_tokens has shape (3,), expected (2,) (one token per row)"):
                xj.next_token_mask(state, jnp.zeros(3, jnp.int32))
            with self.assertRaisesRegex(ValueError, "path must be 'auto', 'ffi' or 'callback'"):
                xj.next_token_mask(state, jnp.zeros(2, jnp.int32), path="tpu")
        with self.assertRaisesRegex(ValueError, "no grammar-step FFI handler for platform 'tpu'"):
            xj.step_path("ffi", platform="tpu")
        self.assertEqual(xj.step_path("auto", platform="tpu"), "callback")
        self.assertEqual(xj.step_path("auto", platform="cpu"), "ffi")

    def test_create_errors(self):
        with self.assertRaisesRegex(TypeError, "expected CompiledGrammar, GrammarMatcher or None, got str"):
            xj.GrammarState.create(["root ::= 'a'"])
        with self.assertRaisesRegex(ValueError, "vocab_size is required when no row has a grammar"):
            xj.GrammarState.create([None, None])
        with self.assertRaisesRegex(ValueError, "vocab_size 100 is smaller than a grammar's vocabulary"):
            xj.GrammarState.create([self.g], vocab_size=100)
        with self.assertRaisesRegex(ValueError, r"grammar handle \d+ is unknown or already freed"):
            state = xj.GrammarState.create([self.g])
            state.release()
            state.release()

    def test_release_waits_for_dispatched_steps(self):
        step = jax.jit(lambda s, t: xj.next_token_mask(s, t))
        with xj.GrammarState.create([self.g] * 4) as state:
            for b in b"ab12":  # dispatched asynchronously; release() must not free the handles under them
                mask, state = step(state, jnp.full((4,), b, jnp.int32))
        self.assertTrue(np.all(np.asarray(state.status) == xj.StepStatus.ADVANCED))
        self.assertEqual(np.asarray(mask).shape, (4, 9))

    def test_matcher_rows_copy_state(self):
        m = xg2jax.GrammarMatcher(self.g)
        self.assertTrue(m.accept_string("ab"))
        with xj.GrammarState.create([m]) as state:
            mask, _ = xj.next_token_mask(state, jnp.asarray([-1], jnp.int32))
            want = _host_masks([m])
            self.assertBitmaskEqual(np.asarray(mask), want, V)

    def test_prefetch_builds_expensive_first_states(self):
        compiler = xg2jax.GrammarCompiler(self.tok)
        g = compiler.compile_builtin_json_grammar()
        with xj.GrammarState.create([g, g]) as state:
            job = state.prefetch_masks(4)
            self.assertTrue(job.wait(30))
            self.assertLen(job.states, 4)
            self.assertEqual(job.costs, sorted(job.costs, reverse=True))
            self.assertGreaterEqual(g.num_built_masks, 4)
            mask, _ = xj.next_token_mask(state, jnp.asarray([-1, -1], jnp.int32))
            self.assertBitmaskEqual(np.asarray(mask), _host_masks([xg2jax.GrammarMatcher(g)] * 2), V)


class ApplyTokenBitmaskTest(parameterized.TestCase):
    @parameterized.named_parameters(("same_width", 64, 64), ("wider_logits", 100, 64), ("narrower_logits", 50, 64))
    def test_matches_numpy(self, vocab, mask_vocab):
        rs = np.random.RandomState(vocab)
        logits = rs.randn(3, vocab).astype(np.float32)
        bitmask = rs.randint(-2**31, 2**31 - 1, size=(3, (mask_vocab + 31) // 32), dtype=np.int64).astype(np.int32)
        want = logits.copy()
        xg2jax.apply_token_bitmask_inplace(want, bitmask)
        got = jax.jit(xj.apply_token_bitmask)(jnp.asarray(logits), jnp.asarray(bitmask))
        np.testing.assert_array_equal(np.asarray(got), want)

    def test_unconstrained_rows_untouched(self):
        logits = jnp.ones((2, 40), jnp.float32)
        bitmask = jnp.zeros((2, 1), jnp.int32)
        out = np.asarray(xj.apply_token_bitmask(logits, bitmask, constrained=jnp.asarray([True, False])))
        self.assertTrue(np.all(np.isneginf(out[0])))
        np.testing.assert_array_equal(out[1], np.ones(40))

    def test_bad_input(self):
        with self.assertRaisesRegex(TypeError, "the bitmask must have dtype int32, got uint32"):
            xj.apply_token_bitmask(jnp.ones((1, 32)), jnp.zeros((1, 1), jnp.uint32))
        with self.assertRaisesRegex(TypeError, "logits must be floating point, got int32"):
            xj.apply_token_bitmask(jnp.ones((1, 32), jnp.int32), jnp.zeros((1, 1), jnp.int32))
        with self.assertRaisesRegex(ValueError, "disagree on the leading"):
            xj.apply_token_bitmask(jnp.ones((2, 32)), jnp.zeros((1, 1), jnp.int32))


if __name__ == "__main__":
    absltest.main()
