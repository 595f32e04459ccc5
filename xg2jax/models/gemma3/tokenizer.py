"""Text -> token ids for Gemma 3 prompts, built from the GGUF file's own vocabulary.

Gemma's tokenizer is SentencePiece BPE with byte fallback and no prefix space. The GGUF file lists the
pieces but no merges; the merge order is the pieces' order in the file (their scores do not follow it).
Encoding therefore works as SentencePiece BPE does, with a piece's id as its merge rank:

1. Control and user-defined tokens (``<start_of_turn>``, the multi-space tokens, ...) are cut out of the
   text first, longest match at the leftmost position (``parse_special=False`` keeps control tokens as
   text; the multi-space tokens are always used, as Gemma's own tokenizer does).
2. In each remaining span, spaces become ``▁``; each character is a symbol, or its UTF-8 bytes as
   ``<0xNN>`` tokens when the character is not a piece.
3. Repeatedly merge the adjacent pair whose concatenation is the piece with the lowest id (ties: the
   longer left part, then the leftmost pair), until no adjacent pair forms a piece.

This is the merge order ``transformers`` derives for Gemma GGUF files, and a slow test checks both give
the same ids. Decoding maps ``▁`` back to spaces and byte tokens back to bytes.
"""

from __future__ import annotations

import heapq
import os
import re
from typing import Iterable, Sequence

__all__ = ["Gemma3Tokenizer"]

_CONTROL, _USER_DEFINED, _BYTE = 3, 4, 6  # GGUF token types


class Gemma3Tokenizer:
    """Encode prompts and decode outputs with a Gemma 3 GGUF vocabulary.

    Use :meth:`from_gguf`. ``bos_id``, ``eos_id``, ``pad_id`` and ``end_of_turn_id`` come from the file.
    """

    def __init__(self, pieces: Sequence[str], types: Sequence[int], token_bytes: Sequence[bytes], *, bos_id: int,
                 eos_id: int, pad_id: int):
        """``pieces``: SentencePiece spellings (``▁`` for spaces); ``types``: GGUF token types;
        ``token_bytes``: what each token decodes to (:func:`xg2jax.vocab_decoding.decode_vocab`)."""
        self.pieces = list(pieces)
        self.bos_id, self.eos_id, self.pad_id = bos_id, eos_id, pad_id
        self._token_bytes = list(token_bytes)
        self._ids = {}
        for i, p in enumerate(self.pieces):
            self._ids.setdefault(p, i)
        self._bytes = {self._token_bytes[i][0]: i for i, t in enumerate(types) if t == _BYTE}  # byte -> <0xNN>
        self._control = {p: i for i, (p, t) in enumerate(zip(self.pieces, types)) if t == _CONTROL and p}
        self._user = {p: i for i, (p, t) in enumerate(zip(self.pieces, types)) if t == _USER_DEFINED and p}
        self._special_ids = set(self._control.values())
        self._splitters = {True: self._splitter({**self._user, **self._control}), False: self._splitter(self._user)}
        self.end_of_turn_id = self._control.get("<end_of_turn>")

    @staticmethod
    def _splitter(table: dict[str, int]):
        if not table:
            return None
        alternatives = sorted(table, key=len, reverse=True)  # regex alternation: longest first
        return re.compile("|".join(re.escape(a) for a in alternatives))

    @classmethod
    def from_gguf(cls, path: str | os.PathLike | Sequence[str | os.PathLike]) -> "Gemma3Tokenizer":
        """Build the tokenizer from a GGUF file's metadata (weights are not read)."""
        from xg2jax.tokenizer_loaders import gguf_metadata_vocab, read_gguf_metadata
        from xg2jax.vocab_decoding import decode_vocab

        meta = read_gguf_metadata(path)
        if meta.get("tokenizer.ggml.model") != "llama":
            raise ValueError(f"Gemma3Tokenizer: expected a SentencePiece ('llama') vocabulary, got "
                             f"{meta.get('tokenizer.ggml.model')!r}")
        vocab = gguf_metadata_vocab(meta)  # spells the multi-space user-defined pieces with ▁, as SentencePiece
        pieces = [p if isinstance(p, str) else p.decode("utf-8", "replace") for p in vocab.encoded_vocab]
        return cls(pieces, list(meta["tokenizer.ggml.token_type"]), decode_vocab(vocab.encoded_vocab, vocab.vocab_type),
                   bos_id=int(meta["tokenizer.ggml.bos_token_id"]), eos_id=int(meta["tokenizer.ggml.eos_token_id"]),
                   pad_id=int(meta.get("tokenizer.ggml.padding_token_id", 0)))

    @property
    def vocab_size(self) -> int:
        return len(self.pieces)

    def encode(self, text: str, *, add_bos: bool = True, parse_special: bool = True) -> list[int]:
        """Token ids of ``text`` (with the BOS token first unless ``add_bos=False``)."""
        ids = [self.bos_id] if add_bos else []
        normalised = text.replace(" ", "▁")
        splitter = self._splitters[parse_special]
        pos = 0
        if splitter is not None:
            for m in splitter.finditer(normalised):
                ids += self._bpe(normalised[pos:m.start()])
                piece = m.group(0)
                ids.append(self._control.get(piece, self._user.get(piece)))
                pos = m.end()
        ids += self._bpe(normalised[pos:])
        return ids

    def _bpe(self, text: str) -> list[int]:
        if not text:
            return []
        symbols: list[str | None] = []
        for ch in text:
            if ch in self._ids:
                symbols.append(ch)
            else:  # byte fallback: never merged with anything
                symbols.extend(f"\x00{b}" for b in ch.encode("utf-8"))
        n = len(symbols)
        nxt = list(range(1, n + 1))
        prv = list(range(-1, n - 1))

        def candidate(i: int):
            j = nxt[i]
            if j >= n:
                return None
            a, b = symbols[i], symbols[j]
            merged = self._ids.get(a + b) if a[0] != "\x00" and b[0] != "\x00" else None
            return None if merged is None else (merged, -len(a), i, j, a + b)

        heap = [c for i in range(n - 1) if (c := candidate(i)) is not None]
        heapq.heapify(heap)
        while heap:
            _, _, i, j, merged = heapq.heappop(heap)
            if symbols[i] is None or symbols[j] is None or nxt[i] != j or symbols[i] + symbols[j] != merged:
                continue  # stale: one side has merged since
            symbols[i], symbols[j] = merged, None
            nxt[i] = nxt[j]
            if nxt[j] < n:
                prv[nxt[j]] = i
            if prv[i] >= 0 and (c := candidate(prv[i])) is not None:
                heapq.heappush(heap, c)
            if (c := candidate(i)) is not None:
                heapq.heappush(heap, c)
        out = []
        for s in symbols:
            if s is None:
                continue
            out.append(self._bytes[int(s[1:])] if s[0] == "\x00" else self._ids[s])
        return out

    def decode(self, ids: Iterable[int], *, skip_special: bool = True) -> str:
        """The text of ``ids`` (control tokens such as BOS/EOS dropped unless ``skip_special=False``)."""
        buf = bytearray()
        for i in ids:
            i = int(i)
            if i < 0 or i >= len(self.pieces):
                raise ValueError(f"Gemma3Tokenizer.decode: token id {i} is outside [0, {len(self.pieces)})")
            if skip_special and i in self._special_ids:
                continue
            buf += self._token_bytes[i]
        return buf.decode("utf-8", errors="replace")
