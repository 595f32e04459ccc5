"""TagDispatch: free text in which each trigger dispatches to its rule (grammar.h, fsm/tag_dispatch_dfa.h).

Checked three ways: labelled strings (the behaviour xgrammar's own tests pin down, written out here), a
declarative reference of the language on random strings, and masks against the token-by-token oracle along
sentences whose tokens straddle free text, triggers and rule bodies (a small vocabulary here; Gemma 3 and Qwen2
when ../shared/data has them).
"""

from __future__ import annotations

import functools
import random
import re

import pytest

import xg2jax as xgr
from real_vocabularies import require
from xg2jax.testing import check_masks_along, is_grammar_accept_string, mask_oracle_diff

SIMPLE = 'root ::= TagDispatch(("tag1", rule1), ("tag2", rule2))\nrule1 ::= "abcd"\nrule2 ::= "efg"\n'
COMPLEX = 'root ::= TagDispatch(("tag1", rule1), ("tag2", rule2))\nrule1 ::= "abcd" [p]*\nrule2 ::= "efg" [t]*\n'
STOP = ('root ::= body stop "w"\nbody ::= TagDispatch(("tag1", rule1), ("tag2", rule2), excludes=("tag3", "ll"))\n'
        'stop ::= "tag3" | "ll"\nrule1 ::= "abcd" [p]*\nrule2 ::= "efg" [t]*\n')


@pytest.mark.parametrize("grammar,valid,invalid", [
    (SIMPLE, ["tag1abcd", "tag1abcdtag2efg", "tag1abcdqqqqtag2efg", "", "free text", "tag", "ta", "好"],
     ["tag1abc", "tag1abce", "ttag1abd", "tag1", "xtag2ef"]),
    # [t]* may stop early: in "tag2efgtttttag1abc" the tag2 body takes every t and "ag1abc" is free text.
    (COMPLEX, ["tag1abcd", "tag1abcdppppptag2efg", "tag2efgtttttag1abc"], ["tag1efg"]),
    (COMPLEX.replace("))\n", "), loop_after_dispatch=false)\n", 1), ["tag1abcd", "tag2efgttt", "plain"],
     ["tag1abcdppppptag2", "tag2efgtag1", "tag1abcdx"]),
    (STOP, ["tag1abcdllw", "tag1abcdtag3w", "tag1abcdqqqtag2efgtag3w", "llw"],
     ["tag1abcd", "tag2efgttt", "tag1abce", "xllyllw", "atag3btag3w"]),
    # Excludes are found anywhere, overlapping ones too ("abcd" ends with "bcd").
    ('root ::= TagDispatch(excludes=("bcd", "abce"))', ["abc", "hello", "abcbc"], ["abcd", "abcdX", "aabce", "abcbcd"]),
    ('root ::= TagDispatch(loop_after_dispatch=true)', ["any string", "", "好"], []),
    # A trigger that is a prefix of another: both readings stay open.
    ('root ::= TagDispatch(("ab", r1), ("abc", r2))\nr1 ::= "1"\nr2 ::= "2"', ["ab1", "abc2", "ab1abc2", "xab1"],
     ["abc1", "ab2", "ab", "abc"]),
    # A trigger completing as the suffix of another's prefix ("xab" holds "ab"): it must dispatch there.
    ('root ::= TagDispatch(("ab", r1), ("xabz", r2))\nr1 ::= "1"\nr2 ::= "2"', ["xab1", "xabz2", "ab1"],
     ["xabq", "xab2"]),
    # Inside a sequence (lifted into a rule of its own), and a dispatch target that dispatches again.
    ('root ::= "[" TagDispatch(("<t>", t), excludes=("]")) "]"\nt ::= "x" TagDispatch(("<u>", u), '
     'loop_after_dispatch=false, excludes=("!")) "/"\nu ::= "y"',
     ["[]", "[ab]", "[a<t>x/b]", "[<t>xab<u>y/]", "[<t>xa/<t>x/]"], ["[<t>x<u>z/]", "[a]b]", "[<t>xa!/]", "[<t>"]),
])
def test_labelled_strings(grammar, valid, invalid):
    for s in valid:
        assert is_grammar_accept_string(grammar, s), s
    for s in invalid:
        assert not is_grammar_accept_string(grammar, s), s


