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
from xg2jax.json_schema._check import check_shape
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
                        plain_integers: bool = True, json_format: str = "json") -> str:
    """EBNF text (root rule ``root``) accepting exactly the JSON texts valid under ``schema``.

    ``json_format`` (as xgrammar's): ``"json"``, or a model family's XML-style argument list for a tool's
    parameters schema (``"qwen_xml"``, ``"minimax_xml"``, ``"glm_xml"``, ``"deepseek_xml"``,
    ``"deepseek_v4_1_xml"``, ``"kimi_k3_xml"``; ``xg2jax.xml_styles`` says how each is read), or ``"gemma"``:
    Gemma 4's JSON dialect for tool arguments (strings between ``<|"|>`` markers, raw; bare keys:
    ``{city:<|"|>Paris<|"|>,days:3}``), written by the native front end (:func:`native_grammar`).

    ``enforce_formats`` (an xg2jax extension): check ``format`` for the formats in ``_formats.FORMATS``, as
    xgrammar does and as generation wants. JSON Schema's default treats ``format`` as an annotation only; pass
    False for that (unknown formats are always annotations).

    ``plain_integers`` (an xg2jax extension, default True): integers (``"type": "integer"``, integral constants)
    are spelled as plain JSON integers (``0``, ``-12``), as a generator writes them; False accepts every spelling
    JSON Schema counts as an integer (``1.0``, ``1.00``, ``-0``), as a validator reads them.

    ``refs`` (an xg2jax extension): a registry of further schema documents, ``{uri: schema}``, that ``$ref`` may
    name (remote documents are never fetched). ``$id`` values inside the schema and the registry's documents are
    honoured as the spec says (base URI changes, embedded resources, ``$anchor``).

    Two front ends share this call while the native one is completed: a schema whose keywords the native front end
    handles (``docs/json_schema.md`` lists them) is converted in C++ without the GIL
    (``cpp/frontends/json_schema``), every other by the Python front end; both give the same text for the same
    input, and errors always come from the Python front end.

    Every input whose cost grows with a number in the schema is bounded by a constant of ``_limits.py`` (nesting
    depth, enum length, counts, automaton sizes, ...); beyond one, a :class:`SchemaError` names the keyword's
    pointer and the limit before anything large is built.
    """
    if json_format == "gemma":
        return str(native_grammar(schema, string_style="gemma", any_whitespace=any_whitespace, indent=indent,
                                  separators=separators, strict_mode=strict_mode,
                                  max_whitespace_cnt=max_whitespace_cnt, any_order=any_order,
                                  enforce_formats=enforce_formats, refs=refs, plain_integers=plain_integers))
    if json_format != "json":
        from xg2jax.xml_styles import xml_arguments_ebnf

        return xml_arguments_ebnf(schema, json_format, strict_mode=strict_mode, any_whitespace=any_whitespace,
                                  indent=indent, separators=separators, max_whitespace_cnt=max_whitespace_cnt,
                                  any_order=any_order, enforce_formats=enforce_formats, refs=refs,
                                  plain_integers=plain_integers)
    native = native_arguments(schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
                              max_whitespace_cnt=max_whitespace_cnt, any_order=any_order, refs=refs,
                              plain_integers=plain_integers, enforce_formats=enforce_formats)
    if native is not None:
        text = _core.json_schema_to_ebnf_native(native[1], *native[2])[0]
        if text is not None:
            return text
    return python_json_schema_to_ebnf(schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
                                      strict_mode=strict_mode, max_whitespace_cnt=max_whitespace_cnt,
                                      any_order=any_order, enforce_formats=enforce_formats, refs=refs,
                                      plain_integers=plain_integers)


def _as_json_text(schema: Any) -> str | None:
    """The schema as JSON text for the native front end: a string as it is; a dict (or a pydantic model's schema)
    when its JSON spelling reads back as the same value (no NaN, non-string keys or non-JSON types, which the
    Python front end reports or reads its own way)."""
    if isinstance(schema, str):
        return schema
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        schema = schema.model_json_schema()
    if not isinstance(schema, dict):
        return None
    try:
        # First: a dict may share sub-dicts (its JSON spelling grows with every path) or contain itself.
        if check_shape(schema) > MAX_NATIVE_DICT_CONTAINERS:
            return None
        text = json.dumps(schema, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):  # SchemaError is a ValueError: the Python front end reports it
        return None
    return text if json.loads(text) == schema else None


# Dicts with more JSON objects / arrays than this (counted along every path) take the Python front end without
# being spelled as JSON first.
MAX_NATIVE_DICT_CONTAINERS = 100_000


def native_arguments(schema: Any, *, any_whitespace: bool = True, indent: int | None = None,
                     separators: tuple[str, str] | None = None, max_whitespace_cnt: int | None = None,
                     any_order: bool = False, refs: dict[str, Any] | None = None, plain_integers: bool = True,
                     enforce_formats: bool = True, **_ignored) -> tuple[str, bytes, tuple] | None:
    """(JSON text, its UTF-8, the native options) when the options are ones the native front end
    (cpp/frontends/json_schema) takes and the schema has a faithful JSON text, else None. Whether it converts the
    schema is then its own call (``_core.json_schema_to_ebnf_native``, or ``compile_json_schema_native`` which also
    compiles)."""
    if refs or indent is not None:
        return None
    if max_whitespace_cnt is not None and type(max_whitespace_cnt) is not int:
        return None
    if separators is not None:
        if len(separators) != 2 or not all(type(x) is str for x in separators):
            return None
        separators = tuple(separators)
    source = _as_json_text(schema)
    if source is None:
        return None
    try:
        data = source.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: the Python front end reports them
        return None
    return source, data, (bool(any_whitespace), separators, max_whitespace_cnt, bool(plain_integers),
                          bool(enforce_formats), bool(any_order))


def native_grammar(schema: Any, *, string_excludes=(), string_style: str = "json", **options):
    """The :class:`~xg2jax.Grammar` of ``schema`` from the native front end, for what only it writes:
    ``string_excludes``, texts no string may contain (a free string's text, an automaton string's value; enum /
    const values and declared property names stay as the schema gives them), and ``string_style="gemma"``
    (Gemma 4's tool arguments: strings between ``<|"|>`` markers, raw; bare keys; undeclared keys identifiers).

    Raises
    ------
    SchemaError
        The schema's own error (as :func:`json_schema_to_ebnf` reports it), or ``UnsupportedSchemaError`` when the
        native front end does not convert it (references given as ``refs=``, an ``indent``, ``patternProperties``
        or ``propertyNames`` together with excludes, a schema beyond its limits).
    """
    from xg2jax.compiler import Grammar

    native = native_arguments(schema, **options)
    if native is None:
        raise UnsupportedSchemaError("", f"{_native_only(string_style)} written by the native JSON Schema front "
                                     "end, which does not take these options (refs=, indent=) or this schema value")
    text, why = _core.json_schema_to_ebnf_native(native[1], *native[2], string_excludes=list(string_excludes),
                                                 string_style=string_style)
    if text is None:
        python_json_schema_to_ebnf(schema, **options)  # a schema error is reported as such
        raise UnsupportedSchemaError("", f"{_native_only(string_style)} written by the native JSON Schema front "
                                     f"end, which does not convert this schema: {why}")
    return Grammar.from_ebnf(text)


def _native_only(string_style: str) -> str:
    return "the gemma style is" if string_style == "gemma" else "string excludes are"


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
