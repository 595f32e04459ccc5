"""Matchers on many threads share one compiled grammar: masks equal the single-threaded ones.

Threads start together at a barrier (bounded wait, no sleeps); lazily built mask entries are raced
on purpose.
"""

from __future__ import annotations

import threading

import numpy as np
from absl.testing import absltest

import xg2jax as xgr

_VOCAB = [bytes([b]) for b in range(128)] + [b'"a', b'a"', b'",', b'"}', b'{"', b'":', b"true", b"12", b"},", b"<eos>"]
_TEXT = '{"ab": 12, "c": {"d": [true, null]}, "e": "f"}'


def _tokens(tok_ids: dict[bytes, int]) -> list[int]:
    return [tok_ids[bytes([ord(c)])] for c in _TEXT]


class ConcurrencyTest(absltest.TestCase):

    def setUp(self):
        self.tok = xgr.TokenizerInfo(_VOCAB, stop_token_ids=[len(_VOCAB) - 1])
        self.ids = _tokens({t: i for i, t in enumerate(_VOCAB)})

    def _reference(self):
        compiled = xgr.GrammarCompiler(self.tok, cache_enabled=False).compile_builtin_json_grammar()
        m = xgr.GrammarMatcher(compiled)
        out = []
        for t in self.ids:
            bm = xgr.allocate_token_bitmask(1, self.tok.vocab_size)
            m.fill_next_token_bitmask(bm)
            out.append(bm[0].copy())
            self.assertTrue(m.accept_token(t))
        return out

    def test_threads_share_a_compiled_grammar(self):
        ref = self._reference()
        compiled = xgr.GrammarCompiler(self.tok, cache_enabled=False).compile_builtin_json_grammar()
        n = 8
        barrier = threading.Barrier(n, timeout=5)
        errors: list[str] = []

        def run(k: int) -> None:
            try:
                barrier.wait()
                m = xgr.GrammarMatcher(compiled)
                bm = xgr.allocate_token_bitmask(1, self.tok.vocab_size)
                for step, t in enumerate(self.ids):
                    m.fill_next_token_bitmask(bm)
                    if not np.array_equal(bm[0], ref[step]):
                        errors.append(f"thread {k}: mask differs at step {step}")
                        return
                    if not m.accept_token(t):
                        errors.append(f"thread {k}: token rejected at step {step}")
                        return
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"thread {k}: {e!r}")

        threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=30)
            self.assertFalse(th.is_alive(), "a worker thread hung")
        self.assertEqual(errors, [])

    def test_batch_fill_equals_serial_fill(self):
        compiled = xgr.GrammarCompiler(self.tok).compile_builtin_json_grammar()
        matchers = [xgr.GrammarMatcher(compiled) for _ in range(6)]
        for k, m in enumerate(matchers):  # each at a different point of the text
            for t in self.ids[: 5 * k]:
                self.assertTrue(m.accept_token(t))
        batch = xgr.allocate_token_bitmask(6, self.tok.vocab_size)
        xgr.batch_fill_next_token_bitmask(matchers, batch, num_threads=4)
        for k, m in enumerate(matchers):
            one = xgr.allocate_token_bitmask(1, self.tok.vocab_size)
            m.fill_next_token_bitmask(one)
            np.testing.assert_array_equal(batch[k], one[0])


if __name__ == "__main__":
    absltest.main()
