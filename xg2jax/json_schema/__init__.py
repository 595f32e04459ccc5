"""JSON Schema front end: a schema (str, dict or pydantic model class) -> EBNF text for the engine.

``json_schema_to_ebnf`` keeps the schema's semantics for the keywords it supports and raises
:class:`UnsupportedSchemaError` (a ``ValueError`` naming the JSON pointer of the keyword) for the others; see
``_converter.py`` for the algorithm. Compile the result with ``GrammarCompiler.compile_json_schema``.
"""

from __future__ import annotations

import json
from typing import Any

from xg2jax import _core
from xg2jax.json_schema._converter import (
    SchemaConverter,
    SchemaError,
    UnsatisfiableSchemaError,
    UnsupportedSchemaError,
    recursion_headroom,
)
from xg2jax.json_schema._limits import MAX_SCHEMA_DEPTH

__all__ = ["SchemaError", "UnsatisfiableSchemaError", "UnsupportedSchemaError", "json_schema_to_ebnf", "schema_as_dict"]


def schema_as_dict(schema: Any) -> Any:
    """The schema as parsed JSON: a JSON string, a dict / bool, or a pydantic model class."""
    if isinstance(schema, str):
        try:
            return json.loads(schema)
        except json.JSONDecodeError as e:
            raise SchemaError("", f"the schema is not valid JSON: {e}") from None
        except RecursionError:
            # Parsed at the caller's recursion limit on purpose: the C parser's frames live on the thread's stack.
            raise SchemaError("", "the schema text nests deeper than the JSON parser allows (far beyond the limit "
                              f"MAX_SCHEMA_DEPTH = {MAX_SCHEMA_DEPTH} levels)") from None
    if isinstance(schema, (dict, bool)):
        return schema
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        return schema.model_json_schema()
    raise TypeError(f"JSON Schema: expected str, dict, bool or a pydantic model class, got {type(schema).__name__}")


def json_schema_to_ebnf(schema: Any, *, any_whitespace: bool = True, indent: int | None = None,
                        separators: tuple[str, str] | None = None, strict_mode: bool = True,
                        max_whitespace_cnt: int | None = None, any_order: bool = False,
                        enforce_formats: bool = True, refs: dict[str, Any] | None = None,
                        plain_integers: bool = True) -> str:
    """EBNF text (root rule ``root``) accepting exactly the JSON texts valid under ``schema``.

    ``enforce_formats`` (an xg2jax extension): check ``format`` for the formats in ``_formats.FORMATS``, as
    xgrammar does and as generation wants. JSON Schema's default treats ``format`` as an annotation only; pass
    False for that (unknown formats are always annotations).

    ``plain_integers`` (an xg2jax extension, default True): integers (``"type": "integer"``, integral constants)
    are spelled as plain JSON integers (``0``, ``-12``), as a generator writes them; False accepts every spelling
    JSON Schema counts as an integer (``1.0``, ``1.00``, ``-0``), as a validator reads them.

    ``refs`` (an xg2jax extension): a registry of further schema documents, ``{uri: schema}``, that ``$ref`` may
    name (remote documents are never fetched). ``$id`` values inside the schema and the registry's documents are
    honoured as the spec says (base URI changes, embedded resources, ``$anchor``).

    Two front ends share this call while the native one is completed: a schema given as JSON text that uses only
    the core keywords (``type``, ``properties``, ``required``, ``additionalProperties``, ``items``, ``enum``,
    ``const``, ``anyOf``, lengths and item counts, annotations) is converted in C++ without the GIL
    (``cpp/frontends/json_schema``), every other by the Python front end; both give the same text for the same
    input, and errors always come from the Python front end.

    Every input whose cost grows with a number in the schema is bounded by a constant of ``_limits.py`` (nesting
    depth, enum length, counts, automaton sizes, ...); beyond one, a :class:`SchemaError` names the keyword's
    pointer and the limit before anything large is built.
    """
    if isinstance(schema, str) and not refs and not any_order and indent is None:
        text = _native_ebnf(schema, any_whitespace, separators, max_whitespace_cnt, plain_integers)
        if text is not None:
            return text
    return python_json_schema_to_ebnf(schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
                                      strict_mode=strict_mode, max_whitespace_cnt=max_whitespace_cnt,
                                      any_order=any_order, enforce_formats=enforce_formats, refs=refs,
                                      plain_integers=plain_integers)


def _native_ebnf(schema: str, any_whitespace, separators, max_whitespace_cnt, plain_integers) -> str | None:
    """The native front end's text for a schema it handles (cpp/frontends/json_schema: the core keywords, text
    identical to the Python front end's, converted without the GIL), else None."""
    if max_whitespace_cnt is not None and type(max_whitespace_cnt) is not int:
        return None
    if separators is not None:
        if len(separators) != 2 or not all(type(x) is str for x in separators):
            return None
        separators = tuple(separators)
    try:
        data = schema.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: the Python front end reports them
        return None
    return _core.json_schema_to_ebnf_native(data, bool(any_whitespace), separators, max_whitespace_cnt,
                                            bool(plain_integers))[0]


def python_json_schema_to_ebnf(schema: Any, *, any_whitespace: bool = True, indent: int | None = None,
                               separators: tuple[str, str] | None = None, strict_mode: bool = True,
                               max_whitespace_cnt: int | None = None, any_order: bool = False,
                               enforce_formats: bool = True, refs: dict[str, Any] | None = None,
                               plain_integers: bool = True) -> str:
    """:func:`json_schema_to_ebnf` by the Python front end alone (every keyword; the reference the native front
    end is compared with)."""
    document = schema_as_dict(schema)
    registry = {u: schema_as_dict(d) for u, d in (refs or {}).items()}
    with recursion_headroom():  # the limits of _limits.py bound the recursion; see there
        return SchemaConverter(document, any_whitespace=any_whitespace, indent=indent,
                               separators=separators, strict_mode=strict_mode, max_whitespace_cnt=max_whitespace_cnt,
                               any_order=any_order, enforce_formats=enforce_formats, refs=registry,
                               plain_integers=plain_integers,
                               # parsed here from text: nobody else holds it
                               schema_is_private=isinstance(schema, str),
                               source_text=schema if isinstance(schema, str) else None).convert()
