"""Captured rules (EBNF ``r[capture] ::=`` / ``r[capture="label"] ::=``, Lark ``r[capture]:``) and
``GrammarMatcher.get_captures``: events per completion of a captured rule over accepted tokens, in the order the
parser completes them; deduplicated per (label, start) to the longest span; kept in step with rollback, reset, fork,
rejected tokens and bounded-rollback compaction; special tokens read as their text."""

from __future__ import annotations

import numpy as np
import pytest

import xg2jax as xgr

_EMPTY = xgr.TokenizerInfo([])


def _matcher(ebnf: str, tokenizer_info=_EMPTY, **kwargs):
    compiled = xgr.GrammarCompiler(tokenizer_info, cache_enabled=False).compile_grammar(ebnf)
    return xgr.GrammarMatcher(compiled, terminate_without_stop_token=True, **kwargs)


def _captures(ebnf: str, text: str, **kwargs):
    m = _matcher(ebnf)
    assert m.accept_string(text)
    return m.get_captures(**kwargs)


def test_label_defaults_to_the_rule_name_and_prints_back():
    g = xgr.Grammar.from_ebnf('root ::= "a" v w\nv[capture] ::= [0-9]+\nw[capture="tail", temperature=0.5] ::= "b"')
    text = str(g)
    assert 'v[capture="v"] ::=' in text and 'w[capture="tail", temperature=0.5] ::=' in text
    assert str(xgr.Grammar.from_ebnf(text)) == text
    assert str(xgr.Grammar.deserialize_json(g.serialize_json())) == text


def test_raw_events_and_deduplication():
    ebnf = 'root ::= "a" v "b"\nv[capture] ::= [0-9]+'
    assert _captures(ebnf, "a123b") == [("v", b"123")]
    assert _captures(ebnf, "a123b", deduplicate=False) == [("v", b"1"), ("v", b"12"), ("v", b"123")]


def test_nested_and_repeated():
    assert _captures('root ::= o\no[capture="outer"] ::= "x" i "!"\ni[capture="inner"] ::= [a-z]+', "xab!") == [
        ("inner", b"ab"), ("outer", b"xab!")]
    assert _captures('root ::= (item ",")* item\nitem[capture] ::= [0-9]+', "1,22,333") == [
        ("item", b"1"), ("item", b"22"), ("item", b"333")]


def test_right_recursion_records_every_level():
    # Leo's optimisation would skip the completions of the outer levels; the parser keeps them for captured rules.
    ebnf = 'root ::= lst\nlst[capture] ::= [0-9] "," lst | [0-9]'
    depth = 200
    text = ",".join("7" * depth)
    caps = _captures(ebnf, text)
    assert len(caps) == depth
    assert caps[0] == ("lst", b"7") and caps[-1] == ("lst", text.encode())
    assert [len(t) for _, t in caps] == sorted(len(t) for _, t in caps)


def test_events_come_from_every_parse():
    # As in xgrammar: a completion of a parse that later dies is still an event.
    ebnf = 'root ::= a "q" | "xy"\na[capture] ::= "x"'
    assert _captures(ebnf, "xy") == [("a", b"x")]
    assert _captures('root ::= "ab"', "ab") == []


def test_fills_and_rejected_tokens_record_nothing():
    tok = xgr.TokenizerInfo(["a", "1", "b", "2b", "</s>"], stop_token_ids=[4])
    m = _matcher('root ::= "a" v "b"\nv[capture] ::= [0-9]+', tok)
    bitmask = xgr.allocate_token_bitmask(1, tok.vocab_size)
    assert m.accept_token(0) and m.accept_token(1)
    before = m.get_captures(deduplicate=False)
    assert before == [("v", b"1")]
    m.fill_next_token_bitmask(bitmask)
    assert not m.accept_token(0)  # rejected: unchanged
    assert m.get_captures(deduplicate=False) == before
    assert m.accept_token(3)
    assert m.get_captures(deduplicate=False) == [("v", b"1"), ("v", b"12")]


