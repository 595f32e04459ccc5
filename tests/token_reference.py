"""Token walks against the independent reference (tests/random_grammars.Reference) for grammars whose tokens can be
read more than one way (token elements: a token's text, or the element that names it, a private-use character in
the reference). A token sequence is a valid prefix (a sentence) iff some choice of readings spells one."""

from __future__ import annotations

import xg2jax as xgr
from xg2jax.testing import mask_oracle_diff


def compile_or_check_empty(tok: xgr.TokenizerInfo, text: str, ref, root: str = "root"):
    """The compiled grammar, or None when the engine refuses it, which only a grammar whose root derives nothing
    may be."""
    try:
        compiled = xgr.GrammarCompiler(tok, cache_enabled=False).compile_grammar(text, root_rule_name=root)
    except ValueError:
        assert not ref.ok, text
        return None
    assert ref.ok, text
    return compiled


def walk_against_reference(compiled, ref, vocab: list[bytes], rng, readings, text: str, *, steps: int,
                           walks: int = 3) -> None:
    """Random walks (mostly along allowed tokens): at each step the mask equals the token oracle, accept_token
    and is_completed agree with the reference over every reading (`readings(t)`: the strings token t may stand
    for), and at the end the stop token (id len(vocab)) is accepted iff some reading is a sentence."""
    for _walk in range(walks):
        m = xgr.GrammarMatcher(compiled)
        live = [""]  # the readings of the tokens so far that are valid prefixes
        seq: list[int] = []
        for _ in range(steps):
            extra, missing = mask_oracle_diff(m)
            assert len(extra) == 0 and len(missing) == 0, (text, seq, extra, missing)
            allowed = [t for t in range(len(vocab)) if m.fork().accept_token(t)]
            t = rng.choice(allowed) if allowed and rng.random() < 0.8 else rng.randrange(len(vocab))
            extended = [s for s in {p + r for p in live for r in readings(t)} if ref.accepts_prefix(s)]
            assert m.accept_token(t) == bool(extended), (text, seq, t)
            if extended:
                seq.append(t)
                live = extended
            assert m.is_completed() == any(ref.accepts(s) for s in live), (text, seq)
            if not allowed:
                break
        assert m.fork().accept_token(len(vocab)) == any(ref.accepts(s) for s in live), (text, seq)
