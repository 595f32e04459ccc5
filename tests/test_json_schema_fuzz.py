"""Differential fuzz of the JSON Schema front end against the ``jsonschema`` package (skipped when it is not
installed): random schemas over the supported keywords (combinators, complements, patternProperties,
propertyNames, contains counts, unevaluated*, dependentSchemas, finite uniqueItems, ...) and random instances; a
converted schema must accept exactly the instances ``jsonschema`` finds valid. Seeded, so reproducible; patterns
are ASCII and instances hold no newline (Python's ``re`` differs from ECMAScript there)."""

from __future__ import annotations

import json
import random

import pytest

import xg2jax
from xg2jax.json_schema import SchemaError, UnsatisfiableSchemaError
from xg2jax.testing import is_grammar_accept_string

jsonschema = pytest.importorskip("jsonschema", reason="the differential fuzz needs the jsonschema package")

rng = random.Random(0)
NAMES = ["a", "b", "ab", "x-1", "c"]
PATTERNS = ["^a", "b$", "^x-", "a+", "^[ab]+$", "c"]
SCALARS = [0, 1, 2, -1, 1.5, 3, 10, "", "a", "ab", "b", "abc", "x-1", True, False, None]


def value(d=0):
    r = rng.random()
    if d > 2 or r < 0.5:
        return rng.choice(SCALARS)
    if r < 0.75:
        return [value(d + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(NAMES): value(d + 1) for _ in range(rng.randint(0, 3))}


def leaf():
    k = rng.randint(0, 14)
    return [lambda: {"type": rng.choice(["integer", "number", "string", "boolean", "null", "array", "object"])},
            lambda: {"type": [rng.choice(["integer", "string"]), rng.choice(["null", "array", "object"])]},
            lambda: {"minimum": rng.choice([0, 1, 2])}, lambda: {"maximum": rng.choice([0, 1, 2])},
            lambda: {"exclusiveMinimum": rng.choice([0, 1])}, lambda: {"minLength": rng.randint(0, 2)},
            lambda: {"maxLength": rng.randint(0, 2)}, lambda: {"const": rng.choice(SCALARS)},
            lambda: {"enum": rng.sample(SCALARS, 3)}, lambda: {"required": rng.sample(NAMES, rng.randint(1, 2))},
            lambda: {"minItems": rng.randint(0, 2)}, lambda: {"maxItems": rng.randint(0, 2)},
            lambda: {"multipleOf": rng.choice([2, 0.5, 3])}, lambda: {"pattern": rng.choice(PATTERNS)},
            lambda: {"minProperties": rng.randint(0, 2)}][k]()


def schema(d=0):
    if d > 2 or rng.random() < 0.35:
        return rng.choice([True, False, {}]) if rng.random() < 0.1 else leaf()
    k = rng.randint(0, 16)
    sub = lambda: schema(d + 1)
    out = [lambda: {"not": sub()}, lambda: {"anyOf": [sub(), sub()]}, lambda: {"oneOf": [sub(), sub()]},
           lambda: {"allOf": [sub(), sub()]}, lambda: {"if": sub(), "then": sub(), "else": sub()},
           lambda: {"properties": {rng.choice(NAMES): sub(), rng.choice(NAMES): sub()}},
           lambda: {"patternProperties": {rng.choice(PATTERNS): sub()}, "additionalProperties": sub()},
           lambda: {"propertyNames": rng.choice([{"pattern": rng.choice(PATTERNS)}, {"maxLength": 1},
                                                 {"enum": ["a", "b"]}])},
           lambda: {"contains": sub(), "minContains": rng.randint(0, 2)},
           lambda: {"contains": sub(), "maxContains": rng.randint(1, 2)},
           lambda: {"prefixItems": [sub()], "items": sub()},
           lambda: {"allOf": [{"properties": {"a": sub()}}, sub()], "unevaluatedProperties": sub()},
           lambda: {"anyOf": [{"prefixItems": [sub()]}, sub()], "unevaluatedItems": sub()},
           lambda: {"properties": {"a": sub()}, "additionalProperties": sub()},
           lambda: {"dependentSchemas": {"a": sub()}},
           lambda: {"uniqueItems": True, "items": {"enum": [1, 2, "a"]}, "maxItems": 3},
           lambda: {**leaf(), **leaf()}][k]()
    if rng.random() < 0.3:
        out.update(leaf())
    return out



@pytest.mark.parametrize("seed", [0, 1])
def test_agrees_with_jsonschema(seed):
    rng.seed(seed)
    converted = 0
    for _ in range(150):
        s = schema()
        try:
            grammar = xg2jax.Grammar.from_json_schema(s, any_order=True, enforce_formats=False)
        except UnsatisfiableSchemaError:
            grammar = None
        except SchemaError:
            continue
        converted += 1
        validator = jsonschema.Draft202012Validator(s)
        for _ in range(15):
            x = value()
            text = json.dumps(x)
            got = grammar is not None and is_grammar_accept_string(grammar, text)
            assert got == validator.is_valid(x), f"schema {json.dumps(s)} instance {text}"
    assert converted > 100
