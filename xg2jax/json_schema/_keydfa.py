"""Regular languages of object keys as DFAs over Unicode code points: ``pattern`` regexes (ECMAScript, search
semantics), length bounds and finite name sets, with intersection and complement, emitted as EBNF for JSON strings.

Algorithm. A regex is parsed (the ECMAScript subset without backreferences, lookaround or word boundaries) into an
NFA whose edges carry sets of code-point intervals (Thompson's construction). Search semantics wraps each top-level
alternative in ``.*`` on the sides without a ``^`` / ``$`` anchor (anchors elsewhere are rejected). Code points are
split into atoms at every interval boundary of the automata involved, so subset construction and products work per
atom. ``product`` runs several DFAs in lockstep; each product state knows which of them accept, which is all that
``patternProperties`` (which patterns match a key) and ``propertyNames`` need.

Emission: equivalent live states are merged first (Moore's refinement, ``merge_equivalent``), then one EBNF rule per
state, whose edges back into itself are written as a loop ``( ... )*`` ahead of its other edges (so ``.*`` is one
lexical loop, which the engine masks through token slices). An edge on a set of code points is spelled the way
``json.dumps`` writes them (raw, except ``"`` ``\\`` and control characters, which take their short escape or
``\\u00XX``; ``\\/`` is accepted for ``/``). Other escape spellings of the same key (``\\u0061`` for ``a``) are not
accepted: the documented approximation, the same as for ``pattern`` and for declared property names.
"""

from __future__ import annotations

import functools
import json

from xg2jax.json_schema._limits import MAX_DFA_STATES, MAX_LENGTH_AUTOMATON, MAX_REGEX_REPEAT

MAX_CP = 0x10FFFF
_LINE_TERMINATORS = [(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]
_SPACE = [(0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
          (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF)]
_DIGIT = [(0x30, 0x39)]
_WORD = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]


class RegexUnsupported(ValueError):
    """The regex uses a feature this module does not handle (the caller raises UnsupportedSchemaError)."""


def _norm(ivs):
    out = []
    for lo, hi in sorted(ivs):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _negate(ivs):
    out, at = [], 0
    for lo, hi in _norm(ivs):
        if lo > at:
            out.append((at, lo - 1))
        at = hi + 1
    if at <= MAX_CP:
        out.append((at, MAX_CP))
    return out


class _NFA:
    def __init__(self):
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[list, int]]] = []

    def state(self) -> int:
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1


