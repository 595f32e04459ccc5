"""Integer constraints as grammars over decimal spellings: ranges (``minimum`` / ``maximum`` / exclusive bounds)
and divisibility (``multipleOf``).

Ranges. The integers in [lo, hi] (either end may be open) are split by sign and by number of digits. Within one
digit count n, "at least a" and "at most b" over n-digit strings are the classic digit-by-digit constructions:
``ge(a) = a[0] ge(a[1:]) | [a[0]+1 - 9] [0-9]{n-1}`` and symmetrically for ``le``; ``between(a, b)`` shares the
common prefix and splits at the first differing digit. Every count of digits strictly between those of the two
ends is unconstrained (``[1-9] [0-9]{n-1}``). Negative ranges are the positive ranges of the absolute values
behind a ``-``; ``-0`` is 0.

Divisibility. Reading a non-negative decimal left to right, ``r -> (10 r + d) mod k`` is a k-state automaton;
each state becomes one rule. Both signs share it (the sign does not change divisibility).

Both produce EBNF expressions for the digits only (no fraction); the caller adds the ``.0`` forms that JSON Schema
also counts as integers.
"""

from __future__ import annotations

from fractions import Fraction

from xg2jax.json_schema._ebnf import RuleTable
from xg2jax.json_schema._limits import MAX_DECIMAL_DIGITS, MAX_MULTIPLE_OF_RULES


def _digit_class(lo: int, hi: int) -> str | None:
    if lo > hi:
        return None
    return f"[{lo}]" if lo == hi else f"[{lo}-{hi}]"


def _any_digits(n: int) -> str:
    return "" if n == 0 else "[0-9]" if n == 1 else f"[0-9]{{{n}}}"


def _ge(a: str) -> list[str]:
    """Alternatives for n-digit strings >= a (n = len(a), leading digit of the result handled by the caller)."""
    if not a:
        return ['""']
    out = []
    higher = _digit_class(int(a[0]) + 1, 9)
    if higher:
        out.append(f"{higher} {_any_digits(len(a) - 1)}".strip())
    out.append(f'"{a[0]}" ' + _group(_ge(a[1:])))
    return out


def _le(b: str) -> list[str]:
    if not b:
        return ['""']
    out = []
    lower = _digit_class(0, int(b[0]) - 1)
    if lower:
        out.append(f"{lower} {_any_digits(len(b) - 1)}".strip())
    out.append(f'"{b[0]}" ' + _group(_le(b[1:])))
    return out


def _between(a: str, b: str) -> list[str]:
    """Same-length strings s with a <= s <= b."""
    if not a:
        return ['""']
    if a[0] == b[0]:
        return [f'"{a[0]}" ' + _group(_between(a[1:], b[1:]))]
    out = [f'"{a[0]}" ' + _group(_ge(a[1:])), f'"{b[0]}" ' + _group(_le(b[1:]))]
    middle = _digit_class(int(a[0]) + 1, int(b[0]) - 1)
    if middle:
        out.append(f"{middle} {_any_digits(len(a) - 1)}".strip())
    return out


def _group(options: list[str]) -> str:
    options = [o for o in options if o]
    if options == ['""']:
        return ""
    return options[0] if len(options) == 1 else "( " + " | ".join(options) + " )"


def _non_negative_range(lo: int, hi: int | None) -> list[str]:
    """Spellings (no leading zeros) of the integers in [lo, hi], 0 <= lo, hi may be None (unbounded)."""
    if hi is not None and hi < lo:
        return []
    out = []
    if lo == 0:
        out.append('"0"')
        lo = 1
        if hi is not None and hi < 1:
            return out
    a, b = str(lo), None if hi is None else str(hi)
    if b is not None and len(a) == len(b):
        out += _between(a, b)
        return out
    # First length: >= a; middle lengths: anything; last length: <= b (or every longer length when unbounded).
    out += _ge(a) if a[0] != "0" else []
    for n in range(len(a) + 1, (len(b) if b is not None else len(a) + 1)):
        out.append(f"[1-9] {_any_digits(n - 1)}".strip())
    if b is None:
        out.append(f"[1-9] [0-9]{{{len(a)},}}")
    else:
        first = _digit_class(1, int(b[0]) - 1)
        if first:
            out.append(f"{first} {_any_digits(len(b) - 1)}".strip())
        out.append(f'"{b[0]}" ' + _group(_le(b[1:])))
    return out