def _reference(text: str, triggers: dict[str, str], excludes: tuple[str, ...], loop: bool) -> bool:
    """The language of `root ::= TagDispatch(...)` written declaratively, for triggers none of which occurs
    inside another: free-text segments hold no exclude and no trigger but the one that ends them, each
    followed by a match of its rule (a Python regex); with `loop` any number of segments, else at most one
    before the final free text."""
    def clean(s: str) -> bool:
        return not any(x in s for x in excludes) and not any(t in s for t in triggers)

    @functools.lru_cache(maxsize=None)
    def accept(i: int, dispatches_left: int) -> bool:
        if clean(text[i:]):
            return True
        if dispatches_left == 0:
            return False
        for j in range(i + 1, len(text) + 1):
            seg = text[i:j]
            if any(x in seg for x in excludes):
                break
            ending = [t for t in triggers if seg.endswith(t)]
            if ending:
                if not clean(seg[:-len(ending[0])]) or any(t in seg[:-1] for t in triggers):
                    break  # an earlier trigger had to dispatch
                for k in range(j, len(text) + 1):
                    if re.fullmatch(triggers[ending[0]], text[j:k]) and (
                            (loop and accept(k, dispatches_left)) or (not loop and k == len(text))):
                        return True
                return False
        return False

    return accept(0, 1 << 30 if loop else 1)


@pytest.mark.parametrize("loop", [True, False])
def test_random_strings_agree_with_a_declarative_reference(loop):
    triggers = {"<a>": "x+;", "[b": "(yz)*]", "q": "1?"}
    excludes = ("##", "zz")
    rules = "\n".join(["ra ::= \"x\"+ \";\"", "rb ::= (\"yz\")* \"]\"", "rq ::= \"1\"?"])
    grammar = (f'root ::= TagDispatch(("<a>", ra), ("[b", rb), ("q", rq), loop_after_dispatch={str(loop).lower()}, '
               f'excludes=("##", "zz"))\n{rules}')
    compiled = xgr.GrammarCompiler(xgr.testing._byte_tokenizer()).compile_grammar(grammar)
    pieces = ["<a>", "[b", "q", "#", "z", "x", ";", "y", "]", "1", "<", "a", ">", "b", " "]
    rng = random.Random(5)
    verdicts = {True: 0, False: 0}
    for _ in range(1500):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 7)))
        want = _reference(text, triggers, excludes, loop)
        matcher = xgr.GrammarMatcher(compiled)
        got = matcher.accept_string(text) and matcher.is_completed()
        assert got == want, text
        verdicts[want] += 1
    assert verdicts[True] >= 100 and verdicts[False] >= 100, verdicts


def test_printed_grammar_parses_back_to_itself():
    g = xgr.Grammar.from_ebnf('root ::= "a" TagDispatch(("<t\\n>", t), ("\\"q", t), loop_after_dispatch=false, '
                              'excludes=("x\\\\", "好"))\nt ::= "b"')
    text = str(g)
    assert 'TagDispatch(("<t\\n>", t), ("\\"q", t), loop_after_dispatch=false, excludes=("x\\\\", "好"))' in text
    assert str(xgr.Grammar.from_ebnf(text)) == text
    for s, want in (("a<t\n>b", True), ('a"qb', True), ('a"qbzz', False), ("a<t\n>", False), ("ax\\", False),
                    ("a好", False)):
        assert is_grammar_accept_string(text, s) == want, s
    # Token ids beside string triggers (a marker as text or as its special token) print and parse back too.
    mixed = xgr.Grammar.from_ebnf('root ::= TagDispatch(("<a>", r), (7, r), excludes=("x"))\nr ::= "b"')
    assert 'TagDispatch(("<a>", r), (7, r), loop_after_dispatch=true, excludes=("x"))' in str(mixed)
    assert str(xgr.Grammar.from_ebnf(str(mixed))) == str(mixed)
    with pytest.raises(ValueError, match="a non-empty string literal or a token id"):
        xgr.Grammar.from_ebnf('root ::= TagDispatch((r, r))\nr ::= "b"')


