"""Proofs that two schemas share no instance, so that ``oneOf`` over them is ``anyOf`` (no complement needed).

Algorithm. ``_disjoint_pair(a, b)`` answers True only with a proof; False means "not shown". It uses only
necessary conditions of each schema (keywords are conjuncts, so ignoring some keywords weakens a schema and keeps
the proof sound): the JSON types each side allows; the values of a ``const`` / ``enum`` side checked against the
other side by the exact validator; then, type by type among the types both allow: strings whose ``pattern``s have
an empty intersection (product of the two pattern DFAs) or whose length ranges do not meet; numbers whose ranges
do not meet; objects where a name one side requires is one the other side forbids (its property schema is false,
or it is undeclared, matches no ``patternProperties`` and ``additionalProperties`` is false), or a name both sides
require has disjoint property schemas (recursively). ``allOf`` conjuncts are used one by one, ``anyOf`` / ``oneOf``
sides must be disjoint branch by branch. In drafts before 2019-09 the siblings of ``$ref`` are ignored (as the
draft says); from 2019-09 they are conjuncts."""

from __future__ import annotations

import functools
import json

from xg2jax.json_schema._common import (
    ABSENT,
    ARRAY_KEYWORDS,
    CONTAINS_ALL,
    FRACTION_ONLY,
    NOT_MULTIPLE_OF,
    NOT_PATTERNS,
    NOT_STRINGS,
    NUMBER_KEYWORDS,
    OBJECT_KEYWORDS,
    SOME_MEMBER,
    STRING_KEYWORDS,
    TYPES,
    SchemaError,
    strip_annotations,
)
from xg2jax.json_schema._automata import (
    RegexUnsupported,
    key_dfa,
    matches,
    product,
    regex_dfa,
)

_MAX_DEPTH = 6
# Keywords that constrain values of one JSON type (a schema without them, and without applicators, accepts every
# value of that type that its "type" allows).
_TYPE_KEYWORDS = {
    "object": OBJECT_KEYWORDS | {ABSENT, SOME_MEMBER, "dependentSchemas", "dependencies", "unevaluatedProperties"},
    "array": ARRAY_KEYWORDS | {CONTAINS_ALL, "unevaluatedItems"},
    "string": STRING_KEYWORDS | {NOT_STRINGS, NOT_PATTERNS, "format"},
    "number": NUMBER_KEYWORDS | {FRACTION_ONLY, NOT_MULTIPLE_OF, "format"},
    "integer": NUMBER_KEYWORDS | {FRACTION_ONLY, NOT_MULTIPLE_OF, "format"},
    "boolean": set(),
    "null": set(),
}
_CONJUNCT_FREE = {"type"}  # the only keyword a "full" schema may carry besides its type's untouched keywords


