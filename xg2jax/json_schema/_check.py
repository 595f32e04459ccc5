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
import math
from typing import Any

from xg2jax.json_schema._common import TYPES, SchemaError, UnsupportedSchemaError, escape_pointer
from xg2jax.json_schema._automata import regex_syntax_error
from xg2jax.json_schema._limits import MAX_DECIMAL_DIGITS, MAX_ENUM_VALUES, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES
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
_CHECKED = _COUNTS | _NUMBERS | {"multipleOf", "required", "type", "enum", "const", "pattern", "format", "$ref",
                                 "$dynamicRef", "$anchor", "$dynamicAnchor", "patternProperties", "uniqueItems",
                                 "dependentRequired"}
_SCHEMA_KEYWORDS = SCHEMA_MAPS | SCHEMA_LISTS | SCHEMA_VALUED


def _describe(value: Any) -> str:
    return json.dumps(value)[:60]


_TOO_MANY_DIGITS = 10 ** MAX_DECIMAL_DIGITS
_PLAIN_SCALARS = (str, int, bool, type(None))  # JSON values as they are (float needs the finiteness test)


def number_problem(value: Any) -> str | None:
    """Why a number keyword's value (``minimum``, ``multipleOf``, ...) cannot be converted, or None. JSON has no
    NaN or infinity, but Python's ``json`` parses them (and a ``dict`` may hold them); an integer beyond
    ``MAX_DECIMAL_DIGITS`` digits would cost a grammar state per digit (a float never has that many)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{_describe(value)} is not a JSON number (NaN and infinities are not JSON)"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _TOO_MANY_DIGITS:
        return f"the number has more than {MAX_DECIMAL_DIGITS} digits (the limit is MAX_DECIMAL_DIGITS)"
    return None


def _containers_within(doc: Any, limit: int) -> int | None:
    """The number of JSON objects / arrays in a tree of them (no shared or cyclic sub-objects), or None when it
    nests more than ``limit`` deep."""
    stack, count = [(doc, 0)], 0
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        depth += 1
        count += 1
        if depth > limit:
            return None
        stack += [(c, depth) for c in children if isinstance(c, (dict, list))]
    return count


def check_shape(doc: Any, ptr: str = "", *, is_tree: bool = False) -> int:
    """Raise :class:`SchemaError` when ``doc`` (a parsed schema document) nests JSON objects / arrays deeper than
    ``MAX_SCHEMA_DEPTH``, holds more than ``MAX_SCHEMA_NODES`` of them counted along every path, or refers back to
    itself (a ``dict`` cycle, which no JSON text can spell). Iterative, so it runs before any recursive pass: those
    would otherwise hit Python's recursion limit (a ``RecursionError`` naming no keyword) or, on a ``dict`` whose
    sub-objects are shared, walk an exponential number of paths. ``is_tree``: ``doc`` was parsed from JSON text, so
    it shares nothing and its size is the text's; only the depth needs checking (a faster walk, the same result).
    Returns the number of JSON objects / arrays, counted along every path (the size the conversion budgets scale
    with)."""
    if is_tree and (count := _containers_within(doc, MAX_SCHEMA_DEPTH)) is not None:
        return count
    heights: dict[int, tuple[int, int]] = {}  # id(container) -> (height, containers below along every path)
    open_ids: set[int] = set()  # containers on the current path
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_ids.discard(key)
            below = [heights[id(c)] for c in _containers(node)]
            heights[key] = (1 + max((h for h, _ in below), default=0), 1 + sum(n for _, n in below))
            if heights[key][1] > MAX_SCHEMA_NODES:
                raise SchemaError(ptr, f"the schema holds more than {MAX_SCHEMA_NODES} JSON objects / arrays, "
                                  "counting shared ones once per path (the limit is MAX_SCHEMA_NODES)")
            continue
        if key in heights:
            continue  # a shared sub-object, already measured
        if key in open_ids:
            raise SchemaError(ptr, "the schema contains itself (a cycle of Python objects is not JSON)")
        open_ids.add(key)
        stack.append((node, True))
        stack += [(c, False) for c in _containers(node) if id(c) not in heights]
    if isinstance(doc, (dict, list)) and heights[id(doc)][0] > MAX_SCHEMA_DEPTH:
        raise SchemaError(ptr + _deepest_path(doc, heights), f"the schema nests JSON objects / arrays more than "
                          f"{MAX_SCHEMA_DEPTH} levels deep (the limit is MAX_SCHEMA_DEPTH)")
    return heights[id(doc)][1] if isinstance(doc, (dict, list)) else 0


def _containers(node: Any) -> list:
    """The objects / arrays directly inside a JSON object or array."""
    if isinstance(node, dict):
        return [c for c in node.values() if isinstance(c, (dict, list))]
    if isinstance(node, list):
        return [c for c in node if isinstance(c, (dict, list))]
    return []


def _deepest_path(doc: Any, heights: dict) -> str:
    """The JSON pointer of the container ``MAX_SCHEMA_DEPTH`` levels below ``doc`` on a deepest path (the first one
    past the limit): follow the tallest child."""
    tokens, node = [], doc
    for _ in range(MAX_SCHEMA_DEPTH):
        items = node.items() if isinstance(node, dict) else enumerate(node)
        k, node = max(((k, c) for k, c in items if isinstance(c, (dict, list))), key=lambda kc: heights[id(kc[1])][0])
        tokens.append(escape_pointer(k) if isinstance(k, str) else str(k))
    return "".join("/" + t for t in tokens)


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
                raise SchemaError(where, f"{kw} must be an object (of schemas), got {_describe(value)}")
            for name, sub in value.items():
                if kw == "dependencies" and isinstance(sub, list):
                    if not all(isinstance(n, str) for n in sub):
                        raise SchemaError(f"{where}/{escape_pointer(name)}", "a 'dependencies' array must hold "
                                          "property names (strings)")
                    continue
                _check(sub, draft, None if where is None else f"{where}/{escape_pointer(name)}")
        elif kw in SCHEMA_LISTS and isinstance(value, list) and (kw != "items" or draft < 2020):
            if kw in ("allOf", "anyOf", "oneOf") and not value:
                raise SchemaError(where, f"{kw} must be a non-empty array of schemas")
            for i, sub in enumerate(value):
                if not isinstance(sub, (bool, dict)):
                    raise SchemaError(None if where is None else f"{where}/{i}", f"{kw} must be an array of objects or "
                                      f"booleans (schemas): item {i} is {_describe(sub)}")
                _check(sub, draft, None if where is None else f"{where}/{i}")
        elif kw in SCHEMA_LISTS and kw != "items":
            raise SchemaError(where, f"{kw} must be an array (of schemas), got {_describe(value)}")
        elif kw in SCHEMA_VALUED:
            if kw in ("unevaluatedItems", "unevaluatedProperties") and draft < 2019:
                continue  # not keywords before 2019-09
            if not isinstance(value, (bool, dict)):
                raise SchemaError(where, f"{kw} must be a boolean or an object (a schema), got {_describe(value)}")
            _check(value, draft, where)


def _check_keyword(kw: str, value: Any, draft: int, where: str | None) -> None:
    if kw == "type" and isinstance(value, str) and value in TYPES:
        return  # the most common keyword, in its most common form
    if kw in _COUNTS:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                (isinstance(value, float) and not value.is_integer()):
            raise SchemaError(where, f"{kw} must be an integer, got {_describe(value)}")
        if not value >= 0:
            raise SchemaError(where, f"{kw} must be a non-negative integer, got {_describe(value)}")
    elif kw in _NUMBERS:
        if draft <= 4 and kw.startswith("exclusive"):
            if not isinstance(value, bool):
                raise SchemaError(where, f"{kw} must be a boolean in draft 4, got {_describe(value)}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SchemaError(where, f"{kw} must be a number, got {_describe(value)}")
        elif (problem := number_problem(value)) is not None:
            raise SchemaError(where, f"'{kw}': {problem}")
    elif kw == "multipleOf":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise SchemaError(where, f"multipleOf: Value must be a number, got {_describe(value)}")
        if not value > 0:
            raise SchemaError(where, f"multipleOf must be greater than 0, got {_describe(value)}")
        if (problem := number_problem(value)) is not None:
            raise SchemaError(where, f"'multipleOf': {problem}")
    elif kw == "required":
        if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
            raise SchemaError(where, f"required must be an array of strings, got {_describe(value)}")
    elif kw == "type":
        types = [value] if isinstance(value, str) else value
        if not isinstance(types, list) or (not types and draft <= 4) or \
                not all(isinstance(t, str) and t in TYPES for t in types):
            raise SchemaError(where, f"type must be one of {list(TYPES)} or an array of them, got "
                              f"{_describe(value)}")
    elif kw == "enum":
        if not isinstance(value, list):
            raise SchemaError(where, f"enum must be an array, got {_describe(value)}")
        if len(value) > MAX_ENUM_VALUES:
            raise UnsupportedSchemaError(where, f"'enum' lists {len(value)} values (the limit is MAX_ENUM_VALUES = "
                                         f"{MAX_ENUM_VALUES})")
        for i, v in enumerate(value):
            if type(v) not in _PLAIN_SCALARS:  # most enums are strings: skip the walk for them
                check_json_value(v, "enum", None if where is None else f"{where}/{i}")
    elif kw == "const":
        check_json_value(value, "const", where)
    elif kw in ("pattern", "format", "$ref", "$dynamicRef", "$anchor", "$dynamicAnchor"):
        if not isinstance(value, str):
            raise SchemaError(where, f"{kw} must be a string, got {_describe(value)}")
        if kw == "pattern":
            check_regex(value, where)
    elif kw == "patternProperties" and isinstance(value, dict):
        for regex in value:
            check_regex(regex, f"{where}/{escape_pointer(regex)}")
    elif kw == "uniqueItems":
        if not isinstance(value, bool):
            raise SchemaError(where, f"uniqueItems must be a boolean, got {_describe(value)}")
    elif kw == "dependentRequired":
        if not isinstance(value, dict) or not all(isinstance(v, list) and all(isinstance(n, str) for n in v)
                                                  for v in value.values()):
            raise SchemaError(where, f"dependentRequired must map names to arrays of names, got "
                              f"{_describe(value)}")


def check_json_value(value: Any, kw: str, where: str | None) -> None:
    """Raise :class:`SchemaError` unless ``value`` (an ``enum`` / ``const`` value) is a JSON value: no NaN or
    infinity (Python's ``json`` parses them, the grammar would spell them), no non-string key, no other Python type.
    Iterative (the document's depth is bounded by then, but the walk needs no frames)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                raise SchemaError(where, f"'{kw}' holds an object with a non-string key")
            stack += v.values()
        elif isinstance(v, list):
            stack += v
        elif isinstance(v, float) and not math.isfinite(v):
            raise SchemaError(where, f"'{kw}' holds {_describe(v)}, which is not a JSON value")
        elif v is not None and not isinstance(v, (str, int, float)):
            raise SchemaError(where, f"'{kw}' holds a {type(v).__name__}, which is not a JSON value")


@functools.lru_cache(maxsize=4096)  # a pure function of the text; the document check and the converter both ask
def regex_problem(pattern: str) -> str | None:
    """Why the regex front end rejects ``pattern`` (ECMAScript syntax, JSON Schema ``pattern``), or None."""
    return regex_syntax_error(pattern)


def check_regex(pattern: str, where: str) -> None:
    """Raise :class:`SchemaError` for a regex that is invalid (not merely using an unsupported feature)."""
    problem = regex_problem(pattern)
    if problem is not None and "not supported" not in problem:
        raise SchemaError(where, f"invalid regex {json.dumps(pattern)}: {problem}")
