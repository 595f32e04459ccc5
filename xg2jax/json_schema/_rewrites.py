"""Rewrites of keywords into ones the visitor handles: complements (``not``, ``if/then/else``,
exactly-one ``oneOf``) and ``dependencies`` / ``dependentSchemas`` (``unevaluated*`` is in ``_unevaluated``)."""

from __future__ import annotations

from xg2jax.json_schema._common import (
    ABSENT,
    ANNOTATIONS,
    FRACTION_ONLY,
    TYPES,
    SchemaError,
    UnsupportedSchemaError,
    strip_annotations,
)


class RewritesMixin:
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
            inner = strip_annotations(inner)
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
