"""TokenizerInfo: the vocabulary a grammar is compiled against.

Mirrors ``xgrammar.TokenizerInfo``: build it from the encoded vocabulary (the token spellings a
tokenizer stores) and its :class:`VocabType`, or load it from a tokenizer file with
:meth:`TokenizerInfo.from_tokenizer_json`, :meth:`TokenizerInfo.from_gguf` or
:meth:`TokenizerInfo.from_tiktoken`. The engine sees each token as the raw bytes it emits.
"""

from __future__ import annotations

import json
import os
from typing import Iterable, Mapping, Sequence

from xg2jax import _core
from xg2jax.vocab_decoding import LoadedVocab, VocabType, decode_vocab

__all__ = ["TokenizerInfo", "VocabType"]


#: Spellings that make a token a stop token when ``TokenizerInfo`` is given no ``stop_token_ids`` (the markers
#: xgrammar detects: end of sequence in the Llama 2 / Gemma / GPT-2 / Llama 3 / DeepSeek families).
DETECTED_STOP_TOKENS = ("</s>", "<|end_of_text|>", "<|eot_id|>", "<|endoftext|>", "<eos>", "<|eos|>", "<end_of_turn>",
                        "<｜end▁of▁sentence｜>")
_DETECTED_STOP_BYTES = frozenset(t.encode() for t in DETECTED_STOP_TOKENS)


