"""Schema resources, base URIs and ``$ref`` canonicalisation (RFC 3986 resolution as JSON Schema prescribes).

Algorithm. Every document (the root schema and each schema of the user's ``refs`` registry, keyed by its URI) is
walked along the keywords whose values are schemas, carrying the current base URI: a schema's ``$id`` (``id`` in
draft 4) is resolved against the enclosing base and starts a new resource. On the way the walk records

- ``resources``: absolute URI (no fragment) -> (document, JSON pointer of the resource root);
- ``anchors``: absolute URI ``#name`` -> location, for ``$anchor``, ``$dynamicAnchor`` and draft 6/7's
  ``"$id": "#name"``;
- ``dynamic``: for each resource, its ``$dynamicAnchor`` names -> location.

A second pass rewrites every ``$ref`` / ``$dynamicRef`` string of a (copied) document into a canonical location
``#<pointer>`` (the root document) or ``xg2jax-doc:<k>#<pointer>`` (registry document k), so the converter resolves
references by walking a JSON pointer and never needs base URIs again; embedded resources, URN bases, anchors and
registry documents all reduce to that. A reference whose URI is unknown is left as ``xg2jax-missing:<ref>`` and
becomes an error only if the converter reaches it. ``$ref`` inside unknown keywords (not schema positions) is
resolved against the enclosing base, but an ``$id`` there does not start a resource (the spec's rule).
In drafts 4 to 7 a ``$ref`` makes its siblings ignored, including ``$id``.
"""

from __future__ import annotations

import copy
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from xg2jax.json_schema._common import SchemaError, escape_pointer

DEFAULT_BASE = "https://xg2jax.invalid/root.json"  # the root document's retrieval URI when it has no $id
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")

# Keywords whose value is a schema, an array of schemas, or an object of schemas.
SCHEMA_VALUED = {"additionalProperties", "additionalItems", "contains", "propertyNames", "not", "if", "then", "else",
                 "unevaluatedItems", "unevaluatedProperties", "contentSchema", "items"}
SCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems", "items"}
SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
VALUE_KEYWORDS = {"const", "enum", "default", "examples"}  # their contents are JSON values, never schemas


def join_uri(base: str, ref: str) -> str:
    """``ref`` resolved against ``base`` (URN bases too, where ``urljoin`` gives up); an empty fragment is dropped."""
    if ref.startswith("#"):
        out = base.split("#", 1)[0] + ref
    elif _SCHEME.match(ref):
        out = ref
    else:
        out = urllib.parse.urljoin(base, ref)
    return out.removesuffix("#")


@dataclass
class Resources:
    """The documents (root first, with canonical ``$ref`` strings) and what the walk recorded."""

    docs: list[Any]
    resources: dict[str, tuple[int, str]] = field(default_factory=dict)
    anchors: dict[str, tuple[int, str]] = field(default_factory=dict)
    dynamic: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)  # resource -> name -> pointer
    original: dict[str, str] = field(default_factory=dict)  # canonical ref -> the text it was written as
    dynamic_refs: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # canonical -> (text, anchor)
    sites: list[tuple[int, str, str, str]] = field(default_factory=list)  # (document, pointer, keyword, canonical)
    node_resource: dict[int, tuple[int, str]] = field(default_factory=dict)  # id(resource root) -> resource

    def locate(self, canonical: str) -> tuple[int, str]:
        """(document, pointer) of a canonical reference (``#...`` or ``xg2jax-doc:k#...``)."""
        if canonical.startswith("xg2jax-doc:"):
            k, frag = canonical[len("xg2jax-doc:"):].split("#", 1)
            return int(k), frag
        return 0, canonical[1:]


def canonical(doc: int, pointer: str) -> str:
    pointer = pointer.replace("%", "%25")
    return f"#{pointer}" if doc == 0 else f"xg2jax-doc:{doc}#{pointer}"


def collect(root: Any, registry: dict[str, Any] | None, draft: int, ignored: set | None = None, *,
            copy_root: bool = True, source_text: str | None = None) -> Resources:
    """Copies of ``root`` and the registry's documents with canonical ``$ref`` strings, and the resource index.
    ``ignored``: keywords dropped from the root document's schemas (a vocabulary its metaschema leaves out).
    ``copy_root=False`` rewrites ``root`` in place (for a document the caller parsed itself and nobody else holds:
    the copy is a sixth of a small tool schema's conversion time). ``source_text``: the JSON text ``root`` was
    parsed from, if any (see :func:`has_no_dollar_keywords`)."""
    registry = dict(registry or {})
    for uri, doc in registry.items():
        if not isinstance(uri, str) or not isinstance(doc, (dict, bool)):
            raise TypeError(f"refs: expected a mapping from URI strings to schemas (dict or bool), got {uri!r}")
    if not registry and not ignored and source_text is not None and has_no_dollar_keywords(source_text):
        # Nothing for the walk to record: one resource, the document itself (a tool schema's usual case).
        res = Resources(docs=[copy.deepcopy(root) if copy_root else root])
        res.resources[DEFAULT_BASE] = (0, "")
        res.node_resource[id(res.docs[0])] = (0, "")
        return res
    res = Resources(docs=[copy.deepcopy(root) if copy_root else root] + [copy.deepcopy(d) for d in registry.values()])
    bases = [DEFAULT_BASE] + [u.split("#", 1)[0] for u in registry]
    for k, base in enumerate(bases):
        res.resources.setdefault(base, (k, ""))
        res.node_resource[id(res.docs[k])] = (k, "")
    sites: list[tuple[dict, str, str]] = []  # (schema object, key, base) of each $ref / $dynamicRef to rewrite
    for k, base in enumerate(bases):
        _walk(res, k, res.docs[k], "", base, draft, sites, identify=True, ignored=ignored if k == 0 else None)
    for node, key, base, doc, ptr in sites:
        ref = node[key]
        target = join_uri(base, ref)
        uri, _, frag = target.partition("#")
        frag = urllib.parse.unquote(frag) if frag.startswith("/") or not frag else frag
        out = f"xg2jax-missing:{ref}"
        if uri in res.resources:
            doc, p0 = res.resources[uri]
            if not frag or frag.startswith("/"):
                out = canonical(doc, p0 + frag)
            elif target in res.anchors:
                out = canonical(*res.anchors[target])
            else:
                out = f"xg2jax-missing-anchor:{ref}"
        res.original.setdefault(out, ref)
        if key == "$dynamicRef":
            res.dynamic_refs[out] = (ref, frag if frag and not frag.startswith("/") else None)
        node[key] = out
        res.sites.append((doc, ptr, key, out))
    return res