def integer_range(lo: int | None, hi: int | None, negative_zero: bool = True) -> str | None:
    """An EBNF expression for the spellings of the integers in [lo, hi] (None = open end), or None if empty;
    ``negative_zero``: whether ``-0`` is one of them (JSON Schema's spellings; not the plain ones)."""
    if lo is not None and hi is not None and lo > hi:
        return None
    options = []
    # Non-negative part.
    if hi is None or hi >= 0:
        options += _non_negative_range(max(lo, 0) if lo is not None else 0, hi)
    # Negative part: -x for x in [max(1, -hi), -lo].
    if lo is None or lo < 0:
        neg = _non_negative_range(max(1, -hi) if hi is not None else 1, None if lo is None else -lo)
        if neg:
            options.append('"-" ' + _group(neg))
    if negative_zero and (lo is None or lo <= 0) and (hi is None or hi >= 0):
        options.append('"-0"')  # -0 is 0
    return _group(options) if options else None


def multiple_of(k: int, rules: RuleTable, sign: str = "any", ok=None, negative_zero: bool = True) -> str:
    """An EBNF expression for the spellings of the integers divisible by k (k >= 1): all of them (``sign="any"``),
    the non-negative ones (``"nonneg"``) or the negative ones (``"neg"``). With ``ok``: the integers whose
    remainder r modulo k (of the absolute value) has ok(r), instead of r == 0. ``negative_zero``: whether ``-0``
    is a spelling of 0 (with ``sign="any"``)."""
    if k == 1 and sign == "any" and ok is None:
        return 'j_int' if negative_zero else '( "0" | "-"? [1-9] [0-9]* )'
    if k > MAX_MULTIPLE_OF_RULES:
        raise ValueError(f"multipleOf {k} needs {k} grammar rules (the limit is {MAX_MULTIPLE_OF_RULES})")
    ok = ok or (lambda r: r == 0)
    names = [rules.reserve(f"mod{k}_r{r}") for r in range(k)]
    for r in range(k):
        # State r after some digits: read one more digit d -> (10 r + d) mod k; may stop iff ok(r).
        options = ['""'] if ok(r) else []
        for d in range(10):
            options.append(f'"{d}" {names[(10 * r + d) % k]}')
        rules.define(names[r], " | ".join(options))
    first = " | ".join(f'"{d}" {names[d % k]}' for d in range(1, 10))
    zero = '"0" | ' if ok(0) else ""
    if sign == "nonneg":
        return f'( {zero}{first} )'
    if sign == "neg":
        return f'( "-" ( {first} ) )'
    if not negative_zero:
        return f'( {zero}"-"? ( {first} ) )'
    return f'( "-"? ( {zero}{first} ) )'


