"""Differential checks (against the ``jsonschema`` package, skipped when it is not installed) of: the complement
of an integer ``multipleOf``, multiples above / below a bound away from 0, ``allOf`` merging ``patternProperties``
with another branch's ``additionalProperties``, two different ``multipleOf`` in ``allOf``, and recursive ``$ref``s
inlined through ``allOf`` / ``anyOf`` siblings."""

from __future__ import annotations

import json

import pytest

import xg2jax
from xg2jax.testing import is_grammar_accept_string

jsonschema = pytest.importorskip("jsonschema", reason="the differential test needs the jsonschema package")

NUMBERS = [-30, -21, -15, -14, -7, -6, -3, -1, 0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 12, 14, 15, 20, 21, 30, 35, 105, 110,
           121, 1.5, -2.5, 7.0, 12.5, "a", None, [1], {}]


def check(schema, instances, **kw):
    grammar = xg2jax.Grammar.from_json_schema(schema, plain_integers=False, **kw)  # a validator's spellings
    validator = jsonschema.Draft202012Validator(schema)
    for x in instances:
        text = json.dumps(x, ensure_ascii=False)  # non-ASCII raw: the spelling the grammar keeps (documented)
        assert is_grammar_accept_string(grammar, text) == validator.is_valid(x), f"{json.dumps(schema)} {text}"


@pytest.mark.parametrize("schema", [
    {"not": {"multipleOf": 3}},
    {"not": {"multipleOf": 3}, "minimum": 5},
    {"not": {"multipleOf": 7}, "maximum": -2, "type": "integer"},
    {"multipleOf": 3, "not": {"multipleOf": 5}},
    {"not": {"anyOf": [{"multipleOf": 3}, {"multipleOf": 5}]}},
    {"not": {"multipleOf": 2}, "minimum": -10, "maximum": 10},
    {"not": {"not": {"multipleOf": 7}}},
    {"not": {"multipleOf": 3, "minimum": 4}},
    {"type": "integer", "multipleOf": 11, "minimum": 100},
    {"type": "integer", "multipleOf": 7, "maximum": -15},
    {"type": "number", "multipleOf": 3, "exclusiveMinimum": 1},
    {"allOf": [{"multipleOf": 2.5}, {"multipleOf": 4}]},
    {"allOf": [{"multipleOf": 0.5}, {"multipleOf": 1.5}]},
])
def test_multiple_of(schema):
    check(schema, NUMBERS + list(range(90, 140)) + list(range(-40, -10)))


def test_multiple_of_above_bound_exhaustive():
    for k, lo in ((11, 100), (3, 1), (7, 8), (4, 1000)):
        grammar = xg2jax.Grammar.from_json_schema({"type": "integer", "multipleOf": k, "minimum": lo})
        for v in range(-50, 1600):
            assert is_grammar_accept_string(grammar, str(v)) == (v >= lo and v % k == 0), (k, lo, v)


OBJECTS = [{}, {"a": 1}, {"a": "x"}, {"ab": 1}, {"b": 1}, {"b": "s"}, {"c": 5}, {"c": [1, 2]}, {"abc": [1]},
           {"a": 1, "c": 2}, {"x": None}, {"x": 1}, {"ba": 2}, {"ca": [2, 3]}]


@pytest.mark.parametrize("schema", [
    {"allOf": [{"additionalProperties": {"type": "integer"}},
               {"patternProperties": {"a": {"minimum": 1}}, "additionalProperties": False}]},
    {"allOf": [{"properties": {"b": {}}, "additionalProperties": {"type": "integer"}},
               {"patternProperties": {"^a": {"type": "integer"}, "b": True}, "additionalProperties": False}]},
    {"allOf": [{"patternProperties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
               {"patternProperties": {"b": {"type": "string"}}, "additionalProperties": {"type": "integer"}}]},
    {"allOf": [{"additionalProperties": {"type": "array", "minItems": 2}},
               {"patternProperties": {"a": {"type": "array"}}, "additionalProperties": False},
               {"patternProperties": {"c": {"type": "array", "items": {"minimum": 2}}}, "additionalProperties": False}]},
])
def test_all_of_pattern_properties_with_additional_properties(schema):
    check(schema, OBJECTS, any_order=True)


def test_recursive_ref_through_all_of_and_any_of_siblings():
    # Every member matches the pattern too, so each value is allOf [declared, pattern], which inlines the $ref
    # targets; the same merged schema recurs and becomes one rule.
    schema = {"type": "object",
              "properties": {"by": {"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/A"}], "type": "object"}}},
              "patternProperties": {"^[a-z]*$": {"type": "array",
                                                 "items": {"anyOf": [{"$ref": "#/$defs/A"}], "type": "object"}}},
              "$defs": {"A": {"type": "object", "properties": {"img": {"$ref": "#"}, "n": {"type": "integer"}},
                              "additionalProperties": False}}}
    check(schema, [{}, {"by": []}, {"by": [{}]}, {"by": [{"n": 1}]}, {"by": [{"n": "x"}]}, {"by": [{"m": 1}]},
                   {"by": [{"img": {"by": [{"n": 2}]}}]}, {"by": [{"img": {"by": [{"n": "2"}]}}]},
                   {"by": [{"img": {"by": [{"img": {"q": 1}}]}}]}, {"by": [{"img": {"Q": 1}}]}, {"q": [1]}])


