"""Token(ids) over text tokens, against an independent reference: random grammars in which some literals are token
elements naming text tokens of the vocabulary.

A named text token has two readings (its text, and the element), and the engine keeps both parses
(GrammarMatcher::TryAdvanceEither). The reference (tests/random_grammars.Reference, a character-level Earley
recognizer sharing no code with the engine) sees each element as a private-use character; a token sequence is a
valid prefix (a sentence) iff some choice of readings spells a valid prefix (a sentence) of that grammar. Each walk
checks accept_token against it at every step, and the mask against the token-by-token oracle.
"""

from __future__ import annotations

import random

import pytest

import random_grammars as rg
import xg2jax as xgr
from token_reference import compile_or_check_empty, walk_against_reference

PLACEHOLDER = 0xE000  # element k of the chosen ones is the character chr(PLACEHOLDER + k)


def with_token_elements(ast: rg.GrammarAst, vocab: list[bytes], rng: random.Random):
    """Replaces some literals by placeholders of chosen text tokens; returns (ast, EBNF text, {token id: char})."""
    candidates = [i for i, t in enumerate(vocab) if i > 0 and t]
    chosen = rng.sample(candidates, min(len(candidates), rng.randint(1, 3)))
    chars = {t: chr(PLACEHOLDER + k) for k, t in enumerate(chosen)}

    placeholders = frozenset(chars.values())

    def swap(n):
        kind = n[0]
        if kind == "lit" and rng.random() < 0.4:
            return ("lit", chars[rng.choice(chosen)])
        if kind == "cls" and n[2]:  # a negated class never reads an element (the engine's sentinels are not text)
            return ("cls", n[1] | placeholders, True)
        if kind in ("seq", "alt"):
            return (kind, [swap(c) for c in n[1]])
        if kind == "rep":
            return ("rep", swap(n[1]), n[2], n[3])
        return n

    out = rg.GrammarAst({name: swap(body) for name, body in ast.rules.items()})
    text = out.text()
    for t, ch in chars.items():
        text = text.replace(f'"{ch}"', f"Token({t})")
    return out, text, chars


def readings(t, vocab, chars):
    """Token t's readings: its text, and the element's character when an element names it."""
    return [vocab[t].decode()] + ([chars[t]] if t in chars else [])


@pytest.mark.parametrize("seed", range(40))
def test_token_elements_over_text_tokens_match_the_reference(seed):
    rng = random.Random(seed)
    base = rg.gen_grammar(seed)
    vocab = rg.gen_vocab(base, seed, size=40)
    ast, text, chars = with_token_elements(base, vocab, rng)
    ref = rg.Reference(ast)
    compiled = compile_or_check_empty(xgr.TokenizerInfo(vocab + [b"</s>"], stop_token_ids=[len(vocab)]), text, ref)
    if compiled is not None:
        walk_against_reference(compiled, ref, vocab, rng, lambda t: readings(t, vocab, chars), text, steps=10)
