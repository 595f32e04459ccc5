"""``oneOf`` whose branches are proven disjoint (no complement needed): discriminating properties, required vs
forbidden names, disjoint patterns and ranges, enums. Random oneOfs over such branches, checked against the
``jsonschema`` package (skipped when it is not installed): the grammar must accept exactly the valid instances,
whether the branches turn out disjoint (anyOf) or the converter falls back to complements or an error."""

from __future__ import annotations

import json
import random

import pytest

import xg2jax
from xg2jax.json_schema import SchemaError, UnsatisfiableSchemaError
from xg2jax.testing import is_grammar_accept_string

jsonschema = pytest.importorskip("jsonschema", reason="the differential test needs the jsonschema package")

BRANCHES = [
    {"type": "object", "properties": {"k": {"const": "a"}, "v": {"type": "integer"}}, "required": ["k"]},
    {"type": "object", "properties": {"k": {"enum": ["b", "c"]}}, "required": ["k", "v"]},
    {"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["k"]},
    {"properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": False},
    {"properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": False},
    {"properties": {"path": {}, "name": {}}, "additionalProperties": False},
    {"allOf": [{"required": ["k"]}], "properties": {"k": {"pattern": "^x"}}},
    {"properties": {"k": {"pattern": "^y"}}, "required": ["k"]},
    {"pattern": "^[^:]+$"},
    {"pattern": "^[^:]+:[^:]+$"},
    {"type": "string", "pattern": "a"},
    {"type": "integer", "minimum": 5},
    {"type": "number", "exclusiveMaximum": 5},
    {"type": "number", "maximum": 5},
    {"enum": [1, "a", None]},
    {"const": 2},
    {"type": "array", "maxItems": 1},
    {"type": "array", "minItems": 2},
]
VALUES = [0, 1, 2, 5, 4.5, 7, "a", "b", "x1", "y", "ab:c", "a:b:c", ":", None, True, [], [1], [1, 2],
          {"k": "a"}, {"k": "b"}, {"k": "b", "v": 1}, {"k": "a", "v": 1}, {"k": 3}, {"k": "x"}, {"k": "y"},
          {"name": "n"}, {"path": "p"}, {"name": "n", "path": "p"}, {}, {"k": "c", "v": "z"}, {"other": 1}]


@pytest.mark.parametrize("seed", [0, 1])
def test_one_of_agrees_with_jsonschema(seed):
    rng = random.Random(seed)
    converted = 0
    for _ in range(60):
        s = {"oneOf": rng.sample(BRANCHES, rng.randint(2, 4))}
        if rng.random() < 0.3:
            s["type"] = rng.choice(["object", "string", "number"])
        try:
            grammar = xg2jax.Grammar.from_json_schema(s, any_order=True)
        except UnsatisfiableSchemaError:
            grammar = None
        except SchemaError:
            continue
        converted += 1
        validator = jsonschema.Draft202012Validator(s)
        for x in VALUES:
            text = json.dumps(x)
            got = grammar is not None and is_grammar_accept_string(grammar, text)
            assert got == validator.is_valid(x), f"schema {json.dumps(s)} instance {text}"
    assert converted > 10


@pytest.mark.parametrize("branches", [
    [BRANCHES[0], BRANCHES[1], BRANCHES[2]],  # discriminating property k
    [BRANCHES[3], BRANCHES[4]],  # required name vs additionalProperties false
    [{"type": "string", **BRANCHES[8]}, {"type": "string", **BRANCHES[9]}],  # disjoint patterns
    [BRANCHES[11], BRANCHES[12]],  # ranges
])
def test_disjoint_one_of_compiles(branches):
    """These are disjoint without a complement: they compile (overlapping ones with these keywords would not)."""
    xg2jax.Grammar.from_json_schema({"oneOf": branches})


def test_overlapping_branches_with_a_shared_conjunct():
    """Branch i and not branch j only needs the complement of what j adds to a conjunct both share (here one whose
    complement would not be supported: a format); complement alternatives disjoint from branch i are dropped."""
    s = {"$defs": {"base": {"type": "object", "properties": {"e": {"type": "string", "format": "email"},
                                                              "n": {"type": "integer"}}}},
         "oneOf": [{"allOf": [{"$ref": "#/$defs/base"}, {"required": ["a"]}]},
                   {"allOf": [{"$ref": "#/$defs/base"}, {"required": ["b"], "properties": {"b": {"minimum": 3}}}]}]}
    grammar = xg2jax.Grammar.from_json_schema(s, any_order=True, enforce_formats=False)
    validator = jsonschema.Draft202012Validator(s)
    for x in [{}, {"a": 1}, {"b": 1}, {"b": 3}, {"a": 1, "b": 1}, {"a": 1, "b": 4}, {"a": 1, "n": "x"},
              {"b": 5, "n": 2}, {"a": 0, "e": "x@y.z"}, 3, "a"]:
        text = json.dumps(x)
        assert is_grammar_accept_string(grammar, text) == validator.is_valid(x), text


@pytest.mark.parametrize("schema", [
    {"oneOf": [{"type": "integer"}, {"type": "integer"}, {"type": "string"}]},  # the repeated pair drops out
    {"oneOf": [{"minimum": 3}, {"type": "integer"}, {"minimum": 3}, {"type": "boolean"}]},
    {"oneOf": [{"oneOf": [{"type": "integer"}, {"type": "integer"}]}, True]},  # inner unsatisfiable: true
    {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["a"]}, {"required": ["b"]}]},
])
def test_repeated_one_of_branches_match_no_value(schema):
    """A value that matches a ``oneOf`` branch written twice matches two branches: every copy is dropped."""
    grammar = xg2jax.Grammar.from_json_schema(schema, strict_mode=False)
    validator = jsonschema.Draft202012Validator(schema)
    for x in VALUES + [3.5, False, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}]:
        text = json.dumps(x)
        assert is_grammar_accept_string(grammar, text) == validator.is_valid(x), text


