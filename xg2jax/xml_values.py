"""Tool arguments as nested XML elements: a JSON Schema read as the element tree a model family writes in place of
a JSON object (xgrammar 0.2.9's ``minimax_m3_xml`` style).

Usage::

    {"type": "json_schema", "json_schema": schema, "style": "minimax_m3_xml"}   # inside a structural tag
    json_schema_to_ebnf(schema, json_format="minimax_m3_xml")                  # EBNF text

For ``{"city": "Paris", "days": [1, 2]}`` (``M`` is the namespace marker ``]<]minimax[>[``)::

    M<city>ParisM</city>M<days>M<item>1M</item>M<item>2M</item>M</days>

Lowering, by the schema of each value:

- an object is its declared properties in schema order, each ``M<name>`` value ``M</name>`` after optional
  whitespace (required ones present, optional ones skippable), then optional whitespace; the arguments schema is
  such an object. Undeclared members cannot be written (an element's close repeats its name), so
  ``additionalProperties`` other than false / absent, ``patternProperties`` and ``propertyNames`` are errors;
- an array is its items, each ``M<item>`` value ``M</item>`` after optional whitespace (``minItems`` /
  ``maxItems`` counted), then optional whitespace; it needs ``items``;
- a string is raw text up to the next marker (no quotes, no escapes); ``enum`` / ``const`` values are raw text
  too (strings as themselves, other values as JSON);
- numbers, integers, booleans and null are JSON, converted by the JSON Schema front end from the value's schema
  (every numeric keyword applies);
- ``anyOf`` and a list of types are alternatives.

Not supported (an ``UnsupportedSchemaError`` names the keyword; xgrammar refuses the same): strings constrained by
``pattern``, ``format`` or lengths (they cannot be combined with the marker's exclusion), unconstrained schemas
(``{}``, ``true``), ``$ref``, ``allOf``, ``oneOf``, ``not``, ``if``, ``prefixItems``, ``minProperties`` /
``maxProperties``.
"""

from __future__ import annotations

import json
from typing import Any

from xg2jax.json_schema._common import ANNOTATIONS, UnsatisfiableSchemaError, UnsupportedSchemaError, escape_pointer
from xg2jax.json_schema._ebnf import literal

__all__ = ["MINIMAX_M3_MARKER", "XML_VALUE_STYLES", "render_xml_value", "xml_value_rule"]

MINIMAX_M3_MARKER = "]<]minimax[>["
#: Styles written by this module.
XML_VALUE_STYLES = ("minimax_m3_xml",)

_WS = "[ \\n\\t\\r]*"
_SCALARS = ("integer", "number", "boolean", "null")
_UNSUPPORTED = ("$ref", "allOf", "oneOf", "not", "if", "prefixItems", "minProperties", "maxProperties",
                "patternProperties", "propertyNames", "unevaluatedProperties", "dependentRequired",
                "dependentSchemas", "contains")


def render_xml_value(value: Any, *, marker: str = MINIMAX_M3_MARKER) -> str:
    """A JSON value written as minimax_m3_xml elements (the arguments object without an element of its own)."""
    if isinstance(value, dict):
        return "".join(f"{marker}<{k}>{render_xml_value(v, marker=marker)}{marker}</{k}>" for k, v in value.items())
    if isinstance(value, list):
        return "".join(f"{marker}<item>{render_xml_value(v, marker=marker)}{marker}</item>" for v in value)
    return value if isinstance(value, str) else json.dumps(value)


def xml_value_rule(lowering, schema: Any, style: str, *, excludes=(), any_order: bool = False, **json_options) -> str:
    """The rule (defined in ``lowering``, a structural-tag lowering) for the arguments ``schema`` written in
    ``style``; raw strings also stop before each text of ``excludes``. ``json_options`` (``enforce_formats``,
    ``plain_integers``) apply to numbers; the others (whitespace, separators) have nothing to act on here."""
    if any_order:
        raise UnsupportedSchemaError("", f"any_order is not supported by {style} (properties come in schema order)")
    if style not in XML_VALUE_STYLES:
        raise ValueError(f"style must be one of {', '.join(XML_VALUE_STYLES)}; got {style!r}")
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise UnsupportedSchemaError("", f"the arguments schema of {style} must be an object schema")
    return _Values(lowering, MINIMAX_M3_MARKER, list(excludes), json_options).value(schema, "")


