"""The Lark front end: languages of the supported dialect (rules, terminals, literals with ``i``, regexes with
flags, ranges, repetitions, ``%import common``, ``%ignore``, ``%json``), located errors for what is not supported,
and masks equal to the token oracle on a Lark grammar with ``%ignore``."""

from __future__ import annotations

from absl.testing import absltest, parameterized

import xg2jax
from xg2jax.lark import LarkError, lark_to_ebnf
from xg2jax.testing import GrammarTestCase

LANGUAGES = [
    ("sequence_choice", 'start: "a" "b" | "c" ("d" | "e")', ["ab", "cd", "ce"], ["", "a", "c", "ade"]),
    ("optional_group", 'start: ("a" | "b") ["c"]', ["a", "b", "ac", "bc"], ["", "c", "abc"]),
    ("empty_alternatives", 'start: | "a" | "b"', ["", "a", "b"], ["ab", "c"]),
    ("empty_rule", "start:", [""], ["a"]),
    ("prefixes_and_aliases", '?item: "a" -> x\n!suffix: "b"\n    | "c" -> y\nstart: item suffix', ["ab", "ac"],
     ["a", "bc"]),
    ("recursion", 'start: value\nvalue: "x" | "(" value ")" | "[" values? "]"\nvalues: value ("," value)*',
     ["x", "((x))", "[]", "[x,(x),[x]]"], ["()", "[x,]", "[(])"]),
    ("terminal_composition", 'start: SIGNED\nSIGNED: SIGN? DIGIT+\nSIGN: "+" | "-"\nDIGIT: "0".."9"',
     ["0", "+7", "-42"], ["", "+", "--1", "1a"]),
    ("every_tokenization", "start: \"'foo'\" /a+/ | STRING /b+/\nSTRING: /'[^']*'/", ["'foo'a", "'foo'bb"],
     ["'bar'a", "foo"]),
    ("regex_dot_is_a_code_point", 'start: /.../ "abc" /.../', ["abcabcabc", "🔵🟠✅abc❌🟠🔵"], ["aaabcccc"]),
    ("regex_dot_excludes_newline", "start: /a.b/", ["acb", "a😀b", "a\rb"], ["a\nb"]),
    ("regex_dot_all", "start: /a.b/s", ["a\nb"], ["ab"]),
    ("regex_escaped_slash_and_count", r"start: /a\/b/ /[0-9]{2,4}/", ["a/b12", "a/b1234"], ["a/b1", "a/b12345"]),
    ("regex_ignore_case", r"start: /hello[0-2]\x21/iu", ["hello0!", "HeLlO2!"], ["hello3!", "héllo1!"]),
    ("regex_ascii_folding_only", "start: /[^kσ]+/i", ["A", "Σ"], ["k", "K", "σ"]),
    ("regex_large_count", "start: /(ab){2,300}c/i", ["abABc", "aBab" * 150 + "c"], ["abc"]),
    ("string_ignore_case", 'start: "Ab-C9"i', ["ab-c9", "AB-C9"], ["ab_c9", "äb-c9"]),
    ("string_escapes", r'start: "\n" "\t" "\\" "\"" "\u03bb"', ['\n\t\\"λ'], ["\n\tλ"]),
    ("ranges", 'start: "a".."z"+ "α".."γ"?', ["hello", "xβ"], ["", "A", "δ"]),
    ("repetitions", 'start: "a"~2 "b"~1..2 "c"{,1} "d"{2,}', ["aabdd", "aabbcddd"], ["abdd", "aabbbdd", "aabd"]),
    ("hyphens_and_comments", 'start: foo-bar FOO-BAR // c\nfoo-bar: "a" # c\nFOO-BAR: "b"', ["ab"], ["a-b"]),
    ("common_imports", "%import common (INT, CNAME)\n%import common.ESCAPED_STRING -> STR\nstart: CNAME INT STR",
     ['x1"a\\"b"', '_a1 0""'.replace(" ", "")], ['1x""', 'x1"']),
    ("ignore_between_and_after", '%import common.WS\n%ignore WS\nstart: "a" DIGIT "c".."d"\nDIGIT: "0".."9"',
     ["a1c", "a 1 d", "a\n1\n c  "], [" a1c", "a 1 e"]),
    ("ignore_initial", '%grammar_options {"allow_initial_skip": true}\n%ignore /[ _]+/\nstart: "a" "b"',
     ["ab", "_ a_b "], ["a-b"]),
    ("ignore_not_inside_terminals", '%ignore " "\nstart: WORD\nWORD: "a" "b"', ["ab", "ab "], ["a b"]),
    ("inline_json", 'start: "v=" %json {"type": "array", "items": {"const": 1}, "maxItems": 2} ";"',
     ["v=[];", "v=[1, 1];"], ["v=[2];", "v=[1,1,1];"]),
]

