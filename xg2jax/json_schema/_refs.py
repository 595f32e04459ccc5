"""Dialects, ``$anchor`` / ``$ref`` resolution against the root document, and ``$ref`` targets as named rules."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from xg2jax.json_schema._common import ANNOTATIONS, SchemaError, Unsatisfiable, UnsupportedSchemaError, escape_pointer


class RefsMixin:
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
                    self._collect_anchors(v, f"{ptr}/{escape_pointer(k)}")
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
