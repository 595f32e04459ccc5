"""Lark's dynamic dispatch (xgrammar's reading of a tool-call loop in free text) -> the engine's ``TagDispatch``.

The form: a rule whose body is ``T* tail`` (or ``(T1 | T2 | ...)* tail``) where ``tail`` is any text (a rule or
terminal that is ``/(\\n|.)*/``, ``/.*/s``, ``/[\\s\\S]*/``, possibly through aliases) and each tool ``T`` starts
with its trigger:

* ``T: head rest...`` with ``head[lazy]: TEXT "marker"``, ``head[lazy]: /(\\n|.)*marker/`` or
  ``head[suffix="marker"]: TEXT`` (``stop`` alike): free text, then the marker;
* ``T: TEXT <|special|> rest...``: free text, then a special token (a token trigger).

Read as a context-free grammar the tail could swallow a marker; xgrammar (and this front end) read it as a dispatch
instead: free text in which a completed marker always starts its tool's ``rest``, after which free text goes on,
and the text may end anywhere in free text: ``TagDispatch(("marker", rest), ..., loop_after_dispatch=true)``.
Tools sharing a marker share one tag (their rests as alternatives). String and token triggers cannot be mixed.
"""

from __future__ import annotations

# Patterns of a terminal that matches any text (Lark's flags: without ``s``, ``.`` excludes only "\n").
_ANY_TEXT = {r"(\n|.)*", r"(.|\n)*", r"(?:\n|.)*", r"(?:.|\n)*", r"[\s\S]*", r"[\S\s]*", r"[^]*"}
_ANY_TEXT_DOTALL = {r".*", r"(.)*", r"(?:.)*"}
_REGEX_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}


def strip_singletons(node: tuple) -> tuple:
    """`node` without wrapping one-item sequences."""
    while node[0] == "seq" and len(node[1]) == 1:
        node = node[1][0]
    return node


def is_any_text_regex(pattern: str, flags: str) -> bool:
    return pattern in _ANY_TEXT or ("s" in flags and pattern in _ANY_TEXT_DOTALL)


def _literal_of_regex(pattern: str) -> str | None:
    """The text a regex without metacharacters matches (``\\n``, ``\\.`` and other escapes decoded), else None."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            e = pattern[i + 1]
            if e in _REGEX_ESCAPES:
                out.append(_REGEX_ESCAPES[e])
            elif not e.isalnum():
                out.append(e)
            else:
                return None
            i += 2
        elif c in "^$.|?*+()[]{}":
            return None
        else:
            out.append(c)
            i += 1
    return "".join(out) or None


class DispatchReader:
    """Recognises the dynamic-dispatch form in a parsed Lark document (see the module docstring)."""

    def __init__(self, doc):
        self.doc = doc

    def definition(self, name: str):
        return self.doc.definitions.get(name)

    def is_any_text(self, node: tuple) -> bool:
        """A reference (through single-reference rules and terminals) to an any-text regex, or that regex."""
        seen = set()
        node = strip_singletons(node)
        while node[0] == "ref" and node[1] not in seen:
            seen.add(node[1])
            d = self.definition(node[1])
            if d is None or d.attrs:
                return False
            node = strip_singletons(d.body)
        return node[0] == "re" and is_any_text_regex(node[1], node[2])

    def head_marker(self, node: tuple) -> tuple[str, object] | None:
        """(kind, marker) when `node` refers to a lazy / suffix / stop head over any text: ("text", marker text),
        ("regex", marker text) for the one-regex form ``/(\\n|.)*marker/``, ("token", special-token node); else
        None."""
        node = strip_singletons(node)
        if node[0] != "ref":
            return None
        d = self.definition(node[1])
        if d is None or d.is_terminal or not d.attrs:
            return None
        body = strip_singletons(d.body)
        marker = d.attrs.get("suffix") or d.attrs.get("stop")
        if marker is not None:
            m = strip_singletons(marker[0])
            if self.is_any_text(body) and m[0] == "str" and not m[2]:
                return ("text", m[1])
            return None
        if "lazy" not in d.attrs:
            return None
        if body[0] == "seq" and len(body[1]) == 2 and self.is_any_text(body[1][0]):
            m = strip_singletons(body[1][1])
            if m[0] == "str" and not m[2] and m[1]:
                return ("text", m[1])
            if m[0] == "special":
                return ("token", m)
            return None
        if body[0] == "re":
            for prefix in sorted(_ANY_TEXT | (_ANY_TEXT_DOTALL if "s" in body[2] else set()), key=len, reverse=True):
                if body[1].startswith(prefix):
                    marker_text = _literal_of_regex(body[1][len(prefix):])
                    return ("regex", marker_text) if marker_text else None
        return None

    def tool(self, node: tuple):
        """(kind, trigger, rest items, tool definition, head rule name or None) for a reference to a tool rule, kind
        being "text" or "token"; else None."""
        node = strip_singletons(node)
        if node[0] != "ref":
            return None
        d = self.definition(node[1])
        if d is None or d.is_terminal:
            return None
        body = strip_singletons(d.body)
        items = body[1] if body[0] == "seq" else [body]
        if len(items) >= 1:
            head = self.head_marker(items[0])
            if head is not None:
                kind = "text" if head[0] == "regex" else head[0]
                return kind, head[1], items[1:], d, strip_singletons(items[0])[1]
        if len(items) >= 2 and self.is_any_text(items[0]) and strip_singletons(items[1])[0] == "special":
            return "token", strip_singletons(items[1]), items[2:], d, None
        return None

    def read(self, body: tuple):
        """For a body ``T* tail``: (tools, tail node), tools being tool() results; else None."""
        body = strip_singletons(body)
        if body[0] != "seq" or len(body[1]) != 2:
            return None
        loop, tail = strip_singletons(body[1][0]), body[1][1]
        if loop[0] != "rep" or (loop[2], loop[3]) != (0, None) or not self.is_any_text(tail):
            return None
        inner = strip_singletons(loop[1])
        options = inner[1] if inner[0] == "alt" else [inner]
        tools = [self.tool(o) for o in options]
        if not tools or any(t is None for t in tools):
            return None
        return tools