class DisjointMixin:
    def _disjoint(self, branches: list) -> bool:
        """True if no JSON value can satisfy two of the branches. Memoised by the branches' text (the same oneOf is
        often reached from several places; $refs are canonical, so equal text means equal schemas), except where
        $dynamicRef makes a reference's target depend on the scope."""
        def prove() -> bool:
            return all(self._disjoint_pair(branches[i], branches[j], 0)
                       for i in range(len(branches)) for j in range(i + 1, len(branches)))

        if self._res.dynamic_refs:
            return prove()
        key = tuple(_text(b) for b in branches)
        memo = self.__dict__.setdefault("_disjoint_memo", {})
        if key not in memo:
            memo[key] = prove()
        return memo[key]

    def _without_shared_types(self, branches: list):
        """oneOf branches restricted to the JSON types where exactly-one can hold: a type of which two branches
        accept every value is a type no valid instance has (each such value satisfies both). None when that
        cannot be expressed with 'type' (integers excluded but not all numbers)."""
        full = [{t for t in TYPES if self._full_on(b, t)} for b in branches]
        excluded = set()
        for i in range(len(branches)):
            for j in range(i + 1, len(branches)):
                excluded |= full[i] & full[j]
        if not excluded:
            return None
        if "integer" in excluded and "number" not in excluded:
            return None
        allowed = [t for t in TYPES if t not in excluded]
        if not allowed:
            return [False for _ in branches]
        try:
            return [self._merge({"type": allowed}, b, "") for b in branches]
        except SchemaError:
            return None

    def _full_on(self, x, t: str) -> bool:
        """``x`` accepts every value of JSON type ``t`` (checked on its keywords; False when not sure)."""
        if x is True or x == {}:
            return True
        if not isinstance(x, dict):
            return False
        x = strip_annotations(x)
        types = self._possible_types(x)
        if types is not None and t not in types:
            return False
        if t == "number" and types is not None and "number" not in types:
            return False
        if t == "integer" and "type" in x and "integer" not in types:
            return False
        for kw in x:
            if kw in _CONJUNCT_FREE:
                continue
            if kw == "format" and not self.enforce_formats:
                continue
            if any(kw in kws for kws in _TYPE_KEYWORDS.values()) and kw not in _TYPE_KEYWORDS[t]:
                continue  # constrains other types only
            return False
        return True

    def _disjoint_pair(self, a, b, depth: int) -> bool:
        self._work += 1  # checked against the budget at the next conversion or merge (no pointer here)
        if a is False or b is False:
            return True
        if depth > _MAX_DEPTH:
            return False
        for x, y in ((a, b), (b, a)):  # S and not S
            if isinstance(x, dict) and set(strip_annotations(x)) == {"not"} and (
                    _text(x["not"]) == _text(y)
                    or _text(self._necessary(x["not"], depth)) == _text(self._necessary(y, depth))):
                return True
        a, b = self._necessary(a, depth), self._necessary(b, depth)
        if a is None or b is None:
            return False
        for x, y in ((a, b), (b, a)):
            for sub in x.get("allOf", []) if isinstance(x.get("allOf"), list) else []:
                if self._disjoint_pair(sub, y, depth + 1):
                    return True
            for kw in ("anyOf", "oneOf"):
                alts = x.get(kw)
                if isinstance(alts, list) and alts and all(self._disjoint_pair(s, y, depth + 1) for s in alts):
                    return True
        ta, tb = self._possible_types(a), self._possible_types(b)
        common = (set(TYPES) if ta is None else ta) & (set(TYPES) if tb is None else tb)
        if not common:
            return True
        for x, y in ((a, b), (b, a)):
            values = [x["const"]] if "const" in x else x.get("enum") if isinstance(x.get("enum"), list) else None
            if values is not None:
                try:
                    if not any(self._validate(v, y, "") for v in values):
                        return True
                except SchemaError:
                    pass
        return all(self._disjoint_on_type(a, b, t, depth) for t in common)

    def _necessary(self, x, depth: int):
        """``x`` as a dict of conjuncts (a bare $ref followed), or None when nothing is known."""
        for _ in range(8):
            if x is True:
                return {}
            if not isinstance(x, dict):
                return None
            x = strip_annotations(x)
            if "$ref" not in x:
                return self._with_conjunct_required(x, depth)
            if self._draft >= 2019 and set(x) != {"$ref"}:
                return {k: v for k, v in x.items() if k != "$ref"}  # the target is one more conjunct, unused
            try:
                x = self._resolve(x["$ref"], "")[1]
            except SchemaError:
                return None
        return None

    def _with_conjunct_required(self, x: dict, depth: int) -> dict:
        """``x`` with the names its ``allOf`` conjuncts require added to its own ``required``."""
        subs = x.get("allOf")
        if not isinstance(subs, list) or depth > _MAX_DEPTH:
            return x
        extra = []
        for sub in subs:
            sub = self._necessary(sub, depth + 1)
            if isinstance(sub, dict) and isinstance(sub.get("required"), list):
                extra += sub["required"]
        own = x.get("required", [])
        if not extra or not isinstance(own, list):
            return x
        return {**x, "required": list(dict.fromkeys(own + extra))}

    def _disjoint_on_type(self, a: dict, b: dict, t: str, depth: int) -> bool:
        """No value of JSON type ``t`` satisfies both."""
        if t == "string":
            if not self._ranges_meet(a, b, "minLength", "maxLength"):
                return True
            pa, pb = a.get("pattern"), b.get("pattern")
            if isinstance(pa, str) and isinstance(pb, str):
                return not _patterns_may_meet(pa, pb)
            return False
        if t in ("integer", "number"):
            lo_a, hi_a = _bounds(a, self._draft)
            lo_b, hi_b = _bounds(b, self._draft)
            lo = max(lo_a, lo_b)
            hi = min(hi_a, hi_b)
            return lo[0] > hi[0] or (lo[0] == hi[0] and (lo[1] or hi[1]))
        if t == "object":
            for x, y in ((a, b), (b, a)):
                req = x.get("required", [])
                if isinstance(req, list) and any(isinstance(p, str) and self._forbids(y, p) for p in req):
                    return True
            ra, rb = a.get("required", []), b.get("required", [])
            pa, pb = a.get("properties", {}), b.get("properties", {})
            if isinstance(ra, list) and isinstance(rb, list) and isinstance(pa, dict) and isinstance(pb, dict):
                # A name one side requires: its value must satisfy both sides' property schemas.
                for p in dict.fromkeys(ra + rb):
                    if p in pa and p in pb and self._disjoint_pair(pa[p], pb[p], depth + 1):
                        return True
            return not self._ranges_meet(a, b, "minProperties", "maxProperties")
        if t == "array":
            return not self._ranges_meet(a, b, "minItems", "maxItems")
        return False

    @staticmethod
    def _ranges_meet(a: dict, b: dict, lo_kw: str, hi_kw: str) -> bool:
        def num(x, kw, default):
            v = x.get(kw, default)
            return v if isinstance(v, (int, float)) and not isinstance(v, bool) else default

        lo = max(num(a, lo_kw, 0), num(b, lo_kw, 0))
        hi = min(num(a, hi_kw, float("inf")), num(b, hi_kw, float("inf")))
        return lo <= hi

    def _forbids(self, y: dict, name: str) -> bool:
        """An object valid under ``y`` cannot have the member ``name``."""
        if name in (y.get(ABSENT) or []):
            return True
        props = y.get("properties", {})
        if not isinstance(props, dict):
            return False
        if name in props:
            return props[name] is False
        for regex in (y.get("patternProperties") or {}):
            try:
                if matches(key_dfa(regex), name):
                    return False
            except RegexUnsupported:
                return False
        return y.get("additionalProperties", True) is False


