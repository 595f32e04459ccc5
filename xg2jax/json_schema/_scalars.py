"""Per-type grammars for null, boolean, integer, number and string (bounds, multipleOf, lengths, formats)."""

from __future__ import annotations

import json
import math

from xg2jax.json_schema._backrefs import widen_backreferences
from xg2jax.json_schema._check import number_problem, regex_problem
from xg2jax.json_schema._common import (
    FRACTION_ONLY,
    NO_CONSTRAINT,
    NOT_MULTIPLE_OF,
    NOT_PATTERNS,
    NOT_STRINGS,
    TYPES,
    SchemaError,
    Unsatisfiable,
    UnsupportedSchemaError,
)
from xg2jax.json_schema._ebnf import choice, literal
from xg2jax.json_schema._formats import FORMATS, format_search_pattern
from xg2jax.json_schema._automata import (
    RegexUnsupported,
    names_dfa,
    product_with_length,
    regex_dfa,
)
from xg2jax.json_schema._regex_text import hoist_anchors
from xg2jax.json_schema._limits import MAX_LISTED_MULTIPLES, MAX_LISTED_NON_MULTIPLES
from xg2jax.json_schema._numbers import (
    decimal_multiple_of,
    decimal_step,
    integer_range,
    multiple_of,
    multiple_of_at_least,
    number_range,
    scaled_multiples,
)


_TYPE_METHODS = {t: f"_type_{t}" for t in TYPES}  # type name -> the ScalarsMixin / mixin method converting it


