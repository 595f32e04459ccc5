"""JSON Schemas shaped to exhaust a serving process: each must end in a ``SchemaError`` (a ``ValueError``) naming the
JSON pointer of the keyword and the limit of ``xg2jax/json_schema/_limits.py`` that applies, raised before any large
allocation, or in a bounded, exact grammar.

The adversarial cases run in a fresh subprocess under an address-space limit and a time limit, so a regression
(runaway memory, a RecursionError, a conversion that never ends) fails one test instead of the whole run. The times
asserted are generous bounds for a loaded 2-core machine, an order of magnitude above what they take
(docs/json_schema.md, "Limits", lists the inputs and their limits).
"""

from __future__ import annotations

import json
import os
import random
import textwrap
from fractions import Fraction

import pytest

import bounded_subprocess  # tests/ is on sys.path under pytest (rootdir-relative import)
import xg2jax
from xg2jax.json_schema import SchemaError, UnsupportedSchemaError, json_schema_to_ebnf
from xg2jax.json_schema import _limits
from xg2jax.testing import _byte_tokenizer, is_grammar_accept_string

TIME_LIMIT_S = 120
MEMORY_LIMIT_BYTES = 3 << 30  # address space; the conversions here need well under 1 GiB

PRELUDE = """
import json, re, time
import xg2jax
from xg2jax.json_schema import json_schema_to_ebnf
from xg2jax.testing import is_grammar_accept_string

def convert(schema, **kw):
    '''(error message or None, seconds)'''
    t = time.perf_counter()
    try:
        json_schema_to_ebnf(schema, **kw)
    except ValueError as e:
        return str(e), time.perf_counter() - t
    return None, time.perf_counter() - t

def error_of(schema, **kw):
    message, _ = convert(schema, **kw)
    assert message is not None, "no error"
    return message
"""


def run_bounded(body: str) -> str:
    """Runs ``body`` (after PRELUDE) in a subprocess under the limits; returns its stdout."""
    return bounded_subprocess.run_bounded(PRELUDE + textwrap.dedent(body), time_limit_s=TIME_LIMIT_S,
                                          memory_limit_bytes=MEMORY_LIMIT_BYTES)


