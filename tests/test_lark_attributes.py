"""Lark rule attributes: ``[lazy]``, ``[suffix=M]`` and ``[stop=M]`` (first matches: the rule ends as soon as its body,
or its body and then M, is complete), the engine's ``Regex(..., lazy=true)`` they lower to, the checks every
attribute gets (xgrammar's messages), the attributes that are recognised but not built, and Lark's dynamic dispatch
(``T* tail`` with lazy heads: tool calls in free text, the engine's TagDispatch).

The languages are checked against an independent reference on random bodies: Python's ``re`` decides whether a
string matches the body, and a first match is a match none of whose proper prefixes matches."""

from __future__ import annotations

import itertools
import random
import re

import pytest

import xg2jax as xgr
from xg2jax.lark import LarkError, lark_to_ebnf
from xg2jax.testing import mask_oracle_diff

from real_vocabularies import require

ALPHABET = "abc"
# One token per printable ASCII character, then the stop token.
_TOK = xgr.TokenizerInfo([chr(c).encode() for c in range(32, 127)] + [b"\n", b"</s>"], stop_token_ids=[96])
_STOP = 96


def _accepts(compiled, text: str) -> bool:
    m = xgr.GrammarMatcher(compiled)
    return bool(m.accept_string(text)) and bool(m.accept_token(_STOP))


def _compile(lark: str):
    return xgr.GrammarCompiler(_TOK, cache_enabled=False).compile_grammar(xgr.Grammar.from_lark(lark))


def _first_match(pattern: str, s: str) -> bool:
    """The reference: s matches and no proper prefix of s does."""
    return re.fullmatch(pattern, s) is not None and not any(re.fullmatch(pattern, s[:k]) for k in range(len(s)))


def _random_body(rng: random.Random, depth: int = 0) -> tuple[str, str, str]:
    """A random expression over ALPHABET: its Lark and EBNF spellings, and the same language as a Python regex."""
    kind = rng.choice(["str", "str", "range", "re", "seq", "alt", "rep"] if depth < 3 else ["str", "range", "re"])
    if kind == "str":
        s = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 2)))
        return f'"{s}"', f'"{s}"', re.escape(s)
    if kind == "range":
        lo, hi = sorted(rng.sample(ALPHABET, 2))
        return f'"{lo}".."{hi}"', f"[{lo}-{hi}]", f"[{lo}-{hi}]"
    if kind == "re":
        p = rng.choice(["[ab]+", "a*b", "(ab|c)?", "[^a]", "c{1,2}"])
        return f"/{p}/", f'Regex("{p}")', f"(?:{p})"
    if kind == "seq":
        parts = [_random_body(rng, depth + 1) for _ in range(2)]
        return (" ".join(f"({l})" for l, _, _ in parts), " ".join(f"({e})" for _, e, _ in parts),
                "".join(f"(?:{p})" for _, _, p in parts))
    if kind == "alt":
        parts = [_random_body(rng, depth + 1) for _ in range(2)]
        return ("(" + " | ".join(l for l, _, _ in parts) + ")", "(" + " | ".join(e for _, e, _ in parts) + ")",
                "(?:" + "|".join(p for _, _, p in parts) + ")")
    lark, ebnf, pat = _random_body(rng, depth + 1)
    op = rng.choice(["*", "+", "?"])
    return f"({lark}){op}", f"({ebnf}){op}", f"(?:{pat}){op}"


_STRINGS = ["".join(t) for n in range(6) for t in itertools.product(ALPHABET, repeat=n)]


@pytest.mark.parametrize("seed", range(25))
def test_lazy_and_suffix_match_the_reference(seed):
    """Lark's ``[lazy]`` and ``[suffix=...]`` and EBNF's ``r[lazy] ::=`` on random bodies: acceptance of every
    string over a, b, c up to length 5 (inside delimiters, so the rule's end is observable) equals the reference's
    first matches."""
    rng = random.Random(seed)
    body, ebnf_body, pattern = _random_body(rng)
    marker = rng.choice(["c", "ab", "b"])
    grammars = [(xgr.Grammar.from_lark, f'start: "<" r ">"\nr[lazy]: {body}', pattern),
                (xgr.Grammar.from_lark, f'start: "<" r ">"\nr[suffix="{marker}"]: {body}',
                 f"(?:{pattern}){re.escape(marker)}"),
                (xgr.Grammar.from_ebnf, f'root ::= "<" r ">"\nr[lazy] ::= {ebnf_body}', pattern)]
    for read, text, ref in grammars:
        try:
            compiled = xgr.GrammarCompiler(_TOK, cache_enabled=False).compile_grammar(read(text))
        except ValueError:  # only a body that matches nothing may be refused
            assert not any(re.fullmatch(ref, s) for s in _STRINGS), text
            continue
        for s in _STRINGS:
            assert _accepts(compiled, f"<{s}>") == _first_match(ref, s), (text, s)


