"""serialize_json / deserialize_json of TokenizerInfo, Grammar and CompiledGrammar: round trips keep the
vocabulary, the language and the masks; other versions, kinds and malformed text raise the documented errors."""

from __future__ import annotations

import json
import pickle

import numpy as np
from absl.testing import absltest

import xg2jax as xgr
from xg2jax.testing import is_grammar_accept_string


def _tokenizer():
    return xgr.TokenizerInfo(["1", "212", "a", "A", "b", "一", "-", "aBc", "abc", ""],
                             vocab_type=xgr.VocabType.BYTE_FALLBACK, vocab_size=12, stop_token_ids=[0, 1],
                             add_prefix_space=True)


def _grammar():
    return xgr.Grammar.from_ebnf('rule1 ::= ([^0-9] rule1) | ""\nroot_rule ::= rule1 "a" "一"{1,3}',
                                 root_rule_name="root_rule")


def _mask(compiled, prefix: str) -> np.ndarray:
    matcher = xgr.GrammarMatcher(compiled)
    assert matcher.accept_string(prefix)
    bitmask = xgr.allocate_token_bitmask(1, compiled.tokenizer_info.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    return bitmask


class SerializationTest(absltest.TestCase):
    def test_tokenizer_info_round_trip(self):
        tok = _tokenizer()
        again = xgr.TokenizerInfo.deserialize_json(tok.serialize_json())
        for attr in ("decoded_vocab", "vocab_size", "vocab_type", "add_prefix_space", "stop_token_ids",
                     "special_token_ids"):
            self.assertEqual(getattr(again, attr), getattr(tok, attr), attr)

    def test_tokenizer_info_metadata(self):
        """dump_metadata / from_vocab_and_metadata (xgrammar's): everything but the vocabulary, as compact JSON."""
        tok = _tokenizer()
        metadata = tok.dump_metadata()
        self.assertEqual(json.loads(metadata), {"vocab_type": 1, "vocab_size": 12, "add_prefix_space": True,
                                                "stop_token_ids": [0, 1]})
        self.assertNotIn(" ", metadata)
        vocab = ["1", "212", "a", "A", "b", "一", "-", "aBc", "abc", ""]
        loaded = xgr.TokenizerInfo.from_vocab_and_metadata(vocab, metadata)
        self.assertEqual(loaded.decoded_vocab, tok.decoded_vocab)
        self.assertEqual(loaded.dump_metadata(), metadata)
        for bad, message in (("[]", "must be a JSON object"), ("{", "is not JSON"),
                             (metadata.replace('"vocab_size":12', '"vocab_size":"12"'), "'vocab_size' must be"),
                             (metadata[:-1] + ',"extra":1}', "unknown field"),
                             (metadata[:-1] + ',"prepend_space_in_tokenization":false}', "disagree"),
                             (metadata[:-1] + ',"prepend_space_in_tokenization":1}', "must be a JSON bool")):
            with self.assertRaisesRegex(ValueError, message):
                xgr.TokenizerInfo.from_vocab_and_metadata(vocab, bad)
        # xgrammar's earlier name for add_prefix_space is read as it.
        legacy = json.dumps({"vocab_type": 1, "vocab_size": 12, "prepend_space_in_tokenization": True,
                             "stop_token_ids": [0, 1]})
        self.assertEqual(xgr.TokenizerInfo.from_vocab_and_metadata(vocab, legacy).dump_metadata(), metadata)

    def test_grammar_round_trip(self):
        grammar = _grammar()
        again = xgr.Grammar.deserialize_json(grammar.serialize_json())
        self.assertEqual(str(again), str(grammar))
        self.assertEqual(again.root_rule_name, "root_rule")
        for text, want in (("xya一", True), ("a一一一", True), ("1a一", False), ("a", False)):
            self.assertEqual(is_grammar_accept_string(again, text), want, text)

    def test_compiled_grammar_round_trip_keeps_masks(self):
        tok = _tokenizer()
        compiled = xgr.GrammarCompiler(tok).compile_grammar(_grammar())
        text = compiled.serialize_json()
        pickle.loads(pickle.dumps(text))  # a plain str
        for again in (xgr.CompiledGrammar.deserialize_json(text), xgr.CompiledGrammar.deserialize_json(text, tok)):
            for prefix in ("", "b", "ba", "ba一"):
                np.testing.assert_array_equal(_mask(again, prefix), _mask(compiled, prefix))

    def test_errors(self):
        grammar_json = _grammar().serialize_json()
        with self.assertRaisesRegex(xgr.DeserializeFormatError, "holds a 'Grammar'"):
            xgr.TokenizerInfo.deserialize_json(grammar_json)
        with self.assertRaisesRegex(xgr.DeserializeFormatError, "not JSON"):
            xgr.Grammar.deserialize_json("{")
        doc = json.loads(grammar_json)
        doc["__VERSION__"] = "v16"
        with self.assertRaisesRegex(xgr.DeserializeVersionError, "version 'v16'"):
            xgr.Grammar.deserialize_json(json.dumps(doc))
        del doc["ebnf"]
        doc["__VERSION__"] = xgr.get_serialization_version()
        with self.assertRaisesRegex(xgr.DeserializeFormatError, "field 'ebnf'"):
            xgr.Grammar.deserialize_json(json.dumps(doc))
        self.assertIsInstance(xgr.DeserializeFormatError("x"), RuntimeError)  # as xgrammar raises


if __name__ == "__main__":
    absltest.main()
