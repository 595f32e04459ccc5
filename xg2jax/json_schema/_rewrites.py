"""Rewrites of keywords into ones the visitor handles: complements (``not``, ``if/then/else``,
exactly-one ``oneOf``) and ``dependencies`` / ``dependentSchemas`` (``unevaluated*`` is in ``_unevaluated``)."""

from __future__ import annotations

from xg2jax.json_schema._common import (
    SchemaError,
)


class RewritesMixin:
    # ----------------------------------------------------------------------------------------------------------
    # Rewrites into keywords the visitor handles
    APPLICATORS = ("$ref", "$dynamicRef", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas")

    def _rewrite_dependencies(self, schema: dict, ptr: str) -> dict:
        """Draft 7's ``dependencies`` -> ``dependentRequired`` (arrays) and ``dependentSchemas`` (schemas);
        ``dependentSchemas {p: S}`` -> ``if {type: object, required: [p]} then S`` for each p."""
        # 2019-09 split "dependencies"; it is still honoured there for compatibility (the suite's optional tests).
        if "dependencies" in schema:
            deps = schema["dependencies"]
            if not isinstance(deps, dict):
                raise SchemaError(f"{ptr}/dependencies", "'dependencies' must be an object")
            schema = {k: v for k, v in schema.items() if k != "dependencies"}
            arrays = {k: v for k, v in deps.items() if isinstance(v, list)}
            schemas = {k: v for k, v in deps.items() if not isinstance(v, list)}
            if arrays:
                required = dict(schema.get("dependentRequired", {}))
                for k, names in arrays.items():
                    required[k] = list(required.get(k, [])) + list(names)
                schema["dependentRequired"] = required
            if schemas:
                dependent = dict(schema.get("dependentSchemas", {}))
                for k, sub in schemas.items():
                    dependent[k] = {"allOf": [dependent[k], sub]} if k in dependent else sub
                schema["dependentSchemas"] = dependent
        if "dependentSchemas" in schema:
            deps = schema["dependentSchemas"]
            if not isinstance(deps, dict):
                raise SchemaError(f"{ptr}/dependentSchemas", "'dependentSchemas' must be an object")
            rest = {k: v for k, v in schema.items() if k != "dependentSchemas"}
            # Only objects that have the name: "required" alone would also hold for every non-object.
            rules = [{"if": {"type": "object", "required": [name]}, "then": sub} for name, sub in deps.items()]
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