@pytest.mark.parametrize(
    "lark, yes, no",
    [
        ('start: "<" r ">"\nr[lazy]: /[a-z]+/', ["<a>", "<b>"], ["<ab>", "<>"]),
        ('start: "<" r ">"\nr[lazy]: /[a-z]*/', ["<>"], ["<a>"]),
        ('start: "<" r ">"\nr[lazy]: "ab" | "abc"', ["<ab>"], ["<abc>"]),
        ('start: "<" r ">"\nr[lazy]: SUB SUB\nSUB: /[a-z]/', ["<ab>"], ["<a>", "<abc>"]),
        ('start: head "!"\nhead[lazy]: TEXT* "<end>"\nTEXT: /[a-z]/', ["<end>!", "abc<end>!"],
         ["a<end>b<end>!", "abc<end>"]),
        # Any text, then a marker: read as a dispatch (xgrammar's reading): the text may also end without it.
        ('start: head "!"\nhead[lazy]: TEXT "<end>"\nTEXT: /(\\n|.)*/', ["x\ny<end>!", "x!", "!"],
         ["<end>x<end>!", "<end>x!"]),
        ('start: r "c"\nr[suffix="b"]: /[a-z]*/', ["aabc", "bc"], ["abbc", "aac", "c"]),
        ('start: r "c"\nr[stop="b"]: /[a-z]*/', ["aabc", "bc"], ["abbc", "aac", "c"]),
        ('start: "<" r ">"\nr[suffix=END]: /[a-z]+/\nEND: /!!+/ | "??"', ["<word??>", "<a!!>"],
         ["<word???>", "<a!!!>", "<a!>"]),
        ('start: r "z"\nr[stop="END"i]: /[a-z]*/', ["abcendz", "abcENDz"], ["abcENDENDz"]),
        ('start: r "!"\nr[suffix=/X.Y/s]: /[a-z]*/', ["abX\nY!"], ["abX\nYX\nY!"]),
        ('%import common.WS\n%ignore WS\nstart: "<" r ">"\nr[lazy]: /[a-z]+/', ["< a >", "<a >"], ["<a b>"]),
    ],
)
def test_languages(lark, yes, no):
    compiled = _compile(lark)
    for s in yes:
        assert _accepts(compiled, s), (lark, s)
    for s in no:
        assert not _accepts(compiled, s), (lark, s)


def test_lowered_to_a_lazy_regex_and_printed_back():
    ebnf = lark_to_ebnf('start: r "c"\nr[suffix="b"]: /[a-z]*/')
    assert ('r_marked[marker_body="(?:[a-z]*)", marker="b"] ::= Regex("(?:(?:[a-z]*))(?:b)", flags="", lazy=true)'
            in ebnf)
    grammar = xgr.Grammar.from_lark('start: r "c"\nr[suffix="b"]: /[a-z]*/')
    again = xgr.Grammar.from_ebnf(str(grammar))  # the printed automaton rules parse back to the same language
    compiled = xgr.GrammarCompiler(_TOK).compile_grammar(again)
    assert _accepts(compiled, "aabc") and not _accepts(compiled, "abbc")