def multiple_of_at_least(k: int, a: int, rules: RuleTable, ok=None) -> str:
    """The spellings of the integers >= a (a >= 1) divisible by k: numbers with more digits than a (the divisibility
    automaton times a digit counter capped at len(a) + 1), or as many digits and digit by digit >= a (a tight
    prefix equal to a's, then free digits with their remainder). About k * (2 len(a) + 1) rules. With ``ok``: the
    remainder r modulo k must have ok(r) instead of r == 0."""
    ok = ok or (lambda r: r == 0)
    digits = str(a)
    n = len(digits)
    if k * (2 * n + 2) > MAX_MULTIPLE_OF_RULES:
        raise ValueError(f"multipleOf {k} above {a} needs about {k * (2 * n + 2)} grammar rules (the limit is "
                         f"{MAX_MULTIPLE_OF_RULES})")
    longer = {}

    def more(r: int, c: int) -> str:  # c digits read (capped at n + 1), remainder r
        if (r, c) in longer:
            return longer[(r, c)]
        name = longer[(r, c)] = rules.reserve(f"mod{k}_ge{a}_r{r}_{c}")
        options = ['""'] if ok(r) and c > n else []
        options += [f'"{d}" {more((10 * r + d) % k, min(c + 1, n + 1))}' for d in range(10)]
        rules.define(name, " | ".join(options))
        return name

    free: dict = {}

    def rest(j: int, r: int) -> str | None:  # j free digits left, remainder r so far; None: no multiple
        if j == 0:
            return '""' if ok(r) else None
        if (j, r) not in free:
            options = [f'"{d}" {nxt}' for d in range(10) if (nxt := rest(j - 1, (10 * r + d) % k)) is not None]
            free[(j, r)] = rules.add(f"mod{k}_free{j}_r{r}", " | ".join(options)) if options else None
        return free[(j, r)]

    def tight(i: int, r: int) -> str | None:  # the first i digits equal a's
        if i == n:
            return '""' if ok(r) else None
        options = []
        for d in range(int(digits[i]), 10):
            r2 = (10 * r + d) % k
            nxt = tight(i + 1, r2) if d == int(digits[i]) else rest(n - i - 1, r2)
            if nxt is not None:
                options.append(f'"{d}" {nxt}')
        return rules.add(f"mod{k}_tight{a}_{i}", " | ".join(options)) if options else None

    options = [f'"{d}" {more(d % k, 1)}' for d in range(1, 10)]
    same = tight(0, 0)
    if same is not None:
        options.append(same)
    return "( " + " | ".join(options) + " )"


def decimal_step(value) -> tuple[int, int]:
    """(p, d) with ``value == p / 10**d`` exactly, for a positive float or int written in decimal."""
    q = Fraction(repr(value)) if isinstance(value, float) else Fraction(value)
    d = 0
    while q.denominator != 1:
        q *= 10
        d += 1
        if d > MAX_DECIMAL_DIGITS:
            raise ValueError(f"multipleOf {value} has more than {MAX_DECIMAL_DIGITS} decimal digits (the limit is "
                             "MAX_DECIMAL_DIGITS)")
    return q.numerator, d


