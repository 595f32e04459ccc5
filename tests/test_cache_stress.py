"""GrammarCompiler's caches under concurrency (issue 5): 8 threads compile a mix of JSON Schemas (sharing
sub-structures, so the rule-level cache is hit across grammars) and fill masks, while another thread clears the
caches at random points; 10,000 operations in all. At the end, with nothing in flight, ``get_cache_size_bytes()``
must equal the sum of the entries held (plus the structure table), and every grammar's masks must still equal the
token-by-token oracle.

The schedule is random but seeded, and no thread sleeps: threads start together at a barrier with a bounded wait.
CI also runs this file against a ThreadSanitizer build of the extension (``scripts/tsan.sh``).
"""

from __future__ import annotations

import os
import random
import threading

import pytest

import xg2jax as xgr
from xg2jax.testing import mask_oracle_diff

N_THREADS = 8
N_OPERATIONS = int(os.environ.get("XG2JAX_STRESS_OPS", "10000"))

_ADDRESS = {"type": "object", "properties": {"street": {"type": "string"}, "zip": {"type": "integer"}},
            "required": ["street"]}
_TAGS = {"type": "array", "items": {"type": "string"}, "maxItems": 40}
SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "address": _ADDRESS}, "required": ["name"]},
    {"type": "object", "properties": {"id": {"type": "integer"}, "home": _ADDRESS, "tags": _TAGS}},
    {"type": "object", "properties": {"tags": _TAGS, "ok": {"type": "boolean"}}, "required": ["ok"]},
    {"type": "array", "items": _ADDRESS, "minItems": 1},
    {"type": "object", "properties": {"a": {"enum": ["x", "y", 3]}, "b": {"type": "number", "minimum": 0}}},
    {"anyOf": [_ADDRESS, {"type": "string", "maxLength": 50}, {"type": "null"}]},
    {"type": "object", "additionalProperties": {"type": "integer"}},
    {"type": "string", "pattern": "^[a-z]{2,5}-[0-9]+$"},
]


def _tokenizer() -> xgr.TokenizerInfo:
    # A small vocabulary (masks build in microseconds, so the run is about the caches, not the masks) with the
    # pieces JSON needs.
    pieces = list('{}[]":, abcdefghijklmnopqrstuvwxyz0123456789-.') + [
        '{"', '":', '",', '"}', "street", "zip", "name", "id", "tags", "ok", "true", "false", "null", "home",
        "address", ', "', "12", "ab", "xy", '"x"', "e+", "\\n"]
    return xgr.TokenizerInfo(["</s>"] + sorted(set(pieces)), stop_token_ids=[0])


@pytest.fixture(scope="module")
def ebnf_texts():
    from xg2jax.json_schema import json_schema_to_ebnf

    return [json_schema_to_ebnf(s) for s in SCHEMAS]


def test_cache_bytes_equal_held_entries_after_concurrent_compiles_and_clears(ebnf_texts):
    tok = _tokenizer()
    compiler = xgr.GrammarCompiler(tok, max_threads=2)
    bitmask_words = (tok.vocab_size + 31) // 32
    ops_per_thread = N_OPERATIONS // (N_THREADS + 1)
    barrier = threading.Barrier(N_THREADS + 1, timeout=30)
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            barrier.wait()
            for _ in range(ops_per_thread):
                text = rng.choice(ebnf_texts)
                compiled = compiler.compile_grammar(text, precompute_masks=rng.random() < 0.2)
                matcher = xgr.GrammarMatcher(compiled)
                bitmask = xgr.allocate_token_bitmask(1, tok.vocab_size)
                matcher.fill_next_token_bitmask(bitmask)
                assert bitmask.shape[-1] == bitmask_words
        except BaseException as e:  # noqa: BLE001 (reported by the main thread)
            errors.append(e)

    def clearer(seed: int) -> None:
        rng = random.Random(seed)
        try:
            barrier.wait()
            for _ in range(ops_per_thread):
                if rng.random() < 0.1:
                    compiler.clear_cache()
                else:
                    compiler.get_cache_size_bytes()
                    compiler.cache_info()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(N_THREADS)]
    threads.append(threading.Thread(target=clearer, args=(99,)))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
        assert not t.is_alive(), "a stress thread did not finish within 600 s"
    assert not errors, errors[:3]

    info = compiler.cache_info()
    held = sum(info["grammar_entry_sizes"]) + sum(info["rule_entry_sizes"]) + info["structure_bytes"]
    assert compiler.get_cache_size_bytes() == held, info
    assert info["generation"] > 0, "the clearing thread never cleared"
    assert info["rule_hits"] > 0, "no mask entry was shared across grammars"

    # Masks are still exact, for grammars compiled into the stressed caches.
    for text in ebnf_texts:
        matcher = xgr.GrammarMatcher(compiler.compile_grammar(text))
        extra, missing = mask_oracle_diff(matcher)
        assert len(extra) == 0 and len(missing) == 0

    compiler.clear_cache()
    assert compiler.get_cache_size_bytes() == 0
    info = compiler.cache_info()
    assert info["grammar_entry_sizes"] == [] and info["rule_entry_sizes"] == [] and info["structure_bytes"] == 0


