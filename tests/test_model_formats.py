"""Model tool-call formats (xg2jax.model_formats): each format accepts its model's calls and rejects unknown tools
and wrongly typed arguments; tool choice, reasoning and parallel calls change the language as documented; errors
name what is wrong; a format compiles with a real vocabulary and its masks equal the token oracle."""

from __future__ import annotations

import json

import pytest

import xg2jax as xgr
from real_vocabularies import require
from xg2jax.model_formats import KIMI_K3_CALLS, MODEL_FORMATS
from xg2jax.testing import check_masks_along, is_grammar_accept_string

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time"}}  # no parameters: any arguments
TOOLS = [WEATHER, TIME]


def render_calls(model: str, calls: list[tuple[str, dict]]) -> str:
    """The calls as `model` writes them (ModelFormat.render_calls: its markers, arguments JSON or XML-style)."""
    return MODEL_FORMATS[model].render_calls(calls)


def think(model: str) -> str:
    """The reasoning as the model writes it with reasoning enabled (the template opened the block)."""
    spec = MODEL_FORMATS[model]
    if spec.think is None:
        return ""
    return spec.think_enabled_begin + "Need the weather." + spec.think[1] + spec.after_think


def accepts(model: str, text: str, **kw) -> bool:
    tag = xgr.get_model_structural_tag(model, TOOLS, **kw)
    return is_grammar_accept_string(xgr.Grammar.from_structural_tag(tag), text)


@pytest.mark.parametrize("model", sorted(MODEL_FORMATS))
def test_each_format_accepts_calls_and_rejects_unknown_tools_and_bad_arguments(model):
    call = ("get_weather", {"city": "Paris", "days": 3})
    assert accepts(model, think(model) + render_calls(model, [call]))
    assert accepts(model, think(model) + "Plain answer, no call.")
    assert accepts(model, think(model) + render_calls(model, [call, ("get_time", {})]))
    assert not accepts(model, think(model) + render_calls(model, [("get_wether", {"city": "x"})]))
    assert not accepts(model, think(model) + render_calls(model, [("get_weather", {"days": 3})]))
    assert not accepts(model, think(model) + render_calls(model, [("get_weather",
                                                                              {"city": "x", "days": "soon"})]))


@pytest.mark.parametrize("model", ["qwen_3", "deepseek_v3_2", "kimi"])
def test_tool_choice_and_parallel_calls(model):
    call = ("get_weather", {"city": "Oslo"})
    time_call = ("get_time", {})
    one, two = render_calls(model, [call]), render_calls(model, [call, time_call])
    prefix = think(model)
    # required: a call must come; free text alone is not enough
    assert not accepts(model, prefix + "No call.", tool_choice="required")
    assert accepts(model, prefix + MODEL_FORMATS[model].required_prefix + one, tool_choice="required")
    # none: free text only (text that looks like a call is text; the format's markers stay excluded)
    assert accepts(model, prefix + "No call.", tool_choice="none")
    assert not accepts(model, prefix + "a </think> b", tool_choice="none")
    # a named tool: exactly that call
    named = {"type": "function", "function": {"name": "get_time"}}
    assert accepts(model, prefix + MODEL_FORMATS[model].required_prefix + render_calls(model, [time_call]),
                   tool_choice=named)
    assert not accepts(model, prefix + MODEL_FORMATS[model].required_prefix + one, tool_choice=named)
    # allowed tools narrow the set
    allowed = {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [named]}}
    assert not accepts(model, prefix + one, tool_choice=allowed)
    # parallel_tool_calls=False: at most one call
    assert accepts(model, prefix + two)
    assert not accepts(model, prefix + two, parallel_tool_calls=False)
    assert accepts(model, prefix + one, parallel_tool_calls=False)


def test_reasoning_modes():
    call = render_calls("qwen_3", [("get_weather", {"city": "Rome"})])
    assert accepts("qwen_3", "thinking...</think>\n\n" + call)
    assert not accepts("qwen_3", call)  # enabled: the reasoning block comes first
    assert accepts("qwen_3", call, reasoning="disabled")
    assert accepts("qwen_3", call, reasoning="auto")
    assert accepts("qwen_3", "<think>hm</think>\n\n" + call, reasoning="auto")
    assert not accepts("qwen_3", "<think>a <think> b</think>\n\n" + call, reasoning="auto")  # markers excluded
    assert accepts("qwen_3", "<think>a <think> b</think>\n\n" + call, reasoning="auto", exclude_special_tokens=False)
    assert accepts("qwen_3", call, reasoning=False)