def decimal_multiple_of(p: int, d: int, rules: RuleTable, sign: str = "any", min_int_digits: int = 0) -> str:
    """Numbers (spelled without an exponent) that are multiples of p / 10**d: the digits of the integer and the
    first d fraction digits, read as one integer, are divisible by p, and every later fraction digit is 0. States:
    (remainder, fraction digits read), one rule each; with ``min_int_digits`` m > 0 the integer part is at least
    10**(m-1) (no leading zero, at least m digits: a digit counter capped at m joins the remainder). ``sign``:
    "any", "nonneg" or "neg" as for multiple_of."""
    cap = max(min_int_digits, 1)
    if p * (d + 1 + cap) > MAX_MULTIPLE_OF_RULES:
        raise ValueError(f"multipleOf needs {p * (d + 1 + cap)} grammar rules (the limit is {MAX_MULTIPLE_OF_RULES})")
    tag = f"{p}_{d}" + (f"_m{min_int_digits}" if min_int_digits else "")
    frac = {(r, j): rules.reserve(f"dmul{tag}_f{r}_{j}") for r in range(p) for j in range(d + 1)}
    ints = {(r, c): rules.reserve(f"dmul{tag}_i{r}_{c}") for r in range(p) for c in range(1, cap + 1)}

    def end_ok(r: int, j: int) -> bool:
        return r * 10 ** (d - j) % p == 0

    def after_int(r: int) -> list[str]:
        first_frac = [f'"{g}" {frac[((10 * r + g) % p, 1)] if d >= 1 else frac[(r, 0)]}' for g in range(10)
                      if d >= 1 or g == 0]
        return (['""'] if end_ok(r, 0) else []) + [f'"." ( {" | ".join(first_frac)} )'] if first_frac else []

    for (r, j), name in frac.items():
        if j < d:
            options = ['""'] if end_ok(r, j) else []
            options += [f'"{g}" {frac[((10 * r + g) % p, j + 1)]}' for g in range(10)]
        else:
            options = (['""'] if r == 0 else []) + [f'"0" {name}']
        rules.define(name, " | ".join(options))
    for (r, c), name in ints.items():
        options = [f'"{g}" {ints[((10 * r + g) % p, min(c + 1, cap))]}' for g in range(10)]
        if c >= min_int_digits:
            options += after_int(r)
        rules.define(name, " | ".join(options))
    leading = " | ".join(f'"{g}" {ints[(g % p, 1)]}' for g in range(1, 10))
    body = leading if min_int_digits else f'"0" ( {" | ".join(after_int(0))} ) | {leading}'
    if sign == "nonneg":
        return f"( {body} )"
    if sign == "neg":
        return f'( "-" ( {body} ) )'
    return f'( "-"? ( {body} ) )'


# ----------------------------------------------------------------------------------------------------------------
# Decimal bounds for numbers: -?I(.F)? against lo / hi (inclusive or exclusive), exact for spellings without an
# exponent. The fraction digits are read by a small automaton whose state is (what is left of lo's fraction digits,
# what is left of hi's), None once that bound is already strictly satisfied; see number_range.

def _fraction_digits(value: Fraction) -> tuple[int, str]:
    """(floor, fraction digits without trailing zeros) of a non-negative value with a finite decimal expansion."""
    whole = value.numerator // value.denominator
    rest = value - whole
    digits = ""
    while rest:
        rest *= 10
        d = rest.numerator // rest.denominator
        digits += str(d)
        rest -= d
        if len(digits) > MAX_DECIMAL_DIGITS:
            raise ValueError(f"bound {value} has more than {MAX_DECIMAL_DIGITS} fraction digits (the limit is "
                             "MAX_DECIMAL_DIGITS)")
    return whole, digits


class _FractionRules:
    """Rules for the digits after '.', memoised by automaton state."""

    def __init__(self, rules: RuleTable, lo_strict: bool, hi_strict: bool):
        self.rules, self.lo_strict, self.hi_strict = rules, lo_strict, hi_strict
        self.names: dict[tuple, str] = {}

    def can_stop(self, lo: str | None, hi: str | None) -> bool:
        lo_ok = lo is None or (lo == "" and not self.lo_strict)
        hi_ok = hi is None or hi != "" or not self.hi_strict
        return lo_ok and hi_ok

    def step(self, lo: str | None, hi: str | None, d: int):
        """The state after digit d, or "dead"."""
        if lo is not None:
            bound = int(lo[0]) if lo else 0
            if d < bound:
                return "dead"
            lo = None if d > bound else lo[1:]
        if hi is not None:
            bound = int(hi[0]) if hi else 0
            if d > bound:
                return "dead"
            hi = None if d < bound else hi[1:]
        return lo, hi

    def rest(self, lo: str | None, hi: str | None) -> str:
        """Digit strings (possibly empty) valid from this state."""
        if lo is None and hi is None:
            return "[0-9]*"
        key = (lo, hi)
        if key not in self.names:
            name = self.names[key] = self.rules.reserve("frac")
            options = ['""'] if self.can_stop(lo, hi) else []
            for d in range(10):
                nxt = self.step(lo, hi, d)
                if nxt != "dead":
                    options.append(f'"{d}" {self.rest(*nxt)}')
            self.rules.define(name, " | ".join(options) if options else "j_never")
        return self.names[key]

    def part(self, lo: str | None, hi: str | None) -> str | None:
        """The optional '.' + digits part of a number whose integer part equals the bounds' integer parts."""
        options = ['""'] if self.can_stop(lo, hi) else []
        digits = [f'"{d}" {self.rest(*nxt)}' for d in range(10) if (nxt := self.step(lo, hi, d)) != "dead"]
        if digits:
            options.append('"." ( ' + " | ".join(digits) + " )")
        return None if not options else options[0] if len(options) == 1 else "( " + " | ".join(options) + " )"


