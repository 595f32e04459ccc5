"""Texts a JSON value's strings must not contain: the structural-tag ``json_schema`` format's ``excludes``
(JsonSchemaOptions::string_excludes natively). Strings anywhere in the value (free, bounded, patterned, keys of
free objects, items of arrays) refuse the texts, in JSON and in the XML argument styles; a free string's text is
checked (an escape is not the text, as in xgrammar), an automaton's string (pattern, format, lengths) its value;
everything else is as without excludes; what the native front end cannot write with excludes is a clear error."""

from __future__ import annotations

import json

import pytest

import xg2jax as xgr
from xg2jax.json_schema import UnsatisfiableSchemaError, native_grammar
from xg2jax.testing import is_grammar_accept_string

MARKERS = ["<|open|>", "<|close|>"]
SCHEMA = {"type": "object", "properties": {
    "city": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}, "extra": {"type": "object"},
    "code": {"type": "string", "maxLength": 12}, "word": {"type": "string", "pattern": "^[a-z<|>]+$"}},
    "required": ["city"]}


def accepts(style: str, text: str, schema=SCHEMA, excludes=MARKERS) -> bool:
    tag = {"type": "structural_tag", "format": {"type": "json_schema", "json_schema": schema, "style": style,
                                                "excludes": excludes}}
    return is_grammar_accept_string(xgr.Grammar.from_structural_tag(tag), text)


@pytest.mark.parametrize("text, with_excludes, without", [
    ('{"city": "Paris"}', True, True),
    ('{"city": "Pa<|open|>ris"}', False, True),
    ('{"city": "Pa<|opn|>ris <|clos"}', True, True),  # near misses are text
    ('{"city": "P", "tags": ["a", "b<|close|>"]}', False, True),
    ('{"city": "P", "tags": ["a", "b<|close"]}', True, True),
    ('{"city": "P", "extra": {"k<|open|>": 1}}', False, True),  # keys of a free object
    ('{"city": "P", "extra": {"k": ["<|open|>"]}}', False, True),
    ('{"city": "P", "extra": {"k": {"n": 1.5}}}', True, True),
    ('{"city": "P", "code": "<|close|>"}', False, True),  # a bounded string
    ('{"city": "P", "code": "<|clos|>abcd"}', True, True),
    ('{"city": "P", "code": "0123456789abc"}', False, False),  # the bound still holds
    ('{"city": "P", "word": "ab<|open|>"}', False, True),  # a pattern's string
    ('{"city": "P", "word": "ab<|opn|>"}', True, True),
    ('{"city": "P\\u003c|open|>"}', True, True),  # a free string: its text is checked, an escape is not the text
    ('{"city": "P", "word": "a\\u003c|open|>"}', False, False),  # an automaton's string spells '<' itself
    ('{"city": "P", "zz": 1}', True, True),
])
def test_json_strings_refuse_the_texts(text, with_excludes, without):
    assert accepts("json", text) is with_excludes
    assert accepts("json", text, excludes=[]) is without


def test_undeclared_keys_refuse_the_texts_and_declared_names():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "integer"}}
    assert accepts("json", '{"a": 1, "b": 2}', schema)
    assert not accepts("json", '{"a": 1, "b<|close|>": 2}', schema)
    assert not accepts("json", '{"a": 1, "a": 2}', schema)  # a declared name is not an undeclared key


@pytest.mark.parametrize("text, ok", [
    ('<|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>', True),
    ('<|open|>argument key="city" type="string"<|sep|>Pa<|open|>ris<|close|>argument<|sep|>', False),
    ('<|open|>argument key="city" type="string"<|sep|>P<|close|>argument<|sep|>'
     '<|open|>argument key="tags" type="array"<|sep|>["a<|close|>"]<|close|>argument<|sep|>', False),
    ('<|open|>argument key="city" type="string"<|sep|>P<|close|>argument<|sep|>'
     '<|open|>argument key="tags" type="array"<|sep|>["a<|clos"]<|close|>argument<|sep|>', True),
])
def test_xml_style_raw_and_json_strings_refuse_the_texts(text, ok):
    assert accepts("kimi_k3_xml", text, excludes=MARKERS + ["<|sep|>"]) is ok


def test_approximation_xml_raw_strings_with_a_pattern_or_lengths_are_not_checked_for_the_texts():
    """Documented approximation (docs/tool_calling.md, as in xgrammar): a raw XML value constrained by a pattern,
    format or lengths follows the constraint only."""
    head = '<|open|>argument key="city" type="string"<|sep|>P<|close|>argument<|sep|>'
    code = '<|open|>argument key="code" type="string"<|sep|>a<|open|>b<|close|>argument<|sep|>'
    assert accepts("kimi_k3_xml", head + code, excludes=MARKERS)
    too_long = '<|open|>argument key="code" type="string"<|sep|>0123456789abc<|close|>argument<|sep|>'
    assert not accepts("kimi_k3_xml", head + too_long, excludes=MARKERS)


def test_what_the_native_front_end_cannot_write_with_excludes_is_an_error():
    schema = {"type": "object", "patternProperties": {"^x": {"type": "string"}}}
    with pytest.raises(ValueError, match="'patternProperties' with string excludes"):
        accepts("json", "{}", schema)
    with pytest.raises(ValueError, match="non-empty strings"):
        accepts("json", "{}", excludes=[""])
    with pytest.raises(ValueError, match="holding '\"' or"):
        accepts("json", '{"city": "x"}', excludes=['a"b'])


def test_native_grammar_reports_the_schemas_own_errors():
    with pytest.raises(UnsatisfiableSchemaError):
        native_grammar({"type": "string", "minLength": 3, "maxLength": 1}, string_excludes=["x"])
    g = native_grammar({"type": "array", "items": {"type": "string"}}, string_excludes=["ab"])
    assert is_grammar_accept_string(g, '["a", "b"]') and not is_grammar_accept_string(g, '["xaby"]')


def test_free_strings_agree_with_a_substring_check_on_random_texts():
    """The Aho-Corasick construction (excluded_texts.cc) against `in`: random excluded texts over a small
    alphabet (overlapping, nested, repeated characters) and random strings."""
    import random

    rng = random.Random(7)
    alphabet = "ab<|é"
    for _ in range(40):
        texts = list({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3)))
                      for _ in range(rng.randint(1, 3))})
        g = native_grammar({"type": "string"}, string_excludes=texts)
        for _ in range(15):
            s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
            want = not any(t in s for t in texts)
            assert is_grammar_accept_string(g, json.dumps(s, ensure_ascii=False)) is want, (texts, s)