BOUNDED = {
    # The multiples were listed before the count was checked: 10^8 Python ints (GBs) for this one.
    "multiple_of_1e-8_in_unit_interval": """
        s = {"type": "number", "multipleOf": 1e-8, "minimum": 0, "maximum": 1}
        message, t = convert(s)
        assert message is None and t < 5, (message, t)
        g = xg2jax.Grammar.from_json_schema(s)
        for x in ["0", "1", "0.5", "0.00000001", "0.99999999", "0.12345678", "0.123456780", "1.00000000"]:
            assert is_grammar_accept_string(g, x), x
        for x in ["0.123456789", "1.00000001", "-0.00000001", "2", "0.000000001"]:
            assert not is_grammar_accept_string(g, x), x
        print("ok")
    """,
    # A money field: four billion multiples, one automaton of a few dozen rules.
    "money_field": """
        s = {"type": "number", "multipleOf": 0.25, "minimum": 0, "maximum": 1e9}
        message, t = convert(s)
        assert message is None and t < 5, (message, t)
        assert len(json_schema_to_ebnf(s)) < 20_000
        g = xg2jax.Grammar.from_json_schema(s)
        for x in ["12.25", "0.5", "3", "0", "0.75", "12.250", "7.0", "999999999.75", "1000000000", "1000000000.00"]:
            assert is_grammar_accept_string(g, x), x
        for x in ["0.3", "12.26", "-0.25", "1000000000.25", "1000000001", "0.125", "01", ".5", "1."]:
            assert not is_grammar_accept_string(g, x), x
        print("ok")
    """,
    "integer_multiple_of_in_a_wide_range": """
        s = {"type": "integer", "multipleOf": 7, "minimum": -10**12, "maximum": 10**12}
        message, t = convert(s)
        assert message is None and t < 5, (message, t)
        g = xg2jax.Grammar.from_json_schema(s)
        for x in [0, 7, -7, 700000000007, 999999999999, -999999999999, 7 * 123456789]:
            assert is_grammar_accept_string(g, str(x)), x
        for x in [1, -8, 1000000000003, 999999999998, 999999999997, 10**12 + 6]:
            assert not is_grammar_accept_string(g, str(x)), x
        print("ok")
    """,
    "multiple_of_needing_too_many_rules": """
        e = error_of({"type": "number", "multipleOf": 123.45, "minimum": 0, "maximum": 10**6})
        assert e.startswith("JSON Schema at '/multipleOf': ") and "MAX_MULTIPLE_OF_RULES" in e, e
        print("ok")
    """,
    # Quadratic in N before (one fixed-point pass per count); now a counted repetition.
    "min_properties": """
        for extra in ({}, {"properties": {f"p{i}": {"type": "integer"} for i in range(20)}},
                      {"patternProperties": {"^x": {"type": "integer"}}},
                      {"properties": {"a": {}}, "additionalProperties": {"type": "string"}}):
            for n in (200, 2000, 100_000):
                message, t = convert({"type": "object", "minProperties": n, **extra})
                assert message is None and t < 5, (extra, n, message, t)
        g = xg2jax.Grammar.from_json_schema({"type": "object", "minProperties": 200})
        members = [f'"k{i}": {i}' for i in range(200)]
        assert is_grammar_accept_string(g, "{" + ", ".join(members) + "}")
        assert not is_grammar_accept_string(g, "{" + ", ".join(members[:199]) + "}")
        print("ok")
    """,
    "max_properties_above_the_repetition_limit": """
        e = error_of({"type": "object", "maxProperties": 10**9})
        assert e.startswith("JSON Schema at '/maxProperties': 'maxProperties' 1000000000 is above") and \\
            "MAX_REPETITION" in e, e
        e = error_of({"type": "object", "properties": {"a": {"minProperties": 10**12}}})
        assert e.startswith("JSON Schema at '/properties/a/minProperties'"), e
        print("ok")
    """,
    "unique_items_with_a_huge_max_items": """
        s = {"type": "array", "uniqueItems": True, "maxItems": 1 << 20, "items": {"enum": [1, 2, 3]}}
        message, t = convert(s)
        assert message is None and t < 5, (message, t)
        g = xg2jax.Grammar.from_json_schema(s)
        assert is_grammar_accept_string(g, "[3, 1, 2]") and not is_grammar_accept_string(g, "[1, 1]")
        print("ok")
    """,
    # Each level doubled the members of the flattened allOf (and wrapped each property once more).
    "all_of_two_refs_per_level": """
        for base in ({"type": "integer"}, {"type": "object", "properties": {"x": {"type": "integer"}}}):
            for own in (lambda i: {}, lambda i: {"properties": {f"p{i}": {"type": "string"}}}):
                d = {"d0": base}
                for i in range(1, 25):
                    d[f"d{i}"] = {"allOf": [{"$ref": f"#/$defs/d{i - 1}"}, {"$ref": f"#/$defs/d{i - 1}"}], **own(i)}
                s = {"$defs": d, "$ref": "#/$defs/d24"}
                message, t = convert(s)
                assert message is None and t < 5, (message, t)
        g = xg2jax.Grammar.from_json_schema(s)
        # (properties in schema order: the branches' names first, x, p1, ..., p24)
        assert is_grammar_accept_string(g, '{"x": 1, "p3": "a", "p24": "b"}')
        assert not is_grammar_accept_string(g, '{"x": 1, "p3": 2}')
        print("ok")
    """,
    "ref_chains": """
        d = {"d0": {"type": "integer"}}
        for i in range(1, 1001):
            d[f"d{i}"] = {"$ref": f"#/$defs/d{i - 1}"}
        message, t = convert({"$defs": d, "$ref": "#/$defs/d1000"})
        assert message is None and t < 5, (message, t)  # bare $refs are followed, not nested
        d = {"d0": {"type": "integer"}}
        for i in range(1, 1001):
            d[f"d{i}"] = {"type": "object", "properties": {"a": {"$ref": f"#/$defs/d{i - 1}"}}}
        e = error_of({"$defs": d, "$ref": "#/$defs/d1000"})
        assert re.match(r"JSON Schema at '/\\$defs/d\\d+': the schema expands to more than 400 nested schemas "
                        r"\\(the limit is MAX_EXPANSION_DEPTH", e), e
        print("ok")
    """,
    # choice() deduplicated its options with a list scan, and an enum checked against a sibling enum scanned it
    # once per value: 11 s for 32,000 strings.
    "long_enums": """
        values = [f"v{i}" for i in range(32_000)]
        for s in ({"enum": values}, {"type": "string", "enum": values}, json.dumps({"enum": values}),
                  {"enum": values, "not": {"enum": values[::2]}}, {"allOf": [{"enum": values}, {"enum": values[::3]}]},
                  {"enum": list(range(32_000))}):
            message, t = convert(s)
            assert message is None and t < 5, (str(s)[:60], message, t)
        g = xg2jax.Grammar.from_json_schema({"enum": values, "not": {"enum": values[::2]}})
        assert is_grammar_accept_string(g, '"v31999"') and not is_grammar_accept_string(g, '"v31998"')
        n = 100_001
        e = error_of(json.dumps({"properties": {"a": {"enum": list(range(n))}}}))
        assert e == f"JSON Schema at '/properties/a/enum': 'enum' lists {n} values (the limit is " \\
                    f"MAX_ENUM_VALUES = {n - 1})", e
        print("ok")
    """,
    # RecursionError (naming no keyword) at ~250 levels before.
    "deep_nesting": """
        def nest(wrap, n, leaf={"type": "integer"}):
            s = leaf
            for _ in range(n):
                s = wrap(s)
            return s
        shapes = {"properties": (lambda s: {"type": "object", "properties": {"a": s}}, 2),
                  "items": (lambda s: {"type": "array", "items": s}, 1),
                  "anyOf": (lambda s: {"anyOf": [s, {"type": "null"}]}, 2),
                  "not": (lambda s: {"not": s}, 1)}
        for name, (wrap, per_level) in shapes.items():
            deepest = (256 - 1) // per_level  # JSON levels: the wrappers and the leaf object
            message, t = convert(nest(wrap, deepest))
            assert message is None and t < 10, (name, message, t)
            e = error_of(nest(wrap, 300))
            assert "nests JSON objects / arrays more than 256 levels deep (the limit is MAX_SCHEMA_DEPTH)" in e, e
            assert e.startswith("JSON Schema at '/" + name), e
        # From a caller deep in its own stack too.
        def deep(k):
            return convert(nest(shapes["properties"][0], 127)) if k == 0 else deep(k - 1)
        message, _ = deep(sys.getrecursionlimit() - 200)
        assert message is None, message
        e = error_of('{"const": ' + "[" * 100_000 + "]" * 100_000 + "}")  # deeper than the JSON parser goes
        assert e.startswith("JSON Schema at '/': the schema text nests deeper than the JSON parser allows"), e
        e = error_of({"const": nest(lambda v: [v], 300, 1)})
        assert e.startswith("JSON Schema at '/const/0/0/0") and "MAX_SCHEMA_DEPTH" in e, e
        print("ok")
    """,
    "shared_and_cyclic_dicts": """
        s = {"type": "integer"}
        for _ in range(60):  # 2^60 paths through 60 objects
            s = {"anyOf": [s, s]}
        e = error_of(s)
        assert e.startswith("JSON Schema at '/': the schema holds more than") and "MAX_SCHEMA_NODES" in e, e
        s = {"type": "object", "properties": {}}
        s["properties"]["self"] = s
        e = error_of(s)
        assert e == "JSON Schema at '/': the schema contains itself (a cycle of Python objects is not JSON)", e
        print("ok")
    """,
    "combinatorial_growth": """
        s = {"allOf": [{"anyOf": [{"type": "object", "required": [f"a{i}"]}, {"type": "object", "required": [f"b{i}"]}]}
                       for i in range(24)]}  # 2^24 alternatives once distributed
        message, t = convert(s)
        assert message is not None and ("MAX_WORK" in message or "MAX_GRAMMAR_BYTES" in message), message
        assert message.startswith("JSON Schema at '/"), message
        assert t < 60, t
        print("ok")
    """,
    "long_names_and_many_properties": """
        message, t = convert({"type": "object", "properties": {"a" * 100_000: {"type": "integer"}}})
        assert message is None and t < 20, (message, t)  # the key-exclusion trie was walked recursively
        names = [f"p{i}" for i in range(50_000)]
        message, t = convert({"type": "object", "properties": {n: {"type": "integer"} for n in names},
                              "required": names})
        assert message is None and t < 30, (message, t)  # was quadratic: 52 s
        print("ok")
    """,
}


