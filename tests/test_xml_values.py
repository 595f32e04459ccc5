"""Tool arguments as nested XML elements (xg2jax.xml_values). ``minimax_m3_xml``: objects as an element per declared
property, arrays as <item> elements, raw strings up to the namespace marker, JSON scalars; ``cohere_xml``: typed
<cofl:value> elements (raw / json / dict / list), escaped keys, undeclared members, references; what cannot be
written is an error naming the keyword; the minimax_m3 model format end to end; masks equal the token oracle."""

from __future__ import annotations

import pytest

import xg2jax as xgr
from xg2jax.json_schema import json_schema_to_ebnf
from xg2jax.model_formats import MINIMAX_M3_CALLS
from xg2jax.testing import is_grammar_accept_string
from xg2jax.xml_values import MINIMAX_M3_MARKER as M
from xg2jax.xml_values import render_cohere_value, render_xml_value

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


# cohere_xml ----------------------------------------------------------------------------------------------------

def cv(name, kind, body) -> str:
    """One cohere_xml element (name None: an array item)."""
    head = "<cofl:value" + ("" if name is None else f' name="{name}"')
    return f'{head} type="{kind}">{body}</cofl:value>'


COHERE = {"type": "object", "properties": {
    "s": {"type": "string"}, "p": {"type": "string", "pattern": "^[a-z]+$"}, "e": {"enum": ["a b", 3, None]},
    "n": {"type": "integer", "minimum": 0}, "t": {"type": ["string", "null"]},
    "d": {"type": "object", "properties": {"q": {"type": "boolean"}}, "required": ["q"]},
    "l": {"type": "array", "items": {"type": "number"}, "maxItems": 2}, "any": {},
    "free": {"type": "object"}, "r": {"$ref": "#/$defs/node"}}, "required": ["s"],
    "$defs": {"node": {"type": "object", "properties": {"k": {"$ref": "#/$defs/node"}}}}}


def cohere_accepts(schema, text) -> bool:
    return is_grammar_accept_string(json_schema_to_ebnf(schema, json_format="cohere_xml"), text)


COHERE_CASES = [
    (cv("s", "raw", " free <text> & more "), True),  # free strings keep their whitespace, hold markup
    (cv("s", "raw", "x") + cv("p", "raw", " abc\n") + cv("e", "raw", " a b ") + cv("n", "json", " 7 "), True),
    (cv("s", "raw", "x") + cv("e", "json", "3") + cv("t", "json", "null"), True),
    (cv("s", "raw", "x") + cv("t", "raw", "null"), True),  # a string "null"
    (cv("s", "raw", "x") + cv("d", "dict", " " + cv("q", "json", "true") + "\n"), True),
    (cv("s", "raw", "x") + cv("l", "list", cv(None, "json", "1.5") + cv(None, "json", "2")), True),
    (cv("s", "raw", "x") + cv("any", "list", cv(None, "dict", cv("z", "raw", "y")))
     + cv("free", "dict", cv("a&amp;b", "json", "1")), True),  # {} any value, {type: object} any object
    (cv("s", "raw", "x") + cv("r", "dict", cv("k", "dict", cv("k", "dict", ""))), True),  # recursive $ref
    (cv("e", "raw", "a b"), False),  # s is required
    (cv("s", "json", '"x"'), False),  # a string is raw
    (cv("s", "raw", "x") + cv("p", "raw", "ABC"), False),  # the pattern holds, on the whole string
    (cv("s", "raw", "x") + cv("e", "raw", "3"), False),  # a number constant is json
    (cv("s", "raw", "x") + cv("n", "json", "-1"), False),  # minimum holds
    (cv("s", "raw", "x") + cv("d", "dict", ""), False),  # q is required
    (cv("s", "raw", "x") + cv("l", "list", cv(None, "json", "1") + " " + cv(None, "json", "2")), False),
    (cv("s", "raw", "x") + cv("l", "list", cv("0", "json", "1")), False),  # items have no name
    (cv("s", "raw", "x") + cv("l", "list", cv(None, "json", "1") * 3), False),  # maxItems holds
    (cv("s", "raw", "x") + cv("zz", "raw", "y"), False),  # closed (strict mode)
    (cv("n", "json", "1") + cv("s", "raw", "x"), False),  # schema order
    (cv("s", "raw", "x") + cv("free", "dict", cv("a&b", "json", "1")), False),  # keys are escaped
]


@pytest.mark.parametrize("text, ok", COHERE_CASES)
def test_cohere_values(text, ok):
    assert cohere_accepts(COHERE, text) is ok


