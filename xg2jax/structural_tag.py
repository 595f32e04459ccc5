"""Structural tags: xgrammar 0.2.9's JSON format for outputs that mix free text with tagged, constrained parts
(tool calls, reasoning blocks), lowered to one EBNF grammar.

Usage order::

    tag = {"type": "structural_tag", "format": {
        "type": "triggered_tags", "triggers": ["<tool_call>"],
        "tags": [{"type": "tag", "begin": "<tool_call>", "end": "</tool_call>",
                  "content": {"type": "json_schema", "json_schema": {...}}}]}}
    compiled = compiler.compile_structural_tag(tag)      # or Grammar.from_structural_tag(tag)

A tag is a dict, its JSON text, or an object with ``model_dump_json()`` (xgrammar's pydantic classes). The
legacy form ``compile_structural_tag(tags, triggers)`` takes :class:`StructuralTagItem` s (or dicts with
``begin`` / ``schema`` / ``end``) and means a ``triggered_tags`` of ``json_schema`` tags.

Lowering. Every format becomes one rule (``root`` refers to the top one):

- ``const_string``, ``sequence``, ``or``, ``optional``, ``star``, ``plus``, ``repeat``, ``tag``: the EBNF they
  read as (a ``tag`` is ``begin content end``; a list of ends is a choice).
- ``json_schema``, ``grammar``, ``regex``: the sub-grammar (:meth:`Grammar.from_json_schema` with
  ``any_whitespace=True, strict_mode=True``, :meth:`Grammar.from_ebnf` / ``from_lark``, :meth:`Grammar.from_regex`)
  embedded with its rule names prefixed. A ``json_schema``'s ``excludes`` are texts none of its strings contains
  (the native front end's ``string_excludes``; ``xg2jax.json_schema.native_grammar``).
- ``any_text``, ``triggered_tags``, ``dispatch``: the engine's ``TagDispatch`` (free text watched by an
  Aho-Corasick automaton; README, EBNF dialect). ``triggered_tags`` dispatches each trigger to the group of tags
  whose ``begin`` starts with it; ``tags_with_separator`` is a separated list of its tags.
- End detection, as xgrammar: ``any_text`` and ``triggered_tags`` add the string ends of the nearest enclosing
  ``tag`` to their excludes, so free text stops where the tag's end begins (``dispatch`` does not: give it the
  end in its own ``excludes``). A ``tag`` whose content is unbounded free text needs a non-empty end.

- Token-level formats (``token``, ``token_triggered_tags``, ``token_dispatch``, a token ``begin`` / ``end``)
  name tokens by id (``<tool_call>`` as one token): ``Token(id)`` and ``TokenTagDispatch(...)``, whose free text
  is tokens (any token but the triggers and excludes). A token given by its text is looked up in the compiler's
  vocabulary (first id with that text, as xgrammar).
- Markers as special tokens: compiled for a vocabulary (``compile_structural_tag``), a ``begin``, ``end``,
  ``const_string`` or separator that holds the text of one of its special tokens (not a stop token) also accepts
  that token in its place (``("<tool_call>" | Token(151657))``), and a trigger that begins with such a text is
  also triggered by the token, so a model that writes its markers as special tokens (Qwen's ``<tool_call>``) is
  followed as well as one that spells them; free text and JSON never produce a special token.

- Free text over tokens: ``exclude_token`` is ``ExcludeToken(ids)`` (one token, any but those), ``any_tokens``
  ``ExcludeToken(ids)*`` (``{0,max_tokens}`` with a budget: each reads exactly one token); inside a tag whose end
  is a token, that token is excluded too (as xgrammar).

The ``json_schema`` styles: ``json`` and ``gemma`` are the native JSON Schema front end's, ``minimax_m3_xml``
and ``cohere_xml`` are ``xg2jax.xml_values``, the others are ``xg2jax.xml_styles``.

Not supported (a :class:`StructuralTagError` names the feature): the ``max_tokens`` / ``max_chars`` budgets of
``any_text``.
Errors name the JSON path of the bad node (``/format/tags/0/content``).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from xg2jax.json_schema._ebnf import literal
from xg2jax.xml_styles import XML_STYLES, xml_arguments_rule
from xg2jax.xml_values import XML_VALUE_STYLES, xml_value_rule

__all__ = ["StructuralTagError", "StructuralTagItem", "structural_tag_value", "legacy_structural_tag",
           "structural_tag_to_ebnf"]

# Formats nest at most this deep (as xgrammar).
MAX_DEPTH = 100

# The largest any_tokens max_tokens written as a bounded repetition (the EBNF parser's repetition bound).
MAX_TOKEN_BUDGET = 1 << 20
# A format without "type": the first kind (xgrammar's order) whose required fields are all present.
_INFERENCE_ORDER = (("tag", ("begin", "content", "end")), ("const_string", ("value",)),
                    ("json_schema", ("json_schema",)), ("any_text", ("excludes",)), ("sequence", ("elements",)),
                    ("triggered_tags", ("triggers", "tags")), ("tags_with_separator", ("tags", "separator")),
                    ("optional", ("content",)), ("dispatch", ("rules",)))
# Free text of any code points (any_text without excludes).
_ANY_TEXT = "[\\x00-\\U0010FFFF]*"


class StructuralTagError(ValueError, RuntimeError):
    """A structural tag that is malformed, or that uses a feature this version does not support. The message
    starts with the JSON path of the bad node. Both a ``ValueError`` and a ``RuntimeError`` (xgrammar raises
    ``RuntimeError`` subclasses)."""


@dataclasses.dataclass(frozen=True)
class StructuralTagItem:
    """One tag of the legacy ``compile_structural_tag(tags, triggers)`` form: ``begin``, content matching the
    JSON Schema ``schema`` (a dict, its JSON text, or a pydantic model class), then ``end``."""

    begin: str
    schema: Any
    end: str


def legacy_structural_tag(tags, triggers) -> dict:
    """The ``triggered_tags`` structural tag the legacy ``(tags, triggers)`` form means."""
    items = []
    for i, t in enumerate(tags):
        if isinstance(t, dict):
            begin, schema, end = t.get("begin"), t.get("schema"), t.get("end")
        else:
            begin, schema, end = getattr(t, "begin", None), getattr(t, "schema", None), getattr(t, "end", None)
        if isinstance(schema, str):
            schema = json.loads(schema)
        elif isinstance(schema, type) and hasattr(schema, "model_json_schema"):
            schema = schema.model_json_schema()
        if not isinstance(begin, str) or not isinstance(end, str) or not isinstance(schema, (dict, bool)):
            raise StructuralTagError(f"structural tag at 'tags[{i}]': a legacy tag has a string begin and end and a "
                                     f"JSON Schema (dict, JSON text or pydantic model)")
        items.append({"type": "tag", "begin": begin, "end": end,
                      "content": {"type": "json_schema", "json_schema": schema}})
    return {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": list(triggers),
                                                 "tags": items, "at_least_one": False, "stop_after_first": False}}


def structural_tag_to_ebnf(tag: Any, tokenizer_info=None) -> str:
    """EBNF text (root rule ``root``) of a structural tag (a dict, JSON text, or an object with
    ``model_dump_json()``). ``tokenizer_info`` resolves tokens given by their text (``{"type": "token", "token":
    "<tool_call>"}``); ids work without it.

    Raises
    ------
    StructuralTagError
        A malformed tag or an unsupported feature, naming the JSON path of the node.
    """
    value = _as_json_value(tag)
    if not isinstance(value, dict):
        raise StructuralTagError("structural tag at '': must be an object")
    if "type" in value and value["type"] != "structural_tag":
        raise StructuralTagError("structural tag at '/type': must be the string \"structural_tag\"")
    if "format" not in value:
        raise StructuralTagError("structural tag at '': must have a format field")
    lowering = _Lowering(tokenizer_info)
    top = lowering.visit(value["format"], "/format", (), 1)
    return "\n".join([f"root ::= {top}"] + [f"{name} ::= {body}" for name, body in lowering.rules]
                     + lowering.embedded) + "\n"


def structural_tag_value(structural_tag=None, triggers=None, tags=None) -> Any:
    """The JSON value of the arguments of ``from_structural_tag`` / ``compile_structural_tag``: a tag (a dict, JSON
    text, or an object with ``model_dump_json()``), or the legacy ``(tags, triggers)`` form."""
    if tags is not None or triggers is not None:
        return legacy_structural_tag(structural_tag if tags is None else tags, triggers or [])
    return _as_json_value(structural_tag)


def _as_json_value(tag: Any) -> Any:
    if isinstance(tag, (str, bytes)):
        try:
            return json.loads(tag)
        except json.JSONDecodeError as exc:
            raise StructuralTagError(f"structural tag at '': failed to parse JSON: {exc}") from None
    if hasattr(tag, "model_dump_json"):  # pydantic (xgrammar's StructuralTag classes)
        return json.loads(tag.model_dump_json())
    return tag


def _escape_pointer(key) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


class _Lowering:
    """One pass over the format tree: rules (name, body) in order of creation, and embedded grammars' text."""

    def __init__(self, tokenizer_info=None) -> None:
        self.tokenizer_info = tokenizer_info
        # Markers a model writes as one special token (Qwen's <tool_call>): their text in a literal also
        # accepts that token (see the module docstring).
        self.markers = _special_markers(tokenizer_info) if tokenizer_info is not None else {}
        self._marker_lengths: dict[str, list[int]] = {}  # first character -> marker lengths, longest first
        for m in self.markers:
            self._marker_lengths.setdefault(m[0], []).append(len(m))
        for lengths in self._marker_lengths.values():
            lengths[:] = sorted(set(lengths), reverse=True)
        self._lit_cache: dict[str, str] = {}
        self.rules: list[tuple[str, str]] = []
        self.embedded: list[str] = []
        self.tag_parts: dict[str, tuple[str, str, list[str]]] = {}  # tag rule -> (begin, content rule, ends)
        self.shared: dict[str, str] = {}  # JSON lexical rules embedded once: name -> body
        self._count: dict[str, int] = {}

    def name(self, kind: str) -> str:
        """A fresh rule name for a format of `kind` (defined later by `define`, possibly recursively)."""
        n = self._count.get(kind, 0)
        self._count[kind] = n + 1
        return f"{kind}_{n}"

    def define(self, name: str, body: str) -> str:
        self.rules.append((name, body))
        return name

    def rule(self, kind: str, body: str) -> str:
        return self.define(self.name(kind), body)

    def embed(self, grammar, kind: str) -> str:
        """A sub-grammar's rules under a fresh prefix (``sub<k>_``, which no lowered rule name starts with);
        returns its root's name. A JSON Schema's lexical rules (``j_...``) are embedded once for all the schemas
        whose copies are identical (the same text, naming the same rules): a tool set of 400 schemas would
        otherwise carry 400 copies of the JSON string, number and value rules."""
        prefix = f"sub{len(self.embedded)}_"
        handle = grammar._handle
        if kind == "json_schema":
            keep = [n for n in handle.rule_names if n.startswith("j_")]
            lines = str(type(grammar)(handle.with_rule_prefix(prefix, keep))).splitlines()
            bodies = dict(line.split(" ::= ", 1) for line in lines)
            if all(self.shared.get(n, bodies[n]) == bodies[n] for n in keep):
                new = [n for n in keep if n not in self.shared]
                self.shared.update((n, bodies[n]) for n in new)
                self.embedded.append("\n".join(line for line in lines
                                               if line.split(" ::= ", 1)[0] not in keep or
                                               line.split(" ::= ", 1)[0] in new))
                return prefix + grammar.root_rule_name
        self.embedded.append(str(type(grammar)(handle.with_rule_prefix(prefix))).rstrip("\n"))
        return prefix + grammar.root_rule_name

    def embed_native_json_schema(self, schema_text: str, *, string_excludes=(), string_style: str = "json",
                                 **options) -> str | None:
        """The fast path of a ``json_schema`` format: the native front end writes the grammar with its rules
        already prefixed (``sub<k>_``) and the lexical (``j_``) and format (``fmt_``) rules under their own names,
        shared by every schema converted under the same options. None when the native front end does not take
        the schema, or when a shared rule would get another body (other options): the caller then takes the
        general path, which also reports errors. ``string_excludes``: texts no JSON string may contain
        (``JsonSchemaOptions::string_excludes``); ``string_style``: "json" or "gemma" (``StringStyle``)."""
        from xg2jax import _core
        from xg2jax.json_schema import native_arguments

        native = native_arguments(schema_text, any_whitespace=True, **options)
        if native is None:
            return None
        prefix = f"sub{len(self.embedded)}_"
        text = _core.json_schema_to_ebnf_native(native[1], *native[2], rule_prefix=prefix,
                                                string_excludes=list(string_excludes), string_style=string_style)[0]
        if text is None:
            return None
        own, new_shared = [], {}
        for line in text.splitlines():
            name, body = line.split(" ::= ", 1)
            if name.startswith(("j_", "fmt_")):
                held = self.shared.get(name, new_shared.get(name))
                if held is None:
                    new_shared[name] = body
                elif held != body:
                    return None
            else:
                own.append(line)
        self.shared.update(new_shared)
        self.embedded.append("\n".join(own + [f"{n} ::= {b}" for n, b in new_shared.items()]))
        return prefix + "root"

    def lit(self, text: str) -> str:
        """A string literal of the format tree (begin, end, const_string, separator) as EBNF: each occurrence of a
        special token's text (leftmost, longest) also accepts that token."""
        if not self.markers or not text:
            return literal(text) if text else '""'
        cached = self._lit_cache.get(text)
        if cached is not None:
            return cached
        ids, lengths = self.markers, self._marker_lengths
        parts, at, i = [], 0, 0
        while i < len(text):
            hit = next((text[i:i + n] for n in lengths.get(text[i], ()) if text[i:i + n] in ids), None)
            if hit is None:
                i += 1
                continue
            if i > at:
                parts.append(literal(text[at:i]))
            parts.append(f"({literal(hit)} | Token({ids[hit]}))")
            i = at = i + len(hit)
        if at < len(text):
            parts.append(literal(text[at:]))
        self._lit_cache[text] = out = " ".join(parts)
        return out

    def marker_trigger(self, trigger: str) -> tuple[int, str] | None:
        """(token id, the rest of the trigger) when the trigger begins with a special token's text."""
        best = max((m for m in self.markers if trigger.startswith(m)), key=len, default=None)
        return None if best is None else (self.markers[best], trigger[len(best):])

    # -- field readers -----------------------------------------------------------------------------------
    @staticmethod
    def fail(path: str, message: str):
        raise StructuralTagError(f"structural tag at '{path}': {message}")

    def field(self, fmt: dict, key: str, path: str, kind: str, types, what: str, default=dataclasses.MISSING):
        if key not in fmt:
            if default is dataclasses.MISSING:
                self.fail(path, f"{kind} format must have a {key} field ({what})")
            return default
        v = fmt[key]
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in _as_tuple(types)):
            self.fail(f"{path}/{key}", f"{kind} format's {key} must be {what}")
        return v

    def strings(self, fmt: dict, key: str, path: str, kind: str, *, non_empty_list: bool, default=None) -> list[str]:
        v = self.field(fmt, key, path, kind, list, "a list of non-empty strings",
                       dataclasses.MISSING if default is None else default)
        if non_empty_list and not v:
            self.fail(f"{path}/{key}", f"{kind} format's {key} must not be empty")
        for i, s in enumerate(v):
            if not isinstance(s, str) or not s:
                self.fail(f"{path}/{key}/{i}", f"{kind} format's {key} must hold non-empty strings")
        return v

    # -- formats -----------------------------------------------------------------------------------------
    def visit(self, fmt: Any, path: str, ends: tuple[str, ...], depth: int) -> str:
        """The rule name (or EBNF atom) for format `fmt`; `ends` are the string ends of the nearest enclosing
        tag (see the module docstring)."""
        if depth > MAX_DEPTH:
            self.fail(path, f"formats nest deeper than {MAX_DEPTH} levels")
        if not isinstance(fmt, dict):
            self.fail(path, "a format must be an object")
        kind = fmt.get("type")
        if kind is None:
            kind = next((k for k, req in _INFERENCE_ORDER if all(r in fmt for r in req)), None)
            if kind is None:
                self.fail(path, f"a format without a type must have the fields of one: {json.dumps(fmt)[:200]}")
        if not isinstance(kind, str):
            self.fail(f"{path}/type", "a format's type must be a string")
        method = getattr(self, "_" + kind, None) if kind in _FORMAT_KINDS else None
        if method is None:
            self.fail(f"{path}/type", f"format type not recognized: {kind!r} (supported: {', '.join(_FORMAT_KINDS)})")
        return method(fmt, path, ends, depth)

    def _const_string(self, fmt, path, ends, depth):
        value = self.field(fmt, "value", path, "const_string", str, "a string")
        return self.rule("const_string", self.lit(value))

    def _json_schema(self, fmt, path, ends, depth):
        from xg2jax.compiler import Grammar

        schema = self.field(fmt, "json_schema", path, "json_schema", (dict, bool), "an object or a boolean")
        style = self.field(fmt, "style", path, "json_schema", str, "a string", "json")
        supported = ("json", "gemma") + tuple(XML_STYLES) + XML_VALUE_STYLES
        if style not in supported:
            self.fail(f"{path}/style", f"json_schema style must be one of {', '.join(supported)}; got {style!r}")
        any_order = self.field(fmt, "any_order", path, "json_schema", bool, "a boolean", False)
        max_ws = self.field(fmt, "max_whitespace_cnt", path, "json_schema", (int, type(None)), "an integer or null",
                            None)
        excludes = _unique(self.strings(fmt, "excludes", path, "json_schema", non_empty_list=False, default=[]))
        if style in XML_VALUE_STYLES:
            try:
                return xml_value_rule(self, schema, style, excludes=excludes, any_order=any_order,
                                      max_whitespace_cnt=max_ws)
            except ValueError as exc:
                self.fail(f"{path}/json_schema", str(exc))
        if style not in ("json", "gemma"):
            try:
                return xml_arguments_rule(self, schema, style, strict_mode=True, any_order=any_order,
                                          max_whitespace_cnt=max_ws, excludes=excludes)
            except ValueError as exc:
                self.fail(f"{path}/json_schema", str(exc))
        try:  # as JSON text, the native front end takes it without walking the dict first
            schema = json.dumps(schema, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            pass  # not JSON (a NaN, a non-string key): the front end reports it
        if isinstance(schema, str):
            root = self.embed_native_json_schema(schema, any_order=any_order, max_whitespace_cnt=max_ws,
                                                 string_excludes=excludes, string_style=style)
            if root is not None:
                return root
        if excludes or style == "gemma":  # only the native front end writes these
            from xg2jax.json_schema import native_grammar
            try:
                grammar = native_grammar(schema, string_excludes=excludes, string_style=style, any_whitespace=True,
                                         strict_mode=True, any_order=any_order, max_whitespace_cnt=max_ws)
            except ValueError as exc:
                self.fail(f"{path}/excludes", str(exc))
            return self.embed(grammar, "json_schema")
        grammar = Grammar.from_json_schema(schema, any_whitespace=True, strict_mode=True, any_order=any_order,
                                           max_whitespace_cnt=max_ws)
        return self.embed(grammar, "json_schema")

    def _grammar(self, fmt, path, ends, depth):
        from xg2jax.compiler import Grammar

        text = self.field(fmt, "grammar", path, "grammar", str, "a non-empty string")
        if not text:
            self.fail(f"{path}/grammar", "grammar format's grammar must be a non-empty string")
        syntax = self.field(fmt, "syntax", path, "grammar", str, "a string", "ebnf")
        if syntax not in ("ebnf", "lark"):
            self.fail(f"{path}/syntax", "grammar format's syntax must be \"ebnf\" or \"lark\"")
        return self.embed(Grammar.from_ebnf(text) if syntax == "ebnf" else Grammar.from_lark(text), "grammar")

    def _regex(self, fmt, path, ends, depth):
        from xg2jax.compiler import Grammar

        pattern = self.field(fmt, "pattern", path, "regex", str, "a non-empty string")
        if not pattern:
            self.fail(f"{path}/pattern", "regex format's pattern must be a non-empty string")
        return self.embed(Grammar.from_regex(pattern), "regex")

    def _any_text(self, fmt, path, ends, depth):
        excludes = self.strings(fmt, "excludes", path, "any_text", non_empty_list=False, default=[])
        for key in ("max_tokens", "max_chars"):
            if fmt.get(key) is not None:
                self.fail(f"{path}/{key}", f"the {key} budget of any_text is not supported yet")
        excludes = _unique(excludes + [e for e in ends if isinstance(e, str)])
        if not excludes:
            return self.rule("any_text", _ANY_TEXT)
        return self.rule("any_text", _tag_dispatch([], loop=False, excludes=excludes))

    def _sequence(self, fmt, path, ends, depth):
        return self.rule("sequence", " ".join(self._elements(fmt, path, "sequence", ends, depth)))

    def _or(self, fmt, path, ends, depth):
        return self.rule("or", " | ".join(self._elements(fmt, path, "or", ends, depth)))

    def _elements(self, fmt, path, kind, ends, depth):
        elements = self.field(fmt, "elements", path, kind, list, "a list of formats")
        if not elements:
            self.fail(f"{path}/elements", f"{kind} format must have at least one element")
        return [self.visit(e, f"{path}/elements/{i}", ends, depth + 1) for i, e in enumerate(elements)]

    def _content(self, fmt, path, kind, ends, depth):
        if "content" not in fmt:
            self.fail(path, f"{kind} format must have a content field")
        return self.visit(fmt["content"], f"{path}/content", ends, depth + 1)

    def _optional(self, fmt, path, ends, depth):
        return self.rule("optional", '"" | ' + self._content(fmt, path, "optional", ends, depth))

    def _star(self, fmt, path, ends, depth):
        return self.rule("star", self._content(fmt, path, "star", ends, depth) + "*")

    def _plus(self, fmt, path, ends, depth):
        return self.rule("plus", self._content(fmt, path, "plus", ends, depth) + "+")

    def _repeat(self, fmt, path, ends, depth):
        lo = self.field(fmt, "min", path, "repeat", int, "a non-negative integer")
        hi = self.field(fmt, "max", path, "repeat", int, "an integer (-1: unbounded)")
        if lo < 0:
            self.fail(f"{path}/min", "repeat min must be >= 0")
        if hi < -1 or (hi >= 0 and hi < lo):
            self.fail(f"{path}/max", "repeat max must be -1 (unbounded) or >= min")
        content = self._content(fmt, path, "repeat", ends, depth)
        return self.rule("repeat", f"{content}{{{lo},}}" if hi == -1 else f"{content}{{{lo},{hi}}}")

    def token_id(self, value, path: str) -> int:
        """A token given by id, or by its exact text (the first id with that text, as xgrammar)."""
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                self.fail(path, "a token id must be non-negative")
            return value
        if not isinstance(value, str) or not value:
            self.fail(path, "a token is a non-negative integer id or a non-empty string")
        if self.tokenizer_info is None:
            self.fail(path, f"the token {value!r} is given by its text, which needs a tokenizer: use "
                            f"GrammarCompiler.compile_structural_tag (or give the id)")
        ids = _token_ids_by_text(self.tokenizer_info)
        data = value.encode("utf-8")
        if data not in ids:
            self.fail(path, f"token {value!r} not found in the vocabulary")
        return ids[data]

    def token_format(self, fmt, path: str) -> int:
        if not isinstance(fmt, dict) or fmt.get("type", "token") != "token" or "token" not in fmt:
            self.fail(path, "a token begin or end is a token format {\"type\": \"token\", \"token\": ...}")
        return self.token_id(fmt["token"], f"{path}/token")

    def _token(self, fmt, path, ends, depth):
        if "token" not in fmt:
            self.fail(path, "token format must have a token field")
        return self.rule("token", f"Token({self.token_id(fmt['token'], f'{path}/token')})")

    def _tag(self, fmt, path, ends, depth):
        begin = fmt.get("begin")
        if isinstance(begin, dict):
            begin = self.token_format(begin, f"{path}/begin")
        else:
            begin = self.field(fmt, "begin", path, "tag", str, "a string or a token format")
        end = self.field(fmt, "end", path, "tag", (str, list, dict), "a string, a non-empty list of strings or a token")
        if isinstance(end, dict):
            end = self.token_format(end, f"{path}/end")
        end_list = [end] if isinstance(end, (str, int)) else end
        if not end_list:
            self.fail(f"{path}/end", "tag format's end list must not be empty")
        if isinstance(end, list):
            for i, e in enumerate(end_list):
                if not isinstance(e, str):
                    self.fail(f"{path}/end/{i}", "tag format's end list must hold strings")
        if "content" not in fmt:
            self.fail(path, "tag format must have a content field")
        if all(e == "" for e in end_list) and _unlimited(fmt["content"]) and not _has_excludes(fmt["content"]):
            self.fail(f"{path}/end", "when the content is unlimited, at least one end string must be non-empty")
        content = self.visit(fmt["content"], f"{path}/content", tuple(e for e in end_list if e != ""), depth + 1)
        name = self.rule("tag", _seq(begin, content, end_list, self.lit))
        self.tag_parts[name] = (begin, content, end_list)
        return name

    def _tags(self, fmt, path, kind, ends, depth):
        tags = self.field(fmt, "tags", path, kind, list, "a non-empty list of tag formats")
        if not tags:
            self.fail(f"{path}/tags", f"{kind} format's tags must not be empty")
        for i, t in enumerate(tags):
            if not isinstance(t, dict) or t.get("type", "tag") != "tag":
                self.fail(f"{path}/tags/{i}", f"{kind} format's tags must be tag formats")
        return tags

    def _flag(self, fmt, path, kind, key, default):
        return self.field(fmt, key, path, kind, bool, "a boolean", default)

    def _triggered_tags(self, fmt, path, ends, depth):
        triggers = self.strings(fmt, "triggers", path, "triggered_tags", non_empty_list=True)
        tags = self._tags(fmt, path, "triggered_tags", ends, depth)
        at_least_one = self._flag(fmt, path, "triggered_tags", "at_least_one", False)
        stop_after_first = self._flag(fmt, path, "triggered_tags", "stop_after_first", False)
        excludes = self.strings(fmt, "excludes", path, "triggered_tags", non_empty_list=False, default=[])
        full = [self.visit(t, f"{path}/tags/{i}", ends, depth + 1) for i, t in enumerate(tags)]
        if at_least_one and stop_after_first:
            return self.rule("triggered_tags", " | ".join(full))
        groups: dict[str, list[str]] = {t: [] for t in triggers}
        for i, t in enumerate(tags):
            begin = t.get("begin")
            if not isinstance(begin, str):
                self.fail(f"{path}/tags/{i}/begin", "tags in triggered_tags must have a string begin")
            matching = [tr for tr in triggers if begin.startswith(tr)]
            if not matching:
                self.fail(f"{path}/tags/{i}", "the tag does not match any trigger of the triggered_tags format")
            if len(matching) > 1:
                self.fail(f"{path}/tags/{i}", "the tag matches several triggers of the triggered_tags format")
            _, content, end_list = self.tag_parts[full[i]]  # the tag after its trigger
            groups[matching[0]].append(_seq(begin[len(matching[0]):], content, end_list, self.lit))
        pairs = [(tr, self.rule("triggered_tags_group", " | ".join(f"({g})" for g in group)))
                 for tr, group in groups.items() if group]
        # A trigger that begins with a special token's text: the token triggers it too (then the trigger's rest).
        by_token: dict[int, list[str]] = {}
        for tr, group_rule in pairs:
            marker = self.marker_trigger(tr)
            if marker is not None:
                by_token.setdefault(marker[0], []).append(f"{self.lit(marker[1])} {group_rule}" if marker[1]
                                                          else group_rule)
        pairs += [(tid, bodies[0] if len(bodies) == 1 and " " not in bodies[0] else
                   self.rule("triggered_tags_token_group", " | ".join(f"({b})" for b in bodies)))
                  for tid, bodies in by_token.items()]
        dispatch = self.rule("triggered_tags_sub", _tag_dispatch(
            pairs, loop=not stop_after_first, excludes=_unique(excludes + [e for e in ends if isinstance(e, str)])))
        if at_least_one:
            first = self.rule("triggered_tags_first", " | ".join(full))
            return self.rule("triggered_tags", f"{first} {dispatch}" if not stop_after_first else first)
        return dispatch

    def _tags_with_separator(self, fmt, path, ends, depth):
        tags = self._tags(fmt, path, "tags_with_separator", ends, depth)
        separator = self.field(fmt, "separator", path, "tags_with_separator", str, "a string")
        at_least_one = self._flag(fmt, path, "tags_with_separator", "at_least_one", False)
        stop_after_first = self._flag(fmt, path, "tags_with_separator", "stop_after_first", False)
        full = [self.visit(t, f"{path}/tags/{i}", (), depth + 1) for i, t in enumerate(tags)]
        one = self.rule("tags_with_separator_tags", " | ".join(full))
        if stop_after_first:
            return self.rule("tags_with_separator", one if at_least_one else f'"" | {one}')
        sep = f"{self.lit(separator)} " if separator else ""
        sub_name = self.name("tags_with_separator_sub")
        self.define(sub_name, f'"" | {sep}{one} {sub_name}')
        return self.rule("tags_with_separator", f"{one} {sub_name}" if at_least_one else f'"" | {one} {sub_name}')

    def _dispatch(self, fmt, path, ends, depth):
        rules = self.field(fmt, "rules", path, "dispatch", list, "a non-empty list of [trigger, format] pairs")
        if not rules:
            self.fail(f"{path}/rules", "dispatch format's rules must not be empty")
        loop = self._flag(fmt, path, "dispatch", "loop", True)
        excludes = self.strings(fmt, "excludes", path, "dispatch", non_empty_list=False, default=[])
        pairs = []
        for i, pair in enumerate(rules):
            if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str) or not pair[0]:
                self.fail(f"{path}/rules/{i}", "a dispatch rule is a pair [non-empty trigger string, format]")
            pairs.append((pair[0], self.visit(pair[1], f"{path}/rules/{i}/1", (), depth + 1)))
        for x in excludes:
            for trigger, _ in pairs:
                if trigger.startswith(x):
                    self.fail(f"{path}/excludes", f"the exclude {x!r} is a prefix of the trigger {trigger!r}")
        return self.rule("dispatch", _tag_dispatch(pairs, loop=loop, excludes=excludes))

    def token_list(self, fmt, key, path, kind, *, non_empty: bool) -> list[int]:
        values = self.field(fmt, key, path, kind, list, "a list of tokens", dataclasses.MISSING if non_empty else [])
        if non_empty and not values:
            self.fail(f"{path}/{key}", f"{kind} format's {key} must not be empty")
        return [self.token_id(v, f"{path}/{key}/{i}") for i, v in enumerate(values)]

    def _excluded_tokens(self, fmt, path, kind, ends) -> str:
        """ExcludeToken(...) of the format's exclude_tokens and the enclosing tag's token end."""
        excludes = self.token_list(fmt, "exclude_tokens", path, kind, non_empty=False)
        ids = _unique(excludes + [e for e in ends if isinstance(e, int)])
        return f"ExcludeToken({', '.join(str(i) for i in ids)})"

    def _exclude_token(self, fmt, path, ends, depth):
        return self.rule("exclude_token", self._excluded_tokens(fmt, path, "exclude_token", ends))

    def _any_tokens(self, fmt, path, ends, depth):
        one = self._excluded_tokens(fmt, path, "any_tokens", ends)
        budget = fmt.get("max_tokens")
        if budget is None:
            return self.rule("any_tokens", f"{one}*")
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
            self.fail(f"{path}/max_tokens", "any_tokens format's max_tokens must be a non-negative integer or null")
        if budget > MAX_TOKEN_BUDGET:
            self.fail(f"{path}/max_tokens", f"any_tokens max_tokens above {MAX_TOKEN_BUDGET} is not supported (a "
                                            f"bounded repetition of one token each); use null for no budget")
        return self.rule("any_tokens", f"{one}{{0,{budget}}}" if budget else '""')

    def _token_triggered_tags(self, fmt, path, ends, depth):
        kind = "token_triggered_tags"
        triggers = self.token_list(fmt, "trigger_tokens", path, kind, non_empty=True)
        tags = self._tags(fmt, path, kind, ends, depth)
        at_least_one = self._flag(fmt, path, kind, "at_least_one", False)
        stop_after_first = self._flag(fmt, path, kind, "stop_after_first", False)
        excludes = self.token_list(fmt, "exclude_tokens", path, kind, non_empty=False)
        full = [self.visit(t, f"{path}/tags/{i}", ends, depth + 1) for i, t in enumerate(tags)]
        if at_least_one and stop_after_first:
            return self.rule(kind, " | ".join(full))
        groups: dict[int, list[str]] = {t: [] for t in triggers}
        for i, name in enumerate(full):
            begin, content, end_list = self.tag_parts[name]
            if begin not in groups:
                self.fail(f"{path}/tags/{i}/begin", "tags in token_triggered_tags must begin with one of the trigger "
                                                    "tokens")
            groups[begin].append(_seq("", content, end_list))
        pairs = [(t, self.rule(f"{kind}_group", " | ".join(f"({g})" for g in group)))
                 for t, group in groups.items() if group]
        end_tokens = [e for e in ends if isinstance(e, int)]
        dispatch = self.rule(f"{kind}_sub", _tag_dispatch(pairs, loop=not stop_after_first,
                                                          excludes=_unique(excludes + end_tokens)))
        if at_least_one:
            return self.rule(kind, f"{self.rule(kind + '_first', ' | '.join(full))} {dispatch}")
        return dispatch

    def _token_dispatch(self, fmt, path, ends, depth):
        rules = self.field(fmt, "rules", path, "token_dispatch", list, "a non-empty list of [token, format] pairs")
        if not rules:
            self.fail(f"{path}/rules", "token_dispatch format's rules must not be empty")
        loop = self._flag(fmt, path, "token_dispatch", "loop", True)
        excludes = self.token_list(fmt, "exclude_tokens", path, "token_dispatch", non_empty=False)
        pairs = []
        for i, pair in enumerate(rules):
            if not isinstance(pair, list) or len(pair) != 2:
                self.fail(f"{path}/rules/{i}", "a token_dispatch rule is a pair [token, format]")
            pairs.append((self.token_id(pair[0], f"{path}/rules/{i}/0"),
                          self.visit(pair[1], f"{path}/rules/{i}/1", (), depth + 1)))
        return self.rule("token_dispatch", _tag_dispatch(pairs, loop=loop, excludes=excludes))


