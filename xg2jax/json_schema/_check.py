"""Up-front check of a schema document: every keyword this front end knows has a value of the right JSON type, and
every local ``$ref`` points to something, wherever the keyword is (also in parts the conversion never reaches).

Algorithm. A walk over the schema positions (``_resources.SCHEMA_VALUED`` / ``SCHEMA_LISTS`` / ``SCHEMA_MAPS``)
checks each schema object's keywords against a table of expected value shapes and raises :class:`SchemaError`
naming the JSON pointer of the first offending keyword. Contradictions between keywords (``minItems`` above
``maxItems``, ...) are not errors here: a subschema that accepts nothing is legal JSON Schema (an optional property
that can never appear); the converter reports it with the keyword's pointer when the whole schema accepts nothing
(``UnsatisfiableSchemaError``).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from xg2jax import _core
from xg2jax.json_schema._common import TYPES, SchemaError, escape_pointer
from xg2jax.json_schema._ebnf import literal
from xg2jax.json_schema._keydfa import hoist_anchors
from xg2jax.json_schema._resources import (
    SCHEMA_LISTS,
    SCHEMA_MAPS,
    SCHEMA_VALUED,
    VALUE_KEYWORDS,
)

_COUNTS = {"minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties", "minContains",
           "maxContains"}
_NUMBERS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
# Every keyword _check_keyword looks at, and every keyword holding subschemas: the walk skips the rest.
_CHECKED = _COUNTS | _NUMBERS | {"multipleOf", "required", "type", "enum", "pattern", "format", "$ref", "$dynamicRef",
                                 "$anchor", "$dynamicAnchor", "patternProperties", "uniqueItems", "dependentRequired"}
_SCHEMA_KEYWORDS = SCHEMA_MAPS | SCHEMA_LISTS | SCHEMA_VALUED


def _describe(value: Any) -> str:
    return json.dumps(value)[:60]


def check_document(schema: Any, draft: int, ptr: str = "") -> None:
    """Raise :class:`SchemaError` at the first keyword whose value has the wrong shape."""
    try:
        _check(schema, draft, None)
    except SchemaError:
        _check(schema, draft, ptr)  # again, spelling the pointers this time: they are only needed for the error


def _check(schema: Any, draft: int, ptr: str | None) -> None:
    """check_document's walk; ``ptr`` None skips building JSON pointers (a SchemaError then names none)."""
    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict):
        raise SchemaError(ptr, f"a schema must be an object or a boolean, got {_describe(schema)}")
    for kw, value in schema.items():
        if kw not in _CHECKED and kw not in _SCHEMA_KEYWORDS:
            continue  # an annotation or unknown keyword: nothing to check, nothing below it
        where = None if ptr is None else f"{ptr}/{escape_pointer(kw)}"
        if kw in _CHECKED:
            _check_keyword(kw, value, draft, where)
        if kw in VALUE_KEYWORDS:
            continue
        if kw in SCHEMA_MAPS:
            if not isinstance(value, dict):
                raise SchemaError(where, f"'{kw}' must be an object of schemas, got {_describe(value)}")
            for name, sub in value.items():
                if kw == "dependencies" and isinstance(sub, list):
                    if not all(isinstance(n, str) for n in sub):
                        raise SchemaError(f"{where}/{escape_pointer(name)}", "a 'dependencies' array must hold "
                                          "property names (strings)")
                    continue
                _check(sub, draft, None if where is None else f"{where}/{escape_pointer(name)}")
        elif kw in SCHEMA_LISTS and isinstance(value, list) and (kw != "items" or draft < 2020):
            if kw in ("allOf", "anyOf", "oneOf") and not value:
                raise SchemaError(where, f"'{kw}' must be a non-empty array of schemas")
            for i, sub in enumerate(value):
                _check(sub, draft, None if where is None else f"{where}/{i}")
        elif kw in SCHEMA_LISTS and kw != "items":
            raise SchemaError(where, f"'{kw}' must be an array of schemas, got {_describe(value)}")
        elif kw in SCHEMA_VALUED:
            if kw in ("unevaluatedItems", "unevaluatedProperties") and draft < 2019:
                continue  # not keywords before 2019-09
            _check(value, draft, where)


def _check_keyword(kw: str, value: Any, draft: int, where: str | None) -> None:
    if kw == "type" and isinstance(value, str) and value in TYPES:
        return  # the most common keyword, in its most common form
    if kw in _COUNTS:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or \
                not float(value).is_integer():
            raise SchemaError(where, f"'{kw}' must be a non-negative integer, got {_describe(value)}")
    elif kw in _NUMBERS:
        if draft <= 4 and kw.startswith("exclusive"):
            if not isinstance(value, bool):
                raise SchemaError(where, f"'{kw}' must be a boolean in draft 4, got {_describe(value)}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SchemaError(where, f"'{kw}' must be a number, got {_describe(value)}")
    elif kw == "multipleOf":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise SchemaError(where, f"'multipleOf' must be a number > 0, got {_describe(value)}")
    elif kw == "required":
        if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
            raise SchemaError(where, f"'required' must be an array of strings, got {_describe(value)}")
    elif kw == "type":
        types = [value] if isinstance(value, str) else value
        if not isinstance(types, list) or not types or not all(isinstance(t, str) and t in TYPES for t in types):
            raise SchemaError(where, f"'type' must be one of {list(TYPES)} or an array of them, got "
                              f"{_describe(value)}")
    elif kw == "enum":
        if not isinstance(value, list):
            raise SchemaError(where, f"'enum' must be an array, got {_describe(value)}")
    elif kw in ("pattern", "format", "$ref", "$dynamicRef", "$anchor", "$dynamicAnchor"):
        if not isinstance(value, str):
            raise SchemaError(where, f"'{kw}' must be a string, got {_describe(value)}")
        if kw == "pattern":
            check_regex(value, where)
    elif kw == "patternProperties" and isinstance(value, dict):
        for regex in value:
            check_regex(regex, f"{where}/{escape_pointer(regex)}")
    elif kw == "uniqueItems":
        if not isinstance(value, bool):
            raise SchemaError(where, f"'uniqueItems' must be a boolean, got {_describe(value)}")
    elif kw == "dependentRequired":
        if not isinstance(value, dict) or not all(isinstance(v, list) and all(isinstance(n, str) for n in v)
                                                  for v in value.values()):
            raise SchemaError(where, f"'dependentRequired' must map names to arrays of names, got "
                              f"{_describe(value)}")


@functools.lru_cache(maxsize=4096)  # a pure function of the text; the document check and the converter both ask
def regex_problem(pattern: str) -> str | None:
    """Why the regex front end rejects ``pattern`` (ECMAScript syntax, JSON Schema ``pattern``), or None."""
    pattern = hoist_anchors(pattern)
    try:
        _core.Grammar.from_ebnf(f"root ::= Regex({literal(pattern)}, json_string=true, search=true)".encode(), "root")
    except ValueError as e:
        return str(e).split("\n")[0].split("in the Regex(...) pattern ", 1)[-1]
    return None


def check_regex(pattern: str, where: str) -> None:
    """Raise :class:`SchemaError` for a regex that is invalid (not merely using an unsupported feature)."""
    problem = regex_problem(pattern)
    if problem is not None and "not supported" not in problem:
        raise SchemaError(where, f"invalid regex {json.dumps(pattern)}: {problem}")
