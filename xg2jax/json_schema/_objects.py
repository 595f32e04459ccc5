"""Objects: properties in schema order or in any order (one rule per set of used properties), required,
additionalProperties through a key-exclusion trie, min/maxProperties and dependentRequired."""

from __future__ import annotations

import functools
import json

from xg2jax.json_schema._common import (
    ABSENT,
    SOME_MEMBER,
    SchemaError,
    Unsatisfiable,
    UnsupportedSchemaError,
    escape_pointer,
)
from xg2jax.json_schema._ebnf import EMPTY, KEY_TAIL_RULES, json_literal, literal, seq
from xg2jax.json_schema._automata import matches
from xg2jax.json_schema._limits import (
    MAX_ANY_ORDER_PROPERTIES,
    MAX_ANY_ORDER_STATES,
    MAX_MEMBER_REQUIREMENTS,
    MAX_PROPERTY_COUNT_STATES,
)


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
        required_set = set(required)
        for name in names:
            sub = False if name in absent else props.get(name, additional)
            if keyed and name not in absent:
                sub = self._declared_value(name, props, additional, patterns, filters)
            try:
                value = self.visit(sub, f"{ptr}/properties/{escape_pointer(name)}" if name in props
                                   else f"{ptr}/additionalProperties")
            except Unsatisfiable:
                if name in required_set:
                    raise
                continue
            entries.append((name, seq(json_literal(name), self.key_sep, value), name in required_set))
        if dependent:
            # A property whose dependencies can never be present cannot be present either (to a fixed point:
            # dropping one can strand another that depends on it).
            while True:
                present = {e[0] for e in entries}
                kept = [e for e in entries if all(d in present for d in dependent.get(e[0], []))]
                if len(kept) == len(entries):
                    break
                entries = kept
        extra = None
        if keyed:
            extra = self._pattern_members(names, additional, patterns, filters, ptr)
        elif additional is not False:
            try:
                value = self.visit(additional, f"{ptr}/additionalProperties")
                extra = seq(self._key_except(names), self.key_sep, value)
            except Unsatisfiable:
                extra = None
        exists = schema.get(SOME_MEMBER, [])
        if counted or exists:
            alts = [[(0, e[1])] for e in entries]
            extras = [(0, extra)] if extra else []
            full = 0
            if exists:
                full = self._member_requirements(schema, exists, names, entries, alts, extras, additional, patterns,
                                                 filters, props, ptr)
            index = {e[0]: i for i, e in enumerate(entries)}
            deps = [sum(1 << index[d] for d in dependent.get(e[0], [])) for e in entries]
            if not self.any_order:
                kw = ("dependentRequired" if dependent else "minProperties" if lo else "maxProperties" if counted
                      else "not")
                return self._ordered_counted_object([(a, e[2]) for a, e in zip(alts, entries)], extras, deps, lo,
                                                    hi, f"{ptr}/{kw}", full=full)
            return self._any_order_object([(a, e[2]) for a, e in zip(alts, entries)], extras, deps=deps,
                                          min_count=lo, max_count=hi, full=full, ptr=ptr)
        return self._object_expr([(e[1], e[2]) for e in entries], extra, ptr)

    def _member_requirements(self, schema, exists, names, entries, alts, extras, additional, patterns, filters,
                             props, ptr) -> int:
        """SOME_MEMBER: requirement e asks for a member whose key matches pattern P_e and whose value satisfies S_e.
        Adds to ``alts`` (per declared property) and ``extras`` the members that meet a set E of requirements
        (key matching every P_e, value also satisfying every S_e), tagged with E's mask; returns the full mask."""
        where = f"{ptr}/not"
        if not isinstance(exists, list) or len(exists) > MAX_MEMBER_REQUIREMENTS:
            raise UnsupportedSchemaError(where, f"more than {MAX_MEMBER_REQUIREMENTS} (MAX_MEMBER_REQUIREMENTS) "
                                         "'some member matches' "
                                         "requirements (from complements of patternProperties / "
                                         "additionalProperties) on one object")
        dfas = [self._regex_dfa(p, f"{where}/patternProperties") for p, _ in exists]
        k = len(exists)
        subsets = [m for m in range(1, 1 << k)]
        for i, (name, _, _) in enumerate(entries):
            matching = sum(1 << e for e in range(k) if matches(dfas[e], name))
            base = props.get(name, additional)
            if patterns or filters is not None:
                base = self._declared_value(name, props, additional, patterns, filters)
            for m in subsets:
                if m & ~matching:
                    continue
                value_schema = {"allOf": [base] + [exists[e][1] for e in range(k) if m >> e & 1]}
                try:
                    value = self.visit(value_schema, f"{where}/properties/{escape_pointer(name)}")
                except Unsatisfiable:
                    continue
                alts[i].append((m, seq(json_literal(name), self.key_sep, value)))
        for m in subsets:
            chosen = [e for e in range(k) if m >> e & 1]
            member = self._pattern_members(names, additional, patterns, (filters or []) + [dfas[e] for e in chosen],
                                           ptr, also=[exists[e][1] for e in chosen])
            if member is not None:
                extras.append((m, member))
        return (1 << k) - 1

    def _visit_or_none(self, schema, ptr):
        try:
            return self.visit(schema, f"{ptr}/additionalProperties")
        except Unsatisfiable:
            return None

    def _object_expr(self, entries: list[tuple[str, bool]], extra: str | None, ptr: str = "") -> str:
        """Properties in schema order (optional ones may be skipped), then any number of extra properties, with
        separators only between present members: rule first_k / rest_k per position k. With ``any_order`` see
        :meth:`_any_order_object`."""
        if self.any_order and (len(entries) > 1 or (entries and extra)):
            return self._any_order_object([([(0, m)], req) for m, req in entries], [(0, extra)] if extra else [],
                                          ptr=ptr)
        sep = self.item_sep
        extras_rest = f"( {sep} {extra} )*" if extra else ""
        # After position k: `first` (no member before) and `rest` (some member before) continuations. A run of
        # required members offers no choice, so it stays a list (nearest last) until an optional member (or the
        # start) needs it as text: joining it once keeps a long run linear instead of quadratic.
        first, rest, run = (f"( {extra} {extras_rest} )?" if extra else ""), extras_rest, []

        def rest_text() -> str:
            return " ".join(filter(None, [p for m in reversed(run) for p in (sep, m)] + [rest]))

        def first_text() -> str:
            if not run:
                return first
            return " ".join(filter(None, [run[-1]] + [p for m in reversed(run[:-1]) for p in (sep, m)] + [rest]))

        for k in range(len(entries) - 1, -1, -1):
            member, req = entries[k]
            if req:
                run.append(member)
                continue
            rest_next, first_next = rest_text(), first_text()
            run = []
            first = self.rules.add(f"obj_first_{k}", f"{seq(member, rest_next)} | {first_next or EMPTY}")
            # (the first position's rest is never used: nothing comes before it)
            rest = self.rules.add(f"obj_rest_{k}", f"{seq(sep, member, rest_next)} | {rest_next or EMPTY}") if k else ""
        body = first_text() or '""'
        return self.rules.add("object", seq(literal("{"), self.ws, body, self.ws, literal("}")))

    def _ordered_counted_object(self, entries: list, extras: list, deps: list[int], min_count: int,
                                max_count: int | None, ptr: str, full: int = 0) -> str:
        """Declared properties in schema order, then extra properties, with minProperties / maxProperties /
        dependentRequired (and "some member matches" requirements, see SOME_MEMBER) enforced exactly. Which
        optional properties appear is a finite-state choice: walking the declared properties in order, the state is
        (members so far, capped where more no longer matters; the later properties some present one requires; the
        earlier present properties that a later one depends on; the member requirements met so far). One rule per
        reachable state that can still close the object (at most MAX_PROPERTY_COUNT_STATES), then the extra
        properties: a counted repetition, or with member requirements one rule per (member count, requirements
        met).

        ``entries``: (alternatives, required) per declared property, an alternative being (requirements it meets,
        member expression); ``extras``: (requirements met, member expression) for undeclared keys; ``full``: the
        mask of all member requirements."""
        n = len(entries)
        sep = self.item_sep
        # cap >= 1 so that count > 0 tells whether a separator is due.
        cap = max_count if max_count is not None else max(min_count, 1)
        # targets_after[k]: earlier-or-equal positions that some source at a position >= k depends on.
        targets_after = [0] * (n + 1)
        for k in range(n - 1, -1, -1):
            targets_after[k] = targets_after[k + 1] | deps[k]
        if n >= MAX_PROPERTY_COUNT_STATES:  # at least one rule per declared property; checked before recursing
            raise UnsupportedSchemaError(ptr, f"with properties in schema order, counting {n} declared properties "
                                         f"needs more than {MAX_PROPERTY_COUNT_STATES} grammar rules (the limit is "
                                         "MAX_PROPERTY_COUNT_STATES; pass any_order=True or simplify)")
        memo: dict[tuple, str | None] = {}
        tail = self._extras_tail(extras, min_count, max_count, cap, full, ptr)

        def at(k: int, count: int, need: int, have: int, found: int) -> str | None:
            """Deciding property k with ``count`` members so far, ``need`` = later properties that must appear,
            ``have`` = present earlier properties some property at position >= k depends on, ``found`` = member
            requirements met. None: no way to close the object from here."""
            if k == n:
                return tail(count, found)
            key = (k, count, need, have, found)
            if key in memo:
                return memo[key]
            if len(memo) >= MAX_PROPERTY_COUNT_STATES:
                raise UnsupportedSchemaError(
                    ptr, f"with properties in schema order, these property-count / dependentRequired constraints "
                    f"need more than {MAX_PROPERTY_COUNT_STATES} grammar rules (the limit is "
                    "MAX_PROPERTY_COUNT_STATES; pass any_order=True or simplify)")
            alts, req = entries[k]
            bit = 1 << k
            keep = targets_after[k + 1]
            options = []
            if (max_count is None or count < max_count) and not (deps[k] & (bit - 1) & ~have):
                later = deps[k] & ~((bit << 1) - 1)
                for mask, member in alts:
                    after = at(k + 1, min(count + 1, cap), (need | later) & ~bit, (have | bit) & keep, found | mask)
                    if after is not None:
                        options.append(seq(sep if count else "", member, after))
            if not req and not need & bit:
                after = at(k + 1, count, need, have & keep, found)
                if after is not None:
                    options.append(after)
            memo[key] = self.rules.add(f"obj_ord_{k}", " | ".join(options)) if options else None
            return memo[key]

        body = at(0, 0, 0, 0, 0)
        if body is None:
            raise Unsatisfiable(ptr, "no object satisfies the property keywords")
        return self.rules.add("object", seq(literal("{"), self.ws, body, self.ws, literal("}")))

    def _extras_tail(self, extras: list, min_count: int, max_count: int | None, cap: int, full: int, ptr: str):
        """tail(count, found): rule for the rest of an object made of extra members only (None: cannot close).
        Without member requirements the count is the engine's repetition bound, one rule per count the declared
        properties leave; with them, one rule per (count, requirements met)."""
        if full == 0:
            return self._counted_extras(extras, min_count, max_count)
        if (cap + 1) * (full + 1) > MAX_PROPERTY_COUNT_STATES:
            raise UnsupportedSchemaError(ptr, f"counting properties up to {cap} with member requirements needs more "
                                         f"than {MAX_PROPERTY_COUNT_STATES} grammar rules (the limit is "
                                         "MAX_PROPERTY_COUNT_STATES)")
        sep = self.item_sep
        masks = [m for m, _ in extras]

        def step(count):
            return min(count + 1, cap)

        def room(count):
            return max_count is None or count < max_count

        # Productive states (count, found): can reach count >= min_count with every requirement met. A member
        # leads to a larger count (or the cap) and a superset of requirements, so one pass from the top down
        # sees every successor first (at the cap, a member that meets nothing new leads back to the same state).
        productive = set()
        for c in range(cap, -1, -1):
            for f in range(full, -1, -1):
                if f & ~full:
                    continue
                if (c >= min_count and f == full) or (room(c) and any((step(c), f | m) in productive
                                                                       for m in masks)):
                    productive.add((c, f))
        names: dict = {}

        def tail(count: int, found: int) -> str | None:
            if (count, found) not in productive:
                return None
            if (count, found) in names:
                return names[(count, found)]
            name = names[(count, found)] = self.rules.reserve(f"obj_tail_{count}")
            options = ['""'] if count >= min_count and found == full else []
            if room(count):
                for mask, member in extras:
                    after = tail(step(count), found | mask)
                    if after is not None:
                        options.append(seq(sep if count else "", member, after))
            self.rules.define(name, " | ".join(options))
            return name

        return tail

    def _counted_extras(self, extras: list, min_count: int, max_count: int | None):
        """tail(count, 0) for extra members without requirements: between ``min_count - count`` and ``max_count -
        count`` more members, as an EBNF repetition (the engine counts; nothing is unrolled, so the cost does not
        grow with the bounds)."""
        member = extras[0][1] if len(extras) == 1 else "( " + " | ".join(m for _, m in extras) + " )"
        sep = self.item_sep

        def bounds(least: int, most: int | None) -> str:
            if most is None:
                return "*" if least == 0 else "+" if least == 1 else f"{{{least},}}"
            return "?" if (least, most) == (0, 1) else f"{{{least},{most}}}"

        def tail(count: int, found: int) -> str | None:
            need = max(0, min_count - count)
            most = None if max_count is None else max_count - count
            if need and not extras:
                return None
            if not extras or most == 0:
                return '""'
            if count:
                return self.rules.add("obj_tail", f"( {seq(sep, member)} ){bounds(need, most)}")
            rest = bounds(max(need - 1, 0), None if most is None else most - 1)
            more = "" if most == 1 else f"( {seq(sep, member)} ){rest}"
            body = seq(member, more)
            return self.rules.add("obj_tail", body if need else f"( {body} )?")

        return tail

    def _any_order_object(self, entries: list, extras: list, *, deps: list[int] | None = None,
                          min_count: int = 0, max_count: int | None = None, full: int = 0, ptr: str = "") -> str:
        """Members in any order, each declared property at most once, every required one present, extra properties
        anywhere. One rule per reachable state (set of used properties, number of members so far up to the point
        where it no longer matters, member requirements met) that can still close, so that minProperties /
        maxProperties / dependentRequired / member requirements are exact: the object may close once every
        required and dependent property is present, the count is within bounds and every requirement is met.
        ``entries`` / ``extras`` / ``full`` as in :meth:`_ordered_counted_object`."""
        n = len(entries)
        num_required = sum(1 for _, req in entries if req)
        plain = (full == 0 and min_count <= num_required
                 and (max_count is None or (not extras and max_count >= n)))
        if plain:
            return self._any_order_items(entries, extras, deps or [0] * n)
        if n > MAX_ANY_ORDER_PROPERTIES:
            raise UnsupportedSchemaError(ptr, f"any_order=True with {n} declared properties and minProperties / "
                                         "maxProperties / member requirements (the limit is "
                                         f"MAX_ANY_ORDER_PROPERTIES = {MAX_ANY_ORDER_PROPERTIES}: one grammar rule "
                                         "per subset)")
        deps = deps or [0] * n
        sep = self.item_sep
        required = sum(1 << i for i, (_, req) in enumerate(entries) if req)
        cap = max_count if max_count is not None else min_count  # counts above cap behave alike
        if (1 << n) * (cap + 1) * (full + 1) > MAX_ANY_ORDER_STATES:
            raise UnsupportedSchemaError(ptr, f"the object's property bounds need more than {MAX_ANY_ORDER_STATES} "
                                         "grammar rules (the limit is MAX_ANY_ORDER_STATES)")

        def closable(used: int, count: int, found: int) -> bool:
            return (used & required == required and count >= min_count and found == full
                    and all(used & deps[i] == deps[i] for i in range(n) if used >> i & 1))

        def successors(used: int, count: int, found: int):
            """(member expression, next state) pairs; count > 0 here (after the first member)."""
            if max_count is not None and count >= max_count:
                return
            nxt = min(count + 1, cap) if max_count is None else count + 1
            for i in range(n):
                if not used >> i & 1:
                    for mask, member in entries[i][0]:
                        yield member, (used | 1 << i, nxt, found | mask)
            for mask, member in extras:
                yield member, (used, nxt, found | mask)

        # Reachable states after the first member, then the productive ones (can reach a closable state).
        first_count = min(1, cap) if max_count is None else 1
        starts = []
        if max_count is None or max_count > 0:
            starts = [(member, (1 << i, first_count, mask)) for i in range(n) for mask, member in entries[i][0]]
            starts += [(member, (0, first_count, mask)) for mask, member in extras]
        seen, stack, edges = set(), [st for _, st in starts], {}
        while stack:
            st = stack.pop()
            if st in seen:
                continue
            seen.add(st)
            edges[st] = list(successors(*st))
            stack += [t for _, t in edges[st] if t not in seen]
        productive = {st for st in seen if closable(*st)}
        changed = True
        while changed:
            changed = False
            for st in seen:
                if st not in productive and any(t in productive for _, t in edges[st]):
                    productive.add(st)
                    changed = True
        names: dict = {}

        def more(st) -> str:
            if st in names:
                return names[st]
            name = names[st] = self.rules.reserve(f"obj_any_{st[0]}_{st[1]}")
            options = ['""'] if closable(*st) else []
            options += [seq(sep, member, more(t)) for member, t in edges[st] if t in productive]
            self.rules.define(name, " | ".join(options))
            return name

        first = [seq(member, more(st)) for member, st in starts if st in productive]
        if closable(0, 0, 0):
            first.append('""')
        if not first:
            raise Unsatisfiable("", "no object satisfies the property keywords")
        return self.rules.add("object", seq(literal("{"), self.ws, "( " + " | ".join(first) + " )", self.ws,
                                            literal("}")))

    def _any_order_items(self, entries: list, extras: list, deps: list[int]) -> str:
        """Members in any order, each declared property at most once (exactly once when required), extra
        properties any number of times, dependentRequired as ``requires=``: the engine's ``AnyOrder(...)``, which
        keeps the set of properties read in the parser state, so the grammar grows linearly with the properties.
        ``entries`` / ``extras`` / ``deps`` as in :meth:`_any_order_object` (the masks are all 0 here)."""
        def member(alternatives) -> str:
            return "( " + " | ".join(m for _, m in alternatives) + " )"

        items = [member(alts) + ("" if req else "?") for alts, req in entries]
        items += [member([(0, m)]) + "*" for _, m in extras]
        groups = [f"{i + 1}: " + " ".join(str(j + 1) for j in range(len(entries)) if d >> j & 1)
                  for i, d in enumerate(deps) if d]
        requires = f', requires="{"; ".join(groups)}"' if groups else ""
        body = f"AnyOrder({', '.join(items)}, separator=( {self.item_sep} ){requires})"
        return self.rules.add("object", seq(literal("{"), self.ws, body, self.ws, literal("}")))

    def _key_except(self, names: list[str]) -> str:
        """A JSON string key whose spelling differs from the JSON spelling of every name in ``names``. Spellings are
        compared unit by unit (a unit is a plain character or an escape sequence). Approximation (documented): a key
        that spells a listed name with different escapes (``"\\u0061"`` for ``"a"``) counts as another key."""
        if not names:
            return "j_string"
        # Objects with the same declared names recur (one $def's shape in many places): build their trie once.
        memo = self.__dict__.setdefault("_key_except_memo", {})
        key = tuple(names)
        if key not in memo:
            memo[key] = self._key_except_trie(names)
        return memo[key]

    # Trie levels written as nested alternatives in one rule before a level starts a rule of its own (bounds the
    # nesting the EBNF parser recurses through on very long names).
    KEY_TRIE_LEVELS_PER_RULE = 48

    def _key_except_trie(self, names: list[str]) -> str:
        """The key exclusion as a trie of the names' units: at each node, the key ends (unless a name ends there),
        continues into a child, or deviates (any other unit, then any string: the shared KEY_TAIL_RULES). The
        levels are nested alternatives of one rule, so the engine builds one small automaton for the whole trie,
        about a state per node."""
        trie: dict = {}  # unit -> child node; "" (never a unit) marks the end of a name
        for name in names:
            node = trie
            for unit in _json_units(name):
                node = node.setdefault(unit, {})
            node[""] = True
        for name, body in KEY_TAIL_RULES.items():
            if name not in self.rules.rules:
                self.rules.define(name, body)
        per_rule = self.KEY_TRIE_LEVELS_PER_RULE

        def alternatives(node: dict, depth: int, children: dict[int, str]) -> str:
            units = sorted(node)
            ends_name = units[0] == ""
            if ends_name:
                del units[0]
            deviation = _shared_tail_deviation(tuple(units)) or _deviation(tuple(units))
            if not units:  # a leaf: the key spells a name, so it must go on
                return deviation
            options = [deviation] if ends_name else ['"\\""', deviation]
            for u in units:
                child = children.pop(id(node[u]))
                if (depth + 1) % per_rule == 0:
                    options.append(f"{literal(u)} {self.rules.add('key_except', child)}")
                else:
                    options.append(f"{literal(u)} ( {child} )")
            return " | ".join(options)

        # Post-order with an explicit stack (a name may be longer than Python's recursion allows), children in
        # sorted order as a recursive walk would take them.
        texts: dict[int, str] = {}
        stack: list[tuple[dict, int, bool]] = [(trie, 0, False)]
        while stack:
            node, depth, done = stack.pop()
            if done:
                texts[id(node)] = alternatives(node, depth, texts)
                continue
            stack.append((node, depth, True))
            stack += [(node[u], depth + 1, False) for u in sorted(node, reverse=True) if u != ""]
        return seq('"\\""', self.rules.add("key_except", texts[id(trie)]))


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