@pytest.mark.parametrize("name", sorted(BOUNDED))
def test_bounded(name):
    assert run_bounded(BOUNDED[name]).strip().endswith("ok")


# ----------------------------------------------------------------------------------------------------------------
# Numbers that are no JSON numbers, or too long to spell: an error at the keyword (in-process: nothing big is built)

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("schema, pointer, fragment", [
    ({"type": "number", "minimum": NAN}, "/minimum", "NaN is not a JSON number"),
    ({"type": "number", "maximum": NAN}, "/maximum", "NaN is not a JSON number"),
    ({"type": "number", "exclusiveMinimum": NAN}, "/exclusiveMinimum", "NaN is not a JSON number"),
    ({"type": "integer", "exclusiveMaximum": -INF}, "/exclusiveMaximum", "-Infinity is not a JSON number"),
    ({"type": "integer", "minimum": -INF}, "/minimum", "-Infinity is not a JSON number"),
    ({"type": "number", "maximum": INF}, "/maximum", "Infinity is not a JSON number"),
    ({"type": "number", "multipleOf": NAN}, "/multipleOf", "multipleOf: Value must be a number, got NaN"),
    ({"type": "number", "multipleOf": INF}, "/multipleOf", "Infinity is not a JSON number"),
    ({"type": "number", "multipleOf": 0}, "/multipleOf", "multipleOf must be greater than 0, got 0"),
    ({"type": "number", "multipleOf": -0.5}, "/multipleOf", "multipleOf must be greater than 0, got -0.5"),
    ({"type": "string", "minLength": NAN}, "/minLength", "minLength must be an integer, got NaN"),
    ({"type": "string", "maxLength": INF}, "/maxLength", "maxLength must be an integer, got Infinity"),
    ({"type": "array", "items": {"maxItems": NAN}}, "/items/maxItems", "must be an integer, got NaN"),
    ({"enum": [1, NAN]}, "/enum/1", "'enum' holds NaN, which is not a JSON value"),
    ({"const": {"a": [INF]}}, "/const", "'const' holds Infinity, which is not a JSON value"),
    ({"type": "integer", "maximum": 10 ** 500}, "/maximum", "more than 400 digits (the limit is MAX_DECIMAL_DIGITS)"),
    ({"type": "integer", "multipleOf": 10 ** 400}, "/multipleOf", "the limit is MAX_DECIMAL_DIGITS"),
    ({"type": "string", "minLength": 10 ** 400}, "/minLength", "the limit is MAX_REPETITION"),
    ({"type": "string", "maxLength": 10 ** 9}, "/maxLength", "the limit is MAX_REPETITION = 1048576"),
    ({"type": "array", "minItems": 2 ** 21}, "/minItems", "the limit is MAX_REPETITION"),
])
def test_non_json_numbers(schema, pointer, fragment):
    with pytest.raises(SchemaError) as info:
        json_schema_to_ebnf(schema)
    message = str(info.value)
    assert message.startswith(f"JSON Schema at '{pointer}': "), message
    assert fragment in message, message
    assert info.value.pointer == pointer


