"""Malformed grammars and invalid API input: every one must raise a precise, actionable error.

Syntax errors are ``ValueError("EBNF parser error at line L, column C: <what>\\n  <line>\\n  <caret>")``; the
tests check the message, the line:column, the quoted source line and the caret position.
Matcher misuse raises ``ValueError`` / ``TypeError`` and leaves the matcher unchanged.

Grammar text is always a ``str`` (``Grammar.from_ebnf`` rejects ``bytes`` with ``TypeError``), so
invalid UTF-8 can only reach the API as a ``str`` holding lone surrogates (what
``bytes.decode("utf-8", "surrogateescape")`` produces); that must be a ``ValueError`` too.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from absl.testing import absltest, parameterized

import xg2jax as xgr
from xg2jax.testing import bitmask_to_ids, is_grammar_accept_string

import real_vocabularies  # tests/ is on sys.path under pytest (rootdir-relative import)

SYNTAX = "EBNF parser error at"


def _syntax_error_parts(msg: str):
    """(line, col, what, excerpt, caret_line) of an EBNF syntax error message."""
    m = re.match(r"EBNF parser error at line (\d+), column (\d+): (.*?)\n  (.*)\n  ( *\^)\Z", msg, re.DOTALL)
    assert m, f"not a well-formed syntax error message (want 'at L:C: what', line, caret):\n{msg!r}"
    return int(m.group(1)), int(m.group(2)), m.group(3), m.group(4), m.group(5)


# (name, grammar, message fragment, (line, col) or None when it is not a located syntax error)
SYNTAX_ERRORS = [
    # unbalanced brackets
    ("open_paren", 'root ::= ("a" "b"', "unbalanced '(': no matching ')'", (1, 10)),
    ("open_paren_multiline", 'root ::= ("a"\n  | "b"\nx ::= "c"', "unbalanced '(': no matching ')'", (1, 10)),
    ("close_paren", 'root ::= "a")', "unbalanced ')'", (1, 13)),
    ("close_paren_extra", 'root ::= ("a"))', "unbalanced ')'", (1, 15)),
    ("open_bracket", "root ::= [abc", "unterminated character class '['", (1, 10)),
    ("close_bracket", 'root ::= "a" ]', "unbalanced ']'", (1, 14)),
    ("open_brace", 'root ::= "a"{2', "expected ',' or '}' in the repetition '{m,n}'", (1, 15)),
    ("open_brace_comma", 'root ::= "a"{2,', "expected a number in the repetition '{m,n}'", (1, 16)),
    ("close_brace", 'root ::= "a" }', "unbalanced '}'", (1, 14)),
    # rules
    ("undefined_rule", "root ::= foo", "undefined rule 'foo'", (1, 10)),
    ("undefined_rule_second_line", 'root ::= "a"\n  | "b" bar\nbaz ::= "b"', "undefined rule 'bar'", (2, 9)),
    ("duplicate_root", 'root ::= "a"\nroot ::= "b"', "rule 'root' is defined twice", (2, 1)),
    ("duplicate_rule", 'root ::= x\nx ::= "a"\nx ::= "b"', "rule 'x' is defined twice", (3, 1)),
    ("assign_without_name", '::= "a"', "expected a rule name", (1, 1)),
    ("assign_without_name_2nd", 'root ::= "a"\n::= "b"', "unexpected '::=' (a rule name is missing before it)", (2, 1)),
    ("no_body_at_end", "root ::=", "rule 'root' has an empty body (write \"\" for the empty string)", (1, 9)),
    ("no_body_before_rule", 'root ::=\nx ::= "a"', "rule 'root' has an empty body", (2, 1)),
    ("no_body_last_rule", "root ::= x\nx ::=", "rule 'x' has an empty body", (2, 6)),
    ("missing_assign", 'root "a"', "expected '::=' after rule name 'root'", (1, 6)),
    ("wrong_assign", 'root := "a"', "expected '::=' after rule name 'root'", (1, 6)),
    ("name_starts_with_digit", "root ::= 1abc", "unexpected character '1'", (1, 10)),
    ("stray_char", 'root ::= "a" @', "unexpected character '@'", (1, 14)),
    ("stray_semicolon", 'root ::= "a" ;', "unexpected character ';'", (1, 14)),
    ("stray_double_colon", 'root ::= "a" :: "b"', "unexpected '::=' (a rule name is missing before it)", (1, 14)),
    # escapes
    ("escape_q", 'root ::= "\\q"', "unknown escape '\\q'", (1, 11)),
    ("escape_q_in_class", "root ::= [\\q]", "unknown escape '\\q'", (1, 11)),
    ("escape_x_one_digit", 'root ::= "\\x4"', "expected 2 hex digits in the escape", (1, 14)),
    ("escape_x_bad_digit", 'root ::= "\\x4g"', "expected 2 hex digits in the escape", (1, 14)),
    ("escape_u_not_hex", 'root ::= "\\uZZZZ"', "expected 4 hex digits in the escape", (1, 13)),
    ("escape_U_short", 'root ::= "\\U1F600"', "expected 8 hex digits in the escape", (1, 18)),
    ("escape_surrogate", 'root ::= "\\uD800"', "escape is not a valid Unicode scalar value", (1, 11)),
    ("escape_surrogate_class", "root ::= [\\uDFFF]", "escape is not a valid Unicode scalar value", (1, 11)),
    ("escape_beyond_unicode", 'root ::= "\\U00110000"', "escape is not a valid Unicode scalar value", (1, 11)),
    ("escape_at_end", 'root ::= "\\', "unknown escape '\\<end>'", (1, 11)),
    # classes
    ("reversed_range", "root ::= [z-a]", "character class range is reversed (start > end)", (1, 11)),
    ("reversed_range_escapes", "root ::= [\\u0100-\\u00ff]", "character class range is reversed", (1, 11)),
    ("empty_class", "root ::= []", "empty character class '[]' matches nothing", (1, 10)),
    ("unterminated_class", "root ::= [a-z", "unterminated character class '['", (1, 10)),
    ("unterminated_class_newline", "root ::= [a-z\n]", "unterminated character class '['", (1, 10)),
    # strings
    ("unterminated_string", 'root ::= "abc', "unterminated string literal", (1, 10)),
    ("unterminated_string_newline", 'root ::= "abc\n"', "unterminated string literal", (1, 10)),
    ("unterminated_single_quote", "root ::= 'abc", "unterminated string literal", (1, 10)),
    # repetition
    ("braces_reversed", 'root ::= "a"{3,2}', "repetition {3,2} has max < min", (1, 13)),
    ("braces_empty", 'root ::= "a"{}', "expected a number in the repetition '{m,n}'", (1, 14)),
    ("braces_negative", 'root ::= "a"{-1}', "expected a number in the repetition '{m,n}'", (1, 14)),
    ("braces_letter", 'root ::= "a"{a}', "expected a number in the repetition '{m,n}'", (1, 14)),
    ("bound_too_large", 'root ::= "a"{2000000}', "repetition bound too large (the limit is 1048576)", (1, 20)),
    ("bound_overflows_int64", 'root ::= "a"{1,99999999999999999999}', "repetition bound too large", (1, 22)),
    ("star_nothing", "root ::= *", "quantifier '*' has nothing to repeat", (1, 10)),
    ("plus_nothing", 'root ::= + "a"', "quantifier '+' has nothing to repeat", (1, 10)),
    ("question_nothing", 'root ::= ("a" | ?)', "quantifier '?' has nothing to repeat", (1, 17)),
    ("braces_nothing", "root ::= {2}", "quantifier '{' has nothing to repeat", (1, 10)),
    # unsupported xgrammar features
    # Only xgrammar's builtin names are calls; any other `name(` is a reference followed by a group.
    ("builtin_unknown", 'root ::= Foo("x")', "undefined rule 'Foo'", (1, 10)),
    ("tag_dispatch_exclude_prefix", 'root ::= TagDispatch(("abc", b), excludes=("ab"))\nb ::= "b"',
     'the exclude "ab" is a prefix of the trigger "abc" of TagDispatch(...)', (1, 44)),
    # Regex("...") is supported (tests/test_regex.py); its other arguments and bad patterns are errors.
    ("builtin_regex_flag", 'root ::= Regex("[a-z]+", flags="m")', "Regex(...) flag 'm' is not supported", (1, 32)),
    ("builtin_regex_bad_pattern", 'root ::= Regex("a(?=b)")',
     "in the Regex(...) pattern at position 1: Lookahead assertion '(?=' is not supported", (1, 18)),
    ("builtin_regex_budget_alone", 'root ::= Regex("ab", budget_close="a")',
     "argument 'budget_close' needs lazy=true and max_chars=n", (1, 22)),
    ("builtin_regex_budget_pattern", 'root ::= Regex("ab", lazy=true, max_chars=1, budget_close="a(")',
     "in the Regex(...) budget_close pattern at position", (1, 46)),
    ("budget_gate_without_budget", 'root ::= r\nr ::= "a" BudgetSpent()',
     "BudgetSpent() needs a rule with a token budget", (2, 11)),
    ("budget_gate_in_a_group", 'root ::= r\nr[max_tokens=2] ::= ("a" BudgetSpent())*',
     "BudgetSpent() must be an element of its rule's body", (2, 26)),
    ("budget_gate_arguments", 'root ::= r\nr[max_tokens=2] ::= "a" BudgetSpent(1)', "BudgetSpent() takes no arguments",
     (2, 25)),
    ("builtin_regex_before_first_lazy", 'root ::= Regex("ab", lazy=true, before_first="a")',
     "argument 'before_first' cannot be combined with lazy", (1, 33)),
    ("builtin_json_schema", 'root ::= "x" JSONSchema("{}")', "builtin 'JSONSchema(...)' is not supported", (1, 14)),
    ("rule_attribute", 'root ::= r\nr[suffix="x"] ::= "a"', "rule attribute 'suffix' is not supported", (2, 3)),
    ("max_tokens_lazy", 'root ::= r\nr[max_tokens=3, lazy] ::= "a"', "max_tokens together with lazy is not supported",
     (2, 21)),
    ("rule_attribute_root", 'root[lazy, suffix] ::= "a"', "rule attribute 'suffix' is not supported", (1, 12)),
    ("capture_twice", 'root[capture, capture="x"] ::= "a"', "capture attribute is specified more than once", (1, 15)),
    ("capture_empty_label", 'root[capture=""] ::= "a"', "capture name must not be empty", (1, 14)),
    ("capture_bad_label", 'root[capture="a b"] ::= "a"',
     "capture name must only contain letters, digits, '_', '-' and '.'", (1, 14)),
    ("capture_label_not_a_string", 'root[capture=x] ::= "a"', "expected a string after capture=", (1, 14)),
    ("rule_attribute_twice", 'root[temperature=0.5, temperature=1] ::= "a"',
     "temperature attribute is specified more than once", (1, 23)),
    ("lazy_rule_reference", 'root ::= r\nr[lazy] ::= "a" r | "b"', "lazy rule 'r': a lazy rule's body cannot reference",
     (2, 1)),
    # lookahead placement
    ("lookahead_not_last", 'root ::= "a" (= "b") "c"', "a lookahead assertion '(= ...)' must come last in a rule",
     (1, 14)),
    ("lookahead_in_group", 'root ::= ("a" (= "b"))', "must come last in a rule, outside any group", (1, 15)),
    ("lookahead_twice", 'root ::= "a" (= "b") (= "c")', "must come last in a rule", (1, 14)),
    ("lookahead_unclosed", 'root ::= "a" (= "b"', "expected ')' to close the lookahead assertion '(='", (1, 20)),
    ("substring_in_lookahead", 'root ::= "a" (=Substring("b"))', "Substring should not be in lookahead assertion",
     (1, 25)),
    # one quantifier per element (as xgrammar): a second is refused where it starts
    ("stacked_quantifiers", 'root ::= "a"+*', "Expect element, but got * (a quantifier cannot follow another",
     (1, 14)),
    ("stacked_braces", 'root ::= "a"{1,3} {2}', "Expect element, but got {", (1, 19)),
    # control characters in the text
    ("nul_byte", 'root ::= "a"\x00', "unexpected character '\\x00'", (1, 13)),
    ("class_matches_nothing", "root ::= [^\\x00-\\U0010FFFF]", "character class matches no character", (1, 10)),
]

# Errors that are not located syntax errors (whole-grammar problems).
GLOBAL_ERRORS = [
    ("empty", "", "EBNF: the grammar is empty (no rules)"),
    ("whitespace_only", "   \n\t \r\n", "EBNF: the grammar is empty (no rules)"),
    ("only_comments", "# a comment\n   # another one\n", "EBNF: the grammar is empty (no rules)"),
]

# Parse, but can never compile: the compiler must refuse them with a ValueError.
COMPILE_ERRORS = [
    ("never_terminates", 'root ::= "a" root',
     "grammar: the root rule 'root' cannot match any finite string: rules that can never finish: 'root'"),
    ("never_terminates_mutual", 'root ::= a\na ::= "x" b\nb ::= "y" a',
     "the root rule 'root' cannot match any finite string"),
]


class MalformedGrammarTest(parameterized.TestCase):

    @parameterized.named_parameters(
        ("ebnf", lambda: xgr.Grammar.from_ebnf("root ::= ")),
        ("regex", lambda: xgr.Grammar.from_regex("a{3,2}")),
        ("json_schema", lambda: xgr.Grammar.from_json_schema({"type": "string", "minLength": "3"})),
        ("lark", lambda: xgr.Grammar.from_lark("start: undefined_rule")),
        ("structural_tag", lambda: xgr.Grammar.from_structural_tag({"format": {"type": "nope"}})),
        ("limit", lambda: xgr.GrammarCompiler(xgr.TokenizerInfo([b"a"]), limits=xgr.Limits(max_automaton_states=2))
         .compile_regex("[a-z]{20}")),
    )
    def test_bad_input_is_a_value_error_and_a_runtime_error(self, make):
        # xgrammar raises RuntimeError for these: code written for it keeps catching them.
        with self.assertRaises(ValueError) as ctx:
            make()
        self.assertIsInstance(ctx.exception, RuntimeError)

    @parameterized.named_parameters(*SYNTAX_ERRORS)
    def test_syntax_error(self, grammar, fragment, where):
        with self.assertRaises(ValueError) as ctx:
            xgr.Grammar.from_ebnf(grammar)
        msg = str(ctx.exception)
        self.assertIn(fragment, msg)
        line, col, what, excerpt, caret = _syntax_error_parts(msg)
        self.assertEqual((line, col), where, msg)
        # Control characters (NUL included) are shown as '?' so the message stays printable.
        shown = "".join("?" if ord(c) < 0x20 and c != "\t" else c for c in grammar.split("\n")[line - 1])
        self.assertEqual(excerpt, shown, "the message must quote the offending line")
        self.assertEqual(len(caret) - 1, col - 1, "the caret must sit under column C")
        # The compiler reports the very same error (no second parser with other messages).
        tok = xgr.TokenizerInfo([b"a", b"b"])
        with self.assertRaises(ValueError) as ctx2:
            xgr.GrammarCompiler(tok, cache_enabled=False).compile_grammar(grammar)
        self.assertEqual(str(ctx2.exception), msg)

    @parameterized.named_parameters(*GLOBAL_ERRORS)
    def test_global_error(self, grammar, message):
        with self.assertRaisesWithLiteralMatch(ValueError, message):
            xgr.Grammar.from_ebnf(grammar)

    def test_unknown_root_rule_name(self):
        with self.assertRaisesWithLiteralMatch(ValueError, "EBNF: the root rule 'main' is not defined (rules: root)"):
            xgr.Grammar.from_ebnf('root ::= "a"', root_rule_name="main")
        with self.assertRaisesWithLiteralMatch(ValueError,
                                               "EBNF: the root rule 'root' is not defined (rules: start, x)"):
            xgr.Grammar.from_ebnf('start ::= x\nx ::= "a"')
        tok = xgr.TokenizerInfo([b"a"])
        with self.assertRaisesRegex(ValueError, "root rule 'nope' is not defined"):
            xgr.GrammarCompiler(tok).compile_grammar('root ::= "a"', root_rule_name="nope")
        # The same text is fine with the right root.
        self.assertEqual(xgr.Grammar.from_ebnf('start ::= x\nx ::= "a"', root_rule_name="start").root_rule_name,
                         "start")

    @parameterized.named_parameters(*COMPILE_ERRORS)
    def test_compile_error(self, grammar, fragment):
        xgr.Grammar.from_ebnf(grammar)  # parses
        tok = xgr.TokenizerInfo([b"a", b"x", b"y"])
        with self.assertRaises(ValueError) as ctx:
            xgr.GrammarCompiler(tok, cache_enabled=False).compile_grammar(grammar)
        self.assertIn(fragment, str(ctx.exception))
        with self.assertRaisesRegex(ValueError, re.escape(fragment)):
            is_grammar_accept_string(grammar, "a")

    def test_grammar_text_must_be_str(self):
        with self.assertRaisesWithLiteralMatch(TypeError, "Grammar.from_ebnf: expected str, got bytes"):
            xgr.Grammar.from_ebnf(b'root ::= "a"')
        tok = xgr.TokenizerInfo([b"a"])
        with self.assertRaisesWithLiteralMatch(TypeError, "compile_grammar: expected str or Grammar, got bytes"):
            xgr.GrammarCompiler(tok).compile_grammar(b'root ::= "a"')

    def test_invalid_utf8_text_is_a_value_error(self):
        # b'\xff' cannot be UTF-8; surrogateescape turns it into the lone surrogate U+DCFF.
        text = b'root ::= "\xff"'.decode("utf-8", "surrogateescape")
        self.assertIn("\udcff", text)
        with self.assertRaises(ValueError) as ctx:
            xgr.Grammar.from_ebnf(text)
        self.assertIs(type(ctx.exception), xgr.InputError)  # not a UnicodeError from building the message
        self.assertIn("EBNF parser error at line 1, column 11: invalid UTF-8 in grammar text", str(ctx.exception))

    def test_error_columns_count_code_points(self):
        # Column numbers are in code points: the two CJK characters count 1 each.
        with self.assertRaises(ValueError) as ctx:
            xgr.Grammar.from_ebnf('root ::= "你好" @')
        line, col, *_ = _syntax_error_parts(str(ctx.exception))
        self.assertEqual((line, col), (1, 15))


def _small_tokenizer():
    vocab = [b"a", b"b", b"ab", b"c", b"1", b"12", b"x", b"yz", b"<eos>", b"abc1", b" "]
    return xgr.TokenizerInfo(vocab, stop_token_ids=[8], vocab_size=40)


def _mask(m: xgr.GrammarMatcher) -> np.ndarray:
    bm = xgr.allocate_token_bitmask(1, m.vocab_size)
    m.fill_next_token_bitmask(bm)
    return bm[0].copy()


class MatcherMisuseTest(parameterized.TestCase):

    def setUp(self):
        super().setUp()
        self.tok = _small_tokenizer()
        self.compiled = xgr.GrammarCompiler(self.tok).compile_grammar('root ::= "ab" [0-9]+ ("x" | "yz")')
        self.m = xgr.GrammarMatcher(self.compiled)
        self.assertTrue(self.m.accept_token(2))  # "ab"
        self.before = _mask(self.m)

    def assertUnchanged(self):  # noqa: N802
        np.testing.assert_array_equal(_mask(self.m), self.before)
        self.assertFalse(self.m.is_completed())
        self.assertFalse(self.m.is_terminated())
        # and it still works: "1" "x" <eos>
        self.assertTrue(self.m.accept_token(4))
        self.assertTrue(self.m.accept_token(6))
        self.assertTrue(self.m.accept_token(8))
        self.assertTrue(self.m.is_terminated())

    @parameterized.named_parameters(("minus_one", -1), ("vocab_size", 40), ("thousand", 1000),
                                    ("int32_max", 2**31 - 1), ("int32_min", -(2**31)))
    def test_accept_token_out_of_range(self, token):
        with self.assertRaisesWithLiteralMatch(
                ValueError, f"GrammarMatcher.accept_token: token id {token} is out of range [0, 40)"):
            self.m.accept_token(token)
        self.assertUnchanged()

    def test_padding_token_is_rejected_not_an_error(self):
        # ids in [len(vocab), vocab_size) are padding: valid ids, never allowed.
        for t in range(11, 40):
            self.assertFalse(self.m.accept_token(t))
        self.assertUnchanged()

    @parameterized.named_parameters(("2**31", 2**31), ("2**40", 2**40), ("-2**40", -(2**40)),
                                    ("np_int64_2**40", np.int64(2**40)), ("np_uint64_max", np.uint64(2**64 - 1)))
    def test_accept_token_huge(self, token):
        with self.assertRaises((ValueError, TypeError)):
            self.m.accept_token(token)
        self.assertUnchanged()

    @parameterized.named_parameters(("float", 1.0, "float"), ("str", "a", "str"), ("none", None, "NoneType"),
                                    ("bool", True, "bool"), ("list", [1], "list"))
    def test_accept_token_not_int(self, token, type_name):
        with self.assertRaisesWithLiteralMatch(TypeError, f"accept_token: token_id must be an int, got {type_name}"):
            self.m.accept_token(token)
        self.assertUnchanged()

    def test_accept_token_numpy_int_is_fine(self):
        self.assertTrue(self.m.accept_token(np.int32(4)))
        self.assertTrue(self.m.accept_token(np.int64(6)))
        self.assertTrue(self.m.is_completed())

    @parameterized.named_parameters(
        ("int64", np.int64, "the bitmask must have dtype int32, got int64"),
        ("float32", np.float32, "the bitmask must have dtype int32, got float32"),
        ("uint32", np.uint32, "the bitmask must have dtype int32, got uint32"),
        ("int16", np.int16, "the bitmask must have dtype int32, got int16"),
    )
    def test_fill_wrong_dtype(self, dtype, message):
        bm = np.zeros((1, 2), dtype=dtype)
        with self.assertRaisesWithLiteralMatch(ValueError, "fill_next_token_bitmask: " + message):
            self.m.fill_next_token_bitmask(bm)
        self.assertTrue(np.all(bm == 0), "nothing written")
        self.assertUnchanged()

    @parameterized.named_parameters(
        ("0d", np.array(-1, dtype=np.int32), 0, "the bitmask must be 1-D or 2-D, got shape ()"),
        ("3d", np.full((1, 1, 2), -1, dtype=np.int32), 0, "the bitmask must be 1-D or 2-D, got shape (1, 1, 2)"),
        ("too_few_words", np.full((1, 1), -1, dtype=np.int32), 0,
         "the bitmask row has 1 int32 words, but vocab_size 40 needs 2"),
        ("zero_words", np.full((1, 0), -1, dtype=np.int32), 0,
         "the bitmask row has 0 int32 words, but vocab_size 40 needs 2"),
        ("index_past_end", np.full((2, 2), -1, dtype=np.int32), 2, "index 2 is out of range for a bitmask of 2 rows"),
        ("negative_index", np.full((2, 2), -1, dtype=np.int32), -1,
         "index -1 is out of range for a bitmask of 2 rows"),
        ("index_on_1d", np.full((2,), -1, dtype=np.int32), 1, "index 1 given for a 1-D bitmask (only 0 is valid)"),
    )
    def test_fill_bad_shape_or_index(self, bm, index, message):
        orig = bm.copy()
        with self.assertRaisesWithLiteralMatch(ValueError, "fill_next_token_bitmask: " + message):
            self.m.fill_next_token_bitmask(bm, index)
        np.testing.assert_array_equal(bm, orig)
        self.assertUnchanged()

    def test_fill_read_only(self):
        bm = xgr.allocate_token_bitmask(1, 40)
        bm.flags.writeable = False
        with self.assertRaisesWithLiteralMatch(ValueError, "fill_next_token_bitmask: the bitmask is read-only"):
            self.m.fill_next_token_bitmask(bm)
        self.assertTrue(np.all(bm == -1))
        self.assertUnchanged()

    def test_fill_non_contiguous(self):
        base = np.full((2, 4), -1, dtype=np.int32)
        for bm in (base[:, ::2], np.full((4, 2), -1, dtype=np.int32).T):
            with self.assertRaisesWithLiteralMatch(ValueError,
                                                   "fill_next_token_bitmask: the bitmask must be C-contiguous"):
                self.m.fill_next_token_bitmask(bm)
        self.assertTrue(np.all(base == -1))
        self.assertUnchanged()

    def test_fill_not_an_array(self):
        with self.assertRaisesWithLiteralMatch(
                TypeError, "fill_next_token_bitmask: expected a numpy array or a DLPack CPU array, got list"):
            self.m.fill_next_token_bitmask([[-1, -1]])
        self.assertUnchanged()

    def test_rollback_more_than_accepted(self):
        with self.assertRaisesWithLiteralMatch(
                ValueError, "GrammarMatcher.rollback: cannot roll back 2 tokens, only 1 accepted"):
            self.m.rollback(2)
        self.assertUnchanged()

    def test_rollback_on_fresh_matcher(self):
        m = xgr.GrammarMatcher(self.compiled)
        with self.assertRaisesWithLiteralMatch(
                ValueError, "GrammarMatcher.rollback: cannot roll back 1 tokens, only 0 accepted"):
            m.rollback(1)
        m.rollback(0)  # a no-op is fine
        self.assertTrue(m.accept_token(2))

    def test_rollback_negative(self):
        with self.assertRaisesWithLiteralMatch(ValueError, "GrammarMatcher.rollback: num_tokens must be >= 0, got -1"):
            self.m.rollback(-1)
        self.assertUnchanged()

    def test_rollback_past_max_rollback_tokens(self):
        m = xgr.GrammarMatcher(self.compiled, max_rollback_tokens=1)
        self.assertTrue(m.accept_token(2) and m.accept_token(4) and m.accept_token(4))
        with self.assertRaisesWithLiteralMatch(
                ValueError, "GrammarMatcher.rollback: cannot roll back 2 tokens, max_rollback_tokens is 1"):
            m.rollback(2)
        m.rollback(1)
        self.assertTrue(m.accept_token(6))

    def test_override_stop_token_out_of_range(self):
        # Stop tokens must be real tokens: padding ids [11, 40) are refused as well.
        for bad in (40, 20, -1):
            with self.assertRaisesWithLiteralMatch(ValueError,
                                                   f"GrammarMatcher: stop token id {bad} is out of range [0, 11)"):
                xgr.GrammarMatcher(self.compiled, override_stop_tokens=[bad])
        self.assertEqual(xgr.GrammarMatcher(self.compiled, override_stop_tokens=3).stop_token_ids, [3])

    def test_matcher_needs_compiled_grammar(self):
        with self.assertRaisesWithLiteralMatch(TypeError, "GrammarMatcher: expected a CompiledGrammar, got str"):
            xgr.GrammarMatcher('root ::= "a"')

    def test_batch_fill_errors(self):
        m2 = self.m.fork()
        bm = xgr.allocate_token_bitmask(2, 40)
        with self.assertRaisesWithLiteralMatch(ValueError, "batch_fill_next_token_bitmask: the same matcher appears twice"):
            xgr.batch_fill_next_token_bitmask([self.m, self.m], bm)
        with self.assertRaisesWithLiteralMatch(ValueError,
                                               "batch_fill_next_token_bitmask: index 2 out of range [0, 2)"):
            xgr.batch_fill_next_token_bitmask([self.m, m2], bm, [0, 2])
        with self.assertRaisesRegex(ValueError, "batch_fill_next_token_bitmask: 1 matchers but 2 indices"):
            xgr.batch_fill_next_token_bitmask([self.m], bm, [0, 1])
        with self.assertRaisesRegex(ValueError, "batch_fill_next_token_bitmask: the bitmask must have dtype int32"):
            xgr.batch_fill_next_token_bitmask([self.m], bm.astype(np.int64))
        self.assertTrue(np.all(bm == -1), "nothing written on error")
        self.assertUnchanged()

    def test_apply_bitmask_errors(self):
        bm = xgr.allocate_token_bitmask(1, 40)
        with self.assertRaisesRegex(ValueError, "logits must be floating point, got int32"):
            xgr.apply_token_bitmask_inplace(np.zeros((1, 40), np.int32), bm)
        with self.assertRaisesRegex(ValueError, "the bitmask must have dtype int32, got int64"):
            xgr.apply_token_bitmask_inplace(np.zeros((1, 40), np.float32), bm.astype(np.int64))
        with self.assertRaisesRegex(ValueError, "2 logits rows but 1 bitmask rows"):
            xgr.apply_token_bitmask_inplace(np.zeros((2, 40), np.float32), bm)


class ConstructorMisuseTest(parameterized.TestCase):

    def test_compiler_max_threads_zero(self):
        tok = _small_tokenizer()
        with self.assertRaisesWithLiteralMatch(ValueError, "GrammarCompiler: max_threads must be >= 1, got 0"):
            xgr.GrammarCompiler(tok, max_threads=0)
        with self.assertRaisesWithLiteralMatch(ValueError, "GrammarCompiler: max_threads must be >= 1, got -3"):
            xgr.GrammarCompiler(tok, max_threads=-3)

    def test_compiler_needs_tokenizer_info(self):
        with self.assertRaisesWithLiteralMatch(TypeError, "GrammarCompiler: expected a TokenizerInfo, got list"):
            xgr.GrammarCompiler([b"a"])

    @parameterized.named_parameters(
        ("stop_past_end", dict(stop_token_ids=[3]), "TokenizerInfo: stop_token_ids contains 3, outside [0, 3)"),
        ("stop_negative", dict(stop_token_ids=[-1]), "TokenizerInfo: stop_token_ids contains -1, outside [0, 3)"),
        # padding ids (>= len(vocab)) cannot be stop tokens either
        ("stop_in_padding", dict(stop_token_ids=[5], vocab_size=8),
         "TokenizerInfo: stop_token_ids contains 5, outside [0, 3)"),
        ("special_past_end", dict(special_token_ids=[9]), "TokenizerInfo: special_token_ids contains 9, outside [0, 3)"),
        ("vocab_size_too_small", dict(vocab_size=2), "TokenizerInfo: vocab_size (2) is smaller than the number of tokens (3)"),
    )
    def test_tokenizer_info_errors(self, kwargs, message):
        with self.assertRaisesWithLiteralMatch(ValueError, message):
            xgr.TokenizerInfo([b"a", b"b", b"c"], **kwargs)


# --------------------------------------------------------------------------------------------
# A rejected token leaves the matcher unchanged.
# --------------------------------------------------------------------------------------------
def _check_rejections_leave_matcher_unchanged(m: xgr.GrammarMatcher, candidates, check_every: int = 1):
    """Try every candidate token; each one the mask forbids must be rejected with no state change,
    and each one the mask allows must be accepted (then rolled back). Returns (#rejected, #allowed)."""
    before = _mask(m)
    completed, jump = m.is_completed(), m.find_jump_forward_string()
    allowed = set(bitmask_to_ids(before, m.vocab_size).tolist())
    n_rej = n_ok = 0
    for i, t in enumerate(candidates):
        t = int(t)
        if t in allowed:
            assert m.accept_token(t), f"mask allows token {t} but accept_token rejects it"
            m.rollback(1)
            n_ok += 1
        else:
            assert not m.accept_token(t), f"mask forbids token {t} but accept_token accepts it"
            n_rej += 1
        if i % check_every == 0:
            np.testing.assert_array_equal(_mask(m), before, err_msg=f"state changed after trying token {t}")
    np.testing.assert_array_equal(_mask(m), before)
    assert m.is_completed() == completed and m.find_jump_forward_string() == jump
    return n_rej, n_ok


class RejectedTokenSmallVocabTest(parameterized.TestCase):

    @parameterized.named_parameters(
        ("digits_then_suffix", 'root ::= "ab" [0-9]+ ("x" | "yz")', ["ab", "1", "12", "x"]),
        ("nested_choice", 'root ::= ("a" | "ab") ("c" | "bc")+ [0-9]*', ["a", "b", "c", "c", "b", "c", "12", "1"]),
        ("ambiguous", 'root ::= root root | "a" | "b" | ""', ["a", "ab", "b"]),
    )
    def test_rejections_leave_state(self, grammar, path):
        tok = _small_tokenizer()
        vocab = tok.decoded_vocab
        m = xgr.GrammarMatcher(xgr.GrammarCompiler(tok).compile_grammar(grammar))
        total_rej = 0
        for piece in path + [None]:
            rej, _ = _check_rejections_leave_matcher_unchanged(m, range(tok.vocab_size))
            total_rej += rej
            if piece is not None:
                self.assertTrue(m.accept_token(vocab.index(piece.encode())), piece)
        self.assertGreater(total_rej, 100)  # the padding ids alone give 29 per step
        self.assertTrue(m.is_completed())

    def test_terminated_matcher_rejects_everything_unchanged(self):
        tok = _small_tokenizer()
        m = xgr.GrammarMatcher(xgr.GrammarCompiler(tok).compile_grammar('root ::= "a"'))
        self.assertTrue(m.accept_token(0))
        self.assertTrue(m.accept_token(8))
        self.assertTrue(m.is_terminated())
        with self.assertRaisesRegex(xgr.InputError, "the matcher has terminated"):
            _mask(m)
        before = xgr.allocate_token_bitmask(1, 40)
        xgr.batch_fill_next_token_bitmask([m], before)  # a batch row: the stop tokens
        self.assertEqual(bitmask_to_ids(before[0], 40).tolist(), [8])
        for t in range(40):
            self.assertFalse(m.accept_token(t))
        after = xgr.allocate_token_bitmask(1, 40)
        xgr.batch_fill_next_token_bitmask([m], after)
        np.testing.assert_array_equal(after, before)
        self.assertFalse(m.accept_string("a"))
        self.assertTrue(m.is_terminated())


def _gemma_walk(target: str):
    """(tokenizer, fresh matcher over the real Gemma 3 vocabulary + builtin JSON, decoded vocab,
    target bytes). Callers spell `target` greedily with the longest allowed token at each step.
    Skips (with the pip command) when the Gemma 3 package is not installed."""
    vocab = real_vocabularies.require("gemma3")
    tok = xgr.TokenizerInfo.from_loaded_vocab(vocab)
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(tok).compile_builtin_json_grammar())
    decoded = tok.decoded_vocab
    data = target.encode()
    return tok, m, decoded, data


