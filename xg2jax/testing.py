"""Helpers for unit-testing grammars and masks (used by xg2jax's own tests).

- :func:`is_grammar_accept_string`: does a grammar accept a whole string?
- :func:`oracle_bitmask`: the token-by-token oracle mask (every token tried with the matcher's
  acceptance rules, no mask cache), to compare with ``fill_next_token_bitmask``.
- :class:`GrammarTestCase`: an ``absltest.TestCase`` with ``assertGrammarAccepts`` /
  ``assertGrammarRejects`` / ``assertMaskMatchesOracle``.
"""

from __future__ import annotations

import numpy as np

from xg2jax.compiler import Grammar, GrammarCompiler
from xg2jax.matcher import GrammarMatcher, allocate_token_bitmask
from xg2jax.tokenizer_info import TokenizerInfo

__all__ = ["is_grammar_accept_string", "oracle_bitmask", "bitmask_to_ids", "mask_oracle_diff", "GrammarTestCase"]

_BYTE_TOKENIZER: TokenizerInfo | None = None


def _byte_tokenizer() -> TokenizerInfo:
    global _BYTE_TOKENIZER
    if _BYTE_TOKENIZER is None:
        _BYTE_TOKENIZER = TokenizerInfo([bytes([b]) for b in range(256)])
    return _BYTE_TOKENIZER


def is_grammar_accept_string(grammar: str | Grammar, input_str: str | bytes, *, root_rule_name: str = "root",
                             require_termination: bool = True) -> bool:
    """True if ``grammar`` accepts ``input_str`` as a whole (or as a prefix if not require_termination)."""
    compiled = GrammarCompiler(_byte_tokenizer(), cache_enabled=False).compile_grammar(
        grammar, root_rule_name=root_rule_name)
    m = GrammarMatcher(compiled)
    if not m.accept_string(input_str):
        return False
    return m.is_completed() if require_termination else True


def bitmask_to_ids(row: np.ndarray, vocab_size: int) -> np.ndarray:
    """Allowed token ids of one packed bitmask row."""
    bits = np.unpackbits(np.ascontiguousarray(row).view(np.uint8), bitorder="little")
    return np.nonzero(bits[:vocab_size])[0]


def oracle_bitmask(matcher: GrammarMatcher) -> np.ndarray:
    """The mask the matcher *should* produce: every token tried with accept_token's rules."""
    row = allocate_token_bitmask(1, matcher.vocab_size)[0]
    matcher._handle.fill_brute_force(row, 0)
    return row


def mask_oracle_diff(matcher: GrammarMatcher) -> tuple[np.ndarray, np.ndarray]:
    """(tokens the mask allows but the oracle forbids, tokens the oracle allows but the mask forbids)."""
    v = matcher.vocab_size
    got = allocate_token_bitmask(1, v)
    matcher.fill_next_token_bitmask(got)
    want = oracle_bitmask(matcher)
    g, w = set(bitmask_to_ids(got[0], v).tolist()), set(bitmask_to_ids(want, v).tolist())
    return np.array(sorted(g - w)), np.array(sorted(w - g))


try:  # absltest helpers are optional (absl-py is a test extra)
    from absl.testing import absltest as _absltest

    class GrammarTestCase(_absltest.TestCase):
        """absltest base class with grammar assertions."""

        def assertGrammarAccepts(self, grammar, s, **kw):  # noqa: N802 (absltest style)
            self.assertTrue(is_grammar_accept_string(grammar, s, **kw), f"grammar should accept {s!r}")

        def assertGrammarRejects(self, grammar, s, **kw):  # noqa: N802
            self.assertFalse(is_grammar_accept_string(grammar, s, **kw), f"grammar should reject {s!r}")

        def assertMaskMatchesOracle(self, matcher: GrammarMatcher):  # noqa: N802
            extra, missing = mask_oracle_diff(matcher)
            self.assertEqual((extra.tolist()[:20], missing.tolist()[:20]), ([], []),
                             "mask != token oracle (allowed-but-forbidden, forbidden-but-allowed)")
except ImportError:  # pragma: no cover
    GrammarTestCase = None  # type: ignore[assignment]
