"""Dialects, ``$ref`` resolution (canonical locations, see ``_resources``), and ``$ref`` targets as named rules."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from xg2jax.json_schema._common import (
    ANNOTATIONS,
    SchemaError,
    Unsatisfiable,
    UnsupportedSchemaError,
)
from xg2jax.json_schema._resources import missing_ref_error


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

    def _resolve(self, ref: str, ptr: str) -> tuple[str, Any]:
        """(rule key, schema) of a canonical reference (see ``_resources``)."""
        if not isinstance(ref, str):
            raise SchemaError(f"{ptr}/$ref", "'$ref' must be a string")
        if ref.startswith("xg2jax-missing"):
            raise missing_ref_error(ref, ptr)
        doc, fragment = self._res.locate(ref)
        fragment = urllib.parse.unquote(fragment)
        node = self._res.docs[doc]
        for token in fragment.split("/")[1:]:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise SchemaError(f"{ptr}/$ref", f"$ref '{self._res.original.get(ref, ref)}' points to nothing")
        return (fragment if doc == 0 else f"doc{doc}{fragment}"), node

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