def _non_negative_number(lo: Fraction | None, lo_strict: bool, hi: Fraction | None, hi_strict: bool,
                         rules: RuleTable) -> list[str]:
    """Spellings I(.F)? of the numbers y >= 0 with lo <(=) y <(=) hi (lo None: 0 inclusive)."""
    if lo is None or lo < 0:
        lo, lo_strict = Fraction(0), False
    if hi is not None and (hi < lo or (hi == lo and (lo_strict or hi_strict))):
        return []
    fr = _FractionRules(rules, lo_strict, hi_strict)
    any_fraction = '( "." [0-9]+ )?'
    li, lf = _fraction_digits(lo)
    out = []
    if hi is None:
        part = fr.part(lf, None)
        if part is not None:
            out.append(f'"{li}" {part}')
        rest = integer_range(li + 1, None)
        out.append(f"{rest} {any_fraction}")
        return out
    hi_i, hf = _fraction_digits(hi)
    if li == hi_i:
        part = fr.part(lf, hf)
        return [f'"{li}" {part}'] if part is not None else []
    part = fr.part(lf, None)
    if part is not None:
        out.append(f'"{li}" {part}')
    middle = integer_range(li + 1, hi_i - 1)
    if middle is not None:
        out.append(f"{middle} {any_fraction}")
    part = fr.part(None, hf)
    if part is not None:
        out.append(f'"{hi_i}" {part}')
    return out


def number_range(lo, lo_strict: bool, hi, hi_strict: bool, rules: RuleTable) -> str | None:
    """Spellings -?I(.F)? (no exponent) of the numbers x with lo <(=) x <(=) hi; None bounds are open. None if the
    range is empty."""
    lo = None if lo is None else Fraction(str(lo))
    hi = None if hi is None else Fraction(str(hi))
    options = []
    if hi is None or hi >= 0:  # x >= 0
        options += _non_negative_number(lo if lo is not None and lo >= 0 else None,
                                        lo_strict if lo is not None and lo >= 0 else False,
                                        hi, hi_strict, rules)
    if lo is None or lo <= 0:  # x = -y, y >= 0: -hi <(=) y <(=) -lo
        neg = _non_negative_number(-hi if hi is not None and hi < 0 else None,
                                   hi_strict if hi is not None and hi <= 0 else False,
                                   None if lo is None else -lo, lo_strict, rules)
        if neg:
            options.append('"-" ( ' + " | ".join(neg) + " )")
    return _group(options) if options else None


# ----------------------------------------------------------------------------------------------------------------
# Multiples within bounds, by automaton: nothing is listed, so the cost does not grow with the number of multiples
# (``multipleOf: 0.25`` up to 1e9 has four billion of them).