def test_ebnf_lazy_rules():
    # A builtin's helper rules are read in place: "x" then a run of the chunks, ending at the first match "x".
    compiled = xgr.GrammarCompiler(_TOK).compile_grammar('root ::= "<" r ">"\nr[lazy] ::= "x" Substring("ab", "c")')
    assert _accepts(compiled, "<x>") and not _accepts(compiled, "<xab>")
    compiled = xgr.GrammarCompiler(_TOK).compile_grammar('root ::= "<" r ">"\nr[lazy] ::= Substring("ab", "c") "!"')
    assert _accepts(compiled, "<abc!>") and not _accepts(compiled, "<ab>")
    for bad, message in (('root ::= r\nr[lazy] ::= "a" r | "b"', "a lazy rule's body cannot reference a rule"),
                         ('root ::= r\nr[max_tokens=2, lazy] ::= "a"', "max_tokens together with lazy is not supported"),
                         ('root[lazy, lazy] ::= "a"', "lazy attribute is specified more than once")):
        with pytest.raises(ValueError, match=re.escape(message)):
            xgr.Grammar.from_ebnf(bad)


def test_ebnf_lazy_regex():
    compiled = xgr.GrammarCompiler(_TOK).compile_grammar('root ::= Regex("a+|b", lazy=true) "!"')
    assert _accepts(compiled, "a!") and _accepts(compiled, "b!") and not _accepts(compiled, "aa!")
    folded = xgr.GrammarCompiler(_TOK).compile_grammar('root ::= Regex("x.", flags="i", lazy=true)')
    assert _accepts(folded, "X?") and not _accepts(folded, "x\n")
    for bad, message in (('Regex("a", lazy=true, search=true)', "cannot be combined with search"),
                         ('Regex("a", json_string=true, lazy=true)', "cannot be combined with json_string"),
                         ('Regex("a", lazy=maybe)', "takes true or false"),
                         ('Regex("(a", lazy=true)', "in the Regex(...) pattern")):
        with pytest.raises(ValueError, match=re.escape(message)):
            xgr.Grammar.from_ebnf(f"root ::= {bad}")


def _within_max_chars(pattern: str, n: int, s: str) -> bool:
    """The reference of max_chars=n: s matches and no proper prefix of at least n characters does."""
    return re.fullmatch(pattern, s) is not None and not any(re.fullmatch(pattern, s[:k]) for k in range(n, len(s)))


@pytest.mark.parametrize("seed", range(12))
def test_max_chars_matches_the_reference(seed):
    """``[max_chars=n]`` (Lark) and ``r[max_chars=n] ::=`` (EBNF): once n characters are read, the rule ends at the
    first point its body is complete (before that it may go on; where it cannot end yet, it goes on to the first
    point where it can)."""
    rng = random.Random(100 + seed)
    body, ebnf_body, pattern = _random_body(rng)
    n = rng.randint(0, 3)
    for read, text in ((xgr.Grammar.from_lark, f'start: "<" r ">"\nr[max_chars={n}]: {body}'),
                       (xgr.Grammar.from_ebnf, f'root ::= "<" r ">"\nr[max_chars={n}] ::= {ebnf_body}')):
        try:
            compiled = xgr.GrammarCompiler(_TOK, cache_enabled=False).compile_grammar(read(text))
        except ValueError:
            assert not any(re.fullmatch(pattern, s) for s in _STRINGS), text
            continue
        for s in _STRINGS:
            assert _accepts(compiled, f"<{s}>") == _within_max_chars(pattern, n, s), (text, s)


def test_max_chars_examples():
    for lark, yes, no in (
            ('start: r ">"\nr[max_chars=2]: TEXT\nTEXT: /(\\n|.)*/', [">", "a>", "中文>", "\n>"], ["abc>", "中文a>"]),
            ('start: r ">"\nr[max_chars=2]: /[a-z]{3}/', ["abc>"], ["ab>", "abcd>"]),  # cannot end at 2: goes on
            ('start: r ">"\nr[max_chars=0]: /[a-z]*/', [">"], ["a>"]),
            ('start: r ">"\nr[lazy, max_chars=5]: /[a-z]+/', ["a>"], ["ab>"])):  # lazy ends first
        compiled = _compile(lark)
        for s in yes:
            assert _accepts(compiled, s), (lark, s)
        for s in no:
            assert not _accepts(compiled, s), (lark, s)
    assert 'max_chars=7' in lark_to_ebnf('start: r\nr[max_chars=7]: /[a-z]*/')


def _budget_closed(body: str, marker: str, n: int, s: str) -> bool:
    """The reference of a suffix rule with max_chars=n: the text ends at its first point that is a body followed by
    the marker, or, n characters in, a whole body (the budget closes it without the marker)."""
    def ends(t: str) -> bool:
        return re.fullmatch(f"(?:{body})(?:{marker})", t) is not None or (
            len(t) >= n and re.fullmatch(body, t) is not None)
    return ends(s) and not any(ends(s[:k]) for k in range(len(s)))