@pytest.mark.parametrize("text,fragment", [
    ('root ::= TagDispatch(("", r))\nr ::= "a"', "the trigger of a TagDispatch(...) pair must not be empty"),
    ('root ::= TagDispatch(("a", r), excludes=(""))\nr ::= "a"', "an exclude of TagDispatch(...) must not be empty"),
    ('root ::= TagDispatch(("abc", r), excludes=("ab"))\nr ::= "a"',
     'the exclude "ab" is a prefix of the trigger "abc" of TagDispatch(...)'),
    ('root ::= TagDispatch(("a", r), stop_eos=true)\nr ::= "a"', "unknown argument 'stop_eos' of TagDispatch(...)"),
    ('root ::= TagDispatch(("a", r), loop_after_dispatch=1)\nr ::= "a"', "loop_after_dispatch= takes true or false"),
    ('root ::= TagDispatch(("a", missing))', "undefined rule 'missing'"),
    ('root ::= TagDispatch(("a"))', "is a pair (\"trigger\", rule): expected ','"),
    ('root ::= TagDispatch("a", r)\nr ::= "a"', 'a tag of TagDispatch(...) is a pair ("trigger", rule)'),
    ('root ::= TagDispatch(excludes=("x"), ("a", r))\nr ::= "a"', 'takes its ("trigger", rule) pairs before'),
    ('root ::= TagDispatch(("a", r)\nr ::= "a"', "expected ',' or ')' in TagDispatch(...)"),
    ('root ::= "a" (= TagDispatch(("a", r)))\nr ::= "a"', "TagDispatch(...) is not allowed in the lookahead"),
    # token elements (the vocabulary of _special_tokenizer below: 16 tokens, 0 stop, 1-3 special)
    ('root ::= Token(0)', "Token(0) names a stop token"),
    ('root ::= TagDispatch((4, r))\nr ::= "x"', "token 4 ('a') is a text token: the token triggers and excludes"),
    ('root ::= Token(99)', "Token id 99 in the grammar is out of the vocabulary range [0, 16)"),
    ('root ::= Token()', "Token(...) needs at least one token id"),
    ('root ::= Token("a")', "Token(...) takes token ids"),
    ('root ::= Token(99999999)', "token id out of range in Token(...)"),
    ('root ::= TokenTagDispatch((1, r), excludes=(1))\nr ::= "x"', "token 1 is both a trigger and an exclude"),
    ('root ::= TokenTagDispatch(("<a>", r))\nr ::= "x"', "the trigger of a TokenTagDispatch(...) pair takes token ids"),
])
def test_malformed_tag_dispatch_is_a_precise_error(text, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        xgr.GrammarCompiler(_special_tokenizer()).compile_grammar(text)


def _straddling_tokenizer() -> xgr.TokenizerInfo:
    """Tokens that cut through triggers, excludes and bodies at every offset, and join free text to them."""
    pieces = ["<tool>", "</tool>", "<fn=", "END", "\n\n", "{", "}", "a", "b", "x", " ", "\n", "好", "hi", ">"]
    rng = random.Random(11)
    vocab = set()
    for p in pieces:
        vocab.update(p[i:j] for i in range(len(p)) for j in range(i + 1, len(p) + 1))
    while len(vocab) < 600:
        s = "".join(rng.choice(pieces) for _ in range(rng.randint(2, 3)))
        i = rng.randint(0, len(s) - 1)
        vocab.add(s[i:i + rng.randint(1, 6)])
    return xgr.TokenizerInfo(["</s>"] + sorted(vocab), stop_token_ids=[0])


TOOLS = ('root ::= text "END"\n'
         'text ::= TagDispatch(("<tool>", call), ("<fn=", fn), excludes=("END", "\\n\\n"))\n'
         'call ::= "{" [abx ]* "}" "</tool>"\nfn ::= [abx]+ ">" "{" [abx]* "}"')
TOOLS_SENTENCES = {
    "true": ["END", "hi END", "hi <tool>{a b}</tool> xEND", "<fn=ab>{x}<tool>{}</tool>\nEND",
             "a<to b<tool>{bb}</tool><fn=a>{}hi\nEND", "好<tool>{x}</tool>好END"],
    # Without the loop the construct ends after its first call.
    "false": ["END", "hi END", "hi <tool>{a b}</tool>END", "a<to b<fn=ab>{x}END", "好<tool>{x}</tool>END"],
}


@pytest.mark.parametrize("loop", ["true", "false"])
def test_masks_equal_the_oracle_on_straddling_tokens(loop):
    compiled = xgr.GrammarCompiler(_straddling_tokenizer()).compile_grammar(
        TOOLS.replace('excludes=', f'loop_after_dispatch={loop}, excludes='))
    rng = random.Random(loop)
    for s in TOOLS_SENTENCES[loop]:
        for _ in range(4):
            assert check_masks_along(compiled, s, rng=rng) > 0
    if loop == "false":
        assert not is_grammar_accept_string(compiled.grammar, "hi <tool>{a b}</tool> xEND")


@pytest.mark.parametrize("vocab", ["gemma3", "qwen2"])
def test_masks_equal_the_oracle_on_real_vocabularies(vocab):
    tok = xgr.TokenizerInfo.from_loaded_vocab(require(vocab))
    grammar = ('root ::= TagDispatch(("<tool_call>", call), excludes=("<|im_end|>", "\\n\\n\\n"))\n'
               'call ::= "\\n{\\"name\\": \\"" [a-z_]+ "\\", \\"arguments\\": {" [^{}]* "}}\\n</tool_call>"')
    compiled = xgr.GrammarCompiler(tok).compile_grammar(grammar)
    text = ('Let me check the weather.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
            '</tool_call>\nIt is <tool sunny; 好的.')
    assert is_grammar_accept_string(grammar, text)
    check_masks_along(compiled, text)
    check_masks_along(compiled, text, rng=random.Random(vocab))


def test_a_rejected_token_leaves_the_matcher_unchanged():
    tok = _straddling_tokenizer()
    compiled = xgr.GrammarCompiler(tok).compile_grammar(TOOLS)
    vocab = tok.decoded_vocab
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string("hi <tool>{a")
    before = xgr.allocate_token_bitmask(1, tok.vocab_size)
    m.fill_next_token_bitmask(before)
    bad = [i for i, t in enumerate(vocab) if t in (b"END", b"\n\n", b"<tool>")]
    assert bad
    for t in bad:
        assert not m.accept_token(t)
    after = xgr.allocate_token_bitmask(1, tok.vocab_size)
    m.fill_next_token_bitmask(after)
    assert (before == after).all()
    assert m.accept_string("}</tool>END")


def test_tokens_that_run_through_a_trigger_into_its_rule():
    """A token may hold free text, a whole trigger and the start of the rule, or the end of the rule and free
    text after it; the mask decides each from the bytes (the case xgrammar's mask tests use)."""
    words = ["2dgtag1a", "tag1a", "abcdef", "c哈哈t", "2dgtag1b", "tag1b", "2a", "2d", "a", "tag", "1", "ab", "t",
             "g1", "dgq", "b"]
    tok = xgr.TokenizerInfo(["</s>"] + words, stop_token_ids=[0])
    compiled = xgr.GrammarCompiler(tok).compile_grammar(
        'root ::= TagDispatch(("tag1", rule1), ("tag2", rule2))\nrule1 ::= "abc"\nrule2 ::= "dg"')

    def allowed(prefix: str) -> set[str]:
        m = xgr.GrammarMatcher(compiled)
        assert m.accept_string(prefix)
        mask = xgr.allocate_token_bitmask(1, tok.vocab_size)
        m.fill_next_token_bitmask(mask)
        return {(["</s>"] + words)[i] for i in xgr.testing.bitmask_to_ids(mask[0], tok.vocab_size)}

    assert allowed("") == set(words) - {"2dgtag1b", "tag1b"} | {"</s>"}
    # After "tag": "2a" would complete "tag2" and then break its rule; free text and "tag1" go on.
    assert allowed("tag") == set(words) - {"2dgtag1b", "tag1b", "2a"} | {"</s>"}
    assert allowed("tag1") == {"a", "abcdef", "ab"}
    assert allowed("tag1ab") == {"c哈哈t"}  # the rule's "c", then free text
    assert allowed("tag2") == {"dgq"}


def test_the_automaton_is_bounded_by_the_state_limit():
    pairs = ", ".join(f'("<tool_{i}>", call)' for i in range(200))
    grammar = f'root ::= TagDispatch({pairs})\ncall ::= "x"'
    tok = xgr.testing._byte_tokenizer()
    with pytest.raises(xgr.LimitError, match=r"TagDispatch\(\.\.\.\) automaton would exceed 1000 states"):
        xgr.GrammarCompiler(tok, limits=xgr.Limits(max_automaton_states=1000)).compile_grammar(grammar)
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(tok).compile_grammar(grammar))
    assert matcher.accept_string("a <tool_199>x <tool_7>x b") and matcher.is_completed()


