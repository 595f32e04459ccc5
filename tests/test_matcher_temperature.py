"""xgrammar's temperature API on GrammarMatcher: ``default_temperature`` (checked, stored as float32), the
``temperature`` property, ``BatchGrammarMatcher.batch_fill_temperature`` and the temperatures
``traverse_draft_tree`` fills. Rule temperatures are not built (a grammar with one raises), so a matcher's temperature
is its default."""

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


def test_rule_temperatures_are_not_built():
    with pytest.raises(ValueError, match="rule attribute 'temperature' is not supported"):
        xgr.Grammar.from_ebnf('root[temperature=0.5] ::= "a"')
    with pytest.raises(ValueError, match="finite non-negative"):
        xgr.Grammar.from_ebnf('root[temperature=-1] ::= "a"')
    with pytest.raises(ValueError, match="only supported on terminals and subgrammars"):
        xgr.Grammar.from_lark('start: r\nr[temperature=0.5]: "a" s\ns: "b"')