class _Parser:
    """Recursive descent over the pattern; each method returns an NFA fragment (start, end)."""

    def __init__(self, pattern: str, nfa: _NFA):
        self.p, self.i, self.nfa = pattern, 0, nfa

    def peek(self):
        return self.p[self.i] if self.i < len(self.p) else None

    def take(self):
        c = self.p[self.i]
        self.i += 1
        return c

    def alternatives(self, top=False):
        branches = [self.sequence(top)]
        while self.peek() == "|":
            self.take()
            branches.append(self.sequence(top))
        return branches

    def sequence(self, top):
        """(fragment, anchored_start, anchored_end) at the top level, else a fragment."""
        nfa = self.nfa
        start = nfa.state()
        end = start
        anchored_start = anchored_end = False
        if top and self.peek() == "^":
            self.take()
            anchored_start = True
        while self.peek() is not None and self.peek() not in "|)":
            if self.peek() == "$":
                self.take()
                if not top or (self.peek() is not None and self.peek() not in "|"):
                    raise RegexUnsupported("'$' other than at the end of the pattern")
                anchored_end = True
                break
            if self.peek() == "^":
                raise RegexUnsupported("'^' other than at the start of the pattern")
            s, e = self.quantified()
            nfa.eps[end].append(s)
            end = e
        if top:
            return (start, end), anchored_start, anchored_end
        return start, end

    def quantified(self):
        s, e = self.atom()
        block_end = len(self.nfa.eps)  # the atom's states are s .. block_end - 1
        c = self.peek()
        if c in ("*", "+", "?"):
            self.take()
            lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        elif c == "{" and self._brace():
            lo, hi = self._brace_value()
        else:
            return s, e
        if self.peek() == "?":
            self.take()  # lazy: same language
        return self._repeat(s, e, block_end, lo, hi)

    def _brace(self):
        j = self.p.find("}", self.i)
        body = self.p[self.i + 1:j] if j > 0 else ""
        parts = body.split(",")
        return j > 0 and 1 <= len(parts) <= 2 and parts[0].isdigit() and (len(parts) == 1 or parts[1] == ""
                                                                          or parts[1].isdigit())

    def _brace_value(self):
        j = self.p.find("}", self.i)
        parts = self.p[self.i + 1:j].split(",")
        self.i = j + 1
        lo = int(parts[0])
        hi = lo if len(parts) == 1 else (None if parts[1] == "" else int(parts[1]))
        if (hi if hi is not None else lo) > MAX_REGEX_REPEAT:
            raise RegexUnsupported(f"a repetition count above {MAX_REGEX_REPEAT} (MAX_REGEX_REPEAT)")
        return lo, hi

    def _repeat(self, s, e, block_end, lo, hi):
        nfa = self.nfa

        def copy():
            off = len(nfa.eps) - s
            for _ in range(s, block_end):
                nfa.state()
            for q in range(s, block_end):
                nfa.eps[q + off] = [t + off if s <= t < block_end else t for t in nfa.eps[q]]
                nfa.edges[q + off] = [(iv, t + off if s <= t < block_end else t) for iv, t in nfa.edges[q]]
            return s + off, e + off

        count = lo + 1 if hi is None else hi
        frags = ([(s, e)] + [copy() for _ in range(count - 1)]) if count else []
        start, end = nfa.state(), nfa.state()
        cur = start
        if hi is None:
            for k in range(lo):
                nfa.eps[cur].append(frags[k][0])
                cur = frags[k][1]
            ls, le = frags[lo]
            nfa.eps[cur] += [ls, end]
            nfa.eps[le] += [ls, end]
        else:
            for k in range(hi):
                if k >= lo:
                    nfa.eps[cur].append(end)
                nfa.eps[cur].append(frags[k][0])
                cur = frags[k][1]
            nfa.eps[cur].append(end)
        return start, end

    def atom(self):
        nfa = self.nfa
        c = self.take()
        if c == "(":
            if self.p.startswith("?:", self.i):
                self.i += 2
            elif self.peek() == "?":
                raise RegexUnsupported("lookaround or named groups")
            s = nfa.state()
            e = nfa.state()
            for bs, be in self.alternatives():
                nfa.eps[s].append(bs)
                nfa.eps[be].append(e)
            if self.peek() != ")":
                raise RegexUnsupported("unbalanced parenthesis")
            self.take()
            return s, e
        if c == "[":
            ivs = self._class()
        elif c == ".":
            ivs = _negate(_LINE_TERMINATORS)
        elif c == "\\":
            ivs = self._escape(in_class=False)
        elif c in "*+?{}])|":
            if c in "}]":
                ivs = [(ord(c), ord(c))]
            else:
                raise RegexUnsupported(f"a quantifier or '{c}' with nothing before it")
        else:
            ivs = [(ord(c), ord(c))]
        s = nfa.state()
        e = nfa.state()
        nfa.edges[s].append((_norm(ivs), e))
        return s, e

    def _escape(self, in_class):
        if self.peek() is None:
            raise RegexUnsupported("a trailing backslash")
        c = self.take()
        simple = {"n": 10, "r": 13, "t": 9, "f": 12, "v": 11, "0": 0}
        if c in simple and not (c == "0" and self.peek() is not None and self.peek().isdigit()):
            return [(simple[c], simple[c])]
        if c == "d":
            return _DIGIT
        if c == "D":
            return _negate(_DIGIT)
        if c == "w":
            return _WORD
        if c == "W":
            return _negate(_WORD)
        if c == "s":
            return _SPACE
        if c == "S":
            return _negate(_SPACE)
        if c == "b" and in_class:
            return [(8, 8)]
        if c == "x" and all(ch in "0123456789abcdefABCDEF" for ch in self.p[self.i:self.i + 2]) and \
                len(self.p) >= self.i + 2:
            v = int(self.p[self.i:self.i + 2], 16)
            self.i += 2
            return [(v, v)]
        if c == "u" and len(self.p) >= self.i + 4 and all(ch in "0123456789abcdefABCDEF"
                                                          for ch in self.p[self.i:self.i + 4]):
            v = int(self.p[self.i:self.i + 4], 16)
            self.i += 4
            if 0xD800 <= v <= 0xDFFF:
                raise RegexUnsupported("a surrogate \\u escape")
            return [(v, v)]
        if c in "pP" and self.peek() == "{":
            j = self.p.find("}", self.i)
            if j < 0:
                raise RegexUnsupported("an unterminated \\p{...}")
            name = self.p[self.i + 1:j]
            self.i = j + 1
            ivs = category_intervals(name)
            return ivs if c == "p" else _negate(ivs)
        if (c in "123456789" and not in_class) or (c == "k" and self.peek() == "<"):
            raise RegexUnsupported(f"the backreference '\\{c}' (not a regular language)")
        if c.isalnum():
            raise RegexUnsupported(f"the escape '\\{c}'")
        return [(ord(c), ord(c))]

    def _class(self):
        negated = self.peek() == "^"
        if negated:
            self.take()
        ivs = []
        while True:
            c = self.peek()
            if c is None:
                raise RegexUnsupported("an unterminated character class")
            if c == "]":  # ECMAScript: "[]" is the empty class, "[^]" any character
                self.take()
                break
            lo = self._class_atom()
            if self.peek() == "-" and self.p[self.i + 1:self.i + 2] not in ("]", ""):
                self.take()
                hi = self._class_atom()
                if len(lo) != 1 or len(hi) != 1 or lo[0][0] != lo[0][1] or hi[0][0] != hi[0][1]:
                    raise RegexUnsupported("a class range with a class escape")
                if lo[0][0] > hi[0][0]:
                    raise RegexUnsupported("a class range out of order")
                ivs.append((lo[0][0], hi[0][0]))
            else:
                ivs += lo
        return _negate(ivs) if negated else _norm(ivs)

    def _class_atom(self):
        c = self.take()
        if c == "\\":
            return self._escape(in_class=True)
        return [(ord(c), ord(c))]


