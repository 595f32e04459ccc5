"""Token oracle on JSON Schemas: for schemas from JSONSchemaBench (../shared/data/jsonschemabench; skipped when
absent) that the front end compiles, walk a valid instance token by token on the real GPT-2 vocabulary and check
that the mask equals the brute-force oracle (every token tried with accept_token's rules, no mask cache) at every
4th step, and that every token of the walk is allowed and accepted. Default run: 6 schemas; ``slow``: 60 (15 from
each of four subsets)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

import xg2jax
from real_vocabularies import require
from xg2jax.json_schema import json_schema_to_ebnf
from xg2jax.testing import bitmask_to_ids, greedy_token_ids, mask_oracle_diff

MASKBENCH = Path(__file__).resolve().parents[2] / "shared" / "data" / "jsonschemabench" / "maskbench"
# Subsets of small, realistic schemas (function signatures, API payloads). Schemas whose grammar has a bounded
# repetition above 64 are left out until repetition-state compression lands (they compile slowly and large).
SUBSETS = ("Glaiveai2K", "BFCL_simple", "MCPspec", "JME")
PER_SUBSET = 15


def _cases() -> list[tuple[str, dict, object]]:
    """(name, schema, a valid instance) for the first convertible schemas of each subset, in file order."""
    if not MASKBENCH.is_dir():
        return []
    out = []
    for subset in SUBSETS:
        taken = 0
        for line in gzip.open(MASKBENCH / f"{subset}.jsonl.gz", "rt"):
            item = json.loads(line)
            valid = [t["data"] for t in item["tests"] if t["valid"]]
            if not valid:
                continue
            try:
                ebnf = json_schema_to_ebnf(item["schema"], any_order=True)  # instances list keys in any order
            except ValueError:
                continue
            if any(int(n) > 64 for n in re.findall(r"\{\d+,(\d+)\}", ebnf)):
                continue
            out.append((item["name"], item["schema"], valid[0]))
            taken += 1
            if taken == PER_SUBSET:
                break
    return out


CASES = _cases()
DEFAULT = {name for name, _, _ in CASES[::10]}


@pytest.fixture(scope="module")
def gpt2():
    tok = xg2jax.TokenizerInfo.from_loaded_vocab(require("gpt2"))
    return tok, xg2jax.GrammarCompiler(tok)


def _walk(gpt2, name, schema, instance):
    tok, compiler = gpt2
    compiled = compiler.compile_json_schema(schema, any_order=True)
    matcher = xg2jax.GrammarMatcher(compiled)
    tokens = greedy_token_ids(tok, json.dumps(instance, ensure_ascii=False).encode())
    bitmask = xg2jax.allocate_token_bitmask(1, tok.vocab_size)
    for step, t in enumerate(tokens + tok.stop_token_ids[:1]):
        if step % 4 == 0:
            extra, missing = mask_oracle_diff(matcher)
            assert (extra.tolist()[:10], missing.tolist()[:10]) == ([], []), \
                f"{name}: mask != oracle at step {step} (allowed-but-forbidden, forbidden-but-allowed)"
        matcher.fill_next_token_bitmask(bitmask)
        assert t in set(bitmask_to_ids(bitmask[0], tok.vocab_size).tolist()), f"{name}: token {t} masked at {step}"
        assert matcher.accept_token(t), f"{name}: token {t} rejected at step {step}"
    assert matcher.is_terminated()


def test_cases_found():
    if not MASKBENCH.is_dir():
        pytest.skip(f"JSONSchemaBench not found at {MASKBENCH} (../shared/data is not in the repository)")
    assert len(CASES) >= 50, f"only {len(CASES)} compiling schemas with valid instances"


@pytest.mark.parametrize("name,schema,instance", [c for c in CASES if c[0] in DEFAULT], ids=lambda x: x
                         if isinstance(x, str) else "")
def test_json_schema_mask_equals_oracle(gpt2, name, schema, instance):
    _walk(gpt2, name, schema, instance)


@pytest.mark.slow
@pytest.mark.parametrize("name,schema,instance", CASES, ids=lambda x: x if isinstance(x, str) else "")
def test_json_schema_mask_equals_oracle_all(gpt2, name, schema, instance):
    _walk(gpt2, name, schema, instance)
