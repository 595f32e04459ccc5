"""``enum`` / ``const``: the listed values that satisfy their siblings (checked by a small validator), each
spelled as a grammar with the configured whitespace."""

from __future__ import annotations

import math

from xg2jax.json_schema._common import (
    ABSENT,
    ANNOTATIONS,
    CONTAINS_ALL,
    FRACTION_ONLY,
    NOT_MULTIPLE_OF,
    NOT_PATTERNS,
    NOT_STRINGS,
    SOME_MEMBER,
    SchemaError,
    Unsatisfiable,
    UnsupportedSchemaError,
    json_equal,
    json_key,
    json_type,
    strip_annotations,
)
from xg2jax.json_schema._ebnf import choice, json_literal, literal, seq
from xg2jax.json_schema._automata import matches, regex_dfa
from xg2jax.json_schema._formats import FORMATS, format_search_pattern


class ValuesMixin:
    # ----------------------------------------------------------------------------------------------------------
    # enum / const
    def _visit_values(self, schema: dict, ptr: str) -> str:
        if "const" in schema:
            values = [schema["const"]]
        else:
            values = schema["enum"]
            if not isinstance(values, list):
                raise SchemaError(f"{ptr}/enum", "'enum' must be an array")
        rest = {k: v for k, v in schema.items() if k not in ("enum", "const")}
        if "const" in schema and "enum" in schema:
            values = [v for v in values if json_key(v) in self._key_set(schema["enum"])]
        kept = self._valid_values(values, rest, ptr)
        if not kept:
            kw = "const" if "const" in schema else "enum"
            raise Unsatisfiable(f"{ptr}/{kw}", f"no value of '{kw}' satisfies the sibling keywords")
        return choice([self._value_expr(v) for v in kept])

    def _valid_values(self, values: list, schema: dict, ptr: str) -> list:
        """The ``values`` that satisfy ``schema``. A bare ``type`` (the usual sibling of a long ``enum``) is one
        test per value; other siblings take the validator."""
        schema = strip_annotations(schema)
        if not schema:
            return list(values)
        if schema.keys() == {"type"} and isinstance(schema["type"], (str, list)):
            allowed = {schema["type"]} if isinstance(schema["type"], str) else set(schema["type"])
            if "number" in allowed:
                allowed.add("integer")
            return [v for v in values if json_type(v) in allowed]
        return [v for v in values if self._validate(v, schema, ptr)]

    def _key_set(self, values: list) -> frozenset:
        """``json_key`` of each of ``values`` (an ``enum`` list or a list of excluded strings), memoised by list:
        validating every value of one long ``enum`` against a sibling one would otherwise scan it per value."""
        memo = self.__dict__.setdefault("_key_sets", {})
        hit = memo.get(id(values))
        if hit is None or hit[0] is not values:  # the list is kept in the entry, so its id stays its own
            hit = memo[id(values)] = (values, frozenset(json_key(v) for v in values))
        return hit[1]

    def _value_expr(self, value) -> str:
        """A grammar for exactly ``value`` (objects and arrays with the configured whitespace)."""
        if isinstance(value, str):  # first: the usual enum value
            return json_literal(value)
        if isinstance(value, dict):
            if not value:
                return seq(literal("{"), self.ws, literal("}"))
            items = [seq(json_literal(str(k)), self.key_sep, self._value_expr(v)) for k, v in value.items()]
            if self.any_order and len(items) > 1:
                return self._any_order_object([([(0, i)], True) for i in items], [])
            body = f" {self.item_sep} ".join(items)
            return seq(literal("{"), self.ws, body, self.ws, literal("}"))
        if isinstance(value, list):
            if not value:
                return seq(literal("["), self.ws, literal("]"))
            body = f" {self.item_sep} ".join(self._value_expr(v) for v in value)
            return seq(literal("["), self.ws, body, self.ws, literal("]"))
        if isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer():
            # 1, 1.0 and 1.00 are the same JSON Schema value; plain_integers spells it "1" only.
            return json_literal(int(value)) if self.plain_integers else seq(json_literal(int(value)), '( "." "0"+ )?')
        return json_literal(value)

    def _validate(self, value, schema, ptr: str) -> bool:
        """Does ``value`` satisfy ``schema``? For the keywords this converter supports (used to intersect enum and
        const with their siblings exactly)."""
        if schema is True or schema == {}:
            return True
        if schema is False:
            return False
        if not isinstance(schema, dict):
            raise SchemaError(ptr, f"a schema must be an object or a boolean, got {type(schema).__name__}")
        if "$ref" in schema:
            _, target = self._resolve(schema["$ref"], ptr)
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            return self._validate(value, target, ptr) and (self._draft < 2019 or self._validate(value, rest, ptr))
        schema = strip_annotations(schema)
        unchecked = set(schema) - _VALIDATED - ANNOTATIONS
        if unchecked:
            kw = sorted(unchecked)[0]
            raise UnsupportedSchemaError(f"{ptr}/{kw}", f"'{kw}' next to 'enum' / 'const' is not supported yet")
        if not self._validate_more(value, schema, ptr):
            return False
        t = json_type(value)
        if "type" in schema:
            allowed = {schema["type"]} if isinstance(schema["type"], str) else set(schema["type"])
            if t not in allowed and not (t == "integer" and "number" in allowed):
                return False
        if "const" in schema and not json_equal(value, schema["const"]):
            return False
        if "enum" in schema and json_key(value) not in self._key_set(schema["enum"]):
            return False
        for sub in schema.get("allOf", []):
            if not self._validate(value, sub, ptr):
                return False
        if "anyOf" in schema and not any(self._validate(value, s, ptr) for s in schema["anyOf"]):
            return False
        if "oneOf" in schema and sum(self._validate(value, s, ptr) for s in schema["oneOf"]) != 1:
            return False
        if t in ("integer", "number"):
            lo, lo_strict, hi, hi_strict = self._bounds(schema, ptr)
            if lo is not None and (value <= lo if lo_strict else value < lo):
                return False
            if hi is not None and (value >= hi if hi_strict else value > hi):
                return False
            k = schema.get("multipleOf")
            if k is not None and not float(value / k).is_integer():
                return False
            if schema.get(FRACTION_ONLY) and float(value).is_integer():
                return False
            if float(value).is_integer() and any(int(value) % e == 0 for e in schema.get(NOT_MULTIPLE_OF, [])):
                return False
        if t == "string":
            if NOT_STRINGS in schema and json_key(value) in self._key_set(schema[NOT_STRINGS]):
                return False
            if any(matches(self._regex_dfa(p, f"{ptr}/not/pattern"), value) for p in schema.get(NOT_PATTERNS, [])):
                return False
            n = len(value)
            if n < schema.get("minLength", 0) or n > schema.get("maxLength", math.inf):
                return False
        if t == "array":
            if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", math.inf):
                return False
            prefix = schema.get("prefixItems", []) if self._draft >= 2020 else (
                schema["items"] if isinstance(schema.get("items"), list) else [])
            if self._draft >= 2020 or not isinstance(schema.get("items"), list):
                rest_schema = schema.get("items", True)
            else:
                rest_schema = schema.get("additionalItems", True)
            for i, v in enumerate(value):
                if not self._validate(v, prefix[i] if i < len(prefix) else rest_schema, ptr):
                    return False
            if "contains" in schema and not any(self._validate(v, schema["contains"], ptr) for v in value):
                return False
        if t == "object":
            props = schema.get("properties", {})
            if any(k not in value for k in schema.get("required", [])):
                return False
            if any(k in value for k in schema.get(ABSENT, [])):
                return False
            for p, sub in schema.get(SOME_MEMBER, []):
                d = self._regex_dfa(p, f"{ptr}/not/patternProperties")
                if not any(matches(d, k) and self._validate(v, sub, ptr) for k, v in value.items()):
                    return False
            patterns = self._pattern_dfas(schema, ptr) if "patternProperties" in schema else []
            for k, v in value.items():
                if "propertyNames" in schema and not self._validate(k, schema["propertyNames"], ptr):
                    return False
                matched = [sub for _, sub, d in patterns if matches(d, k)]
                if any(not self._validate(v, sub, ptr) for sub in matched):
                    return False
                if k not in props and matched:
                    continue
                if not self._validate(v, props[k] if k in props else schema.get("additionalProperties", True), ptr):
                    return False
        return True

    def _validate_more(self, value, schema: dict, ptr: str) -> bool:
        """The keywords of ``_validate`` that need more than a glance: not, if/then/else, pattern, counts."""
        t = json_type(value)
        if "not" in schema and self._validate(value, schema["not"], ptr):
            return False
        if "if" in schema:
            branch = "then" if self._validate(value, schema["if"], ptr) else "else"
            if not self._validate(value, schema.get(branch, True), ptr):
                return False
        if t == "string" and "pattern" in schema:
            if not matches(self._regex_dfa(schema["pattern"], f"{ptr}/pattern"), value):
                return False
        fmt = schema.get("format")
        if t == "string" and self.enforce_formats and isinstance(fmt, str) and fmt in FORMATS:
            if not matches(regex_dfa(format_search_pattern(fmt)), value):  # (a format asserts nothing else)
                return False
        if t == "object":
            if not schema.get("minProperties", 0) <= len(value) <= schema.get("maxProperties", math.inf):
                return False
            deps = dict(schema.get("dependentRequired", {}))
            schemas = dict(schema.get("dependentSchemas", {}))
            for k, v in schema.get("dependencies", {}).items():
                (deps if isinstance(v, list) else schemas)[k] = v
            if any(k in value and any(d not in value for d in ds) for k, ds in deps.items()):
                return False
            if any(k in value and not self._validate(value, s, ptr) for k, s in schemas.items()):
                return False
        if t == "array":
            if schema.get("uniqueItems") is True and any(json_equal(a, b) for i, a in enumerate(value)
                                                         for b in value[i + 1:]):
                return False
            for wanted in schema.get(CONTAINS_ALL, []):
                if not any(self._validate(v, wanted, ptr) for v in value):
                    return False
            if "contains" in schema and self._draft >= 2019:
                n = sum(self._validate(v, schema["contains"], ptr) for v in value)
                if not schema.get("minContains", 1) <= n <= schema.get("maxContains", math.inf):
                    return False
        return True


# Keywords ``_validate`` checks (others next to enum / const raise).
_VALIDATED = {"type", "const", "enum", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "minimum", "maximum",
              "exclusiveMinimum", "exclusiveMaximum", "multipleOf", FRACTION_ONLY, "minLength", "maxLength", "pattern",
              NOT_STRINGS, NOT_MULTIPLE_OF, NOT_PATTERNS, SOME_MEMBER, "minItems", "maxItems", "prefixItems", "items", "additionalItems", "contains",
              "minContains", "maxContains", "uniqueItems", CONTAINS_ALL, "required", ABSENT, "properties",
              "additionalProperties",
              "patternProperties", "propertyNames", "minProperties", "maxProperties", "dependentRequired",
              "dependentSchemas", "dependencies"}
