"""Tool arguments as nested XML elements (xg2jax.xml_values: the ``minimax_m3_xml`` style): objects as an element
per declared property, arrays as <item> elements, raw strings up to the namespace marker, JSON scalars; what cannot
be written is an error naming the keyword; and the minimax_m3 model format end to end."""

from __future__ import annotations

import pytest

import xg2jax as xgr
from xg2jax.json_schema import json_schema_to_ebnf
from xg2jax.model_formats import MINIMAX_M3_CALLS
from xg2jax.testing import is_grammar_accept_string
from xg2jax.xml_values import MINIMAX_M3_MARKER as M
from xg2jax.xml_values import render_xml_value

SCHEMA = {"type": "object", "properties": {
    "s": {"type": "string"}, "e": {"enum": ["a", "b", 3]}, "n": {"type": "number", "minimum": 0},
    "b": {"type": "boolean"}, "z": {"type": "null"}, "u": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    "arr": {"type": "array", "items": {"type": "object", "properties": {"q": {"type": "integer"}}}, "maxItems": 2},
    "t": {"type": ["integer", "null"]}}, "required": ["s"]}


@pytest.mark.parametrize("value, ok", [
    ({"s": "hi"}, True),
    ({"s": "h<i> & more", "e": "b", "n": 1.5, "b": True, "z": None, "u": "x", "arr": [{"q": 1}, {}], "t": None}, True),
    ({"s": "x", "e": 3, "u": 7, "t": 2}, True),
    ({"e": "b"}, False),  # s is required
    ({"s": "x", "n": -1}, False),  # minimum holds
    ({"s": "x", "n": "a"}, False),
    ({"s": "x", "arr": [{"q": "z"}]}, False),
    ({"s": "x", "arr": [{}, {}, {}]}, False),  # maxItems holds
    ({"s": "x", "zz": 1}, False),  # no undeclared members
    ({"s": "x", "e": "c"}, False),
])
def test_values_as_elements(value, ok):
    assert is_grammar_accept_string(json_schema_to_ebnf(SCHEMA, json_format="minimax_m3_xml"),
                                    render_xml_value(value)) is ok


def test_whitespace_between_elements_and_raw_strings_stop_at_the_marker():
    g = json_schema_to_ebnf(SCHEMA, json_format="minimax_m3_xml")
    assert is_grammar_accept_string(g, f"\n{M}<s>hi{M}</s>\n{M}<arr>\n{M}<item>{M}</item>\n{M}</arr>\n")
    assert not is_grammar_accept_string(g, f"{M}<s>a{M}b{M}</s>")
    assert (render_xml_value({"s": "x", "arr": [{"q": 1}]}) ==
            f"{M}<s>x{M}</s>{M}<arr>{M}<item>{M}<q>1{M}</q>{M}</item>{M}</arr>")


@pytest.mark.parametrize("schema, message", [
    ({"type": "object", "properties": {"a": {}}}, "unconstrained schemas"),
    ({"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}, "string 'pattern'"),
    ({"type": "object", "properties": {"a": {"type": "array"}}}, "needs an array's items schema"),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, "declared properties only"),
    ({"type": "object", "properties": {"a": {"oneOf": [{"type": "integer"}]}}}, "'oneOf' is not supported"),
])
def test_what_cannot_be_written_is_an_error(schema, message):
    with pytest.raises(ValueError, match=message):
        json_schema_to_ebnf(schema, json_format="minimax_m3_xml")


TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}},
         {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}]


def accepts(text: str, **kw) -> bool:
    tag = xgr.get_model_structural_tag("minimax_m3", TOOLS, **kw)
    return is_grammar_accept_string(xgr.Grammar.from_structural_tag(tag), text)


def test_minimax_m3_format():
    think = "Need the weather.</mm:think>"
    one = MINIMAX_M3_CALLS.render_calls([("get_weather", {"city": "Paris", "days": 3})])
    two = MINIMAX_M3_CALLS.render_calls([("get_weather", {"city": "Paris"}), ("get_time", {})])
    assert accepts(think + "Checking. " + one)
    assert accepts(think + "No call.")
    assert accepts(think + two)
    assert not accepts(think + two, parallel_tool_calls=False)
    assert not accepts(think + MINIMAX_M3_CALLS.render_calls([("get_wether", {"city": "x"})]))
    assert not accepts(think + MINIMAX_M3_CALLS.render_calls([("get_weather", {"days": 3})]))
    assert not accepts(think + MINIMAX_M3_CALLS.render_calls([("get_weather", {"city": "x", "days": "soon"})]))
    assert not accepts(think + "No call.", tool_choice="required")
    assert accepts(think + one, tool_choice="required")
    assert accepts("<mm:think>hm</mm:think>" + one, reasoning="auto") and accepts(one, reasoning="disabled")
    assert not accepts(think + "a <mm:think> b")  # markers stay out of free text
    named = {"type": "function", "function": {"name": "get_time"}}
    assert accepts(think + MINIMAX_M3_CALLS.render_calls([("get_time", {})]), tool_choice=named)
    assert not accepts(think + one, tool_choice=named)