_CATEGORY_NAMES = {
    "Letter": "L", "Cased_Letter": "LC", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll", "Titlecase_Letter": "Lt",
    "Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M", "Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc",
    "Enclosing_Mark": "Me", "Number": "N", "Decimal_Number": "Nd", "digit": "Nd", "Letter_Number": "Nl",
    "Other_Number": "No", "Punctuation": "P", "punct": "P", "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd",
    "Open_Punctuation": "Ps", "Close_Punctuation": "Pe", "Initial_Punctuation": "Pi", "Final_Punctuation": "Pf",
    "Other_Punctuation": "Po", "Symbol": "S", "Math_Symbol": "Sm", "Currency_Symbol": "Sc", "Modifier_Symbol": "Sk",
    "Other_Symbol": "So", "Separator": "Z", "Space_Separator": "Zs", "Line_Separator": "Zl",
    "Paragraph_Separator": "Zp", "Other": "C", "Control": "Cc", "cntrl": "Cc", "Format": "Cf", "Surrogate": "Cs",
    "Private_Use": "Co", "Unassigned": "Cn"}
_CATEGORY_CACHE: dict[str, list] = {}


def category_intervals(name: str) -> list[tuple[int, int]]:
    """Code points of a Unicode general category (``\\p{L}``, ``\\p{Letter}``, ``\\p{gc=Lu}``), from Python's
    ``unicodedata`` (its Unicode version may differ slightly from an ECMAScript engine's)."""
    import unicodedata

    for prefix in ("gc=", "General_Category="):
        name = name.removeprefix(prefix)
    short = _CATEGORY_NAMES.get(name, name)
    if not _CATEGORY_CACHE:
        runs: dict[str, list] = {}
        prev, start = None, 0
        for cp in range(MAX_CP + 2):
            cat = unicodedata.category(chr(cp)) if cp <= MAX_CP else None
            if cat != prev:
                if prev is not None:
                    runs.setdefault(prev, []).append((start, cp - 1))
                prev, start = cat, cp
        _CATEGORY_CACHE.update(runs)
    if short == "LC":
        return _norm(_CATEGORY_CACHE.get("Lu", []) + _CATEGORY_CACHE.get("Ll", []) + _CATEGORY_CACHE.get("Lt", []))
    if len(short) == 2 and short in _CATEGORY_CACHE or short == "Cn":
        return list(_CATEGORY_CACHE.get(short, []))
    if len(short) == 1 and short in "LMNPSZC":
        return _norm([iv for cat, ivs in _CATEGORY_CACHE.items() if cat[0] == short for iv in ivs])
    raise RegexUnsupported(f"the Unicode property '\\p{{{name}}}'")


