"""Properties in schema order (``any_order=False``, the default) with presence constraints: ``minProperties``,
``maxProperties`` and ``dependentRequired`` are finite-state over which optional properties appear, and must be
exact. Random object schemas and random instances whose declared properties come in schema order (then the
undeclared ones) are checked against the ``jsonschema`` package (skipped when it is not installed)."""

from __future__ import annotations

import json
import random

import pytest

import xg2jax
from xg2jax.json_schema import (
    UnsatisfiableSchemaError,
    UnsupportedSchemaError,
)
from xg2jax.testing import is_grammar_accept_string

jsonschema = pytest.importorskip("jsonschema", reason="the differential test needs the jsonschema package")

DECLARED = ["a", "b", "c", "d", "e"]
EXTRA = ["x", "y", "zz"]
VALUES = [0, 1, "s", None, True, [1], {"a": 1}]


def object_schema(rng: random.Random) -> dict:
    names = rng.sample(DECLARED, rng.randint(0, 5))
    s: dict = {"type": "object",
               "properties": {n: rng.choice([{}, {"type": "integer"}, {"type": "string"}, {"not": {"type": "null"}}])
                              for n in names}}
    if names and rng.random() < 0.5:
        s["required"] = rng.sample(names, rng.randint(1, min(2, len(names))))
    if names and rng.random() < 0.8:
        s["dependentRequired"] = {n: rng.sample(names, rng.randint(0, min(3, len(names))))
                                  for n in rng.sample(names, rng.randint(1, len(names)))}
    if rng.random() < 0.5:
        s["minProperties"] = rng.randint(0, 4)
    if rng.random() < 0.4:
        s["maxProperties"] = rng.randint(0, 5)
    s["additionalProperties"] = rng.choice([True, False, {"type": "integer"}])
    return s


def instance(rng: random.Random, s: dict) -> dict:
    """Declared properties in schema order, then undeclared ones."""
    out = {n: rng.choice(VALUES) for n in s["properties"] if rng.random() < 0.5}
    for n in rng.sample(EXTRA, rng.randint(0, 3) if rng.random() < 0.4 else 0):
        out[n] = rng.choice(VALUES)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_presence_constraints_in_schema_order(seed):
    rng = random.Random(seed)
    converted = 0
    for _ in range(40):
        s = object_schema(rng)
        try:
            grammar = xg2jax.Grammar.from_json_schema(s, any_order=False)
        except UnsatisfiableSchemaError:
            grammar = None
        converted += 1
        validator = jsonschema.Draft202012Validator(s)
        for _ in range(20):
            x = instance(rng, s)
            for text in (json.dumps(x), json.dumps(x, indent=1)):
                got = grammar is not None and is_grammar_accept_string(grammar, text)
                assert got == validator.is_valid(x), f"schema {json.dumps(s)} instance {text}"
    assert converted == 40


def test_schema_order_is_kept():
    s = {"type": "object", "properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}, "minProperties": 1,
         "additionalProperties": False}
    grammar = xg2jax.Grammar.from_json_schema(s)
    assert is_grammar_accept_string(grammar, '{"a": 1, "b": 2}')
    assert is_grammar_accept_string(grammar, '{"b": 2}')
    assert not is_grammar_accept_string(grammar, '{"b": 2, "a": 1}')  # schema order
    assert not is_grammar_accept_string(grammar, '{"a": 1}')  # a needs b
    assert not is_grammar_accept_string(grammar, "{}")  # minProperties


def test_state_limit_error_names_the_keyword():
    names = [f"p{i}" for i in range(40)]
    s = {"type": "object", "properties": {n: {} for n in names},
         "dependentRequired": {names[i]: [names[39 - i]] for i in range(20)}, "minProperties": 30}
    with pytest.raises(UnsupportedSchemaError, match=r"at '/dependentRequired'.*more than 4096 grammar rules"):
        xg2jax.Grammar.from_json_schema(s)
