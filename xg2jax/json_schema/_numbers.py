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

MAX_MULTIPLE_OF = 10_000  # rules of the divisibility automaton; larger divisors raise


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


def integer_range(lo: int | None, hi: int | None) -> str | None:
    """An EBNF expression for the spellings of the integers in [lo, hi] (None = open end), or None if empty."""
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
    if (lo is None or lo <= 0) and (hi is None or hi >= 0):
        options.append('"-0"')  # -0 is 0
    return _group(options) if options else None


def multiple_of(k: int, rules: RuleTable, sign: str = "any", ok=None) -> str:
    """An EBNF expression for the spellings of the integers divisible by k (k >= 1): all of them (``sign="any"``),
    the non-negative ones (``"nonneg"``) or the negative ones (``"neg"``). With ``ok``: the integers whose
    remainder r modulo k (of the absolute value) has ok(r), instead of r == 0."""
    if k == 1 and sign == "any" and ok is None:
        return 'j_int'
    if k > MAX_MULTIPLE_OF:
        raise ValueError(f"multipleOf {k} needs {k} grammar rules (the limit is {MAX_MULTIPLE_OF})")
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
    return f'( "-"? ( {zero}{first} ) )'


def multiple_of_at_least(k: int, a: int, rules: RuleTable, ok=None) -> str:
    """The spellings of the integers >= a (a >= 1) divisible by k: numbers with more digits than a (the divisibility
    automaton times a digit counter capped at len(a) + 1), or as many digits and digit by digit >= a (a tight
    prefix equal to a's, then free digits with their remainder). About k * (2 len(a) + 1) rules. With ``ok``: the
    remainder r modulo k must have ok(r) instead of r == 0."""
    ok = ok or (lambda r: r == 0)
    digits = str(a)
    n = len(digits)
    if k * (2 * n + 2) > MAX_MULTIPLE_OF:
        raise ValueError(f"multipleOf {k} above {a} needs about {k * (2 * n + 2)} grammar rules (the limit is "
                         f"{MAX_MULTIPLE_OF})")
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
        if d > 30:
            raise ValueError(f"multipleOf {value} has no short decimal expansion")
    return q.numerator, d


def decimal_multiple_of(p: int, d: int, rules: RuleTable, sign: str = "any", min_int_digits: int = 0) -> str:
    """Numbers (spelled without an exponent) that are multiples of p / 10**d: the digits of the integer and the
    first d fraction digits, read as one integer, are divisible by p, and every later fraction digit is 0. States:
    (remainder, fraction digits read), one rule each; with ``min_int_digits`` m > 0 the integer part is at least
    10**(m-1) (no leading zero, at least m digits: a digit counter capped at m joins the remainder). ``sign``:
    "any", "nonneg" or "neg" as for multiple_of."""
    cap = max(min_int_digits, 1)
    if p * (d + 1 + cap) > MAX_MULTIPLE_OF:
        raise ValueError(f"multipleOf needs {p * (d + 1 + cap)} grammar rules (the limit is {MAX_MULTIPLE_OF})")
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
        if len(digits) > 60:
            raise ValueError(f"bound {value} has no short decimal expansion")
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