@pytest.mark.parametrize("seed", range(12))
def test_max_chars_with_a_marker_matches_the_reference(seed):
    """``[max_chars=n, suffix=M]`` / ``[max_chars=n, stop=M]``: the first body followed by M ends the rule; once n
    characters are read, the first point where the text is a whole body ends it too, without M."""
    rng = random.Random(300 + seed)
    body, _, pattern = _random_body(rng)
    marker = rng.choice(["c", "ab", "b"])
    n = rng.randint(0, 4)
    for attribute in ("suffix", "stop"):
        text = f'start: "<" r ">"\nr[max_chars={n}, {attribute}="{marker}"]: {body}'
        try:
            compiled = _compile(text)
        except ValueError:
            assert not any(_budget_closed(pattern, re.escape(marker), n, s) for s in _STRINGS), text
            continue
        for s in _STRINGS:
            assert _accepts(compiled, f"<{s}>") == _budget_closed(pattern, re.escape(marker), n, s), (text, s)


def test_max_chars_with_a_marker_captures_the_body_either_way():
    compiled = _compile('start[capture="outer"]: r "!"\n'
                        'r[max_chars=2, capture="inner", stop=">", stop_capture="marker"]: TEXT\nTEXT: /(\\n|.)*/')
    for text, captures in (("aa!", [("inner", "aa"), ("outer", "aa!")]),  # the budget closes it: no marker
                           ("a>!", [("marker", ">"), ("inner", "a"), ("outer", "a!")])):  # the marker first
        m = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        assert m.accept_string(text) and m.is_terminated(), text
        assert m.get_captures() == [(label, value.encode()) for label, value in captures], text
    assert not _accepts(compiled, "aa>!")  # closed at 2 characters: the marker may not follow


def test_max_chars_on_one_token_and_with_max_tokens():
    tok = xgr.TokenizerInfo(["<|wide|>", "!", "a", "ab", ">"], special_token_ids=[0])
    compiler = xgr.GrammarCompiler(tok, cache_enabled=False)
    # A token is not cut: the budget ends the rule after it.
    m = xgr.GrammarMatcher(compiler.compile_grammar(xgr.Grammar.from_lark('start: v "!"\nv[max_chars=1]: <|wide|>',
                                                                          tokenizer_info=tok)),
                           terminate_without_stop_token=True)
    assert m.accept_token(0) and m.accept_token(1) and m.is_terminated()
    # Both budgets: whichever ends the rule first (2 tokens, or the first point 3 characters in).
    compiled = compiler.compile_grammar(xgr.Grammar.from_lark(
        'start: r ">"\nr[max_tokens=2, max_chars=3]: TEXT\nTEXT: /(\\n|.)*/'))
    for ids, ok in (([3, 2, 4], True), ([2, 2, 2, 4], False), ([3, 3, 4], False), ([2, 4], True)):
        m = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        got = True
        for i in ids:
            extra, missing = mask_oracle_diff(m)
            assert len(extra) == 0 and len(missing) == 0, (ids, i)
            if not m.accept_token(i):
                got = False
                break
        assert (got and m.is_terminated()) == ok, ids


