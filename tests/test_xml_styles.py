"""XML-style tool-call arguments (xg2jax.xml_styles): each style's language on hand-written cases, the structural
tag ``style`` field, clear errors for what is not supported, and masks equal to the token oracle on real
vocabularies."""

from __future__ import annotations

import random

import pytest

import xg2jax as xgr
from real_vocabularies import require
from xg2jax.json_schema import UnsupportedSchemaError, json_schema_to_ebnf
from xg2jax.structural_tag import StructuralTagError
from xg2jax.testing import check_masks_along, is_grammar_accept_string

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"enum": ["C", "F"]}},
    "required": ["city"],
}


def accepts(schema, style: str, text: str, **kw) -> bool:
    return is_grammar_accept_string(json_schema_to_ebnf(schema, json_format=style, **kw), text)


def qwen(name, value):
    return f"<parameter={name}>{value}</parameter>"


@pytest.mark.parametrize("text, ok", [
    (qwen("city", "Paris"), True),
    (qwen("city", "Paris") + "\n" + qwen("days", " 3\n") + qwen("unit", "F") + "\n", True),
    (qwen("city", "São Paulo <b>centre</b>, \"quoted\"\n2 lines"), True),  # raw text: no quotes, no escapes
    (qwen("city", ""), True),
    (qwen("city", "a</parameter>b"), False),  # free text stops at the closing tag
    (qwen("days", "3"), False),  # city is required
    (qwen("city", "Paris") + qwen("days", "3.5"), False),  # an integer
    (qwen("city", "Paris") + qwen("days", '"3"'), False),  # JSON values are not strings
    (qwen("city", "Paris") + qwen("unit", "K"), False),
    (qwen("unit", "C") + qwen("city", "Paris"), False),  # schema order
    (qwen("city", "Paris") + qwen("other", "x"), False),  # closed under strict_mode
    ('{"city": "Paris"}', False),
])
def test_qwen_xml_language(text, ok):
    assert accepts(WEATHER, "qwen_xml", text) is ok


@pytest.mark.parametrize("style, text", [
    ("minimax_xml", '<parameter name="city">Paris</parameter> <parameter name="days">3</parameter>'),
    ("glm_xml", "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value>"),
    ("deepseek_xml", '<\uff5cDSML\uff5cparameter name="city" string="true">Paris</\uff5cDSML\uff5cparameter>'
                     '<\uff5cDSML\uff5cparameter name="days" string="false">3</\uff5cDSML\uff5cparameter>'),
    ("deepseek_v4_1_xml", '<\uff5cDSML\uff5c parameter name="city" string="true">Paris</\uff5cDSML\uff5c parameter>'),
    ("kimi_k3_xml", '<|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>'
                    '<|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|>'),
])
def test_each_style_accepts_its_own_spelling_and_not_qwens(style, text):
    assert accepts(WEATHER, style, text)
    assert not accepts(WEATHER, style, qwen("city", "Paris"))


def test_deepseek_marks_each_value_by_its_kind():
    p = '<\uff5cDSML\uff5cparameter name="{}" string="{}">{}</\uff5cDSML\uff5cparameter>'
    assert accepts(WEATHER, "deepseek_xml", p.format("city", "true", "Paris"))
    assert not accepts(WEATHER, "deepseek_xml", p.format("city", "false", "Paris"))
    assert not accepts(WEATHER, "deepseek_xml", p.format("city", "true", "Paris") + p.format("days", "true", "3"))
    nullable = {"type": "object", "properties": {"v": {"type": ["string", "null"]}}, "required": ["v"]}
    assert accepts(nullable, "deepseek_xml", p.format("v", "true", "null"))  # the string "null"
    assert accepts(nullable, "deepseek_xml", p.format("v", "false", " null "))  # JSON null
    assert not accepts(nullable, "deepseek_xml", p.format("v", "false", "text"))


