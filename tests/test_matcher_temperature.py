"""xgrammar's temperature API on GrammarMatcher: ``default_temperature`` (checked, stored as float32), rule
temperatures (EBNF ``name[temperature=T] ::=``, Lark ``name[temperature=T]:``), the ``temperature`` property (the
innermost tempered rule of each path the next token can take, the largest over the paths, the default for a path in
none), ``BatchGrammarMatcher.batch_fill_temperature`` and the temperatures ``traverse_draft_tree`` fills."""

from __future__ import annotations

import math

import numpy as np
import pytest

import xg2jax as xgr

_TOK = xgr.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])


def _compiled():
    return xgr.GrammarCompiler(_TOK).compile_grammar('root ::= "a" "b"?')


def test_default_temperature():
    assert xgr.GrammarMatcher(_compiled()).temperature is None
    m = xgr.GrammarMatcher(_compiled(), default_temperature=0.3)
    assert m.temperature == float(np.float32(0.3))
    assert m.accept_token(0) and m.temperature == pytest.approx(0.3)
    assert m.fork().temperature == m.temperature


@pytest.mark.parametrize("bad", [-0.1, math.inf, -math.inf, math.nan])
def test_invalid_default_temperature(bad):
    with pytest.raises(ValueError, match="finite non-negative"):
        xgr.GrammarMatcher(_compiled(), default_temperature=bad)


def test_batch_fill_temperature():
    with_t = xgr.GrammarMatcher(_compiled(), default_temperature=0.5)
    without = xgr.GrammarMatcher(_compiled())
    temps = np.zeros(3, dtype=np.float32)
    xgr.BatchGrammarMatcher.batch_fill_temperature([with_t, without], temps, indices=[2, 0])
    np.testing.assert_array_equal(temps, [-1.0, 0.0, 0.5])
    for indices, message in (([0], "indices size"), ([0, 3], "out of bounds")):
        with pytest.raises(ValueError, match=message):
            xgr.BatchGrammarMatcher.batch_fill_temperature([with_t, without], temps, indices=indices)
    with pytest.raises(ValueError, match="temperatures tensor"):
        xgr.BatchGrammarMatcher.batch_fill_temperature([with_t], np.zeros(3, dtype=np.float64))


def test_traverse_draft_tree_fills_the_default_temperature():
    m = xgr.GrammarMatcher(_compiled(), default_temperature=0.25)
    child = np.array([1, -1, -1], dtype=np.int64)
    sibling = np.array([-1, 2, -1], dtype=np.int64)
    tokens = np.array([0, 0, 1], dtype=np.int64)  # node 1 ("a") is accepted, node 2 ("b") is not
    bitmask = np.zeros((3, 1), dtype=np.int32)
    temps = np.zeros(3, dtype=np.float32)
    assert m.traverse_draft_tree(child, sibling, tokens, bitmask, temperatures=temps)
    np.testing.assert_array_equal(temps, [0.25, 0.25, -1.0])
    with pytest.raises(ValueError, match="temperatures tensor"):
        m.traverse_draft_tree(child, sibling, tokens, bitmask, temperatures=np.zeros(3, dtype=np.float64))


_VOCAB = xgr.TokenizerInfo(["a", "b", "x", "z", " ", "</s>"], stop_token_ids=[5])


def _matcher(grammar: str, lark: bool = False, default=0.1) -> xgr.GrammarMatcher:
    g = xgr.Grammar.from_lark(grammar, tokenizer_info=_VOCAB) if lark else xgr.Grammar.from_ebnf(grammar)
    return xgr.GrammarMatcher(xgr.GrammarCompiler(_VOCAB).compile_grammar(g), default_temperature=default)


def _f32(x: float) -> float:
    return float(np.float32(x))


def _walk(m: xgr.GrammarMatcher, steps) -> list:
    """The temperature before the first step and after each string of `steps`."""
    out = [m.temperature]
    for text in steps:
        assert m.accept_string(text), text
        out.append(m.temperature)
    return out


@pytest.mark.parametrize("lark", [False, True])
def test_rule_temperature_holds_while_the_next_token_is_read_inside_the_rule(lark):
    grammar = ('start: "a" value "z"\nvalue[temperature=0.6]: /x+/' if lark else
               'root ::= "a" value "z"\nvalue[temperature=0.6] ::= "x"+')
    # After "xx" the next token is an "x" of value (0.6) or the "z" of the root (the default): the larger wins.
    assert _walk(_matcher(grammar, lark), ["a", "xx", "z"]) == [_f32(0.1), _f32(0.6), _f32(0.6), _f32(0.1)]
    assert _walk(_matcher(grammar, lark, default=None), ["a", "xx", "z"]) == [None, _f32(0.6), _f32(0.6), None]


