"""JSON Schema front end: a schema (str, dict or pydantic model class) -> EBNF text for the engine.

``json_schema_to_ebnf`` keeps the schema's semantics for the keywords it supports and raises
:class:`UnsupportedSchemaError` (a ``ValueError`` naming the JSON pointer of the keyword) for the others; see
``_converter.py`` for the algorithm. Compile the result with ``GrammarCompiler.compile_json_schema``.
"""

from __future__ import annotations

import json
from typing import Any

from xg2jax.json_schema._converter import (
    SchemaConverter,
    SchemaError,
    UnsatisfiableSchemaError,
    UnsupportedSchemaError,
)

__all__ = ["SchemaError", "UnsatisfiableSchemaError", "UnsupportedSchemaError", "json_schema_to_ebnf", "schema_as_dict"]


def schema_as_dict(schema: Any) -> Any:
    """The schema as parsed JSON: a JSON string, a dict / bool, or a pydantic model class."""
    if isinstance(schema, str):
        try:
            return json.loads(schema)
        except json.JSONDecodeError as e:
            raise SchemaError("", f"the schema is not valid JSON: {e}") from None
    if isinstance(schema, (dict, bool)):
        return schema
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        return schema.model_json_schema()
    raise TypeError(f"JSON Schema: expected str, dict, bool or a pydantic model class, got {type(schema).__name__}")


def json_schema_to_ebnf(schema: Any, *, any_whitespace: bool = True, indent: int | None = None,
                        separators: tuple[str, str] | None = None, strict_mode: bool = True,
                        max_whitespace_cnt: int | None = None, any_order: bool = False,
                        enforce_formats: bool = True, refs: dict[str, Any] | None = None) -> str:
    """EBNF text (root rule ``root``) accepting exactly the JSON texts valid under ``schema``.

    ``enforce_formats`` (an xg2jax extension): check ``format`` for the formats in ``_formats.FORMATS``, as
    xgrammar does and as generation wants. JSON Schema's default treats ``format`` as an annotation only; pass
    False for that (unknown formats are always annotations).

    ``refs`` (an xg2jax extension): a registry of further schema documents, ``{uri: schema}``, that ``$ref`` may
    name (remote documents are never fetched). ``$id`` values inside the schema and the registry's documents are
    honoured as the spec says (base URI changes, embedded resources, ``$anchor``).
    """
    return SchemaConverter(schema_as_dict(schema), any_whitespace=any_whitespace, indent=indent,
                           separators=separators, strict_mode=strict_mode, max_whitespace_cnt=max_whitespace_cnt,
                           any_order=any_order, enforce_formats=enforce_formats,
                           refs={u: schema_as_dict(d) for u, d in (refs or {}).items()},
                           # parsed here from text: nobody else holds it
                           schema_is_private=isinstance(schema, str),
                           source_text=schema if isinstance(schema, str) else None).convert()