# ---- token elements: Token(id) and TokenTagDispatch name special tokens (grammar.h) ----------------------------

SPECIAL_VOCAB = [b"</s>", b"<tool_call>", b"</tool_call>", b"<think>", b"a", b"b", b"{", b"}", b"<", b"tool", b"_call",
                 b">", b"\xff", b"\xf8\xf8", b"ab{", b"}a"]


def _special_tokenizer() -> xgr.TokenizerInfo:
    return xgr.TokenizerInfo(SPECIAL_VOCAB, stop_token_ids=[0], special_token_ids=[1, 2, 3])


TOKEN_GRAMMAR = ('root ::= TokenTagDispatch((1, call), loop_after_dispatch=true)\n'
                 'call ::= "{" [ab]* "}" Token(2)')


def _walk_with_oracle(compiled, tokens, vocab=None):
    m = xgr.GrammarMatcher(compiled)
    for t in tokens:
        extra, missing = mask_oracle_diff(m)
        assert len(extra) == 0 and len(missing) == 0, (t, extra, missing)
        assert m.accept_token(t), (vocab.decoded_vocab[t] if vocab is not None else SPECIAL_VOCAB[t])
    extra, missing = mask_oracle_diff(m)
    assert len(extra) == 0 and len(missing) == 0
    return m


