"""Token budgets (EBNF ``r[max_tokens=n] ::=``, Lark ``r[max_tokens=n]:``): an occurrence of ``r`` that has read n
accepted tokens ends at the first token boundary where it can (masks and ``accept_token`` agree); strings given to
``accept_string`` are not counted; nested budgets combine; a budget follows the derivation, not the rule; rollback,
reset and fork keep it in step."""

from __future__ import annotations

import pytest

import xg2jax as xgr
from xg2jax.testing import bitmask_to_ids, check_masks_along, mask_oracle_diff

# 0 "ab "  1 "cd"  2 " "  3 "</t>"  4 "1"  5 "<t>"  6 "x"
_TOK = xgr.TokenizerInfo(["ab ", "cd", " ", "</t>", "1", "<t>", "x"])
_WORDS = 'root ::= "<t>" r "</t>" "1"\nr[max_tokens=2] ::= ([a-z]* " ")+'


def _matcher(ebnf: str, tokenizer_info=_TOK, **kwargs):
    compiled = xgr.GrammarCompiler(tokenizer_info, cache_enabled=False).compile_grammar(ebnf)
    return xgr.GrammarMatcher(compiled, terminate_without_stop_token=True, **kwargs)


def _allowed(m) -> list[int]:
    bitmask = xgr.allocate_token_bitmask(1, m.vocab_size)
    m.fill_next_token_bitmask(bitmask)
    extra, missing = mask_oracle_diff(m)
    assert len(extra) == 0 and len(missing) == 0  # the mask is what accept_token accepts
    return bitmask_to_ids(bitmask[0], m.vocab_size).tolist()


def test_prints_back():
    g = xgr.Grammar.from_ebnf('root ::= r "z"\nr[max_tokens=3, capture="c"] ::= [a-z]*')
    assert 'r[max_tokens=3, capture="c"] ::=' in str(g)
    assert str(xgr.Grammar.from_ebnf(str(g))) == str(g)


def test_any_text_budget_is_exact():
    m = _matcher('root ::= r "<t>"\nr[max_tokens=3] ::= [\\u0000-\\U0010ffff]*')
    for t in [0, 1, 2]:
        assert _allowed(m) == [0, 1, 2, 3, 4, 5, 6]
        assert m.accept_token(t)
    assert _allowed(m) == [5]
    assert not m.accept_token(0)  # the occurrence has ended
    assert m.accept_token(5) and m.is_terminated()


def test_closes_at_the_first_boundary_where_it_can():
    m = _matcher(_WORDS)
    assert m.accept_token(5) and m.accept_token(0) and m.accept_token(0)
    assert _allowed(m) == [3]
    m = _matcher(_WORDS)
    assert m.accept_token(5) and m.accept_token(1) and m.accept_token(1)
    allowed = _allowed(m)  # mid-word: the occurrence cannot end yet, so it goes on
    assert 3 not in allowed and 1 in allowed and 2 in allowed
    assert m.accept_token(6) and m.accept_token(2)
    assert _allowed(m) == [3]


def test_strings_are_not_counted():
    m = _matcher(_WORDS)
    assert m.accept_string("<t>ab ab ab ab ")
    assert 0 in _allowed(m)
    assert m.accept_token(0) and m.accept_token(0)
    assert _allowed(m) == [3]


def test_nested_budgets_and_occurrences():
    m = _matcher('root ::= a "1"\na[max_tokens=3] ::= "x" b\nb[max_tokens=9] ::= ([a-z]* " ")+')
    for t in [6, 0, 0]:
        assert m.accept_token(t)
    assert _allowed(m) == [4]
    m = _matcher('root ::= r+ "1"\nr[max_tokens=2] ::= [a-z]+ " "')
    for _ in range(5):  # each occurrence has its own budget
        assert m.accept_token(0)
    assert 0 in _allowed(m)


def test_a_budget_follows_the_derivation():
    m = _matcher('root ::= a " " b\na[max_tokens=1] ::= sub\nb ::= sub\nsub ::= [a-z] sub | [a-z]')
    assert m.accept_token(1)
    assert _allowed(m) == [2]
    assert m.accept_token(2) and m.accept_token(1) and m.accept_token(1) and m.accept_token(6)
    assert m.is_completed()


def test_rollback_reset_fork():
    m = _matcher(_WORDS)
    for t in [5, 0, 0]:
        assert m.accept_token(t)
    forked = m.fork()
    assert m.accept_token(3)
    m.rollback(2)  # back before the second "ab ": one token read
    assert 0 in _allowed(m)
    assert m.accept_token(1) and m.accept_token(2)
    assert _allowed(m) == [3]
    assert _allowed(forked) == [3]
    m.reset()
    assert m.accept_token(5) and m.accept_token(0) and 0 in _allowed(m)


def test_lark_budget_and_errors():
    g = xgr.Grammar.from_lark('start: r "<t>"\nr[max_tokens=2]: TEXT\nTEXT: /(\\n|.)*/')
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(_TOK).compile_grammar(g), terminate_without_stop_token=True)
    assert m.accept_token(0) and m.accept_token(1)
    assert _allowed(m) == [5]
    with pytest.raises(ValueError, match="max_tokens together with lazy, suffix or stop"):
        xgr.Grammar.from_lark('start: r\nr[max_tokens=2, lazy]: /[a-z]+/')


@pytest.mark.parametrize("ebnf, message", [
    ('root ::= r\nr[max_tokens=0] ::= "a"', "max_tokens must be positive"),
    ('root ::= r\nr[max_tokens=1, max_tokens=2] ::= "a"', "max_tokens attribute is specified more than once"),
])
def test_bad_attributes(ebnf, message):
    with pytest.raises(ValueError, match=message):
        xgr.Grammar.from_ebnf(ebnf)


def test_masks_equal_the_token_oracle_on_a_real_vocabulary():
    from real_vocabularies import require

    vocab = require("gemma3")
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo.from_loaded_vocab(vocab)).compile_grammar(
        'root ::= "<think>" r "</think>" [a-z ]*\nr[max_tokens=4] ::= [a-z ]*')
    check_masks_along(compiled, "<think>the quick brown fox</think>jumps")


def test_a_budget_on_the_root_ends_the_output():
    g = xgr.Grammar.from_ebnf('root[max_tokens=2, temperature=0.5] ::= [a-z ]*')
    assert "root[max_tokens=2, temperature=0.5] ::=" in str(g)
    normalized = str(g.normalized())
    assert str(xgr.Grammar.from_ebnf(normalized).normalized()) == normalized
    m = _matcher(g)
    assert m.accept_token(0) and m.accept_token(1)
    assert _allowed(m) == [] and m.is_completed()
    assert not m.accept_token(6)