class DFA:
    """Complete DFA over atoms: ``delta[q][a]`` (state -1 is the dead state, never stored)."""

    def __init__(self, atoms, delta, accept, start=0):
        self.atoms, self.delta, self.accept, self.start = atoms, delta, accept, start


def _atoms(interval_sets) -> list[tuple[int, int]]:
    cuts = {0, MAX_CP + 1}
    for ivs in interval_sets:
        for lo, hi in ivs:
            cuts.add(lo)
            cuts.add(hi + 1)
    cuts = sorted(cuts)
    return [(cuts[i], cuts[i + 1] - 1) for i in range(len(cuts) - 1)]


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


def _group_end(p: str, i: int) -> tuple[int, bool] | None:
    """For the group opening at p[i] == "(": (index of its closing ")", whether it has a top-level "|")."""
    depth, bar = 0, False
    for j, c, in_class in regex_tokens(p, i):
        if in_class:
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j, bar
        elif c == "|" and depth == 1:
            bar = True
    return None


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


@functools.lru_cache(maxsize=256)
def regex_dfa(pattern: str) -> DFA:
    """DFA of the strings in which ``pattern`` finds a match (JSON Schema ``pattern`` semantics). Memoised (a
    schema often repeats a pattern); the DFA is never modified."""
    pattern = hoist_anchors(pattern)
    nfa = _NFA()
    parser = _Parser(pattern, nfa)
    start = nfa.state()
    accept = nfa.state()
    for (s, e), anchored_start, anchored_end in parser.alternatives(top=True):
        if anchored_start:
            nfa.eps[start].append(s)
        else:
            loop = nfa.state()
            nfa.eps[start].append(loop)
            nfa.edges[loop].append(([(0, MAX_CP)], loop))
            nfa.eps[loop].append(s)
        if anchored_end:
            nfa.eps[e].append(accept)
        else:
            tail = nfa.state()
            nfa.eps[e].append(tail)
            nfa.edges[tail].append(([(0, MAX_CP)], tail))
            nfa.eps[tail].append(accept)
    if parser.i != len(pattern):
        raise RegexUnsupported("unbalanced parenthesis")
    atoms = _atoms([iv for edges in nfa.edges for iv, _ in edges])

    def closure(states):
        stack, seen = list(states), set(states)
        while stack:
            q = stack.pop()
            for t in nfa.eps[q]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    def contains(ivs, cp):
        return any(lo <= cp <= hi for lo, hi in ivs)

    first = closure([start])
    index = {first: 0}
    order = [first]
    delta = []
    while len(delta) < len(order):
        cur = order[len(delta)]
        row = []
        for lo, _ in atoms:
            nxt = closure([t for q in cur for ivs, t in nfa.edges[q] if contains(ivs, lo)])
            if not nxt:
                row.append(-1)
                continue
            if nxt not in index:
                if len(order) >= MAX_DFA_STATES:
                    raise RegexUnsupported(f"more than {MAX_DFA_STATES} automaton states (MAX_DFA_STATES)")
                index[nxt] = len(order)
                order.append(nxt)
            row.append(index[nxt])
        delta.append(row)
    return DFA(atoms, delta, [accept in s for s in order])


def length_dfa(lo: int, hi: int | None) -> DFA:
    """Strings of ``lo`` to ``hi`` code points."""
    if lo > MAX_LENGTH_AUTOMATON or (hi is not None and hi > MAX_LENGTH_AUTOMATON):
        raise RegexUnsupported(f"a length bound above {MAX_LENGTH_AUTOMATON} (MAX_LENGTH_AUTOMATON)")
    top = hi if hi is not None else lo
    delta = [[min(q + 1, top) if (hi is None or q < hi) else -1] for q in range(top + 1)]
    if hi is None:
        delta[top] = [top]
    return DFA([(0, MAX_CP)], delta, [q >= lo for q in range(top + 1)])


def names_dfa(names: list[str]) -> DFA:
    """Exactly the strings in ``names`` (a trie)."""
    atoms = _atoms([[(ord(c), ord(c))] for n in names for c in n])
    trie = [{}]
    accept = [False]
    for n in names:
        q = 0
        for c in n:
            if c not in trie[q]:
                trie.append({})
                accept.append(False)
                trie[q][c] = len(trie) - 1
            q = trie[q][c]
        accept[q] = True
    delta = [[t.get(chr(lo), -1) if lo == hi else -1 for lo, hi in atoms] for t in trie]
    return DFA(atoms, delta, accept)