def test_special_token_triggers_and_ends():
    compiled = xgr.GrammarCompiler(_special_tokenizer()).compile_grammar(TOKEN_GRAMMAR)
    # free text, the special trigger, a call that ends with the special end token, free text, stop
    m = _walk_with_oracle(compiled, [4, 14, 8, 9, 10, 11, 1, 6, 4, 5, 7, 2, 15, 1, 6, 7, 2])
    assert m.accept_token(0) and m.is_terminated()
    m = xgr.GrammarMatcher(compiled)
    # The free text is tokens (as xgrammar): the trigger's text typed as text tokens, an end token outside a call,
    # a special token the grammar does not name, text tokens with bytes >= 0xF8 are all free text; only the trigger
    # token dispatches. Text is not free text (no token ids).
    assert not m.fork().accept_string("a")
    for t in (8, 9, 10, 11, 2, 3, 12, 13):
        assert m.accept_token(t)
    assert m.accept_token(1) and not m.accept_token(1) and not m.accept_token(4) and m.accept_token(6)


def test_token_tag_dispatch_excludes_and_text_token_triggers():
    """TokenTagDispatch over text tokens (xgrammar's token-level dispatch): a text token may trigger, excluded
    tokens never appear in the free text, and a trigger token always dispatches."""
    tok = xgr.TokenizerInfo(["<s>", "</s>", "hello", "trigger", "content", "bad"], stop_token_ids=[1])
    compiled = xgr.GrammarCompiler(tok).compile_grammar(
        'body ::= Token(4)\nroot ::= TokenTagDispatch((3, body), excludes=(5,))')
    m = _walk_with_oracle(compiled, [2, 0, 4, 3, 4, 2], vocab=tok)
    assert not m.fork().accept_token(5)
    assert m.accept_token(3) and not m.fork().accept_token(2)  # "trigger" dispatches: its body follows
    assert m.accept_token(4) and m.accept_token(1) and m.is_terminated()
    once = xgr.GrammarCompiler(tok).compile_grammar(
        'body ::= Token(4)\nroot ::= TokenTagDispatch((3, body), loop_after_dispatch=false)')
    m = _walk_with_oracle(once, [2, 3, 4], vocab=tok)
    assert not m.fork().accept_token(2) and m.accept_token(1)


