"""Repetition-state compression (issue 4): ``x{m,n}``, ``maxItems`` and ``maxLength`` with large bounds keep the
count in the parser state instead of unrolling, so the grammar's states do not grow with the bound, and every
mask still equals the token-by-token oracle, including at bound - 1, bound and bound + 1.

Two vocabularies: a small synthetic one (tokens of at most 4 bytes, so a walk of a few dozen steps crosses every
count class of the mask cache: below min, near min, free, near max) for whole walks, and GPT-2 (a real one;
skipped when its package is missing) at the bounds of the issue's large examples. Compile time is measured by
``benchmarks/repetition.py``, not here."""

from __future__ import annotations

import json
import random

import pytest

import xg2jax as xgr
from real_vocabularies import require
from xg2jax.testing import check_masks_along, mask_oracle_diff

# Tokens of 1..4 bytes over the letters the grammars use, plus JSON punctuation; id 0 is the stop token.
_PIECES = ["a", "b", "c", ",", "[", "]", '"', "1", " ", "x", "y", "(", ")", "z", "\\", "n"]


def _small_tokenizer() -> xgr.TokenizerInfo:
    rng = random.Random(3)
    vocab = {p for p in _PIECES}
    while len(vocab) < 400:
        vocab.add("".join(rng.choice(_PIECES[:8]) for _ in range(rng.randint(2, 4))))
    return xgr.TokenizerInfo(["</s>"] + sorted(vocab), stop_token_ids=[0])


SMALL_CASES = {
    # name: (kind, source, text walked through (a valid sentence or prefix of one))
    "ebnf_ambiguous_items": ("ebnf", 'root ::= "[" ("a" | "ab" | "b"){40,45} "]"', "[" + "ab" * 21 + "a]"),
    "ebnf_counted_at_max": ("ebnf", 'root ::= "x" ("a" | "bb"){0,45} "y"', "x" + "a" * 45 + "y"),
    "ebnf_nested": ("ebnf", 'root ::= ("a"{0,40} ","){2,36}', ("a" * 38 + ",") * 3),
    "ebnf_unbounded_big_min": ("ebnf", 'root ::= "a"{40,} "b"', "a" * 55 + "b"),
    "string_min_max_length": ("schema", {"type": "string", "minLength": 40, "maxLength": 50}, '"' + "ab" * 25 + '"'),
    "string_with_escapes": ("schema", {"type": "string", "maxLength": 45}, '"' + "a\\nb" * 14 + "abc" + '"'),
    "array_max_items": ("schema", {"type": "array", "items": {"type": "integer"}, "minItems": 35, "maxItems": 40},
                        "[" + ", ".join(["1"] * 40) + "]"),
}


@pytest.mark.parametrize("name", sorted(SMALL_CASES))
def test_mask_equals_oracle_at_every_step_across_count_classes(name):
    kind, source, text = SMALL_CASES[name]
    compiler = xgr.GrammarCompiler(_small_tokenizer())
    if kind == "ebnf":
        compiled = compiler.compile_grammar(source)
    else:
        compiled = compiler.compile_json_schema(json.dumps(source), any_whitespace=False)
    # Counted: the unrolled form of these bounds has more than 35 scannable states.
    assert compiled.num_scannable_states < 30, compiled.num_scannable_states
    steps = check_masks_along(compiled, text)
    assert steps >= 10


LARGE_CASES = {
    # name: (compile, the prefix with n items, bound)
    "ebnf_x_0_100000": (lambda c: c.compile_grammar('root ::= "a"{0,100000}'), lambda n: "a" * n, 100_000),
    "max_items_100000": (
        lambda c: c.compile_json_schema(json.dumps({"type": "array", "items": {"type": "integer"}, "maxItems": 100_000}),
                                        any_whitespace=False),
        lambda n: "[" + ", ".join(["1"] * n), 100_000),
    "max_length_10000": (lambda c: c.compile_json_schema(json.dumps({"type": "string", "maxLength": 10_000})),
                         lambda n: '"' + "ab" * (n // 2) + "c" * (n % 2), 10_000),
}


@pytest.fixture(scope="module")
def gpt2_compiler():
    return xgr.GrammarCompiler(xgr.TokenizerInfo.from_loaded_vocab(require("gpt2")))


@pytest.mark.parametrize("name", sorted(LARGE_CASES))
def test_large_bounds_compile_to_few_states_and_masks_are_exact_at_the_bound(name, gpt2_compiler):
    compile_fn, prefix, bound = LARGE_CASES[name]
    compiled = compile_fn(gpt2_compiler)
    # The unrolled form had one state per position (100,000 here); the counted form has a handful.
    assert compiled.num_scannable_states < 40, compiled.num_scannable_states
    for n in (bound - 1, bound):
        matcher = xgr.GrammarMatcher(compiled)
        assert matcher.accept_string(prefix(n)), f"{n} items rejected"
        extra, missing = mask_oracle_diff(matcher)
        assert len(extra) == 0 and len(missing) == 0, (n, extra[:10], missing[:10])
    matcher = xgr.GrammarMatcher(compiled)
    assert not matcher.accept_string(prefix(bound + 1)), f"{bound + 1} items accepted"


def test_counted_grammar_prints_and_parses_back():
    grammar = xgr.Grammar.from_ebnf('root ::= "[" ("a" | "bc"){0,5000} "]"')
    text = str(grammar.normalized())
    again = xgr.Grammar.from_ebnf(text)
    assert str(again.normalized()) == text
    tok = _small_tokenizer()
    compiled = xgr.GrammarCompiler(tok).compile_grammar(text)
    assert compiled.num_scannable_states < 10
    matcher = xgr.GrammarMatcher(compiled)
    assert matcher.accept_string("[" + "abc" * 1000 + "]")
    assert matcher.is_completed()
