"""A parsed Lark grammar (``_syntax``) -> EBNF text for the engine.

The language is the one a context-free reading of the grammar gives (every tokenization of the text counts, as in
xgrammar and llguidance; Lark's own lexer may reject some of these strings). Rules and terminals become EBNF rules
(``rule_<name>`` / ``term_<name>``); string literals are EBNF literals (``"abc"i`` an ASCII-case-folding
``Regex``), ``/regex/flags`` the engine's ``Regex(..., flags=...)`` (Python's ``.``: anything but ``\\n`` unless
``s``), ``"a".."z"`` a character class, ``x~n..m`` / ``x{n,m}`` a counted repetition. ``%ignore`` patterns may
follow every lexeme of a rule (a literal, a regex, a range, a terminal, an inline JSON value) and, with
``%grammar_options {"allow_initial_skip": true}``, precede the first one; never inside a terminal. ``%json {schema}``
embeds the JSON Schema front end's grammar under its own rule names, ``%lark { ... }`` a nested grammar (its own
names and start rule), ``@name`` a named grammar (``from_lark(named_grammars=...)``: a Grammar or Lark text),
each once; ``%regex {"substring_chunks": [...]}`` / ``{"substring_chars": "..."}`` is the engine's
``Substring(...)`` (a contiguous run of the chunks).
"""

from __future__ import annotations

import re

from xg2jax import _core
from xg2jax.json_schema._ebnf import literal
from xg2jax.lark._common import COMMON_TERMINALS
from xg2jax.lark._dispatch import DispatchReader, strip_singletons
from xg2jax.lark._syntax import LarkDocument, LarkError, Parser

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_TOKEN_ID = (1 << 21) - 2  # the engine's largest token element id (grammar.h, kMaxTokenElementId)
_MAX_TOKEN_RANGE = 1_000_000  # ids in one range of <[lo-hi]> (as xgrammar; each id is a Token alternative)
_REGEX_SPECIAL = set("\\^$.|?*+()[]{}/-")


def _class_char(ch: str) -> str:
    cp = ord(ch)
    if ch in "]\\-^" or cp < 0x20 or cp == 0x7F:
        return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"
    return ch


