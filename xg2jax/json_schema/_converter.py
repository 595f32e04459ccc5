"""JSON Schema -> EBNF: a recursive visitor that keeps the schema's semantics or says which keyword it cannot keep.

Algorithm. ``visit(schema, pointer)`` returns an EBNF expression for the set of JSON texts valid under ``schema``:

1. Boolean schemas: ``true`` is any JSON value, ``false`` matches nothing (an ``Unsatisfiable`` branch that a
   surrounding ``anyOf`` drops and the root reports).
2. Combinators are rewritten before types are looked at, using the identities of the spec:
   ``$ref`` with siblings = ``allOf [target, siblings]`` (draft 2019-09 and later; draft 7 and earlier ignore the
   siblings), ``allOf`` = one schema built by merging keywords (``_merge``), ``S + anyOf [A, B]`` =
   ``anyOf [S + A, S + B]`` and ``oneOf`` likewise when its branches are provably disjoint.
3. ``enum`` / ``const``: the listed values that satisfy the sibling keywords (checked by ``_validate``), each
   spelled as a grammar that allows the chosen whitespace.
4. Otherwise one alternative per allowed JSON type, each built from the keywords that apply to that type.

Keywords outside the supported set raise ``UnsupportedSchemaError`` naming the JSON pointer in strict mode; in
non-strict mode the keywords that no context-free grammar can enforce (``uniqueItems``) are ignored, which is the
documented approximation. ``$ref`` targets become named rules, so recursive schemas become recursive rules.
"""

from __future__ import annotations

import json
import math
import urllib.parse
from typing import Any

from xg2jax.json_schema._ebnf import BASE_RULES, RuleTable, choice, json_literal, literal, seq
from xg2jax.json_schema._formats import FORMATS
from xg2jax.json_schema._numbers import integer_range, multiple_of, number_range

ANNOTATIONS = {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly",
               "$schema", "$id", "id", "$anchor", "$defs", "definitions", "$vocabulary", "contentMediaType",
               "contentEncoding", "contentSchema", "format"}
TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")
OBJECT_KEYWORDS = {"properties", "required", "additionalProperties", "dependentRequired", "minProperties",
                   "maxProperties"}
ARRAY_KEYWORDS = {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "contains", "minContains",
                  "maxContains", "uniqueItems"}
STRING_KEYWORDS = {"minLength", "maxLength"}
NUMBER_KEYWORDS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
# Internal keyword: a number with a non-zero fractional part (the complement of integer among numbers), spelled
# without an exponent (the documented approximation for bounded and non-integral numbers).
FRACTION_ONLY = "x-xg2jax-non-integral"
# Internal keyword: names an object must not have (the complement of "required").
ABSENT = "x-xg2jax-absent"
SUPPORTED = {FRACTION_ONLY, ABSENT, "dependencies", "dependentSchemas", "not", "if", "then", "else", "unevaluatedProperties", "unevaluatedItems"} | ANNOTATIONS | OBJECT_KEYWORDS | ARRAY_KEYWORDS | STRING_KEYWORDS | NUMBER_KEYWORDS | {
    "type", "enum", "const", "$ref", "allOf", "anyOf", "oneOf"}
# Keywords no context-free grammar can enforce: an error in strict mode, ignored (documented) otherwise.
NOT_CONTEXT_FREE = {"uniqueItems": "requiring distinct array items is not context-free"}


class SchemaError(ValueError):
    """The schema itself is invalid (wrong keyword types, dangling $ref, unsatisfiable combinations)."""

    def __init__(self, pointer: str, message: str):
        super().__init__(f"JSON Schema at '{pointer or '/'}': {message}")
        self.pointer = pointer


class UnsupportedSchemaError(SchemaError):
    """A keyword (or combination) this version cannot enforce exactly."""


class Unsatisfiable(Exception):
    """No JSON value satisfies the (sub)schema."""