ERRORS = [
    ("priority", 'start.1: "a"', "line 1, column 6: priorities are not supported"),
    ("missing_colon", 'start "a"', "line 1, column 7: expected ':' after rule name"),
    ("unclosed_group", 'start: ("a"', "expected ')' after group"),
    ("duplicate_import", '%import common.INT\nINT: "x"\nstart: INT', "line 2, column 1: duplicate rule or terminal 'INT'"),
    ("regex_flag", "start: /abc/m", "regular-expression flag 'm' is not supported"),
    ("bad_regex", "start: /(a/", "failed to compile regular expression"),
    ("unknown_name", "start: missing", "unknown name 'missing'"),
    ("unknown_common", "%import common.NOPE\nstart: NOPE", "unknown common import 'NOPE'"),
    ("terminal_cycle", "start: FOO\nFOO: BAR\nBAR: FOO", "circular reference in terminal"),
    ("terminal_references_rule", 'start: TOKEN\nTOKEN: rule\nrule: "a"', "terminal 'TOKEN' cannot reference rule 'rule'"),
    ("no_start", 'item: "a"', "no start rule"),
    ("template", 'start{x}: "a"', "Lark templates are not supported"),
    ("special_token_needs_a_vocabulary", "start: <|tool|>", "named special token <|tool|> requires tokenizer_info"),
    ("special_token_negated_wildcard", "start: <[^*]>", "negated wildcard special token is not supported"),
    ("special_token_mixed_wildcard", "start: <[*,1]>", "wildcard cannot be mixed with ids or ranges"),
    ("special_token_reversed_range", "start: <[5-2]>", "invalid numeric special-token range '5-2'"),
    ("special_token_in_terminal", "start: T\nT: <[1]>", "special tokens cannot be used in terminals"),
    ("declare", "%declare X\nstart: X", "directive %declare is not supported"),
    ("non_ascii_ignore_case", 'start: "\\u00c4"i', "case-insensitive string literals currently support ASCII"),
    ("range_length", 'start: "ab".."c"', "range endpoints must be one character"),
    ("reversed_repeat", 'start: "a"{3,2}', "repetition end must be greater than or equal to its start"),
    ("json_in_terminal", "start: T\nT: %json {}", "%json cannot be used in terminals"),
    ("bad_json_schema", "start: %json []", "failed to compile inline JSON schema"),
    ("crlf_position", '# c\r\nstart: "a"\r\nitem missing', "line 3, column 6: expected ':' after rule name"),
]


LANGUAGES += [
    ("substring_chunks_terminal", 'start: "<" PART ">"\nPART: %regex {"substring_chunks": ["ab", "", "cd", "ab"]}',
     ["<>", "<ab>", "<abcd>", "<cdab>", "<abcdab>"], ["<a>", "<abab>", "<cdcd>", "<abcdabcd>"]),
    ("substring_chars", 'start: %regex {"substring_chars": "x\\u00e9\\ud83d\\ude42y"}', ["", "x", "é🙂", "xé🙂y"],
     ["xy", "🙂é"]),
    ("nested_lark_names", 'start: item %lark {\n  start: item "!"\n  item: "b"\n} item\nitem: "a"', ["ab!a"],
     ["aaa", "ab!b", "bb!b"]),
    ("nested_lark_ignore_and_json", 'start: "(" %lark {\n  %import common.WS\n  %ignore WS\n'
     '  start: "n" "=" %json {"type": "integer"}\n} ")"', ["(n=1)", "(n = -2 )"], ["(n=x)", "( n=1)"]),
]

ERRORS += [
    ("unknown_named_grammar", "start: @nope", "unknown named grammar '@nope'"),
    ("bad_structured_regex", 'start: %regex {"substring_chunks": "ab"}', "substring_chunks must be an array of strings"),
    ("unterminated_nested_lark", 'start: %lark { start: "a"', "unterminated %lark { ... } block"),
    ("nested_lark_in_terminal", 'start: T\nT: %lark { start: "a" }', "%lark cannot be used in terminals"),
    ("error_inside_nested_lark", "start: %lark { start: missing }", "failed to compile nested Lark grammar"),
]