STRINGS = ["", "a", "ab", "abc", "b", "ba", "x:y", "A1", "zz", "a\"b", "é", 1, None, ["a"]]


@pytest.mark.parametrize("schema", [
    {"not": {"pattern": "^a"}},
    {"type": "string", "not": {"pattern": "b$"}},
    {"pattern": "a", "not": {"pattern": "^ab"}},
    {"not": {"anyOf": [{"pattern": "^a"}, {"pattern": "z"}]}, "maxLength": 2},
    {"not": {"enum": ["a", "b"]}, "minLength": 1},
    {"not": {"pattern": "^[a-z]+$"}, "type": "string"},
    {"not": {"not": {"pattern": "^a"}}},
])
def test_pattern_complement(schema):
    check(schema, STRINGS)


def test_overlapping_one_of_of_patterns():
    check({"oneOf": [{"pattern": "a"}, {"pattern": "b"}]}, STRINGS)
    check({"oneOf": [{"pattern": "^a"}, {"multipleOf": 3}, {"type": "string", "maxLength": 1}]},
          STRINGS + [0, 3, 4, 4.5])


@pytest.mark.parametrize("schema", [
    {"not": {"patternProperties": {"^a": {"type": "integer"}}}},
    {"not": {"additionalProperties": {"type": "integer"}}},
    {"not": {"properties": {"a": {}}, "additionalProperties": False}},
    {"not": {"patternProperties": {"b": False}, "additionalProperties": {"type": "string"}}},
    {"properties": {"a": {"type": "integer"}, "c": {}}, "not": {"patternProperties": {"a": {"minimum": 3}}}},
    {"properties": {"a": {}}, "additionalProperties": {"type": "integer"},
     "not": {"patternProperties": {"^a": {"maximum": 0}, "c": {"type": "array"}}}, "maxProperties": 2},
    {"allOf": [{"not": {"patternProperties": {"a": {"type": "integer"}}}},
               {"not": {"patternProperties": {"b": {"type": "integer"}}}}]},
    {"not": {"not": {"patternProperties": {"^a": {"type": "integer"}}}}},
    {"oneOf": [{"additionalProperties": {"type": "integer"}}, {"patternProperties": {"a": {"type": "string"}}}]},
])
@pytest.mark.parametrize("any_order", [False, True])
def test_member_requirements(schema, any_order):
    instances = OBJECTS + [{"a": 5, "c": [1]}, {"ab": 1, "x": "s"}, {"b": 1, "ab": "s"}, {"a": 0, "c": 1}, 3, "s"]
    if any_order:
        check(schema, instances, any_order=True)
    else:  # declared properties in schema order: only instances whose keys come in that order
        declared = list(schema.get("properties", {}))
        ordered = [x for x in instances if not isinstance(x, dict) or
                   [k for k in x if k in declared] == [k for k in declared if k in x] and
                   all(k in declared for k in list(x)[:len([k for k in x if k in declared])])]
        check(schema, ordered)


@pytest.mark.parametrize("schema", [
    {"not": {"required": ["a"], "properties": {"a": {"type": "integer"}}}},
    {"not": {"required": ["a", "b"], "properties": {"a": {"type": "integer"}, "c": {"type": "string"}}}},
    {"not": {"type": "string", "format": "regex"}},  # an unknown format is an annotation, also in a complement
])
def test_required_and_properties_complement(schema):
    check(schema, OBJECTS + [{"a": 1, "b": 2}, {"a": "x", "b": 2}, {"b": 1, "c": "s"}, {"a": 1, "b": 1, "c": 2},
                             "s", 1], any_order=True)


@pytest.mark.parametrize("pattern", ["(^a$)", "((?:^ab))", "(^a|b)c", "a(b$)", "(a|b$)", "(^\\d{2}-\\d{2}$)",
                                     "([)]$)", "(a)(b$)", "(^[a-z]+:(x|y)$)"])