ERRORS = [
    ('start[budget=10]: "a"', "rule attribute 'budget' is not supported"),
    ('start[capture=""]: "a"', "capture name must not be empty"),
    ('start[capture="a b"]: "a"', "capture name must only contain letters, digits"),
    ('start[capture, capture]: "a"', "capture attribute is specified more than once"),
    ("TOKEN[lazy]: /a/\nstart: TOKEN", "attributes are only supported on rules"),
    ('start: thing\nthing[lazy]: "a" thing | "b"', "terminal cannot reference rule 'thing'"),
    ("start: item\nitem[suffix=/end/i]: /[a-z]*/", "flag 'i' is not supported with suffix or stop attributes"),
    ('start: head\nhead[suffix=""]: "a"', "suffix must not be empty"),
    ("start: head\nhead[stop=end]: /a/", "stop terminal name must be uppercase"),
    ('start: head\nhead[suffix="x",suffix="y"]: /a/', "suffix attribute is specified more than once"),
    ("start: head\nhead[suffix=MISSING]: /a/", "unknown name 'MISSING'"),
    ('start: head\nhead[stop_capture="m"]: /a/', "stop_capture requires stop or suffix"),
    ('start: head\nhead[stop="x", stop_capture=MARKER]: /a/', "expected string literal after stop_capture="),
    ('start: head\nhead[stop="x", suffix="y"]: /a/', "suffix cannot be combined with stop"),
    ('start: head\nhead[suffix="y", stop="x"]: /a/', "stop cannot be combined with suffix"),
    ("start: r\nr[max_tokens=0]: /a/", "max_tokens must be positive"),
    ("start: r\nr[max_tokens=x]: /a/", "expected integer after max_tokens="),
    ("start: r\nr[temperature=-1]: /a/", "temperature must be a finite non-negative number"),
    ("start: r\nr[temperature=hot]: /a/", "expected number after temperature="),
    ('start: r\nr[lazy]: /[a-z]+/ %json {"type": "integer"}', "takes strings, regular expressions"),
    ('start: r\nr[lazy]: /a./s "b" /.c/', "disagree on '.' matching a newline"),
    ('start: r\nr[lazy]: /a/i "b"', "disagree on case-insensitive matching"),
    # Recognised, checked, and not built: named errors, never ignored.
    ('start: r\nr[<|tool|>, capture]: /a+/', "expected an attribute name"),
    ('start: r\nr[max_tokens=3, max_chars=2, suffix="x"]: /a+/', "max_tokens together with max_chars (or lazy)"),
    ('start: tool* tail\ntail: TEXT\nhead[capture, suffix="<t>"]: TEXT\ntool: head "x"\nTEXT: /(\\n|.)*/',
     "capture on a head read by dynamic dispatch (rule 'head') is not supported"),
    ('start: tool* tail\ntail: TEXT\nhead[stop="<t>", stop_capture="m"]: TEXT\ntool: head "x"\nTEXT: /(\\n|.)*/',
     "stop_capture on a head read by dynamic dispatch (rule 'head') is not supported"),
    ('start: r\nr[max_tokens=3, lazy]: /a+/', "max_tokens together with lazy is only supported by xg2jax on a lazy "
                                              "rule that is any text then a marker"),
    ("start: r\nr[temperature=0.5, temperature=1]: /a+/", "temperature attribute is specified more than once"),
    ('start: r\nr[temperature=0.5]: "a" s\ns: "b"', "temperature is only supported on terminals and subgrammars"),
]


@pytest.mark.parametrize("lark, message", ERRORS)
def test_errors(lark, message):
    with pytest.raises(LarkError, match=re.escape(message)) as info:
        xgr.Grammar.from_lark(lark)
    assert re.match(r"Lark error at line \d+, column \d+: ", str(info.value))


TOOL_CALLS = r"""
start: tool* tail
tail: TEXT
tool_head[lazy]: TEXT "<tool_call>"
tool: tool_head %json {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"],
                       "additionalProperties": false} "</tool_call>"
TEXT: /(\n|.)*/
"""


@pytest.mark.parametrize(
    "lark, yes, no",
    [
        (TOOL_CALLS, ["", "plain", "a <tool_cal b", '<tool_call>{"x":1}</tool_call>',
                      'a<tool_call>{"x":1}</tool_call>b<tool_call>{"x": 2}</tool_call>'],
         ["<tool_call>", '<tool_call>{"x":"no"}</tool_call>', 'a<tool_call>{"x":1}',
          "a<tool_call>free</tool_call>b"]),
        # Tools sharing a trigger share a tag; a regex head; a suffix head.
        ('start: (foo | bar)* tail\ntail: TEXT\nfoo_head[lazy]: TEXT "<f"\nfoo: foo_head "=foo>" /[a-z]+/ ";"\n'
         'bar_head[lazy]: TEXT "<f"\nbar: bar_head "=bar>" /[A-Z]+/ ";"\nTEXT: /(\\n|.)*/',
         ["x<f=foo>ab;y<f=bar>CD;"], ["<f=foo>AB;", "<f=baz>ab;", "<f"]),
        ('start: tool* tail\ntail: TEXT\nhead[lazy]: /(\\n|.)*END\\./\ntool: head "ok"\nTEXT: /(\\n|.)*/',
         ["free END text", "xEND.okEND.ok"], ["END.", "xEND.no"]),
        ('start: tool* tail\ntail: TEXT\nhead[suffix="<t>"]: TEXT\ntool: head /[a-z]+/ "</t>"\nTEXT: /(\\n|.)*/',
         ["free", "x<t>abc</t>y"], ["<t>", "<t>123</t>"]),
    ],
)
def test_dynamic_dispatch(lark, yes, no):
    test_languages(lark, yes, no)