def test_innermost_rule_temperature_wins_and_ambiguous_paths_take_the_largest(capfd):
    nested = _matcher('root ::= "a" outer "z"\nouter[temperature=0.6] ::= "b" inner "b"\n'
                      'inner[temperature=0.3] ::= "x"+')
    # After "b x" the next token is another "x" of inner (0.3) or the closing "b" of outer (0.6).
    assert _walk(nested, ["a", "b", "x", "x", "b", "z"]) == [_f32(0.1), _f32(0.6), _f32(0.3), _f32(0.6), _f32(0.6),
                                                             _f32(0.1), _f32(0.1)]
    warning = "Multiple active grammar paths specify different temperatures"
    assert capfd.readouterr().err.count(warning) == 1  # once per matcher, however often the paths disagree
    ambiguous = _matcher('start: left | right\nleft[temperature=0.2]: /a+/\nright[temperature=0.9]: "ab"', lark=True)
    assert _walk(ambiguous, ["a", "a"]) == [_f32(0.9), _f32(0.9), _f32(0.2)]
    assert capfd.readouterr().err.count(warning) == 1


def test_rule_temperature_through_left_recursion_rollback_fork_and_reset():
    m = _matcher('root ::= list "z"\nlist ::= list "," item | item\nitem[temperature=0.7] ::= "x" | "a"')
    t = _f32(0.7)
    assert _walk(m, ["x"]) == [t, _f32(0.1)]  # after an item: "," or "z", both outside item
    assert m.accept_string(",") and m.temperature == t
    forked = m.fork()
    m.rollback(1)
    assert m.temperature == _f32(0.1) and forked.temperature == t
    m.reset()
    assert m.temperature == t


def test_rule_temperature_prints_parses_serializes_and_survives_the_cache():
    g = xgr.Grammar.from_ebnf('root ::= "a" v\nv[temperature=0.1] ::= "x"')
    assert "v[temperature=0.1] ::=" in str(g)
    assert str(xgr.Grammar.from_ebnf(str(g))) == str(g)
    restored = xgr.Grammar.deserialize_json(g.serialize_json())
    compiler = xgr.GrammarCompiler(_VOCAB, cache_enabled=True)
    for grammar in (g, restored, g):  # the second and third compile come from the cache
        m = xgr.GrammarMatcher(compiler.compile_grammar(grammar))
        assert m.temperature is None and m.accept_string("a") and m.temperature == _f32(0.1)
    cg = xgr.CompiledGrammar.deserialize_json(compiler.compile_grammar(g).serialize_json(), _VOCAB)
    m = xgr.GrammarMatcher(cg)
    assert m.accept_string("a") and m.temperature == _f32(0.1)


def test_lark_rule_temperature_with_ignore_subgrammars_and_named_grammars():
    ignore = _matcher('%import common.WS\n%ignore WS\nstart: hot "z"\nhot[temperature=0.6]: "x"', lark=True)
    # The blank after "x" is ignored text between two tokens, outside hot.
    assert _walk(ignore, ["x", " ", "z"]) == [_f32(0.6), _f32(0.1), _f32(0.1), _f32(0.1)]
    json_value = _matcher('start: "a" v "z"\nv[temperature=0.6]: %json {"type": "integer"}', lark=True)
    assert _walk(json_value, ["a", "1", "z"]) == [_f32(0.1), _f32(0.6), _f32(0.6), _f32(0.1)]
    item = xgr.Grammar.from_lark('start[temperature=0.3]: "x"')
    g = xgr.Grammar.from_lark('start: "a" v "z"\nv[temperature=0.6]: @item', named_grammars={"item": item})
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(_VOCAB).compile_grammar(g), default_temperature=0.1)
    assert _walk(m, ["a", "x"]) == [_f32(0.1), _f32(0.3), _f32(0.1)]


def test_batch_fill_and_draft_tree_use_rule_temperatures():
    tempered = _matcher('root ::= "a" v\nv[temperature=0.2] ::= "b"', default=0.8)
    plain = _matcher('root ::= "a" "b"', default=None)
    temps = np.zeros(2, dtype=np.float32)
    assert tempered.accept_string("a") and plain.accept_string("a")
    xgr.BatchGrammarMatcher.batch_fill_temperature([tempered, plain], temps)
    np.testing.assert_array_equal(temps, np.array([0.2, -1.0], dtype=np.float32))
    m = _matcher('root ::= "a" v\nv[temperature=0.2] ::= "b"', default=0.8)
    child = np.array([1, 2, -1], dtype=np.int64)
    sibling = np.array([-1, -1, -1], dtype=np.int64)
    tokens = np.array([0, 0, 1], dtype=np.int64)  # "a" (node 1), then "b" (node 2) ends the grammar
    bitmask = np.zeros((3, 1), dtype=np.int32)
    temps = np.zeros(3, dtype=np.float32)
    assert m.traverse_draft_tree(child, sibling, tokens, bitmask, temperatures=temps)
    np.testing.assert_array_equal(temps, np.array([0.8, 0.2, 0.8], dtype=np.float32))


def test_rule_temperature_errors():
    for text, message in (('root[temperature=-1] ::= "a"', "finite non-negative"),
                          ('root[temperature=1e999] ::= "a"', "finite non-negative"),
                          ('root[temperature=hot] ::= "a"', "expected a number after temperature="),
                          ('root[suffix="x", temperature=0.5] ::= "a"', "rule attribute 'suffix'")):
        with pytest.raises(ValueError, match=message):
            xgr.Grammar.from_ebnf(text)
    with pytest.raises(ValueError, match="only supported on terminals and subgrammars"):
        xgr.Grammar.from_lark('start: r\nr[temperature=0.5]: "a" s\ns: "b"')
