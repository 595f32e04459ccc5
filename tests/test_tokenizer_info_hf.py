"""TokenizerInfo.from_huggingface on transformers tokenizer objects built offline: the GPT-2 vocabulary (same
decoded tokens, stop token and masks as the project's own GPT-2 loader), a SentencePiece-style byte-fallback
tokenizer, stop-token and vocab-size options, and the error for an object with no tokenizers backend."""

from __future__ import annotations

import json

import numpy as np
from absl.testing import absltest

import xg2jax
from xg2jax import vocab_packages
from xg2jax.vocab_decoding import VocabType


def _transformers():
    try:
        import transformers
    except ImportError:
        raise absltest.SkipTest("transformers is not installed (pip install -e .[reference])") from None
    return transformers


class FromHuggingFaceTest(absltest.TestCase):
    def test_gpt2_matches_the_projects_loader(self):
        transformers = _transformers()
        try:
            data = vocab_packages._package_dir("gpt2") / "data"
        except vocab_packages.VocabPackageMissing as e:
            self.skipTest(str(e))
        vocab = json.loads((data / "encoder.json").read_text(encoding="utf-8"))
        merges = [tuple(line.split(" ")) for line in (data / "vocab.bpe").read_text(encoding="utf-8").splitlines()[1:]
                  if line]
        tok = transformers.GPT2Tokenizer(vocab=vocab, merges=merges)
        info = xg2jax.TokenizerInfo.from_huggingface(tok)
        ref = xg2jax.TokenizerInfo.from_loaded_vocab(vocab_packages.gpt2())
        self.assertEqual(info.vocab_type, VocabType.BYTE_LEVEL)
        self.assertEqual(info.decoded_vocab, ref.decoded_vocab)
        self.assertEqual(info.stop_token_ids, [tok.eos_token_id])
        self.assertEqual(info.vocab_size, len(tok))
        self.assertEqual([info.decoded_vocab[i] for i in tok.encode("Hello world")], [b"Hello", b" world"])
        padded = xg2jax.TokenizerInfo.from_huggingface(tok, vocab_size=50304, stop_token_ids=[198])
        self.assertEqual((padded.vocab_size, padded.stop_token_ids), (50304, [198]))
        masks = []
        for t in (info, ref):
            compiled = xg2jax.GrammarCompiler(t).compile_grammar('root ::= "Hello" " world"?')
            bm = xg2jax.allocate_token_bitmask(1, t.vocab_size)
            xg2jax.GrammarMatcher(compiled).fill_next_token_bitmask(bm)
            masks.append(bm)
        np.testing.assert_array_equal(masks[0], masks[1])

    def test_byte_fallback_tokenizer(self):
        transformers = _transformers()
        import tokenizers
        from tokenizers import decoders, models, normalizers, pre_tokenizers  # noqa: F401

        pieces = [("<unk>", 0.0), ("<s>", 0.0), ("</s>", 0.0)] + [(f"<0x{b:02X}>", -10.0) for b in range(256)]
        pieces += [("\u2581hi", -1.0), ("\u2581there", -1.0), ("!", -2.0)]
        backend = tokenizers.Tokenizer(models.Unigram(pieces, unk_id=0, byte_fallback=True))
        backend.normalizer = normalizers.Replace(" ", "\u2581")
        backend.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback()])
        tok = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", bos_token="<s>",
                                                   eos_token="</s>")
        info = xg2jax.TokenizerInfo.from_huggingface(tok)
        self.assertEqual(info.vocab_type, VocabType.BYTE_FALLBACK)
        self.assertEqual(info.stop_token_ids, [2])
        self.assertEqual(info.decoded_vocab[3 + 0x41], b"A")
        self.assertEqual(info.decoded_vocab[3 + 256], b" hi")

    def test_an_object_without_a_backend_is_a_clear_error(self):
        _transformers()

        class NotATokenizer:
            eos_token_id = 0

        with self.assertRaisesRegex(ValueError, "NotATokenizer has no fast \\(tokenizers\\) backend"):
            xg2jax.TokenizerInfo.from_huggingface(NotATokenizer())


if __name__ == "__main__":
    absltest.main()