class LarkTest(GrammarTestCase, parameterized.TestCase):
    @parameterized.named_parameters(*LANGUAGES)
    def test_language(self, lark, accepted, rejected):
        grammar = xg2jax.Grammar.from_lark(lark)
        for text in accepted:
            self.assertGrammarAccepts(grammar, text)
        for text in rejected:
            self.assertGrammarRejects(grammar, text)

    @parameterized.named_parameters(*ERRORS)
    def test_error(self, lark, fragment):
        with self.assertRaises(LarkError) as ctx:
            xg2jax.Grammar.from_lark(lark)
        self.assertIn(fragment, str(ctx.exception))
        self.assertIsInstance(ctx.exception, ValueError)
        self.assertIsInstance(ctx.exception, RuntimeError)  # as xgrammar raises

    def test_error_shows_the_line_and_a_caret(self):
        with self.assertRaises(LarkError) as ctx:
            lark_to_ebnf('start: "a"\nitem missing')
        self.assertEqual(str(ctx.exception).splitlines()[1:], ["  item missing", "       ^"])

    def test_named_grammars(self):
        item = xg2jax.Grammar.from_lark('start: "x" | "y"')
        digits = xg2jax.Grammar.from_regex("[0-9]+")
        grammar = xg2jax.Grammar.from_lark(
            'start: "[" @item ("," @item)* "]" %lark { start: ":" @num }',
            named_grammars={"item": item, "num": digits})
        for text in ["[x]:1", "[y,x]:42"]:
            self.assertGrammarAccepts(grammar, text)
        for text in ["[]:1", "[x,]:1", "[x]:", "[z]:1"]:
            self.assertGrammarRejects(grammar, text)
        # Named Lark texts refer to each other; each is embedded once however often it is referred to.
        grammar = xg2jax.Grammar.from_lark("start: @pair", named_grammars={
            "pair": 'start: @word "=" @word', "word": "start: /[a-z]+/"})
        self.assertGrammarAccepts(grammar, "ab=c")
        self.assertGrammarRejects(grammar, "ab=")
        self.assertEqual(str(grammar).count("named_word_root ::="), 1)

    def test_named_grammar_errors(self):
        item = xg2jax.Grammar.from_lark('start: "x"')
        with self.assertRaisesRegex(LarkError, "circular named grammar reference: @a -> @b -> @a"):
            xg2jax.Grammar.from_lark("start: @a", named_grammars={"a": "start: @b", "b": 'start: "(" @a ")"'})
        for bad, kind, fragment in (([item], TypeError, "must be a dictionary"),
                                    ({1: item}, TypeError, "names must be strings"),
                                    ({"item": 1}, TypeError, "must be Grammar instances or Lark strings"),
                                    ({"bad name": item}, LarkError, "Invalid named grammar name")):
            with self.assertRaisesRegex(kind, fragment):
                xg2jax.Grammar.from_lark("start: @item", named_grammars=bad)
        compiler = xg2jax.GrammarCompiler(xg2jax.TokenizerInfo(["x", "y"]))
        matcher = xg2jax.GrammarMatcher(compiler.compile_lark("start: @item", named_grammars={"item": item}))
        self.assertTrue(matcher.accept_string("x"))

    def test_special_tokens(self):
        tok = xg2jax.TokenizerInfo(["a", "<|tool|>", "b", "</s>", "<|tool|>"], stop_token_ids=[3],
                                   special_token_ids=[1, 4])
        compiler = xg2jax.GrammarCompiler(tok)

        def accepts(lark, tokens):
            m = xg2jax.GrammarMatcher(compiler.compile_lark(lark))
            return all(m.accept_token(t) for t in tokens) and m.is_completed()

        # By id (text tokens too: exactly those ids) and by name (every entry spelled so).
        for tokens, want in (([0], True), ([2], True), ([1], True), ([4], True), ([0, 1], False), ([3], False)):
            self.assertEqual(accepts("start: <[0,2]> | <|tool|>", tokens), want, tokens)
        self.assertTrue(accepts('start: <[0-2]> "b"', [1, 2]))
        self.assertFalse(accepts('start: <[0-2]> "b"', [4, 2]))
        with self.assertRaisesRegex(LarkError, "unknown special token <nope>"):
            xg2jax.Grammar.from_lark("start: <nope>", tokenizer_info=tok)

    def test_start_rule_option(self):
        grammar = xg2jax.Grammar.from_lark('top: "x"\nstart: "y"', start="top")
        self.assertGrammarAccepts(grammar, "x")
        self.assertGrammarRejects(grammar, "y")

    def test_masks_match_the_token_oracle(self):
        tok = xg2jax.TokenizerInfo(["a", "b", " ", "ab", "a b", "1", "12", " 1", "=", " =", "x=", "</s>"],
                                   stop_token_ids=[11])
        lark = '%import common (WS_INLINE, INT, CNAME)\n%ignore WS_INLINE\nstart: pair+\npair: CNAME "=" INT'
        compiled = xg2jax.GrammarCompiler(tok).compile_grammar(xg2jax.Grammar.from_lark(lark))
        for text in ["ab = 12 b=1", "x=1  ab=12 "]:
            matcher = xg2jax.GrammarMatcher(compiled)
            for ch in text:
                self.assertMaskMatchesOracle(matcher)
                self.assertTrue(matcher.accept_string(ch), (text, ch))
            self.assertMaskMatchesOracle(matcher)
            self.assertTrue(matcher.is_completed())


if __name__ == "__main__":
    absltest.main()
