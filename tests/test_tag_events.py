"""Tag events: a matcher reports where its output switches between free text and a tag (xg2jax.tag_events).

Matcher level: the events and status bits for tokens that straddle a tag's boundaries, rejected tokens and
rollback, a dispatch that stops after its tag, longer triggers, special-token triggers, every model format;
against an independent re-parse (a regex over the text) on random outputs cut into random tokens and on the
Qwen2 vocabulary. The jitted loop (constrained_sample) is in test_jax_tag_events.py.
"""

from __future__ import annotations

import json
import random
import re

import pytest

import xg2jax as xgr
from real_vocabularies import require
from xg2jax.model_formats import MODEL_FORMATS
from xg2jax.tag_events import TagSpan, split_tag_text, tag_spans
from xg2jax.testing import greedy_token_ids

CALL = 'root ::= TagDispatch(("<call>", call), loop_after_dispatch=true)\ncall ::= "{" [a-z]* "}</call>"'
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}
ADD = {"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}


def compile_with(tokens: list[bytes], grammar, **tok_kw) -> xgr.CompiledGrammar:
    tok = xgr.TokenizerInfo(tokens, **tok_kw)
    compiler = xgr.GrammarCompiler(tok)
    return compiler.compile_structural_tag(grammar) if isinstance(grammar, dict) else compiler.compile_grammar(grammar)


def summary(events):
    return [(e.start, e.tag, e.token_index, e.text) for e in events]


def test_straddling_tokens_give_exact_events_and_status_bits():
    vocab = [b"hi ", b"x<ca", b"ll>{", b"ab", b"}</call>y", b"<call>{}</call>", b"z"]
    compiled = compile_with(vocab, CALL)
    assert [(t.trigger, t.token_id, t.rule) for t in compiled.dispatch_tags] == [("<call>", -1, "call")]
    m = xgr.GrammarMatcher(compiled)
    bits = []
    for t in [0, 1, 2, 3, 4, 5, 6]:
        assert m.accept_token(t), vocab[t]
        bits.append(m._handle.tag_status_bits(True))
    in_tag, entered, left, index = 1 << 8, 1 << 9, 1 << 10, 1 << 16
    assert bits == [0, 0, in_tag | entered | index, in_tag | index, left | index, entered | left | index, 0]
    assert summary(m.take_tag_events()) == [
        (True, 0, 2, "<call>"),                  # the trigger completes inside token 2 ("ll>{")
        (False, 0, 4, "<call>{ab}</call>"),      # from "x<ca" and "ll>{" to "}</call>y": the text of the tag only
        (True, 0, 5, "<call>"), (False, 0, 5, "<call>{}</call>"),  # a whole tag in one token
    ]
    assert m.take_tag_events() == []  # taken
    assert not m.is_in_tag()


def test_rejected_tokens_and_rollback_restore_the_mode():
    vocab = [b"a", b"<call>", b"{b", b"}</call>", b"<call>{}", b"!", b"</call>"]
    m = xgr.GrammarMatcher(compile_with(vocab, CALL))
    assert m.accept_token(0) and m.accept_token(1) and m.is_in_tag()
    assert not m.accept_token(5)  # "!" is not allowed in a call: nothing changes
    assert m.is_in_tag() and summary(m.take_tag_events()) == [(True, 0, 1, "<call>")]
    assert m.accept_token(2) and m.accept_token(3) and not m.is_in_tag()
    m.rollback(1)  # the end of the call is undone before it was taken: its event goes too
    assert m.is_in_tag() and m.take_tag_events() == []
    assert m.accept_token(3)
    assert summary(m.take_tag_events()) == [(False, 0, 3, "<call>{b}</call>")]
    m.rollback(3)  # back into free text, before the call
    assert not m.is_in_tag()
    assert m.accept_token(4) and m.is_in_tag() and m.accept_token(6) and not m.is_in_tag()
    assert summary(m.take_tag_events()) == [(True, 0, 1, "<call>"), (False, 0, 2, "<call>{}</call>")]
    m.reset()
    assert not m.is_in_tag() and m.take_tag_events() == []


def test_a_dispatch_that_ends_after_its_tag_reports_the_end():
    # After the tag the dispatch is done (a state with nothing left to read, which Leo's optimisation would skip)
    # and right recursion inside the tag makes Leo chains.
    grammar = ('root ::= TagDispatch(("<n>", digits), loop_after_dispatch=false) "!"\n'
               'digits ::= [0-9] digits | "</n>"')
    vocab = [bytes([b]) for b in range(32, 127)]
    m = xgr.GrammarMatcher(compile_with(vocab, grammar))
    assert m.accept_string("see <n>12") and m.is_in_tag()
    assert m.accept_string("3</n>") and not m.is_in_tag()
    assert m.accept_string("!") and m.is_completed()
    assert [(e.start, e.text) for e in m.take_tag_events()] == [(True, "<n>"), (False, "<n>123</n>")]


def test_a_longer_trigger_replaces_a_shorter_one():
    grammar = ('root ::= TagDispatch(("<a", ra), ("<ab", rb), loop_after_dispatch=true)\n'
               'ra ::= "1>"\nrb ::= "2>"')
    vocab = [bytes([b]) for b in range(32, 127)]
    compiled = compile_with(vocab, grammar)
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string("x<ab2> <a1>")
    assert [(e.start, e.tag, e.trigger, e.text) for e in m.take_tag_events()] == [
        (True, 1, "<ab", "<ab"), (False, 1, "<ab", "<ab2>"), (True, 0, "<a", "<a"), (False, 0, "<a", "<a1>")]


def test_special_token_triggers_read_as_their_text():
    vocab = [b"</s>", b"<tool_call>", b"</tool_call>", b"a", b"{", b"}", b"b}"]
    grammar = 'root ::= TokenTagDispatch((1, call), loop_after_dispatch=true)\ncall ::= "{" [ab]* "}" Token(2)'
    compiled = compile_with(vocab, grammar, stop_token_ids=[0], special_token_ids=[1, 2])
    assert [(t.trigger, t.token_id) for t in compiled.dispatch_tags] == [("<tool_call>", 1)]
    m = xgr.GrammarMatcher(compiled)
    for t in [3, 1, 4, 3, 6, 2, 3]:
        assert m.accept_token(t), vocab[t]
    assert summary(m.take_tag_events()) == [(True, 0, 1, "<tool_call>"), (False, 0, 5, "<tool_call>{ab}</tool_call>")]
    assert m.accept_token(0) and m.take_tag_events() == []  # a stop token switches nothing


def test_a_dispatch_inside_a_tag_is_part_of_that_tag():
    grammar = ('root ::= TagDispatch(("<outer>", outer), loop_after_dispatch=true)\n'
               'outer ::= body "</outer>"\n'
               'body ::= TagDispatch(("<in>", inner), loop_after_dispatch=true, excludes=("</outer>"))\n'
               'inner ::= "x</in>"')
    vocab = [bytes([b]) for b in range(32, 127)]
    compiled = compile_with(vocab, grammar)
    assert [t.trigger for t in compiled.dispatch_tags] == ["<outer>"]
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string("a<outer>b<in>x</in>c</outer>d")
    assert [(e.start, e.text) for e in m.take_tag_events()] == [(True, "<outer>"), (False, "<outer>b<in>x</in>c</outer>")]


def test_no_dispatch_no_events():
    compiled = compile_with([b"a", b"b"], 'root ::= "a" "b"*')
    m = xgr.GrammarMatcher(compiled)
    assert compiled.dispatch_tags == [] and m.accept_string("abb")
    assert m.take_tag_events() == [] and not m.is_in_tag() and m._handle.tag_status_bits(True) == 0


def qwen3_tag(**kw):
    return xgr.get_model_structural_tag("qwen_3", [WEATHER, ADD], reasoning=False, **kw)


def random_output(rng: random.Random) -> tuple[str, list[tuple[int, int]]]:
    """Free text (with near misses of the trigger) and calls; the byte spans of the calls."""
    pieces, spans, at = [], [], 0
    for _ in range(rng.randrange(1, 5)):
        free = "".join(rng.choice(["a", " ", "<", "<tool", "<tool_cal", "</tool_call>", "\n", "{"])
                       for _ in range(rng.randrange(0, 6)))
        if rng.random() < 0.7:
            if rng.random() < 0.5:
                args = {"city": rng.choice(["Paris", "</tool_call> in a string", "Zürich"])}
                call = MODEL_FORMATS["qwen_3"].render_calls([("get_weather", args)])
            else:
                call = MODEL_FORMATS["qwen_3"].render_calls([("add", {"a": rng.randrange(99), "b": -1})])
            start = at + len(free.encode())
            spans.append((start, start + len(call.encode())))
            pieces += [free, call]
            at = start + len(call.encode())
        else:
            pieces.append(free)
            at += len(free.encode())
    return "".join(pieces), spans


def reparse_spans(text: str) -> list[tuple[int, int]]:
    """The calls of a qwen_3 output found by a regex (independent of the engine): byte spans."""
    data = text.encode()
    out = []
    for m in re.finditer(rb"<tool_call>\n(\{.*?\})\n</tool_call>", data, re.S):
        if json.loads(m.group(1)):
            out.append((m.start(), m.end()))
    return out


def events_by_byte_spans(m, cuts: list[int], data: bytes):
    """Feeds data cut at `cuts` (one accept per piece, a piece = a token) and returns the tags as byte spans,
    derived from the events: the token of a switch and the text's length."""
    ends = []
    for a, b in zip([0] + cuts, cuts + [len(data)]):
        assert m.accept_string(data[a:b]), data[:b]
        ends.append(b)
    spans = []
    for e in m.take_tag_events():
        if not e.start:
            text = e.text.encode()
            end_token_end = ends[e.token_index]
            # the tag ends inside its token: find its end in that token's window
            lo = ([0] + ends)[e.token_index]
            end = data.rfind(text, 0, end_token_end) + len(text)
            assert lo < end <= end_token_end
            spans.append((end - len(text), end))
            assert data[end - len(text):end] == text
    return spans


@pytest.mark.parametrize("seed", range(40))
def test_random_outputs_cut_into_random_tokens_match_a_reparse(seed):
    rng = random.Random(seed)
    compiled = compile_with([bytes([b]) for b in range(256)], qwen3_tag())
    text, spans = random_output(rng)
    data = text.encode()
    assert reparse_spans(text) == spans or "</tool_call> in a string" in text
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randrange(1, 40)))) if len(data) > 1 else []
    m = xgr.GrammarMatcher(compiled)
    assert events_by_byte_spans(m, cuts, data) == spans


