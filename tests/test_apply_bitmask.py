"""apply_token_bitmask_inplace on numpy, torch (several float dtypes) and other arrays, against a per-token
reference: rows, ``indices`` with batch sizes that differ, ``vocab_size`` with padded logits and bitmasks, the
default masking of columns past the bitmask, and the errors (JAX arrays, dtypes, shapes)."""

from __future__ import annotations

import numpy as np
from absl.testing import absltest, parameterized

import xg2jax


def _reference(logits: np.ndarray, bitmask: np.ndarray, vocab_size=None, indices=None) -> np.ndarray:
    out = logits.astype(np.float64).copy()
    cols = out.shape[1] if vocab_size is None else vocab_size
    for r in (range(out.shape[0]) if indices is None else indices):
        for t in range(cols):
            word = t // 32
            allowed = word < bitmask.shape[1] and (int(bitmask[r, word]) >> (t % 32)) & 1
            if not allowed:
                out[r, t] = -np.inf
    return out


def _random_case(rng, rows=3, vocab=70, words=None):
    words = (vocab + 31) // 32 if words is None else words
    bitmask = rng.integers(-(2 ** 31), 2 ** 31, size=(rows, words), dtype=np.int64).astype(np.int32)
    logits = rng.standard_normal((rows, vocab)).astype(np.float32)
    return logits, bitmask


class NumpyTest(parameterized.TestCase):
    @parameterized.named_parameters(
        ("plain", dict(), 70, None),
        ("indices", dict(indices=[2, 0]), 70, None),
        ("wider_logits_masked_past_bits", dict(), 100, 2),
        ("narrower_logits", dict(), 40, 3),
        ("vocab_size_padding", dict(vocab_size=65), 96, 3),
    )
    def test_matches_reference(self, kwargs, vocab, words):
        rng = np.random.default_rng(0)
        logits, bitmask = _random_case(rng, vocab=vocab, words=words)
        want = _reference(logits, bitmask, kwargs.get("vocab_size"), kwargs.get("indices"))
        xg2jax.apply_token_bitmask_inplace(logits, bitmask, **kwargs)
        np.testing.assert_array_equal(logits.astype(np.float64), want)

    def test_indices_with_different_batch_sizes(self):
        rng = np.random.default_rng(1)
        logits, _ = _random_case(rng, rows=4)
        _, bitmask = _random_case(rng, rows=2)
        want = logits.copy()
        want[1] = _reference(logits[1:2], bitmask[1:2])[0]
        xg2jax.apply_token_bitmask_inplace(logits, bitmask, indices=[1])
        np.testing.assert_array_equal(logits, want)
        with self.assertRaisesRegex(ValueError, "index 3 out of range"):
            xg2jax.apply_token_bitmask_inplace(logits, bitmask, indices=[3])

    def test_errors(self):
        logits = np.zeros((1, 40), np.float32)
        bm = xg2jax.allocate_token_bitmask(1, 40)
        with self.assertRaisesRegex(ValueError, "vocab_size 70 must be at most"):
            xg2jax.apply_token_bitmask_inplace(logits, bm, vocab_size=70)
        with self.assertRaisesRegex(TypeError, "logits must be a numpy array"):
            xg2jax.apply_token_bitmask_inplace([[0.0] * 40], bm)
        read_only = np.zeros((1, 40), np.float32)
        read_only.flags.writeable = False
        with self.assertRaisesRegex(ValueError, "read-only"):
            xg2jax.apply_token_bitmask_inplace(read_only, bm)

    def test_jax_arrays_point_to_the_functional_op(self):
        import jax.numpy as jnp

        with self.assertRaisesRegex(TypeError, "xg2jax.jax.apply_token_bitmask"):
            xg2jax.apply_token_bitmask_inplace(jnp.zeros((1, 40)), xg2jax.allocate_token_bitmask(1, 40))


class TorchTest(parameterized.TestCase):
    def setUp(self):
        super().setUp()
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("torch is not installed (pip install -e .[reference])")

    @parameterized.named_parameters(
        ("float32", "float32", dict(), None), ("bfloat16", "bfloat16", dict(), None),
        ("float16_indices", "float16", dict(indices=[0, 2]), None),
        ("vocab_size", "float32", dict(vocab_size=65), 3), ("masked_past_bits", "float32", dict(), 2),
    )
    def test_matches_reference_in_place(self, dtype, kwargs, words):
        import torch

        rng = np.random.default_rng(2)
        logits, bitmask = _random_case(rng, vocab=96, words=words)
        t = torch.from_numpy(logits).to(getattr(torch, dtype))
        before = t.data_ptr()
        for bm in (torch.from_numpy(bitmask), bitmask):  # a torch or a numpy bitmask
            t2 = t.clone()
            xg2jax.apply_token_bitmask_inplace(t2, bm, **kwargs)
            want = _reference(t.float().numpy(), bitmask, kwargs.get("vocab_size"), kwargs.get("indices"))
            np.testing.assert_array_equal(t2.float().numpy(), want)
        xg2jax.apply_token_bitmask_inplace(t, torch.from_numpy(bitmask), **kwargs)
        self.assertEqual(t.data_ptr(), before)  # in place

    def test_one_dimensional_and_errors(self):
        import torch

        logits = torch.zeros(40)
        bm = torch.from_numpy(xg2jax.allocate_token_bitmask(1, 40))
        bm[0, 0] = 0
        xg2jax.apply_token_bitmask_inplace(logits, bm[0])
        self.assertTrue(torch.isinf(logits[:32]).all() and (logits[32:] == 0).all())
        with self.assertRaisesRegex(ValueError, "dtype int32"):
            xg2jax.apply_token_bitmask_inplace(torch.zeros(1, 40), bm.long())
        with self.assertRaisesRegex(ValueError, "floating point"):
            xg2jax.apply_token_bitmask_inplace(torch.zeros(1, 40, dtype=torch.int32), bm)

    def test_fill_writes_into_a_torch_bitmask(self):
        import torch

        tok = xg2jax.TokenizerInfo([b"a", b"b", b"</s>"], stop_token_ids=[2])
        compiled = xg2jax.GrammarCompiler(tok).compile_grammar('root ::= "a"')
        bm = torch.from_numpy(xg2jax.allocate_token_bitmask(1, tok.vocab_size))
        xg2jax.GrammarMatcher(compiled).fill_next_token_bitmask(bm)
        logits = torch.zeros(1, tok.vocab_size)
        xg2jax.apply_token_bitmask_inplace(logits, bm)
        self.assertEqual(torch.isfinite(logits[0]).tolist(), [True, False, False])


if __name__ == "__main__":
    absltest.main()
