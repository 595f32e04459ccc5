"""Random grammars against the token oracle and an independent reference recognizer.

Grammars come from ``random_grammars.py`` (seeded): small EBNF grammars with literals (some empty),
classes (narrow and wide), groups, ``* + ? {m} {m,} {m,n}`` (bounds above 32 become counted rules),
alternatives with ``""``, left / right / mutual recursion, nullable and ambiguous rules
(``a ::= a a | "x" | ""``), and JSON-flavoured ones (values, arrays, objects, ``", "`` separators,
string bodies). Vocabularies are drawn from each grammar's own pieces plus JSON-ish tokens (``true``,
``null``, ``", "``, ``{"``, tokens that straddle literal boundaries).

At every step of random walks (allowed tokens, random tokens, rollbacks, forks) the mask must equal the
brute-force oracle (every token tried with accept_token's rules), the answer of accept_token must equal
the mask bit, a rollback must restore the mask, and (where the reference runs) the oracle must equal the
reference recognizer's mask: a plain Earley parser in Python over the same grammar AST, which shares no
code with the engine. Random strings go through ``accept_string`` and ``is_completed`` against it too.

Each grammar runs in a forked child with a timeout (random_grammar_driver.run_isolated): a grammar that
hangs the engine fails its regression test instead of the run. Highly ambiguous random grammars can
be legitimately slow (Earley is cubic), so in the random runs a timeout is reported, not failed.
Short bounded repetitions of wide classes that a rule can leave part-way get their own generator
(``gen_chain_grammar``): they exercise the mask cache's chain proofs, which the other generators rarely reach.
The default run is a fixed set of seeds (under a minute on two cores); ``-m slow`` runs many more,
and a real vocabulary (GPT-2) when its package is installed.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import random_grammar_driver as drv  # noqa: E402
import random_grammars as rg  # noqa: E402

import xg2jax as xgr  # noqa: E402
from xg2jax.testing import mask_oracle_diff  # noqa: E402

MISMATCH_KINDS = {"mask_vs_accept", "accept_vs_reference", "accept_string_vs_reference", "completed_vs_reference",
                  "accept_vs_mask_bit", "rollback_mask", "compile_error", "compiled_unproductive", "exception",
                  "crash"}


def _report(seed: int, text: str, vocab, findings) -> str:
    return (f"seed {seed}\ngrammar:\n{text}\nvocab: {vocab!r}\n" +
            "\n".join(json.dumps(f, default=str)[:2000] for f in findings))


def _fail_on_mismatch(seed, text, vocab, findings):
    bad = [f for f in findings if f["kind"] in MISMATCH_KINDS]
    assert not bad, _report(seed, text, vocab, bad)


# ------------------------------------------------------------------------------------------------
# The reference recognizer itself (so that a reference bug cannot hide an engine bug)
# ------------------------------------------------------------------------------------------------


def test_reference_recognizer_basics():
    g = rg.GrammarAst({"root": ("alt", [("seq", [("ref", "root"), ("ref", "root")]), ("lit", "x"), ("lit", "")])})
    ref = rg.Reference(g)
    assert ref.accepts("") and ref.accepts("xxx")
    assert not ref.accepts_prefix("y")
    g = rg.GrammarAst({"root": ("seq", [("lit", "["), ("rep", ("cls", frozenset("ab"), False), 2, 3), ("lit", "]")])})
    ref = rg.Reference(g)
    assert ref.accepts("[ab]") and ref.accepts("[aba]")
    assert not ref.accepts("[a]") and not ref.accepts_prefix("[abab")
    assert ref.accepts_prefix("[a") and not ref.accepts("[a")
    g = rg.GrammarAst({"root": ("seq", [("rep", ("cls", frozenset('"'), True), 0, None), ("lit", '"')])})
    ref = rg.Reference(g)
    assert ref.accepts('ab c"') and not ref.accepts_prefix('a"b')


@pytest.mark.parametrize("seed", range(6))
def test_generated_text_compiles(seed):
    ast = rg.gen_any(seed)
    text = ast.text()
    tok = xgr.TokenizerInfo(rg.gen_vocab(ast, seed), stop_token_ids=[0])
    ref = rg.Reference(ast)
    try:
        xgr.GrammarCompiler(tok, cache_enabled=False).compile_grammar(text)
    except Exception:  # noqa: BLE001
        assert not ref.ok, text  # only a grammar whose root derives nothing may fail to compile
        return
    assert ref.ok, text


# ------------------------------------------------------------------------------------------------
# Random grammars
# ------------------------------------------------------------------------------------------------

DEFAULT_SEEDS = list(range(24))


@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_random_grammar_oracle(seed):
    """Per-grammar vocabulary, fresh compiler, reference on every other step."""
    text, vocab, findings = drv.fuzz_one(seed, timeout=20, steps=16, ref_every=2, walks=2, strings=12, max_bytes=40)
    _fail_on_mismatch(seed, text, vocab, findings)


def test_reference_recognizer_any_order():
    items = [(("lit", "a"), ""), (("lit", "b"), "?"), (("lit", "c"), "*")]
    ref = rg.Reference(rg.GrammarAst({"root": ("seq", [("lit", "["), ("any", items, ","), ("lit", "]")])}))
    for s in ["[a]", "[b,a]", "[c,a,c]", "[c,c,a,b]"]:
        assert ref.accepts(s), s
    for s in ["[]", "[a,a]", "[b,b,a]", "[a,]", "[ab]"]:
        assert not ref.accepts(s), s
    assert rg.GrammarAst({"root": ("any", items, ",")}).text() == 'root ::= AnyOrder("a", "b"?, "c"*, separator=",")\n'


def _check_generated(gen, seed, **kw):
    """One grammar from `gen` (and its own vocabulary) against the oracle and the reference, in a forked child."""
    ast = gen(seed)
    vocab = rg.gen_vocab(ast, seed)
    text = ast.text()
    _fail_on_mismatch(seed, text, vocab, drv.run_isolated(text=text, vocab=vocab, seed=seed, ast=ast, timeout=20, **kw))


@pytest.mark.parametrize("seed", range(40))
def test_random_any_order_grammar_oracle(seed):
    """AnyOrder objects (nested, recursive, every role, with and without a separator) against the token oracle
    and the reference recognizer (which expands AnyOrder into one rule per set of items read)."""
    _check_generated(rg.gen_any_order_grammar, seed, steps=30, ref_every=1, walks=4, strings=20, max_bytes=80)


def test_random_any_order_grammars_shared_compiler():
    """The same grammars through one compiler: AnyOrder rules in the cross-grammar mask cache."""
    for seed, findings in drv.run_shared_batch(range(700, 780), vocab_seed=0, timeout=15, steps=30, walks=3,
                                                gen=rg.gen_any_order_grammar, max_bytes=80, strings=0):
        _fail_on_mismatch(seed, rg.gen_any_order_grammar(seed).text(), "shared_vocab(0)", findings)


_CHAIN_WALKS = dict(steps=12, ref_every=2, walks=3, strings=10, max_bytes=40)


@pytest.mark.parametrize("seed", range(30))
def test_random_chain_grammar_oracle(seed):
    """Short bounded repetitions of wide classes that the rule can leave part-way (random_grammars.gen_chain_grammar):
    the chain proofs of the mask cache (token_mask_cache.h, ChainOf) against the oracle and the reference."""
    _check_generated(rg.gen_chain_grammar, seed, **_CHAIN_WALKS)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(2))
def test_random_chain_grammar_oracle_slow(chunk):
    for seed in range(1000 + 150 * chunk, 1000 + 150 * (chunk + 1)):
        _check_generated(rg.gen_chain_grammar, seed, **_CHAIN_WALKS)


def test_random_grammars_shared_compiler():
    """Many grammars through one GrammarCompiler (cross-grammar mask caches on) and one vocabulary."""
    seeds = range(500, 560)
    for seed, findings in drv.run_shared_batch(seeds, vocab_seed=0, timeout=15, steps=16, walks=2, use_ref=False,
                                                max_bytes=40, strings=0):
        _fail_on_mismatch(seed, rg.gen_any(seed).text(), "shared_vocab(0)", findings)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(10))
def test_random_grammar_oracle_slow(chunk):
    for seed in range(1000 + 30 * chunk, 1000 + 30 * (chunk + 1)):
        text, vocab, findings = drv.fuzz_one(seed, timeout=30, steps=30, ref_every=1, walks=2, strings=20)
        _fail_on_mismatch(seed, text, vocab, findings)


@pytest.mark.slow
@pytest.mark.parametrize("vocab_seed,vocab_size", [(1, 200), (2, 60), (0, 0)])
def test_random_grammars_shared_compiler_slow(vocab_seed, vocab_size):
    start = 10000 * (vocab_seed + 1)
    for seed, findings in drv.run_shared_batch(range(start, start + 600), vocab_seed=vocab_seed, timeout=15, steps=40,
                                                walks=3, use_ref=False, max_bytes=80, strings=0,
                                                vocab_size=vocab_size):
        _fail_on_mismatch(seed, rg.gen_any(seed).text(), f"shared_vocab({vocab_seed}, {vocab_size})", findings)


@pytest.mark.slow
def test_random_grammars_real_vocab_slow():
    from real_vocabularies import require

    tok = xgr.TokenizerInfo.from_loaded_vocab(require("gpt2"))
    for seed in range(40):
        ast = rg.gen_any(seed)
        findings = drv.run_isolated(timeout=60, text=ast.text(), vocab=None, tok=tok, seed=seed, ast=None, steps=12,
                                    walks=1, strings=0)
        _fail_on_mismatch(seed, ast.text(), "gpt2", findings)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["qwen2", "gemma3"])
def test_random_grammars_real_vocab_subset_slow(name):
    """Random grammars (recursive, nullable, ambiguous, counted) on the tokens of a real vocabulary that straddle
    their literals (``true,``, ``"}``, ``", "`` ...; random_grammar_driver.real_vocab_subset), with the reference
    recognizer on: synthetic vocabularies have few such tokens, real ones thousands."""
    from real_vocabularies import require

    vocab = drv.real_vocab_subset(require(name).decoded_vocab())
    tok = xgr.TokenizerInfo(vocab, stop_token_ids=[0])
    for seed in range(200000, 200016):
        ast = (rg.gen_any if seed % 2 else rg.gen_json_grammar)(seed)
        findings = drv.run_isolated(timeout=60, text=ast.text(), vocab=None, tok=tok, seed=seed, ast=ast, steps=10,
                                    walks=1, strings=5)
        _fail_on_mismatch(seed, ast.text(), f"{name} subset ({len(vocab)} tokens)", findings)


# ------------------------------------------------------------------------------------------------
# Regressions
# ------------------------------------------------------------------------------------------------

# A chain (an unrolled `[^"]{2}`) that its rule can leave part-way: after one character `w` may complete (or
# enter `r`) and the parent reads on. The chain proof claimed that every token the loop `[^"]*` reads whole past
# the chain's budget dies where the chain ends ('"' only), and the mask rejected "ddd", "true", "null", which
# accept_token accepts. (path: tokens accepted first; every step's mask must equal the oracle.)
_JSONISH_VOCAB = [b"</s>"] + [t.encode() for t in rg.JSONISH]
CHAIN_EXITS = [
    ('root ::= w "d"*\nw ::= [^"] | [^"]{2} "\\""\n', [b"</s>", b"ddd"], []),
    ('root ::= "d" w "d"*\nw ::= [^"] | [^"]{2} "\\""\n', [b"</s>", b"d", b"ddd"], [b"d"]),
    ('root ::= w\nw ::= [^"] r | [^"]{2} "\\""\nr ::= "d" r | "d"\n', [b"</s>", b"d", b"ddd"], []),
    ('root ::= w [a-z]*\nw ::= [^"] | [^"]{2} "\\""\n', _JSONISH_VOCAB, [b"tr"]),
]


@pytest.mark.parametrize("text,vocab,path", CHAIN_EXITS)
@pytest.mark.parametrize("cache_enabled,precompute_masks", [(True, False), (False, True)])
def test_chain_left_part_way_is_not_rejected(text, vocab, path, cache_enabled, precompute_masks):
    tok = xgr.TokenizerInfo(vocab, stop_token_ids=[0])
    compiled = xgr.GrammarCompiler(tok, cache_enabled=cache_enabled).compile_grammar(
        text, precompute_masks=precompute_masks)
    m = xgr.GrammarMatcher(compiled)
    for p in [None] + list(path):
        if p is not None:
            assert m.accept_token(vocab.index(p))
        extra, missing = mask_oracle_diff(m)
        assert extra.tolist() == [] and missing.tolist() == [], (p, [vocab[i] for i in missing])
    last = vocab[-1] if len(vocab) < 5 else b"true"
    assert m.accept_token(vocab.index(last)) and m.is_completed()

# Unit cycles (`r ::= r | ...`, directly or through an inlined rule or a nullable suffix): the
# context-entry climb (GrammarMatcher::AppendResumeStates) followed the lone waiter of a pure tail
# back to itself forever, so fill_next_token_bitmask never returned once a token was uncertain
# (it completes the rule mid-token, as "axy" completes `"ax"`).
UNIT_CYCLES = [
    ('root ::= root | "ax"\n', [b"</s>", b"a", b"x", b"axy"], []),
    ('root ::= ar | "ax"\nar ::= root\n', [b"</s>", b"a", b"x", b"axy", b"y"], []),
    ('root ::= root ("d"{0})+ | "ba"\n', [b"</s>", b"b", b"a", b"ba", b"bad", b"d"], []),
    ('root ::= ("x" | ar | root | "" | ar ar)?\nar ::= "0"\n', [b"</s>", b"x", b"0", b"x0", b"00", b"0x0"], []),
    ('root ::= (root | "a") "x" | "a"\n', [b"</s>", b"a", b"x", b"ax", b"axx", b"xa"], [b"a"]),
]


def _unit_cycle_child(text, vocab, path):
    tok = xgr.TokenizerInfo(vocab, stop_token_ids=[0])
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(tok, cache_enabled=False).compile_grammar(text))
    out = []
    for p in [None] + list(path):
        if p is not None:
            assert m.accept_token(vocab.index(p))
        extra, missing = mask_oracle_diff(m)
        out.append((extra.tolist(), missing.tolist()))
    return out


@pytest.mark.parametrize("text,vocab,path", UNIT_CYCLES)
def test_unit_cycle_fill_terminates(text, vocab, path):
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        res = pool.apply_async(_unit_cycle_child, (text, vocab, path))
        try:
            diffs = res.get(timeout=20)
        except mp.TimeoutError:
            pytest.fail(f"fill_next_token_bitmask hangs on {text!r} with vocab {vocab!r}")
    assert all(d == ([], []) for d in diffs), diffs


def test_a_limit_is_a_bounded_refusal_not_a_finding():
    """Seed 30326 is so ambiguous (`ar ::= ar ar | ...` under counted repetitions) that reading one byte
    passes Limits.max_work_per_byte: the case ends in a LimitError, reported as "limit", never a mismatch."""
    vocab = drv.shared_vocab(2, 60)
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo(vocab, stop_token_ids=[0]), cache_enabled=True)
    findings = drv.check_case(rg.gen_any(30326).text(), vocab, 30326, compiler=compiler, steps=40, walks=3,
                              max_bytes=80, strings=0)
    assert [f["kind"] for f in findings] == ["limit"], findings
    assert "(Limits.max_work_per_byte)" in findings[0]["error"]