class _Converter:
    def __init__(self, text: str, doc: LarkDocument, start: str, named: dict | None = None, chain: tuple = (),
                 tokenizer_info=None):
        self.text, self.doc, self.start = text, doc, start
        self.tokenizer_info = tokenizer_info  # for special tokens named by their text
        self.named = named or {}  # @name -> Grammar or Lark text (Grammar.from_lark(named_grammars=...))
        self.chain = chain  # the named grammars being converted around this one (cycle detection)
        self.embedded_named: dict[str, str] = {}  # @name -> its embedded root rule
        self.rules: list[str] = []
        self.names: dict[str, str] = {}
        self.used: set[str] = {"root", "lark_ignore"}
        self.attributes_moved: set[str] = set()  # rules whose engine attributes went to their lexeme's rule (plain_body)
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
        self.dispatch = DispatchReader(self.doc)
        dispatches = {d.name: self.dispatch.read(d.body) for d in self.doc.definitions.values()
                      if not d.is_terminal and not d.attrs}
        self.dispatch_heads = {t[4] for tools in dispatches.values() if tools for t in tools}
        # A head's text is the dispatch's free text and trigger, which no rule spans: it cannot be captured.
        for name in sorted(h for h in self.dispatch_heads if h is not None):
            for key in ("capture", "stop_capture"):
                if key in self.doc.definitions[name].attrs:
                    self.fail(self.doc.definitions[name].attrs[key][1], f"{key} on a head read by dynamic dispatch "
                                                                       f"(rule '{name}') is not supported by xg2jax")
        for d in self.doc.definitions.values():
            self.current = d.name
            tools = dispatches.get(d.name)
            if tools is not None:
                body = self.tag_dispatch(tools)
            elif d.attrs:
                body = self.first_match_rule(d)
            else:
                body = self.expr(d.body, in_terminal=d.is_terminal)
            attribute = "" if d.name in self.attributes_moved else _engine_attributes(d)
            self.rules.append(f"{self.names[d.name]}{attribute} ::= {body}")
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

    def regex(self, pattern: str, flags: str, first_match_after: int | None = None,
              budget_close: str | None = None, before_first: str | None = None) -> str:
        """The engine's ``Regex(...)`` for a pattern; ``first_match_after``: its first matches (0: ``lazy=true``;
        n: once n characters are read, ``max_chars=n``). ``budget_close`` (with n): the first matches of the pattern
        at any length, or, once n characters are read, the text ends where the whole of it matches this regex
        (a suffix / stop rule's body, closed by its ``max_chars`` without the marker). ``before_first``: the matches
        none of whose proper prefixes this regex matches."""
        for p in (pattern, budget_close, before_first):
            problem = None if p is None else _core.automata.regex_syntax_error(p)
            if problem is not None:
                raise ValueError(problem)
        if before_first is not None:
            first = f", before_first={literal(before_first)}"
        elif budget_close is not None:
            first = f", lazy=true, max_chars={first_match_after}, budget_close={literal(budget_close)}"
        else:
            first = "" if first_match_after is None else ", lazy=true" if first_match_after == 0 else \
                f", max_chars={first_match_after}"
        return f'Regex({literal(pattern)}, flags="{flags}"{first})'

    def tag_dispatch(self, tools: list, loop: bool = True, check_attrs: bool = True) -> str:
        """The engine's TagDispatch for a recognised ``T* tail`` (see ``_dispatch``): one tag per trigger, its rule
        the tools' rests (as alternatives when tools share a trigger), free text between and after the calls.
        ``loop=False``: a lone head (any text, then its marker, which ends the construct; the text may also end
        without the marker)."""
        if len({kind for kind, *_ in tools}) > 1:
            self.fail(tools[0][3].pos, "dynamic dispatch cannot mix string and token triggers")
        rests: dict = {}  # trigger (text, or token id) -> EBNF of the rests
        for kind, trigger, rest, tool, _ in tools:
            for key, (_, pos) in tool.attrs.items() if check_attrs else ():
                self.fail(pos, f"{key} is not supported on rules consumed by dynamic dispatch")
            saved, self.current = self.current, tool.name
            text = " ".join(self.expr(x, in_terminal=False) for x in rest) or '""'
            self.current = saved
            if kind == "text":
                keys = [literal(trigger)]
            else:
                if trigger[1].startswith("<[^"):
                    self.fail(trigger[-1], f"{'dynamic' if loop else 'lazy'} special-token trigger cannot be negated")
                if trigger[1] == "<[*]>":
                    self.fail(trigger[-1], "a dynamic special-token trigger names tokens (<[*]> is any token)")
                keys = [str(i) for i in self.special_token_ids(trigger[1], trigger[-1])]
            for key in keys:
                rests.setdefault(key, []).append(text)
        pairs = []
        for key, options in rests.items():
            rule = self._fresh("lark_dispatch")
            self.rules.append(f"{rule} ::= {options[0] if len(options) == 1 else '( ' + ' | '.join(options) + ' )'}")
            pairs.append(f"({key}, {rule})")
        # Token triggers: xgrammar's token-level dispatch (free text read as tokens, any but the triggers), which lets
        # a trigger be a text token too (a vocabulary entry spelled <|tool|> that is not marked special).
        builtin = "TagDispatch" if tools[0][0] == "text" else "TokenTagDispatch"
        return f"{builtin}({', '.join(pairs)}, loop_after_dispatch={'true' if loop else 'false'})"

    # -- rule attributes ------------------------------------------------------------------------------------------
    def first_match_rule(self, d) -> str:
        """The body of a rule with attributes: ``[lazy]`` keeps the first matches of its body (the rule ends as soon
        as the body is complete), ``[suffix=M]`` / ``[stop=M]`` the first matches of the body followed by M (the
        rule ends at the first complete M, which is part of the text), ``[max_chars=n]`` the first matches once n
        characters are read (shorter texts may go on; xgrammar's budget); with a marker, ``max_chars=n`` closes the
        rule without its marker at the first point, n characters in, where the text is a whole body (the marker
        must start before). The body (and M) must be regular: it is written as one regex, and the engine's
        ``Regex(..., lazy=true)`` / ``Regex(..., max_chars=n)`` (``budget_close=`` the body, with a marker) builds
        its automaton. Without captures, ``stop`` and ``suffix`` are the same language."""
        if "temperature" in d.attrs and _references_a_rule(self.doc, d.body):
            self.fail(d.attrs["temperature"][1], "temperature is only supported on terminals and subgrammars "
                                                 f"(rule '{d.name}' references a rule)")
        marker = d.attrs.get("suffix") or d.attrs.get("stop")
        token_budget = "max_tokens" in d.attrs and (marker is not None or "lazy" in d.attrs)
        if token_budget and ("max_chars" in d.attrs or (marker is not None and "lazy" in d.attrs)):
            self.fail(d.attrs["max_tokens"][1], "max_tokens together with max_chars (or lazy) on a suffix or stop "
                                                "rule is not supported by xg2jax")
        if marker is None and "lazy" not in d.attrs and "max_chars" not in d.attrs:  # the engine's own attributes
            return self.plain_body(d)
        if marker is None and _one_token(d.body):  # a token is atomic: the rule ends after it whatever the budget
            return self.plain_body(d)
        budgeted = marker is not None and ("max_chars" in d.attrs or token_budget) and "lazy" not in d.attrs
        head = self.dispatch.head_marker(("ref", d.name, d.pos))
        if token_budget and marker is None:  # lazy: its budget closes it where the text before its marker ends
            if head is None or head[0] != "text" or d.name in self.dispatch_heads:
                self.fail(d.attrs["max_tokens"][1], "max_tokens together with lazy is only supported by xg2jax on a "
                                                    "lazy rule that is any text then a marker (TEXT \"marker\")")
            return self.gated_rule(d, "(?:.*)", _escape_regex(head[1]), "s", split=False)
        # Any text, then a marker: read as a dispatch, as xgrammar does (unless a budget closes it, or it is a head).
        if head is not None and not (budgeted and d.name not in self.dispatch_heads):
            if head[0] == "regex":
                if d.name in self.dispatch_heads:  # its dispatch reads it; as a rule of its own it is not used
                    return '""'
                self.fail(d.pos, "lazy regex suffix is only supported on a head used by dynamic dispatch (write "
                                 "TEXT \"marker\" for free text up to a marker)")
            dispatch = self.tag_dispatch([(head[0], head[1], [], d, None)], loop=False, check_attrs=False)
            if marker is None:
                return dispatch
            if head[0] != "text":
                for key in ("capture", "stop_capture"):
                    if key in d.attrs:
                        self.fail(d.attrs[key][1], f"{key} on a rule that ends at a special token is not supported "
                                                   "by xg2jax")
                return dispatch
            return self.marked_rule(d, dispatch, "(?:.*)", _escape_regex(head[1]), "s")
        flags: set = set()
        pattern = body_pattern = self.regex_of(d.body, flags)
        if marker is not None:
            marker_pattern = self.regex_of(marker[0], flags)
            pattern = f"(?:{pattern})(?:{marker_pattern})"
        after = 0 if "lazy" in d.attrs or marker is not None else d.attrs["max_chars"][0]
        budget_close = None
        if budgeted and "max_chars" in d.attrs:
            after, budget_close = d.attrs["max_chars"][0], body_pattern
        shared = ""
        for flag, meaning in (("i", "case-insensitive matching"), ("s", "'.' matching a newline")):
            wanted = {on for f, on in flags if f == flag}
            if len(wanted) > 1:
                self.fail(d.pos, f"rule '{d.name}': a lazy, suffix or stop rule is one regex, and its parts disagree "
                                 f"on {meaning} (regex flag '{flag}')")
            shared += flag if True in wanted else ""
        try:
            body = self.regex(pattern, shared, first_match_after=after, budget_close=budget_close)
        except ValueError as e:
            self.fail(d.pos, f"rule '{d.name}': failed to compile its body as one regular expression: {e}")
        if marker is None:
            return self.lexeme(body, in_terminal=False)
        if token_budget:
            return self.lexeme(self.gated_rule(d, body_pattern, marker_pattern, shared, lazy=body), in_terminal=False)
        return self.lexeme(self.marked_rule(d, body, body_pattern, marker_pattern, shared), in_terminal=False)

    def gated_rule(self, d, body_pattern: str, marker_pattern: str, flags: str, split: bool = True,
                   lazy: str | None = None) -> str:
        """``[max_tokens=n]`` on a suffix / stop rule (``split``), or on a lazy rule of any text then a marker: the
        first body followed by its marker ends the rule, or, once n tokens are read, the rule ends at a token
        boundary where the text is a whole body that has not met its marker (as xgrammar closes it without the
        marker). The two ways are two rules under one with the budget: the marked one (the lazy regex of body and
        marker, with the marker attributes when ``split``), and the closed one (the body before the first marker,
        ``Regex(..., before_first=...)``, then the engine's budget gate ``BudgetSpent()``, which the matcher opens
        once the budget is spent). ``lazy``: the marked regex when the caller built it already. Returns the name of
        the rule above them."""
        whole = f"(?:{body_pattern})(?:{marker_pattern})"
        lazy = lazy or self.regex(whole, flags, first_match_after=0)
        if split:
            marked = self.marked_rule(d, lazy, body_pattern, marker_pattern, flags, budget=False)
        else:
            marked = self._fresh(f"{d.name}_marked")
            self.rules.append(f"{marked}{_engine_attributes(d, budget=False)} ::= {lazy}")
        closed = self._fresh(f"{d.name}_closed")
        self.rules.append(f"{closed}{_engine_attributes(d)} ::= {self.regex(body_pattern, flags, before_first=whole)} "
                          "BudgetSpent()")
        outer = self._fresh(f"{d.name}_budget")
        self.rules.append(f"{outer}[max_tokens={int(d.attrs['max_tokens'][0])}] ::= {marked} | {closed}")
        self.attributes_moved.add(d.name)
        return outer

    def marked_rule(self, d, body: str, body_pattern: str, marker_pattern: str, flags: str, budget: bool = True) -> str:
        """A suffix / stop rule's text as a rule of its own with the engine's marker attributes, which tell captures
        where the body ends (stop: the marker is hidden from the captures around the rule too); ``d``'s other
        engine attributes move there with them (so text ignored after it stays outside). Returns its name."""
        split = [f"marker_body={literal(body_pattern)}", f"marker={literal(marker_pattern)}"]
        split += [f'marker_flags="{flags}"'] if flags else []
        split += ["hide_marker"] if "stop" in d.attrs else []
        split += [f"stop_capture={literal(d.attrs['stop_capture'][0])}"] if "stop_capture" in d.attrs else []
        inner = self._fresh(f"{d.name}_marked")
        self.rules.append(f"{inner}{_engine_attributes(d, split, budget=budget)} ::= {body}")
        self.attributes_moved.add(d.name)
        return inner

    def plain_body(self, d) -> str:
        """The body of a rule whose only attributes are the engine's own (``temperature``, ``capture``,
        ``max_tokens``). With ``%ignore``, a body of one lexeme (a terminal: a string, a regex, a terminal's name; or
        a subgrammar) keeps the ignored text after it out of the rule, as xgrammar's lexer does: the attributes go to
        a rule that is the lexeme, and the rule emitted for ``d`` is that rule followed by the ignored text. (A
        longer body keeps what is ignored between and after its parts inside.)"""
        if self.ignore is None or d.body[0] in ("seq", "alt", "rep"):
            return self.expr(d.body, in_terminal=False)
        inner = self._fresh(f"{d.name}_lexeme")
        ignore, self.ignore = self.ignore, None
        try:
            self.rules.append(f"{inner}{_engine_attributes(d)} ::= {self.expr(d.body, in_terminal=False)}")
        finally:
            self.ignore = ignore
        self.attributes_moved.add(d.name)
        return f"{inner} {ignore}"

    def regex_of(self, node: tuple, flags: set) -> str:
        """``node`` (a lazy, suffix or stop rule's body, or its marker) as one regex in the engine's dialect. What
        each part needs of the one regex's flags goes to ``flags`` as (flag, on): ("i", True) for a ``/.../i``,
        ("i", False) for a part with case-sensitive letters, ("s", on) for a part with a '.'. Literals are escaped
        (``"a"i`` folds through classes, so it needs no flag)."""
        kind, pos = node[0], node[-1]
        if kind == "seq":
            return "".join(self.regex_of(x, flags) for x in node[1])
        if kind == "alt":
            return "(?:" + "|".join(self.regex_of(x, flags) for x in node[1]) + ")"
        if kind == "rep":
            _, inner, lo, hi, _ = node
            body = "(?:" + self.regex_of(inner, flags) + ")"
            return body + ("?" if (lo, hi) == (0, 1) else "*" if (lo, hi) == (0, None) else "+" if (lo, hi) == (1, None)
                           else "{%d,}" % lo if hi is None else "{%d,%d}" % (lo, hi))
        if kind == "str":
            _, text, ignore_case, _ = node
            if not ignore_case and any(c.isascii() and c.isalpha() for c in text):
                flags.add(("i", False))
            out = []
            for c in text:
                if ignore_case and c.isascii() and c.isalpha():
                    out.append(f"[{c.lower()}{c.upper()}]")
                else:
                    out.append("\\" + c if c in _REGEX_SPECIAL else c)
            return "".join(out)
        if kind == "range":
            if any(chr(c).isalpha() for c in range(max(ord(node[1]), 0x41), min(ord(node[2]), 0x7A) + 1)):
                flags.add(("i", False))
            return f"[{_class_char(node[1])}-{_class_char(node[2])}]"
        if kind == "re":
            _note_regex_flags(node[1], node[2], flags)
            return f"(?:{node[1]})"
        if kind == "ref":
            name = node[1]
            for common, local, _ in self.doc.imports:
                if local == name and common in COMMON_TERMINALS:
                    _note_regex_flags(COMMON_TERMINALS[common], "", flags)
                    return f"(?:{COMMON_TERMINALS[common]})"
            d = self.doc.definitions.get(name)
            if d is None:
                self.fail(pos, f"unknown name '{name}'")
            if not d.is_terminal:
                self.fail(pos, f"rule '{self.current}': terminal cannot reference rule '{name}' (a lazy, suffix or "
                               "stop rule's body is regular: strings, regular expressions, character ranges and "
                               "terminals)")
            return f"(?:{self.regex_of(d.body, flags)})"
        if kind == "special" and node[1].startswith("<[^"):
            self.fail(pos, "lazy special-token trigger cannot be negated")
        self.fail(pos, f"rule '{self.current}': a lazy, suffix or stop rule's body takes strings, regular "
                       "expressions, character ranges and terminals only")

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
        if kind == "structured_regex":
            return self.lexeme(self.structured_regex(node[1], pos), in_terminal)
        if kind == "special":
            if in_terminal:
                self.fail(pos, "special tokens cannot be used in terminals (terminals are text)")
            return self.special_tokens(node[1], pos)
        if kind in ("lark", "named"):
            if in_terminal:
                self.fail(pos, f"{'nested %lark' if kind == 'lark' else '@' + node[1]} cannot be used in terminals")
            return self.nested_lark(node[1], pos) if kind == "lark" else self.named_grammar(node[1], pos)
        raise AssertionError(kind)

    def structured_regex(self, value, pos: int) -> str:
        """``%regex {"substring_chunks": [...]}`` / ``{"substring_chars": "..."}``: a contiguous run of the chunks
        (of the characters), the empty one included: the engine's ``Substring(...)``."""
        usage = '(%regex takes {"substring_chunks": [strings]} or {"substring_chars": string})'
        if not isinstance(value, dict):
            self.fail(pos, f"%regex value must be an object {usage}")
        for key in value:
            if key == "substring_words":
                self.fail(pos, "%regex substring_words is not supported yet (substring_chunks is)")
            if key not in ("substring_chunks", "substring_chars"):
                self.fail(pos, f"unknown field '{key}' in %regex {usage}")
        if not value:
            self.fail(pos, f"no fields set on %regex {usage}")
        if len(value) > 1:
            self.fail(pos, f"only one field can be set on %regex {usage}")
        (key, arg), = value.items()
        if key == "substring_chunks":
            if not (isinstance(arg, list) and all(isinstance(c, str) for c in arg)):
                self.fail(pos, "substring_chunks must be an array of strings")
            chunks = arg
        else:
            if not isinstance(arg, str):
                self.fail(pos, "substring_chars must be a string")
            chunks = list(arg)
        if not chunks:
            return '""'
        return "Substring(" + ", ".join(literal(c) if c else '""' for c in chunks) + ")"

    def special_tokens(self, spelled: str, pos: int) -> str:
        """The EBNF of a special-token atom: ``Token(ids)`` for ``<[1,5-7]>`` and ``<|name|>``; free text over
        tokens for the wildcard ``<[*]>`` (any one token, ``ExcludeToken()``) and the negated set ``<[^1,5-7]>``
        (any one token but those)."""
        if spelled.startswith("<[") and spelled.endswith("]>"):
            body = spelled[2:-2].strip()
            if body == "*":
                return "ExcludeToken()"
            if body.startswith("^"):
                if body[1:].strip() == "*":
                    self.fail(pos, f"negated wildcard special token is not supported ({spelled} matches no token)")
                ids = self.special_token_ids("<[" + body[1:] + "]>", pos)
                return f"ExcludeToken({', '.join(str(i) for i in ids)})"
        return f"Token({', '.join(str(i) for i in self.special_token_ids(spelled, pos))})"

    def special_token_ids(self, spelled: str, pos: int) -> list[int]:
        """The ids of ``<[1,5-7]>`` (ids and ranges), or of ``<|name|>``: every vocabulary entry spelled so."""
        if spelled.startswith("<[") and spelled.endswith("]>"):
            body = spelled[2:-2].strip()
            if not body:
                self.fail(pos, "empty numeric special-token range <[]>")
            ids: set[int] = set()
            for part in body.split(","):
                part = part.strip()
                if not part:
                    self.fail(pos, f"empty numeric special-token range in {spelled}")
                if part == "*":
                    self.fail(pos, f"wildcard cannot be mixed with ids or ranges ({spelled}); <[*]> alone is any "
                                   f"token")
                m = re.fullmatch(r"([0-9]+)(?:\s*-\s*([0-9]+))?", part)
                if not m:
                    self.fail(pos, f"invalid numeric special-token range {part!r} in {spelled}")
                lo = int(m.group(1))
                hi = int(m.group(2)) if m.group(2) is not None else lo
                if hi < lo:
                    self.fail(pos, f"invalid numeric special-token range {part!r} in {spelled} (end before start)")
                if hi - lo >= _MAX_TOKEN_RANGE or hi > _MAX_TOKEN_ID:
                    self.fail(pos, f"special-token range is too large: {part!r} (at most {_MAX_TOKEN_RANGE} ids, ids "
                                   f"up to {_MAX_TOKEN_ID})")
                ids.update(range(lo, hi + 1))
            return sorted(ids)
        if any(c.isspace() for c in spelled):
            self.fail(pos, f"invalid special token {spelled!r} (no whitespace inside <...>)")
        if self.tokenizer_info is None:
            self.fail(pos, f"named special token {spelled} requires tokenizer_info (Grammar.from_lark(..., "
                           "tokenizer_info=...) or GrammarCompiler.compile_lark)")
        wanted = spelled.encode("utf-8")
        ids = [i for i, b in enumerate(self.tokenizer_info.decoded_vocab) if bytes(b) == wanted]
        if not ids:
            self.fail(pos, f"unknown special token {spelled} (no vocabulary entry is spelled so)")
        return ids

    def embed(self, ebnf: str, root: str, hint: str) -> str:
        """Another grammar's EBNF under a fresh rule prefix; returns its root rule's new name."""
        prefix = self._fresh(hint) + "_"
        lines = [line for line in ebnf.splitlines() if line.strip()]
        # A printed rule is `name ::= body` or `name[attributes] ::= body`.
        defined = {line.split(" ::= ", 1)[0].split("[", 1)[0] for line in lines}
        for line in lines:
            head, body = line.split(" ::= ", 1)
            self.rules.append(f"{prefix}{head} ::= {_rename(body, defined, prefix)}")
        return prefix + root

    def nested_lark(self, text: str, pos: int) -> str:
        """``%lark { ... }``: a grammar with its own names (its start rule), embedded; ``@name`` reaches the same
        named grammars."""
        try:
            ebnf = lark_to_ebnf(text, named_grammars=self.named, tokenizer_info=self.tokenizer_info,
                                _chain=self.chain)
        except LarkError as e:
            self.fail(pos, f"failed to compile nested Lark grammar: {str(e).splitlines()[0]}")
        return self.embed(ebnf, "root", "lark")

    def named_grammar(self, name: str, pos: int) -> str:
        if name in self.embedded_named:
            return self.embedded_named[name]
        if name not in self.named:
            self.fail(pos, f"unknown named grammar '@{name}'")
        if name in self.chain:
            cycle = " -> ".join("@" + n for n in self.chain[self.chain.index(name):] + (name,))
            self.fail(pos, f"circular named grammar reference: {cycle}")
        value = self.named[name]
        if isinstance(value, str):
            try:
                ebnf, root = lark_to_ebnf(value, named_grammars=self.named, tokenizer_info=self.tokenizer_info,
                                          _chain=self.chain + (name,)), "root"
            except LarkError as e:
                if "circular named grammar reference" in str(e):
                    raise
                self.fail(pos, f"in the named grammar '@{name}': {str(e).splitlines()[0]}")
        else:  # a Grammar
            ebnf, root = str(value), value.root_rule_name
        self.embedded_named[name] = rule = self.embed(ebnf, root, f"named_{name}")
        return rule

    def inline_json(self, schema, pos: int) -> str:
        """The JSON Schema front end's grammar for ``schema``, its rules renamed under a fresh prefix."""
        from xg2jax.json_schema import json_schema_to_ebnf

        try:
            ebnf = json_schema_to_ebnf(schema)
        except (ValueError, TypeError) as e:
            self.fail(pos, f"failed to compile inline JSON schema: {str(e).splitlines()[0]}")
        self.json_count += 1
        return self.embed(ebnf, "root", f"json{self.json_count}")