@pytest.mark.parametrize("prop, good, bad", [
    ({"type": "string", "minLength": 2, "maxLength": 3}, ["ab", "abc"], ["a", "abcd"]),
    ({"type": "string", "pattern": "^[0-9]{3}$"}, ["123"], ["12", "1234", "12a"]),
    ({"type": "string", "pattern": "[0-9]{3}"}, ["123", "ab1234cd"], ["12", "a1b2c3"]),  # search semantics
    ({"type": "string", "pattern": "^a|b$"}, ["a", "axx", "xxb"], ["xa", "bx"]),
    ({"type": "string", "format": "date"}, ["2024-02-29"], ["2024-2-29", "yesterday"]),
    ({"enum": ["north", "south", 3]}, ["north", " 3 "], ["east", '"north"']),
    ({"type": ["string", "null"]}, ["text", "null"], []),
    ({"type": "array", "items": {"type": "string"}}, ['["a", "b"]', "[]"], ["[a, b]", "a"]),
    ({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}, ['{"x": "raw?"}'],
     ["{x: 1}", '{"x": 1}']),
    ({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]}, ["7", "-2", "z"], ["zz", "1.5"]),
    ({"$ref": "#/$defs/code"}, ["AB"], ["ABC", "ab"]),
])
def test_a_value_is_raw_text_for_strings_and_json_otherwise(prop, good, bad):
    schema = {"type": "object", "properties": {"v": prop}, "required": ["v"],
              "$defs": {"code": {"type": "string", "pattern": "^[A-Z]{2}$"}}}
    for value in good:
        assert accepts(schema, "qwen_xml", qwen("v", value)), value
    for value in bad:
        assert not accepts(schema, "qwen_xml", qwen("v", value)), value


def test_json_values_follow_references_into_the_document():
    schema = {"type": "object", "$defs": {"pt": {"type": "object", "properties": {"x": {"type": "integer"}},
                                                 "required": ["x"]}},
              "properties": {"p": {"$ref": "#/$defs/pt"}, "q": {"type": "array", "items": {"$ref": "#/$defs/pt"}}},
              "required": ["p", "q"]}
    assert accepts(schema, "qwen_xml", qwen("p", '{"x": 1}') + qwen("q", '[{"x": 2}]'))
    assert not accepts(schema, "qwen_xml", qwen("p", '{"x": "1"}') + qwen("q", "[]"))


def test_additional_properties_and_property_counts():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
              "additionalProperties": {"type": "boolean"}, "minProperties": 2, "maxProperties": 3}
    assert accepts(schema, "qwen_xml", qwen("a", "1") + qwen("b", "2"))
    assert accepts(schema, "qwen_xml", qwen("a", "1") + qwen("flag", "true"))
    assert accepts(schema, "qwen_xml", qwen("a", "1") + qwen("b", "2") + qwen("flag", "false"))
    assert not accepts(schema, "qwen_xml", qwen("a", "1"))
    assert not accepts(schema, "qwen_xml", qwen("a", "1") + qwen("b", "2") + qwen("f", "true") + qwen("g", "true"))
    assert not accepts(schema, "qwen_xml", qwen("a", "1") + qwen("flag", "maybe"))
    assert not accepts(schema, "qwen_xml", qwen("a", "1") + qwen("9lives", "true"))
    # a free schema: any parameters, any values
    assert accepts(True, "qwen_xml", qwen("name", "\nvalue\n") + qwen("abc", "[1, 2]"))
    assert not accepts(True, "qwen_xml", "anything")


def test_empty_arguments():
    assert accepts({"type": "object", "properties": {}}, "qwen_xml", "")
    assert accepts({"type": "object", "properties": {}}, "qwen_xml", "  \n")
    assert accepts({"type": "object", "properties": {"a": {"type": "string"}}}, "glm_xml", "")


@pytest.mark.parametrize("schema, style, message", [
    ({"type": "object", "properties": {"v": {"not": {"type": "string"}}}}, "cohere_xml",
     "'not' is not supported by cohere_xml"),
    ({"type": "array"}, "qwen_xml", 'must have type "object"'),
    ({"type": "object", "patternProperties": {"^x": {}}}, "qwen_xml", "the keyword 'patternProperties' at the root"),
    ({"type": "object", "properties": {"v": {"type": "string", "pattern": "a", "minLength": 2}}}, "qwen_xml",
     "constrained by pattern and lengths together is not supported"),
    ({"type": "object", "properties": {"v": {"oneOf": [{"type": "string"}]}}}, "qwen_xml",
     "'oneOf' in an XML-style parameter that accepts strings is not supported"),
])
def test_what_is_not_supported_raises_naming_it(schema, style, message):
    with pytest.raises(UnsupportedSchemaError, match=message.replace("(", r"\(").replace(")", r"\)")):
        json_schema_to_ebnf(schema, json_format=style)