class _Values:
    def __init__(self, lowering, marker: str, excludes: list[str], json_options: dict) -> None:
        self.lw = lowering
        self.marker = marker
        self.excludes = excludes
        self.json_options = json_options
        self._text = None

    def element(self, name: str, value: str) -> str:
        return f"{literal(self.marker + '<' + name + '>')} {value} {literal(self.marker + '</' + name + '>')}"

    def value(self, s: Any, pointer: str) -> str:
        if s is True or s == {} or not isinstance(s, dict):
            if s is False:
                raise UnsatisfiableSchemaError(pointer, "the schema is false")
            raise UnsupportedSchemaError(pointer, "minimax_m3_xml does not take unconstrained schemas (a value of "
                                         "any type)")
        for kw in _UNSUPPORTED:
            if kw in s:
                raise UnsupportedSchemaError(f"{pointer}/{escape_pointer(kw)}", f"'{kw}' is not supported by "
                                             "minimax_m3_xml")
        if "const" in s or "enum" in s:
            values = [s["const"]] if "const" in s else s["enum"]
            texts = list(dict.fromkeys(v if isinstance(v, str) else json.dumps(v) for v in values))
            if not texts:
                raise UnsatisfiableSchemaError(f"{pointer}/enum", "an empty enum")
            return self.lw.rule("xml_value", " | ".join(literal(t) if t else '""' for t in texts))
        if "anyOf" in s:
            rest = {k: v for k, v in s.items() if k != "anyOf" and k not in ANNOTATIONS}
            if rest:
                raise UnsupportedSchemaError(f"{pointer}/anyOf", "'anyOf' beside other keywords is not supported by "
                                             "minimax_m3_xml")
            return self.lw.rule("xml_value", " | ".join(self.value(b, f"{pointer}/anyOf/{i}")
                                                        for i, b in enumerate(s["anyOf"])))
        declared = s.get("type")
        if isinstance(declared, list):
            return self.lw.rule("xml_value", " | ".join(self.value({**s, "type": t}, pointer) for t in declared))
        if declared == "object" or (declared is None and "properties" in s):
            return self.object(s, pointer)
        if declared == "array" or (declared is None and "items" in s):
            return self.array(s, pointer)
        if declared == "string":
            for kw in ("pattern", "format", "minLength", "maxLength"):
                if kw in s:
                    raise UnsupportedSchemaError(f"{pointer}/{kw}", f"a string '{kw}' is not supported by "
                                                 "minimax_m3_xml (raw strings stop at the marker)")
            return self.text()
        if declared in _SCALARS:
            return self.scalar(s)
        raise UnsupportedSchemaError(pointer, "minimax_m3_xml needs a 'type' (or properties / items / enum / anyOf)")

    def object(self, s: dict, pointer: str) -> str:
        extra = s.get("additionalProperties", False)
        if extra is not False:
            raise UnsupportedSchemaError(f"{pointer}/additionalProperties", "minimax_m3_xml writes declared "
                                         "properties only (an element's close repeats its name)")
        props, required = s.get("properties", {}), set(s.get("required", []))
        missing = sorted(required - set(props))
        if missing:
            raise UnsatisfiableSchemaError(f"{pointer}/required", f"required properties {missing} are not declared "
                                           "and cannot be written")
        parts = []
        for name, sub in props.items():
            member = f"{_WS} {self.element(name, self.value(sub, f'{pointer}/properties/{escape_pointer(name)}'))}"
            parts.append(member if name in required else f"( {member} )?")
        return self.lw.rule("xml_object", " ".join(parts + [_WS]))

    def array(self, s: dict, pointer: str) -> str:
        if "items" not in s or s["items"] is True or s["items"] == {}:
            raise UnsupportedSchemaError(f"{pointer}/items", "minimax_m3_xml needs an array's items schema")
        item = f"{_WS} {self.element('item', self.value(s['items'], f'{pointer}/items'))}"
        lo, hi = s.get("minItems", 0), s.get("maxItems")
        if hi is not None and hi < lo:
            raise UnsatisfiableSchemaError(f"{pointer}/maxItems", "'minItems' > 'maxItems'")
        count = "*" if lo == 0 and hi is None else f"{{{lo},{'' if hi is None else hi}}}"
        return self.lw.rule("xml_array", f"( {item} ){count} {_WS}")

    def scalar(self, s: dict) -> str:
        from xg2jax.compiler import Grammar

        options = {k: v for k, v in self.json_options.items() if k in ("enforce_formats", "plain_integers")}
        return self.lw.embed(Grammar.from_json_schema(s, any_whitespace=False, strict_mode=True, **options),
                             "json_schema")

    def text(self) -> str:
        """Raw text up to the next marker (the engine's TagDispatch with the marker as its excluded string)."""
        if self._text is None:
            ends = ", ".join(literal(x) for x in dict.fromkeys([self.marker, *self.excludes]))
            self._text = self.lw.rule("xml_text", f"TagDispatch(loop_after_dispatch=false, excludes=({ends}))")
        return self._text
