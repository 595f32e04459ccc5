"""Helpers for unit-testing grammars and masks (used by xg2jax's own tests).

- :func:`is_grammar_accept_string`: does a grammar accept a whole string?
- :func:`oracle_bitmask`: the token-by-token oracle mask (every token tried with the matcher's
  acceptance rules, no mask cache), to compare with ``fill_next_token_bitmask``.
- :func:`first_rejected_token`: feed a token sequence to a fresh matcher; where does it fail?
- :func:`greedy_token_ids`: spell bytes with a vocabulary's tokens (greedy longest match).
- :class:`GrammarTestCase`: an ``absltest.TestCase`` with ``assertGrammarAccepts`` /
  ``assertGrammarRejects`` (strings), ``assertTokensAccepted`` / ``assertTokensRejected`` (token
  sequences), ``assertMaskMatchesOracle`` and ``assertBitmaskEqual``.
"""

from __future__ import annotations

import numpy as np

from xg2jax.compiler import CompiledGrammar, Grammar, GrammarCompiler
from xg2jax.matcher import GrammarMatcher, allocate_token_bitmask
from xg2jax.tokenizer_info import TokenizerInfo

__all__ = ["is_grammar_accept_string", "first_rejected_token", "greedy_token_ids", "oracle_bitmask", "bitmask_to_ids",
           "mask_oracle_diff", "check_masks_along", "GrammarTestCase"]

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


def first_rejected_token(compiled: CompiledGrammar, token_ids, *, require_termination: bool = True) -> int | None:
    """Feed ``token_ids`` to a fresh matcher of ``compiled``: the index of the first rejected token, or
    ``len(token_ids)`` if all are accepted but the matcher is not terminated (with
    ``require_termination``: the sequence must end with an accepted stop token), else None."""
    m = GrammarMatcher(compiled)
    ids = [int(t) for t in token_ids]
    for i, t in enumerate(ids):
        if not m.accept_token(t):
            return i
    if require_termination and not m.is_terminated():
        return len(ids)
    return None


def greedy_token_ids(tokenizer_info: TokenizerInfo, data: bytes) -> list[int]:
    """Token ids spelling ``data`` by greedy longest match over the decoded vocabulary (special tokens never
    used; the lowest id wins among equal spellings). Not the model's own segmentation, but every id decodes to
    exactly ``data``: what a mask test needs."""
    table: dict[bytes, int] = {}
    specials = set(tokenizer_info.special_token_ids)
    for tid, spelled in enumerate(tokenizer_info.decoded_vocab):
        if spelled and tid not in specials:
            table.setdefault(spelled, tid)
    lengths = sorted({len(b) for b in table}, reverse=True)
    ids, i = [], 0
    while i < len(data):
        for n in lengths:
            tid = table.get(data[i:i + n])
            if tid is not None:
                ids.append(tid)
                i += n
                break
        else:
            raise ValueError(f"greedy_token_ids: no token spells byte {data[i]:#04x} at offset {i}")
    return ids


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
    if matcher.is_terminated():  # it accepts no token, so it has no mask to fill (fill_next_token_bitmask raises)
        got[...] = 0
    else:
        matcher.fill_next_token_bitmask(got)
    want = oracle_bitmask(matcher)
    g, w = set(bitmask_to_ids(got[0], v).tolist()), set(bitmask_to_ids(want, v).tolist())
    return np.array(sorted(g - w)), np.array(sorted(w - g))


