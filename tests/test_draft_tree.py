"""GrammarMatcher.traverse_draft_tree: one mask per node of a speculative-decoding draft tree, each equal to the
mask of a fresh matcher fed the node's path; rejected, invalid and terminated nodes (and their subtrees) get zero
rows; the matcher itself is left unchanged; bad arrays raise InputError (a ValueError and a RuntimeError)."""

from __future__ import annotations

import numpy as np
import pytest

import xg2jax as xgr

VOCAB = [b"a", b"b", b"c", b"{", b"}", b'"', b":", b",", b" ", b"true", b"false", b"null"]


@pytest.fixture(scope="module")
def compiled():
    tok = xgr.TokenizerInfo(VOCAB, stop_token_ids=[])
    return xgr.GrammarCompiler(tok).compile_builtin_json_grammar()


def tree(children: dict[int, list[int]], tokens: list[int]):
    """(next_token, next_sibling, draft_tokens) as int64 arrays from a children map."""
    n = len(tokens)
    first, sibling = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    for parent, kids in children.items():
        first[parent] = kids[0]
        for a, b in zip(kids, kids[1:]):
            sibling[a] = b
    return first, sibling, np.array(tokens, np.int64)


def path_mask(compiled, path: list[int]) -> np.ndarray:
    m = xgr.GrammarMatcher(compiled)
    for t in path:
        assert m.accept_token(t)
    out = xgr.allocate_token_bitmask(1, len(VOCAB))
    m.fill_next_token_bitmask(out)
    return out[0]


def test_each_row_is_the_mask_after_the_nodes_path(compiled):
    # 0 -> 1 ("{") -> 2 ("\"") -> 3 ("a"); 1 -> 4 ("}"); 0 -> 5 ("true": the builtin JSON grammar's root is an
    # object or an array, so rejected)
    first, sibling, tokens = tree({0: [1, 5], 1: [2, 4], 2: [3]}, [0, 3, 5, 0, 4, 9])
    matcher = xgr.GrammarMatcher(compiled)
    rows = xgr.allocate_token_bitmask(6, len(VOCAB))
    assert matcher.traverse_draft_tree(first, sibling, tokens, rows) is True
    paths = {0: [], 1: [3], 2: [3, 5], 3: [3, 5, 0], 4: [3, 4]}
    for node, path in paths.items():
        np.testing.assert_array_equal(rows[node], path_mask(compiled, path), err_msg=f"node {node}")
    assert not rows[5].any()
    assert matcher.accept_token(3)  # the matcher itself did not move


def test_rejected_and_invalid_tokens_zero_their_subtrees(compiled):
    # 0 -> 1 ("{") -> 2 ("a": rejected after "{") -> 3; 1 -> 4 (id 100: invalid) ; 1 -> 5 ("\"")
    first, sibling, tokens = tree({0: [1], 1: [2, 4, 5], 2: [3]}, [0, 3, 0, 5, 100, 5])
    rows = xgr.allocate_token_bitmask(6, len(VOCAB))
    assert xgr.GrammarMatcher(compiled).traverse_draft_tree(first, sibling, tokens, rows)
    assert not rows[2].any() and not rows[3].any() and not rows[4].any()
    np.testing.assert_array_equal(rows[5], path_mask(compiled, [3, 5]))


def test_terminated_nodes_get_zero_rows():
    tok = xgr.TokenizerInfo([b"a", b"b"], stop_token_ids=[])
    compiled = xgr.GrammarCompiler(tok).compile_grammar('root ::= "a"')
    matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
    first, sibling, tokens = tree({0: [1], 1: [2]}, [0, 0, 1])
    rows = xgr.allocate_token_bitmask(3, 2)
    assert matcher.traverse_draft_tree(first, sibling, tokens, rows)
    assert rows[0].any() and not rows[1].any() and not rows[2].any()


def test_temperatures_and_timeout(compiled):
    first, sibling, tokens = tree({0: [1]}, [0, 3])
    rows = xgr.allocate_token_bitmask(2, len(VOCAB))
    temps = np.zeros(2, np.float32)
    assert xgr.GrammarMatcher(compiled).traverse_draft_tree(first, sibling, tokens, rows, time_threshold=60.0,
                                                            temperatures=temps)
    np.testing.assert_array_equal(temps, [-1.0, -1.0])


@pytest.mark.parametrize("change, message", [
    (lambda t: (t[0], t[1][:2], t[2], t[3]), "same length"),
    (lambda t: (t[0], t[1].astype(np.int32), t[2], t[3]), "retrieve_next_sibling must be a 1-D int64 array"),
    (lambda t: (t[0], t[1], t[2], t[3][0]), "token_bitmask must be an int32 array of shape"),
    (lambda t: (t[0], t[1], t[2], t[3][:2]), r"shape \(3, words\)"),
    (lambda t: (t[0], np.array([1, -1, -1], np.int64), t[2], t[3]), "the root \\(node 0\\) cannot have a sibling"),
    (lambda t: (np.array([7, -1, -1], np.int64), t[1], t[2], t[3]), "node indices"),
])
def test_bad_arrays_raise(compiled, change, message):
    args = change((np.array([1, 2, -1], np.int64), np.full(3, -1, np.int64), np.array([3, 6, 4], np.int64),
                   xgr.allocate_token_bitmask(3, len(VOCAB))))
    with pytest.raises(xgr.InputError, match=message) as info:
        xgr.GrammarMatcher(compiled).traverse_draft_tree(*args)
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, ValueError)
