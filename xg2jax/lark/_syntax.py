"""Lark grammar text -> a syntax tree (rules, terminals, directives), with line and column for every error.

Algorithm. A hand-written scanner turns the text into tokens (names, string literals with their ``i`` flag,
``/regex/flags``, punctuation, ``%directives``, newlines; ``//`` and ``#`` comments skipped). A statement is a
directive or a definition ``name: expansions``; it ends at a newline unless the next line continues it with ``|``
(newlines inside brackets are plain whitespace). Expansions are parsed by recursive descent, bounded by
``MAX_NESTING`` so that hostile input cannot exhaust the stack.

Tree nodes are tuples: ``("seq", [items])``, ``("alt", [seqs])``, ``("opt", node)``, ``("rep", node, lo, hi)``
(``hi`` None: unbounded), ``("str", text, ignore_case)``, ``("range", lo_char, hi_char)``, ``("re", pattern,
flags)``, ``("ref", name)``, ``("json", schema)``, ``("structured_regex", value)`` (``%regex {...}``),
``("lark", nested grammar text)`` (``%lark { ... }``), ``("named", name)`` (``@name``), ``("special", "<...>")`` (a
special token by name, ``<|tool|>``, or by id, ``<[1,5-7]>``). Every node's last element is
its source position.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

MAX_NESTING = 200  # bracket / group depth of one expansion
MAX_REPEAT = 1 << 20  # the engine's largest count


class LarkError(ValueError, RuntimeError):
    """A Lark grammar that cannot be converted: ``Lark error at line L, column C: <what>`` and the source line with a
    caret. Both a ``ValueError`` (xg2jax's convention for bad input) and a ``RuntimeError`` (xgrammar's)."""

    def __init__(self, text: str, offset: int, message: str):
        line = text.count("\n", 0, offset) + 1
        start = text.rfind("\n", 0, offset) + 1
        end = text.find("\n", offset)
        source = text[start:end if end >= 0 else len(text)].rstrip("\r")
        column = offset - start + 1
        super().__init__(f"Lark error at line {line}, column {column}: {message}\n  {source}\n  {' ' * (column - 1)}^")
        self.line, self.column = line, column


@dataclass
class Token:
    kind: str  # name, string, regex, punct, directive, number, newline, json, end
    text: str
    pos: int
    value: object = None


@dataclass
class Definition:
    name: str
    is_terminal: bool
    body: tuple
    pos: int
    # Rule attributes (``name[lazy, suffix="x"]: ...``): attribute name -> (value, source position); a flag's value
    # is True. See RULE_ATTRIBUTES.
    attrs: dict = field(default_factory=dict)


# The rule attributes the parser reads and checks (xgrammar's Lark dialect); the converter builds them all, and
# reports the combinations it does not.
RULE_ATTRIBUTES = ("lazy", "suffix", "stop", "stop_capture", "capture", "max_tokens", "max_chars", "temperature")
_CAPTURE_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


@dataclass
class LarkDocument:
    definitions: dict[str, Definition] = field(default_factory=dict)
    imports: list[tuple[str, str, int]] = field(default_factory=list)  # (common name, local name, position)
    ignores: list[tuple] = field(default_factory=list)  # atoms
    allow_initial_skip: bool = False


_NAME = re.compile(r"[_A-Za-z][_A-Za-z0-9\-]*")
_NUMBER = re.compile(r"[0-9]+")
_STRING_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "\\": "\\", '"': '"', "/": "/", "'": "'"}
_PUNCT = ["->", "..", "::", ":", "|", "(", ")", "[", "]", "?", "*", "+", "~", ".", "{", "}", ",", "&", "="]
_ATTRIBUTE_NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def is_terminal_name(name: str) -> bool:
    stripped = name.lstrip("_")
    return bool(stripped) and stripped[0].isupper()


def tokenize(text: str) -> list[Token]:
    out: list[Token] = []
    end = _scan(text, 0, out, stop_at_close=False)
    out.append(Token("end", "", end))
    return out


def _scan(text: str, i: int, out: list[Token], stop_at_close: bool) -> int:
    """Appends the tokens of text[i:] to `out`; with `stop_at_close`, stops before the '}' that closes a nested
    block (braces counted) and returns its offset."""
    n = len(text)
    depth = 0
    while i < n:
        c = text[i]
        if c in " \t\f\r":
            i += 1
        elif c == "\n":
            out.append(Token("newline", "\n", i))
            i += 1
        elif c == "#" or text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif c == '"':
            i = _scan_string(text, i, out)
        elif c == "/":
            i = _scan_regex(text, i, out)
        elif c == "%":
            m = _NAME.match(text, i + 1)
            if not m:
                raise LarkError(text, i, "expected a directive name after '%'")
            out.append(Token("directive", m.group(), i))
            i = m.end()
            if m.group() == "lark":
                i = _scan_nested_lark(text, i, out)
            elif m.group() in ("json", "grammar_options", "regex"):
                i = _scan_json(text, i, out, m.group())
        elif c.isdigit():
            m = _NUMBER.match(text, i)
            out.append(Token("number", m.group(), i))
            i = m.end()
        elif c.isalpha() or c == "_":
            m = _NAME.match(text, i)
            name = m.group()
            if name.endswith("-"):
                raise LarkError(text, m.end() - 1, "unexpected '-' character")
            out.append(Token("name", name, i))
            i = m.end()
        elif c == "<":
            end = text.find(">", i)
            if end < 0 or "\n" in text[i:end]:
                raise LarkError(text, i, "unterminated special token")
            out.append(Token("special", text[i:end + 1], i))
            i = end + 1
        elif c == "@":
            m = _NAME.match(text, i + 1)
            if not m:
                raise LarkError(text, i, "empty grammar reference")
            out.append(Token("grammar_ref", m.group(), i))
            i = m.end()
        elif c == "-" and out and out[-1].text in ("{", ",", "~", "..") and text[i + 1:i + 2].isdigit():
            raise LarkError(text, i, "invalid repetition count: counts are non-negative integers")
        elif c in "-!" and not text.startswith("->", i):
            if c == "!" and (not out or out[-1].kind == "newline") and _NAME.match(text, i + 1):
                i += 1  # `!rule:` keeps tokens in Lark's tree; the language is the same
                continue
            raise LarkError(text, i, f"unexpected '{c}' character")
        elif c == "?" and (not out or out[-1].kind == "newline") and _NAME.match(text, i + 1):
            i += 1  # `?rule:` inlines a single child in Lark's tree; the language is the same
        else:
            if stop_at_close and c == "}" and depth == 0:
                return i
            for p in _PUNCT:
                if text.startswith(p, i):
                    out.append(Token("punct", p, i))
                    depth += (p == "{") - (p == "}")
                    i += len(p)
                    break
            else:
                raise LarkError(text, i, f"unexpected character {c!r}")
            if out[-1].text == "=":  # an attribute's number: 0.5, -1, .5
                j = i
                while j < n and text[j] in " \t":
                    j += 1
                m = _ATTRIBUTE_NUMBER.match(text, j)
                if m:
                    out.append(Token("number", m.group(), j))
                    i = m.end()
    if stop_at_close:
        raise LarkError(text, n, "unterminated %lark { ... } block: no closing '}'")
    return n


def _scan_nested_lark(text: str, i: int, out: list[Token]) -> int:
    """The grammar text of `%lark { ... }` (a nested grammar with its own names), as one token."""
    j = i
    while j < len(text) and text[j] in " \t":
        j += 1
    if j >= len(text) or text[j] != "{":
        raise LarkError(text, j, "expected '{' after %lark")
    close = _scan(text, j + 1, [], stop_at_close=True)
    out.append(Token("lark", text[j + 1:close], j + 1))
    return close + 1


def _scan_string(text: str, i: int, out: list[Token]) -> int:
    start, j, chars = i, i + 1, []
    while True:
        if j >= len(text) or text[j] == "\n":
            raise LarkError(text, start, "unterminated string literal")
        c = text[j]
        if c == '"':
            j += 1
            break
        if c == "\\":
            e = text[j + 1:j + 2]
            if e in _STRING_ESCAPES:
                chars.append(_STRING_ESCAPES[e])
                j += 2
            elif e == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[j + 2:j + 6]):
                chars.append(chr(int(text[j + 2:j + 6], 16)))
                j += 6
            elif e == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", text[j + 2:j + 4]):
                chars.append(chr(int(text[j + 2:j + 4], 16)))
                j += 4
            else:
                raise LarkError(text, j, f"invalid string literal: unknown escape '\\{e}'")
            continue
        chars.append(c)
        j += 1
    ignore_case = text.startswith("i", j) and (j + 1 >= len(text) or not (text[j + 1].isalnum() or text[j + 1] == "_"))
    j += ignore_case
    out.append(Token("string", text[start:j], start, ("".join(chars), ignore_case)))
    return j


def _scan_regex(text: str, i: int, out: list[Token]) -> int:
    start, j = i, i + 1
    while True:
        if j >= len(text) or text[j] == "\n":
            raise LarkError(text, start, "unterminated regular expression")
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == "/":
            break
        j += 1
    pattern = text[i + 1:j].replace("\\/", "/")
    j += 1
    m = re.compile(r"[a-zA-Z]*").match(text, j)
    flags = m.group()
    out.append(Token("regex", text[start:m.end()], start, (pattern, flags)))
    return m.end()


def _scan_json(text: str, i: int, out: list[Token], directive: str) -> int:
    """The JSON value after %json / %grammar_options (a raw decode from the first non-blank character)."""
    j = i
    while j < len(text) and text[j] in " \t":
        j += 1
    try:
        value, end = json.JSONDecoder().raw_decode(text, j)
    except json.JSONDecodeError:
        raise LarkError(text, j, f"failed to parse JSON value after %{directive}") from None
    out.append(Token("json", text[j:end], j, value))
    return end


class Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.k = 0
        self.depth = 0
        self.doc = LarkDocument()

    # -- token helpers ------------------------------------------------------------------------------------------
    def peek(self, skip_newlines: bool = False) -> Token:
        k = self.k
        while skip_newlines and self.tokens[k].kind == "newline":
            k += 1
        return self.tokens[k]

    def take(self) -> Token:
        t = self.tokens[self.k]
        self.k += 1
        return t

    def fail(self, token: Token, message: str):
        raise LarkError(self.text, token.pos, message)

    def at(self, text: str) -> bool:
        t = self.peek(skip_newlines=self.depth > 0)
        return t.kind == "punct" and t.text == text

    def expect(self, text: str, message: str) -> Token:
        if not self.at(text):
            self.fail(self.peek(self.depth > 0), message)
        self.skip_inner_newlines()
        return self.take()

    def skip_inner_newlines(self) -> None:
        if self.depth > 0:
            while self.tokens[self.k].kind == "newline":
                self.k += 1

    # -- statements ---------------------------------------------------------------------------------------------
    def parse(self) -> LarkDocument:
        while True:
            t = self.peek()
            if t.kind == "end":
                return self.doc
            if t.kind == "newline":
                self.take()
            elif t.kind == "directive":
                self.directive()
            elif t.kind == "name":
                self.definition()
            else:
                self.fail(t, f"expected a rule, a terminal or a directive, got {t.text!r}")

    def end_of_statement(self) -> None:
        t = self.peek()
        if t.kind not in ("newline", "end"):
            self.fail(t, f"unexpected {t.text!r} at the end of a statement")

    def definition(self) -> None:
        name_token = self.take()
        name = name_token.text
        if self.at("."):
            self.fail(self.peek(), "priorities are not supported")
        if self.at("{"):
            self.fail(self.peek(), "Lark templates are not supported")
        if self.at("::"):
            self.fail(self.peek(), "parametric grammar is not supported")
        attrs = self.attributes(name_token) if self.at("[") else {}
        if not self.at(":"):
            self.fail(self.peek(), "expected ':' after rule name")
        self.take()
        body = self.expansions(statement_level=True)
        self.end_of_statement()
        if name in self.doc.definitions or any(local == name for _, local, _ in self.doc.imports):
            self.fail(name_token, f"duplicate rule or terminal '{name}'")
        self.doc.definitions[name] = Definition(name, is_terminal_name(name), body, name_token.pos, attrs)

    def attributes(self, name_token: Token) -> dict:
        """``[attr, attr=value, ...]`` after a rule's name (at its '['), checked as xgrammar checks them: names,
        duplicates, value kinds, combinations. Returns name -> (value, position)."""
        open_bracket = self.take()
        if is_terminal_name(name_token.text):
            self.fail(open_bracket, "attributes are only supported on rules, not on terminals")
        attrs: dict = {}
        while True:
            t = self.take()
            if t.kind != "name":
                self.fail(t, "expected an attribute name in [...]")
            key = t.text
            if key not in RULE_ATTRIBUTES:
                self.fail(t, f"rule attribute '{key}' is not supported (supported: {', '.join(RULE_ATTRIBUTES)})")
            if key in attrs:
                self.fail(t, f"{key} attribute is specified more than once")
            if key in ("suffix", "stop"):
                other = "stop" if key == "suffix" else "suffix"
                if other in attrs:
                    self.fail(t, f"{key} cannot be combined with {other}")
            value: object = True
            if self.at("="):
                self.take()
                value = self.attribute_value(key, self.take())
            elif key not in ("lazy", "capture"):
                self.fail(self.peek(), f"expected '=' and a value after {key}")
            attrs[key] = (value, t.pos)
            if self.at(","):
                self.take()
                continue
            if self.at("]"):
                self.take()
                break
            self.fail(self.peek(), "expected ',' or ']' in rule attributes")
        if "stop_capture" in attrs and "stop" not in attrs and "suffix" not in attrs:
            self.fail(open_bracket, "stop_capture requires stop or suffix")
        return attrs

    def attribute_value(self, key: str, v: Token):
        """The value token `v` of attribute `key`, checked."""
        if key in ("capture", "stop_capture"):
            if v.kind != "string":
                self.fail(v, f"expected string literal after {key}=")
            name = v.value[0]
            if not name:
                self.fail(v, "capture name must not be empty")
            if not _CAPTURE_NAME.fullmatch(name):
                self.fail(v, "capture name must only contain letters, digits, '_', '-' and '.'")
            return name
        if key in ("suffix", "stop"):
            if v.kind == "string":
                if not v.value[0]:
                    self.fail(v, f"{key} must not be empty")
                return ("str", v.value[0], v.value[1], v.pos)
            if v.kind == "regex":
                pattern, flags = v.value
                if "i" in flags:
                    self.fail(v, "regular-expression flag 'i' is not supported with suffix or stop attributes")
                return ("re", pattern, flags, v.pos)
            if v.kind == "name":
                if not is_terminal_name(v.text):
                    self.fail(v, f"{key} terminal name must be uppercase")
                return ("ref", v.text, v.pos)
            self.fail(v, f"expected a string, a regular expression or a terminal name after {key}=")
        if key in ("max_tokens", "max_chars"):
            if v.kind != "number" or not re.fullmatch(r"[-+]?[0-9]+", v.text):
                self.fail(v, f"expected integer after {key}=")
            n = int(v.text)
            if n < 0 or (key == "max_tokens" and n == 0):
                self.fail(v, f"{key} must be {'positive' if key == 'max_tokens' else 'non-negative'}")
            return n
        if key == "temperature":
            if v.kind != "number":
                self.fail(v, "expected number after temperature=")
            x = float(v.text)
            if not (x >= 0 and x != float("inf")):
                self.fail(v, "temperature must be a finite non-negative number")
            return x
        self.fail(v, f"{key} takes no value")

    def directive(self) -> None:
        t = self.take()
        if t.text == "import":
            self.import_directive(t)
        elif t.text == "ignore":
            self.doc.ignores.append(self.atom())
        elif t.text == "grammar_options":
            value = self.take().value
            if not isinstance(value, dict):
                self.fail(t, "%grammar_options value must be an object")
            for key, v in value.items():
                if key not in ("allow_initial_skip", "no_forcing", "allow_invalid_utf8"):
                    self.fail(t, f"unknown %grammar_options option '{key}'")
                if not isinstance(v, bool):
                    self.fail(t, f"{key} must be a boolean")
                if key == "allow_initial_skip":
                    self.doc.allow_initial_skip = v
                elif v:  # no_forcing and allow_invalid_utf8: only their defaults (false)
                    self.fail(t, f"%grammar_options option '{key}' is not supported")
        else:
            self.fail(t, f"directive %{t.text} is not supported")
        self.end_of_statement()

    def import_directive(self, directive: Token) -> None:
        module = self.take()
        if module.kind != "name":
            self.fail(module, "expected a module name after %import")
        if module.text != "common":
            self.fail(module, f"only %import common is supported, got '{module.text}'")
        if self.at("."):
            self.take()
            name = self.take()
            local = name.text
            if self.at("->"):
                self.take()
                local = self.take().text
            self.add_import(name.text, local, name)
        elif self.at("("):
            self.take()
            while True:
                name = self.take()
                if name.kind != "name":
                    self.fail(name, "expected a name in %import common (...)")
                self.add_import(name.text, name.text, name)
                if self.at(","):
                    self.take()
                    continue
                self.expect(")", "expected ')' after the imported names")
                break
        else:
            self.fail(self.peek(), "expected '.NAME' or '(NAMES)' after %import common")

    def add_import(self, name: str, local: str, token: Token) -> None:
        if local in self.doc.definitions or any(l == local for _, l, _ in self.doc.imports):
            self.fail(token, f"duplicate rule or terminal '{local}'")
        self.doc.imports.append((name, local, token.pos))

    # -- expansions ---------------------------------------------------------------------------------------------
    def expansions(self, statement_level: bool = False) -> tuple:
        pos = self.peek().pos
        alts = [self.alias_expansion()]
        while True:
            if statement_level and self.depth == 0 and self.peek().kind == "newline":
                k = self.k
                while self.tokens[k].kind == "newline":
                    k += 1
                if self.tokens[k].kind == "punct" and self.tokens[k].text == "|":
                    self.k = k  # the next line continues the alternatives
            if not self.at("|"):
                break
            self.skip_inner_newlines()
            self.take()
            alts.append(self.alias_expansion())
        return alts[0] if len(alts) == 1 else ("alt", alts, pos)

    def alias_expansion(self) -> tuple:
        expansion = self.expansion()
        if self.at("->"):
            self.skip_inner_newlines()
            self.take()
            alias = self.peek()
            if alias.kind != "name":
                self.fail(alias, "expected alias name after '->'")
            self.take()
        return expansion

    def expansion(self) -> tuple:
        pos = self.peek().pos
        items = []
        while True:
            self.skip_inner_newlines()
            t = self.peek()
            if t.kind in ("string", "regex", "name", "directive", "grammar_ref", "special") or \
                    (t.kind == "punct" and t.text in "([~"):
                if t.kind == "punct" and t.text == "~":
                    self.fail(t, "complement '~' is not supported")
                items.append(self.item())
            elif t.kind == "punct" and t.text == "&":
                self.fail(t, "intersection '&' is not supported")
            else:
                break
        return items[0] if len(items) == 1 else ("seq", items, pos)

    def item(self) -> tuple:
        atom = self.atom()
        pos = atom[-1]
        t = self.peek()
        if t.kind == "punct" and t.text in ("?", "*", "+"):
            self.take()
            lo, hi = {"?": (0, 1), "*": (0, None), "+": (1, None)}[t.text]
            return ("rep", atom, lo, hi, pos)
        if t.kind == "punct" and t.text == "~":
            self.take()
            lo = self.count()
            hi = lo
            if self.at(".."):
                self.take()
                hi = self.count()
            if hi < lo:
                self.fail(t, "repetition end must be greater than or equal to its start")
            return ("rep", atom, lo, hi, pos)
        if t.kind == "punct" and t.text == "{":
            self.take()
            lo = 0 if self.at(",") else self.count()
            hi = lo
            if self.at(","):
                self.take()
                hi = None if self.at("}") else self.count()
            self.expect("}", "expected '}' after a repetition count")
            if hi is not None and hi < lo:
                self.fail(t, "repetition end must be greater than or equal to its start")
            return ("rep", atom, lo, hi, pos)
        return atom

    def count(self) -> int:
        t = self.take()
        if t.kind != "number" or int(t.text) > MAX_REPEAT:
            self.fail(t, f"invalid repetition count (a number from 0 to {MAX_REPEAT})")
        return int(t.text)

    def atom(self) -> tuple:
        self.skip_inner_newlines()
        t = self.take()
        if t.kind == "punct" and t.text in "([":
            close = ")" if t.text == "(" else "]"
            self.depth += 1
            if self.depth > MAX_NESTING:
                self.fail(t, f"groups nested more than {MAX_NESTING} deep")
            inner = self.expansions()
            self.expect(close, "expected ')' after group" if close == ")" else "expected ']' after optional group")
            self.depth -= 1
            return inner if close == ")" else ("rep", inner, 0, 1, t.pos)
        if t.kind == "string":
            text, ignore_case = t.value
            if self.at(".."):
                self.take()
                hi = self.take()
                if hi.kind != "string":
                    self.fail(hi, "expected a string after '..'")
                if ignore_case or hi.value[1]:
                    self.fail(t, "flags are not allowed on character ranges")
                if len(text) != 1 or len(hi.value[0]) != 1:
                    self.fail(t, "range endpoints must be one character")
                if text > hi.value[0]:
                    self.fail(t, "range start must not exceed end")
                return ("range", text, hi.value[0], t.pos)
            if ignore_case and not text.isascii():
                self.fail(t, "case-insensitive string literals currently support ASCII characters only")
            return ("str", text, ignore_case, t.pos)
        if t.kind == "regex":
            pattern, flags = t.value
            for f in flags:
                if f not in "isu":
                    self.fail(t, f"regular-expression flag '{f}' is not supported (i, s and u are)")
            return ("re", pattern, flags, t.pos)
        if t.kind == "name":
            after = self.tokens[self.k + 1] if self.at("{") else None
            if after is not None and not (after.kind == "number" or after.text == ","):
                self.fail(self.peek(), "Lark templates are not supported")
            if self.at("::"):
                self.fail(self.peek(), "parametric grammar is not supported")
            return ("ref", t.text, t.pos)
        if t.kind == "directive" and t.text == "json":
            return ("json", self.take().value, t.pos)
        if t.kind == "directive" and t.text == "regex":
            return ("structured_regex", self.take().value, t.pos)
        if t.kind == "directive" and t.text == "lark":
            block = self.take()
            return ("lark", block.text, block.pos)
        if t.kind == "grammar_ref":
            return ("named", t.text, t.pos)
        if t.kind == "special":
            return ("special", t.text, t.pos)
        if t.kind == "directive" and t.text == "if":
            self.fail(t, "parametric %if conditions are not supported")
        if t.kind == "directive":
            self.fail(t, f"%{t.text} inside a rule is not supported")
        self.fail(t, f"unexpected {t.text!r}" if t.text else "unexpected end of the grammar")