def test_rollback_reset_fork():
    tok = xgr.TokenizerInfo(["a", "1", "2", "b", "</s>"], stop_token_ids=[4])
    m = _matcher('root ::= "a" v "b"\nv[capture] ::= [0-9]+', tok)
    for t in [0, 1, 3]:
        assert m.accept_token(t)
    assert m.get_captures() == [("v", b"1")]
    forked = m.fork()
    m.rollback(2)
    assert m.get_captures() == []
    assert m.accept_token(2) and m.accept_token(2) and m.accept_token(3)
    assert m.get_captures() == [("v", b"22")]
    assert forked.get_captures() == [("v", b"1")]
    m.reset()
    assert m.get_captures() == []


def test_special_tokens_read_as_their_text():
    tok = xgr.TokenizerInfo(["a", "<|tool|>", "b", "</s>"], stop_token_ids=[3], special_token_ids=[1])
    m = _matcher('root ::= wrap\nwrap[capture] ::= "a" Token(1) "b"', tok)
    for t in [0, 1, 2]:
        assert m.accept_token(t)
    assert m.get_captures() == [("wrap", b"a<|tool|>b")]
    m.rollback(2)
    assert m.get_captures() == []
    assert m.accept_token(1) and m.accept_token(2)
    assert m.get_captures() == [("wrap", b"a<|tool|>b")]


def test_a_token_read_two_ways():
    # "<t>" is a text token that Token(1) also names: the parse after it is the union of both readings.
    tok = xgr.TokenizerInfo(["a", "<t>", "b"])
    ebnf = 'root ::= x | y\nx[capture] ::= "a" Token(1) "b"\ny[capture] ::= "a<t>" "b"'
    m = _matcher(ebnf, tok)
    for t in [0, 1, 2]:
        assert m.accept_token(t)
    assert sorted(m.get_captures()) == [("x", b"a<t>b"), ("y", b"a<t>b")]


def test_bounded_rollback_compaction_keeps_spans():
    # 6,000 one-byte steps with a rollback window of 2: the parser compacts old sets; spans stay exact.
    tok = xgr.TokenizerInfo(["a", ","])
    m = _matcher('root ::= (w ",")*\nw[capture] ::= "a"+', tok, max_rollback_tokens=2)
    words = [1 + (i % 5) for i in range(1000)]
    for n in words:
        for _ in range(n):
            assert m.accept_token(0)
        assert m.accept_token(1)
    assert [t for _, t in m.get_captures()] == [b"a" * n for n in words]


def test_lark_capture_and_ignore():
    g = xgr.Grammar.from_lark('start: "a" v "b"\nv[capture="num"]: /[0-9]+/\n%ignore " "')
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(_EMPTY).compile_grammar(g), terminate_without_stop_token=True)
    assert m.accept_string("a 12  b")
    assert m.get_captures() == [("num", b"12")]  # the ignored text after the lexeme is outside


def test_lark_lazy_capture_records_the_committed_span():
    assert _lark_captures("start: r rest\nr[lazy, capture]: /[a-z]+/\nrest: /[a-z]*/", "abc") == [("r", b"a")]
    assert _lark_captures("start: r rest\nr[capture]: /[a-z]+/\nrest: /[a-z]*/", "abc") == [("r", b"abc")]


def _lark_captures(lark: str, text: str):
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(_EMPTY).compile_grammar(xgr.Grammar.from_lark(lark)),
                           terminate_without_stop_token=True)
    assert m.accept_string(text)
    return m.get_captures()


def test_a_dispatch_heads_stop_marker_stays_in_the_captures_around_it():
    # Documented approximation: read as a dispatch (a rule `tool* tail` without attributes), a head's text is the
    # dispatch's free text and trigger, which no rule spans, so its stop marker is not cut out of an enclosing capture
    # (xgrammar gives b"axb"). A rule with attributes is not read as a dispatch: there the marker is hidden.
    dynamic = 'start: tool* tail\ntail: TEXT\nhead[stop="<t>"]: TEXT\ntool: head "x"\nTEXT: /(\\n|.)*/'
    grammar = xgr.Grammar.from_lark('start[capture="outer"]: @dynamic', named_grammars={"dynamic": dynamic})
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(_EMPTY).compile_grammar(grammar), terminate_without_stop_token=True)
    assert m.accept_string("a<t>xb") and m.get_captures() == [("outer", b"a<t>xb")]
    direct = 'start[capture="outer"]: tool* tail\ntail: TEXT\nhead[stop="<t>"]: TEXT\ntool: head "x"\nTEXT: /(\\n|.)*/'
    assert _lark_captures(direct, "a<t>xb") == [("outer", b"axb")]