def scaled_multiples(p: int, d: int, lo: int, hi: int | None, rules: RuleTable, ok=None) -> str | None:
    """Spellings I(.F)? (no exponent, no sign) of the numbers x = N / 10**d with lo <= N <= hi (0 <= lo; hi None:
    unbounded) whose scaled value N has ok(N mod p) (default: p divides N). With d = 0 these are integers spelled
    without a fraction (the caller adds the ``.0`` forms); with d > 0 a fraction of any length, zeros past the d-th
    digit only. None when no number qualifies.

    ``multipleOf: p / 10**d`` within bounds is this with N = x * 10**d. The grammar is one automaton reading the
    digits left to right: its state is N's remainder modulo p so far (an integer digit g turns r into
    (10 r + g * 10**d) mod p, the j-th fraction digit adds g * 10**(d - j)), and, along the spellings of the bounds'
    integer parts, whether the digits read so far equal a bound's (then the next digit may not pass it). Numbers
    strictly between the bounds' integer parts are split by digit count, as in ``integer_range``. About p * (2 L + d)
    rules for bounds of L digits; above ``MAX_MULTIPLE_OF_RULES`` this raises ValueError before building."""
    top = max(lo, hi or 0) // 10 ** d
    estimate = p * (2 * len(str(top)) + d + 2)
    if estimate > MAX_MULTIPLE_OF_RULES:
        raise ValueError(f"'multipleOf' within these bounds needs about {estimate} grammar rules (the limit is "
                         f"MAX_MULTIPLE_OF_RULES = {MAX_MULTIPLE_OF_RULES})")
    return _ScaledDigits(p, d, ok or (lambda r: r == 0), rules).between(lo, hi)


def _class_of_digits(digits: list[int]) -> str:
    """A character class (or a literal) for a set of decimal digits."""
    if len(digits) == 1:
        return f'"{digits[0]}"'
    runs, start = [], digits[0]
    for a, b in zip(digits, digits[1:] + [None]):
        if b != a + 1:
            runs.append(f"{start}-{a}" if a > start else f"{start}")
            start = b
    return "[" + "".join(runs) + "]"


def _by_successor(pairs: list[tuple[int, str]]) -> list[str]:
    """Alternatives ``digit-class successor`` for (digit, successor) pairs, one per distinct successor."""
    groups: dict[str, list[int]] = {}
    for g, nxt in pairs:
        groups.setdefault(nxt, []).append(g)
    return [f"{_class_of_digits(gs)} {nxt}" if nxt != '""' else _class_of_digits(gs) for nxt, gs in groups.items()]


def _alternatives(options: list[str]) -> str | None:
    if not options:
        return None
    return options[0] if len(options) == 1 else "( " + " | ".join(options) + " )"