def _escape_regex(text: str) -> str:
    """`text` as a regex that matches it literally."""
    return "".join("\\" + c if c in _REGEX_SPECIAL else c for c in text)


def _one_token(node: tuple) -> bool:
    """Whether every text of `node` is one special token (``<|x|>``, ``<[id]>``, alternatives of them): a ``[lazy]``
    or ``[max_chars=n]`` rule over it ends after that token whatever it reads (a token is not cut)."""
    kind = node[0]
    if kind == "alt":
        return all(_one_token(x) for x in node[1])
    if kind == "seq":
        return len(node[1]) == 1 and _one_token(node[1][0])
    return kind == "special"


def _references_a_rule(doc, node: tuple) -> bool:
    """Whether `node` names a rule (not a terminal) directly."""
    kind = node[0]
    if kind in ("seq", "alt"):
        return any(_references_a_rule(doc, x) for x in node[1])
    if kind == "rep":
        return _references_a_rule(doc, node[1])
    return kind == "ref" and node[1] in doc.definitions and not doc.definitions[node[1]].is_terminal


def _note_regex_flags(pattern: str, regex_flags: str, flags: set) -> None:
    """What a ``/pattern/regex_flags`` part of a lazy rule needs of the rule's one regex (see regex_of)."""
    flags.add(("i", "i" in regex_flags))
    if "." in pattern:
        flags.add(("s", "s" in regex_flags))