def test_non_json_numbers_in_text():
    # Python's json module parses NaN and Infinity, so a schema text can carry them.
    with pytest.raises(SchemaError, match=r"^JSON Schema at '/properties/x/maximum': 'maximum': Infinity is not"):
        json_schema_to_ebnf('{"properties": {"x": {"type": "number", "maximum": Infinity}}}')
    with pytest.raises(SchemaError, match=r"^JSON Schema at '/enum/0': 'enum' holds NaN"):
        json_schema_to_ebnf('{"enum": [NaN]}')


def test_non_json_numbers_outside_schema_positions():
    # A $ref may lead into an unknown keyword, which the up-front check does not walk: the converter checks too.
    schema = {"$ref": "#/x-extra/n", "x-extra": {"n": {"type": "number", "minimum": NAN}}}
    with pytest.raises(SchemaError, match=r"^JSON Schema at '/x-extra/n/minimum': 'minimum': NaN is not"):
        json_schema_to_ebnf(schema)
    schema = {"$ref": "#/x-extra/n", "x-extra": {"n": {"type": "number", "multipleOf": NAN}}}
    with pytest.raises(SchemaError, match=r"^JSON Schema at '/x-extra/n/multipleOf': 'multipleOf' must be"):
        json_schema_to_ebnf(schema)


