"""Objects: properties in schema order or in any order (one rule per set of used properties), required,
additionalProperties through a key-exclusion trie, min/maxProperties and dependentRequired."""

from __future__ import annotations

import json

from xg2jax.json_schema._common import (
    ABSENT,
    SchemaError,
    Unsatisfiable,
    UnsupportedSchemaError,
    escape_pointer,
)
from xg2jax.json_schema._ebnf import json_literal, literal, seq


class ObjectsMixin:
    def _type_object(self, schema, ptr):
        props = schema.get("properties", {})
        if not isinstance(props, dict):
            raise SchemaError(f"{ptr}/properties", "'properties' must be an object")
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise SchemaError(f"{ptr}/required", "'required' must be an array of strings")
        dependent = schema.get("dependentRequired", {})
        if not isinstance(dependent, dict) or not all(isinstance(v, list) for v in dependent.values()):
            raise SchemaError(f"{ptr}/dependentRequired", "'dependentRequired' must map names to arrays of names")
        lo = self._int_keyword(schema, "minProperties", ptr) or 0
        hi = self._int_keyword(schema, "maxProperties", ptr)
        if hi is not None and hi < lo:
            raise Unsatisfiable(f"{ptr}/maxProperties", f"'minProperties' {lo} > 'maxProperties' {hi}")
        counted = bool(dependent) or lo > 0 or hi is not None
        additional = schema.get("additionalProperties", True)
        # Every name the object keywords mention is a declared member; undeclared ones take additionalProperties.
        absent = set(schema.get(ABSENT, []))
        names = list(dict.fromkeys(list(props) + list(required) + list(dependent) +
                                   [n for deps in dependent.values() for n in deps] + sorted(absent)))
        patterns = self._pattern_dfas(schema, ptr) if "patternProperties" in schema else []
        filters = self._name_filters(schema, ptr)
        keyed = bool(patterns) or filters is not None
        entries = []  # (name, "key": value expression, required)
        for name in names:
            sub = False if name in absent else props.get(name, additional)
            if keyed and name not in absent:
                sub = self._declared_value(name, props, additional, patterns, filters)
            try:
                value = self.visit(sub, f"{ptr}/properties/{escape_pointer(name)}" if name in props
                                   else f"{ptr}/additionalProperties")
            except Unsatisfiable:
                if name in required:
                    raise
                continue
            entries.append((name, seq(json_literal(name), self.key_sep, value), name in required))
        present = {e[0] for e in entries}
        # A property whose dependencies can never be present cannot be present either.
        entries = [e for e in entries if all(d in present for d in dependent.get(e[0], []))]
        extra = None
        if keyed:
            extra = self._pattern_members(names, additional, patterns, filters, ptr)
        elif additional is not False:
            try:
                value = self.visit(additional, f"{ptr}/additionalProperties")
                extra = seq(self._key_except(names), self.key_sep, value)
            except Unsatisfiable:
                extra = None
        if counted:
            index = {e[0]: i for i, e in enumerate(entries)}
            deps = [sum(1 << index[d] for d in dependent.get(e[0], [])) for e in entries]
            if not self.any_order:
                kw = "dependentRequired" if dependent else "minProperties" if lo else "maxProperties"
                return self._ordered_counted_object([(e[1], e[2]) for e in entries], extra, deps, lo, hi,
                                                    f"{ptr}/{kw}")
            return self._any_order_object([(e[1], e[2]) for e in entries], extra, deps=deps, min_count=lo,
                                          max_count=hi)
        return self._object_expr([(e[1], e[2]) for e in entries], extra)

    def _visit_or_none(self, schema, ptr):
        try:
            return self.visit(schema, f"{ptr}/additionalProperties")
        except Unsatisfiable:
            return None

    def _object_expr(self, entries: list[tuple[str, bool]], extra: str | None) -> str:
        """Properties in schema order (optional ones may be skipped), then any number of extra properties, with
        separators only between present members: rule first_k / rest_k per position k. With ``any_order`` see
        :meth:`_any_order_object`."""
        if self.any_order and (len(entries) > 1 or (entries and extra)):
            return self._any_order_object(entries, extra)
        sep = self.item_sep
        n = len(entries)
        extras_rest = f"( {sep} {extra} )*" if extra else ""
        first_next = f"( {extra} {extras_rest} )?" if extra else ""
        rest_next = extras_rest
        for k in range(n - 1, -1, -1):
            member, req = entries[k]
            first_k = [seq(member, rest_next)]
            rest_k = [seq(sep, member, rest_next)]
            if not req:
                first_k.append(first_next or '""')
                rest_k.append(rest_next or '""')
            first_next = self.rules.add(f"obj_first_{k}", " | ".join(first_k))
            rest_next = self.rules.add(f"obj_rest_{k}", " | ".join(rest_k))
        body = first_next or '""'
        return self.rules.add("object", seq(literal("{"), self.ws, body, self.ws, literal("}")))

    MAX_ORDERED_STATES = 4096

    def _ordered_counted_object(self, entries: list[tuple[str, bool]], extra: str | None, deps: list[int],
                                min_count: int, max_count: int | None, ptr: str) -> str:
        """Declared properties in schema order, then extra properties, with minProperties / maxProperties /
        dependentRequired enforced exactly. Which optional properties appear is a finite-state choice: walking the
        declared properties in order, the state is (members so far, capped where more no longer matters; the later
        properties some present one requires; the earlier present properties that a later one depends on). One rule
        per reachable state (at most MAX_ORDERED_STATES), then one per member count among the extra properties."""
        n = len(entries)
        sep = self.item_sep
        # cap >= 1 so that count > 0 tells whether a separator is due.
        cap = max_count if max_count is not None else max(min_count, 1)
        # targets_after[k]: earlier-or-equal positions that some source at a position >= k depends on.
        targets_after = [0] * (n + 1)
        for k in range(n - 1, -1, -1):
            targets_after[k] = targets_after[k + 1] | deps[k]
        memo: dict[tuple, str] = {}

        def tail(count: int) -> str | None:
            """After the declared properties: extra properties, ``count`` members so far (None: no way to close)."""
            key = ("tail", count)
            if key in memo:
                return memo[key]
            options = ['""'] if count >= min_count else []
            if extra and (max_count is None or count < max_count):
                nxt = min(count + 1, cap)
                if nxt == count:  # unbounded: any number of further extra properties
                    options.append(f"( {sep} {extra} )+")
                elif (after := tail(nxt)) is not None:
                    options.append(seq(sep if count else "", extra, after))
            memo[key] = self.rules.add(f"obj_tail_{count}", " | ".join(options)) if options else None
            return memo[key]

        def at(k: int, count: int, need: int, have: int) -> str | None:
            """Deciding property k with ``count`` members so far, ``need`` = later properties that must appear,
            ``have`` = present earlier properties some property at position >= k depends on. None: no way to
            close the object from here."""
            if k == n:
                return tail(count)
            key = (k, count, need, have)
            if key in memo:
                return memo[key]
            if len(memo) >= self.MAX_ORDERED_STATES:
                raise UnsupportedSchemaError(
                    ptr, f"with properties in schema order, these property-count / dependentRequired constraints "
                    f"need more than {self.MAX_ORDERED_STATES} grammar rules (pass any_order=True or simplify)")
            member, req = entries[k]
            bit = 1 << k
            keep = targets_after[k + 1]
            options = []
            if (max_count is None or count < max_count) and not (deps[k] & (bit - 1) & ~have):
                later = deps[k] & ~((bit << 1) - 1)
                after = at(k + 1, min(count + 1, cap), (need | later) & ~bit, (have | bit) & keep)
                if after is not None:
                    options.append(seq(sep if count else "", member, after))
            if not req and not need & bit:
                after = at(k + 1, count, need, have & keep)
                if after is not None:
                    options.append(after)
            memo[key] = self.rules.add(f"obj_ord_{k}", " | ".join(options)) if options else None
            return memo[key]

        body = at(0, 0, 0, 0)
        if body is None:
            raise Unsatisfiable(ptr, "no object satisfies the property keywords")
        return self.rules.add("object", seq(literal("{"), self.ws, body, self.ws, literal("}")))

    MAX_ANY_ORDER_PROPERTIES = 10

    def _any_order_object(self, entries: list[tuple[str, bool]], extra: str | None, *, deps: list[int] | None = None,
                          min_count: int = 0, max_count: int | None = None) -> str:
        """Members in any order, each declared property at most once, every required one present, extra properties
        anywhere. One rule per reachable state (set of used properties, number of members so far up to the point
        where it no longer matters), so that minProperties / maxProperties / dependentRequired are exact: the object
        may close once every required and dependent property is present and the count is within bounds."""
        n = len(entries)
        if n > self.MAX_ANY_ORDER_PROPERTIES:
            raise UnsupportedSchemaError("", f"any_order=True with {n} declared properties (the limit is "
                                         f"{self.MAX_ANY_ORDER_PROPERTIES}: one grammar rule per subset)")
        deps = deps or [0] * n
        sep = self.item_sep
        required = sum(1 << i for i, (_, req) in enumerate(entries) if req)
        cap = max_count if max_count is not None else min_count  # counts above cap behave alike
        names: dict[tuple[int, int], str] = {}
        if (1 << n) * (cap + 1) > 1 << 14:
            raise UnsupportedSchemaError("", "the object's property bounds need too many grammar rules")

        def closable(used: int, count: int) -> bool:
            return (used & required == required and count >= min_count
                    and all(used & deps[i] == deps[i] for i in range(n) if used >> i & 1))

        def more(used: int, count: int) -> str:
            """After at least one member; ``count`` members so far (capped)."""
            key = (used, count)
            if key in names:
                return names[key]
            name = names[key] = self.rules.reserve(f"obj_any_{used}_{count}")
            room = max_count is None or count < max_count
            nxt = min(count + 1, cap) if max_count is None else count + 1
            options = ['""'] if closable(used, count) else []
            if room:
                options += [seq(sep, entries[i][0], more(used | 1 << i, nxt)) for i in range(n) if not used >> i & 1]
                if extra:
                    options.append(seq(sep, extra, more(used, nxt)))
            self.rules.define(name, " | ".join(options) if options else "j_never")
            return name

        first_count = min(1, cap) if max_count is None else 1
        first = []
        if max_count is None or max_count > 0:
            first = [seq(entries[i][0], more(1 << i, first_count)) for i in range(n)]
            if extra:
                first.append(seq(extra, more(0, first_count)))
        if closable(0, 0):
            first.append('""')
        if not first:
            raise Unsatisfiable("", "no object satisfies the property keywords")
        return self.rules.add("object", seq(literal("{"), self.ws, "( " + " | ".join(first) + " )", self.ws,
                                            literal("}")))

    def _key_except(self, names: list[str]) -> str:
        """A JSON string key whose spelling differs from the JSON spelling of every name in ``names``. Spellings are
        compared unit by unit (a unit is a plain character or an escape sequence). Approximation (documented): a key
        that spells a listed name with different escapes (``"\\u0061"`` for ``"a"``) counts as another key."""
        if not names:
            return "j_string"
        trie: dict = {}
        for name in names:
            node = trie
            for unit in _json_units(name):
                node = node.setdefault(unit, {})
            node[None] = True

        def rule_for(node: dict, depth: int) -> str:
            units = sorted(k for k in node if k is not None)
            plain = "".join(_class_char(u) for u in units if not u.startswith("\\"))
            short = "".join(_class_char(u[1]) for u in units if u.startswith("\\") and len(u) == 2)
            long_escape = any(u.startswith("\\u") for u in units)
            other = [f'[^"\\\\\\x00-\\x1f{plain}]']
            simple = "".join(c for c in '"\\/bfnrt' if c not in short)
            escapes = [f'[{_class_chars(simple)}]'] if simple else []
            if not long_escape:
                escapes.append('"u" [0-9a-fA-F]{4}')
            if escapes:
                other.append('"\\\\" ( ' + " | ".join(escapes) + " )")
            options = ['"\\""'] if None not in node else []
            if units:
                options.append(f'( {" | ".join(other)} ) j_char* "\\""')
                options += [seq(literal(u), rule_for(node[u], depth + 1)) for u in units]
            else:
                options.append('j_char+ "\\""')
            return self.rules.add(f"key_except_{depth}", " | ".join(options))

        return seq('"\\""', rule_for(trie, 0))


def _json_units(name: str) -> list[str]:
    """The JSON spelling of ``name`` (as json.dumps writes it, non-ASCII kept) split into units."""
    spelled = json.dumps(name, ensure_ascii=False)[1:-1]
    units, i = [], 0
    while i < len(spelled):
        if spelled[i] == "\\":
            n = 6 if spelled[i + 1] == "u" else 2
            units.append(spelled[i:i + n])
            i += n
        else:
            units.append(spelled[i])
            i += 1
    return units


def _class_chars(chars: str) -> str:
    return "".join(_class_char(c) for c in chars)


def _class_char(c: str) -> str:
    """``c`` escaped for use inside an EBNF character class."""
    if c in "]\\-^":
        return "\\" + c
    if ord(c) < 0x20:
        return f"\\x{ord(c):02x}"
    return c