def test_cohere_undeclared_members_and_keys():
    schema = {"type": "object", "properties": {"foo": {"type": "integer"}, "a&b": {"type": "integer"}},
              "additionalProperties": {"type": "string"}}
    assert cohere_accepts(schema, cv("a&amp;b", "json", "1") + cv("bar", "raw", "x") + cv("fooo", "raw", "y"))
    assert cohere_accepts(schema, cv("fo", "raw", "x") + cv("b&lt;", "raw", "x") + cv("a&amp;", "raw", "x"))
    # an undeclared key is never a declared name (nor written before the declared members)
    assert not cohere_accepts(schema, cv("foo", "raw", "x"))
    assert not cohere_accepts(schema, cv("a&amp;b", "raw", "x"))
    assert not cohere_accepts(schema, cv("bar", "raw", "x") + cv("foo", "json", "1"))
    assert not cohere_accepts(schema, cv("", "raw", "x"))
    # arguments without a schema: any members
    assert cohere_accepts(True, cv("x", "list", cv(None, "raw", "y") + cv(None, "json", "null")) + "\n")
    assert not cohere_accepts(True, "plain text")


def test_cohere_renderer_and_whitespace_bound():
    value = {"city": "Paris", "tags": ["a"], "opts": {"k&": 1.5, "on": True}, "none": None}
    assert render_cohere_value(value) == (
        cv("city", "raw", "Paris") + cv("tags", "list", cv(None, "raw", "a"))
        + cv("opts", "dict", cv("k&amp;", "json", "1.5") + cv("on", "json", "true")) + cv("none", "json", "null"))
    assert cohere_accepts(True, render_cohere_value(value))
    # objects inside arrays are dict elements (only the arguments object is written as bare members)
    rows = {"rows": [{"f": "age"}]}
    assert render_cohere_value(rows) == cv("rows", "list", cv(None, "dict", cv("f", "raw", "age")))
    rows_schema = {"type": "object", "properties": {"rows": {"type": "array", "items": {
        "type": "object", "properties": {"f": {"type": "string"}}, "required": ["f"]}}}}
    assert cohere_accepts(rows_schema, render_cohere_value(rows))
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    bounded = json_schema_to_ebnf(schema, json_format="cohere_xml", max_whitespace_cnt=2)
    assert is_grammar_accept_string(bounded, "  " + cv("n", "json", "1") + "  ")
    assert not is_grammar_accept_string(bounded, "   " + cv("n", "json", "1"))


@pytest.mark.parametrize("schema, message", [
    ({"type": "object", "properties": {"a": {"not": {"type": "string"}}}}, "'not' is not supported by cohere_xml"),
    ({"type": "object", "patternProperties": {"^x": {}}}, "'patternProperties' is not supported by cohere_xml"),
    ({"type": "object", "properties": {"a": {"allOf": [{"type": "integer"}, {"minimum": 1}]}}},
     "'allOf' of more than one schema"),
    ({"type": "object", "properties": {"a": {"type": "string", "pattern": "a", "maxLength": 2}}},
     "constrained by pattern and lengths together"),
    ({"type": "object", "properties": {"a": {"$ref": "other.json#/x"}}}, "local references"),
    ({"type": "object", "properties": {"a": {"type": "array", "prefixItems": [{}]}}}, "'prefixItems' is not"),
    ({"type": "array"}, "must be an object schema"),
])
def test_cohere_what_cannot_be_written_is_an_error(schema, message):
    with pytest.raises(ValueError, match=message):
        json_schema_to_ebnf(schema, json_format="cohere_xml")


def test_cohere_matches_xgrammar():
    """Each verdict above equals xgrammar's (a dev extra: skipped without it)."""
    xgt = pytest.importorskip("xgrammar.testing")
    import json

    theirs = xgt._json_schema_to_ebnf(json.dumps(COHERE), json_format="cohere_xml")
    for text, ok in COHERE_CASES:
        assert xgt._is_grammar_accept_string(theirs, text) is ok, text


@pytest.mark.parametrize("vocab", ["qwen2"])
def test_cohere_masks_equal_the_oracle_on_a_real_vocabulary(vocab):
    from real_vocabularies import require
    from xg2jax.testing import check_masks_along

    tok = xgr.TokenizerInfo.from_loaded_vocab(require(vocab))
    compiled = xgr.GrammarCompiler(tok).compile_grammar(json_schema_to_ebnf(COHERE, json_format="cohere_xml"))
    check_masks_along(compiled, render_cohere_value({"s": "a <b>", "p": "abc", "e": 3, "d": {"q": False},
                                                     "l": [1, 2.5], "any": {"k": ["v"]}}))