_FORMAT_KINDS = ("const_string", "json_schema", "grammar", "regex", "any_text", "sequence", "or", "optional", "star",
                 "plus", "repeat", "tag", "triggered_tags", "tags_with_separator", "dispatch", "token",
                 "exclude_token", "any_tokens", "token_triggered_tags", "token_dispatch")


def _token_ids_by_text(tokenizer_info) -> dict:
    """Decoded token bytes -> the first id with them (cached on the TokenizerInfo)."""
    table = getattr(tokenizer_info, "_ids_by_text", None)
    if table is None:
        table = {}
        for i, b in enumerate(tokenizer_info.decoded_vocab):
            table.setdefault(bytes(b), i)
        tokenizer_info._ids_by_text = table
    return table


def _as_tuple(types) -> tuple:
    return types if isinstance(types, tuple) else (types,)


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _special_markers(tokenizer_info) -> dict[str, int]:
    """Text -> id of the vocabulary's special tokens a structural tag may name by their text (not stop tokens,
    non-empty valid UTF-8, the first id per text); cached on the TokenizerInfo."""
    table = getattr(tokenizer_info, "_special_markers", None)
    if table is None:
        table = {}
        stops = set(tokenizer_info.stop_token_ids)
        decoded = tokenizer_info.decoded_vocab
        for i in tokenizer_info.special_token_ids:
            if i in stops or i >= len(decoded) or not decoded[i]:
                continue
            try:
                table.setdefault(bytes(decoded[i]).decode("utf-8"), i)
            except UnicodeDecodeError:
                continue
        tokenizer_info._special_markers = table
    return table