@pytest.mark.parametrize("vocab_name", ["qwen2", "gemma3"])
def test_events_on_a_real_vocabulary(vocab_name):
    loaded = require(vocab_name)
    tok = xgr.TokenizerInfo.from_loaded_vocab(loaded)
    compiled = xgr.GrammarCompiler(tok).compile_structural_tag(qwen3_tag())
    decoded = tok.decoded_vocab
    rng = random.Random(7)
    for _ in range(10):
        text, spans = random_output(rng)
        ids = greedy_token_ids(tok, text.encode())
        m = xgr.GrammarMatcher(compiled)
        got, at, token_ends = [], 0, []
        for t in ids:
            assert m.accept_token(t)
            at += len(decoded[t])
            token_ends.append(at)
        for e in m.take_tag_events():
            if not e.start:
                end_hi = token_ends[e.token_index]
                end = text.encode().rfind(e.text.encode(), 0, end_hi) + len(e.text.encode())
                got.append((end - len(e.text.encode()), end))
        assert got == spans, text


@pytest.mark.parametrize("model", sorted(MODEL_FORMATS))
def test_every_model_format_reports_its_calls(model):
    spec = MODEL_FORMATS[model]
    compiled = compile_with([bytes([b]) for b in range(256)],
                            xgr.get_model_structural_tag(model, [WEATHER, ADD], reasoning=True))
    think = "" if spec.think is None else spec.think_enabled_begin + "Hmm." + spec.think[1] + spec.after_think
    call = spec.render_calls([("get_weather", {"city": "Paris", "days": 2}), ("add", {"a": 1, "b": 2})])
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string(think + "Let me check. ") and not m.is_in_tag()
    assert m.accept_string(call[:-1]) and m.is_in_tag()
    assert m.accept_string(call[-1:]) and not m.is_in_tag()
    events = m.take_tag_events()
    # A format whose trigger opens a block of calls reports the block; one that opens each call, each call.
    assert [e.start for e in events] == [True, False] * (len(events) // 2) and events
    assert "".join(e.text for e in events if not e.start) in call
    assert call.endswith(events[-1].text) and call.startswith(events[0].text)


def test_split_tag_text_names_the_tool_and_its_arguments():
    tag = qwen3_tag()
    assert tag["format"]["type"] == "triggered_tags"
    tags = tag["format"]["tags"]
    text = MODEL_FORMATS["qwen_3"].render_calls([("add", {"a": 1, "b": 2})])
    index, args = split_tag_text(text, tags)
    assert "add" in tags[index]["begin"] and json.loads(args) == {"a": 1, "b": 2}
    with pytest.raises(ValueError, match="no tag"):
        split_tag_text("<tool_call>nothing", tags)


def test_tag_spans_from_status_bits():
    in_tag, entered, left = 1 << 8, 1 << 9, 1 << 10
    i0 = 1 << 16
    status = [[0, in_tag | entered | i0, in_tag | i0, left | i0, entered | left | i0, in_tag | entered | i0, in_tag | i0],
              [left | i0, 0, 0, 0, 0, 0, 0]]
    assert tag_spans(status, [7, 1]) == [[TagSpan(0, 1, 3), TagSpan(0, 4, 4), TagSpan(0, 5, -1)], []]
    with pytest.raises(ValueError, match="status"):
        tag_spans([0, 1], [2])


def test_a_long_output_keeps_the_tracker_small_with_bounded_rollback():
    vocab = [b"free text ", b"<call>", b"{ab", b"}</call>", b"<ca", b"ll>{", b"z"]
    compiled = compile_with(vocab, CALL)
    sizes = {}
    for rollback in (-1, 8):
        m = xgr.GrammarMatcher(compiled, max_rollback_tokens=rollback)
        for i in range(30_000):
            assert m.accept_token(0)
            if i % 10_000 == 9_999:  # a call now and then, its trigger split across tokens
                assert m.accept_token(4) and m.accept_token(5) and m.accept_token(3)
            if i in (10_000, 29_999):
                sizes[rollback, i] = m.memory_size_bytes()
        m.rollback(2)  # back into the trigger of the last call: its events go
        assert not m.is_in_tag() and m.accept_token(5) and m.is_in_tag() and m.accept_token(3)
        assert m.accept_token(1) and m.accept_token(2) and m.accept_token(3) and not m.is_in_tag()
        ends = [e.text for e in m.take_tag_events() if not e.start]
        assert ends == ["<call>{}</call>"] * 3 + ["<call>{ab}</call>"], ends
    assert sizes[8, 29_999] < 200_000 and sizes[8, 29_999] < sizes[-1, 29_999] / 4, sizes
