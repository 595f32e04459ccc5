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

_NAMED_OPEN = re.compile(r"\(\?P?<([A-Za-z_$][\w$]*)>")


def _capture_names(pattern: str) -> tuple[int, dict[str, int]]:
    """(number of capturing groups, {name: group number}) by a scan that skips escapes and classes."""
    count, names, i, in_class = 0, {}, 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            named = _NAMED_OPEN.match(pattern, i)
            if named or not pattern.startswith("(?", i):
                count += 1
                if named:
                    names[named.group(1)] = count
        i += 1
    return count, names


def _decapture(text: str) -> str:
    """``text`` with every capturing group made non-capturing (escapes and classes left as they are)."""
    out, i, in_class = [], 0, False
    while i < len(text):
        c = text[i]
        if c == "\\":
            out.append(text[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            named = _NAMED_OPEN.match(text, i)
            if named:
                out.append("(?:")
                i = named.end()
                continue
            if not text.startswith("(?", i):
                out.append("(?:")
                i += 1
                continue
        out.append(c)
        i += 1
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
    count, i, in_class = 0, 0, False

    def reference(number: int) -> str:
        body = closed.get(number)
        return "(?:)" if body is None else f"(?:(?:{_decapture(body)})?)"

    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1:i + 2]
            if not in_class and nxt.isdigit() and nxt != "0":
                j = i + 1
                while j < len(pattern) and pattern[j].isdigit():
                    j += 1
                number = int(pattern[i + 1:j])
                if number <= total:
                    out.append(reference(number))
                    i = j
                    continue
            if not in_class and nxt == "k":
                named = re.compile(r"\\k<([A-Za-z_$][\w$]*)>").match(pattern, i)
                if named and named.group(1) in names:
                    out.append(reference(names[named.group(1)]))
                    i = named.end()
                    continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
            out.append(c)
        elif c == "[":
            in_class = True
            out.append(c)
        elif c == "(":
            named = _NAMED_OPEN.match(pattern, i)
            opener = named.group(0) if named else "(?" if pattern.startswith("(?", i) else "("
            if named or opener == "(":
                count += 1
                open_groups.append((count, len(out) + 1))
            else:
                open_groups.append((None, len(out) + 1))
            out.append(opener)
            i += len(opener)
            continue
        elif c == ")" and open_groups:
            number, start = open_groups.pop()
            if number is not None:
                closed[number] = "".join(out[start:])
            out.append(c)
        else:
            out.append(c)
        i += 1
    return "".join(out)
