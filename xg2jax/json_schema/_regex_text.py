"""Regex text helpers: the converter rewrites a few ``pattern`` spellings before the engine parses them (anchors
inside leading / trailing groups; backreferences, in ``_backrefs``). They read tokens, never build automata: the
engine's regex parser (cpp/automata/regex_parser.h) is the one that decides what a pattern means."""

from __future__ import annotations


def regex_tokens(p: str, start: int = 0):
    """(index, token, in_class) for each token of the regex ``p`` from ``start``: an escape (``\\d``, ``\\(``) is one
    two-character token, anything else one character; ``in_class`` marks the tokens of a character class after its
    opening ``[`` (its closing ``]`` included), where ``(``, ``)`` and ``|`` are plain characters."""
    j, in_class = start, False
    while j < len(p):
        if p[j] == "\\":
            yield j, p[j:j + 2], in_class
            j += 2
            continue
        c = p[j]
        yield j, c, in_class
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        j += 1


def _structure(p: str, start: int = 0):
    """(index, token, depth) for each token of ``p`` outside character classes; ``depth`` is the group nesting
    around the token (a ``(`` counts itself, a ``)`` no longer)."""
    depth = 0
    for j, c, in_class in regex_tokens(p, start):
        if in_class:
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        yield j, c, depth


def _group_end(p: str, i: int) -> tuple[int, bool] | None:
    """For the group opening at p[i] == "(": (index of its closing ")", whether it has a top-level "|")."""
    bar = False
    for j, c, depth in _structure(p, i):
        if c == ")" and depth == 0:
            return j, bar
        bar = bar or (c == "|" and depth == 1)
    return None


def top_level_alternatives(p: str) -> list[str]:
    """The alternatives of ``p`` split at its top-level ``|`` (outside groups and classes)."""
    out, start = [], 0
    for j, c, depth in _structure(p):
        if c == "|" and depth == 0:
            out.append(p[start:j])
            start = j + 1
    out.append(p[start:])
    return out


def hoist_anchors(pattern: str) -> str:
    """``pattern`` with a ``^`` that opens groups at the very start (``(^a)``, ``((?:^a))``) and a ``$`` that
    closes groups at the very end (``(a$)``) moved outside those groups, where they mean the same: a group without
    a top-level ``|`` and without a quantifier matches where its body matches. Anything else is left as it is."""
    i, opens = 0, []
    while pattern.startswith("(", i):
        opens.append(i)
        i += 3 if pattern.startswith("(?:", i) else 1
    if opens and pattern.startswith("^", i):
        spans = [_group_end(pattern, o) for o in opens]
        if all(sp is not None and not sp[1] and (sp[0] + 1 == len(pattern) or pattern[sp[0] + 1] not in "*+?{")
               for sp in spans):
            pattern = "^" + pattern[:i] + pattern[i + 1:]
    k = len(pattern)
    while k > 0 and pattern[k - 1] == ")":
        k -= 1
    if k < len(pattern) and k > 0 and pattern[k - 1] == "$":
        backslashes = len(pattern[:k - 1]) - len(pattern[:k - 1].rstrip("\\"))
        if backslashes % 2 == 0:
            closes = range(k, len(pattern))
            starts = {}
            for o in range(len(pattern)):  # the group of each closing parenthesis at the end
                if pattern[o] == "(" and (o == 0 or pattern[o - 1] != "\\"):
                    sp = _group_end(pattern, o)
                    if sp is not None and sp[0] in closes:
                        starts[sp[0]] = sp
            if len(starts) == len(closes) and not any(bar for _, bar in starts.values()):
                pattern = pattern[:k - 1] + pattern[k:] + "$"
    return pattern
