"""Complements of schemas (for ``not``, the ``else`` side of ``if``, exactly-one ``oneOf``, ``contains`` counts).

Algorithm. ``_negate(S)`` returns schemas whose union is the set of JSON values S rejects. A schema object is the
conjunction of its keywords, so its complement is the union of the complements of its independent keyword groups
(``not (A and B) = not A or not B``); keywords that only make sense together (``if/then/else``,
``contains/minContains/maxContains``, ``prefixItems/items``) form one group. Most keywords constrain one type and
accept every value of the others, so their complement holds values of that type only:

- ``type``: the other types (``integer`` splits ``number`` into integers and non-integral numbers);
- a bound (``minimum``, ``maxLength``, ``minItems``, ...): the same type with the opposite bound;
- ``required``: objects lacking one of the names; ``dependentRequired`` likewise given the trigger;
- ``properties``: objects having one of the names with a value in the complement of its schema;
- ``required`` next to a ``properties`` schema for the same name: one alternative, "absent or invalid";
- ``patternProperties`` / ``additionalProperties``: objects with some member whose key matches the pattern (or is
  no declared name and matches no pattern) and whose value is in the complement (``SOME_MEMBER``);
- ``multipleOf`` (an integer): numbers with a fraction, or integers with a remainder (``NOT_MULTIPLE_OF``);
- ``pattern``: strings in which it finds no match (``NOT_PATTERNS``);
- ``const`` / ``enum`` over scalars: the other types, the other booleans, integer ranges between the listed
  integers plus the non-integral numbers, strings other than the listed ones; over objects and arrays: another
  type, another key / length, or a member / item that differs;
- ``items`` (no ``prefixItems``): arrays containing an item in its complement; ``prefixItems`` (without ``items``):
  arrays long enough whose i-th item is in the complement of the i-th schema; ``contains`` (no counts): arrays whose
  items all fail it;
- ``allOf``: union of the complements; ``anyOf``: the intersection of the complements (an ``allOf``); ``oneOf``:
  that intersection or any two branches together; ``not S``: S;
  ``if/then/else``: ``if + not then`` or ``not if + not else``.

Anything else raises ``UnsupportedSchemaError`` naming the keyword.
"""

from __future__ import annotations

import math

from xg2jax.json_schema._common import (
    ABSENT,
    ANNOTATIONS,
    FRACTION_ONLY,
    NOT_MULTIPLE_OF,
    NOT_PATTERNS,
    NOT_STRINGS,
    SOME_MEMBER,
    TYPES,
    SchemaError,
    UnsupportedSchemaError,
    json_type,
    strip_annotations,
)
from xg2jax.json_schema._formats import FORMATS
from xg2jax.json_schema._automata import other_keys_pattern

# keyword -> (type it applies to, the keyword of the complementary bound, how the value changes)
_BOUNDS = {
    "minimum": ("number", "exclusiveMaximum", lambda v: v),
    "exclusiveMinimum": ("number", "maximum", lambda v: v),
    "maximum": ("number", "exclusiveMinimum", lambda v: v),
    "exclusiveMaximum": ("number", "minimum", lambda v: v),
    "minLength": ("string", "maxLength", lambda v: v - 1),
    "maxLength": ("string", "minLength", lambda v: v + 1),
    "minItems": ("array", "maxItems", lambda v: v - 1),
    "maxItems": ("array", "minItems", lambda v: v + 1),
    "minProperties": ("object", "maxProperties", lambda v: v - 1),
    "maxProperties": ("object", "minProperties", lambda v: v + 1),
}
_SCHEMA_MAPS = {"patternProperties", "dependentSchemas", "properties"}
_SCHEMA_VALUED = {"additionalProperties", "propertyNames", "unevaluatedProperties", "unevaluatedItems",
                  "additionalItems"}
_GROUPS = [("if", "then", "else"), ("contains", "minContains", "maxContains"), ("prefixItems", "items")]


