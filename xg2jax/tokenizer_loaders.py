"""Loaders that read a vocabulary out of a tokenizer file.

Each loader returns a :class:`~xg2jax.vocab_decoding.LoadedVocab`: the encoded
token spellings indexed by id, their :class:`~xg2jax.vocab_decoding.VocabType`,
the special tokens that must never match grammar text, the stop tokens, and
whether the tokenizer prepends a space to its input.

* :func:`load_tokenizer_json` -- a Hugging Face ``tokenizer.json`` (needs the
  ``tokenizers`` package, imported when called).
* :func:`load_gguf` -- the tokenizer metadata of a GGUF model file.  Only the
  header and the key/value section are read (a few MB), never the tensors.
  The default reader is a small parser of the GGUF header written here, which
  needs no extra package and takes ~0.5 s for a 262k-token vocabulary;
  ``reader="gguf"`` goes through ``gguf.GGUFReader`` instead (which builds a
  numpy view per array element: ~15 s for the same file).
* :func:`load_tiktoken` -- a ``.tiktoken`` rank file (``base64 rank`` lines),
  optionally gzip-compressed; no ``tiktoken`` package needed.
* :func:`load_gpt2_encoder_json` -- GPT-2's ``encoder.json`` (token -> id).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import struct
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO, Union

from .vocab_decoding import LoadedVocab, VocabType, detect_vocab_type

__all__ = [
    "EOS_LIKE_TOKENS",
    "load_tokenizer_json",
    "load_gguf",
    "read_gguf_metadata",
    "gguf_metadata_vocab",
    "load_tiktoken",
    "load_gpt2_encoder_json",
]

PathLike = Union[str, "os.PathLike[str]"]

#: Special-token spellings treated as stop tokens when a file does not say.
EOS_LIKE_TOKENS = (
    "</s>",
    "<|endoftext|>",
    "<eos>",
    "<|im_end|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<end_of_turn>",
)

_SPIECE_SPACE = "\u2581"


def _missing(package: str, what: str) -> ImportError:
    return ImportError(
        f"{what} needs the '{package}' package, which is not installed: "
        f"pip install {package}"
    )


def _finish(
    encoded: list,
    vocab_type: VocabType,
    special: set[int],
    stop: set[int],
    add_prefix_space: bool,
    added: set[int],
) -> LoadedVocab:
    n = len(encoded)
    for name, ids in (("special", special), ("stop", stop), ("added", added)):
        bad = [i for i in ids if not 0 <= i < n]
        if bad:
            raise ValueError(f"{name} token ids {sorted(bad)[:5]} out of range for {n} tokens")
    return LoadedVocab(
        encoded_vocab=encoded,
        vocab_type=VocabType(vocab_type),
        special_token_ids=sorted(special),
        stop_token_ids=sorted(stop),
        add_prefix_space=bool(add_prefix_space),
        added_token_ids=sorted(added),
    )


# --------------------------------------------------------------------------
# Hugging Face tokenizer.json
# --------------------------------------------------------------------------


def _components(node: Any) -> list[dict]:
    """Flatten a (possibly ``Sequence``) tokenizer component into its parts."""
    if not isinstance(node, dict):
        return []
    if node.get("type") == "Sequence":
        parts: list[dict] = []
        for key in ("decoders", "pretokenizers", "normalizers", "processors"):
            for child in node.get(key) or []:
                parts.extend(_components(child))
        return parts
    return [node]


def _hf_vocab_type(cfg: dict) -> VocabType | None:
    decoders = _components(cfg.get("decoder"))
    pretoks = _components(cfg.get("pre_tokenizer"))
    normalizers = _components(cfg.get("normalizer"))
    model = cfg.get("model") or {}
    types = {c.get("type") for c in decoders + pretoks}
    if "ByteLevel" in types:
        return VocabType.BYTE_LEVEL
    if "ByteFallback" in types or "Metaspace" in types or model.get("byte_fallback"):
        return VocabType.BYTE_FALLBACK
    for c in decoders + normalizers:
        if c.get("type") == "Replace":
            pattern = c.get("pattern") or {}
            if _SPIECE_SPACE in (pattern.get("String"), c.get("content")):
                return VocabType.BYTE_FALLBACK
    return None


def _hf_add_prefix_space(cfg: dict) -> bool:
    for c in _components(cfg.get("pre_tokenizer")):
        if c.get("type") == "Metaspace":
            scheme = c.get("prepend_scheme")
            if scheme is not None:
                return scheme in ("always", "first")
            return bool(c.get("add_prefix_space", True))
        if c.get("type") == "ByteLevel" and c.get("add_prefix_space"):
            return True
    for c in _components(cfg.get("normalizer")):
        if c.get("type") == "Prepend" and c.get("prepend") == _SPIECE_SPACE:
            return True
    return False


def load_tokenizer_json(path: PathLike) -> LoadedVocab:
    """Load the vocabulary of a Hugging Face ``tokenizer.json``.

    Parameters
    ----------
    path : str or os.PathLike
        The ``tokenizer.json`` file.

    Returns
    -------
    LoadedVocab
        Model vocabulary (BPE, Unigram or WordPiece) plus added tokens, by id;
        added tokens flagged ``special`` are special.  The vocab type comes
        from the decoder / pre-tokenizer / normalizer (``ByteLevel`` ->
        ``BYTE_LEVEL``; ``ByteFallback``, ``Metaspace`` or a ``▁`` replace ->
        ``BYTE_FALLBACK``), else from :func:`detect_vocab_type`.  Stop tokens
        are the special tokens spelled as in :data:`EOS_LIKE_TOKENS`.  Ids
        the file leaves unused are filled with ``""`` and marked special.
        WordPiece vocabularies are returned as ``RAW`` with ``##`` kept.

    Raises
    ------
    ImportError
        If the ``tokenizers`` package is not installed.
    """
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:  # pragma: no cover - depends on environment
        raise _missing("tokenizers", "load_tokenizer_json") from exc

    return load_tokenizers_object(Tokenizer.from_file(os.fspath(path)))


def load_tokenizers_object(tok) -> LoadedVocab:
    """The vocabulary of a ``tokenizers.Tokenizer`` object (as :func:`load_tokenizer_json` reads one from a file;
    a ``transformers`` fast tokenizer holds one as ``backend_tokenizer``)."""
    cfg = json.loads(tok.to_str())
    vocab: dict[str, int] = tok.get_vocab(with_added_tokens=True)
    added_decoder = tok.get_added_tokens_decoder()  # id -> AddedToken
    n = max(vocab.values(), default=-1) + 1
    if added_decoder:
        n = max(n, max(added_decoder) + 1)
    encoded: list = [None] * n
    for text, idx in vocab.items():
        encoded[idx] = text
    special: set[int] = set()
    added: set[int] = set()
    for idx, atok in added_decoder.items():
        encoded[idx] = atok.content
        added.add(idx)
        if atok.special:
            special.add(idx)
    for idx, text in enumerate(encoded):
        if text is None:
            encoded[idx] = ""
            special.add(idx)
            added.add(idx)

    model_type = (cfg.get("model") or {}).get("type")
    vtype = _hf_vocab_type(cfg)
    if vtype is None:
        vtype = VocabType.RAW if model_type == "WordPiece" else detect_vocab_type(encoded)
    stop = {i for i in special if encoded[i] in EOS_LIKE_TOKENS}
    return _finish(encoded, vtype, special, stop, _hf_add_prefix_space(cfg), added)


# --------------------------------------------------------------------------
# GGUF
# --------------------------------------------------------------------------

# GGUF metadata value types (GGUF spec, versions 2 and 3).
_G_UINT8, _G_INT8, _G_UINT16, _G_INT16, _G_UINT32, _G_INT32 = 0, 1, 2, 3, 4, 5
_G_FLOAT32, _G_BOOL, _G_STRING, _G_ARRAY, _G_UINT64, _G_INT64, _G_FLOAT64 = 6, 7, 8, 9, 10, 11, 12
_G_SCALAR = {
    _G_UINT8: "B", _G_INT8: "b", _G_UINT16: "H", _G_INT16: "h", _G_UINT32: "I",
    _G_INT32: "i", _G_FLOAT32: "f", _G_BOOL: "?", _G_UINT64: "Q", _G_INT64: "q",
    _G_FLOAT64: "d",
}
_GGUF_MAGIC = b"GGUF"

# tokenizer.ggml.token_type values (llama.cpp's llama_token_type)
GGUF_TOKEN_NORMAL, GGUF_TOKEN_UNKNOWN, GGUF_TOKEN_CONTROL = 1, 2, 3
GGUF_TOKEN_USER_DEFINED, GGUF_TOKEN_UNUSED, GGUF_TOKEN_BYTE = 4, 5, 6


class _ChainedReader:
    """Buffered sequential reader over one file or several concatenated."""

    _BLOCK = 1 << 22

    def __init__(self, paths: Sequence[PathLike]):
        self._paths = [os.fspath(p) for p in paths]
        self._next_path = 0
        self._fh: BinaryIO | None = None
        self._buf = b""
        self._pos = 0
        self.bytes_read = 0

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def _fill(self, need: int) -> None:
        chunks = [self._buf[self._pos:]]
        have = len(chunks[0])
        while have < need:
            if self._fh is None:
                if self._next_path >= len(self._paths):
                    raise ValueError("GGUF file ends inside its metadata")
                self._fh = open(self._paths[self._next_path], "rb")
                self._next_path += 1
            block = self._fh.read(max(self._BLOCK, need - have))
            if not block:
                self._fh.close()
                self._fh = None
                continue
            self.bytes_read += len(block)
            chunks.append(block)
            have += len(block)
        self._buf = b"".join(chunks)
        self._pos = 0

    def take(self, n: int) -> memoryview:
        if len(self._buf) - self._pos < n:
            self._fill(n)
        view = memoryview(self._buf)[self._pos:self._pos + n]
        self._pos += n
        return view

    def strings(self, count: int, e: str) -> list:
        """Read ``count`` GGUF strings (u64 length + bytes) as str/bytes."""
        u64 = struct.Struct(e + "Q").unpack_from
        out = []
        append = out.append
        buf, pos = self._buf, self._pos
        end = len(buf)
        for _ in range(count):
            if end - pos < 8:
                self._pos = pos
                self._fill(8)
                buf, pos, end = self._buf, 0, len(self._buf)
            (n,) = u64(buf, pos)
            pos += 8
            if end - pos < n:
                self._pos = pos
                self._fill(n)
                buf, pos, end = self._buf, 0, len(self._buf)
            raw = buf[pos:pos + n]
            pos += n
            try:
                append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                append(raw)
        self._pos = pos
        return out

    def unpack(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        if len(self._buf) - self._pos < size:
            self._fill(size)
        out = struct.unpack_from(fmt, self._buf, self._pos)
        self._pos += size
        return out


def _gguf_text(raw: bytes) -> str | bytes:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _read_gguf_value(r: _ChainedReader, vtype: int, e: str) -> Any:
    if vtype == _G_STRING:
        (n,) = r.unpack(e + "Q")
        return _gguf_text(bytes(r.take(n)))
    fmt = _G_SCALAR.get(vtype)
    if fmt is not None:
        return r.unpack(e + fmt)[0]
    if vtype == _G_ARRAY:
        itype, count = r.unpack(e + "IQ")
        fmt = _G_SCALAR.get(itype)
        if fmt is not None:
            size = struct.calcsize(fmt)
            data = r.take(size * count)
            return list(struct.unpack(f"{e}{count}{fmt}", data))
        if itype == _G_STRING:
            return r.strings(count, e)
        return [_read_gguf_value(r, itype, e) for _ in range(count)]
    raise ValueError(f"unknown GGUF metadata value type {vtype}")


def read_gguf_metadata(path: PathLike | Sequence[PathLike]) -> dict[str, Any]:
    """Read the key/value metadata of a GGUF file, stopping before tensors.

    Parameters
    ----------
    path : str, os.PathLike, or sequence of them
        The GGUF file, or the chunks of one split into consecutive parts
        (read as if concatenated, in order).

    Returns
    -------
    dict
        Metadata key -> value (str, int, float, bool, or list of those; a
        string that is not valid UTF-8 is returned as bytes).  The file's
        version and tensor count are under ``"GGUF.version"`` and
        ``"GGUF.tensor_count"``.

    Raises
    ------
    ValueError
        If the file is not GGUF version 2 or 3, or ends inside the metadata.
    """
    paths = [path] if isinstance(path, (str, bytes, os.PathLike)) else list(path)
    r = _ChainedReader(paths)
    try:
        if bytes(r.take(4)) != _GGUF_MAGIC:
            raise ValueError(f"{os.fspath(paths[0])!s}: not a GGUF file (bad magic)")
        (version,) = r.unpack("<I")
        e = "<"
        if version & 0xFFFF == 0:  # written on a big-endian machine
            e = ">"
            version = struct.unpack(">I", struct.pack("<I", version))[0]
        if version not in (2, 3):
            raise ValueError(f"unsupported GGUF version {version}")
        tensor_count, kv_count = r.unpack(e + "QQ")
        meta: dict[str, Any] = {"GGUF.version": version, "GGUF.tensor_count": tensor_count}
        for _ in range(kv_count):
            (klen,) = r.unpack(e + "Q")
            key = bytes(r.take(klen)).decode("utf-8")
            (vtype,) = r.unpack(e + "I")
            meta[key] = _read_gguf_value(r, vtype, e)
        return meta
    finally:
        r.close()


def _read_gguf_metadata_with_gguf_package(path: PathLike) -> dict[str, Any]:
    try:
        from gguf import GGUFReader
    except ImportError as exc:  # pragma: no cover - depends on environment
        raise _missing("gguf", 'load_gguf(reader="gguf")') from exc
    reader = GGUFReader(os.fspath(path))
    meta: dict[str, Any] = {}
    for key, field in reader.fields.items():
        if key.startswith("tokenizer.") or key in ("GGUF.version", "general.architecture"):
            if key == "tokenizer.ggml.tokens":
                meta[key] = [_gguf_text(bytes(field.parts[i])) for i in field.data]
            else:
                meta[key] = field.contents()
    return meta


def load_gguf(path: PathLike | Sequence[PathLike], *, reader: str = "builtin") -> LoadedVocab:
    """Load the tokenizer vocabulary stored in a GGUF model file.

    Parameters
    ----------
    path : str, os.PathLike, or sequence of them
        The ``.gguf`` file, or (builtin reader only) its consecutive chunks.
    reader : {"builtin", "gguf"}, optional
        ``"builtin"`` parses the header here and reads only the metadata;
        ``"gguf"`` uses ``gguf.GGUFReader`` (memory-maps the file; much
        slower on large vocabularies).  Both give the same result.

    Returns
    -------
    LoadedVocab
        Tokens from ``tokenizer.ggml.tokens``.  Vocab type from
        ``tokenizer.ggml.model`` (``"llama"``/``"t5"`` -> ``BYTE_FALLBACK``,
        ``"gpt2"`` -> ``BYTE_LEVEL``, else :func:`detect_vocab_type`).
        Special: control, unknown and unused tokens, and bos/eos/pad/unk ids.
        Stop: eos (plus the eot/eom ids when given) and ``<end_of_turn>``
        when present.  Added (plain-text) tokens: control, user-defined,
        unknown and unused.  In ``BYTE_FALLBACK`` vocabularies plain spaces
        in user-defined tokens are written back as ``▁`` (the Gemma 3 GGUF
        stores its 30 multi-space tokens, ids 138-167, with plain spaces).
        ``add_prefix_space`` from ``tokenizer.ggml.add_space_prefix``
        (default: true for ``llama``/``t5`` models, false otherwise).

    Raises
    ------
    ImportError
        If ``reader="gguf"`` and the ``gguf`` package is not installed.
    ValueError
        If the file is not GGUF, has no ``tokenizer.ggml.tokens``, or an id
        is out of range.
    """
    if reader == "builtin":
        meta = read_gguf_metadata(path)
    elif reader == "gguf":
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise ValueError('reader="gguf" needs a single assembled file, not chunks')
        meta = _read_gguf_metadata_with_gguf_package(path)
    else:
        raise ValueError(f"unknown reader {reader!r}: use 'builtin' or 'gguf'")
    return gguf_metadata_vocab(meta)


def gguf_metadata_vocab(meta: Mapping[str, Any]) -> LoadedVocab:
    """The :class:`LoadedVocab` of GGUF metadata already read (see :func:`load_gguf` for the rules)."""
    tokens = meta.get("tokenizer.ggml.tokens")
    if tokens is None:
        raise ValueError("GGUF file has no tokenizer.ggml.tokens")
    encoded = list(tokens)
    n = len(encoded)
    types = list(meta.get("tokenizer.ggml.token_type") or [GGUF_TOKEN_NORMAL] * n)
    if len(types) != n:
        raise ValueError(f"tokenizer.ggml.token_type has {len(types)} entries for {n} tokens")
    model = meta.get("tokenizer.ggml.model")
    if model in ("llama", "t5"):
        vtype = VocabType.BYTE_FALLBACK
    elif model == "gpt2":
        vtype = VocabType.BYTE_LEVEL
    else:
        vtype = detect_vocab_type(encoded)
    add_prefix_space = meta.get("tokenizer.ggml.add_space_prefix")
    if add_prefix_space is None:
        add_prefix_space = model in ("llama", "t5")

    special: set[int] = set()
    added: set[int] = set()
    for i, t in enumerate(types):
        if t in (GGUF_TOKEN_CONTROL, GGUF_TOKEN_UNKNOWN, GGUF_TOKEN_UNUSED):
            special.add(i)
            added.add(i)
        elif t == GGUF_TOKEN_USER_DEFINED:
            added.add(i)
            if vtype == VocabType.BYTE_FALLBACK and isinstance(encoded[i], str) and " " in encoded[i]:
                encoded[i] = encoded[i].replace(" ", _SPIECE_SPACE)

    def _id(key: str) -> int | None:
        value = meta.get(f"tokenizer.ggml.{key}_token_id")
        return None if value is None or not 0 <= int(value) < n else int(value)

    for key in ("bos", "eos", "padding", "unknown"):
        idx = _id(key)
        if idx is not None:
            special.add(idx)
    stop: set[int] = set()
    for key in ("eos", "eot", "eom"):
        idx = _id(key)
        if idx is not None:
            stop.add(idx)
    try:
        stop.add(encoded.index("<end_of_turn>"))
    except ValueError:
        pass
    special |= stop
    return _finish(encoded, vtype, special, stop, bool(add_prefix_space), added)


# --------------------------------------------------------------------------
# tiktoken
# --------------------------------------------------------------------------


def load_tiktoken(
    path: PathLike, special_tokens: Mapping[str, int] | None = None
) -> LoadedVocab:
    """Load a ``.tiktoken`` BPE rank file (optionally ``.gz``).

    Parameters
    ----------
    path : str or os.PathLike
        File of ``<base64 token> <rank>`` lines; gzip-compressed if its name
        ends in ``.gz`` or it starts with the gzip magic bytes.
    special_tokens : mapping of str to int, optional
        Special tokens and their ids, added on top of the ranks.

    Returns
    -------
    LoadedVocab
        ``RAW`` vocabulary of ``bytes`` (token id = rank), special tokens as
        ``str``.  Ids left unused by ranks and special tokens (below the
        largest) are filled with ``b""`` and marked special.  Stop tokens:
        ``<|endoftext|>`` and ``<|im_end|>`` when among ``special_tokens``.

    Raises
    ------
    ValueError
        On a malformed line, a repeated rank, or a special token id that is
        also a rank.
    """
    with open(path, "rb") as fh:
        data = fh.read()
    if os.fspath(path).endswith(".gz") or data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    ranks: dict[int, bytes] = {}
    b64decode = base64.b64decode
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"{os.fspath(path)}:{lineno}: expected '<base64> <rank>'")
        try:
            token = b64decode(parts[0], validate=True)
            rank = int(parts[1])
        except ValueError as exc:
            raise ValueError(f"{os.fspath(path)}:{lineno}: {exc}") from None
        if rank in ranks:
            raise ValueError(f"{os.fspath(path)}:{lineno}: rank {rank} repeated")
        ranks[rank] = token
    specials = dict(special_tokens or {})
    for text, idx in specials.items():
        if idx in ranks:
            raise ValueError(f"special token {text!r} id {idx} is also a BPE rank")
        if idx < 0:
            raise ValueError(f"special token {text!r} has negative id {idx}")
    n = max(list(ranks) + list(specials.values()), default=-1) + 1
    encoded: list = [b""] * n
    special: set[int] = set(range(n)) - set(ranks) - set(specials.values())
    added: set[int] = set(special)
    for rank, token in ranks.items():
        encoded[rank] = token
    for text, idx in specials.items():
        encoded[idx] = text
        special.add(idx)
        added.add(idx)
    stop = {specials[t] for t in ("<|endoftext|>", "<|im_end|>") if t in specials}
    return _finish(encoded, VocabType.RAW, special, stop, False, added)


# --------------------------------------------------------------------------
# GPT-2 encoder.json
# --------------------------------------------------------------------------


def load_gpt2_encoder_json(
    path: PathLike, special_tokens: Sequence[str] = ("<|endoftext|>",)
) -> LoadedVocab:
    """Load GPT-2's ``encoder.json`` (byte-level token -> id).

    Parameters
    ----------
    path : str or os.PathLike
        The ``encoder.json`` file (the merges in ``vocab.bpe`` are not needed
        to decode the vocabulary).
    special_tokens : sequence of str, optional
        Spellings of the special tokens in the file.

    Returns
    -------
    LoadedVocab
        ``BYTE_LEVEL`` vocabulary; the special tokens present are special,
        added, and (``<|endoftext|>``) stop tokens.

    Raises
    ------
    ValueError
        If ids repeat or leave gaps.
    """
    with open(path, encoding="utf-8") as fh:
        enc: dict[str, int] = json.load(fh)
    n = len(enc)
    encoded: list = [None] * n
    for text, idx in enc.items():
        if not 0 <= idx < n or encoded[idx] is not None:
            raise ValueError(f"{os.fspath(path)}: ids are not a permutation of 0..{n - 1}")
        encoded[idx] = text
    special = {enc[t] for t in special_tokens if t in enc}
    stop = {i for i in special if encoded[i] in EOS_LIKE_TOKENS}
    return _finish(encoded, VocabType.BYTE_LEVEL, special, stop, False, set(special))
