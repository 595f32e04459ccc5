"""Behaviour xgrammar users rely on: an empty vocabulary (string matching without tokens),
``terminate_without_stop_token`` (the output ends when the grammar does), ``BatchGrammarMatcher``, the EBNF
``Substring(...)`` builtin, ``Grammar.union`` / ``concat`` and the small helpers, each checked
against what xgrammar 0.2.9 does (the expected values below were read off xgrammar)."""

from __future__ import annotations

import numpy as np
from absl.testing import absltest, parameterized

import xg2jax as xgr


class EmptyVocabularyTest(absltest.TestCase):
    def test_strings_match_without_tokens(self):
        tok = xgr.TokenizerInfo([])
        self.assertEqual(tok.vocab_size, 0)
        compiler = xgr.GrammarCompiler(tok)
        matcher = xgr.GrammarMatcher(compiler.compile_grammar('root ::= "ab" [0-9]*'))
        self.assertTrue(matcher.accept_string("ab1"))
        self.assertTrue(matcher.is_completed())
        self.assertFalse(matcher.accept_string("x"))
        bitmask = xgr.allocate_token_bitmask(1, 0)
        self.assertEqual(bitmask.shape, (1, 0))
        matcher.fill_next_token_bitmask(bitmask)
        xgr.batch_fill_next_token_bitmask([matcher], xgr.allocate_token_bitmask(1, 0))
        schema = compiler.compile_json_schema({"type": "object", "properties": {"a": {"type": "string"}}},
                                              precompute_masks=True)
        self.assertTrue(xgr.GrammarMatcher(schema).accept_string('{"a": "x"}'))
        with self.assertRaisesRegex(ValueError, r"token id 0 is out of range \[0, 0\)"):
            matcher.accept_token(0)


class TerminateWithoutStopTokenTest(parameterized.TestCase):
    # (grammar, terminated after "a", allowed tokens after "a" as bits of a|b|</s>, accepts a second "a")
    @parameterized.named_parameters(
        ("plus", 'root ::= "a"+', 0b001, True),
        ("optional_tail", 'root ::= "a" "b"?', 0b010, False),
        ("single", 'root ::= "a"', 0b000, False),
    )
    def test_like_xgrammar(self, grammar, mask_after_a, second_a):
        tok = xgr.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
        compiled = xgr.GrammarCompiler(tok).compile_grammar(grammar)
        m = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        self.assertFalse(m.is_terminated())
        self.assertTrue(m.accept_token(0))
        self.assertTrue(m.is_terminated())
        bitmask = xgr.allocate_token_bitmask(1, 3)
        m.fill_next_token_bitmask(bitmask)
        self.assertEqual(int(bitmask[0, 0]) & 0b111, mask_after_a)  # the stop token is never allowed
        self.assertTrue(m.fork().is_terminated())
        self.assertEqual(m.accept_token(0), second_a)
        self.assertTrue(m.is_terminated())
        self.assertFalse(m.accept_token(2))  # nor accepted
        plain = xgr.GrammarMatcher(compiled)
        plain.accept_token(0)
        self.assertFalse(plain.is_terminated())
        self.assertTrue(plain.accept_token(2) and plain.is_terminated())
        np.testing.assert_equal(bitmask.dtype, np.int32)


class BatchGrammarMatcherTest(absltest.TestCase):
    def setUp(self):
        super().setUp()
        self.tok = xgr.TokenizerInfo(["<s>", "</s>", "a", "b", "1", "ab"], stop_token_ids=[1])
        compiler = xgr.GrammarCompiler(self.tok)
        self.matchers = [xgr.GrammarMatcher(compiler.compile_grammar(g))
                         for g in ('root ::= "a"', "root ::= [0-9]+", 'root ::= "ab"')]

    def test_accept_token_and_string(self):
        self.assertEqual(xgr.BatchGrammarMatcher.batch_accept_token(self.matchers, [2, 3, 2]), [True, False, True])
        self.assertEqual(xgr.BatchGrammarMatcher.batch_accept_string(self.matchers, ["", "12", "b"]),
                         [True, True, True])
        with self.assertRaisesRegex(ValueError, "3 matchers but 2 tokens"):
            xgr.BatchGrammarMatcher.batch_accept_token(self.matchers, [2, 2])

    def test_fill_matches_single_fills_and_rollback_restores(self):
        batch = xgr.BatchGrammarMatcher(max_threads=2)
        for m, t in zip(self.matchers, [2, 4, 2]):
            self.assertTrue(m.accept_token(t))
        bitmask = xgr.allocate_token_bitmask(3, self.tok.vocab_size)
        batch.batch_fill_next_token_bitmask(self.matchers, bitmask)
        for i, m in enumerate(self.matchers):
            single = xgr.allocate_token_bitmask(1, self.tok.vocab_size)
            m.fill_next_token_bitmask(single)
            np.testing.assert_array_equal(bitmask[i], single[0])
        xgr.BatchGrammarMatcher.batch_rollback(self.matchers, [1, 0, 1])
        self.assertEqual([m.accept_token(2) for m in self.matchers], [True, False, True])
        with self.assertRaisesRegex(ValueError, "max_threads must be a positive int"):
            xgr.BatchGrammarMatcher(max_threads=0)