def has_no_dollar_keywords(source_text: str) -> bool:
    """Whether a document parsed from this JSON text cannot hold ``$ref``, ``$id``, ``$anchor``, ``$schema`` or any
    other ``$`` keyword (nor ``id``'s meaning in draft 4, which needs ``$schema``): no ``$`` and no ``\\u`` escape
    that could spell one. The resource walk then records nothing, so :func:`collect` skips it."""
    return "$" not in source_text and "\\u" not in source_text


def _spell(ptr) -> str:
    """The JSON pointer of a _walk position: "" or a (parent, key or index) chain, spelled only when recorded (most
    positions record nothing, and spelling every one was most of the walk)."""
    parts = []
    while ptr:
        ptr, key = ptr
        parts.append(escape_pointer(key) if isinstance(key, str) else str(key))
    return "".join("/" + p for p in reversed(parts))


def _walk(res: Resources, doc: int, node: Any, ptr, base: str, draft: int, sites: list, identify: bool,
          ignored: set | None = None) -> None:
    """Record resources and anchors under ``node`` (a schema at ``ptr``, see _spell) and the ``$ref`` sites to
    rewrite."""
    if not isinstance(node, dict):
        return
    if identify and ignored:
        for kw in ignored & set(node):
            del node[kw]
    ignore_siblings = draft < 2019 and isinstance(node.get("$ref"), str)
    ident = node.get("id" if draft <= 4 else "$id")
    if identify and isinstance(ident, str) and not ignore_siblings:
        if draft < 2019 and ident.startswith("#"):  # draft 6/7 plain-name fragment: an anchor
            res.anchors.setdefault(join_uri(base, ident), (doc, _spell(ptr)))
        else:
            base = join_uri(base, ident).split("#", 1)[0]
            here = (doc, _spell(ptr))
            res.resources.setdefault(base, here)
            res.node_resource[id(node)] = here
    if identify and not ignore_siblings:
        for kw in ("$anchor", "$dynamicAnchor"):
            if isinstance(node.get(kw), str):
                res.anchors.setdefault(f"{base}#{node[kw]}", (doc, _spell(ptr)))
        if isinstance(node.get("$dynamicAnchor"), str):
            resource = res.resources[base]
            res.dynamic.setdefault(resource, {}).setdefault(node["$dynamicAnchor"], _spell(ptr))
    for kw in ("$ref", "$dynamicRef"):
        if isinstance(node.get(kw), str):
            sites.append((node, kw, base, doc, _spell(ptr)))
    for kw, value in node.items():
        if kw in VALUE_KEYWORDS or kw in ("$ref", "$dynamicRef") or not isinstance(value, (dict, list)):
            continue
        sub = (ptr, kw)
        schema_position = identify and (kw in SCHEMA_VALUED or kw in SCHEMA_LISTS or kw in SCHEMA_MAPS)
        if kw in SCHEMA_MAPS and isinstance(value, dict):
            for name, s in value.items():
                _walk(res, doc, s, (sub, name), base, draft, sites, schema_position, ignored)
        elif isinstance(value, list):
            for i, s in enumerate(value):
                _walk(res, doc, s, (sub, i), base, draft, sites, schema_position and kw in SCHEMA_LISTS, ignored)
        elif isinstance(value, dict):
            _walk(res, doc, value, sub, base, draft, sites, schema_position and kw in SCHEMA_VALUED, ignored)


def missing_ref_error(canonical_ref: str, ptr: str, kw: str = "$ref") -> SchemaError:
    from xg2jax.json_schema._common import UnsupportedSchemaError

    if canonical_ref.startswith("xg2jax-missing-anchor:"):
        ref = canonical_ref.split(":", 1)[1]
        return SchemaError(f"{ptr}/{kw}", f"{kw} '{ref}': no $anchor named '{ref.split('#', 1)[1]}'")
    ref = canonical_ref.split(":", 1)[1]
    return UnsupportedSchemaError(f"{ptr}/{kw}", f"{kw} '{ref}' names a document that is neither this schema nor "
                                  "in the 'refs' registry (remote documents are never fetched)")
