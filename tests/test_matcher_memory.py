"""Matcher memory: a bounded rollback window bounds the parse state, and compaction never changes a mask.

The Earley parse keeps one set per byte. Sets that no rollback can return to are only read as completion
origins, so the matcher compacts them (``EarleyParser::CompactSets``): memory then follows the open constructs of
the text, not its length. These tests check the bound (``GrammarMatcher.memory_size_bytes``, deterministic, not
RSS) and that a compacting matcher masks exactly as one that keeps everything, and as the token oracle.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import xg2jax
from xg2jax.testing import bitmask_to_ids, mask_oracle_diff

VOCAB = ['{', '}', '[', ']', ',', '"', 'a', '1', '"a"', '[1,', '1,', ' ', 'true', 'null', ': ', '{"k": ', '"k"',
         '("', 'b', '(', ')']
NESTED = r"""
root ::= "[" item ("," item)* "]"
item ::= "(" root? ")" | "a" | "b" item | string | number | "true" | "null" | object
object ::= "{" ( string ": " item ("," " "? string ": " item)* )? "}"
string ::= "\"" [a-k]* "\""
number ::= "-"? [1-9] [0-9]*
"""


@pytest.fixture(scope="module")
def compiler():
    info = xg2jax.TokenizerInfo(VOCAB + ["</s>"], stop_token_ids=[len(VOCAB)])
    return xg2jax.GrammarCompiler(info)


def _mask(m) -> np.ndarray:
    bm = xg2jax.allocate_token_bitmask(1, m.vocab_size)
    m.fill_next_token_bitmask(bm)
    return bm[0].copy()


def test_bounded_rollback_keeps_memory_flat(compiler):
    json_grammar = compiler.compile_builtin_json_grammar()
    sizes = {}
    for rollback in (-1, 5):
        m = xg2jax.GrammarMatcher(json_grammar, max_rollback_tokens=rollback)
        assert m.accept_token(VOCAB.index("["))
        for i in range(100_000):
            assert m.accept_token(VOCAB.index('"a"')) and m.accept_token(VOCAB.index(","))
            if i in (20_000, 99_999):
                sizes[rollback, i] = m.memory_size_bytes()
        m.rollback(4)  # the window is whole
        assert m.accept_token(VOCAB.index('"a"')) and m.accept_token(VOCAB.index("]")) and m.is_completed()
    # Unbounded rollback keeps every set (~200 bytes a token here); a window of 5 keeps the open array.
    assert sizes[-1, 99_999] > 4 * sizes[-1, 20_000] > 4_000_000, sizes
    assert sizes[5, 99_999] < 1_000_000 and sizes[5, 99_999] < 2 * sizes[5, 20_000] + 100_000, sizes


def test_long_accept_string_compacts_its_own_sets(compiler):
    """One accept_string is one rollback step: its inner sets are compacted while it runs, whatever the window;
    a string rejected at its end still leaves the matcher as it was."""
    json_grammar = compiler.compile_builtin_json_grammar()
    m = xg2jax.GrammarMatcher(json_grammar)  # unlimited rollback
    assert m.accept_string("[")
    before = _mask(m)
    body = '{"k": [1, "abc", true, null]}, ' * 150_000  # 4.5 MB
    assert not m.accept_string(body + "}")  # rejected at the last byte
    assert np.array_equal(_mask(m), before)
    assert m.memory_size_bytes() < 1_000_000
    assert m.accept_string(body)
    assert m.memory_size_bytes() < 16_000_000  # ~270 MB without compaction
    assert m.accept_string("1]") and m.is_completed()
    m.rollback(2)  # back before the long string: the set before it is whole
    assert np.array_equal(_mask(m), before)


@pytest.mark.parametrize("seed", range(3))
def test_compacted_matcher_masks_exactly(compiler, seed):
    """Long random walks (with rollbacks inside the window) on a nested grammar: a matcher with a 3-token window
    compacts many times and masks as one with unlimited rollback at every step, and as the token oracle."""
    grammar = compiler.compile_grammar(NESTED)
    rng = random.Random(seed)
    full = xg2jax.GrammarMatcher(grammar)
    window = xg2jax.GrammarMatcher(grammar, max_rollback_tokens=3)
    undoable = 0
    stop = len(VOCAB)
    for step in range(9_000):
        mask = _mask(full)
        assert np.array_equal(_mask(window), mask), f"seed {seed} step {step}"
        if step % 1_500 == 0:
            extra, missing = mask_oracle_diff(window)
            assert not len(extra) and not len(missing), (step, extra, missing)
        if undoable and rng.random() < 0.1:
            n = rng.randint(1, undoable)
            full.rollback(n)
            window.rollback(n)
            undoable -= n
            continue
        allowed = [t for t in bitmask_to_ids(mask, full.vocab_size).tolist() if t != stop]
        if not allowed:  # the root list closed
            break
        # Phases that open constructs and phases that close them, so completions reach back into sets compacted
        # since; the root list ("]") stays open.
        closing = 3.0 if (step // 700) % 2 else 0.3
        weights = [0.01 if VOCAB[t] == "]" else closing if VOCAB[t] in (")", "}") else 1.0 for t in allowed]
        t = rng.choices(allowed, weights)[0]
        assert full.accept_token(t) and window.accept_token(t)
        undoable = min(undoable + 1, 3)
    assert step > 3_000
    assert window.memory_size_bytes() * 2 < full.memory_size_bytes()


def test_rollback_window_is_used_up_by_rollbacks(compiler):
    """As in xgrammar: max_rollback_tokens bounds what can be undone in total until new tokens arrive."""
    m = xg2jax.GrammarMatcher(compiler.compile_builtin_json_grammar(), max_rollback_tokens=5)
    assert m.accept_token(VOCAB.index("["))
    for _ in range(5):
        assert m.accept_token(VOCAB.index("1,"))
    m.rollback(3)
    before = _mask(m)
    with pytest.raises(ValueError, match=r"cannot roll back 3 tokens, only the last 2 can be undone"):
        m.rollback(3)
    assert np.array_equal(_mask(m), before)
    with pytest.raises(ValueError, match=r"cannot roll back 6 tokens, max_rollback_tokens is 5"):
        m.rollback(6)
    m.rollback(2)
    assert m.accept_token(VOCAB.index("1,")) and m.accept_token(VOCAB.index("1,"))
    m.rollback(2)  # the two new ones
    with pytest.raises(ValueError, match="only the last 0 can be undone"):
        m.rollback(1)
