"""Backreferences in ``pattern`` with ``strict_mode=False``: the documented approximation.

A backreference (``\\1``, ``\\k<name>``) makes a regex's language non-regular (``(a+)b\\1`` is ``a^n b a^n``), so
no grammar enforces it, and in strict mode the regex front end rejects it naming the construct. With
``strict_mode=False`` a string ``pattern`` is widened instead: in ECMAScript a backreference matches the text its
group last captured, or the empty string when the group has not taken part in the match (it lies in an
alternative not taken, or closes after the reference). Both are in ``(?:G)?`` where G is the group's own
sub-pattern, so replacing each backreference by ``(?:(?:G)?)`` gives a regex whose language contains the
original's: every string the schema accepts is still accepted, and some it rejects are accepted too
(``^(a|b)\\1$`` also matches ``ab``). Capturing groups inside the copy become non-capturing, so the numbers of the
later groups do not change. A reference to a group that closes later (or encloses it) is replaced by the empty
regex, which is exactly what ECMAScript matches there. Only positive ``pattern`` uses are widened: under ``not``
(or as a property-name filter) a larger language would reject valid instances, so those still raise.

Algorithm: one left-to-right scan that knows escapes and character classes (where ``\\1`` is not a reference),
numbers capturing groups by their opening parenthesis as ECMAScript does, and records each group's widened text
when it closes; a reference to a number or name the pattern does not define is left alone for the regex front
end to report.
"""

from __future__ import annotations

import re

from xg2jax.json_schema._regex_text import regex_tokens

_NAMED_OPEN = re.compile(r"\(\?P?<([A-Za-z_$][\w$]*)>")
_NAMED_REFERENCE = re.compile(r"\\k<([A-Za-z_$][\w$]*)>")


def _opener(pattern: str, i: int) -> tuple[str, bool]:
    """The group opener at pattern[i] == "(" as written ("(", "(?", "(?<name>") and whether the group captures."""
    named = _NAMED_OPEN.match(pattern, i)
    if named:
        return named.group(0), True
    return ("(?", False) if pattern.startswith("(?", i) else ("(", True)


def _capture_names(pattern: str) -> tuple[int, dict[str, int]]:
    """(number of capturing groups, {name: group number}), counted by opening parenthesis as ECMAScript does."""
    count, names = 0, {}
    for i, c, in_class in regex_tokens(pattern):
        if c == "(" and not in_class and _opener(pattern, i)[1]:
            count += 1
            named = _NAMED_OPEN.match(pattern, i)
            if named:
                names[named.group(1)] = count
    return count, names


def _decapture(text: str) -> str:
    """``text`` with every capturing group made non-capturing (escapes and classes left as they are)."""
    out, skip_to = [], 0
    for i, c, in_class in regex_tokens(text):
        if i < skip_to:
            continue
        if c == "(" and not in_class:
            opener, captures = _opener(text, i)
            if captures:
                out.append("(?:")
                skip_to = i + len(opener)
                continue
        out.append(c)
    return "".join(out)


def widen_backreferences(pattern: str) -> str:
    """``pattern`` with each backreference replaced by its group's sub-pattern, optional (see the module doc)."""
    if "\\" not in pattern:
        return pattern
    total, names = _capture_names(pattern)
    if total == 0:
        return pattern
    out: list[str] = []
    closed: dict[int, str] = {}  # group number -> its widened sub-pattern
    open_groups: list[tuple[int | None, int]] = []  # (group number or None, index in out where its body starts)
    count, skip_to = 0, 0

    def reference(number: int) -> str:
        body = closed.get(number)
        return "(?:)" if body is None else f"(?:(?:{_decapture(body)})?)"

    for i, c, in_class in regex_tokens(pattern):
        if i < skip_to:
            continue
        if in_class:
            out.append(c)
            continue
        if c[0] == "\\" and c[1:].isdigit() and c[1] != "0":
            j = i + 2
            while j < len(pattern) and pattern[j].isdigit():
                j += 1
            if int(pattern[i + 1:j]) <= total:
                out.append(reference(int(pattern[i + 1:j])))
                skip_to = j
                continue
        named = _NAMED_REFERENCE.match(pattern, i) if c == "\\k" else None
        if named and named.group(1) in names:
            out.append(reference(names[named.group(1)]))
            skip_to = named.end()
        elif c == "(":
            opener, captures = _opener(pattern, i)
            if captures:
                count += 1
            open_groups.append((count if captures else None, len(out) + 1))
            out.append(opener)
            skip_to = i + len(opener)
        elif c == ")" and open_groups:
            number, start = open_groups.pop()
            if number is not None:
                closed[number] = "".join(out[start:])
            out.append(c)
        else:
            out.append(c)
    return "".join(out)