def test_shared_mask_entries_give_the_same_masks_as_a_cold_compiler(ebnf_texts):
    """Cross-grammar reuse must never change a mask: a warm compiler (all schemas compiled into one) and a compiler
    with caching off agree at every step of the same token walks."""
    tok = _tokenizer()
    warm = xgr.GrammarCompiler(tok)
    cold = xgr.GrammarCompiler(tok, cache_enabled=False)
    for text in ebnf_texts:
        warm.compile_grammar(text, precompute_masks=True)
    assert warm.cache_info()["rule_hits"] > 0
    instances = ['{"name": "ab", "address": {"street": "xy"}}', '{"id": 12, "home": {"street": "a", "zip": 1}, "tags": ["a"]}',
                 '{"tags": [], "ok": true}', '[{"street": "a"}]', '{"a": "x", "b": 1.5}', '"abc"',
                 '{"k": 3}', '"ab-12"']
    for text, instance in zip(ebnf_texts, instances):
        m_warm = xgr.GrammarMatcher(warm.compile_grammar(text))
        m_cold = xgr.GrammarMatcher(cold.compile_grammar(text))
        for ch in instance:
            bw = xgr.allocate_token_bitmask(1, tok.vocab_size)
            bc = xgr.allocate_token_bitmask(1, tok.vocab_size)
            m_warm.fill_next_token_bitmask(bw)
            m_cold.fill_next_token_bitmask(bc)
            assert (bw == bc).all(), (instance, ch)
            assert m_warm.accept_string(ch) and m_cold.accept_string(ch), (instance, ch)
        assert m_warm.is_completed(), instance


def test_budget_mode_keeps_the_count_within_the_limit(ebnf_texts):
    tok = _tokenizer()
    limit = 200_000
    compiler = xgr.GrammarCompiler(tok, cache_limit_bytes=limit)
    for text in ebnf_texts * 2:
        compiler.compile_grammar(text, precompute_masks=True)
        info = compiler.cache_info()
        assert info["grammar_bytes"] <= limit // 2 and info["rule_bytes"] <= limit // 4
        assert info["structure_bytes"] <= limit // 4
        assert compiler.get_cache_size_bytes() <= limit
        assert info["grammar_bytes"] == sum(info["grammar_entry_sizes"])
        assert info["rule_bytes"] == sum(info["rule_entry_sizes"])


@pytest.mark.parametrize("limit", [20_000, 60_000])
def test_small_budget_flushes_structures_and_automata_and_stays_exact(ebnf_texts, limit):
    """A budget too small for the structure ids and rule automata of these grammars flushes them again and again;
    every grammar still masks exactly as the token oracle, and the whole cache stays within the budget."""
    tok = _tokenizer()
    compiler = xgr.GrammarCompiler(tok, cache_limit_bytes=limit)
    rng = random.Random(limit)
    for _ in range(3):
        for text in rng.sample(ebnf_texts, len(ebnf_texts)):
            matcher = xgr.GrammarMatcher(compiler.compile_grammar(text))
            for _ in range(6):
                extra, missing = mask_oracle_diff(matcher)
                assert not len(extra) and not len(missing), text
                ids = [t for t in range(1, tok.vocab_size) if matcher.accept_token(t)]
                if not ids:
                    break
            assert compiler.get_cache_size_bytes() <= limit
    info = compiler.cache_info()
    assert info["structure_flushes"] > 0 and info["automata_flushes"] > 0, info


