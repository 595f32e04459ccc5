"""Structural tags (xg2jax/structural_tag.py): every format type against labelled strings, the legacy form, the
API entry points, and errors that name the JSON path of the bad node. The comparison with xgrammar 0.2.9 on
BFCL tool sets is benchmarks/structural_tag_conformance.py (xgrammar is a benchmark extra)."""

from __future__ import annotations

import json
import re

import pytest

import xg2jax as xgr
from xg2jax.structural_tag import StructuralTagError, StructuralTagItem, structural_tag_to_ebnf
from xg2jax.testing import check_masks_along, is_grammar_accept_string, mask_oracle_diff

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
           "additionalProperties": False}


def st(fmt: dict) -> dict:
    return {"type": "structural_tag", "format": fmt}


def tag(begin, content, end):
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def const(v):
    return {"type": "const_string", "value": v}


QWEN_CALL = tag('<tool_call>\n{"name": "get_weather", "arguments": ',
                {"type": "json_schema", "json_schema": WEATHER}, "}\n</tool_call>")

CASES = {
    "const_string": (const("hello"), ["hello"], ["hell", "hello!", ""]),
    "const_string_empty": (const(""), [""], ["a"]),
    "json_schema": ({"type": "json_schema", "json_schema": WEATHER}, ['{"city": "Paris"}', '{ "city" : "x" }'],
                    ['{"city": 1}', '{}', '{"city": "a", "b": 1}']),
    "json_schema_bool": ({"type": "json_schema", "json_schema": True}, ["1", '{"a": [null]}'], ["", "{"]),
    "grammar": ({"type": "grammar", "grammar": 'root ::= "a" b+\nb ::= "b"'}, ["ab", "abbb"], ["a", "b"]),
    "grammar_lark": ({"type": "grammar", "grammar": 'start: "x" NUM\nNUM: /[0-9]+/', "syntax": "lark"},
                     ["x12"], ["x", "12"]),
    "regex": ({"type": "regex", "pattern": "[a-c]{2,3}"}, ["ab", "abc"], ["a", "abcd", "ad"]),
    "any_text": ({"type": "any_text"}, ["", "anything at all 好"], []),
    "any_text_excludes": ({"type": "any_text", "excludes": ["STOP", "\n\n"]}, ["go on", "ST OP"],
                          ["STOP", "a\n\nb", "xSTOPy"]),
    "sequence": ({"type": "sequence", "elements": [const("a"), {"type": "regex", "pattern": "[0-9]+"}]},
                 ["a1", "a123"], ["a", "1"]),
    "or": ({"type": "or", "elements": [const("yes"), const("no")]}, ["yes", "no"], ["yesno", ""]),
    "optional": ({"type": "optional", "content": const("x")}, ["", "x"], ["xx"]),
    "star": ({"type": "star", "content": const("ab")}, ["", "ab", "abab"], ["a", "aba"]),
    "plus": ({"type": "plus", "content": const("ab")}, ["ab", "abab"], ["", "aba"]),
    "repeat": ({"type": "repeat", "min": 2, "max": 3, "content": const("z")}, ["zz", "zzz"], ["z", "zzzz"]),
    "repeat_unbounded": ({"type": "repeat", "min": 1, "max": -1, "content": const("z")}, ["z", "zzzzz"], [""]),
    "tag": (tag("<a>", {"type": "any_text"}, "</a>"), ["<a></a>", "<a>text</a>"],
            ["<a>text</a>more", "<a>x</a>y</a>", "<a>"]),
    "tag_end_list": (tag("<a>", const("x"), ["</a>", "</A>"]), ["<a>x</a>", "<a>x</A>"], ["<a>x"]),
    "triggered_tags": ({"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": [QWEN_CALL]},
                       ["", "Let me look.", 'Sure.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}'
                        '\n</tool_call> Done.', '<tool_call>\n{"name": "get_weather", "arguments": {"city": "A"}}\n'
                        '</tool_call><tool_call>\n{"name": "get_weather", "arguments": {"city": "B"}}\n</tool_call>'],
                       ['<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>',
                        '<tool_call>\n{"name": "get_weather", "arguments": {"town": "A"}}\n</tool_call>',
                        "text <tool_call> more text"]),
    # xgrammar's example: triggers ["A"], tags A1 L1 A and A2 L2 A.
    "triggered_tags_shared_trigger": ({"type": "triggered_tags", "triggers": ["A"],
                                       "tags": [tag("A1", const("L1"), "A"), tag("A2", const("L2"), "A")]},
                                      ["textA1L1AtextA2L2AText", ""], ["AA", "A1L1A2L2A"]),
    "triggered_tags_at_least_one": ({"type": "triggered_tags", "triggers": ["<"], "tags": [tag("<b>", const("1"), "</b>")],
                                     "at_least_one": True}, ["<b>1</b>", "<b>1</b>x<b>1</b>"], ["", "x<b>1</b>"]),
    "triggered_tags_stop_after_first": ({"type": "triggered_tags", "triggers": ["<"],
                                         "tags": [tag("<b>", const("1"), "</b>")], "stop_after_first": True},
                                        ["x<b>1</b>", "plain"], ["<b>1</b>x", "<b>1</b><b>1</b>"]),
    "triggered_tags_excludes": ({"type": "triggered_tags", "triggers": ["<"], "tags": [tag("<b>", const("1"), "</b>")],
                                 "excludes": ["END"]}, ["x<b>1</b>y"], ["xENDy", "<b>1</b>END"]),
    "tags_with_separator": ({"type": "tags_with_separator", "separator": ",",
                             "tags": [tag("<a>", const("1"), "</a>"), tag("<b>", const("2"), "</b>")]},
                            ["", "<a>1</a>", "<a>1</a>,<b>2</b>,<a>1</a>"], ["<a>1</a><b>2</b>", ",", "<a>1</a>,"]),
    "tags_with_separator_at_least_one": ({"type": "tags_with_separator", "separator": "", "at_least_one": True,
                                          "tags": [tag("<a>", const("1"), "</a>")]},
                                         ["<a>1</a>", "<a>1</a><a>1</a>"], [""]),
    "tags_with_separator_stop_after_first": ({"type": "tags_with_separator", "separator": ",",
                                              "stop_after_first": True, "tags": [tag("<a>", const("1"), "</a>")]},
                                             ["", "<a>1</a>"], ["<a>1</a>,<a>1</a>"]),
    "dispatch": ({"type": "dispatch", "rules": [["<x>", const("1")], ["<y>", const("2")]], "excludes": ["!"]},
                 ["a<x>1b<y>2", "", "plain"], ["<x>2", "a!b", "<y>"]),
    "dispatch_no_loop": ({"type": "dispatch", "rules": [["<x>", const("1")]], "loop": False}, ["a<x>1"], ["a<x>1b"]),
    # any_text inside a tag stops at the tag's end (end detection), also when it is not last in a sequence.
    "end_detection": (tag("<think>", {"type": "sequence", "elements": [{"type": "any_text"}, const("."),
                                                                        {"type": "any_text"}]}, "</think>"),
                      ["<think>a.b</think>", "<think>.</think>"], ["<think>a</think>.b</think>"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_formats(name):
    fmt, valid, invalid = CASES[name]
    grammar = xgr.Grammar.from_structural_tag(st(fmt))
    for s in valid:
        assert is_grammar_accept_string(grammar, s), s
    for s in invalid:
        assert not is_grammar_accept_string(grammar, s), s


def test_type_may_be_left_out_and_input_may_be_json_text_or_pydantic_like():
    untyped = {"format": {"begin": "<a>", "content": {"value": "x"}, "end": "</a>"}}
    for tag_input in (untyped, json.dumps(untyped)):
        assert is_grammar_accept_string(xgr.Grammar.from_structural_tag(tag_input), "<a>x</a>")

    class Model:  # what xgrammar's pydantic StructuralTag offers
        def model_dump_json(self):
            return json.dumps(st(const("hi")))

    assert is_grammar_accept_string(xgr.Grammar.from_structural_tag(Model()), "hi")


def test_legacy_tags_and_triggers():
    items = [StructuralTagItem(begin="<f=a>", schema=json.dumps(WEATHER), end="</f>"),
             {"begin": "<f=b>", "schema": {"type": "integer"}, "end": "</f>"}]
    tok = xgr.testing._byte_tokenizer()
    compiler = xgr.GrammarCompiler(tok)
    for compiled in (compiler.compile_structural_tag(items, ["<f="]),
                     compiler.compile_structural_tag(tags=items, triggers=["<f="])):
        m = xgr.GrammarMatcher(compiled)
        assert m.accept_string('x <f=a>{"city": "Rome"}</f> y <f=b>12</f>') and m.is_completed()
        assert not xgr.GrammarMatcher(compiled).accept_string("<f=b>x")


def test_a_tool_call_format_walks_with_oracle_masks():
    tok = xgr.TokenizerInfo(["</s>"] + sorted({"<", "tool", "_call", ">", "\n", "{", "}", '"', "name", "get", "_weather",
                                              ":", " ", ",", "arguments", "city", "Paris", "<tool_call>", "</tool_call>",
                                              "ok", "Done", ".", "}\n", "\n</", "{\"", "\":"}), stop_token_ids=[0])
    compiled = xgr.GrammarCompiler(tok).compile_structural_tag(
        st({"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": [QWEN_CALL]}))
    text = 'ok.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call> Done.'
    assert check_masks_along(compiled, text) > 10


@pytest.mark.parametrize("fmt,path,fragment", [
    ("not json", "", "failed to parse JSON"),
    ([1], "", "must be an object"),
    ({"type": "other", "format": const("a")}, "/type", 'must be the string "structural_tag"'),
    ({"type": "structural_tag"}, "", "must have a format field"),
    (st({"type": "nope"}), "/format/type", "format type not recognized: 'nope'"),
    (st({"foo": 1}), "/format", "a format without a type"),
    (st({"type": "const_string"}), "/format", "const_string format must have a value field"),
    (st({"type": "sequence", "elements": []}), "/format/elements", "must have at least one element"),
    (st({"type": "sequence", "elements": [const("a"), {"type": "const_string", "value": 3}]}),
     "/format/elements/1/value", "const_string format's value must be a string"),
    (st({"type": "repeat", "min": 3, "max": 2, "content": const("a")}), "/format/max", "repeat max must be"),
    (st(tag("<a>", {"type": "any_text"}, "")), "/format/end",
     "when the content is unlimited, at least one end string must be non-empty"),
    (st(tag("<a>", const("x"), [])), "/format/end", "end list must not be empty"),
    (st({"type": "triggered_tags", "triggers": ["<x"], "tags": [tag("<a>", const("1"), "</a>")]}),
     "/format/tags/0", "does not match any trigger"),
    (st({"type": "triggered_tags", "triggers": ["<", "<a"], "tags": [tag("<a>", const("1"), "</a>")]}),
     "/format/tags/0", "matches several triggers"),
    (st({"type": "triggered_tags", "triggers": [""], "tags": [tag("<a>", const("1"), "</a>")]}),
     "/format/triggers/0", "must hold non-empty strings"),
    (st({"type": "dispatch", "rules": [["<x>", const("1")]], "excludes": ["<x"]}), "/format/excludes",
     "is a prefix of the trigger"),
    (st({"type": "dispatch", "rules": [["<x>"]]}), "/format/rules/0", "a dispatch rule is a pair"),
    (st({"type": "any_text", "max_tokens": 5}), "/format/max_tokens", "budget of any_text is not supported yet"),
    (st({"type": "exclude_token", "exclude_tokens": [-5]}), "/format/exclude_tokens/0", "must be non-negative"),
    (st({"type": "any_tokens", "max_tokens": -1}), "/format/max_tokens", "must be a non-negative integer"),
    (st({"type": "any_tokens", "max_tokens": 1 << 21}), "/format/max_tokens", "above 1048576 is not supported"),
    (st({"type": "token", "token": -1}), "/format/token", "a token id must be non-negative"),
    (st({"type": "json_schema", "json_schema": WEATHER, "style": "cohere_yaml"}), "/format/style",
     "style must be one of json, gemma"),
    (st(tag({"type": "token", "token": "<x>"}, const("x"), "y")), "/format/begin/token", "which needs a tokenizer"),
])
def test_errors_name_the_json_path(fmt, path, fragment):
    with pytest.raises(StructuralTagError, match=re.escape(f"structural tag at '{path}'") + ".*" + re.escape(fragment)):
        structural_tag_to_ebnf(fmt)


def test_errors_are_value_and_runtime_errors():
    assert issubclass(StructuralTagError, ValueError) and issubclass(StructuralTagError, RuntimeError)


def test_deep_nesting_is_an_error_not_a_crash():
    fmt = const("x")
    for _ in range(150):
        fmt = {"type": "optional", "content": fmt}
    with pytest.raises(StructuralTagError, match="nest deeper than 100 levels"):
        structural_tag_to_ebnf(st(fmt))


def test_the_tool_calling_guide_example():
    """docs/tool_calling.md's example, as written there."""
    tools = [
        {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                               "required": ["city"], "additionalProperties": False}},
        {"name": "search", "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                                          "required": ["query"], "additionalProperties": False}},
    ]
    tag_value = {"type": "structural_tag", "format": {
        "type": "triggered_tags", "triggers": ["<tool_call>"],
        "tags": [{"type": "tag", "begin": f'<tool_call>\n{{"name": {json.dumps(t["name"])}, "arguments": ',
                  "content": {"type": "json_schema", "json_schema": t["parameters"]}, "end": "}\n</tool_call>"}
                 for t in tools],
        "excludes": ["<|im_end|>"]}}
    grammar = xgr.Grammar.from_structural_tag(tag_value)
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert is_grammar_accept_string(grammar, f"Let me check.{call} It is sunny.")
    assert is_grammar_accept_string(grammar, "Just text.")
    for bad in ('<tool_call>\n{"name": "book", "arguments": {}}\n</tool_call>',
                '<tool_call>\n{"name": "search", "arguments": {"query": 1}}\n</tool_call>',
                "<tool_call> hello", "done<|im_end|>"):
        assert not is_grammar_accept_string(grammar, bad), bad


def test_a_tag_seen_before_skips_the_lowering(monkeypatch):
    import xg2jax.structural_tag as module

    calls = []
    real = module.structural_tag_to_ebnf
    monkeypatch.setattr(module, "structural_tag_to_ebnf", lambda v, t=None: calls.append(1) or real(v, t))
    compiler = xgr.GrammarCompiler(xgr.testing._byte_tokenizer())
    value = st({"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": [QWEN_CALL]})
    g1 = compiler.compile_structural_tag(value)
    g2 = compiler.compile_structural_tag(json.dumps(value))
    assert len(calls) == 1 and g1._handle is g2._handle
    assert compiler.cache_info()["grammar_hits"] == 1


def test_json_lexical_rules_are_embedded_once_when_identical():
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    same = st({"type": "sequence", "elements": [{"type": "json_schema", "json_schema": WEATHER},
                                                {"type": "json_schema", "json_schema": schema}]})
    text = structural_tag_to_ebnf(same)
    assert text.count("\nj_string ::=") == 1 and "sub1_j_string" not in text
    # Other whitespace options: other lexical rules, embedded under the schema's own prefix.
    other = st({"type": "sequence", "elements": [{"type": "json_schema", "json_schema": WEATHER},
                                                 {"type": "json_schema", "json_schema": schema,
                                                  "max_whitespace_cnt": 1}]})
    text = structural_tag_to_ebnf(other)
    assert text.count("\nj_ws ::=") == 1 and "\nsub1_j_ws ::=" in text
    g = xgr.Grammar.from_structural_tag(other)
    assert is_grammar_accept_string(g, '{"city":   "x"}{ "q": "y"}')
    assert not is_grammar_accept_string(g, '{"city": "x"}{"q":   "y"}')


def test_the_native_embedding_gives_the_language_of_the_general_path(monkeypatch):
    # json_schema formats embed the native front end's text with prefixed rule names; the general path (parse,
    # prefix, print) must give the same language. Formats and key tails are shared like the JSON lexical rules.
    email = {"type": "object", "properties": {"to": {"type": "string", "format": "email"},
                                              "n": {"type": "integer", "minimum": 1, "maximum": 12}},
             "required": ["to"], "additionalProperties": False}
    tag = st({"type": "triggered_tags", "triggers": ["<c>"], "tags": [
        {"type": "tag", "begin": "<c>a", "content": {"type": "json_schema", "json_schema": email}, "end": "</c>"},
        {"type": "tag", "begin": "<c>b", "content": {"type": "json_schema", "json_schema": email}, "end": "</c>"},
        {"type": "tag", "begin": "<c>w", "content": {"type": "json_schema", "json_schema": WEATHER}, "end": "</c>"}]})
    fast = structural_tag_to_ebnf(tag)
    assert fast.count("\nfmt_email ::=") == 1 and "sub0_root ::=" in fast and "sub2_root ::=" in fast
    from xg2jax.structural_tag import _Lowering

    monkeypatch.setattr(_Lowering, "embed_native_json_schema", lambda self, *a, **k: None)
    general = structural_tag_to_ebnf(tag)
    assert general != fast
    strings = ['x<c>a{"to": "a@b.co"}</c>y', '<c>b{"to": "a@b.co", "n": 12}</c>', '<c>b{"to": "a@b.co", "n": 13}</c>',
               '<c>a{"to": "nobody"}</c>', '<c>w{"city": "Oslo"}</c><c>a{"to": "q@r.st"}</c>', "<c>x", "plain"]
    verdicts = [is_grammar_accept_string(fast, s) for s in strings]
    assert verdicts == [is_grammar_accept_string(general, s) for s in strings]
    assert verdicts == [True, True, False, False, True, False, True]


# ---- token-level formats: special tokens as triggers, begins and ends --------------------------------------------

def _special_tokenizer():
    return xgr.TokenizerInfo([b"</s>", b"<tool_call>", b"</tool_call>", b"<think>", b"{", b"}", b"a", b"b",
                              b"\"", b"city", b":", b" ", b"x", b"<", b"tool"],
                             stop_token_ids=[0], special_token_ids=[1, 2, 3])


def _accepts_tokens(compiled, tokens) -> bool:
    m = xgr.GrammarMatcher(compiled)
    return all(m.accept_token(t) for t in tokens) and m.is_completed()


def test_token_triggered_tags_with_special_tokens():
    tok = _special_tokenizer()
    value = st({"type": "token_triggered_tags", "trigger_tokens": ["<tool_call>"],
                "tags": [tag({"type": "token", "token": "<tool_call>"}, {"type": "json_schema", "json_schema": WEATHER},
                             {"type": "token", "token": 2})]})
    compiled = xgr.GrammarCompiler(tok).compile_structural_tag(value)
    call = [1, 4, 8, 9, 8, 10, 11, 8, 12, 8, 5, 2]  # <tool_call>{"city": "x"}</tool_call>
    assert _accepts_tokens(compiled, [6, 7] + call + [11, 6])
    assert _accepts_tokens(compiled, [13, 14, 6])  # "<tool" typed as text is free text
    # the free text is tokens (as xgrammar): any token but the triggers, special ones and the tag's end included
    assert _accepts_tokens(compiled, [6, 4, 5, 2]) and _accepts_tokens(compiled, [3])
    assert not _accepts_tokens(compiled, call[:-1] + [11])  # a call without its end token
    m = xgr.GrammarMatcher(compiled)
    for t in [6] + call:  # masks equal the oracle along the way, special tokens included
        extra, missing = mask_oracle_diff(m)
        assert len(extra) == 0 and len(missing) == 0, (t, extra, missing)
        assert m.accept_token(t)


def test_token_dispatch_and_token_format():
    tok = _special_tokenizer()
    compiler = xgr.GrammarCompiler(tok)
    compiled = compiler.compile_structural_tag(st({"type": "token_dispatch", "rules": [[3, const("x")]],
                                                   "loop": False}))
    assert _accepts_tokens(compiled, [6, 3, 12]) and not _accepts_tokens(compiled, [6, 3, 12, 6])
    compiled = compiler.compile_structural_tag(st({"type": "sequence", "elements": [
        {"type": "token", "token": "<think>"}, const("a"), {"type": "token", "token": 3}]}))
    assert _accepts_tokens(compiled, [3, 6, 3]) and not _accepts_tokens(compiled, [6, 3])


def test_token_strings_need_the_compilers_tokenizer():
    value = st({"type": "token", "token": "<think>"})
    with pytest.raises(StructuralTagError, match="which needs a tokenizer"):
        xgr.Grammar.from_structural_tag(value)
    assert "Token(3)" in str(xgr.Grammar.from_structural_tag(st({"type": "token", "token": 3})))
    with pytest.raises(StructuralTagError, match="token '<nope>' not found in the vocabulary"):
        xgr.GrammarCompiler(_special_tokenizer()).compile_structural_tag(st({"type": "token", "token": "<nope>"}))


def test_text_markers_accept_the_special_token_of_that_text():
    """A model writes <tool_call> as one special token: text triggers, begins and ends that hold a special
    token's text also accept the token; ordinary text never produces it."""
    tok = _special_tokenizer()
    value = st({"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": [
        tag("<tool_call>{", {"type": "json_schema", "json_schema": {"type": "string"}}, "}</tool_call>")]})
    ebnf = structural_tag_to_ebnf(value, tok)
    assert '("<tool_call>" | Token(1))' in ebnf and '("</tool_call>" | Token(2))' in ebnf
    assert "TagDispatch((\"<tool_call>\", " in ebnf and ", (1, " in ebnf
    compiled = xgr.GrammarCompiler(tok).compile_structural_tag(value)
    spelled = [13, 14, 6]  # "<tool" "a": free text, not the marker
    call = [1, 4, 8, 12, 8, 5, 2]  # <tool_call> {"x"} </tool_call> as special tokens
    assert _accepts_tokens(compiled, [6] + call + [6] + call)
    assert _accepts_tokens(compiled, spelled)
    assert not _accepts_tokens(compiled, [6, 2])  # an end marker outside a call
    assert not _accepts_tokens(compiled, [1, 4, 8, 1])  # a trigger token inside a call's string
    assert is_grammar_accept_string(xgr.Grammar.from_structural_tag(value), '<tool_call>{"x"}</tool_call>')
    m = xgr.GrammarMatcher(compiled)
    for t in [6] + call + [6]:
        extra, missing = mask_oracle_diff(m)
        assert len(extra) == 0 and len(missing) == 0, (t, extra, missing)
        assert m.accept_token(t)
    events = m.take_tag_events()
    assert [(e.start, e.text) for e in events] == [(True, "<tool_call>"), (False, '<tool_call>{"x"}</tool_call>')]
    # Without the vocabulary (Grammar.from_structural_tag) the markers are text only.
    assert "Token(" not in structural_tag_to_ebnf(value)

