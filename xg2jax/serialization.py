"""JSON serialization of TokenizerInfo, Grammar and CompiledGrammar (xgrammar's ``serialize_json`` /
``deserialize_json`` names; the format is xg2jax's own).

A grammar is stored as its printed EBNF (printing and parsing back give the same grammar), a tokenizer as its
decoded token bytes (base64) with its sizes and special / stop ids, a compiled grammar as both. Compiled state is
not stored: deserializing a compiled grammar compiles it again, and its token masks are built lazily on first use
as always. Every document carries ``"__VERSION__"``; another version, or a document of another kind, raises.
"""

from __future__ import annotations

import base64
import json

SERIALIZATION_VERSION = "xg2jax-1"


class DeserializeFormatError(ValueError, RuntimeError):
    """The text is not a serialized document of the expected kind (bad JSON, a missing or wrong field)."""


class DeserializeVersionError(ValueError, RuntimeError):
    """The document was written by another serialization version."""


def get_serialization_version() -> str:
    """The version written into (and required of) every serialized document."""
    return SERIALIZATION_VERSION


def dump(kind: str, fields: dict) -> str:
    return json.dumps({"__VERSION__": SERIALIZATION_VERSION, "kind": kind, **fields}, ensure_ascii=False)


def load(text: str, kind: str) -> dict:
    try:
        doc = json.loads(text)
    except (TypeError, ValueError) as e:
        raise DeserializeFormatError(f"deserialize {kind}: not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise DeserializeFormatError(f"deserialize {kind}: expected a JSON object")
    if doc.get("__VERSION__") != SERIALIZATION_VERSION:
        raise DeserializeVersionError(f"deserialize {kind}: version {doc.get('__VERSION__')!r}, this xg2jax reads "
                                      f"{SERIALIZATION_VERSION!r}")
    if doc.get("kind") != kind:
        raise DeserializeFormatError(f"deserialize {kind}: the document holds a {doc.get('kind')!r}")
    return doc


def field(doc: dict, name: str, kind: str, types):
    if name not in doc or not isinstance(doc[name], types):
        raise DeserializeFormatError(f"deserialize {kind}: field {name!r} is missing or has the wrong type")
    return doc[name]


def encode_tokens(tokens: list[bytes]) -> list[str]:
    return [base64.b64encode(t).decode("ascii") for t in tokens]


def decode_tokens(items: list, kind: str) -> list[bytes]:
    try:
        return [base64.b64decode(t, validate=True) for t in items]
    except (TypeError, ValueError):
        raise DeserializeFormatError(f"deserialize {kind}: a token is not base64") from None