def test_token_elements_may_name_text_tokens():
    """Token(ids) matches exactly those tokens, text tokens included; a text token it names still matches its text
    wherever the grammar allows that text, and a token read both ways keeps both parses."""
    tok = xgr.TokenizerInfo(["</s>", "aa", "bb", "cc", "a", "b"], stop_token_ids=[0])
    compiler = xgr.GrammarCompiler(tok)
    cases = [
        ('root ::= Token(1, 3)', [[1], [3]], [[2], [4, 4]]),
        ('root ::= Token(1) "bb"', [[1, 2], [1, 5, 5]], [[4, 4, 2], [2]]),
        # "aa" is read as the element (then "x") and as text (then "bb"): both parses live on
        ('root ::= Token(1) "x" | "aa" "bb"', [[1, 2], [4, 4, 2]], [[1]]),
        ('root ::= "a"* Token(1)', [[1], [4, 1], [1, 1]], [[4], [4, 4]]),
    ]
    for grammar, accepted, rejected in cases:
        compiled = compiler.compile_grammar(grammar)
        for tokens in accepted:
            m = _walk_with_oracle(compiled, tokens, vocab=tok)
            assert m.is_completed(), (grammar, tokens)
        for tokens in rejected:
            m = xgr.GrammarMatcher(compiled)
            assert not (all(m.accept_token(t) for t in tokens) and m.is_completed()), (grammar, tokens)
    # Rollback and fork across a step read both ways.
    m = xgr.GrammarMatcher(compiler.compile_grammar('root ::= Token(1) "cc" | "aa" "bb"'))
    assert m.accept_token(1)
    f = m.fork()
    assert m.accept_token(2) and m.is_completed()
    m.rollback(1)
    assert m.accept_token(3) and m.is_completed()
    assert f.accept_token(3) and not f.accept_token(2)


def test_token_elements_print_and_parse_back():
    g = xgr.Grammar.from_ebnf('root ::= Token(3, 1) TokenTagDispatch((1, r), loop_after_dispatch=false, '
                              'excludes=(3))\nr ::= "x"')
    text = str(g)
    assert "Token(1) | Token(3)" in text and "TokenTagDispatch((1, r), loop_after_dispatch=false, excludes=(3))" in text
    assert str(xgr.Grammar.from_ebnf(text)) == text



@pytest.mark.parametrize("vocab", ["qwen2"])
def test_special_token_trigger_on_a_real_vocabulary(vocab):
    """Qwen2's <tool_call> / </tool_call> are special tokens (151657 / 151658): the model emits each as one token."""
    loaded = require(vocab)
    tok = xgr.TokenizerInfo.from_loaded_vocab(loaded)
    start, end = 151657, 151658
    assert tok.decoded_vocab[start] == b"<tool_call>" and start in tok.special_token_ids
    compiled = xgr.GrammarCompiler(tok).compile_grammar(
        f'root ::= TokenTagDispatch(({start}, call))\ncall ::= "\\n{{\\"name\\": \\"" [a-z_]+ "\\"}}\\n" Token({end})')
    text_ids = {bytes(b): i for i, b in reversed(list(enumerate(tok.decoded_vocab))) if b and i not in
                set(tok.special_token_ids)}

    def spell(s: str) -> list[int]:  # greedy longest-match tokenization of ordinary text
        out, data, pos = [], s.encode(), 0
        while pos < len(data):
            n = next(n for n in range(min(16, len(data) - pos), 0, -1) if data[pos:pos + n] in text_ids)
            out.append(text_ids[data[pos:pos + n]])
            pos += n
        return out

    tokens = spell("Checking.") + [start] + spell('\n{"name": "get_weather"}\n') + [end] + spell(" Done.")
    m = xgr.GrammarMatcher(compiled)
    for t in tokens:
        extra, missing = mask_oracle_diff(m)
        assert len(extra) == 0 and len(missing) == 0, (t, extra[:5], missing[:5])
        assert m.accept_token(t), t
    assert m.is_completed()
