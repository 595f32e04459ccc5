"""A parsed Lark grammar (``_syntax``) -> EBNF text for the engine.

The language is the one a context-free reading of the grammar gives (every tokenization of the text counts, as in
xgrammar and llguidance; Lark's own lexer may reject some of these strings). Rules and terminals become EBNF rules
(``rule_<name>`` / ``term_<name>``); string literals are EBNF literals (``"abc"i`` an ASCII-case-folding
``Regex``), ``/regex/flags`` the engine's ``Regex(..., flags=...)`` (Python's ``.``: anything but ``\\n`` unless
``s``), ``"a".."z"`` a character class, ``x~n..m`` / ``x{n,m}`` a counted repetition. ``%ignore`` patterns may
follow every lexeme of a rule (a literal, a regex, a range, a terminal, an inline JSON value) and, with
``%grammar_options {"allow_initial_skip": true}``, precede the first one; never inside a terminal. ``%json {schema}``
embeds the JSON Schema front end's grammar under its own rule names.
"""

from __future__ import annotations

import re

from xg2jax import _core
from xg2jax.json_schema._ebnf import literal
from xg2jax.lark._common import COMMON_TERMINALS
from xg2jax.lark._syntax import LarkDocument, LarkError, Parser

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _class_char(ch: str) -> str:
    cp = ord(ch)
    if ch in "]\\-^" or cp < 0x20 or cp == 0x7F:
        return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"
    return ch