def check_masks_along(compiled: CompiledGrammar, data: str | bytes, *, rng=None) -> int:
    """Feeds ``data`` token by token and asserts, before every token and at the end, that the mask equals the
    token-by-token oracle (:func:`mask_oracle_diff`).

    Parameters
    ----------
    compiled : CompiledGrammar
        The grammar; ``data`` must be a sentence of it or a prefix of one.
    data : str or bytes
        The text to walk (``str`` is UTF-8 encoded).
    rng : random.Random, optional
        Picks each token among those that spell the text at the current offset; by default the longest one
        (lowest id among equals).

    Returns
    -------
    int
        The number of tokens fed.

    Raises
    ------
    AssertionError
        At the first step where mask and oracle differ (naming both differences), or when a token that spells
        the text is rejected.
    """
    data = data.encode() if isinstance(data, str) else data
    vocab = compiled.tokenizer_info.decoded_vocab
    specials = set(compiled.tokenizer_info.special_token_ids)
    matcher = GrammarMatcher(compiled)
    pos = steps = 0
    while True:
        extra, missing = mask_oracle_diff(matcher)
        assert len(extra) == 0 and len(missing) == 0, (
            f"step {steps} after {data[:pos]!r}: mask allows {extra[:10].tolist()} the oracle forbids, forbids "
            f"{missing[:10].tolist()} the oracle allows")
        if pos == len(data):
            return steps
        fits = [i for i, t in enumerate(vocab) if t and i not in specials and data.startswith(t, pos)]
        assert fits, f"no token spells {data[pos:pos + 8]!r} at offset {pos}"
        token = rng.choice(fits) if rng is not None else max(fits, key=lambda i: (len(vocab[i]), -i))
        assert matcher.accept_token(token), f"token {token} ({vocab[token]!r}) at offset {pos} rejected"
        pos += len(vocab[token])
        steps += 1


try:  # absltest helpers are optional (absl-py is a test extra)
    from absl.testing import absltest as _absltest

    class GrammarTestCase(_absltest.TestCase):
        """absltest base class with grammar assertions."""

        def assertGrammarAccepts(self, grammar, s, **kw):  # noqa: N802 (absltest style)
            self.assertTrue(is_grammar_accept_string(grammar, s, **kw), f"grammar should accept {s!r}")

        def assertGrammarRejects(self, grammar, s, **kw):  # noqa: N802
            self.assertFalse(is_grammar_accept_string(grammar, s, **kw), f"grammar should reject {s!r}")

        def assertTokensAccepted(self, compiled, token_ids, *, require_termination=True):  # noqa: N802
            """Every token is accepted in order (and, by default, the sequence ends with a stop token)."""
            at = first_rejected_token(compiled, token_ids, require_termination=require_termination)
            ids = [int(t) for t in token_ids]
            if at is not None:
                what = "the matcher is not terminated at the end" if at == len(ids) else f"token {ids[at]} is rejected"
                self.fail(f"token sequence not accepted at index {at} of {len(ids)}: {what}; sequence {ids[:64]}")

        def assertTokensRejected(self, compiled, token_ids, *, require_termination=True):  # noqa: N802
            """Some token is rejected (or, by default, the sequence does not terminate)."""
            if first_rejected_token(compiled, token_ids, require_termination=require_termination) is None:
                self.fail(f"token sequence should be rejected: {[int(t) for t in token_ids][:64]}")

        def assertBitmaskEqual(self, got, want, vocab_size: int):  # noqa: N802
            """Two packed bitmask rows (or batches) allow the same tokens; the message lists the differences."""
            got, want = np.atleast_2d(np.asarray(got)), np.atleast_2d(np.asarray(want))
            self.assertEqual(got.shape[0], want.shape[0], "bitmasks have different numbers of rows")
            for r in range(got.shape[0]):
                g = set(bitmask_to_ids(got[r], vocab_size).tolist())
                w = set(bitmask_to_ids(want[r], vocab_size).tolist())
                self.assertEqual((sorted(g - w)[:20], sorted(w - g)[:20]), ([], []),
                                 f"row {r}: bitmask differs (extra allowed, missing)")

        def assertMaskMatchesOracle(self, matcher: GrammarMatcher):  # noqa: N802
            extra, missing = mask_oracle_diff(matcher)
            self.assertEqual((extra.tolist()[:20], missing.tolist()[:20]), ([], []),
                             "mask != token oracle (allowed-but-forbidden, forbidden-but-allowed)")
except ImportError:  # pragma: no cover
    GrammarTestCase = None  # type: ignore[assignment]