def test_tiny_and_long_bounds_convert():
    # Every finite double's exact decimal expansion fits MAX_DECIMAL_DIGITS (it used to stop at 60 / 30 digits).
    g = xg2jax.Grammar.from_json_schema({"type": "number", "minimum": 1e-300, "maximum": 1})
    assert is_grammar_accept_string(g, "0.5") and not is_grammar_accept_string(g, "0")
    assert is_grammar_accept_string(g, "0." + "0" * 299 + "1")
    assert not is_grammar_accept_string(g, "0." + "0" * 300 + "9")
    g = xg2jax.Grammar.from_json_schema({"type": "number", "multipleOf": 1e-40, "minimum": 0, "maximum": 1})
    assert is_grammar_accept_string(g, "0." + "0" * 39 + "1")
    assert not is_grammar_accept_string(g, "0." + "0" * 40 + "1")


# ----------------------------------------------------------------------------------------------------------------
# Multiples within bounds: the automaton against exact arithmetic

def _acceptor(schema: dict):
    """``text -> bool``: whether the schema's grammar accepts ``text``, compiled once (is_grammar_accept_string
    compiles per call)."""
    compiled = xg2jax.GrammarCompiler(_byte_tokenizer(), cache_enabled=False).compile_grammar(
        xg2jax.Grammar.from_json_schema(schema, plain_integers=False))  # a validator's spellings

    def accepts(text: str) -> bool:
        m = xg2jax.GrammarMatcher(compiled)
        return m.accept_string(text) and m.is_completed()

    return accepts


def _exact(v) -> Fraction:
    return Fraction(repr(v)) if isinstance(v, float) else Fraction(v)


def _valid(schema: dict, x: Fraction) -> bool:
    if schema.get("type") == "integer" and x.denominator != 1:
        return False
    if "multipleOf" in schema and (x / _exact(schema["multipleOf"])).denominator != 1:
        return False
    checks = {"minimum": lambda b: x >= b, "maximum": lambda b: x <= b, "exclusiveMinimum": lambda b: x > b,
              "exclusiveMaximum": lambda b: x < b}
    return all(ok(_exact(schema[kw])) for kw, ok in checks.items() if kw in schema)


def _spell(x: Fraction, zeros: int = 0) -> str:
    """The decimal spelling of ``x`` (no exponent), with ``zeros`` more trailing zeros."""
    digits, y = 0, abs(x)
    while y.denominator != 1:
        y, digits = y * 10, digits + 1
    text = str(y.numerator).rjust(digits + 1, "0")
    text = text if digits == 0 else f"{text[:-digits]}.{text[-digits:]}"
    if zeros:
        text += ("" if digits else ".") + "0" * zeros
    return ("-" if x < 0 else "") + text