class _Converter:
    def __init__(self, text: str, doc: LarkDocument, start: str):
        self.text, self.doc, self.start = text, doc, start
        self.rules: list[str] = []
        self.names: dict[str, str] = {}
        self.used: set[str] = {"root", "lark_ignore"}
        self.json_count = 0
        self.current = ""  # the definition being converted
        for name in list(doc.definitions) + [local for _, local, _ in doc.imports]:
            self.names[name] = self._fresh(("term_" if name.lstrip("_")[:1].isupper() else "rule_") + name)

    def _fresh(self, hint: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint)
        name, k = base, 1
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name

    def fail(self, pos: int, message: str):
        raise LarkError(self.text, pos, message)

    def convert(self) -> str:
        for common, local, pos in self.doc.imports:
            if common not in COMMON_TERMINALS:
                self.fail(pos, f"unknown common import '{common}'")
            self.rules.append(f"{self.names[local]} ::= {self.regex(COMMON_TERMINALS[common], '')}")
        ignore = None
        if self.doc.ignores:
            ignore = "lark_ignore"
            parts = [self.expr(atom, in_terminal=True) for atom in self.doc.ignores]
            self.rules.append(f"lark_ignore ::= ( {' | '.join(parts)} )*")
        self.ignore = ignore
        if self.start not in self.doc.definitions or self.doc.definitions[self.start].is_terminal:
            self.fail(0, f"no start rule: the grammar defines no rule '{self.start}'")
        self.check_terminal_cycles()
        for d in self.doc.definitions.values():
            self.current = d.name
            self.rules.append(f"{self.names[d.name]} ::= {self.expr(d.body, in_terminal=d.is_terminal)}")
        head = f"{ignore} " if ignore and self.doc.allow_initial_skip else ""
        return "\n".join([f"root ::= {head}{self.names[self.start]}"] + self.rules) + "\n"

    def check_terminal_cycles(self) -> None:
        """Terminals are regular: one that refers to itself, directly or through others, is an error."""
        refs = {name: set() for name, d in self.doc.definitions.items() if d.is_terminal}

        def collect(node, out):
            if node[0] == "ref":
                out.add(node[1])
            elif node[0] in ("seq", "alt"):
                for x in node[1]:
                    collect(x, out)
            elif node[0] == "rep":
                collect(node[1], out)

        for name in refs:
            collect(self.doc.definitions[name].body, refs[name])
        state: dict[str, int] = {}  # 1 on the path, 2 done
        for root in refs:
            if state.get(root) == 2:
                continue
            state[root] = 1
            stack = [(root, iter(sorted(refs[root])))]
            while stack:
                name, children = stack[-1]
                child = next(children, None)
                if child is None:
                    state[name] = 2
                    stack.pop()
                elif child in refs and state.get(child) == 1:
                    self.fail(self.doc.definitions[child].pos, f"circular reference in terminal '{child}'")
                elif child in refs and child not in state:
                    state[child] = 1
                    stack.append((child, iter(sorted(refs[child]))))

    def regex(self, pattern: str, flags: str) -> str:
        problem = _core.automata.regex_syntax_error(pattern)
        if problem is not None:
            raise ValueError(problem)
        return f'Regex({literal(pattern)}, flags="{flags}")'

    def lexeme(self, text: str, in_terminal: bool) -> str:
        return text if in_terminal or self.ignore is None else f"( {text} {self.ignore} )"

    def expr(self, node: tuple, in_terminal: bool) -> str:
        kind, pos = node[0], node[-1]
        if kind == "seq":
            return " ".join(self.expr(x, in_terminal) for x in node[1]) or '""'
        if kind == "alt":
            return "( " + " | ".join(self.expr(x, in_terminal) for x in node[1]) + " )"
        if kind == "rep":
            _, inner, lo, hi, _ = node
            body = f"( {self.expr(inner, in_terminal)} )"
            if (lo, hi) == (0, 1):
                return body + "?"
            if (lo, hi) == (0, None):
                return body + "*"
            if (lo, hi) == (1, None):
                return body + "+"
            return body + ("{%d,}" % lo if hi is None else "{%d,%d}" % (lo, hi))
        if kind == "str":
            _, text, ignore_case, _ = node
            if not text:
                return '""'
            if ignore_case:
                escaped = "".join("\\" + c if c in "\\^$.|?*+()[]{}/-" else c for c in text)
                return self.lexeme(self.regex(escaped, "i"), in_terminal)
            return self.lexeme(literal(text), in_terminal)
        if kind == "range":
            return self.lexeme(f"[{_class_char(node[1])}-{_class_char(node[2])}]", in_terminal)
        if kind == "re":
            try:
                return self.lexeme(self.regex(node[1], node[2]), in_terminal)
            except ValueError as e:
                self.fail(pos, f"failed to compile regular expression /{node[1]}/: {e}")
        if kind == "ref":
            name = node[1]
            if name not in self.names:
                self.fail(pos, f"unknown name '{name}'")
            target_is_terminal = name.lstrip("_")[:1].isupper()
            if in_terminal and not target_is_terminal:
                self.fail(pos, f"terminal '{self.current}' cannot reference rule '{name}' (terminals are regular)")
            return self.lexeme(self.names[name], in_terminal) if target_is_terminal else self.names[name]
        if kind == "json":
            if in_terminal:
                self.fail(pos, "%json cannot be used in terminals")
            return self.lexeme(self.inline_json(node[1], pos), in_terminal)
        raise AssertionError(kind)

    def inline_json(self, schema, pos: int) -> str:
        """The JSON Schema front end's grammar for ``schema``, its rules renamed under a fresh prefix."""
        from xg2jax.json_schema import json_schema_to_ebnf

        try:
            ebnf = json_schema_to_ebnf(schema)
        except (ValueError, TypeError) as e:
            self.fail(pos, f"failed to compile inline JSON schema: {str(e).splitlines()[0]}")
        self.json_count += 1
        prefix = self._fresh(f"json{self.json_count}") + "_"
        lines = [line for line in ebnf.splitlines() if line.strip()]
        defined = {line.split(" ::= ", 1)[0] for line in lines}
        for line in lines:
            name, body = line.split(" ::= ", 1)
            self.rules.append(f"{prefix}{name} ::= {_rename(body, defined, prefix)}")
        return f"{prefix}root"


def _rename(body: str, defined: set[str], prefix: str) -> str:
    """``body`` with every reference to a rule of ``defined`` prefixed (string literals and classes skipped)."""
    out, i, n = [], 0, len(body)
    while i < n:
        c = body[i]
        if c in "\"'[":
            close = "]" if c == "[" else c
            j = i + 1
            while j < n and body[j] != close:
                j += 2 if body[j] == "\\" else 1
            out.append(body[i:j + 1])
            i = j + 1
            continue
        m = _IDENT.match(body, i)
        if m:
            word = m.group()
            out.append(prefix + word if word in defined else word)
            i = m.end()
            continue
        out.append(c)
        i += 1
    return "".join(out)


def lark_to_ebnf(lark_text: str, start: str = "start") -> str:
    """EBNF text (root rule ``root``) for a Lark grammar; see the module docstring for the dialect.

    Raises
    ------
    LarkError
        (a ``ValueError`` and a ``RuntimeError``) with the line and column of what cannot be converted.
    """
    text = lark_text.replace("\r\n", "\n")
    doc = Parser(text).parse()
    return _Converter(text, doc, start).convert()