def test_capture_does_not_change_the_language_or_masks():
    tok = xgr.TokenizerInfo(["a", "1", "12", "b", "1b", "x"])
    plain = _matcher('root ::= "a" v "b"\nv ::= [0-9]+', tok)
    captured = _matcher('root ::= "a" v "b"\nv[capture] ::= [0-9]+', tok)
    for t in [0, 2, 1, 4]:
        masks = []
        for m in (plain, captured):
            bitmask = xgr.allocate_token_bitmask(1, tok.vocab_size)
            m.fill_next_token_bitmask(bitmask)
            masks.append(np.asarray(bitmask).copy())
        assert (masks[0] == masks[1]).all()
        assert plain.accept_token(t) and captured.accept_token(t)
    assert captured.get_captures() == [("v", b"1211")]


@pytest.mark.parametrize("ebnf, message", [
    ('root[capture, capture="x"] ::= "a"', "capture attribute is specified more than once"),
    ('root[capture=""] ::= "a"', "capture name must not be empty"),
])
def test_bad_attributes(ebnf, message):
    with pytest.raises(ValueError, match=message):
        xgr.Grammar.from_ebnf(ebnf)


def test_masks_equal_the_token_oracle_on_a_real_vocabulary():
    # A captured right-recursive rule (the parser keeps every completion) and a nested capture, on Gemma 3's tokens.
    from real_vocabularies import require

    from xg2jax.testing import check_masks_along

    vocab = require("gemma3")
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo.from_loaded_vocab(vocab)).compile_grammar(
        'root ::= "[" lst "]"\nlst[capture] ::= item ", " lst | item\nitem[capture="n"] ::= [0-9]+ | "\\"" [a-z ]* "\\""')
    check_masks_along(compiled, '[12, "ab c", 345, "", 6]')


@pytest.mark.parametrize("attribute, outer", [("suffix", b"ab!!z"), ("stop", b"abz")])
def test_lark_suffix_and_stop_captures(attribute, outer):
    # The rule's capture is its body, stop_capture its marker (first); a stop marker is hidden from enclosing captures.
    lark = (f'start[capture="outer"]: r "z"\n'
            f'r[capture="inner", {attribute}=/!!+/, stop_capture="marker"]: /[a-z]*/')
    assert _lark_captures(lark, "ab!!z") == [("marker", b"!!"), ("inner", b"ab"), ("outer", outer)]
    # Without a capture of its own, the marker of each occurrence is hidden (stop) or kept (suffix).
    lark = f'start[capture="outer"]: item item "z"\nitem[{attribute}="!"]: /[ab]*/'
    assert _lark_captures(lark, "a!b!z") == [("outer", b"a!b!z" if attribute == "suffix" else b"abz")]


@pytest.mark.parametrize("attribute, outer", [("suffix", b"foo<end>"), ("stop", b"foo")])
def test_a_dispatch_head_read_in_one_step_is_cut_at_its_marker(attribute, outer):
    # Any text up to a marker is read as a dispatch, which may also end without the marker: "foo" is first an
    # unmarked completion, then, in the same step, the body of the marked one, which replaces it.
    lark = f'start[capture="outer"]: r\nr[capture="inner", {attribute}="<end>"]: TEXT\nTEXT: /(\\n|.)*/'
    assert _lark_captures(lark, "plain") == [("inner", b"plain"), ("outer", b"plain")]
    assert _lark_captures(lark, "foo<end>") == [("inner", b"foo"), ("outer", outer)]


