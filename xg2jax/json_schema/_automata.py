"""The engine's code-point automata (cpp/automata/codepoint_dfa.h) as the converter uses them: ``pattern`` regexes
(ECMAScript, search semantics), length bounds and finite name sets, their products, and the spelling of an
automaton's transitions as EBNF for JSON strings.

Every automaton is built in C++ (with the GIL released); this module only names the calls, turns the engine's
regex and limit errors into :class:`RegexUnsupported`, memoises patterns a schema repeats, and spells code points.

Spelling: an edge on a set of code points is written the way ``json.dumps`` writes them (raw, except ``"`` ``\\``
and control characters, which take their short escape or ``\\u00XX``; ``\\/`` is accepted for ``/``). Other
escape spellings of the same key (``\\u0061`` for ``a``) are not accepted: the documented approximation, the same
as for ``pattern`` and for declared property names.
"""

from __future__ import annotations

import functools
import json

from xg2jax._core import automata as _engine
from xg2jax.json_schema._limits import MAX_DFA_STATES, MAX_LENGTH_AUTOMATON, MAX_MERGE_WORK
from xg2jax.json_schema._regex_text import hoist_anchors

MAX_CP = 0x10FFFF

#: A complete DFA over code points (state 0 starts; one accepting set per component).
Dfa = _engine.CodepointDfa


class RegexUnsupported(ValueError):
    """The regex uses a feature the engine does not handle, or an automaton exceeds a limit (the caller raises
    UnsupportedSchemaError)."""


def _engine_call(fn, *args):
    try:
        return fn(*args)
    except ValueError as e:  # RegexError "regex error at position P: what\n  <pattern>\n  <caret>", LimitError
        first = str(e).split("\n", 1)[0]
        raise RegexUnsupported(first.removeprefix("regex error ")) from None


def regex_syntax_error(pattern: str) -> str | None:
    """``"at position P: what"`` when the engine's regex parser rejects ``pattern``, else None."""
    return _engine.regex_syntax_error(hoist_anchors(pattern))


@functools.lru_cache(maxsize=256)
def regex_dfa(pattern: str) -> Dfa:
    """DFA of the strings in which ``pattern`` finds a match (JSON Schema ``pattern`` semantics). Memoised (a
    schema often repeats a pattern); a DFA is immutable."""
    return _engine_call(_engine.search_dfa, hoist_anchors(pattern), MAX_DFA_STATES)


def length_dfa(lo: int, hi: int | None) -> Dfa:
    """Strings of ``lo`` to ``hi`` code points."""
    if lo > MAX_LENGTH_AUTOMATON or (hi is not None and hi > MAX_LENGTH_AUTOMATON):
        raise RegexUnsupported(f"a length bound above {MAX_LENGTH_AUTOMATON} (MAX_LENGTH_AUTOMATON)")
    return _engine_call(_engine.length_dfa, lo, -1 if hi is None else hi, MAX_LENGTH_AUTOMATON + 1)


def names_dfa(names: list[str]) -> Dfa:
    """Exactly the strings in ``names``."""
    return _engine.names_dfa([n.encode("utf-8", "surrogatepass") for n in names])


def product(dfas: list[Dfa]) -> tuple[Dfa, list[tuple[bool, ...]]]:
    """The reachable product of ``dfas`` and, per state, which of them accept (a component in its dead state
    accepts nothing; the state where every component is dead is kept: keys that no pattern and no name matches end
    there)."""
    p = _engine_call(_engine.product, dfas, MAX_DFA_STATES)
    k = p.num_components
    flat = p.accept_matrix()
    return p, [tuple(b == 1 for b in flat[i:i + k]) for i in range(0, len(flat), k)]


def product_with_length(must: list[Dfa], must_not: list[Dfa], lo: int, hi: int | None) -> Dfa:
    """The strings every automaton of ``must`` accepts and none of ``must_not`` does, of ``lo`` to ``hi`` code
    points (the length is tracked only while it matters: cpp/automata/codepoint_dfa.h)."""
    return _engine_call(_engine.product_with_length, must + must_not, len(must), lo, -1 if hi is None else hi,
                        MAX_DFA_STATES)