def product(dfas: list[DFA]) -> tuple[list[tuple[int, int]], list[list[int]], list[tuple[bool, ...]]]:
    """The reachable product of ``dfas`` over common atoms: (atoms, delta, accept vector per state). A component
    in its dead state stays dead (-1) and accepts nothing; the state where every component is dead is kept (keys
    that no pattern and no name matches end there), the caller trims states that cannot reach its finals."""
    atoms = _atoms([d.atoms for d in dfas])

    def atom_index(d: DFA):
        out, j = [], 0
        for lo, _ in atoms:
            while d.atoms[j][1] < lo:
                j += 1
            out.append(j)
        return out

    # Each component's rows over the common atoms, so that a product state's successors on every atom are one
    # zip of its components' rows (tuples built in C rather than a generator per atom).
    remapped = [[[row[j] for j in m] for row in d.delta] for d, m in zip(dfas, map(atom_index, dfas))]
    dead = [-1] * len(atoms)
    first = tuple(d.start for d in dfas)
    index = {first: 0}
    order = [first]
    delta = []
    while len(delta) < len(order):
        cur = order[len(delta)]
        row = []
        for nxt in zip(*[dead if q < 0 else rows[q] for q, rows in zip(cur, remapped)]):
            i = index.get(nxt)
            if i is None:  # all components dead is a state too: "matches none of them" may be wanted
                if len(order) >= MAX_DFA_STATES:
                    raise RegexUnsupported(f"more than {MAX_DFA_STATES} automaton states (MAX_DFA_STATES)")
                i = index[nxt] = len(order)
                order.append(nxt)
            row.append(i)
        delta.append(row)
    accept = [tuple(q >= 0 and d.accept[q] for q, d in zip(s, dfas)) for s in order]
    return atoms, delta, accept


# A patternProperties key the converter makes (never a user regex: it starts with NUL): the keys that are none of
# the listed names and match none of the listed patterns, i.e. the keys one schema's additionalProperties covers
# (an allOf merge keeps that schema's additionalProperties as such a pattern next to the other side's patterns).
OTHER_KEYS = "\x00xg2jax-other-keys:"


def other_keys_pattern(names: list[str], patterns: list[str]) -> str:
    return OTHER_KEYS + json.dumps([sorted(names), sorted(patterns)], ensure_ascii=False)


@functools.lru_cache(maxsize=256)
def key_dfa(pattern: str) -> DFA:
    """DFA of a patternProperties key: a regex, or an ``other_keys_pattern``."""
    if not pattern.startswith(OTHER_KEYS):
        return regex_dfa(pattern)
    names, patterns = json.loads(pattern[len(OTHER_KEYS):])
    atoms, delta, accept = product([names_dfa(names)] + [key_dfa(p) for p in patterns])
    return DFA(atoms, delta, [not any(v) for v in accept])


def predecessors(delta: list[list[int]]) -> list[list[int]]:
    """Per state, the states with an edge into it (each once)."""
    preds: list[list[int]] = [[] for _ in range(len(delta))]
    for q, row in enumerate(delta):
        for t in set(row):
            if t >= 0:
                preds[t].append(q)
    return preds


def co_reachable(preds: list[list[int]], targets) -> set[int]:
    """The states that reach one of ``targets`` (targets included): one backward search over ``preds``."""
    live, stack = set(targets), list(targets)
    while stack:
        for p in preds[stack.pop()]:
            if p not in live:
                live.add(p)
                stack.append(p)
    return live


# Automata with more live states than this are emitted unmerged: Moore's refinement takes one pass per state in the
# worst case (a length bound's chain of counts, which has nothing to merge), ~2 ms in Python at 50 states, while
# the automata that do shrink (``.*`` and its line terminators, a pattern's redundant states) are small.
MAX_MINIMIZED_STATES = 32