class TokenizerInfo:
    """A decoded vocabulary with its special and stop tokens.

    Parameters
    ----------
    encoded_vocab : sequence of str or bytes
        Token spellings, indexed by token id.
    vocab_type : VocabType, optional
        How spellings map to bytes: ``RAW`` (as is), ``BYTE_FALLBACK`` (SentencePiece ``▁`` and
        ``<0xNN>``) or ``BYTE_LEVEL`` (GPT-2 byte-to-unicode). Default ``RAW``.
    vocab_size : int, optional
        Width of the model's logits, which may exceed ``len(encoded_vocab)`` (padding). Padding ids
        are never allowed. Default ``len(encoded_vocab)``.
    stop_token_ids : sequence of int, optional
        Tokens that end generation; allowed exactly when the grammar can end. Default (None): as xgrammar,
        the tokens spelled exactly as a common end-of-sequence marker (``DETECTED_STOP_TOKENS``: ``</s>``,
        ``<|endoftext|>``, ``<|eot_id|>``, ...); ``[]`` for none.
    add_prefix_space : bool, optional
        Whether the tokenizer prepends a space to text (recorded, as in xgrammar).
    special_token_ids : sequence of int, optional
        Control tokens that must never match grammar text. Empty tokens are always special.

    Raises
    ------
    ValueError
        If an id is out of range, ``vocab_size`` is too small, or a spelling cannot be decoded.
    """

    def __init__(
        self,
        encoded_vocab: Sequence[str | bytes],
        vocab_type: VocabType = VocabType.RAW,
        *,
        vocab_size: int | None = None,
        stop_token_ids: Iterable[int] | int | None = None,
        add_prefix_space: bool = False,
        special_token_ids: Iterable[int] | None = None,
    ) -> None:
        encoded_vocab = list(encoded_vocab)
        self._vocab_type = VocabType(int(vocab_type))
        self._add_prefix_space = bool(add_prefix_space)
        if isinstance(stop_token_ids, int):
            stop_token_ids = [stop_token_ids]
        stops = [int(i) for i in (stop_token_ids or [])]
        specials = [int(i) for i in (special_token_ids or [])]
        n = len(encoded_vocab)
        size = n if vocab_size is None else int(vocab_size)
        for name, ids in (("stop_token_ids", stops), ("special_token_ids", specials)):
            for i in ids:
                if not 0 <= i < n:
                    raise ValueError(f"TokenizerInfo: {name} contains {i}, outside [0, {n})")
        decoded = decode_vocab(encoded_vocab, self._vocab_type, added_token_ids=specials)
        if stop_token_ids is None:
            stops = [i for i, b in enumerate(decoded) if b in _DETECTED_STOP_BYTES]
        self._init_decoded(decoded, size, specials, stops)

    def _init_decoded(self, decoded: list[bytes], size: int, specials: list[int], stops: list[int]) -> None:
        self._decoded = decoded
        self._handle = _core.TokenizerInfo(decoded, size, specials, stops)

    # -- serialization -----------------------------------------------------------------------------
    def serialize_json(self) -> str:
        """This vocabulary as JSON (``xg2jax.serialization``)."""
        from xg2jax import serialization as ser

        return ser.dump("TokenizerInfo", {
            "decoded_vocab": ser.encode_tokens(self._decoded), "vocab_size": self.vocab_size,
            "vocab_type": int(self._vocab_type), "add_prefix_space": self._add_prefix_space,
            "stop_token_ids": self.stop_token_ids, "special_token_ids": self.special_token_ids})

    @classmethod
    def deserialize_json(cls, json_string: str) -> "TokenizerInfo":
        """The vocabulary :meth:`serialize_json` wrote.

        Raises
        ------
        xg2jax.serialization.DeserializeFormatError, DeserializeVersionError
        """
        from xg2jax import serialization as ser

        kind = "TokenizerInfo"
        doc = ser.load(json_string, kind)
        self = cls.__new__(cls)
        self._vocab_type = VocabType(ser.field(doc, "vocab_type", kind, int))
        self._add_prefix_space = bool(ser.field(doc, "add_prefix_space", kind, bool))
        decoded = ser.decode_tokens(ser.field(doc, "decoded_vocab", kind, list), kind)
        self._init_decoded(decoded, ser.field(doc, "vocab_size", kind, int),
                           list(ser.field(doc, "special_token_ids", kind, list)),
                           list(ser.field(doc, "stop_token_ids", kind, list)))
        return self

    # -- metadata (xgrammar's: everything but the vocabulary) ---------------------------------------
    def dump_metadata(self) -> str:
        """The vocabulary type, size, prefix-space flag and stop tokens as compact JSON (xgrammar's format), for
        :meth:`from_vocab_and_metadata` with the same encoded vocabulary."""
        return json.dumps({"vocab_type": int(self._vocab_type), "vocab_size": self.vocab_size,
                           "add_prefix_space": self._add_prefix_space, "stop_token_ids": self.stop_token_ids},
                          separators=(",", ":"))

    @classmethod
    def from_vocab_and_metadata(cls, encoded_vocab: Sequence[str | bytes], metadata: str) -> "TokenizerInfo":
        """A TokenizerInfo from the encoded vocabulary and the JSON :meth:`dump_metadata` wrote.

        Parameters
        ----------
        encoded_vocab : sequence of str or bytes
            Token spellings, indexed by token id (as for the constructor).
        metadata : str
            ``{"vocab_type": int, "vocab_size": int, "add_prefix_space": bool, "stop_token_ids": [int, ...]}``.

        Raises
        ------
        ValueError
            If the metadata is not such a JSON object (the message names the field), or as the constructor.
        """
        try:
            doc = json.loads(metadata)
        except (TypeError, ValueError) as e:
            raise ValueError(f"TokenizerInfo metadata is not JSON: {e}") from None
        if not isinstance(doc, dict):
            raise ValueError(f"TokenizerInfo metadata must be a JSON object, got {type(doc).__name__}")
        fields = {"vocab_type": int, "vocab_size": int, "add_prefix_space": bool, "stop_token_ids": list}
        # xgrammar's earlier name for add_prefix_space, still found in stored metadata: read as it, must agree.
        legacy = doc.pop("prepend_space_in_tokenization", None)
        if legacy is not None:
            if not isinstance(legacy, bool):
                raise ValueError(f"TokenizerInfo metadata: 'prepend_space_in_tokenization' must be a JSON bool, got "
                                 f"{legacy!r}")
            if doc.setdefault("add_prefix_space", legacy) != legacy:
                raise ValueError("TokenizerInfo metadata: 'prepend_space_in_tokenization' and 'add_prefix_space' "
                                 "disagree")
        for name, kind in fields.items():
            value = doc.get(name)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise ValueError(f"TokenizerInfo metadata: '{name}' must be a JSON {kind.__name__}, got {value!r}")
        unknown = sorted(set(doc) - set(fields))
        if unknown:
            raise ValueError(f"TokenizerInfo metadata: unknown field(s) {unknown} (known: {sorted(fields)})")
        if not all(isinstance(t, int) and not isinstance(t, bool) for t in doc["stop_token_ids"]):
            raise ValueError(f"TokenizerInfo metadata: 'stop_token_ids' must hold integers, got {doc['stop_token_ids']}")
        return cls(encoded_vocab, VocabType(doc["vocab_type"]), vocab_size=doc["vocab_size"],
                   stop_token_ids=doc["stop_token_ids"], add_prefix_space=doc["add_prefix_space"])

    # -- constructors from files ------------------------------------------------------------------
    @classmethod
    def from_loaded_vocab(
        cls,
        loaded: LoadedVocab,
        *,
        vocab_size: int | None = None,
        stop_token_ids: Iterable[int] | None = None,
    ) -> "TokenizerInfo":
        """Build from a :class:`xg2jax.vocab_decoding.LoadedVocab` (what the loaders return).

        Added tokens written as plain text (``loaded.added_token_ids``) decode as the tokenizer
        decodes them.
        """
        self = cls.__new__(cls)
        self._vocab_type = VocabType(int(loaded.vocab_type))
        self._add_prefix_space = bool(loaded.add_prefix_space)
        decoded = loaded.decoded_vocab()
        stops = list(loaded.stop_token_ids if stop_token_ids is None else stop_token_ids)
        size = len(decoded) if vocab_size is None else int(vocab_size)
        self._init_decoded(decoded, size, [int(i) for i in loaded.special_token_ids], [int(i) for i in stops])
        return self

    @classmethod
    def from_tokenizer_json(
        cls, path: str | os.PathLike, *, vocab_size: int | None = None, stop_token_ids: Iterable[int] | None = None
    ) -> "TokenizerInfo":
        """Load a Hugging Face ``tokenizer.json`` (needs the ``tokenizers`` package)."""
        from xg2jax.tokenizer_loaders import load_tokenizer_json

        return cls.from_loaded_vocab(load_tokenizer_json(path), vocab_size=vocab_size, stop_token_ids=stop_token_ids)

    @classmethod
    def from_huggingface(
        cls, tokenizer, *, vocab_size: int | None = None, stop_token_ids: Iterable[int] | int | None = None
    ) -> "TokenizerInfo":
        """Build from a ``transformers`` tokenizer object, as xgrammar's ``TokenizerInfo.from_huggingface``.

        A fast tokenizer is read through its ``tokenizers`` backend (vocabulary, added and special tokens, and the
        vocab type and prefix space from its decoder / pre-tokenizer / normalizer); a slow one is first converted
        with ``transformers.convert_slow_tokenizer``.

        Parameters
        ----------
        tokenizer : transformers.PreTrainedTokenizerBase
        vocab_size : int, optional
            Width of the model's logits (``model.config.vocab_size``), which may exceed the tokenizer's vocabulary;
            default: the tokenizer's vocabulary with its added tokens.
        stop_token_ids : int or sequence of int, optional
            Default: the tokenizer's ``eos_token_id`` (one id or a list), else its special tokens spelled like an
            end of text (``</s>``, ``<|endoftext|>``, ``<|im_end|>``, ``<eos>``, ...).

        Raises
        ------
        ValueError
            If the tokenizer has no ``tokenizers`` backend and cannot be converted to one (e.g. a tiktoken-based
            tokenizer: use :meth:`from_tiktoken`).
        """
        from xg2jax.tokenizer_loaders import load_tokenizers_object

        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            try:
                from transformers.convert_slow_tokenizer import convert_slow_tokenizer

                backend = convert_slow_tokenizer(tokenizer)
            except Exception as e:  # transformers raises several types for tokenizers it cannot convert
                raise ValueError(f"TokenizerInfo.from_huggingface: {type(tokenizer).__name__} has no fast "
                                 f"(tokenizers) backend and could not be converted to one ({e}); load its "
                                 "vocabulary with from_tokenizer_json / from_tiktoken / from_gguf instead") from e
        loaded = load_tokenizers_object(backend)
        if stop_token_ids is None:
            eos = getattr(tokenizer, "eos_token_id", None)
            if eos is not None:
                stop_token_ids = [eos] if isinstance(eos, int) else list(eos)
        return cls.from_loaded_vocab(loaded, vocab_size=vocab_size,
                                     stop_token_ids=[stop_token_ids] if isinstance(stop_token_ids, int)
                                     else stop_token_ids)

    @classmethod
    def from_gguf(
        cls, path: str | os.PathLike, *, vocab_size: int | None = None, stop_token_ids: Iterable[int] | None = None
    ) -> "TokenizerInfo":
        """Load the tokenizer metadata of a GGUF model file (weights are not read)."""
        from xg2jax.tokenizer_loaders import load_gguf

        return cls.from_loaded_vocab(load_gguf(path), vocab_size=vocab_size, stop_token_ids=stop_token_ids)

    @classmethod
    def from_tiktoken(
        cls,
        path: str | os.PathLike,
        special_tokens: Mapping[str, int] | None = None,
        *,
        vocab_size: int | None = None,
        stop_token_ids: Iterable[int] | None = None,
    ) -> "TokenizerInfo":
        """Load a ``.tiktoken`` BPE file (plain or ``.gz``) plus its special tokens."""
        from xg2jax.tokenizer_loaders import load_tiktoken

        loaded = load_tiktoken(path, special_tokens)
        return cls.from_loaded_vocab(loaded, vocab_size=vocab_size, stop_token_ids=stop_token_ids)

    # -- properties -------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        """Width of the logits (and of the bitmask, in bits)."""
        return self._handle.vocab_size

    @property
    def vocab_type(self) -> VocabType:
        return self._vocab_type

    @property
    def add_prefix_space(self) -> bool:
        return self._add_prefix_space

    @property
    def prepend_space_in_tokenization(self) -> bool:
        """xgrammar's name for :attr:`add_prefix_space`."""
        return self._add_prefix_space

    @property
    def stop_token_ids(self) -> list[int]:
        return list(self._handle.stop_token_ids)

    @property
    def special_token_ids(self) -> list[int]:
        """Tokens that never match grammar text (stop tokens and empty tokens included)."""
        return list(self._handle.special_token_ids)

    @property
    def decoded_vocab(self) -> list[bytes]:
        """The bytes each token emits, indexed by token id."""
        return list(self._decoded)

    def __repr__(self) -> str:
        return (
            f"TokenizerInfo(vocab_size={self.vocab_size}, vocab_type={self._vocab_type.name}, "
            f"num_tokens={self._handle.num_tokens}, stop_token_ids={self.stop_token_ids})"
        )