class ScalarsMixin:
    # ----------------------------------------------------------------------------------------------------------
    # Types
    def _visit_types(self, schema: dict, ptr: str) -> str:
        if "type" in schema:
            t = schema["type"]
            if isinstance(t, str) and t in _TYPE_METHODS and not (t == "integer" and schema.get(FRACTION_ONLY)):
                return getattr(self, _TYPE_METHODS[t])(schema, ptr)  # one type, the usual case
            types = [t] if isinstance(t, str) else t
            if not isinstance(types, list) or not all(isinstance(x, str) and x in TYPES for x in types):
                raise SchemaError(f"{ptr}/type", f"'type' must be one of {list(TYPES)} or an array of them, "
                                  f"got {json.dumps(t)}")
        elif schema.keys() <= NO_CONSTRAINT:  # nothing but annotations: any value, as for ``true``
            return "j_value"
        else:
            types = list(TYPES)
        if "number" in types and "integer" in types and not schema.get(FRACTION_ONLY):
            types = [x for x in types if x != "integer"]
        if schema.get(FRACTION_ONLY):
            types = [x for x in types if x != "integer"]
        options, last = [], None
        for t in types:
            try:
                options.append(getattr(self, _TYPE_METHODS[t])(schema, ptr))
            except Unsatisfiable as e:
                last = e
        if not options:
            if last is None:
                raise Unsatisfiable(f"{ptr}/type" if "type" in schema else ptr, "no type is allowed")
            raise last if len(types) == 1 else Unsatisfiable(last.pointer, last.reason or "no allowed type fits")
        return choice(options)

    def _type_null(self, schema, ptr):
        return "j_null"

    def _type_boolean(self, schema, ptr):
        return "j_bool"

    def _multiple_of(self, schema, ptr):
        """``multipleOf`` (None if absent), checked: a finite number > 0 of at most MAX_DECIMAL_DIGITS digits."""
        k = schema.get("multipleOf")
        if k is None:
            return None
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not k > 0:
            raise SchemaError(f"{ptr}/multipleOf", f"'multipleOf' must be a number > 0, got {json.dumps(k)}")
        problem = number_problem(k)
        if problem is not None:
            raise SchemaError(f"{ptr}/multipleOf", f"'multipleOf': {problem}")
        return k

    def _type_integer(self, schema, ptr):
        self._multiple_of(schema, ptr)
        lo, hi = self._integer_bounds(schema, ptr)
        k = schema.get("multipleOf")
        excluded = schema.get(NOT_MULTIPLE_OF) or []
        if k is not None or excluded:
            if k is not None and (isinstance(k, bool) or not isinstance(k, (int, float)) or k <= 0):
                raise SchemaError(f"{ptr}/multipleOf", f"'multipleOf' must be a number > 0, got {json.dumps(k)}")
            try:
                step = 1
                if k is not None:
                    p, d = decimal_step(k)
                    step = p // math.gcd(p, 10 ** d)  # integer n is a multiple of p / 10**d iff step divides n
                if excluded:
                    # Remainders modulo lcm(step, excluded...): divisible by step and by none of the excluded.
                    modulus = math.lcm(step, *excluded)
                    digits = self._integer_multiples(
                        modulus, lo, hi, schema, ptr,
                        ok=lambda r: r % step == 0 and all(r % e for e in excluded))
                else:
                    digits = self._integer_multiples(step, lo, hi, schema, ptr)
            except ValueError as e:
                kw = "multipleOf" if k is not None else "not"
                raise UnsupportedSchemaError(f"{ptr}/{kw}", str(e)) from None
        elif lo is None and hi is None:
            return "j_integer"
        else:
            digits = integer_range(lo, hi, negative_zero=not self.plain_integers)
            if digits is None:
                raise self._empty_range(schema, ptr)
        return self.rules.add(f"integer_{lo}_{hi}_{k}", digits if self.plain_integers else f'{digits} ( "." "0"+ )?')

    def _non_integral(self, lo, hi, schema, ptr) -> str:
        """Numbers with a non-zero fraction within integer bounds (strict or not: no such number equals one):
        x = m.f > 0 lies in the bounds iff lo <= m <= hi - 1; x = -m.f < 0 iff -hi <= m <= -lo - 1."""
        fraction = '"." [0-9]* [1-9] [0-9]*'
        parts = []
        for sign, m_lo, m_hi, empty in (
                ("", 0 if lo is None or lo <= 0 else int(lo), None if hi is None else int(hi) - 1,
                 hi is not None and hi <= 0),
                ('"-" ', 0 if hi is None or hi >= 0 else -int(hi), None if lo is None else -int(lo) - 1,
                 lo is not None and lo >= 0)):
            if empty or (m_hi is not None and m_hi < m_lo):
                continue
            digits = integer_range(m_lo, m_hi) if (m_lo, m_hi) != (0, None) else '( "0" | [1-9] [0-9]* )'
            if digits is not None:
                parts.append(f"{sign}{digits} {fraction}")
        if not parts:
            raise self._empty_range(schema, ptr)
        return self.rules.add("non_integral", " | ".join(f"( {p} )" for p in parts))

    def _integer_multiples(self, k: int, lo: int | None, hi: int | None, schema, ptr, ok=None) -> str:
        """The integers in [lo, hi] divisible by k (with ``ok``: whose remainder r modulo k has ok(r)): the
        non-negative and the negative side each either unbounded (the divisibility automaton, from a bound away from
        0 with a digit-by-digit comparison) or finite (listed when few, else the bounded automaton of
        ``scaled_multiples``)."""
        if lo is None and hi is None:
            return multiple_of(k, self.rules, ok=ok, negative_zero=not self.plain_integers)
        if lo is not None and hi is not None and lo > hi:
            raise self._empty_range(schema, ptr)
        parts = []
        for a, b, sign in ((max(lo, 0) if lo is not None else 0, hi, "nonneg"),
                           (lo, min(hi, -1) if hi is not None else -1, "neg")):
            if a is not None and b is not None and a > b:
                continue
            if (sign == "nonneg" and b is None and a == 0) or (sign == "neg" and a is None and b == -1):
                parts.append(multiple_of(k, self.rules, sign, ok=ok))
                continue
            if b is None:  # [a, oo) with a >= 1
                parts.append(multiple_of_at_least(k, a, self.rules, ok=ok))
                continue
            if a is None:  # (-oo, b] with b <= -2
                parts.append('"-" ' + multiple_of_at_least(k, -b, self.rules, ok=ok))
                continue
            parts += self._finite_integer_multiples(k, a, b, ok)
        if not parts:
            raise Unsatisfiable(f"{ptr}/multipleOf", "the range contains no multipleOf value")
        return choice(parts)

    def _finite_integer_multiples(self, k: int, a: int, b: int, ok) -> list[str]:
        """The integers in [a, b] (one sign) as in ``_integer_multiples``: listed when there are few (a short
        grammar), else the automaton; the count is computed before anything is listed."""
        if ok is not None and b - a + 1 <= MAX_LISTED_NON_MULTIPLES:
            return [literal(str(v)) for v in range(a, b + 1) if ok(abs(v) % k)]
        first, last = -(-a // k) * k, b // k * k
        if ok is None and (last - first) // k + 1 <= MAX_LISTED_MULTIPLES:
            return [literal(str(v)) for v in range(first, last + 1, k)]
        lo, hi = (a, b) if a >= 0 else (-b, -a)
        digits = scaled_multiples(k, 0, lo, hi, self.rules, ok)
        if digits is None:
            return []
        return [digits if a >= 0 else f'"-" {digits}']

    def _bounded_decimal_multiples(self, k, lo, lo_strict, hi, hi_strict, schema, ptr) -> str:
        """Multiples m * k (k = p / 10**d, not an integer) within bounds, per sign: listed when a side has few,
        else the bounded automaton of ``scaled_multiples`` (the decimal divisibility automaton of
        ``decimal_multiple_of`` for a side unbounded from 0)."""
        from fractions import Fraction

        p, d = decimal_step(k)
        step = Fraction(p, 10 ** d)
        exact = lambda v: Fraction(repr(v)) if isinstance(v, float) else Fraction(v)
        m_lo = m_hi = None
        if lo is not None:
            q = exact(lo) / step
            m_lo = math.floor(q) + 1 if lo_strict and q.denominator == 1 else math.ceil(q)
        if hi is not None:
            q = exact(hi) / step
            m_hi = math.ceil(q) - 1 if hi_strict and q.denominator == 1 else math.floor(q)
        if m_lo is not None and m_hi is not None and m_lo > m_hi:
            raise Unsatisfiable(f"{ptr}/multipleOf", "the range contains no multipleOf value")

        def spell(m: int) -> str:
            v = abs(m) * step
            sign = '"-" ' if m < 0 else '"-"? ' if m == 0 else ""
            if v.denominator == 1:
                return f'{sign}{literal(str(v.numerator))} ( "." "0"+ )?'
            digits = f"{v.numerator * 10 ** d // v.denominator:0{d + 1}d}"
            text = (digits[:-d] + "." + digits[-d:]).rstrip("0")
            return f'{sign}{literal(text)} "0"*'

        zero = (m_lo is None or m_lo <= 0) and (m_hi is None or m_hi >= 0)
        parts = []
        for sign in ("nonneg", "neg"):
            # |m| in [a, b] (b None: unbounded) on this side.
            if sign == "nonneg":
                a, b = max(m_lo, 0) if m_lo is not None else 0, m_hi
            else:
                a, b = max(-m_hi, 1) if m_hi is not None else 1, (-m_lo if m_lo is not None else None)
            if b is not None and a > b:
                continue
            if b is None and ((sign == "nonneg" and a == 0) or (sign == "neg" and a == 1)):
                parts.append(decimal_multiple_of(p, d, self.rules, sign))
            elif b is not None and b - a + 1 <= MAX_LISTED_MULTIPLES:  # counted, not listed, first
                parts += [spell(m if sign == "nonneg" else -m) for m in range(a, b + 1)]
            else:
                if sign == "neg" and zero:
                    a = 0  # "-0" is 0 too (the listed zero spells its sign as optional)
                body = scaled_multiples(p, d, a * p, None if b is None else b * p, self.rules)
                if body is not None:
                    parts.append(body if sign == "nonneg" else f'"-" {body}')
        if not parts:
            raise Unsatisfiable(f"{ptr}/multipleOf", "the range contains no multipleOf value")
        return self.rules.add("number_multiple", choice([f"( {x} )" for x in parts]))

    def _bounds(self, schema, ptr):
        """(lo, lo_strict, hi, hi_strict) from minimum / maximum / exclusive bounds (draft 4's booleans too)."""
        def number(kw):
            v = schema.get(kw)
            if v is None or (isinstance(v, bool) and self._draft <= 4 and kw.startswith("exclusive")):
                return None
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise SchemaError(f"{ptr}/{kw}", f"'{kw}' must be a number, got {json.dumps(v)}")
            problem = number_problem(v)  # also checked up front, but a $ref may lead outside schema positions
            if problem is not None:
                raise SchemaError(f"{ptr}/{kw}", f"'{kw}': {problem}")
            return v

        lo, hi = number("minimum"), number("maximum")
        lo_strict = hi_strict = False
        if self._draft <= 4:
            lo_strict = schema.get("exclusiveMinimum") is True and lo is not None
            hi_strict = schema.get("exclusiveMaximum") is True and hi is not None
        ex_min, ex_max = number("exclusiveMinimum"), number("exclusiveMaximum")
        if ex_min is not None and (lo is None or ex_min >= lo):
            lo, lo_strict = ex_min, True
        if ex_max is not None and (hi is None or ex_max <= hi):
            hi, hi_strict = ex_max, True
        return lo, lo_strict, hi, hi_strict

    @staticmethod
    def _empty_range(schema, ptr) -> Unsatisfiable:
        lower = [f"'{k}' {json.dumps(schema[k])}" for k in ("minimum", "exclusiveMinimum") if k in schema]
        upper = [k for k in ("maximum", "exclusiveMaximum") if k in schema]
        where = f"{ptr}/{upper[0]}" if upper else ptr
        bounds = " and ".join(lower + [f"'{k}' {json.dumps(schema[k])}" for k in upper])
        return Unsatisfiable(where, f"no {'integer' if 'integer' == schema.get('type') else 'number'} within "
                             f"{bounds}")

    def _integer_bounds(self, schema, ptr) -> tuple[int | None, int | None]:
        """Inclusive integer bounds."""
        lo, lo_strict, hi, hi_strict = self._bounds(schema, ptr)
        ilo = None if lo is None else (math.floor(lo) + 1 if lo_strict else math.ceil(lo))
        ihi = None if hi is None else (math.ceil(hi) - 1 if hi_strict else math.floor(hi))
        return ilo, ihi

    def _type_number(self, schema, ptr):
        self._multiple_of(schema, ptr)
        lo, lo_strict, hi, hi_strict = self._bounds(schema, ptr)
        if schema.get(FRACTION_ONLY):
            k = schema.get("multipleOf")
            if isinstance(k, (int, float)) and not isinstance(k, bool) and k > 0 and float(k).is_integer():
                raise Unsatisfiable(f"{ptr}/multipleOf", "a number with a fraction is no multiple of an integer")
            if "multipleOf" in schema or any(b is not None and not float(b).is_integer() for b in (lo, hi)):
                raise UnsupportedSchemaError(ptr, "non-integral numbers (from a complement of integer) with "
                                             "'multipleOf' or non-integer bounds are not supported yet")
            return self._non_integral(lo, hi, schema, ptr)
        k = schema.get("multipleOf")
        if NOT_MULTIPLE_OF in schema and not (isinstance(k, (int, float)) and not isinstance(k, bool) and k > 0
                                              and float(k).is_integer()):
            # Integers that are no multiple of the listed ones, or numbers with a fraction (never such a multiple).
            if k is not None or any(b is not None and not float(b).is_integer() for b in (lo, hi)):
                raise UnsupportedSchemaError(f"{ptr}/not", "the complement of 'multipleOf' next to a non-integer "
                                             "'multipleOf' or non-integer bounds is not supported yet")
            options = []
            for build in (self._type_integer, lambda s, p: self._non_integral(lo, hi, s, p)):
                try:
                    options.append(build(schema, ptr))
                except Unsatisfiable:
                    pass
            if not options:
                raise self._empty_range(schema, ptr)
            return choice(options)
        if k is not None:
            if isinstance(k, (int, float)) and not isinstance(k, bool) and k > 0 and float(k).is_integer():
                return self._type_integer(schema, ptr)  # multiples of an integer are integers
            if isinstance(k, bool) or not isinstance(k, (int, float)) or k <= 0:
                raise SchemaError(f"{ptr}/multipleOf", f"'multipleOf' must be a number > 0, got {json.dumps(k)}")
            if lo is not None or hi is not None:
                try:
                    return self._bounded_decimal_multiples(k, lo, lo_strict, hi, hi_strict, schema, ptr)
                except ValueError as e:
                    raise UnsupportedSchemaError(f"{ptr}/multipleOf", str(e)) from None
            try:
                # Approximation (documented): the multiples are spelled without an exponent.
                return self.rules.add("number_multiple", decimal_multiple_of(*decimal_step(k), self.rules))
            except ValueError as e:
                raise UnsupportedSchemaError(f"{ptr}/multipleOf", str(e)) from None
        if lo is None and hi is None:
            return "j_number"
        digits = number_range(lo, lo_strict, hi, hi_strict, self.rules)
        if digits is None:
            raise self._empty_range(schema, ptr)
        # Approximation (documented): a bounded number is spelled without an exponent.
        return self.rules.add("number_range", digits)

    def _enforced_format(self, schema) -> str | None:
        """The schema's ``format`` when it is one this converter enforces (``_formats``), else None."""
        fmt = schema.get("format")
        return fmt if self.enforce_formats and isinstance(fmt, str) and fmt in FORMATS else None

    def _type_string(self, schema, ptr):
        lo = self._int_keyword(schema, "minLength", ptr) or 0
        hi = self._int_keyword(schema, "maxLength", ptr)
        if hi is not None and hi < lo:
            raise Unsatisfiable(f"{ptr}/maxLength", f"'minLength' {lo} > 'maxLength' {hi}")
        fmt = self._enforced_format(schema)
        if NOT_PATTERNS in schema or (NOT_STRINGS in schema and (lo or hi is not None or "pattern" in schema or fmt)) \
                or (fmt and (lo or hi is not None)):
            return self._string_automaton(schema, lo, hi, ptr)
        if NOT_STRINGS in schema:
            return self.rules.add("string_except", self._key_except(list(schema[NOT_STRINGS])))
        if "pattern" in schema:
            return self._string_pattern(schema, lo, hi, ptr)
        if fmt:
            name, regex = FORMATS[fmt]
            if name not in self.rules.rules:
                self.rules.define(name, f"Regex({literal(regex)}, json_string=true)")
            return self.rules.add(f"string_{name}", f'"\\"" {name} "\\""')
        if lo == 0 and hi is None:
            return "j_string"
        bound = f"{{{lo},}}" if hi is None else f"{{{lo},{hi}}}"
        return self.rules.add(f"string_{lo}_{hi}", f'"\\"" j_char{bound} "\\""')

    def _string_automaton(self, schema, lo: int, hi: int | None, ptr: str) -> str:
        """Strings by one product automaton: ``pattern`` matches, the length is within bounds, the string is none of
        the excluded constants (complement of const / enum) and none of the excluded patterns finds a match
        (complement of ``pattern``)."""
        fmt = self._enforced_format(schema)
        pattern = schema.get("pattern")
        if pattern is not None and not isinstance(pattern, str):
            raise SchemaError(f"{ptr}/pattern", f"'pattern' must be a string, got {json.dumps(pattern)}")
        if pattern is not None and not self.strict:
            pattern = widen_backreferences(pattern)  # positive use only: excluded patterns stay exact
        excluded = list(schema.get(NOT_PATTERNS, []))
        try:
            must = [regex_dfa(pattern)] if pattern is not None else []
            if fmt:
                must.append(regex_dfa(format_search_pattern(fmt)))
            must_not = [names_dfa(list(schema.get(NOT_STRINGS, [])))] + [regex_dfa(p) for p in excluded]
            strings = product_with_length(must, must_not, lo, hi)
        except RegexUnsupported as e:
            where = f"{ptr}/format" if fmt else f"{ptr}/pattern" if pattern is not None and not excluded \
                else f"{ptr}/not/pattern"
            raise UnsupportedSchemaError(where, f"strings by automaton (pattern {json.dumps(pattern)}, format "
                                         f"{json.dumps(fmt)}, excluded patterns {json.dumps(excluded)}): {e}") from None
        key = self._key_rule(strings)
        if key == "j_never":
            raise Unsatisfiable(f"{ptr}/pattern" if pattern is not None else ptr,
                                "no string satisfies the pattern, format, length and excluded patterns / constants")
        return key

    def _string_pattern(self, schema, lo: int, hi: int | None, ptr: str) -> str:
        """``pattern``: an unanchored ECMAScript search over the string's characters (the EBNF
        ``Regex(..., json_string=true, search=true)``). Characters a JSON string must escape are excluded from
        classes and ``.``; literal ones are spelled as escapes (frontends/regex.h)."""
        pattern = schema["pattern"]
        if not isinstance(pattern, str):
            raise SchemaError(f"{ptr}/pattern", f"'pattern' must be a string, got {json.dumps(pattern)}")
        if not self.strict:
            pattern = widen_backreferences(pattern)  # the documented approximation (_backrefs.py)
        detail = regex_problem(pattern)  # reported against the schema, not against the generated EBNF
        if detail is not None and "not supported" not in detail:
            raise SchemaError(f"{ptr}/pattern", f"invalid regex {json.dumps(pattern)}: {detail}")
        if self._enforced_format(schema):
            return self._string_automaton(schema, lo, hi, ptr)  # the pattern's and the format's automata
        # The pattern's automaton (see _automata) where it can be built: exact for every character, including those
        # JSON must escape (which the engine's Regex(...) leaves out of '.' and classes), and it takes lengths. The
        # engine's regex front end otherwise (features the automaton lacks, or too many states).
        try:
            strings = product_with_length([regex_dfa(pattern)], [], lo, hi)
        except RegexUnsupported as e:
            if detail is not None or lo or hi is not None:
                why = f"{detail or e}"
                if "Backreference" in why:
                    why += " (pass strict_mode=False to widen each backreference to its group's pattern)"
                raise UnsupportedSchemaError(f"{ptr}/pattern", f"regex {json.dumps(pattern)}: {why}") from None
        else:
            key = self._key_rule(strings)
            if key == "j_never":
                raise Unsatisfiable(f"{ptr}/pattern", "no string matches the pattern within the length bounds")
            return key
        spelled = literal(hoist_anchors(pattern))
        return self.rules.add("string_pattern", f'"\\"" Regex({spelled}, json_string=true, search=true) "\\""')