def merge_equivalent(delta: list[list[int]], live: set[int], finals: set[int]) -> dict[int, int]:
    """Moore's partition refinement over the ``live`` states (a target outside ``live`` counts as dead): a map from
    each live state to the representative (smallest state) of its class of equivalent states. The identity when
    there are more than MAX_MINIMIZED_STATES live states."""
    if len(live) > MAX_MINIMIZED_STATES:
        return {q: q for q in live}
    states = sorted(live)
    n = len(states)
    index = {q: i for i, q in enumerate(states)}
    rows = [[index.get(t, n) for t in delta[q]] for q in states]  # n: dead
    block = [int(q in finals) for q in states] + [-1]
    count = len(set(block[:n]))
    while True:  # refine by (block, blocks of the successors) until no block splits
        get = block.__getitem__
        ids: dict[tuple, int] = {}
        refined = [ids.setdefault((block[i], *map(get, rows[i])), len(ids)) for i in range(n)]
        if len(ids) == count:
            break
        count = len(ids)
        block = refined + [-1]
    first: dict[int, int] = {}
    return {q: first.setdefault(block[i], q) for i, q in enumerate(states)}


def product_with_length(dfas: list[DFA], good, lo: int, hi: int | None):
    """(atoms, delta, finals) of the strings that ``product(dfas)`` leads to a state whose accept vector passes
    ``good`` and whose length is in [lo, hi]. The length is tracked only while it still matters: at product state
    q after c code points, it is dropped once every completion to a good state keeps it within bounds
    (c + shortest completion >= lo and c + longest completion <= hi), so long bounded patterns stay small."""
    atoms, delta, accept = product(dfas)
    n = len(delta)
    goods = {q for q in range(n) if good(accept[q])}
    preds = predecessors(delta)
    live = co_reachable(preds, goods)
    inf = float("inf")
    # Shortest completion: backward BFS from the good states over live states.
    shortest = {q: 0 for q in goods}
    frontier = list(goods)
    while frontier:
        nxt = []
        for t in frontier:
            for p in preds[t]:
                if p in live and p not in shortest:
                    shortest[p] = shortest[t] + 1
                    nxt.append(p)
        frontier = nxt
    # Longest completion over live states: infinite where a cycle can be reached (Kahn on the reverse order).
    succ = {q: {t for t in delta[q] if t in live} for q in live}
    outdeg = {q: len(succ[q]) for q in live}
    longest = {q: 0 for q in live if outdeg[q] == 0}
    ready = list(longest)
    while ready:
        t = ready.pop()
        for p in set(preds[t]):
            if p in live:
                outdeg[p] -= 1
                if outdeg[p] == 0:
                    longest[p] = max(longest[s] for s in succ[p]) + 1
                    ready.append(p)
    for q in live:
        longest.setdefault(q, inf)

    def norm(q: int, c):
        if c is None:
            return (q, None)
        if hi is not None and c > hi:
            return None
        if c + shortest[q] >= lo and (hi is None or c + longest[q] <= hi):
            return (q, None)
        return (q, c)

    first = norm(0, 0) if 0 in live else None
    if first is None:
        return atoms, [[-1] * len(atoms)], set()
    index = {first: 0}
    order = [first]
    rows = []
    while len(rows) < len(order):
        q, c = order[len(rows)]
        row = []
        for a in range(len(atoms)):
            t = delta[q][a]
            st = norm(t, None if c is None else c + 1) if t in live else None
            if st is None:
                row.append(-1)
                continue
            if st not in index:
                if len(order) >= 5 * MAX_DFA_STATES:
                    raise RegexUnsupported(f"more than {5 * MAX_DFA_STATES} automaton states (pattern and length, "
                                           "5 * MAX_DFA_STATES)")
                index[st] = len(order)
                order.append(st)
            row.append(index[st])
        rows.append(row)
    finals = {i for i, (q, c) in enumerate(order) if q in goods and (c is None or lo <= c)}
    return atoms, rows, finals


def matches(dfa: DFA, text: str) -> bool:
    q = dfa.start
    for ch in text:
        cp = ord(ch)
        a = next(i for i, (lo, hi) in enumerate(dfa.atoms) if lo <= cp <= hi)
        q = dfa.delta[q][a]
        if q < 0:
            return False
    return dfa.accept[q]


_SHORT = {0x22: '\\"', 0x5C: "\\\\", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}


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
    for cp, text in _SHORT.items():
        if any(lo <= cp <= hi for lo, hi in ivs):
            out.append('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
    if any(lo <= 0x2F <= hi for lo, hi in ivs):
        out.append('"\\\\/"')
    for cp in range(0x20):
        if cp not in _SHORT and any(lo <= cp <= hi for lo, hi in ivs):
            out.append(f'"\\\\u00" [{cp >> 4}] [{"%x" % (cp & 15)}{"%X" % (cp & 15)}]')
    return tuple(out)
