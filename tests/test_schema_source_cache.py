"""The grammar-level cache keys a JSON Schema by its own text and options (agent servers see the same tool sets
again), so a schema seen before skips the schema-to-grammar conversion as well as the engine's compile. Both routes:
the Python front end (counted here) and the native one, which looks up, converts and compiles in one call."""

from __future__ import annotations

import json

import pytest

import xg2jax as xgr
import xg2jax.json_schema as js

# unevaluatedProperties: a keyword the native front end does not handle yet, so these schemas take the Python front
# end.
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
          "required": ["city"], "unevaluatedProperties": False}
NATIVE_SCHEMA = {k: v for k, v in SCHEMA.items() if k != "unevaluatedProperties"}


@pytest.fixture
def tok():
    return xgr.TokenizerInfo(["</s>", "{", "}", '"', "city", ":", "1", ",", " ", "a"], stop_token_ids=[0])


@pytest.fixture
def conversions(monkeypatch):
    """Counts calls of the Python JSON Schema front end."""
    calls = []
    real = js.python_json_schema_to_ebnf

    def counting(schema, **kw):
        calls.append(schema)
        return real(schema, **kw)

    monkeypatch.setattr(js, "python_json_schema_to_ebnf", counting)
    return calls


def test_native_route_caches_by_text_too(tok, conversions):
    assert js.native_arguments(NATIVE_SCHEMA) is not None
    assert js.native_arguments(SCHEMA) is not None  # eligible; the native front end then declines unevaluatedProperties
    c = xgr.GrammarCompiler(tok)
    g1 = c.compile_json_schema(NATIVE_SCHEMA)
    g2 = c.compile_json_schema(json.loads(json.dumps(NATIVE_SCHEMA)))
    g3 = c.compile_json_schema(json.dumps(NATIVE_SCHEMA, ensure_ascii=False))
    assert conversions == []  # converted natively, once (a hit returns before converting)
    assert g1._handle is g2._handle is g3._handle
    info = c.cache_info()
    assert (info["grammar_hits"], info["grammar_misses"]) == (2, 1)


def test_a_schema_seen_before_skips_the_front_end(tok, conversions):
    c = xgr.GrammarCompiler(tok)
    g1 = c.compile_json_schema(SCHEMA)
    g2 = c.compile_json_schema(json.loads(json.dumps(SCHEMA)))  # an equal dict: the same text
    g3 = c.compile_json_schema(json.dumps(SCHEMA, ensure_ascii=False))  # the same text as a string
    assert len(conversions) == 1
    assert g1._handle is g2._handle is g3._handle
    info = c.cache_info()
    assert (info["grammar_hits"], info["grammar_misses"]) == (2, 1)


def test_other_options_or_text_convert_again(tok, conversions):
    c = xgr.GrammarCompiler(tok)
    c.compile_json_schema(SCHEMA)
    c.compile_json_schema(SCHEMA, any_whitespace=False)
    c.compile_json_schema(SCHEMA, strict_mode=False)
    c.compile_json_schema(dict(reversed(list(SCHEMA.items()))))  # other key order: other text (order matters)
    assert len(conversions) == 4
    assert c.cache_info()["grammar_misses"] == 4


def test_no_source_caching_when_the_cache_is_off(tok, conversions):
    c = xgr.GrammarCompiler(tok, cache_enabled=False)
    c.compile_json_schema(SCHEMA)
    c.compile_json_schema(SCHEMA)
    assert len(conversions) == 2
    assert c.get_cache_size_bytes() == 0


def test_a_failed_conversion_is_not_cached(tok, conversions):
    c = xgr.GrammarCompiler(tok)
    bad = {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}}
    for _ in range(2):
        with pytest.raises(Exception, match="missing"):
            c.compile_json_schema(bad)
    assert len(conversions) == 2
    assert c.cache_info()["grammar_entry_sizes"] == []


def test_clear_cache_drops_source_entries(tok, conversions):
    c = xgr.GrammarCompiler(tok)
    c.compile_json_schema(SCHEMA)
    c.clear_cache()
    assert c.get_cache_size_bytes() == 0
    c.compile_json_schema(SCHEMA)
    assert len(conversions) == 2
    assert c.get_cache_size_bytes() == sum(c.cache_info()["grammar_entry_sizes"]) + \
        sum(c.cache_info()["rule_entry_sizes"]) + c.cache_info()["structure_bytes"]


@pytest.mark.parametrize("schema", [NATIVE_SCHEMA, SCHEMA], ids=["native", "python_front_end"])
@pytest.mark.parametrize("options", [{}, {"any_whitespace": False, "max_whitespace_cnt": 2, "any_order": True},
                                     {"strict_mode": False, "plain_integers": False, "enforce_formats": False}],
                         ids=["defaults", "layout", "modes"])
def test_text_first_then_dict_share_one_entry(tok, conversions, schema, options):
    # JSON text with the default layout takes a short path of its own; its cache key must be the general path's.
    c = xgr.GrammarCompiler(tok)
    g1 = c.compile_json_schema(json.dumps(schema, ensure_ascii=False), **options)
    g2 = c.compile_json_schema(schema, **options)
    g3 = c.compile_json_schema(json.dumps(schema, ensure_ascii=False), **options)
    assert len(conversions) == (0 if schema is NATIVE_SCHEMA else 1)  # the native front end is not asked twice
    assert g1._handle is g2._handle is g3._handle
    assert (c.cache_info()["grammar_hits"], c.cache_info()["grammar_misses"]) == (2, 1)


def test_odd_option_values_take_the_general_path(tok):
    c = xgr.GrammarCompiler(tok)
    text = json.dumps(NATIVE_SCHEMA)
    # An unhashable flag value: the short path cannot key it; the general path compiles it as its truth value.
    g = c.compile_json_schema(text, any_whitespace=[1])
    assert g._handle is c.compile_json_schema(text, any_whitespace=[1])._handle
    assert g._handle is not c.compile_json_schema(text)._handle  # other options text: its own entry


def test_text_that_is_not_utf8_encodable_gets_the_front_ends_error(tok):
    with pytest.raises(ValueError, match="surrogate"):
        xgr.GrammarCompiler(tok).compile_json_schema('{"const": "\ud800"}')