@pytest.mark.parametrize("kwargs, message", [
    (dict(model="qwen_9"), "unknown model 'qwen_9'"),
    (dict(model="qwen_3", tool_choice={"type": "allowed_tools", "allowed_tools": {
        "mode": "auto", "tools": [{"type": "function", "function": {"name": "get_tim"}}]}}),
     "allowed_tools names function tools that are not in tools: 'get_tim'"),
    (dict(model="qwen_3", tool_choice={"type": "web_search_preview"}), "the tool 'web_search_preview'"),
    (dict(model="llama", token_markers=True), "token_markers is not supported for model 'llama'"),
    (dict(model="qwen_3", tool_choice="required", tools=[]), "tool_choice 'required' needs at least one"),
    (dict(model="qwen_3", tool_choice={"type": "function", "function": {"name": "nope"}}), "the tool 'nope'"),
    (dict(model="qwen_3", reasoning="sometimes"), "reasoning must be"),
    (dict(model="qwen_3", tools=[{"type": "function", "function": {}}]), r"tools\[0\].function must be"),
])
def test_errors_name_what_is_wrong(kwargs, message):
    kwargs.setdefault("tools", TOOLS)
    with pytest.raises(ValueError, match=message):
        xgr.get_model_structural_tag(**kwargs)


def kimi_k3_message(calls, *, think="Need the weather.<|close|>think<|sep|>", response="Checking.") -> str:
    """A Kimi K3 message with reasoning enabled (the prompt opened the think section)."""
    tools = KIMI_K3_CALLS.render_calls(calls) if calls else ""
    return f"{think}<|open|>response<|sep|>{response}<|close|>response<|sep|>{tools}<|close|>message<|sep|>"


def test_kimi_k3_message_sections_calls_and_modes():
    call = ("get_weather", {"city": "Paris", "days": 3})
    assert accepts("kimi_k3", kimi_k3_message([call]))
    assert accepts("kimi_k3", kimi_k3_message([]))
    assert accepts("kimi_k3", kimi_k3_message([call, ("get_time", {})]))
    assert not accepts("kimi_k3", kimi_k3_message([("get_wether", {"city": "x"})]))
    assert not accepts("kimi_k3", kimi_k3_message([("get_weather", {"days": 3})]))
    assert not accepts("kimi_k3", kimi_k3_message([("get_weather", {"city": "x", "days": "soon"})]))
    # the markers stay out of texts and argument strings
    assert not accepts("kimi_k3", kimi_k3_message([], response="a <|open|> b"))
    assert not accepts("kimi_k3", kimi_k3_message([("get_weather", {"city": "Pa<|sep|>ris"})]))
    assert accepts("kimi_k3", kimi_k3_message([("get_weather", {"city": "Pa<|sep|>ris"})]),
                   exclude_special_tokens=False)
    # reasoning: disabled (the prompt opened response), auto (the model may write the think section)
    quiet = kimi_k3_message([call], think="")[len("<|open|>response<|sep|>"):]
    assert accepts("kimi_k3", quiet, reasoning="disabled")
    assert accepts("kimi_k3", kimi_k3_message([call], think=""), reasoning="auto")
    assert accepts("kimi_k3", kimi_k3_message([call], think="<|open|>think<|sep|>hm<|close|>think<|sep|>"),
                   reasoning="auto")
    # tool choice and parallel calls
    assert not accepts("kimi_k3", kimi_k3_message([]), tool_choice="required")
    assert accepts("kimi_k3", kimi_k3_message([call]), tool_choice="required")
    assert not accepts("kimi_k3", kimi_k3_message([call]), tool_choice="none")
    named = {"type": "function", "function": {"name": "get_time"}}
    assert accepts("kimi_k3", kimi_k3_message([("get_time", {})]), tool_choice=named)
    assert not accepts("kimi_k3", kimi_k3_message([call]), tool_choice=named)
    assert not accepts("kimi_k3", kimi_k3_message([call, call]), parallel_tool_calls=False)


@pytest.mark.parametrize("vocab", ["qwen2"])
def test_kimi_k3_masks_equal_the_oracle_on_a_real_vocabulary(vocab):
    tok = xgr.TokenizerInfo.from_loaded_vocab(require(vocab))
    compiled = xgr.GrammarCompiler(tok).compile_structural_tag(xgr.get_model_structural_tag("kimi_k3", TOOLS))
    check_masks_along(compiled, kimi_k3_message([("get_weather", {"city": "Lyon", "days": 2})]))


