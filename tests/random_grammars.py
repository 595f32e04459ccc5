"""Random EBNF grammars and vocabularies, with an independent reference recognizer.

Used by ``tests/test_random_grammar_oracle.py`` (and by hand: ``python tests/random_grammars.py``).

- :func:`gen_grammar` builds a small random grammar AST (seeded): literals (some empty), ASCII
  classes, groups, ``* + ? {m} {m,} {m,n}`` (some bounds > 32, which the compiler turns into counted
  rules), alternatives with ``""``, left / right / mutual recursion, nullable and ambiguous rules
  (``a ::= a a | "x" | ""``). :func:`to_ebnf` prints it in the xgrammar/GBNF dialect.
- :func:`gen_json_grammar` makes JSON-flavoured ones, :func:`gen_any_order_grammar` AnyOrder objects, and
  :func:`gen_chain_grammar` short bounded repetitions of wide classes (`[^"]{2}`) that a rule can leave
  part-way, which the mask cache's chain proofs must allow for.
- :func:`gen_vocab` draws tokens from the grammar's own alphabet (substrings of literals, pieces that
  straddle literal boundaries) plus JSON-ish tokens.
- :class:`Reference` is a plain Earley recognizer (Python, over characters) of the same AST: it says
  whether a string is a prefix of a sentence and whether it is a sentence. It shares no code with the
  engine, so it checks the parser itself, not only the mask against ``accept_token``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

# ------------------------------------------------------------------------------------------------
# AST: ('lit', str) | ('cls', frozenset[str], negated) | ('ref', name) | ('seq', [n...])
#      | ('alt', [n...]) | ('rep', n, min, max_or_None)
#      | ('any', [(n, role)...], separator_lit_or_None): AnyOrder(...), role "" once, "?" at most once, "*" any
# ------------------------------------------------------------------------------------------------

LITERAL_POOL = ["a", "b", "c", "d", "x", "ab", "ba", "abc", "true", "null", "false", ", ", ",", ":", "{", "}",
                "[", "]", '"', "0", "1", "12", " ", "dd", "xy", "e"]
CLASS_POOL = ["a", "b", "c", "d", "x", "y", "0", "1", "2", ",", " ", "e", "t", "n"]
JSONISH = ["true", "null", "false", ", ", '{"', '"}', '":', '",', "[", "]", "{", "}", ",", ":", " ", "0", "1", "12",
           "123", "-1", '"', '""', "tr", "ue", "nu", "ll", "fa", "lse", ",\n", "\n", "  ", "a", "b", "ab", "ba",
           "d", "dd", "x", "xy", "axy", "bd", "da", "dn", "d,", "d ", "e"]


@dataclass
class GrammarAst:
    rules: dict[str, object]  # name -> node; "root" first
    root: str = "root"

    def text(self) -> str:
        return to_ebnf(self)


def _esc(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        else:
            out.append(ch)
    return "".join(out)


def _esc_cls(ch: str) -> str:
    if ch in "]\\-^[":
        return "\\" + ch
    if ch == "\n":
        return "\\n"
    return ch


def node_text(n, top: bool = False) -> str:
    k = n[0]
    if k == "lit":
        return '"' + _esc(n[1]) + '"'
    if k == "cls":
        return "[" + ("^" if n[2] else "") + "".join(_esc_cls(c) for c in sorted(n[1])) + "]"
    if k == "ref":
        return n[1]
    if k == "seq":
        if not n[1]:
            return '""'
        s = " ".join(node_text(c) for c in n[1])
        return s if top else "(" + s + ")"
    if k == "alt":
        s = " | ".join(node_text(c, top=True) for c in n[1])
        return s if top else "(" + s + ")"
    if k == "rep":
        inner = node_text(n[1])
        if (n[1][0] in ("seq", "alt") and not inner.startswith("(")) or n[1][0] == "rep":
            inner = "(" + inner + ")"  # a repetition of a repetition needs its group: one quantifier per element
        lo, hi = n[2], n[3]
        if (lo, hi) == (0, None):
            suf = "*"
        elif (lo, hi) == (1, None):
            suf = "+"
        elif (lo, hi) == (0, 1):
            suf = "?"
        elif hi is None:
            suf = "{%d,}" % lo
        elif lo == hi:
            suf = "{%d}" % lo
        else:
            suf = "{%d,%d}" % (lo, hi)
        return inner + suf
    if k == "any":
        args = []
        for item, role in n[1]:
            t = node_text(item, top=True)
            args.append(("(" + t + ")" if item[0] in ("seq", "alt", "rep") else t) + role)
        if n[2]:
            args.append("separator=" + node_text(("lit", n[2])))
        return "AnyOrder(" + ", ".join(args) + ")"
    raise ValueError(n)


def to_ebnf(g: GrammarAst) -> str:
    return "\n".join(f"{name} ::= {node_text(body, top=True)}" for name, body in g.rules.items()) + "\n"


# ------------------------------------------------------------------------------------------------
# Generator
# ------------------------------------------------------------------------------------------------


def gen_grammar(seed: int, *, max_rules: int = 4, big_counts: float = 0.15) -> GrammarAst:
    rng = random.Random(seed)
    n_rules = rng.randint(1, max_rules)
    names = ["root"] + [chr(ord("a") + i) * 1 + "r" for i in range(n_rules - 1)]  # ar, br, cr...
    lits = rng.sample(LITERAL_POOL, rng.randint(2, 6))

    def leaf(depth: int, self_name: str):
        r = rng.random()
        if r < 0.45:
            return ("lit", rng.choice(lits + [""] * (1 if rng.random() < 0.3 else 0)))
        if r < 0.58:
            chars = frozenset(rng.sample(CLASS_POOL, rng.randint(1, 4)))
            return ("cls", chars, rng.random() < 0.08)
        i = names.index(self_name)
        if i + 1 < len(names) and rng.random() < 0.5:
            return ("ref", rng.choice(names[i + 1:]))
        return ("ref", rng.choice(names))

    def node(depth: int, self_name: str):
        if depth >= 3 or rng.random() < 0.35:
            return leaf(depth, self_name)
        r = rng.random()
        if r < 0.35:
            return ("seq", [node(depth + 1, self_name) for _ in range(rng.randint(2, 3))])
        if r < 0.65:
            alts = [node(depth + 1, self_name) for _ in range(rng.randint(2, 3))]
            if rng.random() < 0.3:
                alts.append(("lit", ""))
            return ("alt", alts)
        child = node(depth + 1, self_name)
        q = rng.random()
        if q < 0.25:
            lo, hi = 0, None
        elif q < 0.45:
            lo, hi = 1, None
        elif q < 0.6:
            lo, hi = 0, 1
        elif q < 0.6 + big_counts:
            lo = rng.choice([0, 0, 1, 2, 33, 35])
            hi = rng.choice([None, lo + rng.randint(30, 40), max(lo, 33) + rng.randint(0, 5)])
        else:
            lo = rng.randint(0, 3)
            hi = rng.choice([None, lo, lo + rng.randint(1, 3)])
        return ("rep", child, lo, hi)

    rules: dict[str, object] = {}
    for name in names:
        shape = rng.random()
        base = node(0, name)
        if shape < 0.15:  # ambiguous, nullable: a ::= a a | x | ""
            body = ("alt", [("seq", [("ref", name), ("ref", name)]), base, ("lit", "")])
        elif shape < 0.3:  # left recursion
            body = ("alt", [("seq", [("ref", name), node(1, name)]), base])
        elif shape < 0.45:  # right recursion
            body = ("alt", [("seq", [node(1, name), ("ref", name)]), base])
        elif shape < 0.55:  # nullable alternative
            body = ("alt", [base, ("lit", "")])
        else:
            body = base
        rules[name] = body
    # Make every rule reachable: hang an unreferenced rule off an earlier one.
    for i, name in enumerate(names[1:], 1):
        if not any(_refers(rules[m], name) for m in names[:i]):
            parent = rng.choice(names[:i])
            ref = ("ref", name)
            r = rng.random()
            if r < 0.4:
                rules[parent] = ("seq", [rules[parent], ref])
            elif r < 0.7:
                rules[parent] = ("alt", [rules[parent], ("seq", [leaf(1, parent), ref])])
            else:
                rules[parent] = ("alt", [rules[parent], ("seq", [ref, leaf(1, parent)])])
    return GrammarAst(rules)


def _refers(n, name: str) -> bool:
    if n[0] == "ref":
        return n[1] == name
    if n[0] in ("seq", "alt"):
        return any(_refers(c, name) for c in n[1])
    if n[0] == "rep":
        return _refers(n[1], name)
    if n[0] == "any":
        return any(_refers(c, name) for c, _ in n[1])
    return False


WIDE_CLASSES = [(frozenset("abcdefghijklmnopqrstuvwxyz"), False), (frozenset("0123456789"), False),
                (frozenset('"'), True), (frozenset('"\\'), True), (frozenset("\n"), True), (frozenset(" ,"), True)]


def gen_json_grammar(seed: int, *, max_rules: int = 5) -> GrammarAst:
    """JSON-flavoured random grammars: values (true / null / numbers / strings), arrays and objects with
    ", " separators, built from templates and then twisted: nullable alternatives, left / right / mutual
    recursion, ambiguity (`v ::= v v | ...`), counted repetitions, wide classes (string bodies)."""
    rng = random.Random(seed)
    n_rules = rng.randint(2, max_rules)
    names = ["root"] + ["v%d" % i for i in range(1, n_rules)]

    def lit(s):
        return ("lit", s)

    def ref():
        return ("ref", rng.choice(names))

    def atom():
        r = rng.random()
        if r < 0.35:
            return lit(rng.choice(["true", "null", "false", "d", "0", "12", "x", ""]))
        if r < 0.5:
            c, neg = rng.choice(WIDE_CLASSES)
            body = ("rep", ("cls", c, neg), rng.choice([0, 0, 1]), rng.choice([None, None, 3, 35]))
            return ("seq", [lit('"'), body, lit('"')]) if rng.random() < 0.7 else body
        if r < 0.6:
            return ("cls", frozenset(rng.sample(CLASS_POOL, rng.randint(1, 4))), False)
        return ref()

    def value(depth):
        if depth >= 3 or rng.random() < 0.3:
            return atom()
        r = rng.random()
        if r < 0.25:  # array: "[" (v (", " v)*)? "]"
            v = value(depth + 1)
            sep = rng.choice([", ", ",", ", "])
            items = ("seq", [v, ("rep", ("seq", [lit(sep), value(depth + 1)]), 0, rng.choice([None, None, 2, 40]))])
            return ("seq", [lit("["), ("rep", items, 0, 1) if rng.random() < 0.7 else items, lit("]")])
        if r < 0.45:  # object
            key = ("seq", [lit('"'), ("rep", ("cls", frozenset('"'), True), 0, None), lit('"')]) \
                if rng.random() < 0.5 else lit(rng.choice(['"a"', '"d"', '"k"']))
            member = ("seq", [key, lit(rng.choice([": ", ":"])), value(depth + 1)])
            more = ("rep", ("seq", [lit(", "), member]), 0, rng.choice([None, 3, 33]))
            body = ("seq", [member, more])
            return ("seq", [lit("{"), ("rep", body, 0, 1), lit("}")])
        if r < 0.7:
            return ("alt", [value(depth + 1) for _ in range(rng.randint(2, 4))] + ([lit("")] if rng.random() < 0.4 else []))
        if r < 0.85:
            return ("seq", [value(depth + 1) for _ in range(rng.randint(2, 3))])
        q = rng.random()
        lo, hi = (0, None) if q < 0.4 else (1, None) if q < 0.6 else (0, 1) if q < 0.8 else (rng.choice([0, 1, 33]), rng.choice([None, 40]))
        if hi is not None and hi < lo:
            hi = None
        return ("rep", value(depth + 1), lo, hi)

    rules: dict[str, object] = {}
    for name in names:
        base = value(0)
        shape = rng.random()
        if shape < 0.15:
            body = ("alt", [("seq", [("ref", name), ("ref", name)]), base, lit("")])
        elif shape < 0.28:
            body = ("alt", [("seq", [("ref", name), lit(rng.choice([", ", "d", ""])), value(1)]), base])
        elif shape < 0.4:
            body = ("alt", [("seq", [value(1), lit(rng.choice([", ", "d", ""])), ("ref", name)]), base])
        elif shape < 0.55:
            body = ("alt", [base, lit("")])
        else:
            body = base
        rules[name] = body
    for i, name in enumerate(names[1:], 1):
        if not any(_refers(rules[m], name) for m in names[:i]):
            parent = rng.choice(names[:i])
            if rng.random() < 0.5:
                rules[parent] = ("alt", [rules[parent], ("ref", name)])
            else:
                rules[parent] = ("seq", [rules[parent], ("rep", ("ref", name), 0, 1)])
    return GrammarAst(rules)


def gen_chain_grammar(seed: int) -> GrammarAst:
    """Grammars around short bounded repetitions of a wide class (`[^"]{2}`, `[a-z]{1,3}`): the compiler unrolls
    them into chains of states and proves, per chain, how many loop iterations every token may take and whether
    the chain then ends dead (token_mask_cache.h, ChainOf). The rule holding the chain can be left part-way along
    it (an alternative that ends sooner, a rule reference in the middle, a nullable tail), and what follows the
    rule reads the same characters as the loop (`"d"*`, `[a-z]*`, another chain), so that a token the loop reads
    whole may be accepted by leaving the rule: the case a chain proof must not reject."""
    rng = random.Random(seed)
    wide = [c for c in WIDE_CLASSES if c != (frozenset("0123456789"), False)]
    c, neg = rng.choice(wide)
    cls = ("cls", c, neg)

    def lit(s):
        return ("lit", s)

    def chain_alt():
        r = rng.random()
        k = rng.randint(2, 4)
        if r < 0.35:  # ends sooner: its states part-way along the longer alternative are final
            return ("rep", cls, rng.choice([0, 1]), rng.randint(1, k - 1))
        if r < 0.55:  # a rule reference part-way along
            return ("seq", [("rep", cls, 1, rng.randint(1, k - 1)), ("ref", "tail")])
        if r < 0.75:  # a nullable tail
            return ("seq", [("rep", cls, k, k), ("rep", lit(rng.choice(['"', "d", ", "])), 0, 1)])
        return ("seq", [("rep", cls, k, rng.choice([k, k + 1])), lit(rng.choice(['"', '",', "}", "]"]))])

    alts = [chain_alt() for _ in range(rng.randint(2, 3))]
    if not any(a[0] == "seq" and a[1][-1][0] == "lit" for a in alts):  # one alternative whose chain ends dead
        k = rng.randint(2, 4)
        alts.append(("seq", [("rep", cls, k, k), lit('"')]))
    rng.shuffle(alts)
    after = rng.choice([("rep", lit("d"), 0, None), ("rep", ("cls", frozenset("abcdefghijklmnopqrstuvwxyz"), False), 0, None),
                        ("rep", ("seq", [lit(", "), ("ref", "w")]), 0, None), ("rep", lit("true"), 0, 2), lit("")])
    before = rng.choice([lit(""), lit("d"), lit('"'), ("rep", lit("d"), 0, 2)])
    root = ("seq", [before, ("ref", "w"), after])
    if rng.random() < 0.3:
        root = ("alt", [root, ("seq", [("ref", "root"), lit(", "), ("ref", "w")])])
    tail_body = rng.choice([("alt", [("seq", [lit("d"), ("ref", "tail")]), lit("d")]), ("rep", cls, 1, None),
                            ("alt", [lit("true"), lit("null"), lit("")])])
    return GrammarAst({"root": root, "w": ("alt", alts), "tail": tail_body})


def literal_alphabet(g: GrammarAst) -> tuple[list[str], list[str]]:
    """(literal strings, class characters) of the grammar."""
    lits, chars = set(), set()

    def walk(n):
        k = n[0]
        if k == "lit":
            if n[1]:
                lits.add(n[1])
        elif k == "cls":
            if not n[2]:
                chars.update(n[1])
        elif k in ("seq", "alt"):
            for c in n[1]:
                walk(c)
        elif k == "rep":
            walk(n[1])
        elif k == "any":
            for c, _ in n[1]:
                walk(c)
            if n[2]:
                lits.add(n[2])

    for b in g.rules.values():
        walk(b)
    return sorted(lits), sorted(chars)


def gen_any_order_grammar(seed: int, *, max_rules: int = 4) -> GrammarAst:
    """JSON-flavoured grammars around ``AnyOrder(...)``: objects whose members come in any order (each role, with
    and without a separator), items that hold other objects or recurse into their own rule, and small letter
    AnyOrders next to other constructs. Every item and separator is non-empty, as AnyOrder requires."""
    rng = random.Random(seed)
    n_rules = rng.randint(1, max_rules)
    names = ["root"] + ["o%d" % i for i in range(1, n_rules)]

    def lit(s):
        return ("lit", s)

    def roles(k):
        return [rng.choice(["", "", "?", "?", "*"]) for _ in range(k)]

    def value(depth):
        r = rng.random()
        if depth >= 2 or r < 0.3:
            return lit(rng.choice(["true", "null", "12", "0", '"x"', '""']))
        if r < 0.45:
            return ("ref", rng.choice(names))
        if r < 0.55:
            return ("seq", [lit("["), ("rep", value(depth + 1), 0, rng.choice([None, 2])), lit("]")])
        return obj(depth + 1)

    def obj(depth):
        keys = rng.sample(['"a"', '"b"', '"k"', '"ab"', '"d"'], rng.randint(1, 4))
        items = [(("seq", [lit(key), lit(rng.choice([":", ": "])), value(depth)]), role)
                 for key, role in zip(keys, roles(len(keys)))]
        sep = rng.choice([", ", ",", ", ", None])
        return ("seq", [lit("{"), ("any", items, sep), lit("}")])

    def letters():
        pieces = rng.sample(["a", "b", "dd", "x", "ab"], rng.randint(2, 4))
        items = [(lit(p), role) for p, role in zip(pieces, roles(len(pieces)))]
        return ("any", items, rng.choice([",", None]))

    rules: dict[str, object] = {}
    for name in names:
        body = obj(0) if rng.random() < 0.7 else letters()
        if rng.random() < 0.25:
            body = ("alt", [body, value(1)])
        rules[name] = body
    for i, name in enumerate(names[1:], 1):
        if not any(_refers(rules[m], name) for m in names[:i]):
            parent = rng.choice(names[:i])
            rules[parent] = ("alt", [rules[parent], ("ref", name)])
    return GrammarAst(rules)


def gen_any(seed: int) -> GrammarAst:
    """Seeds alternate between the two generators."""
    return gen_grammar(seed) if seed % 2 == 0 else gen_json_grammar(seed)


def gen_vocab(g: GrammarAst, seed: int, *, size: int = 120) -> list[bytes]:
    """Distinct tokens: the grammar's pieces, straddling concatenations, JSON-ish tokens. Token 0 is the
    stop token ``</s>``."""
    rng = random.Random(seed * 7919 + 1)
    lits, chars = literal_alphabet(g)
    pieces = lits + chars or ["a"]
    out: list[str] = []
    seen = set()

    def add(t: str):
        if t and t not in seen and len(t) <= 8:
            seen.add(t)
            out.append(t)

    wide = sorted({c for p in pieces for c in p} | set("abcdxyz019 ,:\"{}[]tnulre"))
    for ch in wide:
        add(ch)  # every single character: every sentence can be spelled
    for p in pieces:
        add(p)
    tries = 0
    while len(out) < size and tries < size * 20:
        tries += 1
        r = rng.random()
        if r < 0.3:
            p = rng.choice(pieces)
            i = rng.randrange(len(p))
            add(p[i:rng.randint(i + 1, len(p))])
        elif r < 0.6:  # straddles a boundary: suffix of one piece + prefix of another (or more)
            a, b = rng.choice(pieces), rng.choice(pieces)
            s = a[rng.randrange(len(a)):] + b[: rng.randint(1, len(b))]
            if rng.random() < 0.3:
                s += rng.choice(pieces)
            add(s)
        elif r < 0.8:
            add(rng.choice(JSONISH))
        else:
            add("".join(rng.choice(pieces) for _ in range(rng.randint(2, 3))))
    return [b"</s>"] + [t.encode() for t in out]


# ------------------------------------------------------------------------------------------------
# Reference recognizer: plain Earley over characters on a BNF expansion of the AST
# ------------------------------------------------------------------------------------------------


class Reference:
    """Prefix / sentence recognizer. Terminals are predicates over one character."""

    def __init__(self, g: GrammarAst):
        self.prods: dict[object, list[tuple]] = {}  # nonterminal -> list of alternatives (tuples of symbols)
        self._n = 0
        for name, body in g.rules.items():
            self.prods[("R", name)] = [tuple(self._seq_of(body))]
        self._trim()
        self.start = ("R", g.root)
        self.ok = self.start in self.prods and bool(self.prods[self.start])

    # symbols: ('T', chars, negated) terminal | nonterminal key (tuple starting with 'R' or 'N')
    def _fresh(self, alts: list[tuple]) -> tuple:
        self._n += 1
        key = ("N", self._n)
        self.prods[key] = alts
        return key

    def _seq_of(self, n) -> list:
        k = n[0]
        if k == "lit":
            return [("T", frozenset(ch), False) for ch in n[1]]
        if k == "cls":
            return [("T", n[1], n[2])]
        if k == "ref":
            return [("R", n[1])]
        if k == "seq":
            out = []
            for c in n[1]:
                out += self._seq_of(c)
            return out
        if k == "alt":
            return [self._fresh([tuple(self._seq_of(c)) for c in n[1]])]
        if k == "any":
            return [self._any_order(n)]
        if k == "rep":
            item = self._fresh([tuple(self._seq_of(n[1]))])
            lo, hi = n[2], n[3]
            out = [item] * lo
            if hi is None:
                star = ("N", "star", self._n + 1)
                self._n += 1
                self.prods[star] = [(item, star), ()]
                out.append(star)
            else:
                # (X (X (...)?)?)? nested optionals, hi - lo deep
                tail = None
                for _ in range(hi - lo):
                    alt = (item,) if tail is None else (item, tail)
                    tail = self._fresh([alt, ()])
                if tail is not None:
                    out.append(tail)
            return out
        raise ValueError(n)

    def _any_order(self, n) -> tuple:
        """AnyOrder as plain BNF, one nonterminal per set of once-items read (exponential; the items are few)."""
        items = [(tuple(self._seq_of(c)), role) for c, role in n[1]]
        sep = tuple(self._seq_of(("lit", n[2]))) if n[2] else ()
        required = frozenset(i for i, (_, role) in enumerate(items) if role == "")
        after: dict[frozenset, tuple] = {}

        def tail(used: frozenset) -> tuple:  # after at least one item, with `used` read
            if used not in after:
                key = ("N", "any", self._n + 1)
                self._n += 1
                after[used] = key
                alts = [()] if required <= used else []
                for i, (syms, role) in enumerate(items):
                    if role == "*" or i not in used:
                        nxt = used if role == "*" else used | {i}
                        alts.append(sep + syms + (tail(nxt),))
                self.prods[key] = alts
            return after[used]

        alts = [()] if not required else []
        for i, (syms, role) in enumerate(items):
            alts.append(syms + (tail(frozenset() if role == "*" else frozenset({i})),))
        return self._fresh(alts)

    def _trim(self):
        productive = set()
        changed = True
        while changed:
            changed = False
            for nt, alts in self.prods.items():
                if nt in productive:
                    continue
                if any(all(s[0] == "T" or s in productive for s in alt) for alt in alts):
                    productive.add(nt)
                    changed = True
        self.prods = {nt: [a for a in alts if all(s[0] == "T" or s in productive for s in a)]
                      for nt, alts in self.prods.items() if nt in productive}
        self.nullable = set()
        changed = True
        while changed:
            changed = False
            for nt, alts in self.prods.items():
                if nt not in self.nullable and any(all(s in self.nullable for s in a) for a in alts):
                    self.nullable.add(nt)
                    changed = True

    # An Earley set is (items, waiting): items (nt, alt_index, dot, origin) in insertion order, and per
    # nonterminal the items whose next symbol it is. Sets are never changed once closed, so a list of
    # sets can be copied shallowly to try a continuation.
    def initial(self) -> list[tuple]:
        s0 = ([(self.start, i, 0, 0) for i in range(len(self.prods[self.start]))], {})
        sets = [s0]
        self._close(sets)
        return sets

    def _close(self, sets):
        k = len(sets) - 1
        cur, waiting = sets[k]
        seen = set(cur)
        prods, nullable = self.prods, self.nullable

        def add(it):
            if it not in seen:
                seen.add(it)
                cur.append(it)

        i = 0
        while i < len(cur):
            it = cur[i]
            nt, ai, dot, origin = it
            i += 1
            alt = prods[nt][ai]
            if dot < len(alt):
                sym = alt[dot]
                if sym[0] != "T":
                    waiting.setdefault(sym, []).append(it)
                    for j in range(len(prods[sym])):
                        add((sym, j, 0, k))
                    if sym in nullable:
                        add((nt, ai, dot + 1, origin))
            else:
                for (pnt, pai, pdot, porigin) in list(sets[origin][1].get(nt, ())):
                    add((pnt, pai, pdot + 1, porigin))

    def step(self, sets, ch: str) -> bool:
        """Scans one character onto sets (in place); False (and sets unchanged) if the set would be empty."""
        nxt = []
        prods = self.prods
        for (nt, ai, dot, origin) in sets[-1][0]:
            alt = prods[nt][ai]
            if dot < len(alt):
                sym = alt[dot]
                if sym[0] == "T" and ((ch in sym[1]) != sym[2]):
                    nxt.append((nt, ai, dot + 1, origin))
        if not nxt:
            return False
        sets.append((nxt, {}))
        self._close(sets)
        return True

    def complete(self, sets) -> bool:
        return any(nt == self.start and dot == len(self.prods[nt][ai]) and origin == 0
                   for (nt, ai, dot, origin) in sets[-1][0])

    def accepts_prefix(self, s: str) -> bool:
        sets = self.initial()
        return all(self.step(sets, ch) for ch in s)

    def accepts(self, s: str) -> bool:
        sets = self.initial()
        return all(self.step(sets, ch) for ch in s) and self.complete(sets)


if __name__ == "__main__":
    import sys

    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    g = gen_grammar(seed)
    print(g.text())
    print(gen_vocab(g, seed)[:40])