def test_string_states_are_built_once_and_shared_across_grammars():
    """A JSON string is a rule of its own (not inlined into each property), so every state of its body is a
    rule-level hit in a second grammar that uses strings in other places, and the masks stay exact there."""
    tok = _tokenizer()
    compiler = xgr.GrammarCompiler(tok)
    first = compiler.compile_json_schema({"type": "object", "properties": {"a": {"type": "string"}}},
                                         precompute_masks=True)
    assert "j_string" in {d["rule"] for d in first._handle.mask_entry_stats()}
    hits_before = compiler.cache_info()["rule_hits"]
    second = compiler.compile_json_schema(
        {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "integer"}, "v": {"type": "string"}}}},
        precompute_masks=True)
    string_states = [d for d in second._handle.mask_entry_stats() if d["rule"] == "j_string"]
    assert len(string_states) >= 4, second._handle.mask_entry_stats()  # quote, body, escape, \u digits
    assert compiler.cache_info()["rule_hits"] - hits_before >= len(string_states)
    matcher = xgr.GrammarMatcher(second)
    for piece in ['[{"', 'k":', '12', ',"v":"', 'ab\\n', '"}]']:
        extra, missing = mask_oracle_diff(matcher)
        assert len(extra) == 0 and len(missing) == 0, piece
        assert matcher.accept_string(piece), piece


def test_rule_automata_are_shared_across_grammars_and_cleared():
    """Rule automata are cached by body (the rules a body names numbered by first appearance): a grammar whose rules
    are the same bodies under other names builds no new automaton, counts them in ``structure_bytes``, and masks
    exactly; ``clear_cache()`` drops them."""
    tok = _tokenizer()
    compiler = xgr.GrammarCompiler(tok)
    first = 'root ::= "[" item ("," item)* "]"\nitem ::= "{" key ":" [0-9]+ "}"\nkey ::= "\\"" [a-z]+ "\\""\n'
    renamed = 'root ::= "[" elem ("," elem)* "]"\nelem ::= "{" k ":" [0-9]+ "}"\nk ::= "\\"" [a-z]+ "\\""\n'
    compiler.compile_grammar(first, precompute_masks=True)
    info = compiler.cache_info()
    assert info["num_automata"] > 0 and info["structure_bytes"] > 0
    second = compiler.compile_grammar(renamed, precompute_masks=True)
    after = compiler.cache_info()
    assert after["num_automata"] == info["num_automata"]
    assert after["grammar_misses"] == info["grammar_misses"] + 1  # a new grammar, not a grammar-level hit
    assert compiler.get_cache_size_bytes() == (sum(after["grammar_entry_sizes"]) + sum(after["rule_entry_sizes"]) +
                                               after["structure_bytes"])
    matcher = xgr.GrammarMatcher(second)
    for piece in ['[{"', 'ab":', '12', '},{"', 'x":3', '}]']:
        extra, missing = mask_oracle_diff(matcher)
        assert len(extra) == 0 and len(missing) == 0, piece
        assert matcher.accept_string(piece), piece
    compiler.clear_cache()
    cleared = compiler.cache_info()
    assert cleared["num_automata"] == 0 and cleared["structure_bytes"] == 0
    assert compiler.get_cache_size_bytes() == 0


def test_first_mask_is_built_without_structural_keys():
    """The root rule's start state has the whole root rule as its forward closure (only a grammar of the same
    structure shares it, and such a grammar is a grammar-level hit), so its entry is never keyed by structure: a
    first mask read at that state interns no structure (nor waits for the root rule's keys). This root starts inside
    the literal '{"', whose entry is keyed by those bytes alone: one rule-level lookup, a hit from the first grammar.
    The next states are looked up and shared as usual, and every mask stays exact."""
    tok = _tokenizer()
    compiler = xgr.GrammarCompiler(tok)
    call = 'root ::= "{\\"name\\": \\"f\\", \\"arguments\\": " args "}" | "{\\"content\\": " str "}"\n'
    rules = 'args ::= "{\\"n\\": " [0-9]+ ", \\"s\\": " str "}"\nstr ::= "\\"" [a-z ]* "\\""\n'
    compiler.compile_grammar(call + rules, precompute_masks=True)  # fills the rule-level cache
    other = call.replace('"f', '"g')  # another root rule over the same sub-rules
    matcher = xgr.GrammarMatcher(compiler.compile_grammar(other + rules))
    before = compiler.cache_info()
    extra, missing = mask_oracle_diff(matcher)
    assert len(extra) == 0 and len(missing) == 0
    after_first = compiler.cache_info()
    assert after_first["num_structures"] == before["num_structures"]
    assert (after_first["rule_hits"], after_first["rule_misses"]) == (before["rule_hits"] + 1, before["rule_misses"])
    for piece in ['{"name": "g", "arguments": {"n": ', '12', ', "s": "', 'ab c', '"}', '}']:
        assert matcher.accept_string(piece), piece
        extra, missing = mask_oracle_diff(matcher)
        assert len(extra) == 0 and len(missing) == 0, piece
    after_walk = compiler.cache_info()
    assert after_walk["rule_hits"] > after_first["rule_hits"]  # the sub-rules' states, from the first grammar
