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
    with pytest.raises(ValueError, match="max_tokens together with lazy is only supported"):
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


# -- a budget on a suffix / stop rule closes its body without the marker -----------------------------------------------
# 0 "a"  1 "b"  2 "!"  3 "a!"  4 ">"  5 "!!"  6 "ab"
_MARK_TOK = xgr.TokenizerInfo(["a", "b", "!", "a!", ">", "!!", "ab"])


def _lark_matcher(lark: str, tokenizer_info=_MARK_TOK):
    compiled = xgr.GrammarCompiler(tokenizer_info, cache_enabled=False).compile_grammar(
        xgr.Grammar.from_lark(lark, tokenizer_info=tokenizer_info))
    return xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)


@pytest.mark.parametrize("attribute, outer", [("suffix", b"a!>"), ("stop", b"a>")])
def test_suffix_budget_closes_the_body_or_the_marker_comes_first(attribute, outer):
    lark = (f'start[capture="all"]: value ">"\n'
            f'value[max_tokens=2, capture="body", {attribute}="!", stop_capture="marker"]: /[ab]*/')
    m = _lark_matcher(lark)
    assert m.accept_token(3)  # "a!": the marker first
    assert _allowed(m) == [4]
    assert m.accept_token(4) and m.is_terminated()
    assert m.get_captures() == [("marker", b"!"), ("body", b"a"), ("all", outer)]
    m = _lark_matcher(lark)
    assert m.accept_token(0)
    assert _allowed(m) == [0, 1, 2, 3, 6]  # one token read: the body goes on, or its marker (once: not "!!")
    assert m.accept_token(1)  # two tokens: the budget closes the body "ab" (no marker)
    assert _allowed(m) == [4]
    assert not m.accept_token(2)  # a rejected token leaves the closed state as it was
    assert _allowed(m) == [4]
    forked = m.fork()
    for candidate in (m, forked):
        assert candidate.accept_token(4) and candidate.is_terminated()
        assert candidate.get_captures() == [("body", b"ab"), ("all", b"ab>")]
    m.rollback(2)  # back across the close: the marker may come again
    assert m.accept_token(2) and m.accept_token(4) and m.is_terminated()
    assert m.get_captures() == [("marker", b"!"), ("body", b"a"), ("all", b"a!>" if attribute == "suffix" else b"a>")]


def test_suffix_budget_waits_for_a_marker_begun_and_never_runs_past_the_first_marker():
    # A marker in progress at the budget is finished (the body cannot end inside it).
    m = _lark_matcher('start: value ">"\nvalue[max_tokens=1, suffix=END]: /[ab]*/\nEND: /!!+/')
    assert m.accept_token(3)  # "a!"
    assert _allowed(m) == [2]  # "!" ends the marker "!!" (its first match: not "!!!")
    assert m.accept_token(2) and _allowed(m) == [4]
    # Any text as the body: the first marker ends the rule, so a budget cannot close a body holding it.
    m = _lark_matcher('start: value ">" value ">"\nvalue[max_tokens=2, suffix="!"]: TEXT\nTEXT: /(\\n|.)*/')
    assert m.accept_token(3) and _allowed(m) == [4]  # "a!" ends the first value: not "!" again, nor "a"
    assert m.accept_token(4) and m.accept_token(0) and m.accept_token(0)  # the second one's budget closes it at "aa"
    assert _allowed(m) == [4]
    assert m.accept_token(4) and m.is_terminated()


def test_lazy_budget_closes_before_its_marker():
    m = _lark_matcher('start: head ">"\nhead[max_tokens=2, lazy, capture]: TEXT "!"\nTEXT: /(\\n|.)*/')
    assert m.accept_token(0) and m.accept_token(1)
    assert _allowed(m) == [4]
    assert m.accept_token(4) and m.get_captures() == [("head", b"ab")]


def test_budget_gates_random_walks_equal_the_oracle():
    import random

    rng = random.Random(7)
    bodies = ["/[ab]*/", "/a*b?/", "TEXT", '"a" /[ab]*/', "/(ab)+/"]
    markers = ['"!"', '"!!"', "/!+/", '"b!"']
    walked = 0
    for _ in range(40):
        attribute = rng.choice(["suffix", "stop"])
        lark = (f'start: "<" value ">" value? ">"\nvalue[max_tokens={rng.randint(1, 3)}, {attribute}='
                f'{rng.choice(markers)}, capture]: {rng.choice(bodies)}\nTEXT: /[ab!]*/')
        m = _lark_matcher(lark, xgr.TokenizerInfo(["a", "b", "!", "a!", ">", "!!", "ab", "<", "b!>", "<a"]))
        for _ in range(12):
            if m.is_terminated():
                break
            allowed = _allowed(m)  # checks the mask against the oracle
            if not allowed:
                break
            before = m.get_captures(deduplicate=False)
            assert m.accept_token(rng.choice(allowed)), lark
            walked += 1
            if rng.random() < 0.25:
                m.rollback(1)
                assert m.get_captures(deduplicate=False) == before, lark
    assert walked > 200


def test_budget_gate_in_ebnf():
    g = 'root ::= r ">"\nr[max_tokens=2] ::= "a" | [ab]* BudgetSpent()'
    assert "BudgetSpent()" in str(xgr.Grammar.from_ebnf(g))
    assert str(xgr.Grammar.from_ebnf(str(xgr.Grammar.from_ebnf(g)))) == str(xgr.Grammar.from_ebnf(g))
    m = _matcher(g, _MARK_TOK)
    assert _allowed(m) == [0, 1, 6]  # r is "a", or a closed run of a / b
    assert m.accept_token(1) and _allowed(m) == [0, 1, 6]  # "b": one token
    assert m.accept_token(0) and _allowed(m) == [4]  # "ba": spent, the gate opens, the budget closes r