class _ScaledDigits:
    """The automaton of :func:`scaled_multiples`; each method returns an EBNF expression or None (no spelling)."""

    def __init__(self, p: int, d: int, ok, rules: RuleTable):
        self.p, self.d, self.ok, self.rules = p, d, ok, rules
        self.int_weight = 10 ** d % p  # an integer digit g adds g * 10**d to N
        self.frac_weight = [10 ** (d - j - 1) % p for j in range(d)]  # the (j+1)-th fraction digit
        self.memo: dict[tuple, str | None] = {}
        self.loops: dict[int, str] | None = None  # named on first use (see _loop)
        self.tag = f"mult{p}_{d}"

    def _rule(self, key: tuple, build) -> str | None:
        """The named rule for an acyclic state (memoised; None when it has no spelling)."""
        if key not in self.memo:
            if len(self.memo) >= MAX_MULTIPLE_OF_RULES:
                raise ValueError(f"'multipleOf' within these bounds needs more than {MAX_MULTIPLE_OF_RULES} grammar "
                                 "rules (the limit is MAX_MULTIPLE_OF_RULES)")
            body = build()
            self.memo[key] = None if body is None else self.rules.add(self.tag, body)
        return self.memo[key]

    def _step(self, r: int, g: int) -> int:
        return (10 * r + g * self.int_weight) % self.p

    # -- after the integer part ---------------------------------------------------------------------------------
    def after(self, r: int, lo_f: str | None, hi_f: str | None) -> str | None:
        """The end of the number or '.' and fraction digits, N's remainder being r after the integer part. lo_f /
        hi_f: the d fraction digits of the bound whose integer part was just read, else None."""
        if self.d == 0:
            return '""' if self.ok(r) else None
        lo_f = None if lo_f is None or not lo_f.strip("0") else lo_f  # a bound ending in zeros constrains nothing
        hi_f = None if hi_f is None or not hi_f.strip("9") else hi_f
        options = ['""'] if self._can_stop(0, r, lo_f) else []
        digits = self._fraction_digit(0, r, lo_f, hi_f)
        if digits is not None:
            options.append(f'"." {digits}')
        return _alternatives(options)

    def _can_stop(self, j: int, r: int, lo_f: str | None) -> bool:
        """May the number end after j fraction digits (the rest of the d are zeros)?"""
        return self.ok(r) and (lo_f is None or not lo_f[j:].strip("0"))

    def _fraction_digit(self, j: int, r: int, lo_f: str | None, hi_f: str | None) -> str | None:
        """The (j+1)-th fraction digit and what follows it (j < d)."""
        first = int(lo_f[j]) if lo_f is not None else 0
        last = int(hi_f[j]) if hi_f is not None else 9
        pairs = []
        for g in range(first, last + 1):
            nxt = self._fraction((j + 1, (r + g * self.frac_weight[j]) % self.p,
                                  lo_f if g == first else None, hi_f if g == last else None))
            if nxt is not None:
                pairs.append((g, nxt))
        return _alternatives(_by_successor(pairs))

    def _fraction(self, state: tuple) -> str | None:
        """After j >= 1 fraction digits: stop, or more digits (past the d-th, zeros only)."""
        j, r, lo_f, hi_f = state
        if j == self.d:
            return '"0"*' if self.ok(r) else None

        def build():
            options = ['""'] if self._can_stop(j, r, lo_f) else []
            digits = self._fraction_digit(j, r, lo_f, hi_f)
            if digits is not None:
                options.append(digits)
            return " | ".join(options) if options else None

        return self._rule(("frac",) + state, build)

    # -- integer parts ------------------------------------------------------------------------------------------
    def between(self, lo: int, hi: int | None) -> str | None:
        """Spellings with lo <= N <= hi (the public entry; see scaled_multiples)."""
        scale = 10 ** self.d
        lo_i, lo_f = divmod(lo, scale)
        lo_f = f"{lo_f:0{self.d}d}" if self.d else ""
        options = []
        if hi is not None:
            hi_i, hi_f = divmod(hi, scale)
            hi_f = f"{hi_f:0{self.d}d}" if self.d else ""
            if hi < lo:
                return None
            if lo_i == hi_i:
                return self._literal_then(lo_i, lo_f, hi_f)
            options.append(self._literal_then(lo_i, lo_f, None))
            options += self._integers(lo_i + 1, hi_i - 1)
            options.append(self._literal_then(hi_i, None, hi_f))
        else:
            options.append(self._literal_then(lo_i, lo_f, None))
            options += self._integers(lo_i + 1, None)
        return _alternatives([o for o in options if o is not None])

    def _literal_then(self, i: int, lo_f: str | None, hi_f: str | None) -> str | None:
        """The integer part ``i`` spelled out, then its fraction part (see ``after``)."""
        rest = self.after(i * 10 ** self.d % self.p, lo_f, hi_f)
        if rest is None:
            return None
        return f'"{i}"' if rest == '""' else f'"{i}" {rest}'

    def _free_after(self, r: int) -> str | None:
        return self._rule(("after", r), lambda: self.after(r, None, None))

    def _integers(self, lo: int, hi: int | None) -> list[str]:
        """Integer parts I with lo <= I <= hi (hi None: unbounded), each followed by a free fraction part."""
        if hi is not None and hi < lo:
            return []
        out = []
        if lo == 0:
            zero = self._free_after(0)
            if zero is not None:
                out.append(f'"0" {zero}')
            lo = 1
            if hi is not None and hi < 1:
                return out
        short = len(str(lo))
        longest = len(str(hi)) if hi is not None else short
        for n in range(short, longest + 1):
            # n-digit bounds (a keeps the leading digit from being 0; b at 99..9 constrains nothing)
            a = str(max(lo, 10 ** (n - 1)))
            b = str(hi) if hi is not None and hi < 10 ** n - 1 else None
            expr = self._tight(n, a, b, 0, 0)
            if expr is not None:
                out.append(expr)
        if hi is None:  # more digits than lo: a leading digit, then at least `short` digits
            pairs = [(g, nxt) for g in range(1, 10) if (nxt := self._at_least(short, self._step(0, g))) is not None]
            if pairs:
                out.append(_alternatives(_by_successor(pairs)))
        return out

    def _tight(self, n: int, a: str | None, b: str | None, i: int, r: int) -> str | None:
        """Digits i.. of an n-digit integer part, the digits so far equal to a's (if a is not None) and to b's (if
        b is not None); r: N's remainder so far."""
        if a is None and b is None:
            return self._free(n - i, r)
        if i == n:
            return self._free_after(r)

        def build():
            first = int(a[i]) if a is not None else 0
            last = int(b[i]) if b is not None else 9
            pairs = []
            for g in range(first, last + 1):
                nxt = self._tight(n, a if g == first else None, b if g == last else None, i + 1, self._step(r, g))
                if nxt is not None:
                    pairs.append((g, nxt))
            return _alternatives(_by_successor(pairs))

        if a is not None and b is not None:  # the shared prefix of both bounds: one path, no rule needed
            return build()
        return self._rule(("tight", n, a, b, i, r), build)

    def _free(self, left: int, r: int) -> str | None:
        """``left`` more integer digits, any of them, then a free fraction part."""
        if left == 0:
            return self._free_after(r)

        def build():
            pairs = [(g, nxt) for g in range(10) if (nxt := self._free(left - 1, self._step(r, g))) is not None]
            return _alternatives(_by_successor(pairs))

        return self._rule(("free", left, r), build)

    def _at_least(self, left: int, r: int) -> str | None:
        """At least ``left`` more integer digits, then a free fraction part."""
        if left == 0:
            return self._loop(r)

        def build():
            pairs = [(g, nxt) for g in range(10) if (nxt := self._at_least(left - 1, self._step(r, g))) is not None]
            return _alternatives(_by_successor(pairs))

        return self._rule(("least", left, r), build)

    def _loop(self, r: int) -> str | None:
        """Any number of further integer digits, then a free fraction part: one rule per remainder from which an
        ending is reachable (they refer to each other, so they are named before they are defined)."""
        if self.loops is None:
            self.loops = self._name_loops()
        return self.loops.get(r)

    def _name_loops(self) -> dict[int, str]:
        ends = {r: e for r in range(self.p) if (e := self._free_after(r)) is not None}
        # The remainders from which a remainder with an ending is reachable (reverse reachability).
        back: dict[int, set[int]] = {}
        for r in range(self.p):
            for g in range(10):
                back.setdefault(self._step(r, g), set()).add(r)
        live, todo = set(ends), list(ends)
        while todo:
            for q in back.get(todo.pop(), ()):
                if q not in live:
                    live.add(q)
                    todo.append(q)
        if len(live) + len(self.memo) > MAX_MULTIPLE_OF_RULES:
            raise ValueError(f"'multipleOf' within these bounds needs more than {MAX_MULTIPLE_OF_RULES} grammar "
                             "rules (the limit is MAX_MULTIPLE_OF_RULES)")
        names = {r: self.rules.reserve(f"{self.tag}_loop") for r in sorted(live)}
        for r, name in names.items():
            pairs = [(g, names[q]) for g in range(10) if (q := self._step(r, g)) in names]
            options = ([ends[r]] if r in ends else []) + _by_successor(pairs)
            self.rules.define(name, " | ".join(options))
        return names