def test_rejected_tokens_leave_gemma3_matcher_unchanged():
    """All 262,144 Gemma 3 tokens tried at several JSON states (about 0.8 s per state)."""
    tok, m, decoded, data = _gemma_walk('{"k": [1, "é"]}')
    rng = np.random.default_rng(0)
    pos, full_scans, total_rej = 0, 0, 0
    while pos < len(data):
        allowed = bitmask_to_ids(_mask(m), tok.vocab_size)
        if len(allowed) < 1000:  # structural states: most tokens are rejected, try them all
            rej, ok = _check_rejections_leave_matcher_unchanged(m, np.arange(tok.vocab_size), check_every=20000)
            assert (rej, ok) == (tok.vocab_size - len(allowed), len(allowed))
            full_scans += 1
        else:  # inside a string almost everything is allowed: a random sample keeps the test fast
            cands = rng.choice(tok.vocab_size, size=3000, replace=False)
            rej, ok = _check_rejections_leave_matcher_unchanged(m, cands, check_every=500)
        total_rej += rej
        best = max((t for t in allowed if decoded[t] and data.startswith(decoded[t], pos)),
                   key=lambda t: len(decoded[t]), default=None)
        assert best is not None, f"no allowed token continues {data[pos:]!r}"
        assert m.accept_token(int(best))
        pos += len(decoded[best])
    assert m.is_completed()
    assert full_scans >= 4 and total_rej > 4 * 250_000
    stop = tok.stop_token_ids
    assert stop, "Gemma 3 has stop tokens"
    rej, ok = _check_rejections_leave_matcher_unchanged(m, np.arange(tok.vocab_size), check_every=50000)
    assert ok == len(stop) and rej == tok.vocab_size - len(stop)


@pytest.mark.slow
def test_rejected_tokens_leave_gemma3_matcher_unchanged_every_state():
    """Slow: every Gemma 3 token at every state of a longer JSON document."""
    tok, m, decoded, data = _gemma_walk('{"name": "Jo\\u00e9 😀", "n": [1, -2.5e3, true, null, {}], "s": "a\\nb"}')
    pos = 0
    while pos < len(data):
        _check_rejections_leave_matcher_unchanged(m, np.arange(tok.vocab_size), check_every=50000)
        allowed = bitmask_to_ids(_mask(m), tok.vocab_size)
        best = max((t for t in allowed if decoded[t] and data.startswith(decoded[t], pos)),
                   key=lambda t: len(decoded[t]), default=None)
        assert best is not None, f"no allowed token continues {data[pos:]!r}"
        assert m.accept_token(int(best))
        pos += len(decoded[best])
    assert m.is_completed()


if __name__ == "__main__":
    absltest.main()
