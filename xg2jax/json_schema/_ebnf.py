"""EBNF text building blocks for the JSON Schema front end: literal quoting, the JSON lexical rules, and a
rule table that names sub-grammars once (so recursion through ``$ref`` becomes rule recursion)."""

from __future__ import annotations

import functools
import json
import re


# str.translate table for literal(): the quote and backslash escaped, control characters as \xNN.
_LITERAL_ESCAPES = {ord('"'): '\\"', ord("\\"): "\\\\", 0x7F: "\\x7f"}
_LITERAL_ESCAPES.update({cp: f"\\x{cp:02x}" for cp in range(0x20)})
# One encoder for every compact dump (json.dumps builds a new one per call when given options).
_compact_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def literal(text: str) -> str:
    """An EBNF string literal that matches exactly ``text`` (UTF-8 of its code points)."""
    return '"' + text.translate(_LITERAL_ESCAPES) + '"'


def json_literal(value) -> str:
    """The compact JSON spelling of ``value`` as an EBNF literal (non-ASCII kept as is)."""
    return literal(_compact_json(value))


@functools.lru_cache(maxsize=4096)
def _rule_base_name(name_hint: str) -> str:
    """``name_hint`` as a rule name: characters other than letters, digits and ``_`` replaced by ``_``."""
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in name_hint).strip("_") or "r"
    return "r_" + base if base[0].isdigit() else base


EMPTY = '""'  # the expression that matches only the empty string


def seq(*parts: str) -> str:
    """The concatenation of the non-empty ``parts`` ('""' if none)."""
    return " ".join(filter(None, parts)) or '""'


def choice(options: list[str]) -> str:
    """A parenthesised alternation (deduplicated, order kept)."""
    seen = list(dict.fromkeys(options))  # a dict: enums list tens of thousands of options
    return seen[0] if len(seen) == 1 else "(" + " | ".join(seen) + ")"


# An escape sequence inside a JSON string.
_ESCAPE = r'"\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )'

# JSON lexical rules shared by every converted schema (names start with "j_" to avoid user $defs clashes).
BASE_RULES = {
    # One character of a JSON string: anything but '"', '\' and control characters, or an escape.
    "j_char": r'[^"\\\x00-\x1f] | ' + _ESCAPE,
    "j_string": r'"\"" j_char* "\""',
    "j_int": r'"-"? ( "0" | [1-9] [0-9]* )',
    "j_number": r'"-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [+\-]? [0-9]+ )?',
    "j_bool": r'"true" | "false"',
    "j_null": r'"null"',
    "j_value": r'j_object | j_array | j_string | j_number | j_bool | j_null',
    # Derives no string (left recursion without a base case): the body of a state no valid text can leave. The
    # engine trims unproductive rules, so nothing leads into it in a mask.
    "j_never": r'j_never "!"',
}


# The rest of a key after the unit where it leaves a key-exclusion trie (_objects.py), defined by the conversions
# that exclude keys. Each repeats a wide class, so the engine keeps them as rules instead of inlining them, and every
# trie node's automaton has a few states instead of its own copy of the string body.
KEY_TAIL_RULES = {
    "j_key_rest": r'j_char* "\""',  # after a plain ASCII character
    # a non-ASCII character or an escape, then the rest
    "j_key_wide": r'( [^\x00-\x7f] | ' + _ESCAPE + r' ) j_char* "\""',
}


@functools.lru_cache(maxsize=64)
def lexical_rules(ws: str, item_sep: str, key_sep: str, ws_body: str, plain_integers: bool = True) -> dict[str, str]:
    """The JSON lexical rules of a conversion: ``BASE_RULES``, ``j_integer`` (plain: ``0``, ``-12``; else every
    spelling JSON Schema (draft 6+) counts as an integer: ``1.0``, ``-0``), then members, objects and arrays spelled
    with the conversion's whitespace ``ws`` and separators (as every object and array of the schema is, ``true`` and
    ``{}`` values too), then ``j_ws`` as ``ws_body``. Memoised (a conversion's options are almost always the same
    few); callers copy it."""
    return {
        **BASE_RULES,
        "j_integer": r'"0" | "-"? [1-9] [0-9]*' if plain_integers else r'j_int ( "." "0"+ )?',
        "j_member": seq("j_string", key_sep, "j_value"),
        "j_object": seq('"{"', ws, f"( j_member ( {item_sep} j_member )* {ws} )?".replace("  ", " "), '"}"'),
        "j_array": seq('"["', ws, f"( j_value ( {item_sep} j_value )* {ws} )?".replace("  ", " "), '"]"'),
        "j_ws": ws_body,
    }


_IDENTIFIER_RUN = re.compile(r"[A-Za-z0-9_]+")


class RuleTable:
    """Rules in definition order; ``add`` returns the rule's name (reusing one with the same body)."""

    def __init__(self, rules: dict[str, str] | None = None) -> None:
        """``rules``: the first rules (copied), e.g. ``lexical_rules(...)``."""
        self.rules: dict[str, str] = dict(rules or {})
        self._lexical = tuple(self.rules)  # the first rules: written only where named (see text)
        self.size = 0  # characters of the bodies defined so far (the converter bounds it, see _limits)
        self._by_body: dict[str, str] = {}
        for name, body in self.rules.items():
            self._by_body.setdefault(body, name)
        self._next: dict[str, int] = {}  # base name -> last suffix used

    def reserve(self, name_hint: str) -> str:
        base = _rule_base_name(name_hint)
        name, i = base, self._next.get(base, 1)
        while name in self.rules:  # the counter per base keeps this O(1) amortised
            i += 1
            name = f"{base}_{i}"
        self._next[base] = i
        self.rules[name] = ""  # placeholder until define()
        return name

    def define(self, name: str, body: str) -> str:
        self.size += len(body)
        self.rules[name] = body
        self._by_body.setdefault(body, name)
        return name

    def add(self, name_hint: str, body: str) -> str:
        if body in self._by_body:
            return self._by_body[body]
        return self.define(self.reserve(name_hint), body)

    def text(self, root: str) -> str:
        """The grammar, ``root`` first, then the rules in definition order; one of the first rules (the lexical
        ones) only when ``root``, another rule or a needed lexical rule names it. A name counts wherever it is a
        maximal run of identifier characters, even inside a string literal: a superset only costs a rule the engine
        drops as unreachable. The native front end writes the same text (``RuleTable::Text``)."""
        lexical = set(self._lexical)
        needed: set[str] = set()
        todo = [root] + [body for name, body in self.rules.items() if name not in lexical]
        while todo:
            for word in _IDENTIFIER_RUN.findall(todo.pop()):
                if word in lexical and word not in needed:
                    needed.add(word)
                    todo.append(self.rules[word])
        lines = [f"root ::= {root}"]
        lines += [f"{name} ::= {body}" for name, body in self.rules.items()
                  if name != "root" and (name not in lexical or name in needed)]
        return "\n".join(lines) + "\n"