class SubstringTest(parameterized.TestCase):
    @parameterized.named_parameters(
        ("chunks", 'root ::= Substring("abc", "de", "fg")', ["", "abc", "de", "abcde", "defg", "abcdefg"],
         ["ab", "cde", "abcfg", "deabc"]),
        ("repeated_and_empty_chunks", 'root ::= Substring("a", "", "b", "a", "b")', ["", "ab", "ba", "abab"],
         ["aa", "abba"]),
        ("no_chunks", "root ::= Substring()", [""], ["a"]),
        ("in_a_sequence_next_to_a_user_rule_of_a_helper_name",
         'root ::= "x" Substring("abc", "d") "y" substring_0\nsubstring_0 ::= "q"', ["xyq", "xabcdyq", "xdyq"],
         ["xay", "xyq q", "xdabcyq"]),
    )
    def test_language(self, ebnf, accepted, rejected):
        from xg2jax.testing import is_grammar_accept_string

        grammar = xgr.Grammar.from_ebnf(ebnf)
        for text in accepted:
            self.assertTrue(is_grammar_accept_string(grammar, text), text)
        for text in rejected:
            self.assertFalse(is_grammar_accept_string(grammar, text), text)
        again = xgr.Grammar.from_ebnf(str(grammar))  # the printed helper rules parse back
        self.assertEqual(str(again), str(grammar))

    def test_errors(self):
        with self.assertRaisesRegex(ValueError, "Substring\\(...\\) takes string literals"):
            xgr.Grammar.from_ebnf("root ::= Substring(abc)")
        with self.assertRaisesRegex(ValueError, "expected ',' or '\\)' in Substring"):
            xgr.Grammar.from_ebnf('root ::= Substring("a" "b")')


class CombineAndHelpersTest(absltest.TestCase):
    def test_union_and_concat_keep_each_grammars_rules_apart(self):
        from xg2jax.testing import is_grammar_accept_string as accepts

        a = xgr.Grammar.from_ebnf('root ::= "a" r\nr ::= "x"')
        b = xgr.Grammar.from_ebnf('root ::= "b" r\nr ::= "y"')
        union, concat = xgr.Grammar.union(a, b), xgr.Grammar.concat(a, b)
        self.assertEqual([accepts(union, s) for s in ("ax", "by", "ay", "axby")], [True, True, False, False])
        self.assertEqual([accepts(concat, s) for s in ("axby", "ax", "byax")], [True, False, False])
        self.assertIn("root_1 ::=", str(union))
        self.assertIn("root_2 ::=", str(union))
        self.assertEqual(str(xgr.Grammar.from_ebnf(str(union))), str(union))
        with self.assertRaisesRegex(ValueError, "needs at least one grammar"):
            xgr.Grammar.union()
        with self.assertRaisesRegex(TypeError, "expected Grammar objects, got str"):
            xgr.Grammar.concat("root ::= x")

    def test_small_helpers(self):
        bitmask = xgr.allocate_token_bitmask(2, 40)
        bitmask[:] = 0
        xgr.reset_token_bitmask(bitmask)
        self.assertTrue((bitmask == -1).all())
        self.assertEqual(bitmask.dtype, xgr.bitmask_dtype)
        tok = xgr.TokenizerInfo([b"a", b"b"])
        compiler = xgr.GrammarCompiler(tok, cache_limit_bytes=1000)
        self.assertEqual(compiler.cache_limit_bytes, 1000)
        self.assertTrue(xgr.GrammarMatcher(compiler.compile_lark('start: "a" "b"')).accept_string("ab"))
        self.assertFalse(tok.prepend_space_in_tokenization)


if __name__ == "__main__":
    absltest.main()
