"""Arrays: positional items, rest items, length bounds, ``contains`` with counts, and ``uniqueItems`` over small
finite item domains (the arrays listed)."""

from __future__ import annotations

from xg2jax.json_schema._common import (
    CONTAINS_ALL,
    SchemaError,
    Unsatisfiable,
    UnsupportedSchemaError,
    json_equal,
)
from xg2jax.json_schema._ebnf import choice, literal, seq
from xg2jax.json_schema._limits import MAX_CONTAINS_ALL, MAX_CONTAINS_RULES, MAX_UNIQUE_ARRAYS


class ArraysMixin:
    def _type_array(self, schema, ptr):
        lo = self._int_keyword(schema, "minItems", ptr) or 0
        hi = self._int_keyword(schema, "maxItems", ptr)
        if hi is not None and hi < lo:
            raise Unsatisfiable(f"{ptr}/maxItems", f"minItems is greater than maxItems: {lo} > {hi}")
        if self._draft >= 2020:
            prefix = schema.get("prefixItems", [])
            rest = schema.get("items", True)
        elif isinstance(schema.get("items"), list):
            prefix, rest = schema["items"], schema.get("additionalItems", True)
        else:
            prefix, rest = [], schema.get("items", True)
        if not isinstance(prefix, list):
            raise SchemaError(f"{ptr}/prefixItems", "'prefixItems' must be an array of schemas")
        if schema.get("uniqueItems") is True:
            unique = None if "contains" in schema or CONTAINS_ALL in schema else \
                self._unique_arrays(prefix, rest, lo, hi, ptr)
            if unique is not None:
                return unique
            if self.strict:
                raise UnsupportedSchemaError(f"{ptr}/uniqueItems", "keyword 'uniqueItems' cannot be enforced by a "
                                             "grammar (requiring distinct array items is not context-free); pass "
                                             "strict_mode=False to ignore it")
        if CONTAINS_ALL in schema:
            return self._array_contains_all(schema[CONTAINS_ALL], prefix, rest, lo, hi, ptr)
        if "contains" in schema:
            return self._array_contains(schema, prefix, rest, lo, hi, ptr)
        items: list[str] = []
        rest_expr: str | None = None
        for i, sub in enumerate(prefix):
            try:
                items.append(self.visit(sub, f"{ptr}/prefixItems/{i}"))
            except Unsatisfiable:
                break  # no array can reach position i, so nothing after it either
        else:
            try:
                rest_expr = self.visit(rest, f"{ptr}/items")
            except Unsatisfiable:
                rest_expr = None
        p = len(items)
        if rest_expr is None and p < lo:
            raise Unsatisfiable(f"{ptr}/minItems", f"minItems is greater than the number of prefixItems, but additional items are not allowed: {lo} > {p}")
        sep = self.item_sep

        def tail(k: int) -> str:
            """Elements k.. given that element k-1 exists; the array may end here iff k >= lo."""
            if hi is not None and k >= hi:
                return ""
            if k >= p:
                if rest_expr is None:
                    return ""
                need = max(0, lo - k)
                if hi is None:
                    bound = "*" if need == 0 else "+" if need == 1 else f"{{{need},}}"
                else:
                    bound = f"{{{need},{hi - k}}}"
                return f"( {sep} {rest_expr} ){bound}"
            inner = seq(sep, items[k], tail(k + 1))
            return inner if k < lo else f"( {inner} )?"

        first = items[0] if p else rest_expr
        if first is None or hi == 0:
            if lo > 0:
                raise Unsatisfiable(f"{ptr}/minItems", f"no item is possible, 'minItems' is {lo}")
            return seq(literal("["), self.ws, literal("]"))
        body = seq(first, tail(1))
        body = body if lo > 0 else f"( {body} )?"
        return self.rules.add("array", seq(literal("["), self.ws, body, self.ws, literal("]")))

    def _array_contains(self, schema, prefix, rest, lo, hi, ptr):
        """Arrays whose number of items matching ``contains`` is within [minContains, maxContains] (default
        [1, inf)), with positional items and length bounds. Each item matches its positional schema and either C or
        its complement, so one rule per (position so far, count so far), both capped where they stop mattering,
        keeps the count and the length exact."""
        if self._draft < 2019 and any(k in schema for k in ("minContains", "maxContains")):
            schema = {k: v for k, v in schema.items() if k not in ("minContains", "maxContains")}  # not keywords yet
        c_lo = self._int_keyword(schema, "minContains", ptr)
        c_lo = 1 if c_lo is None else c_lo
        c_hi = self._int_keyword(schema, "maxContains", ptr)
        if c_hi is not None and c_hi < c_lo:
            raise Unsatisfiable(f"{ptr}/maxContains", f"'minContains' {c_lo} > 'maxContains' {c_hi}")
        sep = self.item_sep
        if c_lo == 0 and c_hi is None:
            return self._type_array({k: v for k, v in schema.items() if k != "contains"}, ptr)
        if not prefix and rest in (True, {}) and c_lo == 1 and c_hi is None and hi is None and lo <= 1:
            c = self.visit(schema["contains"], f"{ptr}/contains")
            body = seq(f"( j_value {sep} )*", c, f"( {sep} j_value )*")
            return self.rules.add("array_contains", seq(literal("["), self.ws, body, self.ws, literal("]")))
        cap = c_hi if c_hi is not None else c_lo
        n = len(prefix)
        length_cap = max(n, lo, 1) if hi is None else hi  # position 1+ also means "a separator comes first"
        if (cap + 1) * (length_cap + 1) > MAX_CONTAINS_RULES:
            raise UnsupportedSchemaError(f"{ptr}/contains", f"counting 'contains' needs more than "
                                         f"{MAX_CONTAINS_RULES} grammar rules (the limit is MAX_CONTAINS_RULES)")
        # Without maxContains, "at least c_lo matches" needs no complement: an item may match C and still be
        # counted as another item (some choice of counted items reaches c_lo iff enough items match).
        negated = self._negate(schema["contains"], f"{ptr}/contains") if c_hi is not None else [True]

        def pair(item, where):
            """(matching C, not matching C) expressions for an item under ``item``, None where impossible."""
            out = []
            for extra in ([schema["contains"]], [{"anyOf": negated}] if negated else None):
                if extra is None:
                    out.append(None)
                    continue
                try:
                    out.append(self.visit({"allOf": [item] + extra} if item not in (True, {}) else extra[0], where))
                except Unsatisfiable:
                    out.append(None)
            return out

        kinds = [pair(p, f"{ptr}/prefixItems/{i}") for i, p in enumerate(prefix)] + [pair(rest, f"{ptr}/items")]
        names: dict[tuple[int, int], str] = {}

        def state(pos: int, count: int) -> str:
            """Items from position ``pos`` on, ``count`` matches so far (both capped)."""
            key = (pos, count)
            if key in names:
                return names[key]
            name = names[key] = self.rules.reserve(f"contains_{pos}_{count}")
            options = ['""'] if pos >= lo and count >= c_lo else []
            if hi is None or pos < hi:
                match, other = kinds[min(pos, n)]
                lead = sep if pos > 0 else ""
                nxt = pos + 1 if hi is not None or pos < length_cap else pos
                if match is not None and (c_hi is None or count < c_hi):
                    options.append(seq(lead, match, state(nxt, min(count + 1, cap))))
                if other is not None:
                    options.append(seq(lead, other, state(nxt, count)))
            self.rules.define(name, " | ".join(options) if options else "j_never")
            return name

        body = state(0, 0)
        return self.rules.add("array_contains", seq(literal("["), self.ws, body, self.ws, literal("]")))

    def _array_contains_all(self, wanted: list, prefix, rest, lo, hi, ptr):
        """Arrays in which each schema of ``wanted`` matches some item (``allOf`` of several ``contains``): one rule
        per (position, set of schemas matched so far); an item may be counted for any set of schemas it matches."""
        k = len(wanted)
        if k > MAX_CONTAINS_ALL:
            raise UnsupportedSchemaError(f"{ptr}/contains", f"allOf with more than {MAX_CONTAINS_ALL} different "
                                         "'contains' is not supported (the limit is MAX_CONTAINS_ALL)")
        n = len(prefix)
        length_cap = max(n, lo, 1) if hi is None else hi
        if (1 << k) * (length_cap + 1) > MAX_CONTAINS_RULES:
            raise UnsupportedSchemaError(f"{ptr}/contains", f"'contains' needs more than {MAX_CONTAINS_RULES} "
                                         "grammar rules (the limit is MAX_CONTAINS_RULES)")
        cache: dict = {}

        def item(pos: int, subset: int):
            key = (min(pos, n), subset)
            if key not in cache:
                base = prefix[pos] if pos < n else rest
                parts = ([base] if base not in (True, {}) else []) + [wanted[j] for j in range(k) if subset >> j & 1]
                try:
                    cache[key] = self.visit({"allOf": parts} if parts else True, f"{ptr}/contains")
                except Unsatisfiable:
                    cache[key] = None
            return cache[key]

        names: dict = {}
        full = (1 << k) - 1

        def state(pos: int, done: int) -> str:
            if (pos, done) in names:
                return names[(pos, done)]
            name = names[(pos, done)] = self.rules.reserve(f"contains_all_{pos}_{done}")
            options = ['""'] if pos >= lo and done == full else []
            if hi is None or pos < hi:
                lead = self.item_sep if pos > 0 else ""
                nxt = pos + 1 if hi is not None or pos < length_cap else pos
                for subset in range(1 << k):
                    if subset and subset & done == subset:
                        continue  # counting an item again for schemas already matched changes nothing
                    expr = item(pos, subset)
                    if expr is not None:
                        options.append(seq(lead, expr, state(nxt, done | subset)))
            self.rules.define(name, " | ".join(options) if options else "j_never")
            return name

        body = state(0, 0)
        return self.rules.add("array_contains", seq(literal("["), self.ws, body, self.ws, literal("]")))

    def _unique_arrays(self, prefix, rest, lo, hi, ptr):
        """``uniqueItems`` when every array is short and every item comes from a small finite set of values
        (booleans, null, const, enum): the valid arrays are listed. None when that does not hold."""
        n = len(prefix)
        rest_values = self._finite_values(rest, f"{ptr}/items")
        if hi is None and rest_values != []:
            return None
        # Past the prefix only the rest's values remain, each usable once (a huge maxItems lists no more);
        # without finite rest values the walk below stops at position n.
        longest = n if hi is None else min(hi, n + (len(rest_values) if rest_values is not None else 1))
        domains = []
        for i in range(longest):
            values = self._finite_values(prefix[i], f"{ptr}/prefixItems/{i}") if i < n else rest_values
            if values is None:
                return None
            domains.append(values)
        found: list[list] = []

        def extend(array: list) -> None:
            if len(found) > MAX_UNIQUE_ARRAYS:
                return
            if len(array) >= lo:
                found.append(list(array))
            if len(array) < longest:
                for v in domains[len(array)]:
                    if not any(json_equal(v, w) for w in array):
                        extend(array + [v])

        extend([])
        if len(found) > MAX_UNIQUE_ARRAYS:
            return None
        if not found:
            raise Unsatisfiable(f"{ptr}/uniqueItems", "no array of distinct items fits the item schemas")
        return choice([self._value_expr(a) for a in found])

    def _finite_values(self, schema, ptr):
        """The values ``schema`` accepts when they are few and easy to list, else None."""
        schema = self._deref(schema, ptr)
        if schema is False:
            return []
        if not isinstance(schema, dict):
            return None
        if "const" in schema:
            candidates = [schema["const"]]
        elif isinstance(schema.get("enum"), list):
            candidates = schema["enum"]
        elif "type" in schema and set([schema["type"]] if isinstance(schema["type"], str) else schema["type"]) \
                <= {"boolean", "null"}:
            candidates = [True, False, None]
        else:
            return None
        try:
            return [v for v in candidates if self._validate(v, schema, ptr)]
        except UnsupportedSchemaError:
            return None
