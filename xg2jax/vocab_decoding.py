"""Decoding tokenizer vocabularies into the raw bytes each token produces.

A grammar engine needs, for every token id, the exact byte string that the
token appends to the output when the model emits it.  Tokenizer files do not
store those bytes directly: they store an *encoded* vocabulary, a string per
token written in one of three conventions (the :class:`VocabType` values, which
are the same integers as xgrammar's ``VocabType`` so values can be exchanged):

``RAW`` (0)
    The token text is the output text.  ``str`` tokens stand for their UTF-8
    encoding; ``bytes`` tokens (e.g. tiktoken ranks, which are arbitrary byte
    strings and may be partial UTF-8 sequences) are kept as they are.

``BYTE_FALLBACK`` (1)
    SentencePiece style (Llama 1/2, Gemma, Mistral...).  A space is written as
    ``"▁"`` (U+2581 LOWER ONE EIGHTH BLOCK), so ``"▁hello"`` decodes to
    ``b" hello"``; bytes that have no token of their own are covered by 256
    *byte-fallback* tokens spelled exactly ``<0xNN>`` (two hex digits), each of
    which decodes to that single byte (``"<0x0A>"`` -> ``b"\\n"``).  Everything
    else is UTF-8.  Such tokenizers often *prepend* a space to the input text
    (``add_prefix_space``); that changes how text is split, not what a token
    decodes to, so it is recorded but never applied to the decoded bytes.

``BYTE_LEVEL`` (2)
    GPT-2 style (GPT-2, Llama 3, Qwen, most Hugging Face BPE models).  Every
    byte 0-255 is first mapped to a printable Unicode character (the GPT-2
    "bytes to unicode" table: printable Latin-1 bytes map to themselves, the
    68 others -- control characters, space, DEL, NBSP, soft hyphen -- to
    U+0100 onwards in byte order, so space is ``"Ġ"`` and newline ``"Ċ"``)
    and tokens are strings over that 256-character alphabet.  Decoding maps
    every character back to its byte: ``"Ġhello"`` -> ``b" hello"``.

Tokens *added* on top of a model vocabulary (Hugging Face ``added_tokens``,
GGUF control and user-defined tokens, tiktoken special tokens) are written as
plain text.  In a ``BYTE_LEVEL`` vocabulary such a token may contain characters
outside the byte-level alphabet (``"<|im_start|>"`` does not, ``"\\n\\n"`` or
``"☃"`` would); as Hugging Face decoders do, a token listed in
``added_token_ids`` is byte-level decoded when every character is in the
alphabet and taken verbatim as UTF-8 otherwise.  Any other token with a
character outside the alphabet is an error.

:func:`detect_vocab_type` guesses the convention when a tokenizer file does
not say, and :class:`LoadedVocab` is what the loaders in
:mod:`xg2jax.tokenizer_loaders` return.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Iterable, Sequence
from typing import Union

__all__ = [
    "VocabType",
    "LoadedVocab",
    "decode_vocab",
    "detect_vocab_type",
    "byte_level_alphabet",
]

Token = Union[str, bytes]

_SPIECE_SPACE = "\u2581"  # "▁"
_SPIECE_SPACE_UTF8 = _SPIECE_SPACE.encode("utf-8")
_BYTE_TOKEN_STR = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_BYTE_TOKEN_BYTES = re.compile(rb"<0x([0-9A-Fa-f]{2})>")


class VocabType(enum.IntEnum):
    """How the strings of an encoded vocabulary spell the bytes of each token.

    The integer values are xgrammar's, so they can be passed across.
    """

    RAW = 0
    BYTE_FALLBACK = 1
    BYTE_LEVEL = 2


def _build_byte_level_alphabet() -> tuple[dict[str, int], list[str]]:
    """Build the GPT-2 byte <-> character tables.

    Returns
    -------
    char_to_byte : dict of str to int
        The 256 characters of the alphabet and the byte each stands for.
    byte_to_char : list of str
        ``byte_to_char[b]`` is the character that stands for byte ``b``.
    """
    printable = (
        set(range(ord("!"), ord("~") + 1))
        | set(range(ord("\u00a1"), ord("\u00ac") + 1))
        | set(range(ord("\u00ae"), ord("\u00ff") + 1))
    )
    byte_to_char: list[str] = []
    shifted = 0
    for b in range(256):
        if b in printable:
            byte_to_char.append(chr(b))
        else:
            byte_to_char.append(chr(256 + shifted))
            shifted += 1
    char_to_byte = {c: b for b, c in enumerate(byte_to_char)}
    return char_to_byte, byte_to_char


_BL_CHAR_TO_BYTE, _BL_BYTE_TO_CHAR = _build_byte_level_alphabet()
# str.translate table: alphabet characters -> the Latin-1 character of their
# byte; Latin-1 characters that are *not* in the alphabet -> U+FFFF so that the
# final latin-1 encoding fails on them (characters above U+00FF fail anyway).
_BL_TRANSLATE: dict[int, int] = {o: 0xFFFF for o in range(256)}
_BL_TRANSLATE.update({ord(c): b for c, b in _BL_CHAR_TO_BYTE.items()})


def byte_level_alphabet() -> dict[str, int]:
    """Return the GPT-2 byte-level alphabet.

    Returns
    -------
    dict of str to int
        A fresh mapping from each of the 256 alphabet characters to the byte
        it stands for (``"Ġ"`` -> 32, ``"Ċ"`` -> 10, ``"A"`` -> 65).
    """
    return dict(_BL_CHAR_TO_BYTE)


def _as_str(token: Token, token_id: int) -> str:
    if isinstance(token, str):
        return token
    if isinstance(token, (bytes, bytearray, memoryview)):
        try:
            return bytes(token).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"token id {token_id}: {bytes(token)!r} is not valid UTF-8, "
                "which this vocabulary type requires"
            ) from exc
    raise TypeError(f"token id {token_id}: expected str or bytes, got {type(token).__name__}")


def _decode_raw(token: Token, token_id: int) -> bytes:
    if isinstance(token, str):
        return token.encode("utf-8")
    if isinstance(token, (bytes, bytearray, memoryview)):
        return bytes(token)
    raise TypeError(f"token id {token_id}: expected str or bytes, got {type(token).__name__}")


def _decode_byte_fallback(token: Token, token_id: int) -> bytes:
    if isinstance(token, str):
        if len(token) == 6:
            m = _BYTE_TOKEN_STR.fullmatch(token)
            if m is not None:
                return bytes((int(m.group(1), 16),))
        return token.replace(_SPIECE_SPACE, " ").encode("utf-8")
    if isinstance(token, (bytes, bytearray, memoryview)):
        token = bytes(token)
        if len(token) == 6:
            m = _BYTE_TOKEN_BYTES.fullmatch(token)
            if m is not None:
                return bytes((int(m.group(1), 16),))
        return token.replace(_SPIECE_SPACE_UTF8, b" ")
    raise TypeError(f"token id {token_id}: expected str or bytes, got {type(token).__name__}")


def _decode_byte_level(token: Token, token_id: int, verbatim_ok: bool) -> bytes:
    text = _as_str(token, token_id)
    try:
        return text.translate(_BL_TRANSLATE).encode("latin-1")
    except UnicodeEncodeError:
        pass
    if verbatim_ok:
        return text.encode("utf-8")
    bad = next(c for c in text if c not in _BL_CHAR_TO_BYTE)
    raise ValueError(
        f"token id {token_id}: {text!r} contains {bad!r} (U+{ord(bad):04X}), which is "
        "not a character of the byte-level (GPT-2) alphabet; pass the id in "
        "added_token_ids if it is an added/special token written as plain text"
    )


def decode_vocab(
    encoded_vocab: Sequence[Token],
    vocab_type: VocabType | int,
    *,
    add_prefix_space: bool = False,
    added_token_ids: Iterable[int] = (),
) -> list[bytes]:
    """Decode an encoded vocabulary into the bytes each token produces.

    Parameters
    ----------
    encoded_vocab : sequence of str or bytes
        The token spellings, indexed by token id.
    vocab_type : VocabType or int
        The convention the spellings follow (see the module docstring).
    add_prefix_space : bool, optional
        Whether the tokenizer prepends a space to the input text (xgrammar's
        meaning).  It only affects how text is split into tokens, so it is
        accepted for completeness and does not change the result: nothing is
        stripped.
    added_token_ids : iterable of int, optional
        Ids of tokens added on top of the model vocabulary and spelled as
        plain text.  In a ``BYTE_LEVEL`` vocabulary such a token is taken
        verbatim as UTF-8 when it contains a character outside the byte-level
        alphabet, instead of raising.  Ignored for the other types.

    Returns
    -------
    list of bytes
        ``result[i]`` is what token ``i`` appends to the output.

    Raises
    ------
    ValueError
        If ``vocab_type`` is unknown; for ``BYTE_LEVEL``, if a token not in
        ``added_token_ids`` contains a character outside the byte-level
        alphabet, or a ``bytes`` token is not valid UTF-8.  The message names
        the token id.
    TypeError
        If a token is neither ``str`` nor ``bytes``.

    Examples
    --------
    >>> decode_vocab(["<0x0A>", "\u2581hello"], VocabType.BYTE_FALLBACK)
    [b'\\n', b' hello']
    >>> decode_vocab(["\u0120hello", "\u010a"], VocabType.BYTE_LEVEL)
    [b' hello', b'\\n']
    """
    del add_prefix_space  # recorded by callers; never changes token bytes
    try:
        vtype = VocabType(int(vocab_type))
    except ValueError:
        raise ValueError(f"unknown vocab_type {vocab_type!r}") from None
    if vtype == VocabType.RAW:
        return [_decode_raw(t, i) for i, t in enumerate(encoded_vocab)]
    if vtype == VocabType.BYTE_FALLBACK:
        return [_decode_byte_fallback(t, i) for i, t in enumerate(encoded_vocab)]
    added = set(int(i) for i in added_token_ids)
    return [_decode_byte_level(t, i, i in added) for i, t in enumerate(encoded_vocab)]


def detect_vocab_type(encoded_vocab: Sequence[Token]) -> VocabType:
    """Guess the convention of an encoded vocabulary from its tokens.

    Used by the loaders when the tokenizer file does not say.  The rules, in
    order:

    1. a byte-fallback token ``<0x0A>`` or ``<0x00>`` is present ->
       ``BYTE_FALLBACK``;
    2. the byte-level spellings of space and newline, ``"Ġ"`` and ``"Ċ"``,
       are both tokens, and at least as many tokens start with ``"Ġ"`` as
       with ``"▁"`` -> ``BYTE_LEVEL``;
    3. at least 1% of the tokens start with ``"▁"`` -> ``BYTE_FALLBACK``
       (SentencePiece without byte tokens, e.g. T5);
    4. otherwise ``RAW`` (also when every token is ``bytes``).

    Parameters
    ----------
    encoded_vocab : sequence of str or bytes
        The token spellings.

    Returns
    -------
    VocabType
        The guessed type.
    """
    strs = [t for t in encoded_vocab if isinstance(t, str)]
    if not strs:
        return VocabType.RAW
    present = set(strs)
    if "<0x0A>" in present or "<0x00>" in present:
        return VocabType.BYTE_FALLBACK
    n_spiece = sum(1 for t in strs if t.startswith(_SPIECE_SPACE))
    n_bl_space = sum(1 for t in strs if t.startswith("\u0120"))
    if "\u0120" in present and "\u010a" in present and n_bl_space >= n_spiece:
        return VocabType.BYTE_LEVEL
    if n_spiece > 0 and n_spiece * 100 >= len(strs):
        return VocabType.BYTE_FALLBACK
    return VocabType.RAW


@dataclasses.dataclass(frozen=True)
class LoadedVocab:
    """A vocabulary read from a tokenizer file, not yet decoded.

    Attributes
    ----------
    encoded_vocab : list of str or bytes
        Token spellings; the index is the token id.  Ids a tokenizer leaves
        unused are filled with an empty token listed in ``special_token_ids``.
    vocab_type : VocabType
        Convention of the spellings.
    special_token_ids : list of int
        Control/special tokens (bos, eos, pad, ``<start_of_turn>``...) that
        must never match grammar text.  Sorted, no duplicates.
    stop_token_ids : list of int
        Tokens that end generation (eos, ``<|im_end|>``...).  Sorted.
    add_prefix_space : bool
        Whether the tokenizer prepends a space to the input text.
    added_token_ids : list of int
        Tokens spelled as plain text on top of the model vocabulary (see
        :func:`decode_vocab`).  Sorted.
    """

    encoded_vocab: list
    vocab_type: VocabType
    special_token_ids: list[int]
    stop_token_ids: list[int]
    add_prefix_space: bool
    added_token_ids: list[int] = dataclasses.field(default_factory=list)

    @property
    def vocab_size(self) -> int:
        """int: Number of token ids (``len(encoded_vocab)``)."""
        return len(self.encoded_vocab)

    def decoded_vocab(self) -> list[bytes]:
        """Decode the vocabulary with :func:`decode_vocab`.

        Returns
        -------
        list of bytes
            What each token appends to the output, indexed by token id.
        """
        return decode_vocab(
            self.encoded_vocab,
            self.vocab_type,
            add_prefix_space=self.add_prefix_space,
            added_token_ids=self.added_token_ids,
        )
