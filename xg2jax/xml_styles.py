"""XML-style tool-call arguments: a JSON Schema of tool parameters read as the parameter list a model family writes
instead of a JSON object (xgrammar 0.2.9's ``json_format`` / structural-tag ``style`` values).

Usage::

    json_schema_to_ebnf(schema, json_format="qwen_xml")                        # EBNF text
    {"type": "json_schema", "json_schema": schema, "style": "qwen_xml"}       # inside a structural tag

For ``{"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}`` the styles
read::

    qwen_xml           <parameter=city>Paris</parameter><parameter=days>3</parameter>
    minimax_xml        <parameter name="city">Paris</parameter> ...
    glm_xml            <arg_key>city</arg_key><arg_value>Paris</arg_value> ...
    deepseek_xml       <｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>
                       <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
    deepseek_v4_1_xml  as deepseek_xml with "<｜DSML｜ parameter" / "</｜DSML｜ parameter>"
    kimi_k3_xml        <|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|> ...

Lowering. The root schema is the arguments object: its declared properties in schema order (required ones
present, optional ones skippable), then undeclared ones (names ``[a-zA-Z_][a-zA-Z0-9_]*``) where
``additionalProperties`` allows them (absent means closed under ``strict_mode``, as in JSON). Whitespace may
precede each parameter and end the list. A parameter's value splits by JSON type:

- its string values are written raw, without quotes or escapes: free text up to the closing tag when the
  schema leaves strings free; ``enum`` / ``const`` strings, ``pattern`` (search semantics, as JSON Schema),
  ``format`` or ``minLength`` / ``maxLength`` as raw text otherwise;
- every other value is JSON, converted by the JSON Schema front end from the parameter's schema restricted to
  non-strings (``{"allOf": [schema], "not": {"type": "string"}}``), so every keyword it supports applies;
- whitespace may surround a value, except free text (which takes it as content) and DeepSeek's
  ``string="true"`` values; DeepSeek marks each value raw (``string="true"``) or JSON; Kimi names the declared
  type (``integer`` as ``number``; any type name where the schema declares none or several).

Excludes (a structural tag's ``json_schema`` ``excludes``): free raw strings stop before any excluded text, JSON
values are written by the native front end with ``string_excludes``; raw strings with a ``pattern``, ``format`` or
lengths follow that constraint and are not checked for the texts (an approximation, as in xgrammar).

Not supported (an ``UnsupportedSchemaError`` names the keyword): root keywords other than ``type: object``,
``properties``, ``required``, ``additionalProperties`` and annotations; string values constrained by more than
one of ``pattern`` / ``format`` / lengths, or by ``allOf`` / ``oneOf`` / ``not``.
(``minimax_m3_xml`` and ``cohere_xml`` nest elements for objects and arrays: ``xg2jax.xml_values``. The ``gemma``
style is JSON with other strings and keys: the native JSON Schema front end writes it,
``xg2jax.json_schema.native_grammar``.)
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from urllib.parse import quote, unquote

from xg2jax.json_schema._common import (
    _RECOGNISED,
    ANNOTATIONS,
    UnsatisfiableSchemaError,
    UnsupportedSchemaError,
    escape_pointer,
    follow_pointer,
)
from xg2jax.json_schema._ebnf import literal
from xg2jax.json_schema._regex_text import hoist_anchors, top_level_alternatives

__all__ = ["XML_STYLES", "XmlStyle", "render_arguments", "xml_arguments_ebnf"]


@dataclasses.dataclass(frozen=True)
class XmlStyle:
    """How one model family writes a parameter: ``open_head NAME open_tail VALUE close``."""

    open_head: str
    open_tail: str
    close: str
    # DeepSeek: the text after the name for a raw string value and for a JSON value (replaces open_tail).
    string_marks: tuple[str, str] | None = None
    # Kimi: the declared type's name goes between open_head NAME type_head and open_tail.
    type_head: str | None = None
    # GLM: a second opening tag after open_tail (whitespace may come between them).
    value_head: str = ""


XML_STYLES = {
    "qwen_xml": XmlStyle("<parameter=", ">", "</parameter>"),
    "minimax_xml": XmlStyle('<parameter name="', '">', "</parameter>"),
    "glm_xml": XmlStyle("<arg_key>", "</arg_key>", "</arg_value>", value_head="<arg_value>"),
    "deepseek_xml": XmlStyle('<\uff5cDSML\uff5cparameter name="', "", "</\uff5cDSML\uff5cparameter>",
                             string_marks=('" string="true">', '" string="false">')),
    "deepseek_v4_1_xml": XmlStyle('<\uff5cDSML\uff5c parameter name="', "", "</\uff5cDSML\uff5c parameter>",
                                  string_marks=('" string="true">', '" string="false">')),
    "kimi_k3_xml": XmlStyle('<|open|>argument key="', '"<|sep|>', "<|close|>argument<|sep|>", type_head='" type="'),
}

_ROOT_KEYWORDS = {"type", "properties", "required", "additionalProperties", "minProperties", "maxProperties",
                  "$defs", "definitions", "$schema", "$id", "$comment"}
_STRING_KEYWORDS = {"minLength", "maxLength", "pattern", "format"}
_TYPE_NAMES = ("string", "number", "integer", "boolean", "object", "array", "null")
_WS = "[ \\n\\t\\r]*"
ANY_CHAR = "[\\x00-\\U0010FFFF]"  # any one code point, in EBNF (shared with xml_values)
# The base URI the root document is registered under when parameters' schemas hold references.
_BASE = "urn:xg2jax:tool-arguments"


def render_arguments(json_format: str, arguments: dict) -> str:
    """``arguments`` (a dict of JSON values) written in ``json_format``, as a model writes them: strings raw,
    other values as compact JSON; Kimi's type names from the values (``integer`` written ``number``); ``"gemma"``:
    Gemma 4's JSON dialect (``{city:<|"|>Paris<|"|>,days:3}``); ``"minimax_m3_xml"`` and ``"cohere_xml"``:
    nested elements (``xg2jax.xml_values``)."""
    if json_format == "gemma":
        return _gemma_value(arguments)
    if json_format == "minimax_m3_xml":
        from xg2jax.xml_values import render_xml_value

        return render_xml_value(arguments)
    if json_format == "cohere_xml":
        from xg2jax.xml_values import render_cohere_value

        return render_cohere_value(arguments)
    if json_format not in XML_STYLES:
        raise ValueError("render_arguments: json_format must be one of gemma, minimax_m3_xml, cohere_xml, "
                         f"{', '.join(XML_STYLES)}, "
                         f"got {json_format!r}")
    st, out = XML_STYLES[json_format], []
    for name, value in arguments.items():
        raw = isinstance(value, str)
        text = value if raw else json.dumps(value, ensure_ascii=False)
        if st.string_marks:
            out.append(f"{st.open_head}{name}{st.string_marks[0 if raw else 1]}{text}{st.close}")
        elif st.type_head is not None:
            kind = ("string" if raw else "boolean" if isinstance(value, bool) else "null" if value is None
                    else "number" if isinstance(value, (int, float)) else "array" if isinstance(value, list)
                    else "object")
            out.append(f"{st.open_head}{name}{st.type_head}{kind}{st.open_tail}{text}{st.close}")
        else:
            out.append(f"{st.open_head}{name}{st.open_tail}{st.value_head}{text}{st.close}")
    return "".join(out)


def _gemma_value(value: Any) -> str:
    if isinstance(value, str):
        return f'<|"|>{value}<|"|>'
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_gemma_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_gemma_value(v) for v in value) + "]"
    return json.dumps(value)


def xml_arguments_ebnf(schema: Any, json_format: str, *, strict_mode: bool = True, **json_options) -> str:
    """EBNF text (root rule ``root``) of the arguments ``schema`` written in ``json_format`` (a key of
    :data:`XML_STYLES`, ``minimax_m3_xml`` or ``cohere_xml``); ``json_options`` go to the JSON Schema front end for
    the JSON values."""
    from xg2jax.json_schema import schema_as_dict
    from xg2jax.structural_tag import _Lowering
    from xg2jax.xml_values import XML_VALUE_STYLES, xml_value_rule

    lowering = _Lowering()
    if json_format in XML_VALUE_STYLES:
        top = xml_value_rule(lowering, schema_as_dict(schema), json_format, strict_mode=strict_mode, **json_options)
    else:
        top = xml_arguments_rule(lowering, schema_as_dict(schema), json_format, strict_mode=strict_mode,
                                 **json_options)
    return "\n".join([f"root ::= {top}"] + [f"{n} ::= {b}" for n, b in lowering.rules] + lowering.embedded) + "\n"


def xml_arguments_rule(lowering, schema: Any, json_format: str, *, strict_mode: bool = True, excludes=(),
                       **json_options) -> str:
    """The rule (defined in ``lowering``, a structural-tag lowering) for the arguments ``schema`` (a parsed
    JSON value) written in ``json_format``; no string value contains a text of ``excludes`` (see the module
    docstring for what that covers)."""
    if json_format not in XML_STYLES:
        raise ValueError(f"json_format must be one of json, {', '.join(XML_STYLES)}, minimax_m3_xml, "
                         f"cohere_xml; got {json_format!r}")
    return _Arguments(lowering, schema, XML_STYLES[json_format], strict_mode, json_options, list(excludes)).root()


class _Arguments:
    def __init__(self, lowering, document: Any, style: XmlStyle, strict_mode: bool, json_options: dict,
                 excludes: list[str]) -> None:
        self.lw = lowering
        self.excludes = excludes
        self.doc = document
        self.style = style
        self.strict_mode = strict_mode
        self.json_options = json_options
        self.has_refs = '"$ref"' in json.dumps(document, ensure_ascii=False)
        self._free_text = None

    # -- the parameter list -------------------------------------------------------------------------------
    def root(self) -> str:
        s = self.doc
        if s is True or s == {}:
            s = {"type": "object", "additionalProperties": True}
        if not isinstance(s, dict):
            raise UnsupportedSchemaError("", "the arguments schema of an XML style must be an object schema")
        for kw in s:
            if kw in _RECOGNISED and kw not in _ROOT_KEYWORDS and kw not in ANNOTATIONS:  # others: annotations
                raise UnsupportedSchemaError(f"/{escape_pointer(kw)}", f"the keyword {kw!r} at the root of an XML-style "
                                             "arguments schema is not supported (it takes type \"object\", "
                                             "properties, required, additionalProperties, minProperties and "
                                             "maxProperties)")
        if s.get("type", "object") != "object":
            raise UnsupportedSchemaError("/type", "the arguments schema of an XML style must have type \"object\"")
        props = s.get("properties", {})
        required = set(s.get("required", []))
        if not isinstance(props, dict):
            raise UnsupportedSchemaError("/properties", "properties must be an object")
        missing = sorted(required - set(props))
        if missing:
            raise UnsupportedSchemaError("/required", f"required properties {missing} are not declared in "
                                         "properties (an XML-style arguments schema declares what it requires)")
        members = []  # (member expression, required)
        for name, sub in props.items():
            member = self.member(literal(name) if name else '""', sub, f"/properties/{escape_pointer(name)}",
                                 _declared_type(sub))
            if member is None:  # the property's schema accepts no value
                if name in required:
                    raise UnsatisfiableSchemaError(f"/properties/{escape_pointer(name)}",
                                                   "a required property accepts no value")
                continue
            members.append((member, name in required))
        extra = s.get("additionalProperties", not self.strict_mode)
        extra_member = None
        if extra is not False:
            extra_member = self.member("[a-zA-Z_] [a-zA-Z0-9_]*", extra, "/additionalProperties",
                                       _declared_type(extra))
        lo, hi = s.get("minProperties", 0), s.get("maxProperties")
        body = self.counted(members, extra_member, lo, hi)
        if body is None:
            raise UnsatisfiableSchemaError("/minProperties" if "minProperties" in s else "/maxProperties",
                                           "no parameter list satisfies minProperties / maxProperties")
        return self.lw.rule("xml_arguments", f"{body} {_WS}")

    def counted(self, members: list[tuple[str, bool]], extra: str | None, lo: int, hi: int | None) -> str | None:
        """The members in order (optional ones skippable), then extra ones, with a count in [lo, hi]: one rule per
        (position, count so far), the count capped where it no longer matters."""
        if lo == 0 and hi is None:
            parts = [m if req else f"({m})?" for m, req in members] + ([f"({extra})*"] if extra else [])
            return " ".join(parts) if parts else '""'
        cap = max(lo, hi if hi is not None else lo)
        memo: dict[tuple[int, int], str | None] = {}

        def state(i: int, c: int) -> str | None:
            if hi is not None and c > hi:
                return None
            c = min(c, cap)
            if (i, c) in memo:
                return memo[(i, c)]
            if i == len(members):
                need, room = max(lo - c, 0), (None if hi is None else hi - c)
                if extra is None:
                    out = '""' if need == 0 else None
                else:
                    out = f"({extra}){{{need},{'' if room is None else room}}}"
            else:
                member, req = members[i]
                options = []
                taken = state(i + 1, c + 1)
                if taken is not None:
                    options.append(f"{member} {taken}")
                if not req:
                    skipped = state(i + 1, c)
                    if skipped is not None:
                        options.append(skipped)
                out = self.lw.rule("xml_members", " | ".join(f"({o})" for o in options)) if options else None
            memo[(i, c)] = out
            return out

        return state(0, 0)

    def member(self, name: str, sub: Any, pointer: str, declared: str | None) -> str | None:
        """One parameter: whitespace, the opening tag with `name` (an EBNF expression), the value, the close."""
        raw, free = self.raw_part(sub, pointer, 0)
        json_part = self.json_part(sub, pointer)
        st = self.style
        close = literal(st.close)
        head = f"{_WS} {literal(st.open_head)} {name}"
        if st.string_marks:  # DeepSeek: the value's kind is written before it
            options = []
            if raw is not None:
                options.append(f"{literal(st.string_marks[0])} {raw} {close}")
            if json_part is not None:
                options.append(f"{literal(st.string_marks[1])} {_WS} {json_part} {_WS} {close}")
            return f"{head} ({' | '.join(options)})" if options else None
        values = [v for v in (raw, json_part) if v is not None]
        if not values:
            return None
        if free and json_part is None:
            value = raw
        else:
            value = f"{_WS} ({' | '.join(values)}) {_WS}"
        if st.type_head is not None:  # Kimi: the declared type's name (any name where the schema declares none)
            names = [{"integer": "number"}.get(declared, declared)] if declared else list(_TYPE_NAMES)
            kind = "(" + " | ".join(literal(n) for n in names) + ")"
            head = f"{head} {literal(st.type_head)} {kind}"
        if st.value_head:
            return f"{head} {literal(st.open_tail)} {_WS} {literal(st.value_head)} {value} {close}"
        return f"{head} {literal(st.open_tail)} {value} {close}"

    # -- values -------------------------------------------------------------------------------------------
    def json_part(self, sub: Any, pointer: str) -> str | None:
        """The rule of the non-string values of `sub` as JSON, or None when it has none."""
        from xg2jax.compiler import Grammar

        if sub is False:
            return None
        options = dict(self.json_options, strict_mode=self.strict_mode)
        user_refs = options.pop("refs", None) or {}
        declared = sub.get("type") if isinstance(sub, dict) else None
        if isinstance(declared, str) and declared != "string" and "$ref" not in json.dumps(sub, ensure_ascii=False):
            schema, refs = sub, user_refs  # no string values and no references: the schema as it is
        elif isinstance(declared, str) and declared == "string":
            return None
        elif self.has_refs:
            fragment = quote(pointer, safe="/~!$&'()*+,;=:@")
            schema, refs = {"allOf": [{"$ref": f"{_BASE}#{fragment}"}], "not": {"type": "string"}}, {_BASE: self.doc}
        else:
            schema, refs = {"allOf": [sub], "not": {"type": "string"}}, user_refs
        try:
            if self.excludes:  # JSON strings that avoid the texts: the native front end writes them
                from xg2jax.json_schema import native_grammar

                grammar = native_grammar(schema, refs=refs or None, string_excludes=self.excludes, **options)
            else:
                grammar = Grammar.from_json_schema(schema, refs=refs or None, **options)
        except UnsatisfiableSchemaError:
            return None
        return self.lw.embed(grammar, "json_schema")

    def raw_part(self, sub: Any, pointer: str, depth: int) -> tuple[str | None, bool]:
        """(the rule of the string values of `sub` written raw or None when it has none, whether it is free
        text)."""
        if depth > 32:
            raise UnsupportedSchemaError(pointer, "references nest too deep for an XML-style string value")
        if sub is True or sub == {}:
            return self.free_text(), True
        if not isinstance(sub, dict) or sub is False:
            return None, False
        if "$ref" in sub:
            target = self.resolve(sub["$ref"], pointer)
            rest = {k: v for k, v in sub.items() if k != "$ref" and k not in ANNOTATIONS}
            if rest:
                raise UnsupportedSchemaError(pointer, "keywords beside '$ref' in an XML-style parameter that "
                                             "accepts strings are not supported")
            return self.raw_part(target[1], target[0], depth + 1)
        declared = sub.get("type")
        if declared is not None:
            types = [declared] if isinstance(declared, str) else declared
            if "string" not in types:
                return None, False
        for kw in ("allOf", "oneOf", "not", "if"):
            if kw in sub:
                raise UnsupportedSchemaError(f"{pointer}/{kw}", f"'{kw}' in an XML-style parameter that accepts "
                                             "strings is not supported (its strings are written raw)")
        if "anyOf" in sub:
            if any(k in sub for k in _STRING_KEYWORDS | {"enum", "const"}):
                raise UnsupportedSchemaError(f"{pointer}/anyOf", "'anyOf' beside string keywords in an XML-style "
                                             "parameter is not supported")
            branches = [self.raw_part(b, f"{pointer}/anyOf/{i}", depth + 1) for i, b in enumerate(sub["anyOf"])]
            if any(free for _, free in branches):
                return self.free_text(), True
            found = [r for r, _ in branches if r is not None]
            return (self.lw.rule("xml_raw", " | ".join(found)), False) if found else (None, False)
        if "const" in sub or "enum" in sub:
            values = [sub["const"]] if "const" in sub else sub["enum"]
            strings = [v for v in values if isinstance(v, str)]
            if not strings:
                return None, False
            return self.lw.rule("xml_raw", " | ".join(literal(v) if v else '""' for v in _unique(strings))), False
        used = [k for k in ("pattern", "format") if k in sub] + (["lengths"] if {"minLength", "maxLength"} & set(sub)
                                                                 else [])
        if len(used) > 1:
            raise UnsupportedSchemaError(pointer, f"an XML-style string value constrained by {' and '.join(used)} "
                                         "together is not supported")
        if "pattern" in sub:
            return self.lw.rule("xml_raw", f"Regex({literal(search_regex(sub['pattern']))})"), False
        if "format" in sub and self.json_options.get("enforce_formats", True):
            from xg2jax.json_schema._formats import FORMATS

            if sub["format"] in FORMATS:
                return self.lw.rule("xml_raw", f"Regex({literal(FORMATS[sub['format']][1])})"), False
        if "minLength" in sub or "maxLength" in sub:
            lo, hi = sub.get("minLength", 0), sub.get("maxLength")
            bound = f"{{{lo},}}" if hi is None else f"{{{lo},{hi}}}"
            return self.lw.rule("xml_raw", f"{ANY_CHAR}{bound}"), False
        return self.free_text(), True

    def resolve(self, ref: Any, pointer: str) -> tuple[str, Any]:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise UnsupportedSchemaError(f"{pointer}/$ref", "only local references ('#/...') are supported in an "
                                         "XML-style parameter that accepts strings")
        path = unquote(ref[1:])
        found, node = follow_pointer(self.doc, path)
        if not found:
            raise UnsupportedSchemaError(f"{pointer}/$ref", f"the reference {ref!r} names nothing")
        return path, node

    # -- shared rules -------------------------------------------------------------------------------------
    def free_text(self) -> str:
        """Raw text up to the closing tag (the engine's TagDispatch with the close as its excluded string)."""
        if self._free_text is None:
            ends = ", ".join(literal(x) for x in _unique([*self.excludes, self.style.close]))
            self._free_text = self.lw.rule("xml_string", f"TagDispatch(loop_after_dispatch=false, excludes=({ends}))")
        return self._free_text


def _declared_type(sub: Any) -> str | None:
    if isinstance(sub, dict) and isinstance(sub.get("type"), str):
        return sub["type"]
    return None


def _unique(items: list) -> list:
    return list(dict.fromkeys(items))


def search_regex(pattern: str, search: bool = True) -> str:
    """A regex matching the whole of exactly the strings in which `pattern` finds a match (JSON Schema's search
    semantics): each top-level alternative gets ``[^]*`` on each side where it is not anchored. With
    ``search=False`` the anchors are dropped and nothing is added: the whole string matches `pattern` (how
    ``cohere_xml`` reads a raw string's pattern, as xgrammar does)."""
    alternatives = top_level_alternatives(hoist_anchors(pattern))
    out = []
    for alt in alternatives:
        head = alt.startswith("^")
        if head:
            alt = alt[1:]
        tail = alt.endswith("$") and (len(alt) - len(alt[:-1].rstrip("\\")) - 1) % 2 == 0
        if tail:
            alt = alt[:-1]
        out.append(("" if head or not search else "[^]*") + f"(?:{alt})" + ("" if tail or not search else "[^]*"))
    return "|".join(out)
