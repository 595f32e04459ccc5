"""Token(ids) over text tokens, against an independent reference: random grammars in which some literals are token
elements naming text tokens of the vocabulary.

A named text token has two readings (its text, and the element), and the engine keeps both parses
(GrammarMatcher::TryAdvanceEither). The reference (tests/random_grammars.Reference, a character-level Earley
recognizer sharing no code with the engine) sees each element as a private-use character; a token sequence is a
valid prefix (a sentence) iff some choice of readings spells a valid prefix (a sentence) of that grammar. Each walk
checks accept_token against it at every step, and the mask against the token-by-token oracle.
"""

from __future__ import annotations

import itertools
import random

import pytest

import random_grammars as rg
import xg2jax as xgr
from xg2jax.testing import mask_oracle_diff

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


def readings(tokens, vocab, chars):
    options = [[vocab[t].decode()] + ([chars[t]] if t in chars else []) for t in tokens]
    return ("".join(p) for p in itertools.product(*options))


@pytest.mark.parametrize("seed", range(40))
def test_token_elements_over_text_tokens_match_the_reference(seed):
    rng = random.Random(seed)
    base = rg.gen_grammar(seed)
    vocab = rg.gen_vocab(base, seed, size=40)
    ast, text, chars = with_token_elements(base, vocab, rng)
    ref = rg.Reference(ast)
    tok = xgr.TokenizerInfo(vocab + [b"</s>"], stop_token_ids=[len(vocab)])
    try:
        compiled = xgr.GrammarCompiler(tok, cache_enabled=False).compile_grammar(text)
    except ValueError:
        assert not ref.ok, text  # only a grammar whose root derives nothing may fail
        return
    assert ref.ok, text
    for walk in range(3):
        m = xgr.GrammarMatcher(compiled)
        seq: list[int] = []
        for _ in range(10):
            extra, missing = mask_oracle_diff(m)
            assert len(extra) == 0 and len(missing) == 0, (text, seq, extra, missing)
            allowed = [t for t in range(len(vocab)) if m.fork().accept_token(t)]
            t = rng.choice(allowed) if allowed and rng.random() < 0.8 else rng.randrange(len(vocab))
            want = any(ref.accepts_prefix(s) for s in readings(seq + [t], vocab, chars))
            assert m.accept_token(t) == want, (text, seq, t)
            if want:
                seq.append(t)
            assert m.is_completed() == any(ref.accepts(s) for s in readings(seq, vocab, chars)), (text, seq)
            if not allowed:
                break