def test_dynamic_dispatch_errors():
    tok = xgr.TokenizerInfo(["<|bar|>", "x"])
    mixed = ('start: (foo | bar)* tail\ntail: TEXT\nfoo_head[lazy]: TEXT "<foo>"\nfoo: foo_head "x"\n'
             'bar: TEXT <|bar|> "x"\nTEXT: /(\\n|.)*/')
    with pytest.raises(LarkError, match="cannot mix string and token triggers"):
        xgr.Grammar.from_lark(mixed, tokenizer_info=tok)
    with pytest.raises(LarkError, match="max_tokens is not supported on rules consumed by dynamic dispatch"):
        xgr.Grammar.from_lark('start: tool* tail\ntail: TEXT\nh[lazy]: TEXT "<t>"\ntool[max_tokens=3]: h "x"\n'
                              'TEXT: /(\\n|.)*/')
    with pytest.raises(LarkError, match="only supported on a head used by dynamic dispatch"):
        xgr.Grammar.from_lark("start: head\nhead[lazy]: /(\\n|.)*END/")


def test_dynamic_dispatch_with_a_token_trigger():
    """A special-token trigger: free text read as tokens, the trigger token (here a text token) always dispatches."""
    tok = xgr.TokenizerInfo(["plain", "<|tool|>", "{", '"x"', ":", "1", "}", "</tool>", "bad", "</s>"],
                            stop_token_ids=[9])
    lark = ('start: tool* tail\ntail: TEXT\ntool: TEXT <|tool|> %json {"type": "object", "properties": {"x": '
            '{"const": 1}}, "required": ["x"], "additionalProperties": false} "</tool>"\nTEXT: /(\\n|.)*/')
    compiled = xgr.GrammarCompiler(tok).compile_grammar(xgr.Grammar.from_lark(lark, tokenizer_info=tok))

    def accepts(ids):
        m = xgr.GrammarMatcher(compiled)
        return all(m.accept_token(t) for t in ids) and m.accept_token(9)

    for ids in ([0], [1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3, 4, 5, 6, 7, 0]):
        assert accepts(ids), ids
    for ids in ([1], [1, 8], [1, 2, 3, 4, 8]):
        assert not accepts(ids), ids


@pytest.mark.parametrize("vocab", ["qwen2", "gemma3"])
def test_masks_equal_the_oracle_on_a_real_vocabulary(vocab):
    """First matches (a lazy head, a suffix rule) and a dynamic dispatch on a real vocabulary: at every step of a
    valid text the mask equals the token-by-token oracle (tokens that run past the first marker are forbidden)."""
    tok = xgr.TokenizerInfo.from_loaded_vocab(require(vocab))
    lark = ('start: head call "\\n" note "\\n" calls\nhead[lazy]: /[^<]*/ "<call>"\ncall: /[a-z]+/ "()"\n'
            'note[suffix="END"]: /[a-z ]*/\ncalls: tool* tail\ntail: TEXT\nth[lazy]: TEXT "<t>"\n'
            'tool: th /[0-9]+/ "</t>"\nTEXT: /(\\n|.)*/')
    compiled = xgr.GrammarCompiler(tok).compile_grammar(xgr.Grammar.from_lark(lark))
    text = "say hi <call>greet()\nall fine END\nsee <t>12</t> and <t>3</t> done"
    m = xgr.GrammarMatcher(compiled)
    for ch in text:
        extra, missing = mask_oracle_diff(m)
        assert len(extra) == 0 and len(missing) == 0, (ch, extra[:5], missing[:5])
        assert m.accept_string(ch), ch
    assert m.is_completed()
    assert not m.fork().accept_string("<t>x")  # a trigger in the free text must start a call
