"""Shared pieces of the JSON Schema front end: keyword sets, errors, JSON value helpers."""

from __future__ import annotations

from typing import Any

ANNOTATIONS = {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly",
               "$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$defs", "definitions", "$vocabulary",
               "contentMediaType",
               "contentEncoding", "contentSchema", "format"}
# Keywords that never constrain an instance: a schema made only of these accepts any value.
NO_CONSTRAINT = frozenset({"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
                           "writeOnly"})
TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")
OBJECT_KEYWORDS = {"properties", "required", "additionalProperties", "dependentRequired", "minProperties",
                   "maxProperties", "patternProperties", "propertyNames"}
ARRAY_KEYWORDS = {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "contains", "minContains",
                  "maxContains", "uniqueItems"}
STRING_KEYWORDS = {"minLength", "maxLength", "pattern"}
NUMBER_KEYWORDS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
# Internal keyword: a number with a non-zero fractional part (the complement of integer among numbers), spelled
# without an exponent (the documented approximation for bounded and non-integral numbers).
FRACTION_ONLY = "x-xg2jax-non-integral"
# Internal keyword: names an object must not have (the complement of "required").
ABSENT = "x-xg2jax-absent"
# Internal keyword: schemas each matched by at least one item (two or more "contains" merged by allOf).
CONTAINS_ALL = "x-xg2jax-contains-all"
# Internal keyword: strings other than the listed ones (the complement of const / enum among strings).
NOT_STRINGS = "x-xg2jax-not-strings"
# Internal keyword: numbers that are no multiple of any of the listed integers (the complement of an integer
# multipleOf among numbers; non-numbers pass).
NOT_MULTIPLE_OF = "x-xg2jax-not-multiple-of"
# Internal keyword: [[pattern, schema], ...]: for each pair, some member whose key matches the pattern (a regex or an
# other-keys pattern, see _automata.other_keys_pattern) has a value valid under the schema (the complement of
# patternProperties / additionalProperties; non-objects pass).
SOME_MEMBER = "x-xg2jax-some-member"
# Internal keyword: strings in which none of the listed patterns finds a match (the complement of pattern).
NOT_PATTERNS = "x-xg2jax-not-patterns"
APPLICATOR_KEYWORDS = {"$ref", "$dynamicRef", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependencies",
                       "dependentSchemas", "unevaluatedProperties", "unevaluatedItems"}
SUPPORTED = ({"type", "enum", "const", FRACTION_ONLY, ABSENT, NOT_STRINGS, NOT_MULTIPLE_OF, NOT_PATTERNS, SOME_MEMBER, CONTAINS_ALL} | APPLICATOR_KEYWORDS
             | ANNOTATIONS | OBJECT_KEYWORDS
             | ARRAY_KEYWORDS | STRING_KEYWORDS | NUMBER_KEYWORDS)
# Validation keywords of the supported drafts that this version cannot enforce yet: an error naming them. Any other
# unknown keyword is an annotation (the spec says to ignore it; real schemas carry many: "x-...", "example", ...).
KNOWN_UNSUPPORTED = {"$recursiveRef",
                     "$recursiveAnchor"}
# Keywords no context-free grammar can enforce: an error in strict mode, ignored (documented) otherwise.
NOT_CONTEXT_FREE = {"uniqueItems": "requiring distinct array items is not context-free"}


def follow_pointer(node: Any, fragment: str) -> tuple[bool, Any]:
    """(found, node) for a JSON pointer fragment (``/a/0/b``, already percent-decoded) walked from ``node``."""
    for token in fragment.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False, None
    return True, node


class SchemaError(ValueError, RuntimeError):
    """The schema itself is invalid (wrong keyword types, dangling $ref, unsatisfiable combinations). Both a
    ``ValueError`` and a ``RuntimeError``, as xgrammar raises ``RuntimeError`` here."""

    def __init__(self, pointer: str, message: str):
        super().__init__(f"JSON Schema at '{pointer or '/'}': {message}")
        self.pointer = pointer


class UnsupportedSchemaError(SchemaError):
    """A keyword (or combination) this version cannot enforce exactly."""


class UnsatisfiableSchemaError(SchemaError):
    """No JSON value satisfies the schema; the pointer names the first contradiction found (``minItems`` above
    ``maxItems``, schema ``false``, an ``enum`` none of whose values passes its siblings, ...)."""


class BudgetExceeded(Exception):
    """The conversion ran out of its work budget (internal, and not a :class:`SchemaError`, so that no fallback that
    catches schema errors swallows it and goes on working; ``convert`` turns it into :class:`UnsupportedSchemaError`)."""

    def __init__(self, pointer: str, message: str):
        super().__init__(pointer, message)
        self.pointer = pointer
        self.message = message


class Unsatisfiable(Exception):
    """No JSON value satisfies the (sub)schema (internal: an ``anyOf`` drops such a branch, an optional property
    such a member; at the root it becomes :class:`UnsatisfiableSchemaError`)."""

    def __init__(self, pointer: str = "", reason: str = ""):
        super().__init__(pointer, reason)
        self.pointer = pointer
        self.reason = reason


def escape_pointer(token: str) -> str:
    if "~" not in token and "/" not in token:  # nearly every property name: no copies
        return token
    return token.replace("~", "~0").replace("/", "~1")


def json_type(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    raise TypeError(f"not a JSON value: {value!r}")


def json_equal(a, b) -> bool:
    """Equality as JSON Schema defines it (1 == 1.0, True != 1)."""
    ta, tb = json_type(a), json_type(b)
    if {ta, tb} <= {"integer", "number"}:
        return a == b
    if ta != tb:
        return False
    if ta == "array":
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if ta == "object":
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return a == b


def json_key(value):
    """A hashable key with ``json_key(a) == json_key(b)`` exactly when ``json_equal(a, b)``: membership tests over
    long ``enum`` lists take a set instead of a scan per value."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", value)  # Python already equates (and hashes alike) 1 and 1.0
    if isinstance(value, list):
        return ("a", tuple(json_key(v) for v in value))
    if isinstance(value, dict):
        return ("o", frozenset((k, json_key(v)) for k, v in value.items()))
    return ("s" if isinstance(value, str) else "z", value)


# Every keyword the converter looks at (the rest are annotations by the spec).
_RECOGNISED = frozenset(SUPPORTED | KNOWN_UNSUPPORTED.union(NOT_CONTEXT_FREE))


def strip_annotations(schema: dict) -> dict:
    """``schema`` without unknown keywords (annotations by the spec), so merges and complements see only what
    constrains instances."""
    if schema.keys() <= _RECOGNISED:
        return schema
    return {k: v for k, v in schema.items() if k in _RECOGNISED}