def _atom(piece, lit=None) -> str:
    """A begin / end: a string literal (through `lit`), or a token id as ``Token(id)``."""
    if isinstance(piece, int):
        return f"Token({piece})"
    if lit is not None:
        return lit(piece)
    return literal(piece) if piece else '""'


def _seq(begin, content: str, end_list, lit=None) -> str:
    """``begin content end`` as EBNF (a list of ends as a choice; empty strings left out; ids as tokens)."""
    parts = [_atom(begin, lit)] if begin != "" else []
    parts.append(content)
    if isinstance(end_list, (str, int)):
        end_list = [end_list]
    ends = [_atom(e, lit) for e in end_list]
    if len(ends) == 1:
        if ends[0] != '""':
            parts.append(ends[0])
    else:
        parts.append("(" + " | ".join(ends) + ")")
    return " ".join(parts)


def _tag_dispatch(pairs, *, loop: bool, excludes: list) -> str:
    """TagDispatch (string triggers, token ids allowed beside them), or TokenTagDispatch when every trigger and
    exclude is a token id."""
    tokens = all(isinstance(t, int) for t, _ in pairs) and all(isinstance(x, int) for x in excludes)

    def quote(t):
        return str(t) if isinstance(t, int) else literal(t)

    args = [f"({quote(t)}, {rule})" for t, rule in pairs]
    args.append(f"loop_after_dispatch={'true' if loop else 'false'}")
    if excludes:
        args.append("excludes=(" + ", ".join(quote(x) for x in excludes) + ")")
    return ("TokenTagDispatch(" if tokens else "TagDispatch(") + ", ".join(args) + ")"


def _unlimited(fmt: Any) -> bool:
    """Whether a format can match unboundedly long text (xgrammar's analyzer)."""
    if not isinstance(fmt, dict):
        return False
    kind = fmt.get("type")
    if kind in ("any_text", "triggered_tags", "dispatch", "tags_with_separator", "star", "plus", "any_tokens",
                "token_triggered_tags", "token_dispatch"):
        return True
    if kind == "optional":
        return _unlimited(fmt.get("content"))
    if kind == "repeat":
        hi = fmt.get("max")
        return hi == -1 or (hi != 0 and _unlimited(fmt.get("content")))
    if kind in ("sequence", "or"):
        return any(_unlimited(e) and not _has_excludes(e) for e in fmt.get("elements") or [])
    return False


def _has_excludes(fmt: Any) -> bool:
    return isinstance(fmt, dict) and bool(fmt.get("excludes") or fmt.get("exclude_tokens"))