def test_anchors_at_the_ends_of_groups(pattern):
    import re
    grammar = None
    try:
        grammar = xg2jax.Grammar.from_json_schema({"type": "string", "pattern": pattern})
    except xg2jax.json_schema.SchemaError as e:
        assert pattern in ("(^a|b)c", "(a|b$)"), e  # anchors inside an alternation stay unsupported
        return
    for text in ["a", "ab", "xab", "abx", "b", "12-34", "12-345", ")", "ab)", "zz:x", "zz:xy", "bc", "c"]:
        assert is_grammar_accept_string(grammar, json.dumps(text)) == bool(re.search(pattern, text)), text


@pytest.mark.parametrize("schema", [
    {"type": "string", "pattern": "^[a-c]{1,4}(\\.[a-c]{1,4}){1,3}$", "maxLength": 9},
    {"type": "string", "pattern": "^[a-c]{1,4}(\\.[a-c]{1,4}){1,3}$", "minLength": 8},
    {"type": "string", "pattern": "a", "minLength": 2, "maxLength": 3},
    {"type": "string", "pattern": "^(ab)+$", "maxLength": 5},
    {"type": "string", "not": {"pattern": "^a"}, "minLength": 2, "maxLength": 3},
])
def test_pattern_with_length(schema):
    import itertools
    texts = ["".join(t) for n in range(8) for t in itertools.product("ab.", repeat=n) if n < 6 or t[0] == "a"]
    check(schema, texts + ["abc.abc.abc", "ab.ab.ab.ab", "abcd.abcd"])


@pytest.mark.parametrize("schema", [
    {"not": {"const": {"a": 1, "b": [1, 2]}}},
    {"not": {"const": []}},
    {"not": {"const": {}}},
    {"not": {"enum": [[1, 2], {"a": {"a": None}}, 3, "x"]}},
    {"type": "object", "not": {"const": {"a": {"a": {"a": 1}}}}},
])
def test_composite_constant_complement(schema):
    check(schema, [{}, {"a": 1}, {"a": 1.0, "b": [1, 2]}, {"a": 1, "b": [1, 2]}, {"a": 1, "b": [1, 2], "c": 0},
                   {"a": 1, "b": [1]}, {"a": 1, "b": [2, 1]}, {"a": {"a": None}}, {"a": {"a": 0}}, [], [1], [1, 2],
                   [1, 2.0], [1, 2, 3], [2, 1], 3, 3.0, "x", "y", None, {"a": {"a": {"a": 1}}}, {"a": {"a": {"a": 2}}},
                   {"a": {"a": {"a": 1, "b": 1}}}], any_order=True)


@pytest.mark.parametrize("schema", [
    {"type": "number", "multipleOf": 2.5, "minimum": 2},
    {"type": "number", "multipleOf": 0.5, "exclusiveMinimum": -3, "maximum": 4},
    {"type": "number", "multipleOf": 0.25, "maximum": -1.5},
    {"type": "number", "multipleOf": 1.5, "exclusiveMaximum": 3},
    {"type": "number", "multipleOf": 0.3, "minimum": 0.9},
])
def test_decimal_multiples_with_bounds(schema):
    values = [x / 4 for x in range(-60, 60)] + [x / 10 for x in range(-40, 40)] + [12.5, 15, 100, 102.5, 1000.5,
                                                                                  -1000.5, -102.5, 0.0, -2.5]
    grammar = xg2jax.Grammar.from_json_schema(schema)
    from fractions import Fraction
    k = Fraction(repr(schema["multipleOf"]))
    for x in values:
        # the reference: exact decimal divisibility (jsonschema divides floats: 0.9 / 0.3 misjudged)
        expected = (Fraction(repr(float(x))) / k).denominator == 1 and jsonschema.Draft202012Validator(
            {k2: v for k2, v in schema.items() if k2 != "multipleOf"}).is_valid(x)
        text = repr(float(x)) if isinstance(x, float) else str(x)
        assert is_grammar_accept_string(grammar, text) == expected, (schema, text)


def test_dependency_on_a_dropped_property_drops_its_dependents():
    """``c`` needs ``a``, ``a`` needs ``b``, ``b`` can never be present: neither can ``a`` nor ``c`` (a chain the
    first version followed one link of, raising KeyError on JSON Schema Store's tmlanguage schema)."""
    s = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"not": {}}, "c": {"type": "integer"}},
         "dependentRequired": {"c": ["a"], "a": ["b"]}}
    g = xg2jax.Grammar.from_json_schema(s)
    for text, ok in [("{}", True), ('{"a":1}', False), ('{"c":1}', False), ('{"a":1,"c":2}', False)]:
        assert is_grammar_accept_string(g, text) == ok, text