def test_register_model_structural_tag():
    @xgr.register_model_structural_tag("my_format")
    def build(tools, tool_choice, reasoning, **options):
        names = [name for name, _ in tools]
        return {"type": "structural_tag", "format": {"type": "or", "elements": [
            {"type": "const_string", "value": f"CALL {n}"} for n in names]}}

    tag = xgr.get_model_structural_tag("my_format", TOOLS)
    assert is_grammar_accept_string(xgr.Grammar.from_structural_tag(tag), "CALL get_time")


def test_builtin_tools_are_left_out_and_pydantic_style_objects_work():
    class Tool:
        def model_dump(self):
            return WEATHER

    tag = xgr.get_model_structural_tag("qwen_3", [Tool(), {"type": "web_search_preview"}], reasoning="disabled")
    assert [t["begin"] for t in tag["format"]["tags"]] == ['<tool_call>\n{"name": "get_weather", "arguments": ']


def test_harmony_messages_channels_and_builtin_tools():
    search = {"type": "web_search_preview", "name": "browser.search",
              "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
    tag = xgr.get_model_structural_tag("harmony", TOOLS + [search])
    g = xgr.Grammar.from_structural_tag(tag)
    sep = "<|start|>assistant"
    analysis, final = "<|channel|>analysis<|message|>Think.<|end|>", "<|channel|>final<|message|>It is 20C.<|return|>"
    call = '<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>{"city": "Oslo"}<|call|>'
    alt_call = ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Oslo"}<|call|>'
    builtin = '<|channel|>commentary to=browser.search code<|message|>{"query": "oslo weather"}<|call|>'
    for text in (analysis + sep + call, alt_call, analysis + sep + builtin + sep + final, final, ""):
        assert is_grammar_accept_string(g, text), text
    for text in (analysis + call, call.replace("get_weather", "get_wether"), builtin.replace("oslo", "1\"}"),
                 "plain text"):
        assert not is_grammar_accept_string(g, text), text
    # required: no final answer; reasoning disabled: no analysis; one call at most without parallel calls
    required = xgr.Grammar.from_structural_tag(xgr.get_model_structural_tag("harmony", TOOLS, tool_choice="required"))
    assert not is_grammar_accept_string(required, final)
    assert is_grammar_accept_string(required, analysis + sep + call)
    quiet = xgr.Grammar.from_structural_tag(xgr.get_model_structural_tag("harmony", TOOLS, reasoning="disabled"))
    assert not is_grammar_accept_string(quiet, analysis + sep + call)
    single = xgr.Grammar.from_structural_tag(xgr.get_model_structural_tag("harmony", TOOLS, parallel_tool_calls=False))
    assert is_grammar_accept_string(single, analysis + sep + call)
    assert not is_grammar_accept_string(single, call + sep + call)
    forced = xgr.Grammar.from_structural_tag(xgr.get_model_structural_tag(
        "harmony", TOOLS + [search], tool_choice={"type": "web_search_preview"}))
    assert is_grammar_accept_string(forced, builtin) and not is_grammar_accept_string(forced, call)


@pytest.mark.parametrize("vocab", ["qwen2"])
def test_masks_equal_the_oracle_on_a_real_vocabulary(vocab):
    tok = xgr.TokenizerInfo.from_loaded_vocab(require(vocab))
    compiler = xgr.GrammarCompiler(tok)
    for model in ("qwen_3", "qwen_3_coder"):
        compiled = compiler.compile_structural_tag(xgr.get_model_structural_tag(model, TOOLS))
        text = think(model) + "Checking. " + render_calls(model, [("get_weather", {"city": "Lyon"})])
        check_masks_along(compiled, text)


@pytest.mark.parametrize("model", ["qwen_3", "qwen_3_coder"])
def test_qwen_markers_as_the_special_tokens_a_model_emits(model):
    """Qwen models write <tool_call> / </tool_call> as special tokens 151657 / 151658: those tokens open and close
    a call (as the spelled text does), masks equal the oracle along the way, and ordinary text never produces
    them."""
    from xg2jax.testing import greedy_token_ids, mask_oracle_diff

    tok = xgr.TokenizerInfo.from_loaded_vocab(require("qwen2"))
    open_id, close_id = 151657, 151658
    assert tok.decoded_vocab[open_id] == b"<tool_call>" and open_id in tok.special_token_ids
    compiled = xgr.GrammarCompiler(tok).compile_structural_tag(xgr.get_model_structural_tag(model, TOOLS))
    call = render_calls(model, [("get_weather", {"city": "Lyon"})])
    inner = call[len("<tool_call>"):-len("</tool_call>")]
    tokens = (greedy_token_ids(tok, (think(model) + "Checking. ").encode()) + [open_id] +
              greedy_token_ids(tok, inner.encode()) + [close_id] + greedy_token_ids(tok, b" Done."))
    m = xgr.GrammarMatcher(compiled)
    for t in tokens:
        extra, missing = mask_oracle_diff(m)
        assert len(extra) == 0 and len(missing) == 0, (t, extra[:5], missing[:5])
        assert m.accept_token(t), (t, tok.decoded_vocab[t])
    assert m.is_completed()
    assert [e.text for e in m.take_tag_events() if not e.start] == [call]
    m = xgr.GrammarMatcher(compiled)
    assert all(m.accept_token(t) for t in greedy_token_ids(tok, (think(model) + "Hi").encode()))
    assert not m.accept_token(close_id)  # an end marker outside a call


@pytest.mark.parametrize("model", sorted(MODEL_FORMATS))
def test_the_tool_calling_example_steers_a_forbidden_argument(model):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "tool_calling.py"
    spec = importlib.util.spec_from_file_location("tool_calling_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    text = example.main(model)
    assert "celsius" in text and "kelvin" not in text


# cohere ---------------------------------------------------------------------------------------------------------

_COHERE_MARKERS = ["<|START_THINKING|>", "<|END_THINKING|>"]


def _cohere_call(name: str, params) -> dict:
    """The tag of one call in the cohere format, written out by hand."""
    return {"type": "tag", "begin": '<cofl:tool_call id="', "end": "</cofl:tool_call>", "content": {
        "type": "sequence", "elements": [
            {"type": "regex", "pattern": "\\d+"}, {"type": "const_string", "value": f'" name="{name}">'},
            {"type": "json_schema", "json_schema": params, "style": "cohere_xml", "any_order": False,
             "excludes": []}]}}


_COHERE_CALLS = [_cohere_call("get_weather", WEATHER["function"]["parameters"]), _cohere_call("get_time", True)]
_COHERE_THINK_ENABLED = {"type": "tag", "begin": "", "end": "<|END_THINKING|>",
                         "content": {"type": "any_text", "excludes": []}}
# (options, the tag's format), as xgrammar 0.2.9's model_dump_json(exclude_none=True) writes them
COHERE_FIXTURES = [
    ({}, {"type": "sequence", "elements": [_COHERE_THINK_ENABLED, {
        "type": "triggered_tags", "triggers": ["<cofl:tool_calls>"], "tags": [{
            "type": "tag", "begin": "<cofl:tool_calls>", "end": "</cofl:tool_calls>", "content": {
                "type": "tags_with_separator", "tags": _COHERE_CALLS, "separator": "", "at_least_one": True,
                "stop_after_first": False}}],
        "at_least_one": False, "stop_after_first": False, "excludes": _COHERE_MARKERS}]}),
    (dict(tool_choice="required", reasoning="auto", parallel_tool_calls=False), {"type": "sequence", "elements": [
        {"type": "optional", "content": {"type": "tag", "begin": "<|START_THINKING|>", "end": "<|END_THINKING|>",
                                         "content": {"type": "any_text", "excludes": _COHERE_MARKERS}}},
        {"type": "sequence", "elements": [
            {"type": "const_string", "value": "<cofl:tool_calls>"},
            {"type": "tags_with_separator", "tags": _COHERE_CALLS, "separator": "", "at_least_one": True,
             "stop_after_first": True},
            {"type": "const_string", "value": "</cofl:tool_calls>"}]}]}),
    (dict(tool_choice={"type": "function", "function": {"name": "get_time"}}, reasoning=False),
     {"type": "sequence", "elements": [{"type": "const_string", "value": "<cofl:tool_calls>"}, _COHERE_CALLS[1],
                                       {"type": "const_string", "value": "</cofl:tool_calls>"}]}),
    (dict(tool_choice="none", reasoning="auto", exclude_special_tokens=False), {"type": "sequence", "elements": [
        {"type": "optional", "content": {"type": "tag", "begin": "<|START_THINKING|>", "end": "<|END_THINKING|>",
                                         "content": {"type": "any_text", "excludes": []}}},
        {"type": "any_text", "excludes": []}]}),
]


def _drop_none(value):
    """As pydantic's exclude_none: members whose value is None left out."""
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


@pytest.mark.parametrize("options, expected", COHERE_FIXTURES)
def test_cohere_tag_layout(options, expected):
    tag = xgr.get_model_structural_tag("cohere", TOOLS + [{"type": "web_search_preview"}], **options)
    assert _drop_none(tag) == {"type": "structural_tag", "format": expected}


def test_cohere_tag_equals_xgrammars_for_every_option():
    """JSON-equal to xgrammar's tag for every tool choice, reasoning mode and flag (a dev extra: skipped
    without it)."""
    import itertools

    builtin = pytest.importorskip("xgrammar.builtin_structural_tag")
    named = {"type": "function", "function": {"name": "get_time"}}
    choices = ["auto", "none", "required", named,
               {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [named]}}]
    for tools, choice, reasoning, parallel, exclude, ws in itertools.product(
            [TOOLS, [TIME], [WEATHER, {"type": "web_search_preview"}]], choices, [True, False, "auto"],
            [True, False], [True, False], [None, 3]):
        kw = dict(tool_choice=choice, reasoning=reasoning, parallel_tool_calls=parallel,
                  exclude_special_tokens=exclude, max_whitespace_cnt=ws)
        try:
            theirs = json.loads(builtin.get_model_structural_tag("cohere", tools, **kw).model_dump_json(
                exclude_none=True))
        except ValueError:
            with pytest.raises(ValueError):
                xgr.get_model_structural_tag("cohere", tools, **kw)
            continue
        assert _drop_none(xgr.get_model_structural_tag("cohere", tools, **kw)) == theirs, kw


def cohere_message(calls, think="Need the weather.<|END_THINKING|>", text="") -> str:
    return think + text + MODEL_FORMATS["cohere"].render_calls(calls) if calls else think + text


def test_cohere_format_language():
    call = ("get_weather", {"city": "Paris", "days": 3})
    one = cohere_message([call])
    assert one.endswith('<cofl:tool_calls><cofl:tool_call id="0" name="get_weather"><cofl:value name="city" '
                        'type="raw">Paris</cofl:value><cofl:value name="days" type="json">3</cofl:value>'
                        '</cofl:tool_call></cofl:tool_calls>')
    assert accepts("cohere", one)
    assert accepts("cohere", cohere_message([call, ("get_time", {"zone": ["UTC"]})], text="Checking. "))
    assert accepts("cohere", one.replace('id="0"', 'id="17"'))  # any call id
    assert not accepts("cohere", one.replace('id="0"', 'id="x"'))
    assert not accepts("cohere", one.replace('type="json">3', 'type="raw">3'))  # the kind follows the schema
    assert not accepts("cohere", cohere_message([("get_weather", {"days": 3})]))
    assert not accepts("cohere", cohere_message([], text="a <|START_THINKING|> b"))
    assert accepts("cohere", cohere_message([], text="a <|START_THINKING|> b"), exclude_special_tokens=False)
    assert accepts("cohere", cohere_message([call], think="<|START_THINKING|>hm<|END_THINKING|>"), reasoning="auto")
    assert accepts("cohere", cohere_message([call], think=""), reasoning="disabled")
    assert not accepts("cohere", cohere_message([call, call]), parallel_tool_calls=False)
    assert not accepts("cohere", cohere_message([], text="No call."), tool_choice="required")


@pytest.mark.parametrize("vocab", ["qwen2"])
def test_cohere_masks_equal_the_oracle_on_a_real_vocabulary(vocab):
    tok = xgr.TokenizerInfo.from_loaded_vocab(require(vocab))
    compiled = xgr.GrammarCompiler(tok).compile_structural_tag(xgr.get_model_structural_tag("cohere", TOOLS))
    check_masks_along(compiled, cohere_message([("get_weather", {"city": "Lyon", "days": 2}),
                                                ("get_time", {"zone": {"name": "CET"}})], text="Checking. "))


def test_token_markers_write_the_markers_as_special_tokens():
    """token_markers=True (qwen_3, qwen_3_5, qwen_3_coder, glm_4_7): the calls open and close with token formats,
    the reasoning is any_tokens up to the </think> token, triggered tags are token_triggered_tags; the layout
    otherwise follows the text format (hand-written from xgrammar 0.2.9's output)."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    tag = xgr.get_model_structural_tag("qwen_3", tools, token_markers=True)["format"]
    think, body = tag["elements"]
    assert think == {"type": "sequence", "elements": [
        {"type": "tag", "begin": "", "content": {"type": "any_tokens", "exclude_tokens": ["<think>", "</think>"]},
         "end": {"type": "token", "token": "</think>"}},
        {"type": "const_string", "value": "\n\n"}]}
    assert body["type"] == "token_triggered_tags" and body["trigger_tokens"] == ["<tool_call>"]
    assert body["exclude_tokens"] == ["<think>", "</think>"]
    call = body["tags"][0]
    assert call["begin"] == {"type": "token", "token": "<tool_call>"}
    assert call["end"] == {"type": "token", "token": "</tool_call>"}
    first, args, last = call["content"]["elements"]
    assert first == {"type": "const_string", "value": '\n{"name": "f", "arguments": '}
    assert args["type"] == "json_schema" and last == {"type": "const_string", "value": "}\n"}
    glm = xgr.get_model_structural_tag("glm_4_7", tools, tool_choice="none", token_markers=True)["format"]
    assert "<tool_call>" in glm["elements"][1]["excludes"]  # no call can begin: every marker stays out


def test_token_markers_match_xgrammar():
    xgrammar = pytest.importorskip("xgrammar")
    tools = [{"type": "function", "function": {"name": "f", "parameters": WEATHER["function"]["parameters"]}},
             {"type": "function", "function": {"name": "g"}}]
    for model in ("qwen_3", "qwen_3_5", "qwen_3_coder", "glm_4_7"):
        for choice in ("auto", "required", "none", {"type": "function", "function": {"name": "f"}}):
            for reasoning in ("enabled", "disabled", "auto"):
                ours = xgr.get_model_structural_tag(model, tools, tool_choice=choice, reasoning=reasoning,
                                                    token_markers=True)
                theirs = xgrammar.get_model_structural_tag(model, tools, tool_choice=choice, reasoning=reasoning,
                                                           token_markers=True)
                assert _drop_none(ours) == json.loads(theirs.model_dump_json(exclude_none=True)), (model, choice)


def test_token_markers_on_qwen3_follow_the_special_tokens():
    """The qwen_3 token-marker format on Qwen3's vocabulary: reasoning as tokens up to </think> (151668), free
    text as tokens (special ones too, but not the markers), a call opened by <tool_call> (151657) and closed by
    </tool_call> (151658); masks equal the oracle at every step."""
    from xg2jax.testing import greedy_token_ids, mask_oracle_diff

    qwen2 = require("qwen2")
    decoded = [bytes(b) for b in qwen2.decoded_vocab()]
    assert len(decoded) == 151665  # Qwen3's tokenizer is Qwen2's with these four special tokens added
    tok = xgr.TokenizerInfo(decoded + [b"<tool_response>", b"</tool_response>", b"<think>", b"</think>"],
                            vocab_type=xgr.VocabType.RAW, stop_token_ids=list(qwen2.stop_token_ids),
                            special_token_ids=list(qwen2.special_token_ids) + [151665, 151666, 151667, 151668])
    think_end, open_id, close_id = 151668, 151657, 151658
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER["function"]["parameters"]}}]
    compiled = xgr.GrammarCompiler(tok).compile_structural_tag(
        xgr.get_model_structural_tag("qwen_3", tools, token_markers=True))
    tokens = (greedy_token_ids(tok, b"hmm") + [think_end] + greedy_token_ids(tok, b"\n\nChecking.") + [open_id] +
              greedy_token_ids(tok, b'\n{"name": "get_weather", "arguments": {"city": "Lyon"}}\n') + [close_id] +
              greedy_token_ids(tok, b" Done."))
    m = xgr.GrammarMatcher(compiled)
    for t in tokens:
        extra, missing = mask_oracle_diff(m)
        assert len(extra) == 0 and len(missing) == 0, (t, extra[:5], missing[:5])
        assert m.accept_token(t), (t, tok.decoded_vocab[t])
    assert m.is_completed()
    assert not m.fork().accept_token(151667)  # <think> stays out of the free text