class ComplementsMixin:
    def _negate(self, inner, ptr: str) -> list:
        """Schemas whose union is the complement of ``inner`` (see the module docstring)."""
        inner = self._deref(inner, ptr)
        if inner is True or inner == {}:
            return []
        if inner is False:
            return [True]
        if not isinstance(inner, dict):
            raise SchemaError(ptr, f"a schema must be an object or a boolean, got {type(inner).__name__}")
        inner = strip_annotations(inner)
        if self.enforce_formats and isinstance(inner.get("format"), str) and inner["format"] in FORMATS:
            raise UnsupportedSchemaError(f"{ptr}/format", "the complement of 'format' is not supported")
        if "format" in inner:  # an annotation here (unknown format, or formats not enforced)
            inner = {k: v for k, v in inner.items() if k != "format"}
        keys = set(inner) - ANNOTATIONS
        if "$ref" in keys and self._draft < 2019:
            keys = {"$ref"}
        if self._draft < 2019:
            keys -= {"minContains", "maxContains", "dependentRequired", "dependentSchemas", "unevaluatedItems",
                     "unevaluatedProperties", "prefixItems"}
        if self._draft < 2020 and isinstance(inner.get("items"), list):
            raise UnsupportedSchemaError(f"{ptr}/items", "the complement of array-form 'items' is not supported")
        if "dependencies" in keys or "dependentSchemas" in keys:
            rewritten = self._rewrite_dependencies(inner, ptr)
            if rewritten is not inner:
                return self._negate(rewritten, ptr)
        out: list = []
        done: set = set()
        for group in _GROUPS:
            present = {k: inner[k] for k in group if k in keys}
            done |= set(group)
            if present:
                out += self._negate_group(present, ptr)
        for kw in sorted(keys - done):
            out += self._negate_keyword(kw, inner[kw], inner, ptr)
        return out

    def _negate_group(self, present: dict, ptr: str) -> list:
        if "if" in present or "then" in present or "else" in present:
            if "if" not in present:
                return []  # then / else without if are ignored
            cond = present["if"]
            out = []
            if present.get("then", True) is not True:
                out.append({"allOf": [cond, {"not": present["then"]}]})
            if present.get("else", True) is not True:
                out.append({"allOf": [{"not": cond}, {"not": present["else"]}]})
            return out
        if "contains" in present or "minContains" in present or "maxContains" in present:
            if "contains" not in present:
                return []
            if set(present) != {"contains"}:
                raise UnsupportedSchemaError(f"{ptr}/minContains", "the complement of 'contains' with counts is not "
                                             "supported")
            return [{"type": "array", "items": {"not": present["contains"]}}]
        if "prefixItems" in present and present.get("items", True) not in (True, {}):
            raise UnsupportedSchemaError(f"{ptr}/items", "the complement of 'prefixItems' with 'items' is not "
                                         "supported")
        if "prefixItems" in present:
            prefix = present["prefixItems"]
            if not isinstance(prefix, list):
                raise SchemaError(f"{ptr}/prefixItems", "'prefixItems' must be an array of schemas")
            return [{"type": "array", "minItems": i + 1, "prefixItems": [True] * i + [{"not": p}]}
                    for i, p in enumerate(prefix) if p is not True and p != {}]
        items = present.get("items", True)
        if items is True or items == {}:
            return []
        return [{"type": "array", "contains": {"not": items}}]

    def _negate_keyword(self, kw: str, value, inner: dict, ptr: str) -> list:
        where = f"{ptr}/{kw}"
        if kw == "type":
            banned = {value} if isinstance(value, str) else set(value) if isinstance(value, list) else None
            if banned is None or not banned <= set(TYPES):
                raise SchemaError(where, f"'type' must be one of {list(TYPES)} or an array of them")
            out = []
            if "integer" in banned and "number" not in banned:
                out.append({"type": "number", FRACTION_ONLY: True})  # numbers that are not integers
            if "number" in banned:
                banned.add("integer")
            kept = [x for x in TYPES if x not in banned and not (x == "number" and "integer" in banned)]
            return ([{"type": kept}] if kept else []) + out
        if kw == "required":
            if not isinstance(value, list):
                raise SchemaError(where, "'required' must be an array of strings")
            # A required name with a property schema: "absent or invalid" is one alternative (under 'properties').
            props = inner.get("properties", {}) if "properties" in inner else {}
            return [{"type": "object", ABSENT: [n]} for n in dict.fromkeys(value)
                    if not (isinstance(props, dict) and n in props and props[n] is not True and props[n] != {})]
        if kw == ABSENT:
            return [{"type": "object", "required": [n]} for n in value]
        if kw == "dependentRequired":
            if not isinstance(value, dict):
                raise SchemaError(where, "'dependentRequired' must map names to arrays of names")
            return [{"type": "object", "required": [a], ABSENT: [b]} for a, bs in value.items() for b in bs]
        if kw in _BOUNDS:
            applies, other, change = _BOUNDS[kw]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                if self._draft <= 4 and kw.startswith("exclusive"):
                    raise UnsupportedSchemaError(where, "the complement of a draft-04 exclusive bound is not "
                                                 "supported")
                raise SchemaError(where, f"'{kw}' must be a number")
            if self._draft <= 4 and kw in ("minimum", "maximum") and ("exclusive" + kw[:1].upper() + kw[1:]) in inner:
                raise UnsupportedSchemaError(where, "the complement of a draft-04 exclusive bound is not supported")
            new = change(value)
            if applies != "number" and new < 0:
                return []
            return [{"type": applies, other: new}]
        if kw == "properties":
            if not isinstance(value, dict):
                raise SchemaError(where, "'properties' must be an object")
            required = inner.get("required", []) if "required" in inner else []
            required = required if isinstance(required, list) else []
            return [{"type": "object", "properties": {n: {"not": s}}} if n in required else
                    {"type": "object", "required": [n], "properties": {n: {"not": s}}}
                    for n, s in value.items() if s is not True and s != {}]
        if kw in ("const", "enum"):
            values = [value] if kw == "const" else value
            if not isinstance(values, list):
                raise SchemaError(where, "'enum' must be an array")
            return self._negate_values(values, where)
        if kw == "allOf":
            out = []
            for i, s in enumerate(self._schema_list(inner, "allOf", ptr)):
                out += self._negate(s, f"{ptr}/allOf/{i}")
            return out
        if kw == "anyOf":
            parts = []
            for i, s in enumerate(self._schema_list(inner, "anyOf", ptr)):
                neg = self._negate(s, f"{ptr}/anyOf/{i}")
                if not neg:
                    return []
                parts.append({"anyOf": neg})
            return [{"allOf": parts}]
        if kw == "oneOf":  # not exactly one: none, or some two
            branches = self._schema_list(inner, "oneOf", ptr)
            out = [{"allOf": [bi, bj]} for i, bi in enumerate(branches) for bj in branches[i + 1:]]
            parts = []
            for i, s in enumerate(branches):
                neg = self._negate(s, f"{ptr}/oneOf/{i}")
                if not neg:
                    return out
                parts.append({"anyOf": neg})
            return [{"allOf": parts}] + out
        if kw == "not":
            return [value]
        if kw == "$ref":
            target, node = self._resolve(value, ptr)
            active = self.__dict__.setdefault("_negating", set())
            if target in active:
                raise UnsupportedSchemaError(where, "the complement of a recursive $ref is not supported")
            active.add(target)
            try:
                return self._negate(node, target)
            finally:
                active.discard(target)
        if kw == "multipleOf":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise SchemaError(where, "'multipleOf' must be a number > 0")
            if not float(value).is_integer():
                raise UnsupportedSchemaError(where, "the complement of a non-integer 'multipleOf' is not supported")
            # Numbers with a fraction (never a multiple of an integer), integers with a remainder.
            return [{"type": "number", FRACTION_ONLY: True}, {"type": "integer", NOT_MULTIPLE_OF: [int(value)]}]
        if kw == "patternProperties" and isinstance(value, dict):
            # Some key matching the pattern has a value outside its schema.
            return [{"type": "object", SOME_MEMBER: [[p, {"not": s}]]} for p, s in value.items()
                    if s is not True and s != {}]
        if kw == "additionalProperties" and value is not True and value != {}:
            # Some key that is no declared name and matches no pattern has a value outside the schema.
            props, pats = inner.get("properties", {}), inner.get("patternProperties", {})
            if not isinstance(props, dict) or not isinstance(pats, dict):
                raise SchemaError(where, "'properties' and 'patternProperties' must be objects")
            return [{"type": "object", SOME_MEMBER: [[other_keys_pattern(list(props), list(pats)), {"not": value}]]}]
        if kw == SOME_MEMBER:
            return [{"type": "object", "patternProperties": {p: {"not": s}}} for p, s in value]
        if kw == "pattern":
            if not isinstance(value, str):
                raise SchemaError(where, "'pattern' must be a string")
            return [{"type": "string", NOT_PATTERNS: [value]}]
        if kw == NOT_PATTERNS:
            return [{"type": "string", "pattern": p} for p in value]
        if kw == NOT_MULTIPLE_OF:
            return [{"type": "integer", "multipleOf": k} for k in value]
        if kw in (FRACTION_ONLY,):
            return [{"type": [t for t in TYPES if t != "number"]}, {"type": "integer"}]
        if kw in ("minContains", "maxContains"):
            return []  # without contains they are ignored
        if kw in _SCHEMA_MAPS and isinstance(value, dict) and all(v is True or v == {} for v in value.values()):
            return []  # every subschema accepts everything: the keyword never fails
        if kw in _SCHEMA_VALUED and (value is True or value == {}):
            return []
        raise UnsupportedSchemaError(where, f"the complement of '{kw}' is not supported (in 'not', 'if', "
                                     "overlapping 'oneOf' branches or 'contains' counts)")

    def _negate_composite(self, value) -> list:
        """Every JSON value other than the object or array ``value``: another type; for an object, a key it lacks
        or a value that differs (under 'properties'), or another key; for an array, another length or an item
        that differs."""
        if isinstance(value, dict):
            out = [{"type": [t for t in TYPES if t not in ("object", "integer")]},
                   {"type": "object", SOME_MEMBER: [[other_keys_pattern(list(value), []), True]]}]
            out += [{"type": "object", "properties": {k: {"not": {"const": v}}}} for k, v in value.items()]
            if not value:
                out.append({"type": "object", "minProperties": 1})
            return out
        out = [{"type": [t for t in TYPES if t not in ("array", "integer")]},
               {"type": "array", "minItems": len(value) + 1}]
        if value:
            out.append({"type": "array", "maxItems": len(value) - 1})
        for i, v in enumerate(value):
            if self._draft >= 2020:
                out.append({"type": "array", "minItems": i + 1, "prefixItems": [True] * i + [{"not": {"const": v}}]})
            else:
                out.append({"type": "array", "minItems": i + 1, "items": [True] * i + [{"not": {"const": v}}]})
        return out

    def _negate_values(self, values: list, where: str) -> list:
        """Every JSON value not in ``values`` (scalars only)."""
        composite = [v for v in values if isinstance(v, (dict, list))]
        if composite:
            # Not any of the values: the intersection of "not this value" over the composite ones and the scalars.
            scalars = [v for v in values if not isinstance(v, (dict, list))]
            parts = [self._negate_composite(v) for v in composite]
            if scalars:
                parts.append(self._negate_values(scalars, where))
            return parts[0] if len(parts) == 1 else [{"allOf": [{"anyOf": p} for p in parts]}]
        by_type: dict[str, list] = {}
        for v in values:
            by_type.setdefault(json_type(v), []).append(v)
        numbers = by_type.get("integer", []) + by_type.get("number", [])
        out = [{"type": [t for t in ("object", "array", "string", "boolean", "null")
                         if t not in by_type or t in ("string", "boolean")] or []}]
        if "string" in by_type:
            out.append({"type": "string", NOT_STRINGS: list(dict.fromkeys(by_type["string"]))})
            out[0]["type"].remove("string")
        if "boolean" in by_type:
            out[0]["type"].remove("boolean")
            rest = [b for b in (True, False) if b not in by_type["boolean"]]
            if rest:
                out.append({"const": rest[0]})
        if not out[0]["type"]:
            out.pop(0)
        if not numbers:
            out.append({"type": "number"})
            return out
        if any(not float(v).is_integer() for v in numbers):
            raise UnsupportedSchemaError(where, "the complement of a non-integral number constant is not supported")
        points = sorted({int(v) for v in numbers})
        out.append({"type": "number", FRACTION_ONLY: True})
        lo = -math.inf
        for p in points:
            if p - 1 >= lo:
                piece = {"type": "integer", "maximum": p - 1}
                if lo != -math.inf:
                    piece["minimum"] = lo
                out.append(piece)
            lo = p + 1
        out.append({"type": "integer", "minimum": lo})
        return out
