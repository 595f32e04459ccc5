"""Gemma 4's tool-argument dialect (xgrammar's "gemma" json_format / structural-tag style): JSON whose strings sit
between ``<|"|>`` markers, raw, and whose keys are bare, written by the native JSON Schema front end
(StringStyle::kGemma). Values of every type, constrained strings, undeclared keys, excludes, the gemma_4 model
format end to end, and masks against the token oracle on the Gemma 3 vocabulary."""

from __future__ import annotations

import pytest

import xg2jax as xgr
from real_vocabularies import require
from xg2jax.json_schema import json_schema_to_ebnf
from xg2jax.testing import check_masks_along, is_grammar_accept_string
from xg2jax.xml_styles import render_arguments

SCHEMA = {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
    "opt": {"type": "object", "properties": {"k": {"type": "number"}, "s": {"enum": ["a", "b"]}}, "required": ["k"]},
    "flag": {"type": "boolean"}, "code": {"type": "string", "maxLength": 3},
    "date": {"type": "string", "format": "date"},
    "free": {"type": "object"}}, "required": ["city"], "additionalProperties": {"type": "integer"}}


@pytest.mark.parametrize("text, ok", [
    ('{city:<|"|>Paris<|"|>}', True),
    ('{city:<|"|>Pa"ri\\s<|"|>, days: 3, tags:[<|"|>a<|"|>, <|"|>b<|"|>], opt:{k:1.5, s:<|"|>a<|"|>}, '
     'flag:true}', True),
    ('{"city":"Paris"}', False),  # the JSON spelling is not the dialect
    ('{city:"Paris"}', False),
    ('{city:<|"|>P<|"|>, code:<|"|>abcd<|"|>}', False),  # maxLength holds on the raw value
    ('{city:<|"|>P<|"|>, code:<|"|>a"c<|"|>}', True),
    ('{city:<|"|>P<|"|>, date:<|"|>2024-01-02<|"|>}', True),
    ('{city:<|"|>P<|"|>, date:<|"|>2024-13-02<|"|>}', False),
    ('{city:<|"|>P<|"|>, zz:3}', True),  # an undeclared key: an identifier
    ('{city:<|"|>P<|"|>, z-z:3}', False),
    ('{city:<|"|>P<|"|>, city:3}', False),  # a declared name is not an undeclared key
    ('{city:<|"|>P<|"|>, opt:{k:1, s:<|"|>c<|"|>}}', False),
    ('{city:<|"|>P<|"|>, free:{a:<|"|>x<|"|>, b:[1,{c:null}]}}', True),
])
def test_values_in_the_gemma_dialect(text, ok):
    assert is_grammar_accept_string(json_schema_to_ebnf(SCHEMA, json_format="gemma"), text) is ok


def test_excludes_stop_free_and_automaton_strings():
    tag = {"type": "structural_tag", "format": {"type": "json_schema", "json_schema": SCHEMA, "style": "gemma",
                                                "excludes": ["<|tool_call>", "<tool_call|>"]}}
    g = xgr.Grammar.from_structural_tag(tag)
    assert is_grammar_accept_string(g, '{city:<|"|>Paris<|"|>}')
    assert not is_grammar_accept_string(g, '{city:<|"|>P<|tool_call>x<|"|>}')
    assert not is_grammar_accept_string(g, '{city:<|"|>P<|"|>, tags:[<|"|>a<tool_call|><|"|>]}')
    assert is_grammar_accept_string(g, '{city:<|"|>P<|"|>, tags:[<|"|>a<tool_call<|"|>]}')


def test_render_arguments_writes_the_dialect():
    text = render_arguments("gemma", {"city": "Paris", "days": 3, "tags": ["a"], "opt": {"k": 1.5}, "flag": False})
    assert text == '{city:<|"|>Paris<|"|>,days:3,tags:[<|"|>a<|"|>],opt:{k:1.5},flag:false}'
    assert is_grammar_accept_string(json_schema_to_ebnf(SCHEMA, json_format="gemma"), text)


def test_what_the_dialect_cannot_write_is_an_error():
    with pytest.raises(ValueError, match="'patternProperties' with string excludes or the gemma style"):
        json_schema_to_ebnf({"type": "object", "patternProperties": {"^x": {}}}, json_format="gemma")


@pytest.mark.parametrize("vocab", ["gemma3"])
def test_gemma_4_masks_equal_the_oracle_on_a_real_vocabulary(vocab):
    tok = xgr.TokenizerInfo.from_loaded_vocab(require(vocab))
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
    compiled = xgr.GrammarCompiler(tok).compile_structural_tag(xgr.get_model_structural_tag("gemma_4", tools))
    text = ("<|channel>thought\nNeed the weather.<channel|>Checking. <|tool_call>call:get_weather" +
            render_arguments("gemma", {"city": "Lyon", "days": 2, "tags": ["rain"]}) + "<tool_call|> Done.")
    check_masks_along(compiled, text)
