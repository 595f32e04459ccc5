"""Tool arguments as nested XML elements: a JSON Schema read as the element tree a model family writes in place of
a JSON object (xgrammar 0.2.9's ``minimax_m3_xml`` and ``cohere_xml`` styles).

Usage::

    {"type": "json_schema", "json_schema": schema, "style": "minimax_m3_xml"}   # inside a structural tag
    json_schema_to_ebnf(schema, json_format="cohere_xml")                      # EBNF text

minimax_m3_xml
--------------

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

cohere_xml
----------

Every value is a ``<cofl:value type="KIND">...</cofl:value>`` element whose ``type`` names how its content is
written; an object member also carries ``name="KEY"`` (the key XML-escaped: ``&amp;``, ``&lt;``, ``&gt;``,
``&quot;``), an array item carries no name. ``{"city": "Paris", "tags": ["a"], "days": 3}`` reads::

    <cofl:value name="city" type="raw">Paris</cofl:value><cofl:value name="tags" type="list"><cofl:value
    type="raw">a</cofl:value></cofl:value><cofl:value name="days" type="json">3</cofl:value>

(without the line break). Lowering, by the schema of each value:

- ``raw``: a string. Free strings are raw text up to ``</cofl:value>``, taken as they are (whitespace included);
  strings constrained by ``pattern`` (matching the whole string), a known ``format`` or ``minLength`` /
  ``maxLength``, and ``enum`` / ``const`` strings, may have whitespace around them;
- ``json``: a number, integer, boolean or null, converted by the JSON Schema front end from the value's schema
  (every numeric keyword applies); ``enum`` / ``const`` values that are not strings as compact JSON;
- ``dict``: an object: its declared properties in schema order (required ones present, optional ones
  skippable), then undeclared members where ``additionalProperties`` allows them (absent: closed under
  ``strict_mode``), each after optional whitespace, then optional whitespace. Undeclared keys are any escaped
  text but the declared names; ``required`` names that ``properties`` does not declare are not enforced (as in
  xgrammar). ``{"type": "object"}`` without ``properties``, ``additionalProperties`` or ``required`` is any
  object;
- ``list``: an array: its items back to back (``minItems`` / ``maxItems`` counted), whitespace only around them;
  without ``items``, no items under ``strict_mode`` (any items otherwise);
- ``anyOf``, ``oneOf`` (read as ``anyOf``, as xgrammar does), a list of types and ``enum`` values are
  alternatives, each with its own ``type``; ``allOf`` of one schema is that schema; local ``$ref`` (recursive
  ones too) is the schema it names; ``{}`` / ``true`` and schemas without a type keyword are any value (any of
  the four kinds, nested without limit).

The arguments schema is an object (``true`` / ``{}``: any object). Not supported (an ``UnsupportedSchemaError``
names the keyword): ``any_order``, ``allOf`` of several schemas, ``not``, ``if``, ``patternProperties``,
``propertyNames``, ``minProperties`` / ``maxProperties``, ``prefixItems`` or ``items`` as a list,
``dependentRequired`` / ``dependentSchemas``, ``contains``, ``unevaluated*``, references outside the document,
and strings constrained by more than one of ``pattern`` / ``format`` / lengths.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from xg2jax.json_schema._common import (
    ANNOTATIONS,
    NO_CONSTRAINT,
    UnsatisfiableSchemaError,
    UnsupportedSchemaError,
    escape_pointer,
    follow_pointer,
)
from xg2jax.json_schema._ebnf import literal
from xg2jax.xml_styles import ANY_CHAR, search_regex

__all__ = ["COHERE_CLOSE", "COHERE_OPEN", "MINIMAX_M3_MARKER", "XML_VALUE_STYLES", "render_cohere_value",
           "render_xml_value", "xml_value_rule"]

MINIMAX_M3_MARKER = "]<]minimax[>["
#: Styles written by this module.
XML_VALUE_STYLES = ("minimax_m3_xml", "cohere_xml")
COHERE_OPEN = "<cofl:value"
COHERE_CLOSE = "</cofl:value>"

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


def render_cohere_value(value: Any, *, name: str | None = None) -> str:
    """A JSON value written as cohere_xml elements, as Cohere's models write tool arguments.

    Parameters
    ----------
    value : Any
        A JSON value; the arguments object is written as its members alone (no element of its own).
    name : str, optional
        The member name of `value` (None: an array item, or the arguments object).

    Returns
    -------
    str
        Strings ``raw``, objects ``dict``, arrays ``list``, other values ``json`` (compact JSON); keys escaped.
    """
    if name is None and isinstance(value, dict):
        return "".join(_cohere_element(v, k) for k, v in value.items())
    return _cohere_element(value, name)


def _cohere_element(value: Any, name: str | None) -> str:
    """One ``<cofl:value>`` element (an array item when `name` is None: objects there are ``dict`` elements too)."""
    head = COHERE_OPEN + ("" if name is None else f' name="{_escape_key(name)}"')
    if isinstance(value, str):
        kind, body = "raw", value
    elif isinstance(value, dict):
        kind, body = "dict", "".join(_cohere_element(v, k) for k, v in value.items())
    elif isinstance(value, list):
        kind, body = "list", "".join(_cohere_element(v, None) for v in value)
    else:
        kind, body = "json", json.dumps(value, separators=(",", ":"))
    return f'{head} type="{kind}">{body}{COHERE_CLOSE}'


def _escape_key(key: str) -> str:
    return key.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def xml_value_rule(lowering, schema: Any, style: str, *, excludes=(), any_order: bool = False,
                   max_whitespace_cnt: int | None = None, strict_mode: bool = True, **json_options) -> str:
    """The rule (defined in ``lowering``, a structural-tag lowering) for the arguments ``schema`` written in
    ``style``.

    Parameters
    ----------
    lowering : xg2jax.structural_tag._Lowering
        Where the rules are defined.
    schema : dict or bool
        The arguments' JSON Schema (parsed).
    style : {"minimax_m3_xml", "cohere_xml"}
        The element dialect.
    excludes : sequence of str
        Texts free raw strings stop before (besides the style's own close).
    any_order : bool
        Not supported (raises when True).
    max_whitespace_cnt : int, optional
        cohere_xml: the most whitespace characters in each run between elements (None: unbounded).
    strict_mode : bool
        cohere_xml: an object with ``properties`` and no ``additionalProperties`` is closed, an array without
        ``items`` empty (False: both open).
    **json_options
        ``enforce_formats`` and ``plain_integers`` apply to JSON scalars (and formats to raw strings); the others
        (indentation, separators) have nothing to act on here.

    Raises
    ------
    UnsupportedSchemaError
        A keyword the style cannot write (the module docstring lists them).
    UnsatisfiableSchemaError
        A schema no value satisfies where one is required.
    """
    if any_order:
        raise UnsupportedSchemaError("", f"any_order is not supported by {style} (properties come in schema order)")
    if style not in XML_VALUE_STYLES:
        raise ValueError(f"style must be one of {', '.join(XML_VALUE_STYLES)}; got {style!r}")
    if style == "cohere_xml":
        return _CohereValues(lowering, schema, list(excludes), json_options, max_whitespace_cnt,
                             strict_mode).root()
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
        return _json_scalar(self.lw, s, self.json_options)

    def text(self) -> str:
        """Raw text up to the next marker (the engine's TagDispatch with the marker as its excluded string)."""
        if self._text is None:
            self._text = _raw_text(self.lw, [self.marker, *self.excludes])
        return self._text


def _json_scalar(lowering, s: dict, json_options: dict) -> str:
    """The rule of `s`'s JSON values (numbers, booleans, null), from the JSON Schema front end."""
    from xg2jax.compiler import Grammar

    options = {k: v for k, v in json_options.items() if k in ("enforce_formats", "plain_integers")}
    return lowering.embed(Grammar.from_json_schema(s, any_whitespace=False, strict_mode=True, **options),
                          "json_schema")


def _raw_text(lowering, ends: list[str]) -> str:
    """Raw text up to the first of `ends` (the engine's TagDispatch with them as its excluded strings)."""
    texts = ", ".join(literal(x) for x in dict.fromkeys(ends))
    return lowering.rule("xml_text", f"TagDispatch(loop_after_dispatch=false, excludes=({texts}))")


# cohere_xml -------------------------------------------------------------------------------------------------------

# Keywords cohere_xml cannot write (xgrammar takes some of them; see the module docstring).
_COHERE_UNSUPPORTED = ("not", "if", "patternProperties", "propertyNames", "minProperties", "maxProperties",
                       "prefixItems", "dependentRequired", "dependentSchemas", "dependencies", "contains",
                       "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef")
_OBJECT_KEYWORDS = ("properties", "additionalProperties", "required")
_ARRAY_KEYWORDS = ("items", "minItems", "maxItems")
# A key's characters: anything but NUL, a quote and markup characters, which are written as entities.
_KEY_CHAR = '[^\\x00"&<>]'
_KEY_ENTITIES = ("&amp;", "&lt;", "&gt;", "&quot;")
_RAW_HEAD = ' type="raw">'
_NAME_HEAD = COHERE_OPEN + ' name="'


class _CohereValues:
    """The rules of one cohere_xml arguments schema (``document``): ``wrapped`` gives, for a value's schema, the
    rest of its element after ``<cofl:value`` and the name: `` type="KIND">`` content ``</cofl:value>``."""

    def __init__(self, lowering, document: Any, excludes: list[str], json_options: dict, max_ws: int | None,
                 strict_mode: bool) -> None:
        self.lw = lowering
        self.doc = document
        self.excludes = excludes
        self.json_options = json_options
        self.strict_mode = strict_mode
        self.ws = "[ \\n\\r\\t]*" if max_ws is None else f"[ \\n\\r\\t]{{0,{int(max_ws)}}}"
        self._refs: dict[str, str] = {}  # JSON pointer -> rule name (recursive references end there)
        self._text = None
        self._any: dict[str, str] = {}
        self._keys: dict[tuple[str, ...], str] = {}

    def root(self) -> str:
        s = self.doc
        if s is True or (isinstance(s, dict) and _only_annotations(s)):
            return self.any_rules()["object"]
        if not isinstance(s, dict) or s.get("type", "object") != "object":
            raise UnsupportedSchemaError("", "the arguments schema of cohere_xml must be an object schema")
        self.check(s, "")
        if "$ref" in s or "allOf" in s or "anyOf" in s or "oneOf" in s:
            raise UnsupportedSchemaError("", "the arguments schema of cohere_xml must be an object schema with "
                                         "properties (not $ref / allOf / anyOf / oneOf at the root)")
        return self.object(s, "")

    # -- elements -----------------------------------------------------------------------------------------
    def kind(self, kind: str, body: str) -> str:
        """`` type="KIND">`` body ``</cofl:value>`` with whitespace around the body."""
        head = f' type="{kind}">'
        return f"{literal(head)} {self.ws} {body} {self.ws} {literal(COHERE_CLOSE)}"

    def free_string(self) -> str:
        """A free string: raw text up to the close, whitespace included (no whitespace around it)."""
        if self._text is None:
            self._text = _raw_text(self.lw, [*self.excludes, COHERE_CLOSE])
        return f"{literal(_RAW_HEAD)} {self._text} {literal(COHERE_CLOSE)}"

    def member(self, key: str, wrapped: str) -> str:
        """A named element after optional whitespace; `key` is an EBNF expression of the escaped name."""
        return f"{self.ws} {literal(_NAME_HEAD)} {key} {literal(chr(34))} {wrapped}"

    def check(self, s: dict, pointer: str) -> None:
        for kw in _COHERE_UNSUPPORTED:
            if kw in s:
                raise UnsupportedSchemaError(f"{pointer}/{escape_pointer(kw)}", f"'{kw}' is not supported by "
                                             "cohere_xml")

    # -- values -------------------------------------------------------------------------------------------
    def wrapped(self, s: Any, pointer: str) -> str | None:
        """The rule of the rest of the element of a value of schema `s`, or None when no value satisfies it."""
        if s is True:
            return self.any_rules()["value"]
        if s is False:
            return None
        if not isinstance(s, dict):
            raise UnsupportedSchemaError(pointer, "a schema must be an object or a boolean")
        self.check(s, pointer)
        if "$ref" in s:
            self.alone(s, "$ref", pointer)
            return self.ref(s["$ref"], pointer)
        if "allOf" in s:
            self.alone(s, "allOf", pointer)
            if not isinstance(s["allOf"], list) or len(s["allOf"]) != 1:
                raise UnsupportedSchemaError(f"{pointer}/allOf", "'allOf' of more than one schema is not supported "
                                             "by cohere_xml")
            return self.wrapped(s["allOf"][0], f"{pointer}/allOf/0")
        if "const" in s or "enum" in s:
            return self.constants([s["const"]] if "const" in s else s["enum"], pointer)
        for kw in ("anyOf", "oneOf"):  # oneOf as anyOf: xgrammar reads it so when branches may overlap
            if kw in s:
                self.alone(s, kw, pointer)
                found = [w for w in (self.wrapped(b, f"{pointer}/{kw}/{i}") for i, b in enumerate(s[kw]))
                         if w is not None]
                return self.lw.rule("cohere_value", " | ".join(found)) if found else None
        declared = s.get("type")
        if isinstance(declared, list):
            found = [w for w in (self.wrapped({**s, "type": t}, pointer) for t in declared) if w is not None]
            return self.lw.rule("cohere_value", " | ".join(found)) if found else None
        if declared is None:  # the type follows from the keywords; none of them: any value (as xgrammar)
            declared = ("object" if any(k in s for k in _OBJECT_KEYWORDS) else
                        "array" if any(k in s for k in _ARRAY_KEYWORDS) else None)
            if declared is None:
                return self.any_rules()["value"]
        if declared == "object":
            return self.lw.rule("cohere_value", self.kind("dict", self.object(s, pointer)))
        if declared == "array":
            body = self.array(s, pointer)
            return None if body is None else self.lw.rule("cohere_value", self.kind("list", body))
        if declared == "string":
            return self.lw.rule("cohere_value", self.string(s, pointer))
        if declared in ("integer", "number", "boolean", "null"):
            return self.lw.rule("cohere_value", self.kind("json", _json_scalar(self.lw, s, self.json_options)))
        raise UnsupportedSchemaError(f"{pointer}/type", f"unknown type {declared!r}")

    def alone(self, s: dict, keyword: str, pointer: str) -> None:
        """`keyword` must be the only constraint of `s` (its branches carry the rest)."""
        rest = sorted(k for k in s if k != keyword and k not in ANNOTATIONS)
        if rest:
            raise UnsupportedSchemaError(f"{pointer}/{escape_pointer(keyword)}", f"'{keyword}' beside {rest} is not "
                                         "supported by cohere_xml")

    def ref(self, ref: Any, pointer: str) -> str:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise UnsupportedSchemaError(f"{pointer}/$ref", "cohere_xml takes local references ('#/...') only")
        path = unquote(ref[1:])
        if path not in self._refs:
            found, target = follow_pointer(self.doc, path)
            if not found:
                raise UnsupportedSchemaError(f"{pointer}/$ref", f"the reference {ref!r} names nothing")
            name = self._refs[path] = self.lw.name("cohere_ref")  # named first: the target may refer to itself
            body = self.wrapped(target, path)
            if body is None:
                raise UnsatisfiableSchemaError(f"{pointer}/$ref", f"the schema {ref!r} accepts no value")
            self.lw.define(name, body)
        return self._refs[path]

    def constants(self, values: Any, pointer: str) -> str | None:
        """``enum`` / ``const``: strings raw, other values as compact JSON, each in its own element kind."""
        if not isinstance(values, list):
            raise UnsupportedSchemaError(f"{pointer}/enum", "'enum' must be a list")
        options = []
        for v in values:
            kind, text = ("raw", v) if isinstance(v, str) else ("json", _compact_json(v))
            options.append(self.kind(kind, literal(text) if text else '""'))
        options = list(dict.fromkeys(options))
        return self.lw.rule("cohere_value", " | ".join(f"( {o} )" for o in options)) if options else None

    def string(self, s: dict, pointer: str) -> str:
        """A raw string: free text, or text of a pattern / format / length with whitespace around it."""
        from xg2jax.json_schema._formats import FORMATS

        fmt = s.get("format") if self.json_options.get("enforce_formats", True) else None
        used = ([k for k in ("pattern",) if k in s] + (["format"] if fmt in FORMATS else []) +
                (["lengths"] if "minLength" in s or "maxLength" in s else []))
        if len(used) > 1:
            raise UnsupportedSchemaError(pointer, f"a cohere_xml string constrained by {' and '.join(used)} "
                                         "together is not supported")
        if "pattern" in s:
            body = f"Regex({literal(search_regex(s['pattern'], search=False))})"
        elif used == ["format"]:
            body = f"Regex({literal(FORMATS[fmt][1])})"
        elif used == ["lengths"]:
            lo, hi = s.get("minLength", 0), s.get("maxLength")
            if hi is not None and hi < lo:
                raise UnsatisfiableSchemaError(f"{pointer}/maxLength", "'minLength' > 'maxLength'")
            body = f"{ANY_CHAR}{{{lo},{'' if hi is None else hi}}}"
        else:
            return self.free_string()
        return self.kind("raw", self.lw.rule("cohere_string", body))

    def object(self, s: dict, pointer: str) -> str:
        """The members of an object (the content of its element, or the arguments)."""
        if not any(k in s for k in _OBJECT_KEYWORDS):
            return self.any_rules()["object"]
        props, required = s.get("properties", {}), s.get("required", [])
        if not isinstance(props, dict) or not isinstance(required, list):
            raise UnsupportedSchemaError(pointer, "properties must be an object and required a list")
        # Required names that properties does not declare are not enforced, as xgrammar reads them (the
        # members come in schema order, so an undeclared one could only be an undeclared member anyway).
        extra = s.get("additionalProperties", not self.strict_mode)
        parts = []
        for name, sub in props.items():
            where = f"{pointer}/properties/{escape_pointer(name)}"
            wrapped = self.wrapped(sub, where)
            if wrapped is None:
                if name in required:
                    raise UnsatisfiableSchemaError(where, "a required property accepts no value")
                continue
            member = self.member(literal(_escape_key(name)) if name else '""', wrapped)
            parts.append(member if name in required else f"( {member} )?")
        wrapped = self.wrapped(extra, f"{pointer}/additionalProperties")
        if wrapped is not None:
            parts.append(f"( {self.member(self.key(tuple(_escape_key(n) for n in props)), wrapped)} )*")
        return self.lw.rule("cohere_object", " ".join(parts + [self.ws]))

    def array(self, s: dict, pointer: str) -> str | None:
        """The items of an array (the content of its element), or None when no array satisfies `s`."""
        items = s.get("items", not self.strict_mode)
        if isinstance(items, list):
            raise UnsupportedSchemaError(f"{pointer}/items", "'items' as a list is not supported by cohere_xml")
        lo, hi = s.get("minItems", 0), s.get("maxItems")
        if hi is not None and hi < lo:
            raise UnsatisfiableSchemaError(f"{pointer}/maxItems", "'minItems' > 'maxItems'")
        wrapped = self.wrapped(items, f"{pointer}/items")
        if wrapped is None:
            return '""' if lo == 0 else None
        count = "*" if lo == 0 and hi is None else f"{{{lo},{'' if hi is None else hi}}}"
        return self.lw.rule("cohere_list", f"( {literal(COHERE_OPEN)} {wrapped} ){count}")

    # -- shared rules -------------------------------------------------------------------------------------
    def any_rules(self) -> dict[str, str]:
        """The rules of any value (``value``: the rest of its element), any object's members and any list's
        items, defined once (they refer to each other)."""
        if not self._any:
            self._any = {k: self.lw.name(f"cohere_any_{k}") for k in ("value", "object", "list")}
            scalar = _json_scalar(self.lw, {"type": ["number", "boolean", "null"]}, self.json_options)
            self.lw.define(self._any["value"], " | ".join(
                [f"( {self.free_string()} )", f"( {self.kind('json', scalar)} )",
                 f"( {self.kind('dict', self._any['object'])} )", f"( {self.kind('list', self._any['list'])} )"]))
            self.lw.define(self._any["object"], f"( {self.member(self.key(()), self._any['value'])} )* {self.ws}")
            self.lw.define(self._any["list"], f"( {literal(COHERE_OPEN)} {self._any['value']} )*")
        return self._any

    def key(self, declared: tuple[str, ...]) -> str:
        """An undeclared member's escaped key: one or more key characters (entities count as one), not one of
        the `declared` escaped names. Written as a trie of the names: at each node, the string may end (where
        no name ends there), go on along a name, or leave every name by another character and go on freely."""
        declared = tuple(sorted(set(declared)))
        if declared in self._keys:
            return self._keys[declared]
        char = f"( {_KEY_CHAR} | {' | '.join(literal(e) for e in _KEY_ENTITIES)} )"
        rest = self.lw.rule("cohere_key", f"{char}*")
        trie: dict = {}
        for name in declared:
            node = trie
            for unit in _key_units(name):
                node = node.setdefault(unit, {})
            node[None] = {}  # a name ends here

        def node_rule(node: dict, at_root: bool) -> str:
            options = [] if at_root or None in node else ['""']
            units = [u for u in node if u is not None]
            options += [f"{literal(u)} {node_rule(node[u], False)}" for u in units]
            chars = "".join(_class_escape(u) for u in units if len(u) == 1)
            other = [f"[^\\x00\"&<>{chars}]"] + [literal(e) for e in _KEY_ENTITIES if e not in units]
            options.append(f"( {' | '.join(other)} ) {rest}")
            return self.lw.rule("cohere_key", " | ".join(f"( {o} )" for o in options))

        self._keys[declared] = node_rule(trie, True)
        return self._keys[declared]


def _only_annotations(s: dict) -> bool:
    return all(k in NO_CONSTRAINT for k in s)


def _key_units(escaped: str) -> list[str]:
    """An escaped key split into characters, each entity one unit."""
    units, i = [], 0
    while i < len(escaped):
        entity = next((e for e in _KEY_ENTITIES if escaped.startswith(e, i)), None)
        units.append(entity or escaped[i])
        i += len(entity) if entity else 1
    return units


def _class_escape(ch: str) -> str:
    return f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}"


def _compact_json(value: Any) -> str:
    """A constant as xgrammar writes it: compact JSON, integral floats as integers."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53:
        return str(int(value))
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False)