def _text(x) -> str:
    try:
        return json.dumps(strip_annotations(x) if isinstance(x, dict) else x, sort_keys=True)
    except (TypeError, ValueError):
        return repr(x)


def _bounds(x: dict, draft: int):
    """((lower, exclusive), (upper, exclusive)) of a number schema."""
    inf = float("inf")
    lo, hi = (-inf, False), (inf, False)

    def num(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if num(x.get("minimum")):
        lo = (x["minimum"], draft < 6 and x.get("exclusiveMinimum") is True)
    if num(x.get("maximum")):
        hi = (x["maximum"], draft < 6 and x.get("exclusiveMaximum") is True)
    if draft >= 6:
        if num(x.get("exclusiveMinimum")) and x["exclusiveMinimum"] >= lo[0]:
            lo = (x["exclusiveMinimum"], True)
        if num(x.get("exclusiveMaximum")) and x["exclusiveMaximum"] <= hi[0]:
            hi = (x["exclusiveMaximum"], True)
    return lo, hi


@functools.lru_cache(maxsize=1024)
def _patterns_may_meet(pa: str, pb: str) -> bool:
    """Whether some string matches both patterns (True when the automata are unsupported or too big to tell). Cached:
    a ``oneOf`` over many branches asks the same pairs again (seconds for big schemas without the cache)."""
    try:
        _, accept = product([regex_dfa(pa), regex_dfa(pb)])
    except RegexUnsupported:
        return True
    return any(all(acc) for acc in accept)