def _escape_pointer(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _json_type(value) -> str:
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


def _json_equal(a, b) -> bool:
    """Equality as JSON Schema defines it (1 == 1.0, True != 1)."""
    ta, tb = _json_type(a), _json_type(b)
    if {ta, tb} <= {"integer", "number"}:
        return a == b
    if ta != tb:
        return False
    if ta == "array":
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if ta == "object":
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return a == b


class SchemaConverter:
    def __init__(self, schema: Any, *, any_whitespace: bool = True, indent: int | None = None,
                 separators: tuple[str, str] | None = None, strict_mode: bool = True,
                 max_whitespace_cnt: int | None = None, any_order: bool = False, enforce_formats: bool = True):
        self.any_order = any_order
        self.enforce_formats = enforce_formats
        self.root = schema
        self.strict = strict_mode
        self.any_whitespace = any_whitespace
        self.rules = RuleTable()
        self._refs: dict[str, str] = {}  # resolved pointer -> rule name
        self._draft = self._detect_draft(schema)
        self._anchors: dict[str, str] = {}
        self._collect_anchors(schema, "")
        if any_whitespace:
            ws = '[ \\n\\t\\r]*' if max_whitespace_cnt is None else f'[ \\n\\t\\r]{{0,{int(max_whitespace_cnt)}}}'
            self.ws, item, key = "j_ws", ",", ":"
        else:
            if indent is not None:
                raise UnsupportedSchemaError("", "indent with any_whitespace=False is not supported yet")
            ws = '""'
            self.ws = ""
            item, key = separators if separators is not None else (", ", ": ")
        self.item_sep = seq(self.ws, literal(item), self.ws)
        self.key_sep = seq(self.ws, literal(key), self.ws)
        for name, body in BASE_RULES.items():
            self.rules.define(name, body)
        self.rules.define("j_ws", ws)

    # ----------------------------------------------------------------------------------------------------------
    def convert(self) -> str:
        try:
            root = self.visit(self.root, "")
        except Unsatisfiable:
            raise SchemaError("", "the schema accepts no JSON value") from None
        return self.rules.text(root)

    def visit(self, schema: Any, ptr: str) -> str:
        if schema is True:
            return "j_value"
        if schema is False:
            raise Unsatisfiable
        if not isinstance(schema, dict):
            raise SchemaError(ptr, f"a schema must be an object or a boolean, got {type(schema).__name__}")
        self._check_keywords(schema, ptr)
        schema = self._rewrite_not(schema, ptr)
        if schema is False:
            raise Unsatisfiable
        schema = self._rewrite_unevaluated(schema, ptr)
        if "$ref" in schema:
            return self._visit_ref(schema, ptr)
        if "allOf" in schema:
            branches = self._schema_list(schema, "allOf", ptr)
            rest = {k: v for k, v in schema.items() if k != "allOf"}
            merged = rest
            for i, b in enumerate(branches):
                merged = self._merge(merged, self._deref(b, f"{ptr}/allOf/{i}"), f"{ptr}/allOf/{i}")
            return self.visit(merged, ptr)
        for combinator in ("anyOf", "oneOf"):
            if combinator in schema:
                return self._visit_alternatives(schema, combinator, ptr)
        if "enum" in schema or "const" in schema:
            return self._visit_values(schema, ptr)
        return self._visit_types(schema, ptr)

    # ----------------------------------------------------------------------------------------------------------
    # Rewrites into keywords the visitor handles
    APPLICATORS = ("$ref", "$dynamicRef", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas")

    # keyword -> (type it applies to, the keyword of the complementary bound, how the value changes)
    _COMPLEMENTS = {
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

    def _negate(self, inner, ptr: str) -> list:
        """Schemas whose union is the complement of ``inner`` (for the shapes a grammar can complement here:
        booleans, type restrictions, one bound keyword)."""
        inner = self._deref(inner, ptr)
        if inner is True or inner == {}:
            return []
        if inner is False:
            return [True]
        if isinstance(inner, dict):
            keys = set(inner) - ANNOTATIONS
            if len(keys) > 1:  # not (A and B) = (not A) or (not B)
                out = []
                for k in sorted(keys):
                    out += self._negate({k: inner[k]}, ptr)
                return out
            if keys == {"type"}:
                t = inner["type"]
                banned = {t} if isinstance(t, str) else set(t)
                out = []
                if "integer" in banned and "number" not in banned:
                    out.append({"type": "number", FRACTION_ONLY: True})  # numbers that are not integers
                if "number" in banned:
                    banned.add("integer")
                kept = [x for x in TYPES if x not in banned and not (x == "number" and "integer" in banned)]
                return ([{"type": kept}] if kept else []) + out
            if keys == {"required"} and isinstance(inner["required"], list):
                names = inner["required"]
                if not names:
                    return []
                others = [x for x in TYPES if x != "object"]
                return [{"type": others}] + [{"type": "object", ABSENT: [n]} for n in names]
            if len(keys) == 1 and next(iter(keys)) in self._COMPLEMENTS:
                kw = next(iter(keys))
                applies, other, change = self._COMPLEMENTS[kw]
                if self._draft <= 4 and kw.startswith("exclusive"):
                    raise UnsupportedSchemaError(ptr, "the complement of a draft-04 exclusive bound is not supported")
                others = [x for x in TYPES if x != applies and not (applies == "number" and x == "integer")]
                value = change(inner[kw])
                out = [{"type": others}]
                if value >= 0 or applies == "number":
                    out.append({"type": applies, other: value})
                return out
        raise UnsupportedSchemaError(ptr, "'not' / 'if' is supported only for schemas that restrict the type or "
                                     "hold one bound keyword")

    def _rewrite_dependencies(self, schema: dict, ptr: str) -> dict:
        """Draft 7's ``dependencies`` -> ``dependentRequired`` (arrays) and ``dependentSchemas`` (schemas);
        ``dependentSchemas {p: S}`` -> ``if {required: [p]} then S`` for each p."""
        if "dependencies" in schema and self._draft < 2019:
            deps = schema["dependencies"]
            if not isinstance(deps, dict):
                raise SchemaError(f"{ptr}/dependencies", "'dependencies' must be an object")
            schema = {k: v for k, v in schema.items() if k != "dependencies"}
            arrays = {k: v for k, v in deps.items() if isinstance(v, list)}
            schemas = {k: v for k, v in deps.items() if not isinstance(v, list)}
            if arrays:
                schema["dependentRequired"] = {**schema.get("dependentRequired", {}), **arrays}
            if schemas:
                schema["dependentSchemas"] = {**schema.get("dependentSchemas", {}), **schemas}
        elif "dependencies" in schema:
            schema = {k: v for k, v in schema.items() if k != "dependencies"}  # not a keyword since 2019-09
        if "dependentSchemas" in schema:
            deps = schema["dependentSchemas"]
            if not isinstance(deps, dict):
                raise SchemaError(f"{ptr}/dependentSchemas", "'dependentSchemas' must be an object")
            rest = {k: v for k, v in schema.items() if k != "dependentSchemas"}
            rules = [{"if": {"required": [name]}, "then": sub} for name, sub in deps.items()]
            schema = {**rest, "allOf": list(rest.get("allOf", [])) + rules}
        return schema

    def _rewrite_not(self, schema: dict, ptr: str):
        """``not S`` -> ``anyOf`` of the complement of S; ``if/then/else`` -> ``anyOf [if + then, not-if + else]``."""
        schema = self._rewrite_dependencies(schema, ptr)
        if "not" in schema:
            rest = {k: v for k, v in schema.items() if k != "not"}
            branches = self._negate(schema["not"], f"{ptr}/not")
            if not branches:
                return False
            schema = {**rest, "allOf": list(rest.get("allOf", [])) + [{"anyOf": branches}]}
        if "if" in schema:
            rest = {k: v for k, v in schema.items() if k not in ("if", "then", "else")}
            cond = schema["if"]
            yes = {"allOf": [cond, schema.get("then", True)]}
            no = [{"allOf": [b, schema.get("else", True)]} for b in self._negate(cond, f"{ptr}/if")]
            schema = {**rest, "allOf": list(rest.get("allOf", [])) + [{"anyOf": [yes] + no}]}
        elif "then" in schema or "else" in schema:
            schema = {k: v for k, v in schema.items() if k not in ("then", "else")}  # ignored without "if"
        return schema

    def _rewrite_unevaluated(self, schema: dict, ptr: str):
        """Without applicators, unevaluatedProperties / unevaluatedItems mean additionalProperties / items."""
        if "unevaluatedProperties" not in schema and "unevaluatedItems" not in schema:
            return schema
        if any(k in schema for k in self.APPLICATORS):
            kw = "unevaluatedProperties" if "unevaluatedProperties" in schema else "unevaluatedItems"
            raise UnsupportedSchemaError(f"{ptr}/{kw}", f"'{kw}' next to applicators ($ref, allOf, anyOf, oneOf, "
                                         "not, if/then/else, dependentSchemas) is not supported yet")
        out = dict(schema)
        if "unevaluatedProperties" in out:
            value = out.pop("unevaluatedProperties")
            if "additionalProperties" not in out:
                out["additionalProperties"] = value  # otherwise every property is already evaluated
        if "unevaluatedItems" in out:
            value = out.pop("unevaluatedItems")
            if "contains" in out:
                raise UnsupportedSchemaError(f"{ptr}/unevaluatedItems", "'unevaluatedItems' next to 'contains' is "
                                             "not supported yet")
            if self._draft >= 2020 and "items" not in out:
                out["items"] = value
            elif self._draft < 2020 and isinstance(out.get("items"), list) and "additionalItems" not in out:
                out["additionalItems"] = value
            elif self._draft < 2020 and "items" not in out:
                out["items"] = value
        return out

    # ----------------------------------------------------------------------------------------------------------
    # Keyword checks
    def _check_keywords(self, schema: dict, ptr: str) -> None:
        for kw in schema:
            if kw in NOT_CONTEXT_FREE and schema[kw] not in (False, None):
                if self.strict:
                    raise UnsupportedSchemaError(f"{ptr}/{kw}", f"keyword '{kw}' cannot be enforced by a grammar "
                                                 f"({NOT_CONTEXT_FREE[kw]}); pass strict_mode=False to ignore it")
            elif kw not in SUPPORTED:
                raise UnsupportedSchemaError(f"{ptr}/{_escape_pointer(kw)}",
                                             f"keyword '{kw}' is not supported by this version of xg2jax")

    def _schema_list(self, schema: dict, kw: str, ptr: str) -> list:
        value = schema[kw]
        if not isinstance(value, list) or not value:
            raise SchemaError(f"{ptr}/{kw}", f"'{kw}' must be a non-empty array of schemas")
        return value

    def _int_keyword(self, schema: dict, kw: str, ptr: str) -> int | None:
        if kw not in schema:
            return None
        v = schema[kw]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or (isinstance(v, float) and not v.is_integer()):
            raise SchemaError(f"{ptr}/{kw}", f"'{kw}' must be a non-negative integer, got {json.dumps(v)}")
        return int(v)

    # ----------------------------------------------------------------------------------------------------------
    # $ref
    @staticmethod
    def _detect_draft(schema) -> int:
        if not isinstance(schema, dict) or "$schema" not in schema:
            return 2020
        uri = schema["$schema"]
        for draft, marker in ((4, "json-schema.org/draft-04/"), (6, "json-schema.org/draft-06/"),
                              (7, "json-schema.org/draft-07/"), (2019, "json-schema.org/draft/2019-09/"),
                              (2020, "json-schema.org/draft/2020-12/")):
            if isinstance(uri, str) and marker in uri:
                return draft
        raise UnsupportedSchemaError("/$schema", f"unknown dialect {json.dumps(uri)} (custom metaschemas and "
                                     "vocabularies are not supported; use draft-04/06/07, 2019-09 or 2020-12)")

    def _collect_anchors(self, node, ptr: str) -> None:
        if isinstance(node, dict):
            if ptr and isinstance(node.get("$id", node.get("id") if self._draft <= 4 else None), str):
                raise UnsupportedSchemaError(f"{ptr}/$id", "embedded resources ($id below the root) are not "
                                             "supported: $ref is resolved against the root document only")
            if isinstance(node.get("$anchor"), str):
                self._anchors[node["$anchor"]] = ptr
            for k, v in node.items():
                if k not in ("const", "enum", "default", "examples"):
                    self._collect_anchors(v, f"{ptr}/{_escape_pointer(k)}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                self._collect_anchors(v, f"{ptr}/{i}")

    def _resolve(self, ref: str, ptr: str) -> tuple[str, Any]:
        if not isinstance(ref, str):
            raise SchemaError(f"{ptr}/$ref", "'$ref' must be a string")
        if not ref.startswith("#"):
            raise UnsupportedSchemaError(f"{ptr}/$ref", f"remote $ref '{ref}' is not supported (only local refs)")
        fragment = urllib.parse.unquote(ref[1:])
        if fragment and not fragment.startswith("/"):
            if fragment not in self._anchors:
                raise SchemaError(f"{ptr}/$ref", f"$ref '{ref}': no $anchor named '{fragment}'")
            fragment = self._anchors[fragment]
        node = self.root
        for token in [t for t in fragment.split("/")[1:]]:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise SchemaError(f"{ptr}/$ref", f"$ref '{ref}' points to nothing")
        return fragment, node

    def _deref(self, schema, ptr: str):
        """``schema`` with a bare ``$ref`` replaced by its target (for merging)."""
        seen = set()
        while isinstance(schema, dict) and set(schema) - ANNOTATIONS == {"$ref"}:
            target, schema = self._resolve(schema["$ref"], ptr)
            if target in seen:
                raise SchemaError(ptr, "$ref cycle without any constraint")
            seen.add(target)
        return schema

    def _visit_ref(self, schema: dict, ptr: str) -> str:
        target, node = self._resolve(schema["$ref"], ptr)
        siblings = {k: v for k, v in schema.items() if k != "$ref" and k not in ANNOTATIONS}
        if siblings and self._draft >= 2019:
            return self.visit({"allOf": [{"$ref": schema["$ref"]}, siblings]}, ptr)
        if target not in self._refs:
            name = self.rules.reserve("def" + (target.replace("/", "_") or "_root"))
            self._refs[target] = name
            try:
                body = self.visit(node, target)
            except Unsatisfiable:
                del self._refs[target]
                self.rules.rules.pop(name)
                raise
            self.rules.define(name, body)
        return self._refs[target]

    # ----------------------------------------------------------------------------------------------------------
    # allOf: merge keyword by keyword
    def _merge(self, a: Any, b: Any, ptr: str) -> Any:
        if a is False or b is False:
            return False
        if a is True or a == {}:
            return b
        if b is True or b == {}:
            return a
        if not isinstance(a, dict) or not isinstance(b, dict):
            raise SchemaError(ptr, "allOf entries must be schemas")
        # Keywords whose meaning depends on their own schema object are rewritten before the objects are merged.
        for side in (a, b):
            self._check_keywords(side, ptr)
        a, b = self._rewrite_not(a, ptr), self._rewrite_not(b, ptr)
        if a is False or b is False:
            return False
        a, b = self._rewrite_unevaluated(a, ptr), self._rewrite_unevaluated(b, ptr)
        if "$ref" in b:
            b = self._deref(b, ptr) if set(b) - ANNOTATIONS == {"$ref"} else b
            if isinstance(b, dict) and "$ref" in b:
                raise UnsupportedSchemaError(ptr, "allOf with a $ref that has sibling keywords is not supported yet")
            if not isinstance(b, dict):
                return self._merge(a, b, ptr)
        out = dict(a)
        # Positional items on one side only are still checked by the other side's items (2020-12).
        if self._draft >= 2020:
            for x, y in ((a, b), (b, a)):
                if "prefixItems" in x and "prefixItems" not in y and y.get("items", True) is not True:
                    out["prefixItems"] = [{"allOf": [p, y["items"]]} for p in x["prefixItems"]]
                    if x is b:
                        b = {k: v for k, v in b.items() if k != "prefixItems"}
        if "properties" in a and "properties" not in b and b.get("additionalProperties", True) is not True:
            add_b = b["additionalProperties"]
            out["properties"] = {n: {"allOf": [sa, add_b]} for n, sa in a["properties"].items()}
        if "properties" in b and "properties" not in a and a.get("additionalProperties", True) is not True:
            add_a = a["additionalProperties"]
            out["properties"] = {n: {"allOf": [add_a, sb]} for n, sb in b["properties"].items()}
            b = {k: v for k, v in b.items() if k != "properties"}
        for kw, vb in b.items():
            if kw in ANNOTATIONS:
                continue
            if kw not in out:
                out[kw] = vb
                continue
            va = out[kw]
            if kw == "type":
                ta = {va} if isinstance(va, str) else set(va)
                tb = {vb} if isinstance(vb, str) else set(vb)
                both = ta & tb | ({"integer"} if ("number" in ta and "integer" in tb) or
                                  ("integer" in ta and "number" in tb) else set())
                if not both:
                    return False
                out[kw] = sorted(both)
            elif kw in ("required", ABSENT):
                out[kw] = list(dict.fromkeys(list(va) + list(vb)))
            elif kw == "properties":
                # A property declared on one side only is still checked by the other side's additionalProperties.
                add_a, add_b = a.get("additionalProperties", True), b.get("additionalProperties", True)
                props = {}
                for name in list(va) + [n for n in vb if n not in va]:
                    props[name] = {"allOf": [va.get(name, add_a), vb.get(name, add_b)]}
                out[kw] = props
            elif kw in ("minLength", "minItems", "minProperties"):
                out[kw] = max(va, vb)
            elif kw in ("maxLength", "maxItems", "maxProperties"):
                out[kw] = min(va, vb)
            elif kw == "allOf":
                out[kw] = list(va) + list(vb)
            elif kw in ("anyOf", "oneOf"):
                # (x1 | x2) & (y1 | y2) = (x1 & (y1 | y2)) | (x2 & (y1 | y2)); the same for exactly-one.
                out[kw] = [{"allOf": [x, {kw: vb}]} for x in va]
            elif kw == "prefixItems" or (kw == "items" and (isinstance(va, list) or isinstance(vb, list))):
                raise UnsupportedSchemaError(f"{ptr}/{kw}", f"allOf: merging two positional '{kw}' is not "
                                             "supported yet")
            elif kw in ("items", "additionalProperties", "contains"):
                out[kw] = {"allOf": [va, vb]}
            elif kw == "enum":
                out[kw] = [x for x in va if any(_json_equal(x, y) for y in vb)]
            elif kw == "const":
                if not _json_equal(va, vb):
                    return False
            elif json.dumps(va, sort_keys=True) != json.dumps(vb, sort_keys=True):
                raise UnsupportedSchemaError(f"{ptr}/{kw}", f"allOf: cannot merge two different '{kw}' keywords yet")
        return out

    # ----------------------------------------------------------------------------------------------------------
    # anyOf / oneOf
    def _visit_alternatives(self, schema: dict, kw: str, ptr: str) -> str:
        branches = self._schema_list(schema, kw, ptr)
        rest = {k: v for k, v in schema.items() if k != kw}
        merged = [self._merge(rest, self._deref(b, f"{ptr}/{kw}/{i}"), f"{ptr}/{kw}/{i}") for i, b in enumerate(branches)]
        if kw == "oneOf" and not self._disjoint(merged):
            # Exactly one: branch i and the complement of every other branch (complements of simple schemas only).
            try:
                merged = [{"allOf": [m] + [{"not": b} for j, b in enumerate(branches) if j != i]}
                          for i, m in enumerate(merged)]
                for i, m in enumerate(merged):
                    self._rewrite_not(m["allOf"][1], f"{ptr}/oneOf/{i}") if len(m["allOf"]) > 1 else None
            except UnsupportedSchemaError:
                raise UnsupportedSchemaError(f"{ptr}/oneOf", "oneOf branches may overlap; exactly-one semantics is "
                                             "enforced only for disjoint branches or branches a grammar can "
                                             "complement (type restrictions, one bound keyword)") from None
        options = []
        for i, m in enumerate(merged):
            try:
                options.append(self.visit(m, f"{ptr}/{kw}/{i}"))
            except Unsatisfiable:
                continue
        if not options:
            raise Unsatisfiable
        return choice(options)

    def _possible_types(self, schema) -> set[str] | None:
        """The JSON types a schema can accept, or None if unknown."""
        if schema is False:
            return set()
        if not isinstance(schema, dict):
            return None
        if "const" in schema:
            return {_json_type(schema["const"])}
        if "enum" in schema and isinstance(schema["enum"], list):
            return {_json_type(v) for v in schema["enum"]}
        if "type" in schema:
            t = {schema["type"]} if isinstance(schema["type"], str) else set(schema["type"])
            return t | ({"integer"} if "number" in t else set())
        return None

    def _disjoint(self, branches: list) -> bool:
        """True if no JSON value can satisfy two of the branches (decided from types and constants)."""
        types = [self._possible_types(b) for b in branches]
        for i in range(len(branches)):
            for j in range(i + 1, len(branches)):
                ti, tj = types[i], types[j]
                if ti is not None and tj is not None and not (ti & tj):
                    continue
                bi, bj = branches[i], branches[j]
                if (isinstance(bi, dict) and isinstance(bj, dict) and "const" in bi and "const" in bj
                        and not _json_equal(bi["const"], bj["const"])):
                    continue
                return False
        return True

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
            values = [v for v in values if any(_json_equal(v, e) for e in schema["enum"])]
        kept = [v for v in values if self._validate(v, rest, ptr)]
        if not kept:
            raise Unsatisfiable
        return choice([self._value_expr(v) for v in kept])

    def _value_expr(self, value) -> str:
        """A grammar for exactly ``value`` (objects and arrays with the configured whitespace)."""
        if isinstance(value, dict):
            if not value:
                return seq(literal("{"), self.ws, literal("}"))
            items = [seq(json_literal(str(k)), self.key_sep, self._value_expr(v)) for k, v in value.items()]
            if self.any_order and len(items) > 1:
                return self._any_order_object([(i, True) for i in items], None)
            body = f" {self.item_sep} ".join(items)
            return seq(literal("{"), self.ws, body, self.ws, literal("}"))
        if isinstance(value, list):
            if not value:
                return seq(literal("["), self.ws, literal("]"))
            body = f" {self.item_sep} ".join(self._value_expr(v) for v in value)
            return seq(literal("["), self.ws, body, self.ws, literal("]"))
        if isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer():
            # 1, 1.0 and 1.00 are the same JSON Schema value.
            return seq(json_literal(int(value)), '( "." "0"+ )?')
        return json_literal(value)

    def _validate(self, value, schema, ptr: str) -> bool:
        """Does ``value`` satisfy ``schema``? For the keywords this converter supports (used to intersect enum and
        const with their siblings exactly)."""
        if schema is True or schema == {}:
            return True
        if schema is False:
            return False
        if "$ref" in schema:
            _, target = self._resolve(schema["$ref"], ptr)
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            return self._validate(value, target, ptr) and (self._draft < 2019 or self._validate(value, rest, ptr))
        t = _json_type(value)
        if "type" in schema:
            allowed = {schema["type"]} if isinstance(schema["type"], str) else set(schema["type"])
            if t not in allowed and not (t == "integer" and "number" in allowed):
                return False
        if "const" in schema and not _json_equal(value, schema["const"]):
            return False
        if "enum" in schema and not any(_json_equal(value, e) for e in schema["enum"]):
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
        if t == "string":
            n = len(value)
            if n < schema.get("minLength", 0) or n > schema.get("maxLength", math.inf):
                return False
        if t == "array":
            if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", math.inf):
                return False
            prefix = schema.get("prefixItems", []) if self._draft >= 2020 else (
                schema["items"] if isinstance(schema.get("items"), list) else [])
            rest_schema = schema.get("items", True) if self._draft >= 2020 else (
                schema.get("additionalItems", True) if isinstance(schema.get("items"), list) else schema.get("items", True))
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
            for k, v in value.items():
                if not self._validate(v, props[k] if k in props else schema.get("additionalProperties", True), ptr):
                    return False
        return True

    # ----------------------------------------------------------------------------------------------------------
    # Types
    def _visit_types(self, schema: dict, ptr: str) -> str:
        if "type" in schema:
            t = schema["type"]
            types = [t] if isinstance(t, str) else t
            if not isinstance(types, list) or not all(isinstance(x, str) and x in TYPES for x in types):
                raise SchemaError(f"{ptr}/type", f"'type' must be one of {list(TYPES)} or an array of them, "
                                  f"got {json.dumps(t)}")
        else:
            types = list(TYPES)
        if "number" in types and "integer" in types and not schema.get(FRACTION_ONLY):
            types = [x for x in types if x != "integer"]
        if schema.get(FRACTION_ONLY):
            types = [x for x in types if x != "integer"]
        options = []
        for t in types:
            try:
                options.append(getattr(self, f"_type_{t}")(schema, ptr))
            except Unsatisfiable:
                continue
        if not options:
            raise Unsatisfiable
        return choice(options)

    def _type_null(self, schema, ptr):
        return "j_null"

    def _type_boolean(self, schema, ptr):
        return "j_bool"

    def _type_integer(self, schema, ptr):
        lo, hi = self._integer_bounds(schema, ptr)
        k = schema.get("multipleOf")
        if k is not None:
            if isinstance(k, bool) or not isinstance(k, (int, float)) or k <= 0:
                raise SchemaError(f"{ptr}/multipleOf", f"'multipleOf' must be a number > 0, got {json.dumps(k)}")
            if not float(k).is_integer():
                raise UnsupportedSchemaError(f"{ptr}/multipleOf", "a non-integer 'multipleOf' is not supported yet")
            if lo is not None or hi is not None:
                raise UnsupportedSchemaError(f"{ptr}/multipleOf", "'multipleOf' together with bounds is not "
                                             "supported yet")
            try:
                digits = multiple_of(int(k), self.rules)
            except ValueError as e:
                raise UnsupportedSchemaError(f"{ptr}/multipleOf", str(e)) from None
        elif lo is None and hi is None:
            return "j_integer"
        else:
            digits = integer_range(lo, hi)
            if digits is None:
                raise Unsatisfiable
        return self.rules.add(f"integer_{lo}_{hi}_{k}", f'{digits} ( "." "0"+ )?')

    def _bounds(self, schema, ptr):
        """(lo, lo_strict, hi, hi_strict) from minimum / maximum / exclusive bounds (draft 4's booleans too)."""
        def number(kw):
            v = schema.get(kw)
            if v is None or (isinstance(v, bool) and self._draft <= 4 and kw.startswith("exclusive")):
                return None
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise SchemaError(f"{ptr}/{kw}", f"'{kw}' must be a number, got {json.dumps(v)}")
            return v

        lo, hi = number("minimum"), number("maximum")
        lo_strict = hi_strict = False
        if self._draft <= 4:
            lo_strict = schema.get("exclusiveMinimum") is True and lo is not None
            hi_strict = schema.get("exclusiveMaximum") is True and hi is not None
        ex_min, ex_max = number("exclusiveMinimum"), number("exclusiveMaximum")
        if ex_min is not None and (lo is None or ex_min >= lo):
            lo, lo_strict = ex_min, True
        if ex_max is not None and (hi is None or ex_max <= hi):
            hi, hi_strict = ex_max, True
        return lo, lo_strict, hi, hi_strict

    def _integer_bounds(self, schema, ptr) -> tuple[int | None, int | None]:
        """Inclusive integer bounds."""
        lo, lo_strict, hi, hi_strict = self._bounds(schema, ptr)
        ilo = None if lo is None else (math.floor(lo) + 1 if lo_strict else math.ceil(lo))
        ihi = None if hi is None else (math.ceil(hi) - 1 if hi_strict else math.floor(hi))
        return ilo, ihi

    def _type_number(self, schema, ptr):
        lo, lo_strict, hi, hi_strict = self._bounds(schema, ptr)
        if schema.get(FRACTION_ONLY):
            if lo is not None or hi is not None or "multipleOf" in schema:
                raise UnsupportedSchemaError(ptr, "bounds on non-integral numbers (from a complement of integer) are "
                                             "not supported yet")
            return self.rules.add("non_integral", '"-"? ( "0" | [1-9] [0-9]* ) "." [0-9]* [1-9] [0-9]*')
        k = schema.get("multipleOf")
        if k is not None:
            if isinstance(k, (int, float)) and not isinstance(k, bool) and k > 0 and float(k).is_integer():
                return self._type_integer(schema, ptr)  # multiples of an integer are integers
            raise UnsupportedSchemaError(f"{ptr}/multipleOf", "a non-integer 'multipleOf' on numbers is not "
                                         "supported yet")
        if lo is None and hi is None:
            return "j_number"
        digits = number_range(lo, lo_strict, hi, hi_strict, self.rules)
        if digits is None:
            raise Unsatisfiable
        # Approximation (documented): a bounded number is spelled without an exponent.
        return self.rules.add("number_range", digits)

    def _type_string(self, schema, ptr):
        lo = self._int_keyword(schema, "minLength", ptr) or 0
        hi = self._int_keyword(schema, "maxLength", ptr)
        if hi is not None and hi < lo:
            raise Unsatisfiable
        fmt = schema.get("format")
        if self.enforce_formats and isinstance(fmt, str) and fmt in FORMATS:
            if lo or hi is not None:
                raise UnsupportedSchemaError(f"{ptr}/format", f"format '{fmt}' together with minLength / maxLength "
                                             "is not supported yet")
            name, body = FORMATS[fmt]
            if name not in self.rules.rules:
                if fmt in ("uri", "uri-reference", "email"):  # they reference the IPv6 rule
                    self.rules.define(*FORMATS["ipv6"]) if "ip_v6" not in self.rules.rules else None
                self.rules.define(name, body)
            return self.rules.add(f"string_{name}", f'"\\"" {name} "\\""')
        if lo == 0 and hi is None:
            return "j_string"
        bound = f"{{{lo},}}" if hi is None else f"{{{lo},{hi}}}"
        return self.rules.add(f"string_{lo}_{hi}", f'"\\"" j_char{bound} "\\""')

    def _type_array(self, schema, ptr):
        lo = self._int_keyword(schema, "minItems", ptr) or 0
        hi = self._int_keyword(schema, "maxItems", ptr)
        if hi is not None and hi < lo:
            raise Unsatisfiable
        if self._draft >= 2020:
            prefix = schema.get("prefixItems", [])
            rest = schema.get("items", True)
        elif isinstance(schema.get("items"), list):
            prefix, rest = schema["items"], schema.get("additionalItems", True)
        else:
            prefix, rest = [], schema.get("items", True)
        if not isinstance(prefix, list):
            raise SchemaError(f"{ptr}/prefixItems", "'prefixItems' must be an array of schemas")
        if "contains" in schema:
            return self._array_contains(schema, prefix, rest, lo, hi, ptr)
        items: list[str] = []
        rest_expr: str | None = None
        for i, sub in enumerate(prefix):
            try:
                items.append(self.visit(sub, f"{ptr}/prefixItems/{i}"))
            except Unsatisfiable:
                break  # no array can reach position i, so nothing after it either
        else:
            try:
                rest_expr = self.visit(rest, f"{ptr}/items")
            except Unsatisfiable:
                rest_expr = None
        p = len(items)
        if rest_expr is None and p < lo:
            raise Unsatisfiable
        sep = self.item_sep

        def tail(k: int) -> str:
            """Elements k.. given that element k-1 exists; the array may end here iff k >= lo."""
            if hi is not None and k >= hi:
                return ""
            if k >= p:
                if rest_expr is None:
                    return ""
                need = max(0, lo - k)
                if hi is None:
                    bound = "*" if need == 0 else "+" if need == 1 else f"{{{need},}}"
                else:
                    bound = f"{{{need},{hi - k}}}"
                return f"( {sep} {rest_expr} ){bound}"
            inner = seq(sep, items[k], tail(k + 1))
            return inner if k < lo else f"( {inner} )?"

        first = items[0] if p else rest_expr
        if first is None or hi == 0:
            if lo > 0:
                raise Unsatisfiable
            return seq(literal("["), self.ws, literal("]"))
        body = seq(first, tail(1))
        body = body if lo > 0 else f"( {body} )?"
        return self.rules.add("array", seq(literal("["), self.ws, body, self.ws, literal("]")))

    MAX_COUNT_RULES = 1000

    def _array_contains(self, schema, prefix, rest, lo, hi, ptr):
        """Arrays whose number of items matching ``contains`` is within [minContains, maxContains] (default [1, inf)).
        Each item matches C or its complement, so one rule per count so far (capped) keeps the count exactly."""
        if prefix or rest not in (True, {}):
            raise UnsupportedSchemaError(f"{ptr}/contains", "'contains' is supported only with unconstrained items")
        if self._draft < 2019 and any(k in schema for k in ("minContains", "maxContains")):
            schema = {k: v for k, v in schema.items() if k not in ("minContains", "maxContains")}  # not keywords yet
        c_lo = self._int_keyword(schema, "minContains", ptr)
        c_lo = 1 if c_lo is None else c_lo
        c_hi = self._int_keyword(schema, "maxContains", ptr)
        if c_hi is not None and c_hi < c_lo:
            raise Unsatisfiable
        sep = self.item_sep
        if c_lo == 0 and c_hi is None:
            return self._type_array({k: v for k, v in schema.items() if k != "contains"}, ptr)
        if c_lo == 1 and c_hi is None and hi is None and lo <= 1:
            c = self.visit(schema["contains"], f"{ptr}/contains")
            body = seq(f"( j_value {sep} )*", c, f"( {sep} j_value )*")
            return self.rules.add("array_contains", seq(literal("["), self.ws, body, self.ws, literal("]")))
        if lo > 0 or hi is not None:
            raise UnsupportedSchemaError(f"{ptr}/contains", "counting 'contains' together with minItems / maxItems "
                                         "is not supported yet")
        cap = c_hi if c_hi is not None else c_lo
        if cap + 1 > self.MAX_COUNT_RULES:
            raise UnsupportedSchemaError(f"{ptr}/maxContains", f"counts above {self.MAX_COUNT_RULES} are not supported")
        try:
            match = self.visit(schema["contains"], f"{ptr}/contains")
        except Unsatisfiable:
            match = None
        other_options = []
        for i, branch in enumerate(self._negate(schema["contains"], f"{ptr}/contains")):
            try:
                other_options.append(self.visit(branch, f"{ptr}/contains"))
            except Unsatisfiable:
                pass
        other = choice(other_options) if other_options else None
        names = [self.rules.reserve(f"contains_{k}") for k in range(cap + 1)]
        for k in range(cap + 1):
            options = ['""'] if k >= c_lo else []
            if match is not None and (c_hi is None or k < c_hi):
                options.append(seq(sep, match, names[min(k + 1, cap)]))
            if other is not None:
                options.append(seq(sep, other, names[k]))
            self.rules.define(names[k], " | ".join(options) if options else "j_never")
        first = []
        if match is not None and (c_hi is None or c_hi > 0):
            first.append(seq(match, names[min(1, cap)]))
        if other is not None:
            first.append(seq(other, names[0]))
        body = "( " + " | ".join(first) + " )" if first else "j_never"
        if c_lo == 0:
            body = f"( {body} )?"
        return self.rules.add("array_contains", seq(literal("["), self.ws, body, self.ws, literal("]")))

    def _type_object(self, schema, ptr):
        props = schema.get("properties", {})
        if not isinstance(props, dict):
            raise SchemaError(f"{ptr}/properties", "'properties' must be an object")
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise SchemaError(f"{ptr}/required", "'required' must be an array of strings")
        dependent = schema.get("dependentRequired", {})
        if not isinstance(dependent, dict) or not all(isinstance(v, list) for v in dependent.values()):
            raise SchemaError(f"{ptr}/dependentRequired", "'dependentRequired' must map names to arrays of names")
        lo = self._int_keyword(schema, "minProperties", ptr) or 0
        hi = self._int_keyword(schema, "maxProperties", ptr)
        counted = bool(dependent) or lo > 0 or hi is not None
        if counted and not self.any_order:
            kw = "dependentRequired" if dependent else "minProperties" if lo else "maxProperties"
            raise UnsupportedSchemaError(f"{ptr}/{kw}", f"'{kw}' is supported with any_order=True only (so far)")
        additional = schema.get("additionalProperties", True)
        # Every name the object keywords mention is a declared member; undeclared ones take additionalProperties.
        absent = set(schema.get(ABSENT, []))
        names = list(dict.fromkeys(list(props) + list(required) + list(dependent) +
                                   [n for deps in dependent.values() for n in deps] + sorted(absent)))
        entries = []  # (name, "key": value expression, required)
        for name in names:
            sub = False if name in absent else props.get(name, additional)
            try:
                value = self.visit(sub, f"{ptr}/properties/{_escape_pointer(name)}" if name in props
                                   else f"{ptr}/additionalProperties")
            except Unsatisfiable:
                if name in required:
                    raise
                continue
            entries.append((name, seq(json_literal(name), self.key_sep, value), name in required))
        present = {e[0] for e in entries}
        # A property whose dependencies can never be present cannot be present either.
        entries = [e for e in entries if all(d in present for d in dependent.get(e[0], []))]
        extra = None
        if additional is not False:
            try:
                value = self.visit(additional, f"{ptr}/additionalProperties")
                extra = seq(self._key_except(names), self.key_sep, value)
            except Unsatisfiable:
                extra = None
        if counted:
            index = {e[0]: i for i, e in enumerate(entries)}
            deps = [sum(1 << index[d] for d in dependent.get(e[0], [])) for e in entries]
            return self._any_order_object([(e[1], e[2]) for e in entries], extra, deps=deps, min_count=lo,
                                          max_count=hi)
        return self._object_expr([(e[1], e[2]) for e in entries], extra)

    def _visit_or_none(self, schema, ptr):
        try:
            return self.visit(schema, f"{ptr}/additionalProperties")
        except Unsatisfiable:
            return None

    def _object_expr(self, entries: list[tuple[str, bool]], extra: str | None) -> str:
        """Properties in schema order (optional ones may be skipped), then any number of extra properties, with
        separators only between present members: rule first_k / rest_k per position k. With ``any_order`` see
        :meth:`_any_order_object`."""
        if self.any_order and len(entries) > 1:
            return self._any_order_object(entries, extra)
        sep = self.item_sep
        n = len(entries)
        extras_rest = f"( {sep} {extra} )*" if extra else ""
        first_next = f"( {extra} {extras_rest} )?" if extra else ""
        rest_next = extras_rest
        for k in range(n - 1, -1, -1):
            member, req = entries[k]
            first_k = [seq(member, rest_next)]
            rest_k = [seq(sep, member, rest_next)]
            if not req:
                first_k.append(first_next or '""')
                rest_k.append(rest_next or '""')
            first_next = self.rules.add(f"obj_first_{k}", " | ".join(first_k))
            rest_next = self.rules.add(f"obj_rest_{k}", " | ".join(rest_k))
        body = first_next or '""'
        return self.rules.add("object", seq(literal("{"), self.ws, body, self.ws, literal("}")))

    MAX_ANY_ORDER_PROPERTIES = 10

    def _any_order_object(self, entries: list[tuple[str, bool]], extra: str | None, *, deps: list[int] | None = None,
                          min_count: int = 0, max_count: int | None = None) -> str:
        """Members in any order, each declared property at most once, every required one present, extra properties
        anywhere. One rule per reachable state (set of used properties, number of members so far up to the point
        where it no longer matters), so that minProperties / maxProperties / dependentRequired are exact: the object
        may close once every required and dependent property is present and the count is within bounds."""
        n = len(entries)
        if n > self.MAX_ANY_ORDER_PROPERTIES:
            raise UnsupportedSchemaError("", f"any_order=True with {n} declared properties (the limit is "
                                         f"{self.MAX_ANY_ORDER_PROPERTIES}: one grammar rule per subset)")
        deps = deps or [0] * n
        sep = self.item_sep
        required = sum(1 << i for i, (_, req) in enumerate(entries) if req)
        cap = max_count if max_count is not None else min_count  # counts above cap behave alike
        names: dict[tuple[int, int], str] = {}
        if (1 << n) * (cap + 1) > 1 << 14:
            raise UnsupportedSchemaError("", "the object's property bounds need too many grammar rules")

        def closable(used: int, count: int) -> bool:
            return (used & required == required and count >= min_count
                    and all(used & deps[i] == deps[i] for i in range(n) if used >> i & 1))

        def more(used: int, count: int) -> str:
            """After at least one member; ``count`` members so far (capped)."""
            key = (used, count)
            if key in names:
                return names[key]
            name = names[key] = self.rules.reserve(f"obj_any_{used}_{count}")
            room = max_count is None or count < max_count
            nxt = min(count + 1, cap) if max_count is None else count + 1
            options = ['""'] if closable(used, count) else []
            if room:
                options += [seq(sep, entries[i][0], more(used | 1 << i, nxt)) for i in range(n) if not used >> i & 1]
                if extra:
                    options.append(seq(sep, extra, more(used, nxt)))
            self.rules.define(name, " | ".join(options) if options else "j_never")
            return name

        first_count = min(1, cap) if max_count is None else 1
        first = []
        if max_count is None or max_count > 0:
            first = [seq(entries[i][0], more(1 << i, first_count)) for i in range(n)]
            if extra:
                first.append(seq(extra, more(0, first_count)))
        if closable(0, 0):
            first.append('""')
        if not first:
            raise Unsatisfiable
        return self.rules.add("object", seq(literal("{"), self.ws, "( " + " | ".join(first) + " )", self.ws,
                                            literal("}")))

    def _key_except(self, names: list[str]) -> str:
        """A JSON string key whose spelling differs from the JSON spelling of every name in ``names``. Spellings are
        compared unit by unit (a unit is a plain character or an escape sequence). Approximation (documented): a key
        that spells a listed name with different escapes (``"\\u0061"`` for ``"a"``) counts as another key."""
        if not names:
            return "j_string"
        trie: dict = {}
        for name in names:
            node = trie
            for unit in _json_units(name):
                node = node.setdefault(unit, {})
            node[None] = True

        def rule_for(node: dict, depth: int) -> str:
            units = sorted(k for k in node if k is not None)
            plain = "".join(_class_char(u) for u in units if not u.startswith("\\"))
            short = "".join(_class_char(u[1]) for u in units if u.startswith("\\") and len(u) == 2)
            long_escape = any(u.startswith("\\u") for u in units)
            other = [f'[^"\\\\\\x00-\\x1f{plain}]']
            simple = "".join(c for c in '"\\/bfnrt' if c not in short)
            escapes = ([f'[{_class_chars(simple)}]'] if simple else []) + ([] if long_escape else ['"u" [0-9a-fA-F]{4}'])
            if escapes:
                other.append('"\\\\" ( ' + " | ".join(escapes) + " )")
            options = ['"\\""'] if None not in node else []
            if units:
                options.append(f'( {" | ".join(other)} ) j_char* "\\""')
                options += [seq(literal(u), rule_for(node[u], depth + 1)) for u in units]
            else:
                options.append('j_char+ "\\""')
            return self.rules.add(f"key_except_{depth}", " | ".join(options))

        return seq('"\\""', rule_for(trie, 0))


def _json_units(name: str) -> list[str]:
    """The JSON spelling of ``name`` (as json.dumps writes it, non-ASCII kept) split into units."""
    spelled = json.dumps(name, ensure_ascii=False)[1:-1]
    units, i = [], 0
    while i < len(spelled):
        if spelled[i] == "\\":
            n = 6 if spelled[i + 1] == "u" else 2
            units.append(spelled[i:i + n])
            i += n
        else:
            units.append(spelled[i])
            i += 1
    return units


def _class_chars(chars: str) -> str:
    return "".join(_class_char(c) for c in chars)


def _class_char(c: str) -> str:
    """``c`` escaped for use inside an EBNF character class."""
    if c in "]\\-^":
        return "\\" + c
    if ord(c) < 0x20:
        return f"\\x{ord(c):02x}"
    return c