def _engine_attributes(d, marker: list[str] = (), budget: bool = True) -> str:
    """The attributes of rule ``d`` that the engine's EBNF keeps on a rule (``max_tokens`` unless not ``budget``,
    ``capture``, labelled with the Lark rule's name unless given, the ``marker`` ones given, and ``temperature``) as
    ``[...]``, or ''."""
    parts = [f"max_tokens={int(d.attrs['max_tokens'][0])}"] if "max_tokens" in d.attrs and budget else []
    if "capture" in d.attrs:
        label = d.attrs["capture"][0]
        parts.append(f"capture={literal(d.name if label is True else label)}")
    parts += marker
    if "temperature" in d.attrs:
        parts.append(f"temperature={float(d.attrs['temperature'][0])!r}")
    return f"[{', '.join(parts)}]" if parts else ""


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


def lark_to_ebnf(lark_text: str, start: str = "start", *, named_grammars: dict | None = None,
                 tokenizer_info=None, _chain: tuple = ()) -> str:
    """EBNF text (root rule ``root``) for a Lark grammar; see the module docstring for the dialect.

    ``named_grammars`` maps the names ``@name`` refers to onto a Grammar or the text of a Lark grammar (which
    may refer to the others; a cycle is an error). ``tokenizer_info`` resolves special tokens named by their
    text (``<|tool|>``).

    Raises
    ------
    LarkError
        (a ``ValueError`` and a ``RuntimeError``) with the line and column of what cannot be converted.
    """
    text = lark_text.replace("\r\n", "\n")
    doc = Parser(text).parse()
    return _Converter(text, doc, start, named_grammars, _chain, tokenizer_info).convert()