@functools.lru_cache(maxsize=1024)
def _shared_tail_deviation(units: tuple[str, ...]) -> str | None:
    """As :func:`_deviation`, through KEY_TAIL_RULES, when every next unit is a plain ASCII character (so no other
    non-ASCII character or escape can continue a name); None otherwise."""
    if any(len(u) != 1 or ord(u) >= 0x80 for u in units):
        return None
    plain = "".join(_class_char(u) for u in units)
    return f'[^"\\\\\\x00-\\x1f\\x80-\\U0010ffff{plain}] j_key_rest | j_key_wide'


@functools.lru_cache(maxsize=1024)
def _deviation(units: tuple[str, ...]) -> str:
    """At a key-exclusion trie node whose children start with ``units``: the keys that leave the trie here (any other
    character or escape, then any string). Memoised: the same sets of next units recur across nodes and objects."""
    plain = "".join(_class_char(u) for u in units if not u.startswith("\\"))
    short = "".join(_class_char(u[1]) for u in units if u.startswith("\\") and len(u) == 2)
    long_escape = any(u.startswith("\\u") for u in units)
    other = [f'[^"\\\\\\x00-\\x1f{plain}]']
    escape = _other_escapes(short, long_escape)
    if escape:
        other.append(escape)
    return f'( {" | ".join(other)} ) j_char* "\\""'


@functools.lru_cache(maxsize=64)
def _other_escapes(short: str, long_escape: bool) -> str:
    """The escapes a key may use at a trie node whose children start with the short escapes ``short`` (their
    second characters) and, if ``long_escape``, a ``\\u`` escape: the others, as an EBNF alternative ("" if none).
    Few distinct arguments occur (almost always none), so this is memoised."""
    simple = "".join(c for c in '"\\/bfnrt' if c not in short)
    escapes = [f'[{_class_chars(simple)}]'] if simple else []
    if not long_escape:
        escapes.append('"u" [0-9a-fA-F]{4}')
    return '"\\\\" ( ' + " | ".join(escapes) + " )" if escapes else ""


def _class_chars(chars: str) -> str:
    return "".join(_class_char(c) for c in chars)


def _class_char(c: str) -> str:
    """``c`` escaped for use inside an EBNF character class."""
    if c in "]\\-^":
        return "\\" + c
    if ord(c) < 0x20:
        return f"\\x{ord(c):02x}"
    return c