def test_one_of_of_only_repeated_branches_is_unsatisfiable():
    with pytest.raises(UnsatisfiableSchemaError, match="every branch of 'oneOf' appears twice"):
        xg2jax.Grammar.from_json_schema({"oneOf": [{"type": "integer"}, {"type": "integer"}]})


def test_nested_repeated_one_of_converts_at_once():
    """The fuzzer's slow family (nested ``oneOf``s of repeated branches, 8.6 s before) is now immediate."""
    import pathlib
    import time

    path = pathlib.Path(__file__).resolve().parent.parent / "fuzz/findings/json_schema/oneof_nested_slow.json"
    schema = json.loads(path.read_text())
    t = time.monotonic()
    grammar = xg2jax.Grammar.from_json_schema(schema, strict_mode=False, enforce_formats=False)
    assert time.monotonic() - t < 5  # generous: a bound, not a benchmark (milliseconds here)
    validator = jsonschema.Draft202012Validator(schema)
    for x in VALUES:
        assert is_grammar_accept_string(grammar, json.dumps(x)) == validator.is_valid(x), x


def test_work_budget_stops_a_combinatorial_schema_and_nothing_swallows_it():
    """The fuzzer's nested anyOf / oneOf schemas (fuzz/findings/json_schema/oneof_anyof_work_budget.json) stop at the
    work budget. The budget error is not a schema error inside the converter, so a fallback that catches schema
    errors (disjointness, type restriction) cannot swallow it and go on working past the budget."""
    import pathlib
    import time

    from xg2jax.json_schema import UnsupportedSchemaError
    from xg2jax.json_schema._converter import SchemaConverter

    path = pathlib.Path(__file__).resolve().parent.parent / "fuzz/findings/json_schema/oneof_anyof_work_budget.json"
    conv = SchemaConverter(json.loads(path.read_text()), strict_mode=False)
    t = time.monotonic()
    with pytest.raises(UnsupportedSchemaError, match="MAX_WORK"):
        conv.convert()
    assert conv._work <= conv._max_work + 1, (conv._work, conv._max_work)
    assert conv._max_work < 200_000  # a small schema gets a small budget
    assert time.monotonic() - t < 30  # a bound, not a benchmark (a few seconds)
