"""Free text over tokens: `ExcludeToken(ids)` (one token, any but those), `TokenTagDispatch(...)` (whose free text
is tokens), the structural-tag formats `exclude_token` / `any_tokens` and Lark's `<[*]>` / `<[^...]>`.

The random test checks the engine against an independent reference (tests/random_grammars.Reference, a
character-level Earley recognizer sharing no code with it): every token t has two readings, its text and the
private-use character chr(PLACEHOLDER + t), and `ExcludeToken(E)` is the class of the placeholders of the ids
outside E. A token sequence is a valid prefix iff some choice of readings spells a valid prefix. Masks are checked
against the token-by-token oracle at every step.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import random_grammars as rg
import xg2jax as xgr
from real_vocabularies import require
from token_reference import compile_or_check_empty, walk_against_reference
from xg2jax.structural_tag import structural_tag_to_ebnf
from xg2jax.testing import bitmask_to_ids, mask_oracle_diff

PLACEHOLDER = 0xE000  # token t read as a token element is the character chr(PLACEHOLDER + t)
MARKER = 0xF000  # the k-th ExcludeToken of a grammar, in the text before it is spelled as ExcludeToken(...)


def with_exclude_tokens(ast: rg.GrammarAst, num_tokens: int, rng: random.Random):
    """Replaces some literals by ExcludeToken(E) with random E; returns (reference ast, EBNF text)."""
    placeholders = frozenset(chr(PLACEHOLDER + t) for t in range(num_tokens))
    spelled: dict[str, str] = {}

    def excluded_ids():
        ids = set(rng.sample(range(num_tokens), rng.randint(0, 4)))
        if rng.random() < 0.3:  # a run of ids: the automaton's range edges
            lo = rng.randrange(num_tokens)
            ids.update(range(lo, min(num_tokens, lo + rng.randint(2, 12))))
        return sorted(ids)

    def swap(n):
        kind = n[0]
        if kind == "lit" and rng.random() < 0.35:
            ids = excluded_ids()
            marker = chr(MARKER + len(spelled))
            spelled[marker] = f"ExcludeToken({', '.join(map(str, ids))})"
            allowed = placeholders - {chr(PLACEHOLDER + t) for t in ids}
            return ("cls", allowed, False), ("lit", marker)
        if kind == "cls" and n[2]:  # a negated class never reads a token element
            return ("cls", n[1] | placeholders, True), n
        if kind in ("seq", "alt"):
            pairs = [swap(c) for c in n[1]]
            return (kind, [p[0] for p in pairs]), (kind, [p[1] for p in pairs])
        if kind == "rep":
            ref, text = swap(n[1])
            return ("rep", ref, n[2], n[3]), ("rep", text, n[2], n[3])
        return n, n

    pairs = {name: swap(body) for name, body in ast.rules.items()}
    ref = rg.GrammarAst({name: p[0] for name, p in pairs.items()})
    text = rg.GrammarAst({name: p[1] for name, p in pairs.items()}).text()
    for marker, ebnf in spelled.items():
        text = text.replace(f'"{marker}"', ebnf)
    return ref, text


@pytest.mark.parametrize("seed", range(30))
def test_exclude_token_matches_the_reference(seed):
    rng = random.Random(seed)
    base = rg.gen_grammar(seed)
    vocab = rg.gen_vocab(base, seed, size=40)
    ast, text = with_exclude_tokens(base, len(vocab), rng)
    ref = rg.Reference(ast)
    compiled = compile_or_check_empty(xgr.TokenizerInfo(vocab + [b"</s>"], stop_token_ids=[len(vocab)]), text, ref)
    if compiled is not None:
        walk_against_reference(compiled, ref, vocab, rng, lambda t: _both_readings(vocab, t), text, steps=8)


def _both_readings(vocab, t):
    return (vocab[t].decode(), chr(PLACEHOLDER + t))  # every token is its text and a token element


@pytest.mark.parametrize("seed", range(25))
def test_token_tag_dispatch_matches_the_reference(seed):
    """TokenTagDispatch((t, root), ..., excludes=E) over a random grammar: free text is any token but the triggers
    and E (read as a token element), a trigger token always dispatches to the random grammar."""
    rng = random.Random(1000 + seed)
    base = rg.gen_grammar(seed)
    vocab = rg.gen_vocab(base, seed, size=40)
    placeholders = frozenset(chr(PLACEHOLDER + t) for t in range(len(vocab)))
    ids = rng.sample(range(len(vocab)), rng.randint(1, 5))
    triggers, excludes = ids[:rng.randint(1, min(2, len(ids)))], ids[2:]
    loop = rng.random() < 0.5

    def no_elements(n):  # a negated class never reads a token element
        if n[0] == "cls" and n[2]:
            return ("cls", n[1] | placeholders, True)
        if n[0] in ("seq", "alt"):
            return (n[0], [no_elements(c) for c in n[1]])
        if n[0] == "rep":
            return ("rep", no_elements(n[1]), n[2], n[3])
        return n

    free = ("cls", placeholders - {chr(PLACEHOLDER + t) for t in triggers + excludes}, False)
    tags = [("seq", [("lit", chr(PLACEHOLDER + t)), ("ref", "root")]) for t in triggers]
    body = ("rep", ("alt", [free] + tags), 0, None) if loop else \
        ("seq", [("rep", free, 0, None), ("alt", [("lit", "")] + tags)])
    ref = rg.Reference(rg.GrammarAst({**{k: no_elements(v) for k, v in base.rules.items()}, "droot": body},
                                     root="droot"))
    pairs = ", ".join(f"({t}, root)" for t in triggers)
    text = (base.text() + f"\ndroot ::= TokenTagDispatch({pairs}, loop_after_dispatch={str(loop).lower()}, "
            f"excludes=({', '.join(map(str, excludes))}))\n")
    compiled = compile_or_check_empty(xgr.TokenizerInfo(vocab + [b"</s>"], stop_token_ids=[len(vocab)]), text, ref,
                                      root="droot")
    if compiled is not None:
        walk_against_reference(compiled, ref, vocab, rng, lambda t: _both_readings(vocab, t), text, steps=8)


VOCAB = ["<s>", "</s>", "<tool>", "a", "b", "ab", "<end>", "x", "<bad>", "hello"]
STOP, TOOL, END, BAD = 1, 2, 6, 8


def small_tokenizer():
    return xgr.TokenizerInfo(VOCAB, stop_token_ids=[STOP], special_token_ids=[0, STOP, TOOL, END, BAD])


def allowed(m: xgr.GrammarMatcher) -> list[int]:
    bm = xgr.allocate_token_bitmask(1, len(VOCAB))
    m.fill_next_token_bitmask(bm, 0)
    return [int(i) for i in bitmask_to_ids(np.asarray(bm)[0], len(VOCAB))]


def test_exclude_token_reads_any_token_but_the_excluded_and_never_a_stop_token():
    compiled = xgr.GrammarCompiler(small_tokenizer()).compile_grammar('root ::= "a" ExcludeToken(3, 8) "b"')
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_token(3)
    # special tokens too, text tokens whatever their text; "a" and <bad> are excluded, </s> ends the output
    assert allowed(m) == [0, 2, 4, 5, 6, 7, 9]
    assert not m.fork().accept_token(8) and not m.fork().accept_token(STOP)
    assert m.accept_token(TOOL) and allowed(m) == [4]
    assert m.accept_token(4) and allowed(m) == [STOP]


def test_any_token_loop_until_a_token_end():
    compiled = xgr.GrammarCompiler(small_tokenizer()).compile_grammar(
        "root ::= Token(2) ExcludeToken(6, 8)* Token(6)")
    m = xgr.GrammarMatcher(compiled)
    assert allowed(m) == [TOOL]
    assert m.accept_token(TOOL)
    for t in (9, 0, 2, 3):
        assert allowed(m) == [0, 2, 3, 4, 5, 6, 7, 9]
        assert m.accept_token(t)
    assert not m.accept_token(BAD)
    assert m.accept_token(END) and allowed(m) == [STOP]


@pytest.mark.parametrize("text, printed", [
    ("root ::= ExcludeToken()", "root ::= ExcludeToken()"),
    ("root ::= ExcludeToken(9, 3, 3, 4)", "root ::= ExcludeToken(3, 4, 9)"),
    ('root ::= "x" ExcludeToken(1)*', 'root ::= "x" ExcludeToken(1)*'),
])
def test_exclude_token_prints_and_parses_back(text, printed):
    g = xgr.Grammar.from_ebnf(text)
    assert str(g).strip() == printed
    assert str(xgr.Grammar.from_ebnf(str(g))).strip() == printed


@pytest.mark.parametrize("text, fragment", [
    ("root ::= ExcludeToken(a)", "ExcludeToken(...) takes token ids"),
    ("root ::= ExcludeToken(1", "ExcludeToken"),
    ("root ::= ExcludeToken(-1)", "ExcludeToken(...) takes token ids"),
    ("root ::= ExcludeToken(99999999)", "ExcludeToken(...)"),
])
def test_exclude_token_syntax_errors(text, fragment):
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        xgr.Grammar.from_ebnf(text)


def test_exclude_token_survives_serialization():
    tok = small_tokenizer()
    compiled = xgr.GrammarCompiler(tok).compile_grammar('root ::= ExcludeToken(3, 8) "b"')
    again = xgr.CompiledGrammar.deserialize_json(compiled.serialize_json(), tok)
    m = xgr.GrammarMatcher(again)
    assert allowed(m) == [0, 2, 4, 5, 6, 7, 9]


def test_structural_tag_formats_lower_to_exclude_token():
    exclude = {"type": "structural_tag", "format": {"type": "exclude_token", "exclude_tokens": [5, 10]}}
    assert "ExcludeToken(5, 10)" in structural_tag_to_ebnf(exclude)
    budget = {"type": "structural_tag", "format": {"type": "any_tokens", "exclude_tokens": [5], "max_tokens": 3}}
    assert "ExcludeToken(5){0,3}" in structural_tag_to_ebnf(budget)
    nothing = {"type": "structural_tag", "format": {"type": "any_tokens", "max_tokens": 0}}
    assert "ExcludeToken" not in structural_tag_to_ebnf(nothing)
    # inside a tag whose end is a token, that token is excluded too (as xgrammar)
    in_tag = {"type": "structural_tag", "format": {
        "type": "tag", "begin": {"type": "token", "token": 1}, "end": {"type": "token", "token": 99},
        "content": {"type": "any_tokens", "exclude_tokens": [5]}}}
    assert "ExcludeToken(5, 99)*" in structural_tag_to_ebnf(in_tag)


def test_any_tokens_budget_and_token_end():
    tok = small_tokenizer()
    tag = {"type": "structural_tag", "format": {
        "type": "tag", "begin": {"type": "token", "token": "<tool>"}, "end": {"type": "token", "token": "<end>"},
        "content": {"type": "any_tokens", "exclude_tokens": ["<bad>"], "max_tokens": 2}}}
    compiled = xgr.GrammarCompiler(tok).compile_structural_tag(tag)
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_token(TOOL)
    assert allowed(m) == [0, 2, 3, 4, 5, 6, 7, 9]  # the end token ends the content (it is not content)
    assert m.accept_token(9) and m.accept_token(TOOL)
    assert allowed(m) == [END]  # two tokens: the budget is spent
    assert m.accept_token(END) and allowed(m) == [STOP]


def test_lark_token_wildcards():
    tok = xgr.TokenizerInfo(["a", "b", "c", "d", "e"])
    compiler = xgr.GrammarCompiler(tok)
    every = xgr.GrammarMatcher(compiler.compile_lark("start: <[*]>"))
    assert all(every.fork().accept_token(t) for t in range(5))
    but = compiler.compile_lark("start: <[^1,3]>")
    assert [t for t in range(5) if xgr.GrammarMatcher(but).accept_token(t)] == [0, 2, 4]


@pytest.mark.parametrize("vocab", ["qwen2"])
def test_masks_equal_the_oracle_on_a_real_vocabulary(vocab):
    """Large exclusions (runs of ids and scattered ones) and special tokens on a 151k vocabulary."""
    tok = xgr.TokenizerInfo.from_loaded_vocab(require(vocab))
    rng = random.Random(0)
    ids = sorted(set(rng.sample(range(tok.vocab_size), 300)) | set(range(1000, 40000)) | {151657, 151658})
    grammar = f'root ::= "{{" ExcludeToken({", ".join(map(str, ids))}){{0,3}} "}}"'
    compiled = xgr.GrammarCompiler(tok).compile_grammar(grammar)
    m = xgr.GrammarMatcher(compiled)
    free = [t for t in (151642, 50000, 151660) if t not in ids]
    for t in [list(tok.decoded_vocab).index(b"{")] + free[:2]:  # "{", then tokens read as any token
        extra, missing = mask_oracle_diff(m)
        assert len(extra) == 0 and len(missing) == 0, (t, extra[:5], missing[:5])
        assert m.accept_token(t), t
    assert not m.fork().accept_token(1000) and not m.fork().accept_token(151657)
