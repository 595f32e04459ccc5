"""Dialects, ``$ref`` resolution (canonical locations, see ``_resources``), and ``$ref`` targets as named rules."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from xg2jax.json_schema._common import (
    SchemaError,
    Unsatisfiable,
    UnsupportedSchemaError,
    follow_pointer,
)
from xg2jax.json_schema._resources import canonical, missing_ref_error


class RefsMixin:
    # ----------------------------------------------------------------------------------------------------------
    # $ref
    _DIALECTS = ((4, "json-schema.org/draft-04/"), (6, "json-schema.org/draft-06/"), (7, "json-schema.org/draft-07/"),
                 (2019, "json-schema.org/draft/2019-09/"), (2020, "json-schema.org/draft/2020-12/"))
    # The 2019-09 / 2020-12 validation vocabulary: ignored when a custom metaschema leaves it out.
    VALIDATION_VOCABULARY = {"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
                             "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
                             "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties", "required",
                             "dependentRequired"}
    _KNOWN_VOCABULARIES = ("/vocab/core", "/vocab/applicator", "/vocab/unevaluated", "/vocab/validation",
                           "/vocab/meta-data", "/vocab/format-annotation", "/vocab/format-assertion", "/vocab/content",
                           "/vocab/format")

    def _detect_draft(self, schema, refs: dict | None = None) -> tuple[int, set]:
        """(draft, keywords to ignore) from ``$schema``: a known dialect, or a custom metaschema found in the
        ``refs`` registry whose ``$vocabulary`` may leave out the validation vocabulary."""
        if not isinstance(schema, dict) or "$schema" not in schema:
            return 2020, set()
        uri = schema["$schema"]
        for draft, marker in self._DIALECTS:
            if isinstance(uri, str) and marker in uri:
                return draft, set()
        meta = (refs or {}).get(uri.split("#", 1)[0]) if isinstance(uri, str) else None
        if isinstance(meta, dict) and isinstance(meta.get("$schema"), str) and meta["$schema"] != uri:
            draft = next((d for d, marker in self._DIALECTS if marker in meta["$schema"]), None)
            vocab = meta.get("$vocabulary")
            if draft is not None and draft >= 2019 and isinstance(vocab, dict):
                for v, required in vocab.items():
                    if required is True and not any(v.endswith(k) and "json-schema.org/draft/" in v
                                                    for k in self._KNOWN_VOCABULARIES):
                        raise UnsupportedSchemaError("/$schema", f"the metaschema requires vocabulary {json.dumps(v)}, "
                                                     "which this version does not know")
                validation = any(v.endswith("/vocab/validation") for v in vocab)
                if any(v.endswith("/vocab/format-assertion") for v in vocab):
                    self.enforce_formats = True  # the dialect asserts formats
                return draft, set() if validation else set(self.VALIDATION_VOCABULARY)
            if draft is not None:
                return draft, set()
        raise UnsupportedSchemaError("/$schema", f"unknown dialect {json.dumps(uri)} (custom metaschemas must be in "
                                     "the 'refs' registry; use draft-04/06/07, 2019-09 or 2020-12)")

    def _doc_draft(self, doc: int) -> int | None:
        """The dialect a registry document declares with ``$schema`` (None: none or unknown)."""
        node = self._res.docs[doc]
        uri = node.get("$schema") if isinstance(node, dict) else None
        return next((d for d, marker in self._DIALECTS if isinstance(uri, str) and marker in uri), None)

    def _resolve(self, ref: str, ptr: str, entering: bool = False) -> tuple[str, Any]:
        """(rule key, schema) of a canonical reference (see ``_resources``). Only the visitor enters the target
        (``entering``); other uses (merges, complements, value checks) would lose the dynamic scope, so they raise
        when the target is a resource that binds $dynamicAnchor names in a schema that has $dynamicRef."""
        if not isinstance(ref, str):
            raise SchemaError(f"{ptr}/$ref", "'$ref' must be a string")
        if ref.startswith("xg2jax-missing"):
            raise missing_ref_error(ref, ptr)
        ref, scope = self._split_scope(ref)
        doc, fragment = self._res.locate(ref)
        fragment = urllib.parse.unquote(fragment)
        found, node = follow_pointer(self._res.docs[doc], fragment)
        if not found:
            raise SchemaError(f"{ptr}/$ref", f"$ref '{self._res.original.get(ref, ref)}' points to nothing")
        key = fragment if doc == 0 else f"doc{doc}{fragment}"
        if doc and self._doc_draft(doc) not in (None, self._draft):
            raise UnsupportedSchemaError(f"{ptr}/$ref", f"$ref '{self._res.original.get(ref, ref)}' names a "
                                         "document of another dialect (one dialect per conversion)")
        if entering:
            return key, node
        if self._res.dynamic_refs:
            # Merges, complements and value checks read the target's keywords outside the visitor: the target is
            # copied with its references pinned to the dynamic scope it would have been visited in.
            saved = self._bindings
            if scope is not None:
                self._bindings = scope
            self._enter_location(doc, fragment)
            self._enter_resource(node)
            try:
                node = self._pin_scope(node, ptr, top=True)
            finally:
                self._bindings = saved
        return key, node

    # A canonical reference may carry the dynamic scope to visit its target in: "<ref>\x00<index>".
    def _split_scope(self, ref: str):
        if "\x00" not in ref:
            return ref, None
        ref, index = ref.split("\x00", 1)
        return ref, self._scopes[int(index)]

    def _with_scope(self, ref: str, scope: tuple) -> str:
        ref = self._split_scope(ref)[0]
        if scope not in self._scope_index:
            self._scope_index[scope] = len(self._scopes)
            self._scopes.append(scope)
        return f"{ref}\x00{self._scope_index[scope]}"

    def _pin_resource(self, node, ptr: str):
        """``node`` itself, or when it is the root of a resource with $dynamicAnchor (in a schema with $dynamicRef)
        a copy pinned to the scope entering it gives: for readers of its keywords other than ``visit``."""
        if not self._res.dynamic_refs or self._res.node_resource.get(id(node)) not in self._res.dynamic:
            return node
        saved = self._bindings
        self._enter_resource(node)
        try:
            return self._pin_scope(node, ptr, top=True)
        finally:
            self._bindings = saved

    def _pin_scope(self, node, ptr: str, top: bool = False):
        """A copy of ``node`` whose $ref / $dynamicRef are resolved in the current dynamic scope."""
        if isinstance(node, list):
            return [self._pin_scope(v, ptr) for v in node]
        if not isinstance(node, dict):
            return node
        if not top and self._res.node_resource.get(id(node)) in self._res.dynamic:
            raise UnsupportedSchemaError(ptr, "a nested resource with $dynamicAnchor inside allOf / not / if / oneOf "
                                         "/ enum checks is not supported yet")
        out = {}
        for k, v in node.items():
            if k in ("const", "enum", "default", "examples"):
                out[k] = v
            elif k == "$ref" and isinstance(v, str):
                out[k] = self._with_scope(v, self._bindings) if not v.startswith("xg2jax-missing") else v
            elif k == "$dynamicRef" and isinstance(v, str):
                if "$ref" in node:
                    raise UnsupportedSchemaError(f"{ptr}/$dynamicRef", "'$dynamicRef' next to '$ref' is not "
                                                 "supported yet")
                out["$ref"] = self._with_scope(self._dynamic_target(v, ptr), self._bindings)
            else:
                out[k] = self._pin_scope(v, ptr)
        return out

    def _dynamic_target(self, ref: str, ptr: str) -> str:
        """The canonical target of ``$dynamicRef`` ``ref`` in the current dynamic scope."""
        if ref.startswith("xg2jax-missing"):
            raise missing_ref_error(ref, ptr, "$dynamicRef")
        _, node = self._resolve(ref, ptr, entering=True)
        anchor = self._res.dynamic_refs.get(ref, (ref, None))[1]
        if anchor is not None and isinstance(node, dict) and node.get("$dynamicAnchor") == anchor:
            return dict(self._bindings).get(anchor, ref)
        return ref

    def _deref(self, schema, ptr: str):
        """``schema`` with a bare ``$ref`` replaced by its target (for merging)."""
        seen = set()
        schema = self._pin_resource(schema, ptr)
        while isinstance(schema, dict) and set(schema) - self._annotations == {"$ref"}:
            target, schema = self._resolve(schema["$ref"], ptr)
            if target in seen:
                raise SchemaError(ptr, "$ref cycle without any constraint")
            seen.add(target)
        return schema

    # ----------------------------------------------------------------------------------------------------------
    # $dynamicRef: resolved statically. The visitor carries the dynamic scope as bindings of $dynamicAnchor names
    # (the outermost resource that defines a name wins; a resource is entered when the visitor reaches its root
    # object); rules of $ref targets are keyed by target and bindings, so recursion still closes (bindings only
    # grow, and there are finitely many).
    def _enter_location(self, doc: int, fragment: str) -> None:
        """Enter the resource that contains the schema at ``fragment`` (a $ref jumps into it)."""
        best = None
        for d, p in self._res.dynamic:
            if d == doc and (fragment == p or fragment.startswith(p + "/")) and (best is None or len(p) > len(best)):
                best = p
        enclosing = max((p for d, p in self._res.resources.values()
                         if d == doc and (fragment == p or fragment.startswith(p + "/"))), key=len, default="")
        if best is not None and best == enclosing:
            self._enter(doc, best)

    def _enter_resource(self, node) -> None:
        resource = self._res.node_resource.get(id(node))
        if resource is not None:
            self._enter(*resource)

    def _enter(self, doc: int, root: str) -> None:
        resource = (doc, root)
        if resource not in self._res.dynamic:
            return
        bound = {name for name, _ in self._bindings}
        new = [(name, canonical(resource[0], p)) for name, p in sorted(self._res.dynamic[resource].items())
               if name not in bound]
        if new:
            self._bindings = self._bindings + tuple(new)

    def _visit_dynamic_ref(self, schema: dict, ptr: str) -> str:
        ref = schema["$dynamicRef"]
        if not isinstance(ref, str):
            raise SchemaError(f"{ptr}/$dynamicRef", "'$dynamicRef' must be a string")
        if "$ref" in schema:
            raise UnsupportedSchemaError(f"{ptr}/$dynamicRef", "'$dynamicRef' next to '$ref' is not supported yet")
        rest = {k: v for k, v in schema.items() if k != "$dynamicRef"}
        return self._visit_ref({**rest, "$ref": self._dynamic_target(ref, ptr)}, ptr)

    def _last_bare_ref(self, schema: dict, ptr: str) -> dict:
        """The last ``{"$ref": ...}`` of a chain of references to bare references (no other constraint on the way),
        followed with a loop: a chain longer than the visitor may nest (``MAX_EXPANSION_DEPTH``) means one rule, the
        last target's. A cycle of bare references is left to the visitor (it becomes rule recursion)."""
        seen = set()
        while True:
            key, node = self._resolve(schema["$ref"], ptr, entering=True)
            if (key in seen or not isinstance(node, dict) or set(node) - self._annotations != {"$ref"}
                    or not isinstance(node["$ref"], str) or node["$ref"].startswith("xg2jax-missing")):
                return schema  # (a missing target is reported by the visitor, at the reference that names it)
            seen.add(key)
            schema = node

    def _visit_ref(self, schema: dict, ptr: str) -> str:
        siblings = {k: v for k, v in schema.items() if k != "$ref" and k not in self._annotations}
        if siblings and self._draft >= 2019:
            return self.visit({"allOf": [{"$ref": schema["$ref"]}, siblings]}, ptr)
        if not self._res.dynamic_refs:
            schema = self._last_bare_ref(schema, ptr)
        target, node = self._resolve(schema["$ref"], ptr, entering=True)
        scope = self._split_scope(schema["$ref"])[1]
        if self._res.dynamic_refs:
            target = (target, scope if scope is not None else self._bindings)
        if target not in self._refs:
            hint = target[0] if isinstance(target, tuple) else target
            name = self.rules.reserve("def" + (hint.replace("/", "_") or "_root"))
            self._refs[target] = name
            try:
                saved = self._bindings
                if scope is not None:
                    self._bindings = scope
                ref, _ = self._split_scope(schema["$ref"])
                self._enter_location(*self._res.locate(ref)[:1], urllib.parse.unquote(self._res.locate(ref)[1]))
                try:
                    body = self.visit(node, hint)
                finally:
                    self._bindings = saved
            except Unsatisfiable:
                del self._refs[target]
                self.rules.rules.pop(name)
                raise
            self.rules.define(name, body)
        return self._refs[target]