def test_marker_split_keeps_a_valid_body():
    # /b?a/ also matches the whole "ba", which would leave the body "b" empty: the cut is b|a.
    lark = 'start: r "Z"\nr[capture="inner", suffix=/b?a/, stop_capture="marker"]: "b"'
    assert _lark_captures(lark, "baZ") == [("marker", b"a"), ("inner", b"b")]


def test_hidden_markers_follow_the_grammar_not_unrelated_rules():
    # c does not reach b: the stop marker of b (in a branch that dies) stays in c's capture.
    lark = 'start: a | c\na[capture="a"]: b "q"\nb[stop="!"]: "x"\nc[capture="c"]: "x!"'
    assert _lark_captures(lark, "x!") == [("c", b"x!")]


def test_marker_attributes_print_back_and_are_checked():
    g = xgr.Grammar.from_ebnf('root ::= r "z"\nr[capture="b", marker_body="[a-z]*", marker="!+", hide_marker, '
                              'stop_capture="m"] ::= [a-z]* "!"')
    assert str(xgr.Grammar.from_ebnf(str(g))) == str(g)
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(_EMPTY).compile_grammar(g), terminate_without_stop_token=True)
    assert m.accept_string("ab!z") and m.get_captures() == [("m", b"!"), ("b", b"ab")]
    for bad, message in (('root ::= r\nr[marker="!"] ::= "a"', "marker_body and marker go together"),
                         ('root ::= r\nr[marker_body="a(", marker="!"] ::= "a"', "in the marker_body regex"),
                         ('root ::= r\nr[hide_marker] ::= "a"', "marker_body and marker go together")):
        with pytest.raises(ValueError, match=message):
            xgr.Grammar.from_ebnf(bad)


def test_random_walks_keep_masks_exact_and_captures_in_step():
    # Grammars mixing captures and token budgets; random walks through the allowed tokens with rollbacks and forks:
    # every mask equals the token oracle, and a rollback restores the raw events.
    import random

    from xg2jax.testing import mask_oracle_diff

    rng = random.Random(7)
    tok = xgr.TokenizerInfo(["a", "b", "ab", "ba", "!", "!!", "x", " ", "a!", "b!", "<t>", "</s>"], stop_token_ids=[11])
    attrs = ["", "[capture]", '[capture="L"]', "[max_tokens=1]", "[max_tokens=2]", "[max_tokens=2, capture]"]
    bodies = ['[ab]+', '"a" r2 | "b"', 'r2 "!"', '[ab]* "!"', '"x" r1 | r2', '(r2 " ")*', '"<t>" r1 "</t>"']
    walked = 0
    for _ in range(60):
        r1 = rng.choice(bodies)
        r2 = rng.choice(bodies).replace("r2", '"a"').replace("r1", '"b"')
        ebnf = f'root ::= r1 "!"? | r1 r2\nr1{rng.choice(attrs)} ::= {r1}\nr2{rng.choice(attrs)} ::= {r2}'
        try:
            compiled = xgr.GrammarCompiler(tok, cache_enabled=False).compile_grammar(ebnf)
        except xgr.InputError:  # a draw whose rules never finish (`r1 ::= "x" r1 | ...` with no way out)
            continue
        m = xgr.GrammarMatcher(compiled, max_rollback_tokens=rng.choice([-1, 2]))
        for _ in range(10):
            if m.is_terminated():
                break
            extra, missing = mask_oracle_diff(m)
            assert len(extra) == 0 and len(missing) == 0, ebnf
            bitmask = xgr.allocate_token_bitmask(1, tok.vocab_size)
            m.fill_next_token_bitmask(bitmask)
            allowed = [i for i in range(tok.vocab_size) if (int(bitmask[0, i // 32]) >> (i % 32)) & 1]
            if not allowed or m.is_terminated():
                break
            before = m.get_captures(deduplicate=False)
            assert m.accept_token(rng.choice(allowed)), ebnf
            walked += 1
            if rng.random() < 0.2:
                m.rollback(1)
                assert m.get_captures(deduplicate=False) == before, ebnf
            if rng.random() < 0.1:
                assert m.fork().get_captures() == m.get_captures()
    assert walked > 200