# A patternProperties key the converter makes (never a user regex: it starts with NUL): the keys that are none of
# the listed names and match none of the listed patterns, i.e. the keys one schema's additionalProperties covers
# (an allOf merge keeps that schema's additionalProperties as such a pattern next to the other side's patterns).
OTHER_KEYS = "\x00xg2jax-other-keys:"


def other_keys_pattern(names: list[str], patterns: list[str]) -> str:
    return OTHER_KEYS + json.dumps([sorted(names), sorted(patterns)], ensure_ascii=False)


@functools.lru_cache(maxsize=256)
def key_dfa(pattern: str) -> Dfa:
    """DFA of a patternProperties key: a regex, or an ``other_keys_pattern``."""
    if not pattern.startswith(OTHER_KEYS):
        return regex_dfa(pattern)
    names, patterns = json.loads(pattern[len(OTHER_KEYS):])
    p, accept = product([names_dfa(names)] + [key_dfa(x) for x in patterns])
    return p.with_accepting([q for q, vec in enumerate(accept) if not any(vec)])


def matches(dfa: Dfa, text: str) -> bool:
    """Whether ``dfa`` (component 0) accepts the whole of ``text``."""
    return dfa.accepts(dfa.run(text.encode("utf-32-le", "surrogatepass")))


def emission_plan(dfa: Dfa):
    """(start or -1, [(state, accepting, loop ranges, [(target, ranges)])]): ``dfa`` trimmed to the states that
    reach an accepting one, equivalent states merged (within MAX_MERGE_WORK), transitions grouped by target."""
    return dfa.emission_plan(MAX_MERGE_WORK)


def _norm(ivs):
    """Sorted ranges with overlapping and adjacent ones merged (for spelling a class)."""
    out = []
    for lo, hi in sorted(ivs):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


_SHORT = {0x22: '\\"', 0x5C: "\\\\", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}


# The escapes of every escapable code point: the short ones, then \\u00XX for the controls without a short one.
_ANY_ESCAPE = r'"\\" ( ["\\/bfnrt] | "u00" ( "0" [0-7bBeEfF] | "1" [0-9a-fA-F] ) )'


def _ebnf_class(ivs) -> str:
    def ch(cp):
        c = chr(cp)
        if c in "]\\-^":
            return "\\" + c
        if cp < 0x20 or cp == 0x7F:
            return f"\\x{cp:02x}"
        return c
    return "[" + "".join(ch(lo) if lo == hi else f"{ch(lo)}-{ch(hi)}" for lo, hi in ivs) + "]"


def spell(ivs) -> tuple[str, ...]:
    """EBNF alternatives spelling one code point of ``ivs`` inside a JSON string (see the module docstring)."""
    return _spell_code_point(tuple(ivs))


@functools.lru_cache(maxsize=4096)
def _spell_code_point(ivs: tuple) -> tuple[str, ...]:
    # Memoised: a key or string automaton's transitions repeat a few classes (any character but one, ...).
    out = []
    raw = []
    for lo, hi in ivs:
        for a, b in ((lo, hi),):
            for x, y in ((max(a, 0x20), min(b, 0x21)), (max(a, 0x23), min(b, 0x5B)), (max(a, 0x5D), min(b, 0xD7FF)),
                         (max(a, 0xE000), min(b, MAX_CP))):
                if x <= y:
                    raw.append((x, y))
    if raw:
        out.append(_ebnf_class(_norm(raw)))
    if all(any(lo <= cp <= hi for lo, hi in ivs) for cp in (*range(0x20), 0x22, 0x2F, 0x5C)):
        # Every escapable code point: one compact alternative instead of 34, the same strings (the common case:
        # a key automaton's "any other character" edge, on every state).
        out.append(_ANY_ESCAPE)
        return tuple(out)
    for cp, text in _SHORT.items():
        if any(lo <= cp <= hi for lo, hi in ivs):
            out.append('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
    if any(lo <= 0x2F <= hi for lo, hi in ivs):
        out.append('"\\\\/"')
    for cp in range(0x20):
        if cp not in _SHORT and any(lo <= cp <= hi for lo, hi in ivs):
            out.append(f'"\\\\u00" [{cp >> 4}] [{"%x" % (cp & 15)}{"%X" % (cp & 15)}]')
    return tuple(out)