@pytest.mark.parametrize("seed", range(6))
def test_bounded_multiples_match_exact_arithmetic(seed):
    """Ranges wide enough for the automaton (more than MAX_LISTED_MULTIPLES multiples), each bound kind, both
    signs, integer and decimal steps; candidates around the bounds, around 0 and off the grid."""
    rng = random.Random(seed)
    for _ in range(12):
        step = rng.choice([0.25, 0.5, 0.01, 1e-8, 0.1, 2.5, 0.3, 1.5, 0.125, 0.05, 3, 7, 12])
        schema = {"type": rng.choice(["number", "integer"]), "multipleOf": step}
        width = rng.choice([10 ** 3, 10 ** 6, 10 ** 9])
        for kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if rng.random() < 0.5:
                schema[kw] = rng.choice([rng.randint(-width, width), round(rng.uniform(-width, width), 2)])
        try:
            accepts = _acceptor(schema)
        except SchemaError as e:
            assert "accepts no JSON value" in str(e), (schema, e)
            continue
        k = _exact(step)
        candidates = set()
        for center in [Fraction(0)] + [_exact(v) for kw, v in schema.items() if kw not in ("type", "multipleOf")]:
            m = (center / k).__floor__()
            for j in range(-3, 4):
                candidates |= {(m + j) * k, (m + j) * k + k / 2, (m + j) * k + Fraction(1, 10 ** 9)}
        candidates |= {rng.randint(-2 * width, 2 * width) * k for _ in range(10)}
        for x in candidates:
            for zeros in (0, 2):
                if schema["type"] == "integer" and zeros and x.denominator != 1:
                    continue
                text = _spell(x, zeros)
                assert accepts(text) == _valid(schema, x), (json.dumps(schema), text)


# ----------------------------------------------------------------------------------------------------------------
# Counted properties, now a repetition: exactly what jsonschema says, small bounds in every shape

OBJECTS = [{}, {"a": 1}, {"a": 1, "b": 2}, {"b": "x"}, {"a": 1, "b": 2, "c": 3}, {"x1": 1}, {"x1": 1, "x2": "s"},
           {"c": 1, "x1": 2, "d": 3}, {"a": "s", "b": 1}, {"a": 1, "b": 2, "c": 3, "d": 4}]


@pytest.mark.parametrize("bounds", [(1, None), (2, None), (3, None), (0, 0), (0, 1), (0, 2), (1, 3), (2, 2)])
@pytest.mark.parametrize("shape", [
    {}, {"properties": {"a": {"type": "integer"}, "b": {}}},
    {"properties": {"a": {"type": "integer"}}, "additionalProperties": False},
    {"patternProperties": {"^x": {"type": "integer"}}},
    {"patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False},
    {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
    {"not": {"patternProperties": {"^x": {"type": "integer"}}}},
])
def test_counted_properties_match_jsonschema(bounds, shape):
    jsonschema = pytest.importorskip("jsonschema", reason="the differential check needs the jsonschema package")
    lo, hi = bounds
    schema = {"type": "object", **shape, "minProperties": lo, **({} if hi is None else {"maxProperties": hi})}
    validator = jsonschema.Draft202012Validator(schema)
    try:
        accepts = _acceptor(schema)
    except SchemaError as e:
        assert "accepts no JSON value" in str(e) and not any(validator.is_valid(o) for o in OBJECTS), e
        return
    for o in OBJECTS:
        assert accepts(json.dumps(o)) == validator.is_valid(o), (schema, o)


# ----------------------------------------------------------------------------------------------------------------
# The limits module

def test_every_limit_is_documented_and_named_in_docs():
    constants = [n for n in dir(_limits) if n.startswith("MAX_")]
    assert len(constants) >= 20
    docs = open(os.path.join(os.path.dirname(__file__), "..", "docs", "json_schema.md"), encoding="utf-8").read()
    for name in constants:
        assert f"``{name}``" in _limits.__doc__, name
        assert isinstance(getattr(_limits, name), int), name
    for name in ("MAX_SCHEMA_DEPTH", "MAX_EXPANSION_DEPTH", "MAX_WORK", "MAX_ENUM_VALUES", "MAX_DECIMAL_DIGITS",
                 "MAX_REPETITION", "MAX_MULTIPLE_OF_RULES", "MAX_PROPERTY_COUNT_STATES"):
        assert f"`{name}`" in docs, name


def test_unsupported_errors_are_value_errors():
    assert issubclass(UnsupportedSchemaError, ValueError)
    e = pytest.raises(UnsupportedSchemaError, json_schema_to_ebnf, {"type": "object", "maxProperties": 1 << 21})
    assert e.value.pointer == "/maxProperties"