def test_an_unknown_style_is_a_value_error():
    with pytest.raises(ValueError, match="json_format must be one of json, qwen_xml"):
        json_schema_to_ebnf(WEATHER, json_format="yaml")


def test_structural_tag_style_field():
    tag = {"type": "structural_tag", "format": {
        "type": "triggered_tags", "triggers": ["<tool_call>"],
        "tags": [{"type": "tag", "begin": "<tool_call>\n<function=get_weather>\n", "end": "</function>\n</tool_call>",
                  "content": {"type": "json_schema", "json_schema": WEATHER, "style": "qwen_xml"}}]}}
    grammar = xgr.Grammar.from_structural_tag(tag)
    call = "<tool_call>\n<function=get_weather>\n" + qwen("city", "Oslo") + "\n</function>\n</tool_call>"
    assert is_grammar_accept_string(grammar, "Checking. " + call + " Done.")
    assert not is_grammar_accept_string(grammar, "<tool_call>\n<function=get_weather>\n" + qwen("days", "2")
                                        + "\n</function>\n</tool_call>")
    bad = {"type": "structural_tag", "format": {"type": "json_schema", "json_schema": WEATHER, "style": "cohere_xml",
                                                "any_order": True}}
    with pytest.raises(StructuralTagError, match="at '/format/json_schema'.*any_order is not supported by cohere_xml"):
        xgr.Grammar.from_structural_tag(bad)
    bad["format"]["style"] = "qwen_xml"
    del bad["format"]["any_order"]
    bad["format"]["json_schema"] = {"type": "string"}
    with pytest.raises(StructuralTagError, match="at '/format/json_schema'.*must have type"):
        xgr.Grammar.from_structural_tag(bad)


@pytest.mark.parametrize("vocab", ["gemma3", "qwen2"])
@pytest.mark.parametrize("style", ["qwen_xml", "deepseek_xml", "kimi_k3_xml"])
def test_masks_equal_the_oracle_on_real_vocabularies(vocab, style):
    tok = xgr.TokenizerInfo.from_loaded_vocab(require(vocab))
    compiled = xgr.GrammarCompiler(tok).compile_grammar(json_schema_to_ebnf(WEATHER, json_format=style))
    texts = {
        "qwen_xml": qwen("city", "São Paulo </param") + "\n" + qwen("days", " 12 ") + qwen("unit", "C") + "\n",
        "deepseek_xml": ('<\uff5cDSML\uff5cparameter name="city" string="true">Köln</\uff5cDSML\uff5cparameter>\n'
                         '<\uff5cDSML\uff5cparameter name="days" string="false">7</\uff5cDSML\uff5cparameter>'),
        "kimi_k3_xml": ('<|open|>argument key="city" type="string"<|sep|>Lima <|close|>argument<|sep|>'
                        '<|open|>argument key="unit" type="string"<|sep|>F<|close|>argument<|sep|>'),
    }
    assert is_grammar_accept_string(compiled.grammar, texts[style])
    check_masks_along(compiled, texts[style])
    if style == "qwen_xml":  # another tokenization of the same text
        check_masks_along(compiled, texts[style], rng=random.Random(vocab))


@pytest.mark.parametrize("style", ["qwen_xml", "minimax_xml", "glm_xml", "deepseek_xml", "deepseek_v4_1_xml",
                                   "kimi_k3_xml"])
def test_render_arguments_writes_what_the_style_accepts(style):
    from xg2jax.xml_styles import render_arguments

    schema = {"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer"},
                                               "f": {"type": "boolean"}, "l": {"type": "array"}},
              "required": ["a", "n", "f"]}
    text = render_arguments(style, {"a": "two words", "n": 3, "f": True, "l": [1, "x"]})
    assert accepts(schema, style, text), text
    assert not accepts(schema, style, render_arguments(style, {"a": "x", "n": "three", "f": True}))
    with pytest.raises(ValueError, match="json_format must be one of"):
        render_arguments("json", {})
